"""The engine's text of a column of one formula, rewritten once per R1C1-relative form (``_Shapes``)."""

from __future__ import annotations

import io
import zipfile

import openpyxl
from openpyxl.workbook.defined_name import DefinedName

from xlsxplan.headless import workbook
from xlsxplan.headless.package import Package
from xlsxplan.headless.sheets import Formula, scan_sheet

ROWS = 60
FORMULAS = [
    "=DECODE_TOKS_TOTAL(A{r},1,2,3.35,94,327680,2300)",  # the sweep: one registry call per row
    "=A{r}*$A$2+B{r}",  # absolute and relative references together
    "=IF(A{r}>10,SQRT(A{r}),ROUND(A{r}/3,2))",  # native functions, lifted where they need it
    "=WEIGHTS_GB(A{r},2)+A{p}",  # a reference to the row above: its own shape
    '=IF(A{r}>10,"big","small")',  # text: rewritten in full
    "=SUM(A{r}:A{p})",  # a range: rewritten in full
    "=Rate*A{r}",  # a defined name of one cell
    "=Span*2",  # a defined name of several cells: intersected
]


def _book() -> bytes:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sweep"
    for r in range(2, ROWS + 2):
        ws.cell(r, 1, 7 + r % 5)
        for i, formula in enumerate(FORMULAS):
            ws.cell(r, 2 + i, formula.format(r=r, p=r - 1))
    wb.defined_names["Rate"] = DefinedName("Rate", attr_text="Sweep!$A$2")
    wb.defined_names["Span"] = DefinedName("Span", attr_text="Sweep!$A$2:$A$9")
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def _engine_sheet(data: bytes) -> bytes:
    pkg = Package(data, zipfile.ZipFile(io.BytesIO(data)))
    pkg.load_structure()
    sheet = pkg.sheets[0]
    package, _, calls, _, _ = workbook._engine_package(pkg, {sheet.title: scan_sheet(pkg.read(sheet.part))})
    with zipfile.ZipFile(io.BytesIO(package)) as zf:
        return zf.read(sheet.part) + str(calls).encode()


def test_a_column_of_one_formula_is_rewritten_once_per_shape_to_the_same_text(monkeypatch):
    data = _book()
    rewrites = []
    full = workbook._engine_text

    def counted(f, *args, **kwargs):
        rewrites.append(f.text)
        return full(f, *args, **kwargs)

    monkeypatch.setattr(workbook, "_engine_text", counted)
    shaped = _engine_sheet(data)
    once = len(rewrites)
    rewrites.clear()
    monkeypatch.setattr(workbook._Shapes, "shape", lambda self, f, rc: None)  # every formula rewritten in full
    assert _engine_sheet(data) == shaped
    assert len(rewrites) == ROWS * len(FORMULAS) - (ROWS - 1)  # =Span*2 is one text: rewritten once
    # the text and the range rewritten on every row, =Span*2 once; the five shapes of one cell's references twice
    # each (the template and its check), where they were rewritten on every row
    assert once == 2 * ROWS + 1 + 2 * 5


def test_a_rewrite_that_depends_on_more_than_the_shape_is_never_a_template():
    shapes = workbook._Shapes()
    f2 = Formula(2, 2, "F(A2)", "", None, None, (0, 0))
    f3 = Formula(3, 2, "F(A3)", "", None, None, (0, 0))
    f4 = Formula(4, 2, "F(A4)", "", None, None, (0, 0))
    s2, s3, s4 = shapes.shape(f2, (2, 2)), shapes.shape(f3, (3, 2)), shapes.shape(f4, (4, 2))
    assert s2[0] == s3[0] == s4[0] and s2[1] == ["A2"]
    shapes.learn(s2, ("@(F(A2))", False, 1))
    assert shapes.get(s3) is None  # not checked yet: rewritten in full
    shapes.learn(s3, ("@(G(A3))", False, 1))  # differs from what the template gives: the shape is dropped
    assert shapes.get(s4) is None


def test_formula_cells_are_found_wherever_their_reference_is_written():
    ns = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
    cells = [
        '<c r="B2"><f>A2*2</f></c>',  # the reference first, as writers write it
        '<c s="3" r="C2"><f>A2*3</f></c>',  # after another attribute
        "<c r='D2' s='1'><f>A2*4</f></c>",  # in single quotes
        '<c r="E02"><f>A2*5</f></c>',  # a row with a leading zero
        '<c r="AB7"/><c r="AC7"><f>1</f></c>',  # an empty cell before a formula cell
    ]
    xml = f'<worksheet {ns}><sheetData><row r="2">{"".join(cells)}</row></sheetData></worksheet>'.encode()
    index = scan_sheet(xml)
    assert {rc: f.text for rc, f in index.formulas.items()} == {
        (2, 2): "A2*2",
        (2, 3): "A2*3",
        (2, 4): "A2*4",
        (2, 5): "A2*5",
        (7, 29): "1",
    }


def test_a_call_of_one_value_is_given_as_written_and_anything_that_may_be_an_array_is_intersected():
    # Excel's implicit intersection (@) changes nothing where the formula is one call of a registry function that
    # returns one value, its arguments numbers and single cells: the engine's copy leaves those formulas as they
    # are (no edit of the sheet's text), and wraps every other plain formula in @(...)
    given = {
        "DECODE_TOKS_TOTAL(A2,1,2,3.35,94,327680,2300)": None,
        "WEIGHTS_GB($A$2,-2.5E+0)": None,
        "WEIGHTS_GB(A2:A3,2)": "@(WEIGHTS_GB(A2:A3,2))",  # a range: one result per cell, intersected
        "MODELS()": "@(MODELS())",  # a list
        "SQRT(A2)": "@(SQRT(A2))",  # a native function: not asked
        "WEIGHTS_GB(A2,2)+1": "@(WEIGHTS_GB(A2,2)+1)",  # more than the call
        "WEIGHTS_GB(Rate,2)": "@(WEIGHTS_GB(Rate,2))",  # a name may be a range
    }
    for text, engine_text in given.items():
        f = Formula(2, 2, text, "", None, None, (0, 0))
        assert workbook._engine_text(f, {}, None)[0] == engine_text, text
    sweep = _engine_sheet(_book())
    assert b"<f>DECODE_TOKS_TOTAL(A61,1,2,3.35,94,327680,2300)</f>" in sweep and b"@(DECODE_TOKS_TOTAL" not in sweep


class _CountedSplits:
    """A compiled pattern whose ``split`` calls are counted."""

    def __init__(self, pattern):
        self.pattern, self.splits = pattern, 0

    def split(self, text):
        self.splits += 1
        return self.pattern.split(text)

    def __getattr__(self, name):
        return getattr(self.pattern, name)


def test_a_column_of_one_relative_reference_is_split_once_and_its_rows_foretold(monkeypatch):
    # the sweep's column (=DECODE_TOKS_TOTAL(A2,...), one relative reference a row) and =Rate*A2 are each split into
    # their references once, at their first row, where each of their 60 rows was split; the formulas of more than
    # one reference still are, row by row (3 columns of 60), and =Span*2 once (one text); the engine's text is
    # that of every formula rewritten in full (the test above), here with rows missing, a reference written with a
    # leading zero and one that is not one row down, each read in full
    counted = _CountedSplits(workbook._CELL_REF)
    monkeypatch.setattr(workbook, "_CELL_REF", counted)
    _engine_sheet(_book())
    assert counted.splits == 3 * ROWS + 1 + 1 + 1
    ns = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
    texts = {2: "F(A2)", 3: "F(A3)", 5: "F(A5)", 6: "F(A06)", 7: "F(A7)", 8: "F(A7)", 9: "F(A9)", 10: "F(A10)"}
    rows = "".join(f'<row r="{r}"><c r="B{r}"><f>{t}</f></c></row>' for r, t in texts.items())
    xml = f"<worksheet {ns}><sheetData>{rows}</sheetData></worksheet>".encode()
    shapes = workbook._Shapes()
    counted.splits = 0
    foretold = [shapes.shape(f, rc) for rc, f in scan_sheet(xml).formulas.items()]
    assert counted.splits == 5  # rows 2, 5 (after a missing row), 6 (A06), 8 (A7 again, not A8) and 9 (after it)
    split = [workbook._Shapes().shape(f, rc) for rc, f in scan_sheet(xml).formulas.items()]  # each one split
    assert foretold == split and foretold[0][0] == foretold[1][0] != foretold[5][0]
