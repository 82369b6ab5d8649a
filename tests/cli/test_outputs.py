"""`xlsxplan outputs BOOK` (the named results), `recalc --show` by an output's name or whole columns, and `inputs`
on a workbook that names no cell."""

from __future__ import annotations

import json

import openpyxl
import pytest

from tests.helpers import REPO
from xlsxplan.cli import main
from xlsxplan.templates import serving, training
from xlsxplan.templates.build import edition_filename

BOOKS = REPO / "workbooks"


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize(
    "module", [pytest.param(serving, marks=pytest.mark.slow), training], ids=["serving", "training"]
)
def test_every_headline_output_is_named_listed_and_shown_by_name(module, capsys, tmp_path):
    book = BOOKS / edition_filename(module.FILENAME, "functions")
    code, out, _ = run(capsys, "outputs", book, "--json")
    assert code == 0
    listed = {row["name"]: row for row in json.loads(out)["outputs"]}
    assert set(module.OUTPUT_NAMES) <= set(listed)
    wb = openpyxl.load_workbook(book, data_only=True)
    for name in module.OUTPUT_NAMES:
        sheet, _, ref = wb.defined_names[name].attr_text.replace("$", "").partition("!")
        assert listed[name]["cell"] == f"{sheet}!{ref}", name
        assert listed[name]["value"] == wb[sheet.strip("'")][ref].value, name  # the cached value, as saved
        assert listed[name]["label"], name
    # recalc shows each by its name
    shows = [a for name in module.OUTPUT_NAMES for a in ("--show", name)]
    code, out, _ = run(capsys, "recalc", book, "-o", tmp_path / "out.xlsx", *shows)
    assert code == 0
    for name in module.OUTPUT_NAMES:
        line = next(line for line in out.splitlines() if line.endswith(f"({name})"))
        assert line.split()[0] == listed[name]["cell"] and listed[name]["text"] in line, line


@pytest.mark.slow
def test_the_table_lists_each_output_with_its_cell_value_unit_and_label(capsys):
    code, out, _ = run(capsys, "outputs", BOOKS / edition_filename(serving.FILENAME, "functions"))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["output", "cell", "value", "unit", "label"]
    fleet = next(line for line in lines if line.startswith("GPUs_In_The_Fleet "))
    assert fleet.split()[3:] == ["count", "GPUs", "in", "the", "fleet"]


def _own(path):
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Plan"
    for row in (
        ("Requests per day", 1000, "requests/day"),
        ("GPUs", 8, "count"),
        ("Per GPU", "=B1/B2", "requests/day"),
        ("Not read", 5, ""),
    ):
        ws.append(row)
    ws["E6"], ws["E7"], ws["F1"] = "Factor", 3, "=SUM(E:E)"
    wb.save(path)
    return path


def test_inputs_of_a_book_without_names_are_the_values_its_formulas_read(capsys, tmp_path):
    book = _own(tmp_path / "mine.xlsx")
    code, out, _ = run(capsys, "inputs", book, "--json")
    assert code == 0
    rows = json.loads(out)["inputs"]
    assert [(r["name"], r["cell"], r["value"]) for r in rows] == [
        ("Requests per day", "Plan!B1", 1000),
        ("GPUs", "Plan!B2", 8),
        ("Factor", "Plan!E7", 3),  # read through a whole column (its heading is text: no input); labelled by it
    ]
    code, out, _ = run(capsys, "inputs", book)
    assert out.splitlines()[0].split()[:2] == ["label", "cell"]
    assert "names no cell" in out.splitlines()[-1]
    code, out, _ = run(capsys, "outputs", book)
    assert code == 0 and "names no result" in out


def test_show_accepts_whole_columns_and_rows_cut_to_the_sheet_in_use(capsys, tmp_path):
    book = _own(tmp_path / "mine.xlsx")
    code, out, _ = run(capsys, "recalc", book, "-o", tmp_path / "o.xlsx", "--show", "Plan!A:B", "--show", "Plan!3:3")
    assert code == 0
    cells = [line.split()[0] for line in out.splitlines() if line.startswith("Plan!")]
    assert cells[:14] == [f"Plan!{c}{r}" for r in range(1, 8) for c in "AB"]
    assert cells[14:] == [f"Plan!{c}3" for c in "ABCDEF"]
    assert "Plan!B3  125" in out.replace("   ", "  ")


def test_a_cell_set_without_its_sheet_is_answered_with_the_sheet_it_needs(capsys, tmp_path):
    book = _own(tmp_path / "mine.xlsx")
    code, _, err = run(capsys, "recalc", book, "-o", tmp_path / "o.xlsx", "--set", "B2=4")
    assert code == 2 and err == "xlsxplan: error: --set B2: 'B2' needs its sheet, e.g. Plan!B2\n"
    code, out, _ = run(capsys, "recalc", book, "-o", tmp_path / "o.xlsx", "--set", "Plan!B2=4", "--show", "Plan!B3")
    assert code == 0 and out.startswith("Plan!B3  250\n")
