"""The plan search's table one cell at a time, for a sheet that shows it cell by cell.

PLAN_OPTIONS spills the ranked table (:func:`xlsxplan.plan.search.plan_options`). A sheet that cannot hold a spilled or
array result for good (a saved array formula's other cells keep cached values, which a headless engine that spills
reads as occupied) shows the table a cell each; PLAN_OPTIONS_AT gives the cell at a row and column of the same
table, so that every cell carries one value rather than the whole table. The table is planned once for a set of
arguments and remembered (the :data:`_REMEMBERED` used last: a sheet whose cells take turns between many searches
plans each once, not once a cell), read against the same catalog, prices and calibration; the arguments of a
search are checked once per distinct set (as the cells gave them, each with its type), each cell's row and column
every call, so that a sheet of thousands of cells pays for its arguments once.
"""

from __future__ import annotations

import functools
from typing import Any

from .. import calibration, catalog
from ..domains import (
    Count,
    checked,
    format_number,
)
from ..errors import OutOfRangeError
from .inputs import REQUIRED, PlanInput, with_inputs
from .search import plan_options

__all__ = ["NONE_SHOWN", "Remembered", "catalog_state", "plan_options_at"]

NONE_SHOWN = "-"
"""What a cell shows where the option has no such figure (PLAN_OPTIONS's empty text): a cell whose cached value is
empty text is recalculated by LibreOffice when it opens the file, and this function is not one of its own."""

_REMEMBERED = 64
"""Tables remembered, the least recently used forgotten first (a table is at most a few thousand values). Only
eight, forgotten in the order planned, made 2,000 cells taking turns between nine searches plan 2,000 times (30 ms a
cell)."""


def catalog_state() -> tuple[Any, ...]:
    """What a remembered table was planned against: the catalog, its prices and the calibration, each reloaded as a
    new object when its files change."""
    return (catalog.load_catalog(), catalog.load_prices(), calibration.active())


class Remembered:
    """Values by a key (hashable), each kept with the :func:`catalog_state` it was computed against and given back
    only while that state is the very same objects; beyond ``most`` the least recently used is forgotten first."""

    def __init__(self, most: int) -> None:
        self.most = most
        self._items: dict[Any, tuple[tuple[Any, ...], Any]] = {}

    def get(self, key: Any, state: tuple[Any, ...]) -> Any | None:
        """The value kept for ``key`` against ``state`` (now the most recently used), or None."""
        hit = self._items.pop(key, None)
        if hit is None or not all(a is b for a, b in zip(hit[0], state)):
            return None
        self._items[key] = hit  # used last: forgotten last
        return hit[1]

    def put(self, key: Any, state: tuple[Any, ...], value: Any) -> Any:
        """Keep ``value`` for ``key`` against ``state``; returns it."""
        self._items.pop(key, None)
        self._items[key] = (state, value)
        while len(self._items) > self.most:
            del self._items[next(iter(self._items))]
        return value

    def __len__(self) -> int:
        return len(self._items)


_tables = Remembered(_REMEMBERED)
"""PLAN_OPTIONS's tables by their checked arguments."""


def _table(args: tuple[Any, ...], state: tuple[Any, ...]) -> list[list[Any]]:
    """PLAN_OPTIONS's table for these (checked) arguments: remembered while the catalog, its prices and the
    calibration are the very objects they were."""
    rows = _tables.get(args, state)
    return rows if rows is not None else _tables.put(args, state, plan_options(*args))


def _cell(rows: list[list[Any]], row: int, column: int) -> float | str:
    """The table's value at a row and column (the header row 1), "-" for its empty text."""
    if row > len(rows):
        raise OutOfRangeError(
            f"row must be at most {format_number(len(rows))}, the table's rows, got {format_number(row)}", "row"
        )
    if column > len(rows[0]):
        raise OutOfRangeError(
            f"column must be at most {len(rows[0])}, the table's columns, got {format_number(column)}", "column"
        )
    value: float | str = rows[row - 1][column - 1]
    return NONE_SHOWN if value == "" else value


def _at(row: int, column: int, *args: Any) -> float | str:
    return _cell(_table(args, catalog_state()), row, column)


_plan_options_at = with_inputs(
    "plan_options_at",
    _at,
    (
        PlanInput(
            "row", Count, REQUIRED, "Row of the table, 1 for its header, 2 for the cheapest feasible option [row].", ""
        ),
        PlanInput(
            "column",
            Count,
            REQUIRED,
            "Column of the table, 1 for the rank, 2 for the accelerator (PLAN_OPTIONS's header names them) [column].",
            "",
        ),
    ),
    "One cell of PLAN_OPTIONS's ranked table: the value at a row and column, the header being row 1.",
    """
    Returns
    -------
    float or str
        The table's value there: a figure, a name, "yes", a reason, or "-" where the option has none (PLAN_OPTIONS
        leaves such a cell empty) [as the column].

    Notes
    -----
    The table of PLAN_OPTIONS for the same arguments (the search of "Back-of-the-Envelope Estimation for LLM
    Systems"'s plan over accelerators, precisions, GPUs per replica and serving modes), planned once and remembered.
    The support assistant on an H100 at $2.50, ideal 1: row 2, column 2 is H100-SXM, column 13 its $14,600 a month.
""",
    float | str,
)


_checked_at = checked(_plan_options_at)
_ARGS = tuple(_checked_at.domains.items())  # type: ignore[attr-defined]
_DEFAULTS = _plan_options_at.__defaults__ or ()
_REQUIRED = len(_ARGS) - len(_DEFAULTS)
_ROW, _COLUMN = _ARGS[0][1], _ARGS[1][1]
_seen = Remembered(_REMEMBERED)
"""Tables by the arguments as the cells gave them (each with its type), so that every other cell of the same search
checks its row and column only: the serving template's 2,425 cells check the search's 21 arguments once, not once a
cell."""


@functools.wraps(_checked_at)
def plan_options_at(*args: Any, **kwargs: Any) -> float | str:
    """PLAN_OPTIONS_AT, checked as every xlsxplan function is; the search's arguments are checked once per distinct
    set (:data:`_seen`), the row and column every call."""
    if kwargs or not _REQUIRED <= len(args) <= len(_ARGS):
        return _checked_at(*args, **kwargs)
    key = tuple((type(a), a) for a in args[2:])
    state = catalog_state()
    try:
        rows = _seen.get(key, state)
    except TypeError:  # an unhashable value (a range): the plain path
        return _checked_at(*args)
    row, column = _ROW.check("row", args[0]), _COLUMN.check("column", args[1])  # in argument order, as checked
    if rows is None:
        values = list(args) + list(_DEFAULTS[len(_DEFAULTS) - (len(_ARGS) - len(args)) :])
        checked_args = tuple(domain.check(name, v) for (name, domain), v in zip(_ARGS[2:], values[2:]))
        rows = _seen.put(key, state, _table(checked_args, state))
    return _cell(rows, row, column)


plan_options_at.__name__ = plan_options_at.__qualname__ = "plan_options_at"  # wraps() gave it the checked core's name
plan_options_at.varying_lead = 2  # type: ignore[attr-defined]  # row, column; a table's cells repeat the rest (cells.py)
