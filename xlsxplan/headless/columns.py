"""Columns of one registry formula, computed as arrays: a sweep's thousands of ``=F(A2,...)`` in one call each.

A sheet of scenarios is a column of one formula whose rows differ only by their relative references (``=F(A2,1,2)``,
``=F(A3,1,2)``, ...). Given to the engine cell by cell, each row is one callback into Python; a :class:`Column` is
instead computed with :func:`xlsxplan.sheet.cells.evaluate_column` in one pass over the column of its inputs (each
distinct input read and checked once, the checked function called a row), and the engine is given the results as
values.

What makes it the same number: a column is only formulas the engine would be given as written (one call of a
registry function that returns one value, whose arguments are numbers and single-cell references:
:func:`.engine.one_value_call`), so each row's callback would receive exactly its inputs' values and the numbers as
written (every number as a float, as the engine passes it). ``evaluate_column`` gives, element by element, what
:func:`~xlsxplan.sheet.cells.evaluate` gives for that row, and its warnings; an input cell is read as the callback
reads it (an error value as a :class:`~xlsxplan.sheet.cells.CellError`). A row whose result is not a number (an
error, with its reason) gets its formula back in the engine, which computes it as it computes any other cell, so
its note is the one it always had. Every input must be a cell that holds no formula (so its value is known before
the engine calculates); a row reading a formula cell stays a formula.

The engine is given no formula in a column's cells (:func:`blank_edits` removes them from its copy of the sheet);
:func:`compute` sets their values before each calculation that follows a change of input. What a formula asks of
a cell's formula (FORMULATEXT, ISFORMULA) is read from the file, not from the engine (:mod:`.workbook`), so it is
the same whether the cell's value came from a column or from the engine.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass, field
from typing import Any

from .. import registry
from ..sheet import cells as sheet_cells
from . import engine
from .sheets import Formula, SheetIndex

__all__ = ["Column", "MIN_CELLS", "find", "blank_edits", "compute"]

MIN_CELLS = 200
"""The fewest formulas of one shape computed as a column: a smaller group costs the engine less than the array's
setup, and the shipped templates (whose formulas are computed cell by cell) have none this large."""


@dataclass
class Column:
    """The cells of one sheet holding one registry call of one shape, computed together (see the module).

    ``args``: per argument, a number (as the engine passes the literal) or the position of the reference among
    the formula's references; ``refs``: per reference, whether its column is absolute and the column (absolute) or
    its offset from the formula's cell, and the same of its row (:meth:`.workbook._Shapes.references`)."""

    title: str
    name: str  # the registry function's name, as registered
    cells: list[tuple[int, int]]
    formulas: dict[tuple[int, int], Formula]  # the sheet's formulas: the text of a row that gets its formula back
    args: list[float | int]
    literal: list[bool]  # per argument: a number (True) or a reference (False)
    refs: list[tuple[bool, int, bool, int]]
    as_formula: set[int] = field(default_factory=set)  # rows the engine computes as formulas now

    def inputs(self, j: int) -> list[tuple[int, int]]:
        """The cell each row's ``j``-th reference reads."""
        fixed_col, col, fixed_row, row = self.refs[j]
        return [(row if fixed_row else r + row, col if fixed_col else c + col) for r, c in self.cells]


def find(
    title: str,
    index: SheetIndex,
    members: list[tuple[int, int]],
    refs: list[tuple[bool, int, bool, int]],
    computed: set[tuple[int, int]],
) -> Column | None:
    """The :class:`Column` of ``members`` (formulas of one sheet with one R1C1 shape whose references are ``refs``,
    each given to the engine as written and calling a registry function), or None when they are too few or their
    function is not one a column computes (a list, a table, a range argument). ``computed``: the cells of the sheet
    whose value a formula gives (formula cells and array ranges); a row reading one of them is left out."""
    if len(members) < MIN_CELLS:
        return None
    called = engine.one_value_arguments("=" + (index.formulas[members[0]].text or ""))
    if called is None:
        return None
    name, pieces = called
    fn = registry.FUNCTIONS[name]
    ranges = any(a.domain is not None and a.domain.kind == "range" for a in fn.args)
    if fn.table or ranges or len(pieces) > len(fn.args):
        return None
    args: list[float | int] = []
    literal: list[bool] = []
    for piece in pieces:
        if engine.ONE_VALUE_NUMBER.fullmatch(piece):
            args.append(float(piece))  # as the engine passes a number written in a formula
            literal.append(True)
        elif engine.ONE_VALUE_REFERENCE.fullmatch(piece):
            args.append(literal.count(False))
            literal.append(False)
        else:  # a negated reference
            return None
    if literal.count(False) != len(refs):
        return None
    column = Column(title, fn.name, members, index.formulas, args, literal, refs)
    reading = [column.inputs(j) for j in range(len(refs))]
    if any(cell in computed for cells in reading for cell in cells):  # a row reads a formula: keep only the others
        column.cells = [rc for k, rc in enumerate(members) if not any(cells[k] in computed for cells in reading)]
    return column if len(column.cells) >= MIN_CELLS else None


def blank_edits(index: SheetIndex, column: Column) -> list[tuple[tuple[int, int], str]]:
    """Edits of the sheet's text (:func:`.sheets.engine_copy`) that remove each of the column's ``<f>`` elements,
    so the engine is given no formula there (the cell keeps any cached value until :func:`compute` sets it)."""
    source = index.source or ""
    edits = []
    for rc in column.cells:
        start, end = index.formulas[rc].span  # the formula's text: its element opens before it and closes after it
        edits.append(((source.rfind("<", 0, start), source.find(">", end) + 1), ""))
    return edits


def compute(book: Any, column: Column, kept: Container[tuple[str, int, int]]) -> None:
    """Compute ``column`` over its inputs' values in the engine ``book`` and give the engine the results: each
    number as the cell's value, each row whose result is not a number its formula back. ``kept``: cells a user
    set (:meth:`.Workbook.set` with ``force``), whose value stays."""
    fn = registry.FUNCTIONS[column.name]
    title = column.title
    get = book.get_value
    n = len(column.cells)
    raw_args: list[Any] = []
    for value, is_number in zip(column.args, column.literal):
        if is_number:
            raw_args.append(value)
        else:
            raw_args.append([engine.from_engine(get(title, r, c)) for r, c in column.inputs(int(value))])
    results = sheet_cells.evaluate_column(fn, raw_args, n)
    numbers: dict[tuple[int, int], Any] = {}
    for k in range(n):
        r, c = column.cells[k]
        if (title, r, c) in kept:
            continue
        value = results[k]
        kind = type(value)
        if kind is float or kind is int:
            if k in column.as_formula:
                column.as_formula.discard(k)
                book.set_value(title, r, c, engine.to_engine(value))
            else:
                numbers[(r, c)] = engine.to_engine(value)
        elif k not in column.as_formula:
            column.as_formula.add(k)
            book.set_formula(title, r, c, "=" + (column.formulas[(r, c)].text or ""))
    for r, c, run in _runs(numbers):
        book.set_values_batch(title, r, c, run)


def _runs(values: dict[tuple[int, int], Any]) -> list[tuple[int, int, list[list[Any]]]]:
    """``{(row, col): value}`` (rows rising in each column, as a sheet's cells come) as runs of adjacent cells of a
    column: ``(first row, col, [[value], ...])``."""
    out: list[tuple[int, int, list[list[Any]]]] = []
    last: dict[int, tuple[int, int, list[list[Any]]]] = {}  # per column, its run so far
    for (r, c), value in values.items():
        run = last.get(c)
        if run is not None and run[0] + len(run[2]) == r:
            run[2].append([value])
        else:
            run = last[c] = (r, c, [[value]])
            out.append(run)
    return out
