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
names_and_rules(n, m)       ``n`` inputs and ``m`` data-validation ranges beside them: over 90 s for ``inputs`` at
                            20,000 and 40,000 (each input scanned every rule and every row above it)
suspicious_elements(n)      one formula over ``n`` implausible bandwidths, each another value: a warning line each
                            (107 s at 120,000), each looked up in the lines before it
=========================== ==============================================================================================
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tests.helpers.hostile import members, pack

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


def suspicious_elements(n: int = 120_000) -> bytes:
    """A workbook whose one formula hands TOKS_CEILING a range of ``n`` bandwidths, each outside the usual range
    (51.001 TB/s and up) and each another value: a warning line an element (107 s at 120,000) when each new warning was
    looked up in the lines before it."""
    from tests.helpers.hostile import plain_xlsx, with_parts

    rows = "".join(f'<row r="{i}"><c r="B{i}"><v>{51 + i / 1000}</v></c></row>' for i in range(2, n + 1))
    sheet = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
        f'<row r="1"><c r="B1"><v>51.001</v></c><c r="C1"><f>SUM(TOKS_CEILING(70,2,1000,B1:B{n}))</f></c></row>'
        f"{rows}</sheetData></worksheet>"
    )
    return with_parts({"xl/worksheets/sheet1.xml": sheet.encode()}, plain_xlsx({"A1": 1}))


def names_and_rules(names: int = 20_000, ranges: int = 40_000) -> bytes:
    """A workbook of ``names`` inputs (defined names of cells holding values, one a row under a Unit heading) and
    ``ranges`` data-validation ranges, in 40,000 rules at most (a workbook may hold 50,000), none of them on an input
    (each a cell of column D): more than 90 s for ``xlsxplan inputs`` at 20,000 names and 40,000 rules, when each
    input looked through every rule, and up every row above it for its unit."""
    from tests.helpers.hostile import plain_xlsx, with_parts

    ns = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    rows = "".join(
        f'<row r="{i}"><c r="B{i}"><v>{i}</v></c><c r="C{i}" t="inlineStr"><is><t>GB</t></is></c></row>'
        for i in range(2, names + 2)
    )
    rules = min(ranges, 40_000)
    each = -(-ranges // rules)
    dvs = "".join(
        '<dataValidation type="whole" operator="between" sqref="'
        + " ".join(f"D{j}" for j in range(i * each + 1, min((i + 1) * each, ranges) + 1))
        + '"><formula1>1</formula1><formula2>9</formula2></dataValidation>'
        for i in range(rules)
    )
    sheet = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><worksheet xmlns="{ns}"><sheetData>'
        '<row r="1"><c r="C1" t="inlineStr"><is><t>Unit</t></is></c></row>'
        f'{rows}</sheetData><dataValidations count="{rules}">{dvs}</dataValidations></worksheet>'
    )
    defined = "".join(f'<definedName name="Input_{i}">Sheet1!$B${i}</definedName>' for i in range(2, names + 2))
    base = members(plain_xlsx({"A1": 1}))
    book = re.sub(rb"<definedNames>.*?</definedNames>|(?=<calcPr)", b"", base["xl/workbook.xml"], count=0)
    book = book.replace(b"</sheets>", f"</sheets><definedNames>{defined}</definedNames>".encode(), 1)
    return with_parts({"xl/worksheets/sheet1.xml": sheet.encode(), "xl/workbook.xml": book}, pack(base))
