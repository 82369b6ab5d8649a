"""From what a spreadsheet cell holds to what a core function takes, and back: shared by every adapter.

The xlwings UDFs and the headless engine receive cell contents, not Python numbers: empty cells, numbers typed as
text, booleans, error values, whole ranges. This module decides, once, what each of those means:

* **Empty cell**: an optional argument takes its default; a required one is an error naming it.
* **Number typed as text** (``"80"``, ``" 2.5 "``, ``"1E+6"``, ``"90%"``): read as the number, as Excel does.
  Text that is not a plain number is refused with a hint: ``"1,000"`` (separators depend on the locale, so
  xlsxplan will not guess), ``"80 GB"`` (give the number alone, in the argument's unit).
* **Boolean**: refused where a number belongs. Excel would read TRUE as 1; in a capacity plan that is always a
  mistake.
* **Error value** (``#N/A`` from a lookup, say): the result is that same error, as in Excel; the first error in
  argument order wins.
* **Ranges and arrays**: broadcast against each other like numpy (a column against a row makes a grid), each
  element ending as a value or an error of its own, exactly what a call with that element's values gives. A 1-D
  list counts as a column. With numpy installed, a function whose arithmetic is array-safe
  (:func:`~xlsxplan.domains.checked` with ``arrays=True``) runs it once over whole columns: the arguments are read
  and checked as arrays, and only the elements that fail a check, or that a check inside the function refuses,
  are taken one by one, for their messages. Other functions, and every function where numpy is missing (xlwings
  Lite may lack it), go element by element, reading and checking each distinct input cell once.
* **Range arguments** (domain kind ``range``, e.g. a column of measured prompt lengths): passed whole, never
  broadcast over, while the other arguments still broadcast. Inside such a range empty cells are skipped (as
  Excel's AVERAGE does), numbers typed as text are read, and the first error value is passed on.

Results come back as plain Python values, :class:`CellError` for errors, or a 2-D grid: a numpy object array where
numpy is installed, else a list of rows (lists). numpy is imported on the first array call, never at import.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from itertools import chain
from typing import Any, NamedTuple

from ..domains import flatten_range, show_value
from ..errors import EXCEL_ERRORS, ArgumentError, CellError, XlsxplanError
from ..infra.elementwise import is_array
from ..registry import Argument, Function

__all__ = [
    "CellError",
    "EXCEL_ERRORS",
    "coerce",
    "evaluate",
    "evaluate_broadcast",
    "evaluate_column",
    "as_error",
    "collect_warnings",
]

# Where warnings about legal but implausible inputs go (a bandwidth of 3350 where TB/s is meant). A stack, not a
# ContextVar, because `formulas` runs cell functions in a context of its own (see engine.collect_messages).
_warning_sinks: list[Warnings] = []


class Warnings(list[str]):
    """The warnings of a block (a list of lines), each argument's on one line: its first value outside the usual
    range, and how many other values of it were (one line a value, each looked up in all the lines before it, made
    an array of 120,000 such values print 120,000 lines in quadratic time). Each warning costs one dictionary and one
    set lookup."""

    def __init__(self) -> None:
        super().__init__()
        self._lines: dict[str, tuple[int, str, set[str]]] = {}  # key -> its line, its first message, the others

    def add(self, message: str, key: str | None = None) -> None:
        """Add ``message``; one of an argument already warned about (the same ``key``) counts on its line."""
        line = self._lines.get(key or message)
        if line is None:
            self._lines[key or message] = (len(self), message, set())
            self.append(message)
            return
        index, first, others = line
        if message != first and message not in others:
            others.add(message)
            n = len(others)
            self[index] = f"{first} (and {n:,} other value{'s' if n > 1 else ''} of {key} outside it)"


@contextlib.contextmanager
def collect_warnings() -> Iterator[Warnings]:
    """Collect, once each and in order, the warnings about implausible inputs raised inside the block: one line an
    argument (:class:`Warnings`).

    A value outside its argument's typical range (:attr:`xlsxplan.domains.Domain.typical`) is still used, since it
    may be right; the command line prints these warnings and the templates flag them, so a unit slip is seen.
    """
    sink = Warnings()
    _warning_sinks.append(sink)
    try:
        yield sink
    finally:
        _warning_sinks.remove(sink)


def _suspicion(arg: Argument, value: object) -> str | None:
    """The warning a legal but implausible value of ``arg`` earns, or None."""
    if arg.domain is None or arg.domain.typical is None or isinstance(value, bool):
        return None
    return arg.domain.suspicion(arg.name, value) if isinstance(value, (int, float)) else None


class _ArgumentFacts(NamedTuple):
    """What :func:`evaluate` asks of a function's arguments on every call, found once (:func:`_facts`)."""

    args: tuple[Argument, ...]  # the arguments these facts are of (a function redefined gets new ones)
    func: Callable[..., Any]  # the function they are of
    lead: int | None  # its :data:`VARYING_LEAD`, or None
    ranges: bool  # any argument is a range (:func:`_is_range`), whose plain number :func:`coerce` makes a tuple
    plain: bool  # no varying lead and no range: :func:`evaluate` passes arguments that are all plain numbers on
    ranged: tuple[int, ...]  # positions of the arguments with a usual range, the only ones :func:`_suspicion` warns of
    asked: list[tuple[Any, Any, str | None]]  # per argument, the last answer about a plain nonzero number


_FACTS: dict[str, _ArgumentFacts] = {}


def _facts(fn: Function) -> _ArgumentFacts:
    """``fn``'s :class:`_ArgumentFacts`, remembered per function and checked to be for these very arguments: a call
    from a sheet of a hundred thousand formulas asks about the arguments with a usual range
    (:attr:`~xlsxplan.domains.Domain.typical`) alone, and :func:`_suspicion` once for a value every row repeats
    (:func:`_warn_about`: ``asked`` holds ``(type, value, warning or None)``)."""
    known = _FACTS.get(fn.name)
    if known is None or known.args is not fn.args or known.func is not fn.func:
        ranged = tuple(i for i, arg in enumerate(fn.args) if arg.domain is not None and arg.domain.typical is not None)
        lead = getattr(fn.func, VARYING_LEAD, None)
        ranges = any(map(_is_range, fn.args))
        known = _FACTS[fn.name] = _ArgumentFacts(
            fn.args, fn.func, lead, ranges, lead is None and not ranges, ranged, [(None, None, None)] * len(fn.args)
        )
    return known


def _warn_about(fn: Function, values: list[Any], given: int, facts: _ArgumentFacts | None = None) -> None:
    """Warn about each implausible value among the first ``given`` of ``values`` (checked values of ``fn``'s
    arguments); a plain number equal to the one an argument was last asked about (same type, not zero, whose sign
    the warning shows) gets that answer again, and every warning still goes to the innermost block. ``facts``:
    ``fn``'s :func:`_facts`, where the caller has them."""
    if facts is None:
        facts = _facts(fn)
    ranged, asked = facts.ranged, facts.asked
    given = min(given, len(values))
    for i in ranged:  # the others can earn no warning
        if i < given:
            value = values[i]
            m = asked[i]
            if m[0] is type(value) and m[1] == value:
                message = m[2]
            else:
                message = _suspicion(fn.args[i], value)
                kind = type(value)
                if (kind is float or kind is int) and value != 0:
                    asked[i] = (kind, value, message)
            if message:
                _warn(message, fn.args[i].name)


def _warn(message: str | None, key: str | None = None) -> None:
    """Add a warning (about the argument named ``key``) to the innermost :func:`collect_warnings`."""
    if message and _warning_sinks:
        _warning_sinks[-1].add(message, key)


# ASCII digits only: Python's float() would read full-width or Arabic-Indic digits, Excel does not.
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$", re.ASCII)
_GROUPED = re.compile(r"^[+-]?\d{1,3}([,.' ]\d{3})+([.,]\d+)?$", re.ASCII)
_WITH_UNIT = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*[^\d\s].*$", re.ASCII)


def as_error(value: object) -> CellError | None:
    """``value`` as a :class:`CellError` if it is one, or an Excel error code as text; else None."""
    if isinstance(value, CellError):
        return value
    if isinstance(value, str) and value in EXCEL_ERRORS:
        return CellError(value)
    return None


def _passed_on(arg: Argument, err: CellError) -> CellError:
    """An error value received for ``arg``: as it came if it carries a reason, else with one naming the argument."""
    return err if err.message else CellError(err.code, f"{arg.name} is {err.code}, passed on from its cell")


def _unexpected(fn: Function, err: Exception) -> CellError:
    """The last resort: a core bug (an exception that is not xlsxplan's own) still ends as a cell error."""
    return CellError("#VALUE!", f"{fn.name}: {type(err).__name__}: {err}")


def _number_from_text(arg: Argument, text: str) -> float | str:
    stripped = text.strip()
    if _NUMBER.match(stripped):
        return float(stripped)
    if stripped.endswith("%") and _NUMBER.match(stripped[:-1].strip()):
        return float(stripped[:-1]) / 100
    if arg.domain is not None and arg.domain.kind == "bytes":
        return text  # a precision name such as "fp8": the domain resolves it
    if _GROUPED.match(stripped):
        raise ArgumentError(
            f"{arg.name} must be a number, got {show_value(text)}: type it without thousands separators", arg.name
        )
    if _WITH_UNIT.match(stripped):
        raise ArgumentError(
            f"{arg.name} must be a number, got {show_value(text)}: give the number alone"
            + ("" if arg.unit in ("count", "fraction", "ratio") else f", in {arg.unit}"),
            arg.name,
        )
    raise ArgumentError(f"{arg.name} must be a number, got {show_value(text)}", arg.name)


def _is_range(arg: Argument) -> bool:
    return arg.domain is not None and arg.domain.kind == "range"


def _cells(raw: object) -> list[object]:
    """The cells of a range argument in reading order (one value counts as a range of one)."""
    return list(flatten_range(raw))


def _first_error(arg: Argument, raw: object) -> CellError | None:
    """The first error value in a range argument, with a reason that says where it sits."""
    cells = _cells(raw)
    for i, item in enumerate(cells, 1):
        err = as_error(item)
        if err is not None and err.message:
            return err
        if err is not None:
            return CellError(
                err.code, f"{arg.name} holds {err.code} (value {i} of {len(cells)}), passed on from its cell"
            )
    return None


def _coerce_range(arg: Argument, raw: object) -> tuple[object, ...]:
    """A range argument's cells as the core function's domain check expects them: numbers, with empty cells as None."""
    out: list[object] = []
    cells = _cells(raw)
    for i, item in enumerate(cells, 1):
        if _is_numpy_scalar(item):
            item = item.item()  # type: ignore[attr-defined]
        if isinstance(item, str) and item.strip():
            try:
                item = _number_from_text(arg, item)
            except XlsxplanError as err:
                raise ArgumentError(
                    err.message.replace(arg.name, f"{arg.name} (value {i} of {len(cells)})", 1), arg.name
                ) from None
        out.append(item)
    return tuple(out)


def coerce(arg: Argument, raw: object) -> Any:
    """What the core function receives for one cell value, or an :class:`XlsxplanError` naming the argument.

    For a range argument ``raw`` is the whole range, and the result a tuple of its cells.
    """
    kind = type(raw)
    if (kind is float or kind is int) and not _is_range(arg):  # a plain number, the common case: as it came
        return raw
    if raw is None or (isinstance(raw, str) and raw == ""):
        if arg.optional:
            return arg.default
        raise ArgumentError(f"{arg.name} is required but the cell is empty", arg.name)
    if _is_range(arg):
        return _coerce_range(arg, raw)
    if _is_numpy_scalar(raw):
        raw = raw.item()  # type: ignore[attr-defined]
    if arg.domain is not None and arg.domain.kind == "text":
        return raw  # the domain check explains a number where a name belongs
    if isinstance(raw, str):
        return _number_from_text(arg, raw)
    if isinstance(raw, bool):
        raise ArgumentError(f"{arg.name} must be a number, got {show_value(raw)}", arg.name)
    if isinstance(raw, numbers.Real):
        return raw
    raise ArgumentError(f"{arg.name} must be a number, got {show_value(raw)}", arg.name)


def _is_numpy_scalar(value: object) -> bool:
    """True for a numpy scalar (asked without importing numpy: if nothing has imported it, nothing is one)."""
    np = sys.modules.get("numpy")
    return np is not None and isinstance(value, np.generic)


def _plain(result: Any) -> Any:
    if type(result) is not float and _is_numpy_scalar(result):  # a float, most results, is no numpy scalar
        result = result.item()
    if isinstance(result, float) and not math.isfinite(result):
        return CellError("#NUM!", "the result is not a finite number")
    return result


_tails: dict[str, tuple[tuple[object, ...], tuple[type, ...], list[Any]]] = {}
"""Per function with a varying lead (:data:`VARYING_LEAD`): the raw arguments after the lead of its last call whose
arguments all passed, their types, and their coerced values with the defaults of those left out."""
VARYING_LEAD = "varying_lead"
"""The attribute of a core function that says how many of its first arguments vary from cell to cell while the rest
repeat (PLAN_OPTIONS_AT: the row and column of a table of one search): a call whose other arguments equal the last
call's, type for type, reuses their checked values, so a table of thousands of cells checks them once."""


def evaluate(fn: Function, raw_args: Sequence[object]) -> Any:
    """Call ``fn`` on one set of cell values; return its value or a :class:`CellError`, never raise."""
    facts = _facts(fn)  # what every call asks of the function, found once: its lead, whether it takes a range
    if len(raw_args) > len(fn.args):
        return CellError("#VALUE!", f"{fn.name} takes at most {len(fn.args)} arguments, got {len(raw_args)}")
    lead = facts.lead
    known: list[Any] = []  # the checked values after the lead, where they repeat the last call's (VARYING_LEAD)
    if lead is not None:
        tail = tuple(raw_args[lead:])
        kinds = tuple(map(type, tail))
        last = _tails.get(fn.name)
        if last is not None and last[1] == kinds and last[0] == tail:
            raw_args, known = raw_args[:lead], last[2]  # only the lead is checked (its warnings too)
    plain = facts.plain  # every argument a plain number, each coerced as it came (for a function without a range)
    for arg, raw in zip(fn.args, raw_args):
        kind = type(raw)
        if kind is float or kind is int:  # a plain number is no error (asked first: most arguments are one)
            continue
        plain = False
        err = _first_error(arg, raw) if _is_range(arg) else as_error(raw)
        if err is not None:
            return _passed_on(arg, err)
    values = list(raw_args) if plain else []  # what coerce gives a plain number of an argument that is no range
    try:
        for i in range(len(values), len(fn.args) - len(known)):
            arg = fn.args[i]
            if i >= len(raw_args):
                if not arg.optional:
                    return CellError("#VALUE!", f"{fn.name} needs {arg.name} (argument {i + 1}): {arg.doc}")
                values.append(arg.default)
                continue
            values.append(coerce(arg, raw_args[i]))
        if lead is not None and not known:
            _tails[fn.name] = (tail, kinds, values[lead:])
        result = fn.func(*values, *known)
        if _warning_sinks:  # only values that passed their checks, as the call's success shows: never a refused one
            _warn_about(fn, values, len(raw_args), facts)
        return _plain(result)
    except XlsxplanError as err:
        return CellError(err.excel_error, err.message)
    except (ArithmeticError, ValueError, TypeError) as err:  # a core bug must still end as a cell error
        return _unexpected(fn, err)


def _single(raw: object) -> object:
    """The value of a one-cell range given as ``[[value]]`` (as xlwings hands over a cell), else ``raw``: the
    common case of one formula per scenario, spared building arrays."""
    if type(raw) in (list, tuple) and len(raw) == 1:  # type: ignore[arg-type]
        row = raw[0]  # type: ignore[index]
        if type(row) in (list, tuple) and len(row) == 1 and not _is_sequence(row[0]):
            return row[0]
    return raw


# --- Grids: a range argument's cells, read without numpy ---------------------------------------------------------


def _is_sequence(value: object) -> bool:
    return isinstance(value, (list, tuple)) or is_array(value)


def _sequence_kind(kind: type) -> bool:
    """True for a type whose values :func:`_grid` reads as a further dimension (a list, a tuple, a numpy array)."""
    np = sys.modules.get("numpy")
    return issubclass(kind, (list, tuple)) or (np is not None and issubclass(kind, np.ndarray))


class _Grid:
    """One argument's cells: ``rows`` x ``cols`` of them, in reading order, and the set of their types."""

    __slots__ = ("rows", "cols", "cells", "kinds")

    def __init__(self, rows: int, cols: int, cells: list[Any], kinds: set[type] | None = None) -> None:
        self.rows, self.cols, self.cells = rows, cols, cells
        self.kinds = set(map(type, cells)) if kinds is None else kinds

    @property
    def size(self) -> int:
        return self.rows * self.cols

    def index(self, r: int, c: int) -> int:
        """The cell that element ``(r, c)`` of a broadcast reads: a single row or column repeats."""
        return (r if self.rows != 1 else 0) * self.cols + (c if self.cols != 1 else 0)


def _grid(raw: object) -> _Grid | None:
    """``raw`` as a 2-D grid of cells if it is a range (a list, tuple or numpy array), else None (one value).

    Nested lists are read as numpy reads them with ``dtype=object``: as many dimensions as the nesting is regular
    (a ragged list of rows is a column of lists, each refused as a cell); more than two is an error.
    """
    if is_array(raw):
        shape = raw.shape  # type: ignore[attr-defined]
        if len(shape) > 2:
            raise ArgumentError(f"a range must be one- or two-dimensional, got {len(shape)} dimensions")
        rows, cols = (1, 1) if not shape else (shape[0], 1) if len(shape) == 1 else shape
        return _Grid(rows, cols, raw.ravel().tolist())  # type: ignore[attr-defined]
    if not isinstance(raw, (list, tuple)):
        return None
    if raw and set(map(type, raw)) <= {list, tuple}:  # the common case first: a column, one cell per row
        try:
            column = [cell for (cell,) in raw]
        except ValueError:  # a row of another length: the general reading below
            pass
        else:
            column_kinds = set(map(type, column))
            if not any(map(_sequence_kind, column_kinds)):
                return _Grid(len(column), 1, column, column_kinds)
    dims = [len(raw)]
    level: list[Any] = list(raw)
    kinds: set[type] | None = None
    while level:
        level_kinds = set(map(type, level))
        if not level_kinds <= {list, tuple} and not all(_is_sequence(item) for item in level):
            kinds = level_kinds  # the cells' types, known already
            break
        lengths = set(map(len, level))
        if len(lengths) != 1:
            break
        dims.append(lengths.pop())
        level = list(chain.from_iterable(level))
        if len(dims) > 2:
            break
    if len(dims) > 2:  # how many numpy would count, for the message
        while level and all(_is_sequence(item) for item in level) and len(set(map(len, level))) == 1:
            dims.append(len(level[0]))
            level = list(chain.from_iterable(level))
        raise ArgumentError(f"a range must be one- or two-dimensional, got {len(dims)} dimensions")
    rows, cols = (dims[0], 1) if len(dims) == 1 else (dims[0], dims[1])
    return _Grid(rows, cols, level, kinds)


def _broadcast_shape(shapes: list[tuple[int, int]]) -> tuple[int, int] | None:
    """The shape grids of ``shapes`` broadcast to, as numpy's rules give it (a 1 repeats), or None if they clash."""
    out = []
    for sizes in zip(*shapes):
        other = {n for n in sizes if n != 1}
        if len(other) > 1:
            return None
        out.append(other.pop() if other else 1)
    return out[0], out[1]


def _spread(grid: _Grid, items: list[Any], shape: tuple[int, int]) -> list[Any]:
    """``items`` (one per cell of ``grid``) repeated to the broadcast ``shape``, in reading order."""
    rows, cols = shape
    if (grid.rows, grid.cols) == shape:
        return items
    lines = [items[r * grid.cols : (r + 1) * grid.cols] for r in range(grid.rows)]
    if grid.cols == 1 and cols > 1:
        lines = [line * cols for line in lines]
    if grid.rows == 1 and rows > 1:
        lines = lines * rows
    return list(chain.from_iterable(lines))


_numpy_module: Any = None
_numpy_tried = False


def _numpy() -> Any:
    """numpy, imported on first use, or None where it is not installed (a bundle in Pyodide without it)."""
    global _numpy_module, _numpy_tried
    if not _numpy_tried:
        try:
            import numpy
        except ImportError:
            numpy = None  # type: ignore[assignment]
        _numpy_module, _numpy_tried = numpy, True
    return _numpy_module


def _as_result(items: list[Any], shape: tuple[int, int]) -> Any:
    """A broadcast's results, in reading order, as the 2-D grid :func:`evaluate_broadcast` returns."""
    np = _numpy()
    rows, cols = shape
    if np is None:
        return [items[r * cols : (r + 1) * cols] for r in range(rows)]
    out = np.empty(len(items), dtype=object)
    for k, item in enumerate(items):  # one by one: numpy would unpack a list or tuple among them
        out[k] = item
    return out.reshape(shape)


def evaluate_broadcast(
    fn: Function, raw_args: Sequence[object], read_cell: Callable[[Any], Any] | None = None, floats: bool = False
) -> Any:
    """Like :func:`evaluate`, with ranges broadcast: a scalar, a :class:`CellError` or a 2-D grid of results (a
    numpy object array, or a list of rows where numpy is not installed).

    A function that returns a list (MODELS, GPUS) gives it as one column. A range argument is passed whole.
    ``read_cell``, when given, is applied first to each cell of an argument given as a list or tuple (a range
    argument's excepted) that is not a float: an adapter's own encoding of cells, such as the error values xlwings
    hands over, read in the pass that reads the range anyway. With ``floats``, a grid whose every element is a
    number may come back as a float64 array instead (Excel holds every number as a double; whole numbers convert
    exactly), sparing an adapter that wants doubles the object array.
    """
    whole = [i < len(fn.args) and _is_range(fn.args[i]) for i in range(len(raw_args))]
    listed = [
        read_cell is not None and not keep and isinstance(raw, (list, tuple)) for raw, keep in zip(raw_args, whole)
    ]
    raw_args = [raw if keep else _single(raw) for raw, keep in zip(raw_args, whole)]
    try:
        grids = [None if keep else _grid(raw) for raw, keep in zip(raw_args, whole)]
    except (ArgumentError, ValueError) as err:
        return CellError("#VALUE!", f"{fn.name}: {err}")
    for i, grid in enumerate(grids):
        if not listed[i]:
            continue
        if grid is None:  # a one-cell range, unwrapped
            raw_args[i] = raw_args[i] if type(raw_args[i]) is float else read_cell(raw_args[i])  # type: ignore[misc]
        elif not grid.kinds <= {float}:
            grid.cells = [c if type(c) is float else read_cell(c) for c in grid.cells]  # type: ignore[misc]
            grid.kinds = set(map(type, grid.cells))
    if all(g is None or g.size == 1 for g in grids):
        scalars = [raw if g is None else g.cells[0] for raw, g in zip(raw_args, grids)]
        result = evaluate(fn, scalars)
        if isinstance(result, list) and not fn.table:  # a table without numpy is its rows already
            return _as_result(result, (len(result), 1))
        return result
    if fn.spills and not fn.table:  # a list fills a column from one call: no cell per element to hold one
        return CellError("#VALUE!", f"{fn.name} spills one list: give one value per argument, not a range of them")
    shapes = [(g.rows, g.cols) for g in grids if g is not None]
    shape = _broadcast_shape(shapes)
    if shape is None:
        shown = " and ".join(f"{r}x{c}" for r, c in shapes)
        return CellError("#VALUE!", f"{fn.name}: ranges of {shown} cells cannot be matched up element by element")
    if 0 in shape:
        return CellError("#VALUE!", f"{fn.name}: a range with no cells")
    np = _numpy()
    if np is not None:
        fast = _vectorised(fn, raw_args, grids, shape, np, floats)
        if fast is not None:
            return fast
    results = _broadcast_checked(fn, raw_args, grids, shape)
    if results is None:
        results = [evaluate(fn, row) for row in zip(*_columns(raw_args, grids, shape))]
    return _as_result(results, shape)


def evaluate_column(fn: Function, raw_args: Sequence[object], rows: int) -> list[Any]:
    """:func:`evaluate` of each of ``rows`` elements, as a list: each argument is one value for every element or a
    list of ``rows`` values, one per element. The same results and warnings as :func:`evaluate_broadcast` of those
    values as a column, without numpy (whose import costs more than a column of ten thousand elements): each
    distinct input read and checked once, the checked function called per element."""
    grids: list[_Grid | None] = [
        _Grid(rows, 1, raw) if type(raw) is list and i < len(fn.args) and not _is_range(fn.args[i]) else None
        for i, raw in enumerate(raw_args)
    ]
    if any(g is not None and len(g.cells) != rows for g in grids):
        raise ValueError(f"each list argument must hold {rows} values")
    results = _broadcast_checked(fn, raw_args, grids, (rows, 1))
    if results is None:
        results = [evaluate(fn, row) for row in zip(*_columns(raw_args, grids, (rows, 1)))]
    return results


def _columns(raw_args: Sequence[object], grids: list[_Grid | None], shape: tuple[int, int]) -> list[list[Any]]:
    """Each argument's value for every element of the broadcast, in reading order."""
    size = shape[0] * shape[1]
    return [[raw] * size if g is None else _spread(g, g.cells, shape) for raw, g in zip(raw_args, grids)]


# --- Element by element, each distinct input cell read and checked once -------------------------------------------


class _Failure:
    """Why one input cell fails, and at which step of :func:`evaluate` (earlier steps win, then argument order)."""

    __slots__ = ("stage", "error")

    def __init__(self, stage: int, error: CellError) -> None:
        self.stage = stage  # 0: an error value passed on, 1: not readable as the argument, 2: outside its domain
        self.error = error


def _prepare(fn: Function, arg: Argument, raw: object) -> Any:
    """One input cell (a whole range, for a range argument) as :func:`evaluate` would see it for ``arg``: the checked
    value, or a :class:`_Failure`."""
    err = _first_error(arg, raw) if _is_range(arg) else as_error(raw)
    if err is not None:
        return _Failure(0, _passed_on(arg, err))
    try:
        value = coerce(arg, raw)
    except XlsxplanError as e:
        return _Failure(1, CellError(e.excel_error, e.message))
    except (ArithmeticError, ValueError, TypeError) as e:
        return _Failure(1, _unexpected(fn, e))
    try:
        checked = arg.domain.check(arg.name, value)  # type: ignore[union-attr]
    except XlsxplanError as e:
        return _Failure(2, CellError(e.excel_error, e.message))
    except (ArithmeticError, ValueError, TypeError) as e:
        return _Failure(2, _unexpected(fn, e))
    return checked


def _prepare_given(fn: Function, arg: Argument, i: int, raw_args: Sequence[object]) -> Any:
    """Argument ``i`` given as one value for every element (or not given at all), prepared once."""
    if i < len(raw_args):
        return _prepare(fn, arg, raw_args[i])
    if arg.optional:  # not given at all: the default ...
        return _prepare(fn, arg, None)
    # ... or the error evaluate gives for a required argument
    return _Failure(1, CellError("#VALUE!", f"{fn.name} needs {arg.name} (argument {i + 1}): {arg.doc}"))


def _prepared_cells(fn: Function, arg: Argument, cells: list[Any]) -> list[Any]:
    """:func:`_prepare` of each cell, each distinct value prepared once."""
    cache: dict[tuple[Any, ...], Any] = {}
    prepared = []
    for raw in cells:
        try:
            key: tuple[Any, ...] = (type(raw), raw)
            if type(raw) is float and raw == 0:
                key = (float, raw, math.copysign(1.0, raw))  # -0.0 equals 0.0, but is another cell
            value = cache[key]
        except KeyError:
            value = cache[key] = _prepare(fn, arg, raw)
        except TypeError:  # unhashable: prepare it every time
            value = _prepare(fn, arg, raw)
        prepared.append(value)
    return prepared


def _checked_call(fn: Function, call: Any, row: Sequence[Any]) -> tuple[Any, bool]:
    """``call_checked`` on one element's checked values: (its cell value, whether it succeeded)."""
    try:
        return _plain(call(*row)), True
    except XlsxplanError as err:
        return CellError(err.excel_error, err.message), False
    except (ArithmeticError, ValueError, TypeError) as err:
        return _unexpected(fn, err), False


def _broadcast_checked(
    fn: Function, raw_args: Sequence[object], grids: list[_Grid | None], shape: tuple[int, int]
) -> list[Any] | None:
    """The broadcast of :func:`evaluate` over ``shape``, in reading order, reading and checking each distinct input
    cell once.

    Gives exactly what calling :func:`evaluate` element by element gives (tests hold it to that), several times
    faster on a column of scenarios: an argument given as one cell is read and checked once, not once per row.
    None when ``fn`` is not a :func:`~xlsxplan.domains.checked` function, which then takes the plain path. Pure
    Python: this is also the whole broadcast where numpy is not installed.
    """
    call = getattr(fn.func, "call_checked", None)
    if call is None or len(raw_args) > len(fn.args) or any(a.domain is None for a in fn.args):
        return None
    size = shape[0] * shape[1]
    columns: list[list[Any]] = []
    failing: list[int] = []  # the arguments with a failure in some element: only these are looked at per element
    noted: list[tuple[list[str | None], str]] = []  # per argument with an implausible value somewhere: each element's
    for i, arg in enumerate(fn.args):
        grid = grids[i] if i < len(raw_args) else None
        if grid is not None:
            prepared = _prepared_cells(fn, arg, grid.cells)
            has_failure = any(v.__class__ is _Failure for v in prepared)
            columns.append(_spread(grid, prepared, shape))
            if _warning_sinks and arg.domain.typical is not None:  # type: ignore[union-attr]
                seen: dict[object, str | None] = {}
                notes = [
                    None
                    if v.__class__ is _Failure
                    else seen[v]
                    if v in seen
                    else seen.setdefault(v, _suspicion(arg, v))
                    for v in prepared
                ]
                if any(notes):
                    noted.append((_spread(grid, notes, shape), arg.name))
        else:  # one value for every element
            value = _prepare_given(fn, arg, i, raw_args)
            has_failure = value.__class__ is _Failure
            columns.append([value] * size)
            note = _suspicion(arg, value) if i < len(raw_args) and not has_failure and _warning_sinks else None
            if note:
                noted.append(([note] * size, arg.name))
        if has_failure:
            failing.append(i)
    results = []
    for k, row in enumerate(zip(*columns)):
        if failing:
            failures = [row[i] for i in failing if isinstance(row[i], _Failure)]
            if failures:
                results.append(min(failures, key=_stage).error)  # min keeps the first of equals: argument order
                continue
        value, ok = _checked_call(fn, call, row)
        results.append(value)
        if ok:
            for notes, name in noted:  # as evaluate does: the values of a call that succeeded
                _warn(notes[k], name)
    return results


def _stage(failure: _Failure) -> int:
    return failure.stage


# --- Vectorised: the arithmetic once over numpy columns -----------------------------------------------------------

_NUMBER_KINDS = ("number", "whole", "bytes")


class _Checked:
    """A grid argument's checked values, as a numpy array in reading order."""

    __slots__ = ("grid", "values")

    def __init__(self, grid: _Grid, values: Any) -> None:
        self.grid, self.values = grid, values

    def at(self, r: int, c: int) -> Any:
        """The checked value element ``(r, c)`` of the broadcast reads, as a Python number."""
        return self.values[self.grid.index(r, c)].item()


def _stand_in(arg: Argument) -> Any:
    """A value ``arg``'s domain accepts, put where an element failed so the array arithmetic stays harmless there
    (the element's result is its failure, whatever the arithmetic gives)."""
    domain = arg.domain
    for candidate in (1, arg.default if arg.optional else None, domain.low, domain.high):  # type: ignore[union-attr]
        if isinstance(candidate, (int, float)) and not isinstance(candidate, bool):
            try:
                return domain.check(arg.name, candidate)  # type: ignore[union-attr]
            except XlsxplanError:
                continue
    return None


def _read_column(fn: Function, arg: Argument, grid: _Grid, np: Any) -> tuple[Any, dict[int, _Failure]] | None:
    """A grid of cells for a number argument, read and checked as arrays: (the checked values in reading order, the
    failures by cell). Cells that are plain numbers are checked all at once (:meth:`Domain.check_array`), the rest
    (text, empty cells, error values, precision names) one by one, each distinct value once, as the element path
    does, and every refused cell asks the element path for its failure, so the messages are its messages. None
    when the grid cannot be read as numbers here (the caller then goes element by element)."""
    cells = grid.cells
    failures: dict[int, _Failure] = {}
    try:
        if grid.kinds <= {float}:
            x = np.fromiter(cells, np.float64, len(cells))
        elif grid.kinds <= {float, int}:
            x = np.array(cells, dtype=np.float64)  # an int beyond a double's range: OverflowError
        else:
            x = np.empty(len(cells), dtype=np.float64)
            odd = [k for k, raw in enumerate(cells) if type(raw) is not float and type(raw) is not int]
            plain = np.ones(len(cells), dtype=bool)
            plain[odd] = False
            x[plain] = [raw for raw, ok in zip(cells, plain.tolist()) if ok]
            stand_in = _stand_in(arg)
            for k, value in zip(odd, _prepared_cells(fn, arg, [cells[k] for k in odd])):
                if value.__class__ is _Failure:
                    failures[k] = value
                    value = stand_in
                if not isinstance(value, (int, float)) or isinstance(value, bool):
                    return None
                x[k] = value
    except (OverflowError, TypeError, ValueError):  # an int beyond a float's range, say
        return None
    checked = arg.domain.check_array(x)  # type: ignore[union-attr]
    if checked is None:
        return None
    values, refused = checked
    bad = np.flatnonzero(refused).tolist() if refused.any() else []
    if bad:
        stand_in = _stand_in(arg)
        if stand_in is None:
            return None
        for k in bad:
            if k in failures:
                continue
            failure = _prepare(fn, arg, cells[k])
            if failure.__class__ is not _Failure:  # the array check refused what the cell's own check accepts
                return None
            failures[k] = failure
        values[refused] = stand_in
    return values, failures


def _vectorised(
    fn: Function,
    raw_args: Sequence[object],
    grids: list[_Grid | None],
    shape: tuple[int, int],
    np: Any,
    floats: bool = False,
) -> Any:
    """The broadcast of :func:`evaluate` over ``shape`` with ``fn``'s arithmetic run once over numpy arrays (its
    ``call_array``), as a 2-D object array; None when ``fn`` has no array form or this call cannot use it (a range
    of names, a value failing for every element, anything the arithmetic raises), and the element path decides.

    Every element is what :func:`evaluate` gives for it: a failing input cell gives the failure the element path
    gives (earliest step, then argument order), and the elements the arithmetic defers (a check inside the function
    refused them, or the result is not finite) are called one by one through ``call_checked``.
    """
    call_array = getattr(fn.func, "call_array", None)
    if call_array is None or len(raw_args) > len(fn.args) or any(a.domain is None for a in fn.args):
        return None
    rows, cols = shape
    size = rows * cols
    arrays: list[Any] = []  # what call_array receives, one per argument
    elements: list[Any] = []  # per argument: its checked value for each element (lazily), or one value for all
    failed: list[tuple[_Grid, dict[int, _Failure], Any]] = []  # arguments with failing cells, and where
    for i, arg in enumerate(fn.args):
        grid = grids[i] if i < len(raw_args) else None
        if grid is not None:
            if arg.domain.kind not in _NUMBER_KINDS:  # type: ignore[union-attr]
                return None  # a range of names: looked up one by one
            column = _read_column(fn, arg, grid, np)
            if column is None:
                return None
            values, failures = column
            arrays.append(values.reshape(grid.rows, grid.cols))
            elements.append(_Checked(grid, values))
            if failures:
                mask = np.zeros(grid.size, dtype=bool)
                mask[list(failures)] = True
                failed.append((grid, failures, mask.reshape(grid.rows, grid.cols)))
        else:
            value = _prepare_given(fn, arg, i, raw_args)
            if value.__class__ is _Failure:
                return None  # every element fails: the element path is as fast
            if arg.domain.kind in _NUMBER_KINDS:  # type: ignore[union-attr]
                arrays.append(np.array([[value]]))
            else:
                arrays.append(value)
            elements.append(value)
    try:
        result, deferred = call_array(*arrays)
        if result.dtype.kind not in ("iu" if fn.whole else "f"):
            return None
        if deferred is not None and not deferred.any():
            deferred = None
        if floats and not failed and deferred is None:  # numbers only: as doubles, no object array at all
            if _warning_sinks:
                _warn_array(fn, elements, np.ones(size, dtype=bool), shape, np)
            return np.broadcast_to(result, shape).astype(np.float64)
        # Python floats (ints), made at C speed; in C order, so that `flat` below is a view of it (a result that
        # broadcasts along rows would otherwise come out in another order, and flat be a copy)
        out = np.broadcast_to(result, shape).astype(object, order="C")
    except Exception:  # noqa: BLE001 - whatever the arithmetic raises over arrays, each element on its own decides
        return None
    flat = out.reshape(size)  # a view: writing an element writes out
    ok = np.ones(size, dtype=bool)
    if failed:
        failing = np.zeros(shape, dtype=bool)
        for _, _, mask in failed:
            failing |= mask
        for k in np.flatnonzero(failing).tolist():
            r, c = divmod(k, cols)
            found = [f[g.index(r, c)] for g, f, _ in failed if g.index(r, c) in f]
            flat[k] = min(found, key=_stage).error  # min keeps the first of equals: argument order
            ok[k] = False

    def element(k: int) -> list[Any]:
        r, c = divmod(k, cols)
        return [e.at(r, c) if isinstance(e, _Checked) else e for e in elements]

    if deferred is not None:
        later = np.broadcast_to(deferred, shape).ravel() & ok
        call = fn.func.call_checked  # type: ignore[attr-defined]
        for k in np.flatnonzero(later).tolist():
            flat[k], ok[k] = _checked_call(fn, call, element(k))
    if _warning_sinks:
        _warn_array(fn, elements, ok, shape, np)
    return out


def _warn_array(fn: Function, elements: list[Any], ok: Any, shape: tuple[int, int], np: Any) -> None:
    """The warnings of the elements that succeeded, in the element path's order (element, then argument)."""
    rows, cols = shape
    notes = []  # per argument with a legal but implausible value somewhere: where, broadcast
    for arg, e in zip(fn.args, elements):
        domain = arg.domain
        if domain is None or domain.typical is None:
            continue
        low, high = domain.typical
        if isinstance(e, _Checked):
            mask = ((e.values < low) | (e.values > high)).reshape(e.grid.rows, e.grid.cols)
            if mask.any():
                notes.append((arg, e, np.broadcast_to(mask, shape).ravel()))
        elif _suspicion(arg, e):
            notes.append((arg, e, np.ones(rows * cols, dtype=bool)))
    if not notes:
        return
    anywhere = np.zeros(rows * cols, dtype=bool)
    for _, _, mask in notes:
        anywhere |= mask
    for k in np.flatnonzero(anywhere & ok).tolist():
        r, c = divmod(k, cols)
        for arg, e, mask in notes:
            if mask[k]:
                _warn(_suspicion(arg, e.at(r, c) if isinstance(e, _Checked) else e), arg.name)
