"""LibreOffice cross-check: an independent engine agrees with xlsxplan on every native-only cell.

LibreOffice (Debian's 7.4, installed by .ci/run) converts workbooks headlessly. Two checks:

1. It recalculates the original workbook itself (openpyxl wrote no cached values, so it must) and its results
   equal xlsxplan's for every cell that uses only native functions.
2. It opens the file xlsxplan wrote (cached values, notes on error cells) and shows the same values there.

Skipped, not failed, where ``soffice`` is not installed.
"""

from __future__ import annotations

import openpyxl
import pytest

from tests.helpers.books import native_book
from tests.helpers.office import SOFFICE, convert
from xlsxplan.errors import CellError
from xlsxplan.headless import Workbook

pytestmark = [pytest.mark.slow, pytest.mark.skipif(SOFFICE is None, reason="LibreOffice (soffice) is not installed")]


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """(xlsxplan's Workbook, LibreOffice's view of the original, LibreOffice's view of xlsxplan's output)."""
    folder = tmp_path_factory.mktemp("lo")
    original = native_book(folder / "native.xlsx")
    wb = Workbook.load(original)
    ours = wb.save(folder / "native_recalc.xlsx")
    outdir = convert([original, ours], folder)
    return (
        wb,
        openpyxl.load_workbook(outdir / "native.xlsx", data_only=True)["Calc"],
        openpyxl.load_workbook(outdir / "native_recalc.xlsx", data_only=True)["Calc"],
    )


def _same(lo_value, ours):
    if isinstance(ours, CellError):
        return lo_value == ours.code
    if isinstance(ours, bool) or isinstance(lo_value, bool):
        return bool(lo_value) == bool(ours) and type(lo_value) in (bool, int)
    if isinstance(ours, (int, float)):
        return lo_value == pytest.approx(ours, rel=1e-12)
    return lo_value == ours


def test_libreoffice_computes_what_xlsxplan_computes_for_native_cells(converted):
    wb, lo_original, _ = converted
    # LibreOffice really computed the original itself: it cannot know DECODE_TOKS, so that cell is #NAME? there
    assert lo_original["C1"].value == "#NAME?"
    rows = [c.row for c in lo_original["B"] if c.value is not None]
    assert len(rows) == 21
    for row in rows:
        ours = wb.get(f"Calc!B{row}")
        assert _same(lo_original[f"B{row}"].value, ours), (row, lo_original[f"B{row}"].value, ours)


def test_libreoffice_shows_xlsxplans_values_in_the_written_file(converted):
    wb, _, lo_ours = converted
    for row in range(1, 22):
        ours = wb.get(f"Calc!B{row}")
        assert _same(lo_ours[f"B{row}"].value, ours), (row, lo_ours[f"B{row}"].value, ours)
    # registry cells LibreOffice cannot compute: it shows the values xlsxplan cached
    assert (wb.get("Calc!C1"), wb.get("Calc!C2")) == (92, 94)
    assert (lo_ours["C1"].value, lo_ours["C2"].value) == (92, 94)


WHOLE_RANGES = [
    "=SUM(Data!A:A)",
    "=SUM(Data!1:1)",
    "=SUM(Data!A1:XFD1048576)",
    "=SUM(Data!A:XFD)",
    "=SUM(Data!1:1048576)",
    "=COUNT(Data!A:XFD)",
    "=COUNTA(Data!A:C)",
    "=MAX(Data!B:B)",
    "=MIN(Data!2:3)",
    "=AVERAGE(Data!2:3)",
    "=SUMPRODUCT(Data!A1:A6,Data!B1:B6)",
    "=MATCH(4,Data!A:A,0)",
    "=INDEX(Data!A:A,3)",
    "=INDEX(Data!1:1,1,2)",
    "=ROWS(Data!A:A)",
    "=COLUMNS(Data!1:1)",
    '=SUMIF(Data!A:A,">2")',
    '=COUNTIF(Data!A1:XFD1048576,">1")',
    "=SUM(Data!C:E)",
    "=SUM(Data!Z:Z)+SUM(Data!5000:5000)",
    "=SUMPRODUCT((Data!A1:A6>2)*Data!B1:B6)",
    "=SUM(Calc!A:A)",  # the inputs beside these formulas, on their own sheet
    "=MAX(Data!A1:ZZ100000)",
]


def test_whole_rows_columns_and_the_whole_sheet_agree_with_libreoffice(tmp_path):
    # whole columns (A:A), whole rows (1:1), the whole grid (A1:XFD1048576, A:XFD, 1:1048576) over a sheet with a
    # far cell (Z100, AA5000): LibreOffice, recalculating every formula as it loads the file, computes what xlsxplan
    # does; xlsxplan's engine goes through the rows in use only, so none of these takes long
    wb = openpyxl.Workbook()
    data = wb.active
    data.title = "Data"
    for r, (a, b) in enumerate([(1, 10), (2, 20), (3, 30), (4, 40), (5, 50), (6, 60)], start=1):
        data.cell(r, 1, a)
        data.cell(r, 2, b)
    data["C2"], data["E3"], data["Z100"], data["AA5000"], data["D1"] = 7.5, -2, 1000, 0.25, "text"
    calc = wb.create_sheet("Calc")
    calc["A1"], calc["A2"] = 3, 4
    for row, text in enumerate(WHOLE_RANGES, start=1):
        calc.cell(row, 2, text)
    original = wb.save(tmp_path / "ranges.xlsx") or tmp_path / "ranges.xlsx"
    ours = Workbook.load(original)
    outdir = convert([original], tmp_path, recalc_on_load=True)
    theirs = openpyxl.load_workbook(outdir / "ranges.xlsx", data_only=True)["Calc"]
    for row, text in enumerate(WHOLE_RANGES, start=1):
        value = ours.get(f"Calc!B{row}")
        assert _same(theirs[f"B{row}"].value, value), (text, theirs[f"B{row}"].value, value)
    assert ours.get("Calc!B1") == 21 and ours.get("Calc!B15") == 1_048_576 and ours.get("Calc!B16") == 16_384
