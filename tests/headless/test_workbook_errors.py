"""Errors in a recalculated workbook: each cell's reason, found without evaluating anything more than once."""

from __future__ import annotations

from pathlib import Path

import openpyxl
from openpyxl.worksheet.formula import ArrayFormula

from tests.helpers.counting import count_calls
from xlsxplan.errors import CellError
from xlsxplan.headless import Workbook, engine
from xlsxplan.sheet import cells

PARAMS_B = "params_b must be a positive number up to 1,000,000, got -1"
BYTES_PER_PARAM = (
    "bytes_per_param must be a positive number of bytes up to 64 or a precision name such as bf16, fp8 or int4, got -1"
)


def _sheet(path, cells: dict) -> Path:
    """``path``: a workbook of one sheet, S, holding ``cells`` (reference -> value, formula or ArrayFormula)."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "S"
    for ref, value in cells.items():
        ws[ref] = value
    wb.save(path)
    return path


def _count_registry_calls(monkeypatch) -> list[str]:
    """The names of the registry functions the engine evaluates from now on, in call order."""
    calls: list[str] = []
    real = cells.evaluate_broadcast

    def counting(fn, raw_args):
        calls.append(fn.name)
        return real(fn, raw_args)

    monkeypatch.setattr(cells, "evaluate_broadcast", counting)
    return calls


def test_errors_evaluate_each_array_formula_again_once_not_once_per_failed_element(tmp_path, monkeypatch):
    # Review finding 1: every failing element of an array formula evaluated the whole array again to find its
    # reason, so errors() was quadratic (=WEIGHTS_GB(A1:A1000,-1): 15 s). Odd rows fail on params_b, even rows on
    # bytes_per_param: each element must get its own reason, from one evaluation per array.
    n = 40
    cells: dict = {}
    for r in range(1, n + 1):
        cells[f"A{r}"] = -1 if r % 2 else 7
        cells[f"B{r}"] = 2 if r % 2 else -1
    cells["C1"] = ArrayFormula(f"C1:C{n}", f"=WEIGHTS_GB(A1:A{n},B1:B{n})")
    cells["D1"] = ArrayFormula(f"D1:D{n}", f"=KV_BYTES_PER_TOKEN(80,A1:A{n},128)")
    book = Workbook.load(_sheet(tmp_path / "arrays.xlsx", cells)).calculate()
    calls = _count_registry_calls(monkeypatch)
    errors = book.errors()
    assert sorted(calls) == ["KV_BYTES_PER_TOKEN", "WEIGHTS_GB"]  # one evaluation per array, not one per element
    assert len(errors) == n + n // 2
    for r in range(1, n + 1):
        assert errors[f"S!C{r}"] == CellError("#NUM!", PARAMS_B if r % 2 else BYTES_PER_PARAM)
        if r % 2:
            assert errors[f"S!D{r}"] == CellError(
                "#NUM!", "kv_heads must be a whole number from 1 to 1,000,000, got -1"
            )
        else:
            assert f"S!D{r}" not in errors and book.get(f"S!D{r}") == 2 * 80 * 7 * 128 * 2
    calls.clear()
    assert book.errors() == errors and calls == []  # the reasons are kept until the next calculation


def test_a_cells_reason_is_the_one_of_the_call_whose_error_reached_it(tmp_path):
    # Review finding 5: the first message with the right code was taken, here the one IFERROR swallowed
    cells = {
        "A1": -1,
        "B1": "=IFERROR(WEIGHTS_GB(A1),0)+WEIGHTS_GB(1,A1)",
        "B2": "=IFERROR(WEIGHTS_GB(-1),0)+WEIGHTS_GB(1,-1)",  # constants only
    }
    book = Workbook.load(_sheet(tmp_path / "iferror.xlsx", cells))
    assert book.errors() == {"S!B1": CellError("#NUM!", BYTES_PER_PARAM), "S!B2": CellError("#NUM!", BYTES_PER_PARAM)}


def test_a_formula_that_cannot_be_parsed_says_so_in_one_plain_line(tmp_path):
    # Review finding 12: the parser's message came out raw (a format with its blank left empty)
    path = _sheet(tmp_path / "parse.xlsx", {"A1": "=1+", "A2": "={1,2;3}"})
    assert Workbook.load(path).errors() == {
        "S!A1": CellError("#NAME?", "the formula cannot be parsed: unexpected end of tokens"),
        "S!A2": CellError("#NAME?", "the formula cannot be parsed: array rows must have equal length"),
    }


def test_errors_and_save_read_each_formula_cell_once_per_calculation(tmp_path, monkeypatch):
    # Review finding 21: errors(), the cached values and the error notes each walked every formula cell again
    cells = {
        "A1": 7,
        "B1": "=WEIGHTS_GB(A1,-1)",
        "B2": "=WEIGHTS_GB(A1,2)",
        "C1": ArrayFormula("C1:C2", "=WEIGHTS_GB({-1;1},2)"),
    }
    book = Workbook.load(_sheet(tmp_path / "walk.xlsx", cells)).calculate()
    reads: list[tuple[str, int, int]] = []
    real = Workbook._cell_value

    def counting(self, title, row, col):
        reads.append((title, row, col))
        return real(self, title, row, col)

    monkeypatch.setattr(Workbook, "_cell_value", counting)
    assert set(book.errors()) == {"S!B1", "S!C1"}
    book.save(tmp_path / "out.xlsx")
    formula_reads = [cell for cell in reads if cell[2] > 1]
    assert sorted(formula_reads) == [("S", 1, 2), ("S", 1, 3), ("S", 2, 2), ("S", 2, 3)]  # once each
    saved = openpyxl.load_workbook(tmp_path / "out.xlsx", data_only=True)["S"]
    assert saved["B2"].value == 14 and saved["C2"].value == 2 and saved["B1"].value == "#NUM!"
    assert saved["B1"].comment.text == f"#NUM! {BYTES_PER_PARAM}"
    book.set("S!A1", -1)  # a new calculation reads them again, once
    assert set(book.errors()) == {"S!B1", "S!B2", "S!C1"}
    book.save(tmp_path / "out2.xlsx")
    assert len([cell for cell in reads if cell[2] > 1]) == 8
    assert openpyxl.load_workbook(tmp_path / "out2.xlsx", data_only=True)["S"]["B2"].value == "#NUM!"


def test_a_reason_is_found_where_the_cell_stands(tmp_path):
    # C5: =KV_BYTES_PER_TOKEN(ROW()-5,8,128) gives 0 layers there. The reason is found by evaluating the formula
    # again on a sheet of its own; at that sheet's A1 ROW() is 1 and the reason read "got -4", a call the cell never
    # made (the serving plan's 2,231 Options cells, PLAN_OPTIONS_AT(ROW()-ROW($A$5),...), each gave a generic #N/A
    # reason so). It is evaluated again at the cell's own row and column.
    cells = {"C5": "=KV_BYTES_PER_TOKEN(ROW()-5,8,128)", "D7": "=KV_BYTES_PER_TOKEN(8,COLUMN()-4,128)"}
    book = Workbook.load(_sheet(tmp_path / "where.xlsx", cells))
    assert book.get("S!C5") == CellError("#NUM!", "layers must be a whole number from 1 to 1,000,000, got 0")
    assert book.get("S!D7") == CellError("#NUM!", "kv_heads must be a whole number from 1 to 1,000,000, got 0")


def test_cells_that_share_a_failing_formula_are_rewritten_for_their_reasons_once(tmp_path, monkeypatch):
    # The serving plan's Options table is 2,231 cells of one text, PLAN_OPTIONS_AT(ROW()-ROW($A$5),...): with a model
    # not in the catalog each fails and is evaluated again at its own row and column for its reason. The text is
    # qualified and prepared for the engine once, not once a cell; each cell still gets the reason of its own row.
    n = 30
    cells = {f"B{r}": "=KV_BYTES_PER_TOKEN(ROW()-20,8,128)" for r in range(1, n + 1)}
    book = Workbook.load(_sheet(tmp_path / "shared.xlsx", cells)).calculate()
    work = count_calls(monkeypatch, engine, qualified="qualify", prepared="prepare")
    errors = book.errors()
    assert work == {"qualified": 1, "prepared": 1}
    assert len(errors) == 20
    for r in range(1, 21):
        got = f"got {r - 20}" if r < 20 else "got 0"
        assert errors[f"S!B{r}"] == CellError("#NUM!", f"layers must be a whole number from 1 to 1,000,000, {got}")
