"""PLAN_OPTIONS_AT (xlsxplan/plan/cells.py): the table planned once per search, whatever order the cells come in."""

from __future__ import annotations

import pytest

from tests.helpers.counting import count_calls
from tests.helpers.hangs import SIZES, linear, plan_cells_taking_turns
from xlsxplan.headless import Workbook
from xlsxplan.plan import cells


@pytest.mark.slow
def test_cells_taking_turns_between_searches_plan_each_search_once(tmp_path, monkeypatch):
    """Issue 27: 2,000 PLAN_OPTIONS_AT cells took 61 s, 30 ms a cell: cells taking turns between nine searches
    planned again at every cell, as only the last eight planned were remembered. Now each search is planned once:
    the work (searches planned, cells read) grows with the cells, linearly, at 1x, 4x and 10x."""
    searches = count_calls(monkeypatch, cells, planned="plan_options", cells="_cell")
    work = {}
    for size in SIZES:
        monkeypatch.setattr(cells, "_tables", cells.Remembered(cells._REMEMBERED))  # nothing from another size or test
        monkeypatch.setattr(cells, "_seen", cells.Remembered(cells._REMEMBERED))
        searches.update(planned=0, cells=0)
        path = tmp_path / f"plan{size}.xlsx"
        path.write_bytes(plan_cells_taking_turns(2_007 * size))
        wb = Workbook.load(path).calculate()
        assert not wb.errors()
        assert searches == {"planned": 9, "cells": 2_007 * size}, (size, searches)
        work[size] = searches["planned"] + searches["cells"]
    assert linear(work), work
