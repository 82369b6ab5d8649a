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
* **Ranges and arrays**: broadcast against each other like numpy (a column against a row makes a grid), one call
  per element, each element ending as a value or an error of its own. A 1-D list counts as a column.
* **Range arguments** (domain kind ``range``, e.g. a column of measured prompt lengths): passed whole, never
  broadcast over, while the other arguments still broadcast. Inside such a range empty cells are skipped (as
  Excel's AVERAGE does), numbers typed as text are read, and the first error value is passed on.

Results come back as plain Python values, :class:`CellError` for errors, or a 2-D numpy object array.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import re
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .domains import flatten_range, show_value
from .errors import EXCEL_ERRORS, ArgumentError, CellError, XlsxplanError
from .registry import Argument, Function

__all__ = ["CellError", "EXCEL_ERRORS", "coerce", "evaluate", "evaluate_broadcast", "as_error", "collect_warnings"]

# Where warnings about legal but implausible inputs go (a bandwidth of 3350 where TB/s is meant). A stack, not a
# ContextVar, because `formulas` runs cell functions in a context of its own (see engine.collect_messages).
_warning_sinks: list[list[str]] = []


@contextlib.contextmanager
def collect_warnings() -> Iterator[list[str]]:
    """Collect, once each and in order, the warnings about implausible inputs raised inside the block.

    A value outside its argument's typical range (:attr:`xlsxplan.domains.Domain.typical`) is still used, since it
    may be right; the command line prints these warnings and the templates flag them, so a unit slip is seen.
    """
    sink: list[str] = []
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


def _warn(message: str | None) -> None:
    if message and _warning_sinks and message not in _warning_sinks[-1]:
        _warning_sinks[-1].append(message)


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
        if isinstance(item, np.generic):
            item = item.item()
        if isinstance(item, str) and item.strip():
            try:
                item = _number_from_text(arg, item)
            except XlsxplanError as err:
                raise ArgumentError(err.message.replace(arg.name, f"{arg.name} (value {i} of {len(cells)})", 1),
                                    arg.name) from None  # fmt: skip
        out.append(item)
    return tuple(out)


def coerce(arg: Argument, raw: object) -> Any:
    """What the core function receives for one cell value, or an :class:`XlsxplanError` naming the argument.

    For a range argument ``raw`` is the whole range, and the result a tuple of its cells.
    """
    if raw is None or (isinstance(raw, str) and raw == ""):
        if arg.optional:
            return arg.default
        raise ArgumentError(f"{arg.name} is required but the cell is empty", arg.name)
    if _is_range(arg):
        return _coerce_range(arg, raw)
    if isinstance(raw, np.generic):
        raw = raw.item()
    if arg.domain is not None and arg.domain.kind == "text":
        return raw  # the domain check explains a number where a name belongs
    if isinstance(raw, str):
        return _number_from_text(arg, raw)
    if isinstance(raw, bool):
        raise ArgumentError(f"{arg.name} must be a number, got {show_value(raw)}", arg.name)
    if isinstance(raw, numbers.Real):
        return raw
    raise ArgumentError(f"{arg.name} must be a number, got {show_value(raw)}", arg.name)


def _plain(result: Any) -> Any:
    if isinstance(result, np.generic):
        result = result.item()
    if isinstance(result, float) and not math.isfinite(result):
        return CellError("#NUM!", "the result is not a finite number")
    return result


def evaluate(fn: Function, raw_args: Sequence[object]) -> Any:
    """Call ``fn`` on one set of cell values; return its value or a :class:`CellError`, never raise."""
    if len(raw_args) > len(fn.args):
        return CellError("#VALUE!", f"{fn.name} takes at most {len(fn.args)} arguments, got {len(raw_args)}")
    for arg, raw in zip(fn.args, raw_args):
        err = _first_error(arg, raw) if _is_range(arg) else as_error(raw)
        if err is not None:
            return _passed_on(arg, err)
    values = []
    try:
        for i, arg in enumerate(fn.args):
            if i >= len(raw_args):
                if not arg.optional:
                    return CellError("#VALUE!", f"{fn.name} needs {arg.name} (argument {i + 1}): {arg.doc}")
                values.append(arg.default)
                continue
            values.append(coerce(arg, raw_args[i]))
        result = fn.func(*values)
        if _warning_sinks:  # only values that passed their checks, as the call's success shows: never a refused one
            for arg, value in zip(fn.args[: len(raw_args)], values):
                _warn(_suspicion(arg, value))
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
        if type(row) in (list, tuple) and len(row) == 1 and not isinstance(row[0], (list, tuple, np.ndarray)):
            return row[0]
    return raw


def _as_array(raw: object) -> np.ndarray | None:
    if isinstance(raw, (list, tuple, np.ndarray)):
        arr = np.array(raw, dtype=object)
        if arr.ndim == 0:
            return arr.reshape(1, 1)
        if arr.ndim == 1:
            arr = arr.reshape(-1, 1)
        if arr.ndim != 2:
            raise ArgumentError(f"a range must be one- or two-dimensional, got {arr.ndim} dimensions")
        return arr
    return None


def evaluate_broadcast(fn: Function, raw_args: Sequence[object]) -> Any:
    """Like :func:`evaluate`, with ranges broadcast: a scalar, a :class:`CellError` or a 2-D object array.

    A function that returns a list (MODELS, GPUS) gives it as one column. A range argument is passed whole.
    """
    whole = [i < len(fn.args) and _is_range(fn.args[i]) for i in range(len(raw_args))]
    raw_args = [raw if keep else _single(raw) for raw, keep in zip(raw_args, whole)]
    try:
        arrays = [None if keep else _as_array(raw) for raw, keep in zip(raw_args, whole)]
    except (ArgumentError, ValueError) as err:
        return CellError("#VALUE!", f"{fn.name}: {err}")
    if all(a is None or a.size == 1 for a in arrays):
        scalars = [raw if a is None else a.item(0) for raw, a in zip(raw_args, arrays)]
        result = evaluate(fn, scalars)
        if isinstance(result, list):
            return np.array(result, dtype=object).reshape(-1, 1)
        return result
    shapes = [a.shape for a in arrays if a is not None]
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        shown = " and ".join(f"{r}x{c}" for r, c in shapes)
        return CellError("#VALUE!", f"{fn.name}: ranges of {shown} cells cannot be matched up element by element")
    if 0 in shape:
        return CellError("#VALUE!", f"{fn.name}: a range with no cells")
    fast = _broadcast_checked(fn, raw_args, arrays, shape)
    if fast is not None:
        return fast
    views = [None if a is None else np.broadcast_to(a, shape) for a in arrays]
    out = np.empty(shape, dtype=object)
    for index in np.ndindex(shape):
        out[index] = evaluate(fn, [raw if v is None else v[index] for raw, v in zip(raw_args, views)])
    return out


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


def _broadcast_checked(
    fn: Function, raw_args: Sequence[object], arrays: list[np.ndarray | None], shape: tuple[int, ...]
) -> np.ndarray | None:
    """The broadcast of :func:`evaluate` over ``shape``, reading and checking each distinct input cell once.

    Gives exactly what calling :func:`evaluate` element by element gives (tests hold it to that), several times
    faster on a column of scenarios: an argument given as one cell is read and checked once, not once per row.
    None when ``fn`` is not a :func:`~xlsxplan.domains.checked` function, which then takes the plain path.
    """
    call = getattr(fn.func, "call_checked", None)
    if call is None or len(raw_args) > len(fn.args) or any(a.domain is None for a in fn.args):
        return None
    size = int(np.prod(shape))
    columns: list[list[Any]] = []
    failing: list[int] = []  # the arguments with a failure in some element: only these are looked at per element
    noted: list[tuple[int, list[str | None]]] = []  # given arguments with an implausible value in some element
    for i, arg in enumerate(fn.args):
        if i < len(raw_args) and arrays[i] is not None:
            cache: dict[tuple[type, object], Any] = {}
            prepared = []
            has_failure = False
            for raw in arrays[i].ravel().tolist():
                try:
                    key = (type(raw), raw)
                    value = cache[key]
                except KeyError:
                    value = cache[key] = _prepare(fn, arg, raw)
                except TypeError:  # unhashable: prepare it every time
                    value = _prepare(fn, arg, raw)
                has_failure = has_failure or value.__class__ is _Failure
                prepared.append(value)
            grid = _object_array(prepared).reshape(arrays[i].shape)
            columns.append(np.broadcast_to(grid, shape).ravel().tolist())
            if _warning_sinks and arg.domain.typical is not None:  # type: ignore[union-attr]
                seen: dict[object, str | None] = {}
                notes = [seen[v] if v in seen else seen.setdefault(v, _suspicion(arg, v)) for v in grid.ravel()]
                if any(notes):
                    noted.append((i, np.broadcast_to(_object_array(notes).reshape(grid.shape), shape).ravel().tolist()))
        else:  # one value for every element
            if i < len(raw_args):
                value = _prepare(fn, arg, raw_args[i])
            elif arg.optional:  # not given at all: the default ...
                value = _prepare(fn, arg, None)
            else:  # ... or the error evaluate gives for a required argument
                value = _Failure(1, CellError("#VALUE!", f"{fn.name} needs {arg.name} (argument {i + 1}): {arg.doc}"))
            has_failure = value.__class__ is _Failure
            columns.append([value] * size)
            note = _suspicion(arg, value) if i < len(raw_args) and not has_failure and _warning_sinks else None
            if note:
                noted.append((i, [note] * size))
        if has_failure:
            failing.append(i)
    results = []
    for k, row in enumerate(zip(*columns)):
        if failing:
            failures = [row[i] for i in failing if isinstance(row[i], _Failure)]
            if failures:
                results.append(min(failures, key=_stage).error)  # min keeps the first of equals: argument order
                continue
        try:
            results.append(_plain(call(*row)))
            for _, notes in noted:  # as evaluate does: the values of a call that succeeded
                _warn(notes[k])
        except XlsxplanError as err:
            results.append(CellError(err.excel_error, err.message))
        except (ArithmeticError, ValueError, TypeError) as err:
            results.append(_unexpected(fn, err))
    return _object_array(results).reshape(shape)


def _object_array(items: list[Any]) -> np.ndarray:
    """A 1-D object array holding ``items`` as they are (numpy would unpack a list or tuple among them)."""
    out = np.empty(len(items), dtype=object)
    for k, item in enumerate(items):
        out[k] = item
    return out


def _stage(failure: _Failure) -> int:
    return failure.stage
