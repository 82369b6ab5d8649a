"""Headless recalculation of a whole workbook: load once, set inputs, calculate, read, save with cached values.

:class:`Workbook` loads a file through the checks of :mod:`xlsxplan.headless.untrusted`, builds the ``formulas`` model
once (the expensive part: 1.5 to 5 ms per formula cell), and then recalculates as often as needed with inputs changed
by cell or defined name. :meth:`Workbook.save` writes the original package back with every formula kept and its
computed value cached beside it, so Excel, LibreOffice, file previewers and ``openpyxl(data_only=True)`` all show
the numbers (see :mod:`xlsxplan.headless.patch` for how the file is edited without a lossy round trip).

Errors stay in their cells: a formula that fails becomes its Excel error value, with the one-line reason from
the registry (or from the engine) in :meth:`Workbook.errors`, in :meth:`Workbook.get`, and in the saved file as a
note authored ``xlsxplan`` on the cell. One bad cell never stops the others.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import gc
import logging
import math
import re
import threading
import types
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import EXCEL_ERRORS, CellError, WorkbookError
from ..fileio import atomic_write
from ..text import FORMULA_TRIGGERS, clean_text
from ..zipfiles import require_defusedxml
from . import engine
from .package import MAX_ROW, Package, closest, col_letter, range_bounds
from .patch import CommentEdit, Patch, QuotePrefixStyles, patch_sheet, write_notes
from .untrusted import Inspection, Limits, formula_threat, open_package

BYTES_PER_REFERENCED_CELL = 800
"""Memory formulas spends per cell of a range a formula refers to (``SUM(A:A)``: about 0.7 GB measured)."""

__all__ = ["Workbook", "recalc", "default_output", "parse_value", "MAX_NOTES_PER_SHEET"]

BOOK_NAME = "BOOK.xlsx"  # the name the formulas model knows the workbook by, whatever the file is called
_BOOK_KEY = BOOK_NAME.upper()
MAX_NOTES_PER_SHEET = 200
"""Error notes written per sheet; further error cells are reported by :meth:`Workbook.errors` only."""

_NO_VALUE = CellError(
    "#REF!", "no value: the formula is part of a circular reference, or depends on a cell that could not be calculated"
)
_load_lock = threading.RLock()


# ---------------------------------------------------------------------------------------------------------------
# Values between Python, formulas and cells


def _plain(value: Any) -> Any:
    """A formulas value as a plain Python value: number, text, bool, None (empty) or CellError."""
    import schedula as sh
    from formulas.tokens.operand import XlError

    if isinstance(value, np.ndarray):
        value = value.item() if value.size == 1 else value.flat[0]
    if value is sh.EMPTY:
        return None
    if isinstance(value, XlError):
        return CellError(str(value)) if str(value) in EXCEL_ERRORS else CellError("#VALUE!")
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return CellError("#NUM!", "the result is not a finite number")
    return value


def _constant(value: Any, data_type: str) -> Any:
    """A constant cell as openpyxl read it (value, data type), as the model would hold it: see Model.push."""
    if data_type == "e":
        code = str(value).strip().upper()
        return CellError(
            code if code in EXCEL_ERRORS else "#VALUE!", "the cell holds this error value (typed, not calculated)"
        )
    if isinstance(value, float):
        if not math.isfinite(value):
            return CellError("#NUM!", "the result is not a finite number")
        return round(value, 15)  # as formulas reads a number cell
    return value


def _to_formulas(value: Any) -> Any:
    import schedula as sh
    from formulas.tokens.operand import Error

    if value is None:
        return [[sh.EMPTY]]
    if isinstance(value, CellError):
        return Error.errors.get(value.code, Error.errors["#VALUE!"])
    return value


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
    if isinstance(value, np.generic):
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


# ---------------------------------------------------------------------------------------------------------------
# The formulas model, loaded safely


def _sparse_cells_by_row(self: Any, min_col: int, min_row: int, max_col: int, max_row: int, values_only: bool = False):
    """openpyxl's ``_cells_by_row`` without creating the empty cells of the bounding box.

    ``formulas`` walks ``ws.iter_rows()``, which creates a cell object for every position between A1 and the last
    used cell: one value typed in XFD1048576 would mean 17 billion cells. Empty cells add nothing to the model, so
    only stored cells with a value are visited.
    """
    index = self.__dict__.get("_xlsxplan_rows")
    if index is None:
        rows: dict[int, list[int]] = {}
        for (r, c), cell in self._cells.items():
            if cell.value is not None:
                rows.setdefault(r, []).append(c)
        index = (sorted(rows), {r: sorted(cs) for r, cs in rows.items()})
        self.__dict__["_xlsxplan_rows"] = index
    row_list, cols_by_row = index
    lo, hi = bisect.bisect_left(row_list, min_row), bisect.bisect_right(row_list, max_row)
    for r in row_list[lo:hi]:
        cols = cols_by_row[r]
        i, j = bisect.bisect_left(cols, min_col), bisect.bisect_right(cols, max_col)
        if i < j:
            cells = tuple(self._cells[(r, c)] for c in cols[i:j])
            yield tuple(c.value for c in cells) if values_only else cells


class _LogCapture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record.getMessage().splitlines()[0] if record.getMessage() else "")


@contextlib.contextmanager
def _quiet_engine() -> Iterator[_LogCapture]:
    """Keep formulas' own progress bar and schedula's tracebacks off the user's terminal; capture them instead."""
    import formulas.excel as fx
    import tqdm as tqdm_module

    capture = _LogCapture()
    loggers = [logging.getLogger(n) for n in ("schedula", "formulas")]
    saved = [(lg, lg.level, lg.propagate) for lg in loggers]
    quiet = types.SimpleNamespace(tqdm=lambda *a, **k: tqdm_module.tqdm(*a, **{**k, "disable": True}))
    with _load_lock, warnings.catch_warnings():
        # openpyxl warns about parts it cannot keep (sparklines, slicers...); xlsxplan never saves through it
        warnings.filterwarnings("ignore", category=UserWarning, module=r"openpyxl\.")
        original = fx.tqdm
        fx.tqdm = quiet
        for lg in loggers:
            lg.addHandler(capture)
            lg.setLevel(logging.WARNING)
            lg.propagate = False
        try:
            yield capture
        finally:
            fx.tqdm = original
            for lg, level, propagate in saved:
                lg.removeHandler(capture)
                lg.setLevel(level)
                lg.propagate = propagate


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for the block, then restore it as it was.

    Loading a workbook builds tens of thousands of small linked objects (a `formulas` cell and its schedula nodes
    and edges per cell), and each collection of the oldest generation walks all of them again: about a quarter of
    a template's load and calculation (BENCHMARKS.md, "Template recalculation"). Nothing is freed late by waiting:
    the model lives as long as the Workbook. Used inside :meth:`Workbook.load` and :meth:`Workbook.calculate`, so
    the caller's collector is back as it was when they return.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _collector_paused(method: Callable[..., Any]) -> Callable[..., Any]:
    """Run a Workbook method with the cyclic garbage collector paused (:func:`gc_paused`).

    Reading values allocates an array per cell, and with the model's objects alive each collection of the oldest
    generation walks all of them: reading a 1,000-row sheet's 5,000 results took 1.9 s with the collector on and
    0.3 s paused; saving it, 2.1 s and 0.5 s.
    """

    @functools.wraps(method)
    def paused(*args: Any, **kwargs: Any) -> Any:
        with gc_paused():
            return method(*args, **kwargs)

    return paused


def _model_class() -> type:
    import formulas
    import schedula as sh
    from formulas.cell import Cell

    class Model(formulas.ExcelModel):
        """An ExcelModel that reads only the one workbook, survives bad cells and refuses DDE/external formulas."""

        def __init__(self, sheet_alias: Mapping[str, str], titles: Mapping[str, str], tick: Callable[[int], None]):
            super().__init__()
            self.alias = dict(sheet_alias)  # title with an apostrophe -> its stand-in
            self.titles = dict(titles)  # formulas' upper-case sheet name -> the title
            self.tick = tick
            self.problems: dict[str, CellError] = {}
            self.formula_text: dict[str, str] = {}
            self.compile_messages: dict[str, engine.Messages] = {}  # constant parts are evaluated while compiling
            self.constants: dict[tuple[str, int, int], tuple[Any, str]] = {}  # (sheet, row, col): (value, type)

        def add_book(self, book: Any = None, context: Any = None, data_only: bool = False) -> Any:
            if isinstance(book, str) and book.replace("\\", "/").upper() != _BOOK_KEY:
                raise WorkbookError(f"a formula refers to another workbook ({book}); xlsxplan never opens it")
            return super().add_book(book, context, data_only)

        def _rewrite(self, text: str) -> str:
            for title, alias in self.alias.items():
                quoted = "'" + title.replace("'", "''") + "'!"
                text = re.sub(re.escape(quoted), lambda _m, a=alias: f"'{a}'!", text, flags=re.I)
            return text

        def push(self, worksheet: Any, context: Any) -> Any:
            """formulas' ``push`` of a worksheet, compiling its formula cells only.

            A constant cell (a label, a unit, a note, an input) becomes a node of the model only if a formula or a
            defined name refers to it: ``finish()`` loads the referenced ranges' stored cells (formulas'
            ``complete``, the way it loads a model for chosen outputs). The others are kept aside in
            ``constants`` as (value, data type), and the Workbook reads them from there: about 0.2 ms of load and
            0.15 ms of every calculation saved per cell (BENCHMARKS.md, "Template recalculation").
            """
            worksheet, context = self.add_sheet(worksheet, context)
            references = self.references
            formula_references = self.formula_references(context)
            formula_ranges = self.formula_ranges(context)
            ctx = {"external_links": self.external_links(context)}
            ctx.update(context)
            sheet = context["sheet"]
            cells = []
            for row in worksheet.iter_rows():
                for c in row:
                    if not hasattr(c, "value"):
                        continue
                    if c.data_type != "f":
                        self.tick(1)
                        self.constants[(sheet, c.row, c.column)] = (c.value, c.data_type)
                        continue
                    cells.append(self.compile_cell(c, ctx, references, formula_references))
            for compiled in cells:
                self.add_cell(sh.await_result(compiled), ctx, formula_ranges)
            return self

        def compile_cell(self, cell: Any, context: Any, references: Any, formula_references: Any) -> Any:
            if cell.data_type == "f":  # a constant was counted when push() set it aside
                self.tick(1)
            crd = formula_references.get(cell.coordinate, cell.coordinate)
            text: str | None = None
            if cell.data_type == "f":
                value = cell.value
                text = value if isinstance(value, str) else getattr(value, "text", None)
                where = f"{_quote_sheet(self.titles.get(context['sheet'], context['sheet']))}!{cell.coordinate}"
                if text is None:
                    return self._failed(crd, context, references, "#N/A", _data_table_reason(value))
                threat = formula_threat(text)
                if threat:
                    raise WorkbookError(f"the formula in {where} {threat}; xlsxplan refuses such files")
                rewritten = engine.add_in_names(self._rewrite(text) if self.alias else text)
                if rewritten != text:  # the engine reads the model's copy; the file keeps the formula as it was
                    text = rewritten
                    if isinstance(value, str):
                        cell.value = text
                    else:
                        value.text = text
                key = f"'[{BOOK_NAME}]{context['sheet']}'!{crd}"
                self.formula_text[key] = text
            try:
                with engine.collect_messages() as messages:
                    compiled = super().compile_cell(cell, context, references, formula_references)
                if messages:
                    self.compile_messages[compiled.output] = messages
                return compiled
            except WorkbookError:
                raise
            except MemoryError:  # its constant part asked for more memory than there is (=MUNIT(100000))
                return self._failed(crd, context, references, "#NUM!", "the formula needs more memory than there is")
            except Exception as err:  # the parser refuses a formula: that cell alone becomes an error
                return self._failed(crd, context, references, "#NAME?", engine.parse_failure(err, text))

        def _failed(self, crd: str, context: Any, references: Any, code: str, reason: str) -> Any:
            failed = Cell(crd, f"={code}", context=context)
            failed.compile(references=references, context=context)
            self.problems[failed.output] = CellError(code, reason)
            return failed

    return Model


def _check_referenced_ranges(model: Any, inspection: Inspection, limits: Limits) -> None:
    """Refuse, before the engine assembles them, ranges whose cells would not fit in memory.

    ``formulas`` keeps a set of every position of each range a formula refers to, and an array of its values at
    each calculation, whether the cells hold anything or not: ``SUM(A:A)`` costs about 0.7 GB. The sum of the
    areas of the distinct ranges referred to is added to the estimate of :meth:`Limits.estimate`.
    """
    from formulas.ranges import Ranges

    total, largest, largest_area = 0, "", 0
    for key in model.dsp.data_nodes:
        if not isinstance(key, str) or ":" not in key.rpartition("!")[2]:
            continue
        try:
            rng = Ranges.get_range(key)
        except Exception:  # a name or something else that is not a plain range
            continue
        if "r1" not in rng or "n1" not in rng:
            continue
        rows = int(rng["r2"] or MAX_ROW) - max(int(rng["r1"] or 1), 1) + 1
        area = rows * (int(rng["n2"]) - max(int(rng["n1"]), 1) + 1)
        total += area
        if area > largest_area:
            title = model.titles.get(rng.get("sheet", ""), rng.get("sheet", ""))
            largest, largest_area = f"{_quote_sheet(title)}!{rng.get('ref', '')}", area
    need = (inspection.estimated_bytes + BYTES_PER_REFERENCED_CELL * total) / 1e9
    if need > limits.max_memory_gb:
        raise WorkbookError(
            f"formulas refer to ranges of {total:,} cells in all (the largest {largest}, {largest_area:,} cells); "
            f"the engine holds about 0.8 kB per referenced cell, so recalculating would need about {need:,.1f} GB, "
            f"and the limit is {limits.max_memory_gb:g} GB: refer to the rows in use, not whole columns"
        )


def _data_table_reason(value: Any) -> str:
    kind = type(value).__name__
    if kind == "DataTableFormula":
        return "Excel data tables (What-If Analysis) are not calculated headlessly; use plain formulas"
    return f"this kind of formula ({kind}) is not calculated headlessly"


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


@dataclass(frozen=True)
class _Array:
    key: str
    r1: int
    c1: int
    r2: int
    c2: int


# ---------------------------------------------------------------------------------------------------------------
# The workbook


class Workbook:
    """A workbook loaded for headless recalculation.

    Build one with :meth:`load`; then :meth:`set` inputs, :meth:`calculate`, :meth:`get` values and
    :meth:`save` as often as needed. Reading a value after a change recalculates first, so a value read is never
    stale.
    """

    def __init__(self, inspection: Inspection, model: Any, source: Path | None, alias: Mapping[str, str]) -> None:
        self._inspection = inspection
        self._pkg: Package = inspection.package
        self._model = model
        self.path = source
        self._alias = dict(alias)
        self._upper_to_title: dict[str, str] = {}
        for sheet in self._pkg.sheets:
            if sheet.kind == "worksheet":
                self._upper_to_title[self._alias.get(sheet.title, sheet.title).upper()] = sheet.title
        self._inputs: dict[str, Any] = {}
        self._sets: dict[tuple[str, int, int], Any] = {}
        self._solution: Any = None
        self._messages: dict[tuple[str, str], tuple[str, engine.Messages | None]] = {}
        self._raw_cache: dict[str, Any] = {}
        self._computed_cache: dict[str, dict[tuple[int, int], Any]] | None = None
        self._index_cells()

    # -- loading ------------------------------------------------------------------------------------------------

    @classmethod
    def load(
        cls, path: Path | str, limits: Limits | None = None, progress: Callable[[int, int], None] | None = None
    ) -> Workbook:
        """Check and load a workbook (.xlsx, .xlsm, .xltx, .xltm); WorkbookError with one line if refused.

        ``limits`` overrides :class:`~xlsxplan.headless.untrusted.Limits`; ``progress(done, total)`` is called as cells
        are compiled (``total`` is the number of cells the file stores).
        """
        path = Path(path)
        require_defusedxml()
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
        import io

        import schedula as sh
        from formulas.excel import BOOK
        from formulas.excel.xlreader import load_workbook

        engine.register_functions()
        total = max(inspection.cells, 1)
        done = [0]

        def tick(n: int) -> None:
            done[0] += n
            if progress is not None and (done[0] % 500 == 0 or done[0] == total):
                progress(min(done[0], total), total)

        name = str(path) if path else "the workbook"
        alias: dict[str, str] = {}
        try:
            with _quiet_engine():
                book = load_workbook(io.BytesIO(inspection.package.data))
                for ws in book.worksheets:
                    ws._cells_by_row = types.MethodType(_sparse_cells_by_row, ws)
                    if "'" in ws.title:
                        alias[ws.title] = ws.title.replace("'", "\u02bc")
                titles = {alias.get(ws.title, ws.title).upper(): ws.title for ws in book.worksheets}
                model = _model_class()(alias, titles, tick)
                if alias:
                    for ws in book.worksheets:
                        if ws.title in alias:
                            ws.title = alias[ws.title]
                    for dn in list(book.defined_names.values()):
                        dn.attr_text = model._rewrite(dn.attr_text or "")
                model.basedir = str(Path(".").resolve())
                sh.get_nested_dicts(model.books, _BOOK_KEY)[BOOK] = book
                model.load(BOOK_NAME)
                _check_referenced_ranges(model, inspection, limits)  # before finish() builds them, cell by cell
                model.finish()
        except WorkbookError as err:
            raise WorkbookError(f"{name}: {err.message}") from None
        except MemoryError:
            raise WorkbookError(f"{name}: ran out of memory while loading; see `Limits` to refuse it earlier") from None
        except RecursionError:
            raise WorkbookError(f"{name}: formulas nest too deeply to evaluate") from None
        except Exception as err:  # openpyxl or formulas choked on the content: corrupt for our purposes
            first = str(err).splitlines()[0] if str(err) else ""
            raise WorkbookError(f"{name} cannot be read: {type(err).__name__}: {first}".rstrip(": ")) from None
        if progress is not None:
            progress(total, total)
        return cls(inspection, model, path, alias)

    def _index_cells(self) -> None:
        from formulas.cell import Ref

        self._single: dict[tuple[str, int, int], str] = {}
        self._formula: set[str] = set()
        self._arrays: dict[str, list[_Array]] = {}
        for key, cell in self._model.cells.items():
            if isinstance(cell, Ref) or cell.range is None:
                continue
            rng = cell.range.ranges[0]
            title = self._upper_to_title.get(rng.get("sheet", ""))
            if title is None:
                continue
            r1, c1, r2, c2 = int(rng["r1"]), int(rng["n1"]), int(rng["r2"]), int(rng["n2"])
            if key in self._model.formula_text or key in self._model.problems:  # an <f> in the file, not a literal
                self._formula.add(key)
            if (r1, c1) == (r2, c2):
                self._single[(title, r1, c1)] = key
            else:
                self._arrays.setdefault(title, []).append(_Array(key, r1, c1, r2, c2))
        # A saved array formula's other cells hold its cached values; they belong to the array, not to themselves.
        for (title, r, c), key in list(self._single.items()):
            if key not in self._formula and self._array_at(title, r, c) is not None:
                del self._single[(title, r, c)]
        # Each sheet's formula cells (an array formula's every cell) and its other stored cells, in sheet order
        with_formula: dict[str, set[tuple[int, int]]] = {title: set() for title in self.sheetnames}
        others: dict[str, list[tuple[int, int]]] = {title: [] for title in self.sheetnames}
        for (title, r, c), key in self._single.items():
            if key in self._formula:
                with_formula[title].add((r, c))
            else:
                others[title].append((r, c))
        for title, arrays in self._arrays.items():
            for arr in arrays:
                if arr.key in self._formula:
                    cells = with_formula[title]
                    cells.update((r, c) for r in range(arr.r1, arr.r2 + 1) for c in range(arr.c1, arr.c2 + 1))
        # Constants no formula or name refers to stayed out of the model (Model.push): read from the file instead
        self._constants: dict[tuple[str, int, int], tuple[Any, str]] = {}
        for (sheet, r, c), stored in self._model.constants.items():
            title = self._upper_to_title.get(sheet)
            if title is None or (title, r, c) in self._single or self._array_at(title, r, c) is not None:
                continue
            self._constants[(title, r, c)] = stored
            if stored[1] == "e":
                others[title].append((r, c))
        self._formula_cells = {title: sorted(cells) for title, cells in with_formula.items()}
        self._other_cells = {title: sorted(cells) for title, cells in others.items()}

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

    def _key(self, title: str, ref: str) -> str:
        return f"'[{BOOK_NAME}]{self._alias.get(title, title).upper()}'!{ref}"

    def _resolve(self, ref: str) -> tuple[str, int, int, int, int] | str:
        """A reference or name as (sheet title, r1, c1, r2, c2), or the formulas key of a name's formula."""
        sheet, target = _sheet_ref(ref)
        if sheet is not None:
            title = self._pkg.worksheet(sheet).title
            try:
                return (title, *range_bounds(target))
            except WorkbookError:
                raise WorkbookError(f"{ref!r}: {target!r} is not a cell or range such as B4 or B4:D9") from None
        matches = [d for d in self._pkg.defined_names if d.name.casefold() == target.casefold()]
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
        return f"'[{BOOK_NAME}]'!{name.name.upper()}"

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

    def _array_at(self, title: str, row: int, col: int) -> _Array | None:
        for arr in self._arrays.get(title, ()):
            if arr.r1 <= row <= arr.r2 and arr.c1 <= col <= arr.c2:
                return arr
        return None

    # -- inputs -------------------------------------------------------------------------------------------------

    def set(self, ref: str, value: Any, force: bool = False) -> Workbook:
        """Set an input cell (``"Inputs!C5"``) or the cell a defined name points to (``"Params_B"``).

        ``value`` is a number, text (always stored as text, never as a formula), a bool, None (empty) or a
        :class:`~xlsxplan.cells.CellError`. A cell that holds a formula is refused, with the input cells behind it
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
        key = self._single.get((title, r1, c1))
        arr = self._array_at(title, r1, c1)
        if arr is not None:
            span = f"{col_letter(arr.c1)}{arr.r1}:{col_letter(arr.c2)}{arr.r2}"
            raise WorkbookError(f"{where} is part of the array formula in {span}; only input cells can be set")
        if key is not None and key in self._formula and not force:
            raise WorkbookError(self._formula_refusal(where, key, title))
        value = _check_value(value, f"the value for {where}")
        self._inputs[key or self._key(title, f"{col_letter(c1)}{r1}")] = _to_formulas(value)
        self._sets[(title, r1, c1)] = value
        self._solution = None
        return self

    def _formula_refusal(self, where: str, key: str, title: str) -> str:
        """Why a formula cell cannot be set, and which cells to set instead."""
        text = self._model.formula_text.get(key, "")
        case = self._active_case(text, title)
        if case is not None:
            advice = f"set {case} instead"
        else:
            behind = self._precedents(key)
            advice = f"set the cells it reads instead ({behind})" if behind else "set the cells it reads instead"
        shown = f" ({text})" if text and len(text) <= 80 else ""
        return (
            f"{where} holds a formula{shown}; {advice}, or force it (--force-set) to replace the formula with the "
            "value in the copy written"
        )

    def _active_case(self, formula: str, title: str) -> str | None:
        """For ``=INDEX(row or column of cases, selector)``: the cell of the case the selector picks, described."""
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
        return f"{_quote_sheet(sheet)}!{col_letter(col)}{row} (the active case: {selector} is {i})"

    def _value_of(self, text: str, title: str) -> Any:
        """The value of a number, cell or defined name in a formula, computing only what it needs (a few ms)."""
        try:
            return float(text)
        except ValueError:
            pass
        try:
            target = self._resolve(f"{_quote_sheet(title)}!{text}" if _A1.fullmatch(text) else text)
        except WorkbookError:
            return None
        if isinstance(target, str):
            key: str | None = target
        else:
            sheet, r, c, r2, c2 = target
            if (r, c) != (r2, c2):
                return None
            if (sheet, r, c) in self._sets:
                return self._sets[(sheet, r, c)]
            key = self._single.get((sheet, r, c))
        if key is None:
            return None
        if self._solution is not None:
            raw = self._raw(key)
        else:
            try:
                with _quiet_engine(), gc_paused():
                    ranges = self._model.calculate(inputs=dict(self._inputs), outputs=[key]).get(key)
            except Exception:  # an aid to a message: never the reason a set fails
                return None
            raw = None if ranges is None else np.atleast_2d(np.asarray(getattr(ranges, "value", ranges), dtype=object))
        return None if raw is None else _plain(raw[0, 0])

    def _precedents(self, key: str, most: int = 6) -> str:
        """The cells, ranges and names a formula reads, as a person writes them."""
        cell = self._model.cells.get(key)
        shown = []
        for k in getattr(cell, "inputs", None) or ():
            m = re.match(r"^'\[[^\]]*\]([^']*)'!(.+)$", k) if isinstance(k, str) else None
            if m is None:
                continue
            sheet, ref = m.groups()
            if sheet:
                shown.append(f"{_quote_sheet(self._upper_to_title.get(sheet, sheet))}!{ref}")
            else:
                name = next((n for n in self.names if n.casefold() == ref.casefold()), ref)
                shown.append(name)
        extra = f" and {len(shown) - most} more" if len(shown) > most else ""
        return ", ".join(shown[:most]) + extra

    # -- calculation --------------------------------------------------------------------------------------------

    def calculate(self, progress: Callable[[int, int], None] | None = None) -> Workbook:
        """Recompute every formula with the inputs set so far; returns the workbook.

        ``progress(done, total)`` is called as the engine computes: ``total`` is the number of nodes of the model
        (each cell, each range a formula reads and each formula), ``done`` those computed so far.
        """
        hooks: dict[str, Any] = {}
        total = len(self._model.dsp.nodes)
        if progress is not None:
            done = [0]

            def verbose(_sol: Any, _node: Any, _attr: Any, end: bool) -> None:  # schedula's per-node hook
                if end:
                    done[0] += 1
                    if done[0] % 250 == 0:
                        progress(min(done[0], total), total)

            hooks["verbose"] = verbose
        with _quiet_engine(), gc_paused():
            try:
                self._solution = self._model.calculate(inputs=dict(self._inputs), **hooks)
            except RecursionError:
                raise WorkbookError("formulas nest too deeply to evaluate") from None
            except MemoryError:
                raise WorkbookError("ran out of memory while calculating") from None
            except Exception as err:  # a failure of the engine itself, not of a cell (cells fail one by one)
                raise WorkbookError(f"the formulas engine failed: {engine.exception_text(err)}") from None
        self._messages = {}
        self._raw_cache = {}
        self._computed_cache = None
        if progress is not None:
            progress(total, total)
        return self

    def _sol(self) -> Any:
        if self._solution is None:
            self.calculate()
        return self._solution

    def _raw(self, key: str) -> Any:
        """The value of a formulas node as a 2-D object array, or None if it was not calculated."""
        solution = self._sol()
        if key in self._raw_cache:
            return self._raw_cache[key]
        ranges = solution.get(key)
        raw = None
        if ranges is not None:
            raw = np.atleast_2d(np.asarray(getattr(ranges, "value", ranges), dtype=object))
        if raw is not None and raw.size > 1:  # array formulas are read cell by cell: convert them once
            self._raw_cache[key] = raw
        return raw

    def _cell_value(self, title: str, row: int, col: int) -> Any:
        if (title, row, col) in self._sets:
            return self._sets[(title, row, col)]
        key = self._single.get((title, row, col))
        if key is not None:
            raw = self._raw(key)
            if raw is None:
                return self._with_message(key, _NO_VALUE) if key in self._formula else None
            value = _plain(raw[0, 0])
            if value is None and key in self._formula:
                value = 0  # a formula that points at an empty cell shows 0, as in Excel
            return self._with_message(key, value) if isinstance(value, CellError) else value
        arr = self._array_at(title, row, col)
        if arr is not None:
            raw = self._raw(arr.key)
            if raw is None:
                return self._with_message(arr.key, _NO_VALUE)
            i, j = row - arr.r1, col - arr.c1
            if i >= raw.shape[0] or j >= raw.shape[1]:
                value = _plain(raw[0, 0]) if raw.shape == (1, 1) else CellError("#N/A")
            else:
                value = _plain(raw[i, j])
            if value is None:
                value = 0
            if isinstance(value, CellError):
                return self._with_message(arr.key, value, (i, j))
            return value
        stored = self._constants.get((title, row, col))
        if stored is not None:
            return _constant(*stored)
        return None

    @_collector_paused
    def get(self, ref: str) -> Any:
        """The value of a cell, a range (a list of rows) or a defined name, after any pending recalculation.

        A value is a number, text, bool, None (empty) or a :class:`~xlsxplan.cells.CellError` carrying the reason.
        """
        target = self._resolve(ref)
        if isinstance(target, str):
            raw = self._raw(target)
            if raw is None:
                return _NO_VALUE
            values = [[_plain(v) for v in row] for row in raw]
            return values[0][0] if len(values) == 1 and len(values[0]) == 1 else values
        title, r1, c1, r2, c2 = target
        if (r2 - r1 + 1) * (c2 - c1 + 1) > 1_000_000:
            raise WorkbookError(f"{ref!r} spans more than a million cells; read a smaller range")
        if (r1, c1) == (r2, c2):
            return self._cell_value(title, r1, c1)
        return [[self._cell_value(title, r, c) for c in range(c1, c2 + 1)] for r in range(r1, r2 + 1)]

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

    def _with_message(self, key: str, err: CellError, pos: tuple[int, int] | None = None) -> CellError:
        if err.message:
            return err
        return CellError(err.code, self._reason(key, err.code, pos))

    def _reason(self, key: str, code: str, pos: tuple[int, int] | None = None, depth: int = 0) -> str:
        """Why the node ``key`` (at ``pos`` of its array, if it is one) holds the error ``code``.

        The formula is evaluated again at most once per node and calculation, whatever the number of its elements
        that failed: the reasons of an array's elements are looked up by position in what that one evaluation
        recorded (:class:`xlsxplan.headless.engine.Messages`).
        """
        cache_key = (key, code)
        if cache_key not in self._messages:
            self._messages[cache_key] = self._find_reason(key, code, depth)
        reason, recorded = self._messages[cache_key]
        if pos is not None and recorded is not None:
            return recorded.at(pos, code) or reason
        return reason

    def _evaluate_again(self, key: str, cell: Any) -> engine.Messages:
        """The messages of the registry calls in the formula of ``key``: those of its constant parts, recorded when
        it was compiled, then those of evaluating it again on its calculated inputs."""
        messages = engine.Messages()
        compiled = self._model.compile_messages.get(key)
        if compiled is not None:
            messages.extend_from(compiled)
        sol = self._sol()
        args = [sol.get(k) for k in cell.inputs]
        if all(a is not None for a in args):
            with engine.collect_messages() as bucket:
                try:
                    cell.func(*args)
                except Exception:  # the engine failed on this cell: the messages so far still help
                    pass
            messages.extend_from(bucket)
        return messages

    def _find_reason(self, key: str, code: str, depth: int) -> tuple[str, engine.Messages | None]:
        """The reason for ``code`` in the node ``key``, and the messages its evaluation recorded (None if it was not
        evaluated again)."""
        problem = self._model.problems.get(key)
        if problem is not None:
            return problem.message, None
        cell = self._model.cells.get(key)
        if cell is None:
            return engine.NATIVE_REASONS.get(code, ""), None
        if key not in self._formula or cell.func is None:
            return "the cell holds this error value (typed, not calculated)", None
        if code == "#NAME?":
            unknown = _unknown_function(self._model.formula_text.get(key, ""))
            if unknown:
                return unknown, None
        messages = self._evaluate_again(key, cell)
        same = messages.last(code)
        return (same if same is not None else self._passed_on(key, cell, code, depth)), messages

    def _passed_on(self, key: str, cell: Any, code: str, depth: int) -> str:
        """The reason for an error that no registry call in the formula explains: the input it came from."""
        for k in cell.inputs:
            book = re.match(r"^'?(.*)\[([^\]]+)\]", k) if isinstance(k, str) else None
            if book and book.group(2).upper() != _BOOK_KEY:
                return f"refers to another workbook ({k}), which xlsxplan never opens"
        if depth < 20:
            for k in cell.inputs:
                if not isinstance(k, str):  # an error literal the formula itself holds
                    continue
                source = self._first_error(k, code)
                if source is not None:
                    src_key, src_ref = source
                    inner = self._reason(src_key, code, depth=depth + 1) if src_key in self._model.cells else ""
                    return f"passed on from {src_ref}" + (f": {inner}" if inner else "")
        return engine.NATIVE_REASONS.get(code, "")

    def _first_error(self, key: str, code: str) -> tuple[str, str] | None:
        """The first cell holding ``code`` in the node ``key`` (a cell or a range): (its formulas key, its ref)."""
        ranges = self._sol().get(key)
        if ranges is None or not hasattr(ranges, "ranges") or not ranges.ranges:
            return None
        raw = np.atleast_2d(np.asarray(getattr(ranges, "value", ranges), dtype=object))
        rng = ranges.ranges[0]
        ours = str(rng.get("filename", BOOK_NAME)).upper() == _BOOK_KEY and not rng.get("directory")
        title = self._upper_to_title.get(rng.get("sheet", "")) if ours else None
        for (i, j), v in np.ndenumerate(raw):
            if str(v) == code and isinstance(_plain(v), CellError):
                if title is None or "r1" not in rng:
                    return key, key
                row, col = int(rng["r1"]) + i, int(rng["n1"]) + j
                ref = f"{_quote_sheet(title)}!{col_letter(col)}{row}"
                cell_key = self._single.get((title, row, col))
                if cell_key is None:
                    arr = self._array_at(title, row, col)
                    cell_key = arr.key if arr else key
                return cell_key, ref
        return None

    def _computed(self) -> dict[str, dict[tuple[int, int], Any]]:
        """The value of every formula cell, ``{title: {(row, col): value}}`` in sheet order, after any pending
        recalculation; read once per calculation and shared by :meth:`errors` and :meth:`save`."""
        self._sol()
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
            for r, c in self._other_cells[title]:  # typed error values, and inputs set to one
                value = self._cell_value(title, r, c)
                if isinstance(value, CellError):
                    found[(r, c)] = value
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
                if isinstance(value, CellError):
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
        self._sol()
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


_FUNCTION_CALL = re.compile(r"(?<![A-Za-z0-9_.])([A-Za-z_][A-Za-z0-9_.]*)\s*\(")


def _unknown_function(formula: str) -> str:
    """``unknown function FOO; did you mean ...`` for the first function ``formula`` calls that is not known."""
    import difflib

    import formulas
    from formulas.functions import not_implemented

    from .. import registry

    known = formulas.get_functions()
    bare = re.sub(r'"(?:[^"]|"")*"', '""', formula)
    for m in _FUNCTION_CALL.finditer(bare):
        name = m.group(1).upper()
        if name in ("INDIRECT", "_XLFN.ANCHORARRAY", "ANCHORARRAY"):  # the parser resolves these itself
            if name == "INDIRECT":
                return (
                    'INDIRECT works headlessly only on a reference into this workbook, as text: INDIRECT("Sheet1!A1")'
                )
            continue
        plain = name[6:] if name.startswith("_XLFN.") else name
        if known.get(name, not_implemented) is not_implemented and known.get(plain, not_implemented) is not_implemented:
            close = difflib.get_close_matches(plain, list(registry.FUNCTIONS), n=2, cutoff=0.6)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            return f"unknown function {m.group(1)}{hint}"
    return ""


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
    """Load ``src``, set ``sets`` ({cell or name: value}), calculate and save to ``out``; returns the Workbook.

    ``out`` defaults to :func:`default_output` (``BOOK.recalc.xlsx``); the input is overwritten only when ``out``
    names it.
    """
    wb = Workbook.load(src, limits=limits)
    for ref, value in (sets or {}).items():
        wb.set(ref, value)
    wb.calculate()
    wb.save(out if out is not None else default_output(src))
    return wb
