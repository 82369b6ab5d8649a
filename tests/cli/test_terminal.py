"""No command hands a terminal raw text from a workbook, a config, a catalog or its own arguments (issue 27).

Every command's output goes through xlsxplan.cli.common.escaped_output: an escape sequence (``\\x1b[2J`` clears the
screen), a carriage return or a bidi override (``\\u202e`` reverses what follows) is written as ``\\uNNNN``,
whichever message quotes it: an unknown name, an argparse error, a path, a config's field, a cell's text.
"""

from __future__ import annotations

import json

import openpyxl
import pytest

from xlsxplan.cli import main
from xlsxplan.cli.common import EscapedStream

HOSTILE = "\x1b[2J\u202e"
IN_CELLS = "\u202e\u2066"  # a cell cannot hold an escape character (XML 1.0), a bidi override it can
RAW = ("\x1b", "\u202e", "\u2066", "\r")


@pytest.fixture
def files(tmp_path):
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "S"
    ws["A1"], ws["B1"], ws["C1"] = "evil" + IN_CELLS, f'=MODEL_SPEC("{IN_CELLS}\\x","layers")', '=A1&"x"'
    wb.defined_names["Inp"] = openpyxl.workbook.defined_name.DefinedName("Inp", attr_text="S!$A$1")
    book = tmp_path / "book.xlsx"
    wb.save(book)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"_name_or_path": "x" + HOSTILE, "model_type": HOSTILE, "architectures": [HOSTILE]}))
    return {"book": str(book), "config": str(config), "out": str(tmp_path / "out.xlsx"), "dir": tmp_path}


def _argvs(f):
    book, out = f["book"], f["out"]
    return [
        ["eval", f'=MODEL_SPEC("{HOSTILE}","layers")'],
        ["eval", "=1", "--format", HOSTILE],
        ["model", "show", HOSTILE],
        ["model", "add", f["config"]],
        ["model", "add", f["config"], "--name", "ok-name"],
        ["plan", "--model", HOSTILE, "--requests-per-day", "1000", "--prompt-tokens", "1000", "--output-tokens", "200"],
        ["plan", "--model", "Llama-3.1-70B", "--gpus", HOSTILE],
        ["recalc", book, "-o", out, "--set", f"{HOSTILE}=1"],
        ["recalc", book, "-o", out, "--show", "S!C1", "--set", f"S!A2={HOSTILE}"],
        ["recalc", book, "-o", out, "--json", "--show", "S!A1"],
        ["recalc", str(f["dir"] / f"{HOSTILE}.xlsx")],
        ["inputs", book],
        ["inputs", book, "--json"],
        ["excel", book],
        ["functions", HOSTILE],
    ]


def test_no_command_prints_an_escape_sequence_or_a_bidi_override_raw(files, capsys):
    for argv in _argvs(files):
        try:
            main(argv)
        except SystemExit:
            pass
        out, err = capsys.readouterr()
        assert not [ch for ch in RAW if ch in out + err], (argv, out, err)
    main(["recalc", files["book"], "-o", files["out"], "--set", f"{HOSTILE}=1"])
    assert "--set \\u001b[2J\\u202e: no input" in capsys.readouterr().err  # escaped, still readable


def test_json_stays_json_and_line_breaks_and_tabs_stay(files, capsys):
    main(["recalc", files["book"], "-o", files["out"], "--json", "--show", "S!A1"])
    report = json.loads(capsys.readouterr().out)
    assert report["shown"][0]["value"] == "evil" + IN_CELLS  # JSON's own \\u escapes, read back as the text


def test_the_stream_escapes_controls_but_a_line_break_and_a_tab():
    import io

    raw = io.StringIO()
    EscapedStream(raw).write("a\tb\nc\x1b[31md\re\u202ef\x9b")
    assert raw.getvalue() == "a\tb\nc\\u001b[31md\\u000de\\u202ef\\u009b"


def test_a_note_quoting_a_backslash_is_written(files, capsys):
    """A note (the error of B1) quoting the workbook's text with a backslash made recalc fail: the notes were put
    in a regular expression's replacement template ("bad escape")."""
    assert main(["recalc", files["book"], "-o", files["out"]]) == 0, capsys.readouterr().err
    ws = openpyxl.load_workbook(files["out"])["S"]
    assert "is not in the catalog" in ws["B1"].comment.text
