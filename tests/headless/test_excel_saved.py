"""Workbooks as Excel saves them, recalculated headlessly: what Excel writes that a book built with openpyxl does not
(values in every cell of an array formula's range), and Excel's evaluation rules where the engine (formualizer 0.13)
differs (each such test says "engine difference")."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import openpyxl
import pytest
from openpyxl.worksheet.formula import ArrayFormula

from xlsxplan.errors import CellError
from xlsxplan.headless import Workbook, evaluate_formula, workbook


def _edit_sheet(path: Path, out: Path, edit) -> None:
    """Copy the workbook ``path`` to ``out`` with its first sheet's XML passed through ``edit`` (text to text)."""
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename == "xl/worksheets/sheet1.xml":
                data = edit(data.decode("utf-8")).encode("utf-8")
            zout.writestr(info, data)


PLAN = 'PLAN_OPTIONS(A1,B1,2000,300,3,20,0,1,"H100=2.5")'


def test_engine_difference_an_array_formula_saved_with_its_values_computes_fresh(tmp_path):
    # Excel saves a value in every cell of an array formula's range (here PLAN_OPTIONS spilled from D1, computed for
    # 100,000 requests a day, the anchor marked as a dynamic array as Excel marks it); the engine took them for
    # cells in the way: #SPILL! at the anchor and the old values everywhere else
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Plan"
    ws["A1"], ws["B1"] = "Qwen2.5-72B", 100_000
    old = evaluate_formula(f"={PLAN.replace('A1', chr(34) + 'Qwen2.5-72B' + chr(34)).replace('B1', '100000')}").value
    rows, cols = old.shape
    ws["D1"] = ArrayFormula(f"D1:{openpyxl.utils.get_column_letter(3 + cols)}{rows}", "=" + PLAN)
    wb.save(tmp_path / "built.xlsx")

    def as_excel_writes_it(xml: str) -> str:
        cells = []
        for r in range(rows):
            row = []
            for c in range(cols):
                ref = f"{openpyxl.utils.get_column_letter(4 + c)}{r + 1}"
                v = old[r, c]
                body = (
                    f'<f t="array" ref="D1:{openpyxl.utils.get_column_letter(3 + cols)}{rows}">{PLAN}</f>'
                    if (
                        r,
                        c,
                    )
                    == (0, 0)
                    else ""
                )
                body = body.replace('"H100', "&quot;H100").replace('2.5"', "2.5&quot;")
                cm = ' cm="1"' if (r, c) == (0, 0) else ""
                if isinstance(v, str):
                    row.append(f'<c r="{ref}" t="str"{cm}>{body}<v>{v}</v></c>')
                else:
                    row.append(f'<c r="{ref}"{cm}>{body}<v>{v}</v></c>')
            cells.append(row)
        xml = re.sub(r'<c r="D1"[^>]*>.*?</c>', "".join(cells[0]), xml, flags=re.S)
        for r in range(1, rows):
            xml = xml.replace("</sheetData>", f'<row r="{r + 1}">{"".join(cells[r])}</row></sheetData>')
        return xml

    _edit_sheet(tmp_path / "built.xlsx", tmp_path / "saved.xlsx", as_excel_writes_it)
    book = Workbook.load(tmp_path / "saved.xlsx")
    assert book.get("Plan!E2") == old[1, 1]  # the saved book holds the old values in the range
    book.set("Plan!B1", 200_000)
    fresh = evaluate_formula(f"={PLAN.replace('A1', chr(34) + 'Qwen2.5-72B' + chr(34)).replace('B1', '200000')}").value
    got = book.get(f"Plan!D1:{openpyxl.utils.get_column_letter(3 + cols)}{rows}")
    assert not any(isinstance(v, CellError) for row in got for v in row), got[0][:3]
    want = [["" if v == "" else v for v in row] for row in fresh.tolist()]
    assert [[("" if v is None else v) for v in row] for row in got] == want
    assert want != [["" if v == "" else v for v in row] for row in old.tolist()]  # the input changed the answer
    book.save(tmp_path / "out.xlsx")
    again = openpyxl.load_workbook(tmp_path / "out.xlsx", data_only=True)["Plan"]
    assert again.cell(2, 4 + 11).value == fresh[1, 11]  # the file written carries the fresh values


def test_engine_difference_a_legacy_array_range_holding_saved_values_computes(tmp_path):
    # the smallest case: {=A1:A3*2} over C1:C3 with Excel's saved (now stale) values in C2:C3
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"], ws["A2"], ws["A3"] = 1, 2, 3
    ws["C1"] = ArrayFormula("C1:C3", "=A1:A3*2")
    wb.save(tmp_path / "built.xlsx")

    def saved(xml: str) -> str:
        xml = xml.replace("</f><v /></c>", "</f><v>99</v></c>")
        for row, value in ((2, 98), (3, 97)):
            xml = re.sub(
                rf'(<row r="{row}"[^>]*>.*?)</row>', rf'\1<c r="C{row}"><v>{value}</v></c></row>', xml, flags=re.S
            )
        return xml

    _edit_sheet(tmp_path / "built.xlsx", tmp_path / "saved.xlsx", saved)
    text = zipfile.ZipFile(tmp_path / "saved.xlsx").read("xl/worksheets/sheet1.xml").decode()
    assert '<c r="C2"><v>98</v></c>' in text and "<v>99</v>" in text
    book = Workbook.load(tmp_path / "saved.xlsx")
    assert book.get("Sheet!C1:C3") == [[2], [4], [6]]
    book.set("Sheet!A2", 10)
    assert book.get("Sheet!C1:C3") == [[2], [20], [6]]


@pytest.fixture(scope="module")
def intersections(tmp_path_factory):
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "S"
    ws["A1"], ws["A2"], ws["A3"] = 1, 2, 3
    ws["D1"], ws["E1"], ws["F1"] = 100, 200, 300
    cells = {
        "B2": "=A1:A3*10",  # the row of the formula: A2
        "B5": "=A1:A3*10",  # no row 5 in A1:A3
        "E2": "=D1:F1+1",  # a range along a row: the formula's column, E1
        "B3": "=IF(A1:A3>1,A1:A3,0)",
        "G3": "=_xlfn.SINGLE(A1:A3)*2",  # Excel's stored form of @A1:A3
        "G6": "=_xlfn.SINGLE(A1:A3)",
        "G1": "=SUM(A1:A3)",  # a function that takes a range: whole
        "G2": "=SUMPRODUCT(A1:A3*2)",  # an argument that takes an array: nothing intersected
        "H2": '=INDEX(A1:A3,3)+COUNTIF(A1:A3,">1")',
        "H3": "=VLOOKUP(A1:A3,A1:A3,1,FALSE)",
        "H8": "=ABS(A1:A3)",
        "I3": "=_xlfn.POISSON.DIST(A1:A3,2,FALSE)",  # a distribution's value parameter (POISSON.xlsx D60)
        "C2": "=FORMULATEXT(B2)",  # the text as written, not the engine's rewrite
        "C3": "=FORMULATEXT(C3)",  # its own text: no circular reference
        "C4": "=FORMULATEXT(G3)",
        "J1": "=ISFORMULA(B2)",  # a formula: TRUE (the engine gave FALSE for every cell)
        "J2": "=_xlfn.ISFORMULA(A1)",  # a number: FALSE
        "J3": "=IF(ISFORMULA(S!$J$1),1,0)",  # itself a formula, through its sheet's name
        "J4": "=ISFORMULA(Z99)",  # an empty cell
    }
    for ref, formula in cells.items():
        ws[ref] = formula
    path = tmp_path_factory.mktemp("intersections") / "book.xlsx"
    wb.save(path)
    return Workbook.load(path)


@pytest.mark.parametrize(
    "ref, want",
    [
        ("B2", 20),
        ("B5", "#VALUE!"),
        ("E2", 201),
        ("B3", 3),
        ("G3", 6),
        ("G6", "#VALUE!"),
        ("G1", 6),
        ("G2", 12),
        ("H2", 5),
        ("H3", 3),
        ("H8", "#VALUE!"),
        ("I3", pytest.approx(8 * 0.1353352832366127 / 6)),  # POISSON(3,2,FALSE) = 2^3 e^-2 / 3!
    ],
)
def test_engine_difference_implicit_intersection_as_excel_computes_it(intersections, ref, want):
    # the engine took a range's first element where Excel takes the one in the formula's row or column (B2 gave
    # 10), and knew no _xlfn.SINGLE
    got = intersections.get(f"S!{ref}")
    assert (got.code if isinstance(got, CellError) else got) == want


def test_formulatext_shows_the_formula_as_written(intersections):
    assert intersections.get("S!C2") == "=A1:A3*10"  # not the engine's "=@(A1:A3 * 10)"
    assert intersections.get("S!C3") == "=FORMULATEXT(C3)"
    assert intersections.get("S!C4") == "=@A1:A3*2"  # Excel shows its stored _xlfn.SINGLE as @


def test_engine_difference_isformula_says_whether_the_file_holds_a_formula_there(intersections):
    # formualizer 0.13 gives FALSE for every cell (the IronCalc corpus' ISREF_ISFORMULA sheet, where Excel saved TRUE)
    assert [intersections.get(f"S!J{r}") for r in range(1, 5)] == [True, False, 1, False]


@pytest.mark.slow
def test_engine_difference_an_array_formula_past_the_engines_spill_cap_computes(tmp_path):
    # the engine spills at most 10,000 cells: a longer array formula gave #SPILL! at its first cell and 0 in every
    # other, silently; it is computed in tiles of up to 10,000 cells, each from a cell of its own
    n = 10_001
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "S"
    for i in range(1, n + 1):
        ws.cell(i, 1, i)
    ws["B1"] = ArrayFormula(f"B1:B{n}", f"=A1:A{n}*2")  # one column, 10,001 rows
    ws["D1"] = ArrayFormula("D1:F3400", "=A1:A3400*{1,10,100}")  # 3 columns, 10,200 cells
    ws["H1"] = f"=SUM(B1:B{n})"  # a formula reading the whole array
    wb.save(tmp_path / "long.xlsx")
    book = Workbook.load(tmp_path / "long.xlsx")
    column = book.get(f"S!B1:B{n}")
    assert [row[0] for row in column] == [2 * i for i in range(1, n + 1)]
    assert book.get("S!H1") == n * (n + 1)
    assert book.get("S!D3400:F3400") == [[3400, 34_000, 340_000]]
    assert book.get("S!D3334:F3334") == [[3334, 33_340, 333_400]]  # the first cell of the second tile
    assert not book.errors()


def test_array_tiles_cover_the_range_once_each_within_the_spill_cap():
    from xlsxplan.headless import engine

    for rows, cols in [(1, 1), (10_000, 1), (10_001, 1), (20_001, 1), (3_400, 3), (2, 12_000)]:
        tiles = engine.array_tiles(rows, cols)
        cells = {(r0 + i, c0 + j) for r0, c0, nr, nc in tiles for i in range(nr) for j in range(nc)}
        assert len(cells) == rows * cols == sum(nr * nc for _, _, nr, nc in tiles)
        assert all(nr * nc <= engine.SPILL_CAP for _, _, nr, nc in tiles)
        assert (min(cells), max(cells)) == ((0, 0), (rows - 1, cols - 1))


@pytest.fixture(scope="module")
def corners(tmp_path_factory):
    def book(epoch):
        wb = openpyxl.Workbook()
        wb.epoch = epoch
        ws = wb.active
        ws.title = "S"
        ws["A1"], ws["A2"], ws["A3"] = 1, "2", True
        cells = {
            "B1": '=SUMPRODUCT({1,"2",TRUE})',
            "B2": '=SUMPRODUCT({1,2},{"3",4})',
            "B3": '=SUMPRODUCT({1,2}*{"3",4})',  # the * operator converts "3", as Excel's does
            "B4": "=SUMPRODUCT(A1:A3,A1:A3)",  # text and TRUE in cells count 0 too
            "B5": "=SUMPRODUCT({1,2},{3;4})",
            "C1": "=DATE(1900,2,29)",
            "C2": "=DATE(1900,3,1)",
            "C3": "=DATE(1900,3,0)",
            "C4": "=DAYS(61,59)",
            "C5": "=DATE(2024,14,-3)",
            "C6": "=DAY(60)",
            "C7": "=SUM(DATE({1900,1900},{2,3},{29,1}))",  # DATE element by element over an array
            "D1": '=ROMAN(499,0)&" "&ROMAN(499,1)&" "&ROMAN(499,2)&" "&ROMAN(499,3)&" "&ROMAN(499,4)',
            "D2": '=_xlfn.TEXTJOIN(" ",TRUE,ROMAN({1999,1999,3999,0},{TRUE,FALSE,0,0}))',
            "D3": "=ROMAN(4000)",
            "E1": '=FLOOR(-2.5,-2)&" "&CEILING(-2.5,-2)&" "&FLOOR(-2.5,2)&" "&CEILING(-2.5,2)',
            "E2": "=FLOOR(2.5,-2)",
            "E3": "=FLOOR(3,0)",
            "E4": "=CEILING(3,0)",
            "E5": '=_xlfn.FLOOR.MATH(-5.5,2,1)&" "&_xlfn.CEILING.MATH(-5.5,2,1)&" "&_xlfn.FLOOR.MATH(10,0)',
            "E6": "=_xlfn.FLOOR.PRECISE(-3.2,-1)+ISO.CEILING(4.3,-2)+FLOOR(10.08,0.01)",
            "E7": '=FLOOR(-10,"2024-01-10")',  # text read as a date, as Excel reads it
            "F1": '=GCD(24,36,60)&" "&LCM(4,6,10)&" "&GCD({12,18},30.9)',
            "F2": "=GCD(12,-3)",
            "F3": "=LCM(A1,TRUE)",
            "G1": "=SUM(MMULT({1,2;3,4},{5;6}))",  # 17 + 39
            "G2": "=ROUND(MDETERM({1,2;3,4}),9)",
            "G3": "=ROUND(SUM(MINVERSE({4,7;2,6})),9)",  # {0.6,-0.7;-0.2,0.4}
            "G4": "=SUM(_xlfn.MUNIT(3))",
            "G5": "=MINVERSE({1,2;2,4})",
            "G6": "=MMULT({1,2},{1,2})",
        }
        for ref, formula in cells.items():
            ws[ref] = formula
        path = tmp_path_factory.mktemp("corners") / f"book{epoch.year}.xlsx"
        wb.save(path)
        return Workbook.load(path)

    return book(openpyxl.utils.datetime.WINDOWS_EPOCH), book(openpyxl.utils.datetime.CALENDAR_MAC_1904)


@pytest.mark.parametrize(
    "ref, want",
    [
        ("B1", 1),  # the engine: 4
        ("B2", 8),  # 11
        ("B3", 11),
        ("B4", 1),
        ("B5", "#VALUE!"),
        ("C1", 60),  # 29 February 1900, Lotus' leap day; the engine: 61
        ("C2", 61),
        ("C3", 60),
        ("C4", 2),  # across the leap day; the engine: 1
        ("C5", 45_685),  # 2025-01-28: months and days carried
        ("C6", 29),
        ("C7", 121),
        ("D1", "CDXCIX LDVLIV XDIX VDIV ID"),  # Microsoft's examples; the engine knew form 0 alone
        ("D2", "MCMXCIX MIM MMMCMXCIX"),
        ("D3", "#VALUE!"),
        ("E1", "-2 -4 -4 -2"),  # Microsoft's FLOOR and CEILING examples
        ("E2", "#NUM!"),
        ("E3", "#DIV/0!"),
        ("E4", 0),
        ("E5", "-4 -6 0"),  # mode 1 turns a negative number's direction; a significance of 0 gives 0 (the engine: 10)
        ("E6", 12.08),
        ("E7", -45_301),
        ("F1", "12 60 6"),  # more than two arguments (the engine: "Too many arguments")
        ("F2", "#NUM!"),
        ("F3", "#VALUE!"),
        ("G1", 56),  # the matrix functions, which the engine does not have (#NAME?)
        ("G2", -2),
        ("G3", 0.1),
        ("G4", 3),
        ("G5", "#NUM!"),
        ("G6", "#VALUE!"),
    ],
)
def test_engine_difference_excels_numeric_corners(corners, ref, want):
    got = corners[0].get(f"S!{ref}")
    assert (got.code if isinstance(got, CellError) else got) == want


def test_engine_difference_a_workbook_in_the_1904_date_system(corners):
    # serial 60 is 1 March 1904 there, and 29 February 1900 does not arise; the engine read every book as 1900-based
    book = corners[1]
    assert book.date1904
    assert book.get("S!C6") == 1
    assert book.get("S!C5") == 45_685 - 1462
    assert book.get("S!B1") == 1  # not a date function: the same as in the 1900 system


@pytest.mark.parametrize(
    "first, rows, cols, later",
    [
        ("_xlfn.FORMULATEXT(A3)", 2, 0, "_xlfn.FORMULATEXT(A5)"),
        ("ISFORMULA($A3)+B$1*Sheet2!C4", 1, 2, "ISFORMULA($A4)+D$1*Sheet2!E5"),
        ('IF(A1="B2",A1:B2,0)', 3, 1, 'IF(B4="B2",B4:C5,0)'),  # a text literal stays as it is
    ],
)
def test_a_shared_formulas_later_cell_is_its_first_cells_formula_moved(first, rows, cols, later):
    # Excel stores a filled-down formula once (t="shared"); FORMULATEXT and ISFORMULA in its later cells are
    # rewritten by the cell each reads, so each later cell's own formula is derived as Excel derives it
    assert workbook._moved(first, rows, cols) == later
