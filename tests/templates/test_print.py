"""The templates on paper: both portable books rendered by LibreOffice in one conversion, counted page by page
against the project's page budget, every page with its footer, and no value text cut at its cell's edge (measured
by the font metrics the builders wrap with)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import openpyxl
import pytest
from openpyxl.utils import range_boundaries

from tests.helpers import REPO
from tests.helpers.clipping import clipped_text
from xlsxplan.templates import serving, training
from xlsxplan.templates.build import EDITIONS, TEMPLATES, edition_filename
from xlsxplan.templates.styles import PRINT_PAGES_TALL

COMMITTED = REPO / "workbooks"
PAGE_BUDGET = {serving.FILENAME: 40, training.FILENAME: 25}
"""The most pages a template prints in (the portable edition, the larger: the Catalog and Workings sheets too)."""
REFERENCE = {
    serving.FILENAME: ("Options", "Lists", "Catalog", "Workings"),
    training.FILENAME: ("Options", "Lists", "Catalog", "Workings"),
}
"""The sheets that print last, after the story: reference tables."""
FOOTER = re.compile(r"(Serving|Training) plan: ([A-Za-z .]+?)\s{2,}Page (\d+) of (\d+)")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def printed(tmp_path_factory) -> dict[str, list[str]]:
    """Each portable template printed to PDF by LibreOffice (one call for both): its pages' text."""
    if not (shutil.which("soffice") and shutil.which("pdftotext")):
        pytest.skip("LibreOffice or poppler missing")
    out = tmp_path_factory.mktemp("printed")
    subprocess.run(
        [
            "soffice",
            "--headless",
            f"-env:UserInstallation=file://{out}/lo",
            "--convert-to",
            "pdf",
            "--outdir",
            str(out),
            *(str(COMMITTED / name) for name in TEMPLATES),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    pages = {}
    for name in TEMPLATES:
        pdf = out / name.replace(".xlsx", ".pdf")
        text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], check=True, capture_output=True, text=True)
        pages[name] = text.stdout.split("\f")[:-1]
    return pages


@pytest.mark.parametrize("name", list(TEMPLATES))
def test_each_template_prints_whole_within_its_page_budget_every_page_footed(printed, name):
    pages = printed[name]
    assert len(pages) <= PAGE_BUDGET[name], f"{name}: {len(pages)} pages, the budget is {PAGE_BUDGET[name]}"
    feet = [FOOTER.search(page) for page in pages]
    assert all(feet), [i + 1 for i, f in enumerate(feet) if not f]
    assert [int(f.group(3)) for f in feet if f] == list(range(1, len(pages) + 1))
    # the sheets print in the book's order, each once, the reference sheets last
    sheets = list(dict.fromkeys(f.group(2) for f in feet if f))
    order = openpyxl.load_workbook(COMMITTED / name, read_only=True).sheetnames
    assert sheets == order, sheets
    assert sheets[-len(REFERENCE[name]) :] == list(REFERENCE[name])


def test_the_printed_plans_show_no_error_and_their_figures(printed):
    for name, pages in printed.items():
        text = "".join(pages)
        assert "#" not in text and "Err:" not in text, name
        must = (
            ["4,387", "20,031", "does not fit", "$0.32"] if name == serving.FILENAME else ["84.04", "8.47E+17", "18%"]
        )
        for figure in must:
            assert figure in text, f"{figure} not in the render of {name}"


@pytest.fixture(scope="module", params=[(t, e) for t in TEMPLATES for e in EDITIONS])
def opened(request) -> tuple[str, openpyxl.Workbook, openpyxl.Workbook]:
    path: Path = COMMITTED / edition_filename(*request.param)
    return path.name, openpyxl.load_workbook(path), openpyxl.load_workbook(path, data_only=True)


def test_no_value_text_is_wider_than_its_cell(opened):
    name, formulas, values = opened
    clipped = [x for ws in formulas.worksheets for x in clipped_text(ws, values[ws.title])]
    assert not clipped, f"{name}: {clipped}"


def test_every_sheet_prints_landscape_to_the_width_with_its_footer_and_the_long_ones_capped(opened):
    name, wb, _ = opened
    for ws in wb.worksheets:
        assert ws.print_area and ws.page_setup.orientation == "landscape" and ws.page_setup.fitToWidth == 1, ws.title
        assert ws.sheet_properties.pageSetUpPr.fitToPage, ws.title
        assert ws.oddFooter.left.text.endswith(": &A") and ws.oddFooter.right.text == "Page &P of &N", ws.title
        if ws.title in PRINT_PAGES_TALL:
            assert ws.page_setup.fitToHeight == PRINT_PAGES_TALL[ws.title], ws.title
        if ws.title != "xlwings.conf":  # one row: all of it a heading
            assert ws.print_title_rows, f"{ws.title}: no heading rows repeated on each page"
        if ws.title in ("Catalog", "Workings"):
            assert ws.print_title_rows == "$1:$2" and ws.page_setup.fitToHeight >= 1, ws.title


def test_the_checks_print_every_row_the_master_check_counts(opened):
    name, wb, _ = opened
    ws = wb["Checks"]
    master = next(c for row in ws.iter_rows(max_col=2) for c in row if str(c.value).startswith("=MIN(1,"))
    counted = [int(r) for r in re.findall(r"B(\d+)", master.value)]
    (area,) = ws.print_area.split(",")
    _, top, _, bottom = range_boundaries(area.split("!")[-1].replace("$", ""))
    assert top <= min(counted) and max(counted) <= bottom, (name, ws.print_area, master.value)


def test_a_row_tall_for_a_wrapped_value_holds_its_label_at_the_top_beside_it(opened):
    name, wb, _ = opened
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            if any(c.data_type == "f" and c.alignment.wrap_text for c in row):
                loose = [c.coordinate for c in row if c.value is not None and c.alignment.vertical != "top"]
                assert not loose, f"{name} {ws.title}: {loose}"


def test_the_templates_page_quotes_the_page_counts_printed(printed):
    page = " ".join((REPO / "docs" / "templates.md").read_text(encoding="utf-8").split())
    quoted = re.search(r"the serving plan prints whole in (\d+) pages, the training plan in (\d+)", page)
    assert quoted, "docs/templates.md no longer quotes the page counts: update this test"
    assert [int(n) for n in quoted.groups()] == [len(printed[serving.FILENAME]), len(printed[training.FILENAME])]
