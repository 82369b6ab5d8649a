"""`xlsxplan inputs` on many names and many data-validation rules: indexed, not scanned (issue 27)."""

from __future__ import annotations

import pytest

from tests.helpers.hangs import SIZES, linear, names_and_rules
from xlsxplan.cli import cmd_inputs, main
from xlsxplan.headless.layout import Layout, Validation


@pytest.mark.slow
def test_many_names_and_rules_are_looked_up_in_linear_work(tmp_path, monkeypatch, capsys):
    """Issue 27: 20,000 names and 40,000 validation rules took over 90 s: each input looked through every rule
    (Validation.covers, 800 million calls) and up every row above it for its Unit heading. Now the rules are indexed
    once a sheet and the headings once a grid: the work counted (rules tested one by one, lookups, entries indexed,
    nodes visited, grid rows passed) grows linearly from 1x to 4x; at 10x it answers, or refuses in one line."""
    work = {"covers": 0, "lookups": 0, "indexed": 0, "visited": 0, "rows": 0}
    _count(monkeypatch, work)
    nearest = cmd_inputs._Sheets._nearest

    def counted_nearest(self, sheet):
        out = nearest(self, sheet)
        work["rows"] = len(out)
        return out

    monkeypatch.setattr(cmd_inputs._Sheets, "_nearest", counted_nearest)
    total = {}
    for size in SIZES:
        work.update(covers=0, lookups=0, indexed=0, visited=0, rows=0)
        path = tmp_path / f"n{size}.xlsx"
        path.write_bytes(names_and_rules(20_000 * size, 40_000 * size))
        code = main(["inputs", str(path)])
        out, err = capsys.readouterr()
        if size == 10:  # answers, or refuses in one line
            assert (code == 0 and work["covers"] == 0) or (code == 2 and len(err.strip().splitlines()) == 1), err
            continue
        assert code == 0, err
        lines = out.splitlines()
        assert len(lines) == 1 + 20_000 * size and lines[1].split() == ["Input_2", "Sheet1!B2", "2", "GB"], lines[:3]
        assert work["covers"] == 0 and work["lookups"] == 20_000 * size and work["rows"] == 20_000 * size + 1
        total[size] = sum(work.values())
    assert linear(total), total


def _count(monkeypatch, work: dict[str, int], guard: int = 0) -> None:
    """Count the rules tested one by one (Validation.covers), the lookups, the entries of each sheet's index and the
    nodes (or, in a list looked through in order, the ranges) each lookup visits; past ``guard`` ranges visited, stop
    (a quadratic lookup must fail the test, not take the machine's time)."""
    covers, lookup = Validation.covers, Layout.validation_at

    def counted_covers(self, row, col):
        work["covers"] += 1
        return covers(self, row, col)

    def counted_lookup(self, title, row, col):
        work["lookups"] += 1
        found = lookup(self, title, row, col)
        index = self._rule_index[title]
        if isinstance(index, tuple):  # cells indexed one by one, the larger ranges looked through in order
            cells, large = index
            work["indexed"] = len(cells) + len(large)
            work["visited"] += len(large)
        else:
            work["indexed"], work["visited"] = index.entries, index.visited
        if guard and work["visited"] > guard:
            raise RuntimeError(f"{work['visited']:,} ranges visited for {work['lookups']:,} lookups")
        return found

    monkeypatch.setattr(Validation, "covers", counted_covers)
    monkeypatch.setattr(Layout, "validation_at", counted_lookup)


@pytest.mark.slow
def test_large_validation_ranges_beside_the_inputs_are_looked_up_in_linear_work(tmp_path, monkeypatch, capsys):
    """20,000 inputs beside 40,000 validation ranges of 100 cells each (over 64, so not indexed cell by cell): each
    input looked through every range, 800 million tests. Now the ranges are indexed once a sheet by rows and
    columns (a segment tree of step functions): the entries indexed and the nodes each lookup visits (about log2 of
    the ranges) grow linearly, up to that log, from 1x to 4x; at 10x (200,000 inputs, 400,000 ranges) it answers, or
    refuses in one line."""
    work = {"covers": 0, "lookups": 0, "indexed": 0, "visited": 0}
    _count(monkeypatch, work, guard=100 * 40_000 * 10)
    total = {}
    for size in SIZES:
        work.update(covers=0, lookups=0, indexed=0, visited=0)
        path = tmp_path / f"large{size}.xlsx"
        path.write_bytes(names_and_rules(20_000 * size, 40_000 * size, span=100))
        code = main(["inputs", str(path)])
        out, err = capsys.readouterr()
        if size == 10:
            assert (code == 0 and work["visited"] <= 25 * work["lookups"]) or (
                code == 2 and len(err.strip().splitlines()) == 1 and "the limit is" in err
            ), err
            continue
        assert code == 0, err
        lines = out.splitlines()
        assert len(lines) == 1 + 20_000 * size and lines[1].split() == ["Input_2", "Sheet1!B2", "2", "GB"], lines[:3]
        assert work["covers"] == 0 and work["lookups"] == 20_000 * size
        assert work["visited"] <= 25 * work["lookups"], work  # log2 of 80,000 row ends, and the root
        total[size] = sum(work.values())
    assert linear(total), total
