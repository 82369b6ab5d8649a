"""Warnings about implausible inputs (xlsxplan/sheet/cells.py): one line an argument, whatever the elements."""

from __future__ import annotations

import pytest

from tests.helpers.hangs import linear, sequence_elements, suspicious_elements, up_to_a_quarter
from xlsxplan.cli import main
from xlsxplan.sheet import cells
from xlsxplan.sheet.cells import Warnings, collect_warnings


def test_an_arguments_warnings_share_one_line_with_a_count():
    with collect_warnings() as sink:
        for value in (60, 70, 60, 80):
            cells._warn(f"bandwidth_tb_s = {value} is outside the usual range", "bandwidth_tb_s")
        cells._warn("tflops = 1E+06 is outside the usual range", "tflops")
        cells._warn("a note", None)
        cells._warn("a note", None)
    assert isinstance(sink, Warnings) and sink == [
        "bandwidth_tb_s = 60 is outside the usual range (and 2 other values of bandwidth_tb_s outside it)",
        "tflops = 1E+06 is outside the usual range",
        "a note",
    ]


@pytest.mark.slow
def test_an_array_of_implausible_values_prints_one_line_in_linear_work(tmp_path, monkeypatch, capsys):
    """Issue 27: a formula over 120,000 implausible values printed a warning line each (107 s), each looked up in
    the lines before it. Now: one line with the count, each element one lookup, counted at 7,500 and 30,000
    elements (tests/helpers/hangs.py, up_to_a_quarter); at 1.2 million the workbook is refused in one line (past
    Excel's grid)."""
    added = {"calls": 0}
    add = Warnings.add

    def counted(self, message, key=None):
        added["calls"] += 1
        add(self, message, key)

    monkeypatch.setattr(Warnings, "add", counted)
    work = {}
    for size, n in up_to_a_quarter(120_000).items():
        added["calls"] = 0
        path = tmp_path / f"w{size}.xlsx"
        path.write_bytes(suspicious_elements(n))
        code = main(["recalc", str(path), "-o", str(tmp_path / f"out{size}.xlsx")])
        err = capsys.readouterr().err.strip().splitlines()
        if size == 10:
            assert code == 2 and len(err) == 1 and "outside Excel's grid" in err[0], err
            continue
        warnings = [line for line in err if line.startswith("xlsxplan: warning: ")]
        assert code == 0 and warnings == [
            "xlsxplan: warning: bandwidth_tb_s = 51.001 is outside the usual range 0.01 to 50: check its unit "
            f"(and {n - 1:,} other values of bandwidth_tb_s outside it)"
        ], err
        assert added["calls"] == n  # each element visited once
        work[size] = added["calls"]
    assert linear(work), work


@pytest.mark.slow
def test_an_array_a_formula_makes_prints_one_line_in_linear_work(tmp_path, monkeypatch, capsys):
    """The hang itself: a 4.9 kB workbook whose formula makes 120,000 implausible bandwidths with SEQUENCE printed a
    warning line each (107 s for recalc), each looked up in the lines before it. Now one line with the count, each
    element one warning added, counted at 7,500 and 30,000 elements (up_to_a_quarter); at 1.2 million elements
    (past the grid's rows) the cell is an error and recalc answers with no warning."""
    added = {"calls": 0}
    add = Warnings.add

    def counted(self, message, key=None):
        added["calls"] += 1
        add(self, message, key)

    monkeypatch.setattr(Warnings, "add", counted)
    work = {}
    for size, n in up_to_a_quarter(120_000).items():
        added["calls"] = 0
        path = tmp_path / f"s{size}.xlsx"
        path.write_bytes(sequence_elements(n))
        assert len(path.read_bytes()) < 5_000
        code = main(["recalc", str(path), "-o", str(tmp_path / f"out{size}.xlsx")])
        err = capsys.readouterr().err.strip().splitlines()
        warnings = [line for line in err if line.startswith("xlsxplan: warning: ")]
        if size == 10:  # answers, or refuses in one line
            assert (code == 0 and not warnings and added["calls"] == 0) or (code == 2 and len(err) == 1), err
            continue
        assert code == 0 and warnings == [
            "xlsxplan: warning: bandwidth_tb_s = 51.001 is outside the usual range 0.01 to 50: check its unit "
            f"(and {n - 1:,} other values of bandwidth_tb_s outside it)"
        ], err[:3]
        assert added["calls"] == n  # each element visited once
        work[size] = added["calls"]
    assert linear(work), work


def test_a_call_asks_only_about_arguments_that_have_a_usual_range(monkeypatch):
    from xlsxplan import registry

    fn = registry.FUNCTIONS["DECODE_TOKS_TOTAL"]
    ranged = [a.name for a in fn.args if a.domain is not None and a.domain.typical is not None]
    assert 0 < len(ranged) < len(fn.args)  # the test means something: some arguments have one, some not
    asked = []
    suspicion = cells._suspicion
    monkeypatch.setattr(cells, "_suspicion", lambda arg, value: asked.append(arg.name) or suspicion(arg, value))
    # values no other test gives, so that each argument's first is asked about here
    with collect_warnings() as sink:
        plain = cells.evaluate(fn, [72.71, 1.01, 2, 3.351, 94, 327680, 2300])
        odd = cells.evaluate(fn, [72.71, 1.01, 2, 3351, 94, 327680, 2300])  # TB/s given in GB/s
    # the second call repeats two of the three: it asks about the changed one alone
    assert asked == ranged + ["bandwidth_tb_s"]
    assert odd != plain and any("3351" in line or "3,351" in line for line in sink), sink


def test_a_repeated_value_answers_as_asked_anew_in_every_block(monkeypatch):
    # an argument's last answer is reused for an equal plain number of the same type; each block of warnings still
    # gets the warning, and a number of another type is asked about again
    from xlsxplan import registry

    fn = registry.FUNCTIONS["DECODE_TOKS_TOTAL"]
    asked = []
    suspicion = cells._suspicion
    monkeypatch.setattr(cells, "_suspicion", lambda arg, value: asked.append(value) or suspicion(arg, value))
    odd = [72.72, 1, 2, 3352.5, 94, 327680, 2300]
    for _ in range(2):
        with collect_warnings() as sink:
            cells.evaluate(fn, odd)
        assert [line for line in sink if "bandwidth_tb_s" in line] == [suspicion(fn.args[3], 3352.5)]
    assert asked.count(3352.5) == 1 and asked.count(72.72) == 1
    asked.clear()
    with collect_warnings() as sink:
        cells.evaluate(fn, [72.72, 1, 2, 3352, 94, 327680, 2300])  # an int where the float 3352.5 was asked
        cells.evaluate(fn, [72.72, 1, 2, 3352.0, 94, 327680, 2300])
        cells.evaluate(fn, [72.72, 1, 2, 3352.0, 94, 327680, 2300])
    assert [type(v) for v in asked] == [int, float]
    assert [line for line in sink if "bandwidth_tb_s" in line] == [suspicion(fn.args[3], 3352)]
