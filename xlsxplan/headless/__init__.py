"""Headless recalculation: any workbook that uses xlsxplan's functions, computed without Excel.

``Workbook`` and ``recalc`` load a file once through the untrusted-file checks (:mod:`.untrusted`), set inputs,
recalculate and save it with every formula's value cached in the user's own package (:mod:`.patch`);
``evaluate_formula`` computes one formula (:mod:`.engine`)::

    from xlsxplan.headless import Workbook, recalc

    wb = Workbook.load("plan.xlsx")
    wb.set("Inputs!C5", 42).calculate()
    wb.get("Outputs!C7"), wb.errors()
    wb.save("plan.recalc.xlsx")

The names are imported when first used: evaluating one formula loads no workbook machinery.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine import FormulaResult, evaluate_formula
    from .untrusted import Limits
    from .workbook import Workbook, recalc

__all__ = ["FormulaResult", "Limits", "Workbook", "evaluate_formula", "recalc"]

_WHERE = {
    "Workbook": "workbook",
    "recalc": "workbook",
    "Limits": "untrusted",
    "evaluate_formula": "engine",
    "FormulaResult": "engine",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
