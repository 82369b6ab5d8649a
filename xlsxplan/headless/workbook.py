"""Headless recalculation of a whole workbook: load once, set inputs, calculate, read, save with cached values.

:class:`Workbook` loads a file through the checks of :mod:`xlsxplan.headless.untrusted`, reads which cells hold
formulas (:mod:`.sheets`), gives the engine (`formualizer`, through :mod:`.engine`) a copy of the package whose
formulas say what Excel means by them, and then recalculates as often as needed with inputs changed by cell or
defined name; the engine recalculates only the cells an input reaches. :meth:`Workbook.save` writes the original
package back with every formula kept and its computed value cached beside it, so Excel, LibreOffice, file
previewers and ``openpyxl(data_only=True)`` all show the numbers (see :mod:`xlsxplan.headless.patch` for how the
file is edited without a lossy round trip).

What the engine is given differs from the file in a few ways, each so that it computes what Excel would:

* a plain formula (not an array formula) is one cell's value: the engine is given ``@(formula)``, Excel's implicit
  intersection, so that an array result shows its first value, as in Excel for a formula that was not entered as a
  dynamic array, instead of spilling into the cells beside it;
* an omitted argument of a registry call is an empty value, not 0 (:func:`.engine.mark_omitted`); an add-in's
  stored name of a registry function is the function (:func:`.engine.add_in_names`); a native function of one
  value given an array (``SUMPRODUCT(1*ISERROR(B2:B90))``) is computed element by element, as Excel does and the
  engine does not (:func:`.engine.lift_arrays`);
* an array formula over a range is given inside ``_XLSXPLAN_FIT(rows, columns, formula)``, so that its result
  fills that range as Excel fills it (:func:`.engine.fit_array`), not spilling from its first cell;
* a sheet-qualified defined name (``Plan!Rate``, a name scoped to the sheet Plan), which the engine does not read,
  is given as what the name refers to; the intersection of two references, and a reference through several sheets
  in SUM, AVERAGE and their kind, are given as the range or the list of references Excel reads them as.

Errors stay in their cells: a formula that fails becomes its Excel error value, with the one-line reason from
the registry (or from the engine) in :meth:`Workbook.errors`, in :meth:`Workbook.get`, and in the saved file as a
note authored ``xlsxplan`` on the cell. One bad cell never stops the others. An error value stored in a cell
carries no text, so the reason behind a registry function's error is found when it is asked for: the cell's formula
is evaluated once more, on a sheet of its own (its references pointed at the cell's sheet), and the message the
registry gave is read there; an error that only passes through a cell is traced to the cell it came from.
"""

from __future__ import annotations

import bisect
import contextlib
import datetime
import functools
import gc
import io
import math
import re
import sys
import zipfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import formualizer as fz

from ..errors import EXCEL_ERRORS, CellError, WorkbookError
from ..infra.fileio import atomic_write
from ..infra.text import FORMULA_TRIGGERS, clean_text
from . import columns, engine
from .frozen import NAME_PREFIX, TITLE_PREFIX, Frozen, read_frozen
from .intersect import intersect
from .layout import Layout, Validation
from .numfmt import format_value
from .package import MAX_ROW, Package, closest, col_index, col_letter, range_bounds, split_ref
from .patch import CommentEdit, Patch, QuotePrefixStyles, patch_sheet, write_notes
from .references import COMPUTED_RANGE, computed_range
from .references import ordered as ordered_ranges
from .sheets import SPANNING, Formula, SheetIndex, engine_copy, release, scan_sheet
from .untrusted import (
    Inspection,
    Limits,
    check_ranges,
    check_spans,
    first_formula_threat,
    formula_threat,
    open_package,
    rule_formula_threat,
)

__all__ = ["Workbook", "recalc", "default_output", "parse_value", "MAX_NOTES_PER_SHEET", "gc_paused", "Validation"]

MAX_NOTES_PER_SHEET = 200
"""Error notes written per sheet; further error cells are reported by :meth:`Workbook.errors` only."""

_TYPED = "the cell holds this error value (typed, not calculated)"
_DATA_TABLE = "Excel data tables (What-If Analysis) are not calculated headlessly; use plain formulas"
_PROBE_SHEET = "_xlsxplan_probe_"
_UNREAD: Any = object()  # a value not given: read the cell's


# ---------------------------------------------------------------------------------------------------------------
# Values typed by people and programs

_NUMBER_TYPED = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?%?$", re.ASCII)
_GROUPED = re.compile(r"^[+-]?\d{1,3}(,\d{3})+(\.\d+)?$", re.ASCII)


def parse_value(text: str, what: str = "value") -> Any:
    """A value typed on a command line, read as a person means it.

    ``42``, ``-3.5``, ``1e6``, ``1E+6`` and ``90%`` (0.9) are numbers; ``TRUE``/``FALSE`` (any case) booleans;
    ``#N/A`` and the other error values errors; an empty string clears the cell; anything else is text, stored
    as text (``=1+1`` too: xlsxplan never turns typed input into a formula). Wrap a value in double quotes to keep
    it text (``"42"``). ``1,000`` is refused, since the thousands separator depends on the locale.
    """
    raw = text.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        return clean_text(raw[1:-1], what)
    if raw == "":
        return None
    if raw.upper() in ("TRUE", "FALSE"):
        return raw.upper() == "TRUE"
    if raw.upper() in EXCEL_ERRORS:
        return CellError(raw.upper())
    if _NUMBER_TYPED.match(raw):
        if raw.endswith("%"):
            return float(raw[:-1]) / 100
        number = float(raw)
        if not math.isfinite(number):
            raise WorkbookError(f"{what} {text!r} is too large for a spreadsheet cell")
        return int(number) if re.fullmatch(r"[+-]?\d+", raw) and abs(number) < 2**53 else number
    if _GROUPED.match(raw):
        raise WorkbookError(
            f"{what} {text!r}: type numbers without thousands separators, or quote it to store it as text"
        )
    return clean_text(text, what)


def _check_value(value: Any, what: str) -> Any:
    numpy = sys.modules.get("numpy")  # nothing is a numpy value if nothing has imported numpy
    if numpy is not None and isinstance(value, numpy.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, CellError)):
        return value
    if isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise WorkbookError(f"{what} must be a finite number, got {value}")
        return value
    if isinstance(value, str):
        return clean_text(value, what)
    raise WorkbookError(f"{what} must be a number, text, TRUE/FALSE or empty, got {type(value).__name__}")


def _to_engine(value: Any) -> Any:
    """A value set into a cell, as the engine takes it."""
    if isinstance(value, CellError):
        return {"type": "Error", "kind": value.code}
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**63:
        return float(value)
    return value


def _number(value: Any) -> Any:
    """A value read from the engine, whose numbers are all floats: a whole number as an int (``94``, not ``94.0``),
    as a reader of the results (``--json``, a program) expects a count to be."""
    if type(value) is float and value.is_integer() and -1e15 < value < 1e15:  # as patch.number_text writes them
        return int(value)
    return value


# ---------------------------------------------------------------------------------------------------------------
# The garbage collector


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for the block, then restore it as it was.

    Reading a workbook's results allocates a value per cell, and a collection of the oldest generation in the
    middle walks every object alive: pausing it costs nothing (nothing is freed late: the objects live as long as
    the Workbook) and saves its walks. Used inside :meth:`Workbook.load`, :meth:`Workbook.calculate` and the
    readers, so the caller's collector is back as it was when they return.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _collector_paused(method: Callable[..., Any]) -> Callable[..., Any]:
    """Run a Workbook method with the cyclic garbage collector paused (:func:`gc_paused`)."""

    @functools.wraps(method)
    def paused(*args: Any, **kwargs: Any) -> Any:
        with gc_paused():
            return method(*args, **kwargs)

    return paused


# ---------------------------------------------------------------------------------------------------------------
# References as people write them


def _quote_sheet(title: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", title) and not re.fullmatch(r"[A-Za-z]{1,3}\d+", title):
        return title
    return "'" + title.replace("'", "''") + "'"


def _sheet_ref(text: str) -> tuple[str | None, str]:
    """``'My Sheet'!B3`` -> ("My Sheet", "B3"); ``Name`` -> (None, "Name")."""
    text = text.strip()
    if "!" not in text:
        return None, text
    sheet, _, ref = text.rpartition("!")
    sheet = sheet.strip()
    if len(sheet) >= 2 and sheet[0] == sheet[-1] == "'":
        sheet = sheet[1:-1].replace("''", "'")
    return sheet, ref.strip().replace("$", "")


_INDEX_CASE = re.compile(r"^=\s*INDEX\(\s*([^,()]+?)\s*,\s*([^,()]+?)\s*\)\s*$", re.I)
_A1 = re.compile(r"\$?[A-Za-z]{1,3}\$?\d+(:\$?[A-Za-z]{1,3}\$?\d+)?")
_WHOLE = re.compile(r"^\$?([A-Za-z]{1,3})?\$?(\d+)?:\$?([A-Za-z]{1,3})?\$?(\d+)?$")
_SHEET_NAME_REF = re.compile(
    r"((?:'(?:[^']|'')+'|[^\W\d][\w.]*)!)([A-Za-z_\\][\w.]*)"
    r"(?![\w.(!:$\[])"
)


class _Probe:
    """Values read through ``_XLSXPLAN_PROBE``: a formula evaluated where no cell holds it (a defined name's, or a
    cell's evaluated again for the reasons behind its errors)."""

    def __init__(self) -> None:
        self.values: list[Any] = []

    def __call__(self, *args: Any) -> Any:
        self.values.append(args[-1] if args else None)
        return 0


# ---------------------------------------------------------------------------------------------------------------
# The workbook


_RESOLVED = 1_000_000
"""References a workbook remembers resolved (about 200 bytes each); past this the memory is cleared, not grown."""


class Workbook:
    """A workbook loaded for headless recalculation.

    Build one with :meth:`load`; then :meth:`set` inputs, :meth:`calculate`, :meth:`get` values and
    :meth:`save` as often as needed. Reading a value after a change recalculates first, so a value read is never
    stale.
    """

    def __init__(
        self,
        inspection: Inspection,
        book: Any,
        index: dict[str, SheetIndex],
        probe: _Probe,
        calling: set[tuple[str, int, int]],
        calls: int,
        source: Path | None,
    ) -> None:
        self._inspection = inspection
        self._pkg: Package = inspection.package
        self._book = book
        self._index = index
        self._probe = probe
        self._calling = calling  # the formula cells that call registry functions
        self._calls = calls  # the registry calls their formulas write
        self._records: dict[tuple[str, int, int], tuple[Any, engine.Messages]] = {}
        # a formula as its record evaluates it, and a probe's text as the engine is given it: each a function of the
        # text alone (and of the package, which does not change), rewritten once for the cells that share a text
        self._qualified: dict[tuple[str, str, str, tuple[int, int, int, int] | None], str] = {}
        self._prepared: dict[str, str] = {}
        self._static: _Static | None = None
        self._local = _local_names(inspection.package)
        self._layout = Layout(inspection.package)
        self.path = source
        self._titles = self.sheetnames
        self._sets: dict[tuple[str, int, int], Any] = {}
        self._stale = True
        self._reasons: dict[tuple[str, int, int, str], str] = {}
        self._frozen_reasons: dict[tuple[str, str], str] = {}  # a kept formula's failure, by its text and code
        self._computed_cache: dict[str, dict[tuple[int, int], Any]] | None = None
        self._error_cells: dict[str, list[tuple[int, int]]] = {}
        self._names_by_fold: dict[str, list[Any]] | None = None
        self._resolved: dict[str, tuple[str, int, int, int, int] | str] = {}
        self._probe_ready = False
        self._arrays = {title: idx.arrays for title, idx in index.items()}
        self._formula_cells: dict[str, list[tuple[int, int]]] = {}
        self._frozen: list[Frozen] = []  # a portable edition's values only Python computes (.frozen)
        self._columns: list[columns.Column] = []  # columns of one registry formula, computed as arrays
        self._columns_due = True  # computed before the next calculation: an input may have changed
        for title, idx in index.items():
            cells = [rc for rc, f in idx.formulas.items() if f.kind not in ("array", "dataTable")]  # file order
            if self._arrays[title]:
                positions = set(cells)
                for f in self._arrays[title]:
                    r1, c1, r2, c2 = f.area  # type: ignore[misc]
                    positions.update((r, c) for r in range(r1, r2 + 1) for c in range(c1, c2 + 1))
                cells = list(positions)
            cells.sort()  # in file order already, as a writer writes cells: sorted in one pass
            self._formula_cells[title] = cells

    # -- loading ------------------------------------------------------------------------------------------------

    @classmethod
    def load(
        cls, path: Path | str, limits: Limits | None = None, progress: Callable[[int, int], None] | None = None
    ) -> Workbook:
        """Check and load a workbook (.xlsx, .xlsm, .xltx, .xltm); WorkbookError with one line if refused.

        ``limits`` overrides :class:`~xlsxplan.headless.untrusted.Limits`; ``progress(done, total)`` is called as
        sheets are read (``total`` is the number of cells the file stores).
        """
        path = Path(path)
        with gc_paused():
            inspection = open_package(path, limits)
            return cls._from_inspection(inspection, path, progress, limits or Limits())

    @classmethod
    def _from_inspection(
        cls,
        inspection: Inspection,
        path: Path | None,
        progress: Callable[[int, int], None] | None,
        limits: Limits,
    ) -> Workbook:
        name = str(path) if path else "the workbook"
        pkg = inspection.package
        total = max(inspection.cells, 1)
        done = 0
        try:
            index: dict[str, SheetIndex] = {}
            for sheet, stats in zip([s for s in pkg.sheets if s.kind == "worksheet"], inspection.sheets):
                xml = pkg.read(sheet.part)
                ruled = rule_formula_threat(xml)
                if ruled:
                    raise WorkbookError(
                        f"a data-validation or conditional-format formula in sheet {sheet.title!r} ({ruled[0][:80]}) "
                        f"{ruled[1]}; xlsxplan refuses such files"
                    )
                idx = index[sheet.title] = scan_sheet(xml)
                found = first_formula_threat({rc: f.text for rc, f in idx.formulas.items() if f.text})
                if found is not None:
                    (r, c), threat = found
                    where = f"{_quote_sheet(sheet.title)}!{col_letter(c)}{r}"
                    raise WorkbookError(f"the formula in {where} {threat}; xlsxplan refuses such files")
                done += stats.cells
                if progress is not None:
                    progress(min(done, total), total)
            # the cells array formulas and data tables fill are listed below (and written on save): count them first
            spans = {t: [(f.kind, f.area) for f in idx.arrays if f.area is not None] for t, idx in index.items()}
            check_spans(inspection, spans, limits)
            check_ranges(
                inspection, {t: [f.text for f in idx.formulas.values() if f.text] for t, idx in index.items()}, limits
            )
            data, calling, calls, tiles, computed_columns = _engine_package(pkg, index)
            probe = _Probe()
            date1904 = Layout(pkg).date1904
            book = engine.register_functions(engine.new_book(data, date1904), {engine.PROBE: probe}, date1904=date1904)
            for title, row, col, text in tiles:
                book.set_formula(title, row, col, text)
            frozen = _read_frozen(inspection, index, book, limits)
        except WorkbookError as err:
            raise WorkbookError(f"{name}: {err.message}") from None
        except MemoryError:
            raise WorkbookError(f"{name}: ran out of memory while loading; see `Limits` to refuse it earlier") from None
        except BaseException as err:  # the engine choked on the content: corrupt for our purposes
            if engine.fatal(err):
                raise
            first = str(err).splitlines()[0] if str(err) else ""
            raise WorkbookError(f"{name} cannot be read: {type(err).__name__}: {first}".rstrip(": ")) from None
        if progress is not None:
            progress(total, total)
        wb = cls(inspection, book, index, probe, calling, calls, path)
        wb._frozen = frozen
        wb._columns = computed_columns
        return wb

    # -- addressing ---------------------------------------------------------------------------------------------

    @property
    def sheetnames(self) -> list[str]:
        """The worksheet titles, in workbook order."""
        return [s.title for s in self._pkg.sheets if s.kind == "worksheet"]

    @property
    def names(self) -> dict[str, str]:
        """The workbook's global defined names and what each refers to."""
        return {d.name: d.text for d in self._pkg.defined_names if d.local_sheet is None}

    @property
    def extension(self) -> str:
        """The kind of workbook by its content type: ``.xlsx``, ``.xlsm``, ``.xltx`` or ``.xltm``."""
        return self._pkg.extension

    def _resolve(self, ref: str) -> tuple[str, int, int, int, int] | str:
        """A reference or name as (sheet title, r1, c1, r2, c2), or the name itself for a name that holds a
        formula. Remembered per text (names and sheet titles never change after loading): a command that asks
        several questions of each of 80,000 names resolves each once; at most :data:`_RESOLVED` texts are kept."""
        hit = self._resolved.get(ref)
        if hit is None:
            hit = self._resolve_anew(ref)
            if len(self._resolved) >= _RESOLVED:
                self._resolved.clear()
            self._resolved[ref] = hit
        return hit

    def _resolve_anew(self, ref: str) -> tuple[str, int, int, int, int] | str:
        sheet, target = _sheet_ref(ref)
        if sheet is not None:
            title = self._pkg.worksheet(sheet).title
            try:
                return (title, *range_bounds(target))
            except WorkbookError:
                whole = self._area(target, title) if _WHOLE.match(target) else None  # A:B, 4:9
                if whole is None:
                    raise WorkbookError(
                        f"{ref!r}: {target!r} is not a cell or range such as B4, B4:D9, A:B or 4:9"
                    ) from None
                return whole
        matches = self._names_folded().get(target.casefold(), [])
        if not matches:
            if _A1.fullmatch(target):
                raise WorkbookError(f"{ref!r} needs its sheet, e.g. {self.sheetnames[0]}!{target}")
            hint = self._names_like(target)
            raise WorkbookError(f"the workbook has no sheet reference or defined name {ref!r}; {hint}")
        name = next((d for d in matches if d.local_sheet is None), matches[0])
        text = name.text.strip().lstrip("=")
        inner_sheet, inner = _sheet_ref(text)
        if inner_sheet is not None and "," not in inner:
            try:
                return (self._pkg.worksheet(inner_sheet).title, *range_bounds(inner))
            except WorkbookError:
                pass
        return name.name

    def _names_like(self, target: str) -> str:
        """``did you mean A or B?`` with the defined names closest to ``target``, else a list of the names."""
        names = sorted(self.names)
        close = closest(target, names)
        if close:
            return f"did you mean {' or '.join(close)}?"
        if not names:
            return "it has no defined names; refer to cells as Sheet!B3"
        shown = ", ".join(names[:20]) + (f" and {len(names) - 20} more" if len(names) > 20 else "")
        return f"its names: {shown}"

    def address(self, ref: str) -> str:
        """Where ``ref`` (a cell, a range or a defined name) points: ``Inputs!B3``, ``Outputs!B2:B4``, or the name
        itself for a name that holds a formula. WorkbookError, with the nearest names or sheets, if it points
        nowhere. Nothing is calculated: a typo is found before the expensive part."""
        target = self._resolve(ref)
        if isinstance(target, str):
            return ref.strip()
        title, r1, c1, r2, c2 = target
        first = f"{_quote_sheet(title)}!{col_letter(c1)}{r1}"
        return first if (r1, c1) == (r2, c2) else f"{first}:{col_letter(c2)}{r2}"

    # -- what the file says about its cells (read only) ---------------------------------------------------------

    def _cell(self, ref: str) -> tuple[str, int, int]:
        """A reference or name of one cell as (sheet title, row, column); WorkbookError for a range or a name that
        holds a formula."""
        target = self._resolve(ref)
        if isinstance(target, str):
            raise WorkbookError(f"{ref!r} is a defined name for a formula, not a cell")
        title, r1, c1, r2, c2 = target
        if (r1, c1) != (r2, c2):
            raise WorkbookError(f"{ref!r} is a range; name one cell")
        return title, r1, c1

    def position(self, ref: str) -> tuple[str, int, int]:
        """Where one cell (a reference or a defined name) is: (sheet title, row, column), 1-based. WorkbookError for
        a range, a name that holds a formula, or a reference that points nowhere."""
        return self._cell(ref)

    def used_range(self, sheet: str) -> str | None:
        """The range from A1 to the last row and column that hold a cell (``A1:J84``), or None for an empty
        sheet."""
        title = self._pkg.worksheet(sheet).title
        stats = next((s for s in self._inspection.sheets if s.title == title), None)
        if stats is None or not stats.max_row or not stats.max_col:
            return None
        return f"A1:{col_letter(stats.max_col)}{stats.max_row}"

    def formula(self, ref: str) -> str | None:
        """The formula that computes a cell, with its ``=`` (an array formula's for each cell of its range), or
        None for a cell that holds a value; an input set with ``force`` holds the value."""
        title, row, col = self._cell(ref)
        f = self._formula_at(title, row, col)
        if f is None or (title, row, col) in self._sets or f.kind == "dataTable":
            return None
        return self._text(title, f)

    def active_case(self, ref: str) -> tuple[str, int] | None:
        """For a scenario row's cell, ``=INDEX(row or column of cases, selector)``, the case cell its selector
        picks now and the case's number (``("Inputs!H11", 2)``): the input to set for it. None for any other
        cell."""
        title, row, col = self._cell(ref)
        f = self._formula_at(title, row, col)
        if f is None or f.kind == "dataTable" or (title, row, col) in self._sets:
            return None
        found = self._case_cell(self._text(title, f), title)
        return None if found is None else (found[0], found[2])

    def number_format(self, ref: str) -> str:
        """The number format code of a cell, as its style gives it (``#,##0``, ``yyyy-mm-dd``, ``General``)."""
        title, row, col = self._cell(ref)
        return self._layout.number_format(title, row, col)

    @property
    def date1904(self) -> bool:
        """Whether the workbook counts dates from 1904 rather than 1900."""
        return self._layout.date1904

    def shown(self, ref: str, value: Any = _UNREAD) -> str:
        """A cell's value as its number format shows it in Excel (``1,234``, ``95%``, ``2026-11-01``, ``OK``); an
        error as its value and reason. ``value`` stands for the cell's value when given (one already read)."""
        title, row, col = self._cell(ref)
        if value is _UNREAD:
            value = self.get(ref)
        if isinstance(value, CellError):
            return str(value)
        return format_value(value, self._layout.number_format(title, row, col), self._layout.date1904)

    def validations(self, sheet: str) -> list[Validation]:
        """The data validation rules of a worksheet (:class:`~xlsxplan.headless.layout.Validation`)."""
        return self._layout.validations(self._pkg.worksheet(sheet).title)

    def validation_at(self, sheet: str, row: int, col: int) -> Validation | None:
        """The data validation rule that applies to a cell (the first of :meth:`validations` that covers it), or
        None; looked up in an index of the sheet's rules, not by a scan of them."""
        return self._layout.validation_at(self._pkg.worksheet(sheet).title, row, col)

    def _array_at(self, title: str, row: int, col: int) -> Formula | None:
        for f in self._arrays.get(title, ()):
            r1, c1, r2, c2 = f.area  # type: ignore[misc]
            if r1 <= row <= r2 and c1 <= col <= c2:
                return f
        return None

    def _formula_at(self, title: str, row: int, col: int) -> Formula | None:
        """The formula that computes a cell: its own, or the array formula whose range holds it."""
        f = self._index[title].formulas.get((row, col)) if title in self._index else None
        if f is not None and f.kind not in ("array", "dataTable"):
            return f
        return self._array_at(title, row, col)

    def _text(self, title: str, f: Formula) -> str:
        """A formula's text with its ``=``: as the file writes it, or for a shared formula's later cell, as the
        engine derived it from the first."""
        if f.text is not None:
            return "=" + f.text
        derived = self._book.get_formula(title, f.row, f.col) or ""
        return _unwrapped(derived)

    # -- inputs -------------------------------------------------------------------------------------------------

    def set(self, ref: str, value: Any, force: bool = False) -> Workbook:
        """Set an input cell (``"Inputs!C5"``) or the cell a defined name points to (``"Params_B"``).

        ``value`` is a number, text (always stored as text, never as a formula), a bool, None (empty) or a
        :class:`~xlsxplan.sheet.cells.CellError`. A cell that holds a formula is refused, with the input cells behind it
        (for ``=INDEX(cases, Scenario_Number)``, the active case's cell), unless ``force``: then the value replaces
        the formula, in the calculation and in the file saved (the input file is never changed). A cell of an
        array formula is always refused. Returns the workbook.
        """
        target = self._resolve(ref)
        if isinstance(target, str):
            raise WorkbookError(f"{ref!r} is a defined name for a formula, not a cell; set the cells it uses")
        title, r1, c1, r2, c2 = target
        where = f"{_quote_sheet(title)}!{col_letter(c1)}{r1}"
        if (r1, c1) != (r2, c2):
            raise WorkbookError(f"{ref!r} is a range ({where}:{col_letter(c2)}{r2}); set one cell at a time")
        arr = self._array_at(title, r1, c1)
        if arr is not None:
            a1, b1, a2, b2 = arr.area  # type: ignore[misc]
            span = f"{col_letter(b1)}{a1}:{col_letter(b2)}{a2}"
            raise WorkbookError(f"{where} is part of the array formula in {span}; only input cells can be set")
        formula = self._formula_at(title, r1, c1)
        if formula is not None and (title, r1, c1) not in self._sets and not force:
            raise WorkbookError(self._formula_refusal(where, title, formula))
        value = _check_value(value, f"the value for {where}")
        self._book.set_value(title, r1, c1, _to_engine(value))
        self._sets[(title, r1, c1)] = value
        self._changed()
        return self

    def _changed(self) -> None:
        self._stale = True
        self._columns_due = True
        self._reasons = {}
        self._records = {}
        self._computed_cache = None
        self._error_cells = {}

    def _formula_refusal(self, where: str, title: str, formula: Formula) -> str:
        """Why a formula cell cannot be set, and which cells to set instead."""
        text = self._text(title, formula)
        case = self._active_case(text, title)
        if case is not None:
            advice = f"set {case} instead"
        else:
            behind = self._precedents(text, title)
            advice = f"set the cells it reads instead ({behind})" if behind else "set the cells it reads instead"
        shown = f" ({text})" if text and len(text) <= 80 else ""
        return (
            f"{where} holds a formula{shown}; {advice}, or force it (--force-set) to replace the formula with the "
            "value in the copy written"
        )

    def _active_case(self, formula: str, title: str) -> str | None:
        """For ``=INDEX(row or column of cases, selector)``: the cell of the case the selector picks, described."""
        found = self._case_cell(formula, title)
        if found is None:
            return None
        cell, selector, i = found
        return f"{cell} (the active case: {selector} is {i})"

    def _case_cell(self, formula: str, title: str) -> tuple[str, str, int] | None:
        """For ``=INDEX(row or column of cases, selector)``: the case cell the selector picks, the selector, and
        the case's number."""
        m = _INDEX_CASE.match(formula)
        if m is None:
            return None
        cases, selector = m.group(1).strip(), m.group(2).strip()
        try:
            target = self._resolve(f"{_quote_sheet(title)}!{cases}" if _A1.fullmatch(cases) else cases)
        except WorkbookError:
            return None
        if isinstance(target, str):
            return None
        sheet, r1, c1, r2, c2 = target
        if r1 != r2 and c1 != c2:  # a table, not a row or a column of cases
            return None
        n = self._value_of(selector, title)
        if isinstance(n, bool) or not isinstance(n, (int, float)) or not math.isfinite(n) or n != int(n):
            return None
        i = int(n)
        if not 1 <= i <= max(r2 - r1, c2 - c1) + 1:
            return None
        row, col = (r1, c1 + i - 1) if r1 == r2 else (r1 + i - 1, c1)
        return f"{_quote_sheet(sheet)}!{col_letter(col)}{row}", selector, i

    def _value_of(self, text: str, title: str) -> Any:
        """The value of a number, cell or defined name in a formula, computing only what it needs."""
        try:
            return float(text)
        except ValueError:
            pass
        try:
            target = self._resolve(f"{_quote_sheet(title)}!{text}" if _A1.fullmatch(text) else text)
        except WorkbookError:
            return None
        try:
            with gc_paused():
                if isinstance(target, str):
                    return self._probe_value(target)
                sheet, r, c, r2, c2 = target
                if (r, c) != (r2, c2):
                    return None
                if (sheet, r, c) in self._sets:
                    return self._sets[(sheet, r, c)]
                raw = self._book.evaluate_cell(sheet, r, c) if self._stale else self._book.get_value(sheet, r, c)
        except BaseException as _err:  # an aid to a message: never the reason a set fails
            if engine.fatal(_err):
                raise
            return None
        return _number(engine.from_engine(raw))

    def _precedents(self, formula: str, title: str, most: int = 6) -> str:
        """The defined names (first, in alphabetical order) and cells a formula reads, as a person writes them."""
        names: dict[str, str] = {}
        cells: list[tuple[str, int, int, str]] = []
        known = {d.name.casefold(): d.name for d in self._pkg.defined_names}
        for ref in _references(formula):
            if ref.casefold() in known:
                names.setdefault(ref.casefold(), known[ref.casefold()])
                continue
            area = self._area(ref, title)
            if area is not None:
                sheet, r1, c1, r2, c2 = area
                shown = f"{col_letter(c1)}{r1}" + ("" if (r1, c1) == (r2, c2) else f":{col_letter(c2)}{r2}")
                cells.append((sheet, r1, c1, f"{_quote_sheet(sheet)}!{shown}"))
        listed = [names[k] for k in sorted(names)] + [c[3] for c in sorted(set(cells))]
        extra = f" and {len(listed) - most} more" if len(listed) > most else ""
        return ", ".join(listed[:most]) + extra

    def read_constants(self, most: int = 100_000) -> list[tuple[str, bool]]:
        """The cells that hold a value, not a formula, and that some formula reads (``Sheet!B4``), each with
        whether a formula reads it on its own (not only inside a range), in the order of the sheets and their
        rows: a workbook's inputs where it names none. A range of more than ``most`` cells is left out (a table of
        data, not an assumption)."""
        found: dict[tuple[int, int, int], bool] = {}
        order = {t: i for i, t in enumerate(self._titles)}
        seen: set[int] = set()
        for title, positions in self._formula_cells.items():
            for r, c in positions:
                f = self._formula_at(title, r, c)
                if f is None or id(f) in seen:
                    continue
                seen.add(id(f))
                for ref in _references(self._text(title, f)):
                    area = self._area(ref, title)
                    if area is None or area[0] not in order:
                        continue
                    sheet, r1, c1, r2, c2 = area
                    alone = (r1, c1) == (r2, c2)
                    if (r2 - r1 + 1) * (c2 - c1 + 1) > most:
                        continue
                    for rr in range(r1, r2 + 1):
                        for cc in range(c1, c2 + 1):
                            if self._formula_at(sheet, rr, cc) is None:
                                key = (order[sheet], rr, cc)
                                found[key] = found.get(key, False) or alone
        return [
            (f"{_quote_sheet(self._titles[s])}!{col_letter(c)}{r}", alone) for (s, r, c), alone in sorted(found.items())
        ]

    # -- calculation --------------------------------------------------------------------------------------------

    @_collector_paused
    def calculate(self, progress: Callable[[int, int], None] | None = None) -> Workbook:
        """Recompute every formula with the inputs set so far; returns the workbook.

        The engine recalculates only what an input set since the last calculation reaches. ``progress(done,
        total)`` is called as the engine computes: ``total`` is the number of calls of xlsxplan's functions the
        formulas write, ``done`` those made so far (the end is ``(total, total)``).
        """
        try:
            with engine.ticking(self._calls, progress):
                if self._columns_due:
                    for column in self._columns:
                        columns.compute(self._book, column, self._sets)
                    self._columns_due = False
                self._book.evaluate_all()
        except RecursionError:
            raise WorkbookError("formulas nest too deeply to evaluate") from None
        except MemoryError:
            raise WorkbookError("ran out of memory while calculating") from None
        except BaseException as err:  # a failure of the engine itself, not of a cell (cells fail one by one)
            if engine.fatal(err):
                raise
            raise WorkbookError(f"the engine failed: {' '.join(str(err).split())}") from None
        self._stale = False
        self._reasons = {}
        self._records = {}
        self._computed_cache = None
        if progress is not None:
            progress(max(self._calls, 1), max(self._calls, 1))
        return self

    def _fresh(self) -> None:
        if self._stale:
            self.calculate()

    @property
    def frozen(self) -> list[Frozen]:
        """A portable edition's blocks of values only Python computes (:mod:`.frozen`); [] for another workbook."""
        return list(self._frozen)

    def stale_frozen(self) -> list[Frozen]:
        """The blocks of :attr:`frozen` one of whose inputs has changed since the values were computed (its
        Unchanged cell is not TRUE), after any pending recalculation."""
        self._fresh()
        return [b for b in self._frozen if any(self._cell_value(b.sheet, r, 5) is not True for r in b.inputs)]

    @_collector_paused
    def refresh_frozen(self, progress: Callable[[int, int], None] | None = None) -> list[Frozen]:
        """Compute again a portable edition's values only Python computes, as the add-in edition computes them, and
        replace those of each block whose values differ or whose inputs have changed; returns the blocks refreshed
        ([] when every block was up to date, or the workbook has none). ``xlsxplan recalc`` calls it after
        :meth:`calculate`; :meth:`calculate` alone computes what a spreadsheet application would, leaving them stale
        and flagged.

        Each kept formula (:mod:`.frozen`) is given to the engine in each of its cells, with the registry's
        functions, as the add-in edition's cell is, whatever the file's own check says: a block is refreshed when a
        value computed differs from the value kept (numbers by more than 1e-12 relative, as the check compares) or
        its check says an input has changed. The check's cells are the file's and can be rewritten (``=TRUE`` in
        every Unchanged cell); the values recomputed here cannot. For a block refreshed, the values
        computed (an error value where the formula now fails, as in the add-in) replace the kept ones, each input's
        value now becomes its value when computed, the block's title says today's date, and the workbook is
        recalculated, so the staleness check clears. All of it is written by :meth:`save`, as inputs set are; a
        block up to date is written as the file had it.
        """
        self._fresh()
        if not self._frozen:
            return []
        flagged = {id(b) for b in self.stale_frozen()}
        kept = {
            (title, r, c): self._cell_value(title, r, c)
            for block in self._frozen
            for _, cells, _, _ in block.formulas
            for title, r, c in cells
        }
        static = _Static(self._pkg)
        ranges = {d.name.upper() for d in self._pkg.defined_names if ":" in d.text}
        multi = (lambda operand: operand.upper() in ranges) if ranges else None
        formulas: dict[tuple[str, int, int], str] = {}
        written: dict[tuple[str, int, int], str] = {}  # each cell's formula as kept, for a failure's reason
        self._frozen_reasons = {}  # the inputs may have changed since the last refresh
        for block in self._frozen:
            for text, cells, _, array in block.formulas:
                seen: dict[str, str] = {}
                for title, r, c in cells:
                    written[(title, r, c)] = text
                    if title not in seen or array:  # an array formula of one cell is fitted to it
                        f = Formula(r, c, text, "array", (r, c, r, c)) if array else Formula(r, c, text)
                        new, _ = _engine_text(f, self._local, multi, title, static)
                        seen[title] = "=" + (new if new is not None else text)
                    formulas[(title, r, c)] = seen[title]
        for title, r, c, run in _runs(formulas):  # a row's cells at once: ten times faster than one by one
            self._book.set_formulas_batch(title, r, c, [run])
        self._changed()
        self.calculate(progress)
        values: dict[tuple[str, int, int], Any] = {}
        stale = []
        for block in self._frozen:
            computed: dict[tuple[str, int, int], Any] = {}
            for _, cells, _, _ in block.formulas:
                for title, r, c in cells:
                    raw = self._book.get_value(title, r, c)
                    if raw is None:
                        computed[(title, r, c)] = 0  # a formula that points at an empty cell shows 0, as in Excel
                    elif type(raw) is dict:
                        err = engine.cell_error(raw)
                        if not err.message:  # the registry call's own words, as the add-in edition's cell gives
                            err = CellError(err.code, self._frozen_reason(title, r, c, written[(title, r, c)], err))
                        computed[(title, r, c)] = err
                    else:
                        computed[(title, r, c)] = _check_value(_number(raw), "a value computed by Python")
            if id(block) not in flagged and all(_same_kept(v, kept[k]) for k, v in computed.items()):
                continue  # up to date: the engine's cells hold what the file's do
            stale.append(block)
            values.update(computed)
            for r in block.inputs:  # the value now, as the Now column shows it, is the value when computed
                values[(block.sheet, r, 4)] = self._cell_value(block.sheet, r, 2)
            today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
            values[(block.sheet, block.title_row, 1)] = (
                f"{TITLE_PREFIX}{block.group}: {block.cells} cells hold the values xlsxplan recalc computed on "
                f"{today}, for these inputs"
            )
        if not stale:
            return []
        for title, r, c, run in _runs({k: _to_engine(v) for k, v in values.items()}):
            self._book.set_values_batch(title, r, c, [run])
        self._sets.update(values)
        self._changed()
        self.calculate()
        return stale

    def _frozen_reason(self, title: str, row: int, col: int, text: str, err: CellError) -> str:
        """Why a value only Python computes failed at its cell: its kept formula evaluated once more there, the
        registry call's message for ``err``'s code (once per formula text and code: a block's cells share them)."""
        key = (text, err.code)
        if key not in self._frozen_reasons:
            _, calls = self._record(title, Formula(row, col, text))
            self._frozen_reasons[key] = calls.last(err.code) or ""
        return self._frozen_reasons[key]

    def _cell_value(self, title: str, row: int, col: int) -> Any:
        if self._sets and (title, row, col) in self._sets:
            return self._sets[(title, row, col)]
        f = self._formula_at(title, row, col)
        if f is not None:
            if f.kind == "dataTable":
                return CellError("#N/A", _DATA_TABLE)
            raw = self._book.get_value(title, row, col)
            if raw is None:
                return 0  # a formula that points at an empty cell shows 0, as in Excel
            if type(raw) is dict:
                return self._error(title, row, col, f, raw)
            return _number(raw)
        raw = self._book.get_value(title, row, col)
        if type(raw) is dict:
            return CellError(engine.cell_error(raw).code, _TYPED)
        return _number(raw)

    def _error(self, title: str, row: int, col: int, f: Formula, raw: dict) -> CellError:
        err = engine.cell_error(raw)
        if str(raw.get("kind", "")).lower() == "error":  # the engine could not parse the formula
            try:
                fz.parse(self._text(title, f))
            except BaseException as parse_err:
                if engine.fatal(parse_err):
                    raise
                return CellError(err.code, engine.parse_failure(parse_err, self._text(title, f)))
            return err
        if err.message:
            return err
        pos = (row - f.row, col - f.col) if f.kind == "array" else None
        return CellError(err.code, self._reason(title, f, err.code, pos))

    @_collector_paused
    def get(self, ref: str) -> Any:
        """The value of a cell, a range (a list of rows) or a defined name, after any pending recalculation.

        A value is a number, text, bool, None (empty) or a :class:`~xlsxplan.sheet.cells.CellError` carrying the reason.
        """
        target = self._resolve(ref)
        self._fresh()
        if isinstance(target, str):
            value = self._probe_value(target)
            if isinstance(value, list):
                values = [[v for v in row] if isinstance(row, list) else [row] for row in value]
                return values[0][0] if len(values) == 1 and len(values[0]) == 1 else values
            return value
        title, r1, c1, r2, c2 = target
        if (r2 - r1 + 1) * (c2 - c1 + 1) > 1_000_000:
            raise WorkbookError(f"{ref!r} spans more than a million cells; read a smaller range")
        if (r1, c1) == (r2, c2):
            return self._cell_value(title, r1, c1)
        return [[self._cell_value(title, r, c) for c in range(c1, c2 + 1)] for r in range(r1, r2 + 1)]

    def _evaluate(self, formula: str, at: tuple[int, int] = (1, 1)) -> tuple[Any, engine.Messages]:
        """The engine's value of ``formula`` (with its ``=``; errors as they came, with the messages they carry),
        evaluated on a sheet of its own at row and column ``at`` (a cell's own, so that ``ROW()`` and ``COLUMN()``
        give what they give there), and the failures of the registry calls it made."""
        if not self._probe_ready:
            self._book.add_sheet(_PROBE_SHEET)
            self._probe_ready = True
        self._probe.values.clear()
        text = self._prepared.get(formula)
        if text is None:
            text = self._prepared[formula] = engine.prepare(formula)[0]
        row, col = at
        with engine.collect_messages() as calls:
            self._book.set_formula(_PROBE_SHEET, row, col, f"={engine.PROBE}({text[1:]})")
            cell = self._book.evaluate_cell(_PROBE_SHEET, row, col)
        self._book.set_value(_PROBE_SHEET, row, col, None)  # no longer a dependent of the cells it read
        return (self._probe.values[-1] if self._probe.values else cell), calls

    def _probe_value(self, formula: str) -> Any:
        """The value of ``formula`` (a defined name, say) evaluated on a sheet of its own, errors with reasons."""
        value, calls = self._evaluate("=" + formula)

        def reasoned(item: Any, pos: tuple[int, int] | None) -> Any:
            if type(item) is not dict:
                return _number(item)
            err = engine.cell_error(item)
            found = err.message or (calls.at(pos, err.code) if pos else calls.last(err.code))
            return CellError(err.code, found or engine.NATIVE_REASONS.get(err.code, ""))

        if type(value) is list:
            return [
                [reasoned(x, (i, j)) for j, x in enumerate(row if type(row) is list else [row])]
                for i, row in enumerate(value)
            ]
        return reasoned(value, None)

    def _record(self, title: str, f: Formula) -> tuple[Any, engine.Messages]:
        """A registry-calling formula evaluated once more, as on its own sheet (once per calculation): its value,
        with the messages its errors carry, and its registry calls' failures."""
        key = (title, f.row, f.col)
        if key not in self._records:
            written = self._text(title, f)
            shape = (title, written, f.kind, f.area)
            qualified = self._qualified.get(shape)
            if qualified is None:
                local = self._local
                sheet = title.upper()
                if self._static is None:
                    self._static = _Static(self._pkg)
                text = _static_references(_qualified_names(written, self._local), title, self._static)
                qualified = engine.qualify(text, title, lambda name: local.get((sheet, name)))
                qualified = "=" + (_fitted(qualified[1:], f) if f.kind == "array" else f"@({qualified[1:]})")
                self._qualified[shape] = qualified
            try:
                self._records[key] = self._evaluate(qualified, (f.row, f.col))
            except BaseException as _err:  # an aid to a message: never the reason a read fails
                if engine.fatal(_err):
                    raise
                self._records[key] = (None, engine.Messages())
        return self._records[key]

    @_collector_paused
    def cells(self, ref: str) -> list[tuple[str | None, Any]]:
        """Each cell of a reference or defined name with its value, row by row: ``[("Outputs!C7", 94), ...]``.

        A defined name for a formula (not a range) gives one pair whose cell is None.
        """
        target = self._resolve(ref)
        value = self.get(ref)
        if isinstance(target, str):
            return [(None, value)]
        title, r1, c1, _, _ = target
        grid = value if isinstance(value, list) else [[value]]
        return [
            (f"{_quote_sheet(title)}!{col_letter(c1 + j)}{r1 + i}", v)
            for i, row in enumerate(grid)
            for j, v in enumerate(row)
        ]

    # -- errors and their reasons -------------------------------------------------------------------------------

    def _reason(self, title: str, f: Formula, code: str, pos: tuple[int, int] | None, depth: int = 0) -> str:
        """Why the formula ``f`` (at ``pos`` of its array, if it is one) holds the error ``code``."""
        key = (title, f.row, f.col, code + (f"@{pos}" if pos else ""))
        if key not in self._reasons:
            self._reasons[key] = self._find_reason(title, f, code, pos, depth)
        return self._reasons[key]

    def _find_reason(self, title: str, f: Formula, code: str, pos: tuple[int, int] | None, depth: int) -> str:
        if (title, f.row, f.col) in self._calling:
            value, calls = self._record(title, f)
            item = value
            if pos is not None and type(value) is list:
                i, j = pos
                row = value[i] if i < len(value) else None
                item = row[j] if type(row) is list and j < len(row) else row if j == 0 else None
            if type(item) is dict:
                err = engine.cell_error(item)
                if err.code == code and err.message:
                    return err.message
            found = calls.at(pos, code) if pos is not None else calls.last(code)
            if found:
                return found
        text = self._text(title, f)
        if code == "#NAME?":
            unknown = engine.unknown_function(text)
            if unknown:
                return unknown
        if code == "#REF!":
            built = computed_range(text)
            if built is not None:
                return COMPUTED_RANGE.format(shown=built)
            for literal in re.findall(r'"((?:[^"]|"")*)"', text):
                literal = literal.replace('""', '"')
                threat = formula_threat(literal)
                if threat and threat.startswith("refers to another workbook"):
                    return f"refers to another workbook ({literal}), which xlsxplan never opens"
        if depth < 20:
            for ref in _references(text):
                source = self._first_error(ref, title, code)
                if source is not None:
                    src_title, r, c = source
                    inner = self._source_reason(src_title, r, c, code, depth)
                    where = f"{_quote_sheet(src_title)}!{col_letter(c)}{r}"
                    return f"passed on from {where}" + (f": {inner}" if inner else "")
        return engine.NATIVE_REASONS.get(code, "")

    def _source_reason(self, title: str, row: int, col: int, code: str, depth: int) -> str:
        if (title, row, col) in self._sets:
            value = self._sets[(title, row, col)]
            return value.message if isinstance(value, CellError) else ""
        f = self._formula_at(title, row, col)
        if f is None:
            return _TYPED
        if f.kind == "dataTable":
            return _DATA_TABLE
        pos = (row - f.row, col - f.col) if f.kind == "array" else None
        value = self._cell_value(title, row, col) if depth == 0 else None
        if isinstance(value, CellError) and value.message:
            return value.message
        return self._reason(title, f, code, pos, depth + 1)

    def _area(self, ref: str, title: str, depth: int = 0) -> tuple[str, int, int, int, int] | None:
        """What a reference in a formula on sheet ``title`` points to (a defined name's range, whole rows and
        columns over the rows and columns in use), or None."""
        sheet, target = _sheet_ref(ref)
        where = title
        if sheet is not None:
            try:
                where = self._pkg.worksheet(sheet).title
            except WorkbookError:
                return None
        try:
            return (where, *range_bounds(target))
        except WorkbookError:
            pass
        m = _WHOLE.match(target)
        if m and (m.group(1) or m.group(2)):
            stats = next((s for s in self._inspection.sheets if s.title == where), None)
            rows, cols = (stats.max_row, stats.max_col) if stats else (1, 1)
            c1, r1, c2, r2 = m.groups()
            if c1 and c2 and not r1 and not r2:  # A:C
                return (where, 1, col_index(c1), max(rows, 1), col_index(c2))
            if r1 and r2 and not c1 and not c2:  # 1:3
                return (where, int(r1), 1, int(r2), max(cols, 1))
            return None
        if depth < 5 and sheet is None:
            local = self._titles.index(title) if title in self._titles else None
            named = self._names_folded().get(target.casefold(), [])
            chosen = next((d for d in named if d.local_sheet == local), None) or next(
                (d for d in named if d.local_sheet is None), None
            )
            if chosen is not None:
                return self._area(chosen.text.strip().lstrip("="), title, depth + 1)
        return None

    def _names_folded(self) -> dict[str, list[Any]]:
        """The package's defined names by their casefolded name, in file order (names never change after loading)."""
        if self._names_by_fold is None:
            self._names_by_fold = {}
            for d in self._pkg.defined_names:
                self._names_by_fold.setdefault(d.name.casefold(), []).append(d)
        return self._names_by_fold

    def _first_error(self, ref: str, title: str, code: str) -> tuple[str, int, int] | None:
        """The first cell (in reading order) of what ``ref`` points to that holds the error ``code``."""
        area = self._area(ref, title)
        if area is None:
            return None
        sheet, r1, c1, r2, c2 = area
        if sheet not in self._index:
            return None
        cells = self._error_cells.get(sheet)
        if cells is None:  # sorted once per sheet until a cell is set: a reason's search reads it for every reference
            idx = self._index[sheet]
            candidates = set(self._formula_cells.get(sheet, ())) | set(idx.errors)
            candidates |= {(r, c) for (t, r, c) in self._sets if t == sheet}
            cells = self._error_cells[sheet] = sorted(candidates)
        for i in range(bisect.bisect_left(cells, (r1, 0)), len(cells)):
            r, c = cells[i]
            if r > r2:
                break
            if c1 <= c <= c2:
                value = self._cell_value(sheet, r, c) if (sheet, r, c) in self._sets else self._raw_error(sheet, r, c)
                if isinstance(value, CellError) and value.code == code:
                    return sheet, r, c
        return None

    def _raw_error(self, title: str, row: int, col: int) -> CellError | None:
        f = self._formula_at(title, row, col)
        if f is not None and f.kind == "dataTable":
            return CellError("#N/A")
        raw = self._book.get_value(title, row, col)
        return engine.cell_error(raw) if type(raw) is dict else None

    def _computed(self) -> dict[str, dict[tuple[int, int], Any]]:
        """The value of every formula cell, ``{title: {(row, col): value}}`` in sheet order, after any pending
        recalculation; read once per calculation and shared by :meth:`errors` and :meth:`save`."""
        self._fresh()
        if self._computed_cache is None:
            self._computed_cache = {
                title: {(r, c): self._cell_value(title, r, c) for r, c in positions}
                for title, positions in self._formula_cells.items()
            }
        return self._computed_cache

    @_collector_paused
    def errors(self) -> dict[str, CellError]:
        """Every cell whose value is an error, as ``{"Sheet!B4": CellError(code, reason)}``, in sheet order."""
        computed = self._computed()
        out: dict[str, CellError] = {}
        for title in self.sheetnames:
            found = {rc: v for rc, v in computed[title].items() if isinstance(v, CellError)}
            others = set(self._index[title].errors) | {(r, c) for (t, r, c) in self._sets if t == title}
            for r, c in others:  # typed error values, and inputs set to one
                if (r, c) not in computed[title] or (title, r, c) in self._sets:
                    value = self._cell_value(title, r, c)
                    if isinstance(value, CellError):
                        found[(r, c)] = value
                    else:
                        found.pop((r, c), None)
            for r, c in sorted(found):
                out[f"{_quote_sheet(title)}!{col_letter(c)}{r}"] = found[(r, c)]
        return out

    # -- saving -------------------------------------------------------------------------------------------------

    def _patches(self) -> dict[str, dict[tuple[int, int], Patch]]:
        parts = {s.title: s.part for s in self._pkg.sheets if s.kind == "worksheet"}
        out: dict[str, dict[tuple[int, int], Patch]] = {}
        for title, values in self._computed().items():
            if values:
                out[parts[title]] = {rc: Patch(value) for rc, value in values.items()}
        for (title, r, c), value in self._sets.items():
            quote = isinstance(value, str) and value.startswith(FORMULA_TRIGGERS)  # text that Excel would take for
            out.setdefault(parts[title], {})[(r, c)] = Patch(value, result=False, quote_prefix=quote)  # a formula
        return out

    def _notes(self) -> list[CommentEdit]:
        computed = self._computed()
        by_title: dict[str, dict[tuple[int, int], str]] = {}
        for title in self.sheetnames:
            notes = by_title[title] = {}
            for rc, value in computed[title].items():
                if len(notes) >= MAX_NOTES_PER_SHEET:
                    break
                if isinstance(value, CellError) and (title, *rc) not in self._sets:
                    notes[rc] = f"{value.code} {value.message}".strip()
        return [CommentEdit(s, by_title[s.title]) for s in self._pkg.sheets if s.kind == "worksheet"]

    @_collector_paused
    def save(self, path: Path | str, notes: bool = True, progress: Callable[[int, int], None] | None = None) -> Path:
        """Write the workbook with every formula kept and its computed value cached; returns the path.

        The file is written to a temporary file beside ``path`` and renamed over it, so an interrupted save leaves
        any earlier file intact. Every part of the original package is kept (styles, number formats, defined names,
        data validation, notes, charts, column widths, the ``xlwings.conf`` sheet, VBA); only cached values, the
        inputs set, and xlsxplan's own notes on error cells (``notes=False`` leaves notes alone) change.
        ``progress(done, total)`` is called as sheets are patched and parts written (``total``: both together).
        """
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in (".xlsx", ".xlsm", ".xltx", ".xltm"):
            raise WorkbookError(f"cannot write {path}: the name must end in {self.extension}")
        if suffix != self.extension:
            raise WorkbookError(
                f"cannot write {path}: this workbook is a {self.extension} file (by its content), so the output "
                f"must end in {self.extension} too, or Excel refuses to open it"
            )
        self._fresh()
        replaced: dict[str, bytes] = {}
        all_patches = self._patches()
        steps = [0, len(all_patches) + len(self._pkg.names)]

        def step() -> None:
            steps[0] += 1
            if progress is not None:
                progress(min(steps[0], steps[1]), steps[1])

        quoted = QuotePrefixStyles(self._pkg, replaced)
        for part, patches in all_patches.items():
            replaced[part] = patch_sheet(self._pkg.read(part), patches, quoted)
            step()
        quoted.finish()
        if notes:
            write_notes(self._pkg, replaced, self._notes())
        steps[1] = len(all_patches) + len(set(self._pkg.names) | set(replaced))
        from .patch import write_package

        atomic_write(path, lambda tmp: write_package(self._pkg, replaced, str(tmp), written=step))
        return path


def _runs(cells: Mapping[tuple[str, int, int], Any]) -> list[tuple[str, int, int, list[Any]]]:
    """``{(sheet, row, col): item}`` as runs of adjacent cells of a row, ``(sheet, row, first col, items)``."""
    out: list[tuple[str, int, int, list[Any]]] = []
    for (title, r, c), item in sorted(cells.items(), key=lambda kv: kv[0]):
        if out and out[-1][:2] == (title, r) and out[-1][2] + len(out[-1][3]) == c:
            out[-1][3].append(item)
        else:
            out.append((title, r, c, [item]))
    return out


def _same_kept(now: Any, kept: Any) -> bool:
    """Whether a value computed again for a kept cell is the value the file keeps there: a number within 1e-12
    relative (as the portable edition's Unchanged check compares), an error of the same code, else equal; an empty
    text kept reads back as an empty cell (openpyxl writes no value for it), so it matches an empty cell."""
    if now == "" and kept is None:
        return True
    if isinstance(now, CellError) or isinstance(kept, CellError):
        return isinstance(now, CellError) and isinstance(kept, CellError) and now.code == kept.code
    if isinstance(now, bool) or isinstance(kept, bool):
        return now is kept
    if isinstance(now, (int, float)) and isinstance(kept, (int, float)):
        return abs(now - kept) <= 1e-12 * abs(kept)
    return bool(now == kept)


def _read_frozen(inspection: Inspection, index: Mapping[str, SheetIndex], book: Any, limits: Limits) -> list[Frozen]:
    """A portable edition's blocks of values only Python computes, checked (:func:`.frozen.read_frozen`), their
    formulas' ranges within ``limits`` as a cell's are; [] for a workbook without them."""
    pkg = inspection.package
    if not any(d.name.lower().startswith(NAME_PREFIX) for d in pkg.defined_names):
        return []

    def formula(title: str, r: int, c: int) -> str | None:
        f = index[title].formulas.get((r, c)) if title in index else None
        return None if f is None else (f.text if f.text is not None else "(shared)")

    def value(title: str, r: int, c: int) -> Any:
        return book.get_value(title, r, c)

    blocks = read_frozen(pkg.defined_names, [s.title for s in pkg.sheets if s.kind == "worksheet"], value, formula)
    # each kept formula runs in each of its cells: its ranges count once a cell, as a cell formula's do (counted
    # once a formula, SUM(Inputs!A:XFD) kept for 2,425 cells would pass and run for minutes)
    texts: dict[str, list[str]] = {}
    places: dict[str, str] = {}
    for block in blocks:
        for text, cells, where, _ in block.formulas:
            for title, _, _ in cells:
                texts.setdefault(title, []).append(text)
            places.setdefault(text, where)
    check_ranges(inspection, texts, limits, places)
    return blocks


# ---------------------------------------------------------------------------------------------------------------
# What the engine is given


def _references(formula: str) -> list[str]:
    """The references and names a formula reads, in the order they appear (LET's and LAMBDA's own names aside)."""
    try:
        tree = fz.parse(formula)
    except BaseException as _err:
        if engine.fatal(_err):
            raise
        return []
    return engine.references(tree)


def _unwrapped(formula: str) -> str:
    """A formula the engine holds, without what :func:`_engine_text` put around it."""
    try:
        tree = fz.parse(formula)
    except BaseException as _err:
        if engine.fatal(_err):
            raise
        return formula
    if tree.node_type() == "UnaryOp" and tree.get_operator() == "@" and len(tree.children()) == 1:
        tree = tree.children()[0]
    elif tree.node_type() == "Function" and (tree.get_function_name() or "").upper() == engine.FIT:
        tree = tree.children()[-1]
    return tree.to_formula()


def _local_names(pkg: Package) -> dict[tuple[str, str], str]:
    """{(sheet title, name): what it refers to} for the names scoped to one sheet, upper-cased."""
    out = {}
    for d in pkg.defined_names:
        if d.local_sheet is not None and 0 <= d.local_sheet < len(pkg.sheets):
            out[(pkg.sheets[d.local_sheet].title.upper(), d.name.upper())] = d.text.strip().lstrip("=")
    return out


def _qualified_names(formula: str, local: Mapping[tuple[str, str], str]) -> str:
    """``formula`` with each sheet-qualified name scoped to that sheet (``Plan!Rate``) replaced by what it refers
    to, in parentheses: the engine reads ``Plan!Rate`` as an unknown name (#NAME?), Excel as the name."""
    if "!" not in formula or not local:
        return formula

    def change(part: str) -> str:
        def sub(m: re.Match[str]) -> str:
            sheet = m.group(1)[:-1]
            if sheet.startswith("'"):
                sheet = sheet[1:-1].replace("''", "'")
            target = local.get((sheet.upper(), m.group(2).upper()))
            return f"({target})" if target is not None else m.group(0)

        return _SHEET_NAME_REF.sub(sub, part)

    return engine.outside_quotes(formula, change)


THREE_D = frozenset(
    "SUM AVERAGE AVERAGEA COUNT COUNTA MAX MAXA MIN MINA PRODUCT STDEV STDEVA STDEVP STDEVPA STDEV.S STDEV.P VAR VARA "
    "VARP VARPA VAR.S VAR.P".split()
)
"""The functions Excel lets a reference through several sheets (``Jan:Dec!B4``) be an argument of."""


class _Static:
    """What rewriting references by hand needs: the worksheets in order, and where a defined name points."""

    def __init__(self, pkg: Package) -> None:
        self.titles = [s.title for s in pkg.sheets if s.kind == "worksheet"]
        self.folded = {t.casefold(): t for t in self.titles}
        self.names: dict[str, str] = {}
        self.formulas: Mapping[str, SheetIndex] = {}  # each sheet's formulas, for FORMULATEXT (set by the caller)
        self._masters: dict[str, dict[str, Formula]] = {}
        for d in pkg.defined_names:
            if d.local_sheet is None:
                self.names[d.name.upper()] = d.text.strip().lstrip("=")

    def text(self, sheet: str, f: Formula) -> str | None:
        """A formula's text as the file implies it: its own, or for a shared formula's later cell, its first
        cell's with the relative references moved as far as the cell is from it (:func:`_moved`)."""
        if f.text is not None or f.kind != "shared" or f.shared is None:
            return f.text
        masters = self._masters.get(sheet)
        if masters is None:
            idx = self.formulas.get(sheet)
            masters = self._masters[sheet] = {
                g.shared: g
                for g in (idx.formulas.values() if idx is not None else ())
                if g.kind == "shared" and g.text is not None and g.shared is not None
            }
        first = masters.get(f.shared)
        return None if first is None else _moved(first.text or "", f.row - first.row, f.col - first.col)

    def area(self, operand: str, sheet: str, depth: int = 0) -> tuple[str, int, int, int, int] | None:
        """The sheet and bounds a reference (``B4:C9``, ``'My sheet'!B4``) or a global name of one points to."""
        where, target = _sheet_ref(operand)
        title = sheet if where is None else self.folded.get(where.casefold())
        if title is None:
            return None
        try:
            return (title, *range_bounds(target))
        except WorkbookError:
            pass
        if where is None and depth < 3 and operand.upper() in self.names:
            return self.area(self.names[operand.upper()], sheet, depth + 1)
        return None


def _ref_text(title: str, r1: int, c1: int, r2: int, c2: int) -> str:
    first = f"{col_letter(c1)}{r1}"
    return f"{_quote_sheet(title)}!{first}" + ("" if (r1, c1) == (r2, c2) else f":{col_letter(c2)}{r2}")


def _static_references(formula: str, sheet: str, static: _Static) -> str:
    """``formula`` (with its ``=``) on ``sheet`` with what the engine cannot compute but Excel does written out,
    where the references alone fix it: the intersection of two references (``A1:A3 A2:A4``, ``Jan Revenue`` with
    names) as the range they share (``#NULL!`` if none), and a reference through several sheets (``Jan:Dec!B4``)
    given to SUM, AVERAGE, COUNT, MAX, MIN and the other functions Excel lets it be an argument of, as one argument
    per sheet."""
    code = engine.code_text(formula)
    three_d = ":" in code and "!" in code
    if " " not in code and not three_d:
        return formula
    tokens = engine.tokenized(formula)
    if tokens is None:
        return formula
    raw = formula.encode("utf-8")
    edits: list[tuple[int, int, str]] = []
    kinds = [(str(t.token_type), str(t.subtype)) for t in tokens]
    operand = ("Operand", "Range")
    i = 0
    while i + 2 < len(tokens):
        if (
            kinds[i] == operand
            and kinds[i + 2] == operand
            and kinds[i + 1][0] in ("OpInfix", "Whitespace")
            and (tokens[i + 1].value.strip() == "")
        ):
            a, b = static.area(tokens[i].value, sheet), static.area(tokens[i + 2].value, sheet)
            if a is not None and b is not None and a[0] == b[0]:
                r1, c1 = max(a[1], b[1]), max(a[2], b[2])
                r2, c2 = min(a[3], b[3]), min(a[4], b[4])
                text = _ref_text(a[0], r1, c1, r2, c2) if r1 <= r2 and c1 <= c2 else "#NULL!"
                edits.append((tokens[i].start, tokens[i + 2].end, text))
                i += 3
                continue
        i += 1
    if three_d:
        stack: list[str] = []
        for k, tok in enumerate(tokens):
            kind = kinds[k]
            if kind == ("Func", "Open"):
                stack.append(tok.value[:-1].strip().upper().removeprefix("_XLFN."))
            elif kind[0] in ("Paren", "Array") and kind[1] == "Open":
                stack.append("")
            elif kind[1] == "Close" and kind[0] in ("Func", "Paren", "Array") and stack:
                stack.pop()
            elif kind == operand and stack and stack[-1] in THREE_D:
                before = next((kinds[j] for j in range(k - 1, -1, -1) if kinds[j][0] != "Whitespace"), None)
                after = next((kinds[j] for j in range(k + 1, len(kinds)) if kinds[j][0] != "Whitespace"), None)
                if before in (("Func", "Open"), ("Sep", "Arg")) and after in (("Func", "Close"), ("Sep", "Arg")):
                    spread = _through_sheets(tok.value, static)
                    if spread is not None:
                        edits.append((tok.start, tok.end, spread))
    if not edits:
        return formula
    out, last = [], 0
    for start, end, text in sorted(edits):
        if start < last:
            continue
        out += [raw[last:start], text.encode("utf-8")]
        last = end
    out.append(raw[last:])
    return b"".join(out).decode("utf-8")


def _through_sheets(operand: str, static: _Static) -> str | None:
    """``Jan:Mar!B4`` as ``Jan!B4,Feb!B4,Mar!B4`` (the worksheets from the first to the last, in workbook order)."""
    sheets, bang, ref = operand.rpartition("!")
    if not bang:
        return None
    if sheets.startswith("'") and sheets.endswith("'"):
        sheets = sheets[1:-1].replace("''", "'")
    first, colon, last = sheets.partition(":")
    if not colon:
        return None
    a, b = static.folded.get(first.strip().casefold()), static.folded.get(last.strip().casefold())
    try:
        range_bounds(ref.replace("$", ""))
    except WorkbookError:
        return None
    if a is None or b is None:
        return None
    i, j = sorted((static.titles.index(a), static.titles.index(b)))
    return ",".join(f"{_quote_sheet(t)}!{ref}" for t in static.titles[i : j + 1])


def _engine_text(
    f: Formula,
    local: Mapping[tuple[str, str], str],
    multi: Callable[[str], bool] | None,
    sheet: str = "",
    static: _Static | None = None,
) -> tuple[str | None, bool]:
    """What the engine is given for the formula ``f`` (see the module's docstring), and whether it calls a registry
    function; (None, ...) to leave it as it is."""
    text = f.text
    if not text or not text.strip():
        return None, False
    written = "=" + _qualified_names(text, local)
    if static is not None:
        written = _static_references(written, sheet, static)
        upper = written.upper() if static.formulas and f.kind != "shared" else ""  # a literal would not shift
        if "FORMULATEXT" in upper or "ISFORMULA" in upper:
            written = _formula_texts(written, sheet, static)
    if f.kind != "array":
        written = intersect(written, multi)
    new, calling = engine.prepare(written, multi)
    if f.kind == "array":
        new = _fitted(new[1:], f)
    else:  # one value, as Excel reads a formula not entered as an array: implicit intersection, unless it is one
        new = new[1:] if calling and engine.one_value_call(new) else f"@({new[1:]})"
    return (new if new != text else None), calling


_FORMULATEXT = re.compile(
    r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?FORMULATEXT\(\s*((?:'(?:[^']|'')+'|[A-Za-z0-9_.]+)!)?"
    r"(\$?[A-Za-z]{1,3}\$?\d{1,7})(?::\$?[A-Za-z]{1,3}\$?\d{1,7})?\s*\)",
    re.IGNORECASE,
)
_READS_FORMULAS = re.compile(r"FORMULATEXT|ISFORMULA", re.IGNORECASE)
_ISFORMULA = re.compile(
    r"(?<![A-Za-z0-9_.])(?:_xlfn\.)?ISFORMULA\(\s*((?:'(?:[^']|'')+'|[A-Za-z0-9_.]+)!)?(\$?[A-Za-z]{1,3}\$?\d{1,7})\s*\)",
    re.IGNORECASE,
)
_XLFN = re.compile(r"(?<![A-Za-z0-9_.])_xlfn\.(?:_xlws\.)?", re.IGNORECASE)
_SINGLE = re.compile(r"(?<![A-Za-z0-9_.])_xlfn\.SINGLE\((?:([$A-Za-z0-9_.!:']+)\))?", re.IGNORECASE)


def _at(m: re.Match[str]) -> str:
    """Excel's ``@`` for its stored ``_xlfn.SINGLE(``: ``@A1:A3`` around a reference or name, else ``@(``."""
    return "@" + m.group(1) if m.group(1) else "@("


def _formula_texts(formula: str, sheet: str, static: _Static) -> str:
    """``formula`` with each ``FORMULATEXT`` of a cell (or a range: its first cell) that holds a formula of its own
    replaced by that formula's text as Excel shows it (``=`` and the text the file stores, without the ``_xlfn.``
    prefixes): the engine would show its own rewrite of it; and each ``ISFORMULA`` of one cell by TRUE or FALSE,
    whether the file holds a formula there (a cell of an array formula's range counts, as in Excel): the engine
    gives FALSE for every cell (formualizer 0.13). Other arguments are left to the engine."""

    def cell(m: re.Match[str]) -> tuple[str | None, SheetIndex | None, int, int]:
        title = _sheet_title(m.group(1), static) if m.group(1) else sheet
        idx = static.formulas.get(title) if title else None
        row, col = split_ref(m.group(2).replace("$", ""))
        return title, idx, row, col

    def text(m: re.Match[str]) -> str:
        title, idx, row, col = cell(m)
        f = idx.formulas.get((row, col)) if idx is not None else None
        written = static.text(title, f) if title is not None and f is not None else None
        if f is None or not written or f.kind in ("array", "dataTable"):
            return m.group(0)
        shown = "=" + engine.outside_quotes(written, lambda code: _XLFN.sub("", _SINGLE.sub(_at, code)))
        return '"' + shown.replace('"', '""') + '"'

    def holds(m: re.Match[str]) -> str:
        _, idx, row, col = cell(m)
        if idx is None:
            return m.group(0)
        spanned = any(r1 <= row <= r2 and c1 <= col <= c2 for r1, c1, r2, c2 in (f.area for f in idx.arrays if f.area))
        return "TRUE" if (row, col) in idx.formulas or spanned else "FALSE"

    def change(part: str) -> str:
        return _ISFORMULA.sub(holds, _FORMULATEXT.sub(text, part))

    return engine.outside_quotes(formula, change)


def _sheet_title(where: str, static: _Static) -> str | None:
    """The sheet a reference's ``Sheet!`` or ``'My sheet'!`` names, as the workbook spells it; None if none."""
    return static.folded.get(where[:-1].strip("'").replace("''", "'").casefold())


def _moved(formula: str, rows: int, cols: int) -> str:
    """``formula`` as Excel derives a shared formula's later cell from its first: each relative cell reference
    (outside text literals; ``$`` fixes a row or a column) moved ``rows`` down and ``cols`` across."""

    def move(m: re.Match[str]) -> str:
        dollar_c, letters, dollar_r, digits = m.groups()
        col = letters if dollar_c else col_letter(_column_number(letters) + cols)
        return f"{dollar_c}{col}{dollar_r}{digits if dollar_r else int(digits) + rows}"

    return engine.outside_quotes(formula, lambda part: _CELL_REF.sub(move, part))


def _fitted(text: str, f: Formula) -> str:
    """An array formula's text given to :func:`.engine.fit_array` for its range (for its first tile, when the range
    is computed in tiles: :func:`_tiles`)."""
    r1, c1, r2, c2 = f.area or (f.row, f.col, f.row, f.col)
    rows, cols = r2 - r1 + 1, c2 - c1 + 1
    if rows * cols <= engine.SPILL_CAP:
        return f"{engine.FIT}({rows},{cols},{text})"
    r0, c0, nr, nc = engine.array_tiles(rows, cols)[0]
    return f"{engine.FIT}({rows},{cols},{r0},{c0},{nr},{nc},{text})"


def _tiles(text: str, f: Formula) -> list[tuple[int, int, str]]:
    """The cells (row, column) and formulas of an array formula's tiles after its first, for a range of more cells
    than the engine spills one result into: each tile computes the formula and fills its own block of the range,
    so a range of any size computes (``text``: the formula as the engine is given it, without ``=``)."""
    r1, c1, r2, c2 = f.area or (f.row, f.col, f.row, f.col)
    rows, cols = r2 - r1 + 1, c2 - c1 + 1
    return [
        (r1 + r0, c1 + c0, f"={engine.FIT}({rows},{cols},{r0},{c0},{nr},{nc},{text})")
        for r0, c0, nr, nc in engine.array_tiles(rows, cols)[1:]
    ]


def _names_calling_registry(pkg: Package) -> re.Pattern | None:
    """A pattern for the defined names whose formulas call a registry function: a cell that reads one makes
    registry calls of its own, and is wrapped in the hook for them."""
    calling = [d.name for d in pkg.defined_names if engine.calls_registry(d.text)]
    if not calling:
        return None
    names = "|".join(sorted(map(re.escape, set(calling)), key=len, reverse=True))
    return re.compile(rf"(?<![A-Za-z0-9_.!])(?:{names})(?![A-Za-z0-9_.(])", re.IGNORECASE)


def _engine_package(
    pkg: Package, index: Mapping[str, SheetIndex]
) -> tuple[bytes, set[tuple[str, int, int]], int, list[tuple[str, int, int, str]], list[columns.Column]]:
    """The package as the engine is given it (sheet parts with their formulas rewritten, stored uncompressed), the
    formula cells that call registry functions (themselves or through a defined name), the registry calls the
    formulas write (shared formulas counted for each of their cells), the formulas (sheet, row, column, text) set
    in the engine's book once it is loaded (the tiles that array formulas over more cells than the engine spills
    compute in after their first, :func:`_tiles`, and each cell of a shared formula that reads a cell's formula,
    given its own), and the columns of one registry formula computed as arrays (:mod:`.columns`), whose formulas the
    engine is not given."""
    local = _local_names(pkg)
    static = _Static(pkg)
    static.formulas = index
    names_calling = _names_calling_registry(pkg)
    ranges = {d.name.upper() for d in pkg.defined_names if ":" in d.text}
    multi = (lambda operand: operand.upper() in ranges) if ranges else None
    parts: dict[str, bytes] = {}
    calling: set[tuple[str, int, int]] = set()
    calls = 0
    tiles: list[tuple[str, int, int, str]] = []
    found: list[columns.Column] = []
    for sheet in (s for s in pkg.sheets if s.kind == "worksheet"):
        idx = index[sheet.title]
        if not idx.formulas:
            release(idx)
            continue
        texts: dict[tuple[int, int], str] = {}
        shared: dict[str, bool] = {}
        # the same text on the same sheet is rewritten the same way (a column of one formula, a table's cells):
        # rewritten once (an array formula's rewrite also depends on its range)
        seen: dict[tuple[object, ...], tuple[str | None, bool, int]] = {}
        # a column of one formula whose rows differ only by their relative references (=F(A2), =F(A3), ...) has as
        # many texts as rows: rewritten once per R1C1-relative form (_Shapes), each row's references put back in
        shapes = _Shapes()
        title = sheet.title
        # the formulas given as written that call a registry function, by shape: a column's candidates
        alike: dict[str, list[tuple[int, int]]] = {}
        # shared formulas that read a cell's formula (FORMULATEXT, ISFORMULA: rewritten by the cell they read, which
        # moves from cell to cell): each cell is given its own formula once the engine has loaded the sheet
        reading: set[str] = set()
        for rc, f in idx.formulas.items():
            kind = f.kind
            if kind == "shared" and f.shared is not None:
                if f.text is not None and _READS_FORMULAS.search(f.text):
                    reading.add(f.shared)
                if f.shared in reading:
                    own = Formula(f.row, f.col, static.text(title, f), "")
                    written = _engine_text(own, local, multi, title, static)[0] or own.text
                    tiles.append((title, f.row, f.col, "=" + (written or "")))
            key = (f.text, kind, (f.area, f.row, f.col) if kind == "array" else None)
            hit = seen.get(key)
            if hit is None:
                shaped = shapes.shape(f, rc)
                hit = shapes.get(shaped)
                if hit is None:
                    new, calls_registry = _engine_text(f, local, multi, title, static)
                    if not calls_registry and names_calling is not None and f.text:
                        calls_registry = names_calling.search(engine.code_text(f.text)) is not None
                    n_calls = max(1, len(engine.function_calls(f.text))) if f.text and calls_registry else 1
                    hit = (new, calls_registry, n_calls)
                    shapes.learn(shaped, hit)
                    seen[key] = hit  # (a template's rewrite is not kept: its text is its row's own)
                if shaped is not None and hit[0] is None and hit[1] and kind == "":
                    alike.setdefault(shaped[0], []).append(rc)
            new, calls_registry, n_calls = hit
            if kind == "shared" and f.shared is not None:
                if f.text is not None:
                    shared[f.shared] = calls_registry
                else:
                    calls_registry = shared.get(f.shared, False)
            if calls_registry:
                calling.add((title, *rc))
                calls += n_calls if f.text else 1
            if new is not None:
                texts[rc] = new
                if kind == "array" and f.area is not None and new.startswith(engine.FIT):
                    r1, c1, r2, c2 = f.area
                    if (r2 - r1 + 1) * (c2 - c1 + 1) > engine.SPILL_CAP:  # past the engine's spill cap: in tiles
                        inner = new[len(_fitted("", f)) - 1 : -1]  # the formula inside the first tile's FIT
                        tiles += [(sheet.title, *tile) for tile in _tiles(inner, f)]
        blank: list[tuple[tuple[int, int], str]] = []
        computed: set[tuple[int, int]] | None = None
        for shape, group in alike.items():
            if len(group) < columns.MIN_CELLS:
                continue
            if computed is None:
                computed = _computed_cells(idx)
            column = columns.find(title, idx, group, _Shapes.references(shape), computed)
            if column is not None:
                found.append(column)
                blank += columns.blank_edits(idx, column)
        parts[sheet.part] = engine_copy(idx, texts, pkg.read(sheet.part), blank)
    if pkg.defined_names and pkg.workbook_part:
        names = _ordered_names(pkg.read(pkg.workbook_part))
        if names is not None:
            parts[pkg.workbook_part] = names
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zout:
        for info in pkg.zip.infolist():
            if not info.is_dir():
                with zout.open(info.filename, "w") as member:
                    member.write(parts.get(info.filename) or pkg.read(info.filename))
    for idx in index.values():
        release(idx)
    return buf.getvalue(), calling, calls, tiles, found


def _computed_cells(idx: SheetIndex) -> set[tuple[int, int]]:
    """The cells of a sheet whose value a formula gives: its formula cells and the cells of its array ranges."""
    out = set(idx.formulas)
    for f in idx.formulas.values():
        if f.kind in SPANNING and f.area is not None:
            r1, c1, r2, c2 = f.area
            out.update((r, c) for r in range(r1, r2 + 1) for c in range(c1, c2 + 1))
    return out


_CELL_REF = re.compile(r"(?<![A-Za-z0-9_.\\])(\$?)([A-Za-z]{1,3})(\$?)([0-9]{1,7})(?![A-Za-z0-9_.(\\])")
"""A cell reference (``B7``, ``$B$7``) standing alone in a formula: not part of a name, a function or a number."""
_NOT_SHAPED = re.compile(r"""["'!:|\\\[\]{}#\s]""")
"""What keeps a formula out of :class:`_Shapes`: text literals, sheets, ranges, table or external references, array
constants, spill references, intersections (a space), and FORMULATEXT and ISFORMULA (whose rewrites read the cell
referred to, tested apart: a character class alone is searched at a third of the cost of one with a word in any
case)."""


_SHAPED_REFERENCE = re.compile("\0([^\1]*)\1([^\2]*)\2")
"""A reference in a :meth:`_Shapes.shape`: its column and its row, each an offset or ``$`` and its absolute form."""


class _Shapes:
    """The engine's text of a plain or shared formula from an earlier one of the same R1C1-relative form.

    Two formulas of one sheet have the same shape when they differ only in their relative cell references, each
    at the same offset from its own cell (``=F(A2)`` in B2 and ``=F(A3)`` in B3). The formulas taken in are only
    single-cell references and function calls (no ranges, sheets, text or intersections, :data:`_NOT_SHAPED`), and
    the rewrite (:func:`_engine_text`) reads such references as opaque operands: it keeps each where it stands. So
    the first formula's rewrite, cut at its references, is a template for every formula of its shape, filled with
    that formula's own references. A template is used only when the rewrite holds the same references in the same
    order as the formula, and only once the second formula of its shape, rewritten in full, gave the text the
    template gives; a shape where it did not is rewritten formula by formula. A formula given to the engine as
    written (its rewrite None: a call of one value, :func:`.engine.one_value_call`) makes its shape's template
    "as written", under the same check.

    A column of formulas of one relative reference each (the sweep's ``=F(A2)``, ``=F(A3)``, ...) is shaped once:
    the text of the next row's formula, its reference one row down, is foretold, and a formula whose text is that
    one, in that row, has the shape of the one above and that reference, without splitting its text again. (Only
    the reference's row number differs between the two texts, so the pattern finds the same reference in the same
    place: the characters on either side of it are the same, and a row up to :data:`MAX_ROW` has at most seven
    digits, as the pattern reads.)"""

    def __init__(self) -> None:
        self._templates: dict[str, tuple[list[str] | None, tuple[str | None, bool, int]] | None] = {}
        self._checked: set[str] = set()
        self._cols: dict[str, int] = {}
        # per column: the next row, the text foretold for it, its kind, its shape, its reference, and the pieces of
        # that text (the text before the reference, the reference's column letters and row, the text after it)
        self._ahead: dict[int, tuple[int, str, str, str, str, str, str, int, str]] = {}

    def shape(self, f: Formula, rc: tuple[int, int]) -> tuple[str, list[str]] | None:
        """The R1C1-relative form of ``f`` at ``rc`` and its references as written, or None if it has none."""
        text = f.text
        row, col = rc
        ahead = self._ahead.get(col)
        if ahead is not None and ahead[0] == row and ahead[1] == text and ahead[2] == f.kind:
            _, _, kind, key, ref, before, letters, r, after = ahead
            self._foretell(col, row, kind, key, before, letters, r, after)
            return key, [ref]
        if not text or f.kind not in ("", "shared") or _NOT_SHAPED.search(text) or "formula" in text.lower():
            return None  # (FORMULATEXT and ISFORMULA are rewritten by the cell they read, not by their shape)
        parts = _CELL_REF.split(text)  # text, then per reference its 4 groups and the text after it
        if len(parts) == 1:
            return None
        cols = self._cols
        if len(parts) == 6 and not parts[1] and not parts[3]:  # one relative reference, as a sweep's formulas have
            c = cols.get(parts[2])
            if c is None:
                c = cols[parts[2]] = _column_number(parts[2])
            r = int(parts[4])
            key = f"{f.kind}\3{parts[0]}\0{c - col}\1{r - row}\2{parts[5]}"
            self._foretell(col, row, f.kind, key, parts[0], parts[2], r, parts[5])
            return key, [parts[2] + parts[4]]  # as the loop below makes them
        refs = []
        for i in range(1, len(parts), 5):
            dollar_c, letters, dollar_r, digits = parts[i : i + 4]
            refs.append(dollar_c + letters + dollar_r + digits)
            if dollar_c:
                across = dollar_c + letters
            else:
                c = cols.get(letters)
                if c is None:
                    c = cols[letters] = _column_number(letters)
                across = str(c - col)
            parts[i : i + 4] = "\0", across, "\1", (dollar_r + digits if dollar_r else str(int(digits) - row)) + "\2"
        return f.kind + "\3" + "".join(parts), refs

    @staticmethod
    def references(key: str) -> list[tuple[bool, int, bool, int]]:
        """The references of a :meth:`shape`, in order: per reference, whether its column is absolute and the column
        (absolute) or its offset from the formula's column, and the same of its row."""
        out = []
        for across, down in _SHAPED_REFERENCE.findall(key):
            fixed_col, fixed_row = across.startswith("$"), down.startswith("$")
            col = _column_number(across[1:]) if fixed_col else int(across)
            out.append((fixed_col, col, fixed_row, int(down[1:]) if fixed_row else int(down)))
        return out

    def _foretell(self, col: int, row: int, kind: str, key: str, before: str, letters: str, r: int, after: str) -> None:
        """Foretell the formula in column ``col`` below ``row``: ``before``, the reference ``letters`` ``r`` one row
        down, ``after``; of ``kind``, and of the shape ``key`` (the shape of the formula in ``row``)."""
        if r < MAX_ROW:
            ref = f"{letters}{r + 1}"
            self._ahead[col] = (row + 1, before + ref + after, kind, key, ref, before, letters, r + 1, after)
        else:
            self._ahead.pop(col, None)

    def get(self, shaped: tuple[str, list[str]] | None) -> tuple[str | None, bool, int] | None:
        """The rewrite of a formula of this :meth:`shape` from its template, or None to rewrite it in full."""
        if shaped is None:
            return None
        key, refs = shaped
        template = self._templates.get(key)
        if template is None or key not in self._checked:
            return None
        cut, (_, calls_registry, n_calls) = template
        return (None if cut is None else _fill(cut, refs)), calls_registry, n_calls

    def learn(self, shaped: tuple[str, list[str]] | None, rewritten: tuple[str | None, bool, int]) -> None:
        """Take in the full rewrite of a formula of this :meth:`shape`: its template, or the check of one."""
        if shaped is None:
            return
        key, refs = shaped
        if key in self._templates:
            template = self._templates[key]
            if template is not None and key not in self._checked:
                cut, first = template
                same = rewritten[0] is None if cut is None else _fill(cut, refs) == rewritten[0]
                if same and first[1:] == rewritten[1:]:
                    self._checked.add(key)
                else:
                    self._templates[key] = None  # the rewrite depends on more than the shape: never a template
            return
        new = rewritten[0]
        if new is None:  # given as written: so is every formula of the shape, once the second one shows it
            self._templates[key] = (None, rewritten)
            return
        found = list(_CELL_REF.finditer(new))
        if [m.group(0) for m in found] != refs:
            self._templates[key] = None
            return
        cut, last = [], 0
        for m in found:
            cut.append(new[last : m.start()])
            last = m.end()
        cut.append(new[last:])
        self._templates[key] = (cut, rewritten)


def _fill(cut: list[str], refs: list[str]) -> str:
    """A template's pieces with ``refs`` between them."""
    if len(cut) == 2:  # one reference
        return cut[0] + refs[0] + cut[1]
    out = [cut[0]]
    for ref, piece in zip(refs, cut[1:]):
        out.append(ref)
        out.append(piece)
    return "".join(out)


def _column_number(letters: str) -> int:
    """``A`` -> 1, ``XFD`` -> 16384."""
    n = 0
    for ch in letters.upper():
        n = n * 26 + ord(ch) - 64
    return n


_DEFINED_NAME = re.compile(rb"(<(?:\w+:)?definedName\b[^>]*>)([^<]*)(</(?:\w+:)?definedName\s*>)")


def _ordered_names(xml: bytes) -> bytes | None:
    """The workbook part with each defined name's reversed ranges and chains of ranges written as Excel reads them
    (:func:`.references.ordered`; the engine leaves a name it cannot read undefined: ``#NAME?``), or None if no
    name needs it."""
    import html

    changed = False

    def edit(m: re.Match[bytes]) -> bytes:
        nonlocal changed
        text = html.unescape(m.group(2).decode("utf-8"))
        new = ordered_ranges("=" + text.lstrip("="))[1:]
        if new == text.lstrip("="):
            return m.group(0)
        changed = True
        escaped = new.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        return m.group(1) + escaped.encode("utf-8") + m.group(3)

    out = _DEFINED_NAME.sub(edit, xml)
    return out if changed else None


def default_output(source: Path | str) -> Path:
    """Where ``xlsxplan recalc BOOK.xlsx`` writes without ``-o``: ``BOOK.recalc.xlsx`` beside the input."""
    source = Path(source)
    return source.with_name(f"{source.stem}.recalc{source.suffix}")


def recalc(
    src: Path | str,
    out: Path | str | None = None,
    sets: Mapping[str, Any] | None = None,
    limits: Limits | None = None,
) -> Workbook:
    """Load ``src``, set ``sets`` ({cell or name: value}), calculate, refresh a portable edition's values only
    Python computes where their inputs changed (:meth:`Workbook.refresh_frozen`), as ``xlsxplan recalc`` does, and
    save to ``out``; returns the Workbook.

    ``out`` defaults to :func:`default_output` (``BOOK.recalc.xlsx``); the input is overwritten only when ``out``
    names it.
    """
    wb = Workbook.load(src, limits=limits)
    for ref, value in (sets or {}).items():
        wb.set(ref, value)
    wb.calculate()
    wb.refresh_frozen()
    wb.save(out if out is not None else default_output(src))
    return wb
