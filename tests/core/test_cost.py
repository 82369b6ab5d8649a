"""Owning against renting: each function against a case computed by hand, and the catalog's sourced defaults.

The owned GPU throughout is the one of the function's definition: $30,000 over 4 years, 10% residual, 8% a year, 1 kW
at PUE 1.3, $0.08/kWh and $150/kW-month, against $2.50 an hour rented. Every figure is worked out in the comments
from the equations in the functions' Notes, to the digits the assertion checks.
"""

from __future__ import annotations

import math
from pathlib import Path

import openpyxl
import pytest

import xlsxplan as x
from xlsxplan.catalog import costs
from xlsxplan.core import cost
from xlsxplan.errors import CatalogError, NotAvailableError, OutOfRangeError, UnknownPresetError, XlsxplanError
from xlsxplan.headless import Workbook

# --- GPU_HOUR_OWNED --------------------------------------------------------------------------------------------


def test_gpu_hour_owned_is_the_hand_computed_1_2675():
    # P = 30,000, n = 4, S = 0.1 P = 3,000, r = 0.08, 8,760 hours a year.
    #   1.08^4 = 1.36048896
    #   CRF(0.08, 4) = 0.08 x 1.36048896 / 0.36048896 = 0.3019208045
    #   present value of the residual = 3,000 / 1.36048896 = 2,205.0896; P less it = 27,794.9104
    #   capital a year = 27,794.9104 x 0.3019208045 = 8,391.8617; an hour = 8,391.8617 / 8,760 = 0.9579751
    #   power = 1 kW x 1.3 x $0.08 = 0.104; hosting = 150 x 1 x 12 / 8,760 = 0.2054795
    #   total = 0.9579751 + 0.104 + 0.2054795 = 1.2674546, i.e. $1.2675
    # (the unrounded value is 4.5e-6 above the rounding boundary 1.26745: compared with a tolerance, then rounded)
    value = x.gpu_hour_owned(30000, 4, 0.1, 0.08, 1, 1.3, 0.08, 150)
    assert value == pytest.approx(1.2674545, abs=1e-6)
    assert round(value, 4) == 1.2675
    assert 1.08**4 == pytest.approx(1.36048896, abs=1e-12)
    assert x.capital_recovery_factor(0.08, 4) == pytest.approx(0.3019208045, abs=1e-10)
    assert x.gpu_hour_owned(30000, 4, 0.1, 0.08) == pytest.approx(0.9579751, abs=1e-7)
    assert x.gpu_hour_owned(0, 4, 0, 0, 1, 1.3, 0.08, 150) == pytest.approx(0.104 + 0.2054795, abs=1e-7)


def test_deducting_the_residuals_present_value_is_the_engineering_economics_form():
    # (P - S / (1 + r)^n) CRF = (P - S) CRF + S r, because S / (1 + r)^n x CRF = S r / ((1 + r)^n - 1) = S (CRF - r)
    crf = x.capital_recovery_factor(0.08, 4)
    assert x.gpu_hour_owned(30000, 4, 0.1, 0.08) * 8760 == pytest.approx((30000 - 3000) * crf + 3000 * 0.08)
    # the readings that do not give 1.2675: the residual deducted undiscounted (1.2401), no residual (1.3435)
    assert (27000 * crf) / 8760 + 0.104 + 0.2054795 == pytest.approx(1.240057, abs=1e-6)
    assert x.gpu_hour_owned(30000, 4, 0, 0.08, 1, 1.3, 0.08, 150) == pytest.approx(1.343455, abs=1e-6)


def test_at_rate_zero_the_capital_is_recovered_in_a_straight_line_the_limit_of_the_crf():
    # (30,000 - 3,000) / 4 / 8,760 = 0.7705479
    assert x.gpu_hour_owned(30000, 4, 0.1) == pytest.approx(0.7705479, abs=1e-7)
    assert x.gpu_hour_owned(30000, 4, 0.1, 1e-9) == pytest.approx(x.gpu_hour_owned(30000, 4, 0.1), rel=1e-8)
    assert x.gpu_hour_owned(30000, 4, 0.1, 1e-300) == pytest.approx(x.gpu_hour_owned(30000, 4, 0.1), rel=1e-12)
    assert x.capital_recovery_factor(0, 4) == 0.25


def test_capital_recovery_factor_against_its_published_example_and_excel_pmt():
    # "Capital recovery factor" (Wikipedia): i = 10%, n = 10 years gives 0.163; exactly 0.1 x 1.1^10 / (1.1^10 - 1)
    assert round(x.capital_recovery_factor(0.10, 10), 3) == 0.163
    assert x.capital_recovery_factor(0.10, 10) == pytest.approx(0.1 * 1.1**10 / (1.1**10 - 1), rel=1e-14)
    # a residual of the whole price leaves only the interest on it: (P - P / (1 + r)^n) CRF = P r
    assert x.gpu_hour_owned(8760, 4, 1, 0.08) == pytest.approx(0.08)


def test_gpu_hour_owned_refuses_what_no_plan_means_naming_the_argument():
    for args, name in (
        ((30000, 0), "years"),
        ((30000, 4, 1.5), "residual_fraction"),
        ((30000, 4, 0, -0.1), "annual_rate"),
        ((30000, 4, 0, 0, 1, 0.9), "pue"),
        ((-1, 4), "capex_usd"),
    ):
        with pytest.raises(OutOfRangeError, match=f"^{name} must be"):
            x.gpu_hour_owned(*args)


def test_the_formula_gives_the_same_figure_in_a_recalculated_workbook(tmp_path: Path):
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "S"
    ws["A1"] = "=GPU_HOUR_OWNED(30000,4,0.1,0.08,1,1.3,0.08,150)"
    ws["A2"] = "=ROUND(A1,4)"
    ws["A3"] = '=COST_SPEC("H100","capex_usd")'
    wb.save(tmp_path / "owned.xlsx")
    book = Workbook.load(tmp_path / "owned.xlsx").calculate()
    assert book.get("S!A1") == pytest.approx(1.2674545, abs=1e-6)
    assert book.get("S!A2") == 1.2675
    assert book.get("S!A3") == 50000


# --- Owning or renting at a utilisation ------------------------------------------------------------------------


def test_cost_per_million_tokens_owned_and_rented_by_hand():
    # owned: 1.2675 / (1,000 x 3,600 x 0.3) x 1e6 = 1.2675 / 1,080 x 1,000 = 1.173611
    assert x.cost_per_m_owned(1.2675, 1000, 0.3) == pytest.approx(1.173611, abs=1e-6)
    # rented and released when idle: 2.50 / 3,600,000 x 1e6 = 0.694444, whatever the load
    assert x.cost_per_m_rented(2.5, 1000, 0.3) == pytest.approx(0.694444, abs=1e-6)
    assert x.cost_per_m_rented(2.5, 1000, 0.9) == pytest.approx(0.694444, abs=1e-6)
    # held around the clock: 0.694444 / 0.3 = 2.314815, the owned formula at the rent
    assert x.cost_per_m_rented(2.5, 1000, 0.3, 1) == pytest.approx(2.314815, abs=1e-6)
    assert x.cost_per_m_rented(2.5, 1000, 0.3, 1) == pytest.approx(x.cost_per_m_owned(2.5, 1000, 0.3))
    # half the idle hours billed: (0.3 + 0.5 x 0.7) / 0.3 = 2.1667 hours billed per hour worked: 1.504630
    assert x.cost_per_m_rented(2.5, 1000, 0.3, 0.5) == pytest.approx(1.504630, abs=1e-6)
    # the owned cost is "Back-of-the-Envelope Estimation for LLM Systems"'s COST_PER_M_TOKENS for one GPU at the owned price
    assert x.cost_per_m_owned(1.2675, 1000, 0.3) == pytest.approx(x.cost_per_m_tokens(1, 1.2675, 1000, 0.3))


def test_breakeven_utilisation_by_hand_and_where_the_two_costs_meet():
    # released when idle: 1.2675 / 2.50 = 0.507
    assert x.breakeven_utilisation(1.2675, 2.5) == pytest.approx(0.507)
    u = x.breakeven_utilisation(1.2675, 2.5)
    assert x.cost_per_m_owned(1.2675, 1000, u) == pytest.approx(x.cost_per_m_rented(2.5, 1000, u))
    # half the idle hours billed: (0.507 - 0.5) / (1 - 0.5) = 0.014
    u = x.breakeven_utilisation(1.2675, 2.5, 0.5)
    assert u == pytest.approx(0.014)
    assert x.cost_per_m_owned(1.2675, 1000, u) == pytest.approx(x.cost_per_m_rented(2.5, 1000, u, 0.5))
    assert x.breakeven_utilisation(1.0, 2.5, 0.5) == 0  # owning costs less than the idle hours alone
    assert x.breakeven_utilisation(5.0, 2.5) == pytest.approx(2.0)  # above 1: renting wins at any load
    with pytest.raises(OutOfRangeError, match="^idle_billed must be below 1"):
        x.breakeven_utilisation(1.2675, 2.5, 1)


# --- When buying pays back -------------------------------------------------------------------------------------

RUNNING = 8 * (1 * 1.3 * 0.08 * 730 + 150 * 1)  # 8 GPUs: 75.92 of power + 150 of hosting a month each = 1,807.36


def _months_to_breakeven(capex: float, rent: float, running: float, payment: float = 0, term: int = 0) -> float:
    """The crossing of the cumulative lines, found month by month and interpolated: the reference."""

    def owned(m: float) -> float:
        return (capex if not term else payment * min(m, term)) + running * m

    m = 0
    while owned(m + 1) > rent * (m + 1):
        m += 1
        assert m < 10_000
    if owned(m) <= rent * m:
        return m
    return m + (owned(m) - rent * m) / ((rent - running) - (owned(m + 1) - owned(m) - running))


def test_breakeven_month_paid_up_front_by_hand():
    assert RUNNING == pytest.approx(1807.36)
    # 240,000 / (14,600 - 1,807.36) = 240,000 / 12,792.64 = 18.760787 months
    assert x.breakeven_month(240000, 14600, RUNNING) == pytest.approx(18.760787, abs=1e-6)
    assert x.breakeven_month(240000, 14600, RUNNING) == pytest.approx(_months_to_breakeven(240000, 14600, RUNNING))
    assert x.breakeven_month(240000, 14600) == pytest.approx(240000 / 14600)
    with pytest.raises(OutOfRangeError, match=r"^rent_usd_per_month \(1807\.36\) must exceed running_usd_per_month"):
        x.breakeven_month(240000, 1807.36, RUNNING)


def test_breakeven_month_financed_by_hand():
    # a 3-year loan at 8%: i = 0.08 / 12 = 0.00666667, (1 + i)^36 = 1.2702371
    #   payment = 240,000 x 0.00666667 x 1.2702371 / 0.2702371 = 240,000 x 0.03133636 = 7,520.73 a month
    i = 0.08 / 12
    assert (1 + i) ** 36 == pytest.approx(1.2702371, abs=1e-7)
    payment = 240000 * x.capital_recovery_factor(i, 36)
    assert payment == pytest.approx(7520.73, abs=0.01)
    # 7,520.73 + 1,807.36 = 9,328.09 a month is below the rent of 14,600: cheaper from the first month
    assert x.breakeven_month(240000, 14600, RUNNING, 3, 0.08) == 0
    # at a rent of 8,000 it is not: the lines cross after the loan, at 36 x 7,520.73 / (8,000 - 1,807.36) = 43.72
    assert x.breakeven_month(240000, 8000, RUNNING, 3, 0.08) == pytest.approx(36 * 7520.73 / 6192.64, abs=1e-3)
    assert x.breakeven_month(240000, 8000, RUNNING, 3, 0.08) == pytest.approx(
        _months_to_breakeven(240000, 8000, RUNNING, payment, 36)
    )
    # a loan at no interest repays the price itself: 240,000 / 36 = 6,666.67 a month, crossing at 240,000 / 6,192.64
    assert x.breakeven_month(240000, 8000, RUNNING, 3, 0) == pytest.approx(240000 / 6192.64)
    assert x.breakeven_month(240000, 8000, RUNNING, 3, 0) == pytest.approx(x.breakeven_month(240000, 8000, RUNNING))


# --- Committing ------------------------------------------------------------------------------------------------

DEMAND = (8, 8, 16, 24)


def test_committed_cost_by_hand():
    # 8 committed at $2.00 every month: 8 x 2 x 4 = 64 GPU-dollars an hour; the excess, 0 + 0 + 8 + 16 = 24 GPUs, at
    # $3.00: 72; (64 + 72) x 730 hours = 99,280
    assert x.committed_cost(DEMAND, 8, 2, 3) == pytest.approx(99280)
    # nothing committed: 56 GPU-months on demand, 56 x 3 x 730 = 122,640; all committed at the peak:
    # 24 x 2 x 4 x 730 = 140,160
    assert x.committed_cost(DEMAND, 0, 2, 3) == pytest.approx(122640)
    assert x.committed_cost(DEMAND, 24, 2, 3) == pytest.approx(140160)
    assert x.committed_cost(DEMAND, 8, 2, 3, 744) == pytest.approx(136 * 744)  # a 31-day month
    assert x.committed_cost((10.5,), 4, 2, 3, 1) == pytest.approx(4 * 2 + 6.5 * 3)  # fractional GPUs of a curve


def test_best_commitment_by_hand_and_against_every_level():
    # 2 / 3 of 4 months = 2.67: commit to the lowest level exceeded in at most 2 months: 8 (16 and 24 are above it)
    assert x.best_commitment(DEMAND, 2, 3) == 8
    cheapest = min(x.committed_cost(DEMAND, r / 4, 2, 3) for r in range(0, 24 * 4 + 1))
    assert x.committed_cost(DEMAND, 8, 2, 3) == pytest.approx(cheapest)
    # committed at 1/3 of on demand: exceeded in at most 1.33 months: 16
    assert x.best_commitment(DEMAND, 1, 3) == 16
    assert x.best_commitment(DEMAND, 3, 3) == 0  # no discount: commit nothing
    assert x.best_commitment(DEMAND, 0, 3) == 24  # free commitment: the peak
    # a tie (the cost is flat between 8 and 16 at 2 / 4 = 0.5): the smaller commitment
    assert x.best_commitment(DEMAND, 1.5, 3) == 8
    assert x.committed_cost(DEMAND, 8, 1.5, 3) == pytest.approx(x.committed_cost(DEMAND, 16, 1.5, 3))


def test_a_demand_curve_is_a_range_of_numbers():
    with pytest.raises(OutOfRangeError, match=r"^demand_gpus \(value 2 of 3\) must be"):
        x.committed_cost((8, -1, 8), 8, 2, 3)


# --- The catalog's sourced defaults ----------------------------------------------------------------------------


def test_cost_spec_reads_costs_toml_by_any_accelerator_name():
    # H100: "ranging approximately between $47k to $52k per H100 ... the $50k average" (Cheah, H100 Freakonomics)
    assert x.cost_spec("H100", "capex_usd") == 50000 == x.cost_spec("H100-SXM5", "capex_usd")
    # DGX H100 datasheet: about 10.2 kW max for 8 GPUs = 1.275 kW each; DGX B200: 14.3 kW / 8 = 1.7875
    assert x.cost_spec("H100", "server_kw_per_gpu") == 1.275
    assert x.cost_spec("B200", "server_kw_per_gpu") == pytest.approx(14.3 / 8)
    # a DGX B200 at $515K / 8
    assert x.cost_spec("B200", "capex_usd") == 515000 / 8
    # site figures for any accelerator: Uptime's 2023 average PUE 1.58; CBRE H2 2024 $184.06/kW-month; EIA 2023
    # Virginia commercial 8.95 cents/kWh; Amazon's 5-year server life from 2025
    for gpu in ("H100", "B200", "A100"):
        assert x.cost_spec(gpu, "pue") == 1.58
    assert x.cost_spec("H100", "usd_per_kw_month") == 184.06
    assert x.cost_spec("H100", "usd_per_kwh") == 0.0895
    assert x.cost_spec("H100", "years") == 5
    source = x.cost_source("H100", "usd_per_kw_month")
    assert source.startswith("CBRE, 'North America Data Center Trends H2 2024'") and "(as of 2025-02-26;" in source
    assert costs.cost_figure("H100", "capex_usd").as_of.isoformat() == "2024-08-01"


def test_a_figure_no_source_gives_is_not_available_with_its_reason():
    with pytest.raises(NotAvailableError, match="^H200 has no capex_usd in costs.toml: No public price"):
        x.cost_spec("H200", "capex_usd")
    with pytest.raises(NotAvailableError, match="^costs.toml has no figures for A100-80GB"):
        x.cost_spec("A100", "capex_usd")
    with pytest.raises(UnknownPresetError, match="did you mean capex_usd"):
        x.cost_spec("H100", "capex")
    with pytest.raises(UnknownPresetError, match="^gpu 'H1OO' is not in the catalog"):
        x.cost_spec("H1OO", "pue")


def test_every_accelerator_figure_is_given_or_unavailable_and_every_source_is_cited():
    loaded = costs.load_costs()
    assert set(loaded.accelerators) == {"H100-SXM", "H200", "B200"}
    for pid, figures in loaded.accelerators.items():
        for field, spec in costs.COST_FIELDS.items():
            if spec.scope == "accelerator":
                assert (field in figures) != (field in loaded.unavailable[pid]), (pid, field)
    cited = (
        {f.source for f in loaded.site.values()}
        | {f.source for t in loaded.accelerators.values() for f in t.values()}
        | {k for t in loaded.unavailable.values() for k in t.values()}
    )
    assert cited == set(loaded.sources)  # no citation is left unused


SITE = "\n".join(
    f'{k} = {{ value = {v}, source = "s", as_of = 2025-01-01 }}'
    for k, v in (
        ("years", 5),
        ("residual_fraction", 0.1),
        ("annual_rate", 0.08),
        ("pue", 1.5),
        ("usd_per_kwh", 0.1),
        ("usd_per_kw_month", 150),
    )
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[sources]\ns = "x"\n[titles]\ns = "S"\n[site]\n' + SITE.replace("1.5", "0.9"),
            r"^costs.toml: site.pue.value: pue must be a number from 1 to 10, got 0.9 \(ratio\)$",
        ),
        (
            '[sources]\ns = "x"\n[titles]\ns = "S"\n[site]\n'
            + SITE.replace('source = "s", as_of = 2025-01-01 }', 'source = "t", as_of = 2025-01-01 }', 1),
            r"^costs.toml: site.years: source 't' is not in \[sources\]$",
        ),
        (
            '[sources]\ns = "x"\n[titles]\ns = "S"\n[site]\n' + SITE.replace("2025-01-01", '"2025"', 1),
            r"^costs.toml: site.years.as_of: Input should be a valid date",
        ),
        (
            '[sources]\ns = "x"\n[titles]\ns = "S"\n[site]\n' + SITE.replace("value = 5", "value = true", 1),
            r"^costs.toml: site.years.value: Input should be a valid number",
        ),
        (
            '[sources]\ns = "x"\n[titles]\ns = "S"\n[site]\n' + SITE.split("\n", 1)[1],
            r"^costs.toml: site.years is missing",
        ),
        (
            '[sources]\ns = "x"\n[titles]\ns = "S"\n[site]\n'
            + SITE
            + "\n[accelerators.H100-SXM]\ncapex_usd = { value = 1, source = "
            '"s", as_of = 2025-01-01 }',
            r"^costs.toml: accelerators.H100-SXM.server_kw_per_gpu is missing: give it",
        ),
        (
            '[sources]\ns = "x"\n[titles]\ns = "S"\n[site]\n' + SITE + "\n[accelerators.H999]\n",
            r"^costs.toml: accelerators.H999: not an accelerator id of accelerators.toml$",
        ),
        (
            '[sources]\ns = "x"\n[titles]\ns = "S"\n[site]\n'
            + SITE
            + '\ncapex_usd = { value = 1, source = "s", as_of = 2025-01-01 }',
            r"^costs.toml: site: 'capex_usd' is not a figure of this table",
        ),
        ("[site]\nyears = 5\n[other]\n", r"^costs.toml: unexpected top-level table\(s\) other$"),
        (
            '[sources]\ns = "x"\nt = "y"\n[titles]\ns = "S"\n[site]\n' + SITE,
            r"^costs.toml: titles.t: give every source a short title of 1 to 35 characters$",
        ),
        (
            '[sources]\ns = "x"\n[titles]\ns = "S"\n[site]\n' + SITE.replace("}", ', note = "' + "n" * 56 + '" }', 1),
            r"^costs.toml: site.years.note: String should have at most 55 characters",
        ),
    ],
)
def test_costs_toml_is_validated_with_one_line_naming_the_table_and_field(text, message):
    with pytest.raises(CatalogError, match=message):
        costs.parse_costs(text)


def test_owned_case_prices_the_plan_searchs_gpu_hour_from_the_catalog():
    case = x.owned_case("H100")
    assert case == x.OwnedCase(50000, 5, 0.1, 0.08, 1.275, 1.58, 0.0895, 184.06)
    # 1.08^5 = 1.4693281; CRF = 0.08 x 1.4693281 / 0.4693281 = 0.2504565; residual today 5,000 / 1.4693281 = 3,402.92
    # capital (50,000 - 3,402.92) x 0.2504565 / 8,760 = 1.332253; power 1.275 x 1.58 x 0.0895 = 0.180296;
    # hosting 184.06 x 1.275 x 12 / 8,760 = 0.321475; total 1.834024
    assert x.owned_cost_per_gpu_hour(case) == pytest.approx(1.834024, abs=2e-6)
    assert x.owned_cost_per_gpu_hour(case) == x.gpu_hour_owned(50000, 5, 0.1, 0.08, 1.275, 1.58, 0.0895, 184.06)
    # the board power instead of the server's share, as GPU_SPEC(gpu, "power_w") / 1000 would give it
    board = x.owned_case("H100", kw=0.7)
    assert x.owned_cost_per_gpu_hour(board) == pytest.approx(
        1.332253 + 0.7 * (1.58 * 0.0895 + 184.06 * 12 / 8760), abs=2e-6
    )
    with pytest.raises(NotAvailableError, match="^H200 has no capex_usd"):
        x.owned_case("H200")
    assert x.owned_case("H200", capex_usd=40000).kw == 1.275
    with pytest.raises(TypeError, match="unknown assumption"):
        x.owned_case("H100", capex=1)
    with pytest.raises(OutOfRangeError, match="^pue must be"):
        x.owned_cost_per_gpu_hour(x.OwnedCase(50000, 5, pue=0.5))


def test_hours_per_year_is_365_days():
    assert cost.HOURS_PER_YEAR == 365 * 24 and math.isclose(cost.HOURS_PER_YEAR / cost.MONTHS_PER_YEAR, 730)


# --- Accounting: straight-line depreciation, book value, NPV, the present cost of owning --------------------------


def test_straight_line_depreciation_and_book_value_follow_excel_sln():
    # $30,000 with $3,000 salvage over 4 years: SLN = 27,000 / 4 = $6,750 a year
    assert cost.depreciation_sl(30_000, 3_000, 4) == 6_750
    schedule = [cost.book_value(30_000, 3_000, 4, year) for year in range(0, 6)]
    assert schedule == [30_000, 23_250, 16_500, 9_750, 3_000, 3_000]  # the salvage from the end of the life on
    assert cost.book_value(30_000, 3_000, 4, 2.5) == pytest.approx(30_000 - 2.5 * 6_750)
    assert cost.depreciation_sl(1_000, 1_500, 5) == -100  # a salvage above the cost: negative, as in Excel


def test_npv_discounts_each_flow_from_the_end_of_its_period_as_excel_npv():
    # -1,000 / 1.1 + 600 / 1.21 + 600 / 1.331 = -909.09 + 495.87 + 450.79
    assert cost.npv_usd(0.1, (-1000.0, 600.0, 600.0)) == pytest.approx(-1000 / 1.1 + 600 / 1.21 + 600 / 1.331)
    assert cost.npv_usd(0.1, (-1000.0, 600.0, 600.0)) == pytest.approx(37.57, abs=0.005)
    assert cost.npv_usd(0, (1.0, 2.0, 3.0)) == 6
    with pytest.raises(XlsxplanError, match="cash_flows must hold at least one number"):
        cost.npv_usd(0.05, ())


def test_the_present_cost_of_owning_annualised_is_the_cash_view():
    # $30,000 over 4 years, 10% residual, 8%, $2,700 a year of running costs:
    # 30,000 + 2,700 / CRF(8%, 4) - 3,000 / 1.08^4 = 30,000 + 8,942.74 - 2,205.09
    got = cost.owned_npv(30_000, 4, 0.1, 0.08, 2_700)
    assert got == pytest.approx(30_000 + 2_700 * (1 - 1.08**-4) / 0.08 - 3_000 / 1.08**4)
    assert got == pytest.approx(36_737.65, abs=0.01)
    # for whole years it is the purchase plus Excel's NPV of the running costs, the resale in the last year
    assert got == pytest.approx(30_000 + cost.npv_usd(0.08, (2_700.0, 2_700.0, 2_700.0, 2_700.0 - 3_000.0)))
    # times the capital recovery factor: the yearly cost GPU_HOUR_OWNED spreads over 8,760 hours (its running cost
    # of power, 1 kW at $2,700 / 8,760 a kWh, is $2,700 a year)
    yearly = got * cost.capital_recovery_factor(0.08, 4)
    per_hour = cost.gpu_hour_owned(30_000, 4, 0.1, 0.08, 1, 1, 2_700 / 8760)
    assert yearly / 8760 == pytest.approx(per_hour)
    # at a rate of 0 it is the undiscounted sum
    assert cost.owned_npv(30_000, 4, 0.1, 0, 2_700) == pytest.approx(30_000 + 4 * 2_700 - 3_000)


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda: cost.depreciation_sl(30_000, 3_000, 0), "years"),
        (lambda: cost.book_value(30_000, -1, 4, 1), "salvage_usd"),
        (lambda: cost.book_value(30_000, 3_000, 4, -1), "years_elapsed"),
        (lambda: cost.npv_usd(1.5, (1.0,)), "annual_rate"),
        (lambda: cost.owned_npv(30_000, 4, 0.1, 0.08, -5), "running_usd_per_year"),
    ],
)
def test_accounting_refuses_bad_input_naming_the_argument(call, argument):
    with pytest.raises(XlsxplanError, match=rf"^{argument}") as err:
        call()
    assert err.value.argument == argument
