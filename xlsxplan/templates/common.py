"""The sheets and blocks both templates share: Cover, Guide, Lists, the usual checks, xlwings.conf, Version log.

Each takes the :class:`~xlsxplan.templates.book.Book` being built and writes its sheet in the house layout.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from openpyxl.styles import Alignment, Border, Protection, Side
from openpyxl.worksheet.pagebreak import Break
from openpyxl.worksheet.worksheet import Worksheet

from .. import __version__
from ..domains import Domain
from ..infra.text import set_text
from .book import Book, Ref, Sheet, check_format, page_setup, put_text, quote_sheetname
from .metrics import as_printed, keep_together
from .styles import CASE_COLUMNS, FMT, GENERATOR, HEADER_ROWS, SIDE_COLUMNS, TEMPLATE_DATE, WIDTHS


@dataclass
class Legend:
    """The style legend shown on the Cover."""

    rows: list[tuple[str, str, str]] = field(
        default_factory=lambda: [
            ("Input", "1,000", "An input: type your own value (inputs and their register are unlocked)"),
            ("Register", "Source", "An input's source, as-of date and comment: restate them with the value"),
            ("Formula", "1,000", "A calculation: do not type over it; click it to read the formula"),
            ("Link", "1,000", "A link to a figure on another sheet (green)"),
            ("Output", "1,000", "A key result"),
            ("Check Cell", "OK", "A check: OK, or ERROR with the reason on the Checks sheet"),
            ("Note", "Note", "A note or statement of basis"),
            ("Explanatory Text", "Text", "Explanations and sources"),
        ]
    )


# -- the two documents the templates follow ----------------------------------------------------------------------
ENVELOPE_TITLE = "Back-of-the-Envelope Estimation for LLM Systems"
"""The serving plan's source document, cited by its full title where a sheet first names it."""
ENVELOPE = "Back-of-the-Envelope"
"""Its short title, as a sheet cites it after the first mention and a cell (an input's source, a note) on its own:
"Back-of-the-Envelope §4" for section 4."""
COMPUTE_MEMORY_TITLE = "Estimating the Compute and Memory Needed for Language Models"
"""The training plan's source document, cited by its full title where a sheet first names it."""
COMPUTE_MEMORY = "Compute and Memory"
"""Its short title: "Compute and Memory 'The M2'" for the section of that heading, "Compute and Memory note 7" for
the seventh of its sources and notes."""


# -- the sheets both templates share -----------------------------------------------------------------------------
LINE_CHARS = 150
"""Characters per printed line of running text on Cover and Guide (columns A to F)."""


def paragraph(ws: Worksheet, row: int, text: str, style: str = "Label", col: str = "A", indent: str = "") -> int:
    """Write ``text`` wrapped into lines of :data:`LINE_CHARS`, one cell per row; returns the next free row.

    Lines never break inside a reference such as "Back-of-the-Envelope §4" or "et al."
    (:func:`~xlsxplan.templates.metrics.keep_together`)."""
    import textwrap

    wrapped = textwrap.wrap(keep_together(text), LINE_CHARS - len(indent), subsequent_indent=" " * len(indent))
    for i, line in enumerate(wrapped or [""]):
        put_text(ws[f"{col}{row}"], (indent if i == 0 else "") + as_printed(line), style)
        row += 1
    return row


def table_columns(ws: Worksheet, letters: Sequence[str], widths: Sequence[float]) -> None:
    """A reference table's columns (the Options sheets): each letter's width, and its heading on the header row
    wrapped on two lines, left-aligned."""
    for col, width in zip(letters, widths):
        ws.column_dimensions[col].width = width
        ws[f"{col}{HEADER_ROWS}"].alignment = Alignment(horizontal="left", vertical="center", wrap_text=True)
    ws.row_dimensions[HEADER_ROWS].height = 30


def note_block(ws: Worksheet, first: int, last: int, cols: str = "ABCDEF") -> None:
    """Rows ``first`` to ``last`` as one Note box: the Note style's fill on every cell, its border around the
    block only, so no line is drawn through text that runs on over the cells to its right."""
    side = Side("thin", "B2B2B2")
    for r in range(first, last + 1):
        for i, col in enumerate(cols):
            cell = ws[f"{col}{r}"]
            keep = cell.value
            cell.style = "Note"
            if keep is not None and cell.data_type == "s":
                set_text(cell, keep)  # the style resets the quote prefix (see put_text)
            cell.border = Border(
                left=side if i == 0 else None,
                right=side if i == len(cols) - 1 else None,
                top=side if r == first else None,
                bottom=side if r == last else None,
            )


@dataclass(frozen=True)
class PriceExample:
    """A price a template ships in place of the catalog's for one accelerator (the source document's own figure)."""

    usd_per_gpu_hour: float
    source: str
    comment: str


def lists_sheet(
    book: Book,
    usual: Sequence[tuple[str, str, str, Domain | None]] = (),
    prices: bool = False,
    price_examples: dict[str, PriceExample] | None = None,
) -> dict[str, str]:
    """The Lists sheet: the catalog's models and accelerators and the precision names, for the dropdowns, and the
    usual ranges of the inputs that have one.

    Returns the data-validation source of each list. The names are written as text, as the catalog holds them
    when the file is built; =MODELS() and =GPUS() list the current catalog once the add-in is installed.

    ``usual`` holds ``(key, label, unit, domain)`` for inputs whose argument domain has a typical range
    (:attr:`xlsxplan.domains.Domain.typical`: legal values outside it are suspicious, such as a bandwidth of 3,350
    where TB/s is meant). Each becomes a row of low and high bounds below the lists, and ``book.usual[key]`` the
    label and the two cells, for a check that compares the input with them by formula.

    With ``prices``, a table of the price per GPU-hour of every accelerator of the catalog follows, in the catalog's
    order (that of the accelerators' list, so that ``INDEX(prices, MATCH(accelerator, accelerators, 0))`` finds
    one): an input row each, its default GPU_PRICE's with the price's source and date (``price_examples`` replaces
    it for the accelerators a template's example prices otherwise), empty where the catalog has none.
    ``out["price"]`` is the span of the prices.
    """
    from .. import calibration, catalog, precision
    from ..errors import NotAvailableError

    sh = book.sheet(
        "Lists",
        "The dropdowns' lists: the catalog's presets and the precision names when this file "
        "was built (MODELS() and GPUS() list the current catalog).",
    )
    ws = sh.ws
    columns = {
        "model": ("A", "Models (MODEL_SPEC)", catalog.model_names()),
        "gpu": ("C", "Accelerators (GPU_SPEC)", catalog.gpu_names()),
        "precision": ("E", "Precisions (BYTES_PER_PARAM)", precision.format_names()),
    }
    # A as on every sheet (its row 2 holds the master check's label); C and E hold names, B and D the usual
    # ranges' units and upper bounds
    widths = (
        (("A", WIDTHS["A"]), ("B", 15), ("C", 22), ("D", 40), ("E", 12), ("F", 50))
        if prices
        else (("A", WIDTHS["A"]), ("B", 15), ("C", 30), ("D", 15), ("E", 30))
    )
    for col, width in widths:
        ws.column_dimensions[col].width = width
    out = {}
    last = HEADER_ROWS
    for kind, (col, heading, names) in columns.items():
        put_text(ws[f"{col}{HEADER_ROWS}"], heading, "Column Heading")
        for i, value in enumerate(names, start=HEADER_ROWS + 1):
            put_text(ws[f"{col}{i}"], value, "Label")
        end = HEADER_ROWS + len(names)
        out[kind] = f"{quote_sheetname('Lists')}!${col}${HEADER_ROWS + 1}:${col}${end}"
        last = max(last, end)
    # beside the precisions, the dense peak each computes on (calibration.peak_field): 8-bit formats on FP8 tensor
    # cores, the others on BF16 ones; FP4 has no catalog peak
    put_text(ws[f"F{HEADER_ROWS}"], "Computes on", "Column Heading")
    if not prices:
        ws.column_dimensions["F"].width = 16
    for i, value in enumerate(columns["precision"][2], start=HEADER_ROWS + 1):
        try:
            field = calibration.peak_field(value)
        except NotAvailableError:  # FP4 tensor cores: no catalog peak
            field = "none (FP4)"
        put_text(ws[f"F{i}"], field, "Label")
    end = HEADER_ROWS + len(columns["precision"][2])
    out["precision_peak"] = f"{quote_sheetname('Lists')}!$F${HEADER_ROWS + 1}:$F${end}"
    ws.freeze_panes = f"A{HEADER_ROWS + 1}"
    sh.row = last + 1
    if usual:
        sh.row += 1
        for col, text in zip("ABCD", ("Usual range of (xlsxplan.domains)", "Unit", "Low", "High")):
            put_text(ws[f"{col}{sh.row}"], text, "Column Heading")
        sh.row += 1
        for key, label, unit, domain in usual:
            if domain is None or domain.typical is None:
                raise ValueError(f"{label}: its domain has no typical range")
            r = sh.row
            put_text(ws[f"A{r}"], label, "Label")
            put_text(ws[f"B{r}"], unit, "Unit")
            for col, bound in zip("CD", domain.typical):
                ws[f"{col}{r}"] = bound
                ws[f"{col}{r}"].style = "Label"
                ws[f"{col}{r}"].number_format = FMT["general"]
            book.usual[key] = (label, f"Lists!$C${r}", f"Lists!$D${r}")
            sh.row += 1
        sh.text("Values outside these ranges are legal but rarely meant: the Checks sheet flags them (a unit slip?).")
    if prices:
        out.update(_price_table(book, sh, price_examples or {}))
    sh.finish()
    return out


def price_label(gpu: str) -> str:
    """The label of an accelerator's row in the price table on Lists; its defined name is the label's
    (``H100-SXM`` -> ``H100_SXM_Price_Per_GPU_Hour``)."""
    return f"{gpu} price per GPU-hour"


def _price_table(book: Book, sh: Sheet, examples: dict[str, PriceExample]) -> dict[str, str]:
    """The Lists table of prices per GPU-hour, one input row per accelerator of the catalog (see
    :func:`lists_sheet`)."""
    import datetime as _dt

    from .. import catalog, domains
    from ..errors import NotAvailableError
    from .book import validation_for

    ws = sh.ws
    sh.section(
        "Price per GPU-hour of each accelerator",
        "Type your quotes over these: every cost figure, and the Options sheet, reads this table",
    )
    for col, text in zip("ABCDEF", ("Accelerator (GPU_PRICE)", "Price", "Unit", "Source", "As-of date", "Comment")):
        put_text(ws[f"{col}{sh.row}"], text, "Column Heading")
    sh.row += 1
    first = sh.row
    table = catalog.load_prices()
    domain = domains.domain_of(domains.Price)
    for gpu in catalog.gpu_names():
        label = price_label(gpu)
        example = examples.get(gpu)
        try:
            entry = table.get(gpu)
        except NotAvailableError:
            entry = None
        if example is not None:
            value, source, as_of, comment = example.usd_per_gpu_hour, example.source, TEMPLATE_DATE, example.comment
        elif entry is not None:
            value, source = entry.usd_per_gpu_hour, f"Catalog (GPU_PRICE): {entry.source}"
            as_of = _dt.datetime(entry.as_of.year, entry.as_of.month, entry.as_of.day)
            comment = f"on demand, {entry.offer}, {entry.region}"
        else:
            value, source, as_of, comment = None, "Catalog: no price; type your quote", TEMPLATE_DATE, ""
        sh.input(
            label,
            value,
            "USD/GPU-h",
            source,
            comment,
            "usd",
            validation_for(domain, label, "leave it empty for an accelerator you do not rent"),
            as_of=as_of,
        )
    last = sh.row - 1
    sh.text("An empty price leaves a case on that accelerator without cost figures (and out of the Options sheet).")
    return {"price": f"{quote_sheetname('Lists')}!$B${first}:$B${last}"}


@dataclass(frozen=True)
class Result:
    """A figure the Cover shows: a line item's key (or an input's defined name), its label, unit and format, and a
    note beside it: text, or a formula when it starts with ``=`` (``{key}`` placeholders allowed)."""

    key: str
    label: str
    unit: str
    fmt: str
    note: str = ""


def cover(
    book: Book,
    purpose: str,
    headline: Sequence[Result],
    drivers: Sequence[Result],
    blocks: Sequence[tuple[str, Sequence[Result]]],
    limitations: Sequence[str],
    examples: str,
) -> None:
    """The Cover: purpose, version, active scenario, master check, the plan in brief with its key drivers beside
    it, the other figures by what they are, then (on a page of its own) the legend and the known limitations.

    ``headline`` is the plan a reader signs off, in key-result style; ``drivers`` the inputs that move it most,
    shown beside it (columns D to F); each of ``blocks`` a heading and further figures, each labelled as what it
    is (another method's, the calibrated view's). ``examples`` names where the shipped example values come from."""
    ws = book.ws("Cover")
    for col, width in WIDTHS.items():
        ws.column_dimensions[col].width = width
    put_text(ws["A1"], book.title, "Title")
    ws.row_dimensions[1].height = 24
    row = paragraph(ws, 2, purpose, "Explanatory Text")
    row += 1

    def heading(text: str, beside: str = "") -> None:
        nonlocal row
        put_text(ws[f"A{row}"], text, "Heading 2")
        for col in "BCDEF":
            ws[f"{col}{row}"].style = "Heading 2"
        if beside:
            put_text(ws[f"D{row}"], beside, "Heading 2")
        row += 1

    def pair(label: str, formula_or_value: Any, fmt: str, style: str, unit: str = "") -> None:
        nonlocal row
        put_text(ws[f"A{row}"], label, "Label")
        cell = ws[f"B{row}"]
        cell.style = style
        if isinstance(formula_or_value, str) and not formula_or_value.startswith("="):
            put_text(cell, formula_or_value)
        else:
            cell.value = formula_or_value
        cell.number_format = FMT[fmt]
        if unit:
            put_text(ws[f"C{row}"], unit, "Unit")
        row += 1

    def link(key: str) -> str:
        return "=" + (key if key in book.names else book.ref(key).text("Cover"))

    heading("About this workbook")
    about = row
    pair("Version", __version__, "text", "Label")
    pair("As of", TEMPLATE_DATE, "date", "Label")
    pair("Built by", f"{GENERATOR} (xlsxplan {__version__})", "text", "Label")
    if book.scenario_name:
        pair("Active scenario", f"={book.scenario_name}", "text", "Link")
    for r in range(about, row):
        ws[f"B{r}"].alignment = Alignment(horizontal="left")
    assert book.master_check is not None  # noqa: S101 - builder order
    master_row = row
    pair("Master check", "=" + book.master_check.text("Cover"), "check", "Check Cell")
    check_format(ws, f"B{master_row}")
    put_text(ws[f"D{master_row}"], "OK when every row of the Checks sheet is 0", "Explanatory Text")
    row += 1
    heading("The plan in brief (active scenario)", "Key drivers")
    first = row
    for result in headline:
        pair(result.label, link(result.key), result.fmt, "Output", result.unit)
    for i, result in enumerate(drivers):
        r = first + i
        put_text(ws[f"D{r}"], result.label, "Label")
        cell = ws[f"E{r}"]
        cell.value = link(result.key)
        cell.style = "Link"
        cell.number_format = FMT[result.fmt]
        if result.fmt == "text":  # a name runs on to the right, over the unit column it leaves empty
            cell.alignment = Alignment(horizontal="left")
        elif result.unit:
            put_text(ws[f"F{r}"], result.unit, "Unit")
    row = max(row, first + len(drivers))
    for title, results in blocks:
        row += 1
        heading(title)
        for result in results:
            if result.note.startswith("="):
                ws[f"D{row}"] = book.render(result.note, "Cover")
                ws[f"D{row}"].style = "Explanatory Text"
            elif result.note:
                put_text(ws[f"D{row}"], result.note, "Explanatory Text")
            pair(result.label, link(result.key), result.fmt, "Link", result.unit)
    row += 1
    start = row
    row = paragraph(
        ws,
        row,
        f"This is an estimate, not a quote. The example values come from {examples}; replace them with your own "
        "before relying on the results.",
        "Note",
    )
    note_block(ws, start, row - 1)
    ws.row_breaks.append(Break(id=row))  # the legend and the limitations on a page of their own
    row += 1
    heading("Legend")
    for style, sample, meaning in Legend().rows:
        put_text(ws[f"A{row}"], style if style != "Check Cell" else "Check", "Label")
        cell = ws[f"B{row}"]
        put_text(cell, sample, style)
        cell.protection = Protection(locked=True)  # a sample, not an input
        put_text(ws[f"D{row}"], meaning, "Explanatory Text")
        row += 1
    row += 1
    heading("Known limitations of the estimate")
    for text in limitations:
        row = paragraph(ws, row, text, "Label", indent="- ")
    ws.print_area = f"A1:F{row - 1}"
    ws.print_title_rows = "1:1"  # the plan's title atop its second page
    page_setup(ws, book.title)


def guide(book: Book, steps: Sequence[str], sheets: Sequence[tuple[str, str]]) -> None:
    """The Guide: how to fill the workbook in, what each sheet holds, the conventions."""
    ws = book.ws("Guide")
    for col, width in WIDTHS.items():
        ws.column_dimensions[col].width = width
    put_text(ws["A1"], f"{book.title}: Guide", "Title")
    ws.row_dimensions[1].height = 24
    row = 4  # below the master check's row

    def heading(text: str) -> None:
        nonlocal row
        put_text(ws[f"A{row}"], text, "Heading 2")
        for col in "BCDEF":
            ws[f"{col}{row}"].style = "Heading 2"
        row += 1

    heading("How to fill it in")
    for i, step in enumerate(steps, start=1):
        row = paragraph(ws, row, step, "Label", indent=f"{i}. ")
    row += 1
    heading("Sheets")
    for name, what in sheets:
        put_text(ws[f"A{row}"], name, "Label")
        put_text(ws[f"B{row}"], what, "Explanatory Text")
        row += 1
    row += 1
    heading("Conventions")
    for text in (
        "Each input appears once, on Inputs, as a row: Label | Value | Unit | Source | As-of date | Comment. Only "
        "input cells (orange) are unlocked; sheets are protected without a password (Review > Unprotect Sheet).",
        "Every input has a defined name made from its label (Formulas > Name Manager), so formulas read like the "
        "equation: =MAX_BATCH(Parameters, ...).",
        "A scenario row keeps one value per case in columns G to J; the Active column shows the chosen case with "
        "=INDEX(cases, Scenario_Number). No OFFSET, INDIRECT or nested IFs.",
        "Units sit in their own column beside every figure: GB are 1e9 bytes, TB/s 1e12 bytes per second, "
        "TFLOP/s 1e12 operations per second, B params billions of parameters. Formulas contain no numbers except "
        "0, 1 and unit conversions (1,024, 3,600, 86,400, 1E+9, 1E+12, 1E+15).",
        "Checks return 1 for a problem and 0 for OK; the master check, on the Cover and on the second row of every "
        "other sheet, is 1 if any check is: =MIN(1,SUM(...)) (FAST Standard; ICAEW Financial Modelling Code).",
        "Every figure a preset supplies comes from the catalog, which cites its source: MODEL_SOURCE and "
        "GPU_SOURCE return the citation of any figure.",
    ):
        row = paragraph(ws, row, text, "Label", indent="- ")
    ws.print_area = f"A1:F{row - 1}"
    ws.print_title_rows = "1:2"  # the title and the master check atop every page
    page_setup(ws, book.title)


def conf_sheet(book: Book) -> Worksheet:
    """The ``xlwings.conf`` sheet (:func:`xlsxplan.sheet.xlwings_conf.add_conf_sheet`), printed like the rest."""
    from ..sheet.xlwings_conf import add_conf_sheet

    ws = add_conf_sheet(book.wb)
    ws.print_area = f"A1:B{ws.max_row}"
    page_setup(ws, book.title)
    return ws


def version_log(book: Book) -> None:
    """The Version log: one row per release of the template."""
    sh = book.sheet(
        "Version log", "What changed in this template, newest first.", ["Version", "Date", "By", "Change", "", ""]
    )
    ws = sh.ws
    put_text(ws[f"A{sh.row}"], __version__, "Label")
    ws[f"B{sh.row}"] = TEMPLATE_DATE
    ws[f"B{sh.row}"].number_format = FMT["date"]
    put_text(ws[f"C{sh.row}"], "xlsxplan", "Label")
    put_text(
        ws[f"D{sh.row}"],
        "First release: generated by `xlsxplan build` from the catalog and the source documents' examples",
        "Label",
    )
    sh.row += 1
    sh.finish()


def usual_checks(book: Book, sh: Sheet, usual: Sequence[tuple[str, str, str, Any]]) -> None:
    """A Checks row per input with a usual range (see :func:`lists_sheet`): 1 when any of its cells lies outside
    the range on Lists. COUNTIF skips empty cells, so an override left empty is never flagged."""
    from ..domains import domain_of, format_number

    for key, label, unit, alias in usual:
        _, low, high = book.usual[key]
        domain = alias if isinstance(alias, Domain) else domain_of(alias)
        assert domain is not None and domain.typical is not None  # noqa: S101 - lists_sheet checked it
        lo, hi = (format_number(x) for x in domain.typical)
        if key in book.texts:  # a table of inputs (the prices on Lists): every cell of it
            span = book.texts[key]
        elif f"{key}@0" in book.refs:  # a row of the scenario block: all four cases
            first, last = book.ref(f"{key}@0"), book.ref(f"{key}@{len(CASE_COLUMNS) - 1}")
            span = f"Inputs!${first.col}${first.row}:${last.col}${last.row}"
        else:
            ref = book.ref(key)
            span = f"{quote_sheetname(ref.sheet)}!${ref.col}${ref.row}"
        sh.check(
            f"{label} outside its usual range",
            f'=IF(COUNTIF({span},"<"&{low})+COUNTIF({span},">"&{high})>0,1,0)',
            f"Usually {lo} to {hi} {unit} (Lists; xlsxplan.domains); outside: a unit slip?",
        )


def error_check(sh: Sheet, name: str, span: str, what: str = "") -> Ref:
    """A Checks row that is 1 when ``span`` holds an error value or an error message as text.

    The headless engine and xlwings Lite leave a failed function's error value in its cell, which ISERROR sees;
    classic xlwings cannot (it writes the error value and the reason as text, ``#NUM! batch must be ...``), and
    ISERROR, IFERROR and SUM all pass text by. ``COUNTIF(span,"#*")`` counts those texts: no other text in the
    templates starts with ``#``."""
    return sh.check(
        f"Error values on {name}",
        f'=IF(SUMPRODUCT(1*ISERROR({span}))+COUNTIF({span},"#*")>0,1,0)',
        what or f"Any error value on {name}, or an error message as text (classic xlwings)",
    )


def header_statuses(book: Book) -> None:
    """Row 2 of every sheet but the Cover (:func:`header_status`): call it once every sheet and the master check
    exist, before :func:`conf_sheet`."""
    for ws in book.wb.worksheets:
        if ws.title != "Cover":
            header_status(book, ws)


def header_status(book: Book, ws: Worksheet) -> None:
    """Row 2 of a sheet: the master check and the active scenario, as on every sheet but the Cover (which shows
    them among its own rows) and xlwings.conf (read by the add-in)."""
    put_text(ws["A2"], "Master check (0 problems = OK; see Checks)", "Label")
    master = book.master_check
    assert master is not None  # noqa: S101 - a builder bug, not user input
    ws["B2"] = "=" + master.text(ws.title)
    ws["B2"].style = "Check Cell"
    ws["B2"].number_format = FMT["check"]
    check_format(ws, "B2")
    if book.scenario_name:
        sheet = book.sheets.get(ws.title)
        if sheet is not None and sheet.case_blocks and sheet.layout == "list":
            # the cases print on pages of their own beside A to C, where a "Scenario" label in C would stand
            # without its name: the label goes with the name, in D, on the register's pages only
            ws["D2"] = f'="Scenario: "&{book.scenario_name}'
        else:
            put_text(ws["C2"], "Scenario", "Unit")
            ws["C2"].alignment = Alignment(horizontal="right")
            ws["D2"] = f"={book.scenario_name}"
        ws["D2"].style = "Link"
        ws["D2"].alignment = Alignment(horizontal="left")


# --- ranges: the calibrated figures at a low and a high quantile of published runs ------------------------------
RANGE_LOW, RANGE_HIGH = "Low_Quantile_Of_The_Range", "High_Quantile_Of_The_Range"
"""The defined names of the quantiles a calibrated figure's range is read at (EFFICIENCY's quantile argument)."""
RANGE_COLUMNS = ("At the low quantile", "Calibrated", "At the high quantile")
RANGE_SECTION = "The calibrated column's range (P10 to P90 of published runs, as shipped)"


def range_inputs(book: Book, sh: Sheet) -> None:
    """The section of Inputs with the two quantiles every calibrated range is read at: P10 and P90 as shipped, the
    band of the leave-one-source-out residuals of published measurements (xlsxplan.calibration.bands)."""
    from ..domains import Percentile, domain_of
    from .book import validation_for

    sh.section("Ranges of the calibrated figures", "Where in the spread of published runs: Calibration sheet")
    for word, value, what in (("Low", 0.1, "slow"), ("High", 0.9, "fast")):
        label = f"{word} quantile of the range"
        sh.input(
            label,
            value,
            "fraction",
            "Convention: P10 and P90 of published runs",
            f"Efficiency at this quantile: the {what} end",
            "pct",
            validation_for(domain_of(Percentile), label),
        )


def range_block(
    book: Book, sh: Sheet, efficiencies: Sequence[tuple[Any, Sequence[str]]], lines: Sequence[Any], note: str
) -> list[dict[str, Ref | str]]:
    """A Calibration sheet's range block: the calibrated column's figures again, by the same formulas, at the
    efficiencies of the low quantile, the fit and the high quantile (columns C, D and E).

    ``efficiencies`` gives each efficiency row (a :class:`~xlsxplan.templates.book.Line` for its label) with its
    three formulas; ``lines`` are the calibrated lines, rendered per column against those rows. Each figure's cells
    are ``book.refs["Range:KEY"]``. Returns the three columns' references."""
    sh.section(RANGE_SECTION, note)
    sh.headings(["Line item", "Unit", *RANGE_COLUMNS, "", "Equation and source"], row=sh.row)
    sh.row += 1
    columns: list[dict[str, Ref | str]] = [{}, {}, {}]
    for line, formulas in efficiencies:
        book.refs[f"Range:{line.key}"] = sh.side_by_side(line, columns, list(formulas))
    for line in lines:
        book.refs[f"Range:{line.key}"] = sh.side_by_side(line, columns)
    return columns


def range_cells(book: Book, sh: Sheet, key: str, fmt: str, figure_key: str | None = None) -> None:
    """On the row just written (an Outputs link to a calibrated figure), its low and high in columns E and F: the
    least and the most of the figure at the three efficiencies of the range block (a lower efficiency gives more
    GPUs and a longer run, a higher one fewer), or the figure itself where they are not all numbers."""
    ref = book.ref(f"Range:{key}")
    span = ref.text(sh.name)
    cells = [Ref(ref.sheet, ref.row, col).text(sh.name) for col in "CDE"]
    numbers = "AND(" + ",".join(f"ISNUMBER({c})" for c in cells) + ")"
    figure = book.ref(figure_key or f"{key}:calibrated").text(sh.name)
    r = sh.row - 1
    for col, fn, what in (("E", "MIN", "low"), ("F", "MAX", "high")):
        cell = sh.ws[f"{col}{r}"]
        cell.value = f"=IF({numbers},{fn}({span}),{figure})"
        cell.style = "Link"
        cell.number_format = FMT[fmt]
        book.refs[f"{figure_key or key}:{what}"] = Ref(sh.name, r, col)


def range_headings(sh: Sheet) -> None:
    """ "Low" and "High" over columns E and F of the section just begun (its heading row)."""
    r = sh.row - 1
    for col, text in (("E", "Low"), ("F", "High")):
        put_text(sh.ws[f"{col}{r}"], text, "Heading 2")
        sh.ws[f"{col}{r}"].alignment = Alignment(horizontal="right")


def range_sentence(figure: str, low: str, high: str, decimals: int, unit: str) -> str:
    """A formula writing a figure and its range as a sentence, "40 GPUs, likely 34 to 52"; the figure alone where
    the range is not all numbers (a configuration that does not fit reads as it does)."""
    d = decimals
    numbers = f"AND(ISNUMBER({figure}),ISNUMBER({low}),ISNUMBER({high}))"
    return f'=IF({numbers},FIXED({figure},{d})&"{unit}, likely "&FIXED({low},{d})&" to "&FIXED({high},{d}),{figure})'


def measured_heading(sh: Sheet, measured: Sequence[str]) -> None:
    """The Calibration sheet's third column headed "Measured (yours)" only when one of the inputs ``measured`` (their
    defined names) holds a measurement; else "None measured: calibrated", since the column then repeats the
    calibrated figures."""
    col = SIDE_COLUMNS[2]
    given = f"SUM({','.join(measured)})>0"
    sh.ws[f"{col}{HEADER_ROWS}"] = f'=IF({given},"Measured (yours)","None measured: calibrated")'
