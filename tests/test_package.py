"""The package's public face: a light import and an explicit, sorted __all__."""

from __future__ import annotations

import subprocess
import sys

import xlsxplan


def test_importing_xlsxplan_loads_no_excel_workbook_cli_or_array_library():
    code = (
        "import sys, xlsxplan; "
        "print(','.join(m for m in ('openpyxl', 'formulas', 'xlwings', 'argparse', 'numpy', 'tqdm') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == ""


def test_all_is_sorted_and_every_name_exists():
    names = [n for n in xlsxplan.__all__ if n != "__version__"]
    errors = [n for n in names if n[0].isupper()]
    functions = [n for n in names if not n[0].isupper()]
    assert errors == sorted(errors) and functions == sorted(functions)
    for name in xlsxplan.__all__:
        assert hasattr(xlsxplan, name), name


def test_every_registry_function_is_public():
    from xlsxplan import registry

    for fn in registry.FUNCTIONS.values():
        func = fn.func.__wrapped__ if fn.table else fn.func  # a table's entry hands its rows on as a 2-D array
        assert getattr(xlsxplan, fn.python_name, None) is func, fn.name
