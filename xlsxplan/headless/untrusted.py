"""Opening workbooks that came from someone else: the checks made before any of their XML is parsed.

Workbooks travel by e-mail; xlsxplan treats every one it opens as untrusted. :func:`open_package` reads the file
once and refuses it, with one line, before any XML is parsed when:

* it is not a zip (an old ``.xls``, a password-protected workbook, a CSV), the zip is truncated or corrupt, or its
  main part is not an Excel workbook (a ``.docx`` renamed, a binary ``.xlsb``, an OpenDocument file);
* it is a **zip bomb**: the file, the total uncompressed size, the number of parts or one part's compression ratio
  exceed :class:`Limits` (read from the zip's central directory; Python's zip reader never inflates a part beyond
  its declared size, so the declared sizes bound the memory);
* any XML part declares a **DTD or entities** (the "billion laughs" entity expansion and the quadratic blow-up both
  need one; Excel never writes a DTD), anywhere in the part; or starts with more than :data:`BLANK_MAX` of blank
  space, or holds nothing else (padding that would hide a DTD from a check of the first bytes); or declares an
  encoding other than UTF-8, UTF-16 or a single-byte superset of ASCII (Latin-1, Windows-1252). Every part is read
  as a stream, whatever its name (a content type can make any part XML), UTF-16 parts as text. The small parts
  xlsxplan reads itself are parsed through ``defusedxml``, which refuses entities again; the engine is given a
  package none of whose parts holds one;
* it has **external links** (``xl/externalLinks``: formulas reading other workbooks, or DDE links that start
  programs) that anything reaches: a cell formula, a defined name, a data-validation or conditional-format
  formula (:func:`link_reached`). xlsxplan never follows them; it refuses the file rather than compute with values
  it cannot see. A link part nothing reaches (left behind after the formulas that used it were deleted) is kept in
  the output untouched and never read. Cell formulas and defined names are checked for external and DDE
  references too (:func:`formula_threat`);
* a sheet is **too large**: its cells, its formula cells, or the cells of merged ranges and hyperlinks (a merged
  ``A1:XFD1048576`` is 17 billion cells to any reader that creates them) are counted by scanning each sheet's XML as
  a stream, with the last row and column each sheet uses, and the memory the engine (`formualizer`) would need is
  estimated from them (:meth:`Limits.estimate`) and refused above :attr:`Limits.max_memory_gb`, with the reason.
  Once the formulas are read (and before the engine is given them), the ranges they refer to are costed
  (:func:`check_ranges`): the engine goes through every column of a range for each row in use, so ``SUM(A:XFD)``
  over 100,000 used rows takes it half a minute, which nothing interrupts once it has started; such formulas are
  refused with the reason, above :attr:`Limits.max_range_cells`.
* it holds too much of what is **cheap to write and slow to read**, counted in the same scan of every part: row
  records (millions of empty formatted rows zip to a few MB), shared strings, cell formats, conditional-format rules
  and data validations, defined names (the engine parses each as a formula), and XML elements outside the cell
  data (styles, drawings, charts, pivot caches, extensions). Each has a limit in :class:`Limits` and a share in the
  memory estimate.

Macros are never run: xlsxplan has no code that executes VBA or Excel 4.0 macro sheets; a ``.xlsm``'s
``vbaProject.bin`` is copied into the output untouched.

The zip-level and prolog checks are :mod:`xlsxplan.infra.zipfiles`'; the workbook-level ones are here.
"""

from __future__ import annotations

import collections
import contextlib
import html
import itertools
import re
import stat
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import WorkbookError
from ..infra.fileio import read_regular
from ..infra.system import MEMORY_LIMIT_GB
from ..infra.zipfiles import DTD, MB, ZipLimits, check_members, markup, open_zip, reading
from . import references as refs
from .package import MAX_COL, MAX_ROW, Package, range_bounds
from .sheets import SPANNING, formula_kind

MAX_TEXT_CHARS = 32_767
"""Excel's limit on the text of a cell [characters]."""
MAX_FORMULA_CHARS = 8_192
"""Excel's limit on the length of a formula [characters]."""

__all__ = [
    "Limits",
    "SheetStats",
    "PartStats",
    "Inspection",
    "open_package",
    "inspect_bytes",
    "formula_threat",
    "first_formula_threat",
    "link_reached",
    "check_ranges",
    "check_spans",
    "range_costs",
    "RangeCost",
    "sqref_opening",
    "sqref_partial",
]


# Peak resident memory of loading and calculating a workbook with formualizer (and saving it), fitted on
# benchmarks/recalc.py and benchmarks/load_costs.py (BENCHMARKS.md, "Headless recalculation" and "What a workbook
# costs before its formulas") and rounded up: the estimate is 1.0 to 1.4 times the peaks measured.
BYTES_PER_CELL = 250  # every stored cell, constant or formula, and every hyperlinked cell (0.15 kB measured)
BYTES_PER_FORMULA = 2_000  # on top, for each formula cell (1.1 to 1.5 kB measured)
BYTES_PER_NAME = 6_000  # each defined name (5.1 kB measured)
BYTES_PER_ARRAY_ELEMENT = 1_200  # each cell an array formula fills (0.85 kB)
BYTES_PER_MATERIALISED = 50  # each cell of a merged range (the engine keeps the range, not its cells)
BYTES_PER_GRID_CELL = 1.5  # the engine's storage of a sheet: its last used column times its last used row, up to
GRID_ROWS = 32_768  # this many rows (1.1 bytes measured: 0.6 GB for cells in A1, XFD1 and A1048576)
BYTES_PER_SHEET = 40_000  # each worksheet (1,000 sheets: 37 MB measured)
BYTES_PER_ROW = 250  # each <row> record (0.17 kB)
BYTES_PER_STRING = 200  # each shared string (0.11 kB)
BYTES_PER_ELEMENT = 500  # each other XML element the engine reads: styles, rules, validations (0.2 to 0.4 kB)
BYTES_PER_AREA = 1_500  # on top, each area a validation or conditional format lists (`inputs` indexes it: 1.5 kB)
BYTES_PER_TEXT_BYTE = 10  # each byte of text in any part (a 200 MB inline string: 1.7 GB measured)
BASE_BYTES = 70 * MB  # Python, numpy, formualizer and the registry (62 to 69 MB measured)


@dataclass(frozen=True)
class Limits(ZipLimits):
    """What xlsxplan agrees to open. Every limit is checked before the workbook's XML is parsed; the first four are
    the zip's own (:class:`xlsxplan.infra.zipfiles.ZipLimits`).

    The defaults let a 10,000-row scenario sheet (50,000 formula cells) and a 1,000-sheet workbook through on a
    2-core, 24 GiB machine and refuse what would not fit there, or what is cheap to write and slow to read
    (millions of empty formatted rows, shared strings or style records that no cell needs).

    Parameters
    ----------
    max_file_mb : float
        Size of the file on disk [MiB].
    max_parts : int
        Members of the zip [count].
    max_uncompressed_mb : float
        Sum of the declared uncompressed sizes of all members [MiB].
    max_ratio : float
        Uncompressed over compressed size of any member larger than 1 MiB uncompressed [ratio]. Sheet XML
        compresses 5 to 30 times; zip bombs, a thousand times.
    max_sheets : int
        Sheets in the workbook [count].
    max_cells : int
        Cells stored in all sheets, plus those of merged ranges and hyperlinks [count].
    max_formula_cells : int
        Formula cells in all sheets, plus defined names (the engine parses each as a formula); an array formula
        counts once [count].
    max_rows : int
        Row records (``<row>``) in all sheets, empty or not; one sheet holds at most 1,048,576 rows [count].
    max_strings : int
        Shared strings (``<si>``) [count].
    max_styles : int
        Cell formats and differential formats (``<xf>``, ``<dxf>``); Excel itself allows 65,490 [count].
    max_rules : int
        Conditional-format rules and data validations (``<cfRule>``, ``<dataValidation>``): the engine spends
        about 10 us on each [count].
    max_areas : int
        Areas that data-validation and conditional-format ranges list (``sqref="A1:B8 D1:D9"`` counts 2), in all
        sheets: ``xlsxplan inputs`` indexes each (160,000 beside 80,000 inputs: about 10 s for the command), and
        the memory estimate counts 1.5 kB for each [count].
    max_elements : int
        XML elements outside the cell data, whatever their kind: every element of every part except the cell data
        of sheets and plain shared strings (styles, rules, drawings, charts, pivot caches, extensions), and each
        area a data-validation or conditional-format range lists (``sqref="A1:B8 D1:D9"`` counts 2) [count].
    max_memory_gb : float
        Estimated peak memory of loading and calculating the workbook (:meth:`estimate`) [GB].
    max_text_mb : float
        Text in all parts, outside markup: cell values, strings, formulas [MiB]. Each cell's text is also held to
        Excel's own limits: 32,767 characters, and 8,192 for a formula.
    max_range_cells : int
        Cells the engine goes through for the ranges that formulas refer to, summed over the formulas: each
        range's rows that hold cells times its columns (:func:`range_costs`); a cell handed to an xlsxplan function
        counts 50 times. At about 10 ns a cell, the default is some 5 seconds [count].
    """

    max_sheets: int = 2_000
    max_cells: int = 5_000_000
    max_formula_cells: int = 200_000
    max_rows: int = 2_000_000
    max_strings: int = 2_000_000
    max_styles: int = 100_000
    max_rules: int = 50_000
    max_areas: int = 200_000
    max_elements: int = 4_000_000
    max_memory_gb: float = MEMORY_LIMIT_GB
    max_text_mb: float = 256
    max_range_cells: int = 500_000_000

    @staticmethod
    def estimate(
        cells: int,
        formulas: int,
        array_elements: int,
        materialised: int,
        rows: int = 0,
        strings: int = 0,
        elements: int = 0,
        grid: int = 0,
        sheets: int = 0,
        names: int = 0,
        text: int = 0,
        areas: int = 0,
    ) -> float:
        """Estimated peak memory of loading, calculating and saving a workbook with the engine [bytes].

        ``70 MiB + 0.25 kB x cells + 2 kB x formulas + 1.2 kB x array-formula elements + 0.05 kB x merged cells
        + 0.25 kB x rows + 0.2 kB x shared strings + 0.5 kB x other XML elements + 1.5 bytes x the grid + 40 kB x
        sheets + 6 kB x defined names + 10 bytes x bytes of text + 1.5 kB x areas``, each fitted on
        ``benchmarks/recalc.py`` or ``benchmarks/load_costs.py`` and rounded up. ``cells`` includes hyperlinked
        cells; ``array_elements``, the cells array formulas and data tables fill; ``grid``, each sheet's last used
        column times its last used row (up to :data:`GRID_ROWS`), which the engine's storage spans whatever the
        cells between; ``areas``, the areas data-validation and conditional-format ranges list (``sqref``; each is
        also one of ``elements``), which ``xlsxplan inputs`` indexes (1.6 kB at its peak for 100,000 nested ones).
        """
        return (
            BASE_BYTES
            + BYTES_PER_CELL * cells
            + BYTES_PER_FORMULA * formulas
            + BYTES_PER_ARRAY_ELEMENT * array_elements
            + BYTES_PER_MATERIALISED * materialised
            + BYTES_PER_ROW * rows
            + BYTES_PER_STRING * strings
            + BYTES_PER_ELEMENT * elements
            + BYTES_PER_GRID_CELL * grid
            + BYTES_PER_SHEET * sheets
            + BYTES_PER_NAME * names
            + BYTES_PER_TEXT_BYTE * text
            + BYTES_PER_AREA * areas
        )


@dataclass
class PartStats:
    """What the stream scan of one XML part found (:func:`inspect_bytes` scans every part, whatever its name).

    ``elements`` counts the elements outside the cell data: all of the part's elements but those inside
    ``<sheetData>`` (read as a stream) and the ``<si><t>`` pair of each shared string (read one at a time).
    """

    part: str
    elements: int = 0
    cells: int = 0
    formulas: int = 0
    array_elements: int = 0
    materialised: int = 0
    linked: int = 0
    rows: int = 0
    strings: int = 0
    styles: int = 0
    rules: int = 0
    max_row: int = 0  # the last row and column that hold a cell (from the cells' own references)
    max_col: int = 0
    dimension: str | None = None
    bad_range: tuple[str, str, str] | None = None  # (what, ref, why): reported with the sheet's title
    junk: int = 0  # elements inside <sheetData> that are not cell data (counted in ``elements``)
    text_bytes: int = 0  # bytes of text outside markup, in runs of TEXT_RUN_COUNTED bytes or more
    too_long: tuple[str, int, int, str] | None = None  # (formula or text, characters, limit, element)
    areas: int = 0  # areas listed by data-validation and conditional-format ranges (sqref), also in ``elements``
    widest: tuple[int, str, str] = (0, "", "")  # the array formula or data table filling most cells: (cells, ref, what)


@dataclass
class SheetStats(PartStats):
    """What the stream scan of one worksheet part found: its :class:`PartStats`, with the sheet's title."""

    title: str = ""


@dataclass
class Inspection:
    """A package that passed every check, with what was counted."""

    package: Package
    sheets: list[SheetStats] = field(default_factory=list)
    uncompressed: int = 0
    parts: dict[str, PartStats] = field(default_factory=dict)

    @property
    def cells(self) -> int:
        return sum(s.cells for s in self.sheets)

    @property
    def formulas(self) -> int:
        return sum(s.formulas for s in self.sheets)

    @property
    def names(self) -> int:
        """Defined names, which the engine compiles as formulas."""
        return len(self.package.defined_names)

    @property
    def rows(self) -> int:
        return sum(s.rows for s in self.sheets)

    @property
    def strings(self) -> int:
        return sum(p.strings for p in self.parts.values())

    @property
    def styles(self) -> int:
        return sum(p.styles for p in self.parts.values())

    @property
    def rules(self) -> int:
        return sum(p.rules for p in self.parts.values())

    @property
    def elements(self) -> int:
        return sum(p.elements for p in self.parts.values())

    @property
    def estimated_bytes(self) -> float:
        return Limits.estimate(
            self.cells + sum(s.linked for s in self.sheets),
            self.formulas,
            sum(s.array_elements for s in self.sheets),
            sum(s.materialised for s in self.sheets),
            self.rows,
            self.strings,
            self.elements,
            self.grid,
            len(self.sheets),
            self.names,
            self.text_bytes,
            self.areas,
        )

    @property
    def areas(self) -> int:
        """Areas listed by data-validation and conditional-format ranges (each also one of :attr:`elements`)."""
        return sum(p.areas for p in self.parts.values())

    @property
    def text_bytes(self) -> int:
        return sum(p.text_bytes for p in self.parts.values())

    @property
    def grid(self) -> int:
        """The cells the engine's storage of each sheet spans: its last used column times its last used row (up to
        :data:`GRID_ROWS`)."""
        return sum(s.max_col * min(s.max_row, GRID_ROWS) for s in self.sheets)


def open_package(path: Path | str, limits: Limits | None = None) -> Inspection:
    """Read ``path`` once and check it (see the module's docstring); WorkbookError with the reason if refused."""
    limits = limits or Limits()
    path = Path(path)
    cap = int(limits.max_file_mb * MB)
    with contextlib.suppress(OSError):  # stat() never blocks; what the path is, read_regular decides
        size = path.stat().st_size
        if size > cap and stat.S_ISREG(path.stat().st_mode):
            raise WorkbookError(
                f"{path.name} is {size / MB:,.0f} MiB; xlsxplan opens workbooks up to {limits.max_file_mb:,.0f} MiB"
            )
    data = read_regular(path, cap, "workbook")  # a FIFO or a device is refused, never waited on
    if len(data) > cap:
        raise WorkbookError(f"{path.name} is over {limits.max_file_mb:,.0f} MiB; xlsxplan opens workbooks up to that")
    return inspect_bytes(data, str(path), limits)


_P = rb"(?:[A-Za-z_][\w.\-]*:)?"
_TAG = re.compile(rb"<([A-Za-z_][\w.\-:]*)")  # a start tag's name, with its prefix if any
_FORMULA = re.compile(rb"<" + _P + rb"f(?=[\s/>])([^>]*)>")
_RANGE_ATTR = re.compile(rb"<" + _P + rb"(mergeCell|hyperlink)(?=[\s/>])([^>]*)>")
_DIMENSION = re.compile(rb"<" + _P + rb"dimension(?=[\s/>])([^>]*)>")
_SHEET_DATA = re.compile(rb"<" + _P + rb"sheetData\b[^>]*?(/?)>")
_SHEET_DATA_END = re.compile(rb"</" + _P + rb"sheetData\s*>")
_REF = re.compile(rb"""\bref\s*=\s*["']([^"']*)["']""")
_CELL_R = rb"""c\s[^>]*?\br\s*=\s*["']\$?([A-Za-z]{1,9})\$?(\d{1,12})["']"""
_ROW_R = rb"""row\s[^>]*?\br\s*=\s*["'](\d{1,12})["']"""
_CELL_AT = re.compile(rb"<" + _P + _CELL_R)
_ROW_AT = re.compile(rb"<" + _P + _ROW_R)
_CELL_AT_PLAIN, _ROW_AT_PLAIN = re.compile(rb"<" + _CELL_R), re.compile(rb"<" + _ROW_R)
"""The same without a namespace prefix: what they match in a buffer that has no prefixed tag, found at a third of
the cost (the prefix, tried at every tag, is what made them slow)."""
_PREFIXED_TAG = re.compile(rb"<[A-Za-z_][\w.\-]*:")
_SQREF_OPEN = re.compile(rb"""\bsqref\s*=\s*(["'])|[<:]sqref\b(?!\s*=)""")
_SQREF_PARTIAL = re.compile(rb"(?:[<:]?s(?:q(?:r(?:e(?:f(?:\s*(?:=\s*)?)?)?)?)?)?|[<:])\Z")
_SPACE_RUN = re.compile(rb"\s+")


def sqref_opening(data: bytes, pos: int) -> re.Match[bytes] | None:
    """``_SQREF_OPEN.search(data, pos)``, searched only from the first "sqref" on: every opening holds it, at its
    start or one byte after, and the pattern's alternation has no literal prefix to skip by, so a search from ``pos``
    tries every byte (a tenth of a recalculation of the serving template)."""
    at = data.find(b"sqref", pos)
    return None if at < 0 else _SQREF_OPEN.search(data, max(pos, at - 1))


def sqref_partial(data: bytes, pos: int) -> re.Match[bytes] | None:
    """``_SQREF_PARTIAL.search(data, pos)``, searched only near the end: an opening cut there is at most "<sqref"
    (6 bytes, no blank space) before the blank space, "=" and blank space that may end ``data``."""
    core = data.rstrip()  # the ASCII blank space \s matches in a bytes pattern
    if core.endswith(b"="):
        core = core[:-1].rstrip()
    return _SQREF_PARTIAL.search(data, max(pos, len(core) - 6))


class _AreaCount:
    """Counts the areas that data-validation and conditional-format ranges list, in a part fed in pieces cut
    anywhere (a tag longer than a chunk is cut inside): ``sqref="A1:B2 D4"`` counts 2, as does the text of an
    extension's ``<xm:sqref>A1:B2 D4</xm:sqref>``. An opening cut between two pieces is carried to the next (as a
    few bytes: blank space is kept as one); an area cut between two may count twice, never less than once. One
    pass over each piece."""

    def __init__(self) -> None:
        self.until: bytes | None = None  # inside a range list, counting until this byte (or, for b">", the tag's end)
        self.tail = b""  # the end of the last piece, which may begin an opening

    def feed(self, buf: bytes) -> int:
        """The areas listed in ``buf`` (with what the last piece left open) [count]."""
        data, self.tail = self.tail + buf, b""
        pos = count = 0
        while True:
            if self.until is not None:
                end = data.find(self.until, pos)
                if self.until != b">":
                    count += len(data[pos : end if end >= 0 else len(data)].split())
                if end < 0:
                    return count
                pos = end + 1
                self.until = b"<" if self.until == b">" else None
                continue
            m = sqref_opening(data, pos)
            if m is None:
                break
            if m.group(1) is None and not data[m.end() :].strip():  # "<sqref" or ":sqref" at the end: an
                self.tail = _SPACE_RUN.sub(b" ", data[m.start() :])  # attribute's "=" may come next
                return count
            pos, self.until = m.end(), m.group(1) or b">"
        partial = sqref_partial(data, pos)
        if partial is not None:
            self.tail = _SPACE_RUN.sub(b" ", data[partial.start() :])
        return count


_SPANNING = re.compile(rb"""\bt\s*=\s*["'](?:array|dataTable)["']""")  # a prefilter: formula_kind decides
_SPAN_NAME = {"array": "array formula", "dataTable": "data table"}
"""Each kind of formula that fills the cells its ``ref`` names (:data:`.sheets.SPANNING`), as a message names it."""


def _col_number(letters: bytes) -> int:
    n = 0
    for ch in letters.upper():
        n = n * 26 + ch - 64
    return n


def _elements(buf: bytes) -> int:
    """Start tags in ``buf``: every ``<`` but those of end tags, declarations, processing instructions."""
    return buf.count(b"<") - buf.count(b"</") - buf.count(b"<!") - buf.count(b"<?")


def _area(ref: bytes) -> int:
    r1, c1, r2, c2 = range_bounds(ref.decode("ascii", errors="replace").split(" ")[0])
    return (r2 - r1 + 1) * (c2 - c1 + 1)


_CELL_DATA = (b"c", b"row", b"v", b"f", b"is", b"t")
"""Elements of cell data inside ``<sheetData>``, read as a stream: any other element there (junk between rows, in
a row, in a cell) is counted with the elements read as a tree."""
TEXT_RUN_COUNTED = 256
"""A run of text this long or longer [bytes] counts byte for byte in :attr:`PartStats.text_bytes`; a shorter one
counts with the element it sits in (each element and cell has its share of the memory estimate)."""
_TEXT_RUN = re.compile(rb">[^<]{%d,}" % TEXT_RUN_COUNTED)
_ENTITY = re.compile(rb"&#?\w{1,10};")
_TEXT_LIMITS = {b"f": MAX_FORMULA_CHARS, b"definedName": MAX_FORMULA_CHARS, b"t": MAX_TEXT_CHARS, b"v": MAX_TEXT_CHARS}


def _chars(raw: bytes) -> int:
    """Characters of a run of UTF-8 text as written in XML (``&amp;`` one character)."""
    saved = sum(len(m) - 1 for m in _ENTITY.findall(raw)) if b"&" in raw else 0
    return len(raw.decode("utf-8", "ignore")) - saved


class _PartScan:
    """Counts in a part's markup, fed as buffers that each end just before a ``<`` (or, for a text run longer
    than a chunk, inside it)."""

    def __init__(self, part: str) -> None:
        self.stats = PartStats(part)
        self.outside = 0  # elements outside <sheetData>
        self.in_data = 0  # 0 before <sheetData>, 1 inside it, 2 after it
        self.run_tag: bytes | None = None  # the element the text run at the end of the last buffer is in
        self.run_chars = 0  # and its characters so far
        self.areas = _AreaCount()

    def feed(self, buf: bytes) -> None:
        s = self.stats
        self._text(buf)
        if self.areas.until is not None or self.areas.tail or b"sqref" in buf:
            s.areas += self.areas.feed(buf)
        inside = b""  # the part of buf inside <sheetData>
        if self.in_data == 0:  # before <sheetData>, or a part that has none
            m = _SHEET_DATA.search(buf) if b"sheetData" in buf else None
            if m is None:
                self.outside += _elements(buf)
            else:
                self.outside += _elements(buf[: m.end()])
                self.in_data = 2 if m.group(1) else 1
                if self.in_data == 1:
                    inside = self._after_data(buf, m.end())
                else:
                    self.outside += _elements(buf[m.end() :])
        elif self.in_data == 1:
            inside = self._after_data(buf, 0)
        else:
            self.outside += _elements(buf)
        census: dict[bytes, int] = {}
        for tag, n in collections.Counter(_TAG.findall(buf)).items():
            local = tag.rpartition(b":")[2]  # any prefix: readers match the namespace, not the prefix
            census[local] = census.get(local, 0) + n
        if inside:
            data = census if len(inside) == len(buf) else self._census(inside)
            s.junk += max(0, _elements(inside) - sum(data.get(t, 0) for t in _CELL_DATA))
        s.cells += census.get(b"c", 0)
        if census.get(b"c") and self.in_data:
            self._extent(buf)
        s.formulas += census.get(b"f", 0)
        s.rows += census.get(b"row", 0)
        s.strings += census.get(b"si", 0)
        s.styles += census.get(b"xf", 0) + census.get(b"dxf", 0)
        s.rules += census.get(b"cfRule", 0) + census.get(b"dataValidation", 0)
        if census.get(b"f") and (b"array" in buf or b"dataTable" in buf):
            for m in _FORMULA.finditer(buf):
                if _SPANNING.search(m.group(1)):
                    self._span(m.group(1))
        if census.get(b"mergeCell") or census.get(b"hyperlink"):
            for m in _RANGE_ATTR.finditer(buf):
                ref = _REF.search(m.group(2))
                if m.group(1) == b"hyperlink":
                    if ref:  # a reader that gives each hyperlinked cell a value holds it as a cell
                        s.linked += self._area(ref.group(1), "hyperlink") if b":" in ref.group(1) else 1
                elif ref and b":" in ref.group(1):
                    s.materialised += self._area(ref.group(1), "merged range")
        if s.dimension is None and census.get(b"dimension"):
            dm = _DIMENSION.search(buf)
            if dm:
                ref = _REF.search(dm.group(1))
                s.dimension = ref.group(1).decode("ascii", errors="replace") if ref else ""

    @staticmethod
    def _census(buf: bytes) -> dict[bytes, int]:
        census: dict[bytes, int] = {}
        for tag, n in collections.Counter(_TAG.findall(buf)).items():
            local = tag.rpartition(b":")[2]
            census[local] = census.get(local, 0) + n
        return census

    def _text(self, buf: bytes) -> None:
        """Count the text bytes (runs of :data:`TEXT_RUN_COUNTED` or more) and check the long runs against Excel's
        limits: a cell's text (``<t>``, ``<v>``) at most 32,767 characters, a formula (``<f>``, a defined name) at
        most 8,192; a run that spans buffers is followed from one to the next."""
        s = self.stats
        first = buf.find(b"<")
        if first < 0:  # all text: the run the last buffer ended with goes on
            s.text_bytes += len(buf)
            self._carry(buf)
            return
        if first:
            s.text_bytes += first
            self._carry(buf[:first])
        self.run_tag, self.run_chars = None, 0
        for m in _TEXT_RUN.finditer(buf):  # no object per tag: a match per long run only
            start, end = m.start() + 1, m.end()
            s.text_bytes += end - start
            if end - start > MAX_FORMULA_CHARS:
                run = buf[start:end]
                self._check(self._tag_before(buf, m.start()), _chars(run), run)
        gt = buf.rfind(b">")
        if gt >= 0 and gt + 1 < len(buf):  # a run at the end: a longer one may go on in the next buffer
            self.run_tag = self._tag_before(buf, gt)
            self.run_chars = _chars(buf[gt + 1 :])

    def _carry(self, piece: bytes) -> None:
        if self.run_tag is not None:
            self.run_chars += _chars(piece)
            self._check(self.run_tag, self.run_chars, piece[:40])

    @staticmethod
    def _tag_before(buf: bytes, gt: int) -> bytes | None:
        """The local name of the start tag that ends at ``gt`` (None for an end tag or anything else)."""
        lt = buf.rfind(b"<", 0, gt + 1)
        m = _TAG.match(buf, lt) if lt >= 0 else None
        return m.group(1).rpartition(b":")[2] if m else None

    def _check(self, tag: bytes | None, chars: int, sample: bytes) -> None:
        limit = _TEXT_LIMITS.get(tag or b"")
        if limit is not None and chars > limit and self.stats.too_long is None:
            what = "formula" if limit == MAX_FORMULA_CHARS else "text"
            self.stats.too_long = (what, chars, limit, tag.decode() if tag else "")

    def _extent(self, buf: bytes) -> None:
        """The last row and column holding a cell: what the engine sizes a sheet's storage by."""
        s = self.stats
        prefixed = _PREFIXED_TAG.search(buf) is not None
        rows = (_ROW_AT if prefixed else _ROW_AT_PLAIN).findall(buf)
        if rows:
            s.max_row = max(s.max_row, max(map(int, rows)))
        cells = (_CELL_AT if prefixed else _CELL_AT_PLAIN).findall(buf)
        if cells:  # the columns' letters read once each (a column holds many cells), the rows without a loop
            letters, numbers = zip(*cells)
            s.max_col = max(s.max_col, max(map(_col_number, set(letters))))
            s.max_row = max(s.max_row, max(map(int, numbers)))

    def _after_data(self, buf: bytes, pos: int) -> bytes:
        """Inside <sheetData> from ``pos``: cell data is read as a stream; count what follows its end. Returns
        the part of ``buf`` inside it."""
        end = _SHEET_DATA_END.search(buf, pos) if b"sheetData" in buf else None
        if end is not None:
            self.in_data = 2
            self.outside += _elements(buf[end.start() :])
            return buf[pos : end.start()]
        return buf[pos:] if pos else buf

    def _span(self, attrs: bytes) -> None:
        """Count the cells an array formula or a data table fills, its ``ref`` read as the sheet's index reads it
        (:func:`.sheets.formula_kind`: a repeated or prefixed attribute cannot show this scan one range and the
        index another)."""
        kind, ref = formula_kind(attrs.decode("utf-8", "replace"))
        if kind in SPANNING and ref:
            what = _SPAN_NAME[kind]
            cells = self._area(ref.encode("utf-8", "replace"), what)
            s = self.stats
            s.array_elements += cells
            if cells > s.widest[0]:
                s.widest = (cells, ref, what)

    def _area(self, ref: bytes, what: str) -> int:
        try:
            return _area(ref)
        except WorkbookError as err:
            if self.stats.bad_range is None:
                self.stats.bad_range = (what, ref.decode(errors="replace"), err.message)
            return 0

    def over(self, limits: Limits) -> bool:
        """Whether this part alone is past a limit already, so that scanning on would only cost time."""
        s = self.stats
        return (
            self.outside + s.junk - 2 * s.strings > limits.max_elements
            or s.areas > limits.max_areas
            or s.text_bytes > limits.max_text_mb * MB
            or s.too_long is not None
        )

    def finish(self) -> PartStats:
        # a shared string's <si> and <t> are read one string at a time, not kept as a tree
        self.stats.elements = max(self.outside - 2 * self.stats.strings, 0) + self.stats.junk + self.stats.areas
        return self.stats


def _tag_aligned(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The chunks cut anew so that each buffer ends just before a ``<``: no tag is split between two."""
    carry = b""
    for chunk in chunks:
        if not chunk:
            continue
        data = carry + chunk
        cut = data.rfind(b"<")
        if cut <= 0:  # one tag or text run longer than a chunk: take it whole
            carry = b""
        else:
            data, carry = data[:cut], data[cut:]
        yield data
    if carry:
        yield carry


def _scan_part(zf: zipfile.ZipFile, info: zipfile.ZipInfo, name: str, limits: Limits | None = None) -> PartStats | None:
    """Check a part's prolog (as :func:`check_prolog`), refuse a DTD anywhere after it, and count what the part
    holds, reading it once as a stream in bounded memory; None for a part that is not XML."""
    part = info.filename
    with reading(zf, info, name) as f:
        start = markup(f, part, name)
        if start is None:
            return None
        scan = _PartScan(part)
        for data in _tag_aligned(itertools.chain([start[0]], start[1])):
            if b"<!" in data and DTD.search(data):
                raise WorkbookError(f"{name} is refused: the part {part} declares a DTD or entities")
            scan.feed(data)
            if limits is not None and scan.over(limits):
                break  # refused once counted (_check_markup): the rest need not be read
    return scan.finish()


def _too_long(found: tuple[str, int, int, str], where: str) -> str:
    what, chars, limit, tag = found
    if what == "formula":
        return f"{where} holds a formula of {chars:,} characters (<{tag}>); Excel's limit is {limit:,}"
    return f"{where} holds a text of {chars:,} characters (<{tag}>); Excel holds at most {limit:,} in a cell"


def _sheet_stats(stats: PartStats, title: str) -> SheetStats:
    if stats.too_long is not None:
        raise WorkbookError(_too_long(stats.too_long, f"sheet {title!r}"))
    if stats.max_row > MAX_ROW or stats.max_col > MAX_COL:
        raise WorkbookError(
            f"sheet {title!r} has a cell outside Excel's grid (its cells reach row {stats.max_row:,} and column "
            f"{stats.max_col:,}; the grid is {MAX_ROW:,} rows by {MAX_COL:,} columns)"
        )
    if stats.bad_range is not None:
        what, ref, why = stats.bad_range
        raise WorkbookError(f"sheet {title!r} has a {what} with a bad range {ref!r}: {why}")
    if stats.dimension:
        try:
            range_bounds(stats.dimension)
        except WorkbookError:
            raise WorkbookError(
                f"sheet {title!r} declares the dimension {stats.dimension!r}, outside Excel's grid "
                f"({MAX_ROW:,} rows by {MAX_COL:,} columns)"
            ) from None
    return SheetStats(**vars(stats), title=title)


def inspect_bytes(data: bytes, name: str, limits: Limits | None = None) -> Inspection:
    """Check a workbook held in memory; return its :class:`Inspection` or raise WorkbookError with the reason.

    Every message starts with ``name``.
    """
    try:
        return _inspect(data, name, limits or Limits())
    except WorkbookError as err:
        if err.message.startswith(name):
            raise
        raise WorkbookError(f"{name}: {err.message}") from None


def _inspect(data: bytes, name: str, limits: Limits) -> Inspection:
    zf = open_zip(data, name)
    total = check_members(zf, name, limits)
    parts: dict[str, PartStats] = {}
    for info in zf.infolist():  # every part, whatever its name: a content type can make any part XML
        if not info.is_dir():
            stats = _scan_part(zf, info, name, limits)
            if stats is not None:
                parts[info.filename] = stats
    _check_markup(parts, name, limits)  # before anything, xlsxplan's own reading of the structure included, parses
    pkg = Package(data, zf)
    pkg.load_structure()
    links = [n for n in pkg.names if n.lower().startswith("xl/externallinks/") and not n.lower().endswith(".rels")]
    ext_types = [n for n in pkg.names if "externalLink" in (pkg.content_type(n) or "")]
    if (links or ext_types) and link_reached(pkg):
        raise WorkbookError(
            f"{name} has links to other workbooks or DDE links ({(links or ext_types)[0]}); xlsxplan never follows "
            "them, so it refuses the file: break the links in Excel (Data > Edit Links > Break Link) and try again"
        )
    for dn in pkg.defined_names:
        threat = formula_threat(dn.text)
        if threat:
            raise WorkbookError(f"{name} is refused: the defined name {dn.name} {threat}")
    if len(pkg.sheets) > limits.max_sheets:
        raise WorkbookError(f"{name} has {len(pkg.sheets):,} sheets; the limit is {limits.max_sheets:,}")
    inspection = Inspection(pkg, uncompressed=total, parts=parts)
    for sheet in pkg.sheets:
        if sheet.kind == "worksheet":
            if not pkg.has(sheet.part):
                raise WorkbookError(f"{name} is corrupt: sheet {sheet.title!r} has no part {sheet.part}")
            stats = parts.get(sheet.part) or PartStats(sheet.part)  # not XML: reading it will say it is corrupt
            inspection.sheets.append(_sheet_stats(stats, sheet.title))
    _check_size(inspection, name, limits)
    return inspection


def _check_markup(parts: Mapping[str, PartStats], name: str, limits: Limits) -> None:
    """Refuse what is cheap to write and slow to read, counted over every XML part: shared strings, style records,
    conditional-format rules and data validations, and XML elements outside the cell data."""

    def most(attr: str) -> str:
        part = max(parts.values(), key=lambda p: getattr(p, attr))
        return f"{getattr(part, attr):,} in {part.part}"

    for p in parts.values():
        if p.too_long is not None and not p.part.startswith("xl/worksheets/"):  # a sheet's says its title
            raise WorkbookError(_too_long(p.too_long, f"the part {p.part}"))
    text = sum(p.text_bytes for p in parts.values())
    if text > limits.max_text_mb * MB:
        raise WorkbookError(
            f"{name} holds {text / MB:,.0f} MiB of text ({most('text_bytes')} bytes); the limit is "
            f"{limits.max_text_mb:,.0f} MiB"
        )
    strings = sum(p.strings for p in parts.values())
    if strings > limits.max_strings:
        raise WorkbookError(
            f"{name} has {strings:,} shared strings; the limit is {limits.max_strings:,} (the engine reads every one "
            "before any cell)"
        )
    styles = sum(p.styles for p in parts.values())
    if styles > limits.max_styles:
        raise WorkbookError(
            f"{name} has {styles:,} cell formats (xf and dxf records, {most('styles')}); Excel allows 65,490 and "
            f"the limit is {limits.max_styles:,}"
        )
    rules = sum(p.rules for p in parts.values())
    if rules > limits.max_rules:
        raise WorkbookError(
            f"{name} has {rules:,} conditional-format rules and data validations ({most('rules')}); the limit is "
            f"{limits.max_rules:,}"
        )
    areas = sum(p.areas for p in parts.values())
    if areas > limits.max_areas:
        raise WorkbookError(
            f"{name} lists at least {areas:,} areas in its data-validation and conditional-format ranges "
            f"({most('areas')}); the limit is {limits.max_areas:,}"
        )
    elements = sum(p.elements for p in parts.values())
    if elements > limits.max_elements:
        raise WorkbookError(
            f"{name} has {elements:,} XML elements outside cell data ({most('elements')}); the engine reads an "
            f"object for each, and the limit is {limits.max_elements:,}"
        )


def _check_size(ins: Inspection, name: str, limits: Limits) -> None:
    cells = ins.cells + sum(s.materialised + s.linked for s in ins.sheets)
    biggest = max(ins.sheets, key=lambda s: s.cells + s.materialised + s.linked)
    if cells > limits.max_cells:
        most = biggest.cells + biggest.materialised + biggest.linked
        raise WorkbookError(
            f"{name} has {cells:,} cells (with merged and hyperlinked ranges; {most:,} in sheet {biggest.title!r}); "
            f"the limit is {limits.max_cells:,}"
        )
    if ins.rows > limits.max_rows:
        longest = max(ins.sheets, key=lambda s: s.rows)
        raise WorkbookError(
            f"{name} has {ins.rows:,} row records ({longest.rows:,} in sheet {longest.title!r}, which stores "
            f"{longest.cells:,} cells: formatted empty rows?); the limit is {limits.max_rows:,}"
        )
    formulas = ins.formulas + ins.names
    if formulas > limits.max_formula_cells:
        busiest = max(ins.sheets, key=lambda s: s.formulas)
        names = f" and {ins.names:,} defined names" if ins.names else ""
        raise WorkbookError(
            f"{name} has {ins.formulas:,} formula cells{names} ({busiest.formulas:,} in sheet "
            f"{busiest.title!r}); the headless engine takes about 30 us and 2 kB for each, and the limit is "
            f"{limits.max_formula_cells:,}: compute long columns with one array formula instead"
        )
    need = ins.estimated_bytes / 1e9
    if need > limits.max_memory_gb:
        extra = [(ins.names, "defined names"), (ins.rows, "rows"), (ins.strings, "shared strings")]
        extra.append((ins.elements, "other XML elements"))
        counted = "".join(f", {n:,} {what}" for n, what in extra if n)
        spans = sum(s.array_elements for s in ins.sheets)
        if spans:
            wide = max(ins.sheets, key=lambda s: s.widest[0])
            cells, ref, what = wide.widest
            counted += (
                f", {spans:,} cells filled by array formulas and data tables, the largest {ref} "
                f"({cells:,} cells, {_ARTICLE[what]} {what} in sheet {wide.title!r})"
            )
        raise WorkbookError(
            f"{name} would need about {need:,.1f} GB of memory to recalculate ({ins.cells:,} cells, "
            f"{ins.formulas:,} formulas{counted}); the limit is {limits.max_memory_gb:g} GB"
        )


_ARTICLE = {"array formula": "an", "data table": "a"}


def check_spans(
    ins: Inspection, spans: Mapping[str, Iterable[tuple[str, tuple[int, int, int, int]]]], limits: Limits
) -> None:
    """Refuse, before any is listed, the cells that array formulas and data tables fill, as the sheets' index reads
    them: ``spans`` is {sheet title: [(kind, (first row, first column, last row, last column)), ...]}.

    xlsxplan lists each of those cells as a formula cell and writes a value into it (about 0.2 kB each to list,
    0.5 kB to write); the stream scan before parsing counts them from the same reading of ``<f ref=...>``
    (:func:`.sheets.formula_kind`). Here the count is taken again from the index itself, each sheet's the larger
    of the two, and the workbook's memory estimate (1.2 kB a cell) checked again: what is filled is what was
    counted. WorkbookError, one line naming the largest range and the limit."""
    from .package import col_letter

    by_title = {s.title: s for s in ins.sheets}
    grew = False
    for title, found in spans.items():
        stats = by_title.get(title)
        if stats is None:
            continue
        total = 0
        for kind, (r1, c1, r2, c2) in found:
            cells = (r2 - r1 + 1) * (c2 - c1 + 1)
            total += cells
            if cells > stats.widest[0]:
                what = _SPAN_NAME[kind]
                stats.widest = (cells, f"{col_letter(c1)}{r1}:{col_letter(c2)}{r2}", what)
        if total > stats.array_elements:
            stats.array_elements, grew = total, True
    if grew:
        _check_size(ins, "the workbook", limits)


# ---------------------------------------------------------------------------------------------------------------
# Formulas that reach outside the workbook


def formula_threat(formula: str) -> str | None:
    """Why a formula (or a defined name's text) must not be evaluated, or None: a DDE call, a reference to another
    workbook or one outside Excel's grid, decided on the engine's own tokens (:func:`.references.threat`)."""
    return refs.threat(formula)


def first_formula_threat(formulas: Mapping[Any, str]) -> tuple[Any, str] | None:
    """The first of ``formulas`` ({where: text}, in order) that :func:`formula_threat` refuses and why, or None.
    A sheet whose formulas cannot reach out, as almost every sheet's cannot, is cleared by one test over all their
    text (:func:`.references.may_threaten`), not by a test per formula."""
    if not refs.may_threaten(formulas.values()):
        return None
    for where, text in formulas.items():
        threat = formula_threat(text) if text else None
        if threat:
            return where, threat
    return None


_RULE_FORMULA = re.compile(rb"<((?:\w+:)?formula[12]?|\w+:f)>([^<]*)</\1\s*>")
"""A data-validation rule's ``<formula1>``/``<formula2>``, a conditional-format rule's ``<formula>``, and their
Excel 2010 extension forms (``<xm:f>``); cell formulas (a plain ``<f>``, not matched: a sheet's cells cost no match
each) are checked with the cells."""


def rule_formula_threat(sheet_xml: bytes) -> tuple[str, str] | None:
    """The first data-validation or conditional-format formula of a sheet's XML that reaches outside the workbook,
    and why (:func:`formula_threat`), or None. What a link "reaches" is one definition for every place a formula
    lives: cell formulas, defined names, and these rules, which Excel evaluates too (a DDE call in a validation list
    runs when the list drops down). One linear pass over the part."""
    if b"formula" not in sheet_xml and b":f>" not in sheet_xml:  # no rule formula: two searches for bytes
        return None
    for match in _RULE_FORMULA.finditer(sheet_xml):
        text = html.unescape(match.group(2).decode("utf-8", "replace")).strip()
        threat = formula_threat(text) if text else None
        if threat:
            return text, threat
    return None


_ANY_FORMULA = re.compile(rb"<((?:\w+:)?(?:formula[12]?|f))\b[^>]*?(?<!/)>([^<]*)</\1\s*>")
"""Every formula a sheet part holds: a cell's ``<f>`` (with its attributes), a data-validation rule's
``<formula1>``/``<formula2>``, a conditional-format rule's ``<formula>``, and their Excel 2010 extension forms."""
_LINK_THREATS = ("refers to another workbook", "holds a DDE call", "cannot be read by the engine's tokenizer")
"""How :func:`formula_threat` says a formula reaches outside the workbook (the rest: outside Excel's grid)."""


def _reaches_out(text: str) -> bool:
    threat = formula_threat(text) if text else None
    return threat is not None and threat.startswith(_LINK_THREATS)


def link_reached(pkg: Package) -> bool:
    """Whether anything in the workbook reaches an external or DDE link: a cell formula, a defined name, or a
    data-validation or conditional-format formula that refers to another workbook or holds a DDE call
    (:func:`formula_threat`, the one definition of what reaches outside the workbook). Read only when the
    package has a link part, before any XML is parsed: one linear pass over the text of each sheet part."""
    if any(_reaches_out(dn.text) for dn in pkg.defined_names):
        return True
    for sheet in pkg.sheets:
        if not pkg.has(sheet.part):
            continue
        for match in _ANY_FORMULA.finditer(pkg.read(sheet.part)):
            if _reaches_out(html.unescape(match.group(2).decode("utf-8", "replace")).strip()):
                return True
    return False


# ---------------------------------------------------------------------------------------------------------------
# Ranges that formulas refer to

BYTES_PER_VISITED = 1.2
"""Memory the engine spends per cell it goes through for a range (measured: 0.2 GB for 164 million)."""
BYTES_PER_PASSED = 250
"""Memory per cell of a range handed to an xlsxplan function, which gets it as Python values."""
PASSED_WEIGHT = 50
"""A cell handed to an xlsxplan function costs about as much time as this many cells gone through in the engine."""


@dataclass(frozen=True)
class RangeCost:
    """What one range in one formula costs the engine: the cells it goes through (the range's rows in use times its
    columns) and, when an xlsxplan function (or a native one computed element by element over an array) is called,
    the cells it may hand over as Python values."""

    ref: str
    rows: int
    cols: int
    passed: int

    @property
    def visited(self) -> int:
        return self.rows * self.cols


def range_costs(
    formula: str, sheet: str, extents: Mapping[str, tuple[int, int]], calls_registry: bool
) -> list[RangeCost]:
    """The ranges a formula on ``sheet`` refers to (``A1:C9``, ``A:A``, ``1:3``, ``Other!A:XFD``), each with what
    it costs: the engine goes through the rows of a range that hold cells (up to the sheet's last used row, from
    ``extents``: {title: (last row, last column)}), across all its columns but for whole rows, which it cuts at
    the last used column."""
    out = []
    for op, area in refs.areas(formula) or ():
        if ":" not in op.ref:
            continue
        title = op.sheets[0] if op.sheets else sheet
        used_rows, used_cols = _extent(extents, title)
        for other in op.sheets[1:]:  # Jan:Dec!A:A: as costly as the widest of the sheets named
            more = _extent(extents, other)
            used_rows, used_cols = max(used_rows, more[0]), max(used_cols, more[1])
        lo_r, hi_r, lo_c, hi_c = area.r1, area.r2, area.c1, area.c2
        rows = max(0, min(hi_r, used_rows) - lo_r + 1)
        cols = max(0, (min(hi_c, used_cols) if area.rows else hi_c) - lo_c + 1)
        passed = 0
        if calls_registry:
            passed = (rows if area.cols else hi_r - lo_r + 1) * cols
        shown = op.text if op.prefix is not None else f"{_quoted(sheet)}!{op.ref}"
        out.append(RangeCost(shown, rows, cols, passed))
    return out


def _extent(extents: Mapping[str, tuple[int, int]], title: str) -> tuple[int, int]:
    if title in extents:
        return extents[title]
    folded = title.casefold()
    return next((v for k, v in extents.items() if k.casefold() == folded), (0, 0))


def _quoted(title: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", title) and not re.fullmatch(r"[A-Za-z]{1,3}\d+", title):
        return title
    return "'" + title.replace("'", "''") + "'"


def _calls_on_tokens(formula: str) -> bool:
    """Whether the engine's tokens of ``formula`` call a registry function or a native one computed element by
    element (either gets its ranges as Python values)."""
    from .. import registry
    from .engine import LIFTED

    for tok in refs.tokens(formula) or ():
        if str(tok.token_type) == "Func" and str(tok.subtype) == "Open":
            name = tok.value[:-1].strip().upper().removeprefix("_XLFN.")
            if name in registry.FUNCTIONS or name in LIFTED:
                return True
    return False


def _all(formulas: Mapping[str, Iterable[str]]) -> Iterator[str]:
    for texts in formulas.values():
        yield from texts


def check_ranges(
    ins: Inspection, formulas: Mapping[str, Iterable[str]], limits: Limits, places: Mapping[str, str] | None = None
) -> None:
    """Refuse, before the engine is given them, formulas whose ranges would take too long or too much memory.

    ``formulas`` is {sheet title: formula texts}, a text once for each cell that holds it. Each range of each
    formula counts (a defined name's range for each formula that names it): the cells the engine goes through
    (:func:`range_costs`), refused above :attr:`Limits.max_range_cells`, and their memory, added to the workbook's
    estimate and refused above :attr:`Limits.max_memory_gb`. A text held by many cells is costed once and counted
    for each. ``places`` names where a text is kept ({text: "Workings!B1080"}, a portable edition's kept formulas):
    a refusal whose largest range is in such a text names that place.
    """
    from .engine import calls_registry, lifts  # the registry, not needed by the checks before parsing

    extents = {s.title: (s.max_row, s.max_col) for s in ins.sheets}
    pkg = ins.package
    titles = [s.title for s in pkg.sheets]
    named: dict[str, list[tuple[str | None, str]]] = {}
    for d in pkg.defined_names:
        if ":" in d.text:
            scope = titles[d.local_sheet] if d.local_sheet is not None and d.local_sheet < len(titles) else None
            named.setdefault(d.name.upper(), []).append((scope, d.text))
    name_re = None
    if named:  # a prefilter only: which names a formula reads is decided on its tokens
        alternatives = "|".join(sorted(map(re.escape, named), key=len, reverse=True))
        name_re = re.compile(rf"({alternatives})", re.IGNORECASE)
    visited = passed = 0
    largest: RangeCost | None = None
    largest_text = ""
    for title, texts in formulas.items():
        for text, times in collections.Counter(texts).items():
            has_range = ":" in text  # a range needs one (1:3 too); a name, its name
            if not has_range and name_re is None:
                continue
            registry = calls_registry(text) or lifts(text)  # either gets its ranges as Python values
            if not registry and "'" in text:  # a '"' in a quoted sheet name hides calls from a text search
                registry = _calls_on_tokens(text)
            costs = range_costs(text, title, extents, registry) if has_range else []
            if name_re is not None and name_re.search(text):
                toks = refs.tokens(text) or []
                for op in refs.operands(toks):
                    if op.prefix is not None or op.ref.upper() not in named:
                        continue
                    options = named[op.ref.upper()]
                    scope, target = next((o for o in options if o[0] == title), None) or next(
                        (o for o in options if o[0] is None), options[0]
                    )
                    costs += range_costs(target, scope or title, extents, registry)
            for cost in costs:
                visited += cost.visited * times
                passed += cost.passed * times
                if largest is None or cost.visited + PASSED_WEIGHT * cost.passed > largest.visited + (
                    PASSED_WEIGHT * largest.passed
                ):
                    largest, largest_text = cost, text
    if largest is None:
        return
    work = visited + PASSED_WEIGHT * passed
    if work > limits.max_range_cells:
        handed = f", {passed:,} of them handed to xlsxplan's functions" if passed else ""
        biggest = f"{largest.ref}: {largest.rows:,} rows in use by {largest.cols:,} columns"
        place = (places or {}).get(largest_text)
        if place is not None:
            biggest += (
                f", in the formula kept in {place} for {collections.Counter(_all(formulas))[largest_text]:,} cells"
            )
        raise WorkbookError(
            f"formulas refer to ranges of {visited:,} cells in all{handed} (the largest {biggest}); the limit is "
            f"{limits.max_range_cells:,}, about 5 seconds of the engine's time: refer to the rows and columns in "
            "use, not whole rows, whole columns or the whole sheet"
        )
    need = (ins.estimated_bytes + BYTES_PER_VISITED * largest.visited + BYTES_PER_PASSED * passed) / 1e9
    if need > limits.max_memory_gb:
        raise WorkbookError(
            f"formulas hand xlsxplan's functions ranges of {passed:,} cells in all (the largest {largest.ref}); "
            f"recalculating would need about {need:,.1f} GB, and the limit is {limits.max_memory_gb:g} GB: refer to "
            "the rows in use"
        )
