"""LibreOffice headless as the cross-check tests run it: one ``soffice --convert-to`` call over a batch of files."""

from __future__ import annotations

import atexit
import functools
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.helpers import REPO

SOFFICE = shutil.which("soffice") or shutil.which("libreoffice")
"""The LibreOffice command, or None where it is not installed (the tests that need it skip, or fail in CI)."""

RECALC_ON_LOAD = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema"
 xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="OOXMLRecalcMode" oor:op="fuse">
<value>0</value></prop></item>
</oor:items>
"""
"""A user profile setting that recalculates every formula of an .xlsx file on load, cached values or not."""


def convert(paths: list[Path], folder: Path, recalc_on_load: bool = False, timeout: float = 240) -> Path:
    """Open each of ``paths`` in LibreOffice (headless, in one call, with a user profile of its own under
    ``folder``, recalculating every formula on load if ``recalc_on_load``; a file openpyxl wrote has no cached
    values, so LibreOffice computes it either way) and save it as .xlsx; returns the folder of the saved files,
    each under its own name."""
    assert SOFFICE, "LibreOffice (soffice) is not installed"
    profile = folder / "profile"
    if recalc_on_load:
        (profile / "user").mkdir(parents=True, exist_ok=True)
        (profile / "user" / "registrymodifications.xcu").write_text(RECALC_ON_LOAD)
    outdir = folder / "converted"
    subprocess.run(
        [
            SOFFICE,
            "--headless",
            "--norestore",
            f"-env:UserInstallation=file://{profile}",
            "--convert-to",
            "xlsx",
            "--outdir",
            str(outdir),
            *map(str, paths),
        ],
        check=True,
        capture_output=True,
        timeout=timeout,
    )
    return outdir


SHIPPED_PORTABLE = (REPO / "workbooks" / "serving_plan.xlsx", REPO / "workbooks" / "training_plan.xlsx")
"""The shipped portable templates, which several modules check as LibreOffice recalculates them."""


@functools.cache
def shipped_recalculated() -> Path:
    """The shipped portable templates opened in LibreOffice, every formula recalculated on load, and saved as .xlsx,
    in one call once a test process (a worker): the folder of the saved files, each under its own name. The tests
    only read them; the folder goes when the process ends."""
    folder = Path(tempfile.mkdtemp(prefix="xlsxplan-libreoffice-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return convert(list(SHIPPED_PORTABLE), folder, recalc_on_load=True)
