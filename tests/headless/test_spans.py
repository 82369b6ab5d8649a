"""The cells array formulas and data tables fill, and the areas validation ranges list, are counted before any
is listed (xlsxplan/headless/untrusted.py, sheets.py, layout.py).

A 5 kB workbook whose data table claimed ``A1:XFD1000`` (and an array formula whose ``ref`` was written twice, a
decoy first) reached 4.5 GB before "ran out of memory": the scan before parsing counted neither, and loading listed
16 million cells one by one. Now the scan reads ``<f ref>`` as the index does, the index's own count is checked
again before a cell is listed, and the memory estimate covers what is listed.
"""

from __future__ import annotations

import re

import pytest

from tests.helpers.hangs import SIZES, claimed_spans, linear
from xlsxplan.cli import main
from xlsxplan.errors import WorkbookError
from xlsxplan.headless import Workbook, untrusted
from xlsxplan.headless.untrusted import BYTES_PER_ARRAY_ELEMENT, BYTES_PER_ELEMENT, Limits, open_package

GUARD = 2_000_000
"""More cells than this listed by one load would be the blow-up itself: the counter stops there, so that the old
behaviour fails the test quickly instead of taking the machine's memory."""


def _counting(monkeypatch) -> dict[str, int]:
    """Count the cells a load lists for array formulas and data tables (Workbook.__init__ lists each), from the
    index it is given, before it lists them; past GUARD, stop."""
    work = {"listed": 0, "spans": 0}
    init, span = Workbook.__init__, getattr(untrusted._PartScan, "_span", None)

    def counted_init(self, inspection, book, index, *args, **kwargs):
        cells = 0
        for idx in index.values():
            for f in idx.arrays:
                r1, c1, r2, c2 = f.area
                cells += (r2 - r1 + 1) * (c2 - c1 + 1)
        work["listed"] += cells
        if cells > GUARD:
            raise RuntimeError(f"about to list {cells:,} cells of array formulas and data tables")
        init(self, inspection, book, index, *args, **kwargs)

    def counted_span(self, attrs):
        work["spans"] += 1
        span(self, attrs)  # type: ignore[misc]

    monkeypatch.setattr(Workbook, "__init__", counted_init)
    if span is not None:
        monkeypatch.setattr(untrusted._PartScan, "_span", counted_span)
    return work


@pytest.mark.slow
def test_claimed_spans_are_counted_before_any_cell_is_listed(tmp_path, monkeypatch, capsys):
    """At 1,000 rows (where it reached 4.5 GB) and 4 and 10 times that, recalc refuses in one line naming the largest
    range and the memory limit, having listed no cell; the cells counted grow linearly with the rows, the work
    done (formulas scanned, cells listed) not at all."""
    work = _counting(monkeypatch)
    counted, done = {}, {}
    for size in SIZES:
        work.update(listed=0, spans=0)
        path = tmp_path / f"spans{size}.xlsx"
        path.write_bytes(claimed_spans(1_000 * size))
        out = tmp_path / f"out{size}.xlsx"
        code = main(["recalc", str(path), "-o", str(out), "-q"])
        err = capsys.readouterr().err
        assert code == 2 and not out.exists() and len(err.strip().splitlines()) == 1, err
        m = re.search(r"([\d,]+) cells filled by array formulas and data tables, the largest (\S+) ", err)
        assert m is not None and "the limit is 16 GB" in err, err
        assert work["listed"] == 0, work
        counted[size] = int(m.group(1).replace(",", ""))
        assert counted[size] == (16_384 + 16_383) * 1_000 * size  # A1:XFD and B2:XFD
        done[size] = work["listed"] + work["spans"]
    assert linear(counted) and linear(done), (counted, done)


def test_a_span_within_the_limits_is_listed_as_counted(tmp_path, monkeypatch):
    """Four rows load: the cells listed are those the scan counted, and the estimate holds 1.2 kB for each."""
    work = _counting(monkeypatch)
    path = tmp_path / "small.xlsx"
    path.write_bytes(claimed_spans(4))
    ins = open_package(path)
    wb = Workbook.load(path)
    assert sum(s.array_elements for s in ins.sheets) == (16_384 + 16_383) * 4 == work["listed"]
    assert ins.estimated_bytes >= BYTES_PER_ARRAY_ELEMENT * work["listed"]
    assert wb.sheetnames == ["Sheet1"]


def test_the_index_count_refuses_what_the_scan_missed(tmp_path, monkeypatch):
    """Were the scan before parsing to miss a span, the index's own count refuses it before a cell is listed."""
    work = _counting(monkeypatch)
    monkeypatch.setattr(untrusted._PartScan, "_span", lambda self, attrs: None, raising=False)
    path = tmp_path / "missed.xlsx"
    path.write_bytes(claimed_spans(1_000))
    assert sum(s.array_elements for s in open_package(path).sheets) == 0  # the scan, made blind
    with pytest.raises(WorkbookError, match=r"32,767,000 cells filled by array formulas and data tables, the "):
        Workbook.load(path)
    assert work["listed"] == 0


@pytest.mark.parametrize("n", [1_000, 4_000])
def test_every_area_of_a_validation_range_counts(tmp_path, n):
    """A rule's ranges list is counted area by area (each an element, and 1.5 kB more in the estimate, which the
    index of ``xlsxplan inputs`` takes at most), linearly in the areas, however long the list."""
    from tests.helpers.hostile import plain_xlsx, with_parts

    areas = " ".join(f"D{8 * i + 1}:K{8 * i + 8}" for i in range(n))
    sheet = (
        '<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/'
        '2006/main"><sheetData><row r="1"><c r="A1"><v>1</v></c></row></sheetData><dataValidations count="1">'
        f'<dataValidation type="whole" sqref="{areas}"><formula1>1</formula1></dataValidation></dataValidations>'
        "</worksheet>"
    )
    path = tmp_path / "areas.xlsx"
    path.write_bytes(with_parts({"xl/worksheets/sheet1.xml": sheet.encode()}, plain_xlsx({"A1": 1})))
    ins = open_package(path)
    assert ins.areas == n and ins.elements >= n
    assert ins.estimated_bytes >= Limits.estimate(0, 0, 0, 0) + (BYTES_PER_ELEMENT + untrusted.BYTES_PER_AREA) * n


def test_areas_past_the_limit_are_refused_before_the_workbook_is_read(tmp_path):
    """Limits.max_areas: the areas every data-validation and conditional-format range lists, summed over the
    sheets, refused past the limit in one line naming the part that lists most (the 10x worst case of
    ``xlsxplan inputs``, 400,000 areas, is refused so, before anything is parsed)."""
    from tests.helpers.hostile import plain_xlsx, with_parts

    validation = " ".join(f"D{i}" for i in range(1, 12))  # 11 areas
    sheet = (
        '<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/'
        '2006/main"><sheetData><row r="1"><c r="A1"><v>1</v></c></row></sheetData>'
        '<conditionalFormatting sqref="A1:A9 C1"><cfRule type="expression" priority="1"><formula>A1&gt;1</formula>'
        f'</cfRule></conditionalFormatting><dataValidations count="1"><dataValidation type="whole" sqref="{validation}">'
        "<formula1>1</formula1></dataValidation></dataValidations></worksheet>"
    )
    data = with_parts({"xl/worksheets/sheet1.xml": sheet.encode()}, plain_xlsx({"A1": 1}))
    assert untrusted.inspect_bytes(data, "areas.xlsx", Limits(max_areas=13)).areas == 13
    with pytest.raises(WorkbookError) as refused:
        untrusted.inspect_bytes(data, "areas.xlsx", Limits(max_areas=12))
    assert refused.value.message == (
        "areas.xlsx lists at least 13 areas in its data-validation and conditional-format ranges (13 in "
        "xl/worksheets/sheet1.xml); the limit is 12"
    )
