"""Excel's complex-number functions (COMPLEX and the IM family), registered in place of formualizer 0.13's, which
write a small part as 0 (``COMPLEX(1E-16,0)`` is "0" there, "0.0000000000000001" in Excel) so that every function
reading the text after it computes from a rounded number.

A complex number is text, ``x+yi`` or ``x+yj`` (Microsoft, "COMPLEX function"), or a plain number; each part is
written with up to 15 significant digits as Excel writes it: plainly down to 1E-18 ("0.000000000000000001"), in
scientific notation below that ("1E-20", "1.2E-45") and from 1E+15; an imaginary part of 1 or -1 as ``i`` or ``-i``;
a part of 0 left out ("3i", "12"), both 0 as "0". The functions compute with Python's :mod:`cmath`, which follows
the same principal branches as Excel (Microsoft's page on each: "IMLN function", "IMSQRT function", ...).
"""

from __future__ import annotations

import cmath
import math
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from . import natives

_NUMBER = r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"
_FORM = re.compile(rf"^(?P<re>[+-]?{_NUMBER})?(?:(?P<im>[+-]?(?:{_NUMBER})?)(?P<unit>[ij]))?$")


def _parse(name: str, value: Any) -> tuple[complex, str] | dict:
    """``(number, suffix)`` of a complex number as Excel reads one (text or a number; empty is 0); ``#NUM!`` for
    text that is not one, ``#VALUE!`` for TRUE or FALSE."""
    if type(value) is dict:
        return value
    if isinstance(value, bool):
        return natives.error("#VALUE!", f"{name} takes a complex number, not TRUE or FALSE")
    if value is None:
        return complex(0), ""
    if isinstance(value, (int, float)):
        return complex(float(value)), ""
    text = str(value)
    m = _FORM.match(text)
    if not text or m is None or (m.group("re") is None and m.group("unit") is None):
        return natives.error("#NUM!", f"{name}: {text!r} is not a complex number (x+yi)")
    real = float(m.group("re")) if m.group("re") else 0.0
    imag = 0.0
    if m.group("unit"):
        part = m.group("im")
        if m.group("re") and part == "":  # "3i": the number before the unit is the imaginary part
            real, imag = 0.0, real
        else:
            imag = float(part + "1") if part in ("", "+", "-") else float(part)
    return complex(real, imag), m.group("unit") or ""


def _part(x: float) -> str:
    """A part as Excel writes it: 15 significant digits, plainly from 1E-18 up to 1E+15, else scientific."""
    text = f"{x:.15g}"
    if "e" not in text:
        return text
    mantissa, _, exponent = text.partition("e")
    power = int(exponent)
    if -18 <= power < 15:
        return format(Decimal(text), "f")
    return f"{mantissa}E{'-' if power < 0 else '+'}{abs(power)}"


def _written(z: complex, suffix: str) -> str | dict:
    unit = suffix or "i"
    real, imag = float(f"{z.real:.15g}"), float(f"{z.imag:.15g}")
    if not (math.isfinite(real) and math.isfinite(imag)):
        return natives.error("#NUM!", "the result is too large for a complex number")
    if imag == 0:
        return _part(real) if real != 0 else "0"
    im = unit if imag == 1 else "-" + unit if imag == -1 else _part(imag) + unit
    if real == 0:
        return im
    return _part(real) + ("" if im.startswith("-") else "+") + im


def _suffix(name: str, suffixes: list[str]) -> str | dict:
    given = {s for s in suffixes if s}
    if len(given) > 1:
        return natives.error("#VALUE!", f"{name}: the numbers mix the suffixes i and j")
    return given.pop() if given else "i"


def complex_(real_num: Any, i_num: Any, suffix: Any = "i") -> Any:
    """Excel's COMPLEX: the complex number ``real_num + i_num i`` as text (Microsoft, "COMPLEX function"); the
    suffix "i" or "j" (lower case; empty is "i"), else ``#VALUE!``."""
    parts = []
    for value, what in ((real_num, "real_num"), (i_num, "i_num")):
        if type(value) is dict:
            return value
        if isinstance(value, bool):
            return natives.error("#VALUE!", f"COMPLEX's {what} must be a number, not TRUE or FALSE")
        try:
            parts.append(float(value if value is not None else 0))
        except (TypeError, ValueError):
            return natives.error("#VALUE!", f"COMPLEX's {what} must be a number, got {value!r}")
    if type(suffix) is dict:
        return suffix
    unit = "i" if suffix in (None, "") else suffix
    if unit not in ("i", "j"):
        return natives.error("#VALUE!", f'COMPLEX\'s suffix must be "i" or "j", got {unit!r}')
    return _written(complex(parts[0], parts[1]), unit)


def _unary(name: str, compute: Callable[[complex], complex], zero_is: str | None = None) -> Callable[..., Any]:
    def call(inumber: Any) -> Any:
        parsed = _parse(name, inumber)
        if isinstance(parsed, dict):
            return parsed
        z, suffix = parsed
        if zero_is is not None and z == 0:
            return natives.error(zero_is, f"{name} of 0 is not defined")
        try:
            result = compute(z)
        except (ValueError, ZeroDivisionError, OverflowError):
            return natives.error("#NUM!", f"{name}: the result is not a number")
        return _written(result, suffix)

    call.__name__ = name.lower()
    call.__doc__ = f'Excel\'s {name} of a complex number, as text (Microsoft, "{name} function").'
    return call


def _real(name: str, compute: Callable[[complex], float], zero_is: str | None = None) -> Callable[..., Any]:
    def call(inumber: Any) -> Any:
        parsed = _parse(name, inumber)
        if isinstance(parsed, dict):
            return parsed
        z = parsed[0]
        if zero_is is not None and z == 0:
            return natives.error(zero_is, f"{name} of 0 is not defined")
        return float(compute(z))

    call.__name__ = name.lower()
    call.__doc__ = f'Excel\'s {name} of a complex number, a number (Microsoft, "{name} function").'
    return call


def _fold(name: str, combine: Callable[[complex, complex], complex], start: complex) -> Callable[..., Any]:
    def call(*numbers: Any) -> Any:
        total, suffixes = start, []
        for arg in numbers:
            values = [v for row in arg for v in (row if type(row) is list else [row])] if type(arg) is list else [arg]
            for v in values:
                parsed = _parse(name, v)
                if isinstance(parsed, dict):
                    return parsed
                total = combine(total, parsed[0])
                suffixes.append(parsed[1])
        suffix = _suffix(name, suffixes)
        return suffix if isinstance(suffix, dict) else _written(total, suffix)

    call.__name__ = name.lower()
    call.__doc__ = f'Excel\'s {name} of any number of complex numbers, as text (Microsoft, "{name} function").'
    return call


def _binary(name: str, compute: Callable[[complex, complex], complex]) -> Callable[..., Any]:
    def call(a: Any, b: Any) -> Any:
        x, y = _parse(name, a), _parse(name, b)
        if isinstance(x, dict):
            return x
        if isinstance(y, dict):
            return y
        suffix = _suffix(name, [x[1], y[1]])
        if isinstance(suffix, dict):
            return suffix
        try:
            return _written(compute(x[0], y[0]), suffix)
        except (ValueError, ZeroDivisionError, OverflowError):
            return natives.error("#NUM!", f"{name}: the result is not a number")

    call.__name__ = name.lower()
    call.__doc__ = f'Excel\'s {name} of two complex numbers, as text (Microsoft, "{name} function").'
    return call


def impower(inumber: Any, number: Any) -> Any:
    """Excel's IMPOWER: a complex number raised to a real power, ``r^n (cos n t + i sin n t)`` (Microsoft,
    "IMPOWER function"); ``#NUM!`` for 0 to a power not above 0."""
    parsed = _parse("IMPOWER", inumber)
    if isinstance(parsed, dict):
        return parsed
    if type(number) is dict:
        return number
    try:
        n = float(number if number is not None else 0)
    except (TypeError, ValueError):
        return natives.error("#VALUE!", f"IMPOWER's number must be a number, got {number!r}")
    z, suffix = parsed
    if z == 0:
        return _written(complex(0), suffix) if n > 0 else natives.error("#NUM!", "IMPOWER: 0 to a power not above 0")
    r, t = abs(z), cmath.phase(z)
    try:
        return _written(cmath.rect(r**n, n * t), suffix)
    except OverflowError:
        return natives.error("#NUM!", "IMPOWER: the result is too large")


def _div(a: complex, b: complex) -> complex:
    if b == 0:
        raise ZeroDivisionError
    return a / b


FUNCTIONS: dict[str, tuple[Callable[..., Any], int, int | None, bool]] = {
    "COMPLEX": (complex_, 2, 3, False),
    "IMABS": (_real("IMABS", abs), 1, 1, False),
    "IMREAL": (_real("IMREAL", lambda z: z.real), 1, 1, False),
    "IMAGINARY": (_real("IMAGINARY", lambda z: z.imag), 1, 1, False),
    "IMARGUMENT": (_real("IMARGUMENT", cmath.phase, "#DIV/0!"), 1, 1, False),
    "IMCONJUGATE": (_unary("IMCONJUGATE", lambda z: z.conjugate()), 1, 1, False),
    "IMCOS": (_unary("IMCOS", cmath.cos), 1, 1, False),
    "IMCOSH": (_unary("IMCOSH", cmath.cosh), 1, 1, False),
    "IMSIN": (_unary("IMSIN", cmath.sin), 1, 1, False),
    "IMSINH": (_unary("IMSINH", cmath.sinh), 1, 1, False),
    "IMTAN": (_unary("IMTAN", cmath.tan), 1, 1, False),
    "IMCOT": (_unary("IMCOT", lambda z: 1 / cmath.tan(z), "#NUM!"), 1, 1, False),
    "IMCSC": (_unary("IMCSC", lambda z: 1 / cmath.sin(z), "#NUM!"), 1, 1, False),
    "IMCSCH": (_unary("IMCSCH", lambda z: 1 / cmath.sinh(z), "#NUM!"), 1, 1, False),
    "IMSEC": (_unary("IMSEC", lambda z: 1 / cmath.cos(z)), 1, 1, False),
    "IMSECH": (_unary("IMSECH", lambda z: 1 / cmath.cosh(z)), 1, 1, False),
    "IMEXP": (_unary("IMEXP", cmath.exp), 1, 1, False),
    "IMLN": (_unary("IMLN", cmath.log, "#NUM!"), 1, 1, False),
    "IMLOG10": (_unary("IMLOG10", cmath.log10, "#NUM!"), 1, 1, False),
    "IMLOG2": (_unary("IMLOG2", lambda z: cmath.log(z) / math.log(2), "#NUM!"), 1, 1, False),
    "IMSQRT": (_unary("IMSQRT", cmath.sqrt), 1, 1, False),
    "IMPOWER": (impower, 2, 2, False),
    "IMSUM": (_fold("IMSUM", lambda a, b: a + b, complex(0)), 1, 255, False),
    "IMPRODUCT": (_fold("IMPRODUCT", lambda a, b: a * b, complex(1)), 1, 255, False),
    "IMSUB": (_binary("IMSUB", lambda a, b: a - b), 2, 2, False),
    "IMDIV": (_binary("IMDIV", _div), 2, 2, False),
}
"""The complex-number functions registered in place of the engine's, as :data:`.engine.CORRECTED`."""
