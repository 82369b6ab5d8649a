"""Getting the xlsxplan functions into Excel: the set-up steps and the checks ``xlsxplan excel`` runs.

Two runtimes reach Excel (see :mod:`xlsxplan.excel.udfs`):

* **classic xlwings**: Windows desktop Excel with the xlwings add-in calls a local Python that has xlsxplan
  installed. A workbook names ``xlsxplan.excel.udfs`` under "UDF Modules"; Import Functions writes a VBA module,
  ``xlwings_udfs``, into it, so it must be saved as ``.xlsm``. That module's functions call ``XLPy.CallUDF``, which
  lives in the add-in's VBA project: the workbook needs a reference to it (VBA editor, Tools > References >
  xlwings; xlwings' docs, "Add-in & Settings"), unless it carries xlwings' VBA as the standalone module
  ``xlwings``, and Excel must enable its macros when it opens it.
* **xlwings Lite**: an Office add-in (Excel on Windows, macOS and the web) that runs Python in the browser
  (Pyodide). Its code lives in the workbook (a ``main.py`` and a ``requirements.txt`` edited in Lite's task pane)
  and its packages come from PyPI or Pyodide. xlsxplan is not on PyPI yet, so :func:`~xlsxplan.excel.lite.lite_bundle`
  writes a single ``main.py`` that carries xlsxplan's source as readable text, unpacks it into Pyodide's in-memory file
  system and exposes every function; :func:`~xlsxplan.excel.lite.lite_requirements` lists what it needs. Once pasted
  into a workbook, whoever opens that workbook with Lite needs nothing else.

The checks are plain functions returning :class:`Check` results, so the command line only prints them.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import platform
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from .. import registry
from ..errors import WorkbookError
from ..infra.fileio import file_kind
from ..infra.zipfiles import ZipLimits
from ..sheet.xlwings_conf import SHEET_NAME, UDF_MODULE
from .vba import XLWINGS_MODULE, checked_zip, is_xlwings, modules_of, references_of, vba_project

__all__ = [
    "Check",
    "CLASSIC_STEPS",
    "LITE_STEPS",
    "FORMULA",
    "EXPECTED",
    "machine_checks",
    "workbook_checks",
]

VBA_MODULE = "xlwings_udfs"
"""The VBA module xlwings' Import Functions writes into a workbook."""

FORMULA = "=KV_BYTES_PER_TOKEN(80,8,128,2)"
EXPECTED = "327680"

CLASSIC_STEPS = (
    "Install Python 3.10 or later, then xlsxplan (xlwings comes with it): "
    'python -m pip install "PATH\\TO\\xlsxplan" (a checkout of this repository, or a wheel built from it).',
    "Install the xlwings add-in: xlwings addin install. Restart Excel; an xlwings tab appears on the ribbon.",
    "In Excel: File > Options > Trust Center > Trust Center Settings > Macro Settings: tick "
    '"Trust access to the VBA project object model" (Import Functions writes VBA into the workbook).',
    f'Open the workbook and point "UDF Modules" at {UDF_MODULE}: workbooks made by xlsxplan carry an '
    f'{SHEET_NAME} sheet that does it; otherwise type {UDF_MODULE} in the "UDF Modules" box of the xlwings tab, '
    f'or add a sheet named {SHEET_NAME} with "UDF Modules" in A1 and {UDF_MODULE} in B1. If Excel should use a '
    'Python other than the one on the PATH, set it in the "Interpreter" box.',
    f'Click "Import Functions" on the xlwings tab. It writes the VBA module {VBA_MODULE} into the workbook.',
    "Open the VBA editor (Alt+F11), select the workbook's project, then Tools > References: tick xlwings and click "
    f"OK. The functions {VBA_MODULE} declares call Python through the add-in, and without this reference they show "
    "#NAME? (a workbook made with xlwings quickstart has it already; one made with xlwings quickstart --standalone "
    "needs none).",
    "Save the workbook as an Excel Macro-Enabled Workbook (.xlsm), or the imported functions are lost. When you open "
    'it again, click "Enable Content" in the yellow security bar (or keep it in a Trusted Location): with macros '
    "disabled, every function shows #NAME?.",
    f"Type {FORMULA} into a cell: it shows {EXPECTED}.",
)
"""Windows desktop Excel with the classic xlwings add-in."""

LITE_STEPS = (
    "In Excel (Microsoft 365 or Office 2021 or later, on Windows, macOS or the web): Home > Add-ins, search for "
    "xlwings, and add xlwings Lite. Its editor opens on the right (reopen it with the xlwings Lite button).",
    "Download lite/main.py and lite/requirements.txt from xlsxplan's repository (xlsxplan's code in one file, as it "
    "is not on PyPI yet), or write them on any machine with Python and xlsxplan: xlsxplan excel --lite xlsxplan-lite.",
    "In Lite's editor, open the requirements.txt tab and add the lines of the written requirements.txt to what "
    "is there (keep its xlwings line). Lite installs them (see its Output pane).",
    "Open the main.py tab and replace its content with the written main.py (select all, paste). Lite keeps the "
    "code in the workbook and registers every xlsxplan function; anyone who opens the workbook with Lite has them.",
    f"Type {FORMULA} into a cell: it shows {EXPECTED}.",
)
"""Excel on Windows, macOS or the web with the xlwings Lite add-in."""


@dataclass(frozen=True)
class Check:
    """One check: ``ok`` is True (passed), False (failed) or None (for information only)."""

    ok: bool | None
    text: str

    @property
    def label(self) -> str:
        return {True: "ok", False: "FAIL", None: "info"}[self.ok]


def machine_checks() -> list[Check]:
    """What can be checked on this machine without Excel."""
    checks = []
    try:
        checks.append(Check(True, f"xlwings {importlib.metadata.version('xlwings')} is installed"))
    except importlib.metadata.PackageNotFoundError:
        checks.append(Check(False, "xlwings is not installed: python -m pip install xlwings"))
    system = platform.system() or sys.platform
    if system == "Windows":
        checks.append(Check(None, "Windows: classic xlwings UDFs (desktop Excel) and xlwings Lite both work here"))
    else:
        checks.append(
            Check(None, f"{system}: classic xlwings UDFs need Windows desktop Excel; use xlwings Lite in Excel here")
        )
    from ..catalog import catalog_problems, user_catalog_dir

    problems = catalog_problems()
    if problems:
        checks += [Check(False, f"the user's catalog: {p} (left out; the rest works)") for p in problems]
    else:
        checks.append(Check(True, f"the user's catalog ({user_catalog_dir()}) loads, every preset in it"))
    try:
        module = importlib.import_module(UDF_MODULE)
    except Exception as err:  # any failure to import is the finding, reported in one line
        checks.append(Check(False, f"{UDF_MODULE} does not import: {type(err).__name__}: {err}"))
        return checks
    missing = [name for name in registry.FUNCTIONS if not callable(getattr(module, name, None))]
    if missing:
        checks.append(Check(False, f"{UDF_MODULE} lacks {len(missing)} registry functions: {', '.join(missing)}"))
    else:
        checks.append(Check(True, f"{UDF_MODULE} imports and exposes all {len(registry.FUNCTIONS)} functions"))
    return checks


def workbook_checks(path: Path, limits: ZipLimits | None = None) -> list[Check]:
    """Whether a workbook is set up for classic xlwings. Raises :class:`WorkbookError` if it cannot be read.

    The file is untrusted: it is read once, within ``limits`` (:class:`~.infra.zipfiles.ZipLimits`: file size, parts,
    zip bombs, DTDs and entities, checked before anything parses it), and only those checked bytes are read on.
    """
    path = Path(path)
    try:
        kind = file_kind(path.stat().st_mode)  # stat() never blocks, as opening a FIFO would
    except OSError:
        raise WorkbookError(f"cannot read {path}: no such file") from None
    if kind is not None:
        raise WorkbookError(f"cannot read {path}: it is {kind}, not a regular workbook")
    if not zipfile.is_zipfile(path):
        raise WorkbookError(f"cannot read {path}: not an Excel workbook (.xlsx or .xlsm)")
    data, zf = checked_zip(path, limits or ZipLimits())
    checks = [_conf_check(path, data)]
    suffix = path.suffix.lower()
    if suffix in (".xlsm", ".xlam"):
        checks.append(Check(True, f"{path.name} is a macro-enabled workbook ({suffix})"))
    else:
        checks.append(Check(False, f"{path.name} is not .xlsm: after Import Functions, save it as .xlsm"))
    project = vba_project(zf, path)
    modules = modules_of(project, path)
    if VBA_MODULE in modules:
        checks.append(Check(True, f"the VBA module {VBA_MODULE} is there (Import Functions was run)"))
    else:
        found = f" (it has {', '.join(modules)})" if modules else " (it has no VBA)"
        checks.append(Check(False, f"no VBA module {VBA_MODULE}{found}: click Import Functions, then save"))
    checks.append(_reference_check(project, modules, path))
    checks.append(Check(None, NOT_CHECKED))
    return checks


NOT_CHECKED = (
    "not checked, as no file says it: that Excel runs this workbook's macros when it opens it (Enable Content in "
    "the yellow bar, or a Trusted Location), that Python and xlsxplan are installed where Excel looks, and the "
    "Interpreter setting"
)
"""What ``xlsxplan excel BOOK`` cannot tell from the workbook: Excel decides it on each machine."""


def _reference_check(project: bytes | None, modules: list[str], path: Path) -> Check:
    """Whether the imported functions can find ``XLPy.CallUDF``: it lives in the xlwings add-in's VBA project, which
    the workbook must reference (VBA editor: Tools > References > xlwings), unless it carries xlwings' VBA itself as
    the standalone module ``xlwings`` (``xlwings quickstart --standalone``)."""
    if XLWINGS_MODULE in modules:
        return Check(True, f"the workbook carries xlwings' own VBA (the standalone module {XLWINGS_MODULE})")
    fix = (
        "in the VBA editor (Alt+F11), Tools > References, tick xlwings, then save; without it the imported "
        "functions cannot call Python and show #NAME?"
    )
    if project is None:
        return Check(False, f"no reference to the xlwings add-in (no VBA yet): after Import Functions, {fix}")
    references = references_of(project, path)
    if any(is_xlwings(name, libid) for name, libid in references):
        return Check(True, "the VBA project references the xlwings add-in (Tools > References > xlwings)")
    found = f"it references {', '.join(dict.fromkeys(n for n, _ in references))}" if references else "no references"
    return Check(False, f"no reference to the xlwings add-in ({found}): {fix}")


def _conf_check(path: Path, data: bytes) -> Check:
    import io

    import openpyxl

    from ..infra.zipfiles import require_defusedxml
    from ..sheet.xlwings_conf import read_conf_sheet

    require_defusedxml()
    try:
        wb = openpyxl.load_workbook(io.BytesIO(data), read_only=True)
    except Exception as err:  # openpyxl raises many kinds on a damaged file
        raise WorkbookError(f"cannot read {path}: {type(err).__name__}: {err}") from None
    try:
        settings = read_conf_sheet(wb)
    finally:
        wb.close()
    if not settings:
        return Check(False, f'no {SHEET_NAME} sheet: set "UDF Modules" to {UDF_MODULE} (ribbon or that sheet)')
    modules = [m.strip() for m in settings.get("UDF Modules", "").split(";")]
    if UDF_MODULE in modules:
        return Check(True, f'the {SHEET_NAME} sheet names {UDF_MODULE} under "UDF Modules"')
    return Check(False, f'the {SHEET_NAME} sheet does not name {UDF_MODULE} under "UDF Modules"')
