"""Editing sheet XML in place: cached values, inserted cells, and xlsxplan's notes (xlsxplan.headless.patch)."""

from __future__ import annotations

import io
import zipfile

import openpyxl
import pytest

from tests.helpers.counting import count_calls
from tests.helpers.hostile import members, pack, plain_xlsx
from xlsxplan.errors import CellError, WorkbookError
from xlsxplan.headless.package import COMMENT_AUTHOR, Package, col_index, col_letter, split_ref
from xlsxplan.headless.patch import (
    CommentEdit,
    Patch,
    escape_text,
    number_text,
    patch_sheet,
    write_notes,
    write_package,
)

NS = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'


def sheet(body: str, extra: str = "") -> bytes:
    return f'<worksheet {NS}><dimension ref="A1:B2"/>{extra}<sheetData>{body}</sheetData></worksheet>'.encode()


@pytest.mark.parametrize(
    "ref, rc, letters",
    [("A1", (1, 1), "A"), ("$B$4", (4, 2), "B"), ("XFD1048576", (1048576, 16384), "XFD"), ("aa10", (10, 27), "AA")],
)
def test_cell_references(ref, rc, letters):
    assert split_ref(ref) == rc
    assert col_letter(rc[1]) == letters and col_index(letters) == rc[1]


@pytest.mark.parametrize("ref", ["A0", "XFE1", "A1048577", "B", "1A", "Sheet!A1"])
def test_bad_references_are_refused(ref):
    with pytest.raises(WorkbookError, match="is (not a cell reference such as B4|outside Excel's grid)"):
        split_ref(ref)


@pytest.mark.parametrize(
    "value, text",
    [(94, "94"), (94.0, "94"), (0.1 + 0.2, "0.30000000000000004"), (5.88e21, "5.88E+21"), (-0.0, "0"), (1e-7, "1E-07")],
)
def test_numbers_are_written_as_excel_stores_them(value, text):
    assert number_text(value) == text


def test_text_is_escaped_for_xml_and_ooxml():
    assert escape_text("a<b & c>d") == "a&lt;b &amp; c&gt;d"
    assert escape_text("bell\x07 cr\r") == "bell_x0007_ cr_x000D_"


def test_values_get_their_type_and_formulas_stay():
    xml = sheet(
        '<row r="1"><c r="A1" s="3"><f>1+1</f><v>0</v></c><c r="B1" t="s"><f>X</f><v>7</v></c></row>'
        '<row r="2"><c r="A2"><f>A1</f></c><c r="B2"><f>1/0</f><v/></c><c r="C2"><f>TRUE</f></c></row>'
    )
    out = patch_sheet(
        xml,
        {
            (1, 1): Patch(2),
            (1, 2): Patch("a & b"),
            (2, 1): Patch(0.5),
            (2, 2): Patch(CellError("#DIV/0!", "division by zero")),
            (2, 3): Patch(True),
        },
    ).decode()
    assert '<c r="A1" s="3"><f>1+1</f><v>2</v></c>' in out
    assert '<c r="B1" t="str"><f>X</f><v>a &amp; b</v></c>' in out
    assert '<c r="A2"><f>A1</f><v>0.5</v></c>' in out
    assert '<c r="B2" t="e"><f>1/0</f><v>#DIV/0!</v></c>' in out
    assert '<c r="C2" t="b"><f>TRUE</f><v>1</v></c>' in out


def test_missing_cells_and_rows_are_inserted_in_order_with_the_row_or_column_style():
    xml = sheet(
        '<row r="2" spans="1:2"><c r="B2"><v>1</v></c></row><row r="5" s="7" customFormat="1"><c r="A5"><v>1</v></c></row>',
        extra='<cols><col min="3" max="4" width="12" style="9"/></cols>',
    )
    out = patch_sheet(
        xml,
        {
            (2, 1): Patch(5, result=False),
            (2, 3): Patch(6, result=False),
            (1, 1): Patch("x", result=False),
            (5, 2): Patch(1),
            (9, 2): Patch(2),
        },
    ).decode()
    body = out[out.index("<sheetData>") : out.index("</sheetData>")]
    assert (
        body.index('r="A1"') < body.index('r="A2"') < body.index('r="B2"') < body.index('r="C2"') < body.index('r="A5"')
    )
    assert '<c r="A1" t="inlineStr"><is><t>x</t></is></c>' in body
    assert '<c r="C2" s="9"><v>6</v></c>' in body  # the column's style
    assert '<c r="B5" s="7"><v>1</v></c>' in body  # the row's style
    assert '<row r="2">' in body  # spans dropped once a cell outside them may have been added
    assert '<row r="9"><c r="B9"><v>2</v></c></row>' in body
    assert '<dimension ref="A1:C9"/>' in out


def test_cells_and_rows_without_r_keep_their_implied_positions():
    xml = sheet("<row><c><v>1</v></c><c><v>2</v></c></row><row><c><v>3</v></c></row>")
    out = patch_sheet(xml, {(1, 2): Patch(20), (2, 3): Patch(30, result=False)}).decode()
    assert '<row r="1"><c r="A1"><v>1</v></c><c r="B1"><v>20</v></c></row>' in out
    assert '<row r="2"><c r="A2"><v>3</v></c><c r="C2"><v>30</v></c></row>' in out


def test_a_namespace_prefix_and_an_empty_sheet_data():
    prefixed = (
        b'<x:worksheet xmlns:x="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><x:sheetData>'
        b'<x:row r="1"><x:c r="A1"><x:f>1+1</x:f></x:c></x:row></x:sheetData></x:worksheet>'
    )
    assert b'<x:c r="A1"><x:f>1+1</x:f><x:v>2</x:v></x:c>' in patch_sheet(prefixed, {(1, 1): Patch(2)})
    empty = f"<worksheet {NS}><sheetData/></worksheet>".encode()
    assert patch_sheet(empty, {(3, 2): Patch(1, result=False)}) == (
        f'<worksheet {NS}><sheetData><row r="3"><c r="B3"><v>1</v></c></row></sheetData></worksheet>'.encode()
    )


def test_an_unpatched_sheet_is_returned_byte_for_byte():
    xml = sheet('<row r="1"><c r="A1"><v>1</v></c></row>')
    assert patch_sheet(xml, {}) is xml
    assert patch_sheet(xml, {(1, 1): Patch(1, result=False)}) == xml


def _package(data: bytes) -> Package:
    pkg = Package(data, zipfile.ZipFile(io.BytesIO(data)))
    pkg.load_structure()
    return pkg


def _notes(data: bytes) -> dict:
    ws = openpyxl.load_workbook(io.BytesIO(data))["Sheet1"]
    return {c.coordinate: (c.comment.author, c.comment.text) for row in ws.iter_rows() for c in row if c.comment}


def _write(pkg: Package, notes: dict) -> bytes:
    replaced: dict[str, bytes] = {}
    write_notes(pkg, replaced, [CommentEdit(pkg.worksheet("Sheet1"), notes)])
    buf = io.BytesIO()
    write_package(pkg, replaced, buf)
    return buf.getvalue()


def test_notes_are_added_replaced_and_removed_without_touching_the_users():
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sheet1"
    ws["A1"] = 1
    ws["A1"].comment = openpyxl.comments.Comment("mine", "Analyst")
    ws["B1"] = "=1/0"
    buf = io.BytesIO()
    wb.save(buf)
    first = _write(_package(buf.getvalue()), {(1, 2): "#DIV/0! division by zero", (1, 1): "#N/A not mine to note"})
    assert _notes(first) == {"A1": ("Analyst", "mine"), "B1": (COMMENT_AUTHOR, "#DIV/0! division by zero")}
    second = _write(_package(first), {(2, 2): "#NUM! later"})
    assert _notes(second) == {"A1": ("Analyst", "mine"), "B2": (COMMENT_AUTHOR, "#NUM! later")}
    third = _write(_package(second), {})
    assert _notes(third) == {"A1": ("Analyst", "mine")}
    assert _write(_package(third), {(2, 2): "#NUM! later"}) == second  # deterministic, never accumulating


def test_notes_on_a_sheet_with_none_create_the_parts_excel_needs():
    data = plain_xlsx()
    out = _write(_package(data), {(2, 1): "#NUM! x"})
    parts = members(out)
    assert parts["xl/comments1.xml"].count(b"<comment ") == 1
    assert b'ObjectType="Note"' in parts["xl/drawings/vmlDrawing1.vml"]
    assert b"<legacyDrawing " in parts["xl/worksheets/sheet1.xml"]
    assert b'Extension="vml"' in parts["[Content_Types].xml"] and b"/xl/comments1.xml" in parts["[Content_Types].xml"]
    assert _notes(out) == {"A2": (COMMENT_AUTHOR, "#NUM! x")}
    assert set(members(data)) < set(parts)
    assert pack(members(out))  # still a zip openpyxl and zipfile read


def _column_sheet(rows: int, extra: str = "") -> bytes:
    body = "".join(
        f'<row r="{r}" spans="1:2"><c r="A{r}"><v>{r}</v></c><c r="B{r}" s="2"><f>A{r}*2</f><v>0</v></c>{extra}</row>'
        for r in range(1, rows + 1)
    )
    return sheet(body)


def test_a_column_of_formula_cells_is_patched_in_place_one_cell_at_a_time(monkeypatch):
    from xlsxplan.headless import patch

    xml = _column_sheet(300)
    patches = {(r, 2): Patch(r * 2.5) for r in range(1, 301)} | {(7, 1): Patch("=x", result=False, quote_prefix=True)}
    calls = count_calls(monkeypatch, patch, cells="_cell_out", rows="_row_xml")
    quoted = lambda style: "5"  # noqa: E731
    in_place = patch_sheet(xml, patches, quoted)
    assert calls == {"cells": 301, "rows": 0}  # each patched cell written once, no row rebuilt
    assert '<c r="B7" s="2"><f>A7*2</f><v>17.5</v></c>' in in_place.decode()
    assert '<c r="A7" s="5" t="inlineStr"><is><t>=x</t></is></c>' in in_place.decode()
    assert in_place.count(b"<row ") == 300 and in_place.count(b"<v>") == 300 + 299  # B, and A but A7
    monkeypatch.setattr(patch, "_patched_in_place", lambda *args: None)  # the same patches, row by row
    assert patch_sheet(xml, patches, quoted) == in_place
    assert calls["rows"] == 300


@pytest.mark.parametrize(
    "xml, patches",
    [
        (_column_sheet(5), {(3, 2): Patch(1), (3, 3): Patch(2)}),  # C3 missing: inserted
        (_column_sheet(5).replace(b'<c r="B4"', b"<c"), {(4, 2): Patch(1)}),  # a cell without r
        (_column_sheet(5).replace(b'r="B2"', b'r="B9"'), {(2, 2): Patch(1), (9, 2): Patch(2)}),  # out of order
    ],
)
def test_a_cell_not_found_in_order_falls_back_to_rows(monkeypatch, xml, patches):
    from xlsxplan.headless import patch

    rows = []
    row_xml = patch._row_xml
    monkeypatch.setattr(patch, "_row_xml", lambda *args: rows.append(args[1]) or row_xml(*args))
    out = patch_sheet(xml, patches).decode()
    assert rows  # edited row by row
    for (r, c), p in patches.items():
        assert f'r="{col_letter(c)}{r}"' in out and f"<v>{p.value}</v>" in out
