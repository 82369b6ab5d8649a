"""What xlsxplan's own Excel functions (:mod:`.bonds`, :mod:`.criteria`, :mod:`.missing` and the rest) need from the
engine adapter, without importing it (it imports them): the engine's own function on one value per argument, and an
engine error value's Excel code. :mod:`.engine` sets both when it loads; numbers read as Excel reads them are here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any


def _unset(*_: Any) -> Any:
    raise RuntimeError("xlsxplan.headless.engine is not loaded")


scalar: Callable[[str, tuple[Any, ...]], Any] = _unset
"""The engine's function ``name`` on one value per argument (``engine._native_scalar``; an Excel function xlsxplan
registers in the engine's place is xlsxplan's, its ``_xlfn.`` name the engine's own)."""
error_code: Callable[[dict], str] = _unset
"""The Excel code (``#N/A``) of an engine error value, whatever the engine's spelling (``engine.cell_error``)."""


def error(kind: str, message: str) -> dict:
    """An engine error value: ``kind`` its Excel code (``#VALUE!``), ``message`` why, in words."""
    return {"type": "Error", "kind": kind, "message": message}


def plain_number(value: Any, what: str) -> float | dict:
    """A numeric argument read as a number: a number, TRUE 1, FALSE and empty 0, the text of a number; an error
    value passes on; other text ``#VALUE!``."""
    if type(value) is dict:
        return value
    if value is None:
        return 0.0
    if isinstance(value, (bool, int, float)):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        return error("#VALUE!", f"{what} must be a number, got {value!r}")


def number_arg(value: Any, what: str) -> float | dict:
    """A numeric argument as Excel reads one: :func:`plain_number`, and text Excel's VALUE reads as a number (a
    date, a time, a percentage written as text)."""
    number = plain_number(value, what)
    if type(number) is not dict or type(value) is dict:
        return number
    text = str(value)
    if text == text.strip():  # Excel reads " 10 " as 10 but " 2024-01-10 " as no number
        read = scalar("VALUE", (text,))
        if isinstance(read, (int, float)) and not isinstance(read, bool):
            return float(read)
    return number


def wildcard(pattern: str) -> re.Pattern[str]:
    """Excel's wildcard pattern (``*`` any run, ``?`` one character, ``~`` before either or itself: that character)
    as a regular expression matching the whole text, case-insensitive."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "~" and i + 1 < len(pattern) and pattern[i + 1] in "*?~":
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if ch == "*" else "." if ch == "?" else re.escape(ch))
        i += 1
    return re.compile("".join(out), re.IGNORECASE | re.DOTALL)


def approx(q: float) -> float:
    """``q`` to 15 significant digits, as Excel rounds a quotient before taking its floor or ceiling (10.08/0.01
    is 1008, not 1007.9999999999999)."""
    return float(f"{q:.15g}")
