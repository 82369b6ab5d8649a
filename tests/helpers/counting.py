"""Count a function's calls in a test: the work a change makes cheaper, never the time it takes."""

from __future__ import annotations

from typing import Any

import pytest


def count_calls(monkeypatch: pytest.MonkeyPatch, owner: Any, **names: str) -> dict[str, int]:
    """Replace each function ``owner.<attribute>`` of ``names`` (counter -> attribute of a module or class) with one
    that counts its calls and then runs the original; returns the counters, each 0 to start. The tests may reset a
    counter by assigning to it."""
    counts = dict.fromkeys(names, 0)
    for counter, attribute in names.items():
        original = getattr(owner, attribute)

        def counted(*args: Any, _counter: str = counter, _original: Any = original, **kwargs: Any) -> Any:
            counts[_counter] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(owner, attribute, counted)
    return counts
