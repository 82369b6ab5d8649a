"""What a workbook says about its cells besides their values, read without changing anything: each cell's number
format (from the styles part and the ``s`` of its cell, row or column) and each sheet's data validation.

:class:`Layout` reads a part the first time it is asked about it and keeps what it found; the parts are the
package's own, already checked by :mod:`.untrusted`. Sheet XML is read with regular expressions over its elements
(safe: XML text never holds a literal ``<``), the styles part with defusedxml.
"""

from __future__ import annotations

import array
import bisect
import heapq
import html
import re
from dataclasses import dataclass

from ..errors import WorkbookError
from .numfmt import BUILTIN_FORMATS
from .package import Package, parse_xml, range_bounds, resolve_target
from .patch import decode_part

__all__ = ["Layout", "Validation"]

_P = r"(?:[A-Za-z_][\w.\-]*:)?"
_ATTR = re.compile(r"""([^\s=/>]+)\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_CELL = re.compile(rf"<{_P}c\b([^>]*)>")
_ROW = re.compile(rf"<{_P}row\b([^>]*)>")
_COL = re.compile(rf"<{_P}col\b([^>]*)>")
_VALIDATION = re.compile(rf"<({_P})dataValidation\b([^>]*?)(?:/>|>(.*?)</\1dataValidation>)", re.S)
_FORMULA = re.compile(rf"<{_P}(formula[12])\b[^>]*>(.*?)</{_P}formula[12]>", re.S)
_INNER_F = re.compile(rf"<{_P}f\b[^>]*>(.*?)</{_P}f>", re.S)
_SQREF = re.compile(rf"<{_P}sqref\b[^>]*>(.*?)</{_P}sqref>", re.S)
_REF = re.compile(r"^\$?([A-Za-z]{1,3})\$?(\d{1,7})$")


def _attrs(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2) if m.group(2) is not None else m.group(3) for m in _ATTR.finditer(text)}


def _position(ref: str) -> tuple[int, int] | None:
    m = _REF.match(ref)
    if m is None:
        return None
    col = 0
    for ch in m.group(1).upper():
        col = col * 26 + ord(ch) - 64
    return int(m.group(2)), col


class _FirstRule:
    """Which rule comes first at a cell, among rectangles each of one rule: a segment tree over the rows the
    rectangles start and end at, each node holding, for the rectangles whose rows it stands for, the first rule
    across the columns (a step function: where it changes, and the rule there).

    Built once for a sheet's data validations, from ``n`` rectangles in about ``n log n`` steps and entries (a
    rectangle is held by at most two nodes a level); a lookup visits one node a level and bisects its steps, so
    that looking up every input of a sheet costs the inputs times ``log n``, whatever the sizes of the ranges
    (cells are never listed one by one) and however many ranges lie beside the inputs without covering them.
    ``visited`` and ``entries`` count the nodes looked up and the steps held (the tests count work with them)."""

    def __init__(self, rects: list[tuple[int, int, int, int, int]]) -> None:
        # rects: (rule, first row, first column, last row, last column)
        self._rows = sorted({r for _, r1, _, r2, _ in rects for r in (r1, r2 + 1)})
        at = {r: k for k, r in enumerate(self._rows)}
        n = self._leaves = max(len(self._rows) - 1, 1)
        held: dict[int, list[int]] = {}
        for j, (_, r1, _, r2, _) in enumerate(rects):
            lo, hi = at[r1] + n, at[r2 + 1] + n
            while lo < hi:
                if lo & 1:
                    held.setdefault(lo, []).append(j)
                    lo += 1
                if hi & 1:
                    hi -= 1
                    held.setdefault(hi, []).append(j)
                lo >>= 1
                hi >>= 1
        self._nodes = {node: _steps(rects, js) for node, js in held.items()}
        self.entries = sum(len(cols) for cols, _ in self._nodes.values())
        self.visited = 0

    def first(self, row: int, col: int) -> int | None:
        """The smallest rule among the rectangles holding (row, col), or None."""
        k = bisect.bisect_right(self._rows, row) - 1
        if k < 0 or k >= len(self._rows) - 1:
            return None
        best = -1
        node = k + self._leaves
        while node >= 1:
            steps = self._nodes.get(node)
            self.visited += 1
            if steps is not None:
                cols, rules = steps
                t = bisect.bisect_right(cols, col) - 1
                if t >= 0 and rules[t] >= 0 and (best < 0 or rules[t] < best):
                    best = rules[t]
            node >>= 1
        return None if best < 0 else best


def _steps(rects: list[tuple[int, int, int, int, int]], held: list[int]) -> tuple[array.array, array.array]:
    """The first rule across the columns, among the rectangles ``held`` (indices into ``rects``): the columns where
    it changes and the rule from each on (-1 for none); one sweep over their column ends."""
    events: dict[int, list[int]] = {}
    for j in held:
        rule, _, c1, _, c2 = rects[j]
        events.setdefault(c1, []).append(rule)
        events.setdefault(c2 + 1, []).append(~rule)  # an end
    active: dict[int, int] = {}
    heap: list[int] = []
    cols, rules = array.array("q"), array.array("q")
    for col in sorted(events):
        for e in events[col]:
            if e >= 0:
                active[e] = active.get(e, 0) + 1
                heapq.heappush(heap, e)
            else:
                active[~e] -= 1
        while heap and not active.get(heap[0]):
            heapq.heappop(heap)
        now = heap[0] if heap else -1
        if not rules or rules[-1] != now:
            cols.append(col)
            rules.append(now)
    return cols, rules


@dataclass(frozen=True)
class Validation:
    """One data validation rule of a sheet (ECMA-376 Part 1 §18.3.1.32): the ranges it covers, its type
    (``list``, ``whole``, ``decimal``, ``date``, ``time``, ``textLength``, ``custom``; ``""`` for any value), its
    operator (``between`` unless given), its formulas as written (without ``=``), the message Excel shows when a
    value is refused, and whether an empty cell is allowed."""

    ranges: tuple[tuple[int, int, int, int], ...]
    type: str
    operator: str
    formula1: str
    formula2: str
    error: str
    allow_blank: bool
    refuses: bool = False
    """Whether Excel refuses a value the rule does not allow (``showErrorMessage`` on, ``errorStyle`` "stop", the
    default); else it shows a warning or nothing and keeps the value."""

    def covers(self, row: int, col: int) -> bool:
        return any(r1 <= row <= r2 and c1 <= col <= c2 for r1, c1, r2, c2 in self.ranges)


class _SheetStyles:
    def __init__(self, text: str) -> None:
        self.cells: dict[tuple[int, int], str] = {}
        self.rows: dict[int, str] = {}
        self.cols: list[tuple[int, int, str]] = []
        for m in _ROW.finditer(text):
            a = _attrs(m.group(1))
            if a.get("customFormat") in ("1", "true") and a.get("s", "").isdigit() and a.get("r", "").isdigit():
                self.rows[int(a["r"])] = a["s"]
        for m in _CELL.finditer(text):
            a = _attrs(m.group(1).rstrip("/"))
            style, ref = a.get("s"), a.get("r")
            if style and ref:
                pos = _position(ref)
                if pos is not None:
                    self.cells[pos] = style
        for m in _COL.finditer(text):
            a = _attrs(m.group(1).rstrip("/"))
            if "style" in a and a.get("min", "").isdigit() and a.get("max", "").isdigit():
                self.cols.append((int(a["min"]), int(a["max"]), a["style"]))

    def style(self, row: int, col: int) -> str | None:
        found = self.cells.get((row, col))
        if found is not None:
            return found
        if row in self.rows:
            return self.rows[row]
        return next((s for lo, hi, s in self.cols if lo <= col <= hi), None)


class Layout:
    """Number formats and data validation of a package's worksheets, read on first use."""

    def __init__(self, pkg: Package) -> None:
        self._pkg = pkg
        self._formats: list[str] | None = None
        self._sheets: dict[str, _SheetStyles] = {}
        self._validations: dict[str, list[Validation]] = {}
        self._rule_index: dict[str, _FirstRule] = {}
        self._date1904: bool | None = None

    def _text(self, title: str) -> str:
        part = self._pkg.worksheet(title).part
        return decode_part(self._pkg.read(part), part)[0]

    @property
    def date1904(self) -> bool:
        """Whether the workbook counts dates from 1904 (``<workbookPr date1904="1"/>``)."""
        if self._date1904 is None:
            text = decode_part(self._pkg.read(self._pkg.workbook_part), self._pkg.workbook_part)[0]
            m = re.search(rf"<{_P}workbookPr\b([^>]*)>", text)
            flag = _attrs(m.group(1).rstrip("/")).get("date1904") if m else None
            self._date1904 = flag in ("1", "true")
        return self._date1904

    def _cell_formats(self) -> list[str]:
        """The number format of each cell format (``<cellXfs>``), in order."""
        if self._formats is None:
            codes = dict(BUILTIN_FORMATS)
            formats: list[str] = []
            rel = next(
                (r for r in self._pkg.relationships(self._pkg.workbook_part) if r.type.endswith("/styles")), None
            )
            part = ""
            if rel is not None and not rel.external:
                part = resolve_target(self._pkg.workbook_part, rel.target)
            if part and self._pkg.has(part):
                root = parse_xml(self._pkg.read(part), part)
                for el in root:
                    tag = el.tag.rsplit("}", 1)[-1]
                    if tag == "numFmts":
                        for fmt in el:
                            number = fmt.get("numFmtId", "")
                            if number.isdigit():
                                codes[int(number)] = fmt.get("formatCode", "General")
                for el in root:
                    if el.tag.rsplit("}", 1)[-1] == "cellXfs":
                        for xf in el:
                            number = xf.get("numFmtId", "0")
                            formats.append(codes.get(int(number), "General") if number.isdigit() else "General")
            self._formats = formats
        return self._formats

    def number_format(self, title: str, row: int, col: int) -> str:
        """The number format code of a cell (``General`` when it has none)."""
        if title not in self._sheets:
            self._sheets[title] = _SheetStyles(self._text(title))
        style = self._sheets[title].style(row, col)
        formats = self._cell_formats()
        index = int(style) if style and style.isdigit() else 0
        return formats[index] if index < len(formats) else "General"

    def validations(self, title: str) -> list[Validation]:
        """The data validation rules of a worksheet, in the order the file writes them (those of the x14
        extension, which older Excel writes for lists on other sheets, included)."""
        if title not in self._validations:
            found = []
            for m in _VALIDATION.finditer(self._text(title)):
                a = _attrs(m.group(2))
                body = m.group(3) or ""
                formulas = {"formula1": "", "formula2": ""}
                for f in _FORMULA.finditer(body):
                    inner = _INNER_F.search(f.group(2))
                    formulas[f.group(1)] = html.unescape((inner.group(1) if inner else f.group(2)).strip())
                sqref = a.get("sqref") or ""
                if not sqref:
                    s = _SQREF.search(body)
                    sqref = html.unescape(s.group(1)) if s else ""
                ranges = []
                for piece in sqref.split():
                    try:
                        ranges.append(range_bounds(piece.replace("$", "")))
                    except WorkbookError:  # a range Excel would not write: the rule covers nothing there
                        continue
                found.append(
                    Validation(
                        tuple(ranges),
                        a.get("type", ""),
                        a.get("operator", "between"),
                        formulas["formula1"].lstrip("="),
                        formulas["formula2"].lstrip("="),
                        html.unescape(a.get("error", "")),
                        a.get("allowBlank") in ("1", "true"),
                        a.get("showErrorMessage") in ("1", "true") and a.get("errorStyle", "stop") == "stop",
                    )
                )
            self._validations[title] = found
        return self._validations[title]

    def validation_at(self, title: str, row: int, col: int) -> Validation | None:
        """The first rule of :meth:`validations` that covers a cell, or None; from an index of the sheet's ranges
        built once (:class:`_FirstRule`), so that looking up every input of a sheet of many rules and ranges takes
        about ``log`` of the ranges each, never a scan of the rules nor a list of their cells."""
        if title not in self._rule_index:
            rects = [(i, *bounds) for i, rule in enumerate(self.validations(title)) for bounds in rule.ranges]
            self._rule_index[title] = _FirstRule(rects)
        found = self._rule_index[title].first(row, col)
        return None if found is None else self._validations[title][found]
