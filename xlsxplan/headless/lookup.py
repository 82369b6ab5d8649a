"""Excel's XLOOKUP with a match mode or search mode given, where formualizer 0.13 gives ``#N/A`` for an inexact
match on unsorted data, a wildcard match, or a binary search. The formula rewrite (:func:`.engine.prepare`) gives the
engine ``_XLSXPLAN_XLOOKUP`` for a call with five or six arguments only; a call with the default modes, the usual
one, stays the engine's own.

The semantics are Microsoft's ("XLOOKUP function"): ``match_mode`` 0 exact, -1 exact or the next smaller item, 1
exact or the next larger item, 2 a wildcard match (``*`` any text, ``?`` one character, ``~`` escaping either);
``search_mode`` 1 from the first item, -1 from the last, 2 a binary search of items sorted ascending, -2 descending.
Text is compared without regard to case; numbers sort before text, text before FALSE and TRUE, and an item of
another kind than the lookup value never matches.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from . import natives

NAME = "_XLSXPLAN_XLOOKUP"  # engine.MODAL_XLOOKUP
"""The name the rewrite gives an XLOOKUP call with a match or search mode."""


def _grid(arg: Any) -> list[list[Any]]:
    if type(arg) is list:
        return [row if type(row) is list else [row] for row in arg]
    return [[arg]]


def _key(value: Any) -> tuple[int, Any] | None:
    """The value's place in Excel's lookup order: (kind, value), text case-folded; ``None`` for an empty cell or an
    error value, which match nothing."""
    if value is None or type(value) is dict:
        return None
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, (int, float)):
        return (0, float(value))
    return (1, str(value).lower())


def _linear(items: list[Any], value: Any, match: int, reverse: bool) -> int:
    """The search from the first item (or the last): the first exact match; else, for ``match`` -1 (1), the first
    of the largest items below (smallest above) the value in Excel's order of kinds; an empty lookup value matches
    an empty cell."""
    order = range(len(items) - 1, -1, -1) if reverse else range(len(items))
    if value is None:
        return next((i for i in order if items[i] is None), -1)
    want = _key(value)
    assert want is not None
    if match == 2 and want[0] == 1:
        pattern = natives.wildcard(str(value))
        return next((i for i in order if isinstance(items[i], str) and pattern.fullmatch(items[i])), -1)
    best, best_key = -1, None
    for i in order:
        key = _key(items[i])
        if key is None:
            continue
        if key == want:
            return i
        if match == -1 and key < want and (best_key is None or key > best_key):
            best, best_key = i, key
        elif match == 1 and key > want and (best_key is None or key < best_key):
            best, best_key = i, key
    return best


_LAST = (3, 0.0)
"""Where an empty cell or an error value sorts in a binary search: after everything."""


def _binary(items: list[Any], value: Any, match: int, descending: bool) -> int:
    """Excel's binary search: the first item not below the value (by kind, then value) found by halving, as in a
    sorted list; that item if it equals the value, else the one before it (``match`` -1) or it (1). Items sorted
    descending are searched as the reversed list, so among equal items the last is found."""
    want = _key(0.0 if value is None else value)
    assert want is not None
    order = list(range(len(items) - 1, -1, -1)) if descending else list(range(len(items)))
    keys = [_key(items[i]) or _LAST for i in order]
    lo, hi = 0, len(keys)
    while lo < hi:
        mid = (lo + hi) // 2
        if keys[mid] < want:
            lo = mid + 1
        else:
            hi = mid
    if lo < len(keys) and keys[lo] == want:
        return order[lo]
    if match == -1 and lo > 0 and keys[lo - 1] != _LAST:
        return order[lo - 1]
    if match == 1 and lo < len(keys) and keys[lo] != _LAST:
        return order[lo]
    return -1


def _whole(value: Any, default: int, what: str, allowed: tuple[int, ...]) -> int | dict:
    if value is None:
        return default
    if type(value) is dict:
        return value
    try:
        n = math.trunc(float(value))
    except (TypeError, ValueError):
        return natives.error("#VALUE!", f"XLOOKUP's {what} must be a number, got {value!r}")
    if n not in allowed:
        return natives.error("#VALUE!", f"XLOOKUP's {what} must be one of {', '.join(map(str, allowed))}, got {n}")
    return n


def xlookup(
    lookup_value: Any,
    lookup_array: Any,
    return_array: Any,
    if_not_found: Any = None,
    match_mode: Any = 0,
    search_mode: Any = 1,
) -> Any:
    """Excel's XLOOKUP (Microsoft, "XLOOKUP function"): the row (or column) of ``return_array`` where
    ``lookup_value`` is found in ``lookup_array`` (one row or one column of the same length), matched and searched
    as ``match_mode`` and ``search_mode`` say; ``if_not_found`` (``#N/A`` if none is given) when nothing matches.
    A lookup value that is an array gives one result per element."""
    match = _whole(match_mode, 0, "match_mode", (0, -1, 1, 2))
    search = _whole(search_mode, 1, "search_mode", (1, -1, 2, -2))
    if type(match) is dict:
        return match
    if type(search) is dict:
        return search
    assert isinstance(match, int) and isinstance(search, int)
    if type(lookup_array) is dict:
        return lookup_array
    if match == 2 and abs(search) == 2:
        return natives.error("#VALUE!", "XLOOKUP: a wildcard match cannot be a binary search")
    grid, out = _grid(lookup_array), _grid(return_array)
    by_row = len(grid) > 1 or len(grid[0]) == 1
    if by_row and any(len(row) != 1 for row in grid) and len(grid) > 1:
        return natives.error("#VALUE!", "XLOOKUP's lookup_array must be one row or one column")
    items = [row[0] for row in grid] if by_row else grid[0]
    if (len(out) if by_row else len(out[0])) != len(items):
        return natives.error("#VALUE!", "XLOOKUP's return_array must be as long as its lookup_array")

    def one(value: Any) -> Any:
        if type(value) is dict:
            return value
        if abs(search) == 2:
            at = _binary(items, value, match, search == -2)
        else:
            at = _linear(items, value, match, search == -1)
        if at < 0:
            return if_not_found if if_not_found is not None else natives.error("#N/A", "XLOOKUP found no match")
        if by_row:
            row = out[at]
            return row[0] if len(row) == 1 else [row]
        column = [row[at] for row in out]
        return column[0] if len(column) == 1 else [[v] for v in column]

    if type(lookup_value) is list:
        results = [[one(v) for v in row] for row in _grid(lookup_value)]
        return [[r[0][0] if type(r) is list else r for r in row] for row in results]
    return one(lookup_value)


FUNCTIONS: dict[str, tuple[Callable[..., Any], int, int | None, bool]] = {NAME: (xlookup, 3, 6, False)}
"""XLOOKUP with its modes, registered under :data:`NAME`, as :data:`.engine.CORRECTED`."""
