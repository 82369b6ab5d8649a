"""Edit a few cells or a defined name of an .xlsx package in place of an openpyxl load and save.

A test that tampers with the 1 MB portable serving plan needs one or two cells changed; openpyxl reads and writes the
whole workbook for that (most of a second each time) and drops every cached value on the way. Here the sheet's XML
part (and ``xl/workbook.xml`` for a name) is edited as text and every other part is copied byte for byte: the file
differs from its source only in what the test changed, as a user's edit in Excel would. A cell written here is what
openpyxl writes for the same assignment: a text starting with ``=`` is a formula (its text after the ``=``, no cached
value), any other text an inline string, a number or a bool a value; the cell keeps its style.

:func:`cached_values` reads the values a package holds, as ``openpyxl.load_workbook(data_only=True)`` gives them
(without its conversion of date-formatted numbers to dates), in a tenth of its time.
"""

from __future__ import annotations

import html
import posixpath
import re
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

__all__ = ["cached_values", "edit_package", "set_cells", "set_values", "sheet_part"]

MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"


def sheet_part(zf: zipfile.ZipFile, sheet: str) -> str:
    """The name of ``sheet``'s worksheet part in the package (through xl/workbook.xml and its relationships)."""
    book = zf.read("xl/workbook.xml").decode("utf-8")
    m = re.search(rf'<sheet\b[^>]*\bname="{re.escape(html.escape(sheet))}"[^>]*\br:id="([^"]+)"', book)
    assert m is not None, f"no sheet {sheet!r}"
    rels = zf.read("xl/_rels/workbook.xml.rels").decode("utf-8")
    rel = next(
        r for r in re.findall(r"<Relationship\b[^>]*>", rels) if re.search(rf'\bId="{re.escape(m.group(1))}"', r)
    )
    target = re.search(r'\bTarget="([^"]+)"', rel)
    assert target is not None, rel
    path = target.group(1)
    return path.lstrip("/") if path.startswith("/") else posixpath.normpath(posixpath.join("xl", path))


def _cell_xml(ref: str, style: str, value: Any) -> str:
    if isinstance(value, bool):
        return f'<c r="{ref}"{style} t="b"><v>{int(value)}</v></c>'
    if isinstance(value, (int, float)):
        return f'<c r="{ref}"{style}><v>{value!r}</v></c>'
    if value.startswith("="):
        return f'<c r="{ref}"{style}><f>{html.escape(value[1:], quote=False)}</f><v></v></c>'
    return f'<c r="{ref}"{style} t="inlineStr"><is><t>{html.escape(value, quote=False)}</t></is></c>'


def set_cells(xml: str, cells: Mapping[str, Any]) -> str:
    """``xml`` (a worksheet part) with each existing cell of ``cells`` (reference -> text, number or bool)
    rewritten."""
    for ref, value in cells.items():
        pattern = re.compile(rf'<c r="{ref}"(\s[^>]*?)?(?:/>|>.*?</c>)', re.S)
        m = pattern.search(xml)
        assert m is not None, f"no cell {ref} to edit"
        style = re.search(r'\ss="\d+"', m.group(1) or "")
        xml = xml[: m.start()] + _cell_xml(ref, style.group(0) if style else "", value) + xml[m.end() :]
    return xml


def edit_package(
    src: Path,
    dst: Path,
    sheet: str | None = None,
    cells: Mapping[str, str] | None = None,
    drop_name: str | None = None,
    *,
    grow: tuple[str, int] | None = None,
) -> Path:
    """Write ``dst``: ``src`` with ``cells`` (reference -> text, each an existing cell) of ``sheet`` rewritten, the
    defined name ``drop_name`` removed, and for ``grow`` (sheet, multiple) a 1 in column A of that sheet at
    ``multiple`` times its last row with a cell (openpyxl's ``max_row``), its dimension widened to that row as
    openpyxl writes it. Returns ``dst``."""
    with zipfile.ZipFile(src) as zf:
        edits: dict[str, str] = {}
        if sheet is not None and cells:
            part = sheet_part(zf, sheet)
            edits[part] = set_cells(zf.read(part).decode("utf-8"), cells)
        if grow is not None:
            name, multiple = grow
            part = sheet_part(zf, name)
            xml = edits.get(part, zf.read(part).decode("utf-8"))
            row = multiple * max(int(r) for r in re.findall(r'<c r="[A-Z]+(\d+)"', xml))
            assert multiple > 1 and xml.count("</sheetData>") == 1, multiple
            xml = xml.replace("</sheetData>", f'<row r="{row}"><c r="A{row}" t="n"><v>1</v></c></row></sheetData>')
            xml = re.sub(r'(<dimension ref="[A-Z]+\d+:[A-Z]+)\d+"', rf'\g<1>{row}"', xml, count=1)
            edits[part] = xml
        if drop_name is not None:
            book = zf.read("xl/workbook.xml").decode("utf-8")
            book, n = re.subn(rf'<definedName\b[^>]*\bname="{re.escape(drop_name)}"[^>]*>[^<]*</definedName>', "", book)
            assert n == 1, f"no defined name {drop_name!r}"
            edits["xl/workbook.xml"] = book
        _write(zf, dst, edits)
    return dst


def _write(zf: zipfile.ZipFile, dst: Path, edits: Mapping[str, str]) -> None:
    """Write ``dst``: every part of the package ``zf``, those named in ``edits`` (part -> XML text) with that text,
    the others byte for byte."""
    with zipfile.ZipFile(dst, "w") as out:
        for info in zf.infolist():
            data = edits[info.filename].encode("utf-8") if info.filename in edits else zf.read(info)
            out.writestr(info, data)


def kept_whole_sheet(dst: Path, multiple: int = 1) -> Path:
    """The shipped portable serving plan with the formula its Options block keeps for the most cells rewritten to
    ``LEN(TEXTJOIN(",",TRUE,Inputs!A:XFD))`` and, for ``multiple`` over 1, a value in column A of Inputs at
    ``multiple`` times its last used row, written to ``dst`` by editing the package (not by an openpyxl load and
    save). The range the formula reads grows with ``multiple``, and its cost is counted once for each cell that keeps
    it (one formula ran past 120 s, unrefused, when it was counted once). Returns ``dst``."""
    from openpyxl.utils import range_boundaries

    from tests.helpers import REPO
    from xlsxplan.headless.frozen import FORMULAS_HEADER, NAME_PREFIX

    src = REPO / "workbooks" / "serving_plan.xlsx"
    with zipfile.ZipFile(src) as zf:
        book = zf.read("xl/workbook.xml").decode("utf-8")
        part = zf.read(sheet_part(zf, "Workings")).decode("utf-8")
    m = re.search(rf'<definedName\b[^>]*\bname="{NAME_PREFIX}1"[^>]*>Workings!\$A\$(\d+):\$E\$(\d+)<', book)
    assert m is not None, book[:200]
    top, last = int(m.group(1)), int(m.group(2))
    # the block's column A on Workings (its texts are inline strings, as openpyxl writes them)
    column_a = {int(r): html.unescape(t) for r, t in re.findall(r'<c r="A(\d+)"[^>]*><is><t[^>]*>([^<]*)</t>', part)}
    first = next(r for r in range(top, last + 1) if column_a.get(r) == FORMULAS_HEADER[0]) + 1

    def cells(r: int) -> int:  # how many cells the kept formula of row r is kept for
        low, top_, high, bottom = range_boundaries(column_a[r].split(",")[0])
        return (high - low + 1) * (bottom - top_ + 1)

    widest = max(range(first, last + 1), key=cells)
    formula = 'LEN(TEXTJOIN(",",TRUE,Inputs!A:XFD))'
    return edit_package(
        src, dst, "Workings", {f"B{widest}": formula}, grow=("Inputs", multiple) if multiple > 1 else None
    )


FORMULA_VALUE = re.compile(r"(</f>|<f\b[^>]*/>)<v(?:>[^<]*</v>|/>)")
"""A formula's cached value, after its ``<f>``: group 1 the end of the formula, which stays."""


def _defined_cell(book: str, name: str) -> tuple[str, str]:
    """(sheet, A1) of the workbook-wide defined name ``name`` (one cell) in xl/workbook.xml's text ``book``."""
    m = re.search(rf'<definedName name="{re.escape(name)}"(?![^>]*localSheetId)[^>]*>([^<]*)</definedName>', book)
    assert m is not None, f"no defined name {name!r}"
    sheet, cell = html.unescape(m.group(1)).replace("$", "").rsplit("!", 1)
    return sheet.strip("'"), cell


def set_values(src: Path, dst: Path, values: Mapping[str, Any], *, drop_cached: bool = False) -> Path:
    """Write ``dst``: ``src`` with each of ``values`` (``Sheet!A1`` or a workbook-wide defined name of one cell ->
    text, number or bool; each an existing cell) set as openpyxl's assignment sets it, and with ``drop_cached`` every
    formula's cached value removed, as an openpyxl save leaves them (so that a program opening ``dst`` must compute
    every formula). Returns ``dst``."""
    with zipfile.ZipFile(src) as zf:
        book = zf.read("xl/workbook.xml").decode("utf-8")
        by_sheet: dict[str, dict[str, Any]] = {}
        for ref, value in values.items():
            sheet, cell = ref.rsplit("!", 1) if "!" in ref else _defined_cell(book, ref)
            by_sheet.setdefault(sheet.strip("'"), {})[cell] = value
        edits = {}
        for sheet, cells in by_sheet.items():
            part = sheet_part(zf, sheet)
            edits[part] = set_cells(zf.read(part).decode("utf-8"), cells)
        if drop_cached:
            for name in zf.namelist():
                if name.startswith("xl/worksheets/") and name.endswith(".xml"):
                    edits[name] = FORMULA_VALUE.sub(r"\1", edits.get(name) or zf.read(name).decode("utf-8"))
        _write(zf, dst, edits)
    return dst


def _number(text: str) -> int | float:
    return float(text) if any(c in text for c in ".eE") or text in ("inf", "-inf", "nan") else int(text)


def cached_values(path: Path, sheets: set[str]) -> dict[str, Any]:
    """The values ``path`` holds on ``sheets`` (names, quoted or not), ``'Sheet'!A1`` -> value, as openpyxl's
    ``data_only`` load reads them: a number as int or float, a text, a bool, an error as its code (``"#N/A"``),
    an empty cell absent. Date-formatted numbers stay numbers (openpyxl makes them dates)."""
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        strings = []
        if "xl/sharedStrings.xml" in names:
            for si in ElementTree.fromstring(zf.read("xl/sharedStrings.xml")).iter(f"{MAIN}si"):
                # the text of the item or of its rich-text runs, not of its phonetic runs (rPh)
                strings.append(
                    "".join(t.text or "" for part in si if part.tag != f"{MAIN}rPh" for t in part.iter(f"{MAIN}t"))
                )
        out: dict[str, Any] = {}
        for quoted in sheets:
            sheet = quoted.strip("'")
            for c in ElementTree.fromstring(zf.read(sheet_part(zf, sheet))).iter(f"{MAIN}c"):
                kind = c.get("t", "n")
                if kind == "inlineStr":
                    value: Any = "".join(t.text or "" for t in c.iter(f"{MAIN}t"))
                else:
                    v = c.find(f"{MAIN}v")
                    if v is None or v.text is None:
                        value = "" if kind == "str" and v is not None else None
                    elif kind == "s":
                        value = strings[int(v.text)]
                    elif kind == "b":
                        value = v.text == "1"
                    elif kind in ("str", "e"):
                        value = v.text
                    else:
                        value = _number(v.text)
                if value is not None:
                    out[f"'{sheet}'!{c.get('r')}"] = value
        return out
