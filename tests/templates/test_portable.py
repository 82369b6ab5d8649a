"""The portable edition (xlsxplan/templates/portable.py, docs/portable.md): native formulas only, the same values.

Both editions of both templates are built into a temporary folder. For each scenario (other models, accelerators,
precisions, traffic, targets, a refused input) the inputs are set into both editions; the functions (add-in) edition
recalculated by xlsxplan's headless engine is the Python core's answer. The portable edition must give the same value
in every cell, within 1e-9 relative, recalculated by the same engine and by LibreOffice with no add-in
(tests/templates/test_portable_libreoffice.py: one soffice call converts every scenario). Cells only Python computes (the Options table) hold the add-in's values of the build:
where a scenario changes their inputs, the portable edition must flag it (its check ERROR) instead.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from openpyxl.formula.tokenizer import Token, Tokenizer

from tests.helpers.books import opened
from tests.helpers.portable import (
    SERVING,
    TEMPLATES,
    compare,
    copy_editions,
    each_scenario,
    formulas,
    functions,
    is_stale,
    layout_of,
    set_inputs,
)
from xlsxplan.errors import CellError
from xlsxplan.headless import Workbook
from xlsxplan.sheet import native
from xlsxplan.templates import serving, training
from xlsxplan.templates.build import edition_filename
from xlsxplan.templates.portable import _NEWER, _XLFN, CATALOG, WORKINGS, registry_calls, stored


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """Both editions of both templates (:func:`tests.helpers.portable.copy_editions`)."""
    return copy_editions(tmp_path_factory.mktemp("editions"))


@pytest.mark.slow
def test_functions_newer_than_excel_2007_are_stored_with_their_prefix(built):
    """Excel and LibreOffice read POISSON.DIST written without ``_xlfn.`` as ``#NAME?``."""
    assert stored('=IF(A1,poisson.dist(1,B2,FALSE),"POISSON.DIST(")') == (
        '=IF(A1,_xlfn.POISSON.DIST(1,B2,FALSE),"POISSON.DIST(")'
    )
    for name in TEMPLATES:
        texts = formulas(built / name).values()
        calls = [f for t in texts for f in Tokenizer(t).items if f.type == Token.FUNC and f.subtype == Token.OPEN]
        names = {t.value[:-1].upper() for t in calls}
        assert not names & set(_XLFN), names & set(_XLFN)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(TEMPLATES))
def test_editions_agree_on_every_cell_for_every_scenario(built, name):
    layout = layout_of(built, name)
    assert len(layout.cells) > 200
    scenarios = TEMPLATES[name]
    addin_wb = Workbook.load(built / edition_filename(name, "functions")).calculate()
    base = {ref: addin_wb.get(ref) for ref in layout.frozen}  # what the add-in edition shows as built
    addins = each_scenario(addin_wb, scenarios, layout.cells + layout.frozen)
    ports = each_scenario(Workbook.load(built / name), scenarios, layout.cells)
    for (scenario, _, addin), (_, _, port) in zip(addins, ports, strict=True):
        stale = is_stale(layout, base, addin)
        wrong = compare(layout, addin, port.get, stale)
        assert not wrong, (scenario, len(wrong), wrong[:8])
        if stale:  # the Options table was computed for other inputs: said, and the master check is ERROR
            assert any(port.get(r) == 1 for r in layout.stale), scenario
            assert port.get(layout.master) == 1, scenario
        else:
            assert all(port.get(r) == 0 for r in layout.stale), scenario


@pytest.mark.slow
def test_a_refused_input_gives_an_error_and_a_check_in_words(built):
    """Usable memory fraction 1.5: USABLE_GB refuses it; the portable edition gives the add-in's error there and a
    Checks row that names the rule, and the master check is ERROR."""
    inputs = SERVING["refused: usable memory fraction 1.5"]
    port = set_inputs(Workbook.load(built / serving.FILENAME), inputs)
    addin = set_inputs(Workbook.load(built / edition_filename(serving.FILENAME, "functions")), inputs)
    usable = serving.build().address("usable")
    assert isinstance(addin.get(usable), CellError)
    assert isinstance(port.get(usable), CellError) and port.get(usable).code == addin.get(usable).code
    layout = layout_of(built, serving.FILENAME)
    assert port.get(layout.master) == 1
    ws = opened(built / serving.FILENAME)["Checks"]
    flagged = [ws[f"A{r}"].value for r in range(1, ws.max_row + 1) if port.get(f"Checks!B{r}") == 1]
    assert any("usable_fraction" in str(text) for text in flagged), flagged


@pytest.mark.slow
def test_no_cell_name_validation_or_format_of_a_portable_edition_calls_a_registry_function(built):
    for name in TEMPLATES:
        addin = formulas(built / edition_filename(name, "functions"))
        assert sum(bool(registry_calls(t)) for t in addin.values()) > 50  # the scan can fail
        wb = opened(built / name)
        texts = list(formulas(built / name).values())
        texts += ["=" + d.attr_text for d in wb.defined_names.values()]
        for ws in wb.worksheets:
            texts += ["=" + f for dv in ws.data_validations.dataValidation for f in (dv.formula1, dv.formula2) if f]
            texts += ["=" + f for cf in ws.conditional_formatting for r in cf.rules for f in (r.formula or [])]
        calls = [t[:80] for t in texts if registry_calls(t)]
        assert not calls, (name, calls[:5])
        newer = [t[:80] for t in texts if set(functions(t)) & set(_NEWER)]
        assert not newer, (name, newer[:5])
        assert max(len(t) for t in texts) <= native.LONGEST_FORMULA
        assert {CATALOG, WORKINGS} <= set(wb.sheetnames) and "xlwings.conf" not in wb.sheetnames


@pytest.mark.slow
def test_the_preset_dropdowns_read_the_catalog_sheet(built):
    for name, rows in ((serving.FILENAME, ("G11", "G16")), (training.FILENAME, ("G11", "G22"))):
        wb = opened(built / name)
        lists = {str(dv.sqref).split(":")[0]: dv.formula1 for dv in wb["Inputs"].data_validations.dataValidation}
        for cell in rows:
            assert lists[cell].startswith(f"'{CATALOG}'!"), (name, cell, lists[cell])
            sheet, rng = lists[cell].split("!")
            names = [c.value for row in wb[CATALOG][rng.replace("$", "")] for c in row]
            assert len(names) > 20 and ("Qwen2.5-72B" in names or "H100-SXM" in names)


@pytest.mark.slow
def test_a_stale_python_only_value_turns_its_check_to_error(built):
    layout = layout_of(built, serving.FILENAME)
    # a check per sheet of kept values: the Options table and the Finance sheet's lines, both reading the traffic,
    # and PORTFOLIO's table on Chargeback, which reads the Portfolio sheet's workloads
    assert len(layout.frozen) > 1000 and len(layout.stale) == 3
    port = Workbook.load(built / serving.FILENAME).calculate()
    assert [port.get(c) for c in layout.stale] == [0, 0, 0] and port.get(layout.master) == 0
    port = set_inputs(Workbook.load(built / serving.FILENAME), {"Requests_Per_Day": 300_000})
    assert [port.get(c) for c in layout.stale] == [1, 1, 0] and port.get(layout.master) == 1
    ws = opened(built / serving.FILENAME)["Checks"]
    labels = [ws[c.replace("'Checks'!B", "A")].value for c in layout.stale]
    assert [label.split(":")[0] for label in labels] == ["Options", "Finance", "Chargeback"]
    assert all("xlsxplan recalc" in label and "serving_plan_functions.xlsx" in label for label in labels)
    # the same value typed back: unchanged again
    port = set_inputs(Workbook.load(built / serving.FILENAME), {"Requests_Per_Day": 200_000})
    assert port.get(layout.stale[0]) == 0
    # a workload's traffic on Portfolio: only the Chargeback table is stale
    port = set_inputs(Workbook.load(built / serving.FILENAME), {"Portfolio!C11": 432_000})
    assert [port.get(c) for c in layout.stale] == [0, 0, 1] and port.get(layout.master) == 1


def _errors(path: Path) -> dict[str, str]:
    """Every cell of a workbook that is an error, recalculated by the headless engine (a formula) or as stored (an
    error constant): ``'Sheet'!A1`` -> its code."""
    wb = opened(path)
    calc = Workbook.load(path).calculate()
    cells = set(formulas(path))
    out = {}
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for c in row:
                ref = f"'{ws.title}'!{c.coordinate}"
                if c.data_type == "e":
                    out[ref] = str(c.value)
                elif ref in cells:
                    value = calc.get(ref)
                    if isinstance(value, CellError):
                        out[ref] = value.code
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", list(TEMPLATES))
def test_a_portable_edition_as_built_has_no_error_cell_the_add_in_edition_lacks(built, name):
    """No #N/A on Catalog for a figure a preset lacks, no error in the line items of a branch the template does not
    take: recalculated headlessly, the portable edition has an error only where the add-in edition has the same
    error in the same cell (a finance reader, xlsxplan recalc and a print see none); the cached values the build
    wrote agree."""
    port = _errors(built / name)
    addin = _errors(built / edition_filename(name, "functions"))
    extra = {ref: code for ref, code in port.items() if addin.get(ref) != code}
    assert extra == {}, (len(extra), list(extra.items())[:8])
    cached = opened(built / name, data_only=True)
    stored_errors = [
        f"'{ws.title}'!{c.coordinate}"
        for ws in cached.worksheets
        for row in ws.iter_rows()
        for c in row
        if isinstance(c.value, str) and c.value in ("#N/A", "#NUM!", "#VALUE!", "#DIV/0!")
    ]
    assert [ref for ref in stored_errors if ref not in addin] == []


@pytest.mark.slow
def test_the_line_items_of_a_refused_call_show_a_dash_and_a_failing_step_is_never_masked(built):
    """Each step of a guarded call reads its guard's Workings row: computed as the native form has it when the
    arguments are accepted (never wrapped in IFERROR, so a step that fails then still shows its error), else "-";
    with a refused input the cell shows the add-in's error and its steps the dash."""
    wb = opened(built / serving.FILENAME)
    ws = wb[WORKINGS]
    guards = {r for r in range(1, ws.max_row + 1) if "0 when the arguments are accepted" in str(ws[f"A{r}"].value)}
    gated = {}
    for r in range(1, ws.max_row + 1):
        text = str(ws[f"B{r}"].value)
        m = re.fullmatch(r"=IF\(Workings!\$B\$(\d+)=0,(.*),\"-\"\)", text)
        if m and int(m.group(1)) in guards:
            gated[r] = (int(m.group(1)), m.group(2))
    assert len(gated) > 300 and all("IFERROR(" not in inner and "ISERROR(" not in inner for _, inner in gated.values())
    inputs = {"Time_To_First_Token_Target": -1}  # BATCH_FOR_TTFT refuses a negative target
    port = set_inputs(Workbook.load(built / serving.FILENAME), inputs)
    addin = set_inputs(Workbook.load(built / edition_filename(serving.FILENAME, "functions")), inputs)
    refused = [r for r, (g, _) in gated.items() if port.get(f"{WORKINGS}!B{g}") != 0]
    assert refused and all(port.get(f"{WORKINGS}!B{r}") == "-" for r in refused)
    assert all(isinstance(port.get(f"{WORKINGS}!B{g}"), (int, float)) for g in guards)
    layout = layout_of(built, serving.FILENAME)
    assert compare(layout, addin, port.get, stale=True) == []
