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
sequence_elements(n)        the same ``n`` bandwidths made by SEQUENCE, in a 4.9 kB workbook: as slow (26 s for
                            recalc at 60,000 before), the elements reaching the function one by one
names_and_rules(.., span)   the same with each range ``span`` cells tall (over 64: not indexed cell by cell), none on
                            an input: each input looked through every such range (800 million tests at 1x)
claimed_spans(rows)         a 5 kB workbook whose data table and array formula (its ``ref`` written twice, a decoy
                            first) claim ``A1:XFD<rows>``: 4.5 GB and 100 s at 1,000 rows before "ran out of memory"
                            (3.9 GB for the array formula alone), the cells listed one by one, none counted
validate_rows(n)            a measurements file of ``n`` rows, each its own publication: 48 s for ``validate --data`` at
                            20,000 (each row's range built from a list of every other row)
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


def up_to_a_quarter(hung: int) -> dict[int, int]:
    """The sizes a hang whose work grows with its size is built at, by the multiple :func:`linear` reads: a
    sixteenth of ``hung`` (the size that hung) at 1x, a quarter of it at 4x and ten times it at 10x. The work is
    counted, not timed, so the step from 1x to 4x shows a quadratic cost as 16 times the work at any size: ending it
    at a quarter of the size that hung costs a sixteenth of the time a step from the size that hung to 4 times it
    takes (these tests cost 25 s of CPU when the step ended at the size that hung); the 10x case, refused or
    answered in one line, is as :data:`SIZES` builds it."""
    return {1: hung // 16, 4: hung // 4, 10: 10 * hung}


INPUTS_SIZES = up_to_a_quarter(20_000)
"""The inputs :func:`names_and_rules` is built with (twice as many validation ranges) by the ``xlsxplan inputs``
tests: 20,000 names and 40,000 rules hung (800 million rule tests when each input looked through every rule; 3
million at 1x, 50 million at 4x); 10x (400,000 areas) is refused before the workbook is read."""


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


def sequence_elements(n: int = 120_000) -> bytes:
    """A 4.9 kB workbook whose one formula hands TOKS_CEILING ``n`` bandwidths made by SEQUENCE, each outside the
    usual range and each another value: they reach the function element by element, a warning line each, each
    looked up in the lines before it (120,000 lines and 107 s for recalc at n = 120,000)."""
    import io

    import openpyxl

    wb = openpyxl.Workbook()
    wb.active["A1"] = f"=SUM(TOKS_CEILING(70,2,1000,51+SEQUENCE({n})/1000))"
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def names_and_rules(names: int = 20_000, ranges: int = 40_000, span: int = 1) -> bytes:
    """A workbook of ``names`` inputs (defined names of cells holding values, one a row under a Unit heading) and
    ``ranges`` data-validation ranges, in 40,000 rules at most (a workbook may hold 50,000), none of them on an input
    (each ``span`` cells of column D, from row ``j`` for range ``j``, beside the inputs): more than 90 s for
    ``xlsxplan inputs`` at 20,000 names and 40,000 rules, when each input looked through every rule, and up every
    row above it for its unit; with ``span`` over 64, each input still looked through every range."""
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
        + " ".join(
            f"D{j}" if span == 1 else f"D{j}:D{j + span - 1}"
            for j in range(i * each + 1, min((i + 1) * each, ranges) + 1)
        )
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


def claimed_spans(rows: int = 1_000) -> bytes:
    """A workbook of two formula cells: a data table in A1 over ``A1:XFD<rows>`` and an array formula in B2 over
    ``B2:XFD<rows + 1>`` whose ``ref`` is written twice, a decoy ``x:ref="B2"`` first. Each fills ``16,384 x rows``
    cells, which xlsxplan lists one by one (and writes on save): 4.5 GB and 100 s at 1,000 rows, then "ran out of
    memory", when the scan before parsing counted neither (a data table not at all, the array formula by its
    decoy)."""
    from tests.helpers.hostile import plain_xlsx, with_parts

    sheet = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
        f'<row r="1"><c r="A1"><f t="dataTable" ref="A1:XFD{rows}" dt2D="0" dtr="0" r1="C1"/><v>1</v></c></row>'
        f'<row r="2"><c r="B2"><f t="array" xmlns:x="urn:decoy" x:ref="B2" ref="B2:XFD{rows + 1}">1</f><v>1</v></c>'
        "</row></sheetData></worksheet>"
    )
    return with_parts({"xl/worksheets/sheet1.xml": sheet.encode()}, plain_xlsx({"A1": 1}))


def validate_rows(n: int = 20_000) -> str:
    """A measurements file (CSV text) of ``n`` one-request decode rows, each from a publication of its own: the shape
    of a user's file that made ``validate --data`` build each row's P10-P90 range from every other row's residual."""
    from xlsxplan.calibration import measurements

    columns = (*measurements.COLUMNS, "publication")
    values = {"kind": "serve", "name": "r", "model": "Llama-3.1-8B", "gpu": "H100-SXM", "precision": "fp8"}
    values |= {"input_len": "", "output_len": 128, "concurrency": 1, "metric": "decode_tokens_per_sec", "source": "s"}
    lines = [",".join(columns)]
    for i in range(n):
        row = {**values, "value": 100 + i % 50, "publication": f"p{i}"}
        lines.append(",".join(str(row.get(c, "")) for c in columns))
    return "\n".join(lines) + "\n"


def count_inputs_work(monkeypatch, work: dict[str, int], guard: int = 0) -> None:
    """Count the rules tested one by one (Validation.covers), the lookups, the entries of each sheet's index and the
    nodes (or, in a list looked through in order, the ranges) each lookup visits; past ``guard`` ranges visited, stop
    (a quadratic lookup must fail the test, not take the machine's time)."""
    from xlsxplan.headless.layout import Layout, Validation

    covers, lookup = Validation.covers, Layout.validation_at

    def counted_covers(self, row, col):
        work["covers"] += 1
        return covers(self, row, col)

    def counted_lookup(self, title, row, col):
        work["lookups"] += 1
        found = lookup(self, title, row, col)
        index = self._rule_index[title]
        if isinstance(index, tuple):  # cells indexed one by one, the larger ranges looked through in order
            cells, large = index
            work["indexed"] = len(cells) + len(large)
            work["visited"] += len(large)
        else:
            work["indexed"], work["visited"] = index.entries, index.visited
        if guard and work["visited"] > guard:
            raise RuntimeError(f"{work['visited']:,} ranges visited for {work['lookups']:,} lookups")
        return found

    monkeypatch.setattr(Validation, "covers", counted_covers)
    monkeypatch.setattr(Layout, "validation_at", counted_lookup)
