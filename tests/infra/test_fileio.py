"""Writing without losing anything: folders made or refused with one line, atomic replacement."""

from __future__ import annotations

import os
import time

import pytest

from xlsxplan.errors import WorkbookError
from xlsxplan.infra.fileio import STALE_AFTER_S, atomic_write_text, ensure_folder, remove_stale_temporaries


def test_ensure_folder_makes_missing_parents(tmp_path):
    target = tmp_path / "a" / "b"
    assert ensure_folder(target) == target and target.is_dir()
    assert ensure_folder(target) == target  # already there: fine


def test_ensure_folder_refuses_a_file_with_one_line(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(WorkbookError, match=r"^cannot use .*f as a folder: it is a file$"):
        ensure_folder(tmp_path / "f")
    with pytest.raises(WorkbookError, match=r"^cannot create the folder .*f/sub: "):
        ensure_folder(tmp_path / "f" / "sub")


def test_atomic_write_replaces_whole_and_refuses_a_missing_folder(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    atomic_write_text(target, "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]  # no temporary file left behind
    with pytest.raises(WorkbookError, match=r"^cannot write .*: the folder .* does not exist$"):
        atomic_write_text(tmp_path / "nowhere" / "x.txt", "x")


def test_temporary_files_of_killed_runs_are_removed_on_the_next_write(tmp_path):
    target = tmp_path / "out.xlsx"
    old = time.time() - STALE_AFTER_S - 3600  # written an hour before this process started
    stale = tmp_path / ".out.xlsx.k3j_9x2a.tmp"
    fresh = tmp_path / ".out.xlsx.abcdefgh.tmp"  # a run writing right now
    others = [tmp_path / ".other.xlsx.abcdefgh.tmp", tmp_path / ".out.xlsx.tmp", tmp_path / "out.xlsx.abcdefgh.tmp"]
    for path in [stale, fresh, *others]:
        path.write_bytes(b"partial")
    for path in [stale, *others]:
        os.utime(path, (old, old))
    link = tmp_path / ".out.xlsx.linkname.tmp"
    link.symlink_to(others[0])
    os.utime(link, (old, old), follow_symlinks=False)
    atomic_write_text(target, "new")
    assert target.read_text() == "new"
    assert not stale.exists()
    assert fresh.exists() and all(p.exists() for p in others) and link.is_symlink()
    assert remove_stale_temporaries(target) == []
