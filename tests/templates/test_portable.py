"""The portable edition (xlsxplan/templates/portable.py, docs/portable.md): native formulas only, the same values.

Both editions of both templates are built into a temporary folder. For each scenario (other models, accelerators,
precisions, traffic, targets, a refused input) the inputs are set into both editions; the functions (add-in) edition
recalculated by xlsxplan's headless engine is the Python core's answer. The portable edition must give the same value
in every cell, within 1e-9 relative, recalculated by the same engine and by LibreOffice with no add-in (one soffice
call converts every scenario). Cells only Python computes (the Options table) hold the add-in's values of the build:
where a scenario changes their inputs, the portable edition must flag it (its check ERROR) instead.
"""

from __future__ import annotations

import datetime
import re
import shutil
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from openpyxl.formula.tokenizer import Token, Tokenizer

from tests.helpers import REPO
from tests.helpers.office import SOFFICE, convert
from xlsxplan.errors import CellError
from xlsxplan.headless import Workbook
from xlsxplan.sheet import native
from xlsxplan.templates import serving, training
from xlsxplan.templates.build import edition_filename
from xlsxplan.templates.portable import _NEWER, _XLFN, CATALOG, WORKINGS, registry_calls, stored

CASES = "GHIJ"


def _cases(row: int, value: Any) -> dict[str, Any]:
    """The same value in the four scenario cases of an Inputs row."""
    return {f"Inputs!{c}{row}": value for c in CASES}


SERVING = {
    "as built": {},
    "H200 for every case": _cases(16, "H200") | _cases(17, "H200"),
    "MI300X, 1 GPU": _cases(16, "MI300X") | _cases(17, "MI300X") | _cases(23, 1),
    "Llama-3.1-8B on one L40S": _cases(11, "Llama-3.1-8B")
    | _cases(12, "Llama-3.1-8B")
    | _cases(16, "L40S")
    | _cases(17, "L40S")
    | _cases(23, 1),
    "Mixtral-8x7B (experts) in int8": _cases(11, "Mixtral-8x7B") | _cases(12, "Mixtral-8x7B") | _cases(21, "int8"),
    "DeepSeek-V3 (latent attention) on 8 H200 in fp8": _cases(11, "DeepSeek-V3")
    | _cases(12, "DeepSeek-V3")
    | _cases(16, "H200")
    | _cases(17, "H200")
    | _cases(21, "fp8")
    | _cases(22, "fp8")
    | _cases(23, 8),
    "int4 weights, fp8 cache": _cases(21, "int4") | _cases(22, "fp8"),
    "ten times the traffic": {"Requests_Per_Day": 2_000_000, "Peak_Hour_Factor": 2},
    "longer prompts and answers": {"Inputs!B27": 4000, "Inputs!B28": 9000, "Output_Tokens_Per_Request": 800},
    "latency and first-token targets": {"Latency_Target": 40, "Time_To_First_Token_Target": 0.8},
    "refused: usable memory fraction 1.5": {"Usable_Memory_Fraction": 1.5},
}
TRAINING = {
    "as built": {},
    "H100-SXM, 64 GPUs": _cases(22, "H100-SXM") | _cases(25, 64),
    "A100-80GB at 35% MFU": _cases(22, "A100-80GB") | _cases(26, 0.35),
    "ten times the tokens": _cases(13, 1e11),
    "longer sequences": _cases(17, 4096),
    "tensor parallel 2, ZeRO 3": _cases(20, 2) | _cases(21, 3),
    "B200, a day's budget": _cases(22, "B200") | _cases(27, 86400),
    "adafactor, dropout": {"Optimizer": "adafactor", "Dropout": 0.1},
    "a 1.5 MFU": _cases(26, 1.5),
    "H200, 8 GPUs, 1e12 tokens": _cases(22, "H200") | _cases(25, 8) | _cases(13, 1e12),
}
TEMPLATES = {serving.FILENAME: SERVING, training.FILENAME: TRAINING}
ROOT = REPO


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """Both editions of both templates: the committed ones, which tests/templates/test_build.py holds to be byte for byte
    what ``xlsxplan build`` and ``build --functions`` write (so they are not built again here)."""
    folder = tmp_path_factory.mktemp("editions")
    for name in (serving.FILENAME, training.FILENAME):
        for edition in ("portable", "functions"):
            shutil.copyfile(
                ROOT / "workbooks" / edition_filename(name, edition), folder / edition_filename(name, edition)
            )
    return folder


def _formulas(path: Path) -> dict[str, str]:
    """Every formula cell of a workbook, ``'Sheet'!A1`` -> its text."""
    wb = openpyxl.load_workbook(path)
    out = {}
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for c in row:
                v = c.value
                text = v.text if hasattr(v, "text") else v
                if isinstance(text, str) and text.startswith("="):
                    out[f"'{ws.title}'!{c.coordinate}"] = text
    return out


def _functions(formula: str) -> list[str]:
    """The functions ``formula`` calls, as Excel names them (the ``_xlfn.`` of storage removed)."""
    return [
        t.value[:-1].upper().removeprefix("_XLFN.")
        for t in Tokenizer(formula).items
        if t.type == Token.FUNC and t.subtype == Token.OPEN
    ]


@pytest.mark.slow
def test_functions_newer_than_excel_2007_are_stored_with_their_prefix(built):
    """Excel and LibreOffice read POISSON.DIST written without ``_xlfn.`` as ``#NAME?``."""
    assert stored('=IF(A1,poisson.dist(1,B2,FALSE),"POISSON.DIST(")') == (
        '=IF(A1,_xlfn.POISSON.DIST(1,B2,FALSE),"POISSON.DIST(")'
    )
    for name in TEMPLATES:
        texts = _formulas(built / name).values()
        calls = [f for t in texts for f in Tokenizer(t).items if f.type == Token.FUNC and f.subtype == Token.OPEN]
        names = {t.value[:-1].upper() for t in calls}
        assert not names & set(_XLFN), names & set(_XLFN)


class _Layout:
    """Which cells to compare between the editions: the add-in's formulas but the frozen ones."""

    def __init__(self, folder: Path, name: str) -> None:
        addin = _formulas(folder / edition_filename(name, "functions"))
        port = _formulas(folder / name)
        self.cells = [k for k in addin if not k.startswith("'xlwings.conf'") and k in port]
        self.frozen = [k for k in addin if not k.startswith("'xlwings.conf'") and k not in port]
        book = (serving if name == serving.FILENAME else training).build()
        m = book.master_check
        assert m is not None
        self.master = f"'{m.sheet}'!{m.col}{m.row}"
        master_ref = f"{m.sheet}!${m.col}${m.row}"
        here = {f"={m.col}{m.row}", f"=${m.col}${m.row}"}  # the master check's own sheet, row 2
        self.status = {
            k for k, t in addin.items() if master_ref in t or (k.startswith(f"'{m.sheet}'!") and t in here)
        } | {self.master}
        wb = openpyxl.load_workbook(folder / name)
        ws = wb[m.sheet]
        self.stale = [
            f"'{m.sheet}'!B{r}"
            for r in range(m.row + 1, ws.max_row + 1)
            if "values computed by Python for other inputs" in str(ws[f"A{r}"].value)
        ]


def _same(got: Any, want: Any) -> bool:
    if isinstance(got, datetime.datetime):  # LibreOffice stores a date-formatted result as a date
        got = (got - datetime.datetime(1899, 12, 30)).total_seconds() / 86400
    if isinstance(want, CellError):
        return (got.code if isinstance(got, CellError) else got) == want.code
    if isinstance(want, bool) or isinstance(got, bool):
        return bool(got) == bool(want) and type(got) in (bool, int)
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        return abs(got - want) <= 1e-9 * max(abs(want), abs(got)) or got == want
    if want in (None, "") and got in (None, ""):
        return True
    return got == want


def _set(wb: Any, inputs: dict[str, Any]) -> Any:
    for ref, value in inputs.items():
        wb.set(ref, value)
    return wb.calculate()


def _compare(layout: _Layout, want: Any, get: Any, stale: bool) -> list[str]:
    wrong = []
    for ref in layout.cells:
        if stale and (ref in layout.status or ref.startswith("'Options'")):
            continue
        w, g = want.get(ref), get(ref)
        if not _same(g, w):
            wrong.append(f"{ref}: {g!r} where the add-in edition has {w!r}")
    return wrong


def _stale(layout: _Layout, addin_before: Any, addin_now: Any) -> bool:
    """The scenario changed what the frozen cells show in the add-in edition."""
    return any(not _same(addin_now.get(k), addin_before.get(k)) for k in layout.frozen)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(TEMPLATES))
def test_editions_agree_on_every_cell_for_every_scenario(built, name):
    layout = _Layout(built, name)
    assert len(layout.cells) > 200
    base = Workbook.load(built / edition_filename(name, "functions")).calculate()
    for scenario, inputs in TEMPLATES[name].items():
        addin = _set(Workbook.load(built / edition_filename(name, "functions")), inputs)
        port = _set(Workbook.load(built / name), inputs)
        stale = _stale(layout, base, addin)
        wrong = _compare(layout, addin, port.get, stale)
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
    port = _set(Workbook.load(built / serving.FILENAME), inputs)
    addin = _set(Workbook.load(built / edition_filename(serving.FILENAME, "functions")), inputs)
    usable = serving.build().address("usable")
    assert isinstance(addin.get(usable), CellError)
    assert isinstance(port.get(usable), CellError) and port.get(usable).code == addin.get(usable).code
    layout = _Layout(built, serving.FILENAME)
    assert port.get(layout.master) == 1
    ws = openpyxl.load_workbook(built / serving.FILENAME)["Checks"]
    flagged = [ws[f"A{r}"].value for r in range(1, ws.max_row + 1) if port.get(f"Checks!B{r}") == 1]
    assert any("usable_fraction" in str(text) for text in flagged), flagged


@pytest.mark.slow
def test_no_cell_name_validation_or_format_of_a_portable_edition_calls_a_registry_function(built):
    for name in TEMPLATES:
        addin = _formulas(built / edition_filename(name, "functions"))
        assert sum(bool(registry_calls(t)) for t in addin.values()) > 50  # the scan can fail
        wb = openpyxl.load_workbook(built / name)
        texts = list(_formulas(built / name).values())
        texts += ["=" + d.attr_text for d in wb.defined_names.values()]
        for ws in wb.worksheets:
            texts += ["=" + f for dv in ws.data_validations.dataValidation for f in (dv.formula1, dv.formula2) if f]
            texts += ["=" + f for cf in ws.conditional_formatting for r in cf.rules for f in (r.formula or [])]
        calls = [t[:80] for t in texts if registry_calls(t)]
        assert not calls, (name, calls[:5])
        newer = [t[:80] for t in texts if set(_functions(t)) & set(_NEWER)]
        assert not newer, (name, newer[:5])
        assert max(len(t) for t in texts) <= native.LONGEST_FORMULA
        assert {CATALOG, WORKINGS} <= set(wb.sheetnames) and "xlwings.conf" not in wb.sheetnames


@pytest.mark.slow
def test_the_preset_dropdowns_read_the_catalog_sheet(built):
    for name, rows in ((serving.FILENAME, ("G11", "G16")), (training.FILENAME, ("G11", "G22"))):
        wb = openpyxl.load_workbook(built / name)
        lists = {str(dv.sqref).split(":")[0]: dv.formula1 for dv in wb["Inputs"].data_validations.dataValidation}
        for cell in rows:
            assert lists[cell].startswith(f"'{CATALOG}'!"), (name, cell, lists[cell])
            sheet, rng = lists[cell].split("!")
            names = [c.value for row in wb[CATALOG][rng.replace("$", "")] for c in row]
            assert len(names) > 20 and ("Qwen2.5-72B" in names or "H100-SXM" in names)


@pytest.mark.slow
def test_a_stale_python_only_value_turns_its_check_to_error(built):
    layout = _Layout(built, serving.FILENAME)
    assert len(layout.frozen) > 1000 and len(layout.stale) == 1
    port = Workbook.load(built / serving.FILENAME).calculate()
    assert port.get(layout.stale[0]) == 0 and port.get(layout.master) == 0
    port = _set(Workbook.load(built / serving.FILENAME), {"Requests_Per_Day": 300_000})
    assert port.get(layout.stale[0]) == 1 and port.get(layout.master) == 1
    ws = openpyxl.load_workbook(built / serving.FILENAME)["Checks"]
    label = ws[layout.stale[0].replace("'Checks'!B", "A")].value
    assert "xlsxplan recalc" in label and "serving_plan_functions.xlsx" in label
    # the same value typed back: unchanged again
    port = _set(Workbook.load(built / serving.FILENAME), {"Requests_Per_Day": 200_000})
    assert port.get(layout.stale[0]) == 0


@pytest.mark.slow
@pytest.mark.skipif(SOFFICE is None, reason="LibreOffice (soffice) is not installed")
def test_libreoffice_recalculates_the_portable_editions_to_the_python_core(built, tmp_path):
    """Every scenario set with openpyxl (which keeps no cached values, so LibreOffice must compute every cell), all
    converted by one soffice call, each cell equal to the add-in edition recalculated by xlsxplan."""
    jobs = []
    for name, scenarios in TEMPLATES.items():
        for i, (scenario, inputs) in enumerate(scenarios.items()):
            wb = openpyxl.load_workbook(built / name)
            for ref, value in inputs.items():
                if "!" in ref:
                    sheet, cell = ref.split("!")
                else:
                    sheet, cell = wb.defined_names[ref].attr_text.replace("$", "").split("!")
                wb[sheet.strip("'")][cell] = value
            path = tmp_path / f"{Path(name).stem}_{i}.xlsx"
            wb.save(path)
            jobs.append((name, scenario, inputs, path))
    outdir = convert([j[3] for j in jobs], tmp_path, timeout=900)
    layouts = {name: _Layout(built, name) for name in TEMPLATES}
    bases = {name: Workbook.load(built / edition_filename(name, "functions")).calculate() for name in TEMPLATES}
    for name, scenario, inputs, path in jobs:
        lo = openpyxl.load_workbook(outdir / path.name, data_only=True)

        def get(ref: str, lo: Any = lo) -> Any:
            sheet, cell = ref.rsplit("!", 1)
            return lo[sheet.strip("'")][cell].value

        layout = layouts[name]
        addin = _set(Workbook.load(built / edition_filename(name, "functions")), inputs)
        stale = _stale(layout, bases[name], addin)
        wrong = _compare(layout, addin, get, stale)
        assert not wrong, (name, scenario, len(wrong), wrong[:8])
        assert get(layout.master) == (1 if stale else addin.get(layout.master)), (name, scenario)


def _errors(path: Path) -> dict[str, str]:
    """Every cell of a workbook that is an error, recalculated by the headless engine (a formula) or as stored (an
    error constant): ``'Sheet'!A1`` -> its code."""
    wb = openpyxl.load_workbook(path)
    calc = Workbook.load(path).calculate()
    formulas = set(_formulas(path))
    out = {}
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for c in row:
                ref = f"'{ws.title}'!{c.coordinate}"
                if c.data_type == "e":
                    out[ref] = str(c.value)
                elif ref in formulas:
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
    cached = openpyxl.load_workbook(built / name, data_only=True)
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
    wb = openpyxl.load_workbook(built / serving.FILENAME)
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
    port = _set(Workbook.load(built / serving.FILENAME), inputs)
    addin = _set(Workbook.load(built / edition_filename(serving.FILENAME, "functions")), inputs)
    refused = [r for r, (g, _) in gated.items() if port.get(f"{WORKINGS}!B{g}") != 0]
    assert refused and all(port.get(f"{WORKINGS}!B{r}") == "-" for r in refused)
    assert all(isinstance(port.get(f"{WORKINGS}!B{g}"), (int, float)) for g in guards)
    layout = _Layout(built, serving.FILENAME)
    assert _compare(layout, addin, port.get, stale=True) == []
