"""Writing files so that nothing is lost: a temporary file beside the target, then an atomic rename.

An interrupted write (a crash, Ctrl-C, a full disk) leaves the previous file as it was; a target that cannot be
written (read-only, locked by Excel on Windows) is an error before anything is touched.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from ..errors import WorkbookError

__all__ = [
    "read_regular",
    "file_kind",
    "atomic_write",
    "atomic_write_text",
    "atomic_path",
    "check_writable",
    "ensure_folder",
    "remove_stale_temporaries",
]


_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)


def file_kind(mode: int) -> str | None:
    """What a file of ``mode`` (``os.stat().st_mode``) is when it is not a regular file, or None for a regular
    file."""
    if stat.S_ISREG(mode):
        return None
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def read_regular(path: Path | str, max_bytes: int, what: str = "file") -> bytes:
    """The bytes of the regular file ``path``, read without ever blocking on something that is not one.

    The file is opened with ``O_NONBLOCK`` (an open of a FIFO with no writer returns at once instead of waiting
    for one) and checked on the open descriptor (``fstat``: no window between the check and the read), so a FIFO,
    a device or a socket is refused with one line and nothing read from it. At most ``max_bytes`` + 1 bytes are
    read (the caller refuses a longer file); WorkbookError for a file that cannot be read.
    """
    path = Path(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise WorkbookError(f"cannot read {path}: no such file") from None
    except IsADirectoryError:
        raise WorkbookError(f"cannot read {path}: it is a folder") from None
    except OSError as err:
        raise WorkbookError(f"cannot read {path}: {err.strerror or err}") from None
    try:
        info = os.fstat(fd)
        kind = file_kind(info.st_mode)
        if kind is not None:
            raise WorkbookError(f"cannot read {path}: it is {kind}, not a regular {what}")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(fd, min(max_bytes + 1 - size, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    except OSError as err:
        raise WorkbookError(f"cannot read {path}: {err.strerror or err}") from None
    finally:
        os.close(fd)


def ensure_folder(folder: Path) -> Path:
    """Create ``folder`` (and its parents) if needed; refuse, with one line, one that cannot be a folder."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise WorkbookError(f"cannot use {folder} as a folder: it is a file")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise WorkbookError(f"cannot create the folder {folder}: {err.strerror or err}") from None
    return folder


def check_writable(path: Path) -> None:
    """Refuse, with one line, a target that cannot be replaced."""
    path = Path(path)
    folder = path.parent
    if not folder.is_dir():
        raise WorkbookError(f"cannot write {path}: the folder {folder} does not exist")
    try:
        mode: int | None = path.stat().st_mode
    except OSError:
        mode = None
    kind = file_kind(mode) if mode is not None else None
    if kind is not None:  # a FIFO or a device would be replaced by a regular file, silently
        raise WorkbookError(f"cannot write {path}: it is {kind}, not a regular file; name a file to write")
    if path.exists() and (not os.access(path, os.W_OK) or not path.stat().st_mode & 0o222):
        # the mode bits too: a superuser may write anything, but a file marked read-only was marked so on purpose
        raise WorkbookError(f"cannot write {path}: the file is read-only")
    if not os.access(folder, os.W_OK):
        raise WorkbookError(f"cannot write {path}: the folder {folder} is not writable")
    lock = folder / f"~${path.name}"  # Excel's owner file while a workbook is open
    if lock.exists():
        raise WorkbookError(f"cannot write {path}: it is open in Excel ({lock.name} exists); close it first")


_STARTED = time.time()  # when this process imported xlsxplan: an older temporary file is no run's of ours
STALE_AFTER_S = 60.0
"""A temporary file of ours untouched for this long [s], and older than this process, belongs to a run that was
killed: no live run leaves its temporary file unwritten that long (it is written in one go, then renamed)."""


def remove_stale_temporaries(path: Path) -> list[Path]:
    """Remove the temporary files that killed runs left beside ``path``; returns those removed.

    Only files named as :func:`atomic_path` names them (``.NAME.`` + 8 characters of :func:`tempfile.mkstemp` +
    ``.tmp``), that are regular files owned by this user, and that were last written before this process started
    and over :data:`STALE_AFTER_S` ago; anything else is left alone, and a file that cannot be removed is skipped.
    """
    path = Path(path)
    pattern = re.compile(rf"^\.{re.escape(path.name)}\.[a-z0-9_]{{8}}\.tmp$")
    cutoff = min(_STARTED, time.time() - STALE_AFTER_S)
    removed: list[Path] = []
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return removed
    for entry in entries:
        if not pattern.match(entry.name):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
            if not stat.S_ISREG(info.st_mode) or info.st_mtime >= cutoff:
                continue
            if hasattr(os, "getuid") and info.st_uid != os.getuid():
                continue
            os.unlink(entry.path)
        except OSError:
            continue
        removed.append(Path(entry.path))
    return removed


def _anonymous(folder: Path) -> int | None:
    """A descriptor of a new file with no name in ``folder`` (Linux's ``O_TMPFILE``), or None where there is none
    (another system, a file system without it, no ``/proc`` to reach it through)."""
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(folder, flag | os.O_RDWR, 0o600)
    except OSError:
        return None


def _mode(path: Path) -> int:
    if path.exists():
        return path.stat().st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _copy_beside(fd: int, path: Path) -> Path:
    """The anonymous file ``fd`` copied to a hidden temporary file beside ``path``; returns its path."""
    out, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        while chunk := os.read(fd, 1 << 20):
            os.write(out, chunk)
        os.fsync(out)
        os.fchmod(out, _mode(path))
    except BaseException:
        os.close(out)
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise
    os.close(out)
    return Path(name)


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path`` in one rename.

    Where the system allows (Linux), the temporary file has no name while it is written (``O_TMPFILE``, reached
    as ``/proc/self/fd/N``): a run killed then leaves nothing behind; it is given a hidden name (``.NAME.`` + 8
    characters + ``.tmp``) only for the moment between its last byte and the rename. Elsewhere it is such a hidden
    file from the start. Temporary files that killed runs left for the same target are removed first
    (:func:`remove_stale_temporaries`).
    """
    path = Path(path)
    check_writable(path)
    remove_stale_temporaries(path)
    fd = _anonymous(path.parent)
    if fd is not None:
        try:
            yield Path(f"/proc/self/fd/{fd}")
            os.fsync(fd)
            os.fchmod(fd, _mode(path))
            folder = os.open(path.parent, os.O_RDONLY)
            try:
                for _ in range(100):
                    name = path.parent / f".{path.name}.{os.urandom(4).hex()}.tmp"
                    try:  # linkat(..., AT_SYMLINK_FOLLOW), which a directory descriptor makes Python call
                        os.link(f"/proc/self/fd/{fd}", name.name, src_dir_fd=folder, dst_dir_fd=folder)
                        break
                    except FileExistsError:
                        continue
                    except OSError:  # a file system that cannot name it: a copy under a hidden name instead
                        name = _copy_beside(fd, path)
                        break
                else:
                    raise WorkbookError(f"cannot write {path}: no free temporary name beside it")
            finally:
                os.close(folder)
            try:
                os.replace(name, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    name.unlink()
                raise
        finally:
            os.close(fd)
        return
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, _mode(path))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def atomic_write(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp_path)`` and move the result onto ``path`` atomically."""
    with atomic_path(path) as tmp:
        write(tmp)


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""

    def write(tmp: Path) -> None:
        tmp.write_text(text, encoding="utf-8")

    atomic_write(path, write)
