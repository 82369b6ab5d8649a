"""The xlwings Lite bundle: a single ``main.py`` that carries xlsxplan's source and exposes every function.

xlsxplan is not on PyPI yet, so :func:`lite_bundle` writes the modules :mod:`xlsxplan.excel.udfs` imports, as text,
into one file that unpacks them into Pyodide's in-memory file system; :func:`lite_requirements` lists what it
needs from PyPI. ``xlsxplan excel --lite`` writes both (the committed copies live in ``lite/``).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from .. import __version__, registry
from .setup import EXPECTED, FORMULA

__all__ = ["LITE_REQUIREMENTS", "LITE_OPTIONAL", "bundle_files", "lite_requirements", "lite_bundle"]

LITE_REQUIREMENTS = ("xlwings", "pydantic", "docstring-parser>=0.16", "platformdirs>=3", "tomli-w>=1.0")
"""Every package the bundled modules import (a test reads their imports and holds this list to them), but those in
:data:`LITE_OPTIONAL`. pydantic comes built for Pyodide, whose version Lite decides (its docs: do not pin those);
xlwings (Lite's own requirements.txt starts with it), docstring-parser, platformdirs and tomli-w (imported only to
write a user preset, which Lite never does) are pure Python from PyPI."""

LITE_OPTIONAL = {
    "numpy": "optional: without it array calls go element by element in pure Python, every value the same; with "
    "it (Lite installs Pyodide's own build when requirements.txt names it) the arithmetic runs once over columns",
    "tomli": "only on Python 3.10, which has no tomllib; Pyodide's Python is newer",
}
"""Packages the bundled modules import that Lite's requirements leave out, and why. numpy is left out on purpose:
every result is the same without it, most Lite sheets call with single cells or small ranges (microseconds per
element in pure Python), and naming it would make every start of the add-in load Pyodide's numpy (several
megabytes). A sheet with array formulas over thousands of rows gains from adding a ``numpy`` line, which the bundle
then uses."""

_DATA_SUFFIXES = (".toml", ".json", ".csv", ".txt")
_NOT_BUNDLED = {
    "calibration/data/measurements.csv": "the calibration fit's input (xlsxplan calibrate, validate); the functions "
    "read only the fitted factors, calibration.json",
    "calibration/data/training_runs.csv": "published training runs with their layouts (xlsxplan.calibration."
    "training_runs), read by no spreadsheet function",
}
"""Data files of the package a Lite bundle leaves out, and why: nothing the registry functions call reads them."""


def _imported_modules(root: Path) -> set[Path]:
    """The files of every xlsxplan module that ``xlsxplan.excel.udfs`` can import, found by reading the import
    statements of each (those inside functions too), starting from udfs, the package itself and the modules of
    the registry's functions (:data:`xlsxplan.registry.ENTRY_MODULES`); a parent package counts."""

    def path_of(name: str) -> Path | None:
        if name.split(".")[0] != "xlsxplan":  # numpy, pydantic, the standard library: not bundled
            return None
        base = root.joinpath(*name.split(".")[1:])
        for candidate in (base / "__init__.py", base.with_suffix(".py")):
            if candidate.is_file():
                return candidate
        return None

    import ast

    found: dict[str, Path] = {}
    # and the modules of the registry's functions, which it names as text and imports on first use
    todo = ["xlsxplan", "xlsxplan.excel.udfs", *(f"xlsxplan.{m}" for m in registry.ENTRY_MODULES.values())]
    while todo:
        name = todo.pop()
        path = path_of(name) if name not in found else None
        if path is None:
            continue
        found[name] = path
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
                module = ".".join(base + ([node.module] if node.module else []))
                todo += [module] + [f"{module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                todo += [a.name for a in node.names]
    return set(found.values())


def bundle_files() -> dict[str, str]:
    """The package files a Lite bundle carries, path inside the package -> text, in a stable order: the modules
    :mod:`xlsxplan.excel.udfs` imports (not the command line, the workbook builders, the headless engine or the OOXML
    and safety layers, which Lite never uses) and the data files (catalog, calibration) with their packages."""
    root = Path(__file__).resolve().parents[1]
    wanted = _imported_modules(root)
    for path in root.rglob("*"):
        if path.relative_to(root).as_posix() in _NOT_BUNDLED:
            continue
        if path.is_file() and path.suffix in _DATA_SUFFIXES and "__pycache__" not in path.parts:
            wanted |= {path, path.parent / "__init__.py"}  # read through importlib.resources: their package too
    return {
        f"xlsxplan/{p.relative_to(root).as_posix()}": p.read_text(encoding="utf-8")
        for p in sorted(wanted)
        if p.is_file()
    }


def _literal(text: str) -> str:
    """``text`` as a triple-quoted Python literal that reads like the file it holds."""
    body = text.replace("\\", "\\\\").replace('"""', '""\\"')
    body = re.sub(r"[\x00-\x08\x0b-\x1f\x7f]", lambda m: f"\\x{ord(m.group()):02x}", body)  # \r, \0 and the like
    if body.endswith('"'):
        body = body[:-1] + '\\"'
    return '"""' + body + '"""'


def lite_requirements() -> str:
    """The lines to add to Lite's requirements.txt tab."""
    return "".join(f"{r}\n" for r in LITE_REQUIREMENTS)


def lite_bundle() -> str:
    """A single ``main.py`` for xlwings Lite that carries xlsxplan and exposes every function."""
    files = bundle_files()
    digest = hashlib.sha256("\0".join(f"{k}\0{v}" for k, v in files.items()).encode("utf-8")).hexdigest()
    names = ", ".join(repr(n) for n in registry.FUNCTIONS)
    parts = [
        f'''"""xlsxplan {__version__} for xlwings Lite: every xlsxplan function, e.g. {FORMULA} shows {EXPECTED}.

Generated by `xlsxplan excel --lite`. Paste all of it into the main.py tab of xlwings Lite, and add the lines of
the requirements.txt written beside it to Lite's requirements.txt tab. xlsxplan is not on PyPI yet, so its source
travels here, as the text of each file below (sha256 {digest}); on loading, it is written to Pyodide's in-memory
file system and imported from there. numpy is optional: add a numpy line to requirements.txt for array formulas
over thousands of rows (their arithmetic then runs once over whole columns); every value is the same without it.
Your own functions can go at the end of this file.
"""

import os as _os
import sys as _sys
import tempfile as _tempfile

_XLSXPLAN_VERSION = {__version__!r}
_XLSXPLAN_DIGEST = {digest!r}
_XLSXPLAN_FUNCTIONS = ({names},)
_XLSXPLAN_FILES = {{
''',
    ]
    for rel, text in files.items():
        parts.append(f"    {rel!r}: {_literal(text)},\n")
    parts.append(
        """}


def _xlsxplan_install():
    root = _os.path.join(_tempfile.gettempdir(), "xlsxplan-" + _XLSXPLAN_DIGEST[:16])
    for rel, text in _XLSXPLAN_FILES.items():
        path = _os.path.join(root, *rel.split("/"))
        _os.makedirs(_os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    for name in [m for m in _sys.modules if m == "xlsxplan" or m.startswith("xlsxplan.")]:
        if not (getattr(_sys.modules[name], "__file__", "") or "").startswith(root):
            del _sys.modules[name]  # an older copy loaded before this one
    if root not in _sys.path:
        _sys.path.insert(0, root)
    from xlsxplan.excel import udfs

    return udfs


_xlsxplan_udfs = _xlsxplan_install()
for _name in _XLSXPLAN_FUNCTIONS:
    globals()[_name] = getattr(_xlsxplan_udfs, _name)
del _name
"""
    )
    return "".join(parts)
