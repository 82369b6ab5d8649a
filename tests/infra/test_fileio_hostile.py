"""Inputs and outputs must be regular files: a FIFO or a device is refused at once, never waited on or replaced."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from tests.helpers.hostile import plain_xlsx
from xlsxplan.errors import WorkbookError
from xlsxplan.headless import Workbook
from xlsxplan.infra.fileio import atomic_write_text, file_kind, read_regular

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs are POSIX")


def _within(seconds, call):
    """``call()``'s exception, raised in a thread that must end within ``seconds`` (a blocking open would not)."""
    box = []

    def run():
        try:
            call()
        except BaseException as err:
            box.append(err)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "blocked on a file that is not a regular file"
    return box[0] if box else None


def test_loading_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "book.xlsx"
    os.mkfifo(fifo)
    err = _within(5, lambda: Workbook.load(fifo))
    assert isinstance(err, WorkbookError) and "it is a FIFO (named pipe), not a regular workbook" in err.message


def test_a_device_is_refused_and_nothing_is_read_from_it():
    err = _within(5, lambda: read_regular("/dev/zero", 10**12))
    assert (
        isinstance(err, WorkbookError)
        and err.message == "cannot read /dev/zero: it is a character device, not a regular file"
    )


def test_an_output_that_is_a_fifo_or_a_device_is_refused_not_replaced(tmp_path):
    fifo = tmp_path / "out.xlsx"
    os.mkfifo(fifo)
    wb_path = tmp_path / "in.xlsx"
    wb_path.write_bytes(plain_xlsx())
    with pytest.raises(
        WorkbookError, match=r"cannot write .*out\.xlsx: it is a FIFO \(named pipe\), not a regular file"
    ):
        Workbook.load(wb_path).save(fifo)
    assert file_kind(fifo.stat().st_mode) == "a FIFO (named pipe)"  # still the FIFO
    link = tmp_path / "notes.txt"
    link.symlink_to(os.devnull)
    with pytest.raises(WorkbookError, match=r"it is a character device, not a regular file"):
        atomic_write_text(link, "x")
    assert os.path.islink(link)


def test_a_regular_file_reads_whole_and_a_longer_one_is_cut_one_past_the_cap(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 5_000)
    assert read_regular(path, 10_000) == b"x" * 5_000
    assert len(read_regular(path, 100)) == 101  # the caller refuses a file over its cap
