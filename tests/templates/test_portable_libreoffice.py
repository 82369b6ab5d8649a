"""LibreOffice recalculates the portable editions to the Python core's values (tests/templates/test_portable.py has
the scenarios' other checks; this one sits in a file of its own so that the runner's other worker takes the rest)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openpyxl
import pytest

from tests.helpers.office import SOFFICE, convert
from tests.helpers.portable import TEMPLATES, compare, copy_editions, is_stale, layout_of, set_inputs
from xlsxplan.headless import Workbook
from xlsxplan.templates.build import edition_filename


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    return copy_editions(tmp_path_factory.mktemp("editions"))


@pytest.mark.slow
@pytest.mark.skipif(SOFFICE is None, reason="LibreOffice (soffice) is not installed")
def test_libreoffice_recalculates_the_portable_editions_to_the_python_core(built, tmp_path):
    """Every scenario set with openpyxl (which keeps no cached values, so LibreOffice must compute every cell), all
    converted by one soffice call, each cell equal to the add-in edition recalculated by xlsxplan."""
    jobs = []
    for name, scenarios in TEMPLATES.items():
        wb = openpyxl.load_workbook(built / name)  # read once; each scenario's inputs put back after its copy is saved
        for i, (scenario, inputs) in enumerate(scenarios.items()):
            before = []
            for ref, value in inputs.items():
                if "!" in ref:
                    sheet, cell = ref.split("!")
                else:
                    sheet, cell = wb.defined_names[ref].attr_text.replace("$", "").split("!")
                target = wb[sheet.strip("'")][cell]
                before.append((target, target.value))
                target.value = value
            path = tmp_path / f"{Path(name).stem}_{i}.xlsx"
            wb.save(path)
            for target, value in reversed(before):
                target.value = value
            jobs.append((name, scenario, inputs, path))
    outdir = convert([j[3] for j in jobs], tmp_path, timeout=900)
    layouts = {name: layout_of(built, name) for name in TEMPLATES}
    bases = {name: Workbook.load(built / edition_filename(name, "functions")).calculate() for name in TEMPLATES}
    for name, scenario, inputs, path in jobs:
        lo = openpyxl.load_workbook(outdir / path.name, data_only=True)

        def get(ref: str, lo: Any = lo) -> Any:
            sheet, cell = ref.rsplit("!", 1)
            return lo[sheet.strip("'")][cell].value

        layout = layouts[name]
        addin = set_inputs(Workbook.load(built / edition_filename(name, "functions")), inputs)
        stale = is_stale(layout, bases[name], addin)
        wrong = compare(layout, addin, get, stale)
        assert not wrong, (name, scenario, len(wrong), wrong[:8])
        assert get(layout.master) == (1 if stale else addin.get(layout.master)), (name, scenario)
