"""`xlsxplan plan`'s finance lines against hand computations: rank 1 following a day of demand on price tiers, its
energy and carbon per million tokens, and a hosted API's bill and crossover (docs/finance.md).

Every expected figure is computed here from the shipped tables' text (demand.toml, grid.toml, costs.toml,
hosted.toml read with tomllib) and the plan's own fleet, not through the functions the plan calls."""

from __future__ import annotations

import json
import math
from importlib import resources

import pytest
import tomllib

from tests.helpers.owning import owned_by_hand
from xlsxplan.cli import main

HOURS = 730  # a month, as the plan bills it ("Back-of-the-Envelope", section 6)


def _table(name: str) -> dict:
    return tomllib.loads(resources.files("xlsxplan.catalog").joinpath(name).read_text(encoding="utf-8"))


def _plan(capsys, model: str, *extra: str) -> dict:
    args = ["plan", "--model", model, "--requests-per-day", "200000", "--prompt-tokens", "2000"]
    code = main([*args, "--output-tokens", "300", "--tokens-per-s", "20", *extra, "--json"])
    assert code == 0
    return json.loads(capsys.readouterr().out)


def test_following_the_day_and_the_tier_mix_as_by_hand(capsys):
    data = _plan(capsys, "Qwen2.5-72B", "--gpu", "H100=2.5", "--committed-price", "1.8")
    fin, rank1 = data["finance"], data["options"][0]
    assert fin["gpus"] == rank1["gpus"] and fin["usd_per_month_peak_sized"] == rank1["usd_per_month"]
    peak = rank1["gpus"]
    shares = _table("demand.toml")["profiles"]["business-day"]["shares"]
    hourly = [math.ceil(peak * s / max(shares) - 1e-9) for s in shares]
    assert fin["hourly_gpus"] == hourly
    assert fin["usd_per_month_on_demand_following_the_day"] == pytest.approx(sum(hourly) / 24 * 2.5 * HOURS)
    # the cheapest commitment, by trying every base: committed hours billed all day, the rest on demand
    bills = [sum(b * 1.8 + max(g - b, 0) * 2.5 for g in hourly) * HOURS / 24 for b in range(peak + 1)]
    mix = fin["tier_mix"]
    assert mix["usd_per_month"] == pytest.approx(min(bills))
    assert bills[int(mix["committed_gpus"])] == pytest.approx(min(bills))
    assert mix["committed_source"] == "given" and mix["above"] == "on_demand"
    served = sum(min(g, mix["committed_gpus"]) for g in hourly) / sum(hourly)
    assert mix["shares"]["committed"] == pytest.approx(served)


def test_energy_and_carbon_per_million_tokens_as_by_hand(capsys):
    data = _plan(capsys, "Qwen2.5-72B", "--gpu", "H100=2.5", "--region", "DE", "--idle-share", "0.3")
    e, gpus = data["finance"]["energy"], data["options"][0]["gpus"]
    costs = _table("costs.toml")
    kw = costs["accelerators"]["H100-SXM"]["server_kw_per_gpu"]["value"]
    pue = costs["site"]["pue"]["value"]
    u = e["utilisation"]
    assert 0 < u < 1
    kwh_month = gpus * kw * pue * HOURS * (u + 0.3 * (1 - u))  # busy draw, and 30% of it while idle
    tokens = 200000 * (2000 + 300) * HOURS / 24
    assert (e["kw_per_gpu"], e["pue"]) == (kw, pue)
    assert e["kwh_per_month"] == pytest.approx(kwh_month)
    assert e["kwh_per_m_tokens"] == pytest.approx(kwh_month / tokens * 1e6)
    grams = _table("grid.toml")["regions"]["DE"]["g_co2e_per_kwh"]
    assert e["g_co2e_per_m_tokens"] == pytest.approx(kwh_month / tokens * 1e6 * grams)


def test_a_hosted_api_bill_and_crossover_as_by_hand(capsys):
    data = _plan(capsys, "gpt-oss-120b", "--gpu", "H100=2.5")
    api, bill = data["finance"]["api"], data["finance"]["usd_per_month_peak_sized"]
    offer = next(h for h in _table("hosted.toml")["hosted"].values() if h["model"] == "gpt-oss-120b")
    per_request = (2000 * offer["usd_per_m_input"] + 300 * offer["usd_per_m_output"]) / 1e6
    assert api["provider"] == offer["provider"]
    assert api["usd_per_month"] == pytest.approx(200000 * HOURS / 24 * per_request)
    assert api["crossover_requests_per_day"] == pytest.approx(bill / (HOURS / 24 * per_request))


def test_a_small_hosted_bill_is_printed_in_cents_not_as_nothing(capsys):
    # 1,000 requests a day of 500 tokens in and 200 out: cents a month at DeepInfra's prices, never "$0"
    argv = ["plan", "--model", "Llama-3.1-8B", "--requests-per-day", "1000", "--prompt-tokens", "500"]
    assert main([*argv, "--output-tokens", "200", "--gpu", "H100"]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("  hosted API (")]
    assert main([*argv, "--output-tokens", "200", "--gpu", "H100", "--json"]) == 0
    bill = json.loads(capsys.readouterr().out)["finance"]["api"]["usd_per_month"]
    assert 0 < bill < 100 and f": ${bill:,.2f} a month for this traffic" in line


def test_the_text_names_each_default_it_priced_with(capsys):
    main(
        ["plan", "--model", "Qwen2.5-72B", "--requests-per-day", "200000", "--prompt-tokens", "2000"]
        + ["--output-tokens", "300", "--gpu", "H200", "--top", "1"]
    )
    out = capsys.readouterr().out
    tail = out[out.index("Finance, rank 1") :]
    assert "business-day profile, a shape, not a measurement; --demand-profile" in tail
    assert "the catalog has no committed price for H200: give --committed-price" in tail  # none published
    assert "--region for the carbon figure" in tail and "idle power 0% of busy (--idle-share)" in tail
    assert "hosted.toml has no API price for Qwen2.5-72B" in tail


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [
        ("--committed-price", "cheap", "--committed-price must be a number, got 'cheap'"),
        ("--spot-discount", "2", "--spot-discount must be a number from 0 to 1, got 2"),
        ("--region", "Mars", "--region 'Mars' is not a region of grid.toml"),
        ("--api", "Foo", "--api: Qwen2.5-72B has no hosted price in hosted.toml"),
        ("--demand-profile", "weekend", "--demand-profile"),
    ],
)
def test_a_bad_finance_flag_is_one_line_naming_it(capsys, flag, value, said):
    code = main(
        ["plan", "--model", "Qwen2.5-72B", "--requests-per-day", "200000", "--prompt-tokens", "2000"]
        + ["--output-tokens", "300", "--gpu", "H100", flag, value]
    )
    err = capsys.readouterr().err
    assert code == 2 and said in err and err.count("\n") == 1


def _owned_by_hand(gpus: int, rented_usd_per_month: float, gpu: str = "H100-SXM") -> dict[str, float]:
    """``gpus`` bought at costs.toml's figures (its site figures and the accelerator's), by hand."""
    table = _table("costs.toml")
    site = {k: v["value"] for k, v in table["site"].items()}
    acc = {k: v["value"] for k, v in table["accelerators"][gpu].items() if isinstance(v, dict) and "value" in v}
    return owned_by_hand(
        gpus,
        rented_usd_per_month,
        acc["capex_usd"],
        site["years"],
        site["residual_fraction"],
        site["annual_rate"],
        acc["server_kw_per_gpu"],
        site["pue"],
        site["usd_per_kwh"],
        site["usd_per_kw_month"],
    )


def test_owning_the_fleet_instead_depreciation_and_present_costs_as_by_hand(capsys):
    # the source text's support assistant at its ideal efficiencies: 8 H100s at $2.50, $14,600 a month rented
    data = _plan(capsys, "Qwen2.5-72B", "--gpu", "H100=2.5", "--rank", "assumed", "--gpus-per-replica", "2")
    fin = data["finance"]
    assert fin["gpus"] == 8 and fin["usd_per_month_peak_sized"] == pytest.approx(14_600)
    want = _owned_by_hand(8, 14_600)
    own = fin["owned"]
    assert {k: own[k] for k in want} == pytest.approx(want, rel=1e-9)
    assert want["capital_usd"] == 400_000 and want["depreciation_usd_per_year"] == pytest.approx(72_000)
    assert "cheah" in own["sources"]["capex_usd"].lower() or "freakonomics" in own["sources"]["capex_usd"].lower()
    # an accelerator costs.toml has no capital cost for: said, not invented
    data = _plan(capsys, "Qwen2.5-72B", "--gpu", "H200=3.5", "--rank", "assumed")
    assert "capex_usd" in data["finance"]["owned"]["reason"] and "H200" in data["finance"]["owned"]["reason"]


def test_a_profile_whose_peak_disagrees_with_the_plans_says_how_far_off_the_day_is(capsys):
    # the business-day profile peaks at 1.6x its mean, the plan at 3x: pinned at the plan's peak fleet, the profile's
    # day carries 3 / 1.6 = 1.9 times the requests a day given, and the line says so and which way the bill errs
    shares = _table("demand.toml")["profiles"]["business-day"]["shares"]
    ratio = max(shares) / (sum(shares) / len(shares))
    args = ["plan", "--model", "Qwen2.5-72B", "--requests-per-day", "200000", "--prompt-tokens", "2000",
            "--output-tokens", "300", "--tokens-per-s", "20", "--gpu", "H100=2.5"]  # fmt: skip
    assert main([*args, "--peak-factor", "3"]) == 0
    out = capsys.readouterr().out
    assert (
        f"the profile's peak is {ratio:.2f}x its mean, the plan's peak factor 3: the day's GPU-hours follow the "
        f"profile, whose day at the plan's peak carries {3 / ratio:.2g}x the requests a day given, so this bill is "
        f"high by about that much (--peak-factor {ratio:.2g} plans the peak this profile has)"
    ) in out
    assert main([*args, "--peak-factor", f"{ratio:.6f}"]) == 0
    assert "the profile's peak is" not in capsys.readouterr().out  # they agree: nothing to say
