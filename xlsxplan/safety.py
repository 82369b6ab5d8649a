"""Opening workbooks that came from someone else, and writing text that must stay text.

Workbooks travel by e-mail; xlsxplan treats every one it opens as untrusted. :func:`open_package` reads the file
once and refuses it, with one line, before any XML is parsed when:

* it is not a zip (an old ``.xls``, a password-protected workbook, a CSV), the zip is truncated or corrupt, or its
  main part is not an Excel workbook (a ``.docx`` renamed, a binary ``.xlsb``, an OpenDocument file);
* it is a **zip bomb**: the file, the total uncompressed size, the number of parts or one part's compression ratio
  exceed :class:`Limits` (read from the zip's central directory; Python's zip reader never inflates a part beyond
  its declared size, so the declared sizes bound the memory);
* any XML part declares a **DTD or entities** (the "billion laughs" entity expansion and the quadratic blow-up both
  need one; Excel never writes a DTD). openpyxl parses through ``defusedxml`` as well, which refuses entities
  again: :func:`require_defusedxml` checks that it really does;
* it has **external links** (``xl/externalLinks``: formulas reading other workbooks, or DDE links that start
  programs). xlsxplan never follows them; it refuses the file rather than compute with values it cannot see.
  Cell formulas and defined names are checked for external and DDE references too (:func:`formula_threat`);
* a sheet is **too large**: its cells, its formula cells, or the cells that openpyxl creates for merged ranges and
  hyperlinks (a merged ``A1:XFD1048576`` would be 17 billion objects) are counted by scanning each sheet's XML as
  a stream, and the memory the ``formulas`` engine would need is estimated from them (:meth:`Limits.estimate`)
  and refused above :attr:`Limits.max_memory_gb`, with the reason. Once the formulas are read (and before the
  engine builds them), the ranges they refer to are added to the estimate, since ``formulas`` keeps every position
  of a referenced range: ``SUM(A1:ZZ1000000)`` would need hundreds of GB (see ``xlsxplan.workbook``).

Macros are never run: xlsxplan has no code that executes VBA or Excel 4.0 macro sheets; a ``.xlsm``'s
``vbaProject.bin`` is copied into the output untouched.

Text that xlsxplan writes into a cell from user input (a model name, a note) goes through :func:`set_text`, which
stores it as text and never as a formula, whatever it starts with (formula injection).
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import WorkbookError
from .ooxml import MAX_COL, MAX_ROW, Package, range_bounds

__all__ = [
    "Limits",
    "SheetStats",
    "Inspection",
    "open_package",
    "inspect_bytes",
    "formula_threat",
    "require_defusedxml",
    "clean_text",
    "set_text",
    "FORMULA_TRIGGERS",
    "EXCEL_TEXT_MAX",
    "limit_address_space",
]

EXCEL_TEXT_MAX = 32_767
"""The most characters an Excel cell holds."""

FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r", "\n")
"""First characters that make a spreadsheet treat typed text as a formula (OWASP, "CSV Injection")."""

MB = 1024 * 1024

# Peak resident memory of a formulas model, fitted on benchmarks/recalc.py (BENCHMARKS.md, "Headless
# recalculation") and rounded up: the estimate is 1.1 to 1.4 times what was measured for 100 to 10,000-row scenario
# sheets (per-cell and array) and a 1,000-sheet workbook.
BYTES_PER_CELL = 8_000  # every stored cell, constant or formula
BYTES_PER_FORMULA = 50_000  # on top, for each formula cell
BYTES_PER_ARRAY_ELEMENT = 4_000  # each cell an array formula fills
BYTES_PER_MATERIALISED = 400  # each cell openpyxl creates for a merged or hyperlinked range
BASE_BYTES = 150 * MB  # Python, numpy, openpyxl, formulas and its function table


@dataclass(frozen=True)
class Limits:
    """What xlsxplan agrees to open. Every limit is checked before the workbook's XML is parsed.

    The defaults let a 10,000-row scenario sheet (50,000 formula cells) and a 1,000-sheet workbook through on a
    2-core, 24 GiB machine and refuse what would not fit there.

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
        Cells stored in all sheets, plus those openpyxl creates for merged ranges and hyperlink ranges [count].
    max_formula_cells : int
        Formula cells in all sheets; an array formula counts once [count].
    max_memory_gb : float
        Estimated peak memory of the formulas model (:meth:`estimate`) [GB].
    """

    max_file_mb: float = 100
    max_parts: int = 10_000
    max_uncompressed_mb: float = 1_024
    max_ratio: float = 200
    max_sheets: int = 2_000
    max_cells: int = 5_000_000
    max_formula_cells: int = 200_000
    max_memory_gb: float = 16

    @staticmethod
    def estimate(cells: int, formulas: int, array_elements: int, materialised: int) -> float:
        """Estimated peak memory of loading and calculating a workbook in ``formulas`` [bytes].

        ``150 MiB + 8 kB x cells + 50 kB x formula cells + 4 kB x array-formula elements + 0.4 kB x materialised
        cells``, fitted on ``benchmarks/recalc.py`` and rounded up (1.1 to 1.4 times the measured peaks).
        """
        return (
            BASE_BYTES
            + BYTES_PER_CELL * cells
            + BYTES_PER_FORMULA * formulas
            + BYTES_PER_ARRAY_ELEMENT * array_elements
            + BYTES_PER_MATERIALISED * materialised
        )


@dataclass
class SheetStats:
    """What the stream scan of one worksheet part found."""

    title: str
    part: str
    cells: int = 0
    formulas: int = 0
    array_elements: int = 0
    materialised: int = 0
    dimension: str | None = None


@dataclass
class Inspection:
    """A package that passed every check, with what was counted."""

    package: Package
    sheets: list[SheetStats] = field(default_factory=list)
    uncompressed: int = 0

    @property
    def cells(self) -> int:
        return sum(s.cells for s in self.sheets)

    @property
    def formulas(self) -> int:
        return sum(s.formulas for s in self.sheets)

    @property
    def estimated_bytes(self) -> float:
        return Limits.estimate(
            self.cells,
            self.formulas,
            sum(s.array_elements for s in self.sheets),
            sum(s.materialised for s in self.sheets),
        )


def require_defusedxml() -> None:
    """Refuse to parse untrusted XML unless openpyxl parses through defusedxml (its documented protection)."""
    import openpyxl
    from openpyxl.xml import functions

    if not openpyxl.DEFUSEDXML or not functions.iterparse.__module__.startswith("defusedxml"):
        raise WorkbookError(
            "openpyxl is not using defusedxml (is OPENPYXL_DEFUSEDXML set to False?); refusing to read workbooks"
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


_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def _open_zip(data: bytes, name: str) -> zipfile.ZipFile:
    if data.startswith(_OLE_MAGIC):
        raise WorkbookError(
            f"{name} is an old-format .xls or a password-protected workbook; save it unprotected as .xlsx"
        )
    if not data.startswith(b"PK"):
        raise WorkbookError(f"{name} is not an Excel workbook (.xlsx files are zip archives; this is not one)")
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, OSError) as err:
        raise WorkbookError(f"{name} is a truncated or corrupt zip archive ({err})") from None


def _check_members(zf: zipfile.ZipFile, name: str, limits: Limits) -> int:
    infos = zf.infolist()
    if len(infos) > limits.max_parts:
        raise WorkbookError(f"{name} has {len(infos):,} parts; xlsxplan opens workbooks of up to {limits.max_parts:,}")
    seen: set[str] = set()
    total = 0
    for info in infos:
        if info.filename in seen:
            raise WorkbookError(f"{name} has two parts named {info.filename}: a corrupt or forged archive")
        seen.add(info.filename)
        if info.flag_bits & 0x1:
            raise WorkbookError(f"{name} has encrypted parts; save it unprotected as .xlsx")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise WorkbookError(f"{name} uses a compression method Excel does not ({info.compress_type})")
        total += info.file_size
        if info.file_size > MB and info.file_size > limits.max_ratio * max(info.compress_size, 1):
            ratio = info.file_size / max(info.compress_size, 1)
            raise WorkbookError(
                f"{name} looks like a zip bomb: {info.filename} inflates {ratio:,.0f} times "
                f"(to {info.file_size / MB:,.0f} MiB); the limit is {limits.max_ratio:,.0f}"
            )
    if total > limits.max_uncompressed_mb * MB:
        raise WorkbookError(
            f"{name} inflates to {total / MB:,.0f} MiB; xlsxplan opens workbooks up to "
            f"{limits.max_uncompressed_mb:,.0f} MiB uncompressed"
        )
    return total


_FIRST_ELEMENT = re.compile(rb"<[A-Za-z_]")
_DTD = re.compile(rb"<!(DOCTYPE|ENTITY)", re.I)
_PROLOG_MAX = 64 * 1024


def _check_prolog(zf: zipfile.ZipFile, info: zipfile.ZipInfo, name: str) -> None:
    try:
        with zf.open(info) as f:
            head = f.read(_PROLOG_MAX)
    except Exception as err:  # zlib.error, BadZipFile (bad CRC), EOFError: all mean a damaged archive
        raise WorkbookError(f"{name} is corrupt: the part {info.filename} cannot be read ({err})") from None
    if b"\x00" in head[:4] or head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        head = head.decode("utf-16", errors="ignore").encode("utf-8")
    if not head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<"):
        return  # not XML (an image, vbaProject.bin): nothing will parse it as XML
    m = _FIRST_ELEMENT.search(head)
    prolog = head[: m.start()] if m else head
    if _DTD.search(prolog):
        raise WorkbookError(
            f"{name} is refused: the part {info.filename} declares a DTD or entities (an XML entity bomb?)"
        )
    if m is None and len(head) >= _PROLOG_MAX:
        raise WorkbookError(f"{name} is refused: the part {info.filename} has no XML element in its first 64 KiB")


_P = rb"(?:[A-Za-z_][\w.\-]*:)?"
_CELL = re.compile(rb"<" + _P + rb"c[\s/>]")
_FORMULA = re.compile(rb"<" + _P + rb"f(?=[\s/>])([^>]*)>")
_RANGE_ATTR = re.compile(rb"<" + _P + rb"(mergeCell|hyperlink)\b([^>]*)>")
_DIMENSION = re.compile(rb"<" + _P + rb"dimension\b([^>]*)>")
_REF = re.compile(rb"""\bref\s*=\s*["']([^"']*)["']""")
_ARRAY = re.compile(rb"""\bt\s*=\s*["']array["']""")
_CHUNK = 1 << 20


def _area(ref: bytes, sheet: str, what: str) -> int:
    try:
        r1, c1, r2, c2 = range_bounds(ref.decode("ascii", errors="replace").split(" ")[0])
    except WorkbookError as err:
        shown = ref.decode(errors="replace")
        raise WorkbookError(f"sheet {sheet!r} has a {what} with a bad range {shown!r}: {err.message}") from None
    return (r2 - r1 + 1) * (c2 - c1 + 1)


def _scan_sheet(zf: zipfile.ZipFile, part: str, title: str) -> SheetStats:
    """Count cells, formulas and materialised ranges in a worksheet part, as a stream (bounded memory)."""
    stats = SheetStats(title, part)
    carry = b""
    try:
        with zf.open(part) as f:
            while True:
                chunk = f.read(_CHUNK)
                buf = carry + chunk
                if chunk:
                    cut = buf.rfind(b"<")
                    cut = cut if cut > 0 else len(buf)
                    buf, carry = buf[:cut], buf[cut:]
                else:
                    carry = b""
                stats.cells += len(_CELL.findall(buf))
                for m in _FORMULA.finditer(buf):
                    stats.formulas += 1
                    if _ARRAY.search(m.group(1)):
                        ref = _REF.search(m.group(1))
                        if ref:
                            stats.array_elements += _area(ref.group(1), title, "array formula")
                for m in _RANGE_ATTR.finditer(buf):
                    ref = _REF.search(m.group(2))
                    if ref and b":" in ref.group(1):
                        what = "merged range" if m.group(1) == b"mergeCell" else "hyperlink"
                        stats.materialised += _area(ref.group(1), title, what)
                if stats.dimension is None:
                    dm = _DIMENSION.search(buf)
                    if dm:
                        ref = _REF.search(dm.group(1))
                        stats.dimension = ref.group(1).decode("ascii", errors="replace") if ref else ""
                if not chunk:
                    break
    except WorkbookError:
        raise
    except Exception as err:
        raise WorkbookError(f"the part {part} (sheet {title!r}) is corrupt: {err}") from None
    if stats.dimension:
        try:
            r1, c1, r2, c2 = range_bounds(stats.dimension)
        except WorkbookError:
            raise WorkbookError(
                f"sheet {title!r} declares the dimension {stats.dimension!r}, outside Excel's grid "
                f"({MAX_ROW:,} rows by {MAX_COL:,} columns)"
            ) from None
    return stats


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
    zf = _open_zip(data, name)
    total = _check_members(zf, name, limits)
    for info in zf.infolist():  # every part, whatever its name: a content type can make any part XML
        if not info.is_dir():
            _check_prolog(zf, info, name)
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
    inspection = Inspection(pkg, uncompressed=total)
    for sheet in pkg.sheets:
        if sheet.kind == "worksheet":
            if not pkg.has(sheet.part):
                raise WorkbookError(f"{name} is corrupt: sheet {sheet.title!r} has no part {sheet.part}")
            inspection.sheets.append(_scan_sheet(zf, sheet.part, sheet.title))
    _check_size(inspection, name, limits)
    return inspection


def _check_size(ins: Inspection, name: str, limits: Limits) -> None:
    cells = ins.cells + sum(s.materialised for s in ins.sheets)
    biggest = max(ins.sheets, key=lambda s: s.cells + s.materialised)
    if cells > limits.max_cells:
        raise WorkbookError(
            f"{name} has {cells:,} cells (with merged and hyperlinked ranges; {biggest.cells + biggest.materialised:,} "
            f"in sheet {biggest.title!r}); the limit is {limits.max_cells:,}"
        )
    if ins.formulas > limits.max_formula_cells:
        busiest = max(ins.sheets, key=lambda s: s.formulas)
        raise WorkbookError(
            f"{name} has {ins.formulas:,} formula cells ({busiest.formulas:,} in sheet {busiest.title!r}); the "
            f"headless engine takes about 3 ms and 50 kB for each, and the limit is "
            f"{limits.max_formula_cells:,}: compute long columns with one array formula instead"
        )
    need = ins.estimated_bytes / 1e9
    if need > limits.max_memory_gb:
        raise WorkbookError(
            f"{name} would need about {need:,.1f} GB of memory to recalculate ({ins.cells:,} cells, "
            f"{ins.formulas:,} formulas); the limit is {limits.max_memory_gb:,.0f} GB"
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


# ---------------------------------------------------------------------------------------------------------------
# Text that stays text

_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def clean_text(text: object, what: str = "text") -> str:
    """``text`` as a cell can hold it: control characters replaced by U+FFFD, at most 32,767 characters."""
    value = str(text)
    value = _ILLEGAL.sub("\ufffd", value)
    if len(value) > EXCEL_TEXT_MAX:
        raise WorkbookError(f"{what} is {len(value):,} characters long; an Excel cell holds at most {EXCEL_TEXT_MAX:,}")
    return value


def set_text(cell: Any, text: object, what: str = "text") -> Any:
    """Store ``text`` in an openpyxl cell as text, never as a formula; return the cell.

    openpyxl turns any string that starts with ``=`` into a formula. This helper writes the string as a text
    cell (``data_type = "s"``) and, when it starts with a character that makes Excel read typed input as a
    formula (``= + - @``, tab, line break), also sets the cell's *quote prefix* so that Excel keeps it text even
    after someone edits the cell. Control characters that XML cannot hold become U+FFFD.
    """
    value = clean_text(text, what)
    cell.value = value
    cell.data_type = "s"
    if value.startswith(FORMULA_TRIGGERS):
        cell.quotePrefix = True
    return cell


def limit_address_space(gigabytes: float) -> bool:
    """Cap this process's address space (``RLIMIT_AS``) so that a runaway allocation raises MemoryError.

    A formula can ask for more memory than any limit on the file can foresee (``=MUNIT(100000)``,
    ``=REPT("x",1E10)``); with the cap, the allocation fails with MemoryError, which becomes an error value in that
    cell (or one line and exit status 2), instead of the kernel killing the process or the machine swapping. The
    command line sets it; the Python API leaves the caller's process alone. Returns False where the platform has
    no such limit (Windows) or a lower one is already set.
    """
    try:
        import resource
    except ImportError:
        return False
    want = int(gigabytes * 1024**3)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY and soft <= want:
        return False
    if hard != resource.RLIM_INFINITY and hard < want:
        want = hard
    try:
        resource.setrlimit(resource.RLIMIT_AS, (want, hard))
    except (ValueError, OSError):
        return False
    return True
