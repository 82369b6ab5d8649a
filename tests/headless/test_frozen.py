"""`xlsxplan recalc` on a portable edition computes its frozen values again (xlsxplan/headless/frozen.py).

The portable serving plan keeps the option search (the Options table, PLAN_OPTIONS_AT) as the add-in edition's values
of the build, with the inputs they were computed for and a check that turns ERROR when one has changed. `xlsxplan
recalc --set` on the portable file must give, in every cell of the Options sheet, what `xlsxplan recalc --set` gives
on the add-in edition for the same inputs (the add-in edition is the Python core's answer: its cells call the
registry), with the check OK again. A file whose kept formulas were edited is refused; one without the hidden name
that marks them is recalculated as before, its values flagged stale.
"""

from __future__ import annotations

import datetime
import functools
import re
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from openpyxl.utils import get_column_letter

from tests.helpers import REPO
from tests.helpers.package_edit import edit_package
from xlsxplan.cli import main
from xlsxplan.errors import CellError, WorkbookError
from xlsxplan.headless import Workbook, recalc
from xlsxplan.headless.frozen import FORMULAS_HEADER, NAME_PREFIX, TITLE_PREFIX
from xlsxplan.templates import serving
from xlsxplan.templates.portable import _rectangles

ROOT = REPO
PORTABLE = ROOT / "workbooks" / "serving_plan.xlsx"
TABLE = f"B6:{serving.options_columns()[serving.OPTION_COLUMNS[-1][0]]}{serving.options_last_row()}"
"""The Options table on its sheet."""
MULTI = f"B{serving.options_last_row() + 7}"
"""Below it, after the accelerators searched (D104), their count, the room, the target and its percentile: whether
the search laid a replica out beyond one server, frozen with the table."""
FROZEN_CELLS = (1 + serving.options_per_accelerator() * len(serving.priced_accelerators())) * len(
    serving.OPTION_COLUMNS
) + 2
"""The Options table's cells (its header row and an option a row, a column each), the list of accelerators searched
below it and whether the search laid a replica out beyond one server: the cells only Python computes in the
portable serving plan."""
ADDIN = ROOT / "workbooks" / "serving_plan_functions.xlsx"
CASES = "GHIJ"
STALE_WORDS = "values computed by Python for other inputs"


def _cases(row: int, value: Any) -> list[str]:
    return [f"--set=Inputs!{c}{row}={value}" for c in CASES]


SCENARIO = ["--set=Requests_Per_Day=700000", *_cases(11, "Llama-3.1-70B"), *_cases(12, "Llama-3.1-70B")]
"""Another model (every scenario case) and three and a half times the traffic."""


def run(capsys: Any, *argv: Any) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _values(path: Path, sheet: str) -> dict[str, Any]:
    """The values a sheet of the file holds, cell by cell (each file read once, and copied: the files are written
    once each, before they are read)."""
    return dict(_read_values(path, sheet))


@functools.cache
def _read_values(path: Path, sheet: str) -> dict[str, Any]:
    """Every cell of the sheet's used rectangle from A1, None where empty: what a full openpyxl load's
    ``ws.iter_rows()`` gives (checked equal on these files), read in openpyxl's read-only mode, which parses only
    that sheet (a quarter of the time)."""
    wb = openpyxl.load_workbook(path, data_only=True, read_only=True)
    try:
        ws = wb[sheet]
        ws.reset_dimensions()  # from the cells themselves, not the dimension the file declares
        cells = {(c.row, c.column): c.value for row in ws.iter_rows() for c in row if hasattr(c, "row")}
    finally:
        wb.close()
    rows, cols = max(r for r, _ in cells), max(c for _, c in cells)
    return {f"{get_column_letter(c)}{r}": cells.get((r, c)) for r in range(1, rows + 1) for c in range(1, cols + 1)}


@functools.cache
def _book(path: Path) -> openpyxl.Workbook:
    """The file as openpyxl reads it (formulas), read once a module: never change or save it (a test that tampers
    with a file edits its package, tests/helpers/package_edit.py)."""
    return openpyxl.load_workbook(path)


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, (int, float)) and isinstance(got, (int, float)) and not isinstance(want, bool):
        return abs(got - want) <= 1e-9 * max(abs(want), abs(got)) or got == want
    if want in (None, "") and got in (None, ""):
        return True
    return got == want


@functools.cache
def _master(path: Path) -> str:
    """The master check's cell on Checks (the row headed "Master check"), as the file holds it."""
    ws = _book(path)["Checks"]
    rows = [r for r in range(1, ws.max_row + 1) if str(ws[f"A{r}"].value).startswith("Master check: ")]
    assert len(rows) == 1, rows
    return f"B{rows[0]}"


@functools.cache
def _stale_check(path: Path) -> str:
    """The stale-values check's cell on Checks (found once a file)."""
    ws = _book(path)["Checks"]
    # the Options block's (the Finance sheet's block has a check of its own, "Finance: values computed ...")
    rows = [r for r in range(1, ws.max_row + 1) if str(ws[f"A{r}"].value).startswith(f"Options: {STALE_WORDS}")]
    assert len(rows) == 1, rows
    return f"B{rows[0]}"


def _block(path: Path) -> tuple[openpyxl.Workbook, str, int, int]:
    """The portable file (openpyxl, read once: never change it), and its frozen block of the Options sheet: the
    defined name, first and last row on Workings (the other blocks are the Finance and Chargeback sheets')."""
    wb = _book(path)
    names = [n for n in wb.defined_names if n.startswith(NAME_PREFIX)]
    assert sorted(names) == [f"{NAME_PREFIX}{i}" for i in (1, 2, 3)], names
    blocks = {}
    for name in names:
        m = re.fullmatch(r"Workings!\$A\$(\d+):\$E\$(\d+)", wb.defined_names[name].attr_text)
        assert m is not None and wb.defined_names[name].hidden
        title = str(wb["Workings"][f"A{m.group(1)}"].value)
        blocks[title[len(TITLE_PREFIX) :].split(":")[0]] = (name, int(m.group(1)), int(m.group(2)))
    assert sorted(blocks) == ["Chargeback", "Finance", "Options"], blocks
    return wb, *blocks["Options"]


@pytest.fixture(scope="module", autouse=True)
def _forget_the_files_read():
    """The files read once a module are let go with it: a pytest-xdist worker runs other files after this one."""
    yield
    for cached in (_read_values, _book, _master, _stale_check):
        cached.cache_clear()


@pytest.fixture(scope="module")
def both(tmp_path_factory) -> dict[str, Any]:
    """The shipped portable plan and add-in plan, each recalculated by the command line for :data:`SCENARIO`
    ("portable", "addin": the files written), and what the command said on stderr for the portable one ("said")."""
    import contextlib
    import io

    folder = tmp_path_factory.mktemp("recalc")
    out: dict[str, Any] = {"portable": folder / "portable.xlsx", "addin": folder / "addin.xlsx"}
    said = io.StringIO()
    with contextlib.redirect_stderr(said):
        assert main(["recalc", str(PORTABLE), "-o", str(out["portable"]), *SCENARIO]) == 0
    assert main(["recalc", str(ADDIN), "-o", str(out["addin"]), "-q", *SCENARIO]) == 0
    out["said"] = said.getvalue()
    return out


@pytest.mark.slow
def test_the_options_table_equals_the_addin_editions_for_the_same_inputs(both):
    got, want = _values(both["portable"], "Options"), _values(both["addin"], "Options")
    before = _values(PORTABLE, "Options")
    from xlsxplan.headless.package import col_letter

    frozen = [
        f"{col_letter(c)}{r}" for _, cells, _, _ in Workbook.load(PORTABLE).frozen[0].formulas for _, r, c in cells
    ]
    assert len(frozen) == FROZEN_CELLS and "D104" in frozen and "B6" in frozen and MULTI in frozen
    wrong = [f"{k}: {got.get(k)!r}, the add-in {want[k]!r}" for k in want if not _same(got.get(k), want[k])]
    assert not wrong, (len(wrong), wrong[:8])
    # the scenario moved the table: the test would fail on the values of the build
    moved = [k for k in frozen if not _same(before.get(k), want[k])]
    assert len(moved) > 100, len(moved)
    assert before["C6"] == want["C6"] == "gpu"  # the headers, from the search, are unchanged


@pytest.mark.slow
def test_the_stale_check_is_ok_and_the_inputs_are_those_computed_for(both):
    checks = _values(both["portable"], "Checks")
    assert checks[_stale_check(both["portable"])] == 0
    assert checks[_master(PORTABLE)] == 0  # the master check
    wb, _, top, last = _block(both["portable"])
    values = _values(both["portable"], "Workings")
    ws = wb["Workings"]
    rows = range(top + 2, next(r for r in range(top, last + 1) if ws[f"A{r}"].value == FORMULAS_HEADER[0]))
    assert len(rows) > 50
    assert all(values[f"E{r}"] is True for r in rows)
    assert all(ws[f"D{r}"].value == values[f"B{r}"] for r in rows)  # when computed: the value now
    requests = next(r for r in rows if ws[f"A{r}"].value == "Inputs B26")
    assert ws[f"D{requests}"].value == 700000
    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    assert ws[f"A{top}"].value == (
        f"{TITLE_PREFIX}Options: {FROZEN_CELLS} cells hold the values xlsxplan recalc computed on {today}, for these inputs"
    )
    # the cells hold values, never the add-in's formula: the file still needs no add-in
    held = [c.value for row in wb["Options"][TABLE] for c in row]
    assert not [v for v in held if isinstance(v, str) and v.startswith("=")]


@pytest.mark.slow
def test_the_stale_check_words_say_to_run_recalc_on_this_file():
    ws = _book(PORTABLE)["Checks"]
    label = ws[_stale_check(PORTABLE).replace("B", "A")].value
    assert "run xlsxplan recalc on this file, or open the add-in edition (serving_plan_functions.xlsx)" in label


@pytest.mark.slow
def test_the_command_says_it_computed_them_again(capsys, tmp_path, both):
    # inputs changed (SCENARIO): what `xlsxplan recalc` said making the module's recalculated portable file
    err = both["said"]
    assert f"computed again the {FROZEN_CELLS:,} values only Python computes on Options" in err
    assert f"master check Checks!{_master(PORTABLE)}: OK" in err
    # inputs as built: nothing to compute again, and the file's values and date stay
    code, _, err = run(capsys, "recalc", PORTABLE, "-o", tmp_path / "b.xlsx")
    assert code == 0 and "only Python computes on Options" not in err  # the Finance block keeps its marker
    assert _values(tmp_path / "b.xlsx", "Workings") == _values(PORTABLE, "Workings")


@pytest.mark.slow
def test_a_search_that_now_fails_gives_the_addins_error(tmp_path):
    """A model of one's own (not in the catalog) cannot be searched: the add-in's table is errors, so is this."""
    sets = {f"Inputs!{c}{r}": "My-own-model" for c in CASES for r in (11, 12)}
    port = recalc(PORTABLE, tmp_path / "p.xlsx", sets)
    addin = recalc(ADDIN, tmp_path / "a.xlsx", sets)
    for cell in ("Options!B6", "Options!N7", "Options!S20"):
        want, got = addin.get(cell), port.get(cell)
        assert isinstance(want, CellError) and isinstance(got, CellError) and got.code == want.code, (cell, got)
    ws = openpyxl.load_workbook(tmp_path / "p.xlsx")["Options"]
    assert ws["N7"].value == want.code and ws["N7"].data_type == "e"  # a typed error value, as the add-in shows


@pytest.mark.slow
def test_the_workbook_api_calculates_as_a_spreadsheet_and_refreshes_when_asked():
    wb = Workbook.load(PORTABLE)
    check = f"Checks!{_stale_check(PORTABLE)}"
    assert wb.frozen and wb.frozen[0].cells == FROZEN_CELLS and not wb.stale_frozen()
    wb.set("Requests_Per_Day", 450000).calculate()
    assert wb.get(check) == 1 and wb.get(f"Checks!{_master(PORTABLE)}") == 1  # what Excel or LibreOffice would show
    # two blocks read the traffic: the Options table and the Finance sheet's tier mix (Chargeback reads Portfolio's)
    assert [b.name for b in wb.refresh_frozen()] == [f"{NAME_PREFIX}1", f"{NAME_PREFIX}2"]
    assert wb.get(check) == 0 and wb.get(f"Checks!{_master(PORTABLE)}") == 0
    addin = Workbook.load(ADDIN).set("Requests_Per_Day", 450000).calculate()
    for cell in ("Options!N6", "Options!N7", "Options!L8", "Options!U9", "Options!D104"):
        assert _same(wb.get(cell), addin.get(cell)), cell
    assert wb.refresh_frozen() == []  # up to date: nothing to do


def _kept(path: Path = PORTABLE) -> tuple[str, int, int, int]:
    """The Options block's defined name, its first and last row on Workings, and the row of its first kept formula."""
    wb, name, top, last = _block(path)
    ws = wb["Workings"]
    first = next(r for r in range(top, last + 1) if ws[f"A{r}"].value == FORMULAS_HEADER[0]) + 1
    return name, top, last, first


def _tampered(tmp_path: Path, cells: dict[str, str] | None = None, drop_name: str | None = None) -> Path:
    """The shipped portable plan with ``cells`` of Workings (reference -> text; "=..." a formula) rewritten, or the
    defined name ``drop_name`` removed: its package edited, every other part as shipped."""
    return edit_package(PORTABLE, tmp_path / "tampered.xlsx", "Workings", cells, drop_name)


@pytest.mark.slow
@pytest.mark.parametrize(
    "kept, why",
    [
        ("SUM(Inputs!B26)*2", "calls no function only Python computes"),
        ("NOT_A_FUNCTION(Model)+PLAN_OPTIONS_AT(1,1,Model)", "calls NOT_A_FUNCTION, which neither"),
        ("PLAN_OPTIONS_AT(1,1,[1]Sheet1!A1)", "another workbook"),
        ("=PLAN_OPTIONS_AT(1,1,Model)", "with '='"),
    ],
)
def test_a_file_whose_kept_formula_was_edited_is_refused(capsys, tmp_path, kept, why):
    path = _tampered(tmp_path, {f"B{_kept()[3]}": kept})
    out = tmp_path / "out.xlsx"
    code, _, err = run(capsys, "recalc", path, "-o", out, "--set", "Requests_Per_Day=300000")
    assert code == 2 and not out.exists()
    assert len(err.strip().splitlines()) == 1 and err.startswith("xlsxplan: error: "), err
    assert why in err and "Workings!B" in err, err
    with pytest.raises(WorkbookError, match=re.escape(why)):
        Workbook.load(path)


@pytest.mark.slow
def test_a_file_whose_kept_cells_point_at_a_formula_is_refused(capsys, tmp_path):
    # Options!A7: =IF(AND(C7=Accelerator,...),"yes","no"), a formula of the portable file
    path = _tampered(tmp_path, {f"A{_kept()[3]}": "A7"})
    code, _, err = run(capsys, "recalc", path, "-o", tmp_path / "out.xlsx")
    assert code == 2 and "Options!A7, which holds a formula of its own" in err, err


@pytest.mark.slow
def test_without_the_marker_nothing_is_computed_again(capsys, tmp_path):
    path = _tampered(tmp_path, drop_name=_kept()[0])
    out = tmp_path / "out.xlsx"
    code, _, err = run(capsys, "recalc", path, "-o", out, "--set", "Requests_Per_Day=300000")
    assert code == 0 and "only Python computes on Options" not in err  # the Finance block keeps its marker
    assert f"master check Checks!{_master(PORTABLE)}: ERROR" in err and STALE_WORDS in err
    got, before = _values(out, "Options"), _values(PORTABLE, "Options")
    kept = [f"{c.coordinate}" for row in _book(PORTABLE)["Options"][TABLE] for c in row]
    assert len(kept) == FROZEN_CELLS - 2 and all(
        _same(got[k], before[k]) for k in [*kept, "D104", MULTI]
    )  # the build's, flagged
    assert [b.group for b in Workbook.load(path).frozen] == ["Finance", "Chargeback"]  # Options: no longer marked
    # the add-in edition has none either, and recalculates as before
    assert Workbook.load(ADDIN).frozen == []


def test_rectangles_cover_exactly_the_cells():
    cells = [f"{c}{r}" for r in range(6, 11) for c in "BCDE"] + ["W6", "X6", "D104", "B12", "C12"]
    rects = _rectangles(cells)
    assert rects == ["B6:E10", "W6:X6", "B12:C12", "D104"]
    covered = []
    for rect in rects:
        a, _, b = rect.partition(":")
        b = b or a
        covered += [f"{chr(c)}{r}" for r in range(int(a[1:]), int(b[1:]) + 1) for c in range(ord(a[0]), ord(b[0]) + 1)]
    assert sorted(covered) == sorted(cells)


@pytest.mark.slow
def test_a_rewritten_check_does_not_keep_values_for_other_inputs(capsys, tmp_path, both):
    """Issue 27: with every Unchanged cell rewritten as =TRUE, recalc of changed inputs kept the build's values
    (575 Options cells wrong, exit 0). recalc computes the kept formulas again itself and compares with the values
    kept: the table is the add-in edition's for the new inputs (:data:`SCENARIO`'s, the add-in edition's table for
    them computed once a module by the fixture ``both``)."""

    _, top, _, first = _kept()
    path = _tampered(tmp_path, {f"E{r}": "=TRUE" for r in range(top + 2, first - 1)})
    out = tmp_path / "out.xlsx"
    code, _, err = run(capsys, "recalc", path, "-o", out, *SCENARIO)
    assert code == 0 and f"computed again the {FROZEN_CELLS:,} values only Python computes on Options" in err, err
    got, want, before = _values(out, "Options"), _values(both["addin"], "Options"), _values(PORTABLE, "Options")
    moved = [k for k in want if not _same(before.get(k), want[k])]
    assert len(moved) > 100, len(moved)  # the build's values would be wrong here
    wrong = [k for k in want if not _same(got.get(k), want[k])]
    assert not wrong, wrong[:8]


@pytest.mark.slow
def test_a_block_that_names_an_input_among_its_cells_is_refused(capsys, tmp_path):
    """Issue 27: a kept-formula block naming input cells as its targets overwrote them. Kept values live only on
    the Options sheet: anything else is refused in one line naming the cell."""

    first = _kept()[3]
    path = _tampered(tmp_path, {f"A{first}": "B26", f"C{first}": "Inputs"})  # Inputs!B26, Requests_Per_Day
    out = tmp_path / "out.xlsx"
    code, _, err = run(capsys, "recalc", path, "-o", out, "--set", "Requests_Per_Day=700000")
    assert code == 2 and not out.exists()
    assert len(err.strip().splitlines()) == 1 and "values computed by Python are kept only on Options" in err, err
    assert re.search(r"Workings!C\d+: ", err), err


@pytest.mark.slow
def test_a_kept_formula_over_a_whole_sheet_is_refused_before_it_runs(capsys, tmp_path, monkeypatch):
    """Issue 27: a kept formula reading Inputs!A:XFD ran for minutes, its ranges counted once for the formula, not
    once for each of its cells. Now counted for each cell, as a cell formula's are, and refused in one line naming
    where it is kept, before any is evaluated. Built at the shipped Inputs' rows in use and at 4 and 10 times them
    (tests/helpers/package_edit.py, kept_whole_sheet): the range cost counted grows linearly from 1x to 4x, the work done
    (texts costed, formulas evaluated) not at all, and every size is refused in one line."""
    from tests.helpers.hangs import SIZES, linear
    from tests.helpers.package_edit import kept_whole_sheet
    from xlsxplan.headless import untrusted

    work = {"costed": 0, "evaluated": 0}
    costs, evaluate = untrusted.range_costs, Workbook._evaluate

    def counted_costs(*args, **kwargs):
        work["costed"] += 1
        return costs(*args, **kwargs)

    def counted_evaluate(self, formula):
        work["evaluated"] += 1
        return evaluate(self, formula)

    monkeypatch.setattr(untrusted, "range_costs", counted_costs)
    monkeypatch.setattr(Workbook, "_evaluate", counted_evaluate)
    counted, done, rows = {}, {}, {}
    for size in SIZES:
        work.update(costed=0, evaluated=0)
        path = kept_whole_sheet(tmp_path / f"kept{size}.xlsx", size)
        out = tmp_path / f"out{size}.xlsx"
        code, _, err = run(capsys, "recalc", path, "-o", out, "--set", "Requests_Per_Day=300000")
        assert code == 2 and not out.exists() and len(err.strip().splitlines()) == 1, err
        m = re.search(
            r"ranges of ([\d,]+) cells in all.* Inputs!A:XFD: ([\d,]+) rows in use by 16,384 columns, in the formula "
            r"kept in Workings!B\d+ for ([\d,]+) cells\); the limit is 500,000,000",
            err,
        )
        assert m is not None, err
        assert work["evaluated"] == 0, work
        counted[size] = int(m.group(1).replace(",", ""))
        rows[size] = int(m.group(2).replace(",", ""))
        done[size] = work["costed"] + work["evaluated"]
    assert rows[4] == 4 * rows[1] and rows[10] == 10 * rows[1], rows
    assert linear(counted) and linear(done), (counted, done)
    assert counted[4] >= 3 * counted[1], counted  # the cost is counted for every cell, at every size


@pytest.mark.slow
def test_a_value_computed_again_that_fails_carries_the_registry_calls_reason():
    # a mean prompt above the tail prompt: PLAN_OPTIONS refuses it, in every cell of the Options table; the portable
    # edition's cells computed again say why, as the add-in edition's cells do, not a bare #NUM!
    wb = Workbook.load(PORTABLE)
    wb.set("Prompt_Tokens_Per_Request", 3000).calculate()
    assert wb.refresh_frozen()
    cell = wb.get("Options!B6")
    assert isinstance(cell, CellError) and cell.code == "#NUM!"
    assert cell.message == "prompt_p95 must be at least the mean prompt (3,000), got 2,000"
    silent = [ref for ref, err in wb.errors().items() if ref.startswith("Options!") and not err.message]
    assert silent == []
