"""The workbook API: load once, set, calculate, read, save with every formula's value cached beside it."""

from __future__ import annotations

import io
import re
import zipfile

import openpyxl
import pytest
from openpyxl.worksheet.formula import ArrayFormula

import xlsxplan as x
from tests.helpers import REPO
from tests.helpers.books import plan_book, registry_book, scenario_book
from tests.helpers.examples import EXAMPLES
from xlsxplan import registry
from xlsxplan.errors import CellError, WorkbookError
from xlsxplan.headless import Workbook, recalc
from xlsxplan.headless.package import COMMENT_AUTHOR
from xlsxplan.headless.workbook import default_output, parse_value


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    return plan_book(tmp_path_factory.mktemp("plan") / "plan.xlsx")


@pytest.fixture(scope="module")
def plan_wb(plan):
    return Workbook.load(plan)


@pytest.fixture(scope="module")
def registry_wb(tmp_path_factory):
    return Workbook.load(registry_book(tmp_path_factory.mktemp("registry") / "registry.xlsx"))


def _members(path):
    with zipfile.ZipFile(path) as zf:
        return {i.filename: zf.read(i) for i in zf.infolist()}


# ---------------------------------------------------------------------------------------------------------------
# Values


@pytest.mark.parametrize("name", list(registry.FUNCTIONS))
def test_every_registry_function_recalculates_to_the_python_value(registry_wb, name):
    fn = registry.FUNCTIONS[name]
    row = list(EXAMPLES).index(name) + 2
    expected = fn(*EXAMPLES[name])
    if fn.table:
        expected = expected[0][0]  # read with INDEX(...,1,1)
    elif fn.spills:
        expected = expected[0]  # read with INDEX(...,1)
    for ref in (f"Functions!B{row}", f"Nested!B{row - 1}"):  # cross-sheet and named arguments; literal and nested
        value = registry_wb.get(ref)
        if isinstance(expected, str):
            assert value == expected
        else:
            assert value == pytest.approx(expected, rel=1e-12)


def test_plan_book_matches_python_across_sheets_names_and_native_functions(plan_wb):
    # "Back-of-the-Envelope Estimation for LLM Systems": Qwen2.5-72B in FP8 on two H100s with a 2,300-token context fits a batch of 94
    kv = x.kv_bytes_per_token(80, 8, 128)
    batch = x.max_batch(72.7, 1, kv, 2300, 2, 80)
    total = x.decode_tokens_per_s_total(72.7, 1, 2, 3.35, batch, kv, 2300)
    assert (kv, batch) == (327680, 94)
    assert plan_wb.get("Calc!B2") == 80
    assert plan_wb.get("Calc!B3") == kv
    assert plan_wb.get("Outputs!B2") == 94
    assert plan_wb.get("Outputs!B3") == pytest.approx(total, rel=1e-12)
    assert plan_wb.get("Outputs!B4") == round(x.cost_per_m_tokens(2, 2.5, total), 2)
    assert plan_wb.get("Calc!B9") == "fits"
    assert plan_wb.get("Calc!B10") == 0  # IFERROR around the A100's missing FP8 figure
    assert plan_wb.get("Calc!B11") == 94 and plan_wb.get("Calc!B12") == pytest.approx(total)
    assert plan_wb.get("Calc!B13") == kv + 80 + 80  # SUM over a column
    assert plan_wb.get("Calc!B14") == 2  # INDEX/MATCH
    assert plan_wb.get("Calc!B15") == 2300  # XLOOKUP
    assert plan_wb.get("Params_B") == 72.7
    assert plan_wb.get("Outputs!B2:B4")[0] == [94]


def test_set_by_cell_and_by_name_recalculates_without_reloading(plan, monkeypatch):
    from xlsxplan.headless import engine

    loads = []
    original = engine.new_book
    monkeypatch.setattr(engine, "new_book", lambda *a, **k: loads.append(1) or original(*a, **k))
    wb = Workbook.load(plan)
    assert wb.get("Outputs!B2") == 94
    wb.set("Inputs!B5", 4)  # four GPUs
    assert wb.get("Outputs!B2") == x.max_batch(72.7, 1, 327680, 2300, 4, 80)
    wb.set("Context", 8000).set("Bytes_Per_Param", 2)
    wb.calculate()
    assert wb.get("Outputs!B2") == x.max_batch(72.7, 2, 327680, 8000, 4, 80)
    wb.set("Model", "Qwen2.5-7B")
    assert wb.get("Calc!B2") == x.model_spec("Qwen2.5-7B", "layers")
    assert len(loads) == 1


def test_text_set_as_input_stays_text(plan, tmp_path):
    wb = Workbook.load(plan)
    wb.set("Inputs!B8", "=1+1")  # the price cell: a formula typed as input must not become one
    assert wb.get("Inputs!B8") == "=1+1"
    err = wb.get("Calc!B8")
    assert err.code == "#VALUE!" and err.message == "usd_per_gpu_hour must be a number, got text '=1+1'"
    out = wb.save(tmp_path / "out.xlsx")
    cell = openpyxl.load_workbook(out)["Inputs"]["B8"]
    assert (cell.value, cell.data_type) == ("=1+1", "s")


@pytest.mark.parametrize(
    "ref, message",
    [
        (
            "Calc!B5",
            "Calc!B5 holds a formula (=MAX_BATCH(Params_B,Bytes_Per_Param,B3,Context,N_GPUs,B4)); set the cells it "
            "reads instead (Bytes_Per_Param, Context, N_GPUs, Params_B, Calc!B3, Calc!B4), or force it (--force-set) "
            "to replace the formula with the value in the copy written",
        ),
        ("Inputs!B2:B3", "'Inputs!B2:B3' is a range (Inputs!B2:B3); set one cell at a time"),
        (
            "Nowhere!B2",
            "the workbook has no sheet named 'Nowhere'; its sheets are: Inputs, Calc, Outputs, xlwings.conf",
        ),
        ("Param_B", "the workbook has no sheet reference or defined name 'Param_B'; did you mean Params_B?"),
        (
            "Nothing_Like",
            "the workbook has no sheet reference or defined name 'Nothing_Like'; its names: Bytes_Per_Param",
        ),
        (
            "Inptus!B3",
            "the workbook has no sheet named 'Inptus'; did you mean Inputs? its sheets are: Inputs, Calc, Outputs, xlwings.conf",
        ),
        ("B5", "'B5' needs its sheet, e.g. Inputs!B5"),
        ("Inputs!B0", "'Inputs!B0': 'B0' is not a cell or range such as B4, B4:D9, A:B or 4:9"),
    ],
)
def test_set_refuses_what_is_not_an_input_cell(plan_wb, ref, message):
    with pytest.raises(WorkbookError, match="^" + re.escape(message)):
        plan_wb.set(ref, 1)


def test_set_refuses_values_a_cell_cannot_hold(plan_wb):
    with pytest.raises(WorkbookError, match=r"the value for Inputs!B3 must be a finite number, got inf"):
        plan_wb.set("Inputs!B3", float("inf"))
    with pytest.raises(WorkbookError, match=r"must be a number, text, TRUE/FALSE or empty, got dict"):
        plan_wb.set("Inputs!B3", {})


@pytest.mark.parametrize(
    "typed, value",
    [
        ("42", 42),
        ("-3.5", -3.5),
        ("1e6", 1e6),
        ("1E+6", 1e6),
        (".5", 0.5),
        ("90%", 0.9),
        ("TRUE", True),
        ("false", False),
        ("#N/A", CellError("#N/A")),
        ("", None),
        ("H100", "H100"),
        ('"42"', "42"),
        ("=1+1", "=1+1"),
        ("80 GB", "80 GB"),
    ],
)
def test_values_are_read_as_people_type_them(typed, value):
    got = parse_value(typed)
    assert got == value and type(got) is type(value)


def test_a_thousands_separator_is_refused_not_guessed():
    with pytest.raises(WorkbookError, match=r"'1,000': type numbers without thousands separators, or quote it"):
        parse_value("1,000")


# ---------------------------------------------------------------------------------------------------------------
# Errors


def test_errors_carry_their_excel_value_and_reason(tmp_path):
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "S"
    ws["A1"] = 5
    ws["B1"] = "=A1/0"
    ws["B2"] = "=KV_BYTES_PER_TOKEN(80,-1,128)"
    ws["B3"] = "=B2+1"
    ws["B4"] = '=MODEL_SPEC("gpt5","layers")'
    ws["B5"] = "=KV_BYTE_PER_TOKEN(1,2,3)"
    ws["B6"] = '=WEIGHTS_GB("lots")'
    ws["B7"] = "=SUM("  # not a formula Excel would save: only this cell suffers
    ws["B8"] = "=A1*2"
    ws["C1"] = ArrayFormula("C1:C2", "=KV_BYTES_PER_TOKEN({80;80},{8;-1},128)")
    wb.save(tmp_path / "errors.xlsx")
    book = Workbook.load(tmp_path / "errors.xlsx")
    errors = book.errors()
    hint = errors["S!B5"].message  # close matches depend on which functions exist
    assert hint.startswith("unknown function KV_BYTE_PER_TOKEN; did you mean KV_BYTES_PER_TOKEN")
    errors["S!B5"] = CellError("#NAME?", "unknown function KV_BYTE_PER_TOKEN")
    assert errors == {
        "S!B1": CellError("#DIV/0!", "division by zero"),
        "S!B2": CellError("#NUM!", "kv_heads must be a whole number from 1 to 1,000,000, got -1"),
        "S!B3": CellError("#NUM!", "passed on from S!B2: kv_heads must be a whole number from 1 to 1,000,000, got -1"),
        "S!B4": CellError("#N/A", "model 'gpt5' is not in the catalog; see MODELS() for the list"),
        "S!B5": CellError("#NAME?", "unknown function KV_BYTE_PER_TOKEN"),
        "S!B6": CellError("#VALUE!", "params_b must be a number, got text 'lots'"),
        "S!B7": CellError("#NAME?", "the formula cannot be parsed: unmatched opening parenthesis or bracket"),
        "S!C2": CellError("#NUM!", "kv_heads must be a whole number from 1 to 1,000,000, got -1"),
    }
    assert book.get("S!B8") == 10 and book.get("S!C1") == 327680
    assert book.get("S!B2") == errors["S!B2"]


def test_a_circular_reference_is_an_error_with_its_reason(tmp_path):
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"] = "=B1+1"
    ws["B1"] = "=A1+1"
    ws["C1"] = "=2*3"
    wb.save(tmp_path / "circular.xlsx")
    book = Workbook.load(tmp_path / "circular.xlsx")
    assert book.get("Sheet!C1") == 6
    err = book.get("Sheet!A1")
    assert err.code == "#REF!" and err.message.startswith("no value: the formula is part of a circular reference")


def test_error_notes_are_written_replaced_and_never_touch_the_users_own(plan, tmp_path):
    out = recalc(plan, tmp_path / "first.xlsx").path and tmp_path / "first.xlsx"
    book = openpyxl.load_workbook(out)
    note = book["Calc"]["B16"].comment
    assert (note.author, note.text) == (
        COMMENT_AUTHOR,
        "#NUM! kv_heads must be a whole number from 1 to 1,000,000, got -1",
    )
    assert (book["Inputs"]["B3"].comment.author, book["Inputs"]["B3"].comment.text) == (
        "Analyst",
        "From the model card",
    )
    # An error elsewhere: the old note goes, the new one comes, the user's stays.
    wb = Workbook.load(out)
    wb.set("Inputs!B5", 0)
    wb.save(tmp_path / "second.xlsx")
    book = openpyxl.load_workbook(tmp_path / "second.xlsx")
    notes = {
        (ws.title, c.coordinate): (c.comment.author, c.comment.text)
        for ws in book.worksheets
        for row in ws.iter_rows()
        for c in row
        if c.comment
    }
    assert notes[("Inputs", "B3")] == ("Analyst", "From the model card")
    assert notes[("Calc", "B16")][1].startswith("#NUM! kv_heads")
    assert notes[("Calc", "B5")] == (COMMENT_AUTHOR, "#NUM! n_gpus must be a whole number from 1 to 10,000,000, got 0")
    assert sum(1 for author, _ in notes.values() if author == COMMENT_AUTHOR) == len(
        Workbook.load(tmp_path / "second.xlsx").errors()
    )


# ---------------------------------------------------------------------------------------------------------------
# The saved file


def test_saved_file_shows_every_value_and_keeps_every_formula(plan, plan_wb, tmp_path):
    out = plan_wb.save(tmp_path / "plan.recalc.xlsx")
    original = openpyxl.load_workbook(plan)
    formulas = openpyxl.load_workbook(out)
    values = openpyxl.load_workbook(out, data_only=True)
    checked = 0
    for ws in original.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                assert formulas[ws.title][cell.coordinate].value == cell.value
                if cell.data_type == "f":
                    shown = values[ws.title][cell.coordinate].value
                    expected = plan_wb.get(f"'{ws.title}'!{cell.coordinate}")
                    assert shown == (expected.code if isinstance(expected, CellError) else expected)
                    assert shown is not None
                    checked += 1
    assert checked == 19  # 16 on Calc, 3 on Outputs


def test_saved_file_keeps_styles_names_validation_notes_chart_widths_and_conf_sheet(plan, plan_wb, tmp_path):
    out = plan_wb.save(tmp_path / "plan.recalc.xlsx")
    before, after = _members(plan), _members(out)
    for name in ("xl/styles.xml", "xl/workbook.xml", "xl/charts/chart1.xml", "xl/drawings/drawing1.xml"):
        assert after[name] == before[name]
    book = openpyxl.load_workbook(out)
    assert book["Inputs"]["B2"].fill.fgColor.rgb == "00FFCC99"
    assert book["Inputs"]["B8"].number_format == '"$"#,##0.00'
    assert book["Outputs"]["B4"].number_format == "0.00"
    assert book["Inputs"].column_dimensions["A"].width == 24
    assert set(book.defined_names) == set(openpyxl.load_workbook(plan).defined_names)
    dv = book["Inputs"].data_validations.dataValidation[0]
    assert (dv.type, dv.formula1, dv.formula2, str(dv.sqref)) == ("whole", "1", "64", "B5")
    assert len(book["Outputs"]._charts) == 1
    from xlsxplan.sheet.xlwings_conf import read_conf_sheet

    assert read_conf_sheet(book) == {"UDF Modules": "xlsxplan.excel.udfs"}


def test_a_second_recalc_changes_nothing(plan, tmp_path):
    first = tmp_path / "first.xlsx"
    second = tmp_path / "second.xlsx"
    recalc(plan, first)
    recalc(first, second)
    assert second.read_bytes() == first.read_bytes()


def test_array_formula_cells_get_their_values(tmp_path):
    path = scenario_book(tmp_path / "scenarios.xlsx", rows=20, array=True)
    out = recalc(path, tmp_path / "out.xlsx").path and tmp_path / "out.xlsx"
    values = openpyxl.load_workbook(out, data_only=True)["Scenarios"]
    for r in range(2, 22):
        params, bpp = values[f"A{r}"].value, values[f"B{r}"].value
        assert values[f"F{r}"].value == pytest.approx(x.weights_gb(params, bpp))
    assert openpyxl.load_workbook(out)["Scenarios"]["F2"].value.text == "=WEIGHTS_GB(A2:A21,B2:B21)"


def test_input_is_not_modified_and_default_output_sits_beside_it(plan, tmp_path):
    before = plan.read_bytes()
    wb = recalc(plan)
    assert plan.read_bytes() == before
    assert default_output(plan) == plan.with_name("plan.recalc.xlsx") and default_output(plan).exists()
    assert wb.path == plan


def test_output_must_keep_the_workbooks_kind(plan_wb, tmp_path):
    with pytest.raises(
        WorkbookError, match=r"this workbook is a \.xlsx file \(by its content\), so the output must end"
    ):
        plan_wb.save(tmp_path / "out.xlsm")
    with pytest.raises(WorkbookError, match=r"the name must end in \.xlsx"):
        plan_wb.save(tmp_path / "out.csv")


def test_apostrophes_in_sheet_names(tmp_path):
    # a sheet named "Bob's plan" is quoted with its apostrophe doubled, in formulas and in defined names
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Bob's plan"
    ws["A1"] = 72.7
    ws["A2"] = "=WEIGHTS_GB(A1,1)"
    other = wb.create_sheet("Summary")
    other["A1"] = "='Bob''s plan'!A2*2"
    add = wb.defined_names
    from openpyxl.workbook.defined_name import DefinedName

    add["Params"] = DefinedName("Params", attr_text="'Bob''s plan'!$A$1")
    other["A2"] = "=Params+1"
    wb.save(tmp_path / "bob.xlsx")
    book = Workbook.load(tmp_path / "bob.xlsx")
    assert book.get("'Bob''s plan'!A2") == 72.7
    assert book.get("Summary!A1") == 145.4
    assert book.get("Summary!A2") == pytest.approx(73.7)
    book.set("Params", 7)
    assert book.get("Summary!A1") == 14
    out = book.save(tmp_path / "bob.recalc.xlsx")
    saved = openpyxl.load_workbook(out)
    assert saved.sheetnames == ["Bob's plan", "Summary"]
    assert saved["Summary"]["A1"].value == "='Bob''s plan'!A2*2"


def test_xlsm_keeps_its_macros_byte_for_byte_and_never_runs_them(plan, tmp_path):
    members = _members(plan)
    vba = b"\xd0\xcf\x11\xe0 pretend VBA project: never executed"
    ctypes = members["[Content_Types].xml"].decode()
    ctypes = ctypes.replace(
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml",
        "application/vnd.ms-excel.sheet.macroEnabled.main+xml",
    ).replace("</Types>", '<Default Extension="bin" ContentType="application/vnd.ms-office.vbaProject"/></Types>')
    members["[Content_Types].xml"] = ctypes.encode()
    members["xl/vbaProject.bin"] = vba
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    path = tmp_path / "plan.xlsm"
    path.write_bytes(buf.getvalue())
    wb = Workbook.load(path)
    assert wb.extension == ".xlsm"
    out = wb.save(tmp_path / "plan.recalc.xlsm")
    assert _members(out)["xl/vbaProject.bin"] == vba
    assert openpyxl.load_workbook(out, data_only=True)["Outputs"]["B2"].value == 94


def test_parts_openpyxl_would_drop_survive(plan, tmp_path):
    # A sparkline group (an x14 extension) and a custom XML part: openpyxl's own load and save lose both.
    members = _members(plan)
    sparklines = (
        '<extLst><ext uri="{05C60535-1F16-4fd2-B633-F4F36F0B64E0}" '
        'xmlns:x14="http://schemas.microsoft.com/office/spreadsheetml/2009/9/main"><x14:sparklineGroups '
        'xmlns:xm="http://schemas.microsoft.com/office/excel/2006/main"><x14:sparklineGroup displayEmptyCellsAs="gap">'
        "<x14:sparklines><x14:sparkline><xm:f>Outputs!B2:B4</xm:f><xm:sqref>C2</xm:sqref></x14:sparkline>"
        "</x14:sparklines></x14:sparklineGroup></x14:sparklineGroups></ext></extLst>"
    )
    outputs = members["xl/worksheets/sheet3.xml"].decode()
    members["xl/worksheets/sheet3.xml"] = outputs.replace("</worksheet>", sparklines + "</worksheet>").encode()
    members["customXml/item1.xml"] = b"<planning xmlns='urn:example'>approved</planning>"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    path = tmp_path / "sparklines.xlsx"
    path.write_bytes(buf.getvalue())
    with pytest.warns(UserWarning, match="Sparkline Group extension is not supported and will be removed"):
        openpyxl.load_workbook(path).save(tmp_path / "openpyxl.xlsx")
    lost = _members(tmp_path / "openpyxl.xlsx")
    assert "customXml/item1.xml" not in lost and b"sparklineGroups" not in lost["xl/worksheets/sheet3.xml"]
    out = recalc(path, tmp_path / "kept.xlsx") and tmp_path / "kept.xlsx"
    kept = _members(out)
    assert kept["customXml/item1.xml"] == members["customXml/item1.xml"]
    assert sparklines.encode() in kept["xl/worksheets/sheet3.xml"]
    with pytest.warns(UserWarning, match="Sparkline Group extension"):  # openpyxl still cannot keep them
        assert openpyxl.load_workbook(out, data_only=True)["Outputs"]["B2"].value == 94


def test_a_typed_error_value_is_reported_as_typed(tmp_path):
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"] = "#N/A"
    ws["A1"].data_type = "e"
    ws["B1"] = "=A1*2"
    wb.save(tmp_path / "typed.xlsx")
    book = Workbook.load(tmp_path / "typed.xlsx")
    assert book.errors() == {
        "Sheet!A1": CellError("#N/A", "the cell holds this error value (typed, not calculated)"),
        "Sheet!B1": CellError(
            "#N/A", "passed on from Sheet!A1: the cell holds this error value (typed, not calculated)"
        ),
    }


def test_setting_a_blank_cell_writes_it_into_the_file(plan, tmp_path):
    wb = Workbook.load(plan)
    wb.set("Inputs!D20", 5).set("Outputs!A1", None).set("Inputs!E2", True)
    assert wb.get("Inputs!D20") == 5 and wb.get("Outputs!A1") is None
    out = openpyxl.load_workbook(wb.save(tmp_path / "out.xlsx"))
    assert out["Inputs"]["D20"].value == 5 and out["Inputs"]["E2"].value is True
    assert out["Outputs"]["A1"].value is None and out["Outputs"]["A1"].font.bold  # cleared, style kept


# ---------------------------------------------------------------------------------------------------------------
# Constants: read as the file stores them


def test_constants_read_as_the_file_stores_them(tmp_path):
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "S"
    ws["A1"], ws["B1"], ws["C1"] = "GPUs", 4, "count"  # a label, an input, a unit
    ws["A2"], ws["B2"] = "Typed error", "#N/A"
    ws["A3"], ws["B3"] = 0.1 + 0.2, "=B1*2"
    ws["D1"], ws["D2"] = "=SUM(B1:B1)", "=C5"  # reads B1; C5 is empty
    ws["E1"] = "=Rate*2"
    ws["E2"] = "=A3*1"
    wb.create_sheet("T")["A1"] = 2.5
    wb.defined_names["Rate"] = openpyxl.workbook.defined_name.DefinedName("Rate", attr_text="T!$A$1")
    wb.save(tmp_path / "constants.xlsx")
    book = Workbook.load(tmp_path / "constants.xlsx")
    assert [book.get(f"S!{r}") for r in ("A1", "B1", "C1", "A2", "B3", "D1", "D2", "E1")] == [
        "GPUs",
        4,
        "count",
        "Typed error",
        8,
        4,
        0,
        5.0,
    ]
    # openpyxl stores 0.1 + 0.2 with 15 significant digits, "0.3": the number read is the one stored
    assert book.get("S!A3") == 0.3 == book.get("S!E2")
    assert book.get("S!A1:C1") == [["GPUs", 4, "count"]]
    typed = book.get("S!B2")
    assert typed == CellError("#N/A", "the cell holds this error value (typed, not calculated)")
    assert book.errors() == {"S!B2": typed}  # a typed error no formula reads is still reported
    book.set("S!A1", "GPU count").set("S!B1", 8)  # an unread cell and a read one
    assert (book.get("S!A1"), book.get("S!B3")) == ("GPU count", 16)
    out = openpyxl.load_workbook(book.save(tmp_path / "constants.out.xlsx"), data_only=True)["S"]
    assert (out["A1"].value, out["B3"].value, out["C1"].value) == ("GPU count", 16, "count")


@pytest.mark.slow
def test_every_cell_of_the_shipped_templates_reads_as_cached_by_the_build():
    # the templates' cached values were written when they were built: constants and formulas alike read the same
    for name in ("serving_plan.xlsx", "training_plan.xlsx"):
        path = REPO / "workbooks" / name
        book = Workbook.load(path)
        cached = openpyxl.load_workbook(path, data_only=True)
        for ws in cached.worksheets:
            if ws.title not in book.sheetnames:
                continue
            for row in ws.iter_rows():
                for cell in row:
                    if cell.value is None:
                        continue
                    got = book.get(f"'{ws.title}'!{cell.coordinate}")
                    where = f"{name} {ws.title}!{cell.coordinate}"
                    if isinstance(got, CellError):
                        assert got.code == cell.value, where
                    elif isinstance(cell.value, float):
                        assert got == pytest.approx(cell.value, rel=1e-12), where
                    elif cell.is_date:
                        continue  # openpyxl turns the serial number into a date
                    else:
                        assert got == cell.value, where


def test_a_workbook_saved_with_add_in_names_recalculates_and_keeps_them(tmp_path):
    # a workbook saved by Excel with xlwings Lite's functions stores them as "_xldudf_" calls (see test_engine)
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"] = "=_xldudf_XLWINGS_KV_BYTES_PER_TOKEN(80,8,128)"
    ws["A2"] = "=A1*2"
    wb.save(tmp_path / "lite.xlsx")
    book = Workbook.load(tmp_path / "lite.xlsx").calculate()
    assert book.get("Sheet!A1") == 327_680 and book.get("Sheet!A2") == 655_360
    out = book.save(tmp_path / "out.xlsx")
    assert openpyxl.load_workbook(out)["Sheet"]["A1"].value == "=_xldudf_XLWINGS_KV_BYTES_PER_TOKEN(80,8,128)"
    assert openpyxl.load_workbook(out, data_only=True)["Sheet"]["A1"].value == 327_680
