"""The parts of an .xlsx/.xlsm package that headless recalculation reads, without a round trip (:mod:`.patch` edits
them).

A workbook is a zip of XML parts (ECMA-376 Part 1): ``[Content_Types].xml``, ``xl/workbook.xml``, one part per
sheet, relationship parts (``_rels/*.rels``) that link them, plus styles, charts, drawings, comments, VBA. openpyxl
reads most of these but not all (shapes, sparklines and other extensions are lost on its load and save), so
xlsxplan never saves a workbook through openpyxl. It copies every part of the original byte for byte and edits
only what recalculation changes, as text:

* in each sheet's ``<sheetData>``, the cached value (``<v>`` and the ``t`` type) of every formula cell and of
  the cells of an array formula's range, and the value of the input cells that were set;
* the sheet's legacy comments part and its VML drawing, to keep one note per error cell authored ``xlsxplan``
  (notes by anyone else are never touched);
* the relationships and content types that a new comments part needs.

Small parts (content types, relationships, the workbook part) are parsed with ``defusedxml``; sheet XML is edited
with regular expressions over its elements, which is safe because XML text can never contain a literal ``<``.
"""

from __future__ import annotations

import posixpath
import re
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import WorkbookError

__all__ = [
    "Package",
    "SheetPart",
    "DefinedName",
    "Relationship",
    "col_index",
    "col_letter",
    "split_ref",
    "range_bounds",
    "closest",
    "rels_part",
    "resolve_target",
    "parse_xml",
    "MAX_ROW",
    "MAX_COL",
    "COMMENT_AUTHOR",
]

MAIN_NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
DOC_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
CT_NS = "http://schemas.openxmlformats.org/package/2006/content-types"

REL_OFFICE_DOCUMENT = DOC_REL + "/officeDocument"
REL_WORKSHEET = DOC_REL + "/worksheet"
REL_COMMENTS = DOC_REL + "/comments"
REL_VML = DOC_REL + "/vmlDrawing"
CT_COMMENTS = "application/vnd.openxmlformats-officedocument.spreadsheetml.comments+xml"
CT_VML = "application/vnd.openxmlformats-officedocument.vmlDrawing"

WORKBOOK_TYPES = {
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml": ".xlsx",
    "application/vnd.ms-excel.sheet.macroEnabled.main+xml": ".xlsm",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.template.main+xml": ".xltx",
    "application/vnd.ms-excel.template.macroEnabled.main+xml": ".xltm",
}
FOREIGN_TYPES = {
    "application/vnd.ms-excel.sheet.binary.macroEnabled.main": "a binary workbook (.xlsb); save it as .xlsx",
    "application/vnd.ms-excel.addin.macroEnabled.main+xml": "an Excel add-in (.xlam), not a workbook",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml": "a Word document",
    "application/vnd.ms-word.document.macroEnabled.main+xml": "a Word document",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml": "a PowerPoint file",
    "application/vnd.ms-powerpoint.presentation.macroEnabled.main+xml": "a PowerPoint file",
}

COMMENT_AUTHOR = "xlsxplan"
"""The author of the notes xlsxplan writes; notes by any other author are left as they are."""

MAX_COL, MAX_ROW = 16_384, 1_048_576  # Excel's grid (XFD1048576)

_COL_RE = re.compile(r"^\$?([A-Za-z]{1,3})\$?(\d{1,7})$")


def col_index(letters: str) -> int:
    """``A`` -> 1, ``XFD`` -> 16384."""
    n = 0
    for ch in letters.upper():
        n = n * 26 + ord(ch) - 64
    return n


def col_letter(index: int) -> str:
    """1 -> ``A``, 16384 -> ``XFD``."""
    out = ""
    while index:
        index, rem = divmod(index - 1, 26)
        out = chr(65 + rem) + out
    return out


def split_ref(ref: str) -> tuple[int, int]:
    """``B4`` (or ``$B$4``) -> (row 4, column 2); WorkbookError if it is not a cell inside Excel's grid."""
    m = _COL_RE.match(ref.strip())
    if not m:
        raise WorkbookError(f"{ref!r} is not a cell reference such as B4")
    row, col = int(m.group(2)), col_index(m.group(1))
    if not (1 <= row <= MAX_ROW and 1 <= col <= MAX_COL):
        raise WorkbookError(f"{ref} is outside Excel's grid (A1:XFD1048576)")
    return row, col


def range_bounds(ref: str) -> tuple[int, int, int, int]:
    """``A1:C3`` -> (min_row, min_col, max_row, max_col); a single cell is a 1x1 range."""
    first, _, last = ref.partition(":")
    r1, c1 = split_ref(first)
    r2, c2 = split_ref(last) if last else (r1, c1)
    return min(r1, r2), min(c1, c2), max(r1, r2), max(c1, c2)


# ---------------------------------------------------------------------------------------------------------------
# Reading the package


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def parse_xml(data: bytes, part: str) -> Any:
    """A small part parsed with defusedxml (entities and DTDs refused); WorkbookError if it is not XML."""
    from defusedxml import DefusedXmlException
    from defusedxml.ElementTree import ParseError, fromstring

    try:
        return fromstring(data, forbid_dtd=True)
    except DefusedXmlException as err:
        raise WorkbookError(f"{part} declares a DTD or entities ({type(err).__name__}); refused as hostile") from None
    except ParseError as err:
        raise WorkbookError(f"{part} is not well-formed XML: {err}") from None


@dataclass(frozen=True)
class SheetPart:
    """One sheet of the workbook: its title and the zip member that holds it."""

    title: str
    part: str
    kind: str  # "worksheet", "chartsheet", "dialogsheet", "macrosheet"
    state: str = "visible"


@dataclass(frozen=True)
class DefinedName:
    """A ``<definedName>`` of the workbook part: global when ``local_sheet`` is None."""

    name: str
    text: str
    local_sheet: int | None = None
    hidden: bool = False


@dataclass
class Relationship:
    id: str
    type: str
    target: str
    external: bool


def rels_part(part: str) -> str:
    """The relationships part of ``part``: ``xl/worksheets/_rels/sheet1.xml.rels`` for ``xl/worksheets/sheet1.xml``."""
    folder, name = posixpath.split(part)
    return posixpath.join(folder, "_rels", name + ".rels")


def resolve_target(source_part: str, target: str) -> str:
    """A relationship target as a zip member name (absolute targets start at the package root)."""
    if target.startswith("/"):
        return posixpath.normpath(target.lstrip("/"))
    return posixpath.normpath(posixpath.join(posixpath.dirname(source_part), target))


class Package:
    """An opened package: the zip, its content types, the workbook part, its sheets and defined names.

    The bytes are held in memory (their size is capped before reading), so the file on disk is read once and
    the original is never reopened for writing.
    """

    def __init__(self, data: bytes, zf: zipfile.ZipFile) -> None:
        self.data = data
        self.zip = zf
        self.names = [i.filename for i in zf.infolist()]
        self._infos = {i.filename: i for i in zf.infolist()}
        self.defaults: dict[str, str] = {}
        self.overrides: dict[str, str] = {}
        self.workbook_part = ""
        self.extension = ".xlsx"
        self.sheets: list[SheetPart] = []
        self.defined_names: list[DefinedName] = []

    def has(self, name: str) -> bool:
        return name in self._infos

    def read(self, name: str) -> bytes:
        try:
            return self.zip.read(self._infos[name])
        except KeyError:
            raise WorkbookError(f"the package has no part {name}") from None
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError) as err:
            raise WorkbookError(f"the part {name} is corrupt: {err}") from None
        except Exception as err:  # zlib.error and friends: a damaged deflate stream
            raise WorkbookError(f"the part {name} is corrupt: {type(err).__name__}: {err}") from None

    def content_type(self, name: str) -> str | None:
        override = self.overrides.get("/" + name)
        if override is not None:
            return override
        ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
        return self.defaults.get(ext)

    def relationships(self, part: str) -> list[Relationship]:
        """The relationships of a part ('' for the package's own ``_rels/.rels``)."""
        name = rels_part(part) if part else "_rels/.rels"
        if not self.has(name):
            return []
        root = parse_xml(self.read(name), name)
        out = []
        for el in root:
            if _local(el.tag) == "Relationship":
                out.append(
                    Relationship(
                        el.get("Id", ""),
                        el.get("Type", ""),
                        el.get("Target", ""),
                        el.get("TargetMode", "") == "External",
                    )
                )
        return out

    def load_structure(self) -> None:
        """Read content types, the workbook part, its sheets and defined names; refuse what is not a workbook."""
        if not self.has("[Content_Types].xml"):
            if self.has("mimetype") and b"opendocument" in self.read("mimetype"):
                raise WorkbookError("this is an OpenDocument file, not an Excel workbook; save it as .xlsx")
            raise WorkbookError("this zip file is not an Excel workbook (it has no [Content_Types].xml)")
        root = parse_xml(self.read("[Content_Types].xml"), "[Content_Types].xml")
        for el in root:
            tag = _local(el.tag)
            if tag == "Default":
                self.defaults[el.get("Extension", "").lower()] = el.get("ContentType", "")
            elif tag == "Override":
                self.overrides[el.get("PartName", "")] = el.get("ContentType", "")
        office = [r for r in self.relationships("") if r.type.endswith("/officeDocument") and not r.external]
        if not office:
            raise WorkbookError("this zip file is not an Excel workbook (no office document part)")
        self.workbook_part = resolve_target("", "/" + office[0].target.lstrip("/"))
        ctype = self.content_type(self.workbook_part) or ""
        if ctype in FOREIGN_TYPES:
            raise WorkbookError(f"this is {FOREIGN_TYPES[ctype]}, not an Excel workbook")
        if ctype not in WORKBOOK_TYPES:
            shown = ctype or "none"
            raise WorkbookError(f"the main part has content type {shown!r}, which is not an Excel workbook")
        self.extension = WORKBOOK_TYPES[ctype]
        if not self.has(self.workbook_part):
            raise WorkbookError(f"the workbook part {self.workbook_part} is missing")
        rels = {r.id: r for r in self.relationships(self.workbook_part)}
        wb = parse_xml(self.read(self.workbook_part), self.workbook_part)
        for el in wb.iter():
            tag = _local(el.tag)
            if tag == "sheet":
                rid = next((v for k, v in el.attrib.items() if _local(k) == "id"), "")
                rel = rels.get(rid)
                if rel is None or rel.external:
                    raise WorkbookError(f"sheet {el.get('name')!r} points to no part of the package")
                kind = rel.type.rsplit("/", 1)[-1].replace("xlMacrosheet", "macrosheet")
                part = resolve_target(self.workbook_part, rel.target)
                self.sheets.append(SheetPart(el.get("name", ""), part, kind, el.get("state", "visible")))
            elif tag == "definedName":
                local = el.get("localSheetId")
                self.defined_names.append(
                    DefinedName(
                        el.get("name", ""),
                        el.text or "",
                        int(local) if local is not None and local.isdigit() else None,
                        el.get("hidden", "0") in ("1", "true"),
                    )
                )
        if not any(s.kind == "worksheet" for s in self.sheets):
            raise WorkbookError("the workbook has no worksheet")

    def worksheet(self, title: str) -> SheetPart:
        """The worksheet titled ``title`` (case-insensitive, as in Excel)."""
        for s in self.sheets:
            if s.kind == "worksheet" and s.title.casefold() == title.casefold():
                return s
        titles = [s.title for s in self.sheets if s.kind == "worksheet"]
        close = closest(title, titles)
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        raise WorkbookError(f"the workbook has no sheet named {title!r}; {hint}its sheets are: {', '.join(titles)}")


def closest(word: str, candidates: Iterable[str]) -> list[str]:
    """The candidates nearest to a mistyped ``word`` (case aside): the best match, and any as close as it."""
    import difflib

    scored = []
    for candidate in candidates:
        ratio = difflib.SequenceMatcher(None, word.casefold(), candidate.casefold()).ratio()
        if ratio >= 0.6:
            scored.append((ratio, candidate))
    if not scored:
        return []
    best = max(r for r, _ in scored)
    return [c for r, c in sorted(scored, key=lambda rc: (-rc[0], rc[1])) if r >= best - 0.02][:3]
