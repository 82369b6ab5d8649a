"""Reading the VBA project inside an .xlsm: which modules it has and which projects it references.

A ``vbaProject.bin`` is a compound file (MS-CFB) whose ``dir`` stream, compressed as MS-OVBA describes, lists the
modules and references. The file is untrusted: it is read within :class:`~xlsxplan.infra.zipfiles.ZipLimits`, and the
reader bounds every chain it follows (a self-looping sector chain or a root entry of the wrong type is refused).
"""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

from ..errors import WorkbookError
from ..infra.fileio import read_regular
from ..infra.zipfiles import MB, ZipLimits, check_members, check_prolog, open_zip

MAX_VBA_MB = 64
"""The largest VBA project (``xl/vbaProject.bin``) read [MiB]; Excel's are kilobytes to a few megabytes."""

__all__ = [
    "XLWINGS_MODULE",
    "MAX_VBA_MB",
    "checked_zip",
    "vba_module_names",
    "vba_references",
    "vba_project",
    "modules_of",
    "references_of",
    "is_xlwings",
]


def checked_zip(path: Path, limits: ZipLimits) -> tuple[bytes, zipfile.ZipFile]:
    """The file's bytes and zip, after the checks :mod:`~.infra.zipfiles` gives every untrusted workbook before any
    part is parsed: its size, the number and inflated size of its parts (zip bombs), encryption, and DTDs or
    entities in any XML part. Unlike the headless engine's ``open_package`` it accepts add-ins (.xlam) and any zip
    holding a VBA project, and sets no limit on cells: nothing here calculates the workbook."""
    name = str(path)
    data = read_regular(path, int(limits.max_file_mb * MB), "workbook")  # a FIFO or a device: refused, not waited on
    if len(data) > limits.max_file_mb * MB:
        raise WorkbookError(f"{name} is over {limits.max_file_mb:,.0f} MiB; xlsxplan opens workbooks up to that")
    zf = open_zip(data, name)
    check_members(zf, name, limits)
    for info in zf.infolist():
        if not info.is_dir():
            check_prolog(zf, info, name)
    return data, zf


_CFB_SIGNATURE = bytes.fromhex("D0CF11E0A1B11AE1")
_END_OF_CHAIN = 0xFFFFFFFE
_FREE = 0xFFFFFFFF


XLWINGS_MODULE = "xlwings"
"""The VBA project and module name of xlwings' own VBA (the add-in's project, or the standalone module)."""


def vba_module_names(path: Path, limits: ZipLimits | None = None) -> list[str]:
    """The standard VBA modules of a workbook (``Module=`` lines of its VBA project), [] if it has no VBA.

    ``xl/vbaProject.bin`` is a Compound File Binary ([MS-CFB]); its ``PROJECT`` stream is text listing the modules
    ([MS-OVBA] 2.3.1). Only reading is needed, so this small reader does without a dependency. The file is read
    within ``limits`` (see :func:`workbook_checks`) and a VBA project over :data:`MAX_VBA_MB` is refused.
    """
    path = Path(path)
    _, zf = checked_zip(path, limits or ZipLimits())
    return modules_of(vba_project(zf, path), path)


def vba_references(path: Path, limits: ZipLimits | None = None) -> list[tuple[str, str]]:
    """The references of a workbook's VBA project, as (name, libid) pairs ([] if it has no VBA), e.g.
    ``("xlwings", "*\\C...\\XLSTART\\xlwings.xlam")`` for the xlwings add-in ([MS-OVBA] 2.3.4.2.2)."""
    path = Path(path)
    _, zf = checked_zip(path, limits or ZipLimits())
    project = vba_project(zf, path)
    return [] if project is None else references_of(project, path)


def references_of(project: bytes, path: Path) -> list[tuple[str, str]]:
    """The (name, libid) references of a VBA project's bytes; WorkbookError, naming ``path``, if unreadable."""
    try:
        return _references(_ovba_decompress(_cfb_stream(project, "dir")))
    except (ValueError, IndexError, struct.error) as err:
        raise WorkbookError(f"cannot read the VBA references of {path}: {err}") from None


def vba_project(zf: zipfile.ZipFile, path: Path) -> bytes | None:
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


def modules_of(data: bytes | None, path: Path) -> list[str]:
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
        links = struct.unpack(f"<{sector_size // 4}I", sector(sid))
        fat_sectors += [s for s in links[:-1] if s != _FREE]
        sid = links[-1]
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


def is_xlwings(name: str, libid: str) -> bool:
    """A reference to the xlwings add-in: its project is named xlwings, its file xlwings.xlam."""
    return name.casefold() == XLWINGS_MODULE or libid.replace("/", "\\").casefold().endswith("\\xlwings.xlam")
