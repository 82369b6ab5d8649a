"""The formula cells of a worksheet part, read from its XML, and the copy of the part the engine is given.

Headless recalculation needs to know, for every worksheet, which cells hold formulas (their text as written, and
whether each is a plain formula, part of a shared formula, an array formula over a range, or a data table) and which
hold typed error values: the values of those cells are what :mod:`.patch` caches, and the text is what checks,
messages and the engine read. :func:`scan_sheet` finds them in one pass of regular expressions over the part's
``<sheetData>`` (safe: XML text never holds a literal ``<``), and :func:`engine_copy` writes the same part with
each formula's text replaced as the engine should see it (see :mod:`.workbook`); the user's file keeps its own.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import WorkbookError
from .package import range_bounds, split_ref
from .patch import decode_part

__all__ = ["Formula", "SheetIndex", "scan_sheet", "engine_copy"]

_PREFIX = r"(?:[A-Za-z_][\w.\-]*:)?"
_ATTR = re.compile(r"""([^\s=/>]+)\s*=\s*(?:"([^"]*)"|'([^']*)')""")


@dataclass
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


@dataclass
class SheetIndex:
    """The formula cells and typed error values of one worksheet part."""

    formulas: dict[tuple[int, int], Formula] = field(default_factory=dict)
    errors: list[tuple[int, int]] = field(default_factory=list)  # cells holding a typed error value (t="e")

    @property
    def arrays(self) -> list[Formula]:
        """The array formulas and data tables, each with its range."""
        return [f for f in self.formulas.values() if f.area is not None and f.kind in ("array", "dataTable")]


def _attrs(text: str) -> dict[str, str]:
    return {
        m.group(1).rpartition(":")[2]
        if ":" in m.group(1) and not m.group(1).startswith("xml")
        else m.group(1): m.group(2) if m.group(2) is not None else m.group(3)
        for m in _ATTR.finditer(text)
    }


class _Cells:
    """Cells of ``<sheetData>`` in order, each with the position it stands at (given by ``r`` or implied by the
    cells and rows before it)."""

    def __init__(self, text: str) -> None:
        m = re.search(rf"<({_PREFIX})sheetData\b[^>]*?(/?)>", text)
        if not m:
            raise WorkbookError("a worksheet part has no <sheetData>")
        self.prefix = p = m.group(1)
        if m.group(2):
            self.start = self.end = m.end()
        else:
            close = text.find(f"</{p}sheetData>", m.end())
            if close < 0:
                raise WorkbookError("a worksheet part has an unterminated <sheetData>")
            self.start, self.end = m.end(), close
        self.text = text
        attr = r"(?:\s+[^\s=/>]+\s*=\s*(?:\"[^\"]*\"|'[^']*'))*"
        self.row_re = re.compile(rf"<{p}row\b({attr})\s*(?:/>|>(.*?)</{p}row>)", re.S)
        self.cell_re = re.compile(rf"<{p}c\b({attr})\s*(?:/>|>(.*?)</{p}c>)", re.S)
        self.f_re = re.compile(rf"<{p}f\b({attr})\s*(?:/>|>(.*?)</{p}f>)", re.S)

    def each(self) -> list[tuple[int, int, re.Match[str], int]]:
        """(row, col, the cell's match, offset of its row's body in the text) for every cell that holds a formula
        or a typed error value."""
        text, out = self.text, []
        row = 0
        for rm in self.row_re.finditer(text, self.start, self.end):
            r_text = _attrs(rm.group(1)).get("r")
            row = int(r_text) if r_text and r_text.isdigit() else row + 1
            body = rm.group(2)
            if not body or ("<" + self.prefix + "f" not in body and "e" not in body):
                continue
            col = 0
            base = rm.start(2)
            for cm in self.cell_re.finditer(text, base, rm.end(2)):
                ref = _attrs(cm.group(1)).get("r")
                if ref:
                    try:
                        row_of, col = split_ref(ref)
                    except WorkbookError:
                        raise WorkbookError(f"a cell has the bad reference {ref!r}") from None
                    if row_of != row:
                        row = row_of
                else:
                    col += 1
                inner = cm.group(2) or ""
                if "<" + self.prefix + "f" in inner or _attrs(cm.group(1)).get("t") == "e":
                    out.append((row, col, cm, base))
        return out


def _text(raw: str | None) -> str:
    return html.unescape(raw) if raw and "&" in raw else (raw or "")


def scan_sheet(xml: bytes) -> SheetIndex:
    """The formula cells and typed error values of a worksheet part."""
    cells = _Cells(decode_part(xml, "a worksheet part")[0])
    index = SheetIndex()
    for row, col, cm, _ in cells.each():
        attrs = _attrs(cm.group(1))
        inner = cm.group(2) or ""
        fm = cells.f_re.search(inner)
        if fm is None:
            if attrs.get("t") == "e":
                index.errors.append((row, col))
            continue
        fattrs = _attrs(fm.group(1))
        kind = fattrs.get("t", "normal")
        kind = "" if kind == "normal" else kind
        area = None
        ref = fattrs.get("ref")
        if kind in ("array", "dataTable", "shared") and ref:
            try:
                area = range_bounds(ref.split(" ")[0])
            except WorkbookError:
                raise WorkbookError(f"the formula in {ref} has a bad range") from None
        text = _text(fm.group(2)) if fm.group(2) is not None else None
        if kind == "shared" and not text:
            text = None
        elif kind != "dataTable":
            text = text or ""
        index.formulas[(row, col)] = Formula(row, col, text, kind, area, fattrs.get("si"))
    return index


def engine_copy(xml: bytes, rewrite: Callable[[int, int, Formula], str | None], index: SheetIndex) -> bytes:
    """The worksheet part with each formula's text replaced by ``rewrite(row, col, formula)`` (None: unchanged),
    and data tables' formulas removed (the engine does not compute them; their cells keep their cached values)."""
    text, encoding = decode_part(xml, "a worksheet part")
    cells = _Cells(text)
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement) in the text
    for row, col, cm, _ in cells.each():
        formula = index.formulas.get((row, col))
        if formula is None:
            continue
        inner_start = cm.start(2)
        fm = cells.f_re.search(text, inner_start, cm.end(2))
        if fm is None:
            continue
        if formula.kind == "dataTable":
            edits.append((fm.start(), fm.end(), ""))
            continue
        new = rewrite(row, col, formula)
        if new is None:
            continue
        if fm.group(2) is None:  # <f .../>: the cells of a shared formula after its first hold no text
            continue
        edits.append((fm.start(2), fm.end(2), html.escape(new, quote=False)))
    if not edits:
        return xml
    out, last = [], 0
    for start, end, replacement in edits:
        out += [text[last:start], replacement]
        last = end
    out.append(text[last:])
    return "".join(out).encode(encoding)
