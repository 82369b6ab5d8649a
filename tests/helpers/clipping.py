"""Text that a printed or displayed sheet cuts: a cell's text wider than the room it has, measured by the font
metrics the template builders wrap with (:mod:`xlsxplan.templates.metrics`, DejaVu Sans, wider than Calibri)."""

from __future__ import annotations

from collections.abc import Iterator

from openpyxl.utils import get_column_letter, range_boundaries
from openpyxl.worksheet.worksheet import Worksheet

from xlsxplan.templates.metrics import text_em
from xlsxplan.templates.styles import NOTE_EM_PER_WIDTH

POINTS_PER_WIDTH = NOTE_EM_PER_WIDTH * 10
"""Points of 10-point text that one character width of a column holds: the builders' measure
(:data:`~xlsxplan.templates.styles.NOTE_EM_PER_WIDTH`, fitted on LibreOffice's render)."""
CELL_PADDING = 0.0
"""Points a cell keeps clear at its edges, both together (in the measure above)."""
BOLD = 1.1
"""How much wider DejaVu Sans Bold sets a text than the regular face."""


def _width(ws: Worksheet, col: int) -> float:
    return (ws.column_dimensions[get_column_letter(col)].width or 13) * POINTS_PER_WIDTH


def _printed_columns(ws: Worksheet) -> tuple[int, int] | None:
    if not ws.print_area:
        return None
    areas = [range_boundaries(a.split("!")[-1].replace("$", "")) for a in ws.print_area.split(",")]
    return min(a[0] for a in areas), max(a[2] for a in areas)


def clipped_text(formulas: Worksheet, values: Worksheet) -> Iterator[str]:
    """``Sheet!A1: text`` for each value cell (a formula's result or an input) of ``values`` (the same sheet loaded
    with its cached values) whose text is
    wider than its cell and the empty cells it may run on over (to the right of left-aligned text, to the left of
    right-aligned text, both ways for centred text; never for wrapped text, whose row height is checked elsewhere,
    or past its print area's edge). ``formulas`` gives the styles, columns and print area."""
    printed = _printed_columns(formulas) or (1, formulas.max_column)
    for row in values.iter_rows():
        for v in row:
            text = v.value
            if not isinstance(text, str) or not text.strip():
                continue
            c = formulas.cell(v.row, v.column)
            if c.data_type != "f" and c.style != "Input":
                continue
            if c.alignment.wrap_text or c.alignment.shrink_to_fit:
                continue
            size = (c.font.sz or 11) * (BOLD if c.font.b else 1)
            need = text_em(text) * size + CELL_PADDING + (c.alignment.indent or 0) * 3 * POINTS_PER_WIDTH / 2.5

            def empty(col: int, r: int = v.row) -> bool:
                return printed[0] <= col <= printed[1] and values.cell(r, col).value in (None, "")

            room = _width(formulas, v.column)
            how = c.alignment.horizontal or "general"
            if how in ("general", "left", "fill", "justify", "distributed"):
                col = v.column + 1
                while room < need and empty(col):
                    room += _width(formulas, col)
                    col += 1
            elif how == "right":
                col = v.column - 1
                while room < need and col >= 1 and empty(col):
                    room += _width(formulas, col)
                    col -= 1
            else:  # centred: the same room either side
                left, right, side = v.column - 1, v.column + 1, 0.0
                while room + 2 * side < need and left >= 1 and empty(left) and empty(right):
                    side += min(_width(formulas, left), _width(formulas, right))
                    left, right = left - 1, right + 1
                room += 2 * side
            if need > room:
                yield f"{formulas.title}!{v.coordinate}: {text!r} ({need:.0f} pt in {room:.0f})"
