"""The serving template's Portfolio sheet: several workloads on one fleet, and its Chargeback sheet.

**Portfolio** (both editions) holds a small workloads table (three workloads side by side: name, team, model,
requests a day, prompt and answer lengths, the GPUs a replica of its deployment has, what a replica serves, and the
24 hourly shares of the day) and computes with native formulas what needs no search: each workload's load hour by
hour (its requests a second that hour over what a replica serves), the summed load of the workloads of one model
(one deployment), its peak hour, the replicas it shares (FLEET_REPLICAS of the peak load, with the spares and the
minimum on Inputs, the formula the portable edition writes for every FLEET_REPLICAS), each workload alone
(FLEET_REPLICAS of its own peak), the saving, and the bill split by GPU time per workload and per team. What a
replica serves is a typed input there: finding each workload's cheapest deployment is the option search, which only
Python runs.

**Chargeback** joins the same table into PORTFOLIO's CSV text and shows PORTFOLIO's chargeback table
(:func:`xlsxplan.plan.portfolio.portfolio_table`): each workload's cheapest deployment searched, shared where that is
cheaper, the cost per workload, team and deployment, and the fleet. The portable edition keeps the add-in edition's
values there (:mod:`xlsxplan.templates.portable`): Checks flags them when a Portfolio input changes, and ``xlsxplan
recalc`` computes them again.

Sources: "Back-of-the-Envelope Estimation for LLM Systems" (section 6: replicas for the peak, at least two);
FinOps Foundation, "Allocation" (shared cost split by a stated rule).
"""

from __future__ import annotations

from openpyxl.styles import Alignment
from openpyxl.worksheet.formula import ArrayFormula

from .book import Book, InputRow, Ref, Sheet, put_text, register_cells
from .styles import FMT, HEADER_ROWS, TEMPLATE_DATE

__all__ = [
    "CHARGEBACK",
    "CHARGEBACK_ROWS",
    "HOURS",
    "PORTFOLIO",
    "WORKLOAD_COLUMNS",
    "WORKLOADS",
    "chargeback_sheet",
    "portfolio_sheet",
    "same_deployment_check",
]

PORTFOLIO = "Portfolio"
CHARGEBACK = "Chargeback"
WORKLOAD_COLUMNS = ("C", "D", "E")
"""The workloads' columns on Portfolio, one workload each."""
HOURS = 24

_DAY = [0.25] * 8 + [1.0] * 12 + [0.25] * 4
_NIGHT = [1.0] * 6 + [0.2] * 18
WORKLOADS: tuple[dict[str, object], ...] = (
    dict(name="support", team="care", model="Qwen2.5-72B", requests=216_000, gpus=2, rps=2.96, shape=_DAY),
    dict(name="coding", team="eng", model="Qwen2.5-72B", requests=86_400, gpus=2, rps=2.96, shape=_NIGHT),
    dict(name="summaries", team="eng", model="Qwen2.5-7B", requests=432_000, gpus=1, rps=14.13, shape=[1.0] * HOURS),
)
"""The shipped example: the three workloads of tests/data/workloads.toml (docs/planning.md, "Several workloads on one
fleet"), 2,000-token prompts and 300-token answers each; what a replica serves is REPLICA_RPS_CHUNKED of the
cheapest option at the source text's efficiencies (``xlsxplan plan --rank assumed --kv bf16``): 2.96 requests a
second for Qwen2.5-72B in FP8 on two H100s (Back-of-the-Envelope section 6), 14.13 for Qwen2.5-7B in BF16 on one."""
PROMPT_TOKENS, OUTPUT_TOKENS = 2000, 300
ACCELERATOR = "H100-SXM"

# the workloads table's fields, in the order PORTFOLIO's CSV takes them: key, label, unit, format
_FIELDS = (
    ("name", "Workload name", "name", "text"),
    ("team", "Team", "name", "text"),
    ("model", "Model (a preset)", "name", "text"),
    ("requests", "Requests per day", "requests/day", "int"),
    ("prompt", "Prompt tokens per request", "tokens", "int"),
    ("output", "Output tokens per request", "tokens", "int"),
    ("gpus", "GPUs a replica of its deployment", "count", "int"),
    ("rps", "Requests a replica serves (typed)", "requests/s", "dec2"),
)
CHARGEBACK_ROWS = 9
"""Rows of PORTFOLIO's table the Chargeback sheet holds: the header, three workloads, two teams, two deployments and
the fleet, as the shipped example gives; another table's shape shows more rows cut or fewer padded with N/A."""
CSV_HEADER = "name,team,model,requests_per_day,shape,prompt_tokens,output_tokens"
_CHARGEBACK_HEADINGS = (
    "Row",
    "Workload",
    "Team",
    "Model",
    "Share",
    "Deployment",
    "Replicas",
    "GPUs",
    "USD a month",
    "USD/M tokens",
    "USD a month alone",
    "Saving",
    "Quality",
)
_CHARGEBACK_FORMATS = (
    "text",
    "text",
    "text",
    "text",
    "pct",
    "text",
    "int",
    "int",
    "usd0",
    "usd",
    "usd0",
    "usd0",
    "dec2",
)


def portfolio_sheet(book: Book) -> Sheet:
    """The Portfolio sheet (see the module's text); its line items' keys start ``pf_``."""
    sh = book.sheet(
        PORTFOLIO,
        "Several workloads on one fleet: workloads of one model share its replicas, sized on the hour-by-hour sum "
        "of their loads; the bill split by GPU time. Example values: three made-up workloads.",
        ["Workloads", "Unit", "Workload 1", "Workload 2", "Workload 3", "", "Equation and source"],
        layout="cases",
    )
    ws = sh.ws
    cols = WORKLOAD_COLUMNS
    rows: dict[str, int] = {}

    def note(r: int, text: str) -> None:
        put_text(ws[f"G{r}"], text, "Explanatory Text")

    # -- the workloads table: one input, a block of cells, its register on its own row ---------------------------
    sh.section("The workloads", "Inputs: replace the example with your own")
    top = sh.row
    put_text(ws[f"A{top}"], "Workloads table", "Label")
    put_text(ws[f"C{top}"], "table", "Unit")  # the register's unit, as on Inputs: the table is the rows below
    register = register_cells(ws, top, "Example: made-up traffic", TEMPLATE_DATE, "")
    sh.row += 1
    cells: list[str] = []
    for key, label, unit, fmt in _FIELDS:
        r = rows[key] = sh.row
        put_text(ws[f"A{r}"], label, "Label")
        put_text(ws[f"B{r}"], unit, "Unit")
        for col, w in zip(cols, WORKLOADS):
            value = {"prompt": PROMPT_TOKENS, "output": OUTPUT_TOKENS}.get(key, w.get(key))
            cell = ws[f"{col}{r}"]
            cell.value = value
            cell.style, cell.number_format = "Input", FMT[fmt]
            cells.append(f"{col}{r}")
        sh.row += 1
    note(rows["rps"], "REPLICA_RPS_CHUNKED of its deployment's option (xlsxplan plan, or Calculations): typed here")
    note(rows["gpus"], "Workloads of one model share one deployment: give them the same GPUs and requests a replica")
    first_hour = sh.row
    for h in range(HOURS):
        r = sh.row
        put_text(
            ws[f"A{r}"], f"Share of the day's requests, hour {h:02d}:00" if h == 0 else f"Hour {h:02d}:00", "Label"
        )
        put_text(ws[f"B{r}"], "share", "Unit")
        for col, w in zip(cols, WORKLOADS):
            cell = ws[f"{col}{r}"]
            cell.value = w["shape"][h]  # type: ignore[index]
            cell.style, cell.number_format = "Input", FMT["dec2"]
            cells.append(f"{col}{r}")
        sh.row += 1
    last_hour = sh.row - 1
    note(first_hour, "Any scale: each hour's share of the sum; the day's peak hour sets the peak")
    name = "Workloads_Table"
    book.define(name, sh.name, f"${cols[0]}${rows['name']}:${cols[-1]}${last_hour}")
    book.refs[name] = Ref(sh.name, top, cols[0])
    book.input_names[name] = name
    book.inputs.append(InputRow(sh.name, top, "Workloads table", name, "table", tuple(cells), register=register))
    # a single input as on Inputs, under Inputs' headings: Label | Value | Unit | Source | As-of date | Comment
    for col, text in zip("ABCDEF", ("Input", "Value", "Unit", "Source", "As-of date", "Comment")):
        put_text(ws[f"{col}{sh.row}"], text, "Column Heading")
    sh.row += 1
    r = sh.row
    put_text(ws[f"A{r}"], "Portfolio accelerator", "Label")
    ws[f"B{r}"] = ACCELERATOR
    ws[f"B{r}"].style = "Input"
    put_text(ws[f"C{r}"], "name", "Unit")
    acc_register = register_cells(ws, r, "Example: the source text's H100", TEMPLATE_DATE, "")
    book.define("Portfolio_Accelerator", sh.name, f"$B${r}")
    book.refs["Portfolio_Accelerator"] = Ref(sh.name, r, "B")
    book.input_names["Portfolio_Accelerator"] = "Portfolio_Accelerator"
    cell = (f"B{r}",)
    book.inputs.append(
        InputRow(sh.name, r, "Portfolio accelerator", "Portfolio_Accelerator", "name", cell, register=acc_register)
    )
    sh.row += 1

    def ref(key: str, col: str) -> str:
        return f"{col}${rows[key]}"

    def span(key: str) -> str:
        return f"${cols[0]}${rows[key]}:${cols[-1]}${rows[key]}"

    def shares(col: str) -> str:
        return f"{col}${first_hour}:{col}${last_hour}"

    def line(key: str, label: str, unit: str, formula: str, fmt: str, text: str, single: bool = False) -> int:
        """A row of formulas, one per workload (``{c}`` the workload's column), or one in C (``single``)."""
        r = rows[key] = sh.row
        put_text(ws[f"A{r}"], label, "Label")
        put_text(ws[f"B{r}"], unit, "Unit")
        for col in cols[:1] if single else cols:
            cell = ws[f"{col}{r}"]
            cell.value = "=" + book.render(formula.replace("{c}", col), sh.name)
            cell.style, cell.number_format = "Formula", FMT[fmt]
        note(r, text)
        sh.row += 1
        return r

    line(
        "price",
        "Price per GPU-hour",
        "USD/GPU-h",
        "INDEX({gpu_prices},MATCH(Portfolio_Accelerator,{gpu_names},0))",
        "usd",
        "The accelerator's price on Lists",
        single=True,
    )
    price = f"$C${rows['price']}"

    # -- hour by hour ---------------------------------------------------------------------------------------------
    sh.section("Load hour by hour", "Replicas' worth of work: requests a second that hour over a replica's")
    load_first = sh.row
    for h in range(HOURS):
        line(
            f"load{h}",
            f"Load, hour {h:02d}:00",
            "replicas",
            f"{ref('requests', '{c}')}*{{c}}{first_hour + h}/SUM({shares('{c}')})/3600/{ref('rps', '{c}')}",
            "dec2",
            "Requests/day x the hour's share / 3600 / requests a replica serves" if h == 0 else "",
        )
    load_last = sh.row - 1
    sh.section("Load of its deployment", "The summed load of the workloads of its model, hour by hour")
    dep_first = sh.row
    for h in range(HOURS):
        line(
            f"dep{h}",
            f"Deployment's load, hour {h:02d}:00",
            "replicas",
            f"SUMIF({span('model')},{ref('model', '{c}')},${cols[0]}${load_first + h}:${cols[-1]}${load_first + h})",
            "dec2",
            "The loads of the workloads of the same model, that hour (SUMIF)" if h == 0 else "",
        )
    dep_last = sh.row - 1

    # -- alone, shared, the bill ------------------------------------------------------------------------------------
    sh.section("Each workload alone", "Its own replicas for its own peak hour, spares and minimum as on Inputs")
    line(
        "pf_peak_rps",
        "Peak requests per second, alone",
        "requests/s",
        f"{ref('requests', '{c}')}*MAX({shares('{c}')})/SUM({shares('{c}')})/3600",
        "dec2",
        "Requests/day x the busiest hour's share / 3600",
    )
    line(
        "pf_alone_replicas",
        "Replicas alone",
        "count",
        f"FLEET_REPLICAS({{c}}{rows['pf_peak_rps']},{ref('rps', '{c}')},Spare_Replicas,Minimum_Replicas)",
        "int",
        "FLEET_REPLICAS: ceil(peak / a replica's) + spares, at least the minimum (Back-of-the-Envelope §6)",
    )
    line(
        "pf_alone_gpus",
        "GPUs alone",
        "count",
        f"{{c}}{rows['pf_alone_replicas']}*{ref('gpus', '{c}')}",
        "int",
        "Replicas x GPUs a replica",
    )
    line(
        "pf_alone_monthly",
        "Cost per month alone",
        "USD",
        f"{{c}}{rows['pf_alone_gpus']}*{price}*Hours_Per_Month",
        "usd0",
        "GPUs x price x hours a month, billed around the clock",
    )
    sh.section("Its deployment, shared", "Workloads of one model share replicas: their peaks need not coincide")
    line(
        "pf_peak_load",
        "Deployment's peak load",
        "replicas",
        f"MAX({{c}}${dep_first}:{{c}}${dep_last})",
        "dec2",
        "The busiest hour of the summed load, before spares and the minimum",
    )
    line(
        "pf_peak_hour",
        "Deployment's peak hour",
        "hour",
        f"MATCH({{c}}{rows['pf_peak_load']},{{c}}${dep_first}:{{c}}${dep_last},0)-1",
        "int",
        "Hours after midnight: the first busiest hour",
    )
    line(
        "pf_shared_replicas",
        "Replicas of its deployment",
        "count",
        f"FLEET_REPLICAS({{c}}{rows['pf_peak_load']},1,Spare_Replicas,Minimum_Replicas)",
        "int",
        "FLEET_REPLICAS of the peak load (a replica serves 1 replica's worth); one spare and minimum for all",
    )
    line(
        "pf_shared_gpus",
        "GPUs of its deployment",
        "count",
        f"{{c}}{rows['pf_shared_replicas']}*{ref('gpus', '{c}')}",
        "int",
        "Replicas x GPUs a replica",
    )
    line(
        "pf_shared_monthly",
        "Cost per month of its deployment",
        "USD",
        f"{{c}}{rows['pf_shared_gpus']}*{price}*Hours_Per_Month",
        "usd0",
        "GPUs x price x hours a month",
    )
    sh.section("The bill split by GPU time", "Each deployment's cost shared by the GPU time each workload uses")
    line(
        "pf_gpu_time",
        "GPU time a day",
        "GPU-h",
        f"SUM({{c}}${load_first}:{{c}}${load_last})*{ref('gpus', '{c}')}",
        "dec1",
        "Its load summed over the 24 hours x GPUs a replica",
    )
    line(
        "pf_share",
        "Share of its deployment's GPU time",
        "fraction",
        f"{{c}}{rows['pf_gpu_time']}/SUMIF({span('model')},{ref('model', '{c}')},{span('pf_gpu_time')})",
        "pct1",
        "Idle and spare replicas are shared the same way (FinOps: allocation by a stated rule)",
    )
    line(
        "pf_monthly",
        "Cost per month, allocated",
        "USD",
        f"{{c}}{rows['pf_share']}*{{c}}{rows['pf_shared_monthly']}",
        "usd0",
        "Its share x its deployment's cost",
    )
    line(
        "pf_per_m",
        "Cost per M tokens, allocated",
        "USD/M tokens",
        f"{{c}}{rows['pf_monthly']}/({ref('requests', '{c}')}*({ref('prompt', '{c}')}+{ref('output', '{c}')})"
        "*Hours_Per_Month/24)*1000*1000",
        "usd",
        "Over the month's prompt and answer tokens",
    )
    line(
        "pf_team_monthly",
        "Its team's cost per month",
        "USD",
        f"SUMIF({span('team')},{ref('team', '{c}')},{span('pf_monthly')})",
        "usd0",
        "The allocated costs of the team's workloads (SUMIF)",
    )
    line(
        "pf_team_alone",
        "Its team's cost per month alone",
        "USD",
        f"SUMIF({span('team')},{ref('team', '{c}')},{span('pf_alone_monthly')})",
        "usd0",
        "Its workloads each on a fleet of its own",
    )
    line(
        "pf_team_saving",
        "Its team's saving per month",
        "USD",
        f"{{c}}{rows['pf_team_alone']}-{{c}}{rows['pf_team_monthly']}",
        "usd0",
        "Alone less allocated",
    )
    sh.section("The fleet", "Every deployment once")
    line(
        "pf_fleet_monthly",
        "Fleet cost per month",
        "USD",
        f"SUM({span('pf_monthly')})",
        "usd0",
        "The allocated costs add up to the deployments' costs",
        single=True,
    )
    line(
        "pf_fleet_gpus",
        "GPUs in the fleet",
        "count",
        f"C{rows['pf_fleet_monthly']}/({price}*Hours_Per_Month)",
        "int",
        "Its cost over one GPU's month",
        single=True,
    )
    line(
        "pf_alone_total",
        "Cost per month, each workload alone",
        "USD",
        f"SUM({span('pf_alone_monthly')})",
        "usd0",
        "Separate fleets, each sized for its own peak",
        single=True,
    )
    line(
        "pf_saving",
        "Saving per month from sharing",
        "USD",
        f"C{rows['pf_alone_total']}-C{rows['pf_fleet_monthly']}",
        "usd0",
        "Separate fleets less the shared one",
        single=True,
    )
    for key in rows:  # the line items, for tests and other sheets
        book.refs[key if key.startswith("pf_") else f"pf_{key}"] = Ref(sh.name, rows[key], cols[0])
    book.refs["pf_hours"] = Ref(sh.name, first_hour, cols[0])
    sh.skip()
    for text in (
        "What needs no search is computed here with native formulas, in both editions: each workload's load hour by "
        "hour, the shared replicas, the saving and the bill split by GPU time. What a replica serves is typed: "
        "choosing each workload's cheapest deployment is the option search, which only Python runs.",
        "The Chargeback sheet searches: PORTFOLIO finds each workload's deployment (accelerator, precisions, GPUs "
        "a replica), shares replicas where that is cheaper, and splits the bill per workload and team; `xlsxplan "
        "plan --workloads` prints the same. The portable edition keeps the add-in's values there, flagged on Checks "
        "when an input here changes.",
    ):
        sh.text(text)
    sh.finish()
    return sh


def same_deployment_check(book: Book) -> str:
    """A Checks formula, 1 when workloads of one model on Portfolio are given unlike GPUs a replica or requests a
    replica serves (their deployment is one): for each workload, the sum of its model's values (SUMIF) against its
    own times their count (COUNTIF)."""
    sheet = f"{PORTFOLIO}!"
    rows = {k: book.ref(f"pf_{k}").row for k in ("model", "gpus", "rps")}

    def span(key: str) -> str:
        return f"{sheet}${WORKLOAD_COLUMNS[0]}${rows[key]}:${WORKLOAD_COLUMNS[-1]}${rows[key]}"

    tests = [  # to a thousandth: three equal decimals need not add up to three times one exactly
        f"ROUND((SUMIF({span('model')},{sheet}${c}${rows['model']},{span(key)})"
        f"-COUNTIF({span('model')},{sheet}${c}${rows['model']})*{sheet}${c}${rows[key]})*1000,0)<>0"
        for key in ("gpus", "rps")
        for c in WORKLOAD_COLUMNS
    ]
    return f"=IF(OR({','.join(tests)}),1,0)"


def chargeback_sheet(book: Book) -> Sheet:
    """The Chargeback sheet: the Portfolio table as PORTFOLIO's CSV text, and PORTFOLIO's chargeback table for it,
    priced at the source text's efficiencies as the typed capacities on Portfolio are."""
    sh = book.sheet(
        CHARGEBACK,
        "PORTFOLIO for the workloads on Portfolio: each one's cheapest deployment searched, shared where cheaper, the "
        "bill split by GPU time per workload, team and deployment (the portable edition: the add-in's values).",
        list(_CHARGEBACK_HEADINGS),
    )
    ws = sh.ws
    for col, width in zip("ABCDEFGHIJKLM", (11, 14, 8, 13, 7, 34, 8, 6, 11, 9, 11, 9, 8)):
        ws.column_dimensions[col].width = width
    ws.row_dimensions[HEADER_ROWS].height = 30
    for col in "ABCDEFGHIJKLM":
        ws[f"{col}{HEADER_ROWS}"].alignment = Alignment(wrap_text=True, vertical="center")
    pf = f"{PORTFOLIO}!"
    r = sh.row
    put_text(ws[f"A{r}"], "CSV", "Label")
    put_text(ws[f"B{r}"], CSV_HEADER, "Explanatory Text")
    joined = []
    for i, col in enumerate(WORKLOAD_COLUMNS):
        row = r + 1 + i
        fields = [book.ref(f"pf_{k}").row for k in ("name", "team", "model", "requests")]
        after = [book.ref(f"pf_{k}").row for k in ("prompt", "output")]
        hours = f"{pf}${col}${book.ref('pf_hours').row}:${col}${book.ref('pf_hours').row + HOURS - 1}"
        parts = (
            [f"{pf}${col}${x}" for x in fields]
            + [f'_xlfn.TEXTJOIN(" ",TRUE,{hours})']
            + [f"{pf}${col}${x}" for x in after]
        )
        put_text(ws[f"A{row}"], f"Workload {i + 1}", "Label")
        ws[f"B{row}"] = f'=_xlfn.TEXTJOIN(",",FALSE,{",".join(parts)})'
        ws[f"B{row}"].style = "Formula"
        joined.append(f"B{row}")
    sh.row = r + 1 + len(WORKLOAD_COLUMNS) + 1
    top = sh.row
    put_text(ws[f"A{top - 1}"], "PORTFOLIO", "Explanatory Text")
    csv = f'_xlfn.TEXTJOIN(";",TRUE,"{CSV_HEADER}",{",".join(joined)})'  # the header as B{r} shows it
    gpus = f'Portfolio_Accelerator&"="&{pf}$C${book.ref("pf_price").row}'
    formula = (
        f'=PORTFOLIO({csv},{gpus},1,Spare_Replicas,Minimum_Replicas,"gpu-time","bf16,fp8","bf16","1,2",'
        '"params-x-bytes",Hours_Per_Month)'
    )
    bottom = top + CHARGEBACK_ROWS - 1
    ws[f"A{top}"] = ArrayFormula(f"A{top}:M{bottom}", formula)
    for row in range(top, bottom + 1):
        for c, fmt in zip("ABCDEFGHIJKLM", _CHARGEBACK_FORMATS):
            ws[f"{c}{row}"].style = "Formula"
            ws[f"{c}{row}"].number_format = FMT[fmt]
    book.refs["chargeback"] = Ref(sh.name, top, "A", "M")
    sh.row = bottom + 2
    for text in (
        "Priced at the source text's efficiencies (ideal 1), as the requests a replica serves on Portfolio are: KV "
        "cache in BF16, one or two GPUs a replica, weights as N x b; the table holds the shipped example's nine "
        "rows (in Excel 365, =PORTFOLIO(...) in one cell spills whatever its size).",
    ):
        sh.text(text)
    sh.finish()
    return sh
