"""What both templates share: named styles, the sheet layout, rows of inputs and calculations, checks, printing.

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

Builders (:mod:`.serving`, :mod:`.training`) only describe rows; this module owns how they look.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from openpyxl import Workbook
from openpyxl.formatting.rule import CellIsRule
from openpyxl.styles import Alignment, Border, Font, NamedStyle, PatternFill, Protection, Side
from openpyxl.styles.differential import DifferentialStyle
from openpyxl.utils import column_index_from_string, get_column_letter
from openpyxl.workbook.defined_name import DefinedName
from openpyxl.workbook.properties import CalcProperties
from openpyxl.worksheet.datavalidation import DataValidation
from openpyxl.worksheet.pagebreak import Break
from openpyxl.worksheet.worksheet import Worksheet

from .. import __version__
from ..domains import Domain
from ..safety import set_text

__all__ = [
    "Book",
    "Result",
    "Sheet",
    "Line",
    "FMT",
    "TEMPLATE_DATE",
    "ALLOWED_CONSTANTS",
    "name_from_label",
    "CASE_COLUMNS",
    "usual_checks",
    "error_check",
    "note_block",
]

FONT_NAME = "Calibri"
FONT_SIZE = 10

TEMPLATE_DATE = _dt.datetime(2026, 11, 1)
"""The templates' as-of date: example prices and the catalog are stated as of this day. Fixed, so that building
twice writes the same file."""

GENERATOR = "xlsxplan build"

# Label | Value | Unit | Source | As-of date | Comment, then the cases of a scenario block.
WIDTHS = {"A": 40, "B": 15, "C": 13, "D": 40, "E": 11, "F": 50}
CASE_COLUMNS = ("G", "H", "I", "J")
CASE_WIDTH = 19
# A side-by-side sheet: Label | Unit | Case 1 .. Case 4 | Equation and source.
SIDE_COLUMNS = ("C", "D", "E", "F")
NOTE_WIDTH = 56
CASE_WIDTH_SIDE = 17
CASE_WIDTHS = {"A": 40, "B": 13, **dict.fromkeys(SIDE_COLUMNS, CASE_WIDTH_SIDE), "G": NOTE_WIDTH}
"""A side-by-side sheet's equations wrap in a column of 56 widths, two lines at most: with 75 widths, and the cases
at 19, the seven columns printed at 60% of their size on an A4 width; now at about 80%, as the list sheets."""
NOTE_EM_PER_WIDTH = 0.675
"""Printed width of a note's line, in ems of its 10-point text, per character width of its column: lines of 37.6
ems fitted 56 widths in LibreOffice's render and lines of 38.8 did not, in DejaVu Sans, the font it falls back on
for Calibri; Calibri's letters are narrower, so a row sized by this is never too short in Excel."""
LINE_HEIGHT = 13.0
"""Points per line of 10-point text in a row that holds a wrapped note."""
HEADER_ROWS = 5
"""Rows 1 to 5 hold the title, master check, purpose and column headings on every list sheet."""

ALLOWED_CONSTANTS = frozenset({0.0, 1.0, 24.0, 1000.0, 1024.0, 3600.0, 86400.0, 1e9, 1e12, 1e15})
"""Numbers a formula may contain: zero and one, and unit conversions (FAST 3.04). Everything else is an input."""

# Number formats: the unit sits in its own column, so formats only group digits and fix decimals.
FMT = {
    "int": "#,##0",
    "dec1": "#,##0.0",
    "dec2": "#,##0.00",
    "dec3": "#,##0.000",
    "small": "0.0####",
    "usd": '"$"#,##0.00',
    "usd0": '"$"#,##0',
    "pct": "0%",
    "pct1": "0.0%",
    "sci": "0.00E+00",
    "billions": '#,##0.000,,,',  # a count shown in billions (the unit says so): 3.927 for 3,927,000,000
    "date": "yyyy-mm-dd",
    "text": "@",
    "general": "General",
    # an override left empty shows as "preset": the active case takes the catalog figure
    "override": '#,##0.0###;-#,##0.0###;"preset"',
    "override_int": '#,##0;-#,##0;"preset"',
    "check": '"ERROR";"ERROR";"OK"',
}

# Tab colours by kind of sheet.
TAB = {
    "cover": "1F3864",
    "guide": "1F3864",
    "inputs": "FFCC99",
    "calc": "595959",
    "outputs": "5B9BD5",
    "scenarios": "5B9BD5",
    "calibration": "70AD47",
    "checks": "A5A5A5",
    "log": "1F3864",
    "lists": "BFBFBF",
}

_THIN_GREY = Side(style="thin", color="7F7F7F")
_THIN_DARK = Side(style="thin", color="3F3F3F")
_DOUBLE_DARK = Side(style="double", color="3F3F3F")
_HEADING_RULE = Side(style="medium", color="A2B8E1")
_GOOD = ("C6EFCE", "006100")
_BAD = ("FFC7CE", "9C0006")


def _font(**kw: Any) -> Font:
    return Font(name=FONT_NAME, size=kw.pop("size", FONT_SIZE), **kw)


def _styles() -> list[NamedStyle]:
    """The named styles (Excel's built-in definitions from WORKBOOKS.md, at the workbook's font size)."""
    box = Border(left=_THIN_GREY, right=_THIN_GREY, top=_THIN_GREY, bottom=_THIN_GREY)
    return [
        NamedStyle("Title", builtinId=15, font=_font(size=16, bold=True, color="1F3864")),
        NamedStyle(
            "Heading 2",
            builtinId=17,
            font=_font(size=12, bold=True, color="1F3864"),
            border=Border(bottom=_HEADING_RULE),
        ),  # fmt: skip
        NamedStyle(
            "Column Heading",
            font=_font(bold=True, color="FFFFFF"),
            fill=PatternFill("solid", fgColor="44546A"),
            alignment=Alignment(vertical="center"),
        ),  # fmt: skip
        NamedStyle(
            "Input",
            builtinId=20,
            font=_font(color="3F3F76"),
            fill=PatternFill("solid", fgColor="FFCC99"),
            border=box,
            protection=Protection(locked=False),
        ),  # fmt: skip
        NamedStyle(
            "Output",
            builtinId=21,
            font=_font(bold=True, color="3F3F3F"),
            fill=PatternFill("solid", fgColor="F2F2F2"),
            border=Border(left=_THIN_DARK, right=_THIN_DARK, top=_THIN_DARK, bottom=_THIN_DARK),
            alignment=Alignment(horizontal="right"),
        ),  # fmt: skip
        NamedStyle("Formula", font=_font(color="000000"), alignment=Alignment(horizontal="right")),
        NamedStyle("Link", font=_font(color="008000"), alignment=Alignment(horizontal="right")),
        NamedStyle(
            "Check Cell",
            builtinId=23,
            font=_font(bold=True, color="FFFFFF"),
            fill=PatternFill("solid", fgColor="A5A5A5"),
            border=Border(left=_DOUBLE_DARK, right=_DOUBLE_DARK, top=_DOUBLE_DARK, bottom=_DOUBLE_DARK),
            alignment=Alignment(horizontal="center"),
        ),  # fmt: skip
        NamedStyle(
            "Note",
            builtinId=10,
            font=_font(),
            fill=PatternFill("solid", fgColor="FFFFCC"),
            border=Border(
                left=Side("thin", "B2B2B2"),
                right=Side("thin", "B2B2B2"),
                top=Side("thin", "B2B2B2"),
                bottom=Side("thin", "B2B2B2"),
            ),
        ),  # fmt: skip
        NamedStyle("Explanatory Text", builtinId=53, font=_font(italic=True, color="7F7F7F")),
        NamedStyle("Good", builtinId=26, font=_font(color=_GOOD[1]), fill=PatternFill("solid", fgColor=_GOOD[0])),
        NamedStyle("Bad", builtinId=27, font=_font(color=_BAD[1]), fill=PatternFill("solid", fgColor=_BAD[0])),
        NamedStyle("Label", font=_font()),
        NamedStyle("Unit", font=_font(color="595959"), alignment=Alignment(horizontal="left", indent=1)),
        # the assumptions register beside an input (Source, As-of date, Comment): the Input style's font, no fill,
        # unlocked, so a user restates each source and date where the sheet asks
        NamedStyle("Register", font=_font(color="3F3F76"), alignment=Alignment(horizontal="left"),
                   protection=Protection(locked=False)),
        NamedStyle("Register Comment", font=_font(italic=True, color="3F3F76"), protection=Protection(locked=False)),
    ]


STYLE_NAMES = tuple(s.name for s in _styles())

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
        for style in _styles():
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

    # -- finishing ------------------------------------------------------------------------------------------------
    def finish(self) -> Workbook:
        for ws in self.wb.worksheets:
            ws.protection.sheet = True
            ws.protection.formatColumns = False  # people may widen a column without unprotecting
            ws.protection.formatRows = False
        return self.wb


def quote_sheetname(name: str) -> str:
    """A sheet name as a formula writes it: quoted only when it holds anything but letters, digits, ``_``, ``.``."""
    return name if re.fullmatch(r"[A-Za-z_][\w.]*", name) else "'" + name.replace("'", "''") + "'"


def put_text(cell: Any, text: str, style: str | None = None) -> Any:
    """Write ``text`` as text, never as a formula, whatever it starts with, in the named ``style``.

    The text goes through :func:`xlsxplan.safety.set_text`, which also sets the quote prefix on text that Excel
    would read as a formula once edited (``=``, ``+``, ``-``, ``@``). Setting a named style afterwards resets the
    quote prefix, so the style is applied first.
    """
    if style is not None:
        cell.style = style
    return set_text(cell, text)


def _check_format(ws: Worksheet, ref: str) -> None:
    """Good when 0, Bad when 1: the Check Cell style alone does not colour the result."""
    good = DifferentialStyle(font=Font(color=_GOOD[1], bold=True), fill=PatternFill(bgColor=_GOOD[0]))
    bad = DifferentialStyle(font=Font(color=_BAD[1], bold=True), fill=PatternFill(bgColor=_BAD[0]))
    ws.conditional_formatting.add(ref, CellIsRule(operator="equal", formula=["0"], font=good.font, fill=good.fill))
    ws.conditional_formatting.add(ref, CellIsRule(operator="greaterThan", formula=["0"], font=bad.font, fill=bad.fill))


def flag_bad(ws: Worksheet, ref: str, values: Sequence[str]) -> None:
    """Show these text results in Excel's Bad colours: a flag a reader cannot miss."""
    bad = DifferentialStyle(font=Font(color=_BAD[1], bold=True), fill=PatternFill(bgColor=_BAD[0]))
    for value in values:
        rule = CellIsRule(operator="equal", formula=[f'"{value}"'], font=bad.font, fill=bad.fill)
        ws.conditional_formatting.add(ref, rule)


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
        dv = DataValidation(type="whole", operator="between", formula1=_num(math.floor(low) + 1), formula2=_num(high),
                            allow_blank=True)  # fmt: skip
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
            cell.border = Border(bottom=_HEADING_RULE)  # the heading's rule runs on under its note
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
        _check_format(ws, f"B{r}")
        self.check_rows.append(r)
        self.row += 1
        return Ref(self.name, r, "B")

    def master(self, label: str = "Master check: 1 if any problem") -> Ref:
        """``=MIN(1,SUM(checks))``: 0 when every check is 0."""
        first, last = self.check_rows[0], self.check_rows[-1]
        line = Line("master_check", label, f"=MIN(1,SUM(B{first}:B{last}))", "1 = problem",
                    "0 when every check above is 0 (FAST; ICAEW)", "check")  # fmt: skip
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
            cell.alignment = Alignment(horizontal="left", indent=1, wrap_text=lines > 1,
                                       vertical="top" if tall else None)  # fmt: skip
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
            cell.alignment = Alignment(horizontal=a.horizontal, indent=a.indent, vertical="top",
                                       wrap_text=a.wrap_text or cell.column_letter in cols)  # fmt: skip

    def _wrap_purpose(self, cols: str) -> None:
        """The purpose in row 3, or in rows 3 and 4 when one line would run past what every page prints (the
        columns ``cols``): text runs on over empty cells only as far as the page's edge, and is cut there."""
        first, last = (column_index_from_string(c) for c in cols.split(":"))
        width = sum(self.ws.column_dimensions[get_column_letter(i)].width or 13 for i in range(first, last + 1))
        chars = int(width * PURPOSE_CHARS_PER_WIDTH)
        lines = _balanced_lines(self.purpose, chars)
        if len(lines) > HEADER_ROWS - 3:
            raise ValueError(f"{self.name}: the purpose needs {len(lines)} lines of {chars} characters; shorten it")
        for i, text in enumerate(lines):
            put_text(self.ws[f"A{3 + i}"], text, "Explanatory Text")


TITLE_COLUMNS = ("A", "B", "C")
"""Label, Value and Unit: the columns repeated beside the cases of a scenario block on their own printed pages."""

PURPOSE_CHARS_PER_WIDTH = 1.15
"""Characters of the purpose's italic 10-point text per character width of a column, with some to spare: an
Inputs page cut "... the shipped values are exa" after 75 characters in 55 widths (1.36)."""


_ADVANCE = dict(zip(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,:;()\"'/_-\u00a7^+=*%$![]&<>",
    (1255, 1300, 1126, 1300, 1260, 721, 1300, 1298, 569, 569, 1186, 569, 1995, 1298, 1253, 1300, 1300, 842, 1067, 803,
     1298, 1212, 1675, 1212, 1212, 1075, 1401, 1405, 1430, 1577, 1294, 1178, 1587, 1540, 604, 604, 1343, 1141, 1767,
     1532, 1612, 1235, 1612, 1423, 1300, 1251, 1499, 1401, 2025, 1403, 1251, 1403, *(1303,) * 10, 651, 651, 651, 690,
     690, 799, 799, 940, 563, 690, 1024, 739, 1024, 1716, 1716, 1716, 1024, 1946, 1303, 821, 799, 799, 1595, 1716,
     1716),
))  # fmt: skip
"""Advance widths of DejaVu Sans, in 1/2048 em: the font LibreOffice prints Calibri with where Calibri is missing,
wider than Calibri, so text that fits in it fits in Excel too."""


def text_em(text: str) -> float:
    """The printed width of ``text`` in ems of its font (DejaVu Sans's advances; an unknown letter as a digit)."""
    return sum(_ADVANCE.get(c, 1303) for c in text) / 2048


def wrap_em(text: str, em: float) -> list[str]:
    """``text`` broken at spaces into lines no wider than ``em`` ems (a longer word keeps a line of its own)."""
    lines: list[str] = []
    for word in text.split():
        if lines and text_em(lines[-1] + " " + word) <= em:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


def _balanced_lines(text: str, chars: int) -> list[str]:
    """``text`` in as few lines of at most ``chars`` characters as it needs, of about the same length."""
    import textwrap

    n = len(textwrap.wrap(text, chars))
    width = -(-len(text) // n)
    while len(lines := textwrap.wrap(text, width)) > n:
        width += 1
    return lines


def _style_of(formula: str, key_result: bool) -> str:
    if key_result:
        return "Output"
    body = formula.lstrip("=")
    cell = r"\$?[A-Z]{1,3}\$?\d+"
    if re.fullmatch(rf"(?:'[^']+'|[A-Za-z_][\w.]*)!{cell}(?::{cell})?", body) or re.fullmatch(r"[A-Za-z_]\w*", body):
        return "Link"  # a pure link to another sheet's cell or to an input's name
    return "Formula"


def page_setup(ws: Worksheet, title: str) -> None:
    """Landscape A4, fitting the page width, with the file and sheet in the footer."""
    ws.page_setup.orientation = "landscape"
    ws.page_setup.paperSize = ws.PAPERSIZE_A4
    ws.page_setup.fitToWidth = 1
    ws.page_setup.fitToHeight = 0
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


# -- the sheets both templates share -----------------------------------------------------------------------------
LINE_CHARS = 150
"""Characters per printed line of running text on Cover and Guide (columns A to F)."""


_NBSP = "\u00a0"
_GLUED = re.compile(r"\b(?:seed|Table|section|notes?) (?=\d)|\d (?=§)|\bet (?=al\.)")
"""Spaces a printed line must not break at: "seed 000", "000 §4", "et al.", "Table 3"."""


def paragraph(ws: Worksheet, row: int, text: str, style: str = "Label", col: str = "A", indent: str = "") -> int:
    """Write ``text`` wrapped into lines of :data:`LINE_CHARS`, one cell per row; returns the next free row.

    Lines never break inside a reference such as "seed 000 §4" or "et al." (:data:`_GLUED`)."""
    import textwrap

    glued = _GLUED.sub(lambda m: m.group(0)[:-1] + _NBSP, text)
    wrapped = textwrap.wrap(glued, LINE_CHARS - len(indent), subsequent_indent=" " * len(indent)) or [""]
    for i, line in enumerate(wrapped):
        put_text(ws[f"{col}{row}"], (indent if i == 0 else "") + line.replace(_NBSP, " "), style)
        row += 1
    return row


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
            cell.border = Border(left=side if i == 0 else None, right=side if i == len(cols) - 1 else None,
                                 top=side if r == first else None, bottom=side if r == last else None)  # fmt: skip


def lists_sheet(book: Book, usual: Sequence[tuple[str, str, str, Domain]] = ()) -> dict[str, str]:
    """The Lists sheet: the catalog's models and accelerators and the precision names, for the dropdowns, and the
    usual ranges of the inputs that have one.

    Returns the data-validation source of each list. The names are written as text, as the catalog holds them
    when the file is built; =MODELS() and =GPUS() list the current catalog once the add-in is installed.

    ``usual`` holds ``(key, label, unit, domain)`` for inputs whose argument domain has a typical range
    (:attr:`xlsxplan.domains.Domain.typical`: legal values outside it are suspicious, such as a bandwidth of 3,350
    where TB/s is meant). Each becomes a row of low and high bounds below the lists, and ``book.usual[key]`` the
    label and the two cells, for a check that compares the input with them by formula.
    """
    from .. import calibration, catalog, precision
    from ..errors import NotAvailableError

    sh = book.sheet("Lists", "The dropdowns' lists: the catalog's presets and the precision names when this file "
                    "was built (MODELS() and GPUS() list the current catalog).")  # fmt: skip
    ws = sh.ws
    columns = {"model": ("A", "Models (MODEL_SPEC)", catalog.model_names()),
               "gpu": ("C", "Accelerators (GPU_SPEC)", catalog.gpu_names()),
               "precision": ("E", "Precisions (BYTES_PER_PARAM)", precision.format_names())}  # fmt: skip
    # A as on every sheet (its row 2 holds the master check's label); C and E hold names, B and D the usual
    # ranges' units and upper bounds
    for col, width in (("A", WIDTHS["A"]), ("B", 15), ("C", 30), ("D", 15), ("E", 30)):
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
            if domain.typical is None:
                raise ValueError(f"{label}: its domain has no typical range")
            r = sh.row
            put_text(ws[f"A{r}"], label, "Label")
            put_text(ws[f"B{r}"], unit, "Unit")
            for col, value in zip("CD", domain.typical):
                ws[f"{col}{r}"] = value
                ws[f"{col}{r}"].style = "Label"
                ws[f"{col}{r}"].number_format = FMT["general"]
            book.usual[key] = (label, f"Lists!$C${r}", f"Lists!$D${r}")
            sh.row += 1
        sh.text("Values outside these ranges are legal but rarely meant: the Checks sheet flags them (a unit slip?).")
    sh.finish()
    return out


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
    _check_format(ws, f"B{master_row}")
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
    page_setup(ws, book.title)


def conf_sheet(book: Book) -> Worksheet:
    """The ``xlwings.conf`` sheet (:func:`xlsxplan.xlwings_conf.add_conf_sheet`), printed like the rest."""
    from ..xlwings_conf import add_conf_sheet

    ws = add_conf_sheet(book.wb)
    ws.print_area = f"A1:B{ws.max_row}"
    page_setup(ws, book.title)
    return ws


def version_log(book: Book) -> None:
    """The Version log: one row per release of the template."""
    sh = book.sheet("Version log", "What changed in this template, newest first.", ["Version", "Date", "By",
                                                                                       "Change", "", ""])  # fmt: skip
    ws = sh.ws
    put_text(ws[f"A{sh.row}"], __version__, "Label")
    ws[f"B{sh.row}"] = TEMPLATE_DATE
    ws[f"B{sh.row}"].number_format = FMT["date"]
    put_text(ws[f"C{sh.row}"], "xlsxplan", "Label")
    put_text(ws[f"D{sh.row}"], "First release: generated by `xlsxplan build` from the catalog and the seeds' "
             "examples", "Label")  # fmt: skip
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
        if f"{key}@0" in book.refs:  # a row of the scenario block: all four cases
            first, last = book.ref(f"{key}@0"), book.ref(f"{key}@{len(CASE_COLUMNS) - 1}")
            span = f"Inputs!${first.col}${first.row}:${last.col}${last.row}"
        else:
            ref = book.ref(key)
            span = f"{quote_sheetname(ref.sheet)}!${ref.col}${ref.row}"
        sh.check(f"{label} outside its usual range",
                 f'=IF(COUNTIF({span},"<"&{low})+COUNTIF({span},">"&{high})>0,1,0)',
                 f"Usually {lo} to {hi} {unit} (Lists; xlsxplan.domains); outside: a unit slip?")  # fmt: skip


def error_check(sh: Sheet, name: str, span: str, what: str = "") -> Ref:
    """A Checks row that is 1 when ``span`` holds an error value or an error message as text.

    The headless engine and xlwings Lite leave a failed function's error value in its cell, which ISERROR sees;
    classic xlwings cannot (it writes the error value and the reason as text, ``#NUM! batch must be ...``), and
    ISERROR, IFERROR and SUM all pass text by. ``COUNTIF(span,"#*")`` counts those texts: no other text in the
    templates starts with ``#``."""
    return sh.check(f"Error values on {name}", f'=IF(SUMPRODUCT(1*ISERROR({span}))+COUNTIF({span},"#*")>0,1,0)',
                    what or f"Any error value on {name}, or an error message as text (classic xlwings)")


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
    _check_format(ws, "B2")
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
