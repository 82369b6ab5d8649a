"""Every registry function as an Excel function through xlwings: the module a workbook names under "UDF Modules".

The functions are generated from :data:`xlsxplan.registry.FUNCTIONS` in a loop: for each entry a new wrapper is
built (its ``__name__`` is the Excel name, its docstring the function wizard's description, each argument's help
the registry's, its category the registry's) and bound as the attribute of that name, because xlwings calls back
with ``getattr(module, name)``. Core functions are never touched. The decorators are xlwings' own
``func``/``arg`` (classic xlwings on Windows and xlwings Lite share them; elsewhere they do nothing), so the same
module loads in both runtimes; :func:`build` applies any given decorators, which is how the tests check, with
xlwings' real classic machinery, what Excel would receive.

Every argument arrives two-dimensional (``ndim=2``) with Excel error values as their text (``err_to_str=True``),
and every call goes through :func:`xlsxplan.sheet.cells.evaluate_broadcast`, the same code the headless engine uses: a
range broadcasts against the other arguments (a 10,000-row column of scenarios is one call, not 10,000) and the
result spills as a 2-D array in Excel 365; values and messages are those of every other face.

How an error looks in a cell (decided here, in :func:`present`, and nowhere else)
--------------------------------------------------------------------------------
* **Classic xlwings** (Windows desktop Excel, VBA-wrapped functions) cannot return a real error value from a
  Python function (github.com/xlwings/xlwings/issues/776: a VT_ERROR VARIANT does not reach the cell), and shows a
  raised exception as the whole Python traceback (github.com/xlwings/xlwings/issues/1108). So a failed call returns
  one line of text, the error value and the reason, as PyXLL does: ``#NUM! kv_heads must be a whole number from 1
  to 1,000,000, got -1``. In an array, each failed element is such a line and the others are numbers.
* **xlwings Lite** (Excel on Windows, macOS and the web; Python in the browser) shows a raised exception as
  ``#VALUE!`` with the message on hover. So a failed scalar call raises :class:`ExcelError` with that same one
  line; in an array, failed elements are the same text as in classic (raising would lose the whole array).
* **An error value passed in** (``#N/A`` from a lookup, or one of these lines from another xlsxplan cell)
  propagates as Excel would: the result is its code. Lite turns the bare code into a real error value; classic
  shows it as text, the line passed in kept whole so the first cause stays visible down a chain of formulas.
* Never a traceback: any unexpected failure inside the adapter also ends as one ``#VALUE!`` line.

Numbers are returned as floats (Excel holds doubles; a Python int beyond 32 bits would not survive COM).
"""

from __future__ import annotations

import inspect
import math
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

from xlwings import arg, func

from .. import registry
from ..errors import EXCEL_ERRORS, CellError
from ..infra.elementwise import is_array
from ..sheet.cells import evaluate_broadcast

__all__ = ["LITE", "ERROR_CODES", "ExcelError", "PassedIn", "build", "make_udf", "present", "from_excel"]

LITE = sys.platform == "emscripten"
"""True inside xlwings Lite (Pyodide), where a raised exception shows as #VALUE! with its message on hover."""

ERROR_CODES = EXCEL_ERRORS
"""Excel's error values, as xlwings passes them with ``err_to_str=True`` (:data:`xlsxplan.sheet.cells.EXCEL_ERRORS`)."""

_ERROR_TEXT = re.compile("^(" + "|".join(re.escape(c) for c in ERROR_CODES) + r")(?: (.+))?$", re.DOTALL)

# Classic xlwings hands over error cells it does not know by name as the COM HRESULT of Excel's CVErr number
# (0x800A0000 + xlErrNull 2000, xlErrDiv0 2007, ...): #SPILL!, #CALC! and the other newer ones arrive that way.
_CVERR = {
    2000: "#NULL!",
    2007: "#DIV/0!",
    2015: "#VALUE!",
    2023: "#REF!",
    2029: "#NAME?",
    2036: "#NUM!",
    2042: "#N/A",
    2043: "#GETTING_DATA",
    2045: "#SPILL!",
    2046: "#CONNECT!",
    2047: "#BLOCKED!",
    2048: "#UNKNOWN!",
    2049: "#FIELD!",
    2050: "#CALC!",
}
_COM_ERRORS = {-2146828288 + number: code for number, code in _CVERR.items()}

# Office.js (xlwings Lite) hands over an error cell as {"type": "Error", "basicValue": "#N/A", "errorType":
# "NotAvailable"} (Excel JavaScript API, ErrorCellValue); xlwings' officejs engine turns it into the code with
# err_to_str, but one that reaches a function unconverted is still an error passed in.
_OFFICEJS_ERRORS = {
    "Div0": "#DIV/0!",
    "NotAvailable": "#N/A",
    "Name": "#NAME?",
    "Null": "#NULL!",
    "Num": "#NUM!",
    "Ref": "#REF!",
    "Value": "#VALUE!",
    "Busy": "#BUSY!",
    "Calc": "#CALC!",
    "Connect": "#CONNECT!",
    "Field": "#FIELD!",
    "GettingData": "#GETTING_DATA",
    "Spill": "#SPILL!",
    "Blocked": "#BLOCKED!",
    "Unknown": "#UNKNOWN!",
    "Python": "#PYTHON!",
    "External": "#EXTERNAL!",
}


@dataclass(frozen=True)
class PassedIn(CellError):
    """An error value that arrived as an argument, kept exactly as it came (``text``) so it can go on unchanged."""

    text: str = ""


class ExcelError(Exception):
    """Raised in xlwings Lite for a failed scalar call: the cell shows #VALUE! and, on hover, this one line."""

    def __init__(self, error: CellError) -> None:
        super().__init__(str(error))
        self.code = error.code
        self.message = error.message


def _error_in(value: object) -> PassedIn | None:
    if isinstance(value, str) and value[:1] == "#":
        match = _ERROR_TEXT.match(value)
        if match:
            code = match.group(1)
            # a non-empty message keeps cells.evaluate from swapping it for a new CellError of its own
            return PassedIn(code, match.group(2) or f"{code} passed in", value)
    elif type(value) is int and value in _COM_ERRORS:
        code = _COM_ERRORS[value]
        return PassedIn(code, f"{code} passed in", code)
    elif isinstance(value, dict) and value.get("type") == "Error":
        text = value.get("basicValue")
        passed = _error_in(text) if isinstance(text, str) else None
        if passed is not None:
            return passed
        code = _OFFICEJS_ERRORS.get(value.get("errorType"), "#VALUE!")  # type: ignore[arg-type]
        return PassedIn(code, f"{code} passed in", code)
    return None


def _cell_in(value: Any) -> Any:
    if type(value) is float:  # the common case, first
        return value
    if isinstance(value, dict) and value.get("type") != "Error" and "basicValue" in value:
        value = value["basicValue"]  # an Office.js data type (a formatted number...): its plain value
    error = _error_in(value)
    return value if error is None else error


def from_excel(value: Any) -> Any:
    """One argument as xlwings hands it over (a scalar, a 2-D list, a numpy array), with error values recognised:
    their text, classic xlwings' COM error numbers, and Office.js error cells (``{"type": "Error", ...}``)."""
    if isinstance(value, (list, tuple)):
        if _only_floats(value):  # the common case, a block of numbers: nothing to recognise
            return value
        return [[_cell_in(v) for v in row] if isinstance(row, (list, tuple)) else _cell_in(row) for row in value]
    if is_array(value):
        if value.dtype.kind in "biuf":  # numbers only: nothing to recognise
            return value
        return from_excel(value.tolist()) if value.ndim else _cell_in(value.item())
    return _cell_in(value)


def _only_floats(value: list[Any] | tuple[Any, ...]) -> bool:
    """True when ``value`` (a list of cells, or of rows of cells) holds floats only, asked at C speed."""
    if type(value[0] if value else None) in (list, tuple):  # rows: one pass over their cells (a row that is not a
        try:  # list shows among them: a number stops the pass, text gives str cells, a dict its keys' types)
            return set(map(type, chain.from_iterable(value))) <= {float}
        except TypeError:
            return False
    return set(map(type, value)) <= {float}


def _to_cell(value: Any) -> Any:
    np = sys.modules.get("numpy")  # a numpy scalar only if something has imported numpy
    if np is not None and isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, float) and not math.isfinite(value):  # cells.py reports these; belt and braces
        return str(CellError("#NUM!", "the result is not a finite number"))
    return value


def _element(value: Any, lite: bool) -> Any:
    if type(value) is float and math.isfinite(value):  # the common case, first
        return value
    if isinstance(value, PassedIn):
        return value.code if lite else value.text
    if isinstance(value, CellError):
        return str(value)
    return _to_cell(value)


def present(result: Any, lite: bool = LITE) -> Any:
    """What the cell receives for a result of :func:`~xlsxplan.sheet.cells.evaluate_broadcast`: the one place where
    the way an error looks is decided (see the module docstring). Raises :class:`ExcelError` only when ``lite``."""
    if is_array(result):
        np = sys.modules["numpy"]
        if result.dtype.kind == "f" and result.size and np.isfinite(result).all():  # numbers only, as doubles
            return result.tolist()
        kinds = set(map(type, result.reshape(-1).tolist()))
        if kinds and kinds <= {float, int}:  # the common case, numbers only: as floats, at C speed
            numbers = result.astype(np.float64)
            if numbers.size and math.isfinite(numbers.sum()):  # any inf or NaN makes the sum one
                return numbers.tolist()
        return _rows(result.tolist(), lite)
    if isinstance(result, list) and result and all(isinstance(row, list) for row in result):
        return _rows(result, lite)  # the grid evaluate_broadcast returns where numpy is not installed
    if isinstance(result, PassedIn):
        return result.code if lite else result.text
    if isinstance(result, CellError):
        if lite:
            raise ExcelError(result)
        return str(result)
    if isinstance(result, list):  # a list result (MODELS, GPUS) spills down a column
        return [[_element(v, lite)] for v in result]
    return _to_cell(result)


def _rows(rows: list[list[Any]], lite: bool) -> list[list[Any]]:
    """A 2-D grid of results as the cells receive it; a grid of finite floats (the common case) as it is."""
    kinds = set(map(type, chain.from_iterable(rows)))
    if kinds == {float} and math.isfinite(sum(chain.from_iterable(rows))):  # any inf or NaN makes the sum one
        return rows
    if kinds == {int}:  # whole numbers (MAX_BATCH, REPLICAS): as floats
        return [[float(v) for v in row] for row in rows]
    return [[_element(v, lite) for v in row] for row in rows]


def _one_line(err: BaseException) -> str:
    return " ".join(f"{type(err).__name__}: {err}".split())


def _whole(fn: registry.Function, i: int) -> bool:
    """True when argument ``i`` of ``fn`` is a range argument, read whole (not broadcast)."""
    domain = fn.args[i].domain if i < len(fn.args) else None
    return domain is not None and domain.kind == "range"


def _call(fn: registry.Function, args: Sequence[Any], lite: bool) -> Any:
    try:
        # a list's cells are read in the pass that reads the range (read_cell); a range argument's, a value's and a
        # numpy array's here
        given = [a if isinstance(a, (list, tuple)) and not _whole(fn, i) else from_excel(a) for i, a in enumerate(args)]
        result = evaluate_broadcast(fn, given, read_cell=_cell_in, floats=True)
    except Exception as err:  # the last guard: a bug in xlsxplan must still be one line in the cell
        result = CellError("#VALUE!", f"{fn.name}: {_one_line(err)}")
    return present(result, lite)


def make_udf(
    fn: registry.Function,
    func_decorator: Callable[..., Any] = func,
    arg_decorator: Callable[..., Any] = arg,
    lite: bool = LITE,
) -> Callable[..., Any]:
    """A new Excel function for registry entry ``fn``, decorated with ``func_decorator`` and ``arg_decorator``
    (xlwings' ``func`` and ``arg`` unless given), presenting its results for Lite when ``lite``."""
    signature = inspect.Signature(
        [
            inspect.Parameter(
                a.name,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                default=a.default if a.optional else inspect.Parameter.empty,
            )
            for a in fn.args
        ]
    )

    def udf(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            args = bound.args
        return _call(fn, args, lite)

    udf.__name__ = udf.__qualname__ = fn.name
    udf.__doc__ = fn.description()
    udf.__module__ = __name__
    udf.__signature__ = signature  # type: ignore[attr-defined]
    udf.__annotations__ = {}  # xlwings reads type hints as converters: the default conversion is the one wanted
    decorated = udf
    for a in fn.args:
        decorated = arg_decorator(a.name, ndim=2, err_to_str=True, doc=a.help())(decorated)
    return func_decorator(category=fn.category)(decorated)


def build(
    func_decorator: Callable[..., Any] = func, arg_decorator: Callable[..., Any] = arg, lite: bool = LITE
) -> dict[str, Callable[..., Any]]:
    """One Excel function per registry entry, by Excel name, in registry order (see :func:`make_udf`)."""
    return {name: make_udf(fn, func_decorator, arg_decorator, lite) for name, fn in registry.FUNCTIONS.items()}


_UDFS = build()
_clash = set(_UDFS) & set(globals())
if _clash:  # a registry name must not replace one of this module's own names
    raise RuntimeError(f"registry names clash with xlsxplan.excel.udfs itself: {sorted(_clash)}")
globals().update(_UDFS)
__all__ += list(_UDFS)
del _clash
