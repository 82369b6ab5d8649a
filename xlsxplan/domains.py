"""What each argument may hold, checked once, with a message that names it.

A core function declares its arguments with the annotated aliases below (``layers: Count``), and the
:func:`checked` decorator validates every call against them before the arithmetic runs. The same domains describe
the arguments in Excel's function wizard and in the README, so the rule and its wording live in one place.

Core functions take numbers (and, for names, text). Turning what a spreadsheet cell holds (numbers typed as
text, empty cells, error values, booleans) into those numbers is the adapters' job: see :mod:`xlsxplan.sheet.cells`.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, TypeVar

from .errors import ArgumentError, OutOfRangeError, XlsxplanError
from .infra.elementwise import deferring

__all__ = ["Domain", "checked", "domain_of", "format_number", "show_value"]

F = TypeVar("F", bound=Callable[..., Any])

_MAX_TEXT = 200
_MAX_RANGE = 1_048_576  # the rows of one Excel column


def format_number(x: float) -> str:
    """A number as a person reads it in a message: ``1,000,000``, ``0.9``, ``1e+18``."""
    if isinstance(x, bool):
        return "TRUE" if x else "FALSE"
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "infinity" if x > 0 else "-infinity"
    if float(x).is_integer() and abs(x) < 1e13:
        return f"{int(x):,}"
    if abs(x) >= 1e13 or (x != 0 and abs(x) < 1e-4):
        return f"{x:.4g}"
    return f"{x:.6g}"


def show_value(value: object) -> str:
    """How a received value is quoted back in an error message."""
    if value is None:
        return "an empty cell"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, numbers.Number):
        try:
            return format_number(float(value))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return repr(value)
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:37] + "..."
        return "text " + repr(text)
    return f"a {type(value).__name__}"


@dataclass(frozen=True)
class Domain:
    """The values one argument may take.

    Parameters
    ----------
    kind : {"number", "whole", "bytes", "text", "range"}
        ``number`` is any finite real, ``whole`` a whole number, ``bytes`` a byte count (whose domain,
        :class:`xlsxplan.precision.ByteCount`, also takes a precision name such as ``"fp8"``), ``text`` a name looked up
        elsewhere, ``range`` a whole column (or block) of numbers that the function reads as one sample, such as
        measured prompt lengths. A range argument reaches the function as a tuple of floats, empty cells skipped; the
        adapters pass it whole instead of broadcasting over it (:mod:`xlsxplan.sheet.cells`).
    low, high : float, optional
        Bounds; for a range, the bounds of each value. ``low_open`` makes the lower bound strict (``> low``),
        ``high_open`` the upper one (``< high``: a percentile is above 0 and below 1).
    typical : tuple of float, optional
        The range real inputs fall in. Values outside it are allowed but suspicious (a bandwidth of 3350 where
        TB/s is meant); the command line and templates warn about them.
    """

    numbers_alone: ClassVar[bool] = True
    """True where :meth:`check` of a float or an int depends on the number alone (and raises or returns the same
    every time): :func:`checked` then checks a repeated argument once. Read from a subclass that overrides
    :meth:`check` only where it sets the attribute itself (one whose check of a number is the base's)."""

    kind: str = "number"
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    typical: tuple[float, float] | None = None
    high_open: bool = False

    def describe(self) -> str:
        """The allowed values in words: ``a whole number from 1 to 1,000,000``."""
        if self.kind == "text":
            return "a name (text)" if self.high is None else f"text of at most {format_number(self.high)} characters"
        if self.kind == "range":
            each = Domain("number", self.low, self.high, self.low_open, high_open=self.high_open).describe()
            return f"a range of cells, each {each} (empty cells are skipped)"
        noun = {"number": "number", "whole": "whole number", "bytes": "number of bytes"}[self.kind]
        low, high = self.low, self.high
        hi = format_number(high) if high is not None else None
        if self.high_open and high is not None:  # a strict upper bound: a percentile, a utilisation below 1
            if low == 0 and self.low_open and high == 1:
                return "a fraction above 0 and below 1 (0.99 for the 99th percentile)"
            if low is None:
                return f"a {noun} below {hi}"
            return f"a {noun} {'above' if self.low_open else 'from'} {format_number(low)} and below {hi}"
        if low == 0 and self.low_open and high == 1:
            phrase = "a fraction above 0 and at most 1 (0.9 for 90%)"
        elif low == 0 and self.low_open:
            phrase = f"a positive {noun}" + (f" up to {hi}" if hi else "")
        elif low is None:
            phrase = f"a {noun}" + (f" up to {hi}" if hi else "")
        elif self.low_open:
            phrase = f"a {noun} above {format_number(low)}" + (f" and at most {hi}" if hi else "")
        else:
            phrase = f"a {noun} from {format_number(low)}" + (f" to {hi}" if hi else " or more")
        if self.kind == "bytes":
            phrase += " or a precision name such as bf16, fp8 or int4"
        return phrase

    def check(self, name: str, value: object) -> Any:
        """Return ``value`` as the function should see it, or raise an error naming ``name``."""
        if value is None:
            raise ArgumentError(f"{name} is required: give {self.describe()}", name)
        if self.kind == "text":
            return self._check_text(name, value)
        if self.kind == "range":
            return self._check_range(name, value)
        # a float or an int is a number without asking numbers.Real (an abstract class, slow to ask): the search
        # checks a few thousand arguments of its own per plan
        if type(value) is float or type(value) is int:
            x = float(value)
        elif isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ArgumentError(f"{name} must be {self.describe()}, got {show_value(value)}", name)
        else:
            x = float(value)
        if not math.isfinite(x):
            raise OutOfRangeError(f"{name} must be {self.describe()}, got {show_value(x)}", name)
        too_low = self.low is not None and (x <= self.low if self.low_open else x < self.low)
        too_high = self.high is not None and (x >= self.high if self.high_open else x > self.high)
        if too_low or too_high:
            raise OutOfRangeError(f"{name} must be {self.describe()}, got {show_value(x)}", name)
        if self.kind == "whole":
            if not x.is_integer():
                raise OutOfRangeError(f"{name} must be {self.describe()}, got {show_value(x)}", name)
            return int(x)
        return x

    def check_array(self, x: Any) -> tuple[Any, Any] | None:
        """The checks of :meth:`check` on a numpy float64 array of numbers, all at once: ``(values, refused)``.

        ``values`` are what :meth:`check` returns for each element (int64 for a whole number; 0 where refused),
        ``refused`` a boolean mask of the elements :meth:`check` raises for (asked of that element alone, it gives
        the message). None for a kind that is not a number (a name, a range) or a whole-number domain wider than
        int64 holds exactly: the caller then checks each element with :meth:`check`.
        """
        if self.kind not in ("number", "whole", "bytes"):
            return None
        if type(self).check is not Domain.check and "check_array" not in vars(type(self)):
            return None  # a subclass with checks of its own says how they run on arrays, or they run one by one
        if self.kind == "whole" and any(b is None or abs(b) > 2**53 for b in (self.low, self.high)):
            return None
        import numpy as np

        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(x)
            if self.low is not None:
                bad |= (x <= self.low) if self.low_open else (x < self.low)
            if self.high is not None:
                bad |= (x >= self.high) if self.high_open else (x > self.high)
            if self.kind == "whole":
                bad |= np.floor(x) != x
                return np.where(bad, 0.0, x).astype(np.int64), bad
        return np.where(bad, 0.0, x), bad

    def _check_text(self, name: str, value: object) -> str:
        if not isinstance(value, str):
            raise ArgumentError(f"{name} must be {self.describe()}, got {show_value(value)}", name)
        text = value.strip()
        if not text:
            raise ArgumentError(f"{name} must be {self.describe()}, got empty text", name)
        most = _MAX_TEXT if self.high is None else int(self.high)
        if len(text) > most:
            raise ArgumentError(
                f"{name} must be {'a name' if self.high is None else 'text'} of at most {most:,} characters", name
            )
        return text

    def _check_range(self, name: str, value: object) -> tuple[float, ...]:
        items = list(flatten_range(value))
        if len(items) > _MAX_RANGE:
            raise ArgumentError(f"{name} must hold at most {_MAX_RANGE:,} cells, got {len(items):,}", name)
        each = Domain("number", self.low, self.high, self.low_open, high_open=self.high_open)
        numbers_: list[float] = []
        for i, item in enumerate(items, 1):
            if item is None or (isinstance(item, str) and not item.strip()):
                continue  # an empty cell, as Excel's AVERAGE and COUNT skip it
            try:
                numbers_.append(each.check(name, item))
            except XlsxplanError as err:
                where = f"value {i} of {len(items)}"
                raise type(err)(err.message.replace(name, f"{name} ({where})", 1), name) from None
        if not numbers_:
            got = "only empty cells" if items else "no values"
            raise ArgumentError(f"{name} must hold at least one number, got {got}", name)
        return tuple(numbers_)

    def suspicion(self, name: str, value: float) -> str | None:
        """A warning for a legal but implausible value, or None."""
        if self.typical is None or not isinstance(value, (int, float)) or isinstance(value, bool):
            return None
        lo, hi = self.typical
        if lo <= value <= hi:
            return None
        return f"{name} = {format_number(value)} is outside the usual range {_usual(lo, hi)}: check its unit"


_USUAL: dict[tuple[type, float, type, float], str] = {}


def _usual(lo: float, hi: float) -> str:
    """A usual range in words (``0.0001 to 10,000``), made once per range: a sheet of a hundred thousand rows
    may warn about a value outside one in each."""
    key = (type(lo), lo, type(hi), hi)
    text = _USUAL.get(key)
    if text is None:
        text = f"{format_number(lo)} to {format_number(hi)}"
        if len(_USUAL) < 1_000:  # the domains' usual ranges are a few dozen; the bound keeps it so whatever comes
            _USUAL[key] = text
    return text


def flatten_range(value: object) -> Iterator[object]:
    """The cells of a range in reading order: a numpy array, nested lists or tuples, or one value."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()  # a numpy array (or scalar) as plain Python values
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from flatten_range(item)
    else:
        yield value


def whole(low: float, high: float) -> Domain:
    return Domain("whole", low, high)


def positive(high: float, typical: tuple[float, float] | None = None) -> Domain:
    return Domain("number", 0, high, low_open=True, typical=typical)


def domain_of(annotation: object) -> Domain | None:
    """The :class:`Domain` carried by an ``Annotated`` type, or None."""
    for extra in getattr(annotation, "__metadata__", ()):
        if isinstance(extra, Domain):
            return extra
    return None


@typing.overload
def checked(func: F) -> F: ...


@typing.overload
def checked(*, arrays: bool = False) -> Callable[[F], F]: ...


def checked(func: F | None = None, *, arrays: bool = False) -> F | Callable[[F], F]:
    """Validate every call of ``func`` against the domains in its annotations, and its result.

    The wrapper keeps the signature (``inspect.signature`` follows ``__wrapped__``) and exposes the domains as
    ``wrapper.domains``. A float result that is not finite means the inputs overflowed: it becomes an
    :class:`~xlsxplan.errors.OutOfRangeError` rather than an ``inf`` in a cell.

    ``wrapper.call_checked(*values)`` runs the function on values that have already passed their domains' checks
    (every argument given, in order) and checks the result as a call would. Array adapters use it to check each
    distinct input once rather than once per element of a broadcast (:func:`xlsxplan.sheet.cells.evaluate_broadcast`).

    ``@checked(arrays=True)`` declares that the body is array-safe (operators and the helpers of
    :mod:`xlsxplan.infra.elementwise` only), and adds ``wrapper.call_array(*values)``: the body run once over numpy
    arrays of checked values (see :func:`_call_array`).
    """
    if func is None:
        return lambda f: _checked(f, arrays)
    return _checked(func, arrays)


def _checked(func: F, arrays: bool) -> F:
    sig = inspect.signature(func)
    hints = typing.get_type_hints(func, include_extras=True)
    params = list(sig.parameters.values())
    for p in params:
        if p.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD:
            raise TypeError(f"{func.__name__}: parameter {p.name} must be positional-or-keyword")
        if domain_of(hints.get(p.name)) is None:
            raise TypeError(f"{func.__name__}: parameter {p.name} has no Domain annotation")
    names = tuple(p.name for p in params)
    domains = tuple(domain_of(hints[p.name]) for p in params)
    defaults = tuple(p.default for p in params)
    n = len(params)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if kwargs or len(args) > n:
            bound = sig.bind(*args, **kwargs)
            bound.apply_defaults()
            values = list(bound.args)
        else:
            values = list(args)
            for i in range(len(values), n):
                if defaults[i] is inspect.Parameter.empty:
                    raise TypeError(f"{func.__name__}() missing required argument: '{names[i]}'")
                values.append(defaults[i])
        # a number equal to the one this parameter last passed (same type, not zero, whose sign a check keeps)
        # reuses its checked value: a sheet calls the function once per row with most arguments repeated
        checked_values = [
            m[2] if (m := kept[i])[0] is type(v) and m[1] == v else check(i, v) for i, v in enumerate(values)
        ]
        return call_checked(*checked_values)

    # per parameter: (type, value, checked value) of the last plain nonzero number that passed a domain whose check
    # of a number depends on the number alone (Domain.numbers_alone)
    kept: list[tuple[Any, Any, Any]] = [(None, None, None)] * n
    remember = tuple(d is not None and _numbers_alone(type(d)) for d in domains)

    def check(i: int, value: Any) -> Any:
        result = domains[i].check(names[i], value)  # type: ignore[union-attr]
        kind = type(value)
        if (kind is float or kind is int) and value != 0 and remember[i]:
            kept[i] = (kind, value, result)
        return result

    def call_checked(*checked_values: Any) -> Any:
        result = func(*checked_values)
        if isinstance(result, float) and not math.isfinite(result):
            raise OutOfRangeError(f"{func.__name__}: the result is too large to represent; check the inputs' units")
        return result

    wrapper.domains = dict(zip(names, domains))  # type: ignore[attr-defined]
    wrapper.call_checked = call_checked  # type: ignore[attr-defined]
    if arrays:
        wrapper.call_array = functools.partial(_call_array, func)  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]


def _numbers_alone(kind: type[Domain]) -> bool:
    """:attr:`Domain.numbers_alone` of a domain class: False for a class that overrides the check and does not say."""
    if kind.check is Domain.check or "numbers_alone" in vars(kind):
        return bool(kind.numbers_alone)
    return False


def _call_array(func: Callable[..., Any], *checked_values: Any) -> tuple[Any, Any]:
    """Run an array-safe ``func`` once over checked values: numbers as numpy arrays that broadcast together, names
    and ranges as the one value every element shares. Returns ``(result, deferred)``: the result as a numpy array,
    and a boolean mask (broadcastable to it) of the elements to take through ``call_checked`` one by one instead,
    those a check in the body refused (:func:`xlsxplan.infra.elementwise.refused`) and those whose result is not finite
    (which ``call_checked`` turns into its error). None when there are none.

    A division by zero or an invalid operation (``0 / 0``, ``inf - inf``) raises FloatingPointError, where Python's
    own arithmetic would raise or give NaN: whatever escapes, the caller takes every element on its own.
    """
    import numpy as np

    with deferring() as masks, np.errstate(divide="raise", invalid="raise", over="ignore", under="ignore"):
        result = np.asarray(func(*checked_values))
    deferred = ~np.isfinite(result) if result.dtype.kind == "f" else None
    for mask in masks:
        deferred = mask if deferred is None else deferred | mask
    return result, deferred


# The argument kinds used across the core. Bounds are physical or practical limits, wide enough for any real
# plan and narrow enough that a typo (1e308, a negative count) is refused with a reason.
Count = Annotated[int, whole(1, 1_000_000)]
GPUs = Annotated[int, whole(1, 10_000_000)]
Batch = Annotated[int, whole(1, 1_000_000_000)]
Spare = Annotated[int, Domain("whole", 0, 1_000_000)]
ParamsB = Annotated[float, positive(1e6, typical=(1e-4, 1e4))]
Tokens = Annotated[float, positive(1e18)]
TokensOrZero = Annotated[float, Domain("number", 0, 1e18)]
KvBytes = Annotated[float, positive(1e12)]
KvBytesOrZero = Annotated[float, Domain("number", 0, 1e12)]
MemoryGB = Annotated[float, positive(1e9, typical=(1, 2000))]
BandwidthTBs = Annotated[float, positive(1e5, typical=(0.01, 50))]
TFLOPs = Annotated[float, positive(1e9, typical=(0.1, 50_000))]
FLOPsPerS = Annotated[float, positive(1e30)]
Seconds = Annotated[float, positive(1e12)]
Fraction = Annotated[float, Domain("number", 0, 1, low_open=True)]
Price = Annotated[float, Domain("number", 0, 1e6, typical=(0.01, 200))]
TokensPerS = Annotated[float, positive(1e15)]
PerDay = Annotated[float, positive(1e15)]
PeakFactor = Annotated[float, Domain("number", 1, 1e4)]
TokensPerParam = Annotated[float, positive(1e6)]
Name = Annotated[str, Domain("text")]
LongText = Annotated[str, Domain("text", high=32_767)]
"""Text up to a cell's limit (Excel holds 32,767 characters), such as a table written as CSV."""
# Architecture and training-memory arguments.
CountOrZero = Annotated[int, Domain("whole", 0, 1_000_000)]
ParamsBOrZero = Annotated[float, Domain("number", 0, 1e6)]
Flag = Annotated[int, Domain("whole", 0, 1)]
ZeroStage = Annotated[int, Domain("whole", 0, 3)]
Multiplier = Annotated[float, Domain("number", 0, 1e6)]
StateBytes = Annotated[float, Domain("number", 0, 1000)]
Passes = Annotated[int, Domain("whole", 0, 10_000)]

# Traffic: shares that may be zero, tail probabilities, free memory that may be negative, request
# rates, link bandwidths, and a sample of measured lengths given as a range.
FractionOrZero = Annotated[float, Domain("number", 0, 1)]
TailProbability = Annotated[float, Domain("number", 0, 0.5, low_open=True)]
FreeGB = Annotated[float, Domain("number", -1e9, 1e9)]
RequestsPerS = Annotated[float, positive(1e15)]
LinkGBs = Annotated[float, positive(1e6, typical=(0.1, 10_000))]
TokenSample = Annotated[tuple, Domain("range", 0, 1e18)]

# Calibration and the roofline serving model
BatchOrZero = Annotated[int, Domain("whole", 0, 1_000_000_000)]
LinkGBsOrZero = Annotated[float, Domain("number", 0, 1e6, typical=(0, 5000))]
# Rates and figures a function takes as 0 for "none": a quiet row of a sweep (REPLICAS), the memory figures that
# BATCH_FOR_TTFT leaves out unless given.
TokensPerSOrZero = Annotated[float, Domain("number", 0, 1e15)]
BandwidthTBsOrZero = Annotated[float, Domain("number", 0, 1e5)]

# Queueing: servers of a queue (a replica's batch slots, or all of a fleet's), the load offered to them in
# Erlangs, a percentile strictly inside (0, 1), a coefficient of variation, and times that may be zero (a prefill
# pool's requests decode nothing).
Servers = Annotated[int, whole(1, 1_000_000_000)]
Erlangs = Annotated[float, Domain("number", 0, 1e9)]
Percentile = Annotated[float, Domain("number", 0, 1, low_open=True, high_open=True)]
CoefficientOfVariation = Annotated[float, Domain("number", 0, 100, typical=(0, 5))]
SecondsOrZero = Annotated[float, Domain("number", 0, 1e12)]
# Memory as serving engines allocate it, and speculative decoding: memory that may be zero (weights, a reserve), a
# sample of acceptance rates given as a range.
MemoryGBOrZero = Annotated[float, Domain("number", 0, 1e9)]
FractionSample = Annotated[tuple, Domain("range", 0, 1)]
# Cost of ownership: capital, lives, rates, power and hosting, rents, and a demand curve given as a range.
CapexUSD = Annotated[float, Domain("number", 0, 1e12, typical=(1_000, 1_000_000))]
Years = Annotated[float, positive(100, typical=(1, 10))]
YearsOrZero = Annotated[float, Domain("number", 0, 100, typical=(0, 10))]
AnnualRate = Annotated[float, Domain("number", 0, 1, typical=(0, 0.3))]
KWOrZero = Annotated[float, Domain("number", 0, 1_000, typical=(0, 5))]
PUE = Annotated[float, Domain("number", 1, 10, typical=(1, 2.5))]
USDPerKWh = Annotated[float, Domain("number", 0, 100, typical=(0, 1))]
USDPerKWMonth = Annotated[float, Domain("number", 0, 100_000, typical=(0, 1_000))]
PricePositive = Annotated[float, positive(1e6, typical=(0.01, 200))]
USDPerMonth = Annotated[float, Domain("number", 0, 1e12)]
USDPerMonthPositive = Annotated[float, positive(1e12)]
GPUsOrZero = Annotated[float, Domain("number", 0, 1e9)]
GPUDemand = Annotated[tuple, Domain("range", 0, 1e9)]
HoursPerPeriod = Annotated[float, positive(1e6, typical=(1, 744))]
# The training plan: a budget in dollars and a deadline in days, each 0 for "none", and a rate of failures per
# GPU-hour.
USDOrZero = Annotated[float, Domain("number", 0, 1e12)]
DaysOrZero = Annotated[float, Domain("number", 0, 1e5, typical=(0, 365))]
FailuresPerGPUHour = Annotated[float, Domain("number", 0, 1, low_open=True, typical=(0, 1e-3))]
# Energy, carbon and the finance of a fleet: grid intensities, a discount below 1, spot interruptions, an hourly
# demand profile and cash flows given as ranges, hosted prices per million tokens and traffic.
GramsPerKWh = Annotated[float, Domain("number", 0, 5_000, typical=(0, 1_200))]
KWPositive = Annotated[float, positive(1_000, typical=(0.05, 5))]
KWhPerMTokens = Annotated[float, Domain("number", 0, 1e9)]
Discount = Annotated[float, Domain("number", 0, 1, high_open=True)]
PerHour = Annotated[float, Domain("number", 0, 3_600, typical=(0, 1))]
DemandProfile = Annotated[tuple, Domain("range", 0, 1e15)]
CashFlows = Annotated[tuple, Domain("range", -1e15, 1e15)]
USDPerMTokens = Annotated[float, Domain("number", 0, 1e6, typical=(0, 100))]
WholeYears = Annotated[int, Domain("whole", 0, 1_000)]
USDAmount = Annotated[float, Domain("number", 0, 1e12, typical=(0, 1e9))]
USDPerYear = Annotated[float, Domain("number", 0, 1e12)]
