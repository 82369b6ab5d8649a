"""The finance tables (xlsxplan.catalog.finance): grid intensity, hosted API prices and demand profiles, each figure
dated and sourced, and the loader's refusals."""

from __future__ import annotations

import math

import pytest

from xlsxplan import registry
from xlsxplan.catalog import finance
from xlsxplan.errors import CatalogError, NotAvailableError, UnknownPresetError

GRID_HEAD = """
[sources]
s = "a source"
[titles]
s = "A source"
"""


def test_every_shipped_figure_is_dated_and_cites_a_source_with_a_title():
    for table in (finance.load_grid(), finance.load_hosted(), finance.load_profiles()):
        assert table.entries
        for entry in table.entries.values():
            assert entry.source in table.sources and entry.source in table.titles
            assert entry.as_of.year >= 2023


def test_grid_intensity_by_code_or_name_with_its_basis():
    assert finance.grid_intensity("DE") == finance.grid_intensity("germany") == 381
    assert finance.grid_intensity("world") == 481
    assert "combustion CO2 only" in finance.grid_source("United States")
    assert "Ember" in finance.grid_source("FR") and "as of 2023-12-31" in finance.grid_source("FR")
    with pytest.raises(UnknownPresetError, match="region 'Mars' is not a region of grid.toml") as err:
        finance.grid_intensity("Mars")
    assert err.value.argument == "region"


def test_hosted_prices_by_model_provider_and_field():
    assert finance.hosted_price("gpt-oss-120b", "Groq") == 0.15
    assert finance.hosted_price("gpt-oss-120b", "groq", "cached_input") == 0.075
    assert finance.hosted_price("gpt-oss-120b", "GROQ", "output") == 0.60
    assert finance.hosted_price("DeepSeek-V3", "DeepSeek", "cached_input") == 0.07
    assert "2026-06-04" in finance.hosted_source("gpt-oss-120b", "Groq")
    with pytest.raises(NotAvailableError, match="DeepInfra lists no cached_input price for Llama-3.1-8B"):
        finance.hosted_price("Llama-3.1-8B", "DeepInfra", "cached_input")
    with pytest.raises(NotAvailableError, match="Qwen3-8B has no hosted price in hosted.toml") as err:
        finance.hosted_price("Qwen3-8B", "Groq")
    assert err.value.argument == "model"
    with pytest.raises(UnknownPresetError, match="provider 'Acme' has no price for gpt-oss-120b"):
        finance.hosted_price("gpt-oss-120b", "Acme")
    with pytest.raises(UnknownPresetError, match="field must be one of input, cached_input, output"):
        finance.hosted_price("gpt-oss-120b", "Groq", "cache")


def test_the_default_profile_is_the_cosine_its_notes_state():
    shares = finance.demand_profile()
    assert len(shares) == 24 and max(shares) == 1.0 and shares.index(1.0) == 14 and min(shares) == 0.25
    for hour, share in enumerate(shares):
        assert share == pytest.approx(0.625 - 0.375 * math.cos(2 * math.pi * (hour - 2) / 24), abs=5.01e-4), hour
    assert finance.demand_profile("flat") == [1.0] * 24
    assert "an assumption" in finance.demand_source()
    # the registry's DEMAND_PROFILE spills it down a column, and the tier mix reads it
    assert registry.get("DEMAND_PROFILE").spills
    assert registry.get("PROFILE_GPUS")(tuple(shares), 40)[2] == 10  # 25% of 40 GPUs at 02:00


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "[regions.X]\ng_co2e_per_kwh = 6000\nas_of = 2023-12-31\nbasis = 'b'\nsource = 's'",
            r"grid.toml: regions.X.g_co2e_per_kwh: g_co2e_per_kwh must be a number from 0 to 5,000",
        ),
        (
            "[regions.X]\ng_co2e_per_kwh = 300\nas_of = 2023-12-31\nbasis = 'b'\nsource = 'nope'",
            "grid.toml: regions.X: source 'nope' is not in",
        ),
        (
            "[regions.X]\ng_co2e_per_kwh = '300'\nas_of = 2023-12-31\nbasis = 'b'\nsource = 's'",
            "grid.toml: regions.X.g_co2e_per_kwh: Input should be a valid number",
        ),
        ("[regions.X]\ng_co2e_per_kwh = 300\nbasis = 'b'\nsource = 's'", "grid.toml: regions.X.as_of: Field required"),
        (
            "[regions.X]\ng_co2e_per_kwh = 300\nas_of = 2023-12-31\nbasis = 'b'\nsource = 's'\nyear = 1",
            "grid.toml: regions.X.year: Extra inputs are not permitted",
        ),
        ("[grid.X]\n", "grid.toml: unexpected top-level table"),
    ],
)
def test_a_bad_grid_entry_is_refused_in_one_line_naming_file_entry_and_field(body, message):
    with pytest.raises(CatalogError, match=message):
        finance.parse_table(GRID_HEAD + body, "grid.toml", "regions", finance.GridRegion)


def test_a_hosted_price_must_be_given_or_declared_unavailable():
    head = (
        GRID_HEAD
        + "[hosted.x]\nmodel = 'gpt-oss-120b'\nprovider = 'P'\noffer = 'o'\nas_of = 2026-01-01\nsource = 's'\n"
    )
    ok = finance.parse_table(
        head + "usd_per_m_input = 1\nusd_per_m_output = 2\nunavailable = { usd_per_m_cached_input = 's' }",
        "hosted.toml",
        "hosted",
        finance.HostedPrice,
    )
    assert ok.entries["x"].usd_per_m_cached_input is None
    with pytest.raises(CatalogError, match="hosted.x.usd_per_m_cached_input is missing: give it, or list it under"):
        finance.parse_table(
            head + "usd_per_m_input = 1\nusd_per_m_output = 2", "hosted.toml", "hosted", finance.HostedPrice
        )
    with pytest.raises(CatalogError, match="hosted.x.usd_per_m_input: usd_per_m_input must be a number from 0"):
        finance.parse_table(
            head + "usd_per_m_input = -1\nusd_per_m_output = 2\nusd_per_m_cached_input = 0",
            "hosted.toml",
            "hosted",
            finance.HostedPrice,
        )


def test_a_profile_has_24_hours():
    body = GRID_HEAD + "[profiles.p]\nshares = [1.0, 0.5]\nas_of = 2026-01-01\nsource = 's'\n"
    with pytest.raises(CatalogError, match="demand.toml: profiles.p.shares: .*at least 24"):
        finance.parse_table(body, "demand.toml", "profiles", finance.DemandProfilePreset)
