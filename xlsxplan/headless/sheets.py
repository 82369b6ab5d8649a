"""The formula cells of a worksheet part, read from its XML, and the copy of the part the engine is given.

Headless recalculation needs to know, for every worksheet, which cells hold formulas (their text as written, and
whether each is a plain formula, part of a shared formula, an array formula over a range, or a data table) and which
hold typed error values: the values of those cells are what :mod:`.patch` caches, and the text is what checks,
messages and the engine read. :func:`scan_sheet` finds them with regular expressions over the part's
``<sheetData>`` (safe: XML text never holds a literal ``<``), and :func:`engine_copy` writes the same part with
each formula's text replaced as the engine should see it (see :mod:`.workbook`); the user's file keeps its own.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..errors import WorkbookError
from .package import MAX_COL, MAX_ROW, col_index, range_bounds, split_ref
from .patch import decode_part

__all__ = ["Formula", "SheetIndex", "scan_sheet", "engine_copy", "release", "formula_kind", "SPANNING"]

_PREFIX = r"(?:[A-Za-z_][\w.\-]*:)?"
_ATTR = re.compile(r"""([^\s=/>]+)\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_R_ATTR = re.compile(r"""(?:^|\s)r\s*=\s*["']([^"']*)["']""")
_T_ERROR = re.compile(r"""(?:^|\s)t\s*=\s*["']e["']""")


@dataclass(slots=True)
class Formula:
    """A formula cell: where it is, its text as the file writes it (without ``=``; None for the cells of a shared
    formula other than the first, which hold no text), and its kind: "" (a plain formula), "shared", "array" (a
    formula over the range ``area``, the first cell holding it) or "dataTable"."""

    row: int
    col: int
    text: str | None
    kind: str = ""
    area: tuple[int, int, int, int] | None = None
    shared: str | None = None  # the shared formula's index (si)
    span: tuple[int, int] = (0, 0)  # where the text (or, for a data table, the whole <f>) is in the part


@dataclass
class SheetIndex:
    """The formula cells and typed error values of one worksheet part."""

    formulas: dict[tuple[int, int], Formula] = field(default_factory=dict)
    errors: list[tuple[int, int]] = field(default_factory=list)  # cells holding a typed error value (t="e")
    source: str | None = None  # the part's text, kept for engine_copy
    encoding: str = "utf-8"

    @property
    def arrays(self) -> list[Formula]:
        """The array formulas and data tables, each with its range."""
        return [f for f in self.formulas.values() if f.area is not None and f.kind in SPANNING]


def _attrs(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2) if m.group(2) is not None else m.group(3) for m in _ATTR.finditer(text)}


SPANNING = ("array", "dataTable")
"""The kinds of formula whose ``ref`` names cells they fill: xlsxplan lists each of those cells as a formula cell
and writes a value into it (:class:`.workbook.Workbook`), so the cells they span are counted before any is listed."""


def formula_kind(attrs: str) -> tuple[str, str | None]:
    """What an ``<f>`` element is, from the text of its attributes: its kind (``t``: ``""`` for a plain formula,
    ``"shared"``, ``"array"``, ``"dataTable"``) and the range its ``ref`` names (its first area, None when it names
    none). A repeated attribute counts with its last value, as :func:`scan_sheet` reads it; the checks before
    parsing (:mod:`.untrusted`) read the same, so that what they count is what the index lists."""
    return _kind_and_ref(_attrs(attrs))


def _kind_and_ref(fattrs: dict[str, str]) -> tuple[str, str | None]:
    """:func:`formula_kind` of attributes already read."""
    kind = fattrs.get("t", "")
    ref = fattrs.get("ref")
    return ("" if kind == "normal" else kind), (ref.split(" ")[0] if ref else None)


def _data(text: str) -> tuple[str, int, int]:
    """The namespace prefix of ``<sheetData>`` and where its content starts and ends."""
    m = re.search(rf"<({_PREFIX})sheetData\b[^>]*?(/?)>", text)
    if not m:
        raise WorkbookError("a worksheet part has no <sheetData>")
    p = m.group(1)
    if m.group(2):
        return p, m.end(), m.end()
    close = text.find(f"</{p}sheetData>", m.end())
    if close < 0:
        raise WorkbookError("a worksheet part has an unterminated <sheetData>")
    return p, m.end(), close


_CELL_REF = re.compile(r"\$?([A-Za-z]{1,3})\$?(\d{1,7})")
_COLUMNS: dict[str, int] = {}


def _position(ref: str) -> tuple[int, int]:
    letters = ref.rstrip("0123456789")
    col = _COLUMNS.get(letters)  # the column letters met before, as written (a reference without "$")
    digits = ref[len(letters) :]
    if col is not None and digits.isascii() and digits.isdigit() and digits[0] != "0" and int(digits) <= MAX_ROW:
        return int(digits), col
    m = _CELL_REF.fullmatch(ref)
    if m is not None:
        letters, row = m.groups()
        col = _COLUMNS.get(letters)
        if col is None:
            col = col_index(letters)
            if 1 <= col <= MAX_COL:
                _COLUMNS[letters] = col
        if 1 <= col <= MAX_COL and 1 <= int(row) <= MAX_ROW:
            return int(row), col
    try:
        return split_ref(ref)
    except WorkbookError:
        raise WorkbookError(f"a cell has the bad reference {ref!r}") from None


def scan_sheet(xml: bytes) -> SheetIndex:
    """The formula cells and typed error values of a worksheet part."""
    text, encoding = decode_part(xml, "a worksheet part")
    p, start, end = _data(text)
    index = SheetIndex(source=text, encoding=encoding)
    # a cell's reference written first, as every writer writes it, is read by the pattern itself (groups 1 and 2);
    # otherwise it is among the attributes (group 3); groups 4 to 6 are the <f>, its attributes and its text
    formula_re = re.compile(
        rf'<{p}c\b(?:\s+r="([A-Z]{{1,3}})([1-9][0-9]{{0,6}})")?([^>]*)>\s*(<{p}f\b([^>]*?)\s*(?:/>|>([^<]*)</{p}f>))'
    )
    columns = _COLUMNS
    for m in formula_re.finditer(text, start, end):
        if m.group(3).endswith("/"):  # an empty cell, the <f> after it another element's
            continue
        letters = m.group(1)
        if letters is not None:
            row, col = int(m.group(2)), columns.get(letters)
            if col is None or row > MAX_ROW:
                row, col = _position(letters + m.group(2))
        else:
            found = _R_ATTR.search(m.group(3))
            if found is None:
                return _scan_without_references(text, p, start, end, SheetIndex(source=text, encoding=encoding))
            row, col = _position(found.group(1))
        _add(index, row, col, m, 4)
    if '"e"' in text or "'e'" in text:
        error_re = re.compile(rf"<{p}c\b([^>]*\bt\s*=\s*[\"']e[\"'][^>]*)>")
        for m in error_re.finditer(text, start, end):
            if _T_ERROR.search(m.group(1).rstrip("/")):
                ref = _R_ATTR.search(m.group(1))
                if ref is None:
                    return _scan_without_references(text, p, start, end, SheetIndex(source=text, encoding=encoding))
                position = _position(ref.group(1))
                if position not in index.formulas:
                    index.errors.append(position)
    return index


def _add(index: SheetIndex, row: int, col: int, m: re.Match[str], g: int = 2) -> None:
    """Record the formula cell that ``m`` (a cell and its ``<f>``: groups ``g`` the element, ``g + 1`` its
    attributes, ``g + 2`` its text) matched at (row, col)."""
    if not m.group(g + 1) and m.group(g + 2):  # <f>text</f>: a plain formula, as most are
        raw = m.group(g + 2)
        index.formulas[(row, col)] = Formula(
            row, col, html.unescape(raw) if "&" in raw else raw, "", None, None, m.span(g + 2)
        )
        return
    fattrs = _attrs(m.group(g + 1)) if m.group(g + 1) else {}
    kind, ref = _kind_and_ref(fattrs)
    area = None
    if kind in ("array", "dataTable", "shared") and ref:
        try:
            area = range_bounds(ref)
        except WorkbookError:
            raise WorkbookError(f"the formula in {ref} has a bad range") from None
    raw = m.group(g + 2)
    text: str | None = html.unescape(raw) if raw and "&" in raw else raw
    if kind == "dataTable":
        span = m.span(g)
        text = None
    elif raw is None:
        span = (m.end(g), m.end(g))
        text = None if kind == "shared" else ""
    else:
        span = m.span(g + 2)
        if kind == "shared" and not text:
            text = None
    index.formulas[(row, col)] = Formula(row, col, text, kind, area, fattrs.get("si"), span)


def _scan_without_references(text: str, p: str, start: int, end: int, index: SheetIndex) -> SheetIndex:
    """:func:`scan_sheet` for a part whose cells (some of them) give no ``r``: each one's position is implied by the
    rows and cells before it, so every row and cell is walked."""
    attr = r"(?:\s+[^\s=/>]+\s*=\s*(?:\"[^\"]*\"|'[^']*'))*"
    row_re = re.compile(rf"<{p}row\b({attr})\s*(?:/>|>(.*?)</{p}row>)", re.S)
    cell_re = re.compile(rf"<{p}c\b({attr})\s*(?:/>|>(.*?)</{p}c>)", re.S)
    f_re = re.compile(rf"<{p}c\b({attr})\s*>\s*(<{p}f\b({attr})\s*(?:/>|>([^<]*)</{p}f>))")
    row = 0
    for rm in row_re.finditer(text, start, end):
        r_text = _attrs(rm.group(1)).get("r")
        row = int(r_text) if r_text and r_text.isdigit() else row + 1
        col = 0
        for cm in cell_re.finditer(text, rm.start(2), rm.end(2)) if rm.group(2) else ():
            ref = _R_ATTR.search(cm.group(1))
            if ref:
                row, col = _position(ref.group(1))
            else:
                col += 1
            fm = f_re.match(text, cm.start())
            if fm is not None:
                _add(index, row, col, fm)
            elif _T_ERROR.search(cm.group(1)):
                index.errors.append((row, col))
    return index


def engine_copy(
    index: SheetIndex,
    texts: Mapping[tuple[int, int], str],
    xml: bytes,
    edits: Sequence[tuple[tuple[int, int], str]] = (),
) -> bytes:
    """The worksheet part ``xml`` (scanned as ``index``) with the text of each formula in ``texts`` ({(row, col):
    new text}) replaced, data tables' formulas removed (the engine does not compute them; their cells keep
    their cached values), and ``edits`` ((start, end) of the part's text, its replacement) made."""
    escape = html.escape
    edits = [*edits, *((f.span, escape(texts[rc], quote=False)) for rc, f in index.formulas.items() if rc in texts)]
    edits += [(f.span, "") for f in index.formulas.values() if f.kind == "dataTable"]
    if index.source is not None:
        edits += _array_range_values(index, index.source)
    if not edits or index.source is None:
        return xml
    text = index.source
    out, last = [], 0
    for (start, end), replacement in sorted(edits):
        out.append(text[last:start])
        out.append(replacement)
        last = end
    out.append(text[last:])
    return "".join(out).encode(index.encoding)


def _array_range_values(index: SheetIndex, text: str) -> list[tuple[tuple[int, int], str]]:
    """Edits that empty the cells of each array formula's range but its first: Excel saves the array's values in
    every cell of the range (legacy and dynamic arrays alike), and the engine would take them for cells in the way
    (``#SPILL!`` at the first cell, the saved values kept in the others). Each such cell becomes ``<c r="..."/>``."""
    areas = [f.area for f in index.formulas.values() if f.kind == "array" and f.area is not None]
    areas = [a for a in areas if (a[0], a[1]) != (a[2], a[3])]
    if not areas:
        return []
    p, start, end = _data(text)
    top, bottom = min(a[0] for a in areas), max(a[2] for a in areas)
    cell_re = re.compile(rf"<{p}c\b([^>]*?)(?:/>|>.*?</{p}c>)", re.S)
    edits = []
    for m in cell_re.finditer(text, start, end):
        ref = _R_ATTR.search(m.group(1))
        if ref is None:
            continue
        row, col = _position(ref.group(1))
        if row < top or row > bottom or (row, col) in index.formulas:
            continue
        if any(r1 <= row <= r2 and c1 <= col <= c2 for r1, c1, r2, c2 in areas):
            edits.append((m.span(), f'<{p}c r="{ref.group(1)}"/>'))
    return edits


def release(index: SheetIndex) -> None:
    """Drop the part's text that :func:`engine_copy` needed."""
    index.source = None
