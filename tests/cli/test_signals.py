"""kill -9 inside the write phase of ``xlsxplan recalc``: the old output stays byte for byte, and no temporary file
is left.

The write goes to a file with no name (Linux's ``O_TMPFILE``, see :func:`xlsxplan.infra.fileio.atomic_path`), named only
for the moment between its last byte and the rename. The test watches the running command's open files
(``/proc/PID/fd``) and kills it the moment such a nameless file in the output's folder is open: the kill lands in
the write phase itself, not before it (the test fails if it never sees one). 8 runs, four at a time: each is a
whole process (imports, load, calculation) for one kill, and 20 cost 9 s of the suite for no other finding.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import openpyxl
import pytest

RUNS = 8
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux") or not hasattr(os, "O_TMPFILE"), reason="needs Linux"),
]


def _book(path: Path) -> Path:
    # 6,000 rows: its write (about 60 ms) is long enough to be caught in (the watcher looks every 2 ms, some 30
    # times in it; looking every 0.5 ms spent a quarter of the test's CPU on the four watchers), short enough for 8 runs
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Data"
    for r in range(1, 6_001):
        ws.cell(r, 1, r)
        ws.cell(r, 2, f"=A{r}*2")
        ws.cell(r, 3, f"row {r}")
    wb.save(path)
    return path


def _writing(pid: int, folder: Path) -> bool:
    """Whether process ``pid`` holds a nameless file in ``folder`` open: its write phase."""
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in names:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith(f"{folder}/#") and target.endswith("(deleted)"):
            return True
    return False


def _kill_in_write(source: Path, folder: Path) -> tuple[bool, bytes, set[str]]:
    out = folder / "out.xlsx"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "xlsxplan", "recalc", str(source), "-o", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    caught = False
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        if _writing(proc.pid, folder):
            os.kill(proc.pid, signal.SIGKILL)
            caught = True
            break
        time.sleep(0.002)
    proc.wait(timeout=60)
    return caught, out.read_bytes(), set(os.listdir(folder))


def test_kill_9_in_the_write_phase_keeps_the_old_output_and_leaves_no_temporary_file(tmp_path):
    source = _book(tmp_path / "book.xlsx")
    old = b"the previous output, which a killed run must not touch"
    folders = []
    for i in range(RUNS):
        folder = tmp_path / f"run{i}"
        folder.mkdir()
        (folder / "out.xlsx").write_bytes(old)
        folders.append(folder)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda f: _kill_in_write(source, f), folders))
    for caught, data, names in results:
        assert caught, "the kill did not land in the write phase"
        assert data == old
        assert names == {"out.xlsx"}, names  # no temporary file, hidden or not


def test_an_uninterrupted_run_writes_the_output_and_nothing_else(tmp_path):
    source = _book(tmp_path / "book.xlsx")
    folder = tmp_path / "run"
    folder.mkdir()
    subprocess.run(
        [sys.executable, "-m", "xlsxplan", "recalc", str(source), "-o", str(folder / "out.xlsx")],
        check=True,
        capture_output=True,
        timeout=120,
    )
    assert os.listdir(folder) == ["out.xlsx"]
    assert openpyxl.load_workbook(folder / "out.xlsx", data_only=True)["Data"]["B6000"].value == 12_000
