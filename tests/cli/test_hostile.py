"""What escapes a command's checks is one line and exit status 2; ``--debug`` shows the traceback."""

from __future__ import annotations

import pytest

from xlsxplan.cli import main


@pytest.fixture
def broken(monkeypatch):
    # a command whose code fails in a way no check foresaw
    import xlsxplan.cli.cmd_functions as functions

    def fail(args):
        raise RuntimeError("something nobody foresaw\nsecond line")

    real = functions.register

    def register(sub):
        real(sub)
        sub.choices["functions"].set_defaults(handler=fail)

    monkeypatch.setattr(functions, "register", register)


@pytest.mark.parametrize(
    "error, said",
    [
        (RuntimeError("boom"), "unexpected RuntimeError: boom"),
        (RecursionError("maximum recursion depth exceeded"), "the input nests too deeply to process"),
        (MemoryError(), "ran out of memory"),
        (ValueError("Exceeds the limit (4300 digits) for integer string conversion"), "unexpected ValueError"),
    ],
)
def test_what_escapes_is_one_line_and_exit_2(monkeypatch, capsys, error, said):
    import xlsxplan.cli.cmd_functions as functions

    real = functions.register

    def register(sub):
        real(sub)

        def fail(args):
            raise error

        sub.choices["functions"].set_defaults(handler=fail)

    monkeypatch.setattr(functions, "register", register)
    assert main(["functions"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"xlsxplan: error: {said}") and err.rstrip().endswith("(run with --debug for the traceback)")


@pytest.mark.parametrize("argv", [["--debug", "functions"], ["functions", "--debug"]])
def test_debug_anywhere_on_the_line_shows_the_traceback(broken, capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "RuntimeError: something nobody foresaw" in err
    assert err.rstrip().splitlines()[-1] == "xlsxplan: error: unexpected RuntimeError: something nobody foresaw"


def test_only_the_first_line_of_what_escapes_is_said(broken, capsys):
    assert main(["functions"]) == 2
    err = capsys.readouterr().err
    assert "second line" not in err and err.count("\n") == 1
