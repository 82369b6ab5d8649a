"""`xlsxplan recalc`: the command, its output, its refusals, and nothing lost when it is killed."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import zipfile

import openpyxl
import pytest

import xlsxplan as x
from tests.helpers import REPO
from tests.helpers.books import plan_book
from tests.helpers.hostile import CORPUS
from xlsxplan.cli import main
from xlsxplan.cli.cmd_recalc import split_assignment
from xlsxplan.errors import WorkbookError


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    return plan_book(tmp_path_factory.mktemp("cli") / "plan.xlsx")


@pytest.fixture
def book(plan, tmp_path):
    copy = tmp_path / "plan.xlsx"
    copy.write_bytes(plan.read_bytes())
    return copy


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_recalc_writes_beside_the_input_and_shows_cells_and_names(book, capsys):
    code, out, err = run(capsys, "recalc", book, "--set", "N_GPUs=4", "--show", "Outputs!B2:B3", "--show", "Params_B")
    assert code == 0
    batch = x.max_batch(72.7, 1, 327680, 2300, 4, 80)
    total = x.decode_tokens_per_s_total(72.7, 1, 4, 3.35, batch, 327680, 2300)
    decimals = 10 - len(str(int(total)))  # General shows 11 characters: the integer digits, the point, decimals
    assert out.splitlines() == [
        f"Outputs!B2  {batch}",
        f"Outputs!B3  {total:.{decimals}f}".rstrip("0").rstrip("."),
        "Inputs!B3   72.7  (Params_B)",
    ]
    written = book.with_name("plan.recalc.xlsx")
    assert err.startswith(f"wrote {written}; 1 error cell, e.g. Calc!B16: #NUM! kv_heads must be")
    assert openpyxl.load_workbook(written, data_only=True)["Outputs"]["B2"].value == batch
    assert openpyxl.load_workbook(written)["Inputs"]["B5"].value == 4  # the input set is saved with the result


@pytest.mark.slow
def test_the_summary_names_the_cause_not_a_cell_that_passes_it_on(capsys, tmp_path):
    # a wrong model name in the serving template breaks 176 cells downstream of it; the line names the one cell with
    # a reason of its own, not the first of those that only pass it on

    # the add-in edition, whose MODEL_SPEC gives the reason (the portable edition's lookup is a plain #N/A)
    template = REPO / "workbooks" / "serving_plan_functions.xlsx"
    ws = openpyxl.load_workbook(template)["Inputs"]
    row = next(r for r in range(1, ws.max_row + 1) if ws[f"A{r}"].value == "Model")
    out = tmp_path / "out.xlsx"
    code, _, err = run(capsys, "recalc", template, "-o", out, "--set", f"Inputs!H{row}=qwen 72b")  # the active case
    assert code == 0
    assert re.fullmatch(
        rf"wrote {re.escape(str(out))}; \d+ error cells, caused by Calculations!B\d+: #N/A model "
        r"'qwen 72b' is not in the catalog; did you mean Qwen2\.5-72B, .*\n",
        err.splitlines(True)[-1],
    )


def test_an_error_shown_exits_1_with_its_reason(book, capsys, tmp_path):
    code, out, _ = run(capsys, "recalc", book, "-o", tmp_path / "o.xlsx", "--show", "Calc!B16", "-q")
    assert code == 1
    assert out == "Calc!B16  #NUM! kv_heads must be a whole number from 1 to 1,000,000, got -1\n"


def test_json_report(book, capsys, tmp_path):
    out_path = tmp_path / "o.xlsx"
    code, out, _ = run(
        capsys,
        "recalc",
        book,
        "-o",
        out_path,
        "--json",
        "--set",
        "Model=Qwen2.5-7B",
        "--show",
        "Calc!B2",
        "--show",
        "Calc!B16",
    )
    report = json.loads(out)
    assert code == 1
    assert report["output"] == str(out_path)
    layers = x.model_spec("Qwen2.5-7B", "layers")
    assert report["shown"][0] == {"ref": "Calc!B2", "cell": "Calc!B2", "value": layers, "text": str(layers)}
    assert report["shown"][1]["value"] == {
        "error": "#NUM!",
        "message": "kv_heads must be a whole number from 1 to 1,000,000, got -1",
    }
    assert {e["cell"] for e in report["errors"]} == {"Calc!B16"}


def test_a_show_typo_fails_before_calculating_with_the_nearest_name(book, capsys, tmp_path, monkeypatch):
    from xlsxplan.headless.workbook import Workbook

    def forbidden(self, *args, **kwargs):
        raise AssertionError("calculated before the references were checked")

    monkeypatch.setattr(Workbook, "calculate", forbidden)
    out = tmp_path / "o5.xlsx"
    code, stdout, err = run(capsys, "recalc", book, "-o", out, "--show", "Param_B")
    assert (code, stdout) == (2, "")
    assert err == (
        "xlsxplan: error: the workbook has no sheet reference or defined name 'Param_B'; did you mean Params_B?\n"
    )
    code, _, err = run(capsys, "recalc", book, "-o", out, "--show", "Ouputs!B2")
    assert code == 2 and "no sheet named 'Ouputs'; did you mean Outputs?" in err
    assert not out.exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--show", "NoSuch"], "the workbook has no sheet reference or defined name 'NoSuch'; its names: "),
        (["--set", "Inputs!B3"], "--set 'Inputs!B3': write it as CELL=VALUE or NAME=VALUE, e.g. Inputs!B3=42"),
        (["--set", "Calc!B5=3"], "Calc!B5 holds a formula (=MAX_BATCH("),
    ],
)
def test_json_failures_print_the_error_as_json_too(book, capsys, tmp_path, argv, message):
    code, out, err = run(capsys, "recalc", book, "-o", tmp_path / "o.xlsx", "--json", *argv)
    assert code == 2
    assert json.loads(out)["error"].startswith(message) and list(json.loads(out)) == ["error"]
    assert err.startswith("xlsxplan: error: " + message) and err.count("\n") == 1
    assert not (tmp_path / "o.xlsx").exists()


def test_json_refusal_of_a_hostile_file(tmp_path, capsys):
    path = tmp_path / "hostile.xlsx"
    path.write_bytes(CORPUS["entity bomb"][0]())
    code, out, err = run(capsys, "recalc", path, "--json")
    assert code == 2
    assert json.loads(out) == {"error": err.removeprefix("xlsxplan: error: ").rstrip("\n")}
    assert "declares a DTD or entities" in out


def test_force_set_replaces_a_formula_in_the_copy(book, capsys, tmp_path):
    out = tmp_path / "o.xlsx"
    code, stdout, _ = run(
        capsys, "recalc", book, "-o", out, "--set", "Calc!B5=3", "--force-set", "--show", "Calc!B5", "-q"
    )
    assert (code, stdout) == (0, "Calc!B5  3\n")
    assert openpyxl.load_workbook(out)["Calc"]["B5"].value == 3
    assert openpyxl.load_workbook(book)["Calc"]["B5"].value.startswith("=MAX_BATCH(")


def test_shown_text_stays_on_one_line(book, capsys, tmp_path):
    code, out, _ = run(
        capsys,
        "recalc",
        book,
        "-o",
        tmp_path / "o.xlsx",
        "--set",
        'Inputs!B2="two\nlines\tand a \\"',
        "--show",
        "Inputs!B2",
        "-q",
    )
    assert code == 0
    assert out == "Inputs!B2  two\\nlines\\tand a \\\\\n"
    assert openpyxl.load_workbook(tmp_path / "o.xlsx")["Inputs"]["B2"].value == "two\nlines\tand a \\"


@pytest.mark.parametrize(
    "typed, expected",
    [("Inputs!B3=42", ("Inputs!B3", "42")), ("'A=B'!C1=x", ("'A=B'!C1", "x")), ("Name==1+1", ("Name", "=1+1"))],
)
def test_set_splits_at_the_first_equals_outside_a_quoted_sheet(typed, expected):
    assert split_assignment(typed) == expected


def test_a_malformed_set_is_a_usage_error(book, capsys):
    code, _, err = run(capsys, "recalc", book, "--set", "Inputs!B3")
    assert code == 2
    assert err == "xlsxplan: error: --set 'Inputs!B3': write it as CELL=VALUE or NAME=VALUE, e.g. Inputs!B3=42\n"
    with pytest.raises(WorkbookError, match="write it as CELL=VALUE"):
        split_assignment("=42")


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CORPUS))
def test_hostile_files_exit_2_with_one_line_and_write_nothing(name, tmp_path, capsys):
    path = tmp_path / "hostile.xlsx"
    path.write_bytes(CORPUS[name][0]())
    code, out, err = run(capsys, "recalc", path)
    assert code == 2 and out == ""
    assert err.startswith("xlsxplan: error: ") and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hostile.xlsx"]


# ---------------------------------------------------------------------------------------------------------------
# Nothing lost

_KILLER = """
import os, signal, sys, zipfile
mode = sys.argv[1]
if mode == "before-rename":
    os.replace = lambda src, dst: os.kill(os.getpid(), signal.SIGKILL)
elif mode == "mid-write":
    real = zipfile.ZipFile.writestr
    count = [0]
    def writestr(self, *args, **kwargs):
        count[0] += 1
        if count[0] == 4:  # the temporary file exists and holds three parts
            os.kill(os.getpid(), signal.SIGKILL)
        return real(self, *args, **kwargs)
    zipfile.ZipFile.writestr = writestr
from xlsxplan.cli import main
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["mid-write", "before-rename"])
def test_a_killed_recalc_leaves_the_previous_output_intact(book, tmp_path, mode):
    out = tmp_path / "out.xlsx"
    assert main(["recalc", str(book), "-o", str(out), "-q"]) == 0
    previous = out.read_bytes()
    input_before = book.read_bytes()
    result = subprocess.run(
        [sys.executable, "-c", _KILLER, mode, "recalc", str(book), "-o", str(out), "--set", "N_GPUs=8", "-q"],
        capture_output=True,
        timeout=300,
    )
    assert result.returncode == -9  # SIGKILL, arranged at a fixed point of the write
    assert out.read_bytes() == previous
    assert book.read_bytes() == input_before
    leftovers = [p for p in tmp_path.iterdir() if p.name not in ("plan.xlsx", "out.xlsx")]
    nameless = hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd")  # Linux: written with no name (fileio)
    if mode == "mid-write" and nameless:
        assert leftovers == []  # the half-written file had no name: nothing is left
    else:
        assert len(leftovers) == 1 and leftovers[0].name.startswith(".out.xlsx.") and leftovers[0].suffix == ".tmp"
    if mode == "mid-write" and not nameless:
        with pytest.raises(zipfile.BadZipFile):
            zipfile.ZipFile(leftovers[0])
    # the next run succeeds and replaces the output
    assert main(["recalc", str(book), "-o", str(out), "--set", "N_GPUs=8", "-q"]) == 0
    assert openpyxl.load_workbook(out)["Inputs"]["B5"].value == 8


def test_a_read_only_target_is_an_error_not_a_half_written_file(book, tmp_path, capsys):
    out = tmp_path / "out.xlsx"
    out.write_bytes(b"previous")
    out.chmod(0o444)
    try:
        code, _, err = run(capsys, "recalc", book, "-o", out)
    finally:
        out.chmod(0o644)
    assert code == 2
    assert err == f"xlsxplan: error: cannot write {out}: the file is read-only\n"
    assert out.read_bytes() == b"previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.xlsx", "plan.xlsx"]


def test_a_target_open_in_excel_is_an_error(book, tmp_path, capsys):
    out = tmp_path / "out.xlsx"
    out.write_bytes(b"previous")
    (tmp_path / "~$out.xlsx").write_bytes(b"owner")
    code, _, err = run(capsys, "recalc", book, "-o", out)
    assert code == 2
    assert err == f"xlsxplan: error: cannot write {out}: it is open in Excel (~$out.xlsx exists); close it first\n"
    assert out.read_bytes() == b"previous"


def test_the_input_changes_only_when_named_as_output(book, capsys):
    before = book.read_bytes()
    assert run(capsys, "recalc", book, "-q")[0] == 0
    assert book.read_bytes() == before
    assert run(capsys, "recalc", book, "-o", book, "--set", "N_GPUs=4", "-q")[0] == 0
    assert book.read_bytes() != before
    assert openpyxl.load_workbook(book)["Inputs"]["B5"].value == 4


# ---------------------------------------------------------------------------------------------------------------
# Progress


@pytest.mark.slow
def test_quiet_when_piped(book, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "xlsxplan", "recalc", str(book), "-o", str(tmp_path / "o.xlsx")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0
    assert result.stdout == ""
    assert result.stderr.startswith(f"wrote {tmp_path / 'o.xlsx'}; 1 error cell")
    assert "\r" not in result.stderr
    assert not any(phase in result.stderr for phase in ("loading", "calculating", "writing"))


@pytest.mark.slow
def test_progress_bar_on_a_terminal(book, tmp_path):
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))  # a terminal 80 columns wide
    proc = subprocess.Popen(
        [sys.executable, "-m", "xlsxplan", "recalc", str(book), "-o", str(tmp_path / "o.xlsx")],
        stdout=secondary,
        stderr=secondary,
        close_fds=True,
    )
    os.close(secondary)
    chunks = []
    while True:
        try:
            data = os.read(primary, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=300)
    os.close(primary)
    shown = b"".join(chunks).decode(errors="replace")
    assert proc.returncode == 0
    assert "loading" in shown and "cell" in shown
    assert "calculating" in shown and "call" in shown  # calls of xlsxplan's functions counted, not a frozen 100%
    assert "writing" in shown and "part" in shown
    assert f"wrote {tmp_path / 'o.xlsx'}" in shown


def _dropdowns(path):
    """A sheet with two dropdowns as the templates write them: a precision Excel refuses any other value for, and an
    accelerator that takes a name of one's own (no error shown), its list on another sheet."""
    from openpyxl.worksheet.datavalidation import DataValidation

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Inputs"
    lists = wb.create_sheet("Lists")
    for i, gpu in enumerate(("H100-SXM", "H200", "H800"), start=1):
        lists[f"A{i}"] = gpu
    ws["A1"], ws["B1"], ws["C1"] = "bf16", "H100-SXM", '=A1&" on "&B1'
    ws["D1"], ws["E1"] = 2, True
    for cell, items in (("D1", '"1,2,4"'), ("E1", '"TRUE,FALSE"')):  # an inline list's items are text
        dv = DataValidation(type="list", formula1=items, showErrorMessage=True)
        ws.add_data_validation(dv)
        dv.add(cell)
    strict = DataValidation(type="list", formula1='"bf16,fp8"', showErrorMessage=True)
    strict.error = "Weight precision: pick a name from the list"
    loose = DataValidation(type="list", formula1="Lists!$A$1:$A$3", showErrorMessage=False)
    for dv, cell in ((strict, "A1"), (loose, "B1")):
        ws.add_data_validation(dv)
        dv.add(cell)
    wb.save(path)
    return path


def test_a_value_a_dropdown_does_not_offer_is_refused_as_excel_refuses_it_or_set_with_a_warning(capsys, tmp_path):
    book = _dropdowns(tmp_path / "d.xlsx")
    out = tmp_path / "o.xlsx"
    # Excel stops at a value its list refuses: so does --set, in one line naming the input and the nearest value
    code, stdout, err = run(capsys, "recalc", book, "-o", out, "--set", "Inputs!A1=fp9")
    assert code == 2 and stdout == "" and not out.exists()
    assert err == (
        "xlsxplan: error: --set Inputs!A1: 'fp9' is not in its cell's dropdown (did you mean fp8?); Excel refuses it "
        "too: Weight precision: pick a name from the list\n"
    )
    # a list compares text as Excel's does, without regard to case
    assert run(capsys, "recalc", book, "-o", out, "--set", "Inputs!A1=FP8", "--show", "Inputs!C1", "-q")[:2] == (
        0,
        "Inputs!C1  FP8 on H100-SXM\n",
    )
    # a number and a flag are compared as Excel compares them with the list's text: 4 is listed, 3 is not, FALSE is
    for typed, code in (("4", 0), ("3", 2), ("false", 0), ("1", 0)):
        cell = "D1" if typed.isdigit() else "E1"
        assert run(capsys, "recalc", book, "-o", out, "--set", f"Inputs!{cell}={typed}", "-q")[0] == code, typed
    assert run(capsys, "recalc", book, "-o", out, "--set", "Inputs!E1=1", "-q")[0] == 2  # a number is no flag
    # a list that shows no error keeps any name (a model or accelerator of one's own): set, and said first
    code, stdout, err = run(capsys, "recalc", book, "-o", out, "--set", "Inputs!B1=H900", "--show", "Inputs!C1")
    assert code == 0 and stdout == "Inputs!C1  bf16 on H900\n"
    assert err.splitlines()[0] == (
        "xlsxplan: warning: --set Inputs!B1: 'H900' is not in its cell's dropdown (did you mean H800, H200?): set "
        "anyway, as Excel keeps a value its dropdown does not list"
    )


def test_a_number_a_cells_rule_refuses_is_refused_in_one_line_as_excel_refuses_it(capsys, tmp_path):
    # the templates' number rules (xlsxplan.templates.book.validation_for): a share between two bounds ("decimal"),
    # and a positive number (a custom AND(ISNUMBER(B1),B1>0,B1<=1E+15), Excel's "between" holding both ends)
    from xlsxplan.domains import Domain, positive
    from xlsxplan.templates.book import add_validation, validation_for

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Inputs"
    ws["A1"], ws["B1"], ws["C1"] = 0.95, 200_000, "=A1*B1"
    add_validation(ws, validation_for(Domain("number", 0.5, 1.0), "Tail percentile"), "A1")
    add_validation(ws, validation_for(positive(1e15), "Requests per day"), "B1")
    book, out = tmp_path / "n.xlsx", tmp_path / "o.xlsx"
    wb.save(book)
    for typed, said in (
        ("A1=0.3", "--set Inputs!A1: 0.3 is not a number from 0.5 to 1; Excel refuses it too: Tail percentile must"),
        ("B1=abc", "--set Inputs!B1: 'abc' is refused, as Excel refuses it: Requests per day must be a positive"),
        ("B1=0", "--set Inputs!B1: 0 is refused, as Excel refuses it: Requests per day must be a positive number"),
        ("B1=-5", "--set Inputs!B1: -5 is refused, as Excel refuses it"),
    ):
        code, stdout, err = run(capsys, "recalc", book, "-o", out, "--set", f"Inputs!{typed}")
        assert code == 2 and stdout == "" and not out.exists(), typed
        assert err.startswith(f"xlsxplan: error: {said}") and err.count("\n") == 1, err
    # what the rules allow is set, with no word said
    code, stdout, err = run(capsys, "recalc", book, "-o", out, "--set", "Inputs!A1=0.5", "--set", "Inputs!B1=1000",
                            "--show", "Inputs!C1", "-q")  # fmt: skip
    assert (code, stdout, err) == (0, "Inputs!C1  500\n", "")
