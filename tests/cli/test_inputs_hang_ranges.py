"""`xlsxplan inputs` beside data-validation ranges over 64 cells tall: indexed by rows and columns, never looked
through in order (a file of its own so that the test runner's two workers share the two generators)."""

from __future__ import annotations

import pytest

from tests.helpers.hangs import INPUTS_SIZES, count_inputs_work, linear, names_and_rules
from xlsxplan.cli import main


@pytest.mark.slow
def test_large_validation_ranges_beside_the_inputs_are_looked_up_in_linear_work(tmp_path, monkeypatch, capsys):
    """20,000 inputs beside 40,000 validation ranges of 100 cells each (over 64, so not indexed cell by cell): each
    input looked through every range, 800 million tests. Now the ranges are indexed once a sheet by rows and
    columns (a segment tree of step functions): the entries indexed and the nodes each lookup visits (about log2 of
    the ranges) grow linearly, up to that log, from a sixteenth of that size to a quarter of it (INPUTS_SIZES); at
    10 times it (200,000 inputs, 400,000 ranges) the workbook is refused in one line before it is read
    (SECURITY.md: max_areas)."""
    work = {"covers": 0, "lookups": 0, "indexed": 0, "visited": 0}
    count_inputs_work(monkeypatch, work, guard=100 * 40_000 * 10)
    total = {}
    for size, names in INPUTS_SIZES.items():
        work.update(covers=0, lookups=0, indexed=0, visited=0)
        path = tmp_path / f"large{size}.xlsx"
        path.write_bytes(names_and_rules(names, 2 * names, span=100))
        code = main(["inputs", str(path)])
        out, err = capsys.readouterr()
        if size == 10:  # refused in one line before any lookup: 400,000 areas, over Limits.max_areas
            assert code == 2 and len(err.strip().splitlines()) == 1, err
            assert "areas in its data-validation" in err and "the limit is 200,000" in err and work["lookups"] == 0, err
            continue
        assert code == 0, err
        lines = out.splitlines()
        assert len(lines) == 1 + names and lines[1].split() == ["Input_2", "Sheet1!B2", "2", "GB"], lines[:3]
        assert work["covers"] == 0 and work["lookups"] == names
        assert work["visited"] <= 25 * work["lookups"], work  # log2 of 80,000 row ends, and the root
        total[size] = sum(work.values())
    assert linear(total), total
