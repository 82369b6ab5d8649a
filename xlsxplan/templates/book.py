"""The sheet model both templates are written in: a Book of Sheets, rows of inputs and calculations, printing.

The conventions come from ``WORKBOOKS.md`` (FAST Standard, ICAEW Financial Modelling Code):

* every list sheet has the same columns, **Label | Value | Unit | Source (or equation) | As-of date | Comment**, with
  the same widths, a title, the master check and the active scenario in its header, and panes frozen where labels
  meet values;
* each input is one row on Inputs, styled as an input, unlocked, and given one defined name derived from its label
  (:func:`name_from_label`), so formulas read like the equation: ``=MAX_BATCH(Parameters_Override, ...)``;
* a scenario row keeps its cases in columns G to J and shows the active case in the Value column with
  ``=INDEX(cases, Scenario_Number)``;
* calculations are formulas written from templates whose ``{key}`` placeholders are resolved to cell references
  (relative on the same sheet, absolute and sheet-qualified elsewhere), so one template renders both the live
  calculation and each case of a side-by-side comparison;
* every sheet is protected without a password, printed landscape fitting the page width with its header rows
  repeated, and nothing is merged or hidden.

Builders (:mod:`.serving`, :mod:`.training`) only describe rows; this module, :mod:`.styles` and :mod:`.metrics` own
how they look, and :mod:`.common` writes the sheets both share.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from openpyxl import Workbook
from openpyxl.formatting.rule import CellIsRule
from openpyxl.styles import Alignment, Border, Font, PatternFill
from openpyxl.styles.differential import DifferentialStyle
from openpyxl.utils import column_index_from_string, get_column_letter
from openpyxl.workbook.defined_name import DefinedName
from openpyxl.workbook.properties import CalcProperties
from openpyxl.worksheet.datavalidation import DataValidation
from openpyxl.worksheet.worksheet import Worksheet

from .. import __version__
from ..domains import Domain
from ..infra.text import set_text
from .metrics import PURPOSE_CHARS_PER_WIDTH, balanced_lines, text_em, wrap_em
from .styles import (
    BAD,
    CASE_COLUMNS,
    CASE_WIDTH,
    CASE_WIDTHS,
    FMT,
    FONT_SIZE,
    GENERATOR,
    GOOD,
    HEADER_ROWS,
    HEADING_RULE,
    LINE_HEIGHT,
    NOTE_EM_PER_WIDTH,
    PRINT_PAGES_TALL,
    SIDE_COLUMNS,
    TAB,
    TEMPLATE_DATE,
    TITLE_COLUMNS,
    WIDTHS,
    named_styles,
)

# A word kept as written in a defined name: acronyms and words with digits (GPU, KV, BF16, MFU).
_KEEP = re.compile(r"^(?:[A-Z0-9]{2,}|.*\d.*)$")
_CELL_LIKE = re.compile(r"^(?:[A-Za-z]{1,3}\d+|[Rr]\d*[Cc]?\d*|[Cc]\d*)$")


def name_from_label(label: str) -> str:
    """The defined name of an input row: its label's words, capitalised, joined by underscores.

    Text in parentheses and anything after a comma is left out, so a label may carry an aside:
    ``"Price per GPU-hour"`` is ``Price_Per_GPU_Hour``, ``"KV cache precision"`` is ``KV_Cache_Precision``.
    """
    text = re.sub(r"\(.*?\)", " ", label).split(",")[0]
    words = [w for w in re.split(r"[^A-Za-z0-9]+", text) if w]
    name = "_".join(w if _KEEP.match(w) else w[0].upper() + w[1:] for w in words)
    if not name or not name[0].isalpha() or _CELL_LIKE.match(name):
        raise ValueError(f"label {label!r} gives no valid defined name ({name!r})")
    return name


@dataclass(frozen=True)
class Line:
    """One calculated line item: a formula template and how to show it.

    ``formula`` is an Excel formula whose ``{key}`` placeholders name other line items (or case inputs); defined
    names are written as they are. ``note`` gives the equation in words and its source.
    """

    key: str
    label: str
    formula: str
    unit: str
    note: str
    fmt: str = "dec2"
    key_result: bool = False
    compare: bool = True
    """False: computed for the active scenario only, not repeated for every case side by side."""
    bad: tuple[str, ...] = ()
    """Text results shown in Excel's Bad colours (conditional formatting), e.g. "does not fit"."""


@dataclass
class Ref:
    """A cell, or a row of cells from ``col`` to ``end`` (the cases of a side-by-side line)."""

    sheet: str
    row: int
    col: str
    end: str | None = None

    def text(self, from_sheet: str | None) -> str:
        if from_sheet == self.sheet:
            return f"{self.col}{self.row}" + (f":{self.end}{self.row}" if self.end else "")
        span = f"${self.col}${self.row}" + (f":${self.end}${self.row}" if self.end else "")
        return f"{quote_sheetname(self.sheet)}!{span}"


@dataclass
class InputRow:
    """What a test needs to know about one input row."""

    sheet: str
    row: int
    label: str
    name: str
    unit: str
    cells: tuple[str, ...]  # the value cells of the row, e.g. ("B12",) or ("G12", "H12", "I12", "J12")
    live: str | None = None  # the Value cell of a scenario row (a formula), else None
    register: tuple[str, ...] = ()  # its Source, As-of date and Comment cells: unlocked too, for the user to update


REGISTER = ("D", "E", "F")
"""The assumptions register beside each input: Source | As-of date | Comment (FAST 2.04)."""


def register_cells(ws: Worksheet, r: int, source: str, as_of: _dt.datetime | None, comment: str) -> tuple[str, ...]:
    """Write an input row's Source, As-of date and Comment, styled as register cells: unlocked, so that a user
    can restate where the value comes from and when, as Inputs asks, on a protected sheet."""
    put_text(ws[f"D{r}"], source, "Register")
    ws[f"E{r}"].style = "Register"
    if as_of is not None:
        ws[f"E{r}"] = as_of
    ws[f"E{r}"].number_format = FMT["date"]
    ws[f"F{r}"].style = "Register Comment"
    if comment:
        put_text(ws[f"F{r}"], comment)
    return tuple(f"{col}{r}" for col in REGISTER)


_PLACEHOLDER = re.compile(r"\{([\w@:]+)\}")


class Book:
    """A template workbook being built: its sheets, styles, defined names and the cells of every line item."""

    def __init__(self, title: str, sheets: Sequence[tuple[str, str]]) -> None:
        self.title = title
        self.wb = Workbook()
        self.wb.remove(self.wb.active)
        for style in named_styles():
            self.wb.add_named_style(style)
        self.kinds: dict[str, str] = {}
        for name, kind in sheets:
            ws = self.wb.create_sheet(name)
            ws.sheet_properties.tabColor = TAB[kind]
            self.kinds[name] = kind
        self.refs: dict[str, Ref] = {}
        self.inputs: list[InputRow] = []
        self.input_names: dict[str, str] = {}  # key of an input row -> its defined name
        self.names: dict[str, str] = {}
        self.output_names: dict[str, str] = {}  # defined name of a headline output -> its line item's key
        self.sheets: dict[str, Sheet] = {}
        self.chart_rows: tuple[int, int] = (0, 0)
        self.master_check: Ref | None = None
        self.scenario_name: str | None = None  # the defined name of the active scenario's name
        self.usual: dict[str, tuple[str, str, str]] = {}  # key -> (label, low cell, high cell) on Lists
        self.texts: dict[str, str] = {}  # placeholders that stand for a fixed reference, e.g. a list on Lists
        # Excel recalculates a workbook on opening when its calcId is older than Excel's own engine (MS-XLS 2.4.215,
        # RecalcId) or fullCalcOnLoad is set, and without the add-in every xlsxplan function would then read #NAME?.
        # The values cached by `xlsxplan build` are current, so the file says so: Excel 2019/365's engine id.
        self.wb.calculation = CalcProperties(calcId=191029, fullCalcOnLoad=False)
        props = self.wb.properties
        props.creator = GENERATOR
        props.lastModifiedBy = GENERATOR
        props.created = TEMPLATE_DATE
        props.modified = TEMPLATE_DATE
        props.title = title
        props.description = f"Generated by xlsxplan {__version__}; rebuild with `xlsxplan build`."

    def ws(self, name: str) -> Worksheet:
        return self.wb[name]

    def sheet(self, name: str, purpose: str, headings: Sequence[str] | None = None, layout: str = "list") -> Sheet:
        sheet = Sheet(self, name, purpose, headings, layout)
        self.sheets[name] = sheet
        return sheet

    # -- names and references -------------------------------------------------------------------------------------
    def define(self, name: str, sheet: str, ref: str) -> None:
        if name in self.names:
            raise ValueError(f"defined name {name} is used twice")
        target = f"{quote_sheetname(sheet)}!{ref}"
        self.wb.defined_names[name] = DefinedName(name, attr_text=target)
        self.names[name] = target

    def ref(self, key: str) -> Ref:
        try:
            return self.refs[key]
        except KeyError:
            raise KeyError(f"no line item {key!r} has been written yet") from None

    def render(self, template: str, sheet: str, local: dict[str, Ref | str] | None = None) -> str:
        """A formula template with each ``{key}`` replaced by its reference as seen from ``sheet``.

        ``local`` maps keys to references (or defined names) that take precedence over the book's line items: the
        case inputs of one column of a side-by-side sheet, or the live inputs' names.
        """

        def sub(m: re.Match[str]) -> str:
            key = m.group(1)
            if local and key in local:
                target = local[key]
                return target if isinstance(target, str) else target.text(sheet)
            if key in self.texts:
                return self.texts[key]
            return self.ref(key).text(sheet)

        return _PLACEHOLDER.sub(sub, template)

    def address(self, key: str) -> str:
        """``Sheet!B12`` for a line item."""
        r = self.ref(key)
        return f"{r.sheet}!{r.col}{r.row}"

    def name_outputs(self, outputs: dict[str, str]) -> None:
        """A defined name on each headline output (``{name: line item key}``): the figures a reader asks for by
        name (``xlsxplan recalc --show NAME``, ``xlsxplan outputs``), as the inputs are named after their labels."""
        for name, key in outputs.items():
            r = self.ref(key)
            self.define(name, r.sheet, f"${r.col}${r.row}")
            self.output_names[name] = key

    # -- finishing ------------------------------------------------------------------------------------------------
    def fit_text(self, value_of: Callable[[str], Any]) -> bool:
        """Make room for each text a formula computes (``value_of("'Sheet'!$B$7")``, the recalculated book's value)
        that is wider than its cell, measured in DejaVu Sans (:func:`~xlsxplan.templates.metrics.text_em`, the font
        LibreOffice prints Calibri with, wider than Calibri): left-aligned, to run on over the empty cells to its
        right as far as the print area's edge, where they are wide enough; else wrapped in its cell, the row as tall
        as its lines. Returns whether any cell changed."""
        changed = False
        for ws in self.wb.worksheets:
            last = _last_printed_column(ws)

            def room(col: int, ws: Worksheet = ws) -> float:
                return (ws.column_dimensions[get_column_letter(col)].width or 13) * NOTE_EM_PER_WIDTH

            for row in ws.iter_rows():
                for c in row:
                    if c.data_type != "f" or c.alignment.shrink_to_fit:
                        continue
                    value = value_of(f"{quote_sheetname(ws.title)}!${c.column_letter}${c.row}")
                    if not isinstance(value, str):
                        continue
                    scale = (c.font.sz or FONT_SIZE) / FONT_SIZE * (BOLD_WIDER if c.font.b else 1)
                    need, width = text_em(value) * scale, room(c.column)
                    if need <= width:
                        continue
                    changed = True
                    a = c.alignment
                    run, col = width, c.column + 1
                    while run < need and col <= last and ws.cell(c.row, col).value is None:
                        run, col = run + room(col), col + 1
                    if run >= need:
                        c.alignment = Alignment(horizontal="left", vertical=a.vertical, indent=a.indent)
                        continue
                    lines = len(wrap_em(value, width / scale))
                    c.alignment = Alignment(horizontal=a.horizontal, vertical="top", wrap_text=True, indent=a.indent)
                    height = LINE_HEIGHT * lines * scale + 1.5
                    ws.row_dimensions[c.row].height = max(height, ws.row_dimensions[c.row].height or 0)
                    for other in ws[c.row]:  # the label and the rest of a tall row at its top, beside the text
                        b = other.alignment
                        other.alignment = Alignment(
                            horizontal=b.horizontal,
                            vertical="top",
                            wrap_text=b.wrap_text,
                            shrink_to_fit=b.shrink_to_fit,
                            indent=b.indent,
                        )
        return changed

    def finish(self) -> Workbook:
        for ws in self.wb.worksheets:
            ws.protection.sheet = True
            ws.protection.formatColumns = False  # people may widen a column without unprotecting
            ws.protection.formatRows = False
        return self.wb


BOLD_WIDER = 1.1
"""How much wider DejaVu Sans Bold sets a text than its regular face."""


def _last_printed_column(ws: Worksheet) -> int:
    """The last column of ``ws``'s print areas (its last used column where it has none)."""
    if not ws.print_area:
        return ws.max_column
    from openpyxl.utils import range_boundaries

    return max(range_boundaries(a.split("!")[-1].replace("$", ""))[2] for a in ws.print_area.split(","))


def quote_sheetname(name: str) -> str:
    """A sheet name as a formula writes it: quoted only when it holds anything but letters, digits, ``_``, ``.``."""
    return name if re.fullmatch(r"[A-Za-z_][\w.]*", name) else "'" + name.replace("'", "''") + "'"


def put_text(cell: Any, text: str, style: str | None = None) -> Any:
    """Write ``text`` as text, never as a formula, whatever it starts with, in the named ``style``.

    The text goes through :func:`xlsxplan.infra.text.set_text`, which also sets the quote prefix on text that Excel
    would read as a formula once edited (``=``, ``+``, ``-``, ``@``). Setting a named style afterwards resets the
    quote prefix, so the style is applied first.
    """
    if style is not None:
        cell.style = style
    return set_text(cell, text)


def check_format(ws: Worksheet, ref: str) -> None:
    """Good when 0, Bad when 1: the Check Cell style alone does not colour the result."""
    good = DifferentialStyle(font=Font(color=GOOD[1], bold=True), fill=PatternFill(bgColor=GOOD[0]))
    bad = DifferentialStyle(font=Font(color=BAD[1], bold=True), fill=PatternFill(bgColor=BAD[0]))
    ws.conditional_formatting.add(ref, CellIsRule(operator="equal", formula=["0"], font=good.font, fill=good.fill))
    ws.conditional_formatting.add(ref, CellIsRule(operator="greaterThan", formula=["0"], font=bad.font, fill=bad.fill))


def flag_bad(ws: Worksheet, ref: str, values: Sequence[str]) -> None:
    """Show these text results in Excel's Bad colours: a flag a reader cannot miss."""
    bad = DifferentialStyle(font=Font(color=BAD[1], bold=True), fill=PatternFill(bgColor=BAD[0]))
    for value in values:
        rule = CellIsRule(operator="equal", formula=[f'"{value}"'], font=bad.font, fill=bad.fill)
        ws.conditional_formatting.add(ref, rule)


def flag_good(ws: Worksheet, ref: str, value: str) -> None:
    """Show this text result in Excel's Good colours: the row a reader looks for (the active scenario's)."""
    good = DifferentialStyle(font=Font(color=GOOD[1], bold=True), fill=PatternFill(bgColor=GOOD[0]))
    ws.conditional_formatting.add(
        ref, CellIsRule(operator="equal", formula=[f'"{value}"'], font=good.font, fill=good.fill)
    )


ANCHOR = "{cell}"
"""Stands for the first cell a custom validation rule applies to, until :func:`add_validation` attaches it."""


def validation_for(domain: Domain | None, label: str, blank: str = "") -> DataValidation | None:
    """A number validation from a core function's argument domain, with a message naming the input.

    Excel's "between" includes both ends, so a domain whose lower bound is open (a positive number) becomes a custom
    rule, ``AND(ISNUMBER(B24),B24>0,B24<=1E+15)`` (a whole number: ``between low + 1 and high``), and 0 is refused as
    the core function refuses it. ``blank`` tells what an empty cell means where the formulas treat empty, and a
    0 the domain allows, as "not given" ("0 or empty: the catalog's figure"); the message says so. Attach the rule
    with :func:`add_validation`.
    """
    if domain is None or domain.kind not in ("number", "whole"):
        return None
    low = domain.low if domain.low is not None else -1e307
    high = domain.high if domain.high is not None else 1e307
    if domain.low_open and domain.kind == "whole":
        dv = DataValidation(
            type="whole", operator="between", formula1=_num(math.floor(low) + 1), formula2=_num(high), allow_blank=True
        )
    elif domain.low_open:
        rule = [f"ISNUMBER({ANCHOR})", f"{ANCHOR}>{_num(low)}"]
        if domain.high is not None:
            rule.append(f"{ANCHOR}<={_num(high)}")
        dv = DataValidation(type="custom", formula1=f"AND({','.join(rule)})", allow_blank=True)
    else:
        kind = "whole" if domain.kind == "whole" else "decimal"
        dv = DataValidation(type=kind, operator="between", formula1=_num(low), formula2=_num(high), allow_blank=True)
    dv.error = f"{label} must be {domain.describe()}" + (f"; {blank}" if blank else "")
    dv.errorTitle = label[:32]
    dv.showErrorMessage = True
    return dv


def add_validation(ws: Worksheet, dv: DataValidation, ref: str) -> None:
    """Apply ``dv`` to ``ref`` (``B7`` or ``G7:J7``), a custom rule's :data:`ANCHOR` becoming the first cell: Excel
    reads the rule's references relative to it, for every cell of the range."""
    if dv.formula1 and ANCHOR in dv.formula1:
        dv.formula1 = dv.formula1.replace(ANCHOR, ref.split(":")[0].replace("$", ""))
    ws.add_data_validation(dv)
    dv.add(ref)


def _num(x: float) -> str:
    """A number as a validation formula writes it: ``1000`` or ``1E+15``."""
    if float(x).is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{float(x):.15G}" if abs(x) >= 1e15 or x != 0 and abs(x) < 1e-4 else repr(float(x))


class Sheet:
    """Writes one list sheet from top to bottom: header, sections, input rows, line items, checks."""

    def __init__(
        self, book: Book, name: str, purpose: str, headings: Sequence[str] | None = None, layout: str = "list"
    ) -> None:
        self.book = book
        self.name = name
        self.ws = book.ws(name)
        self.purpose = purpose
        self.row = HEADER_ROWS + 1
        self.layout = layout
        if layout == "cases":  # Label | Unit | Case 1..4 | Equation and source
            widths, self.unit_col, self.note_col, self.last_col = CASE_WIDTHS, "B", "G", "G"
        else:
            widths, self.unit_col, self.note_col, self.last_col = WIDTHS, "C", "D", "F"
        self.check_rows: list[int] = []
        self.case_blocks: list[tuple[int, int]] = []  # (heading row, last case row) of each block of cases
        for col, width in widths.items():
            self.ws.column_dimensions[col].width = width
        ws = self.ws
        put_text(ws["A1"], f"{book.title}: {name}", "Title")
        ws.row_dimensions[1].height = 24
        put_text(ws["A3"], purpose, "Explanatory Text")
        if headings is not None:
            self.headings(headings)

    # -- header ---------------------------------------------------------------------------------------------------
    def headings(self, headings: Sequence[str], row: int = HEADER_ROWS) -> None:
        for i, text in enumerate(headings):
            col = get_column_letter(i + 1)
            put_text(self.ws[f"{col}{row}"], text, "Column Heading")
            if self.layout == "cases" and col in SIDE_COLUMNS:
                # over the figures they head, right-aligned as the figures are
                self.ws[f"{col}{row}"].alignment = Alignment(horizontal="right", vertical="center")
                if not text:
                    self.ws.column_dimensions[col].width = 3  # a case column left empty (Calibration's three)
            elif self.layout == "cases" and col == self.note_col:
                self.ws[f"{col}{row}"].alignment = Alignment(horizontal="left", indent=1, vertical="center")
        self.last_col = max(self.last_col, get_column_letter(len(headings)), key=lambda c: (len(c), c))
        self.ws.freeze_panes = f"B{HEADER_ROWS + 1}"

    # -- rows -----------------------------------------------------------------------------------------------------
    def skip(self, n: int = 1) -> None:
        self.row += n

    def section(self, title: str, note: str = "") -> None:
        if self.row > HEADER_ROWS + 1:
            self.row += 1
        put_text(self.ws[f"A{self.row}"], title, "Heading 2")
        last = self.ws[f"{self.last_col}1"].column
        for i in range(2, last + 1):
            self.ws.cell(row=self.row, column=i).style = "Heading 2"
        if note:
            cell = self.ws[f"{self.note_col}{self.row}"]
            put_text(cell, note, "Explanatory Text")
            cell.border = Border(bottom=HEADING_RULE)  # the heading's rule runs on under its note
        self.row += 1

    def text(self, text: str, style: str = "Explanatory Text", col: str = "A") -> int:
        """A line of running text from ``col``, on as many rows as it needs to stay within the sheet's printed
        width (it runs on over the empty cells to its right, and is cut at the page's edge); returns its first
        row."""
        first = self.row
        start, end = column_index_from_string(col), column_index_from_string(self.last_col)
        width = sum(self.ws.column_dimensions[get_column_letter(i)].width or 13 for i in range(start, end + 1))
        for line in wrap_em(text, NOTE_EM_PER_WIDTH * width):
            put_text(self.ws[f"{col}{self.row}"], line, style)
            self.row += 1
        return first

    def _label(self, label: str, unit: str, note: str | None = None) -> None:
        put_text(self.ws[f"A{self.row}"], label, "Label")
        put_text(self.ws[f"{self.unit_col}{self.row}"], unit, "Unit")
        cell = self.ws[f"{self.note_col}{self.row}"]
        if note and note.startswith("="):  # a note that states an input's value: "At 10x the peak"
            cell.value = self.book.render(note, self.name)
            cell.style = "Explanatory Text"
        elif note:
            put_text(cell, note, "Explanatory Text")

    def _set(self, cell: Any, value: Any) -> None:
        if isinstance(value, str) and not value.startswith("="):
            put_text(cell, value)
        else:
            cell.value = value

    def input(
        self,
        label: str,
        value: Any,
        unit: str,
        source: str,
        comment: str = "",
        fmt: str = "dec2",
        validation: DataValidation | None = None,
        as_of: _dt.datetime | None = TEMPLATE_DATE,
        key: str | None = None,
    ) -> str:
        """An input row: Label | Value | Unit | Source | As-of date | Comment; returns its defined name."""
        ws, r = self.ws, self.row
        name = name_from_label(label)
        self._label(label, unit)
        cell = ws[f"B{r}"]
        cell.style = "Input"
        self._set(cell, value)
        cell.number_format = FMT[fmt]
        register = register_cells(ws, r, source, as_of, comment)
        if validation is not None:
            add_validation(ws, validation, f"B{r}")
        self.book.define(name, self.name, f"$B${r}")
        self.book.refs[key or name] = Ref(self.name, r, "B")
        self.book.input_names[key or name] = name
        self.book.inputs.append(InputRow(self.name, r, label, name, unit, (f"B{r}",), register=register))
        self.row += 1
        return name

    def case_headings(self, title: str, first: str = "Live", each: str = "Case") -> None:
        """The heading row of a block whose cases sit in columns G to J, headed ``each`` 1 to 4."""
        r = self.row
        for col in CASE_COLUMNS:  # the sheet's column headings run on over the cases
            self.ws[f"{col}{HEADER_ROWS}"].style = "Column Heading"
        put_text(self.ws[f"A{r}"], title, "Column Heading")
        put_text(self.ws[f"B{r}"], first, "Column Heading")
        for col in "CDEF":
            self.ws[f"{col}{r}"].style = "Column Heading"
        for i, col in enumerate(CASE_COLUMNS, start=1):
            put_text(self.ws[f"{col}{r}"], f"{each} {i}", "Column Heading")
            self.ws.column_dimensions[col].width = CASE_WIDTH
        self.last_col = CASE_COLUMNS[-1]
        self.case_blocks.append((r, r))
        self.row += 1

    def case_input(
        self,
        label: str,
        values: Sequence[Any],
        unit: str,
        source: str,
        comment: str = "",
        fmt: str = "dec2",
        validation: DataValidation | None = None,
        selector: str | None = None,
        live_fmt: str | None = None,
        key: str | None = None,
    ) -> str:
        """A scenario row: the cases in G to J are inputs; the Value column shows the active case.

        With ``selector`` (the defined name of the active case's number) the Value column is
        ``=INDEX(G:J, selector)`` and takes the row's defined name; without it the row is a table of inputs (the
        measured rates) and the name covers G to J.
        """
        ws, r = self.ws, self.row
        name = name_from_label(label)
        self._label(label, unit)
        cells = []
        for col, value in zip(CASE_COLUMNS, values):
            cell = ws[f"{col}{r}"]
            cell.style = "Input"
            if value is not None:
                self._set(cell, value)
            cell.number_format = FMT[fmt]
            cells.append(f"{col}{r}")
        if validation is not None:
            add_validation(ws, validation, f"{CASE_COLUMNS[0]}{r}:{CASE_COLUMNS[-1]}{r}")
        register = register_cells(ws, r, source, TEMPLATE_DATE, comment)
        span = f"${CASE_COLUMNS[0]}{r}:${CASE_COLUMNS[-1]}{r}"
        live = None
        if selector is not None:
            live = f"B{r}"
            ws[live] = f"=INDEX({span},{selector})"
            ws[live].style = "Formula"
            ws[live].number_format = FMT[live_fmt or fmt]
            self.book.define(name, self.name, f"$B${r}")
            self.book.refs[key or name] = Ref(self.name, r, "B")
        else:
            self.book.refs[key or name] = Ref(self.name, r, CASE_COLUMNS[0])
            self.book.define(name, self.name, f"${CASE_COLUMNS[0]}${r}:${CASE_COLUMNS[-1]}${r}")
        self.book.input_names[key or name] = name
        for i, col in enumerate(CASE_COLUMNS):
            self.book.refs[f"{key or name}@{i}"] = Ref(self.name, r, col)
        self.book.inputs.append(InputRow(self.name, r, label, name, unit, tuple(cells), live, register))
        if self.case_blocks:
            self.case_blocks[-1] = (self.case_blocks[-1][0], r)
        self.row += 1
        return name

    def line(self, line: Line, local: dict[str, Ref | str] | None = None) -> Ref:
        """A calculated line item in the Value column; its key then refers to it."""
        ws, r = self.ws, self.row
        self._label(line.label, line.unit, line.note)
        formula = self.book.render(line.formula, self.name, local)
        cell = ws[f"B{r}"]
        cell.value = formula
        cell.style = _style_of(formula, line.key_result)
        cell.number_format = FMT[line.fmt]
        if line.bad:
            flag_bad(ws, f"B{r}", line.bad)
        ref = Ref(self.name, r, "B")
        self.book.refs[line.key] = ref
        self.row += 1
        return ref

    def side_by_side(
        self, line: Line, locals_: Sequence[dict[str, Ref | str]], formulas: Sequence[str] | None = None
    ) -> Ref:
        """One line item per case, in columns C to F: the same template rendered once per column with that
        case's references (``locals_[i]``), so each cell reads like the equation for its case. Per-cell formulas,
        not an array formula: LibreOffice recalculates array formulas on opening, and would show ``#NAME?`` for
        xlsxplan's functions where a plain cell shows the value cached when the file was saved.

        Returns the row as a reference spanning C to the last column written; each case's cell goes into its
        ``locals_`` under the line's key. ``formulas`` gives each column a template of its own (a comparison whose
        columns differ in where a figure comes from, such as Calibration's plan, calibrated and measured
        efficiencies)."""
        ws, r = self.ws, self.row
        self._label(line.label, line.unit, line.note)
        templates = formulas or [line.formula] * len(locals_)
        for col, local, template in zip(SIDE_COLUMNS, locals_, templates):
            formula = self.book.render(template, self.name, local)
            cell = ws[f"{col}{r}"]
            cell.value = formula
            cell.style = _style_of(formula, line.key_result)
            cell.number_format = FMT[line.fmt]
            local[line.key] = Ref(self.name, r, col)
        last = SIDE_COLUMNS[min(len(locals_), len(templates), len(SIDE_COLUMNS)) - 1]
        if line.bad:
            flag_bad(ws, f"{SIDE_COLUMNS[0]}{r}:{last}{r}", line.bad)
        self.row += 1
        return Ref(self.name, r, SIDE_COLUMNS[0], last)

    def link(
        self,
        key: str,
        label: str,
        unit: str,
        fmt: str,
        note: str = "",
        key_result: bool = True,
        bad: Sequence[str] = (),
    ) -> Ref:
        """A line that repeats another sheet's line item (Outputs, Cover)."""
        line = Line(f"{self.name}:{key}", label, "={" + key + "}", unit, note, fmt, key_result, bad=tuple(bad))
        return self.line(line)

    def check(
        self, label: str, formula: str, note: str, local: dict[str, Ref | str] | None = None, robust: bool = True
    ) -> Ref:
        """A Checks row: 1 when there is a problem, 0 when OK.

        ``robust`` wraps the test in ``IFERROR(..., 1)``: a check whose figures are error values reports a problem
        instead of showing the error (and spoiling the master check's sum)."""
        ws, r = self.ws, self.row
        self._label(label, "1 = problem", note)
        body = self.book.render(formula, self.name, local)
        ws[f"B{r}"] = f"=IFERROR({body[1:]},1)" if robust else body
        ws[f"B{r}"].style = "Check Cell"
        ws[f"B{r}"].number_format = FMT["check"]
        check_format(ws, f"B{r}")
        self.check_rows.append(r)
        self.row += 1
        return Ref(self.name, r, "B")

    def master(self, label: str = "Master check: 1 if any problem") -> Ref:
        """``=MIN(1,SUM(checks))``: 0 when every check is 0."""
        first, last = self.check_rows[0], self.check_rows[-1]
        line = Line(
            "master_check",
            label,
            f"=MIN(1,SUM(B{first}:B{last}))",
            "1 = problem",
            "0 when every check above is 0 (FAST; ICAEW)",
            "check",
        )
        ref = self.check(line.label, line.formula, line.note, robust=False)
        self.check_rows.pop()
        self.book.master_check = ref
        self.book.refs["master_check"] = ref
        return ref

    # -- printing -------------------------------------------------------------------------------------------------
    def finish(self, last_row: int | None = None, title_rows: bool = True) -> None:
        ws = self.ws
        last = last_row or max(self.row - 1, HEADER_ROWS)
        ws.print_area = f"A1:{self.last_col}{last}"
        if title_rows:
            ws.print_title_rows = f"1:{HEADER_ROWS}"
        page_setup(ws, self.book.title)
        title_cols = f"A:{self.last_col}"
        if self.case_blocks and self.layout == "list":
            # a sheet with a scenario block prints the register (A to F) across the page, then each block's cases
            # (G to J) on pages of their own beside the labels, live values and units, repeated: ten columns on
            # one A4 width would print at 6 pt
            first, end = CASE_COLUMNS[0], CASE_COLUMNS[-1]
            ws.print_area = [f"A1:F{last}"] + [f"{first}{a}:{end}{b}" for a, b in self.case_blocks]
            title_cols = ws.print_title_cols = f"A:{TITLE_COLUMNS[-1]}"
        self._wrap_purpose(title_cols)
        if self.layout == "cases":
            self._wrap_notes(last)

    def _wrap_notes(self, last: int) -> None:
        """The equations in column G, indented clear of the last case's figures and wrapped within the column;
        a row whose note takes more than one line is as tall as its lines (set, so that every program shows the
        whole note), its cells aligned to the top."""
        ws = self.ws
        for r in range(HEADER_ROWS + 1, last + 1):
            cell = ws[f"{self.note_col}{r}"]
            if not isinstance(cell.value, str) or cell.data_type == "f":
                continue
            lines = len(wrap_em(cell.value, NOTE_EM_PER_WIDTH * ws.column_dimensions[self.note_col].width))
            tall = lines > 1 or bool(ws.row_dimensions[r].height)
            cell.alignment = Alignment(
                horizontal="left", indent=1, wrap_text=lines > 1, vertical="top" if tall else None
            )
            if lines > 1:
                self.wrap_row(r, lines)

    def wrap_row(self, row: int, lines: int, cols: Sequence[str] = ()) -> None:
        """Row ``row`` as tall as ``lines`` lines of text (at least), its cells aligned to the top and those in
        ``cols`` wrapped: a height set by hand, since neither LibreOffice nor Excel fits a row to wrapped text
        when it opens a file."""
        ws = self.ws
        height = LINE_HEIGHT * lines + 1.5
        ws.row_dimensions[row].height = max(height, ws.row_dimensions[row].height or 0)
        for i in range(1, column_index_from_string(self.note_col)):
            cell = ws.cell(row, i)
            a = cell.alignment
            cell.alignment = Alignment(
                horizontal=a.horizontal,
                indent=a.indent,
                vertical="top",
                wrap_text=a.wrap_text or cell.column_letter in cols,
            )

    def _wrap_purpose(self, cols: str) -> None:
        """The purpose in row 3, or in rows 3 and 4 when one line would run past what every page prints (the
        columns ``cols``): text runs on over empty cells only as far as the page's edge, and is cut there."""
        first, last = (column_index_from_string(c) for c in cols.split(":"))
        width = sum(self.ws.column_dimensions[get_column_letter(i)].width or 13 for i in range(first, last + 1))
        chars = int(width * PURPOSE_CHARS_PER_WIDTH)
        lines = balanced_lines(self.purpose, chars)
        if len(lines) > HEADER_ROWS - 3:
            raise ValueError(f"{self.name}: the purpose needs {len(lines)} lines of {chars} characters; shorten it")
        for i, text in enumerate(lines):
            put_text(self.ws[f"A{3 + i}"], text, "Explanatory Text")


def _style_of(formula: str, key_result: bool) -> str:
    if key_result:
        return "Output"
    body = formula.lstrip("=")
    cell = r"\$?[A-Z]{1,3}\$?\d+"
    if re.fullmatch(rf"(?:'[^']+'|[A-Za-z_][\w.]*)!{cell}(?::{cell})?", body) or re.fullmatch(r"[A-Za-z_]\w*", body):
        return "Link"  # a pure link to another sheet's cell or to an input's name
    return "Formula"


def page_setup(ws: Worksheet, title: str) -> None:
    """Landscape A4, fitting the page width (and, for a long sheet, :data:`PRINT_PAGES_TALL`'s pages), with the file
    and sheet in the footer."""
    ws.page_setup.orientation = "landscape"
    ws.page_setup.paperSize = ws.PAPERSIZE_A4
    ws.page_setup.fitToWidth = 1
    ws.page_setup.fitToHeight = PRINT_PAGES_TALL.get(ws.title, 0)
    ws.sheet_properties.pageSetUpPr.fitToPage = True
    ws.print_options.gridLines = False
    ws.page_margins.left = ws.page_margins.right = 0.4
    ws.page_margins.top = ws.page_margins.bottom = 0.6
    ws.page_margins.header = ws.page_margins.footer = 0.3  # clear of the body: a footer at 0.5 in overlaps it
    ws.oddFooter.left.text = f"{title}: &A"
    ws.oddFooter.right.text = "Page &P of &N"


def plain_rows(ws: Worksheet, rows: Iterable[Sequence[Any]], start: int, styles: Sequence[str]) -> int:
    """Write rows of text and numbers (no formulas) from ``start``; returns the next free row."""
    r = start
    for values in rows:
        for i, value in enumerate(values):
            if value is None:
                continue
            cell = ws.cell(row=r, column=i + 1)
            cell.style = styles[min(i, len(styles) - 1)]
            if isinstance(value, str):
                put_text(cell, value)
            else:
                cell.value = value
        r += 1
    return r
