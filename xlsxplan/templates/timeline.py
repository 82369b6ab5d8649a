"""The serving plan month by month: traffic growth, GPUs needed, whole servers bought a lead time ahead or GPUs
rented, committed against on-demand capacity, monthly and cumulative cost, cost per million tokens, breakevens.

Three pieces, each added to the serving template by :mod:`.serving` and nothing else:

* the **Costs** and **Timeline** blocks at the end of Inputs (:func:`inputs`): the owned-case assumptions with the
  unit, source and as-of date each has in ``catalog/costs.toml``, then the timeline's own (start, growth, a change of
  model or engine, price trend, commitment);
* **Monthly requests** (:func:`monthly_requests`): an optional column of requests per day, month by month, pasted
  over the growth rate;
* the **Timeline** sheet (:func:`timeline_sheet`): one column per month from the start month, the period's start
  date heading it, the same formula across every month and flag rows instead of special first columns (FAST Standard
  2.01-03, 3.01-02, 3.07; WORKBOOKS.md, "Timelines"), the totals and single figures in column C beside the months
  (the owned GPU-hour, the commitment and the breakevens in a block above them), and two charts (GPUs, cumulative
  cost) below; with its rows on Checks (:func:`checks`).

The fleet is stepped as a finance schedule reads it: GPUs needed, then whole servers needed, the servers in service
(the most needed in any month yet, since an owned server is kept, and none before the lead time has passed from the
start: ordering starts in month 1), the servers arriving each month and the month each is ordered. Until servers
can arrive, and beside them, what is needed is rented on demand. The owned plan is costed two ways: by capital recovery
(GPU_HOUR_OWNED, what its cost per token rests on) and in cash (capital paid on arrival), the view its breakeven
month against renting is read from.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Sequence
from dataclasses import dataclass

from openpyxl.chart import LineChart, Reference
from openpyxl.chart.series import SeriesLabel
from openpyxl.styles import Alignment
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.datavalidation import DataValidation
from openpyxl.worksheet.pagebreak import Break

from .. import domains
from ..catalog.costs import COST_FIELDS, cost_figure, load_costs
from ..domains import Domain, domain_of
from .book import Book, InputRow, Ref, Sheet, add_validation, put_text, register_cells, validation_for
from .common import Result, error_check
from .styles import FMT, HEADER_ROWS, TEMPLATE_DATE

__all__ = [
    "COSTS_BLOCK",
    "COSTS_GPU",
    "COVER_BLOCK",
    "CostInput",
    "FIRST_MONTH",
    "MONTHS",
    "MONTH_COLUMNS",
    "ROWS",
    "SHEET",
    "REQUESTS_SHEET",
    "USUAL",
    "Row",
    "checks",
    "inputs",
    "monthly_requests",
    "timeline_sheet",
]

SHEET = "Timeline"
REQUESTS_SHEET = "Monthly requests"
MONTHS = 36
"""Months in the timeline, one column each."""
FIRST_MONTH = 5
"""Column E: the timeline starts after Label | Unit | Total or value | Equation and source."""
MONTH_COLUMNS = tuple(get_column_letter(FIRST_MONTH + i) for i in range(MONTHS))
MONTHS_PER_PAGE = 12
"""A printed page holds a year of months beside the labels and units (the columns repeated on every page)."""
WIDTHS = {"A": 36, "B": 12, "C": 17, "D": 56}
MONTH_WIDTH = 11
"""$1,000,000 fits; twelve months and the labels make 180 widths, the widest page the templates print."""
MONTH_FORMAT = "mmm yyyy"
COSTS_GPU = "H100-SXM"
"""The accelerator whose costs.toml figures the Costs block ships with: the shipped scenarios' accelerator."""
BEYOND = "after month 36"
NO_FIT = "does not fit"
SCHEDULE_FROM = "Months"
"""The first section with a figure for every month: the month pages print from it down."""
PAGE_BREAK_BEFORE = "Cost each month"
START = _dt.datetime(2027, 1, 1)
"""The example timeline's first month: the first whole quarter after the templates' as-of date."""


@dataclass(frozen=True)
class Row:
    """One line of the Timeline: a formula for every month, a figure in column C, or both.

    ``month`` is the template of each month's cell; ``total`` of column C (a total, a peak, or a single figure
    such as the owned GPU-hour). Placeholders: ``{key}`` is another row's cell in the same month (a row with no
    months: its column C, absolute), ``{key:all}`` the row's 36 months, ``{key:sofar}`` its months up to this one,
    ``{key:before}`` the months before this one (from column D, which holds text, so the first month's range holds
    no number: MAX and SUM read it as nothing), ``{key:total}`` its column C, ``{dates}`` the months' start dates
    (the column headings); any other ``{key}`` is a line of the workbook (Calculations), names are Inputs' defined
    names."""

    key: str
    label: str
    unit: str
    note: str
    month: str | None = None
    total: str | None = None
    fmt: str = "int"
    total_fmt: str | None = None
    key_result: bool = False


def _fits(formula: str) -> str:
    """``formula``, or the words "does not fit" where the active scenario serves nothing (no error values)."""
    return f'=IF({{fits}}=1,{formula},"{NO_FIT}")'


# The rows, in sheet order, by section. Every formula across the months is the same (relative to its column).
ROWS: tuple[tuple[str, tuple[Row, ...]], ...] = (
    ("An owned GPU-hour, the commitment, breakevens", (
        Row("owned_hour", "Owned GPU-hour, all in", "USD/GPU-h",
            "GPU_HOUR_OWNED: capital recovery, power, hosting (Inputs)", None,
            "=GPU_HOUR_OWNED(Capital_Cost_Per_GPU,Capital_Recovery_Life,Residual_Value,Cost_Of_Capital,"
            "Power_Per_GPU,Power_Usage_Effectiveness,Electricity_Price,Hosting_Per_KW_Month)", "usd", "usd",
            key_result=True),
        Row("capital_hour", "of which capital recovery", "USD/GPU-h",
            "GPU_HOUR_OWNED without power and hosting", None,
            "=GPU_HOUR_OWNED(Capital_Cost_Per_GPU,Capital_Recovery_Life,Residual_Value,Cost_Of_Capital)", "usd",
            "usd"),
        Row("running_hour", "of which power and hosting", "USD/GPU-h", "The all-in figure less capital recovery",
            None, "={owned_hour}-{capital_hour}", "usd", "usd"),
        Row("committed", "GPUs committed every month", "GPUs",
            "Inputs' committed GPUs; empty: BEST_COMMITMENT of GPUs needed",
            None, "=IF(ISNUMBER(Committed_GPUs),Committed_GPUs,BEST_COMMITMENT({gpus:all},"
            "Committed_Price_Per_GPU_Hour,{price}))"),
        Row("breakeven_util", "Breakeven utilisation, owned or on demand", "fraction",
            "BREAKEVEN_UTILISATION: owned / on-demand GPU-hour", None,
            "=BREAKEVEN_UTILISATION({owned_hour},{price})", "pct1", "pct1", key_result=True),
        Row("payback", "One server, paid up front, busy, pays back in", "months",
            "BREAKEVEN_MONTH against on demand around the clock", None,
            '=IF({price}>{running_hour},BREAKEVEN_MONTH(GPUs_Per_Server*Capital_Cost_Per_GPU,'
            'GPUs_Per_Server*{price}*Hours_Per_Month,GPUs_Per_Server*{running_hour}*Hours_Per_Month),'
            '"never")', "dec1", "dec1"),
        Row("fits", "The active scenario fits in memory", "flag",
            "1: Calculations plans requests per replica; 0: nothing fits", None,
            "=IF(ISNUMBER({replica_rps_chunked}),1,0)", "int", "int"),
        Row("tps_gpu", "Tokens per GPU per second, full load", "tokens/s",
            "Requests per replica x tokens per request / GPUs per replica", None,
            f'=IF({{fits}}=1,{{replica_rps_chunked}}*({{prompt_mean}}+{{decode_tokens}})/GPUs_Per_Replica,"{NO_FIT}")',
            "int", "int"),
        Row("cpm_owned_util", "Per M tokens owned, the plan's utilisation", "USD/M tokens",
            "COST_PER_M_OWNED at the fleet's utilisation (Calculations)", None,
            f'=IF({{fits}}=1,COST_PER_M_OWNED({{owned_hour}},{{tps_gpu}},{{fleet_util}}),"{NO_FIT}")', "usd", "usd"),
        Row("cpm_rented_util", "Per M tokens rented, held around the clock", "USD/M tokens",
            "COST_PER_M_RENTED, idle hours billed: the plan's own cost", None,
            f'=IF({{fits}}=1,COST_PER_M_RENTED({{price}},{{tps_gpu}},{{fleet_util}},1),"{NO_FIT}")', "usd",
            "usd"),
    )),
    ("When buying pays back, in cash", (
        Row("breakeven_od", "Breakeven month, owned against on demand", "month",
            "First month the owned plan has cost less in cash so far", None,
            f'=IF(ISNUMBER(MATCH(1,{{below_od:all}},0)),MATCH(1,{{below_od:all}},0),"{BEYOND}")', "int", "int",
            key_result=True),
        Row("breakeven_od_date", "That month's start", "date", "The date heading its column", None,
            f'=IF(ISNUMBER({{breakeven_od}}),INDEX({{dates}},{{breakeven_od}}),"{BEYOND}")', "date", "date"),
        Row("breakeven_committed", "Breakeven month, owned against committed", "month",
            "First month the owned plan has cost less in cash so far", None,
            f'=IF(ISNUMBER(MATCH(1,{{below_committed:all}},0)),MATCH(1,{{below_committed:all}},0),"{BEYOND}")',
            "int", "int", key_result=True),
    )),
    ("Months", (
        Row("month", "Month", "count", "1 to 36 from the timeline start; each column's start date heads it",
            None, "=COUNT({month:all})", "int"),
        Row("change", "Model or engine change in force", "flag", "1 from the change month on (Inputs); 0 with none",
            "=IF(AND(Change_Month>0,{month}>=Change_Month),1,0)", "=SUM({change:all})", "int"),
        Row("owned_ok", "Owned servers can be in service", "flag",
            "1 once the lead time from the start has passed (ordered in month 1)",
            "=IF({month}>Lead_Time_For_Servers,1,0)", "=SUM({owned_ok:all})", "int"),
    )),
    ("Demand and the GPUs it needs", (
        Row("requests", "Requests per day", "requests/day",
            "Monthly requests, else requests per day x (1 + growth)^(month - 1)",
            "=IF(ISNUMBER(INDEX(Monthly_Requests_Per_Day,{month})),INDEX(Monthly_Requests_Per_Day,{month}),"
            "Requests_Per_Day*(1+Traffic_Growth_Per_Month)^({month}-1))"),
        Row("peak_rps", "Peak requests per second", "requests/s", "PEAK_RPS: per day / 86,400 x peak-hour factor",
            "=PEAK_RPS({requests},Peak_Hour_Factor)", "=MAX({peak_rps:all})", "dec2", "dec2"),
        Row("capacity", "Requests per replica", "requests/s",
            "Calculations' (chunked prefill) x the multiple once changed; 0: no fit",
            "=IF({fits}=1,{replica_rps_chunked},0)*IF({change}=1,Capacity_Multiple_After_The_Change,1)", None,
            "dec2"),
        Row("replicas", "Replicas needed, spares included", "count",
            "FLEET_REPLICAS(peak, per replica, spares, minimum)",
            "=IF({capacity}>0,FLEET_REPLICAS({peak_rps},{capacity},Spare_Replicas,Minimum_Replicas),0)",
            "=MAX({replicas:all})"),
        Row("gpus", "GPUs needed", "GPUs", "Replicas x GPUs per replica; column C: the peak month",
            "={replicas}*GPUs_Per_Replica", "=MAX({gpus:all})", key_result=True),
        Row("tokens", "Tokens served", "B tokens", "Requests per day x hours per month / 24 x tokens per request",
            "={requests}*Hours_Per_Month/24*({prompt_mean}+{decode_tokens})/1000000000", "=SUM({tokens:all})",
            "dec2", "dec2"),
    )),
    ("Owned servers, a lead time ahead", (
        Row("servers_needed", "Servers needed", "servers", "ROUNDUP(GPUs needed / GPUs per server, 0)",
            "=ROUNDUP({gpus}/GPUs_Per_Server,0)", "=MAX({servers_needed:all})"),
        Row("in_service", "Servers in service", "servers", "The most needed in any month yet, once servers can arrive",
            "=MAX({servers_needed:sofar})*{owned_ok}", "=MAX({in_service:all})"),
        Row("arriving", "Servers arriving", "servers", "In service less the most in service before: the step",
            "={in_service}-MAX({in_service:before})", "=SUM({arriving:all})", key_result=True),
        Row("ordered", "Servers ordered", "servers", "Those arriving a lead time later (within the 36 months)",
            "=IF({month}+Lead_Time_For_Servers<=COUNT({month:all}),INDEX({arriving:all},{month}+"
            "Lead_Time_For_Servers),0)", "=SUM({ordered:all})"),
        Row("gpus_owned", "GPUs owned in service", "GPUs", "Servers in service x GPUs per server",
            "={in_service}*GPUs_Per_Server", "=MAX({gpus_owned:all})"),
        Row("gpus_bridge", "GPUs rented beside them", "GPUs", "GPUs needed beyond those owned, rented on demand",
            "=MAX(0,{gpus}-{gpus_owned})", "=MAX({gpus_bridge:all})"),
    )),
    ("Prices each month", (
        Row("od_price", "On-demand price per GPU-hour", "USD/GPU-h",
            "Price per GPU-hour x (1 + price change)^(month - 1)",
            "={price}*(1+On_Demand_Price_Change_Per_Month)^({month}-1)", None, "usd"),
    )),
    ("Cost each month", (
        Row("owned_cost", "Owned GPUs, capital recovery and running", "USD",
            "GPUs owned x owned GPU-hour x hours per month",
            "={gpus_owned}*{owned_hour}*Hours_Per_Month", "=SUM({owned_cost:all})", "usd0", "usd0"),
        Row("bridge_cost", "GPUs rented beside the owned ones", "USD",
            "GPUs rented beside them x on-demand price x hours per month",
            "={gpus_bridge}*{od_price}*Hours_Per_Month", "=SUM({bridge_cost:all})", "usd0", "usd0"),
        Row("owned_total", "Owned plan", "USD", "The two lines above",
            "={owned_cost}+{bridge_cost}", "=SUM({owned_total:all})", "usd0", "usd0", key_result=True),
        Row("od_cost", "All on demand", "USD", "GPUs needed x on-demand price x hours per month",
            "={gpus}*{od_price}*Hours_Per_Month", "=SUM({od_cost:all})", "usd0", "usd0", key_result=True),
        Row("committed_cost", "Committed plus on demand", "USD",
            "Committed GPUs at the committed price, the rest on demand",
            "=({committed}*Committed_Price_Per_GPU_Hour+MAX(0,{gpus}-{committed})*{od_price})*Hours_Per_Month",
            "=SUM({committed_cost:all})", "usd0", "usd0", key_result=True),
    )),
    ("Cash out, month by month", (
        Row("capex_cash", "Owned plan: capital paid on arrival", "USD",
            "Servers arriving x GPUs per server x capital cost per GPU",
            "={arriving}*GPUs_Per_Server*Capital_Cost_Per_GPU", "=SUM({capex_cash:all})", "usd0", "usd0"),
        Row("running_cash", "Owned plan: power and hosting", "USD",
            "GPUs owned x power and hosting per GPU-hour x hours",
            "={gpus_owned}*{running_hour}*Hours_Per_Month", "=SUM({running_cash:all})", "usd0", "usd0"),
        Row("owned_cash", "Owned plan: cash out", "USD", "Capital, power and hosting, and the GPUs rented beside",
            "={capex_cash}+{running_cash}+{bridge_cost}", "=SUM({owned_cash:all})", "usd0", "usd0"),
        Row("owned_cum", "Owned plan: cash out so far", "USD", "SUM of the months to this one",
            "=SUM({owned_cash:sofar})", None, "usd0"),
        Row("od_cum", "All on demand: paid so far", "USD", "SUM of the months to this one",
            "=SUM({od_cost:sofar})", None, "usd0"),
        Row("committed_cum", "Committed plus on demand: paid so far", "USD", "SUM of the months to this one",
            "=SUM({committed_cost:sofar})", None, "usd0"),
        Row("below_od", "Owned has cost less so far than on demand", "flag", "1 where the owned plan is below",
            "=IF({owned_cum}<{od_cum},1,0)", "=SUM({below_od:all})"),
        Row("below_committed", "Owned has cost less so far than committed", "flag", "1 where the owned plan is below",
            "=IF({owned_cum}<{committed_cum},1,0)", "=SUM({below_committed:all})"),
    )),
    ("Cost per M tokens, input and output", (
        Row("cpm_owned", "Owned plan", "USD/M tokens", "Its cost / tokens served; column C: the 36 months",
            _fits("{owned_total}/({tokens}*1000)"), _fits("{owned_total:total}/({tokens:total}*1000)"), "usd", "usd",
            key_result=True),
        Row("cpm_od", "All on demand", "USD/M tokens", "Its cost / tokens served; column C: the 36 months",
            _fits("{od_cost}/({tokens}*1000)"), _fits("{od_cost:total}/({tokens:total}*1000)"), "usd", "usd",
            key_result=True),
        Row("cpm_committed", "Committed plus on demand", "USD/M tokens",
            "Its cost / tokens served; column C: the 36 months",
            _fits("{committed_cost}/({tokens}*1000)"), _fits("{committed_cost:total}/({tokens:total}*1000)"), "usd",
            "usd", key_result=True),
    )),
)  # fmt: skip
"""The Timeline's rows. A note fits column D on one printed line (56 widths): tests/templates/test_timeline.py checks
it."""

_PLACEHOLDER = re.compile(r"\{(\w+)(?::(all|sofar|before|total))?\}")


def _all_rows() -> list[Row]:
    return [row for _, rows in ROWS for row in rows]


# -- Inputs: the Costs and Timeline blocks ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CostInput:
    label: str
    field: str
    fmt: str
    comment: str = ""


COSTS_BLOCK: tuple[CostInput, ...] = (
    CostInput("Capital cost per GPU", "capex_usd", "usd0"),
    CostInput("Capital recovery life", "years", "dec1"),
    CostInput("Residual value", "residual_fraction", "pct"),
    CostInput("Cost of capital", "annual_rate", "pct1"),
    CostInput("Power per GPU, server share", "server_kw_per_gpu", "dec3"),
    CostInput("Power usage effectiveness", "pue", "dec2"),
    CostInput("Electricity price", "usd_per_kwh", "small"),
    CostInput("Hosting per kW-month", "usd_per_kw_month", "usd"),
    CostInput("Lead time for servers", "lead_time_months", "int"),
    CostInput("Committed price per GPU-hour", "rent_committed_usd_per_gpu_hour", "usd"),
)
"""The Costs block: each a figure of costs.toml for :data:`COSTS_GPU`, with its unit, source and as-of date."""

_LEAD = Domain("whole", 0, MONTHS - 1)
_GROWTH = Domain("number", -0.5, 1, typical=(-0.2, 0.5))
_TREND = Domain("number", -0.5, 0.5, typical=(-0.2, 0.2))
_MULTIPLE = Domain("number", 0, 100, low_open=True, typical=(0.1, 10))
_CHANGE = Domain("whole", 0, MONTHS)
_SERVER = Domain("whole", 1, 64)

USUAL: tuple[tuple[str, str, str, object], ...] = (
    ("Capital_Cost_Per_GPU", "Capital cost per GPU", "USD", domains.CapexUSD),
    ("Capital_Recovery_Life", "Capital recovery life", "years", domains.Years),
    ("Cost_Of_Capital", "Cost of capital", "fraction/year", domains.AnnualRate),
    ("Power_Per_GPU", "Power per GPU", "kW", domains.KWOrZero),
    ("Power_Usage_Effectiveness", "Power usage effectiveness", "ratio", domains.PUE),
    ("Electricity_Price", "Electricity price", "USD/kWh", domains.USDPerKWh),
    ("Hosting_Per_KW_Month", "Hosting per kW-month", "USD/kW-month", domains.USDPerKWMonth),
    ("Committed_Price_Per_GPU_Hour", "Committed price per GPU-hour", "USD/GPU-h", domains.Price),
    ("Traffic_Growth_Per_Month", "Traffic growth per month", "fraction/month", _GROWTH),
    ("On_Demand_Price_Change_Per_Month", "On-demand price change", "fraction/month", _TREND),
    ("Capacity_Multiple_After_The_Change", "Capacity multiple", "ratio", _MULTIPLE),
)
"""The Costs and Timeline inputs with a usual range: a value outside it gets a Checks row (as serving's USUAL)."""


def _as_of(date: _dt.date) -> _dt.datetime:
    return _dt.datetime(date.year, date.month, date.day)


def inputs(book: Book, sh: Sheet) -> None:
    """The Costs block (the owned-case defaults from costs.toml, with their sources and dates) and the Timeline
    block, at the end of Inputs."""
    costs = load_costs()
    sh.section("Costs: owning the GPUs", f"Defaults from the catalog (costs.toml) for {COSTS_GPU}: restate with quotes")
    sh.input(
        "Accelerator the costs are for",
        COSTS_GPU,
        "name",
        "Catalog: costs.toml (choose)",
        "Checks flag a scenario on another accelerator",
        "text",
    )
    for spec in COSTS_BLOCK:
        figure = cost_figure(COSTS_GPU, spec.field)
        field = COST_FIELDS[spec.field]
        domain = _LEAD if spec.field == "lead_time_months" else field.domain
        sh.input(
            spec.label,
            figure.value,
            field.unit,
            f"Catalog: {costs.title(figure)}",
            figure.note,
            spec.fmt,
            validation_for(domain, spec.label),
            _as_of(figure.as_of),
        )
    sh.input(
        "GPUs per server",
        8,
        "count",
        "Convention: an HGX or DGX server holds 8",
        "Servers are bought whole",
        "int",
        validation_for(_SERVER, "GPUs per server"),
    )

    sh.section("Timeline: traffic, prices and commitments month by month", "The Timeline sheet: 36 months")
    date_dv = DataValidation(type="date", operator="greaterThan", formula1="36526")  # after 2000-01-01
    sh.input(
        "Timeline start",
        START,
        "date",
        "Example: the first month planned",
        "Each column is a month from it",
        "date",
        date_dv,
    )
    sh.input(
        "Traffic growth per month",
        0.05,
        "fraction/month",
        "Example: 5% a month",
        "Compounded from requests per day; pasted months win",
        "pct1",
        validation_for(_GROWTH, "Traffic growth per month"),
    )
    sh.input(
        "Change month, model or engine",
        13,
        "month",
        "Example: a new engine in month 13",
        "0: no change; from it, the capacity multiple below",
        "int",
        validation_for(_CHANGE, "Change month"),
    )
    sh.input(
        "Capacity multiple after the change",
        1.25,
        "ratio",
        "Example: an engine 25% faster",
        "Requests per replica after over before the change",
        "dec2",
        validation_for(_MULTIPLE, "Capacity multiple after the change"),
    )
    sh.input(
        "On-demand price change per month",
        0,
        "fraction/month",
        "Example: flat",
        "H100: about $8 (2023) to $1.70 (October 2025)",
        "pct1",
        validation_for(_TREND, "On-demand price change per month"),
    )
    sh.input(
        "Committed GPUs",
        None,
        "GPUs",
        "Example: empty, the cheapest commitment",
        "Empty: BEST_COMMITMENT of the 36 months' GPUs",
        "int",
        validation_for(domain_of(domains.GPUsOrZero), "Committed GPUs", "leave it empty for the cheapest commitment"),
    )


# -- Monthly requests: an optional pasted forecast -------------------------------------------------------------------


def monthly_requests(book: Book) -> Sheet:
    """A column of input cells, one per month of the timeline: requests per day pasted over the growth rate."""
    sh = book.sheet(
        REQUESTS_SHEET,
        "Optional: requests per day for each month of the timeline (your forecast), one per row in column B. A month "
        "left empty grows from Requests per day at Traffic growth per month (Inputs).",
        ["Month", "Requests/day", "Unit", "Source", "As-of date", "Comment"],
    )
    ws = sh.ws
    first, last = HEADER_ROWS + 1, HEADER_ROWS + MONTHS
    dv = validation_for(domain_of(domains.PerDay), "Requests per day")
    assert dv is not None  # noqa: S101 - PerDay is a number domain
    add_validation(ws, dv, f"B{first}:B{last}")
    label = "Monthly requests per day, month 1"
    for i, r in enumerate(range(first, last + 1), start=1):
        put_text(ws[f"A{r}"], label if i == 1 else f"Month {i}", "Label")
        ws[f"B{r}"].style = "Input"
        ws[f"B{r}"].number_format = FMT["int"]
    put_text(ws[f"C{first}"], "requests/day", "Unit")
    register = register_cells(
        ws,
        first,
        "Example: none shipped; your forecast",
        TEMPLATE_DATE,
        f"B{first} is month 1, B{last} month {MONTHS}; empty: grown",
    )
    name = "Monthly_Requests_Per_Day"
    book.define(name, sh.name, f"$B${first}:$B${last}")
    book.refs[name] = Ref(sh.name, first, "B")
    book.input_names[name] = name
    cells = tuple(f"B{r}" for r in range(first, last + 1))
    book.inputs.append(InputRow(sh.name, first, label, name, "requests/day", cells, register=register))
    ws.freeze_panes = f"B{first}"
    sh.row = last + 1
    sh.finish()
    return sh


# -- the Timeline sheet ----------------------------------------------------------------------------------------------


def _layout(first: int) -> tuple[dict[str, int], dict[str, int], int]:
    """Row of every line and of every section heading, as :class:`Sheet` writes them, and the row after the last."""
    rows, sections, r = {}, {}, first
    for title, lines in ROWS:
        if r > first:
            r += 1  # Sheet.section leaves a blank row before every heading but the first
        sections[title] = r
        r += 1
        for line in lines:
            rows[line.key] = r
            r += 1
    return rows, sections, r


def _render(book: Book, template: str, rows: dict[str, int], col: str | None) -> str:
    """A Timeline formula for month column ``col`` (None: column C), placeholders resolved (see :class:`Row`)."""
    months = {row.key for row in _all_rows() if row.month} | {"month"}  # the counter: numbers, not formulas
    first, last = MONTH_COLUMNS[0], MONTH_COLUMNS[-1]

    def sub(m: re.Match[str]) -> str:
        key, part = m.group(1), m.group(2)
        if key == "dates":
            return f"${first}${HEADER_ROWS}:${last}${HEADER_ROWS}"
        if key not in rows:
            return m.group(0)  # a line of the workbook: book.render resolves it
        r = rows[key]
        if part == "all":
            return f"${first}${r}:${last}${r}"
        if part == "total":
            return f"$C${r}"
        if part in ("sofar", "before"):
            if col is None:
                raise ValueError(f"{{{key}:{part}}} is for a month's cell")
            end = col if part == "sofar" else get_column_letter(FIRST_MONTH + MONTH_COLUMNS.index(col) - 1)
            return f"${first if part == 'sofar' else 'D'}{r}:{end}{r}"
        if key in months and col is not None:
            return f"{col}{r}"
        return f"$C${r}"

    return book.render(_PLACEHOLDER.sub(sub, template), SHEET)


def timeline_sheet(book: Book) -> Sheet:
    """The Timeline: 36 months of demand, GPUs, servers, prices, cost and breakevens, with its two charts."""
    sh = book.sheet(
        SHEET,
        "The active scenario month by month: GPUs and servers, bought or rented, each plan's cost, its breakeven.",
        ["Line item", "Unit", "Total or value", "Equation and source"],
    )
    ws = sh.ws
    for col, width in WIDTHS.items():
        ws.column_dimensions[col].width = width
    for col in MONTH_COLUMNS:
        ws.column_dimensions[col].width = MONTH_WIDTH
    ws[f"C{HEADER_ROWS}"].alignment = Alignment(horizontal="right", vertical="center")  # over the figures
    ws[f"D{HEADER_ROWS}"].alignment = Alignment(horizontal="left", indent=1, vertical="center")
    sh.last_col = MONTH_COLUMNS[-1]  # section headings run on over the months
    rows, sections, _ = _layout(sh.row)
    month_row = rows["month"]
    for col in MONTH_COLUMNS:
        head = ws[f"{col}{HEADER_ROWS}"]
        head.value = f"=EDATE(Timeline_Start,{col}{month_row}-1)"
        head.style = "Column Heading"
        head.number_format = MONTH_FORMAT
        head.alignment = Alignment(horizontal="right", vertical="center")
    for title, lines in ROWS:
        if title == PAGE_BREAK_BEFORE:
            ws.row_breaks.append(Break(id=sh.row))  # the costs start a printed page: a year's months fit two
        sh.section(title)
        for line in lines:
            r = sh.row
            assert r == rows[line.key]  # noqa: S101 - the layout matches what is written
            put_text(ws[f"A{r}"], line.label, "Label")
            put_text(ws[f"B{r}"], line.unit, "Unit")
            put_text(ws[f"D{r}"], line.note, "Explanatory Text")
            ws[f"D{r}"].alignment = Alignment(horizontal="left", indent=1)  # clear of the figure before it
            if line.key == "month":
                for i, col in enumerate(MONTH_COLUMNS, start=1):
                    ws[f"{col}{r}"] = i
                    ws[f"{col}{r}"].style = "Label"
                    ws[f"{col}{r}"].number_format = FMT["int"]
                    ws[f"{col}{r}"].alignment = Alignment(horizontal="right")
            elif line.month:
                for col in MONTH_COLUMNS:
                    cell = ws[f"{col}{r}"]
                    cell.value = _render(book, line.month, rows, col)
                    cell.style = "Formula"
                    cell.number_format = FMT[line.fmt]
            if line.total:
                cell = ws[f"C{r}"]
                cell.value = _render(book, line.total, rows, None)
                cell.style = "Output" if line.key_result else "Formula"
                cell.number_format = FMT[line.total_fmt or line.fmt]
            book.refs[f"{SHEET}:{line.key}"] = Ref(SHEET, r, "C")
            sh.row += 1
    last = sh.row - 1
    ws.freeze_panes = f"C{HEADER_ROWS + 1}"
    ws.row_breaks.append(Break(id=sh.row))  # the charts on a page of their own
    sh.row += 1
    sh.row = _charts(sh, rows, sh.row)
    # the labels, units, figures and equations down the first pages (the charts after them), then the months, a
    # year across two pages, beside the labels and units (the purpose is wrapped to what every page prints: A and B)
    sh.last_col = "B"
    sh.finish(last_row=sh.row - 1)
    schedule = sections[SCHEDULE_FROM]
    areas = [f"A1:D{sh.row - 1}"]
    for i in range(0, MONTHS, MONTHS_PER_PAGE):
        areas.append(f"{MONTH_COLUMNS[i]}{schedule}:{MONTH_COLUMNS[min(i + MONTHS_PER_PAGE, MONTHS) - 1]}{last}")
    ws.print_area = areas
    ws.print_title_cols = "A:B"
    sh.last_col = "D"
    return sh


def _charts(sh: Sheet, rows: dict[str, int], anchor: int) -> int:
    """GPUs needed, owned and rented beside them, and the cumulative cost of each plan, over the 36 months; returns
    the row after them."""
    ws = sh.ws
    first, last = FIRST_MONTH, FIRST_MONTH + MONTHS - 1
    dates = Reference(ws, min_col=first, max_col=last, min_row=HEADER_ROWS)
    specs: Sequence[tuple[str, str, Sequence[tuple[str, str]], str]] = (
        (
            "GPUs over time",
            "GPUs",
            (
                ("gpus", "GPUs needed"),
                ("gpus_owned", "GPUs owned in service"),
                ("gpus_bridge", "GPUs rented beside them"),
            ),
            "#,##0",
        ),
        (
            "Cost so far, in cash",
            "USD",
            (("owned_cum", "Owned plan"), ("od_cum", "All on demand"), ("committed_cum", "Committed plus on demand")),
            '"$"#,##0',
        ),
    )
    r = anchor
    for title, axis, series, fmt in specs:
        chart = LineChart()
        chart.title = title
        chart.style = 2
        chart.y_axis.title = axis
        chart.y_axis.number_format = fmt
        chart.x_axis.number_format = MONTH_FORMAT
        chart.x_axis.delete = False
        chart.y_axis.delete = False
        chart.legend.position = "b"
        for key, name in series:
            data = Reference(ws, min_col=first, max_col=last, min_row=rows[key])
            chart.add_data(data, from_rows=True, titles_from_data=False)
            chart.series[-1].tx = SeriesLabel(v=name)
            chart.series[-1].smooth = False
        chart.set_categories(dates)
        chart.height, chart.width = 7.5, 21
        ws.add_chart(chart, f"A{r}")
        r += 16
    return r


# -- the Cover and Checks ----------------------------------------------------------------------------------------------


COVER_BLOCK: tuple[str, tuple[Result, ...]] = (
    "Owning against renting over 36 months (Timeline)",
    (
        Result(f"{SHEET}:owned_hour", "Owned GPU-hour, all in", "USD/GPU-h", "usd",
               "Capital recovery, power and hosting (Costs on Inputs)"),
        Result(f"{SHEET}:breakeven_util", "Breakeven utilisation, owned or on demand", "fraction", "pct1",
               "Above it an owned GPU costs less per token"),
        Result(f"{SHEET}:owned_total", "Owned plan, 36 months", "USD", "usd0",
               "Whole servers a lead time ahead, rented until they arrive"),
        Result(f"{SHEET}:od_cost", "All on demand, 36 months", "USD", "usd0", "GPUs needed, each month"),
        Result(f"{SHEET}:committed_cost", "Committed plus on demand, 36 months", "USD", "usd0",
               "The commitment on the Timeline, the rest on demand"),
        Result(f"{SHEET}:breakeven_od", "Breakeven month, owned against on demand", "month", "int",
               "When the owned plan's cash out falls below renting's"),
    ),
)  # fmt: skip
"""The Cover's block of Timeline figures, after the serving plan's own."""


def checks(book: Book, sh: Sheet) -> None:
    """The Timeline's rows on Checks: the costs' accelerator, a commitment dearer than on demand, error values."""
    sh.section("Owning against renting (Timeline)", "The Costs block and the Timeline sheet")
    sh.check(
        "The costs are for another accelerator",
        "=IF(Accelerator_The_Costs_Are_For<>Accelerator,1,0)",
        "Restate the Costs block for the active scenario's accelerator",
    )
    sh.check(
        "Committed price at or above on demand",
        "=IF(Committed_Price_Per_GPU_Hour>={price},1,0)",
        "A commitment costs less per hour than on demand, or it buys nothing",
    )
    last = book.ref(f"{SHEET}:{_all_rows()[-1].key}").row
    error_check(sh, SHEET, f"{SHEET}!$C${HEADER_ROWS + 1}:${MONTH_COLUMNS[-1]}${last}")
