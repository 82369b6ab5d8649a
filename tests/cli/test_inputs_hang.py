"""`xlsxplan inputs` on many names and many data-validation rules: indexed, not scanned (issue 27)."""

from __future__ import annotations

import pytest

from tests.helpers.hangs import INPUTS_SIZES, count_inputs_work, linear, names_and_rules
from xlsxplan.cli import cmd_inputs, main


@pytest.mark.slow
def test_many_names_and_rules_are_looked_up_in_linear_work(tmp_path, monkeypatch, capsys):
    """Issue 27: 20,000 names and 40,000 validation rules took over 90 s: each input looked through every rule
    (Validation.covers, 800 million calls) and up every row above it for its Unit heading. Now the rules are indexed
    once a sheet and the headings once a grid: the work counted (rules tested one by one, lookups, entries indexed,
    nodes visited, grid rows passed) grows linearly from a sixteenth of that size to a quarter of it
    (tests/helpers/hangs.py, INPUTS_SIZES); at 10 times it the workbook lists 400,000 validation areas, refused in
    one line before it is read (SECURITY.md: max_areas)."""
    work = {"covers": 0, "lookups": 0, "indexed": 0, "visited": 0, "rows": 0}
    count_inputs_work(monkeypatch, work)
    nearest = cmd_inputs._Sheets._nearest

    def counted_nearest(self, sheet):
        out = nearest(self, sheet)
        work["rows"] = len(out)
        return out

    monkeypatch.setattr(cmd_inputs._Sheets, "_nearest", counted_nearest)
    total = {}
    for size, names in INPUTS_SIZES.items():
        work.update(covers=0, lookups=0, indexed=0, visited=0, rows=0)
        path = tmp_path / f"n{size}.xlsx"
        path.write_bytes(names_and_rules(names, 2 * names))
        code = main(["inputs", str(path)])
        out, err = capsys.readouterr()
        if size == 10:  # refused in one line before any lookup: 400,000 areas, over Limits.max_areas
            assert code == 2 and len(err.strip().splitlines()) == 1, err
            assert "areas in its data-validation" in err and "the limit is 200,000" in err and work["lookups"] == 0, err
            continue
        assert code == 0, err
        lines = out.splitlines()
        assert len(lines) == 1 + names and lines[1].split() == ["Input_2", "Sheet1!B2", "2", "GB"], lines[:3]
        assert work["covers"] == 0 and work["lookups"] == names and work["rows"] == names + 1
        total[size] = sum(work.values())
    assert linear(total), total
