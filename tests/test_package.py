"""The package's public face: a light import and an explicit, sorted __all__."""

from __future__ import annotations

import subprocess
import sys

import pytest

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


def test_importing_the_core_loads_no_pydantic_toml_or_catalog():
    """The pure-math layer does no file I/O or validation when imported: ``import xlsxplan.core`` and every core
    module load neither pydantic, a TOML parser, nor the catalog, the calibration or the registry (checked in a clean
    process, since this one has imported everything)."""
    code = (
        "import sys, pkgutil, importlib, xlsxplan.core\n"
        "for m in pkgutil.iter_modules(xlsxplan.core.__path__):\n"
        "    importlib.import_module('xlsxplan.core.' + m.name)\n"
        "banned = ('pydantic', 'tomllib', 'tomli', 'xlsxplan.catalog', 'xlsxplan.calibration', 'xlsxplan.registry',\n"
        "          'xlsxplan.plan', 'openpyxl', 'formualizer', 'xlwings')\n"
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in banned or m.startswith(banned))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == ""


def test_the_public_names_load_lazily_from_their_modules():
    """``xlsxplan.max_batch`` is the core function, fetched from its module on first use (PEP 562); ``__all__`` is
    exactly the table of public names, and an unknown name is an AttributeError naming it."""
    from xlsxplan.core import serving

    assert sorted([*xlsxplan._PUBLIC, "__version__"]) == sorted(xlsxplan.__all__)
    assert xlsxplan.max_batch is serving.max_batch
    assert "max_batch" in dir(xlsxplan)
    with pytest.raises(AttributeError, match="has no attribute 'no_such_function'"):
        _ = xlsxplan.no_such_function


def test_a_recalculation_that_calls_a_core_function_loads_that_module_and_no_catalog(tmp_path):
    """The registry builds an entry, and imports its module, the first time it is read: ``xlsxplan recalc`` of a
    sheet that calls DECODE_TOKS_TOTAL alone (the benchmark's sweep) loads its core module and neither the catalog,
    pydantic, the calibration nor the plan search (checked in a clean process)."""
    import openpyxl

    wb = openpyxl.Workbook()
    wb.active["A1"] = 70
    wb.active["B1"] = "=DECODE_TOKS_TOTAL(A1,1,2,3.35,94,327680,2300)"
    wb.save(tmp_path / "sweep.xlsx")
    code = (
        "import sys\n"
        "from xlsxplan.cli import main\n"
        f"status = main(['recalc', '-q', {str(tmp_path / 'sweep.xlsx')!r}, '-o', {str(tmp_path / 'out.xlsx')!r}])\n"
        "banned = ('pydantic', 'xlsxplan.catalog', 'xlsxplan.calibration', 'xlsxplan.plan.search')\n"
        "print(status, 'xlsxplan.core.serving' in sys.modules,\n"
        "      ','.join(sorted(m for m in sys.modules if m.split('.')[0] in banned or m.startswith(banned))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["0", "True"]
