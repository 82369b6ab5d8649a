"""Where the portable edition keeps what only Python computes: the layout its builder writes and recalc reads.

The portable edition (:mod:`xlsxplan.templates.portable`) freezes the cells only Python computes as values, with a
block on its Workings sheet: the inputs they read (with their value when computed and now) and the add-in formula of
each group of cells, under a hidden defined name. :mod:`xlsxplan.headless.frozen` reads the block back and
``xlsxplan recalc`` computes the cells again. Both sides take the layout from here, so neither face imports the other.
"""

from __future__ import annotations

__all__ = [
    "NAME_PREFIX",
    "TITLE_PREFIX",
    "INPUTS_HEADER",
    "FORMULAS_HEADER",
    "PLAIN",
    "ARRAY",
    "MAX_CELLS",
    "ERROR_FORMULAS",
    "NEWER_THAN_2016",
    "KEPT_ON",
]

NAME_PREFIX = "_xlsxplan_frozen_"
"""The hidden defined names of the blocks, numbered from 1."""
TITLE_PREFIX = "Computed by Python for "
INPUTS_HEADER = ("Input", "Now", "Sheet", "When computed", "Unchanged")
FORMULAS_HEADER = ("Cells computed by Python", "Their formula in the add-in edition", "Sheet", "Entered as")
PLAIN = "a formula"
ARRAY = "an array formula (Ctrl+Shift+Enter) in each cell"
"""How a kept formula was entered in the add-in edition (column D)."""
KEPT_ON = ("Options", "Finance", "Chargeback")
"""The sheets whose cells the portable pass may keep as values computed by Python (the search's table; the finance
lines whose functions read the catalog or search a tier mix; PORTFOLIO's search of the workloads' deployments):
recalc refuses a block that names a cell of any other sheet (an input) among them, which it would overwrite. None of
them holds an input."""
MAX_CELLS = 200_000
"""Frozen cells a workbook may ask recalc to compute (the serving plan has 2,426)."""
ERROR_FORMULAS = frozenset({"NA()", "ASIN(2)", "1/0", 'VALUE("x")'})
"""The formulas a frozen error value is written as (:data:`xlsxplan.templates.portable._ERROR_FORMULAS`)."""
NEWER_THAN_2016 = (
    "TEXTJOIN",
    "CONCAT",
    "IFS",
    "SWITCH",
    "MAXIFS",
    "MINIFS",
    "XLOOKUP",
    "XMATCH",
    "LET",
    "LAMBDA",
    "FILTER",
    "SORT",
    "SORTBY",
    "UNIQUE",
    "SEQUENCE",
    "RANDARRAY",
)
"""Functions newer than Excel 2016 (Office 2019 and 365): a cell of the add-in edition that uses one and feeds only
frozen cells is frozen with them (:data:`xlsxplan.templates.portable._NEWER`)."""
