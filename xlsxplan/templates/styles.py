"""How both templates look: fonts, named styles (WORKBOOKS.md's colours), number formats, tab colours, widths.

Builders never style a cell by hand: they name one of :data:`STYLE_NAMES`, registered once per workbook at the
workbook's font size.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from openpyxl.styles import Alignment, Border, Font, NamedStyle, PatternFill, Protection, Side

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

PRINT_PAGES_TALL = {
    "Cover": 2,  # the plan in brief on one page, the legend and limitations on the next
    "Guide": 1,
    "Inputs": 2,
    "Calculations": 3,
    "Timeline": 1,
    "Outputs": 3,
    "Scenarios": 1,
    "Portfolio": 2,
    "Options": 1,  # each block of columns on a page: the serving plan's hundred options as dense as Checks prints
    "Calibration": 1,
    "Checks": 3,
    "Lists": 1,
    "Catalog": 3,
}
"""Pages tall each print range of a long sheet shrinks to (fit to width and to this height; a sheet not named here
fits the width only): the printed serving plan's budget is 40 pages and the training plan's 25, measured in
LibreOffice by tests/templates/test_print.py. The story sheets print at 60% of their size or more; the reference
sheets (Options, Catalog, Workings), printed last, as a compact appendix to read on screen or with a magnifier: the
Options table's hundred rows a page for each of its three blocks of columns, as the Checks sheet prints."""
WORKINGS_ROWS_PER_PAGE = 300
"""Rows of the Workings sheet a printed page holds (its pages tall: its rows over this, at least one)."""

ALLOWED_CONSTANTS = frozenset({0.0, 1.0, 12.0, 24.0, 1000.0, 1024.0, 3600.0, 86400.0, 1e9, 1e12, 1e15})
"""Numbers a formula may contain: zero and one, and unit conversions (FAST 3.04: months in a year, hours in a day,
seconds in an hour or a day, decimal and binary prefixes). Everything else is an input."""

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
    "billions": "#,##0.000,,,",  # a count shown in billions (the unit says so): 3.927 for 3,927,000,000
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
HEADING_RULE = Side(style="medium", color="A2B8E1")
GOOD = ("C6EFCE", "006100")
BAD = ("FFC7CE", "9C0006")


def _font(**kw: Any) -> Font:
    return Font(name=FONT_NAME, size=kw.pop("size", FONT_SIZE), **kw)


def named_styles() -> list[NamedStyle]:
    """The named styles (Excel's built-in definitions from WORKBOOKS.md, at the workbook's font size)."""
    box = Border(left=_THIN_GREY, right=_THIN_GREY, top=_THIN_GREY, bottom=_THIN_GREY)
    return [
        NamedStyle("Title", builtinId=15, font=_font(size=16, bold=True, color="1F3864")),
        NamedStyle(
            "Heading 2",
            builtinId=17,
            font=_font(size=12, bold=True, color="1F3864"),
            border=Border(bottom=HEADING_RULE),
        ),
        NamedStyle(
            "Column Heading",
            font=_font(bold=True, color="FFFFFF"),
            fill=PatternFill("solid", fgColor="44546A"),
            alignment=Alignment(vertical="center"),
        ),
        NamedStyle(
            "Input",
            builtinId=20,
            font=_font(color="3F3F76"),
            fill=PatternFill("solid", fgColor="FFCC99"),
            border=box,
            protection=Protection(locked=False),
        ),
        NamedStyle(
            "Output",
            builtinId=21,
            font=_font(bold=True, color="3F3F3F"),
            fill=PatternFill("solid", fgColor="F2F2F2"),
            border=Border(left=_THIN_DARK, right=_THIN_DARK, top=_THIN_DARK, bottom=_THIN_DARK),
            alignment=Alignment(horizontal="right"),
        ),
        NamedStyle("Formula", font=_font(color="000000"), alignment=Alignment(horizontal="right")),
        NamedStyle("Link", font=_font(color="008000"), alignment=Alignment(horizontal="right")),
        NamedStyle(
            "Check Cell",
            builtinId=23,
            font=_font(bold=True, color="FFFFFF"),
            fill=PatternFill("solid", fgColor="A5A5A5"),
            border=Border(left=_DOUBLE_DARK, right=_DOUBLE_DARK, top=_DOUBLE_DARK, bottom=_DOUBLE_DARK),
            alignment=Alignment(horizontal="center"),
        ),
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
        ),
        NamedStyle("Explanatory Text", builtinId=53, font=_font(italic=True, color="7F7F7F")),
        NamedStyle("Good", builtinId=26, font=_font(color=GOOD[1]), fill=PatternFill("solid", fgColor=GOOD[0])),
        NamedStyle("Bad", builtinId=27, font=_font(color=BAD[1]), fill=PatternFill("solid", fgColor=BAD[0])),
        NamedStyle("Label", font=_font()),
        NamedStyle("Unit", font=_font(color="595959"), alignment=Alignment(horizontal="left", indent=1)),
        # the assumptions register beside an input (Source, As-of date, Comment): the Input style's font, no fill,
        # unlocked, so a user restates each source and date where the sheet asks
        NamedStyle(
            "Register",
            font=_font(color="3F3F76"),
            alignment=Alignment(horizontal="left"),
            protection=Protection(locked=False),
        ),
        NamedStyle("Register Comment", font=_font(italic=True, color="3F3F76"), protection=Protection(locked=False)),
    ]


STYLE_NAMES = tuple(s.name for s in named_styles())


TITLE_COLUMNS = ("A", "B", "C")
"""Label, Value and Unit: the columns repeated beside the cases of a scenario block on their own printed pages."""
