"""Change a built template's inputs for a test and put them back, reading each input's value once.

:func:`tests.helpers.books.changed` reads the values it puts back with ``Workbook.get``, which first recalculates
what the previous change left pending: a whole calculation of the template as shipped, whose values nobody reads
when a test changes inputs again at once. A module's tests each put back what they change, so the value an input
goes back to is the same every time: :func:`changed` here reads it the first time the input is changed (outside any
other change) and keeps it, and a change pays for one calculation, not two.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator
from typing import Any

_KEPT: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()
"""Per workbook, the value each input held before any change (kept as long as the workbook lives)."""
_DEPTH: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
"""Per workbook, how many :func:`changed` are open: inside another, an input's value is that change's."""


@contextlib.contextmanager
def changed(b: Any, values: dict[str, Any]) -> Iterator[Any]:
    """Set inputs of a built template (cells or defined names), recalculate, and put the old values back afterwards,
    uncalculated (the next read recalculates), as :func:`tests.helpers.books.changed` does."""
    wb = b.workbook
    kept = _KEPT.setdefault(wb, {})
    nested = _DEPTH.get(wb, 0) > 0
    old = {}
    for ref in values:
        if nested:
            old[ref] = wb.get(ref)
        else:
            if ref not in kept:
                kept[ref] = wb.get(ref)
            old[ref] = kept[ref]
    _DEPTH[wb] = _DEPTH.get(wb, 0) + 1
    try:
        for ref, value in values.items():
            wb.set(ref, value)
        wb.calculate()
        yield b
    finally:
        _DEPTH[wb] -= 1
        for ref, value in old.items():
            wb.set(ref, value)
