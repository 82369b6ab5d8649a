"""Writing recalculated values into the user's own package: cached values, typed inputs and xlsxplan's notes.

Every part of the original is copied byte for byte except what recalculation changes, edited as text (see
:mod:`.package` for what is read, and why openpyxl never saves the workbook):

* in each sheet's ``<sheetData>``, the cached value (``<v>`` and the ``t`` type) of every formula cell and of
  the cells of an array formula's range, and the value of the input cells that were set;
* the sheet's legacy comments part and its VML drawing, to keep one note per error cell authored ``xlsxplan``
  (notes by anyone else are never touched);
* the relationships and content types that a new comments part needs.

Sheet XML is edited with regular expressions over its elements, which is safe because XML text can never contain a
literal ``<``.
"""

from __future__ import annotations

import html
import io
import math
import posixpath
import re
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..errors import CellError, WorkbookError
from .package import (
    COMMENT_AUTHOR,
    CT_COMMENTS,
    CT_VML,
    DOC_REL,
    MAIN_NS,
    PKG_REL,
    REL_COMMENTS,
    REL_VML,
    Package,
    SheetPart,
    col_letter,
    range_bounds,
    rels_part,
    resolve_target,
    split_ref,
)

__all__ = [
    "Patch",
    "patch_sheet",
    "CommentEdit",
    "QuotePrefixStyles",
    "write_package",
    "number_text",
    "escape_text",
    "write_notes",
    "decode_part",
]


class Patch(NamedTuple):
    """A value to write into one cell.

    ``result`` is a formula's computed value: the cell keeps its ``<f>`` and gets the value as its cache (text as
    ``t="str"``). Otherwise the value is a constant typed into the cell (text as an inline string, never a
    formula). A named tuple: a recalculation makes one per formula cell, and a tuple is made at a third of the cost
    of a frozen dataclass.
    """

    value: Any
    result: bool = True
    quote_prefix: bool = False  # give the cell a format with quotePrefix="1", so that editing it keeps it text


_ATTR_RE = re.compile(r"""([^\s=/>]+)\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_PREFIX = r"(?:[A-Za-z_][\w.\-]*:)?"
_ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _attrs(text: str) -> list[tuple[str, str]]:
    """Attributes as (name, value as written, still XML-escaped)."""
    return [
        (m.group(1), m.group(2) if m.group(2) is not None else m.group(3).replace('"', "&quot;"))
        for m in _ATTR_RE.finditer(text)
    ]


def _attr_text(attrs: Iterable[tuple[str, str]]) -> str:
    return "".join(f' {k}="{v}"' for k, v in attrs)


def escape_text(text: str) -> str:
    """Text for XML content: markup escaped, characters XML 1.0 cannot hold written as OOXML's ``_xHHHH_``."""
    text = text.replace("\r\n", "\n")
    text = _ILLEGAL_XML.sub(lambda m: f"_x{ord(m.group(0)):04X}_", text)
    text = text.replace("\r", "_x000D_")
    return html.escape(text, quote=False)


def number_text(x: float) -> str:
    """A number as Excel stores it in ``<v>``: integral values without ``.0``, up to 17 significant digits."""
    if type(x) is float and x and not x.is_integer():  # a calculated value, most often: one test
        return repr(x).upper()
    if isinstance(x, bool):
        return "1" if x else "0"
    if isinstance(x, int):
        return str(x)
    if x == 0:
        return "0"
    if x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return repr(float(x)).upper()


def _value_xml(p: str, patch: Patch) -> tuple[str | None, str]:
    """(``t`` attribute or None, child elements) for a value."""
    value = patch.value
    if type(value) is float and math.isfinite(value):  # a calculated number, most often: one test
        return None, f"<{p}v>{number_text(value)}</{p}v>"
    if isinstance(value, float) and not math.isfinite(value):
        value = CellError("#NUM!")
    if value is None:
        return None, ""
    if isinstance(value, CellError):
        return "e", f"<{p}v>{escape_text(value.code)}</{p}v>"
    if isinstance(value, bool):
        return "b", f"<{p}v>{1 if value else 0}</{p}v>"
    if isinstance(value, (int, float)):
        return None, f"<{p}v>{number_text(value)}</{p}v>"
    text = str(value)
    if patch.result:
        return "str", f"<{p}v>{escape_text(text)}</{p}v>"
    space = ' xml:space="preserve"' if text != text.strip() or "\n" in text else ""
    return "inlineStr", f"<{p}is><{p}t{space}>{escape_text(text)}</{p}t></{p}is>"


_BODY_RES: dict[str, tuple[re.Pattern[str], re.Pattern[str], str, str]] = {}
"""Per namespace prefix: a cell's ``<f>`` and its ``<extLst>``, and the tags of an ``<f>`` without attributes."""


def _cell_xml(
    p: str,
    ref: str,
    attrs: list[tuple[str, str]],
    body: str,
    patch: Patch,
    quoted: Callable[[str | None], str] | None = None,
) -> str:
    if patch.quote_prefix and quoted is not None:
        style = quoted(dict(attrs).get("s"))
        attrs = [(k, v) for k, v in attrs if k != "s"] + [("s", style)]
    return _cell_out(p, ref, _attr_text((k, v) for k, v in attrs if k not in ("r", "t")), body, patch)


def _cell_out(p: str, ref: str, middle: str, body: str, patch: Patch) -> str:
    """A cell's XML: ``r``, then its other attributes but ``t`` as written in ``middle``, then its ``t`` and
    children for ``patch`` (the ``<f>`` and ``<extLst>`` of ``body`` kept)."""
    keep_f = ""
    res = _BODY_RES.get(p)
    if res is None:
        res = _BODY_RES[p] = (
            re.compile(rf"<{p}f\b[^>]*/>|<{p}f\b[^>]*>.*?</{p}f>", re.S),
            re.compile(rf"<{p}extLst\b.*?</{p}extLst>", re.S),
            f"<{p}f>",
            f"</{p}f>",
        )
    if patch.result and body:
        if body.count("<") == 2 and body.startswith(res[2]) and body.endswith(res[3]):
            keep_f = body  # the cell holds its formula and nothing else, as a cell calculated anew does
        else:
            m = res[0].search(body)
            keep_f = m.group(0) if m else ""
    ext = res[1].search(body) if body and "extLst" in body else None
    t, children = _value_xml(p, patch)
    head = f'<{p}c r="{ref}"{middle}' + (f' t="{t}"' if t is not None else "")
    inner = keep_f + children + (ext.group(0) if ext else "")
    if not inner:
        return head + "/>"
    return f"{head}>{inner}</{p}c>"


_MIDDLES: dict[tuple[str, tuple[str, ...]], str] = {}
"""A cell's or a row's attribute text with its ``r`` taken out, and the attributes to leave out -> the others as
:func:`_cell_out` and :func:`_row_xml` write them: the cells of a column share one (its style), as the rows of a
sheet do, read once."""


def _middle(attrs_text: str, left_out: tuple[str, ...] = ("r", "t")) -> str:
    key = (attrs_text, left_out)
    middle = _MIDDLES.get(key)
    if middle is None:
        middle = _attr_text((k, v) for k, v in _attrs(attrs_text) if k not in left_out)
        if len(_MIDDLES) < 10_000:
            _MIDDLES[key] = middle
    return middle


@dataclass
class _SheetLayout:
    prefix: str
    col_styles: list[tuple[int, int, str]] = field(default_factory=list)
    quoted: Callable[[str | None], str] | None = None

    def style_for(self, row_attrs: Mapping[str, str], col: int) -> str | None:
        if row_attrs.get("customFormat") in ("1", "true") and "s" in row_attrs:
            return row_attrs["s"]
        for lo, hi, style in self.col_styles:
            if lo <= col <= hi:
                return style
        return None


def _r_attr(attrs_text: str) -> tuple[str | None, int, int]:
    """The ``r`` attribute's value in an element's attribute text and where the attribute is (its leading space
    included), or (None, 0, 0); a cell as Excel writes it starts with ``r``, read without a pattern."""
    if attrs_text.startswith(' r="'):
        end = attrs_text.find('"', 4)
        if end > 0:
            return attrs_text[4:end], 0, end + 1
    found = _R_ONLY.search(attrs_text)
    if found is None:
        return None, 0, 0
    return (found.group(1) if found.group(1) is not None else found.group(2)), found.start(), found.end()


def _until(close: str) -> str:
    """A pattern for any text up to the first ``<`` + ``close``: what ``.*?`` before it matches, without trying
    the closing tag at every character (a third of the time of writing a sheet went to that)."""
    return rf"[^<]*(?:<(?!{close})[^<]*)*"


_R_ONLY = re.compile(r"""(?:^|\s)r\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_CELL_RES: dict[str, re.Pattern[str]] = {}
_COLUMNS: dict[str, int] = {}


def _column(ref: str) -> int:
    """The column of a cell reference such as ``B4``, read once per distinct column letters."""
    letters = ref.rstrip("0123456789$").lstrip("$")
    col = _COLUMNS.get(letters)
    if col is None:
        col = split_ref(ref)[1]
        if len(_COLUMNS) < 20_000:
            _COLUMNS[letters] = col
    return col


def _new_cell(layout: _SheetLayout, attrs_text: str, row: int, col: int, patch: Patch) -> str:
    """A cell inserted into a row (whose attributes are ``attrs_text``), with the row's or column's style."""
    style = layout.style_for(dict(_attrs(attrs_text)), col)
    base = [("s", style)] if style else []
    return _cell_xml(layout.prefix, f"{col_letter(col)}{row}", base, "", patch, layout.quoted)


_LETTERS: dict[int, str] = {}


def _letters(col: int) -> str:
    """:func:`.package.col_letter`, remembered per column."""
    letters = _LETTERS.get(col)
    if letters is None:
        letters = _LETTERS[col] = col_letter(col)
    return letters


def _cell_re(p: str) -> re.Pattern[str]:
    """A cell element of namespace prefix ``p``: group 1 its attributes, group 2 its children."""
    cell_re = _CELL_RES.get(p)
    if cell_re is None:
        attr = r"(?:\s+[^\s=/>]+\s*=\s*(?:\"[^\"]*\"|'[^']*'))*"
        cell_re = _CELL_RES[p] = re.compile(rf"<{p}c\b({attr})\s*(?:/>|>({_until(f'/{p}c>')})</{p}c>)")
    return cell_re


def _row_xml(layout: _SheetLayout, row: int, attrs_text: str, body: str, patches: dict[int, Patch]) -> str:
    """A row's XML with ``patches`` ({column: Patch}) written in; ``attrs_text``: its attributes as the file writes
    them (read only where a cell is inserted; otherwise they are written as the rows of a sheet share them)."""
    p = layout.prefix
    cell_re = _cell_re(p)
    pending = sorted(patches.items()) if len(patches) > 1 else list(patches.items())
    out: list[str] = []
    pos, col, inserted, at = 0, 0, False, 0  # `at`: the next of `pending` to write

    for m in cell_re.finditer(body) if body else ():
        cell_attrs = m.group(1)
        ref, r_start, r_end = _r_attr(cell_attrs)
        col = _column(ref) if ref else col + 1
        out.append(body[pos : m.start()])
        pos = m.end()
        while at < len(pending) and pending[at][0] < col:
            out.append(_new_cell(layout, attrs_text, row, *pending[at]))
            at += 1
            inserted = True
        if at < len(pending) and pending[at][0] == col:
            patch = pending[at][1]
            at += 1
            cell = f"{_letters(col)}{row}"
            if patch.quote_prefix and layout.quoted is not None:
                out.append(_cell_xml(p, cell, _attrs(cell_attrs), m.group(2) or "", patch, layout.quoted))
            else:  # the attributes but r, as the cells of a column share them
                rest = cell_attrs[:r_start] + cell_attrs[r_end:]
                out.append(_cell_out(p, cell, _middle(rest), m.group(2) or "", patch))
        elif ref:
            out.append(m.group(0))
        else:  # a cell without r: write the position it implies, since cells may be inserted before it
            out.append(m.group(0).replace(f"<{p}c", f'<{p}c r="{col_letter(col)}{row}"', 1))
    out.append(body[pos:])
    for c, patch in pending[at:]:
        out.append(_new_cell(layout, attrs_text, row, c, patch))
        inserted = True
    if inserted:
        others = _attr_text((k, v) for k, v in _attrs(attrs_text) if k not in ("r", "spans"))
    else:  # the attributes but r, as the rows of a sheet share them
        found = _R_ONLY.search(attrs_text)
        others = _middle(attrs_text[: found.start()] + attrs_text[found.end() :] if found else attrs_text, ("r",))
    return f'<{p}row r="{row}"{others}>{"".join(out)}</{p}row>'


def patch_sheet(
    xml: bytes, patches: Mapping[tuple[int, int], Patch], quoted: Callable[[str | None], str] | None = None
) -> bytes:
    """Write ``patches`` ({(row, col): Patch}) into a worksheet part; every other byte is kept.

    Cells that do not exist yet are inserted in order (with the row's or column's style, as Excel does when a value
    is typed into an empty cell); ``<dimension>`` grows to cover them. A patch with ``quote_prefix`` gets the
    format ``quoted(its current format)`` (see :class:`QuotePrefixStyles`).
    """
    if not patches:
        return xml
    text, encoding = decode_part(xml, "a worksheet part")
    m = re.search(rf"<({_PREFIX})sheetData\b[^>]*?(/?)>", text)
    if not m:
        raise WorkbookError("a worksheet part has no <sheetData>")
    p = m.group(1)
    if m.group(2):  # <sheetData/>: no rows at all
        start, end, body = m.start(), m.end(), ""
        head = text[m.start() : m.end() - 2] + ">"
    else:
        close = text.find(f"</{p}sheetData>", m.end())
        if close < 0:
            raise WorkbookError("a worksheet part has an unterminated <sheetData>")
        in_place = _patched_in_place(text, m.end(), close, p, patches, quoted)
        if in_place is not None:
            return _grow_dimension(in_place, p, patches).encode(encoding)
        start, end, body = m.start(), close + len(f"</{p}sheetData>"), text[m.end() : close]
        head = text[m.start() : m.end()]
    layout = _SheetLayout(p, _col_styles(text, p), quoted)
    by_row: dict[int, dict[int, Patch]] = {}
    for (r, c), patch in patches.items():
        by_row.setdefault(r, {})[c] = patch
    attr = r"(?:\s+[^\s=/>]+\s*=\s*(?:\"[^\"]*\"|'[^']*'))*"
    row_re = re.compile(rf"<{p}row\b({attr})\s*(?:/>|>({_until(f'/{p}row>')})</{p}row>)")
    out: list[str] = []
    pos, row = 0, 0
    pending = sorted(by_row)
    at = 0  # the next row of `pending` to write
    for rm in row_re.finditer(body):
        found = _R_ONLY.search(rm.group(1))
        r_text = (found.group(1) if found.group(1) is not None else found.group(2)) if found else None
        row = int(r_text) if r_text else row + 1
        out.append(body[pos : rm.start()])
        pos = rm.end()
        while at < len(pending) and pending[at] < row:
            out.append(_row_xml(layout, pending[at], "", "", by_row[pending[at]]))
            at += 1
        if at < len(pending) and pending[at] == row:
            at += 1
            out.append(_row_xml(layout, row, rm.group(1), rm.group(2) or "", by_row[row]))
        elif r_text:
            out.append(rm.group(0))
        else:
            out.append(rm.group(0).replace(f"<{p}row", f'<{p}row r="{row}"', 1))
    out.append(body[pos:])
    for r in pending[at:]:
        out.append(_row_xml(layout, r, "", "", by_row[r]))
    new_text = text[:start] + head + "".join(out) + f"</{p}sheetData>" + text[end:]
    new_text = _grow_dimension(new_text, p, patches)
    return new_text.encode(encoding)


def _patched_in_place(
    text: str,
    start: int,
    end: int,
    p: str,
    patches: Mapping[tuple[int, int], Patch],
    quoted: Callable[[str | None], str] | None,
) -> str | None:
    """:func:`patch_sheet` when every patched cell is already in the sheet, in row and column order, with its ``r``
    written first (as every writer writes cells; a recalculated formula cell always is): each patched cell is found
    by its ``<c r="...">`` from where the last one ended and rewritten as :func:`_row_xml` rewrites it, and the text
    between them is copied in slices, so a cell not patched costs nothing. The rows and every other byte are kept.
    None when a patched cell is not found so (missing, out of order, or written otherwise): the caller then edits
    the sheet row by row, which inserts cells."""
    cell_re = _cell_re(p)
    opening = f'<{p}c r="'
    out: list[str] = []
    pos = start
    items = list(patches.items())
    if any(items[i][0] > items[i + 1][0] for i in range(len(items) - 1)):
        items.sort()
    for (row, col), patch in items:
        ref = f"{_letters(col)}{row}"
        at = text.find(f'{opening}{ref}"', pos, end)
        if at < 0:
            return None
        m = cell_re.match(text, at, end)
        if m is None:
            return None
        out.append(text[pos:at])
        cell_attrs, body = m.group(1), m.group(2) or ""
        if patch.quote_prefix and quoted is not None:
            out.append(_cell_xml(p, ref, _attrs(cell_attrs), body, patch, quoted))
        else:  # the attributes but r (written first: len(ref) + 5 characters), as the cells of a column share them
            rest = cell_attrs[len(ref) + 5 :]
            out.append(_cell_out(p, ref, _middle(rest) if rest else "", body, patch))
        pos = m.end()
    out.append(text[pos:])
    return text[:start] + "".join(out)


REL_STYLES = DOC_REL + "/styles"
CT_STYLES = "application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"
_MINIMAL_STYLES = (
    f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<styleSheet xmlns="{MAIN_NS}">'
    '<fonts count="1"><font><sz val="11"/><name val="Calibri"/></font></fonts>'
    '<fills count="2"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill>'
    '</fills><borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>'
    '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
    '<cellXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/></cellXfs>'
    '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles></styleSheet>'
)


class QuotePrefixStyles:
    """Cell formats like a cell's own but with ``quotePrefix="1"``, added to the workbook's styles part as needed.

    Excel's *quote prefix* (the hidden apostrophe of a cell typed as ``'=1+1``) keeps a text cell text when someone
    edits it; without it, F2 and Enter on text that starts with ``=`` turn it into a live formula. Calling the
    object with a cell's ``s`` attribute (None: the default format 0) returns the index of a format that differs
    from it only by the quote prefix: the same one if it already has it, else a copy appended to ``<cellXfs>``
    (one per original format). :meth:`finish` writes the changed styles part into ``replaced`` (and creates a
    minimal one, with its relationship and content type, in a workbook that has none).
    """

    def __init__(self, pkg: Package, replaced: dict[str, bytes]) -> None:
        self._edits = _Edits(pkg, replaced)
        self._made: dict[str, str] = {}
        self._text: str | None = None
        self._encoding = "utf-8"
        self._part = ""
        self._created = self._needs_rel = self._changed = False

    def _load(self) -> str:
        if self._text is None:
            pkg = self._edits.pkg
            rel = next((r for r in pkg.relationships(pkg.workbook_part) if r.type == REL_STYLES), None)
            part = resolve_target(pkg.workbook_part, rel.target) if rel and not rel.external else ""
            data = self._edits.current(part) if part else None
            if data is None:  # no styles part (a hand-made workbook): start one
                self._part = part or posixpath.join(posixpath.dirname(pkg.workbook_part), "styles.xml")
                self._created, self._needs_rel = True, rel is None
                self._text = _MINIMAL_STYLES
            else:
                self._part = part
                self._text, self._encoding = decode_part(data, part)
        return self._text

    def __call__(self, base: str | None) -> str:
        key = base if base and base.isdigit() else "0"
        if key in self._made:
            return self._made[key]
        text = self._load()
        m = re.search(rf"<({_PREFIX})cellXfs\b([^>]*?)(/?)>", text)
        if m is None:
            raise WorkbookError(f"{self._part} has no <cellXfs>: cannot give a cell a quote prefix")
        p = m.group(1)
        if m.group(3):  # <cellXfs/>: no formats at all
            body, close, tail = "", m.end(), text[m.end() :]
        else:
            close = text.find(f"</{p}cellXfs>", m.end())
            if close < 0:
                raise WorkbookError(f"{self._part} has an unterminated <cellXfs>")
            body, tail = text[m.end() : close], text[close:]
        xfs = list(
            re.finditer(
                rf"<{p}xf\b((?:\s+[^\s=/>]+\s*=\s*(?:\"[^\"]*\"|'[^']*'))*)\s*(?:/>|>(.*?)</{p}xf>)", body, re.S
            )
        )
        index = int(key)
        if index >= len(xfs):
            index = 0  # a cell pointing past the formats: Excel shows it with the default
        if not xfs:
            xf_attrs: list[tuple[str, str]] = [("numFmtId", "0"), ("fontId", "0"), ("fillId", "0"), ("borderId", "0")]
            inner = ""
        else:
            xf_attrs, inner = _attrs(xfs[index].group(1)), xfs[index].group(2) or ""
            if dict(xf_attrs).get("quotePrefix") in ("1", "true"):
                self._made[key] = str(index)
                return self._made[key]
        new_attrs = [(k, v) for k, v in xf_attrs if k != "quotePrefix"] + [("quotePrefix", "1")]
        element = f"<{p}xf{_attr_text(new_attrs)}/>" if not inner else f"<{p}xf{_attr_text(new_attrs)}>{inner}</{p}xf>"
        head_attrs = [(k, v) for k, v in _attrs(m.group(2)) if k != "count"] + [("count", str(len(xfs) + 1))]
        if m.group(3):
            tail = f"</{p}cellXfs>" + tail
        self._text = text[: m.start()] + f"<{p}cellXfs{_attr_text(head_attrs)}>" + body + element + tail
        self._changed = True
        self._made[key] = str(len(xfs))
        return self._made[key]

    def finish(self) -> None:
        """Write the styles part (if a format was added) into ``replaced``."""
        if not self._changed:
            return
        self._edits.replaced[self._part] = self._load().encode(self._encoding)  # loaded: a format was added
        if self._created:
            if self._needs_rel:
                _add_relationship(self._edits, self._edits.pkg.workbook_part, REL_STYLES, self._part)
            if self._edits.pkg.content_type(self._part) != CT_STYLES:
                _add_content_type(self._edits, self._part, None, CT_STYLES)


def decode_part(xml: bytes, part: str = "a part") -> tuple[str, str]:
    """The text of an XML part and the encoding to write it back in: UTF-8 or UTF-16, the two that Excel writes.

    UTF-16 with a byte-order mark is written back with one (``utf-16``); without one (the XML specification asks
    for it, but a NUL byte in the first four gives it away), in the same byte order.
    """
    try:
        if xml[:2] in (b"\xff\xfe", b"\xfe\xff"):
            return xml.decode("utf-16"), "utf-16"
        if xml[:4] == b"<\x00?\x00":
            return xml.decode("utf-16-le"), "utf-16-le"
        if xml[:4] == b"\x00<\x00?":
            return xml.decode("utf-16-be"), "utf-16-be"
        return xml.decode("utf-8-sig" if xml.startswith(b"\xef\xbb\xbf") else "utf-8"), "utf-8"
    except UnicodeDecodeError as err:
        raise WorkbookError(f"{part} is neither UTF-8 nor UTF-16 text ({err.reason} at byte {err.start})") from None


def _col_styles(text: str, p: str) -> list[tuple[int, int, str]]:
    out = []
    cols = re.search(rf"<{p}cols\b.*?</{p}cols>", text, re.S)
    if cols:
        for cm in re.finditer(rf"<{p}col\b([^>]*)/?>", cols.group(0)):
            a = dict(_attrs(cm.group(1)))
            if "style" in a and a.get("min", "").isdigit() and a.get("max", "").isdigit():
                out.append((int(a["min"]), int(a["max"]), a["style"]))
    return out


def _grow_dimension(text: str, p: str, patches: Mapping[tuple[int, int], Patch]) -> str:
    m = re.search(rf"<{p}dimension\b([^>]*?)/>", text)
    if not m:
        return text
    ref = dict(_attrs(m.group(1))).get("ref", "")
    try:
        r1, c1, r2, c2 = range_bounds(ref)
    except WorkbookError:
        return text
    rows = [r for r, _ in patches]
    cols = [c for _, c in patches]
    nr1, nc1, nr2, nc2 = min(r1, *rows), min(c1, *cols), max(r2, *rows), max(c2, *cols)
    if (nr1, nc1, nr2, nc2) == (r1, c1, r2, c2):
        return text
    new_ref = f"{col_letter(nc1)}{nr1}:{col_letter(nc2)}{nr2}"
    return text[: m.start()] + f'<{p}dimension ref="{new_ref}"/>' + text[m.end() :]


# ---------------------------------------------------------------------------------------------------------------
# Notes (legacy comments) authored by xlsxplan


@dataclass
class CommentEdit:
    """The notes xlsxplan wants on one sheet: {(row, col): text}. Replaces every earlier xlsxplan note there."""

    sheet: SheetPart
    notes: dict[tuple[int, int], str]


_VML_HEAD = (
    '<xml xmlns:v="urn:schemas-microsoft-com:vml" xmlns:o="urn:schemas-microsoft-com:office:office" '
    'xmlns:x="urn:schemas-microsoft-com:office:excel">'
    '<o:shapelayout v:ext="edit"><o:idmap v:ext="edit" data="{block}"/></o:shapelayout>'
)
_VML_SHAPETYPE = (
    '<v:shapetype id="_x0000_t202" coordsize="21600,21600" o:spt="202" path="m,l,21600r21600,l21600,xe">'
    '<v:stroke joinstyle="miter"/><v:path gradientshapeok="t" o:connecttype="rect"/></v:shapetype>'
)


def _vml_shape(shape_id: int, row: int, col: int) -> str:
    r, c = row - 1, col - 1
    anchor = f"{c + 1}, 15, {max(r - 1, 0)}, 10, {c + 3}, 15, {r + 3}, 4"
    return (
        f'<v:shape id="_x0000_s{shape_id}" type="#_x0000_t202" style="position:absolute;margin-left:59.25pt;'
        'margin-top:1.5pt;width:240pt;height:60pt;z-index:1;visibility:hidden" fillcolor="#ffffe1" '
        'o:insetmode="auto"><v:fill color2="#ffffe1"/><v:shadow on="t" color="black" obscured="t"/>'
        '<v:path o:connecttype="none"/><v:textbox style="mso-direction-alt:auto"><div style="text-align:left"/>'
        '</v:textbox><x:ClientData ObjectType="Note"><x:MoveWithCells/><x:SizeWithCells/>'
        f"<x:Anchor>{anchor}</x:Anchor><x:AutoFill>False</x:AutoFill><x:Row>{r}</x:Row>"
        f"<x:Column>{c}</x:Column></x:ClientData></v:shape>"
    )


_WORKSHEET_AFTER_LEGACY = (
    "legacyDrawingHF",
    "drawingHF",
    "picture",
    "oleObjects",
    "controls",
    "webPublishItems",
    "tableParts",
    "extLst",
)


class _Edits:
    """Parts to replace or add while notes are written."""

    def __init__(self, pkg: Package, replaced: dict[str, bytes]) -> None:
        self.pkg = pkg
        self.replaced = replaced

    def current(self, name: str) -> bytes | None:
        if name in self.replaced:
            return self.replaced[name]
        return self.pkg.read(name) if self.pkg.has(name) else None

    def exists(self, name: str) -> bool:
        return name in self.replaced or self.pkg.has(name)

    def unused(self, pattern: str) -> str:
        n = 1
        while self.exists(pattern.format(n)):
            n += 1
        return pattern.format(n)


def _add_relationship(edits: _Edits, source: str, rel_type: str, target_part: str) -> str:
    name = rels_part(source)
    data = edits.current(name)
    empty = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships xmlns="{PKG_REL}"></Relationships>'
    )
    text, encoding = decode_part(data, name) if data is not None else (empty, "utf-8")
    ids = set(re.findall(r'\bId\s*=\s*"([^"]*)"', text))
    n = 1
    while f"rId{n}" in ids:
        n += 1
    rid = f"rId{n}"
    target = posixpath.relpath(target_part, posixpath.dirname(source))
    element = f'<Relationship Id="{rid}" Type="{rel_type}" Target="{html.escape(target)}"/>'
    if re.search(r"<(?:\w+:)?Relationships\b[^>]*/>", text):
        text = re.sub(r"<((?:\w+:)?)Relationships\b([^>]*)/>", rf"<\1Relationships\2>{element}</\1Relationships>", text)
    else:
        close = re.search(r"</(?:\w+:)?Relationships>", text)
        if not close:
            raise WorkbookError(f"{name} is not a relationships part")
        text = text[: close.start()] + element + text[close.start() :]
    edits.replaced[name] = text.encode(encoding)
    return rid


def _add_content_type(edits: _Edits, part: str | None, extension: str | None, ctype: str) -> None:
    text, encoding = decode_part(edits.current("[Content_Types].xml"), "[Content_Types].xml")  # type: ignore[arg-type]
    if part is not None:
        element = f'<Override PartName="/{part}" ContentType="{ctype}"/>'
    else:
        if re.search(rf'<(?:\w+:)?Default\b[^>]*Extension="{extension}"', text, re.I):
            return
        element = f'<Default Extension="{extension}" ContentType="{ctype}"/>'
    close = re.search(r"</(?:\w+:)?Types>", text)
    if not close:
        raise WorkbookError("[Content_Types].xml is malformed")
    edits.replaced["[Content_Types].xml"] = (text[: close.start()] + element + text[close.start() :]).encode(encoding)


def _used_idmap_blocks(edits: _Edits) -> set[int]:
    used: set[int] = set()
    for name in set(edits.pkg.names) | set(edits.replaced):
        if name.lower().endswith(".vml"):
            data = edits.current(name) or b""
            for m in re.finditer(rb'idmap\b[^>]*\bdata="([\d,\s]+)"', data):
                used.update(int(x) for x in re.findall(rb"\d+", m.group(1)))
    return used


def _edit_comments_text(text: str, notes: dict[tuple[int, int], str], skip: set[tuple[int, int]]) -> tuple[str, set]:
    """Remove xlsxplan's notes and add ``notes``; return the new text and the cells whose notes were removed."""
    p_m = re.search(rf"<({_PREFIX})comments\b", text)
    p = p_m.group(1) if p_m else ""
    authors_m = re.search(rf"<{p}authors\b[^>]*?(?:/>|>(.*?)</{p}authors>)", text, re.S)
    author_re = rf"<{p}author\b[^>]*?(?:/>|>(.*?)</{p}author>)"
    authors = re.findall(author_re, authors_m.group(1) or "", re.S) if authors_m else []
    names = [html.unescape(a) for a in authors]
    ours = names.index(COMMENT_AUTHOR) if COMMENT_AUTHOR in names else None
    removed: set[tuple[int, int]] = set()
    if ours is not None:

        def drop(m: re.Match[str]) -> str:
            a = dict(_attrs(m.group(1)))
            if a.get("authorId") == str(ours):
                r, c = split_ref(a.get("ref", "A1"))
                removed.add((r, c))
                return ""
            return m.group(0)

        text = re.sub(rf"<{p}comment\b([^>]*?)(?:/>|>.*?</{p}comment>)", drop, text, flags=re.S)
    if not notes:
        return text, removed
    if ours is None:
        ours = len(names)
        element = f"<{p}author>{COMMENT_AUTHOR}</{p}author>"
        if authors_m is None:
            text = re.sub(rf"(<{p}comments\b[^>]*>)", rf"\1<{p}authors>{element}</{p}authors>", text, count=1)
        elif authors_m.group(0).endswith("/>"):
            text = text.replace(authors_m.group(0), f"<{p}authors>{element}</{p}authors>", 1)
        else:
            text = re.sub(rf"</{p}authors>", element + f"</{p}authors>", text, count=1)
    new = "".join(
        f'<{p}comment ref="{col_letter(c)}{r}" authorId="{ours}"><{p}text><{p}t xml:space="preserve">'
        f"{escape_text(msg)}</{p}t></{p}text></{p}comment>"
        for (r, c), msg in sorted(notes.items())
        if (r, c) not in skip
    )
    if re.search(rf"<{p}commentList\b[^>]*/>", text):
        text = re.sub(  # a function, not a template: the notes quote the workbook's text, backslashes and all
            rf"<{p}commentList\b([^>]*)/>",
            lambda m: f"<{p}commentList{m.group(1)}>{new}</{p}commentList>",
            text,
            count=1,
        )
    elif f"</{p}commentList>" in text:
        i = text.rindex(f"</{p}commentList>")
        text = text[:i] + new + text[i:]
    else:
        i = text.rindex(f"</{p}comments>")
        text = text[:i] + f"<{p}commentList>{new}</{p}commentList>" + text[i:]
    return text, removed


def _user_comment_cells(text: str) -> set[tuple[int, int]]:
    p_m = re.search(rf"<({_PREFIX})comments\b", text)
    p = p_m.group(1) if p_m else ""
    cells = set()
    for m in re.finditer(rf"<{p}comment\b([^>]*?)(?:/>|>)", text):
        ref = dict(_attrs(m.group(1))).get("ref")
        if ref:
            cells.add(split_ref(ref.split(":")[0]))
    return cells


def _edit_vml(text: str, removed: set[tuple[int, int]], added: list[tuple[int, int]], block: int) -> str:
    def drop(m: re.Match[str]) -> str:
        shape = m.group(0)
        if 'ObjectType="Note"' not in shape:
            return shape
        r = re.search(r"<x:Row>\s*(\d+)\s*</x:Row>", shape)
        c = re.search(r"<x:Column>\s*(\d+)\s*</x:Column>", shape)
        if r and c and (int(r.group(1)) + 1, int(c.group(1)) + 1) in removed:
            return ""
        return shape

    text = re.sub(r"<v:shape\b[^>]*?(?:/>|>.*?</v:shape>)", drop, text, flags=re.S)
    if not added:
        return text
    if 'id="_x0000_t202"' not in text:
        m = re.search(r"</o:shapelayout>", text)
        at = m.end() if m else re.search(r"<xml\b[^>]*>", text).end()  # type: ignore[union-attr]
        text = text[:at] + _VML_SHAPETYPE + text[at:]
    ids = [int(x) for x in re.findall(r'id="_x0000_s(\d+)"', text)]
    next_id = max([block * 1024] + ids) + 1
    shapes = "".join(_vml_shape(next_id + i, r, c) for i, (r, c) in enumerate(added))
    i = text.rindex("</xml>")
    return text[:i] + shapes + text[i:]


def write_notes(pkg: Package, replaced: dict[str, bytes], edits_list: list[CommentEdit]) -> None:
    """Put xlsxplan's notes on each sheet in ``edits_list`` into ``replaced`` (part name -> new bytes).

    A sheet keeps every note whose author is not ``xlsxplan``; a cell that already has someone else's note gets no
    note from xlsxplan. The notes are legacy comments (a ``comments`` part plus its VML drawing), which Excel,
    LibreOffice and openpyxl all read.
    """
    edits = _Edits(pkg, replaced)
    for edit in edits_list:
        sheet = edit.sheet
        rels = [r for r in pkg.relationships(sheet.part) if not r.external]
        comments = next((resolve_target(sheet.part, r.target) for r in rels if r.type == REL_COMMENTS), None)
        vml = next((resolve_target(sheet.part, r.target) for r in rels if r.type == REL_VML), None)
        if comments is None and not edit.notes:
            continue
        user_cells: set[tuple[int, int]] = set()
        cenc = venc = "utf-8"  # parts xlsxplan adds are UTF-8; parts it edits keep their encoding
        if comments is not None and edits.exists(comments):
            ctext, cenc = decode_part(edits.current(comments), comments)  # type: ignore[arg-type]
            stripped, removed = _edit_comments_text(ctext, {}, set())
            user_cells = _user_comment_cells(stripped)
        else:
            comments, ctext, removed = None, None, set()
        notes = {cell: text for cell, text in edit.notes.items() if cell not in user_cells}
        if not notes and not removed:
            continue
        if vml is not None and edits.exists(vml):
            vtext, venc = decode_part(edits.current(vml), vml)  # type: ignore[arg-type]
            if "</xml>" not in vtext:
                continue  # not the VML Excel writes: leave the sheet's notes alone
        else:
            vml, vtext = None, None
        if comments is None or ctext is None:  # both None or neither
            comments = edits.unused("xl/comments{}.xml")
            ctext = (
                '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
                f'<comments xmlns="{MAIN_NS}"><authors/><commentList/></comments>'
            )
            _add_relationship(edits, sheet.part, REL_COMMENTS, comments)
            _add_content_type(edits, comments, None, CT_COMMENTS)
        new_ctext, _ = _edit_comments_text(ctext, notes, user_cells)
        edits.replaced[comments] = new_ctext.encode(cenc)
        if vml is None or vtext is None:  # both None or neither
            used = _used_idmap_blocks(edits)
            block = 1
            while block in used:
                block += 1
            vml = edits.unused("xl/drawings/vmlDrawing{}.vml")
            vtext = _VML_HEAD.format(block=block) + _VML_SHAPETYPE + "</xml>"
            rid = _add_relationship(edits, sheet.part, REL_VML, vml)
            _add_content_type(edits, None, "vml", CT_VML)
            _insert_legacy_drawing(edits, sheet.part, rid)
        else:
            m = re.search(r'idmap\b[^>]*\bdata="(\d+)', vtext)
            block = int(m.group(1)) if m else 1
        added = sorted(cell for cell in notes if cell not in user_cells)
        edits.replaced[vml] = _edit_vml(vtext, removed, added, block).encode(venc)


def _insert_legacy_drawing(edits: _Edits, part: str, rid: str) -> None:
    text, encoding = decode_part(edits.current(part), part)  # type: ignore[arg-type]
    root = re.search(rf"<({_PREFIX})worksheet\b", text)
    p = root.group(1) if root else ""
    element = f'<{p}legacyDrawing xmlns:r="{DOC_REL}" r:id="{rid}"/>'
    for tag in _WORKSHEET_AFTER_LEGACY:
        m = re.search(rf"<{p}{tag}\b", text)
        if m:
            text = text[: m.start()] + element + text[m.start() :]
            break
    else:
        i = text.rindex(f"</{p}worksheet>")
        text = text[:i] + element + text[i:]
    edits.replaced[part] = text.encode(encoding)


# ---------------------------------------------------------------------------------------------------------------
# Writing


def write_package(
    pkg: Package,
    replaced: Mapping[str, bytes],
    out: io.BufferedIOBase | str,
    written: Callable[[], None] | None = None,
) -> None:
    """Write the package with ``replaced`` parts (new or changed), every other part copied unchanged, in order.

    Each member keeps its name, timestamp and compression, so writing the same content twice gives the same
    bytes. New parts are added at the end with a fixed timestamp. ``written()`` is called after each member.
    """
    with zipfile.ZipFile(out, "w") as zout:
        for info in pkg.zip.infolist():
            data = replaced[info.filename] if info.filename in replaced else pkg.read(info.filename)
            copy = zipfile.ZipInfo(info.filename, date_time=info.date_time)
            stored = info.compress_type == zipfile.ZIP_STORED
            copy.compress_type = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
            copy.external_attr = info.external_attr
            zout.writestr(copy, data)
            if written is not None:
                written()
        for name in sorted(set(replaced) - set(pkg.names)):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zout.writestr(info, replaced[name])
            if written is not None:
                written()
