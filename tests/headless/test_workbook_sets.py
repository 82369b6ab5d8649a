"""Setting inputs: the cells behind a formula, --force-set, text that stays text when edited, references checked
before calculating, and progress through calculation and writing."""

from __future__ import annotations

import io
import re
import zipfile

import openpyxl
import pytest
from openpyxl.worksheet.formula import ArrayFormula

from tests.helpers import REPO
from tests.helpers.books import opened, raw_xlsx
from xlsxplan import registry
from xlsxplan.errors import WorkbookError
from xlsxplan.headless import Workbook

# the add-in edition: these tests count and find xlsxplan's functions in its cells
SERVING = REPO / "workbooks" / "serving_plan_functions.xlsx"


@pytest.fixture(scope="module")
def serving_copy(tmp_path_factory):
    copy = tmp_path_factory.mktemp("sets") / "serving_plan.xlsx"
    copy.write_bytes(SERVING.read_bytes())
    return copy


@pytest.fixture
def serving(serving_copy):
    return Workbook.load(serving_copy)


@pytest.fixture(scope="module")
def serving_for_text(serving_copy):
    """One load for every text of the quote-prefix test: each sets the same two cells, so none sees another's."""
    return Workbook.load(serving_copy)


def test_a_name_for_the_live_column_points_to_the_active_case(serving):
    # GPUs_Per_Replica is =INDEX($G23:$J23,Scenario_Number): the active scenario's case is the input to set
    with pytest.raises(
        WorkbookError,
        match=r"^Inputs!B23 holds a formula \(=INDEX\(\$G23:\$J23,Scenario_Number\)\); set Inputs!H23 \(the active "
        r"case: Scenario_Number is 2\) instead, or force it \(--force-set\) to replace the formula with the value",
    ):
        serving.set("GPUs_Per_Replica", 4)
    # another active scenario (set first, not yet calculated) names its own case
    serving.set("Active_Scenario", serving.get("Inputs!I10"))
    with pytest.raises(WorkbookError, match=r"set Inputs!I23 \(the active case: Scenario_Number is 3\) instead"):
        serving.set("GPUs_Per_Replica", 4)
    # and the advice is right: setting that case changes the live value
    serving.set("Inputs!I23", 8)
    assert serving.get("GPUs_Per_Replica") == 8


@pytest.mark.slow
def test_force_replaces_the_formula_in_the_calculation_and_the_copy_only(serving, serving_copy, tmp_path):
    before = serving_copy.read_bytes()
    assert serving.get("Outputs!A9") == "GPUs per replica"
    assert serving.get("Outputs!A24") == "Usable memory of a replica"
    usable = serving.get("Outputs!B24")  # grows with its GPUs
    serving.set("GPUs_Per_Replica", 4, force=True)
    assert serving.get("Inputs!B23") == 4
    assert serving.get("Outputs!B9") == 4
    assert serving.get("Outputs!B24") == pytest.approx(2 * usable)
    out = serving.save(tmp_path / "forced.xlsx")
    cell = openpyxl.load_workbook(out)["Inputs"]["B23"]
    assert (cell.value, cell.data_type) == (4, "n")  # the formula is gone from the copy
    assert openpyxl.load_workbook(out)["Inputs"]["B11"].value.startswith("=INDEX(")  # the others stay
    assert serving_copy.read_bytes() == before
    again = Workbook.load(out)
    assert again.get("GPUs_Per_Replica") == 4
    again.set("GPUs_Per_Replica", 2)  # an input cell now
    assert again.get("Inputs!B23") == 2


def test_a_cell_of_an_array_formula_is_never_set(tmp_path):
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["A1"], ws["A2"] = 1, 2
    ws["B1"] = ArrayFormula("B1:B2", "=A1:A2*2")
    wb.save(tmp_path / "array.xlsx")
    book = Workbook.load(tmp_path / "array.xlsx")
    for force in (False, True):
        with pytest.raises(WorkbookError, match=r"^Sheet!B2 is part of the array formula in B1:B2; only input cells"):
            book.set("Sheet!B2", 5, force=force)


@pytest.mark.slow
@pytest.mark.parametrize(
    "text, quoted",
    [('=HYPERLINK("http://evil.example","x")', True), ("+1", True), ("-2", True), ("@SUM(A1)", True), ("H100", False)],
)
def test_text_set_that_looks_like_a_formula_gets_a_quote_prefix_and_keeps_its_format(
    serving_for_text, tmp_path, text, quoted
):
    serving_for_text.set("Inputs!B52", text)  # Region: an orange input cell
    serving_for_text.set("Inputs!Z90", text)  # an empty cell, no format of its own
    out = serving_for_text.save(tmp_path / "quoted.xlsx")
    ws = openpyxl.load_workbook(out)["Inputs"]
    original = opened(SERVING)["Inputs"]["B52"]
    for ref in ("B52", "Z90"):
        cell = ws[ref]
        assert (cell.value, cell.data_type, bool(cell.quotePrefix)) == (text, "s", quoted)
    assert ws["B52"].fill.fgColor.rgb == original.fill.fgColor.rgb  # the input's colour is kept
    assert ws["B52"].number_format == original.number_format
    assert Workbook.load(out).get("Inputs!B52") == text  # read back as text, not evaluated


def test_a_workbook_without_a_styles_part_gets_one_for_the_quote_prefix(tmp_path):
    path = tmp_path / "bare.xlsx"
    path.write_bytes(raw_xlsx({"S": '<row r="1"><c r="A1"><v>1</v></c><c r="B1"><f>A1*2</f></c></row>'}))
    names = zipfile.ZipFile(path).namelist()
    assert not any("styles" in n for n in names)
    book = Workbook.load(path)
    book.set("S!A2", "=1+1")
    out = book.save(tmp_path / "bare.out.xlsx")
    cell = openpyxl.load_workbook(out)["S"]["A2"]
    assert (cell.value, bool(cell.quotePrefix)) == ("=1+1", True)
    with zipfile.ZipFile(out) as zf:
        styles = [n for n in zf.namelist() if n.endswith("styles.xml")]
        assert styles and b"styles+xml" in zf.read("[Content_Types].xml")
    assert Workbook.load(out).get("S!B1") == 2


def test_address_checks_a_reference_without_calculating(serving, monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("calculated")

    monkeypatch.setattr(Workbook, "calculate", forbidden)
    assert serving.address("GPUs_Per_Replica") == "Inputs!B23"
    assert serving.address("Inputs!G23:J23") == "Inputs!G23:J23"
    with pytest.raises(WorkbookError, match=r"defined name 'GPUs_Per_Replca'; did you mean GPUs_Per_Replica"):
        serving.address("GPUs_Per_Replca")
    with pytest.raises(WorkbookError, match=r"no sheet named 'Input'; did you mean Inputs\?"):
        serving.address("Input!B3")


@pytest.mark.slow
def test_calculate_and_save_report_progress(serving_copy, tmp_path):
    book = Workbook.load(serving_copy)
    calls: list[tuple[int, int]] = []
    book.calculate(progress=lambda done, total: calls.append((done, total)))
    assert len(calls) >= 4  # as xlsxplan's functions are called, and at the end
    assert all(0 < done <= total for done, total in calls)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)
    with zipfile.ZipFile(serving_copy) as zf:
        sheets = [zf.read(n).decode() for n in zf.namelist() if n.startswith("xl/worksheets/sheet")]
    names = "|".join(sorted(registry.FUNCTIONS, key=len, reverse=True))
    written = sum(
        len(re.findall(rf"(?<![A-Z_.])(?:{names})\(", f))
        for xml in sheets
        for f in re.findall(r"<f(?:\s[^>]*)?>([^<]*)</f>", xml)
    )
    assert calls[-1][0] == calls[-1][1] == written  # the calls the formulas write, array formulas' too (PORTFOLIO)
    writes: list[tuple[int, int]] = []
    book.save(tmp_path / "progress.xlsx", progress=lambda done, total: writes.append((done, total)))
    parts = len(zipfile.ZipFile(tmp_path / "progress.xlsx").namelist())
    assert writes[-1][0] == writes[-1][1] >= parts  # the sheets patched, then every part written
    assert openpyxl.load_workbook(io.BytesIO((tmp_path / "progress.xlsx").read_bytes()))["Inputs"]["B23"].value
