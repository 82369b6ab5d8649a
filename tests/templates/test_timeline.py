"""The serving plan month by month: the Timeline sheet against a Python reference, the Costs block against the catalog.

The template is built and recalculated headlessly once (the public ``xlsxplan.headless.Workbook`` API: load, set,
calculate, get, save); each test changes inputs (traffic growth, prices, lead time, a pasted forecast, a commitment,
a change of engine), recalculates, and compares every month of every row, and every total, with :func:`reference`:
the same plan written out in Python from the core functions (xlsxplan.core.cost, .traffic, .serving) and the
Calculations lines the Timeline starts from. Hand-worked figures pin the reference itself.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
import re
import shutil
import subprocess
from typing import Any

import openpyxl
import pytest
from openpyxl.formula.translate import Translator

from tests.helpers.books import built_templates, changed
from xlsxplan.catalog import costs
from xlsxplan.core import cost, serving, traffic
from xlsxplan.templates import serving as serving_book
from xlsxplan.templates import timeline
from xlsxplan.templates.book import name_from_label
from xlsxplan.templates.build import Built
from xlsxplan.templates.common import price_label
from xlsxplan.templates.metrics import text_em
from xlsxplan.templates.styles import NOTE_EM_PER_WIDTH

ROWS = {row.key: row for _, rows in timeline.ROWS for row in rows}
MONTHS = timeline.MONTHS


@pytest.fixture(scope="module")
def plan(tmp_path_factory) -> Built:
    # the functions edition as shipped (tests/e2e/test_generated.py holds it to be what build writes), recalculated
    return built_templates(tmp_path_factory)[serving_book.FILENAME]


def _row(b: Built, key: str) -> int:
    return b.book.ref(f"{timeline.SHEET}:{key}").row


def months_of(b: Built, key: str) -> list[Any]:
    r = _row(b, key)
    return [b.get(f"{timeline.SHEET}!{col}{r}") for col in timeline.MONTH_COLUMNS]


def total_of(b: Built, key: str) -> Any:
    return b.get(f"{timeline.SHEET}!C{_row(b, key)}")


def price_name(gpu: str) -> str:
    """The defined name of an accelerator's price on Lists."""
    return name_from_label(price_label(gpu))


H100_PRICE = price_name("H100-SXM")


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


NAMES = (
    "Requests_Per_Day",
    "Traffic_Growth_Per_Month",
    "Peak_Hour_Factor",
    "Change_Month",
    "Capacity_Multiple_After_The_Change",
    "Spare_Replicas",
    "Minimum_Replicas",
    "GPUs_Per_Replica",
    "GPUs_Per_Server",
    "Lead_Time_For_Servers",
    "Capital_Cost_Per_GPU",
    "Capital_Recovery_Life",
    "Residual_Value",
    "Cost_Of_Capital",
    "Power_Per_GPU",
    "Power_Usage_Effectiveness",
    "Electricity_Price",
    "Hosting_Per_KW_Month",
    "On_Demand_Price_Change_Per_Month",
    "Committed_Price_Per_GPU_Hour",
    "Committed_GPUs",
    "Hours_Per_Month",
    "Timeline_Start",
)


def excel_date(day: dt.date) -> int:
    return (day - dt.date(1899, 12, 30)).days


def add_months(start: dt.date, n: int) -> dt.date:
    y, m = divmod(start.month - 1 + n, 12)
    return dt.date(start.year + y, m + 1, start.day)


def reference(b: Built) -> dict[str, Any]:
    """The Timeline computed in Python from the workbook's inputs and the Calculations lines it starts from: each
    month row as a list of 36, each single figure as a value."""
    g = {name: b.get(name) for name in NAMES}
    g["Price_Per_GPU_Hour"] = b.get(price_name(b.get("Accelerator")))  # the active accelerator's, on Lists
    calc = {
        key: b.get(b.book.address(key)) for key in ("replica_rps_chunked", "prompt_mean", "decode_tokens", "fleet_util")
    }
    pasted = [row[0] for row in b.get("Monthly_Requests_Per_Day")]
    start = g["Timeline_Start"]
    start = start.date() if isinstance(start, dt.datetime) else dt.date(1899, 12, 30) + dt.timedelta(days=start)
    per_server, hours, lead = g["GPUs_Per_Server"], g["Hours_Per_Month"], g["Lead_Time_For_Servers"]
    rps = calc["replica_rps_chunked"]
    fits = _number(rps)
    tokens_per_request = calc["prompt_mean"] + calc["decode_tokens"]
    ms = range(1, MONTHS + 1)
    r: dict[str, Any] = {"dates": [excel_date(add_months(start, m - 1)) for m in ms], "month": list(ms)}
    r["change"] = [1 if g["Change_Month"] > 0 and m >= g["Change_Month"] else 0 for m in ms]
    r["owned_ok"] = [1 if m > lead else 0 for m in ms]
    r["requests"] = [
        p if _number(p) else g["Requests_Per_Day"] * (1 + g["Traffic_Growth_Per_Month"]) ** (m - 1)
        for m, p in zip(ms, pasted)
    ]
    r["peak_rps"] = [serving.peak_requests_per_s(x, g["Peak_Hour_Factor"]) for x in r["requests"]]
    r["fits"] = 1 if fits else 0
    multiple = g["Capacity_Multiple_After_The_Change"]
    r["capacity"] = [(rps if fits else 0) * (multiple if c else 1) for c in r["change"]]
    r["replicas"] = [
        traffic.fleet_replicas(p, c, g["Spare_Replicas"], g["Minimum_Replicas"]) if c > 0 else 0
        for p, c in zip(r["peak_rps"], r["capacity"])
    ]
    r["gpus"] = [n * g["GPUs_Per_Replica"] for n in r["replicas"]]
    r["tokens"] = [x * hours / 24 * tokens_per_request / 1e9 for x in r["requests"]]
    r["servers_needed"] = [math.ceil(n / per_server) for n in r["gpus"]]
    r["in_service"] = [max(r["servers_needed"][:m]) * ok for m, ok in zip(ms, r["owned_ok"])]
    r["arriving"] = [s - max(r["in_service"][: m - 1], default=0) for m, s in zip(ms, r["in_service"])]
    r["ordered"] = [r["arriving"][m - 1 + lead] if m + lead <= MONTHS else 0 for m in ms]
    r["gpus_owned"] = [s * per_server for s in r["in_service"]]
    r["gpus_bridge"] = [max(0, n - o) for n, o in zip(r["gpus"], r["gpus_owned"])]
    owned_case = (g["Capital_Cost_Per_GPU"], g["Capital_Recovery_Life"], g["Residual_Value"], g["Cost_Of_Capital"])
    r["owned_hour"] = cost.gpu_hour_owned(
        *owned_case,
        g["Power_Per_GPU"],
        g["Power_Usage_Effectiveness"],
        g["Electricity_Price"],
        g["Hosting_Per_KW_Month"],
    )
    r["capital_hour"] = cost.gpu_hour_owned(*owned_case)
    running = r["running_hour"] = r["owned_hour"] - r["capital_hour"]
    price, committed_price = g["Price_Per_GPU_Hour"], g["Committed_Price_Per_GPU_Hour"]
    r["od_price"] = [price * (1 + g["On_Demand_Price_Change_Per_Month"]) ** (m - 1) for m in ms]
    typed = g["Committed_GPUs"]
    level = r["committed"] = typed if _number(typed) else cost.best_commitment(tuple(r["gpus"]), committed_price, price)
    r["breakeven_util"] = cost.breakeven_utilisation(r["owned_hour"], price)
    capex_server = per_server * g["Capital_Cost_Per_GPU"]
    r["payback"] = (
        cost.breakeven_month(capex_server, per_server * price * hours, per_server * running * hours)
        if price > running
        else "never"
    )
    if fits:
        tps = r["tps_gpu"] = rps * tokens_per_request / g["GPUs_Per_Replica"]
        r["cpm_owned_util"] = cost.cost_per_m_owned(r["owned_hour"], tps, calc["fleet_util"])
        r["cpm_rented_util"] = cost.cost_per_m_rented(price, tps, calc["fleet_util"], 1)
    else:
        r["tps_gpu"] = r["cpm_owned_util"] = r["cpm_rented_util"] = timeline.NO_FIT
    r["owned_cost"] = [n * r["owned_hour"] * hours for n in r["gpus_owned"]]
    r["bridge_cost"] = [n * p * hours for n, p in zip(r["gpus_bridge"], r["od_price"])]
    r["owned_total"] = [a + c for a, c in zip(r["owned_cost"], r["bridge_cost"])]
    r["od_cost"] = [n * p * hours for n, p in zip(r["gpus"], r["od_price"])]
    r["committed_cost"] = [
        (level * committed_price + max(0, n - level) * p) * hours for n, p in zip(r["gpus"], r["od_price"])
    ]
    r["capex_cash"] = [a * capex_server for a in r["arriving"]]
    r["running_cash"] = [n * running * hours for n in r["gpus_owned"]]
    r["owned_cash"] = [a + c + d for a, c, d in zip(r["capex_cash"], r["running_cash"], r["bridge_cost"])]
    r["owned_cum"] = list(itertools.accumulate(r["owned_cash"]))
    r["od_cum"] = list(itertools.accumulate(r["od_cost"]))
    r["committed_cum"] = list(itertools.accumulate(r["committed_cost"]))
    r["below_od"] = [1 if o < d else 0 for o, d in zip(r["owned_cum"], r["od_cum"])]
    r["below_committed"] = [1 if o < c else 0 for o, c in zip(r["owned_cum"], r["committed_cum"])]
    first = next((m for m, flag in zip(ms, r["below_od"]) if flag), None)
    r["breakeven_od"] = first if first else timeline.BEYOND
    r["breakeven_od_date"] = r["dates"][first - 1] if first else timeline.BEYOND
    first = next((m for m, flag in zip(ms, r["below_committed"]) if flag), None)
    r["breakeven_committed"] = first if first else timeline.BEYOND
    for key, plan_cost in (("cpm_owned", "owned_total"), ("cpm_od", "od_cost"), ("cpm_committed", "committed_cost")):
        if fits:
            r[key] = [c / (t * 1000) for c, t in zip(r[plan_cost], r["tokens"])]
            r[f"{key}:total"] = sum(r[plan_cost]) / (sum(r["tokens"]) * 1000)
        else:
            r[key] = [timeline.NO_FIT] * MONTHS
            r[f"{key}:total"] = timeline.NO_FIT
    return r


def same(actual: Any, expected: Any, where: str) -> None:
    if isinstance(expected, str) or isinstance(actual, str):
        assert actual == expected, f"{where}: workbook {actual!r}, Python {expected!r}"
    else:
        assert actual == pytest.approx(expected, rel=1e-9, abs=1e-9), f"{where}: workbook {actual}, Python {expected}"


def check_timeline(b: Built) -> dict[str, Any]:
    """Every month of every row and every figure in column C against :func:`reference`; returns the reference."""
    expected = reference(b)
    assert b.workbook.errors() == {}
    dates = [b.get(f"{timeline.SHEET}!{col}5") for col in timeline.MONTH_COLUMNS]
    same(dates, expected["dates"], "the month headings")
    for key, row in ROWS.items():
        if row.month or key == "month":
            for i, (actual, value) in enumerate(zip(months_of(b, key), expected[key]), start=1):
                same(actual, value, f"{row.label} ({key}), month {i}")
        if row.total:
            total = total_of(b, key)
            if f"{key}:total" in expected:
                value = expected[f"{key}:total"]
            elif row.total.startswith("=SUM({"):
                value = sum(expected[key])
            elif row.total.startswith("=MAX({"):
                value = max(expected[key])
            elif row.total.startswith("=COUNT({"):
                value = len(expected[key])
            else:
                value = expected[key]
            same(total, value, f"{row.label} ({key}), column C")
    return expected


# -- the shipped plan --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_shipped_timeline_is_what_python_computes_and_what_the_hand_gives(plan):
    r = check_timeline(plan)
    # month 1 is the plan of "Back-of-the-Envelope Estimation for LLM Systems": 200,000 requests a day at peak factor 3 = 6.94 requests/s, 2.957 per replica:
    # 3 replicas + 1 spare = 4, of 2 GPUs: 8 GPUs, one server; growth 5% a month: 200,000 x 1.05^35 = 1,103,203
    assert r["requests"][0] == 200_000 and r["gpus"][0] == 8 and r["servers_needed"][0] == 1
    assert r["requests"][-1] == pytest.approx(200_000 * 1.05**35) == pytest.approx(1_103_203.07, abs=0.01)
    # the lead time of 3 months (Dell, 8 to 12 weeks): nothing owned before month 4, the first server arrives then,
    # ordered in month 1; until then the 8 GPUs are rented on demand: 8 x $2.50 x 730 = $14,600 a month
    assert r["in_service"][:4] == [0, 0, 0, 1] and r["arriving"][3] == 1 and r["ordered"][0] == 1
    assert r["bridge_cost"][:3] == [14_600] * 3
    # the owned GPU-hour from costs.toml's H100 figures (tests/core/test_cost.py works it out): $1.834024; on demand at
    # $2.50 it breaks even at 1.834024 / 2.50 = 73.4% utilisation
    assert r["owned_hour"] == pytest.approx(1.834024, abs=2e-6)
    assert r["breakeven_util"] == pytest.approx(0.733610, abs=1e-6)
    # one server paid up front and busy: 8 x 50,000 / (8 x (2.50 - 0.501772) x 730) = 400,000 / 11,669.65 = 34.28
    assert r["payback"] == pytest.approx(400_000 / (8 * (2.5 - 0.5017724) * 730), rel=1e-6)
    assert round(r["payback"], 2) == 34.28
    # every server bought pays back over about 34 months of its own: the cash breakeven is after the timeline
    assert r["breakeven_od"] == timeline.BEYOND == total_of(plan, "breakeven_od")
    # the engine 25% faster from month 13: month 12 needs 6 replicas (6.944 x 1.05^11 = 11.88 requests/s over 2.957
    # is 4.02: 5, and a spare), month 13 5 (12.47 over 2.957 x 1.25 = 3.697 is 3.37: 4, and a spare)
    assert r["replicas"][11:13] == [6, 5]


def test_the_costs_block_is_costs_toml_with_each_figures_unit_source_and_date(plan):
    ws = plan.book.ws("Inputs")
    loaded = costs.load_costs()
    seen = 0
    for row in plan.book.inputs:
        spec = next((c for c in timeline.COSTS_BLOCK if c.label == row.label), None)
        if spec is None:
            continue
        figure = costs.cost_figure(timeline.COSTS_GPU, spec.field)
        r = row.row
        assert plan.get(row.name) == figure.value, row.label
        assert ws[f"C{r}"].value == costs.COST_FIELDS[spec.field].unit, row.label
        assert ws[f"D{r}"].value == f"Catalog: {loaded.title(figure)}", row.label
        assert ws[f"E{r}"].value == dt.datetime.combine(figure.as_of, dt.time()), row.label
        assert ws[f"F{r}"].value == figure.note, row.label
        seen += 1
    assert seen == len(timeline.COSTS_BLOCK) == 10
    assert plan.get("Capital_Cost_Per_GPU") == 50_000 and plan.get("Hosting_Per_KW_Month") == 184.06


# -- changed inputs: the months, the steps and the breakeven against Python ------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "values"),
    [
        ("growth 10% a month", {"Traffic_Growth_Per_Month": 0.10}),
        (
            "traffic falling 3% a month, servers of 4 GPUs, on demand at $4.50",
            {"Traffic_Growth_Per_Month": -0.03, "GPUs_Per_Server": 4, H100_PRICE: 4.5},
        ),
        (
            "a lead time of 8 months, on-demand prices falling 2% a month",
            {"Lead_Time_For_Servers": 8, "On_Demand_Price_Change_Per_Month": -0.02},
        ),
        (
            "on demand at $4.00, committed at $3.00, 20 GPUs committed",
            {H100_PRICE: 4.0, "Committed_Price_Per_GPU_Hour": 3.0, "Committed_GPUs": 20},
        ),
        ("an engine twice as fast from month 6", {"Change_Month": 6, "Capacity_Multiple_After_The_Change": 2}),
        (
            "a forecast pasted for months 1, 2 and 36; cheaper servers and power",
            {
                "'Monthly requests'!B6": 500_000,
                "'Monthly requests'!B7": 50_000,
                "'Monthly requests'!B41": 2_000_000,
                "Capital_Cost_Per_GPU": 30_000,
                "Electricity_Price": 0.05,
                "Power_Usage_Effectiveness": 1.2,
            },
        ),
    ],
)
def test_changed_inputs_give_the_months_the_steps_and_the_breakeven_python_computes(plan, name, values):
    with changed(plan, values):
        check_timeline(plan)


def test_lead_time_moves_the_steps_by_hand(plan):
    # no growth, no change: 8 GPUs every month, one server. With a lead time of 6 months it arrives in month 7,
    # ordered in month 1, and months 1 to 6 rent the 8 GPUs; with none it arrives in month 1
    flat = {"Traffic_Growth_Per_Month": 0, "Change_Month": 0}
    with changed(plan, {**flat, "Lead_Time_For_Servers": 6}):
        r = check_timeline(plan)
        assert r["gpus"] == [8] * MONTHS
        assert [m for m, a in enumerate(r["arriving"], start=1) if a] == [7] and r["ordered"][0] == 1
        assert r["gpus_bridge"] == [8] * 6 + [0] * 30
    with changed(plan, {**flat, "Lead_Time_For_Servers": 0}):
        r = check_timeline(plan)
        assert [m for m, a in enumerate(r["arriving"], start=1) if a] == [1] and sum(r["gpus_bridge"]) == 0


def test_the_cash_breakeven_of_a_flat_plan_is_breakeven_months(plan):
    # 8 GPUs every month, bought at once (no lead time), against $4.00 on demand: cumulative cash owned is
    # 400,000 + 8 x 0.501772 x 730 m = 400,000 + 2,930.35 m, on demand 8 x 4 x 730 m = 23,360 m; they cross at
    # m = 400,000 / (23,360 - 2,930.35) = 19.58, so month 20 is the first the owned plan has cost less
    flat = {"Traffic_Growth_Per_Month": 0, "Change_Month": 0, "Lead_Time_For_Servers": 0, H100_PRICE: 4.0}
    with changed(plan, flat):
        r = check_timeline(plan)
        running = 8 * r["running_hour"] * 730
        assert running == pytest.approx(2930.35, abs=0.01)
        crossing = cost.breakeven_month(400_000, 8 * 4.0 * 730, running)
        assert crossing == pytest.approx(400_000 / (23_360 - 2930.35), abs=1e-4) == pytest.approx(19.58, abs=0.01)
        assert total_of(plan, "breakeven_od") == math.floor(crossing) + 1 == 20
        assert plan.get("Timeline_Start") == excel_date(dt.date(2027, 1, 1))  # a date is a day number in a cell
        assert total_of(plan, "breakeven_od_date") == excel_date(dt.date(2028, 8, 1))  # month 20: August 2028


def test_the_cheapest_commitment_is_best_commitment_of_the_months(plan):
    r = check_timeline(plan)
    # $2.35 committed (one-year H100 contracts, SemiAnalysis, March 2026: the price table's) against $2.50 on demand
    # (the source text's): commit to what is needed in all but 36 x 2.35 / 2.50 = 33.8 months, the level exceeded in
    # at most 33 of them
    assert plan.get("Committed_Price_Per_GPU_Hour") == 2.35
    above = sum(1 for n in r["gpus"] if n > r["committed"])
    assert above <= 36 * 2.35 / 2.50 and sum(1 for n in r["gpus"] if n >= r["committed"]) > 36 * 2.35 / 2.50
    best = sum(r["committed_cost"])
    for level in range(0, max(r["gpus"]) + 1):
        assert best <= cost.committed_cost(tuple(r["gpus"]), level, 2.35, 2.50) + 1e-6


def test_the_plans_own_cost_per_token_is_calculations_bill_over_its_tokens(plan):
    # COST_PER_M_RENTED, held around the clock at the fleet's utilisation, is the bill Calculations splits between
    # input and output tokens: (cost in x prompt + cost out x output) / (prompt + output)
    prompt, decode = (plan.get(plan.book.address(k)) for k in ("prompt_mean", "decode_tokens"))
    cost_in, cost_out = (plan.get(plan.book.address(k)) for k in ("cost_in", "cost_out"))
    assert total_of(plan, "cpm_rented_util") == pytest.approx(
        (cost_in * prompt + cost_out * decode) / (prompt + decode), rel=1e-12
    )


def test_a_scenario_that_does_not_fit_reads_so_with_no_error_values(plan):
    with changed(plan, {"Active_Scenario": "72B BF16, 2 GPUs"}):
        r = check_timeline(plan)
        assert r["fits"] == 0 and months_of(plan, "cpm_owned") == [timeline.NO_FIT] * MONTHS
        assert months_of(plan, "gpus") == [0] * MONTHS


def test_checks_flag_costs_for_another_accelerator_and_a_commitment_dearer_than_on_demand(plan):
    def fired() -> set[str]:
        ws = plan.book.ws("Checks")
        master = plan.book.ref("master_check").row
        return {ws[f"A{r}"].value for r in range(6, master) if ws[f"B{r}"].value and plan.get(f"Checks!B{r}") == 1}

    assert fired() == set()
    with changed(plan, {"'Inputs'!" + plan.book.ref("gpu@1").col + str(plan.book.ref("gpu@1").row): "H200"}):
        assert "The costs are for another accelerator" in fired()
    with changed(plan, {"Committed_Price_Per_GPU_Hour": 2.5}):
        assert fired() == {"Committed price at or above on demand"}
    with changed(plan, {"Power_Usage_Effectiveness": 5}):
        assert fired() == {"Power usage effectiveness outside its usual range"}


# -- how it is built: the same formula every month, flags, fitting the page ------------------------------------------


def test_every_month_has_the_same_formula_and_no_month_is_special(plan):
    ws = openpyxl.load_workbook(plan.path)[timeline.SHEET]
    first = timeline.MONTH_COLUMNS[0]
    assert (first, timeline.MONTH_COLUMNS[-1], len(timeline.MONTH_COLUMNS)) == ("E", "AN", 36)
    for key, row in ROWS.items():
        if not row.month:
            continue
        r = _row(plan, key)
        origin = ws[f"{first}{r}"].value
        for col in timeline.MONTH_COLUMNS[1:]:
            assert ws[f"{col}{r}"].value == Translator(origin, origin=f"{first}{r}").translate_formula(f"{col}{r}"), (
                f"{row.label}: {col} differs from {first}"
            )
    heading = ws[f"{first}5"].value
    assert heading == "=EDATE(Timeline_Start,E" + str(_row(plan, "month")) + "-1)"
    for col in timeline.MONTH_COLUMNS[1:]:
        assert ws[f"{col}5"].value == Translator(heading, origin=f"{first}5").translate_formula(f"{col}5")


def test_labels_notes_and_headings_fit_what_each_printed_page_shows(plan):
    # a label fits column A (36 widths) beside its unit; a note fits column D (56) on one line, months beside it;
    # a section heading of the months (12-point bold, 1.31 times as wide: LibreOffice cut "Cost per million
    # tokens, input and output togethe", 24.8 ems of 10-point text, at the 48 widths of A and B) fits A and B
    ws = plan.book.ws(timeline.SHEET)
    em_per_width = NOTE_EM_PER_WIDTH
    for row in ROWS.values():
        assert text_em(row.label) <= em_per_width * timeline.WIDTHS["A"], row.label
        assert text_em(row.note) <= em_per_width * timeline.WIDTHS["D"], row.note
        assert len(row.unit) <= timeline.WIDTHS["B"], row.unit
    titles = [title for title, _ in timeline.ROWS]
    for title in titles[titles.index(timeline.SCHEDULE_FROM) :]:
        assert 1.32 * text_em(title) <= em_per_width * (timeline.WIDTHS["A"] + timeline.WIDTHS["B"]), title
    assert ws.print_title_cols == "$A:$B" and ws.freeze_panes == "C6"


def test_two_charts_of_gpus_and_cost_over_time(plan):
    ws = openpyxl.load_workbook(plan.path)[timeline.SHEET]
    titles = [c.title.tx.rich.p[0].r[0].t for c in ws._charts]
    assert titles == ["GPUs over time", "Cost so far, in cash"]
    rows = {re.search(r"\$(\d+)$", s.val.numRef.f).group(1) for c in ws._charts for s in c.series}
    assert rows == {
        str(_row(plan, k)) for k in ("gpus", "gpus_owned", "gpus_bridge", "owned_cum", "od_cum", "committed_cum")
    }


# -- LibreOffice: the Timeline and the Costs block print as a finance schedule ---------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("soffice") and shutil.which("pdftotext")), reason="needs LibreOffice and poppler")
def test_libreoffice_prints_the_timeline_and_costs_as_a_finance_schedule(plan, tmp_path):
    subprocess.run(
        [
            "soffice",
            "--headless",
            f"-env:UserInstallation=file://{tmp_path}/lo",
            "--convert-to",
            "pdf",
            "--outdir",
            str(tmp_path),
            str(plan.path),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    pdf = tmp_path / plan.path.with_suffix(".pdf").name
    pages = subprocess.run(
        ["pdftotext", "-layout", str(pdf), "-"], check=True, capture_output=True, text=True
    ).stdout.split("\f")
    timeline_pages = [p for p in pages if "Serving plan: Timeline" in p]
    costs_page = next(p for p in pages if "Serving plan: Inputs" in p and "Costs: owning the GPUs" in p)
    for page in [*timeline_pages, costs_page]:
        assert "#" not in page and "Err:" not in page
    # the figures: labels, units, values and the equations beside them
    first = timeline_pages[0]
    for text in (
        "Owned GPU-hour, all in",
        "USD/GPU-h",
        "$1.83",
        "73.4%",
        "34.3",
        "after month 36",
        "GPU_HOUR_OWNED: capital recovery, power, hosting (Inputs)",
    ):
        assert text in first, text
    # every month heads a column on its own page with the labels and units beside: no month cut off
    for year in (2027, 2028, 2029):
        year_pages = [p for p in timeline_pages if f"Jan {year}" in p]
        assert len(year_pages) == 1, year  # a year's months on one page (PRINT_PAGES_TALL)
        for page in year_pages:
            heads = re.findall(r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) " + str(year), page)
            assert heads == ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
            assert "requests/day" in page or "USD" in page  # the units print beside every month
    assert "$1,454,785" in "".join(timeline_pages)  # the owned plan's cash out over the 36 months, whole
    # the Costs block: each assumption with its unit, source and as-of date
    for text in (
        "Capital cost per GPU",
        "$50,000",
        "Catalog: Cheah, H100 Freakonomics, 2024",
        "2024-08-01",
        "Hosting per kW-month",
        "$184.06",
        "USD/kW-month",
        "Catalog: CBRE Data Center Trends H2 2024",
        "2025-02-26",
        "Power usage effectiveness",
        "1.58",
        "Catalog: Uptime Institute, 2023",
    ):
        assert text in costs_page, text
