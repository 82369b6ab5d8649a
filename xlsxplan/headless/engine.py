"""Headless evaluation over `formualizer`: every registry function registered as an Excel function.

``formualizer`` (a Rust engine with Python bindings) parses and computes Excel formulas, its dependency graph
recalculating only what changed. This adapter registers each entry of :data:`xlsxplan.registry.FUNCTIONS` with a
formualizer workbook (:func:`register_functions`), translating between its values (error dicts, lists of rows) and
:mod:`xlsxplan.sheet.cells`, so a workbook or a one-off formula that mixes native functions (ROUND, INDEX, XLOOKUP) with
ours evaluates as Excel would. Errors become the right Excel error value; the one-line reason behind each travels
with the value inside a formula, and is kept in a side channel (:func:`collect_messages`) because a value stored in
a cell carries no text.

Where the engine differs from Excel, the adapter makes up for it (each has a test in tests/headless/test_engine.py or
tests/headless/test_workbook_excel.py):

* an omitted argument (``=F(1,,3)``) reaches a custom function as 0: the formula is given to the engine with
  ``_XLSXPLAN_OMITTED()`` (an empty value) in its place (:func:`mark_omitted`), for registry functions only;
* a callback that raises is not an ordinary error value (ISERROR, ISNUMBER and ERROR.TYPE misread it): callbacks
  never raise, they return the error;
* ``nan`` and ``inf`` are stored as numbers: a registry result that is not finite is ``#NUM!``;
* error kinds Excel does not have (``#CIRC!``, ``#N/IMPL!``, ``#ERROR!``, ``#CANCELLED!``) become Excel error values
  with their reason (:func:`cell_error`);
* an add-in's stored name of a registry function (``_xldudf_XLWINGS_KV_GB``) is not the function: it is read as the
  function's name (:func:`add_in_names`);
* native functions of one value (SQRT, ROUND, ISERROR, LEN and a hundred more) given an array give ``#VALUE!`` or
  the first element's result: such calls are computed element by element with the engine's own function
  (:func:`lift_arrays`), as Excel computes them;
* an array formula's result spills from its first cell whatever its range: it is fitted to the range as Excel fits
  it (:func:`fit_array`).

Whole workbooks are :mod:`.workbook`'s (``from xlsxplan.headless import Workbook``).
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import math
import re
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import formualizer as fz

from .. import registry
from ..errors import CellError
from ..infra.elementwise import is_array
from ..sheet import cells
from . import natives
from .natives import approx as _approx
from .natives import number_arg as _number_arg
from .references import ordered as ordered_ranges

if TYPE_CHECKING:
    import numpy as np  # imported where an array is made: a sheet of numbers never loads it (0.1 s of a process)

__all__ = [
    "register_functions",
    "new_book",
    "evaluate_formula",
    "FormulaResult",
    "collect_messages",
    "Messages",
    "normalise_formula",
    "add_in_names",
    "mark_omitted",
    "prepare",
    "function_calls",
    "calls_registry",
    "cell_error",
    "from_engine",
    "to_engine",
    "parse_failure",
    "unknown_function",
    "native_function",
    "outside_quotes",
    "lift_arrays",
    "LIFTED",
    "FIT",
    "fit_array",
    "array_tiles",
    "CORRECTED",
    "SPILL_CAP",
    "lifts",
    "fatal",
    "code_text",
    "references",
    "function_names",
    "NATIVE_REASONS",
    "CIRCULAR",
    "OMITTED",
    "ticking",
    "qualify",
]

OMITTED = "_XLSXPLAN_OMITTED"
"""The function an omitted argument of a registry call is given to the engine as: it returns an empty value."""
FIT = "_XLSXPLAN_FIT"
"""The function an array formula over a range is given inside: its result fitted to the range, as Excel fits it."""
PROBE = "_XLSXPLAN_PROBE"
"""The function a value is read through where no cell holds it (a formula of constants, a defined name)."""


class _Everywhere:
    """A registry call that failed as a whole: an operator can carry its error to any element of an array result."""

    __slots__ = ("error",)

    def __init__(self, error: CellError) -> None:
        self.error = error

    def get(self, pos: tuple[int, int]) -> CellError:
        return self.error


class Messages(list):
    """The :class:`CellError` of every registry call that failed, in call order (a list), and where they landed.

    ``grids`` holds, in call order, one entry per failed registry call: for a call whose result was an array,
    ``{(row, col): CellError}`` for the elements that failed with a reason; for a call that failed as a whole, its
    error for every position. An error at the same position and with the same code in a formula's array result can
    be traced back to them without evaluating anything again.
    """

    def __init__(self) -> None:
        super().__init__()
        self.grids: list[dict[tuple[int, int], CellError] | _Everywhere] = []

    def take(self) -> Messages:
        """These messages and grids, moved into a new list; this one is left empty."""
        taken = Messages()
        taken.extend(self)
        taken.grids = self.grids
        self.clear()
        self.grids = []
        return taken

    def at(self, pos: tuple[int, int], code: str) -> str | None:
        """The reason for the element at ``pos`` of an array result that holds ``code``, if a call put it there.

        The latest call that left an error of that code at that position wins, as it is the closest to the result.
        """
        for grid in reversed(self.grids):
            err = grid.get(pos)
            if err is not None and err.code == code:
                return err.message
        return None

    def last(self, code: str) -> str | None:
        """The reason of the latest call that failed with ``code``, if any.

        A formula's error value is the one its outermost operations met last: a failure that IFERROR swallowed
        comes before the one that reached the result, so the latest matching message is the better guess.
        """
        return next((m.message for m in reversed(self) if m.code == code and m.message), None)


# A stack of message buckets, plain module state: the engine calls back on the thread that evaluates (parallel
# evaluation is off, see new_book), one call at a time. A lock keeps concurrent evaluations apart.
_buckets: list[Messages] = []
_lock = threading.RLock()

# What a native error means, for errors that no registry function explained.
NATIVE_REASONS = {
    "#DIV/0!": "division by zero",
    "#VALUE!": "a value of the wrong type",
    "#NUM!": "a number outside the function's domain",
    "#N/A": "a value is not available (a lookup found nothing?)",
    "#NAME?": "an unknown function or name",
    "#REF!": "a reference to a cell that does not exist",
    "#NULL!": "ranges that do not intersect",
    "#SPILL!": "an array result has no room to spill into",
    "#CALC!": "the calculation has no result (an empty array?)",
}

CIRCULAR = (
    "no value: the formula is part of a circular reference, or depends on one (Excel shows 0 and warns; turn on "
    "iterative calculation there, or break the loop)"
)


@contextlib.contextmanager
def collect_messages() -> Iterator[Messages]:
    """Collect the :class:`CellError` of every registry call that failed inside the block, in call order."""
    bucket = Messages()
    with _lock:
        _buckets.append(bucket)
        try:
            yield bucket
        finally:
            _buckets.pop()


# ---------------------------------------------------------------------------------------------------------------
# Values between the engine and xlsxplan.sheet.cells

_KIND_CODES = {
    "div": "#DIV/0!",
    "div0": "#DIV/0!",
    "ref": "#REF!",
    "name": "#NAME?",
    "value": "#VALUE!",
    "num": "#NUM!",
    "na": "#N/A",
    "null": "#NULL!",
    "spill": "#SPILL!",
    "calc": "#CALC!",
}
# Error kinds of the engine that Excel does not have: the Excel value a cell shows instead, and why.
_NOT_EXCEL = {
    "circ": ("#REF!", CIRCULAR),
    "error": ("#NAME?", "the formula cannot be parsed"),
    "nimpl": (
        "#VALUE!",
        "not calculated headlessly: a union of ranges in parentheses ((A1,B1)), an intersection of computed ranges, "
        "or a reference through several sheets (Jan:Dec!B4) outside SUM, AVERAGE, COUNT, MAX, MIN and their kind",
    ),
    "cancelled": ("#VALUE!", "the calculation was cancelled"),
}
_ENGINE_KINDS = {code: kind for kind, code in _KIND_CODES.items() if kind != "div0"}


def cell_error(value: dict) -> CellError:
    """An engine error value (``{"type": "Error", "kind": "Num", "message": ...}``) as a :class:`CellError`."""
    kind = str(value.get("kind", "")).lower()
    message = value.get("message") or ""
    code = _KIND_CODES.get(kind)
    if code is None:
        code, reason = _NOT_EXCEL.get(kind, ("#VALUE!", ""))
        return CellError(code, reason if kind != "error" or not message else f"{reason}: {message}")
    return CellError(code, message)


def from_engine(value: Any) -> Any:
    """An engine value as :mod:`xlsxplan.sheet.cells` reads cell contents: errors as :class:`CellError`, lists as they
    are (rows of values), the rest unchanged."""
    kind = type(value)
    if kind is dict:
        return cell_error(value)
    if kind is list:
        return [[from_engine(x) for x in row] if type(row) is list else from_engine(row) for row in value]
    return value


_INT64 = 2**63


def to_engine(result: Any) -> Any:
    """A result of :mod:`xlsxplan.sheet.cells` as the engine takes it back: numbers, text, bools, error dicts, and lists
    of rows for an array (a 1x1 array as its one value)."""
    if type(result) is float and result - result == 0.0:  # a finite number, most results: one test
        return result
    if isinstance(result, CellError):
        code = result.code if result.code in _ENGINE_KINDS else "#VALUE!"
        if result.message:
            return {"type": "Error", "kind": code, "message": result.message}
        return {"type": "Error", "kind": code}
    numpy = sys.modules.get("numpy")  # nothing is a numpy value if nothing has imported numpy
    if numpy is not None and isinstance(result, numpy.ndarray):
        grid = result.reshape(1, 1) if result.ndim == 0 else result.reshape(-1, 1) if result.ndim == 1 else result
        if grid.size == 1:
            return to_engine(grid.flat[0])
        # text, flags, finite floats and 64-bit ints go back as they are (x - x is 0 for a finite float only); the
        # rest through the checks above: a table of a few hundred values comes back once a cell that reads it
        return [
            [
                x
                if (t := type(x)) is str
                or t is bool
                or (t is float and x - x == 0.0)
                or (t is int and -_INT64 < x < _INT64)
                else to_engine(x)
                for x in row
            ]
            for row in grid.tolist()
        ]
    if numpy is not None and isinstance(result, numpy.generic):
        result = result.item()
    if isinstance(result, float):
        return (
            result
            if math.isfinite(result)
            else {"type": "Error", "kind": "#NUM!", "message": "the result is not a finite number"}
        )
    if isinstance(result, int) and not isinstance(result, bool) and not -_INT64 < result < _INT64:
        return float(result)
    return result


def _record(result: Any) -> None:
    """Note a registry call's failure in the innermost message bucket (see :class:`Messages`)."""
    bucket = _buckets[-1]
    if isinstance(result, CellError):
        if result.message:
            bucket.append(result)
            bucket.grids.append(_Everywhere(result))
        return
    import numpy as np  # an array result: numpy made it

    grid = {
        (i, j): item
        for (i, j), item in np.ndenumerate(np.atleast_2d(result))
        if isinstance(item, CellError) and item.message
    }
    if grid:
        bucket.extend(grid.values())
        bucket.grids.append(grid)


class _Ticker:
    """Counts registry calls as the engine makes them and reports ``(done, total)`` every ``step`` calls."""

    def __init__(self, total: int, report: Callable[[int, int], None]) -> None:
        self.total, self.report, self.done = total, report, 0
        self.step = max(25, total // 200)

    def tick(self) -> None:
        self.done += 1
        if self.done % self.step == 0 and self.done < self.total:
            self.report(self.done, self.total)


_ticker: _Ticker | None = None


@contextlib.contextmanager
def ticking(total: int, report: Callable[[int, int], None] | None) -> Iterator[None]:
    """Report progress inside the block as registry functions are called: ``report(done, total)``, ``total`` the
    calls expected (the calls a calculation makes can be fewer: IF computes one branch); nothing if ``report`` is
    None."""
    global _ticker
    saved = _ticker
    _ticker = _Ticker(max(total, 1), report) if report is not None else None
    try:
        yield
    finally:
        _ticker = saved


def _callback(name: str) -> Callable[..., Any]:
    """The engine's callback for registry function ``name``; its entry (and the module behind it) is loaded at the
    first call, so a book that calls one function loads that function's module alone."""
    fn: registry.Function | None = None

    def call(*args: Any) -> Any:
        nonlocal fn
        if fn is None:
            fn = registry.FUNCTIONS[name]
        try:
            kinds = set(map(type, args))
            values = [from_engine(a) for a in args] if dict in kinds or list in kinds else args  # else as they are
            if list in kinds:
                result = cells.evaluate_broadcast(fn, values)
            else:  # one value per argument, the common case: what evaluate_broadcast does then, without its checks
                result = cells.evaluate(fn, values)
                if isinstance(result, list):  # MODELS(), GPUS(): one column
                    import numpy as np

                    result = np.array(result, dtype=object).reshape(-1, 1)
        except Exception as err:  # never raise into the engine: ISERROR and ERROR.TYPE would not see the error
            result = CellError("#VALUE!", f"{fn.name}: {type(err).__name__}: {err}")
        if _buckets and (isinstance(result, CellError) or is_array(result)):
            _record(result)
        if _ticker is not None:
            _ticker.tick()
        return to_engine(result)

    call.__name__ = name
    return call


_CALLBACKS: dict[str, Callable[..., Any]] = {}


def register_functions(
    book: Any, hooks: Mapping[str, Callable[..., Any]] | None = None, *, date1904: bool = False
) -> Any:
    """Register every registry function, the omitted-argument marker, the lifted native functions
    (:func:`lift_arrays`), Excel's own functions where the engine's differ from Excel (:data:`CORRECTED`; the
    1900 date system's only for a book in it, not ``date1904``) and ``hooks`` ({name: callback}) with the engine
    workbook ``book`` (registrations are per workbook); returns it."""
    if not _CALLBACKS:
        _CALLBACKS.update({name: _callback(name) for name in registry.FUNCTIONS})
        _CALLBACKS.update({LIFT + name: _lifted(name) for name in LIFTED})
    for name, call in _CALLBACKS.items():
        book.register_function(name, call, min_args=0, max_args=None)  # cells.evaluate says "at most N"
    book.register_function(OMITTED, _omitted, min_args=0, max_args=0)
    book.register_function(FIT, fit_array, min_args=3, max_args=7)
    for name, (call, low, high, dates) in CORRECTED.items():
        if not (dates and date1904):
            for stored in (name, "_XLFN." + name):  # as typed, and as Excel stores a function newer than 2007
                if stored not in _NATIVE_ALIASES:
                    book.register_function(stored, call, min_args=low, max_args=high, allow_override_builtin=True)
    for name, call in (hooks or {}).items():
        book.register_function(name, call, min_args=0, max_args=None)
    return book


# ---------------------------------------------------------------------------------------------------------------
# Native functions over arrays

LIFT = "_XLSXPLAN_LIFT_"
"""The prefix of the functions that compute a native function element by element (:func:`lift_arrays`)."""
LIFTED = frozenset(
    "ABS SQRT ROUND ROUNDUP ROUNDDOWN MROUND INT TRUNC MOD QUOTIENT POWER SIGN LN LOG LOG10 EXP CEILING FLOOR "
    "CEILING.MATH FLOOR.MATH CEILING.PRECISE FLOOR.PRECISE ISO.CEILING "
    "ODD EVEN FACT DEGREES RADIANS ASIN ACOS ATAN SINH COSH TANH PERMUT COMBIN ERF "
    "GAMMALN NORM.S.DIST NORM.S.INV NORM.DIST CONVERT DELTA GESTEP BASE DEC2BIN BITAND ROMAN "
    "ISERROR ISERR ISNA ISNUMBER ISTEXT ISNONTEXT ISBLANK ISLOGICAL ISEVEN ISODD N T NOT "
    "LEN LEFT RIGHT MID UPPER LOWER PROPER VALUE NUMBERVALUE TEXT FIXED DOLLAR TRIM CLEAN SUBSTITUTE REPLACE REPT "
    "CODE CHAR UNICHAR FIND SEARCH EXACT "
    "DATE TIME DATEVALUE YEAR MONTH DAY WEEKDAY HOUR MINUTE EDATE EOMONTH".split()
)
"""Native functions of one value per argument that Excel computes element by element over an array (``ABS({1;-2})``
is ``{1;2}``) and formualizer 0.13 does not: it gives #VALUE!, or the first element's result alone."""
_PASSES_ARRAYS = frozenset("IF IFERROR IFNA CHOOSE SIN COS TAN ATAN2".split())
"""Native functions that formualizer computes element by element itself: an array passes through them."""


def lift_arrays(formula: str, multi: Callable[[str], bool] | None = None) -> str:
    """``formula`` with each call of a :data:`LIFTED` native function that may receive an array (a range of
    several cells, an array constant, or the result of another such call) given to ``_XLSXPLAN_LIFT_<name>``,
    which computes it element by element as Excel does. ``multi(operand)`` says whether an operand that is not a
    range (a defined name) refers to several cells. Calls on one value, the usual case, stay as they are."""
    code = code_text(formula)
    called = called_names(formula)
    if called.isdisjoint(_LIFTABLE) or not (
        "{" in code or ":" in code or multi is not None or not called.isdisjoint(_ARRAY_MAKERS)
    ):
        return formula
    tokens = tokenized(formula)
    if tokens is None:  # the engine will report the formula as unparsable
        return formula
    stack: list[tuple[str, int]] = []  # open functions and parentheses: (upper-case name or "", token index)
    marked: set[int] = set()

    def array_here() -> None:
        for name, at in reversed(stack):
            plain = name[6:] if name.startswith("_XLFN.") else name
            if plain in LIFTED:
                marked.add(at)
            elif name and plain not in _PASSES_ARRAYS and name not in registry.FUNCTIONS:
                return  # an aggregate (SUM, INDEX, ROWS) or a function that takes the array whole

    for i, tok in enumerate(tokens):
        kind, sub = str(tok.token_type), str(tok.subtype)
        if kind == "Func" and sub == "Open":
            name = tok.value[:-1].strip().upper()
            if name in _ARRAY_MAKERS:
                array_here()  # its result is an array: the functions around it take it element by element
            stack.append((name, i))
        elif kind in ("Paren", "Array") and sub == "Open":
            if kind == "Array":
                array_here()
            stack.append(("" if kind == "Paren" else "{", i))
        elif sub == "Close" and kind in ("Func", "Paren", "Array"):
            if stack:
                stack.pop()
        elif kind == "Operand" and sub == "Range" and not (stack and stack[-1][0] == "{"):
            value = tok.value
            single = i >= 2 and str(tokens[i - 2].value) == "@" and str(tokens[i - 1].token_type) == "Paren"
            if not single and (":" in value or (multi is not None and multi(value))):
                array_here()  # (a reference written @(...) is one value: implicitly intersected)
    if not marked:
        return formula
    raw = formula.encode("utf-8")
    out, last = [], 0
    for i in sorted(marked):
        tok = tokens[i]
        name = tok.value[:-1].strip()
        plain = name[6:] if name.upper().startswith("_XLFN.") else name
        out += [raw[last : tok.start], f"{LIFT}{plain.upper()}(".encode()]
        last = tok.end
    out.append(raw[last:])
    return b"".join(out).decode("utf-8")


_LIFTABLE = LIFTED | {"_XLFN." + name for name in LIFTED}
_ARRAY_MAKERS = frozenset(
    prefix + name
    for name in (
        "SEQUENCE ANCHORARRAY TEXTSPLIT RANDARRAY FILTER SORT SORTBY UNIQUE TOCOL TOROW CHOOSECOLS CHOOSEROWS "
        "DROP TAKE HSTACK VSTACK EXPAND WRAPCOLS WRAPROWS MUNIT"
    ).split()
    for prefix in ("", "_XLFN.", "_XLFN._XLWS.")
)
"""Functions whose result is an array whatever their arguments: a :data:`LIFTED` function around one is lifted."""


def lifts(formula: str) -> bool:
    """Whether ``formula`` calls a :data:`LIFTED` function (which gets its array arguments as Python values)."""
    return not called_names(formula).isdisjoint(_LIFTABLE)


def _literal(value: Any) -> str:
    """An engine value written as a formula's literal (an empty value as ``_XLSXPLAN_OMITTED()``)."""
    if value is None:
        return f"{OMITTED}()"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)):
        return repr(float(value)) if isinstance(value, float) else str(value)
    if type(value) is dict:
        return cell_error(value).code
    return '"' + str(value).replace('"', '""') + '"'


_lift_memo: dict[tuple[Any, ...], Any] = {}


def _kind(value: Any) -> str:
    return str(value.get("kind", "")).lower() if type(value) is dict else ""


_IS = {
    "ISERROR": lambda v: type(v) is dict,
    "ISERR": lambda v: type(v) is dict and _kind(v) not in ("na", "#n/a"),
    "ISNA": lambda v: _kind(v) in ("na", "#n/a"),
    "ISNUMBER": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "ISTEXT": lambda v: isinstance(v, str),
    "ISNONTEXT": lambda v: not isinstance(v, str),
    "ISBLANK": lambda v: v is None,
    "ISLOGICAL": lambda v: isinstance(v, bool),
}
"""The IS functions on one value, exact from the value's kind alone (the engine's own takes 12 us a call here)."""


def _native_scalar(name: str, args: tuple[Any, ...]) -> Any:
    """The native function ``name`` on one value per argument, as the engine computes it."""
    test = _IS.get(name)
    if test is not None and len(args) == 1:
        return test(args[0])
    corrected = CORRECTED.get(name)
    if corrected is not None:
        return corrected[0](*args)
    key = (name, *((("E", v.get("kind")) if type(v) is dict else (type(v), v)) for v in args))
    try:
        return _lift_memo[key]
    except KeyError:
        pass
    except TypeError:  # unhashable: computed every time
        key = ()
    book = _native()
    book.set_formula("Probe", 2, 1, f"={name}({','.join(_literal(v) for v in args)})")
    value = book.evaluate_cell("Probe", 2, 1)
    if key:
        if len(_lift_memo) > 100_000:
            _lift_memo.clear()
        _lift_memo[key] = value
    return value


def _element(arg: Any, i: int, j: int) -> Any:
    """Element (i, j) of an argument broadcast as Excel does: one value everywhere, a row down, a column across,
    ``#N/A`` beyond an array's size."""
    if type(arg) is not list:
        return arg
    rows = len(arg)
    first = arg[0] if rows else []
    cols = len(first) if type(first) is list else 1
    if rows == 1 and cols == 1:
        return first[0] if type(first) is list else first
    r = 0 if rows == 1 else i
    c = 0 if cols == 1 else j
    if r >= rows or c >= cols:
        return {"type": "Error", "kind": "#N/A"}
    row = arg[r]
    return row[c] if type(row) is list else row


def _lifted(name: str) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        try:
            with _lock:
                shapes = [(len(a), len(a[0]) if a and type(a[0]) is list else 1) for a in args if type(a) is list]
                if not shapes:
                    return _native_scalar(name, args)
                rows, cols = max(r for r, _ in shapes), max(c for _, c in shapes)
                return [
                    [_native_scalar(name, tuple(_element(a, i, j) for a in args)) for j in range(cols)]
                    for i in range(rows)
                ]
        except Exception as err:  # never raise into the engine
            return {"type": "Error", "kind": "#VALUE!", "message": f"{name}: {type(err).__name__}: {err}"}

    call.__name__ = LIFT + name
    return call


def fatal(err: BaseException) -> bool:
    """Whether ``err`` must go on up (an interrupt, an exit) rather than be read as a failure of the engine: a panic
    in formualizer's Rust code comes up as an exception outside ``Exception``, and is such a failure."""
    return isinstance(err, (KeyboardInterrupt, SystemExit, GeneratorExit))


def tokenized(formula: str) -> list[Any] | None:
    """The engine's tokens of ``formula`` as given (token positions are byte offsets into it), or None where the
    engine cannot tokenize it: the caller then leaves the formula as it is, and the engine reports it."""
    try:
        return list(fz.tokenize(formula))
    except BaseException as _err:
        if fatal(_err):
            raise
        return None


def _omitted() -> None:
    return None


SPILL_CAP = 10_000
"""The most cells formualizer 0.13 spills one result into (more is ``#SPILL!``, the cells left as they were)."""


def fit_array(rows: Any, cols: Any, *part: Any) -> Any:
    """An array formula's result fitted to its range of ``rows`` x ``cols`` cells, as Excel fits a legacy (CSE)
    array: one value fills the range, a row repeats down it, a column across it, and a cell beyond the result is
    ``#N/A``. Engine difference: formualizer spills the result from the first cell whatever the range, into cells
    outside it and leaving cells inside it empty.

    Called as ``FIT(rows, cols, value)`` for the whole range, or ``FIT(rows, cols, row0, col0, n_rows, n_cols,
    value)`` for the tile of ``n_rows`` x ``n_cols`` cells at offset (row0, col0) of it: a range over more than
    :data:`SPILL_CAP` cells is computed as tiles of at most that many, each from a cell of its own
    (:func:`array_tiles`)."""
    value = part[-1]
    n, m = int(rows), int(cols)
    if len(part) == 5:
        r0, c0, nr, nc = (int(x) for x in part[:4])
        return [[_element(value, i, j) for j in range(c0, c0 + nc)] for i in range(r0, r0 + nr)]
    return [[_element(value, i, j) for j in range(m)] for i in range(n)]


def array_tiles(rows: int, cols: int) -> list[tuple[int, int, int, int]]:
    """The tiles (row offset, column offset, rows, columns) an array formula over ``rows`` x ``cols`` cells is
    computed in: one, the whole range, when it is at most :data:`SPILL_CAP` cells; else blocks of whole rows (or
    of a row's columns, for a row wider than the cap) of at most that many cells each."""
    if rows * cols <= SPILL_CAP:
        return [(0, 0, rows, cols)]
    if cols <= SPILL_CAP:
        step = SPILL_CAP // cols
        return [(r, 0, min(step, rows - r), cols) for r in range(0, rows, step)]
    return [(r, c, 1, min(SPILL_CAP, cols - c)) for r in range(rows) for c in range(0, cols, SPILL_CAP)]


def new_book(data: bytes | None = None, date1904: bool = False) -> Any:
    """A formualizer workbook (from a package's bytes, or empty) set up as xlsxplan needs it: evaluation on the
    calling thread, one cell at a time (callbacks share xlsxplan's message and warning state; in parallel they
    would run on the engine's threads, where that state is not theirs), dates as serial numbers, as Excel
    stores them, counted from 1904 when the workbook says so (``date1904``; the engine's default is 1900)."""
    cfg = fz.EvaluationConfig()
    cfg.enable_parallel = False
    if date1904:
        cfg.date_system = "1904"
    config = fz.WorkbookConfig(eval_config=cfg)
    book = fz.Workbook(config=config) if data is None else fz.Workbook.from_bytes(data, config=config)
    book.set_temporal_egress("serial")
    book.set_changelog_enabled(False)  # no undo here; a change logged costs as much again as the change
    return book


# ---------------------------------------------------------------------------------------------------------------
# Excel's own functions where formualizer 0.13 computes them otherwise


def _error_in(value: Any) -> dict | None:
    return value if type(value) is dict else None


def _cells(arg: Any) -> list[list[Any]]:
    if type(arg) is list:
        return [row if type(row) is list else [row] for row in arg]
    return [[arg]]


def sumproduct(*arrays: Any) -> Any:
    """Excel's SUMPRODUCT: the sum of the products of the arrays' corresponding elements. In its own array
    arguments an element that is not a number (text, even ``"2"``; TRUE and FALSE; an empty cell) counts as 0, an
    error value is the result, and arrays of different sizes are ``#VALUE!`` (Microsoft, "SUMPRODUCT function":
    "treats non-numeric array entries as if they were zeros"). formualizer 0.13 converts ``"2"`` and TRUE to
    numbers: ``SUMPRODUCT({1,"2",TRUE})`` was 4, Excel's is 1. A product written inside an argument
    (``SUMPRODUCT(A1:A3*B1:B3)``) is computed by the engine first, where ``*`` converts ``"3"`` as Excel's does."""
    grids = [_cells(a) for a in arrays]
    rows, cols = len(grids[0]), len(grids[0][0]) if grids[0] else 0
    if any(len(g) != rows or any(len(r) != cols for r in g) for g in grids):
        return {"type": "Error", "kind": "#VALUE!", "message": "SUMPRODUCT's arrays must all be the same size"}
    total = 0.0
    for i in range(rows):
        for j in range(cols):
            product = 1.0
            for g in grids:
                v = g[i][j]
                if type(v) is dict:
                    return v
                product *= v if type(v) in (int, float) else 0.0
            total += product
    return total


_EXCEL_EPOCH = datetime.date(1899, 12, 31)
_LOTUS_LEAP_DAY = 60
"""Serial number 60 is 29 February 1900 in Excel's 1900 date system, a day that did not exist, kept from Lotus 1-2-3
for compatibility (Microsoft, "Excel incorrectly assumes that the year 1900 is a leap year"): every serial number
from 61 (1 March 1900) on is one more than the days since 31 December 1899."""


def _serial(day: datetime.date) -> int:
    """The 1900 date system's serial number of a real date."""
    n = (day - _EXCEL_EPOCH).days
    return n + 1 if n >= _LOTUS_LEAP_DAY else n


def _whole(value: Any, what: str) -> int | dict:
    """An argument of a date function as Excel reads it: a number truncated, TRUE 1, empty 0, text of a number."""
    if type(value) is dict:
        return value
    if value is None:
        return 0
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return {"type": "Error", "kind": "#VALUE!", "message": f"DATE's {what} must be a number, got {value!r}"}
    return math.floor(value) if value >= 0 else -math.floor(-value)


def date_1900(year: Any, month: Any, day: Any) -> Any:
    """Excel's DATE in the 1900 date system: the serial number of (year, month, day), a month past 12 or below 1
    and a day past the month's end or below 1 carried into the year and month, a year from 0 to 1899 read as 1900
    more (Microsoft, "DATE function"), and 29 February 1900 the Lotus leap day, serial 60 (DATE(1900,3,0) too).
    formualizer 0.13 gives 61, the serial of 1 March. ``#NUM!`` outside serials 0 to 2,958,465 (31 December
    9999)."""
    y, m, d = _whole(year, "year"), _whole(month, "month"), _whole(day, "day")
    for part in (y, m, d):
        if type(part) is dict:
            return part
    assert isinstance(y, int) and isinstance(m, int) and isinstance(d, int)
    if 0 <= y < 1900:
        y += 1900
    y, m = y + (m - 1) // 12, (m - 1) % 12 + 1
    if not 1900 <= y <= 9999:
        return {"type": "Error", "kind": "#NUM!", "message": f"DATE's year must be from 0 to 9999, got {y}"}
    serial = _serial(datetime.date(y, m, 1)) + d - 1  # a day past the month's end counts on in Lotus' calendar
    if not 0 <= serial <= 2_958_465:
        return {"type": "Error", "kind": "#NUM!", "message": f"DATE gives serial number {serial}, outside 0 to 2958465"}
    return float(serial)


def days(end: Any, start: Any) -> Any:
    """Excel's DAYS: ``end - start`` in days, each date's serial number truncated (Microsoft, "DAYS function");
    a date written as text is read by the engine's DATEVALUE. formualizer 0.13 counts real days between them,
    one fewer than Excel's across the Lotus leap day (DAYS(61,59): Excel 2)."""
    serials = []
    for value in (end, start):
        if type(value) is dict:
            return value
        if isinstance(value, str):
            value = _native_scalar("DATEVALUE", (value,))
            if type(value) is dict:
                return value
        serials.append(_whole(value, "date"))
    a, b = serials
    if type(a) is dict or type(b) is dict:
        return a if type(a) is dict else b
    assert isinstance(a, int) and isinstance(b, int)
    if not (0 <= a <= 2_958_465 and 0 <= b <= 2_958_465):
        return {"type": "Error", "kind": "#NUM!", "message": "DAYS takes dates from serial 0 to 2958465"}
    return float(a - b)


_ROMAN_SYMBOLS = "MDCLXVI"
_ROMAN_VALUES = (1000, 500, 100, 50, 10, 5, 1)
_ROMAN_FORMS = {True: 0, False: 4}


def roman(number: Any, form: Any = 0) -> Any:
    """Excel's ROMAN: ``number`` (0 to 3999, truncated) in Roman numerals, ``form`` 0 (classic, the default or
    TRUE) to 4 (simplified, or FALSE) (Microsoft, "ROMAN function": 499 is CDXCIX, LDVLIV, XDIX, VDIV, ID). Each
    decimal digit is written in turn; a 4 or a 9 is a subtractive pair, and each step of ``form`` lets the
    subtracted symbol be one smaller still (XD for 490 rather than XCD) while the pair stays at most the value
    left. formualizer 0.13 gives ``#VALUE!`` for every form but 0."""
    if type(number) is dict:
        return number
    if type(form) is dict:
        return form
    try:
        n = math.floor(float(number if number is not None else 0))
        mode = _ROMAN_FORMS[form] if isinstance(form, bool) else math.floor(float(form if form is not None else 0))
    except (TypeError, ValueError):
        return {"type": "Error", "kind": "#VALUE!", "message": "ROMAN takes a number and a form from 0 to 4"}
    if not (0 <= n <= 3999 and 0 <= mode <= 4):
        return {"type": "Error", "kind": "#VALUE!", "message": f"ROMAN takes 0 to 3999 in form 0 to 4, got {n}, {mode}"}
    out: list[str] = []
    last = len(_ROMAN_VALUES) - 1
    for index in range(0, last + 1, 2):  # M, C, X, I: one decimal digit each
        digit = n // _ROMAN_VALUES[index]
        if digit % 5 == 4:
            upper = index - 1 if digit == 4 else index - 2  # the symbol subtracted from: V/L/D, or X/C/M
            lower = index
            steps = 0
            while steps < mode and lower < last:
                steps += 1
                if _ROMAN_VALUES[upper] - _ROMAN_VALUES[lower + 1] <= n:
                    lower += 1
                else:
                    break
            out.append(_ROMAN_SYMBOLS[lower] + _ROMAN_SYMBOLS[upper])
            n += _ROMAN_VALUES[lower] - _ROMAN_VALUES[upper]
        else:
            if digit > 4:
                out.append(_ROMAN_SYMBOLS[index - 1])
            out.append(_ROMAN_SYMBOLS[index] * (digit % 5))
            n %= _ROMAN_VALUES[index]
    return "".join(out)


def _multiple(name: str, number: Any, significance: Any, mode: Any, up: bool) -> Any:
    n = _number_arg(number, f"{name}'s number")
    s = _number_arg(significance, f"{name}'s significance")
    m = _number_arg(mode, f"{name}'s mode")
    for v in (n, s, m):
        if type(v) is dict:
            return v
    assert isinstance(n, float) and isinstance(s, float) and isinstance(m, float)
    if name in ("FLOOR", "CEILING"):
        if n > 0 and s < 0:
            return {
                "type": "Error",
                "kind": "#NUM!",
                "message": f"{name} of a positive number needs a positive significance",
            }
        if s == 0:
            if name == "FLOOR" and n != 0:
                return {"type": "Error", "kind": "#DIV/0!", "message": "FLOOR's significance is 0"}
            return 0.0
    else:
        s = abs(s)
        if s == 0:
            return 0.0
        if n < 0 and m != 0 and name in ("FLOOR.MATH", "CEILING.MATH"):
            up = not up  # a negative number rounded toward zero (FLOOR.MATH) or away from it (CEILING.MATH)
    q = _approx(n / s)
    if not math.isfinite(q) or not math.isfinite(q * s):
        return {"type": "Error", "kind": "#NUM!", "message": f"{name}: {n:g} / {s:g} is too large"}
    return float((math.ceil(q) if up else math.floor(q)) * s) + 0.0


def _floor(name: str, up: bool) -> Callable[..., Any]:
    def call(number: Any, significance: Any = 1.0, mode: Any = 0.0) -> Any:
        return _multiple(name, number, significance, mode, up)

    call.__name__ = name.replace(".", "_").lower()
    call.__doc__ = (
        f"Excel's {name}: the number rounded {'up' if up else 'down'} to a multiple of the significance, as "
        "Microsoft documents it: FLOOR and CEILING keep the significance's sign (a positive number with a negative "
        "significance is #NUM!; FLOOR(x,0) #DIV/0!, CEILING(x,0) 0; a negative number with a negative significance "
        "rounds FLOOR toward zero and CEILING away from it); the .MATH, .PRECISE and ISO forms take its size (0 "
        "gives 0), and .MATH's mode other than 0 turns the direction for a negative number. formualizer 0.13 "
        "differs on negative and zero significances and knows no .PRECISE form."
    )
    return call


def _whole_numbers(name: str, args: tuple[Any, ...]) -> list[int] | dict:
    """GCD's and LCM's arguments as Excel reads them: every element of every argument (ranges and arrays
    included), truncated; an empty cell of a range 0, one given alone skipped (all such: ``#VALUE!``); an error
    value the result; TRUE, FALSE and text not a number ``#VALUE!``; below 0 or from 2^53 on ``#NUM!``."""
    out = []
    for arg in args:
        for row in _cells(arg):
            for v in row:
                if v is None:
                    if type(arg) is list:
                        v = 0.0  # an empty cell of a range counts 0; an empty cell given alone, nothing
                    else:
                        continue
                if isinstance(v, bool):
                    return {"type": "Error", "kind": "#VALUE!", "message": f"{name} takes numbers, not TRUE or FALSE"}
                n = _number_arg(v, f"{name}'s arguments")
                if type(n) is dict:
                    return n
                assert isinstance(n, float)
                if not 0 <= n < 2**53:
                    return {
                        "type": "Error",
                        "kind": "#NUM!",
                        "message": f"{name} takes numbers from 0 to 2^53, got {n:g}",
                    }
                out.append(int(n))
    if not out:
        return {"type": "Error", "kind": "#VALUE!", "message": f"{name} has no number: every argument is empty"}
    return out


def gcd(*args: Any) -> Any:
    """Excel's GCD: the greatest common divisor of the whole numbers in any number of arguments, ranges and
    arrays included (Microsoft, "GCD function"). formualizer 0.13 takes two arguments at most."""
    numbers = _whole_numbers("GCD", args)
    return numbers if type(numbers) is dict else float(math.gcd(*numbers))


def lcm(*args: Any) -> Any:
    """Excel's LCM: the least common multiple of the whole numbers in any number of arguments (0 if one is 0;
    ``#NUM!`` from 2^53 on) (Microsoft, "LCM function"). formualizer 0.13 takes two arguments at most."""
    numbers = _whole_numbers("LCM", args)
    if type(numbers) is dict:
        return numbers
    result = math.lcm(*numbers) if numbers else 0
    if result >= 2**53:
        return {"type": "Error", "kind": "#NUM!", "message": "LCM is 2^53 or more"}
    return float(result)


def _matrix(arg: Any, name: str) -> np.ndarray | dict:
    """An argument of a matrix function as a 2-D array of floats; an error value passes on, and an element that
    is not a number (text, TRUE, FALSE, an empty cell) is ``#VALUE!``, as in Excel."""
    import numpy as np

    grid = _cells(arg)
    for row in grid:
        for v in row:
            if type(v) is dict:
                return v
            if type(v) not in (int, float):
                return {"type": "Error", "kind": "#VALUE!", "message": f"{name} takes numbers only, got {v!r}"}
    if not grid or any(len(row) != len(grid[0]) for row in grid):
        return {"type": "Error", "kind": "#VALUE!", "message": f"{name} takes a rectangular array"}
    return np.array(grid, dtype=float)


def mmult(a: Any, b: Any) -> Any:
    """Excel's MMULT: the matrix product of two arrays of numbers, ``#VALUE!`` when the first's columns are not the
    second's rows (Microsoft, "MMULT function"). formualizer 0.13 has no MMULT."""
    import numpy as np

    x, y = _matrix(a, "MMULT"), _matrix(b, "MMULT")
    if type(x) is dict or type(y) is dict:
        return x if type(x) is dict else y
    assert isinstance(x, np.ndarray) and isinstance(y, np.ndarray)
    if x.shape[1] != y.shape[0]:
        return {"type": "Error", "kind": "#VALUE!", "message": f"MMULT: {x.shape[1]} columns by {y.shape[0]} rows"}
    with np.errstate(all="ignore"):
        product = x @ y
    if not np.isfinite(product).all():
        return {"type": "Error", "kind": "#NUM!", "message": "MMULT: a result is too large for a number"}
    return product.tolist()


def _square(arg: Any, name: str) -> np.ndarray | dict:
    import numpy as np

    m = _matrix(arg, name)
    if isinstance(m, np.ndarray) and m.shape[0] != m.shape[1]:
        return {
            "type": "Error",
            "kind": "#VALUE!",
            "message": f"{name} takes a square array, got {m.shape[0]}x{m.shape[1]}",
        }
    return m


def mdeterm(a: Any) -> Any:
    """Excel's MDETERM: the determinant of a square array of numbers (Microsoft, "MDETERM function"; computed by LU
    decomposition, as Excel does, so to about 16 digits). formualizer 0.13 has no MDETERM."""
    import numpy as np

    m = _square(a, "MDETERM")
    if not isinstance(m, np.ndarray):
        return m
    return float(np.linalg.det(m))


def minverse(a: Any) -> Any:
    """Excel's MINVERSE: the inverse of a square array of numbers, ``#NUM!`` for a singular one (Microsoft,
    "MINVERSE function"). formualizer 0.13 has no MINVERSE."""
    import numpy as np

    m = _square(a, "MINVERSE")
    if type(m) is dict:
        return m
    assert isinstance(m, np.ndarray)
    if np.linalg.det(m) == 0:
        return {"type": "Error", "kind": "#NUM!", "message": "MINVERSE: the array is singular (determinant 0)"}
    return np.linalg.inv(m).tolist()


def munit(dimension: Any) -> Any:
    """Excel's MUNIT: the identity matrix of ``dimension`` rows and columns, ``#VALUE!`` below 1 (Microsoft, "MUNIT
    function"). formualizer 0.13 has no MUNIT."""
    import numpy as np

    n = _number_arg(dimension, "MUNIT's dimension")
    if type(n) is dict:
        return n
    assert isinstance(n, float)
    if not 1 <= n <= 16_384:
        return {"type": "Error", "kind": "#VALUE!", "message": f"MUNIT's dimension must be from 1 to 16384, got {n:g}"}
    return np.eye(int(n)).tolist()


CORRECTED: dict[str, tuple[Callable[..., Any], int, int | None, bool]] = {
    "MMULT": (mmult, 2, 2, False),
    "MDETERM": (mdeterm, 1, 1, False),
    "MINVERSE": (minverse, 1, 1, False),
    "MUNIT": (munit, 1, 1, False),
    "GCD": (gcd, 1, 255, False),
    "LCM": (lcm, 1, 255, False),
    "FLOOR": (_floor("FLOOR", False), 1, 2, False),
    "CEILING": (_floor("CEILING", True), 1, 2, False),
    "FLOOR.MATH": (_floor("FLOOR.MATH", False), 1, 3, False),
    "CEILING.MATH": (_floor("CEILING.MATH", True), 1, 3, False),
    "FLOOR.PRECISE": (_floor("FLOOR.PRECISE", False), 1, 2, False),
    "CEILING.PRECISE": (_floor("CEILING.PRECISE", True), 1, 2, False),
    "ISO.CEILING": (_floor("ISO.CEILING", True), 1, 2, False),
    "ROMAN": (roman, 1, 2, False),
    "SUMPRODUCT": (sumproduct, 1, 255, False),
    "DATE": (date_1900, 3, 3, True),
    "DAYS": (days, 2, 2, True),
}
"""Excel's functions registered in place of the engine's own, which differ from Excel's documentation: {name:
(callback, least and most arguments, whether it is the 1900 date system's)}."""


def _hooks() -> None:
    """Give :mod:`.natives` the engine's functions that xlsxplan's own Excel functions call back through."""
    natives.scalar = _native_scalar
    natives.error_code = lambda value: cell_error(value).code


def _more_corrected() -> None:
    """Add the other modules' corrections of Excel's functions to :data:`CORRECTED` (they use this module's
    helpers, so they are imported once it is loaded)."""
    from . import bonds, complexes, convert, criteria, lookup, missing

    CORRECTED.update(bonds.FUNCTIONS)
    CORRECTED.update(convert.FUNCTIONS)
    CORRECTED.update(lookup.FUNCTIONS)
    CORRECTED.update(missing.FUNCTIONS)
    CORRECTED.update(criteria.FUNCTIONS)
    CORRECTED.update(complexes.FUNCTIONS)


_more_corrected()
_hooks()


# ---------------------------------------------------------------------------------------------------------------
# Formula text

_TEXT_LITERAL = re.compile(r'("(?:[^"]|"")*")')
"""A text literal in a formula, quotes doubled inside; split by it, the even parts are outside quotes."""


def outside_quotes(formula: str, change: Callable[[str], str]) -> str:
    """``formula`` with ``change`` applied to every part outside its text literals, which stay as they are."""
    parts = _TEXT_LITERAL.split(formula)
    parts[::2] = [change(part) for part in parts[::2]]
    return "".join(parts)


def code_text(formula: str) -> str:
    """``formula`` with its text literals emptied: what is left is operators, references, names and numbers."""
    return "".join(_TEXT_LITERAL.split(formula)[::2])


_NUMBER_LITERAL = re.compile(r"(?<![A-Za-z_$\d.])(\d+\.?\d*|\.\d+)[eE]([+-]?)(\d+)")


def normalise_formula(formula: str) -> str:
    """A formula as a person types it, in the form Excel stores it: a leading ``=``, ``1e6`` as ``1E+6``, and an
    add-in's stored name of a registry function as the function (:func:`add_in_names`).

    String literals are left alone.
    """
    text = formula.strip()
    if not text.startswith("="):
        text = "=" + text
    numbers = outside_quotes(
        text, lambda part: _NUMBER_LITERAL.sub(lambda m: f"{m.group(1)}E{m.group(2) or '+'}{m.group(3)}", part)
    )
    return add_in_names(numbers)


_ADD_IN_CALL = re.compile(r"(?<![A-Za-z0-9_.])_xldudf_([A-Za-z0-9_.]+)(?=\s*\()", re.IGNORECASE)


def _registry_name(stored: str) -> str | None:
    """The registry function a stored add-in function name means: the name itself, or the longest tail of it after
    an ``_`` or ``.`` (the add-in's namespace, ``XLWINGS_`` say, goes before it); None when no tail is one."""
    upper = stored.upper()
    if upper in registry.FUNCTIONS:
        return upper
    for i, ch in enumerate(upper):
        if ch in "_." and upper[i + 1 :] in registry.FUNCTIONS:
            return upper[i + 1 :]
    return None


def add_in_names(formula: str) -> str:
    """A formula with Office add-in function names read as the registry's: Excel stores a call to a custom function
    of an Office add-in (xlwings Lite's among them) as ``_xldudf_`` and the namespaced name, such as
    ``_xldudf_XLWINGS_KV_BYTES_PER_TOKEN(80,8,128)``; a workbook saved that way recalculates here as if typed
    ``=KV_BYTES_PER_TOKEN(80,8,128)``. Names that are not the registry's, and text in quotes, are left alone (an
    unknown ``_xldudf_`` function stays ``#NAME?``)."""
    if "_xldudf_" not in formula.lower():
        return formula
    return outside_quotes(
        formula, lambda part: _ADD_IN_CALL.sub(lambda m: _registry_name(m.group(1)) or m.group(0), part)
    )


_NUMBER_TEXT = r"[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?"
_REFERENCE_TEXT = r"\$?[A-Za-z]{1,3}\$?[0-9]{1,7}"
_ONE_VALUE_ARG = rf"-?(?:{_NUMBER_TEXT}|{_REFERENCE_TEXT})"
_ONE_VALUE_CALL = re.compile(rf"=([A-Za-z][A-Za-z0-9_.]*)\((?:(?:{_ONE_VALUE_ARG},)*{_ONE_VALUE_ARG})?\)")
"""A call with numbers and single-cell references for its arguments, nothing else: ``=F(A2,1,2.5,$B$3)``."""
ONE_VALUE_NUMBER = re.compile(rf"-?{_NUMBER_TEXT}")
"""An argument of a :func:`one_value_call` that is a number (a negated reference is neither this nor the next)."""
ONE_VALUE_REFERENCE = re.compile(_REFERENCE_TEXT)
"""An argument of a :func:`one_value_call` that is a single-cell reference."""


def one_value_arguments(formula: str) -> tuple[str, list[str]] | None:
    """The registry function's name and the arguments as written (:data:`ONE_VALUE_NUMBER`,
    :data:`ONE_VALUE_REFERENCE` or a negated reference) of ``formula`` when it is a :func:`one_value_call`; else
    None."""
    m = _ONE_VALUE_CALL.fullmatch(formula)
    if m is None:
        return None
    name = m.group(1).upper()
    if name not in registry.FUNCTIONS or registry.FUNCTIONS[name].spills:
        return None
    inner = formula[m.end(1) + 1 : -1]
    return name, inner.split(",") if inner else []


def one_value_call(formula: str) -> bool:
    """True when ``formula`` (``=...``, as the engine is given it) is one call of a registry function that returns
    one value (not a list or a table: :attr:`~xlsxplan.registry.Function.spills`), whose arguments are numbers and
    single-cell references: its result is one value however it is read, so Excel's implicit intersection ``@(...)``
    would leave it as it is and the formula can be given as written (a sweep's column of ``=F(A2,...)``)."""
    return one_value_arguments(formula) is not None


def calls_registry(formula: str) -> bool:
    """Whether ``formula`` calls a registry function (outside its text literals)."""
    return not called_names(formula).isdisjoint(registry.FUNCTIONS)


_MAYBE_OMITTED = re.compile(r"[(,]\s*[,)]")
OMITS_AS_EMPTY = frozenset(
    name
    for plain in ("TEXTBEFORE", "TEXTAFTER", "EXPAND", "WRAPCOLS", "WRAPROWS", "SEQUENCE")
    for name in (plain, "_XLFN." + plain)
)
"""Excel's functions registered here whose omitted arguments take their defaults (not the engine's 0): an omitted
argument reaches them as an empty value, as it reaches a registry function (:func:`mark_omitted`)."""


def mark_omitted(formula: str) -> str:
    """``formula`` with each omitted argument of a registry call (or of :data:`OMITS_AS_EMPTY`'s) given as
    ``_XLSXPLAN_OMITTED()``.

    The engine passes an omitted argument (the middle one of ``=F(1,,3)``, the last of ``=F(1,2,)``) to a custom
    function as the number 0, so ``=KV_BYTES_PER_TOKEN(80,8,128,)`` would read 0 bytes per value. In Excel and
    xlwings an omitted argument is an empty value: the function's default, or "required but the cell is empty".
    Excel's own functions keep the 0 they expect (``=IF(TRUE,,1)`` is 0, ``=SUM(1,,2)`` is 3), also when their
    result is passed to a registry function. ``=F()`` has no argument at all, not an omitted one.
    """
    if not _MAYBE_OMITTED.search(code_text(formula)):
        return formula
    tokens = tokenized(formula)
    if tokens is None:  # the engine will report the formula as unparsable
        return formula
    raw = formula.encode("utf-8")  # token positions are byte offsets
    inserts: list[int] = []
    stack: list[bool] = []  # for each open parenthesis: is it a registry call's?
    previous: tuple[str, str] | None = None
    for tok in tokens:
        kind, sub = str(tok.token_type), str(tok.subtype)
        if kind == "Whitespace":
            continue
        if kind == "Func" and sub == "Open":
            called = tok.value[:-1].strip().upper()
            stack.append(called in registry.FUNCTIONS or called in OMITS_AS_EMPTY)
        elif kind in ("Paren", "Array") and sub == "Open":
            stack.append(False)
        elif (kind == "Sep" and sub == "Arg") or (kind == "Func" and sub == "Close"):
            empty = previous in (("Func", "Open"), ("Sep", "Arg"))
            bare_call = kind == "Func" and previous == ("Func", "Open")
            if stack and stack[-1] and empty and not bare_call:
                inserts.append(tok.start)
            if kind == "Func" and stack:
                stack.pop()
        elif kind in ("Paren", "Array") and sub == "Close" and stack:
            stack.pop()
        previous = (kind, sub)
    if not inserts:
        return formula
    mark = f"{OMITTED}()".encode()
    out, last = [], 0
    for pos in inserts:
        out += [raw[last:pos], mark]
        last = pos
    out.append(raw[last:])
    return b"".join(out).decode("utf-8")


_CALL = re.compile(r"(?<![A-Za-z0-9_.$])([A-Za-z_][A-Za-z0-9_.]*)\s*\(")


@functools.lru_cache(maxsize=8192)  # the checks, the range costs and the engine's rewriting each ask of one text
def called_names(formula: str) -> frozenset[str]:
    """The names ``formula`` calls, upper case, outside its text literals: one pass over the text, which
    :func:`calls_registry`, :func:`lifts` and :func:`prepare` each compare with a set of names (not an alternation
    of every function's name tried at every character)."""
    code = code_text(formula) if '"' in formula else formula
    return frozenset(m.group(1).upper() for m in _CALL.finditer(code)) if "(" in code else frozenset()


def function_calls(formula: str) -> list[str]:
    """The registry functions ``formula`` calls, once per call, in the order written (outside its text literals)."""
    code = code_text(formula) if '"' in formula else formula
    return [m.group(1).upper() for m in _CALL.finditer(code) if m.group(1).upper() in registry.FUNCTIONS]


def prepare(formula: str, multi: Callable[[str], bool] | None = None) -> tuple[str, bool]:
    """A formula (with its ``=``) as the engine is given it: reversed ranges in order and chains of ranges as one
    (:func:`.references.ordered`), add-in names read as the registry's
    (:func:`add_in_names`), omitted arguments of registry calls empty (:func:`mark_omitted`), native functions of
    one value lifted over arrays (:func:`lift_arrays`); and whether it calls a registry function. One pass over
    the function names decides which of these a formula needs: most need none."""
    formula = ordered_ranges(formula)
    code = code_text(formula) if '"' in formula else formula
    called = called_names(formula)
    if any(name.startswith("_XLDUDF_") for name in called):
        formula = add_in_names(formula)
        code = code_text(formula) if '"' in formula else formula
        called = called_names(formula)
    registry_call = not called.isdisjoint(registry.FUNCTIONS)
    if (registry_call or not called.isdisjoint(OMITS_AS_EMPTY)) and _MAYBE_OMITTED.search(code):
        formula = mark_omitted(formula)
    if not called.isdisjoint(_LIFTABLE) and (
        "{" in code or ":" in code or multi is not None or not called.isdisjoint(_ARRAY_MAKERS)
    ):
        formula = lift_arrays(formula, multi)
    if not called.isdisjoint(_XLOOKUP):
        formula = modal_lookups(formula)
    if not called.isdisjoint(_CONDITIONAL) and ":" in code:
        formula = whole_width_to_engine(formula)
    return formula, registry_call


_XLOOKUP = frozenset({"XLOOKUP", "_XLFN.XLOOKUP"})
_CONDITIONAL = frozenset("COUNTIF COUNTIFS SUMIF SUMIFS AVERAGEIF AVERAGEIFS".split())
_NATIVE_ALIASES = frozenset("_XLFN." + name for name in _CONDITIONAL)
"""Names left to the engine's own functions: Excel never stores these 2007 functions with ``_xlfn.``, so the rewrite
(:func:`whole_width_to_engine`) can name the engine's own with it."""
_WHOLE_WIDTH = re.compile(r"(?:^|!)\$?\d+:\$?\d+$|:\$?XFD\$?\d*$", re.IGNORECASE)


def whole_width_to_engine(formula: str) -> str:
    """``formula`` with each COUNTIF, SUMIF and the like (:mod:`.criteria`'s, registered over the engine's) whose
    range spans every column of several rows (``1:1048576``, ``A1:XFD1048576``) given to the engine's own function
    instead: formualizer hands so large a range to a registered function as ``#NUM!``, and goes through its rows in
    use itself."""
    tokens = tokenized(formula)
    if tokens is None:
        return formula
    stack: list[tuple[int, bool]] = []  # open functions and parentheses: (token index, is a conditional aggregate)
    native: set[int] = set()
    for i, tok in enumerate(tokens):
        kind, sub = str(tok.token_type), str(tok.subtype)
        if sub == "Open" and kind in ("Func", "Paren", "Array"):
            stack.append((i, kind == "Func" and tok.value[:-1].strip().upper() in _CONDITIONAL))
        elif sub == "Close" and kind in ("Func", "Paren", "Array"):
            if stack:
                stack.pop()
        elif kind == "Operand" and sub == "Range" and _WHOLE_WIDTH.search(tok.value):
            rows = re.findall(r"\d+", tok.value.rsplit("!", 1)[-1])
            if len(rows) == 2 and rows[0] == rows[1]:
                continue  # one whole row reaches a registered function as its cells
            native.update(at for at, conditional in stack if conditional)
    if not native:
        return formula
    raw = formula.encode("utf-8")
    out, last = [], 0
    for i in sorted(native):
        out += [raw[last : tokens[i].start], f"_xlfn.{tokens[i].value[:-1].strip().upper()}(".encode()]
        last = tokens[i].end
    out.append(raw[last:])
    return b"".join(out).decode("utf-8")


MODAL_XLOOKUP = "_XLSXPLAN_XLOOKUP"
"""The name of Excel's XLOOKUP with a match or search mode (:mod:`.lookup`)."""


def modal_lookups(formula: str) -> str:
    """``formula`` with each XLOOKUP call of five or six arguments (a match or search mode given) made a call of
    :data:`MODAL_XLOOKUP`, which computes those modes as Excel does; formualizer 0.13 gives ``#N/A`` for an inexact
    match on unsorted data, a wildcard, or a binary search. A call with the default modes stays the engine's."""
    tokens = tokenized(formula)
    if tokens is None:
        return formula
    # per open function, parenthesis or array: [token index, separators, is XLOOKUP, its omitted arguments' places]
    stack: list[tuple[int, list[int], bool, list[int]]] = []
    edits: list[tuple[int, int, str]] = []  # (start, end, text) byte spans replaced
    previous = ("", "")
    for i, tok in enumerate(tokens):
        kind, sub = str(tok.token_type), str(tok.subtype)
        if kind == "Whitespace":
            continue
        if sub == "Open" and kind in ("Func", "Paren", "Array"):
            name = tok.value[:-1].strip().upper() if kind == "Func" else ""
            stack.append((i, [0], name in _XLOOKUP, []))
        elif stack and ((kind == "Sep" and sub == "Arg") or (sub == "Close" and kind in ("Func", "Paren", "Array"))):
            if previous in (("Func", "Open"), ("Sep", "Arg")):
                stack[-1][3].append(tok.start)  # an omitted argument: Excel's empty value, not the engine's 0
            if kind == "Sep":
                stack[-1][1][0] += 1
            else:
                at, separators, is_lookup, omitted = stack.pop()
                if is_lookup and separators[0] >= 4:
                    edits.append((tokens[at].start, tokens[at].end, f"{MODAL_XLOOKUP}("))
                    edits += [(pos, pos, f"{OMITTED}()") for pos in omitted]
        previous = (kind, sub)
    if not edits:
        return formula
    raw = formula.encode("utf-8")
    out, last = [], 0
    for start, end, text in sorted(edits):
        out += [raw[last:start], text.encode()]
        last = end
    out.append(raw[last:])
    return b"".join(out).decode("utf-8")


_CELL_OR_RANGE = re.compile(
    r"^\$?[A-Za-z]{1,3}\$?\d{1,7}(:\$?[A-Za-z]{1,3}\$?\d{1,7})?$"  # B4, B4:C9
    r"|^\$?[A-Za-z]{1,3}:\$?[A-Za-z]{1,3}$|^\$?\d{1,7}:\$?\d{1,7}$"  # A:C, 1:3
)


def qualify(formula: str, sheet: str, local: Callable[[str], str | None] | None = None) -> str:
    """``formula`` as it reads on the sheet ``sheet`` when written elsewhere: each reference without a sheet
    (``B4``, ``A:A``) given that sheet, and each name scoped to it (``local(NAME)``: what the name refers to, or
    None) given as what it refers to."""
    tokens = tokenized(formula)
    if tokens is None:  # the engine will report the formula as unparsable
        return formula
    prefix = ("'" + sheet.replace("'", "''") + "'!").encode("utf-8")
    raw = formula.encode("utf-8")
    out, last = [], 0
    for tok in tokens:
        if str(tok.token_type) != "Operand" or str(tok.subtype) != "Range" or "!" in tok.value:
            continue
        value = tok.value
        if _CELL_OR_RANGE.match(value):
            out += [raw[last : tok.start], prefix]
            last = tok.start
        elif local is not None:
            target = local(value.upper())
            if target is not None:
                out += [raw[last : tok.start], f"({target})".encode()]
                last = tok.end
    if not out:
        return formula
    out.append(raw[last:])
    return b"".join(out).decode("utf-8")


_TOKEN_SPAN = re.compile(r"TokenSpan \{[^}]*start: (\d+), end: (\d+)[^}]*\}")
_AT_POSITION = re.compile(r"^\w*Error at position (\d+): ")


def parse_failure(err: BaseException | str, formula: str) -> str:
    """The one-line reason a formula cannot be parsed, with a hint where a common slip explains it: semicolons
    between arguments, as Excel in many European locales shows them; the file format and this engine use commas."""
    text = " ".join(str(err).split())
    raw = formula.encode("utf-8")
    text = _TOKEN_SPAN.sub(lambda m: repr(raw[int(m.group(1)) : int(m.group(2))].decode("utf-8", "replace")), text)
    m = _AT_POSITION.match(text)  # the position it gives is not always a character's
    if m:
        text = text[m.end() :]
    reason = f"the formula cannot be parsed: {text[:1].lower() + text[1:]}"
    code = code_text(formula)
    if ";" in code and "{" not in code:  # in an array constant, ";" separates rows
        reason += "; separate arguments with commas, not semicolons"
    return reason


# ---------------------------------------------------------------------------------------------------------------
# Function names: the registry's and the engine's own

_NATIVE: dict[str, bool] = {}
_native_book: Any = None


def _native() -> Any:
    """A workbook of the engine's own functions only (and the empty-value marker), for probing and for computing
    them on single values."""
    global _native_book
    if _native_book is None:
        _native_book = new_book()
        _native_book.add_sheet("Probe")
        _native_book.register_function(OMITTED, _omitted, min_args=0, max_args=0)
    return _native_book


def native_function(name: str) -> bool:
    """Whether the engine itself knows the function ``name`` (SUM, _xlfn.XLOOKUP): an unknown one is ``#NAME?``
    when called without arguments, a known one a value or another error (too few arguments)."""
    key = name.upper()
    if key.removeprefix("_XLFN.") in CORRECTED:
        return True
    if key not in _NATIVE:
        with _lock:
            book = _native()
            book.set_formula("Probe", 1, 1, f"={name}()")
            try:
                value = book.evaluate_cell("Probe", 1, 1)
            except BaseException as _err:
                if fatal(_err):
                    raise
                value = None
            _NATIVE[key] = not (isinstance(value, dict) and str(value.get("kind", "")).lower() == "name")
    return _NATIVE[key]


def function_names(formula: str) -> list[str]:
    """The functions ``formula`` calls, in the order they appear (``[]`` if it cannot be parsed)."""
    try:
        tree = fz.parse(formula)
    except BaseException as _err:
        if fatal(_err):
            raise
        return []
    names: list[str] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if node.node_type() == "Function":
            name = node.get_function_name()
            if name:
                names.append(name)
        stack.extend(reversed(node.children()))
    return names


def unknown_function(formula: str) -> str:
    """``unknown function FOO; did you mean ...`` for the first function ``formula`` calls that neither the registry
    nor the engine knows; "" if there is none."""
    for name in function_names(formula):
        upper = name.upper()
        if upper in registry.FUNCTIONS or native_function(name):
            continue
        plain = upper[6:] if upper.startswith("_XLFN.") else upper
        import difflib  # a misspelt name's suggestion, only when there is one to make

        close = difflib.get_close_matches(plain, list(registry.FUNCTIONS), n=2, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        return f"unknown function {name}{hint}"
    return ""


# ---------------------------------------------------------------------------------------------------------------
# One formula of constants


@dataclass(frozen=True)
class FormulaResult:
    """The value of one formula, or its error with the reason."""

    value: Any
    error: CellError | None = None


def _locals(tree: Any) -> set[str]:
    """The names LET and LAMBDA define inside a formula (the parser reads them as references to names)."""
    found: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        kids = node.children()
        if node.node_type() == "Function" and (node.get_function_name() or "").upper() in (
            "LET",
            "_XLFN.LET",
            "LAMBDA",
            "_XLFN.LAMBDA",
        ):
            let = (node.get_function_name() or "").upper().endswith("LET")
            params = kids[0:-1:2] if let else kids[:-1]
            found.update((p.get_reference_string() or "").upper() for p in params if p.node_type() == "Reference")
        stack.extend(kids)
    return found


def references(tree: Any) -> list[str]:
    """The references and names a parsed formula reads, in order (LET's and LAMBDA's own names aside)."""
    local = _locals(tree)
    refs = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if node.node_type() == "Reference":
            text = node.get_reference_string() or ""
            if text.upper() not in local:
                refs.append(text)
        stack.extend(reversed(node.children()))
    return refs


def _reasoned(value: Any, messages: Messages, pos: tuple[int, int] | None = None) -> Any:
    """An engine value read back, with the reason attached to each error: the message it carried, else the one the
    registry call that left that error there recorded, else what the error value means."""
    if type(value) is dict:
        err = cell_error(value)
        if err.message:
            return err
        found = messages.at(pos, err.code) if pos is not None else messages.last(err.code)
        return CellError(err.code, found or NATIVE_REASONS.get(err.code, ""))
    return value


_eval_book: Any = None
_captured: list[Any] = []


def _capture(*args: Any) -> Any:
    _captured.append(args[-1] if args else None)
    return 0


def evaluate_formula(formula: str) -> FormulaResult:
    """Evaluate one formula of constants, e.g. ``=ROUND(DECODE_TOKS(72.7,1,2,3.35),0)``.

    Returns the value (a number, text, bool, or a 2-D numpy array for an array result, whose failed elements are
    :class:`CellError` with their reasons) or the Excel error with the registry's one-line message. Cell
    references have no workbook to point into and give ``#REF!``.
    """
    global _eval_book
    text = normalise_formula(formula)
    try:
        tree = fz.parse(text)
    except BaseException as err:  # the parser's own one-line reason
        if fatal(err):
            raise
        return FormulaResult(None, CellError("#NAME?", parse_failure(err, text)))
    refs = references(tree)
    if refs:
        return FormulaResult(None, CellError("#REF!", f"eval takes constants only, not references ({', '.join(refs)})"))
    with _lock, collect_messages() as messages:
        if _eval_book is None:
            _eval_book = register_functions(new_book(), {PROBE: _capture})
            _eval_book.add_sheet("Eval")
        _captured.clear()
        given = lift_arrays(mark_omitted(text))
        if not called_names(given).isdisjoint(_XLOOKUP):
            given = modal_lookups(given)
        _eval_book.set_formula("Eval", 1, 1, f"={PROBE}({given[1:]})")
        try:
            cell = _eval_book.evaluate_cell("Eval", 1, 1)
        except BaseException as err:  # the engine itself failed (a deadline, a reference it cannot follow)
            if fatal(err):
                raise
            return FormulaResult(None, CellError("#VALUE!", f"the engine failed: {' '.join(str(err).split())}"))
        # the probe is not called when its argument failed beyond an error value (an array given to SQRT)
        value = _captured[-1] if _captured else cell
    if type(value) is list:
        rows = [row if type(row) is list else [row] for row in value]
        if len(rows) == 1 and len(rows[0]) == 1:
            value = rows[0][0]
        else:
            import numpy as np

            grid = np.empty((len(rows), max(len(r) for r in rows)), dtype=object)
            for i, row in enumerate(rows):
                for j, item in enumerate(row):
                    grid[i, j] = _reasoned(item, messages, (i, j))
            return FormulaResult(grid)
    if type(value) is dict and str(value.get("kind", "")).lower() == "name" and not value.get("message"):
        unknown = unknown_function(text)  # looked for only now: most formulas need no probe of the engine's names
        if unknown:
            return FormulaResult(None, CellError("#NAME?", unknown))
    value = _reasoned(value, messages)
    if isinstance(value, CellError):
        return FormulaResult(None, value)
    if value is None:
        value = 0  # a formula that is an empty value shows 0, as in Excel
    return FormulaResult(value)
