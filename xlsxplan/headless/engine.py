"""Headless evaluation over the `formulas` package: every registry function registered as an Excel function.

``formulas`` parses and computes Excel formulas in Python. This adapter registers each entry of
:data:`xlsxplan.registry.FUNCTIONS` with it, translating between its cell values (``sh.EMPTY``, ``XlError``,
``Array``) and :mod:`xlsxplan.cells`, so a workbook or a one-off formula that mixes native functions (ROUND,
INDEX, XLOOKUP) with ours evaluates as Excel would. Errors become the right Excel error value; the one-line
reason behind each is kept in a side channel (:func:`collect_messages`) because an error value carries no text.

Whole workbooks are :mod:`.workbook`'s (``from xlsxplan.headless import Workbook``).
"""

from __future__ import annotations

import contextlib
import difflib
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import cells, registry
from ..errors import CellError

__all__ = [
    "register_functions",
    "evaluate_formula",
    "FormulaResult",
    "collect_messages",
    "Messages",
    "normalise_formula",
    "add_in_names",
    "exception_text",
]


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

    def extend_from(self, other: Messages) -> None:
        """Add ``other``'s messages and grids after these."""
        self.extend(other)
        self.grids.extend(other.grids)

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


# A stack of message buckets. Not a ContextVar: `formulas` (through schedula) runs cell functions in a context of
# its own, where a ContextVar set by the caller is not visible. A lock keeps concurrent evaluations apart.
_buckets: list[Messages] = []
_lock = threading.RLock()
_registered = False

# What a native error means, for errors that no registry function explained.
NATIVE_REASONS = {
    "#DIV/0!": "division by zero",
    "#VALUE!": "a value of the wrong type",
    "#NUM!": "a number outside the function's domain",
    "#N/A": "a value is not available (a lookup found nothing?)",
    "#NAME?": "an unknown function or name",
    "#REF!": "a reference to a cell that does not exist",
    "#NULL!": "ranges that do not intersect",
}


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


class _Omitted(int):
    """An argument left out of a registry function's call (the middle one of ``=F(1,,3)``, the last of ``=F(1,2,)``).

    ``formulas`` compiles an omitted argument to the number 0, so a registry function could not tell it from a 0
    typed there (``#NUM! bytes_per_value ... got 0`` for ``=KV_BYTES_PER_TOKEN(80,8,128,)``). In Excel and xlwings
    an omitted argument is an empty value: the function's default, or "required but the cell is empty". The
    omitted arguments of registry functions compile to this marker instead, which the adapter reads as an empty
    cell; Excel's own functions keep the 0 they expect (``=IF(TRUE,,1)`` is 0, ``=SUM(1,,2)`` is 3), also when
    their result is passed to a registry function. It is an int 0 so that anything else that met it would see 0.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "0"


OMITTED = _Omitted(0)
_OMITTED_NODE = "<omitted>"  # the data node of omitted arguments: no Excel operand is written like this


def _omitted_arguments() -> None:
    """Have ``formulas`` compile the omitted arguments of registry functions to :data:`OMITTED` (process-wide, as
    the function table is): a registry call marks its empty argument tokens as it is built, before they compile."""
    from formulas.tokens.function import Function
    from formulas.tokens.operand import Empty

    def update_input_tokens(self: Any, *tokens: Any) -> None:
        if self.name.upper() in registry.FUNCTIONS:
            for token in tokens:
                if type(token) is Empty:
                    token.attr["name"] = _OMITTED_NODE

    def compile_empty(self: Any) -> Any:
        return OMITTED if self.attr.get("name") == _OMITTED_NODE else 0

    Function.update_input_tokens = update_input_tokens
    Empty.compile = compile_empty


def _from_formulas(value: Any) -> Any:
    import schedula as sh
    from formulas.tokens.operand import XlError

    if type(value) is _Omitted:
        return None
    if isinstance(value, np.ndarray):
        if value.ndim == 0:  # formulas nests 0-d arrays, e.g. for -1 inside {80;-1}
            return _from_formulas(value.item())
        out = np.empty(value.shape, dtype=object)
        for index, item in np.ndenumerate(value):
            out[index] = _from_formulas(item)
        return out
    if value is sh.EMPTY:
        return None
    if isinstance(value, XlError):
        return CellError(str(value))
    return value


def _to_formulas(result: Any) -> Any:
    from formulas.functions import Array
    from formulas.tokens.operand import Error

    if isinstance(result, CellError):
        if _buckets and result.message:
            _buckets[-1].append(result)
        return Error.errors.get(result.code, Error.errors["#VALUE!"])
    if isinstance(result, np.ndarray):
        out = np.empty(result.shape, dtype=object)
        for index, item in np.ndenumerate(result):
            out[index] = _to_formulas(item)
        return out.view(Array)
    return result


def _record_grid(result: Any) -> None:
    """Note where a registry call's result failed, with the reasons (see :class:`Messages`)."""
    if not _buckets:
        return
    if isinstance(result, CellError):
        if result.message:
            _buckets[-1].grids.append(_Everywhere(result))
        return
    grid = {
        (i, j): item
        for (i, j), item in np.ndenumerate(np.atleast_2d(result))
        if isinstance(item, CellError) and item.message
    }
    if grid:
        _buckets[-1].grids.append(grid)


def _adapter(fn: registry.Function) -> Any:
    def call(*args: Any) -> Any:
        result = cells.evaluate_broadcast(fn, [_from_formulas(a) for a in args])
        if isinstance(result, (np.ndarray, CellError)):
            _record_grid(result)
        return _to_formulas(result)

    call.__name__ = fn.name
    call.__doc__ = fn.description()
    return call


def register_functions() -> None:
    """Register every registry function with `formulas` (process-wide, idempotent), and have an omitted argument
    reach them as an empty value (:class:`_Omitted`)."""
    global _registered
    if _registered:
        return
    import formulas
    from formulas.functions import wrap_ranges_func

    table = formulas.get_functions()
    for name, fn in registry.FUNCTIONS.items():
        table[name] = wrap_ranges_func(_adapter(fn))
    _omitted_arguments()
    _registered = True


_TEXT_LITERAL = re.compile(r'("(?:[^"]|"")*")')
"""A text literal in a formula, quotes doubled inside; split by it, the even parts are outside quotes."""


def _outside_quotes(formula: str, change: Callable[[str], str]) -> str:
    """``formula`` with ``change`` applied to every part outside its text literals, which stay as they are."""
    parts = _TEXT_LITERAL.split(formula)
    parts[::2] = [change(part) for part in parts[::2]]
    return "".join(parts)


_NUMBER_LITERAL = re.compile(r"(?<![A-Za-z_$\d.])(\d+\.?\d*|\.\d+)[eE]([+-]?)(\d+)")


def normalise_formula(formula: str) -> str:
    """A formula as a person types it, in the form Excel stores it: a leading ``=``, ``1e6`` as ``1E+6``, and an
    add-in's stored name of a registry function as the function (:func:`add_in_names`).

    String literals are left alone.
    """
    text = formula.strip()
    if not text.startswith("="):
        text = "=" + text
    numbers = _outside_quotes(text, lambda part: _NUMBER_LITERAL.sub(
        lambda m: f"{m.group(1)}E{m.group(2) or '+'}{m.group(3)}", part))  # fmt: skip
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
    return _outside_quotes(formula, lambda part: _ADD_IN_CALL.sub(
        lambda m: _registry_name(m.group(1)) or m.group(0), part))  # fmt: skip


@dataclass(frozen=True)
class FormulaResult:
    """The value of one formula, or its error with the reason."""

    value: Any
    error: CellError | None = None


def exception_text(err: BaseException, subject: str | None = None) -> str:
    """One line from an exception.

    formulas' errors carry a %-format and its arguments, to be put together; some are raised without the
    arguments (``=1+`` gives ``'Not a valid formula:\\n%s'`` alone), and then ``subject`` (the formula) fills the
    blank, or the blank is dropped.
    """
    text = str(err)
    template = err.args[0] if err.args and isinstance(err.args[0], str) else None
    if template is not None and "%" in template:
        fill = err.args[1:] or ((subject,) if subject else ())
        try:
            text = template % fill
        except (TypeError, ValueError):
            text = re.sub(r"\s*%[sr]", "", template).rstrip(" :") if not err.args[1:] else text
    return " ".join(text.split()) or type(err).__name__


def parse_failure(err: BaseException, formula: str) -> str:
    """The one-line reason a formula cannot be parsed, with a hint where a common slip explains it: semicolons
    between arguments, as Excel in many European locales shows them; the file format and this engine use commas."""
    reason = f"the formula cannot be parsed: {exception_text(err, formula)}"
    code = "".join(_TEXT_LITERAL.split(formula)[::2])  # the formula without its text in quotes
    if ";" in code and "{" not in code:  # in an array constant, ";" separates rows
        reason += "; separate arguments with commas, not semicolons"
    return reason


def _unknown_functions(tokens: list[Any]) -> list[str]:
    import formulas
    from formulas.functions import not_implemented

    known = formulas.get_functions()  # a defaultdict: unknown names map to not_implemented
    names = [t.name for t in tokens if type(t).__name__ == "Function"]
    return [n for n in names if known.get(n.upper(), not_implemented) is not_implemented]


def _with_reasons(grid: np.ndarray, messages: Messages) -> np.ndarray:
    """An array result with the reason attached to each failed element: the registry call's that left that error
    at that position, else what the error value means (an element no call explains gets no guess)."""
    out = grid.copy()
    for (i, j), item in np.ndenumerate(grid):
        if isinstance(item, CellError) and not item.message:
            reason = messages.at((i, j), item.code) or NATIVE_REASONS.get(item.code, "")
            out[i, j] = CellError(item.code, reason)
    return out


def evaluate_formula(formula: str) -> FormulaResult:
    """Evaluate one formula of constants, e.g. ``=ROUND(DECODE_TOKS(72.7,1,2,3.35),0)``.

    Returns the value (a number, text, bool, or a 2-D numpy array for an array result, whose failed elements are
    :class:`CellError` with their reasons) or the Excel error with the registry's one-line message. Cell
    references have no workbook to point into and give ``#REF!``.
    """
    import formulas
    from formulas.tokens.operand import XlError

    register_functions()
    text = normalise_formula(formula)
    try:
        tokens, builder = formulas.Parser().ast(text)
    except Exception as err:  # the parser raises a variety of errors on bad syntax
        return FormulaResult(None, CellError("#NAME?", parse_failure(err, text)))
    unknown = _unknown_functions(tokens)
    if unknown:
        name = unknown[0]
        close = difflib.get_close_matches(name.upper(), list(registry.FUNCTIONS), n=2, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        return FormulaResult(None, CellError("#NAME?", f"unknown function {name}{hint}"))
    with collect_messages() as messages:  # compile() already evaluates a formula of constants
        func = builder.compile()
        if func.inputs:
            refs = ", ".join(func.inputs)
            return FormulaResult(None, CellError("#REF!", f"eval takes constants only, not references ({refs})"))
        value = func()
    if isinstance(value, np.ndarray):
        value = value.item() if value.size == 1 else _with_reasons(_from_formulas(np.atleast_2d(value)), messages)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, XlError):
        code = str(value)
        reason = messages.last(code) or NATIVE_REASONS.get(code, "")
        return FormulaResult(None, CellError(code, reason))
    return FormulaResult(value)
