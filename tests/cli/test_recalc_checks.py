"""`xlsxplan recalc` says what the workbook's checks say: the master check, and every check that failed, on stderr;
with ``--strict`` a master check that says ERROR exits 1. A workbook without checks gets nothing of the kind."""

from __future__ import annotations

import json
import re
from pathlib import Path

import openpyxl
import pytest

from tests.helpers import REPO
from tests.helpers.books import add_name, plan_book
from xlsxplan.cli import main

ROOT = REPO
# the add-in edition: in the portable one a changed target also makes the Options table's values stale, one more
# failed check (tests/templates/test_portable.py)
SERVING = ROOT / "workbooks" / "serving_plan_functions.xlsx"
TRAINING = ROOT / "workbooks" / "training_plan.xlsx"


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def _rows(path: Path) -> tuple[str, dict[str, str], int]:
    """The master check's cell, {label: cell} of the other checks, and how many there are, read from the Checks
    sheet with openpyxl: column A labels, column B formulas."""
    ws = openpyxl.load_workbook(path)["Checks"]
    master, checks = "", {}
    for r in range(3, ws.max_row + 1):
        label, value = ws[f"A{r}"].value, ws[f"B{r}"].value
        if isinstance(value, str) and value.startswith("="):
            if str(label).startswith("Master check"):
                master = f"Checks!B{r}"
            else:
                checks[label] = f"Checks!B{r}"
    return master, checks, len(checks)


@pytest.mark.slow
def test_an_unreachable_target_is_reported_with_the_failed_check(capsys, tmp_path):
    master, checks, count = _rows(SERVING)
    args = ["recalc", SERVING, "-o", tmp_path / "o.xlsx", "--set", "Time_To_First_Token_Target=0.05"]
    code, out, err = run(capsys, *args, "--show", "Outputs!B2")
    assert code == 0
    assert out.split()[-1] == "ERROR"  # --show of a sheet's header shows the master check as the sheet does
    lines = err.splitlines()
    failed = checks["First-token target unreachable even at batch 1"]
    assert lines[0] == f"master check {master}: ERROR, 1 of {count} checks failed"
    assert re.fullmatch(
        rf"  {re.escape(failed)}  First-token target unreachable even at batch 1 \(BATCH_FOR_TTFT .*\)", lines[1]
    )
    assert lines[2].startswith("wrote ")


@pytest.mark.slow
def test_strict_exits_1_when_the_master_check_says_error(capsys, tmp_path):
    args = ["recalc", SERVING, "-o", tmp_path / "o.xlsx", "-q", "--strict"]
    code, _, err = run(capsys, *args, "--set", "Latency_Target=500")
    assert code == 1
    assert "Decode-speed target unreachable even at batch 1" in err
    code, _, err = run(capsys, *args)
    assert code == 0 and err == ""  # all checks pass: -q says nothing


@pytest.mark.slow
def test_every_failed_check_is_listed(capsys, tmp_path):
    _, checks, _ = _rows(SERVING)
    args = ["recalc", SERVING, "-o", tmp_path / "o.xlsx", "-q", "--set", "Latency_Target=500"]
    code, _, err = run(capsys, *args, "--set", "Time_To_First_Token_Target=0.05")
    assert code == 0
    listed = [line.split()[0] for line in err.splitlines()[1:]]
    assert listed == [
        checks["Decode-speed target unreachable even at batch 1"],
        checks["First-token target unreachable even at batch 1"],
    ]
    assert err.splitlines()[0].endswith(f", 2 of {len(checks)} checks failed")


@pytest.mark.slow
@pytest.mark.parametrize("template", [SERVING, TRAINING], ids=["serving", "training"])
def test_a_clean_plan_says_so_unless_quiet(template, capsys, tmp_path):
    master, _, count = _rows(template)
    code, _, err = run(capsys, "recalc", template, "-o", tmp_path / "o.xlsx")
    assert code == 0
    assert err.splitlines()[0] == f"master check {master}: OK, all {count} checks pass"


@pytest.mark.slow
def test_json_carries_the_checks(capsys, tmp_path):
    master, checks, count = _rows(SERVING)
    args = ["recalc", SERVING, "-o", tmp_path / "o.xlsx", "--json", "--set", "Latency_Target=500"]
    code, out, err = run(capsys, *args)
    report = json.loads(out)
    assert code == 0
    assert report["checks"]["master"] == {
        "cell": master,
        "label": "Master check: 1 if any problem",
        "value": 1,
        "ok": False,
    }
    assert report["checks"]["count"] == count
    assert [c["cell"] for c in report["checks"]["failed"]] == [
        checks["Decode-speed target unreachable even at batch 1"]
    ]
    assert report["checks"]["failed"][0]["label"] == "Decode-speed target unreachable even at batch 1"
    assert err.startswith(f"master check {master}: ERROR")  # the warning is on stderr too


def test_a_workbook_without_checks_gets_no_check_line(capsys, tmp_path):
    book = plan_book(tmp_path / "plan.xlsx")
    code, _, err = run(capsys, "recalc", book, "-o", tmp_path / "o.xlsx", "--strict", "--json")
    assert code == 0
    assert "master check" not in err
    code, out, _ = run(capsys, "recalc", book, "-o", tmp_path / "o.xlsx", "--json")
    assert json.loads(out)["checks"] is None


def _own_checks(path: Path, by_name: bool) -> Path:
    """A workbook of one's own: two checks and a master check on a sheet called "Tests" (found by the defined name
    Master_Check) or "Checks" (found by its label), label in A, the check's formula in C, a note in D."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Inputs"
    ws["A1"], ws["B1"] = "Budget", 100
    ws["A2"], ws["B2"] = "Spend", 120
    sheet = wb.create_sheet("Tests" if by_name else "Checks")
    sheet.append(("Check", "", "Result", "Why"))
    sheet.append(("Spend over budget", "", "=IF(Inputs!B2>Inputs!B1,1,0)", "Spend must stay within the budget"))
    sheet.append(("Budget not positive", "", "=IF(Inputs!B1<=0,1,0)", "A budget is above zero"))
    sheet.append(("Spend is text", "", "=IF(ISTEXT(Inputs!B2),1,0)", ""))
    sheet.append(("Overall" if by_name else "Master check", "", "=MIN(1,SUM(C2:C4))", ""))
    if by_name:
        add_name(wb, "Master_Check", "Tests!$C$5")
    wb.save(path)
    return path


@pytest.mark.parametrize("by_name", [True, False], ids=["defined-name", "checks-sheet"])
def test_any_workbook_with_a_master_check_is_read(by_name, capsys, tmp_path):
    book = _own_checks(tmp_path / "own.xlsx", by_name)
    sheet = "Tests" if by_name else "Checks"
    code, _, err = run(capsys, "recalc", book, "-o", tmp_path / "o.xlsx", "-q", "--strict")
    assert code == 1
    assert err.splitlines() == [
        f"master check {sheet}!C5: ERROR, 1 of 3 checks failed",
        f"  {sheet}!C2  Spend over budget (Spend must stay within the budget)",
    ]
    code, _, err = run(capsys, "recalc", book, "-o", tmp_path / "o.xlsx", "--strict", "--set", "Inputs!B2=80")
    assert code == 0
    assert err.splitlines()[0] == f"master check {sheet}!C5: OK, all 3 checks pass"
