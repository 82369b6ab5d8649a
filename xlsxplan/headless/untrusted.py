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
  as a stream, whatever its name (a content type can make any part XML), UTF-16 parts as text. openpyxl parses
  through ``defusedxml`` as well, which refuses entities again: :func:`require_defusedxml` checks that it does;
* it has **external links** (``xl/externalLinks``: formulas reading other workbooks, or DDE links that start
  programs). xlsxplan never follows them; it refuses the file rather than compute with values it cannot see.
  Cell formulas and defined names are checked for external and DDE references too (:func:`formula_threat`);
* a sheet is **too large**: its cells, its formula cells, or the cells that openpyxl creates for merged ranges and
  hyperlinks (a merged ``A1:XFD1048576`` would be 17 billion objects) are counted by scanning each sheet's XML as
  a stream, and the memory the ``formulas`` engine would need is estimated from them (:meth:`Limits.estimate`)
  and refused above :attr:`Limits.max_memory_gb`, with the reason. Once the formulas are read (and before the
  engine builds them), the ranges they refer to are added to the estimate, since ``formulas`` keeps every position
  of a referenced range: ``SUM(A1:ZZ1000000)`` would need hundreds of GB (see ``xlsxplan.headless.workbook``).
* it holds too much of what is **cheap to write and slow to read**, counted in the same scan of every part: row
  records (millions of empty formatted rows zip to a few MB), shared strings, cell formats, conditional-format rules
  and data validations, defined names (the engine compiles each as a formula), and XML elements that openpyxl
  builds as a tree (everything outside the cell data: styles, drawings, charts, pivot caches, extensions). Each has
  a limit in :class:`Limits` and a share in the memory estimate.

Macros are never run: xlsxplan has no code that executes VBA or Excel 4.0 macro sheets; a ``.xlsm``'s
``vbaProject.bin`` is copied into the output untouched.

The zip-level and prolog checks are :mod:`xlsxplan.zipfiles`'; the workbook-level ones are here.
"""

from __future__ import annotations

import collections
import itertools
import re
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import WorkbookError
from ..zipfiles import DTD, MB, ZipLimits, check_members, markup, open_zip, reading
from .package import MAX_COL, MAX_ROW, Package, range_bounds

__all__ = ["Limits", "SheetStats", "PartStats", "Inspection", "open_package", "inspect_bytes", "formula_threat"]


# Peak resident memory of a formulas model, fitted on benchmarks/recalc.py (BENCHMARKS.md, "Headless
# recalculation") and rounded up: the estimate is 1.1 to 1.4 times what was measured for 100 to 10,000-row scenario
# sheets (per-cell and array) and a 1,000-sheet workbook.
BYTES_PER_CELL = 8_000  # every stored cell, constant or formula, and every hyperlinked cell (openpyxl gives it a value)
BYTES_PER_FORMULA = 50_000  # on top, for each formula cell and each defined name (formulas compiles both)
BYTES_PER_ARRAY_ELEMENT = 4_000  # each cell an array formula fills
BYTES_PER_MATERIALISED = 400  # each cell openpyxl creates for a merged range
# Measured with benchmarks/load_costs.py (BENCHMARKS.md, "What a workbook costs before its formulas"), rounded up:
BYTES_PER_ROW = 1_200  # each <row> record: openpyxl keeps a row dimension for it (0.9 kB measured)
BYTES_PER_STRING = 250  # each shared string (0.15 to 0.19 kB measured)
BYTES_PER_ELEMENT = 800  # each other XML element openpyxl reads as a tree: styles, rules, drawings (0.6 kB)
BASE_BYTES = 150 * MB  # Python, numpy, openpyxl, formulas and its function table


@dataclass(frozen=True)
class Limits(ZipLimits):
    """What xlsxplan agrees to open. Every limit is checked before the workbook's XML is parsed; the first four are
    the zip's own (:class:`xlsxplan.zipfiles.ZipLimits`).

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
        Cells stored in all sheets, plus those openpyxl creates for merged ranges and hyperlinks [count].
    max_formula_cells : int
        Formula cells in all sheets, plus defined names (the engine compiles each as a formula); an array formula
        counts once [count].
    max_rows : int
        Row records (``<row>``) in all sheets, empty or not; one sheet holds at most 1,048,576 rows [count].
    max_strings : int
        Shared strings (``<si>``) [count].
    max_styles : int
        Cell formats and differential formats (``<xf>``, ``<dxf>``); Excel itself allows 65,490 [count].
    max_rules : int
        Conditional-format rules and data validations (``<cfRule>``, ``<dataValidation>``): openpyxl spends about
        0.1 ms on each [count].
    max_elements : int
        XML elements that openpyxl builds as a tree, whatever their kind: every element of every part except the
        cell data of sheets and plain shared strings (styles, rules, drawings, charts, pivot caches, extensions)
        [count].
    max_memory_gb : float
        Estimated peak memory of the formulas model (:meth:`estimate`) [GB].
    """

    max_sheets: int = 2_000
    max_cells: int = 5_000_000
    max_formula_cells: int = 200_000
    max_rows: int = 2_000_000
    max_strings: int = 2_000_000
    max_styles: int = 100_000
    max_rules: int = 50_000
    max_elements: int = 4_000_000
    max_memory_gb: float = 16

    @staticmethod
    def estimate(
        cells: int,
        formulas: int,
        array_elements: int,
        materialised: int,
        rows: int = 0,
        strings: int = 0,
        elements: int = 0,
    ) -> float:
        """Estimated peak memory of loading and calculating a workbook in ``formulas`` [bytes].

        ``150 MiB + 8 kB x cells + 50 kB x formulas + 4 kB x array-formula elements + 0.4 kB x materialised
        cells + 1.2 kB x rows + 0.25 kB x shared strings + 0.8 kB x other XML elements``: the first four fitted on
        ``benchmarks/recalc.py``, the last three on ``benchmarks/load_costs.py``, all rounded up (1.1 to 1.4
        times the measured peaks). ``cells`` includes hyperlinked cells; ``formulas``, defined names.
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
        )


@dataclass
class PartStats:
    """What the stream scan of one XML part found (:func:`inspect_bytes` scans every part, whatever its name).

    ``elements`` counts the elements openpyxl would hold as a tree: all of the part's elements but those inside
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
    dimension: str | None = None
    bad_range: tuple[str, str, str] | None = None  # (what, ref, why): reported with the sheet's title


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
            self.formulas + self.names,
            sum(s.array_elements for s in self.sheets),
            sum(s.materialised for s in self.sheets),
            self.rows,
            self.strings,
            self.elements,
        )


def open_package(path: Path | str, limits: Limits | None = None) -> Inspection:
    """Read ``path`` once and check it (see the module's docstring); WorkbookError with the reason if refused."""
    limits = limits or Limits()
    path = Path(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise WorkbookError(f"cannot read {path}: no such file") from None
    except OSError as err:
        raise WorkbookError(f"cannot read {path}: {err.strerror or err}") from None
    if path.is_dir():
        raise WorkbookError(f"cannot read {path}: it is a folder")
    if size > limits.max_file_mb * MB:
        raise WorkbookError(
            f"{path.name} is {size / MB:,.0f} MiB; xlsxplan opens workbooks up to {limits.max_file_mb:,.0f} MiB"
        )
    cap = int(limits.max_file_mb * MB)
    try:
        with open(path, "rb") as f:
            data = f.read(min(size, cap) + 1)  # not read(cap): that allocates the whole cap up front
            while len(data) <= cap and (more := f.read(min(cap + 1 - len(data), MB))):
                data += more  # the file grew since stat()
    except OSError as err:
        raise WorkbookError(f"cannot read {path}: {err.strerror or err}") from None
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
_ARRAY = re.compile(rb"""\bt\s*=\s*["']array["']""")


def _elements(buf: bytes) -> int:
    """Start tags in ``buf``: every ``<`` but those of end tags, declarations, processing instructions."""
    return buf.count(b"<") - buf.count(b"</") - buf.count(b"<!") - buf.count(b"<?")


def _area(ref: bytes) -> int:
    r1, c1, r2, c2 = range_bounds(ref.decode("ascii", errors="replace").split(" ")[0])
    return (r2 - r1 + 1) * (c2 - c1 + 1)


class _PartScan:
    """Counts in a part's markup, fed as buffers that each end just before a ``<``."""

    def __init__(self, part: str) -> None:
        self.stats = PartStats(part)
        self.outside = 0  # elements outside <sheetData>
        self.in_data = 0  # 0 before <sheetData>, 1 inside it, 2 after it

    def feed(self, buf: bytes) -> None:
        s = self.stats
        if self.in_data == 0:  # before <sheetData>, or a part that has none
            m = _SHEET_DATA.search(buf) if b"sheetData" in buf else None
            if m is None:
                self.outside += _elements(buf)
            else:
                self.outside += _elements(buf[: m.end()])
                self.in_data = 2 if m.group(1) else 1
                if self.in_data == 1:
                    self._after_data(buf, m.end())
                else:
                    self.outside += _elements(buf[m.end() :])
        elif self.in_data == 1:
            self._after_data(buf, 0)
        else:
            self.outside += _elements(buf)
        census: dict[bytes, int] = {}
        for tag, n in collections.Counter(_TAG.findall(buf)).items():
            local = tag.rpartition(b":")[2]  # any prefix: openpyxl matches the namespace, not the prefix
            census[local] = census.get(local, 0) + n
        s.cells += census.get(b"c", 0)
        s.formulas += census.get(b"f", 0)
        s.rows += census.get(b"row", 0)
        s.strings += census.get(b"si", 0)
        s.styles += census.get(b"xf", 0) + census.get(b"dxf", 0)
        s.rules += census.get(b"cfRule", 0) + census.get(b"dataValidation", 0)
        if census.get(b"f") and b"array" in buf:
            for m in _FORMULA.finditer(buf):
                if _ARRAY.search(m.group(1)):
                    ref = _REF.search(m.group(1))
                    if ref:
                        s.array_elements += self._area(ref.group(1), "array formula")
        if census.get(b"mergeCell") or census.get(b"hyperlink"):
            for m in _RANGE_ATTR.finditer(buf):
                ref = _REF.search(m.group(2))
                if m.group(1) == b"hyperlink":
                    if ref:  # openpyxl gives each hyperlinked cell a value, which the engine then compiles
                        s.linked += self._area(ref.group(1), "hyperlink") if b":" in ref.group(1) else 1
                elif ref and b":" in ref.group(1):
                    s.materialised += self._area(ref.group(1), "merged range")
        if s.dimension is None and census.get(b"dimension"):
            dm = _DIMENSION.search(buf)
            if dm:
                ref = _REF.search(dm.group(1))
                s.dimension = ref.group(1).decode("ascii", errors="replace") if ref else ""

    def _after_data(self, buf: bytes, pos: int) -> None:
        """Inside <sheetData> from ``pos``: openpyxl reads cell data as a stream; count what follows its end."""
        end = _SHEET_DATA_END.search(buf, pos) if b"sheetData" in buf else None
        if end is not None:
            self.in_data = 2
            self.outside += _elements(buf[end.start() :])

    def _area(self, ref: bytes, what: str) -> int:
        try:
            return _area(ref)
        except WorkbookError as err:
            if self.stats.bad_range is None:
                self.stats.bad_range = (what, ref.decode(errors="replace"), err.message)
            return 0

    def finish(self) -> PartStats:
        # a shared string's <si> and <t> are read one string at a time, not kept as a tree
        self.stats.elements = max(self.outside - 2 * self.stats.strings, 0)
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


def _scan_part(zf: zipfile.ZipFile, info: zipfile.ZipInfo, name: str) -> PartStats | None:
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
    return scan.finish()


def _sheet_stats(stats: PartStats, title: str) -> SheetStats:
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
            stats = _scan_part(zf, info, name)
            if stats is not None:
                parts[info.filename] = stats
    _check_markup(parts, name, limits)  # before anything, xlsxplan's own reading of the structure included, parses
    pkg = Package(data, zf)
    pkg.load_structure()
    links = [n for n in pkg.names if n.lower().startswith("xl/externallinks/") and not n.lower().endswith(".rels")]
    ext_types = [n for n in pkg.names if "externalLink" in (pkg.content_type(n) or "")]
    if links or ext_types:
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
            stats = parts.get(sheet.part) or PartStats(sheet.part)  # not XML: openpyxl will say it is corrupt
            inspection.sheets.append(_sheet_stats(stats, sheet.title))
    _check_size(inspection, name, limits)
    return inspection


def _check_markup(parts: Mapping[str, PartStats], name: str, limits: Limits) -> None:
    """Refuse what is cheap to write and slow to read, counted over every XML part: shared strings, style records,
    conditional-format rules and data validations, and XML elements that openpyxl builds as a tree."""

    def most(attr: str) -> str:
        part = max(parts.values(), key=lambda p: getattr(p, attr))
        return f"{getattr(part, attr):,} in {part.part}"

    strings = sum(p.strings for p in parts.values())
    if strings > limits.max_strings:
        raise WorkbookError(
            f"{name} has {strings:,} shared strings; the limit is {limits.max_strings:,} (openpyxl reads every one "
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
    elements = sum(p.elements for p in parts.values())
    if elements > limits.max_elements:
        raise WorkbookError(
            f"{name} has {elements:,} XML elements outside cell data ({most('elements')}); openpyxl builds an "
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
            f"{busiest.title!r}); the headless engine takes about 3 ms and 50 kB for each, and the limit is "
            f"{limits.max_formula_cells:,}: compute long columns with one array formula instead"
        )
    need = ins.estimated_bytes / 1e9
    if need > limits.max_memory_gb:
        extra = [(ins.names, "defined names"), (ins.rows, "rows"), (ins.strings, "shared strings")]
        extra.append((ins.elements, "other XML elements"))
        counted = "".join(f", {n:,} {what}" for n, what in extra if n)
        raise WorkbookError(
            f"{name} would need about {need:,.1f} GB of memory to recalculate ({ins.cells:,} cells, "
            f"{ins.formulas:,} formulas{counted}); the limit is {limits.max_memory_gb:,.0f} GB"
        )


# ---------------------------------------------------------------------------------------------------------------
# Formulas that reach outside the workbook

_STRING_LITERAL = re.compile(r'"(?:[^"]|"")*"')
_QUOTED_NAME = re.compile(r"'(?:[^']|'')*'")
_EXTERNAL_BARE = re.compile(r"\[[^\[\]]*\][^\[\]\s!(),;+\-*/^&=<>%{}]*!")


def formula_threat(formula: str) -> str | None:
    """Why a formula (or a defined name's text) must not be evaluated, or None.

    A DDE call (``=cmd|' /C calc'!A0``: a ``|`` outside text and quoted sheet names) asks Excel to start a
    program; an external reference (``[1]Sheet1!A1``, ``'C:\\data\\[rates.xlsx]Sheet1'!A1``) reads another file.
    Structured table references (``Table1[Column]``) are neither.
    """
    bare = _STRING_LITERAL.sub('""', formula)
    for quoted in _QUOTED_NAME.findall(bare):
        if "[" in quoted and "]" in quoted:
            return f"refers to another workbook ({quoted})"
    unquoted = _QUOTED_NAME.sub("''", bare)
    if "|" in unquoted:
        return "holds a DDE call (a reference with '|', which asks Excel to start a program)"
    m = _EXTERNAL_BARE.search(unquoted)
    if m:
        return f"refers to another workbook ({m.group(0)})"
    return None
