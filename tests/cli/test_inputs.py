"""`xlsxplan inputs BOOK`: every input a user can `--set`, with its cell, value, unit and allowed values, read from
the workbook itself (its defined names, cells, number formats, data validation and unit column)."""

from __future__ import annotations

import json
from pathlib import Path

import openpyxl
import pytest

from tests.helpers import REPO
from tests.helpers.books import opened, plan_book
from xlsxplan.catalog import model_names
from xlsxplan.cli import main

ROOT = REPO
SERVING = ROOT / "workbooks" / "serving_plan.xlsx"
TRAINING = ROOT / "workbooks" / "training_plan.xlsx"


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _listed(capsys, book) -> dict[str, dict]:
    code, out, _ = run(capsys, "inputs", book, "--json")
    assert code == 0
    return {row["name"]: row for row in json.loads(out)["inputs"]}


def _expected(path: Path) -> dict[str, tuple[str, object, object]]:
    """{name: (cell, value, unit)} for every defined name of one cell that holds a value, or a scenario row's
    =INDEX(cases, Scenario_Number), read with openpyxl: the unit in column C (the column headed Unit)."""
    wb = opened(path)
    number = None
    out = {}
    for name, defined in wb.defined_names.items():
        sheet, _, ref = defined.attr_text.replace("$", "").partition("!")
        if ":" in ref:
            continue
        ws = wb[sheet.strip("'")]
        cell = ws[ref]
        unit = ws.cell(cell.row, 3).value
        if isinstance(cell.value, str) and cell.value.startswith("=INDEX("):
            number = number or _scenario_number(wb)
            case = ws.cell(cell.row, 6 + number)
            out[name] = (f"{sheet}!{case.coordinate}", case.value, unit)
        elif not (isinstance(cell.value, str) and cell.value.startswith("=")):
            out[name] = (f"{sheet}!{ref}", cell.value, unit)
    return out


def _scenario_number(wb) -> int:
    ws = wb["Inputs"]
    active = ws["B8"].value
    return next(i for i, col in enumerate("GHIJ", start=1) if ws[f"{col}10"].value == active)


@pytest.mark.slow
@pytest.mark.parametrize("template", [SERVING, TRAINING], ids=["serving", "training"])
def test_every_settable_input_of_a_template_is_listed(template, capsys):
    listed = _listed(capsys, template)
    expected = _expected(template)
    assert {n: r for n, r in listed.items() if r["cells"] == 1}.keys() == expected.keys()
    for name, (cell, value, unit) in expected.items():
        row = listed[name]
        assert row["cell"] == cell, name
        assert row["set"] == (name if row["case"] is None else cell), name
        if isinstance(value, (int, float, str)) and not hasattr(value, "year"):
            assert row["value"] == value, name
        assert row["unit"] == (unit or ""), name


@pytest.mark.slow
def test_allowed_values_come_from_the_data_validation(capsys):
    listed = _listed(capsys, SERVING)
    wb = opened(SERVING)
    presets = [c.value for (c,) in wb["Lists"][f"A6:A{5 + len(model_names())}"] if c.value is not None]
    assert listed["Model"]["allowed"] == presets  # a list from a range on another sheet
    cases = [c.value for c in wb["Inputs"]["G10:J10"][0]]
    assert listed["Active_Scenario"]["allowed"] == cases  # a list from a range on its own sheet
    assert listed["Pricing_Basis"]["allowed"] == ["On-demand", "Committed 1 year", "Committed 3 years", "Spot"]
    assert listed["Tail_Percentile"]["allowed"] == "a number from 0.5 to 1"
    assert listed["Spare_Replicas"]["allowed"] == "a whole number from 0 to 1,000,000"
    assert listed["Requests_Per_Day"]["allowed"] == "Requests per day must be a positive number up to 1e+15"
    assert listed["Price_Date"]["allowed"] == "a date after 2000-01-01"


@pytest.mark.slow
def test_the_table_lists_name_cell_value_unit_allowed(capsys):
    code, out, _ = run(capsys, "inputs", SERVING)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["input", "cell", "value", "unit", "allowed"]
    row = next(line for line in lines if line.startswith("Requests_Per_Day "))
    name = opened(SERVING).defined_names["Requests_Per_Day"]
    cell = next(iter(name.destinations))  # where the workbook's own name points, wherever the row moves
    assert row.split()[:4] == ["Requests_Per_Day", f"{cell[0]}!{cell[1].replace('$', '')}", "200,000", "requests/day"]
    cell, value, _ = _expected(SERVING)["Model"]
    case = "GHIJ".index(cell[len("Inputs!")]) + 1
    model = next(line for line in lines if line.startswith("Model "))
    assert model.split()[:5] == ["Model", "(case", f"{case})", cell, value]
    first = opened(SERVING)["Lists"]["A6"].value
    assert f"  {first} | " in model and "more; --json lists every one)" in model  # the first of the list, and more
    assert lines[-1].startswith("A scenario row (case N) is set by its cell")


def test_a_workbook_of_ones_own(capsys, tmp_path):
    book = plan_book(tmp_path / "plan.xlsx")
    listed = _listed(capsys, book)
    assert list(listed) == ["Model", "Params_B", "Bytes_Per_Param", "N_GPUs", "Context", "GPU", "Price"]
    assert listed["N_GPUs"] == {
        "name": "N_GPUs",
        "set": "N_GPUs",
        "cell": "Inputs!B5",
        "value": 2,
        "text": "2",
        "unit": "count",
        "allowed": "a whole number from 1 to 64",
        "case": None,
        "cells": 1,
    }
    assert listed["Price"]["text"] == "$2.50"  # as its number format shows it


@pytest.mark.slow
def test_each_listed_name_is_accepted_by_set(capsys, tmp_path):
    listed = _listed(capsys, SERVING)
    sets = [
        f"{row['set']}={row['value']}"
        for row in listed.values()
        if row["cells"] == 1 and isinstance(row["value"], (int, float)) and not isinstance(row["value"], bool)
    ]
    assert len(sets) > 30
    argv = ["recalc", SERVING, "-o", tmp_path / "o.xlsx", "-q"]
    for text in sets:
        argv += ["--set", text]
    code, _, err = run(capsys, *argv)
    assert code == 0, err


def test_text_from_the_workbook_reaches_the_terminal_escaped(capsys, tmp_path):
    # the red team's cell text with a bidi override (reorders what the terminal shows) and line breaks, printed raw:
    # every listing shows a workbook's text literally, as `recalc --show` does (an escape sequence cannot be saved
    # by openpyxl; terminal_text's own test covers it)
    hostile = "Qwen\u202eevil\\x\nnext\u2066"
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Inputs"
    ws["A1"], ws["B1"] = "Model", hostile
    wb.defined_names["Model_Name"] = openpyxl.workbook.defined_name.DefinedName("Model_Name", attr_text="Inputs!$B$1")
    path = tmp_path / "book.xlsx"
    wb.save(path)
    code, out, _ = run(capsys, "inputs", path)
    assert code == 0
    assert not any(ch in out for ch in "\u202e\u2066")
    assert "Qwen\\u202eevil\\\\x\\nnext\\u2066" in out
    code, out, _ = run(capsys, "recalc", path, "--show", "Model_Name", "-o", tmp_path / "out.xlsx")
    assert "\u202e" not in out and "Qwen\\u202eevil" in out


def test_terminal_text_escapes_controls_and_bidi_overrides_and_nothing_else():
    from xlsxplan.cli.common import terminal_text

    assert terminal_text("plain text, 72B FP8: $1.04") == "plain text, 72B FP8: $1.04"
    assert terminal_text("\x1b[31mred\x07\x9b") == "\\x1b[31mred\\x07\\x9b"
    assert terminal_text("a\\b\tc\r\n") == "a\\\\b\\tc\\r\\n"
    assert terminal_text("\u202eabc\u2069") == "\\u202eabc\\u2069"
    assert terminal_text("Qwen2.5-72B \u00e9\u4e2d") == "Qwen2.5-72B \u00e9\u4e2d"  # printable text is kept
