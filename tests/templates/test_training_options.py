"""The training template's Options sheet: TRAIN_OPTIONS for the layout search on Inputs is, cell for cell, what
`xlsxplan plan --train --json` prints for the same inputs, in the add-in edition recalculated headlessly and in the
portable edition as built (its values frozen, with the check that they were computed for today's inputs); Outputs
and the Cover show the layout ranked first beside the calculator's figures, and Checks flags a search with no
feasible layout. Every expectation is the command's answer, never a number written here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from tests.helpers import REPO
from tests.helpers.books import changed, saved_values
from tests.helpers.office import SOFFICE, shipped_recalculated
from xlsxplan.cli import main
from xlsxplan.headless import Workbook
from xlsxplan.plan.train_inputs import TRAIN_INPUTS
from xlsxplan.plan.train_table import TRAIN_TABLE_HEADER
from xlsxplan.templates import training
from xlsxplan.templates.build import Built, build_template
from xlsxplan.templates.styles import HEADER_ROWS

PORTABLE = REPO / "workbooks" / training.FILENAME
STALE_WORDS = "Options: values computed by Python for other inputs"
FLAGS = {p.name: p.cli_flag for p in TRAIN_INPUTS}


@pytest.fixture(scope="module")
def addin(tmp_path_factory) -> Built:
    with pytest.MonkeyPatch.context() as mp:  # the shipped catalog only, whatever the user has saved
        mp.setenv("XLSXPLAN_CATALOG_DIR", str(tmp_path_factory.mktemp("no-user-presets")))
        return build_template(training.FILENAME, tmp_path_factory.mktemp("books"), Workbook, True, "functions")


def table(get: Any) -> list[dict[str, Any]]:
    """The Options sheet's table, a dict per option keyed by TRAIN_OPTIONS's header, read through ``get``."""
    cols = training.options_columns()
    first = training.OPTIONS_FIRST_ROW
    assert first == HEADER_ROWS + 1
    assert [get(f"Options!{cols[k]}{first}") for k in TRAIN_TABLE_HEADER] == list(TRAIN_TABLE_HEADER)
    rows = []
    for r in range(first + 1, first + training.OPTIONS_ROWS + 1):
        if get(f"Options!{cols['gpu']}{r}") in (None, ""):
            break
        rows.append({k: get(f"Options!{cols[k]}{r}") for k in TRAIN_TABLE_HEADER})
    return rows


def cli_options(get: Any, capsys) -> list[dict[str, Any]]:
    """`xlsxplan plan --train --json` for the inputs the workbook holds now, passed as the Options sheet passes them
    (:data:`training.SEARCH_ARGUMENTS`): its options."""
    argv = ["plan", "--train", "--json"]
    for name, passed in training.SEARCH_ARGUMENTS.items():
        if name == "gpus":  # the active scenario's accelerator at the price on Inputs
            value = f"{get('Accelerator')}={get('Price_Per_GPU_Hour')!r}"
        else:
            value = get(passed)
            value = repr(value) if isinstance(value, float) else str(value)
        argv += [FLAGS[name], value]
    capsys.readouterr()
    code = main(argv)
    printed = capsys.readouterr()
    assert code in (0, 1), (printed.err, " ".join(argv))  # 1: no layout is feasible, the table printed all the same
    return json.loads(printed.out)["options"]


def assert_the_sheet_is_the_cli(get: Any, capsys) -> list[dict[str, Any]]:
    rows, options = table(get), cli_options(get, capsys)
    assert len(rows) == min(len(options), training.OPTIONS_ROWS) > 0
    assert get(f"Options!{training.options_columns()['gpu']}{training.OPTIONS_FIRST_ROW + len(rows) + 1}") in (
        None,
        "",
    )  # past the options listed, empty
    for i, (row, option) in enumerate(zip(rows, options)):
        for key in TRAIN_TABLE_HEADER:
            got, want = row[key], option[key]
            if want in (None, ""):  # a figure the layout has none of, or no reason: empty (a file keeps no "")
                assert got in (None, ""), (i, key, got)
            elif isinstance(want, float) and not isinstance(got, bool):
                assert got == pytest.approx(want, rel=1e-12), (i, key)
            else:
                assert got == want and type(got) is type(want), (i, key, got, want)
    return rows


def line(b: Built, key: str) -> Any:
    return b.get(b.book.address(key))


@pytest.mark.slow
def test_the_addin_editions_options_sheet_is_what_plan_train_prints_for_the_budget_case(addin, capsys):
    # the budget case as shipped: $200,000 of the active scenario's H100s at $2.50 an hour, at most 14 days and 256
    # GPUs, the size to choose
    assert addin.get("Parameters_Searched") == 0 and addin.get("Model_Searched") == "none"
    rows = assert_the_sheet_is_the_cli(addin.get, capsys)
    best = rows[0]
    assert best["feasible"] is True and best["reason"] == ""
    assert best["memory_gb_per_gpu"] <= 80 and best["gpus"] <= addin.get("GPU_Limit")
    assert best["days"] <= addin.get("Deadline_For_The_Run") and best["usd"] <= addin.get("Budget_For_The_Run")
    assert all(r["reason"] for r in rows if r["feasible"] is False)
    assert line(addin, "options_count") == len(rows)


@pytest.mark.slow
@pytest.mark.parametrize(
    "values",
    [
        {"Model_Searched": "Llama-2-7B", "Deadline_For_The_Run": 30, "GPU_Limit": 64},
        {"Price_Per_GPU_Hour": 4.0, "Budget_For_The_Run": 500_000, "Sequence_Length_Searched": 8192},
        {"Tokens_Searched": 2e12, "Deadline_For_The_Run": 0},
    ],
)
def test_the_options_follow_the_inputs_as_the_cli_does(addin, capsys, values):
    with changed(addin, values):
        assert_the_sheet_is_the_cli(addin.get, capsys)


@pytest.mark.slow
def test_a_size_too_large_says_which_limit_binds_and_checks_flag_it(addin, capsys):
    check = _check_row(addin, "No layout found that fits")
    assert addin.get(check) == 0
    with changed(addin, {"Parameters_Searched": 70}):
        rows = assert_the_sheet_is_the_cli(addin.get, capsys)
        best = rows[0]
        assert best["feasible"] is False and best["params_b"] == 70
        assert "over the" in best["reason"] and " by " in best["reason"]  # the limit, and by how much
        assert line(addin, "search_status") == "no: " + best["reason"]
        assert line(addin, "search_misses") == best["reason"]
        assert addin.get(check) == 1 and line(addin, "master_check") == 1


@pytest.mark.slow
def test_outputs_and_the_cover_show_the_layout_ranked_first_beside_the_calculators_figures(addin):
    best = table(addin.get)[0]
    layout = line(addin, "search_layout")
    assert layout.startswith(f"{best['gpu']} x {best['gpus']}: TP {best['tp']} x PP {best['pp']} x DP {best['dp']}")
    assert f"ZeRO-{best['zero']}" in layout and best["recompute"] in layout and layout.endswith(best["precision"])
    for key, column in (("search_cost", "usd"), ("search_days", "days"), ("search_params", "params_b")):
        assert line(addin, key) == best[column], key
    assert line(addin, "search_status").startswith("yes")
    # beside the search's cost, the calculator's own for the active scenario
    row = addin.book.ref("search_cost").row
    assert f"{line(addin, 'cost'):,.0f}" in addin.get(f"Outputs!D{row}")
    # the assumptions that move it, on Outputs
    for name in ("Budget_For_The_Run", "Deadline_For_The_Run", "GPU_Limit", "Price_Per_GPU_Hour"):
        assert line(addin, f"search:{name}") == addin.get(name)
    cover = [addin.get(f"Cover!{c}{r}") for r in range(1, 80) for c in "AB"]
    assert "Layout ranked first" in cover and layout in cover


def _check_row(b: Built, label: str) -> str:
    ws = b.book.ws("Checks")
    row = next(r for r in range(1, ws.max_row + 1) if str(ws[f"A{r}"].value).startswith(label))
    return f"Checks!B{row}"


@pytest.fixture(scope="module")
def portable_values() -> Any:
    return openpyxl.load_workbook(PORTABLE, data_only=True), saved_values(PORTABLE)


def test_the_portable_edition_as_built_holds_what_plan_train_prints_and_its_stale_check_is_ok(portable_values, capsys):
    wb, get = portable_values
    assert_the_sheet_is_the_cli(get, capsys)
    formulas = openpyxl.load_workbook(PORTABLE)
    held = [c.value for row in formulas["Options"].iter_rows(min_row=training.OPTIONS_FIRST_ROW) for c in row]
    assert not [v for v in held if isinstance(v, str) and v.startswith("=")]  # values: the file needs no add-in
    checks = formulas["Checks"]
    stale = next(r for r in range(1, checks.max_row + 1) if STALE_WORDS in str(checks[f"A{r}"].value))
    assert get(f"Checks!B{stale}") == 0
    # the inputs the search read, each with its value when computed, are listed to compare with today's
    listed = {formulas["Workings"][f"A{r}"].value for r in range(1, formulas["Workings"].max_row + 1)}
    for name in ("Budget_For_The_Run", "Deadline_For_The_Run", "GPU_Limit", "Parameters_Searched", "Model_Searched"):
        cell = wb.defined_names[name].attr_text.replace("$", "").split("!")[1]
        assert f"Inputs {cell}" in listed, name


@pytest.mark.slow
def test_the_portable_edition_flags_a_changed_input_and_recalc_computes_the_table_again(capsys):
    wb = Workbook.load(PORTABLE)
    formulas = openpyxl.load_workbook(PORTABLE, read_only=False)["Checks"]
    stale = next(f"Checks!B{r}" for r in range(1, formulas.max_row + 1) if STALE_WORDS in str(formulas[f"A{r}"].value))
    wb.set("Budget_For_The_Run", 120_000).calculate()
    assert wb.get(stale) == 1  # what Excel or LibreOffice shows: the values are for other inputs
    assert wb.refresh_frozen()
    assert wb.get(stale) == 0
    assert_the_sheet_is_the_cli(wb.get, capsys)


@pytest.mark.slow
@pytest.mark.skipif(SOFFICE is None, reason="LibreOffice (soffice) is not installed")
def test_libreoffice_reads_the_portable_options_and_recalculates_the_rest(capsys):
    get = saved_values(shipped_recalculated() / Path(PORTABLE).name, PORTABLE)
    rows = assert_the_sheet_is_the_cli(get, capsys)
    book = training.build()
    assert get(book.address("search_cost")) == rows[0]["usd"]
    assert get(book.address("master_check")) == 0
