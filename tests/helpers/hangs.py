"""Generators of the worst cases of issue 27's quadratic hangs, at any size, and a counter of the work each does.

Each test of a hang (marked slow) builds its worst case at the size that hung, and at 4 and 10 times it, and counts
the work the command does (regex tokens and the bytes they span, rows scanned, elements visited, calls made), never
the time it takes: the work must grow linearly between 1x and 4x, and at 10x the command answers or refuses in one
line.

=========================== ==============================================================================================
unterminated_escapes(n)     a config.json whose name is an unterminated run of ``n`` escaped quotes (``\\"``): 20 s
                            for ``model add`` at 40 kB (n = 20,000) when the string pattern needed its closing quote
plan_cells_taking_turns(n)  ``n`` PLAN_OPTIONS_AT cells taking turns between nine searches: a search planned for each
                            cell (30 ms) when the eight searches planned last were remembered
=========================== ==============================================================================================
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

SIZES = (1, 4, 10)
"""The sizes each hang is built at, as multiples of the size that hung."""


def unterminated_escapes(n: int = 20_000) -> bytes:
    """A config.json of ``2 n + 19`` bytes: ``{"_name_or_path": "`` and ``n`` escaped quotes, never closed."""
    return b'{"_name_or_path": "' + b'\\"' * n


def linear(work: dict[int, int], slack: float = 1.25) -> bool:
    """Whether the work counted at each size (``{multiple: work}``, 1 and 4 among them) grows at most linearly from
    1x to 4x: at 4x at most ``4 * slack`` times the work at 1x."""
    return work[4] <= 4 * slack * max(work[1], 1)


@dataclass
class CountingPattern:
    """A compiled pattern that counts what its ``finditer`` calls return: the matches, and the bytes or characters
    they span. Put in place of a module's pattern (monkeypatch) to count a scan's work."""

    pattern: re.Pattern
    matches: int = 0
    spanned: int = 0

    def finditer(self, text: Any, *args: Any) -> Iterator[re.Match]:
        for m in self.pattern.finditer(text, *args):
            self.matches += 1
            self.spanned += m.end() - m.start()
            yield m

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pattern, name)


def plan_cells_taking_turns(cells: int = 2_007, searches: int = 9) -> bytes:
    """A workbook of ``cells`` PLAN_OPTIONS_AT cells (rows of ``searches`` cells), cell (r, c) the search of
    request rate number ``(r + c) % searches``, so that consecutive cells, by row or by column, take turns between
    ``searches`` searches: 30 ms a cell when only the last eight searches planned were remembered."""
    import io

    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Plan"
    for i in range(cells):
        r, c = divmod(i, searches)
        ws.cell(
            r + 1, c + 1
        ).value = (
            f'=PLAN_OPTIONS_AT(2,13,"Llama-3.1-70B",{123_457 + 1_000 * ((r + c) % searches)},1000,200,3,0,0,1,"H100")'
        )
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()
