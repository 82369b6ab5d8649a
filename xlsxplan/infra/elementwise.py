"""Arithmetic that runs on one number or, unchanged, on numpy arrays of them, element by element.

A core function whose body uses only operators and the helpers below computes, when its arguments are numpy arrays,
every element exactly as a call with that element's numbers would: the same IEEE operations in the same order, so the
same bits. :func:`xlsxplan.domains.checked` with ``arrays=True`` marks such a function, and the array path of
:func:`~.sheet.cells.evaluate_broadcast` then runs its arithmetic once over whole columns instead of once per row.

With plain numbers every helper is the plain Python it replaces (``minimum`` is ``min``, ``where`` a conditional
expression), so a function's one-call path is unchanged. numpy is imported only when an array arrives: importing
xlsxplan never imports it, and without numpy nothing here needs it.

The rules a body follows to stay array-safe:

* Operators, comparisons, and ``&``, ``|`` between comparisons (never ``and``, ``or``, ``not`` or ``if`` on a value
  that may be an array): :func:`negated` for ``not``.
* ``min``, ``max``, ``math.sqrt``, ``math.ceil``, ``**``, a conditional, a tuple index: :func:`minimum`,
  :func:`maximum`, :func:`sqrt`, :func:`ceil`, :func:`power`, :func:`where`, :func:`pick`. Other functions of the
  standard library (``math.log``, a distribution's ``cdf``) go through :func:`apply`, which calls the very same
  function on each element, so even transcendental results are identical.
* A check that raises for some inputs is written ``if refused(condition): raise ...``: over arrays, the elements
  where the condition holds are left to the one-call path, which raises the error with its own message, and the
  rest go on. Any element may be left to the one-call path, never computed differently.
* Both branches of a :func:`where` are computed for every element, so each must be harmless where it is not chosen
  (a divisor made safe with ``where(d == 0, 1.0, d)``). Where the one-call path must not compute the other branch at
  all, it keeps its early ``return`` behind ``if not is_array(x)``.
"""

from __future__ import annotations

import contextlib
import math
import operator
import sys
from collections.abc import Callable, Iterator
from typing import Any

__all__ = [
    "is_array",
    "where",
    "pick",
    "minimum",
    "maximum",
    "negated",
    "sqrt",
    "ceil",
    "power",
    "apply",
    "count_above",
    "refused",
    "deferring",
]

# The masks of elements that `refused` leaves to the one-call path, one list per array call in progress.
_deferred: list[list[Any]] = []


def _np() -> Any:
    import numpy

    return numpy


def is_array(x: object) -> bool:
    """True for a numpy array (asked without importing numpy: if nothing has imported it, nothing is one)."""
    np = sys.modules.get("numpy")
    return np is not None and isinstance(x, np.ndarray)


def _any_array(*xs: object) -> bool:
    np = sys.modules.get("numpy")  # is_array's question, asked of numpy once for all of them (the core's hot path)
    if np is None:
        return False
    ndarray = np.ndarray
    for x in xs:
        if isinstance(x, ndarray):
            return True
    return False


def where(condition: Any, if_true: Any, if_false: Any) -> Any:
    """``if_true if condition else if_false``, element by element (both already computed)."""
    if _any_array(condition, if_true, if_false):
        return _np().where(condition, if_true, if_false)
    return if_true if condition else if_false


def pick(index: Any, options: tuple[Any, ...]) -> Any:
    """``options[index]``, element by element; ``index`` from 0 to ``len(options) - 1``."""
    if _any_array(index, *options):
        return _np().choose(index, options)
    return options[index]


def minimum(a: Any, b: Any) -> Any:
    """``min(a, b)``, element by element: ``b`` where it is below ``a``, else ``a``, as Python's ``min`` chooses (so
    ``min(-0.0, 0.0)`` is ``-0.0`` and ``min(0.0, -0.0)`` is ``0.0``, where numpy's ``minimum`` may pick either)."""
    return _np().where(b < a, b, a) if _any_array(a, b) else min(a, b)


def maximum(a: Any, b: Any) -> Any:
    """``max(a, b)``, element by element: ``b`` where it is above ``a``, else ``a``, as Python's ``max`` chooses."""
    return _np().where(b > a, b, a) if _any_array(a, b) else max(a, b)


def negated(condition: Any) -> Any:
    """``not condition``, element by element."""
    return _np().logical_not(condition) if is_array(condition) else not condition


def sqrt(x: Any) -> Any:
    """``math.sqrt(x)``, element by element (IEEE square roots are correctly rounded: numpy's equals math's)."""
    return _np().sqrt(x) if is_array(x) else math.sqrt(x)


def ceil(x: Any) -> Any:
    """``math.ceil(x)`` as a whole number, element by element (``x`` finite and below 2**53 in magnitude)."""
    if is_array(x):
        return _np().ceil(x).astype(_np().int64)
    return math.ceil(x)


def power(x: Any, y: Any) -> Any:
    """``x ** y``, element by element, by Python's own ``**`` on each pair (numpy's power may round differently)."""
    return apply(operator.pow, x, y)


def apply(func: Callable[..., float], *xs: Any) -> Any:
    """``func(*xs)``, element by element: the same Python function called on each element's numbers, so the result
    is the one a call with those numbers gives, bit for bit. An exception it raises stops the whole array call (the
    array path then takes each element on its own)."""
    if not _any_array(*xs):
        return func(*xs)
    np = _np()
    out = np.frompyfunc(func, len(xs), 1)(*xs)
    return np.asarray(out, dtype=np.float64)


def count_above(sample: tuple[float, ...], x: Any) -> Any:
    """How many values of ``sample`` are above ``x``: ``sum(1 for v in sample if v > x)``, for each element of ``x``."""
    if not is_array(x):
        return sum(1 for v in sample if v > x)
    np = _np()
    return len(sample) - np.searchsorted(np.sort(np.asarray(sample, dtype=np.float64)), x, side="right")


def refused(condition: Any) -> bool:
    """Whether a check refuses the call: ``condition`` itself for plain numbers.

    Over arrays, the elements where ``condition`` holds are recorded for the one-call path (which raises the error,
    message and all) and the answer is False, so the body goes on for the others. Outside an array call of
    :func:`xlsxplan.domains.checked` (:func:`deferring`), an array condition is a TypeError.
    """
    if not is_array(condition):
        return bool(condition)
    if not _deferred:
        raise TypeError("refused() got an array outside an array call")
    _deferred[-1].append(condition)
    return False


@contextlib.contextmanager
def deferring() -> Iterator[list[Any]]:
    """Collect, for one array call, the masks of the elements :func:`refused` leaves to the one-call path."""
    masks: list[Any] = []
    _deferred.append(masks)
    try:
        yield masks
    finally:
        _deferred.pop()  # by position, not equality: the masks are arrays
