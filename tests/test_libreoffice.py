"""LibreOffice cross-check: an independent engine agrees with xlsxplan on every native-only cell.

LibreOffice (Debian's 7.4, installed by .ci/run) converts workbooks headlessly. Two checks:

1. It recalculates the original workbook itself (openpyxl wrote no cached values, so it must) and its results
   equal xlsxplan's for every cell that uses only native functions.
2. It opens the file xlsxplan wrote (cached values, notes on error cells) and shows the same values there.

Skipped, not failed, where ``soffice`` is not installed.
"""

from __future__ import annotations

import shutil
import subprocess

import openpyxl
import pytest
from books import native_book

from xlsxplan.errors import CellError
from xlsxplan.headless import Workbook

SOFFICE = shutil.which("soffice") or shutil.which("libreoffice")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(SOFFICE is None, reason="LibreOffice (soffice) is not installed")]


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """(xlsxplan's Workbook, LibreOffice's view of the original, LibreOffice's view of xlsxplan's output)."""
    folder = tmp_path_factory.mktemp("lo")
    original = native_book(folder / "native.xlsx")
    wb = Workbook.load(original)
    ours = wb.save(folder / "native_recalc.xlsx")
    outdir = folder / "converted"
    profile = folder / "profile"
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
            str(original),
            str(ours),
        ],
        check=True,
        capture_output=True,
        timeout=240,
    )
    return (
        wb,
        openpyxl.load_workbook(outdir / "native.xlsx", data_only=True)["Calc"],
        openpyxl.load_workbook(outdir / "native_recalc.xlsx", data_only=True)["Calc"],
    )


def _same(lo_value, ours):
    if isinstance(ours, CellError):
        return lo_value == ours.code
    if isinstance(ours, bool) or isinstance(lo_value, bool):
        return bool(lo_value) == bool(ours) and type(lo_value) in (bool, int)
    if isinstance(ours, (int, float)):
        return lo_value == pytest.approx(ours, rel=1e-12)
    return lo_value == ours


def test_libreoffice_computes_what_xlsxplan_computes_for_native_cells(converted):
    wb, lo_original, _ = converted
    # LibreOffice really computed the original itself: it cannot know DECODE_TOKS, so that cell is #NAME? there
    assert lo_original["C1"].value == "#NAME?"
    rows = [c.row for c in lo_original["B"] if c.value is not None]
    assert len(rows) == 21
    for row in rows:
        ours = wb.get(f"Calc!B{row}")
        assert _same(lo_original[f"B{row}"].value, ours), (row, lo_original[f"B{row}"].value, ours)


def test_libreoffice_shows_xlsxplans_values_in_the_written_file(converted):
    wb, _, lo_ours = converted
    for row in range(1, 22):
        ours = wb.get(f"Calc!B{row}")
        assert _same(lo_ours[f"B{row}"].value, ours), (row, lo_ours[f"B{row}"].value, ours)
    # registry cells LibreOffice cannot compute: it shows the values xlsxplan cached
    assert (wb.get("Calc!C1"), wb.get("Calc!C2")) == (92, 94)
    assert (lo_ours["C1"].value, lo_ours["C2"].value) == (92, 94)
