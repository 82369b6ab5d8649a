"""The values only Python computes in a portable edition, as the file describes them, so recalc can refresh them.

A portable template (:mod:`xlsxplan.templates.portable`) keeps what only Python computes (the option search) as
values. For each sheet of such values it writes on its Workings sheet one block, which a hidden defined name
``_xlsxplan_frozen_<n>`` spans (columns A to E)::

    Computed by Python for Options: 2426 cells hold ... values of 2026-01-01, for these inputs   (title)
    Input | Now | Sheet | When computed | Unchanged                                             (header)
    Inputs B3 | =<the input now> | Options | 200000 | =<Now equals When computed>              (one per input)
    Cells computed by Python | Their formula in the add-in edition | Sheet                       (FORMULAS_HEADER)
    B6:V105,W6:Z105 | PLAN_OPTIONS_AT(ROW()-ROW($A$5),...) | Options | a formula                (one per formula)

:func:`read_frozen` reads and checks those blocks when a workbook is loaded; :meth:`.Workbook.refresh_frozen` (which
``xlsxplan recalc`` calls) computes each formula again in its cells, with the registry's functions, when an input's
Unchanged is not TRUE, and writes the values, the inputs' values now as When computed and today's date.

The blocks are the file's, so they are checked as a hostile file's would be: each formula must tokenize, carry no
threat (:func:`.untrusted.formula_threat`: DDE, other workbooks), call only registry and engine functions and at
least one that only Python computes (a registry function without a native form in :mod:`xlsxplan.sheet.native`), or one
newer than Excel 2016 that the pass freezes with them (:data:`NEWER_THAN_2016`); its cells must be on a worksheet, at
most :data:`MAX_CELLS` in all, on the sheet the block's title names, which must be one of :data:`KEPT_ON` (the
Options, Finance and Chargeback sheets, which hold no input: a block naming an input's cell would overwrite it),
and hold values (a value, or an error formula such as ``=NA()``), never another formula. A block that fails is
refused with one line naming the cell (WorkbookError), as an unsafe formula in a cell is.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import WorkbookError

__all__ = [
    "NAME_PREFIX",
    "TITLE_PREFIX",
    "INPUTS_HEADER",
    "FORMULAS_HEADER",
    "PLAIN",
    "ARRAY",
    "Frozen",
    "read_frozen",
    "check_formula",
    "MAX_CELLS",
]

from ..sheet.portable_layout import (
    ARRAY,
    ERROR_FORMULAS,
    FORMULAS_HEADER,
    INPUTS_HEADER,
    KEPT_ON,
    MAX_CELLS,
    NAME_PREFIX,
    NEWER_THAN_2016,
    PLAIN,
    TITLE_PREFIX,
)

_RANGE = re.compile(r"^\$?([A-Za-z]{1,3})\$?(\d{1,7})(?::\$?([A-Za-z]{1,3})\$?(\d{1,7}))?$")


@dataclass
class Frozen:
    """One block: its defined name, the Workings sheet's title, the title row, the input rows (B: now, D: when
    computed, E: unchanged) and each formula with its cells, ``(sheet title, row, column)``."""

    name: str
    sheet: str
    title_row: int
    group: str  # the sheet of the frozen cells, as the title names it
    inputs: list[int] = field(default_factory=list)
    # (text, cells, where it is kept, whether it is an array formula of one cell)
    formulas: list[tuple[str, list[tuple[str, int, int]], str, bool]] = field(default_factory=list)

    @property
    def cells(self) -> int:
        return sum(len(f[1]) for f in self.formulas)


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _cells(text: str, where: str) -> list[tuple[int, int]]:
    from .package import col_index

    out = []
    for part in text.split(","):
        m = _RANGE.match(part.strip())
        if m is None:
            raise WorkbookError(f"{where}: {part.strip()[:40]!r} is not a cell or range such as B6:V105")
        c1, r1 = col_index(m.group(1).upper()), int(m.group(2))
        c2, r2 = (col_index(m.group(3).upper()), int(m.group(4))) if m.group(3) else (c1, r1)
        if r2 < r1 or c2 < c1 or (r2 - r1 + 1) * (c2 - c1 + 1) > MAX_CELLS:
            raise WorkbookError(f"{where}: the range {part.strip()[:40]!r} is reversed or too large")
        out += [(r, c) for r in range(r1, r2 + 1) for c in range(c1, c2 + 1)]
    return out


def check_formula(text: str, where: str) -> None:
    """Refuse (WorkbookError, one line) a kept formula that is not one the portable pass freezes."""
    from ..registry import FUNCTIONS
    from ..sheet import native
    from . import engine
    from .untrusted import formula_threat

    if not text or len(text) > 8192 or text.startswith("="):
        raise WorkbookError(f"{where} holds no formula the portable edition keeps (empty, too long, or with '=')")
    threat = formula_threat(text)
    if threat:
        raise WorkbookError(f"the formula kept in {where} {threat}")
    called = [n.upper() for n in engine.function_names("=" + text)]
    if not called:
        raise WorkbookError(f"{where}: the formula kept there does not parse or calls no function")
    for name in called:
        if name not in FUNCTIONS and not engine.native_function(name):
            raise WorkbookError(f"{where}: the formula kept there calls {name}, which neither xlsxplan nor Excel has")
    python_only = [n for n in called if n in FUNCTIONS and n not in native.NATIVE and n not in native.LOOKUPS]
    if not python_only and not any(n.removeprefix("_XLFN.") in NEWER_THAN_2016 for n in called):
        raise WorkbookError(
            f"{where}: the formula kept there calls no function only Python computes ({', '.join(called[:4])}); "
            "the table of values computed by Python was edited"
        )


def read_frozen(
    names: list[Any],
    titles: list[str],
    value: Callable[[str, int, int], Any],
    formula: Callable[[str, int, int], str | None],
) -> list[Frozen]:
    """The blocks of the workbook's names ``names`` (:class:`.package.DefinedName`), read with ``value(title, row,
    col)`` (a cell's value as the file stores it) and ``formula(title, row, col)`` (its formula without ``=``, or
    None); [] for a workbook without them. WorkbookError (one line, naming the cell) for a block that is not as the
    portable pass writes it."""
    from .package import col_letter, range_bounds

    out: list[Frozen] = []
    total = 0
    seen: set[tuple[str, int, int]] = set()
    folded = {t.casefold(): t for t in titles}
    for d in names:
        if not d.name.lower().startswith(NAME_PREFIX) or d.local_sheet is not None:
            continue
        text = d.text.strip().lstrip("=")
        sheet, bang, rng = text.rpartition("!")
        sheet = sheet[1:-1].replace("''", "'") if sheet.startswith("'") else sheet
        title = folded.get(sheet.casefold()) if bang else None
        try:
            r1, c1, r2, c2 = range_bounds(rng.replace("$", ""))
        except WorkbookError:
            title = None
        if title is None or c1 != 1 or r2 - r1 > MAX_CELLS:
            raise WorkbookError(f"the defined name {d.name} ({text[:60]}) is not a block of values computed by Python")

        def at(r: int, c: int, title: str = title) -> str:
            return f"{title}!{col_letter(c)}{r}"

        head = _text(value(title, r1, 1))
        if not head.startswith(TITLE_PREFIX) or ":" not in head:
            raise WorkbookError(f"{at(r1, 1)} should title the values computed by Python ({d.name})")
        block = Frozen(d.name, title, r1, head[len(TITLE_PREFIX) :].split(":")[0].strip())
        if tuple(_text(value(title, r1 + 1, c)) for c in range(1, 6)) != INPUTS_HEADER:
            raise WorkbookError(f"{at(r1 + 1, 1)} should head the inputs of the values computed by Python")
        r = r1 + 2
        while r <= r2 and _text(value(title, r, 1)) != FORMULAS_HEADER[0]:
            if formula(title, r, 5) is None:  # the Unchanged test: a value there would hide a change
                raise WorkbookError(f"{at(r, 5)} should test whether the input is unchanged (a formula)")
            block.inputs.append(r)
            r += 1
        if r > r2:
            raise WorkbookError(f"{d.name}: no formulas of the values computed by Python below the inputs")
        for r in range(r + 1, r2 + 1):  # noqa: B020 - the formulas' rows follow their header
            cells_text, kept, group, kind = (_text(value(title, r, c)) for c in (1, 2, 3, 4))
            if not cells_text and not kept:
                continue
            if kind not in (PLAIN, ARRAY):
                raise WorkbookError(f"{at(r, 4)} should say how the formula was entered: {PLAIN!r} or {ARRAY!r}")
            target = folded.get(group.casefold())
            if target is None:
                raise WorkbookError(f"{at(r, 3)}: {group[:40]!r} is not a worksheet of this workbook")
            if target not in KEPT_ON or target.casefold() != block.group.casefold():
                # the kept formulas write their cells: only the Options table's, never an input
                raise WorkbookError(
                    f"{at(r, 3)}: values computed by Python are kept only on {', '.join(KEPT_ON)} (the sheet this "
                    f"block's title names), not on {group[:40]!r}; the block was edited"
                )
            check_formula(kept, at(r, 2))
            cells = []
            for row, col in _cells(cells_text, at(r, 1)):
                held = formula(target, row, col)
                if held is not None and held.strip() not in ERROR_FORMULAS:
                    raise WorkbookError(
                        f"{at(r, 1)} names {target}!{col_letter(col)}{row}, which holds a formula of its own, "
                        "among the values computed by Python"
                    )
                if (target, row, col) in seen:
                    raise WorkbookError(f"{at(r, 1)} names {target}!{col_letter(col)}{row} a second time")
                seen.add((target, row, col))
                cells.append((target, row, col))
            total += len(cells)
            if total > MAX_CELLS:
                raise WorkbookError(f"{at(r, 1)}: more than {MAX_CELLS:,} values computed by Python")
            block.formulas.append((kept, cells, at(r, 2), kind == ARRAY))
        out.append(block)
    return out
