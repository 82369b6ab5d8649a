"""The portable edition: a built add-in template turned into one that recalculates with no add-in.

:func:`make_portable` is one generic pass over a built :class:`~.book.Book` (the add-in edition, registry functions
in its cells) and the add-in edition's recalculated values; the serving and training builders know nothing of it.
It

1. writes the catalog's presets, formats, optimizers, prices and calibrated efficiencies, with their sources, on a
   **Catalog** sheet (:func:`xlsxplan.sheet.native.write_catalog`); the catalog lookups (MODEL_SPEC, GPU_SPEC,
   BYTES_PER_PARAM, GPU_PRICE, EFFICIENCY, ...) become ``INDEX``/``MATCH`` over those tables, and a dropdown of the
   models or accelerators (MODELS(), GPUS(), or a list of the same presets) reads the table's name column;
2. tokenizes every formula (openpyxl's tokenizer) and replaces each registry call, innermost first, by its native
   form (:func:`xlsxplan.sheet.native.formula`). A function of several steps (SERVE_TOKS, PAGED_BATCH, TAIL_SHARE, ...)
   becomes visible line items, one step a row, on a **Workings** sheet (labels from
   :func:`~.native.line_items`), and the cell points at its last row; so does an argument too long to repeat
   inside a native formula, and a native formula or lookup over 1,500 characters. References in what moves to
   Workings are qualified with the sheet they came from. Functions of Excel 2010 and 2013 are stored with their
   ``_xlfn.`` prefix (:func:`stored`);
3. guards every call whose arguments the Python function may refuse: a Workings row is 0 when
   :func:`xlsxplan.sheet.native.check` passes (Python accepts them), else the number of the error the add-in gives (an
   argument's own error passed on, else ``#VALUE!`` when a numeric argument is not a number, ``#NUM!`` otherwise,
   as ``VALUE("x")`` and ``ASIN(2)``, which every engine reads alike; a formula cell's value is read plus 0, as
   Excel reads an INDEX of an empty cell), and the cell reads ``IF(Workings!Bn=0,<native>,CHOOSE(Workings!Bn,
   <arguments>,ASIN(2),VALUE("x")))``: a refused input shows the add-in's error, never a silently computed number,
   and the Workings row itself is never an error. The line items of a guarded call are computed only when its
   arguments pass (else "-"), so a call the template does not reach leaves no error value on Workings; a step that
   fails with its arguments accepted still shows its error. A Checks row per guarded call, in the words of
   :func:`xlsxplan.sheet.native.check_words`, is 1 when the cell shows an error and its arguments are refused, and feeds
   the master check;
4. freezes what only Python computes (a call of a function in :data:`~.native.PYTHON_ONLY`, the option search
   on the Options sheet, or of any registry function still without a native form: :func:`python_only`; a few get a
   form yet): the cell holds the add-in edition's recalculated value. Workings lists, for each group
   of frozen cells, every input their formulas read (a range cell by cell) with its value when computed, its value
   now, and whether they are equal, then each add-in formula of the group with the cells that hold it, under a hidden
   name (:mod:`xlsxplan.headless.frozen`); a Checks row per group turns the master check to ERROR when an input has
   changed, telling the user to run ``xlsxplan recalc`` on this file (which computes the kept formulas again), or
   open the add-in edition. A cell such a cell reads that uses a function newer than
   Excel 2016 (:data:`_NEWER`: the option search's TEXTJOIN of prices) is frozen with it, its own inputs taking its
   place;
5. drops the sheet only the add-in edition has (:data:`_ADDIN_ONLY_SHEETS`: xlwings.conf, which only the add-in
   reads), and says so on the Guide.

Limits (docs/portable.md): a spreadsheet application does not recompute the frozen table, only flags it (``xlsxplan
recalc`` does); a registry call inside an array formula, or over an array argument that is not a reference, has no
line items (its Workings rows would read one cell): the templates have none. Dropdowns and conditional formats get
the one-formula native form, without a guard.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from openpyxl.formula.tokenizer import Token, Tokenizer
from openpyxl.utils import get_column_letter, range_boundaries
from openpyxl.workbook.defined_name import DefinedName
from openpyxl.worksheet.formula import ArrayFormula
from openpyxl.worksheet.worksheet import Worksheet

from .. import registry
from ..errors import CellError, WorkbookError
from ..sheet import native
from ..sheet import portable_layout as frozen_layout
from .book import Book, check_format, page_setup, put_text, quote_sheetname
from .styles import FMT, TEMPLATE_DATE, WORKINGS_ROWS_PER_PAGE

__all__ = ["CATALOG", "WORKINGS", "make_portable", "python_only", "registry_calls", "Portable"]

CATALOG = "Catalog"
WORKINGS = "Workings"
_ADDIN_ONLY_SHEETS = ("xlwings.conf",)
"""Sheets only the add-in edition has: the add-in's settings."""
_A1 = re.compile(
    r"^\$?[A-Za-z]{1,3}\$?\d+(?::\$?[A-Za-z]{1,3}\$?\d+)?$|^\$?[A-Za-z]{1,3}:\$?[A-Za-z]{1,3}$|^\$?\d+:\$?\d+$"
)
_REFERENCE = re.compile(r"^(?:'[^']+'!|[A-Za-z_][A-Za-z0-9_.]*!)?\$?[A-Za-z]{1,3}\$?\d+$|^[A-Za-z_][A-Za-z0-9_.]*$")
"""One cell, or a defined name."""
_LONG_BODY = 1500
"""A native formula or lookup longer than this moves to a Workings row of its own, which the cell reads."""
_LONG_ARGUMENT = 60
"""An argument longer than this (and not a plain reference) moves to a Workings row of its own."""
_XLFN = (
    "POISSON.DIST",
    "NORM.S.INV",
    "NORM.S.DIST",
    "NORM.DIST",
    "NORM.INV",
    "ERF.PRECISE",
    "ERFC.PRECISE",
    "GAMMALN.PRECISE",
    "CEILING.MATH",
    "FLOOR.MATH",
    "STDEV.P",
    "STDEV.S",
    "PERCENTILE.INC",
    "PERCENTILE.EXC",
    "EXPON.DIST",
    "GAMMA.DIST",
    "LOGNORM.DIST",
    "LOGNORM.INV",
    "BINOM.DIST",
    "CHISQ.DIST",
    "IFNA",
    "XOR",
)
"""Functions of Excel 2010 and 2013 (all in Excel 2016) that a file stores with the ``_xlfn.`` prefix (ECMA-376
Part 1, 18.17.7; [MS-XLSX] 2.3.3): without it Excel and LibreOffice read ``#NAME?``. A native form writes them
plain; :func:`stored` adds the prefix."""
_XLFN_CALL = re.compile(r"(?<![\w.])(" + "|".join(re.escape(f) for f in _XLFN) + r")\(", re.IGNORECASE)
_NEWER = frozen_layout.NEWER_THAN_2016
"""Functions newer than Excel 2016 (Office 2019 and 365): a cell of the add-in edition that uses one and feeds only
frozen cells is frozen with them; the portable edition has none (tests/templates/test_portable.py scans)."""


def stored(formula: str) -> str:
    """``formula`` with the functions of :data:`_XLFN` written as a file stores them (``_xlfn.POISSON.DIST``)."""
    parts = re.split(r'("(?:[^"]|"")*")', formula)  # never inside a text literal
    return "".join(
        p if i % 2 else _XLFN_CALL.sub(lambda m: "_xlfn." + m.group(1).upper() + "(", p) for i, p in enumerate(parts)
    )


_ERROR_FORMULAS = {"#N/A": "NA()", "#NUM!": "ASIN(2)", "#DIV/0!": "1/0", "#VALUE!": 'VALUE("x")'}
"""A formula for each error value a frozen cell or a refused call gives: Excel, LibreOffice and the headless engine
read it as that error (LibreOffice gives ``#VALUE!`` for ``SQRT(-1)``, ``#NUM!`` for ``ASIN(2)``)."""


# ---------------------------------------------------------------------------------------------------------------
# Formulas as trees of calls


@dataclass
class Call:
    """One function call of a formula: its name as written and each argument as a list of parts."""

    name: str
    args: list[list[Any]]


@dataclass
class _Frame:
    kind: str  # "top", "func", "paren", "array"
    name: str = ""
    args: list[list[Any]] = field(default_factory=lambda: [[]])


@functools.lru_cache(maxsize=1 << 16)
def _tokens(formula: str) -> tuple[Token, ...]:
    """``formula``'s tokens, read once per text: the pass reads the same formulas and sub-expressions many times
    (the serving plan's 4,400 formulas about 200,000 times), and a token is never changed after it is read."""
    return tuple(Tokenizer(formula).items)


def parse(formula: str) -> list[Any]:
    """``formula`` (with its ``=``) as a list of texts and :class:`Call`s; WorkbookError when it does not tokenize."""
    try:
        items = _tokens(formula)
    except Exception as err:  # openpyxl raises a bare TokenizerError
        raise WorkbookError(f"cannot tokenize the formula {formula[:80]!r}: {err}") from None
    stack = [_Frame("top")]
    for tok in items:
        top = stack[-1]
        if tok.type == Token.FUNC and tok.subtype == Token.OPEN:
            stack.append(_Frame("func", tok.value[:-1]))
        elif tok.type == Token.PAREN and tok.subtype == Token.OPEN:
            stack.append(_Frame("paren"))
        elif tok.type == Token.ARRAY and tok.subtype == Token.OPEN:
            stack.append(_Frame("array"))
        elif tok.type == Token.SEP and tok.subtype == Token.ARG and top.kind == "func":
            top.args.append([])
        elif tok.type == Token.SEP:
            top.args[-1].append(tok.value)
        elif tok.subtype == Token.CLOSE and tok.type in (Token.FUNC, Token.PAREN, Token.ARRAY):
            done = stack.pop()
            parent = stack[-1].args[-1]
            if done.kind == "func":
                parent.append(Call(done.name, done.args))
            else:
                parent += ["(" if done.kind == "paren" else "{", *done.args[0], ")" if done.kind == "paren" else "}"]
        elif tok.type == Token.WSPACE:
            top.args[-1].append(" ")
        else:
            top.args[-1].append(tok.value)
    if len(stack) != 1:
        raise WorkbookError(f"unbalanced formula {formula[:80]!r}")
    return stack[0].args[0]


def render(parts: list[Any], call: Callable[[Call, list[str]], str] | None = None) -> str:
    """The formula text of ``parts`` (no ``=``); ``call(node, args)`` gives each call's text from its rendered
    arguments, innermost first (by default the call as written)."""
    out = []
    for p in parts:
        if isinstance(p, Call):
            args = [render(a, call) for a in p.args]
            out.append(call(p, args) if call else f"{p.name}({','.join(args)})")
        else:
            out.append(p)
    return "".join(out)


def _calls(parts: list[Any]) -> list[str]:
    found = []
    for p in parts:
        if isinstance(p, Call):
            found.append(p.name.upper())
            for a in p.args:
                found += _calls(a)
    return found


def python_only(name: str) -> bool:
    """True for a registry function the portable edition keeps as values: one in :data:`~.native.PYTHON_ONLY`,
    or one a template calls before it has a native form (a native form, or a catalog lookup)."""
    key = name.upper()
    return key in registry.FUNCTIONS and key not in native.NATIVE and key not in native.LOOKUPS


_GUARDED_LOOKUPS = ("MODEL_WEIGHTS_GB",)
"""Catalog lookups whose line items are guarded as the native forms' are (their bytes arguments may be refused)."""


def registry_calls(formula: str) -> list[str]:
    """The registry functions ``formula`` calls, by name, innermost last (a test scans the portable edition)."""
    return [n for n in _calls(parse(formula)) if n in registry.FUNCTIONS]


def _references(parts: list[Any]) -> list[str]:
    """The reference operands (cells, ranges, defined names) of ``parts``, as written."""
    refs = []
    for p in parts:
        if isinstance(p, Call):
            for a in p.args:
                refs += _references(a)
    text = "=" + render(parts)
    for tok in _tokens(text):
        if tok.type == Token.OPERAND and tok.subtype == Token.RANGE and tok.value not in refs:
            refs.append(tok.value)
    return refs


def qualify(expr: str, sheet: str) -> str:
    """``expr`` (no ``=``) with each unqualified cell or range reference qualified with ``sheet``: it may then be
    written on another sheet."""
    out = []
    for tok in _tokens("=" + expr):
        v = tok.value
        if tok.type == Token.OPERAND and tok.subtype == Token.RANGE and "!" not in v and _A1.match(v):
            v = f"{quote_sheetname(sheet)}!{v}"
        elif tok.type == Token.WSPACE:
            v = " "
        out.append(v)
    return "".join(out)


# ---------------------------------------------------------------------------------------------------------------
# The pass


@dataclass
class Portable:
    """What :func:`make_portable` did: the frozen cells (``Sheet!A1`` -> value), the guarded calls, the registry
    calls replaced, the Workings rows written and the longest formula (Excel takes 8,192 characters)."""

    frozen: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, list[str]] = field(default_factory=dict)  # sheet of frozen cells -> the inputs they read
    guarded: int = 0
    replaced: int = 0
    longest: int = 0
    workings_rows: int = 0


class _Frozen(Exception):
    """A registry call that only Python computes: its cell is frozen."""


def _cell_ref(sheet: str, coord: str) -> str:
    col, row = re.match(r"([A-Z]+)(\d+)", coord).groups()  # type: ignore[union-attr]
    return f"{quote_sheetname(sheet)}!${col}${row}"


def _split(ref: str, default_sheet: str) -> tuple[str, str]:
    """``'Sheet'!$A$1:$B$2`` -> (sheet, ``A1:B2``)."""
    if "!" in ref:
        sheet, rng = ref.rsplit("!", 1)
        if sheet.startswith("'"):
            sheet = sheet[1:-1].replace("''", "'")
    else:
        sheet, rng = default_sheet, ref
    return sheet, rng.replace("$", "")


class _Pass:
    def __init__(self, book: Book, computed: Callable[[str], Any]) -> None:
        self.book, self.computed = book, computed
        wb = book.wb
        for name in _ADDIN_ONLY_SHEETS:
            if name in wb.sheetnames:
                wb.remove(wb[name])
        self.catalog_ws = wb.create_sheet(CATALOG)
        self.workings = wb.create_sheet(WORKINGS)
        self.tables = native.write_catalog(self.catalog_ws, top=6)
        self.row = 6
        self.out = Portable()
        self.checks: list[tuple[str, str]] = []  # (label, formula) for the Checks sheet
        self.sheet = ""
        self.cell = ""
        self._places: dict[str, int] = {}
        self._calls_here: dict[tuple[str, str, str], int] = {}
        self.addin_file = "the add-in edition"
        self.formula_cells: set[tuple[str, str]] = set()
        self.formulas: dict[tuple[str, str], str] = {}

    # -- Workings rows --------------------------------------------------------------------------------------------
    def put(self, label: str, formula: str, where: str = "") -> str:
        """A Workings row: label, formula (no ``=``) and the cell it serves; returns its reference."""
        r = self.row
        ws = self.workings
        put_text(ws[f"A{r}"], label[:250], "Label")
        self.write(ws, f"B{r}", formula)
        if where:
            put_text(ws[f"C{r}"], where, "Unit")
        self.row += 1
        self.out.workings_rows += 1
        return f"{WORKINGS}!$B${r}"

    def write(self, ws: Worksheet, coord: str, formula: str) -> None:
        text = "=" + formula
        if len(text) > native.LONGEST_FORMULA:
            raise WorkbookError(
                f"{ws.title}!{coord}: the portable formula has {len(text):,} characters, over "
                f"Excel's {native.LONGEST_FORMULA:,}"
            )
        self.out.longest = max(self.out.longest, len(text))
        ws[coord] = stored(text)

    def where(self) -> str:
        return f"{self.sheet} {self.cell}" if self.sheet else ""

    # -- one call -------------------------------------------------------------------------------------------------
    def hoisted(self, name: str, args: list[str]) -> list[str]:
        """Arguments too long to repeat inside a native formula, each moved to a Workings row (not in a validation
        or a format, which have no Workings)."""
        if not self.sheet:
            return args
        fn = registry.get(name)
        out = []
        for i, a in enumerate(args):
            if len(a) > _LONG_ARGUMENT and not native.is_simple(a):
                what = fn.args[i].name if i < len(fn.args) else f"argument {i + 1}"
                a = self.put(f"{name}: {what}", qualify(a, self.sheet), self.where())
            out.append(a)
        return out

    def accepted(
        self, name: str, args: Sequence[str | None], result: str | None = None, on_result: bool = True
    ) -> tuple[str, str] | None:
        """The Workings row that guards a call of ``name`` over ``args`` (as seen from Workings), and the error the
        add-in gives when it refuses them; None when nothing is refused.

        The row is 0 when :func:`xlsxplan.sheet.native.check` passes, else which error the add-in gives, a number that
        picks it from ``CHOOSE(row, argument..., ASIN(2), VALUE("x"))`` (the second part returned): an argument's
        own error passed on (one cell's: a range would be intersected with the row), else ``#NUM!`` when every
        numeric argument is a number, ``#VALUE!`` otherwise. A number, never an error, so a call the template does
        not reach (a branch it does not take) leaves no error on Workings. Without ``on_result`` it is a gate the
        line items read (the check without the rules on the result) and adds no Checks row."""
        fn = registry.get(name)
        tested = [
            self.valued(a) if a and spec.domain is not None and spec.domain.kind in ("number", "whole") else a
            for a, spec in zip(args, fn.args)
        ] + list(args[len(fn.args) :])
        ok = native.check(name, *tested, result=result, on_result=on_result)
        if ok == "TRUE":
            return None
        numeric = [
            a
            for a, spec in zip(tested, fn.args)
            if a and spec.domain is not None and spec.domain.kind in ("number", "whole")
        ]
        is_num = ("AND(" + ",".join(f"ISNUMBER({native.operand(a)})" for a in numeric) + ")") if numeric else "TRUE"
        singles = [native.operand(a) for a in args if a and ":" not in a]
        code = f"IF({is_num},{len(singles) + 1},{len(singles) + 2})"
        for i, a in reversed(list(enumerate(singles, 1))):
            code = f"IF(ISERROR({a}),{i},{code})"
        what = (
            "0 when the arguments are accepted, else which error the add-in gives"
            if on_result
            else "0 when the arguments are accepted (the steps are computed), else not"
        )
        flag = self.put(f"{name}: {what}", f"IF({ok},0,{code})", self.where())
        if on_result:
            origin = _cell_ref(self.sheet, self.cell)
            seen = self._calls_here.setdefault((self.sheet, self.cell, name), 0) + 1
            self._calls_here[(self.sheet, self.cell, name)] = seen
            which = f" (call {seen} in the cell)" if seen > 1 else ""
            self.checks.append(
                (f"{self.where()}{which}: {native.check_words(name)}", f"IF(ISERROR({origin}),IF({flag}<>0,1,0),0)")
            )
            self.out.guarded += 1
        errors = ",".join([*singles, _ERROR_FORMULAS["#NUM!"], _ERROR_FORMULAS["#VALUE!"]])
        return flag, f"CHOOSE({flag},{errors})"

    def guard(self, name: str, args: Sequence[str | None], body: str, result: str | None = None) -> str:
        """``body`` guarded by the check of ``name`` over ``args`` (as seen from Workings): the add-in's error where
        Python refuses them (:meth:`accepted`)."""
        flag = self.accepted(name, args, result)
        return body if flag is None else self.guarded(flag, body)

    @staticmethod
    def guarded(flag: tuple[str, str], body: str) -> str:
        return f"IF({flag[0]}=0,{body},{flag[1]})"

    def valued(self, arg: str) -> str:
        """A numeric argument as its check reads it: a reference to a formula cell plus 0. Excel reads a formula that
        returns an empty cell (an INDEX of an unpriced accelerator's price) as 0, a number, as the add-in receives
        it; LibreOffice and Google Sheets keep it empty, and ISNUMBER would refuse it there."""
        target = _resolve(self.book, arg, self.sheet) if _REFERENCE.match(arg) else None
        if target is not None and ":" not in target[1] and target in self.formula_cells:
            return f"({arg}+0)"
        return arg

    def _place(self, key: str) -> str:
        return f"{WORKINGS}!$B${self._places[key]}"

    def line_items(
        self,
        name: str,
        keys: list[str],
        make: Callable[[Callable[[str], str]], Any],
        args: Sequence[str | None],
        guard: bool = True,
    ) -> str:
        """Write ``make(place)``'s line items, one a Workings row, and guard the last; returns its reference.

        With ``guard``, a row before them tests the arguments and each step is computed only when it passes (else
        the text "-"): a call whose arguments are refused, in a branch the template does not take or not, leaves
        no error value in its steps, while a step that fails with its arguments accepted still shows its error.
        When the function has rules on its result (REPLICAS_FOR_TTFT's search bound), that gate is the check
        without them, and the guard after the steps the whole check."""
        gate = flag = None
        if guard:
            native_form = native.NATIVE.get(name)
            on_result = native_form is not None and any(
                "{result}" in r for r, _ in native_form.rules + native_form.limits
            )
            gate = self.accepted(name, args, on_result=False) if on_result else self.accepted(name, args)
            flag = gate if not on_result else None
        self._places = {k: self.row + i for i, k in enumerate(keys)}
        result = ""
        for key, label, formula in make(self._place):
            assert self._places[key] == self.row  # noqa: S101 - line items come in their steps' order
            if gate is not None:
                formula = f'IF({gate[0]}=0,{formula},"-")'
            result = self.put(f"{name}: {label}", formula, self.where())
        if guard and flag is None:
            flag = self.accepted(name, args, result)
        return result if flag is None else self.guarded(flag, result)

    def call(self, node: Call, args: list[str]) -> str:
        name = node.name.upper()
        if name not in registry.FUNCTIONS:
            return f"{node.name}({','.join(args)})"
        if python_only(name):
            raise _Frozen(name)
        self.out.replaced += 1
        args = [a.strip() for a in args]
        while args and not args[-1]:
            args.pop()
        args = self.hoisted(name, args)
        given: list[str | None] = [a or None for a in args]
        if name in native.LOOKUPS:
            if name in ("MODELS", "GPUS"):
                return self.tables.lookup(name)
            if name in native.STEPPED_LOOKUPS and self.sheet:
                kv = [qualify(a, self.sheet) if a else "" for a in args]
                keys = [k for k, _, _ in native.catalog_line_items(self.tables, name, lambda k: "A1", *kv)]
                return self.line_items(
                    name,
                    keys,
                    lambda place: native.catalog_line_items(self.tables, name, place, *kv),
                    [a or None for a in kv],
                    guard=name in _GUARDED_LOOKUPS,
                )
            body = self.tables.lookup(name, *args)
            if len(body) > _LONG_BODY and self.sheet:  # a Workings row of its own, read by the cell
                return self.put(f"{name}: the lookup", self.tables.lookup(name, *self._qualified(args)), self.where())
            return f"({body})"
        form = native.NATIVE[name]
        q: list[str | None] = [qualify(a, self.sheet) if a else None for a in args]
        if form.steps and self.sheet:
            return self.line_items(
                name, [k for k, _, _ in form.steps], lambda place: native.line_items(name, place, *q), q
            )
        body = "(" + native.formula(name, *given) + ")"
        if not self.sheet:  # a validation or a format: no guard
            return body
        flag = self.accepted(name, q)
        if len(body) > _LONG_BODY:
            value = native.formula(name, *q)
            body = self.put(
                f"{name}: the value, before its check",
                value if flag is None else f'IF({flag[0]}=0,{value},"-")',
                self.where(),
            )
        return body if flag is None else self.guarded(flag, body)

    def _qualified(self, args: list[str]) -> list[str]:
        return [qualify(a, self.sheet) if a else "" for a in args]

    # -- cells ----------------------------------------------------------------------------------------------------
    def rewrite(self, formula: str, sheet: str, cell: str) -> str:
        """``formula`` (with ``=``) in native form (no ``=``); _Frozen if it calls a Python-only function."""
        self.sheet, self.cell = sheet, cell
        return render(parse(formula), self.call)


def _text(value: Any) -> str | None:
    if isinstance(value, ArrayFormula):
        return value.text
    return value if isinstance(value, str) and value.startswith("=") else None


def _error_code(value: Any) -> str | None:
    if isinstance(value, CellError):
        return str(getattr(value, "code", None) or value)
    if isinstance(value, str) and value in _ERROR_FORMULAS:
        return value
    return None


_ERROR_TYPE = {"#NULL!": 1, "#DIV/0!": 2, "#VALUE!": 3, "#REF!": 4, "#NAME?": 5, "#NUM!": 6, "#N/A": 7}


def make_portable(book: Book, computed: Callable[[str], Any], addin_file: str = "the add-in edition") -> Portable:
    """Turn the built add-in edition ``book`` into the portable edition, in place (module docstring).

    ``computed(ref)`` gives the add-in edition's recalculated value of ``'Sheet'!$A$1`` (its cells and its frozen
    values' inputs); ``addin_file`` is the add-in edition's file name, for the staleness check's words. Returns what
    was done; WorkbookError if a formula would pass Excel's 8,192 characters."""
    p = _Pass(book, computed)
    p.addin_file = addin_file
    wb = book.wb
    sheets = [ws for ws in wb.worksheets if ws.title not in (CATALOG, WORKINGS)]
    formulas = {
        (ws.title, c.coordinate): t
        for ws in sheets
        for row in ws.iter_rows()
        for c in row
        if (t := _text(c.value)) is not None
    }
    p.formula_cells = set(formulas)
    p.formulas = formulas
    # which cells only Python computes, and the cells newer than Excel 2016 that they read
    frozen: dict[tuple[str, str], list[str]] = {}
    todo = [k for k, t in formulas.items() if any(python_only(n) for n in registry_calls(t))]
    while todo:
        key = todo.pop()
        if key in frozen:
            continue
        refs = _references(parse(formulas[key]))
        frozen[key] = refs
        for ref in refs:
            target = _resolve(book, ref, key[0])
            if target is None:
                continue
            sheet, rng = target
            newer = [f for f in _calls(parse(formulas.get((sheet, rng), "="))) if f.removeprefix("_XLFN.") in _NEWER]
            if ":" not in rng and newer:
                todo.append((sheet, rng))
    # every other formula in native form
    for (sheet, coord), text in formulas.items():
        if (sheet, coord) in frozen:
            continue
        ws = wb[sheet]
        array = isinstance(ws[coord].value, ArrayFormula)
        try:
            new = p.rewrite(text, "" if array else sheet, coord)
        except _Frozen:  # a Python-only call reached through a name or a validation: never in these templates
            raise WorkbookError(f"{sheet}!{coord} calls a Python-only function the pass did not freeze") from None
        if new == text[1:]:
            continue
        if array:
            ws[coord] = ArrayFormula(ws[coord].value.ref, stored("=" + new))
        else:
            p.write(ws, coord, new)
    _freeze(p, frozen)
    _names_and_rules(p)
    _checks(p)
    _dress(p)
    return p.out


def _resolve(book: Book, ref: str, sheet: str) -> tuple[str, str] | None:
    """A reference (or a defined name) as ``(sheet, "A1")`` or ``(sheet, "A1:B2")``; None for something else."""
    name = ref.split("!")[-1] if "!" not in ref else None
    if name is not None and not _A1.match(name):
        dn = book.wb.defined_names.get(name)
        if dn is None:
            return None
        ref = dn.attr_text
    s, rng = _split(ref, sheet)
    if s not in book.wb.sheetnames:
        return None
    return s, rng


def _cells(rng: str) -> list[str]:
    if ":" not in rng:
        return [rng]
    c0, r0, c1, r1 = range_boundaries(rng)
    return [f"{get_column_letter(c)}{r}" for r in range(r0, r1 + 1) for c in range(c0, c1 + 1)]


def _literal_or_error(value: Any) -> str:
    code = _error_code(value)
    if code is not None:
        return _ERROR_FORMULAS.get(code, "NA()")
    if value is None:
        return '""'
    return native.literal(value)


def _freeze(p: _Pass, frozen: dict[tuple[str, str], list[str]]) -> None:
    """Write the frozen values, and per sheet of frozen cells the inputs they were computed for, with a check."""
    wb, book = p.book.wb, p.book
    by_sheet: dict[str, list[tuple[str, str]]] = {}
    for key in frozen:
        by_sheet.setdefault(key[0], []).append(key)
    stamp = TEMPLATE_DATE.strftime("%Y-%m-%d")
    for sheet in by_sheet:
        if sheet not in frozen_layout.KEPT_ON:  # recalc would refuse the file
            raise ValueError(f"{sheet}: values computed by Python are kept only on {', '.join(frozen_layout.KEPT_ON)}")
    for sheet, keys in sorted(by_sheet.items(), key=lambda item: frozen_layout.KEPT_ON.index(item[0])):
        inputs: list[tuple[str, str]] = []
        for key in keys:
            for ref in frozen[key]:
                target = _resolve(book, ref, key[0])
                if target is None:
                    continue
                for c in _cells(target[1]):
                    k = (target[0], c)
                    if k not in frozen and k not in inputs:
                        inputs.append(k)
        arrays = {
            (s, coord): wb[s][coord].value.ref for s, coord in keys if isinstance(wb[s][coord].value, ArrayFormula)
        }
        for (s, coord), ref in list(arrays.items()):
            if ":" in ref.replace("$", "").strip():  # an array over several cells: each keeps INDEX of it
                del arrays[(s, coord)]
                wb[s][coord] = None
                keys.remove((s, coord))
                c1, r1 = range_boundaries(ref.replace("$", ""))[:2]
                if r1 == 1:
                    raise ValueError(f"{s}!{ref}: an array kept as values needs a row above it")
                above = f"${get_column_letter(c1)}${r1 - 1}"  # not its own corner: ROW(A11) in A11 is circular
                body = p.formulas[(s, coord)][1:]
                for cell in _cells(ref.replace("$", "")):
                    p.formulas[(s, cell)] = f"=INDEX({body},ROW()-ROW({above}),COLUMN()-COLUMN({above})+1)"
                    keys.append((s, cell))
        for s, coord in keys:
            value = p.computed(_cell_ref(s, coord))
            p.out.frozen[f"{s}!{coord}"] = value
            ws = wb[s]
            code = _error_code(value)
            if isinstance(ws[coord].value, ArrayFormula):
                ws[coord] = None
            if code is not None:
                ws[coord] = "=" + _ERROR_FORMULAS.get(code, "NA()")
            else:
                ws[coord] = value
        ws = p.workings
        p.row += 1
        top = p.row
        put_text(
            ws[f"A{p.row}"],
            f"{frozen_layout.TITLE_PREFIX}{sheet}: {len(keys)} cells hold the add-in edition's "
            f"values of {stamp}, for these inputs",
            "Label",
        )
        p.row += 1
        for h, col in zip(frozen_layout.INPUTS_HEADER, "ABCDE"):
            put_text(ws[f"{col}{p.row}"], h, "Label")
        p.row += 1
        first = p.row
        for s, coord in inputs:
            ref = _cell_ref(s, coord)
            put_text(ws[f"A{p.row}"], f"{s} {coord}", "Label")
            p.write(
                ws, f"B{p.row}", f'IF(ISERROR({ref}),"error "&ERROR.TYPE({ref}),IF(ISBLANK({ref}),"(empty)",{ref}))'
            )
            put_text(ws[f"C{p.row}"], sheet, "Unit")
            was = p.computed(ref)
            code = _error_code(was)
            if code is not None:
                ws[f"D{p.row}"] = f"error {_ERROR_TYPE.get(code, 7)}"
            elif was is None:
                ws[f"D{p.row}"] = "(empty)"
            else:
                ws[f"D{p.row}"] = was
            b, d = f"B{p.row}", f"D{p.row}"
            p.write(
                ws,
                f"E{p.row}",
                f"IF(ISNUMBER({d}),IF(ISNUMBER({b}),ABS({b}-{d})<=1E-12*ABS({d}),FALSE),"
                f"IF(ISNUMBER({b}),FALSE,EXACT({b},{d})))",
            )
            p.row += 1
        p.out.inputs[sheet] = [f"{s}!{c}" for s, c in inputs]
        if inputs:
            p.checks.append(
                (
                    f"{sheet}: values computed by Python for other inputs (Workings): run xlsxplan recalc "
                    f"on this file, or open the add-in edition ({p.addin_file})",
                    f"IF(COUNTIF({WORKINGS}!$E${first}:$E${p.row - 1},FALSE)>0,1,0)",
                )
            )
        _kept_formulas(p, sheet, keys, top, arrays)


def _rectangles(cells: list[str]) -> list[str]:
    """``cells`` (``B6``, ``C6``, ...) as the rectangles that runs of columns repeated on consecutive rows make
    (``B6:V105``)."""
    rows: dict[int, list[tuple[int, int]]] = {}
    for col, row in sorted(range_boundaries(a)[:2] for a in cells):
        runs = rows.setdefault(row, [])
        if runs and runs[-1][1] == col - 1:
            runs[-1] = (runs[-1][0], col)
        elif not runs or runs[-1][1] < col:
            runs.append((col, col))
    active: dict[tuple[int, int], int] = {}  # a run of columns -> the first row it spans
    out: list[tuple[int, int, int, int]] = []
    prev = 0
    for r in sorted(rows):
        for run in [run for run in active if run not in rows[r] or prev != r - 1]:
            out.append((active.pop(run), run[0], prev, run[1]))
        for run in rows[r]:
            active.setdefault(run, r)
        prev = r
    out += [(r0, run[0], prev, run[1]) for run, r0 in active.items()]
    return [
        f"{get_column_letter(c1)}{r1}" + ("" if (r1, c1) == (r2, c2) else f":{get_column_letter(c2)}{r2}")
        for r1, c1, r2, c2 in sorted(out)
    ]


def _kept_formulas(
    p: _Pass, sheet: str, keys: list[tuple[str, str]], top: int, arrays: dict[tuple[str, str], str]
) -> None:
    """Below a block's inputs, each add-in formula of its frozen cells with the cells that hold it (an array formula
    of one cell said so), and a hidden defined name over the block (:mod:`xlsxplan.headless.frozen`): ``xlsxplan
    recalc`` computes them again when an input has changed. An array formula over several cells is kept as INDEX of
    it in each of its cells (:func:`_freeze`), which recalc computes cell by cell."""
    by_text: dict[tuple[str, str], list[str]] = {}
    for key in keys:
        kind = frozen_layout.ARRAY if key in arrays else frozen_layout.PLAIN
        by_text.setdefault((p.formulas[key][1:], kind), []).append(key[1])
    ws = p.workings
    for h, col in zip(frozen_layout.FORMULAS_HEADER, "ABCD"):
        put_text(ws[f"{col}{p.row}"], h, "Label")
    p.row += 1
    for (text, kind), cells in by_text.items():
        rects = _rectangles(cells)
        for i in range(0, len(rects), 200):  # a cell holds 32,767 characters
            for col, value in zip("ABCD", (",".join(rects[i : i + 200]), text, sheet, kind)):
                ws[f"{col}{p.row}"] = value
                ws[f"{col}{p.row}"].style = "Explanatory Text"
            p.row += 1
    n = sum(1 for name in p.book.wb.defined_names if name.startswith(frozen_layout.NAME_PREFIX)) + 1
    name = f"{frozen_layout.NAME_PREFIX}{n}"
    p.book.wb.defined_names[name] = DefinedName(name, attr_text=f"{WORKINGS}!$A${top}:$E${p.row - 1}", hidden=True)


def _names_and_rules(p: _Pass) -> None:
    """Defined names, data validations and conditional formats in one-formula native form."""
    wb = p.book.wb

    def native_text(text: str) -> str:
        if not any(f in text.upper() for f in registry.FUNCTIONS):
            return text
        return stored(render(parse("=" + text), p.call)) if registry_calls("=" + text) else text

    p.sheet = p.cell = ""
    tables = {
        p.tables.models.keys: p.tables.models.key_range,
        p.tables.accelerators.keys: p.tables.accelerators.key_range,
    }
    for ws in wb.worksheets:  # a dropdown of the catalog's presets reads the Catalog's table of them
        for dv in ws.data_validations.dataValidation:
            target = _resolve(p.book, dv.formula1 or "", ws.title) if dv.type == "list" else None
            if target is not None and ":" in target[1]:
                keys = tuple(wb[target[0]][c].value for c in _cells(target[1]))
                if keys in tables:
                    dv.formula1 = tables[keys]
    for dn in wb.defined_names.values():
        dn.attr_text = native_text(dn.attr_text)
    for ws in wb.worksheets:
        for dv in ws.data_validations.dataValidation:
            for attr in ("formula1", "formula2"):
                text = getattr(dv, attr)
                if text:
                    setattr(dv, attr, native_text(text))
        for rng in ws.conditional_formatting:
            for rule in rng.rules:
                rule.formula = [native_text(f) for f in (rule.formula or [])]


def _checks(p: _Pass) -> None:
    """The guards' and the frozen values' rows on the Checks sheet, below the master check, which counts them."""
    master = p.book.master_check
    if master is None or not p.checks:
        return
    ws = p.book.wb[master.sheet]
    cell = ws[f"{master.col}{master.row}"]
    r = master.row + 2
    put_text(ws[f"A{r}"], "Portable edition: refused inputs and values computed by Python", "Heading 2")
    r += 1
    first = r
    for label, formula in p.checks:
        put_text(ws[f"A{r}"], label.replace("#", "number"), "Label")
        p.write(ws, f"B{r}", f"IFERROR({formula},1)")
        ws[f"B{r}"].style = "Check Cell"
        ws[f"B{r}"].number_format = FMT["check"]
        check_format(ws, f"B{r}")
        r += 1
    ws.print_area = f"A1:F{r - 1}"  # every row the master check counts
    old = str(cell.value)
    m = re.fullmatch(r"=MIN\(1,(.*)\)", old)
    inner = m.group(1) if m else f"({old[1:]})"
    cell.value = f"=MIN(1,{inner}+SUM({master.col}{first}:{master.col}{r - 1}))"


def _guide(p: _Pass) -> None:
    """The Guide's words on the add-in and on the xlwings.conf sheet, for the portable edition."""
    if "Guide" not in p.book.wb.sheetnames:
        return
    ws = p.book.wb["Guide"]
    for r in range(1, ws.max_row + 1):
        text = ws[f"A{r}"].value
        if not isinstance(text, str):
            continue
        step = re.match(r"(\d+)\. In Excel, install the xlsxplan add-in", text)
        if step:
            first = "This is the portable edition: native formulas only, which recalculate in Excel 2016 and later,"
            ws[f"A{r}"].value = f"{step.group(1)}. {first} LibreOffice and Google Sheets with no add-in."
            second = f"the add-in edition ({p.addin_file}) has xlsxplan's functions in the cells."
            ws[f"A{r + 1}"].value = f"   Workings shows each function's steps and constants; {second}"
        elif text == "xlwings.conf":
            ws[f"A{r}"].value = "Workings, Catalog"
            ws[f"B{r}"].value = "Each function's steps and argument checks; the catalog's tables with sources"
        elif text in _ADDIN_ONLY_SHEETS:
            ws[f"B{r}"].value = f"In the add-in edition only ({p.addin_file}): {ws[f'B{r}'].value}"


def _printed_columns(p: _Pass, ws: Worksheet) -> int:
    """How many columns of a reference sheet print: all of Workings; the Catalog's tables but the residuals of the
    efficiency ranges, one column each (hundreds), which print as far as the widest other table."""
    if ws is not p.catalog_ws:
        return ws.max_column
    bands = p.tables.bands
    if bands is None:
        return ws.max_column
    above = bands.first_row - 1  # the ranges' title row
    return max(c.column for row in ws.iter_rows(max_row=above - 1) for c in row if c.value is not None)


def _dress(p: _Pass) -> None:
    """Titles, the master check on row 2, and protection, as the other sheets have."""
    _guide(p)
    title = p.book.title
    master = p.book.master_check
    for ws, purpose in (
        (
            p.workings,
            "Line items of the functions of several steps, one step a row (FAST), the checks of each "
            "function's arguments, and the inputs of the values only Python computes.",
        ),
        (
            p.catalog_ws,
            "The catalog the plan reads: model and accelerator presets, numeric formats, optimizers, "
            "prices and calibrated efficiencies, each row with its source.",
        ),
    ):
        put_text(ws["A1"], f"{title}: {ws.title}", "Title")
        if master is not None:
            put_text(ws["A2"], "Master check (0 problems = OK; see Checks)", "Label")
            ws["B2"] = "=" + master.text(ws.title)
            ws["B2"].style = "Check Cell"
            ws["B2"].number_format = FMT["check"]
            check_format(ws, "B2")
        put_text(ws["A3"], purpose, "Explanatory Text")
        ws.column_dimensions["A"].width = 60
        ws.column_dimensions["B"].width = 18
        ws.print_area = f"A1:{get_column_letter(_printed_columns(p, ws))}{ws.max_row}"
        ws.print_title_rows = "1:2"
        page_setup(ws, title)
        if ws is p.workings:
            ws.page_setup.fitToHeight = -(-ws.max_row // WORKINGS_ROWS_PER_PAGE)
        ws.protection.sheet = True
        ws.protection.formatColumns = False
        ws.protection.formatRows = False
