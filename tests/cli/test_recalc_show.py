"""`xlsxplan recalc --show` prints each value as the cell's number format shows it in Excel, dates as dates.

The expected texts are Excel's, as Microsoft documents them: "Basic number format codes" and "Number format codes"
(Office support: ``#.000`` shows 8.9 as 8.900, ``#,###`` 12000 as 12,000, ``0.0,,`` 12200000 as 12.2, ``# ?/?``
5.25 as 5 1/4), "Review guidelines for customizing a number format" (``0.00%``, ``0.00E+00``, currency), and "Format
numbers as dates or times" with "DATE function" (serial number 39448 is 1 January 2008; ``mmm`` is Jan to Dec).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import openpyxl
import pytest

from tests.helpers import REPO
from xlsxplan.cli import main
from xlsxplan.headless.numfmt import format_value, general, is_date_format

ROOT = REPO

# (value, format, what Excel shows): Microsoft's examples first, then the formats the templates use
DOCUMENTED = [
    (1234.59, "####.#", "1234.6"),
    (8.9, "#.000", "8.900"),
    (0.631, "0.#", "0.6"),
    (12, "#.0#", "12.0"),
    (1234.568, "#.0#", "1234.57"),
    (12000, "#,###", "12,000"),
    (12000, "#,", "12"),
    (12200000, "0.0,,", "12.2"),
    (5.25, "# ?/?", "5 1/4"),
    (0.01, "0.00%", "1.00%"),
    (0.1, "0.00%", "10.00%"),
    (1.234, "0.00%", "123.40%"),
    (-5.678, "0.00%", "-567.80%"),
    (0.01, "0.00E+00", "1.00E-02"),
    (1234, "0.00E+00", "1.23E+03"),
    (-5678, "0.00E+00", "-5.68E+03"),
    (0.01, "#,##0.00", "0.01"),
    (1234, "#,##0.00", "1,234.00"),
    (-5678, "#,##0.00", "-5,678.00"),
    (1234, "\\$#,##0.00_);[Red](\\$#,##0.00)", "$1,234.00 "),
    (-5678, "\\$#,##0.00_);[Red](\\$#,##0.00)", "($5,678.00)"),
]

BRIEF = [  # the formats the command line's users meet most: one of each
    (94, "0", "94"),
    (94.4, "0", "94"),
    (94.5, "0", "95"),  # half away from zero, as Excel rounds
    (-2.5, "0", "-3"),
    (46.67544852458768, "0.0", "46.7"),
    (0.05, "0.0", "0.1"),
    (1234567.891, "#,##0", "1,234,568"),
    (0, "#,##0", "0"),
    (0.95, "0%", "95%"),
    (0.0125, "0%", "1%"),
    (0.12345, "0.00%", "12.35%"),
    (1.0396, '"$"#,##0.00', "$1.04"),
    (1234567.5, "$#,##0.00", "$1,234,567.50"),
    (-3.5, "$#,##0.00", "-$3.50"),
    (39448, "yyyy-mm-dd", "2008-01-01"),
    (46327, "yyyy-mm-dd", "2026-11-01"),
    (46327, "mmm yyyy", "Nov 2026"),
    (39448.75, "mmm yyyy", "Jan 2008"),
    (39448, "dddd d mmmm yyyy", "Tuesday 1 January 2008"),
    (0.75, "h:mm AM/PM", "6:00 PM"),
    (1.5, "[h]:mm:ss", "36:00:00"),
    (61, "yyyy-mm-dd", "1900-03-01"),
    (60, "yyyy-mm-dd", "1900-02-29"),  # the day Lotus 1-2-3 counted, and Excel keeps
    (0, '"ERROR";"ERROR";"OK"', "OK"),  # a template's check cell
    (1, '"ERROR";"ERROR";"OK"', "ERROR"),
    (7.6, '#,##0.0###;-#,##0.0###;"preset"', "7.6"),  # an override
    (0, '#,##0.0###;-#,##0.0###;"preset"', "preset"),
    (-989.25, '#,##0.0###;-#,##0.0###;"preset"', "-989.25"),
    (3927000000, "#,##0.000,,,", "3.927"),  # a count shown in billions
    (12345, "##0.0E+0", "12.3E+3"),
    (0.7304347826086957, "General", "0.730434783"),  # General: at most 11 characters in a standard-width cell
    (63.29041223180357, "General", "63.29041223"),
    (200000, "General", "200000"),
    (123456789012, "General", "1.23457E+11"),
    (0.00001, "General", "1E-05"),
    (-0.5, "General", "-0.5"),
]


@pytest.mark.parametrize(("value", "code", "shown"), DOCUMENTED + BRIEF)
def test_a_number_prints_as_its_format_shows_it(value, code, shown):
    assert format_value(value, code) == shown


def test_text_bools_and_empty_cells():
    assert format_value("fits", "#,##0") == "fits"  # a number format leaves text alone
    assert format_value("abc", '0;-0;0;"["@"]"') == "[abc]"  # the text section
    assert format_value(True, "0.00") == "TRUE"
    assert format_value(None, "0.00") == ""
    assert format_value(42, "@") == "42"  # the text format shows a number as General


def test_the_1904_date_system_counts_from_1904():
    assert format_value(0, "yyyy-mm-dd", date1904=True) == "1904-01-01"
    assert format_value(39448 - 1462, "yyyy-mm-dd", date1904=True) == "2008-01-01"


def test_dates_are_told_from_numbers():
    assert is_date_format("yyyy-mm-dd") and is_date_format("mmm yyyy") and is_date_format("h:mm")
    assert not is_date_format("0.00E+00") and not is_date_format('"ERROR";"ERROR";"OK"')
    assert not is_date_format("General")


def test_general_never_prints_more_than_eleven_characters():
    for x in (1 / 3, 2 / 3 * 1e10, 123456.7891234, 9.99999999999, 1e-4 / 3, 12345678901.5):
        assert len(general(x)) <= 11, x


def _book(tmp_path: Path) -> Path:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Plan"
    rows = [
        (dt.datetime(2026, 11, 1), "yyyy-mm-dd"),
        ("=B2", "mmm yyyy"),
        (0.9512, "0.0%"),
        (1234567.891, "#,##0"),
        ("=B5/7", '"$"#,##0.00'),
        ("=1/3", "General"),
        ("=B3-B2", "0"),
    ]
    for i, (value, fmt) in enumerate(rows, start=2):
        ws.cell(i, 2, value).number_format = fmt
    path = tmp_path / "formats.xlsx"
    wb.save(path)
    return path


def test_show_prints_dates_as_dates_and_numbers_as_formatted(tmp_path, capsys):
    code = main(["recalc", str(_book(tmp_path)), "-o", str(tmp_path / "o.xlsx"), "-q", "--show", "Plan!B2:B8"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines() == [
        "Plan!B2  2026-11-01",
        "Plan!B3  Nov 2026",
        "Plan!B4  95.1%",
        "Plan!B5  1,234,568",
        "Plan!B6  $176,366.84",
        "Plan!B7  0.333333333",
        "Plan!B8  0",
    ]


def test_json_keeps_the_value_and_adds_the_text_shown(tmp_path, capsys):
    code = main(["recalc", str(_book(tmp_path)), "-o", str(tmp_path / "o.xlsx"), "--json", "--show", "Plan!B4"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert report["shown"] == [{"ref": "Plan!B4", "cell": "Plan!B4", "value": 0.9512, "text": "95.1%"}]


@pytest.mark.slow
def test_the_serving_templates_figures_print_as_the_sheet_shows_them(tmp_path, capsys):
    template = ROOT / "workbooks" / "serving_plan.xlsx"
    wb = openpyxl.load_workbook(template)
    ws = wb["Inputs"]
    cell = {name: wb.defined_names[name].attr_text.replace("$", "") for name in ("Requests_Per_Day", "Price_Date")}
    args = ["recalc", str(template), "-o", str(tmp_path / "o.xlsx"), "-q", "--show", "Requests_Per_Day"]
    code = main([*args, "--show", "Price_Date", "--show", "Inputs!B2"])
    assert code == 0
    requests = ws[cell["Requests_Per_Day"].split("!")[1]].value
    price_date = ws[cell["Price_Date"].split("!")[1]].value
    width = max(len(c) for c in cell.values())
    assert capsys.readouterr().out.splitlines() == [
        f"{cell['Requests_Per_Day']:<{width}}  {requests:,}  (Requests_Per_Day)",
        f"{cell['Price_Date']:<{width}}  {price_date:%Y-%m-%d}  (Price_Date)",
        f"{'Inputs!B2':<{width}}  OK",  # the master check, as every sheet's second row shows it
    ]
