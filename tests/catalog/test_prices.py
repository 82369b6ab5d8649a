"""The one price table (catalog/prices.toml): one figure per accelerator and basis, dated and sourced, read by every
face that prices a rented GPU-hour, and flagged when it is older than a year."""

from __future__ import annotations

import datetime

import pytest

from xlsxplan import catalog
from xlsxplan.catalog import PRICE_BASES, load_prices
from xlsxplan.catalog.costs import COST_FIELDS, PRICE_FIELDS, cost_source, cost_spec, parse_costs
from xlsxplan.catalog.store import PRICES_FILE, parse_prices
from xlsxplan.errors import CatalogError, NotAvailableError
from xlsxplan.plan.search import parse_gpus

SHIPPED = (catalog.store.resources.files("xlsxplan.catalog") / PRICES_FILE).read_text(encoding="utf-8")

# The accelerators a plan must price out of the box (issue 26's list): each has an on-demand price with its date and
# source.
ON_DEMAND = ["A100-80GB", "H100-SXM", "H200", "B200", "GB200", "MI300X", "MI325X", "MI355X", "L40S", "L4"]


@pytest.mark.parametrize("gpu", ON_DEMAND)
def test_the_listed_accelerators_have_a_dated_sourced_on_demand_price(gpu):
    price = load_prices().get(gpu)
    assert price.usd_per_gpu_hour > 0 and price.as_of.year >= 2026
    cited = catalog.gpu_price_source(gpu)
    assert price.as_of.isoformat() in cited and "on demand" in cited and len(cited) > 60


def test_hyperstacks_card_prices_the_hgx_parts_alike_and_a_committed_price_has_a_term():
    # Hyperstack, 'GPU pricing', transcribed 2026-08-26: on demand H100 SXM $3.20, H200 SXM $3.99, B200 $6.00, A100
    # SXM $1.60; SemiAnalysis, 'The Great GPU Shortage' (2026-04-02): one-year H100 contracts at $2.35 in March 2026
    on = {g: catalog.gpu_price(g) for g in ("H100", "H200", "B200", "A100-80GB")}
    assert on == {"H100": 3.20, "H200": 3.99, "B200": 6.00, "A100-80GB": 1.60}
    assert {load_prices().get(g).source for g in on} == {"hyperstack-2026"}
    assert cost_spec("H100", "rent_committed_usd_per_gpu_hour") == 2.35
    assert "one-year" in load_prices().get("H100", "committed").offer
    assert load_prices().ids("committed") == ["H100-SXM"]  # reservations of unstated term are left out


def test_every_face_reads_the_one_figure_per_accelerator_and_basis():
    table = load_prices()
    for basis, field in ((b, f) for f, b in PRICE_FIELDS.items()):
        for gpu in table.ids(basis):
            figure = table.get(gpu, basis).usd_per_gpu_hour
            assert cost_spec(gpu, field) == figure
            assert table.get(gpu, basis).as_of.isoformat() in cost_source(gpu, field)
    for gpu in table.ids():
        assert catalog.gpu_price(gpu) == table.get(gpu).usd_per_gpu_hour
    # the plan's default price is the on-demand figure (xlsxplan plan, PLAN_OPTIONS)
    assert set(parse_gpus("all")) == set(table.ids())


def test_two_prices_for_one_accelerator_and_basis_are_refused():
    # an alias as a second key of the same accelerator: two figures for one fact
    alias = SHIPPED.replace("[on_demand.H100-SXM]", "[on_demand.H100-SXM]\n", 1) + (
        '\n[on_demand.H100]\nsource = "hyperstack-2026"\nusd_per_gpu_hour = 2.5\nas_of = 2026-08-26\n'
        'offer = "H100"\nregion = "not stated"\n'
    )
    with pytest.raises(CatalogError, match=r"prices.toml: on_demand\.H100 is not an accelerator id"):
        parse_prices(alias)
    # the same key twice: TOML itself refuses it
    twice = SHIPPED + "\n[on_demand.H100-SXM]\nusd_per_gpu_hour = 9\n"
    with pytest.raises(CatalogError, match=r"prices.toml: not valid TOML"):
        parse_prices(twice)
    # and costs.toml may not hold a rental price beside it
    costs = (catalog.store.resources.files("xlsxplan.catalog") / "costs.toml").read_text(encoding="utf-8")
    costs = costs.replace(
        "[accelerators.H100-SXM]\n",
        '[accelerators.H100-SXM]\nrent_on_demand_usd_per_gpu_hour = { value = 2.95, source = "cheah-2024", '
        'as_of = 2026-05-20, note = "a second H100 price" }\n',
        1,
    )
    with pytest.raises(CatalogError, match="'rent_on_demand_usd_per_gpu_hour' is not a figure of this table"):
        parse_costs(costs)
    assert {f for f, spec in COST_FIELDS.items() if spec.scope == "price"} == set(PRICE_FIELDS)


def test_a_basis_without_a_price_is_na_with_the_reason():
    with pytest.raises(NotAvailableError, match=r"GB200 has no committed rental price in the catalog"):
        load_prices().get("GB200", "committed")
    with pytest.raises(NotAvailableError, match=r"H200 has no committed rental price"):
        cost_spec("H200", "rent_committed_usd_per_gpu_hour")
    with pytest.raises(NotAvailableError, match=r"RTX-4090 has no on demand rental price"):
        catalog.gpu_price("RTX-4090")
    assert set(PRICE_BASES) == {"on_demand", "committed"}


def test_a_price_older_than_a_year_is_stale():
    table = load_prices()
    as_of = table.get("H100").as_of
    assert not table.stale("H100", today=as_of + datetime.timedelta(days=365))
    assert table.stale("H100", today=as_of + datetime.timedelta(days=366))


def test_plan_flags_a_catalog_price_older_than_a_year_beside_the_prices(capsys, monkeypatch):
    from xlsxplan.catalog.store import Prices
    from xlsxplan.cli import main

    argv = [
        "plan",
        "--model",
        "Qwen2.5-7B",
        "--requests-per-day",
        "100000",
        "--prompt-tokens",
        "1000",
        "--output-tokens",
        "200",
        "--gpu",
        "H100",
        "--gpu",
        "H200=4",
    ]
    assert main(argv) == 0
    fresh = capsys.readouterr().out
    assert "H100-SXM $3.2/GPU-h, H200 $4/GPU-h (given); the catalog's, on demand, as of 2026-08-26" in fresh
    assert "days old" not in fresh
    monkeypatch.setattr(Prices, "stale", lambda self, gpu, basis="on_demand", today=None: True)
    assert main(argv) == 0
    assert "over 365 days old: H100-SXM (check before signing)" in capsys.readouterr().out
