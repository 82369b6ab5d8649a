"""Untrusted zip packages (.xlsx, .xlsm): opening them, checking their members, and the prolog of each XML part.

Everything here runs before any XML is parsed. A zip is refused, with one line, when it is not a zip (an old
``.xls``, a password-protected workbook), is truncated or corrupt, has too many members, encrypted or duplicated
ones, or a member that inflates more than :attr:`ZipLimits.max_ratio` times (a **zip bomb**: Python's zip reader
never inflates a part beyond its declared size, so the declared sizes bound the memory). An XML part is refused
when it declares a **DTD or entities** (the "billion laughs" entity expansion and the quadratic blow-up both need
one; Excel never writes a DTD), starts with more than :data:`BLANK_MAX` of blank space or holds nothing else
(padding that would hide a DTD from a check of the first bytes), or declares an encoding other than UTF-8,
UTF-16 or a single-byte superset of ASCII. Both the headless engine's checks and ``xlsxplan excel``'s reading of a
workbook's VBA project stand on these.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import WorkbookError

__all__ = [
    "MB",
    "BLANK_MAX",
    "DTD",
    "ZipLimits",
    "open_zip",
    "check_members",
    "check_prolog",
    "reading",
    "markup",
    "require_defusedxml",
]

MB = 1024 * 1024


@dataclass(frozen=True)
class ZipLimits:
    """The limits on the zip itself, checked from its central directory before any member is read.

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
    """

    max_file_mb: float = 100
    max_parts: int = 10_000
    max_uncompressed_mb: float = 1_024
    max_ratio: float = 200


def require_defusedxml() -> None:
    """Refuse to parse untrusted XML unless openpyxl parses through defusedxml (its documented protection)."""
    import openpyxl
    from openpyxl.xml import functions

    if not openpyxl.DEFUSEDXML or not functions.iterparse.__module__.startswith("defusedxml"):
        raise WorkbookError(
            "openpyxl is not using defusedxml (is OPENPYXL_DEFUSEDXML set to False?); refusing to read workbooks"
        )


_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def open_zip(data: bytes, name: str) -> zipfile.ZipFile:
    """The zip archive in ``data``; WorkbookError naming ``name`` for an old .xls, a protected file or no zip."""
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


def check_members(zf: zipfile.ZipFile, name: str, limits: ZipLimits) -> int:
    """Refuse a zip whose members are too many, encrypted, oddly compressed, duplicated, or inflate too far
    (each ratio and the total, from the central directory); return the total uncompressed size [bytes]."""
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
DTD = re.compile(rb"<!(DOCTYPE|ENTITY)", re.I)
_DECLARED_ENCODING = re.compile(rb"""^<\?xml[^>]*?\bencoding\s*=\s*["']([^"']*)["']""")
_ENCODINGS = {  # UTF-8 and UTF-16 (what Excel writes), and single-byte supersets of ASCII, in which only "<" is "<"
    "utf-8",
    "utf8",
    "utf-16",
    "utf16",
    "us-ascii",
    "ascii",
    "iso-8859-1",
    "latin-1",
    "latin1",
    "iso-8859-15",
    "windows-1252",
    "cp1252",
}
_PROLOG_MAX = 64 * 1024
_BLANK = b" \t\r\n"
BLANK_MAX = 64 * 1024
"""Blank space allowed before a part's first markup [bytes]. Excel writes none; past this, a part is refused rather
than read on in search of a DTD."""
_CHUNK = 1 << 20


def _utf16(head: bytes) -> str | None:
    """The UTF-16 codec a part is written in, judged from its first bytes, or None (UTF-8, or not text)."""
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "utf-16"  # with a byte-order mark, which the decoder consumes
    if head[:1] == b"\x00":
        return "utf-16-be"
    if b"\x00" in head[1:4]:
        return "utf-16-le"
    return None


def _utf8_chunks(f: Any) -> Iterator[bytes]:
    """A zip member's bytes in chunks of about 1 MiB, as UTF-8: a UTF-16 part is transcoded, a BOM dropped."""
    head = f.read(_CHUNK)
    codec = _utf16(head)
    if codec is None:
        yield head[3:] if head.startswith(b"\xef\xbb\xbf") else head
        while chunk := f.read(_CHUNK):
            yield chunk
        return
    decoder = codecs.getincrementaldecoder(codec)(errors="replace")
    yield decoder.decode(head).encode("utf-8")
    while chunk := f.read(_CHUNK):
        yield decoder.decode(chunk).encode("utf-8")
    yield decoder.decode(b"", final=True).encode("utf-8")


def _first_markup(chunks: Iterator[bytes], part: str, name: str) -> bytes | None:
    """The part from its first non-blank byte on (the rest of that chunk), or None if it is empty.

    Reads no further than :data:`BLANK_MAX` bytes of blank space: a part that is only blank space, or starts with
    more than that, is refused.
    """
    blank = 0
    for chunk in chunks:
        rest = chunk.lstrip(_BLANK)
        blank += len(chunk) - len(rest)
        if blank > BLANK_MAX:
            raise WorkbookError(
                f"{name} is refused: the part {part} starts with over {BLANK_MAX // 1024} KiB of blank space "
                "(Excel writes none; it could hide a DTD from a check that reads only the start)"
            )
        if rest:
            return rest
    if blank:
        raise WorkbookError(f"{name} is refused: the part {part} holds nothing but blank space")
    return None


def _check_head(buf: bytes, chunks: Iterator[bytes], part: str, name: str) -> bytes:
    """Refuse a DTD, entities or an unusual encoding in the prolog of a part that starts with ``buf``; return the
    start of the part read so far (at least its prolog, or 64 KiB)."""
    while len(buf) < _PROLOG_MAX and not _FIRST_ELEMENT.search(buf):
        more = next(chunks, b"")
        if not more:
            break
        buf += more
    m = _FIRST_ELEMENT.search(buf, 0, _PROLOG_MAX)
    prolog = buf[: m.start()] if m else buf[:_PROLOG_MAX]
    if DTD.search(prolog):
        raise WorkbookError(f"{name} is refused: the part {part} declares a DTD or entities (an XML entity bomb?)")
    declared = _DECLARED_ENCODING.match(prolog)
    if declared and declared.group(1).decode("ascii", "replace").strip().lower() not in _ENCODINGS:
        shown = declared.group(1).decode("ascii", "replace")
        raise WorkbookError(
            f"{name} is refused: the part {part} declares the encoding {shown!r}; Excel writes UTF-8 or UTF-16"
        )
    if m is None and len(buf) >= _PROLOG_MAX:
        raise WorkbookError(f"{name} is refused: the part {part} has no XML element in its first 64 KiB")
    return buf


@contextlib.contextmanager
def reading(zf: zipfile.ZipFile, info: zipfile.ZipInfo, name: str) -> Iterator[Any]:
    """A zip member, open for a check. A member that cannot be opened or read (BadZipFile for a bad CRC,
    zlib.error, EOFError, NotImplementedError: a damaged or unusual archive) is WorkbookError, "NAME is corrupt"."""
    try:
        with zf.open(info) as f:
            yield f
    except WorkbookError:
        raise
    except Exception as err:
        raise WorkbookError(f"{name} is corrupt: the part {info.filename} cannot be read ({err})") from None


def markup(f: Any, part: str, name: str) -> tuple[bytes, Iterator[bytes]] | None:
    """A part's start, from its first markup, with its prolog checked (:func:`_check_head`), and the chunks that
    follow; None for a part that is not XML (an image, ``vbaProject.bin``): nothing parses it as XML."""
    chunks = _utf8_chunks(f)
    buf = _first_markup(chunks, part, name)
    if buf is None or not buf.startswith(b"<"):
        return None
    return _check_head(buf, chunks, part, name), chunks


def check_prolog(zf: zipfile.ZipFile, info: zipfile.ZipInfo, name: str) -> None:
    """Refuse a part whose prolog declares a DTD or entities, or that hides its start behind blank space.

    Reads the part only up to its first element (at most :data:`BLANK_MAX` of blank space and 64 KiB of prolog).
    """
    with reading(zf, info, name) as f:
        markup(f, info.filename, name)
