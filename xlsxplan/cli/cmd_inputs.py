"""``xlsxplan inputs BOOK``: every input of a workbook that ``xlsxplan recalc --set`` can change, with its cell, value,
unit and allowed values."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .common import EXIT_OK, format_value, terminal_text

ORDER = 31

_SHOWN_CHOICES = 6  # a list of allowed values longer than this is cut short in the table (--json has every one)


def _number(x: Any) -> str:
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return f"{int(x):,}" if float(x).is_integer() and abs(x) < 1e15 else f"{x:,.15g}"
    return str(x)


_UNIT_WORDS = ("unit", "units")


class _Sheets:
    """The values of each worksheet, read once, and the column headed Unit above each row."""

    def __init__(self, wb: Any) -> None:
        self.wb = wb
        self._grids: dict[str, list[list[Any]]] = {}
        self._headings: dict[str, list[tuple[int, int] | None]] = {}

    def grid(self, sheet: str) -> list[list[Any]]:
        if sheet not in self._grids:
            used = self.wb.used_range(sheet)
            values = self.wb.get(f"{_quoted(sheet)}!{used}") if used else []
            self._grids[sheet] = values if isinstance(values, list) else [[values]]
        return self._grids[sheet]

    def unit(self, sheet: str, row: int) -> str:
        """The text in the input's row under the nearest heading "Unit" above it (or in it), as the templates lay
        their inputs out: Label | Value | Unit | ..."""
        grid = self.grid(sheet)
        nearest = self._nearest(sheet)
        if not grid:
            return ""
        r = min(row, len(grid)) - 1
        heading = nearest[r]  # (the nearest heading row at or above, its column), looked up, not scanned for
        if heading is None:
            return ""
        hr, c = heading
        if hr == row - 1:
            return ""  # the heading row itself
        found = grid[row - 1][c] if row - 1 < len(grid) and c < len(grid[row - 1]) else None
        return "" if found is None else str(found)

    def _nearest(self, sheet: str) -> list[tuple[int, int] | None]:
        """For each row of the sheet's grid, the nearest row at or above it with a Unit heading and the heading's
        column (its first in the row), or None: one pass over the grid, so that each input's unit is a lookup
        (rather than each input looking up every row above it, quadratic in the rows)."""
        if sheet not in self._headings:
            out: list[tuple[int, int] | None] = []
            last: tuple[int, int] | None = None
            for r, values in enumerate(self.grid(sheet)):
                c = next(
                    (c for c, v in enumerate(values) if isinstance(v, str) and v.strip().casefold() in _UNIT_WORDS),
                    None,
                )
                if c is not None:
                    last = (r, c)
                out.append(last)
            self._headings[sheet] = out
        return self._headings[sheet]


def _quoted(sheet: str) -> str:
    import re

    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", sheet) and not re.fullmatch(r"[A-Za-z]{1,3}\d+", sheet):
        return sheet
    return "'" + sheet.replace("'", "''") + "'"


def _split(ref: str) -> tuple[str, str]:
    sheet, _, cell = ref.rpartition("!")
    if sheet.startswith("'"):
        sheet = sheet[1:-1].replace("''", "'")
    return sheet, cell


def _bound(wb: Any, text: str, sheet: str) -> Any:
    """A validation's bound: a number as written, else the value of the reference or name it is."""
    from ..errors import XlsxplanError

    try:
        return float(text) if "." in text or "e" in text.lower() else int(text)
    except ValueError:
        pass
    try:
        ref = text if "!" in text or not _looks_like_cell(text) else f"{_quoted(sheet)}!{text}"
        return wb.get(ref)
    except XlsxplanError:
        return f"={text}"


def _looks_like_cell(text: str) -> bool:
    import re

    return re.fullmatch(r"\$?[A-Za-z]{1,3}\$?\d+(:\$?[A-Za-z]{1,3}\$?\d+)?", text) is not None


def choices(wb: Any, text: str, sheet: str) -> list[Any]:
    """The values a list validation offers (``text``: its formula1; ``sheet``: the sheet of the cell it covers):
    ``"a,b,c"``, or the non-empty cells of a range or name."""
    from ..errors import XlsxplanError

    if text.startswith('"') and text.endswith('"'):
        return [part.strip() for part in text[1:-1].split(",")]
    ref = text if "!" in text or not _looks_like_cell(text) else f"{_quoted(sheet)}!{text}"
    try:
        values = wb.get(ref)
    except XlsxplanError:
        return [f"={text}"]
    flat = [v for row in values for v in row] if isinstance(values, list) else [values]
    out = []
    for v in flat:
        if v is not None and v != "" and v not in out:
            out.append(v)
    return out


_OPERATORS = {
    "greaterThan": "above",
    "lessThan": "below",
    "greaterThanOrEqual": "at least",
    "lessThanOrEqual": "at most",
    "equal": "equal to",
    "notEqual": "other than",
}


def allowed(wb: Any, sheet: str, row: int, col: int, unit: str) -> list[Any] | str:
    """What a cell accepts, by its data validation (a list: its values; a number, date or length: the bounds in
    words; a formula: the message Excel shows when it refuses a value), else by its unit (``flag``: TRUE or
    FALSE); ``""`` when anything goes."""
    from ..headless.numfmt import format_value as shown

    rule = wb.validation_at(sheet, row, col)
    if rule is None or rule.type in ("", "any"):
        if unit.casefold() in ("flag", "true/false", "boolean"):
            return [True, False]
        return ""
    if rule.type == "list":
        return choices(wb, rule.formula1, sheet)
    if rule.type == "custom":
        return rule.error or f"={rule.formula1}"
    kind = {
        "whole": "a whole number",
        "decimal": "a number",
        "date": "a date",
        "time": "a time",
        "textLength": "text of a length",
    }.get(rule.type, rule.type)

    def word(text: str) -> str:
        value = _bound(wb, text, sheet)
        if rule.type == "date" and isinstance(value, (int, float)):
            return shown(value, "yyyy-mm-dd", wb.date1904)
        if rule.type == "time" and isinstance(value, (int, float)):
            return shown(value, "h:mm:ss", wb.date1904)
        return _number(value)

    low = word(rule.formula1)
    if rule.operator in ("between", "notBetween"):
        span = f"from {low} to {word(rule.formula2)}"
        return f"{kind} {span}" if rule.operator == "between" else f"{kind} not {span}"
    if rule.type in ("date", "time") and rule.operator in ("greaterThan", "lessThan"):
        return f"{kind} {'after' if rule.operator == 'greaterThan' else 'before'} {low}"
    return f"{kind} {_OPERATORS.get(rule.operator, rule.operator)} {low}"


_TESTS = {
    "between": lambda v, a, b: a <= v <= b,
    "notBetween": lambda v, a, b: not a <= v <= b,
    "equal": lambda v, a, b: v == a,
    "notEqual": lambda v, a, b: v != a,
    "greaterThan": lambda v, a, b: v > a,
    "lessThan": lambda v, a, b: v < a,
    "greaterThanOrEqual": lambda v, a, b: v >= a,
    "lessThanOrEqual": lambda v, a, b: v <= a,
}


def number_allowed(wb: Any, sheet: str, row: int, col: int, value: Any) -> bool | None:
    """Whether a whole-number or number validation of the cell lets ``value`` in, as Excel decides it (text or a
    flag is not a number; a whole number has no fraction; the operator against the bounds, numbers as written or the
    values of the cells and names they are); None where the cell has no such rule or a bound is not a number."""
    rule = wb.validation_at(sheet, row, col)
    if rule is None or rule.type not in ("whole", "decimal") or value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if rule.type == "whole" and float(value) != int(value):
        return False
    bounds = [_bound(wb, rule.formula1, sheet), _bound(wb, rule.formula2, sheet) if rule.formula2 else 0]
    if any(isinstance(b, bool) or not isinstance(b, (int, float)) for b in bounds):
        return None
    test = _TESTS.get(rule.operator)
    return None if test is None else bool(test(float(value), float(bounds[0]), float(bounds[1])))


def custom_allows(wb: Any, sheet: str, row: int, col: int, value: Any) -> bool | None:
    """Whether a custom (formula) validation of the cell lets ``value`` in, where the rule reads no cell but the one
    it validates (the templates' ``AND(ISNUMBER(B26),B26>0,B26<=1E+15)``): the formula evaluated with the value in
    place of that cell, as Excel evaluates it when a value is typed; None where the cell has no such rule or the rule
    reads other cells."""
    import re

    from ..headless.engine import evaluate_formula
    from ..headless.package import col_letter

    rule = wb.validation_at(sheet, row, col)
    if rule is None or rule.type != "custom" or value is None or value == "" or not rule.ranges:
        return None
    r1, c1 = rule.ranges[0][0], rule.ranges[0][1]
    if (r1, c1) != (row, col):  # a rule over a range reads its references shifted to each cell: not done here
        return None
    anchor = re.compile(rf"(?<![A-Za-z0-9_.!$'])\$?{col_letter(c1)}\$?{r1}(?![0-9A-Za-z_(])", re.IGNORECASE)
    if isinstance(value, bool):
        literal = "TRUE" if value else "FALSE"
    elif isinstance(value, (int, float)):
        literal = repr(float(value))
    else:
        literal = '"' + str(value).replace('"', '""') + '"'
    text = anchor.sub(literal, rule.formula1)
    if re.search(r"(?<![A-Za-z0-9_.\"])\$?[A-Za-z]{1,3}\$?[0-9]+(?![0-9A-Za-z_(])", text):
        return None  # another cell: its value is the workbook's, not this rule's to judge alone
    result = evaluate_formula("=" + text)
    return result.value if result.error is None and isinstance(result.value, bool) else None


def list_inputs(wb: Any) -> list[dict[str, Any]]:
    """Every input of ``wb`` that ``--set`` can change, in the order of the sheets and their rows.

    An input is a global defined name of a cell that holds a value (``--set NAME=VALUE``), or of a scenario row's
    ``=INDEX(cases, selector)``, whose active case is the cell to set (``--set CELL=VALUE``); a name of a range of
    such cells (pasted data) is listed with its size. Each: ``name``, ``set`` (what goes before ``=``), ``cell``,
    ``value``, ``text`` (as its number format shows it), ``unit``, ``allowed`` (a list of values, or the rule in
    words), ``case`` (the active case's number, for a scenario row) and ``cells``.
    """
    from ..errors import XlsxplanError
    from ..headless.package import range_bounds

    sheets = _Sheets(wb)
    order = {title: i for i, title in enumerate(wb.sheetnames)}
    rows = []
    for name in wb.names:
        try:
            where = wb.address(name)
        except XlsxplanError:
            continue
        if "!" not in where:  # a name for a formula
            continue
        sheet, ref = _split(where)
        r1, c1, r2, c2 = range_bounds(ref)
        case = None
        if (r1, c1) == (r2, c2):
            # read by the name, which the workbook resolved once for address(), rather than by its address text,
            # which it would parse again; a scenario row's input is the active case's cell
            cell, read, csheet, row, col = where, name, sheet, r1, c1
            if wb.formula(name) is not None:
                active = wb.active_case(name)
                if active is None:
                    continue  # a result, not an input
                cell, case = active
                read = cell
                csheet, cref = _split(cell)
                (row, col, _, _) = range_bounds(cref)
            unit = sheets.unit(sheet, r1)
            value = wb.get(read)
            rows.append(
                (
                    (order.get(sheet, 0), r1, c1),
                    {
                        "name": name,
                        "set": name if case is None else cell,
                        "cell": cell,
                        "value": value,
                        "text": wb.shown(read, value),
                        "unit": unit,
                        "allowed": allowed(wb, csheet, row, col, unit),
                        "case": case,
                        "cells": 1,
                    },
                )
            )
            continue
        count = (r2 - r1 + 1) * (c2 - c1 + 1)
        if count > 100_000 or any(wb.formula(c) is not None for c, _ in wb.cells(where)[:1000]):
            continue
        filled = sum(1 for _, v in wb.cells(where) if v is not None and v != "")
        unit = sheets.unit(sheet, r1)
        rows.append(
            (
                (order.get(sheet, 0), r1, c1),
                {
                    "name": name,
                    "set": wb.address(f"{_quoted(sheet)}!{ref.split(':')[0]}"),
                    "cell": where,
                    "value": None,
                    "text": f"{filled:,} of {count:,} cells filled",
                    "unit": unit,
                    "allowed": allowed(wb, sheet, r1, c1, unit),
                    "case": None,
                    "cells": count,
                },
            )
        )
    return [row for _, row in sorted(rows, key=lambda item: item[0])]


def label_of(sheets: Any, sheet: str, row: int, col: int) -> str:
    """The text that names a cell: the nearest text to its left in its row, else the nearest above it in its
    column (a table's heading); ``""`` when there is none."""
    grid = sheets.grid(sheet)
    line = grid[row - 1] if row - 1 < len(grid) else []
    for c in range(min(col, len(line) + 1) - 2, -1, -1):
        if isinstance(line[c], str) and line[c].strip() and not line[c].startswith("="):
            return line[c].strip()
    for r in range(min(row, len(grid)) - 2, -1, -1):
        above = grid[r][col - 1] if col - 1 < len(grid[r]) else None
        if isinstance(above, str) and above.strip():
            return above.strip()
    return ""


def read_constants(wb: Any) -> list[dict[str, Any]]:
    """The inputs of a workbook that names none: each cell holding a number or TRUE/FALSE that a formula reads, or
    text that one reads on its own (:meth:`xlsxplan.headless.Workbook.read_constants`), with the text that labels
    it (:func:`label_of`), in the keys :func:`list_inputs` gives (``name`` is the label)."""
    from ..headless.package import range_bounds

    sheets = _Sheets(wb)
    rows = []
    for cell, alone in wb.read_constants():
        value = wb.get(cell)
        if value is None or value == "" or (isinstance(value, str) and not alone):  # a range's text: a heading
            continue
        sheet, ref = _split(cell)
        r, c, _, _ = range_bounds(ref)
        unit = sheets.unit(sheet, r)
        rows.append(
            {
                "name": label_of(sheets, sheet, r, c),
                "set": cell,
                "cell": cell,
                "value": value,
                "text": wb.shown(cell, value),
                "unit": unit,
                "allowed": allowed(wb, sheet, r, c, unit),
                "case": None,
                "cells": 1,
            }
        )
    return rows


def list_outputs(wb: Any) -> list[dict[str, Any]]:
    """Every named result of ``wb``: a global defined name of one cell that holds a formula (not a scenario row's
    ``=INDEX(cases, selector)``, which is an input), in the order of the sheets and their rows. Each: ``name``,
    ``cell``, ``value``, ``text`` (as its number format shows it), ``unit`` and ``label`` (:func:`label_of`)."""
    from ..errors import XlsxplanError
    from ..headless.package import range_bounds

    sheets = _Sheets(wb)
    order = {title: i for i, title in enumerate(wb.sheetnames)}
    rows = []
    for name in wb.names:
        try:
            where = wb.address(name)
        except XlsxplanError:
            continue
        if "!" not in where or ":" in where or wb.formula(where) is None or wb.active_case(where) is not None:
            continue
        sheet, ref = _split(where)
        r, c, _, _ = range_bounds(ref)
        value = wb.get(where)
        rows.append(
            (
                (order.get(sheet, 0), r, c),
                {
                    "name": name,
                    "cell": where,
                    "value": value,
                    "text": wb.shown(where, value),
                    "unit": sheets.unit(sheet, r),
                    "label": label_of(sheets, sheet, r, c),
                },
            )
        )
    return [row for _, row in sorted(rows, key=lambda item: item[0])]


def _allowed_text(value: list[Any] | str) -> str:
    if isinstance(value, str):
        return value
    shown = [format_value(v) for v in value[:_SHOWN_CHOICES]]
    more = len(value) - len(shown)
    return " | ".join(shown) + (f" | ... ({more} more; --json lists every one)" if more > 0 else "")


def _json_value(value: Any) -> Any:
    from ..errors import CellError

    if isinstance(value, CellError):
        return {"error": value.code, "message": value.message}
    return value


def run(args: argparse.Namespace) -> int:
    from ..headless.workbook import Workbook

    wb = Workbook.load(Path(args.book))
    rows = list_inputs(wb)
    unnamed = not rows and not wb.names
    if unnamed:  # a workbook of one's own, with no names: the constants its formulas read
        rows = read_constants(wb)
    if args.json:
        report = {
            "book": str(args.book),
            "inputs": [
                {
                    **row,
                    "value": _json_value(row["value"]),
                    "allowed": row["allowed"]
                    if isinstance(row["allowed"], str)
                    else [_json_value(v) for v in row["allowed"]],
                }
                for row in rows
            ],
        }
        print(json.dumps(report, indent=2))
        return EXIT_OK
    table = [("label" if unnamed else "input", "cell", "value", "unit", "allowed")]
    for row in rows:
        name = row["name"] if row["case"] is None else f"{row['name']} (case {row['case']})"
        t = terminal_text  # a workbook's text, never raw to a terminal
        table.append((t(name), t(row["cell"]), t(row["text"]), t(row["unit"]), t(_allowed_text(row["allowed"]))))
    widths = [max(len(r[i]) for r in table) for i in range(4)]
    for r in table:
        print(("  ".join(f"{r[i]:<{widths[i]}}" for i in range(4)) + "  " + r[4]).rstrip())
    if unnamed:
        print(
            "The workbook names no cell: these are the values its formulas read, each set by its cell "
            "(--set CELL=VALUE); `xlsxplan outputs BOOK` lists what a name would show."
        )
    if any(row["case"] is not None for row in rows):
        print(
            "A scenario row (case N) is set by its cell, the active case's: --set CELL=VALUE; every other input "
            "by its name: --set NAME=VALUE."
        )
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "inputs",
        help="list the inputs of a workbook that `xlsxplan recalc --set` can change",
        description="List every input of BOOK that `xlsxplan recalc --set` can change: each defined name of a cell "
        "that holds a value, and each scenario row's active case, with its cell, its value as the cell shows it, "
        "its unit (the column headed Unit) and what it accepts (its data validation: a list's values, a number's "
        "bounds, or the message Excel shows); in a workbook that names no cell, each value a formula reads, with "
        "the text that labels it. Nothing is calculated but what the values need; nothing is written.",
    )
    p.add_argument("book", help="the workbook (.xlsx, .xlsm, .xltx, .xltm)")
    p.add_argument("--json", action="store_true", help="print JSON: every input, every allowed value")
    p.set_defaults(handler=run)
