"""LibreOffice recalculates the portable editions to the Python core's values (tests/templates/test_portable.py has
the scenarios' other checks; this one sits in a file of its own so that the runner's other worker takes the rest)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openpyxl
import pytest

from tests.helpers.office import SOFFICE, convert
from tests.helpers.package_edit import cached_values, set_values
from tests.helpers.portable import TEMPLATES, compare, copy_editions, each_scenario, is_stale, layout_of, same
from xlsxplan.headless import Workbook
from xlsxplan.templates.build import edition_filename


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    return copy_editions(tmp_path_factory.mktemp("editions"))


@pytest.mark.slow
@pytest.mark.skipif(SOFFICE is None, reason="LibreOffice (soffice) is not installed")
def test_libreoffice_recalculates_the_portable_editions_to_the_python_core(built, tmp_path):
    """Every scenario set into a copy of the portable edition with every formula's cached value removed (as an
    openpyxl save leaves them, so LibreOffice must compute every cell), all converted by one soffice call, each
    cell equal to the add-in edition recalculated by xlsxplan. The copies are edited as packages: only the inputs
    and the cached values differ from the edition as built (an openpyxl load and save of each cost 14 of this
    test's 46 s)."""
    jobs = []
    for name, scenarios in TEMPLATES.items():
        for i, inputs in enumerate(scenarios.values()):
            jobs.append(set_values(built / name, tmp_path / f"{Path(name).stem}_{i}.xlsx", inputs, drop_cached=True))
    outdir = convert(jobs, tmp_path, recalc_on_load=True, timeout=900)
    for name, scenarios in TEMPLATES.items():
        layout = layout_of(built, name)
        addin_wb = Workbook.load(built / edition_filename(name, "functions")).calculate()
        base = {ref: addin_wb.get(ref) for ref in layout.frozen}  # what the add-in edition shows as built
        for i, (scenario, _, addin) in enumerate(each_scenario(addin_wb, scenarios, layout.cells + layout.frozen)):
            _check(outdir / f"{Path(name).stem}_{i}.xlsx", layout, base, addin, name, scenario)


def _check(path: Path, layout: Any, base: dict[str, Any], addin: Any, name: str, scenario: str) -> None:
    """LibreOffice's values of ``path`` are the add-in edition's (``addin``, recalculated for its scenario)."""
    get = _values(path, {ref.rsplit("!", 1)[0] for ref in [*layout.cells, layout.master]}).get
    stale = is_stale(layout, base, addin)
    wrong = compare(layout, addin, get, stale)
    assert not wrong, (name, scenario, len(wrong), wrong[:8])
    assert get(layout.master) == (1 if stale else addin.get(layout.master)), (name, scenario)


def _values(path: Path, sheets: set[str]) -> dict[str, Any]:
    """The values ``path`` holds on ``sheets``; the first file read is read by openpyxl too, which must agree."""
    values = cached_values(path, sheets)
    if path.stem.endswith("_0"):
        wb = openpyxl.load_workbook(path, data_only=True, read_only=True)
        try:
            by_openpyxl = {
                f"{sheet}!{c.coordinate}": c.value
                for sheet in sheets
                for row in wb[sheet.strip("'")].iter_rows()
                for c in row
                if c.value is not None
            }
        finally:
            wb.close()
        assert by_openpyxl.keys() == values.keys()
        assert all(same(v, values[k]) for k, v in by_openpyxl.items())
    return values
