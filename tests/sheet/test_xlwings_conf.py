"""The xlwings.conf sheet survives a save and names the UDF module."""

from __future__ import annotations

import openpyxl

from xlsxplan.sheet.xlwings_conf import SHEET_NAME, UDF_MODULE, add_conf_sheet, read_conf_sheet


def test_conf_sheet_round_trips_through_a_file(tmp_path):
    wb = openpyxl.Workbook()
    add_conf_sheet(wb, {"Interpreter_Win": "python"})
    add_conf_sheet(wb)  # replacing keeps one sheet
    path = tmp_path / "book.xlsx"
    wb.save(path)
    again = openpyxl.load_workbook(path)
    assert again.sheetnames.count(SHEET_NAME) == 1
    assert read_conf_sheet(again) == {"UDF Modules": UDF_MODULE}
    assert UDF_MODULE == "xlsxplan.excel.udfs"


def test_a_workbook_without_the_sheet_has_no_settings():
    assert read_conf_sheet(openpyxl.Workbook()) == {}
