"""A temporary stand-in for issue 4's Workbook API (``xlsxplan.engine.Workbook``), used only until it is merged.

Same calls: ``Workbook.load(path)``, ``.set(ref, value)``, ``.calculate()``, ``.get(ref)``, ``.errors()``,
``.save(out)``. It evaluates with `formulas` and writes the computed values beside the formulas in the cell XML of
the file openpyxl wrote, so styles, names, validation and charts are kept byte for byte. Delete this module once
``xlsxplan.engine.Workbook`` exists (:func:`xlsxplan.workbooks.build.workbook_api` then picks that up).
"""

from __future__ import annotations

import html
import math
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import openpyxl
from openpyxl.utils import range_boundaries
from openpyxl.utils.cell import get_column_letter
from openpyxl.worksheet.formula import ArrayFormula

from ..cells import CellError
from ..engine import register_functions
from ..fileio import atomic_write

_CELL = re.compile(r'<c r="(?P<r>[A-Z]+\d+)"(?P<attrs>[^>]*?)(?:/>|>(?P<body>.*?)</c>)', re.S)
_FORMULA = re.compile(r"<f\b[^>]*?(?:/>|>.*?</f>)", re.S)


def _plain(value: Any) -> Any:
    import schedula as sh
    from formulas.tokens.operand import XlError

    if isinstance(value, np.generic):
        value = value.item()
    if value is sh.EMPTY:
        return None
    if isinstance(value, XlError):
        return CellError(str(value))
    return value


class Workbook:
    def __init__(self, path: Path) -> None:
        import formulas

        register_functions()
        self.path = Path(path)
        self.book = openpyxl.load_workbook(self.path)
        self.model = formulas.ExcelModel().loads(str(self.path)).finish()
        self.inputs: dict[str, Any] = {}
        self.values: dict[tuple[str, str], Any] = {}
        self.formula_cells: dict[str, list[str]] = {}
        for ws in self.book.worksheets:
            cells = []
            for row in ws.iter_rows():
                for c in row:
                    if isinstance(c.value, ArrayFormula):
                        c1, r1, c2, r2 = range_boundaries(c.value.ref)
                        cells += [f"{get_column_letter(x)}{y}" for y in range(r1, r2 + 1) for x in range(c1, c2 + 1)]
                    elif c.data_type == "f":
                        cells.append(c.coordinate)
            self.formula_cells[ws.title] = cells

    @classmethod
    def load(cls, path: Path | str) -> Workbook:
        return cls(Path(path))

    def _resolve(self, ref: str) -> tuple[str, str]:
        if "!" not in ref:
            dn = self.book.defined_names[ref]
            ref = dn.attr_text
        sheet, cell = ref.rsplit("!", 1)
        return sheet.strip("'"), cell.replace("$", "")

    def _key(self, sheet: str, cell: str) -> str:
        return f"'[{self.path.name}]{sheet.upper()}'!{cell}"

    def set(self, ref: str, value: Any) -> Workbook:
        sheet, cell = self._resolve(ref)
        self.inputs[self._key(sheet, cell)] = value
        return self

    def calculate(self) -> Workbook:
        solution = self.model.calculate(inputs=dict(self.inputs))
        values: dict[tuple[str, str], Any] = {}
        pattern = re.compile(r"'\[[^\]]+\](.+)'!([A-Z]+\d+(?::[A-Z]+\d+)?)$")
        for key, ranges in solution.items():
            m = pattern.match(key)
            if not m or not hasattr(ranges, "value"):
                continue
            c1, r1, _, _ = range_boundaries(m.group(2))
            for i, row in enumerate(np.asarray(ranges.value, dtype=object)):
                for j, x in enumerate(row):
                    values.setdefault((m.group(1), f"{get_column_letter(c1 + j)}{r1 + i}"), _plain(x))
        self.values = values
        return self

    def get(self, ref: str) -> Any:
        sheet, cell = self._resolve(ref)
        return self.values.get((sheet.upper(), cell))

    def errors(self) -> dict[str, CellError]:
        out = {}
        for sheet, cells in self.formula_cells.items():
            for cell in cells:
                value = self.values.get((sheet.upper(), cell))
                if isinstance(value, CellError):
                    out[f"{sheet}!{cell}"] = value
        return out

    def save(self, out: Path | str) -> None:
        sheet_files = _sheet_files(self.path)

        def write(tmp: Path) -> None:
            with zipfile.ZipFile(self.path) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as dst:
                for info in src.infolist():
                    data = src.read(info.filename)
                    sheet = sheet_files.get(info.filename)
                    if sheet is not None:
                        cells = set(self.formula_cells.get(sheet, ()))
                        data = self._fill(data.decode("utf-8"), sheet, cells).encode("utf-8")
                    dst.writestr(info, data)

        atomic_write(Path(out), write)

    def _fill(self, xml: str, sheet: str, cells: set[str]) -> str:
        def sub(m: re.Match[str]) -> str:
            ref = m.group("r")
            if ref not in cells:
                return m.group(0)
            value = self.values.get((sheet.upper(), ref))
            attrs = re.sub(r'\s+t="[^"]*"', "", m.group("attrs")).rstrip()
            body = m.group("body") or ""
            formula = _FORMULA.search(body)
            f = formula.group(0) if formula else ""
            if value is None:
                return f'<c r="{ref}"{attrs}>{f}</c>' if f else f'<c r="{ref}"{attrs}/>'
            if isinstance(value, CellError):
                kind, text = "e", value.code
            elif isinstance(value, bool):
                kind, text = "b", "1" if value else "0"
            elif isinstance(value, (int, float)):
                if isinstance(value, float) and not math.isfinite(value):
                    kind, text = "e", "#NUM!"
                else:
                    kind, text = "n", repr(float(value)) if isinstance(value, float) else str(value)
            else:
                kind, text = "str", html.escape(str(value), quote=False)
            t = "" if kind == "n" else f' t="{kind}"'
            return f'<c r="{ref}"{attrs}{t}>{f}<v>{text}</v></c>'

        return _CELL.sub(sub, xml)


def _sheet_files(path: Path) -> dict[str, str]:
    """Zip member of each worksheet, by sheet title."""
    with zipfile.ZipFile(path) as z:
        book = z.read("xl/workbook.xml").decode("utf-8")
        rels = z.read("xl/_rels/workbook.xml.rels").decode("utf-8")
    targets = dict(re.findall(r'<Relationship[^>]*?Id="([^"]+)"[^>]*?Target="([^"]+)"', rels))
    targets.update({a: b for b, a in re.findall(r'<Relationship[^>]*?Target="([^"]+)"[^>]*?Id="([^"]+)"', rels)})
    out = {}
    for name, rid in re.findall(r'<sheet [^>]*?name="([^"]+)"[^>]*?r:id="([^"]+)"', book):
        target = targets[rid].lstrip("/")
        out[target if target.startswith("xl/") else f"xl/{target}"] = html.unescape(name)
    return out
