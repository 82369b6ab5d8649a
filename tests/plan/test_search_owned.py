"""`xlsxplan plan --own`: the same fleet owned beside rented, every owned-case assumption with its source.

The owned GPU-hour is computed by hand here (the capital recovery factor, the residual's present value, power and
hosting), not by calling GPU_HOUR_OWNED; the rented figures it is set beside are those test_plan.py checks against
"Back-of-the-Envelope Estimation for LLM Systems".
"""

from __future__ import annotations

import json

import pytest

from xlsxplan.cli import main
from xlsxplan.errors import XlsxplanError
from xlsxplan.plan.search import Assumptions, Owned, Traffic, plan

ASSISTANT = Traffic(200_000, 2_000, 300, 3)
CASE = {
    "capex_usd": 30_000,
    "years": 4,
    "residual_fraction": 0.1,
    "annual_rate": 0.08,
    "kw": 1,
    "pue": 1.3,
    "usd_per_kwh": 0.08,
    "usd_per_kw_month": 150,
}
FLAGS = [
    "--own-capex",
    "30000",
    "--own-years",
    "4",
    "--own-residual",
    "0.1",
    "--own-rate",
    "0.08",
    "--own-kw",
    "1",
    "--own-pue",
    "1.3",
    "--own-usd-per-kwh",
    "0.08",
    "--own-usd-per-kw-month",
    "150",
]


def _hand_hour() -> tuple[float, float]:
    """$30,000 over 4 years at 8%, 10% back at the end, 1 kW at PUE 1.3 and $0.08/kWh, $150/kW-month."""
    growth = 1.08**4  # 1.36048896
    crf = 0.08 * growth / (growth - 1)  # 0.3019208
    capital = (30_000 - 3_000 / growth) * crf / 8760  # the residual's present value deducted: $0.9580 an hour
    running = 1 * 1.3 * 0.08 + 150 * 1 * 12 / 8760  # $0.1040 power, $0.2055 hosting
    return capital + running, running


def _fp8_on_two(result):
    (o,) = [
        o
        for o in result.options
        if (o.gpu, o.weights, o.kv, o.gpus_per_replica, o.serving) == ("H100-SXM", "fp8", "bf16", 2, "aggregated")
    ]
    return o


def test_the_owned_fleet_costs_what_the_hand_computed_gpu_hour_says():
    hour, running = _hand_hour()
    assert round(hour, 4) == 1.2675
    a = Assumptions(weights="params x bytes", owned=Owned(CASE))
    result = plan("Qwen2.5-72B", ASSISTANT, gpus={"H100": 2.5}, assumptions=a)
    case = result.owned["H100-SXM"]
    assert case["usd_per_gpu_hour"] == pytest.approx(hour, rel=1e-12)
    assert case["running_usd_per_gpu_hour"] == pytest.approx(running, rel=1e-12)
    assert case["breakeven_utilisation"] == pytest.approx(hour / 2.5)  # 50.7%
    # buying pays back when the $30,000 is made up by the rent less power and hosting: 18.8 months
    assert case["payback_months"] == pytest.approx(30_000 / ((2.5 - running) * 730))
    assert round(case["payback_months"], 1) == 18.8
    f = _fp8_on_two(result).assumed
    owned = f.extra["owned"]
    assert f.gpus == 8 and f.usd_per_month == 8 * 2.5 * 730  # rented: $14,600 a month
    assert owned["usd_per_month"] == pytest.approx(8 * hour * 730)  # owned: $7,402 a month
    # per million tokens: the same split of the fleet's hours between prompts and answers, at the owned price
    share, tokens_in, tokens_out = f.extra["prefill_share"], 200_000 * 2_000, 200_000 * 300
    assert owned["usd_per_m_input"] == pytest.approx(8 * hour * 24 * share / tokens_in * 1e6)
    assert owned["usd_per_m_output"] == pytest.approx(8 * hour * 24 * (1 - share) / tokens_out * 1e6)
    # the fleet's own utilisation: the day's average requests over what 4 replicas serve
    busy = 200_000 / 86_400 / (4 * f.extra["requests_per_s_per_replica"])
    assert owned["fleet_utilisation"] == pytest.approx(busy) and owned["utilisation"] == owned["fleet_utilisation"]


def test_a_utilisation_given_prices_the_owned_tokens_at_it():
    base = plan(
        "Qwen2.5-72B",
        ASSISTANT,
        gpus={"H100": 2.5},
        assumptions=Assumptions(weights="params x bytes", owned=Owned(CASE)),
    )
    busier = plan(
        "Qwen2.5-72B",
        ASSISTANT,
        gpus={"H100": 2.5},
        assumptions=Assumptions(weights="params x bytes", owned=Owned(CASE, utilisation=0.6)),
    )
    a, b = _fp8_on_two(base).assumed.extra["owned"], _fp8_on_two(busier).assumed.extra["owned"]
    assert b["usd_per_month"] == a["usd_per_month"]  # an owned GPU costs every hour, busy or idle
    assert b["usd_per_m_output"] == pytest.approx(a["usd_per_m_output"] * a["fleet_utilisation"] / 0.6)
    assert b["utilisation"] == 0.6


def test_without_flags_the_defaults_come_from_the_catalog_with_their_sources():
    result = plan("Qwen2.5-72B", ASSISTANT, gpus={"H100": None, "A100": 1.8}, assumptions=Assumptions(owned=Owned()))
    h100 = result.owned["H100-SXM"]["assumptions"]
    assert h100["capex_usd"] == {
        "value": 50_000,
        "unit": "USD",
        "source": "Cheah, H100 Freakonomics, 2024",
        "as_of": "2024-08-01",
    }
    assert h100["kw"]["value"] == 1.275 and h100["kw"]["source"] == "NVIDIA DGX H100 datasheet"
    assert h100["pue"]["value"] == 1.58 and h100["usd_per_kwh"]["value"] == 0.0895
    a100 = result.owned["A100-80GB"]
    assert "capex_usd" in a100["reason"] and "--own-capex A100-80GB=USD" in a100["reason"]
    a100_options = [o for o in result.options if o.gpu == "A100-80GB" and o.assumed.feasible]
    assert a100_options and all(o.assumed.extra["owned"] == {"reason": a100["reason"]} for o in a100_options)
    # with a capital cost given for it alone, its power is the board's 400 W (no server share in costs.toml)
    result = plan(
        "Qwen2.5-72B",
        ASSISTANT,
        gpus={"A100": 1.8},
        assumptions=Assumptions(owned=Owned(per_gpu={"A100-80GB": {"capex_usd": 15_000}})),
    )
    kw = result.owned["A100-80GB"]["assumptions"]["kw"]
    assert kw["value"] == 0.4 and "power_w" in kw["source"]
    assert result.owned["A100-80GB"]["assumptions"]["capex_usd"]["source"] == "given"


def test_the_json_carries_the_owned_case_only_when_asked(capsys):
    base = [
        "plan",
        "--model",
        "Qwen2.5-72B",
        "--requests-per-day",
        "200000",
        "--prompt-tokens",
        "2000",
        "--output-tokens",
        "300",
        "--gpu",
        "H100=2.5",
        "--json",
    ]
    assert main(base) == 0
    plain = json.loads(capsys.readouterr().out)
    assert "owned" not in plain["inputs"] and all("owned" not in o for o in plain["options"])
    assert main([*base, *FLAGS]) == 0
    data = json.loads(capsys.readouterr().out)
    hour, _ = _hand_hour()
    assert data["inputs"]["owned"]["gpus"]["H100-SXM"]["usd_per_gpu_hour"] == pytest.approx(hour)
    assert data["inputs"]["owned"]["gpus"]["H100-SXM"]["assumptions"]["pue"]["source"] == "given"
    feasible = [o for o in data["options"] if o["feasible"]]
    for o in feasible:
        assert o["owned"]["usd_per_month"] == pytest.approx(o["gpus"] * hour * 730)
        if o["assumed"]["feasible"]:
            assert o["assumed"]["owned"]["usd_per_month"] == pytest.approx(o["assumed"]["gpus"] * hour * 730)
    assert all("owned" not in o for o in data["options"] if not o["feasible"])


def test_the_table_shows_both_costs_and_every_assumption(capsys):
    code = main(
        [
            "plan",
            "--model",
            "Qwen2.5-72B",
            "--requests-per-day",
            "200000",
            "--prompt-tokens",
            "2000",
            "--output-tokens",
            "300",
            "--gpu",
            "H100=2.5",
            "--weights-as",
            "params-x-bytes",
            "--top",
            "1",
            "--rank",
            "assumed",
            *FLAGS,
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    lines = out.splitlines()
    head = next(x for x in lines if x.startswith("rank"))
    assert head.endswith("owned $/month  $/M in  $/M out")
    first = lines[lines.index(head) + 1].split()
    assert first[11] == "8" and first[12] == "14,600" and first[-3] == f"{8 * _hand_hour()[0] * 730:,.0f}"
    (line,) = [x for x in lines if x.startswith("    H100-SXM: ")]
    for text in (
        "$30,000 capital (given)",
        "4 years (given)",
        "10% residual",
        "8% a year",
        "1 kW",
        "PUE 1.3",
        "$0.08/kWh",
        "$150/kW-month",
        "$1.2675 per GPU-hour owned",
        "50.7% utilisation",
        "pays back in 18.8 months",
    ):
        assert text in line


@pytest.mark.parametrize(
    "args, says",
    [
        (["--own-pue", "0.5"], "--own-pue must be"),
        (["--own-capex", "H10=5"], "--own-capex 'H10=5': 'H10' is not in the catalog"),
        (["--own-utilisation", "1.5"], "--own-utilisation must be a fraction"),
        (["--own-kw", "x"], "--own-kw must be a number, or NAME=NUMBER"),
        (["--own-years", "0"], "--own-years"),
    ],
)
def test_bad_owned_input_is_one_line_naming_the_flag(capsys, args, says):
    code = main(
        [
            "plan",
            "--model",
            "Qwen2.5-72B",
            "--requests-per-day",
            "200000",
            "--prompt-tokens",
            "2000",
            "--output-tokens",
            "300",
            "--gpu",
            "H100=2.5",
            *args,
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1


def test_an_unknown_owned_assumption_is_refused_in_python():
    with pytest.raises(XlsxplanError, match="not an owned-case assumption"):
        plan("Qwen2.5-72B", ASSISTANT, gpus={"H100": 2.5}, assumptions=Assumptions(owned=Owned({"capex": 1})))
