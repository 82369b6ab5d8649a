"""Columns of one registry formula computed as arrays (:mod:`xlsxplan.headless.columns`): the values, error notes,
warnings and saved file a cell-by-cell calculation gives, with the engine calling Python once per error row only."""

from __future__ import annotations

import zipfile

import openpyxl
import pytest

from xlsxplan import registry
from xlsxplan.headless import columns
from xlsxplan.headless.workbook import Workbook
from xlsxplan.sheet import cells
from xlsxplan.sheet.cells import CellError, collect_warnings

FN = registry.FUNCTIONS["DECODE_TOKS_TOTAL"]
ROWS = 260  # more than columns.MIN_CELLS
ODD = {  # params_b of some rows: refused, read from text, empty, implausible (two values: one warning line)
    5: -5,
    9: "abc",
    12: "12",
    15: None,
    18: True,
    21: 1e6,
    24: 20000,
    30: 0,
}


def _book(tmp_path, extra=None, name="sweep.xlsx"):
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sweep"
    ws["D1"] = 2  # an absolute reference every row reads
    for r in range(2, ROWS + 2):
        ws.cell(r, 1, ODD.get(r, 7 + r % 70))
        ws.cell(r, 3, 1 + r % 3)  # n_gpus, a second reference per row
        ws.cell(r, 2, f"=DECODE_TOKS_TOTAL(A{r},1,C{r},3.35,94,327680,2300)")
        ws.cell(r, 5, f"=DECODE_TOKS_TOTAL(A{r},1,$D$1,3.35)")
    ws["G1"] = f"=SUM(B35:B{ROWS + 1})"  # past the odd rows
    for ref, text in (extra or {}).items():
        ws[ref] = text
    path = tmp_path / name
    wb.save(path)
    return path


def _calculated(path, monkeypatch, by_cell):
    """The workbook calculated (as arrays, or cell by cell with ``by_cell``), every value of columns B, E and G, its
    warnings, the registry calls the engine made, and the sheet part it saves."""
    monkeypatch.setattr(columns, "MIN_CELLS", 10**9 if by_cell else columns.MIN_CELLS)
    calls = []
    evaluate = cells.evaluate
    monkeypatch.setattr(cells, "evaluate", lambda fn, args: calls.append(1) or evaluate(fn, args))
    wb = Workbook.load(path)
    with collect_warnings() as warnings:
        wb.calculate()
    values = {ref: wb.get(ref) for r in range(1, ROWS + 2) for ref in (f"Sweep!B{r}", f"Sweep!E{r}", f"Sweep!G{r}")}
    out = path.with_name(("cells-" if by_cell else "columns-") + path.name)
    wb.save(out)
    with zipfile.ZipFile(out) as zf:
        part = zf.read("xl/worksheets/sheet1.xml")
    return wb, values, list(warnings), len(calls), part


def test_a_column_gives_every_value_error_note_warning_and_byte_the_cell_by_cell_calculation_gives(
    tmp_path, monkeypatch
):
    path = _book(tmp_path)
    wb, values, warnings, calls, part = _calculated(path, monkeypatch, by_cell=False)
    _, expected_values, expected_warnings, expected_calls, expected_part = _calculated(path, monkeypatch, by_cell=True)
    assert [(c.title, len(c.cells)) for c in wb._columns] == [("Sweep", ROWS), ("Sweep", ROWS)]
    assert values == expected_values
    errors = [ref for ref, v in values.items() if isinstance(v, CellError)]
    assert len(errors) == 2 * 5  # -5, "abc", empty, TRUE and 0 in both columns: each with its reason
    assert all(values[ref].message for ref in errors)
    assert values["Sweep!B13"] == expected_values["Sweep!B13"] and isinstance(values["Sweep!B13"], float)  # "12"
    assert warnings == expected_warnings and len(warnings) == 1 and "1 other value" in warnings[0]
    assert part == expected_part
    # the engine called Python for the error rows alone (their notes are the engine's, as before), where it
    # called it for every row
    assert expected_calls >= 2 * ROWS and calls <= 2 * len(errors)


def test_an_input_set_after_a_calculation_recomputes_its_row_and_what_reads_the_column(tmp_path):
    path = _book(tmp_path)
    wb = Workbook.load(path)
    before = wb.get("Sweep!B40")
    total = wb.get("Sweep!G1")
    assert wb._columns
    wb.set("Sweep!A40", 70)
    after = wb.get("Sweep!B40")
    expected = cells.evaluate(FN, [70.0, 1.0, 1.0 + 40 % 3, 3.35, 94.0, 327680.0, 2300.0])
    assert after == expected != before
    assert wb.get("Sweep!G1") == pytest.approx(total - before + after, rel=1e-12)
    wb.set("Sweep!A40", "abc")  # an error now: the engine computes the row, with its reason
    assert isinstance(wb.get("Sweep!B40"), CellError) and "params_b" in wb.get("Sweep!B40").message
    wb.set("Sweep!A40", 70)
    assert wb.get("Sweep!B40") == expected
    wb.set("Sweep!B41", 5, force=True)  # a value set over a column's formula stays
    wb.set("Sweep!A41", 60)
    assert wb.get("Sweep!B41") == 5


def test_a_cell_computed_in_a_column_still_holds_a_formula_for_isformula_and_formulatext(tmp_path):
    path = _book(tmp_path, {"H1": "=ISFORMULA(B2)", "H2": "=FORMULATEXT(B2)", "H3": "=ISFORMULA(A2)"})
    wb = Workbook.load(path)
    assert wb._columns and (2, 2) in wb._columns[0].cells
    assert wb.get("Sweep!H1") is True and wb.get("Sweep!H3") is False
    assert wb.get("Sweep!H2") == "=DECODE_TOKS_TOTAL(A2,1,C2,3.35,94,327680,2300)"


def test_rows_reading_a_formula_cell_are_left_to_the_engine(tmp_path):
    path = _book(tmp_path, {"C30": "=1+1", "C31": "=A31*0+2"})
    wb = Workbook.load(path)
    column = next(c for c in wb._columns if (30, 2) not in c.cells)
    assert (31, 2) not in column.cells and (32, 2) in column.cells
    wb.set("Sweep!A31", 9)
    assert wb.get("Sweep!B30") == cells.evaluate(FN, [ODD.get(30, 7 + 30 % 70), 1.0, 2.0, 3.35, 94.0, 327680.0, 2300.0])
    assert wb.get("Sweep!B31") == cells.evaluate(FN, [9.0, 1.0, 2.0, 3.35, 94.0, 327680.0, 2300.0])


def test_a_column_evaluated_without_numpy_gives_what_each_element_gives():
    fn = FN
    params = [7.0, -1.0, "abc", "12", None, True, 1e6, CellError("#DIV/0!")]
    out = cells.evaluate_column(fn, [params, 1.0, [1.0, 2.0, 3.0, 1.5, 1.0, 1.0, 1.0, 1.0], 3.35], len(params))
    expected = [cells.evaluate(fn, [p, 1.0, g, 3.35]) for p, g in zip(params, [1.0, 2.0, 3.0, 1.5, 1.0, 1.0, 1.0, 1.0])]
    assert out == expected
    with pytest.raises(ValueError, match="3 values"):
        cells.evaluate_column(fn, [[1.0, 2.0], 1.0, 1.0, 3.35], 3)
