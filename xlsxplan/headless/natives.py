"""What xlsxplan's own Excel functions (:mod:`.bonds`, :mod:`.criteria`, :mod:`.missing` and the rest) need from the
engine adapter, without importing it (it imports them): the engine's own function on one value per argument, and an
engine error value's Excel code. :mod:`.engine` sets both when it loads; numbers read as Excel reads them are here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _unset(*_: Any) -> Any:
    raise RuntimeError("xlsxplan.headless.engine is not loaded")


scalar: Callable[[str, tuple[Any, ...]], Any] = _unset
"""The engine's function ``name`` on one value per argument (``engine._native_scalar``; an Excel function xlsxplan
registers in the engine's place is xlsxplan's, its ``_xlfn.`` name the engine's own)."""
error_code: Callable[[dict], str] = _unset
"""The Excel code (``#N/A``) of an engine error value, whatever the engine's spelling (``engine.cell_error``)."""


def number_arg(value: Any, what: str) -> float | dict:
    """A numeric argument as Excel reads one: a number, TRUE 1, FALSE and empty 0, text of a number; an error
    value passes on."""
    if type(value) is dict:
        return value
    if value is None:
        return 0.0
    if isinstance(value, (bool, int, float)):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        pass
    text = str(value)
    if text == text.strip():  # Excel reads " 10 " as 10 but " 2024-01-10 " as no number
        read = scalar("VALUE", (text,))  # a date, a time, a percentage written as text
        if isinstance(read, (int, float)) and not isinstance(read, bool):
            return float(read)
    return {"type": "Error", "kind": "#VALUE!", "message": f"{what} must be a number, got {value!r}"}


def approx(q: float) -> float:
    """``q`` to 15 significant digits, as Excel rounds a quotient before taking its floor or ceiling (10.08/0.01
    is 1008, not 1007.9999999999999)."""
    return float(f"{q:.15g}")
