"""The ``xlwings.conf`` sheet that tells the xlwings add-in which Python module holds a workbook's functions.

xlwings reads "UDF Modules" from a sheet named ``xlwings.conf`` in the workbook before any config file (xlwings
docs, "Add-in & Settings"): two columns, setting name and value. Workbooks this project generates carry one naming
:data:`UDF_MODULE`, so clicking Import Functions is the only step left in Excel.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SHEET_NAME", "UDF_MODULE", "add_conf_sheet", "read_conf_sheet"]

SHEET_NAME = "xlwings.conf"
UDF_MODULE = "xlsxplan.excel.udfs"


def add_conf_sheet(wb: Any, settings: dict[str, str] | None = None) -> Any:
    """Add (or replace) the ``xlwings.conf`` sheet of an openpyxl workbook, as its last sheet; return the sheet.

    The sheet holds ``UDF Modules = xlsxplan.excel.udfs`` plus any ``settings``; it is left visible (hidden sheets hide
    assumptions) and protected, since editing it by accident breaks every function in the workbook.
    """
    if SHEET_NAME in wb.sheetnames:
        del wb[SHEET_NAME]
    ws = wb.create_sheet(SHEET_NAME)
    rows = {"UDF Modules": UDF_MODULE, **(settings or {})}
    for i, (key, value) in enumerate(rows.items(), start=1):
        ws.cell(row=i, column=1, value=key).data_type = "s"
        ws.cell(row=i, column=2, value=value).data_type = "s"
    ws.column_dimensions["A"].width = 18
    ws.column_dimensions["B"].width = 24
    ws.sheet_properties.tabColor = "7F7F7F"
    ws.protection.sheet = True
    return ws


def read_conf_sheet(wb: Any) -> dict[str, str]:
    """The settings in an openpyxl workbook's ``xlwings.conf`` sheet (empty if it has none)."""
    if SHEET_NAME not in wb.sheetnames:
        return {}
    ws = wb[SHEET_NAME]
    out = {}
    for key, value in ws.iter_rows(min_col=1, max_col=2, values_only=True):
        if key:
            out[str(key)] = "" if value is None else str(value)
    return out
