"""How much memory a block of code takes at its peak, measured without slowing it down.

:func:`peak_growth` resets the process's peak resident size (Linux's ``/proc/self/clear_refs``, value 5) and reads
``VmHWM`` after the block: the growth of the resident peak over the resident size before, in bytes, whatever
allocated it (Python, the engine's Rust, a C library). Where the kernel offers no reset it falls back to
``tracemalloc``'s peak of Python's own allocations, which is exact for Python and many times slower.
"""

from __future__ import annotations

import contextlib
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

_STATUS = Path("/proc/self/status")
_CLEAR = Path("/proc/self/clear_refs")


def _status_bytes(field: str) -> int:
    for line in _STATUS.read_text(encoding="ascii").splitlines():
        if line.startswith(field):
            return int(line.split()[1]) * 1024
    raise LookupError(field)


def _can_reset() -> bool:
    try:
        _CLEAR.write_text("5", encoding="ascii")
        _status_bytes("VmHWM:")
        return True
    except (OSError, LookupError):
        return False


@contextlib.contextmanager
def peak_growth() -> Iterator[list[int]]:
    """``with peak_growth() as grew: ...`` then ``grew[0]`` is the block's peak memory over what the process held
    before it [bytes]."""
    out = [0]
    if _can_reset():
        before = _status_bytes("VmRSS:")
        try:
            yield out
        finally:
            out[0] = max(0, _status_bytes("VmHWM:") - before)
        return
    tracemalloc.start()
    try:
        yield out
    finally:
        out[0] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
