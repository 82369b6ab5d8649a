"""Excel's own numbers on Excel's own workbooks: the corpus in tests/data/excel_saved recalculated headlessly by the
marker method (:mod:`tests.helpers.excel_corpus`) and compared cell by cell with the values Excel saved."""

from __future__ import annotations

import pytest

from tests.helpers import REPO
from tests.helpers import excel_corpus as ec


@pytest.fixture(scope="module")
def results():
    return ec.run_corpus()


def test_the_corpus_is_every_excel_saved_workbook_its_readme_names():
    books = ec.corpus_books()
    assert len(books) == 198
    assert all(ec.excel_saved(p) for p in books), [p.name for p in books if not ec.excel_saved(p)]
    readme = (ec.CORPUS / "README.md").read_text(encoding="utf-8")
    assert "0d797798e12ba3b3ff561ff7ba6ca834c7edec56" in readme and (ec.CORPUS / "LICENSE-MIT").is_file()


def test_the_marker_method_lets_no_uncomputed_cell_pass(tmp_path):
    # a book recalculated by something that computes nothing: every formula cell keeps the marker and none matches
    book = ec.CORPUS / "MATH_AND_TRIGONOMETRY" / "ABS.xlsx"
    result = ec.compare(book, lambda data: data)
    assert result.cells > 0 and result.matched == 0
    assert {got for _, _, got in result.misses} == {ec.MARKER}


@pytest.mark.slow
def test_the_match_table_in_the_docs_is_what_this_version_gives(results):
    doc = (REPO / "docs" / "headless.md").read_text(encoding="utf-8")
    assert ec.splice(doc, ec.match_table(results)) == doc, (
        "docs/headless.md's Excel match table is not what this version gives: run "
        '`python tests/regenerate.py "Excel match table"` and commit the result'
    )


@pytest.mark.slow
def test_every_array_formula_excel_saved_computes(results):
    # no cell of the corpus keeps its marker (never computed) or gives #SPILL! (an array blocked by Excel's own
    # saved values) unless Excel saved #SPILL! there
    for r in results:
        if r.refused:
            continue
        for where, want, got in r.misses:
            assert got != ec.MARKER, f"{r.name} {where} was not computed"
            assert got != ("error", "#SPILL!"), f"{r.name} {where} is #SPILL! (Excel: {want})"
