"""Getting the xlsxplan functions into Excel: the set-up steps, the checks ``xlsxplan excel`` runs, the Lite bundle.

Two runtimes reach Excel (see :mod:`xlsxplan.udfs`):

* **classic xlwings**: Windows desktop Excel with the xlwings add-in calls a local Python that has xlsxplan
  installed. A workbook names ``xlsxplan.udfs`` under "UDF Modules"; Import Functions writes a VBA module,
  ``xlwings_udfs``, into it, so it must be saved as ``.xlsm``. That module's functions call ``XLPy.CallUDF``, which
  lives in the add-in's VBA project: the workbook needs a reference to it (VBA editor, Tools > References >
  xlwings; xlwings' docs, "Add-in & Settings"), unless it carries xlwings' VBA as the standalone module
  ``xlwings``, and Excel must enable its macros when it opens it.
* **xlwings Lite**: an Office add-in (Excel on Windows, macOS and the web) that runs Python in the browser
  (Pyodide). Its code lives in the workbook (a ``main.py`` and a ``requirements.txt`` edited in Lite's task pane)
  and its packages come from PyPI or Pyodide. xlsxplan is not on PyPI yet, so :func:`lite_bundle` writes a single
  ``main.py`` that carries xlsxplan's source as readable text, unpacks it into Pyodide's in-memory file system and
  exposes every function; :func:`lite_requirements` lists what it needs. Once pasted into a workbook, whoever
  opens that workbook with Lite needs nothing else.

The checks are plain functions returning :class:`Check` results, so the command line only prints them.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import platform
import re
import struct
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from . import __version__, registry
from .errors import WorkbookError
from .safety import Limits
from .xlwings_conf import SHEET_NAME, UDF_MODULE

__all__ = [
    "Check",
    "CLASSIC_STEPS",
    "LITE_STEPS",
    "FORMULA",
    "EXPECTED",
    "machine_checks",
    "workbook_checks",
    "vba_module_names",
    "vba_references",
    "lite_bundle",
    "lite_requirements",
    "bundle_files",
]

VBA_MODULE = "xlwings_udfs"
"""The VBA module xlwings' Import Functions writes into a workbook."""

MAX_VBA_MB = 64
"""The largest VBA project (``xl/vbaProject.bin``) read [MiB]; Excel's are kilobytes to a few megabytes."""

FORMULA = "=KV_BYTES_PER_TOKEN(80,8,128,2)"
EXPECTED = "327680"

CLASSIC_STEPS = (
    "Install Python 3.10 or later, then xlsxplan (xlwings comes with it): "
    'python -m pip install "PATH\\TO\\xlsxplan" (a checkout of this repository, or a wheel built from it).',
    "Install the xlwings add-in: xlwings addin install. Restart Excel; an xlwings tab appears on the ribbon.",
    "In Excel: File > Options > Trust Center > Trust Center Settings > Macro Settings: tick "
    '"Trust access to the VBA project object model" (Import Functions writes VBA into the workbook).',
    f'Open the workbook and point "UDF Modules" at {UDF_MODULE}: workbooks made by xlsxplan carry an '
    f'{SHEET_NAME} sheet that does it; otherwise type {UDF_MODULE} in the "UDF Modules" box of the xlwings tab, '
    f'or add a sheet named {SHEET_NAME} with "UDF Modules" in A1 and {UDF_MODULE} in B1. If Excel should use a '
    'Python other than the one on the PATH, set it in the "Interpreter" box.',
    f'Click "Import Functions" on the xlwings tab. It writes the VBA module {VBA_MODULE} into the workbook.',
    "Open the VBA editor (Alt+F11), select the workbook's project, then Tools > References: tick xlwings and click "
    f"OK. The functions {VBA_MODULE} declares call Python through the add-in, and without this reference they show "
    "#NAME? (a workbook made with xlwings quickstart has it already; one made with xlwings quickstart --standalone "
    "needs none).",
    "Save the workbook as an Excel Macro-Enabled Workbook (.xlsm), or the imported functions are lost. When you open "
    'it again, click "Enable Content" in the yellow security bar (or keep it in a Trusted Location): with macros '
    "disabled, every function shows #NAME?.",
    f"Type {FORMULA} into a cell: it shows {EXPECTED}.",
)
"""Windows desktop Excel with the classic xlwings add-in."""

LITE_STEPS = (
    "In Excel (Microsoft 365 or Office 2021 or later, on Windows, macOS or the web): Home > Add-ins, search for "
    "xlwings, and add xlwings Lite. Its editor opens on the right (reopen it with the xlwings Lite button).",
    "Download lite/main.py and lite/requirements.txt from xlsxplan's repository (xlsxplan's code in one file, as it "
    "is not on PyPI yet), or write them on any machine with Python and xlsxplan: xlsxplan excel --lite xlsxplan-lite.",
    "In Lite's editor, open the requirements.txt tab and add the lines of the written requirements.txt to what "
    "is there (keep its xlwings line). Lite installs them (see its Output pane).",
    "Open the main.py tab and replace its content with the written main.py (select all, paste). Lite keeps the "
    "code in the workbook and registers every xlsxplan function; anyone who opens the workbook with Lite has them.",
    f"Type {FORMULA} into a cell: it shows {EXPECTED}.",
)
"""Excel on Windows, macOS or the web with the xlwings Lite add-in."""


@dataclass(frozen=True)
class Check:
    """One check: ``ok`` is True (passed), False (failed) or None (for information only)."""

    ok: bool | None
    text: str

    @property
    def label(self) -> str:
        return {True: "ok", False: "FAIL", None: "info"}[self.ok]


def machine_checks() -> list[Check]:
    """What can be checked on this machine without Excel."""
    checks = []
    try:
        checks.append(Check(True, f"xlwings {importlib.metadata.version('xlwings')} is installed"))
    except importlib.metadata.PackageNotFoundError:
        checks.append(Check(False, "xlwings is not installed: python -m pip install xlwings"))
    system = platform.system() or sys.platform
    if system == "Windows":
        checks.append(Check(None, "Windows: classic xlwings UDFs (desktop Excel) and xlwings Lite both work here"))
    else:
        checks.append(
            Check(None, f"{system}: classic xlwings UDFs need Windows desktop Excel; use xlwings Lite in Excel here")
        )
    from .catalog import catalog_problems, user_catalog_dir

    problems = catalog_problems()
    if problems:
        checks += [Check(False, f"the user's catalog: {p} (left out; the rest works)") for p in problems]
    else:
        checks.append(Check(True, f"the user's catalog ({user_catalog_dir()}) loads, every preset in it"))
    try:
        module = importlib.import_module(UDF_MODULE)
    except Exception as err:  # any failure to import is the finding, reported in one line
        checks.append(Check(False, f"{UDF_MODULE} does not import: {type(err).__name__}: {err}"))
        return checks
    missing = [name for name in registry.FUNCTIONS if not callable(getattr(module, name, None))]
    if missing:
        checks.append(Check(False, f"{UDF_MODULE} lacks {len(missing)} registry functions: {', '.join(missing)}"))
    else:
        checks.append(Check(True, f"{UDF_MODULE} imports and exposes all {len(registry.FUNCTIONS)} functions"))
    return checks


def workbook_checks(path: Path, limits: Limits | None = None) -> list[Check]:
    """Whether a workbook is set up for classic xlwings. Raises :class:`WorkbookError` if it cannot be read.

    The file is untrusted: it is read once, within ``limits`` (:class:`~xlsxplan.safety.Limits`: file size, parts,
    zip bombs, DTDs and entities, checked before anything parses it), and only those checked bytes are read on.
    """
    path = Path(path)
    if not path.is_file():
        raise WorkbookError(f"cannot read {path}: no such file")
    if not zipfile.is_zipfile(path):
        raise WorkbookError(f"cannot read {path}: not an Excel workbook (.xlsx or .xlsm)")
    data, zf = _checked_zip(path, limits or Limits())
    checks = [_conf_check(path, data)]
    suffix = path.suffix.lower()
    if suffix in (".xlsm", ".xlam"):
        checks.append(Check(True, f"{path.name} is a macro-enabled workbook ({suffix})"))
    else:
        checks.append(Check(False, f"{path.name} is not .xlsm: after Import Functions, save it as .xlsm"))
    project = _vba_project(zf, path)
    modules = _modules_of(project, path)
    if VBA_MODULE in modules:
        checks.append(Check(True, f"the VBA module {VBA_MODULE} is there (Import Functions was run)"))
    else:
        found = f" (it has {', '.join(modules)})" if modules else " (it has no VBA)"
        checks.append(Check(False, f"no VBA module {VBA_MODULE}{found}: click Import Functions, then save"))
    checks.append(_reference_check(project, modules, path))
    checks.append(Check(None, NOT_CHECKED))
    return checks


NOT_CHECKED = (
    "not checked, as no file says it: that Excel runs this workbook's macros when it opens it (Enable Content in "
    "the yellow bar, or a Trusted Location), that Python and xlsxplan are installed where Excel looks, and the "
    "Interpreter setting"
)
"""What ``xlsxplan excel BOOK`` cannot tell from the workbook: Excel decides it on each machine."""


def _reference_check(project: bytes | None, modules: list[str], path: Path) -> Check:
    """Whether the imported functions can find ``XLPy.CallUDF``: it lives in the xlwings add-in's VBA project, which
    the workbook must reference (VBA editor: Tools > References > xlwings), unless it carries xlwings' VBA itself as
    the standalone module ``xlwings`` (``xlwings quickstart --standalone``)."""
    if XLWINGS_MODULE in modules:
        return Check(True, f"the workbook carries xlwings' own VBA (the standalone module {XLWINGS_MODULE})")
    fix = ("in the VBA editor (Alt+F11), Tools > References, tick xlwings, then save; without it the imported "
           "functions cannot call Python and show #NAME?")  # fmt: skip
    if project is None:
        return Check(False, f"no reference to the xlwings add-in (no VBA yet): after Import Functions, {fix}")
    references = _references_of(project, path)
    if any(_is_xlwings(name, libid) for name, libid in references):
        return Check(True, "the VBA project references the xlwings add-in (Tools > References > xlwings)")
    found = f"it references {', '.join(dict.fromkeys(n for n, _ in references))}" if references else "no references"
    return Check(False, f"no reference to the xlwings add-in ({found}): {fix}")


def _checked_zip(path: Path, limits: Limits) -> tuple[bytes, zipfile.ZipFile]:
    """The file's bytes and zip, after the checks :mod:`xlsxplan.safety` gives every untrusted workbook before any
    part is parsed: its size, the number and inflated size of its parts (zip bombs), encryption, and DTDs or
    entities in any XML part. Unlike :func:`~xlsxplan.safety.open_package` it accepts add-ins (.xlam) and any zip
    holding a VBA project, and sets no limit on cells: nothing here calculates the workbook."""
    from .safety import MB, _check_members, _check_prolog, _open_zip

    name = str(path)
    try:
        size = path.stat().st_size
        if size > limits.max_file_mb * MB:
            raise WorkbookError(f"{name} is {size / MB:,.0f} MiB; xlsxplan opens workbooks up to "
                                f"{limits.max_file_mb:,.0f} MiB")  # fmt: skip
        with open(path, "rb") as f:
            data = f.read(int(limits.max_file_mb * MB) + 1)
    except OSError as err:
        raise WorkbookError(f"cannot read {path}: {err.strerror or err}") from None
    if len(data) > limits.max_file_mb * MB:
        raise WorkbookError(f"{name} is over {limits.max_file_mb:,.0f} MiB; xlsxplan opens workbooks up to that")
    zf = _open_zip(data, name)
    _check_members(zf, name, limits)
    for info in zf.infolist():
        if not info.is_dir():
            _check_prolog(zf, info, name)
    return data, zf


def _conf_check(path: Path, data: bytes) -> Check:
    import io

    import openpyxl

    from .safety import require_defusedxml
    from .xlwings_conf import read_conf_sheet

    require_defusedxml()
    try:
        wb = openpyxl.load_workbook(io.BytesIO(data), read_only=True)
    except Exception as err:  # openpyxl raises many kinds on a damaged file
        raise WorkbookError(f"cannot read {path}: {type(err).__name__}: {err}") from None
    try:
        settings = read_conf_sheet(wb)
    finally:
        wb.close()
    if not settings:
        return Check(False, f'no {SHEET_NAME} sheet: set "UDF Modules" to {UDF_MODULE} (ribbon or that sheet)')
    modules = [m.strip() for m in settings.get("UDF Modules", "").split(";")]
    if UDF_MODULE in modules:
        return Check(True, f'the {SHEET_NAME} sheet names {UDF_MODULE} under "UDF Modules"')
    return Check(False, f'the {SHEET_NAME} sheet does not name {UDF_MODULE} under "UDF Modules"')


# --- the VBA project inside an .xlsm ------------------------------------------------------------------------------

_CFB_SIGNATURE = bytes.fromhex("D0CF11E0A1B11AE1")
_END_OF_CHAIN = 0xFFFFFFFE
_FREE = 0xFFFFFFFF


XLWINGS_MODULE = "xlwings"
"""The VBA project and module name of xlwings' own VBA (the add-in's project, or the standalone module)."""


def vba_module_names(path: Path, limits: Limits | None = None) -> list[str]:
    """The standard VBA modules of a workbook (``Module=`` lines of its VBA project), [] if it has no VBA.

    ``xl/vbaProject.bin`` is a Compound File Binary ([MS-CFB]); its ``PROJECT`` stream is text listing the modules
    ([MS-OVBA] 2.3.1). Only reading is needed, so this small reader does without a dependency. The file is read
    within ``limits`` (see :func:`workbook_checks`) and a VBA project over :data:`MAX_VBA_MB` is refused.
    """
    path = Path(path)
    _, zf = _checked_zip(path, limits or Limits())
    return _modules_of(_vba_project(zf, path), path)


def vba_references(path: Path, limits: Limits | None = None) -> list[tuple[str, str]]:
    """The references of a workbook's VBA project, as (name, libid) pairs ([] if it has no VBA), e.g.
    ``("xlwings", "*\\C...\\XLSTART\\xlwings.xlam")`` for the xlwings add-in ([MS-OVBA] 2.3.4.2.2)."""
    path = Path(path)
    _, zf = _checked_zip(path, limits or Limits())
    project = _vba_project(zf, path)
    return [] if project is None else _references_of(project, path)


def _references_of(project: bytes, path: Path) -> list[tuple[str, str]]:
    """The (name, libid) references of a VBA project's bytes; WorkbookError, naming ``path``, if unreadable."""
    try:
        return _references(_ovba_decompress(_cfb_stream(project, "dir")))
    except (ValueError, IndexError, struct.error) as err:
        raise WorkbookError(f"cannot read the VBA references of {path}: {err}") from None


def _vba_project(zf: zipfile.ZipFile, path: Path) -> bytes | None:
    """The bytes of ``xl/vbaProject.bin``, within :data:`MAX_VBA_MB`; None if the workbook has no VBA."""
    try:
        info = zf.getinfo("xl/vbaProject.bin")
    except KeyError:
        return None
    if info.file_size > MAX_VBA_MB * 1024 * 1024:
        raise WorkbookError(
            f"cannot read the VBA project of {path}: it is {info.file_size:,} bytes, and xlsxplan reads VBA projects "
            f"up to {MAX_VBA_MB:g} MiB"
        )
    try:
        return zf.read(info)  # never more than the declared size, which was checked
    except Exception as err:  # zlib.error, BadZipFile (bad CRC), EOFError: a damaged archive
        raise WorkbookError(f"cannot read the VBA project of {path}: {type(err).__name__}: {err}") from None


def _modules_of(data: bytes | None, path: Path) -> list[str]:
    if data is None:
        return []
    try:
        text = _cfb_stream(data, "PROJECT").decode("latin-1")
    except (ValueError, IndexError, struct.error) as err:
        raise WorkbookError(f"cannot read the VBA project of {path}: {err}") from None
    names = []
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "Module" and value.strip():
            names.append(value.strip())
    return names


def _cfb_stream(data: bytes, wanted: str) -> bytes:
    if data[:8] != _CFB_SIGNATURE:
        raise ValueError("not a compound file")
    sector_shift, mini_shift = struct.unpack_from("<HH", data, 0x1E)
    if sector_shift not in (9, 12) or mini_shift != 6:  # [MS-CFB] 2.2: 512- or 4,096-byte sectors, 64-byte mini
        raise ValueError(f"sectors of 2^{sector_shift} and mini sectors of 2^{mini_shift} bytes are not valid")
    sector_size, mini_size = 1 << sector_shift, 1 << mini_shift
    first_dir, _, cutoff, first_minifat, n_minifat, first_difat, n_difat = struct.unpack_from("<7I", data, 0x30)
    if n_difat > len(data) // sector_size:
        raise ValueError(f"{n_difat:,} DIFAT sectors declared in a file of {len(data):,} bytes")

    def sector(sid: int) -> bytes:
        start = (sid + 1) * sector_size
        if sid >= 0xFFFFFFFA or start >= len(data):
            raise ValueError(f"sector {sid} is outside the file")
        return data[start : start + sector_size]

    fat_sectors = [s for s in struct.unpack_from("<109I", data, 0x4C) if s != _FREE]
    sid = first_difat
    for _ in range(n_difat):  # further FAT sector numbers, 127 per DIFAT sector plus a link
        entries = struct.unpack(f"<{sector_size // 4}I", sector(sid))
        fat_sectors += [s for s in entries[:-1] if s != _FREE]
        sid = entries[-1]
    fat: list[int] = []
    for s in fat_sectors:
        fat += struct.unpack(f"<{sector_size // 4}I", sector(s))

    def chain(start: int, table: list[int]) -> list[int]:
        out: list[int] = []
        seen: set[int] = set()
        while start != _END_OF_CHAIN:
            if start >= len(table):
                raise ValueError("a broken sector chain")
            if start in seen:  # each sector once: what is read stays within the file's size
                raise ValueError("a sector chain that loops")
            seen.add(start)
            out.append(start)
            start = table[start]
        return out

    directory = b"".join(sector(s) for s in chain(first_dir, fat))
    entries = []
    for off in range(0, len(directory) - 127, 128):
        name_len = struct.unpack_from("<H", directory, off + 64)[0]
        name = directory[off : off + max(name_len - 2, 0)].decode("utf-16-le", "replace")
        kind = directory[off + 66]
        start, size = struct.unpack_from("<IQ", directory, off + 116)
        entries.append((name, kind, start, size if sector_size == 4096 else size & 0xFFFFFFFF))
    root = next((e for e in entries if e[1] == 5), None)
    if root is None:
        raise ValueError("no root entry in the directory")
    for name, kind, start, size in entries:
        if kind != 2 or name != wanted:
            continue
        if size >= cutoff:
            return b"".join(sector(s) for s in chain(start, fat))[:size]
        minifat: list[int] = []
        for s in chain(first_minifat, fat)[:n_minifat]:
            minifat += struct.unpack(f"<{sector_size // 4}I", sector(s))
        mini_stream = b"".join(sector(s) for s in chain(root[2], fat))
        return b"".join(mini_stream[m * mini_size : (m + 1) * mini_size] for m in chain(start, minifat))[:size]
    raise ValueError(f"no {wanted} stream")


def _ovba_decompress(data: bytes) -> bytes:
    """A VBA compressed container decompressed ([MS-OVBA] 2.4.1): a 0x01 signature, then chunks of at most 4,096
    bytes, each either raw or a run of flag bytes with eight tokens each (a literal byte, or a copy of earlier
    bytes of the same chunk whose offset and length share 16 bits as the chunk's position decides)."""
    if not data or data[0] != 1:
        raise ValueError("the dir stream is not a compressed container")
    out = bytearray()
    pos = 1
    while pos + 2 <= len(data):
        header = int.from_bytes(data[pos : pos + 2], "little")
        if (header >> 12) & 0b111 != 0b011:
            raise ValueError(f"a compressed chunk at byte {pos} has no signature")
        end = min(pos + (header & 0x0FFF) + 3, len(data))
        pos += 2
        start = len(out)
        if not header >> 15:  # stored raw
            out += data[pos : pos + 4096]
            pos += 4096
            continue
        while pos < end:
            flags = data[pos]
            pos += 1
            for bit in range(8):
                if pos >= end:
                    break
                if not (flags >> bit) & 1:
                    out.append(data[pos])
                    pos += 1
                    continue
                token = int.from_bytes(data[pos : pos + 2], "little")
                pos += 2
                done = len(out) - start
                if done == 0:
                    raise ValueError("a copy token before any byte of its chunk")
                bits = max((done - 1).bit_length(), 4)
                length = (token & (0xFFFF >> bits)) + 3
                offset = (token >> (16 - bits)) + 1
                if offset > done:
                    raise ValueError("a copy token that points before its chunk")
                for _ in range(length):
                    out.append(out[-offset])
    return bytes(out)


def _references(text: bytes) -> list[tuple[str, str]]:
    """The (name, libid) of each reference in a decompressed dir stream ([MS-OVBA] 2.3.4.2): records of a 2-byte id
    and a 4-byte size, read up to the modules (0x000F); the project version (0x0009) is the one record whose data
    is longer than its size says (6 bytes, not 4). Names are in the project's code page, read here as latin-1."""
    refs: list[tuple[str, str]] = []
    pos, name = 0, ""
    while pos + 6 <= len(text):
        record, size = struct.unpack_from("<HI", text, pos)
        pos += 6
        if record == 0x000F:  # PROJECTMODULES: the references are behind us
            break
        body = text[pos : pos + (6 if record == 0x0009 else size)]
        pos += 6 if record == 0x0009 else size
        if record == 0x0016:  # REFERENCENAME; a control reference repeats its name inside itself
            if not (refs and refs[-1][0] == body.decode("latin-1")):
                name = body.decode("latin-1")
                refs.append((name, ""))
        elif record in (0x000D, 0x000E, 0x0033) and refs and refs[-1] == (name, ""):
            # REFERENCEREGISTERED, REFERENCEPROJECT, REFERENCEORIGINAL: a libid follows (after its own length)
            n = struct.unpack_from("<I", body, 0)[0] if record != 0x0033 else len(body)
            libid = body[4 : 4 + n] if record != 0x0033 else body
            refs[-1] = (name, libid.decode("latin-1"))
    return refs


def _is_xlwings(name: str, libid: str) -> bool:
    """A reference to the xlwings add-in: its project is named xlwings, its file xlwings.xlam."""
    return name.casefold() == XLWINGS_MODULE or libid.replace("/", "\\").casefold().endswith("\\xlwings.xlam")


# --- xlwings Lite ---------------------------------------------------------------------------------------------------

LITE_REQUIREMENTS = ("numpy", "pydantic", "docstring-parser>=0.16", "platformdirs>=3")
"""What the bundled xlsxplan needs in Lite besides xlwings. numpy and pydantic come built for Pyodide, whose
version Lite decides (its docs: do not pin those); the others are pure Python from PyPI."""

_DATA_SUFFIXES = (".toml", ".json", ".csv", ".txt")


def _imported_modules(root: Path) -> set[Path]:
    """The files of every xlsxplan module that ``xlsxplan.udfs`` can import, found by reading the import statements
    of each (those inside functions too), starting from udfs and the package itself; a parent package counts."""
    def path_of(name: str) -> Path | None:
        if name.split(".")[0] != "xlsxplan":  # numpy, pydantic, the standard library: not bundled
            return None
        base = root.joinpath(*name.split(".")[1:])
        for candidate in (base / "__init__.py", base.with_suffix(".py")):
            if candidate.is_file():
                return candidate
        return None

    import ast

    found: dict[str, Path] = {}
    todo = ["xlsxplan", "xlsxplan.udfs"]
    while todo:
        name = todo.pop()
        path = path_of(name) if name not in found else None
        if path is None:
            continue
        found[name] = path
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                module = ".".join(base + ([node.module] if node.module else []))
                todo += [module] + [f"{module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                todo += [a.name for a in node.names]
    return set(found.values())


def bundle_files() -> dict[str, str]:
    """The package files a Lite bundle carries, path inside the package -> text, in a stable order: the modules
    :mod:`xlsxplan.udfs` imports (not the command line, the workbook builders, the headless engine or the OOXML and
    safety layers, which Lite never uses) and the data files (catalog, calibration) with their packages."""
    root = Path(__file__).resolve().parent
    wanted = _imported_modules(root)
    for path in root.rglob("*"):
        if path.is_file() and path.suffix in _DATA_SUFFIXES and "__pycache__" not in path.parts:
            wanted |= {path, path.parent / "__init__.py"}  # read through importlib.resources: their package too
    return {f"xlsxplan/{p.relative_to(root).as_posix()}": p.read_text(encoding="utf-8")
            for p in sorted(wanted) if p.is_file()}  # fmt: skip


def _literal(text: str) -> str:
    """``text`` as a triple-quoted Python literal that reads like the file it holds."""
    body = text.replace("\\", "\\\\").replace('"""', '""\\"')
    body = re.sub(r"[\x00-\x08\x0b-\x1f\x7f]", lambda m: f"\\x{ord(m.group()):02x}", body)  # \r, \0 and the like
    if body.endswith('"'):
        body = body[:-1] + '\\"'
    return '"""' + body + '"""'


def lite_requirements() -> str:
    """The lines to add to Lite's requirements.txt tab."""
    return "".join(f"{r}\n" for r in LITE_REQUIREMENTS)


def lite_bundle() -> str:
    """A single ``main.py`` for xlwings Lite that carries xlsxplan and exposes every function."""
    files = bundle_files()
    digest = hashlib.sha256("\0".join(f"{k}\0{v}" for k, v in files.items()).encode("utf-8")).hexdigest()
    names = ", ".join(repr(n) for n in registry.FUNCTIONS)
    parts = [
        f'''"""xlsxplan {__version__} for xlwings Lite: every xlsxplan function, e.g. {FORMULA} shows {EXPECTED}.

Generated by `xlsxplan excel --lite`. Paste all of it into the main.py tab of xlwings Lite, and add the lines of
the requirements.txt written beside it to Lite's requirements.txt tab. xlsxplan is not on PyPI yet, so its source
travels here, as the text of each file below (sha256 {digest}); on loading, it is written to Pyodide's in-memory
file system and imported from there. Your own functions can go at the end of this file.
"""

import os as _os
import sys as _sys
import tempfile as _tempfile

_XLSXPLAN_VERSION = {__version__!r}
_XLSXPLAN_DIGEST = {digest!r}
_XLSXPLAN_FUNCTIONS = ({names},)
_XLSXPLAN_FILES = {{
''',
    ]
    for rel, text in files.items():
        parts.append(f"    {rel!r}: {_literal(text)},\n")
    parts.append(
        """}


def _xlsxplan_install():
    root = _os.path.join(_tempfile.gettempdir(), "xlsxplan-" + _XLSXPLAN_DIGEST[:16])
    for rel, text in _XLSXPLAN_FILES.items():
        path = _os.path.join(root, *rel.split("/"))
        _os.makedirs(_os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    for name in [m for m in _sys.modules if m == "xlsxplan" or m.startswith("xlsxplan.")]:
        if not (getattr(_sys.modules[name], "__file__", "") or "").startswith(root):
            del _sys.modules[name]  # an older copy loaded before this one
    if root not in _sys.path:
        _sys.path.insert(0, root)
    from xlsxplan import udfs

    return udfs


_xlsxplan_udfs = _xlsxplan_install()
for _name in _XLSXPLAN_FUNCTIONS:
    globals()[_name] = getattr(_xlsxplan_udfs, _name)
del _name
"""
    )
    return "".join(parts)
