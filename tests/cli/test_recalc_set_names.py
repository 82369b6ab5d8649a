"""`xlsxplan recalc --set` with names the workbook does not have: every one reported at once, each on its own line
with the names it is closest to, exit status 2, and nothing calculated or written."""

from __future__ import annotations

import json

import pytest

from tests.helpers import REPO
from xlsxplan.cli import main

SERVING = REPO / "workbooks" / "serving_plan.xlsx"


def test_every_unknown_name_is_reported_at_once_with_suggestions(capsys, tmp_path, monkeypatch):
    from xlsxplan.headless.workbook import Workbook

    def forbidden(self, *args, **kwargs):
        raise AssertionError("calculated although a --set names nothing")

    monkeypatch.setattr(Workbook, "calculate", forbidden)
    out = tmp_path / "o.xlsx"
    argv = [
        "recalc",
        str(SERVING),
        "-o",
        str(out),
        "--set",
        "Requests_Per_Dy=500000",
        "--set",
        "Latency_Target=60",
        "--set",
        "Time_To_First_Token_Targt=3",
        "--set",
        "Zzzqx=1",
    ]
    code = main(argv)
    err = capsys.readouterr().err.splitlines()
    assert code == 2
    assert not out.exists()
    assert (
        err[0]
        == "xlsxplan: error: --set Requests_Per_Dy: no input or cell of that name; did you mean Requests_Per_Day?"
    )
    assert err[1] == (
        "xlsxplan: error: --set Time_To_First_Token_Targt: no input or cell of that name; did you mean "
        "Time_To_First_Token_Target?"
    )
    assert err[2].startswith("xlsxplan: error: --set Zzzqx: no input or cell of that name; `xlsxplan inputs ")
    assert len(err) == 3


def test_a_sheet_typo_and_a_name_typo_together(capsys, tmp_path):
    code = main(
        ["recalc", str(SERVING), "-o", str(tmp_path / "o.xlsx"), "--set", "Inptus!B24=1", "--set", "Peak_Hour_Factr=2"]
    )
    err = capsys.readouterr().err.splitlines()
    assert code == 2
    assert err[0].startswith(
        "xlsxplan: error: --set Inptus!B24: the workbook has no sheet named 'Inptus'; did you mean Inputs?"
    )
    assert err[1].endswith("did you mean Peak_Hour_Factor?")


@pytest.mark.parametrize("flag", ["--json"])
def test_json_lists_every_problem(flag, capsys, tmp_path):
    code = main(
        [
            "recalc",
            str(SERVING),
            "-o",
            str(tmp_path / "o.xlsx"),
            flag,
            "--set",
            "Requests_Per_Dy=1",
            "--set",
            "Peak_Hour_Factr=2",
        ]
    )
    report = json.loads(capsys.readouterr().out)
    assert code == 2
    assert [e.split(":")[0] for e in report["errors"]] == ["--set Requests_Per_Dy", "--set Peak_Hour_Factr"]
    assert report["error"] == report["errors"][0]


@pytest.mark.slow
def test_a_scenario_row_is_set_by_the_name_inputs_lists_for_it(capsys, tmp_path):
    # `xlsxplan inputs` lists a scenario row's input as "GPUs_Per_Replica (case 2)" with its cell, Inputs!H23: --set
    # takes that name as listed, and sets the cell; a case no row has says where to look, never "did you mean" the
    # name that holds the formula
    out = tmp_path / "o.xlsx"
    assert main(["inputs", str(SERVING), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["inputs"]
    (row,) = [r for r in listed if r["name"] == "GPUs_Per_Replica" and r["case"] == 2]
    code = main(["recalc", str(SERVING), "-o", str(out), "--set", "GPUs_Per_Replica (case 2)=4", "--show",
                 row["set"], "-q"])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0 and captured.out.split() == [row["set"], "4"]
    code = main(["recalc", str(SERVING), "-o", str(out), "--set", "GPUs_Per_Replica (case 9)=4"])
    err = capsys.readouterr().err
    assert code == 2 and "--set GPUs_Per_Replica (case 9): no scenario row has that case; `xlsxplan inputs" in err
