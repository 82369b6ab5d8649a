"""The native queueing forms (xlsxplan.sheet.native): Erlang B (POISSON, Temme), TTFT_AT_LOAD_S and REPLICAS_FOR_TTFT,
against the Python recursion and search, in the headless engine and in LibreOffice, and their limits flagged.

tests/sheet/test_native.py property-tests every native form over random valid inputs; here the servers are swept from 1 to
the domain's million slots, across native.POISSON_SERVERS where the Poisson ratio gives way to Temme's expansion, with
loads from far below to just below the servers, and REPLICAS_FOR_TTFT's check turns FALSE beyond its search's bound.
"""

from __future__ import annotations

import math
import random
from typing import Any

import openpyxl
import pytest
from openpyxl.utils import get_column_letter

from tests.helpers.office import SOFFICE, convert
from xlsxplan import registry
from xlsxplan.core.queueing import erlang_c_value
from xlsxplan.errors import XlsxplanError
from xlsxplan.headless.engine import new_book
from xlsxplan.sheet import native

RELATIVE = 1e-9
SERVERS = (
    1,
    2,
    3,
    5,
    8,
    13,
    21,
    34,
    51,
    89,
    144,
    233,
    377,
    499,
    500,
    501,
    610,
    987,
    1000,
    1597,
    2584,
    4181,
    10946,
    28657,
    100_000,
    317_811,
    1_000_000,
)
"""Both sides of native.POISSON_SERVERS, where the Poisson ratio gives way to Temme's expansion, and up to the
domain's million slots."""
NEVER_WAITS = 1e-17
"""Erlang C below this gives a wait of 0 at every percentile (xlsxplan.core.queueing.NEVER_WAITS): compared above."""


def _loads(n: int, rng: random.Random) -> list[float]:
    """Loads on ``n`` servers from a tenth of them to within a hair of them, most within a few sqrt(n) below."""
    out = [n * 0.1, n * 0.5, n * 0.62, n * (1 - 1e-6), n - 0.5 * math.sqrt(n) if n > 1 else 0.7]
    out += [n - rng.uniform(0, 8) * math.sqrt(n) for _ in range(6)]
    return [a for a in out if 0 < a < n]


def _erlang_cases() -> list[tuple[int, float, float]]:
    rng = random.Random(20261202)
    return [(n, a, erlang_c_value(n, a, 0.0)) for n in SERVERS for a in _loads(n, rng)]


def _erlang_c_items(servers: str, load: str, place: Any) -> list[tuple[str, str, str]]:
    """Erlang C as the native forms write it: Erlang B's line items, then ``B / (1 - rho + rho B)``."""
    steps = [
        *native._erlang_b_steps("", "{load}", "Erlang B"),
        ("result", "Erlang C", native._erlang_c("{b}", "{batch}", "{load}")),
    ]
    return native._items(steps, {"batch": servers, "load": load}, place)


def _write_erlang(cases: list[tuple[int, float, float]], set_value: Any, set_formula: Any) -> None:
    for i, (n, a, _) in enumerate(cases, 1):
        set_value(i, 1, n)
        set_value(i, 2, a)
        cols: dict[str, int] = {}

        def place(key: str, i: int = i, cols: dict[str, int] = cols) -> str:
            return f"{get_column_letter(cols.setdefault(key, 4 + len(cols)))}{i}"

        for key, _, text in _erlang_c_items(f"A{i}", f"B{i}", place):
            set_formula(i, cols[key], "=" + text)
        set_formula(i, 3, "=" + place("result"))


def _erlang_wrong(cases: list[tuple[int, float, float]], value: Any) -> list[Any]:
    return [
        (n, a, value(i), want)
        for i, (n, a, want) in enumerate(cases, 1)
        if not (
            _agrees(value(i), want)
            or (want < NEVER_WAITS and isinstance(value(i), (int, float)) and 0 <= value(i) < NEVER_WAITS)
        )
    ]


def _agrees(got: Any, want: float) -> bool:
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        return False
    return math.isclose(got, want, rel_tol=RELATIVE, abs_tol=0.0) or got == want


def test_erlang_c_equals_the_recursion_from_one_to_a_million_servers():
    """Erlang C from the native Erlang B (the Poisson ratio to 500 servers, Temme's expansion above) equals the
    Python recursion within 1e-9 relative in the headless engine, from 1 to 1e6 servers and loads from a tenth of
    them to a millionth below; where Python's is below 1e-17 (no percentile waits) the native one is too."""
    book = new_book()
    book.add_sheet("S")
    cases = _erlang_cases()
    _write_erlang(cases, lambda r, c, v: book.set_value("S", r, c, v), lambda r, c, f: book.set_formula("S", r, c, f))
    book.evaluate_all()
    assert len(cases) > 250 and _erlang_wrong(cases, lambda i: book.get_value("S", i, 3)) == []
    assert sum(want > 1e-3 and n > native.POISSON_SERVERS for n, _, want in cases) > 40


# --- scenarios: a replica's queue and the fleet sized for a target ----------------------------------------------


def _scenarios() -> list[tuple[str, list[Any]]]:
    """TTFT_AT_LOAD_S and REPLICAS_FOR_TTFT over fleets of 1 to thousands of replicas, batches to the limit, P50 to
    P99.9, service_cv 0 to 3, arrival_cv 1 to 3 (bursts), targets from just above the prefill to loose."""
    rng = random.Random(5)
    out: list[tuple[str, list[Any]]] = [
        ("TTFT_AT_LOAD_S", [6.94, 3, 51, 0.54, 4.98, 2.96, 0.99, 1]),  # the docstring's: P99 3.37 s
        ("REPLICAS_FOR_TTFT", [6.94, 5, 0.99, 51, 0.54, 4.98, 2.96, 1]),  # 3
        ("REPLICAS_FOR_TTFT", [6.94, 3, 0.99, 51, 0.54, 4.98, 2.96, 1]),  # 4
    ]
    while len(out) < 120:
        batch = rng.choice([1, 2, 8, 16, 51, 128, 256, 500, 501, 1000, 2048, 10_000, 100_000])
        prefill, decode = 10 ** rng.uniform(-2, 0.5), 10 ** rng.uniform(-1, 1.5)
        capacity = batch / (prefill + decode) * rng.uniform(0.3, 1.0)  # chunked: at most the slots' own rate
        rps = capacity * 10 ** rng.uniform(-1, 3.5)
        pct, cv = rng.choice([0.5, 0.9, 0.95, 0.99, 0.999]), rng.choice([0, 0.5, 1, 1.5, 3])
        ca = rng.choice([1, 1, 2, 3])
        if rng.random() < 0.5:
            slot = max(prefill + decode, batch / capacity)
            replicas = math.floor(rps * slot / batch / rng.uniform(0.5, 0.999)) + 1
            args = [rps, replicas, batch, prefill, decode, capacity, pct, cv, ca]
            name = "TTFT_AT_LOAD_S"
        else:
            target = prefill * (1 + 10 ** rng.uniform(-3, 2))
            args, name = [rps, target, pct, batch, prefill, decode, capacity, cv, ca], "REPLICAS_FOR_TTFT"
        try:
            registry.FUNCTIONS[name](*args)
        except Exception:  # an overloaded fleet: the generic tests check the refusal is flagged
            continue
        out.append((name, args))
    return out


class _Book:
    """Arguments in a row from column B, the line items to the right, the result in column A, the check in Z."""

    def __init__(self, book: Any, sheet: str) -> None:
        self.book, self.sheet = book, sheet

    def write(self, r: int, name: str, args: list[Any], set_value: Any, set_formula: Any) -> None:
        refs = []
        for j, v in enumerate(args):
            set_value(r, 2 + j, v)
            refs.append(f"{get_column_letter(2 + j)}{r}")
        cols: dict[str, int] = {}

        def place(key: str) -> str:
            return f"{get_column_letter(cols.setdefault(key, 30 + len(cols)))}{r}"

        for key, _, text in native.line_items(name, place, *refs):
            set_formula(r, int(cols[key]), "=" + text)
        set_formula(r, 1, "=" + place("result"))
        set_formula(r, 26, "=" + native.check(name, *refs, result=f"A{r}"))


def _wrong(values: list[tuple[Any, Any]], cases: list[tuple[str, list[Any]]]) -> list[Any]:
    out = []
    for (got, ok), (name, args) in zip(values, cases):
        want = registry.FUNCTIONS[name](*args)
        whole = registry.FUNCTIONS[name].whole
        if ok is not True or not ((got == want) if whole else _agrees(got, want)):
            out.append((name, args, got, want, ok))
    return out


def test_ttft_and_replicas_equal_python_over_scenarios_in_the_headless_engine():
    book = new_book()
    book.add_sheet("S")
    cases = _scenarios()
    w = _Book(book, "S")
    for r, (name, args) in enumerate(cases, 1):
        w.write(
            r,
            name,
            args,
            lambda r_, c, v: book.set_value("S", r_, c, v),
            lambda r_, c, f: book.set_formula("S", r_, c, f),
        )
    book.evaluate_all()
    values = [(book.get_value("S", r, 1), book.get_value("S", r, 26)) for r in range(1, len(cases) + 1)]
    assert len(cases) == 120 and _wrong(values, cases) == []
    assert sum(name == "REPLICAS_FOR_TTFT" for name, _ in cases) > 30


# --- limits: flagged in words, not computed wrongly --------------------------------------------------------------


def _check(name: str, args: list[Any], limits: bool = True) -> Any:
    book = new_book()
    book.add_sheet("S")
    refs = []
    for j, v in enumerate(args, 1):
        book.set_value("S", j, 1, v)
        refs.append(f"A{j}")
    rows: dict[str, int] = {}

    def place(key: str) -> str:
        return f"B{rows.setdefault(key, len(rows) + 1)}"

    for key, _, text in native.line_items(name, place, *refs):
        book.set_formula("S", int(place(key)[1:]), 2, "=" + text)
    book.set_formula("S", 1, 3, "=" + native.check(name, *refs, result=place("result"), limits=limits))
    book.evaluate_all()
    return book.get_value("S", 1, 3), book.get_value("S", int(place("result")[1:]), 2)


def test_many_slots_are_computed_not_refused():
    """Thousands of slots a replica (Temme's expansion): the native value equals Python's and the check is TRUE."""
    for batch in (2000, 50_000):
        args = [3 * batch / 5.5 * 0.97, 3, batch, 0.5, 5.0, batch / 5.0, 0.99, 1]  # 97% of the slots busy
        ok, got = _check("TTFT_AT_LOAD_S", args)
        assert ok is True and _agrees(got, registry.FUNCTIONS["TTFT_AT_LOAD_S"](*args)), (batch, got)
        args = [args[0], 0.6, 0.99, batch, 0.5, 5.0, args[5], 1]
        ok, got = _check("REPLICAS_FOR_TTFT", args)
        assert ok is True and got == registry.FUNCTIONS["REPLICAS_FOR_TTFT"](*args), (batch, got)


def test_replicas_beyond_the_search_bound_are_flagged():
    """A target with no room to wait at a million requests a second on one slot each: Python finds about 1e8
    replicas, past the native bisection's 2^20 above the overloaded count, so the check is FALSE and the count it
    reached does not meet the target."""
    args = [1e6, 1.0, 0.99, 1, 0.5, 0.5, 1.0, 1]
    want = registry.FUNCTIONS["REPLICAS_FOR_TTFT"](*args)
    assert want > 1e6 + 2**native.REPLICA_SEARCH_STEPS
    ok, got = _check("REPLICAS_FOR_TTFT", args)
    assert ok is False and not isinstance(got, (int, float))  # #N/A: not a count
    assert _check("REPLICAS_FOR_TTFT", args, limits=False)[0] is True
    args[0] = 1e3  # a thousand requests a second: about 1e5 replicas, within the bound
    ok, got = _check("REPLICAS_FOR_TTFT", args)
    assert ok is True and got == registry.FUNCTIONS["REPLICAS_FOR_TTFT"](*args)
    assert "the native search's bound" in native.check_words("REPLICAS_FOR_TTFT")


def test_the_queueing_functions_are_no_longer_python_only():
    for name in (
        "TTFT_AT_LOAD_S",
        "REPLICAS_FOR_TTFT",
        "SLOT_S",
        "ENGINE_KV_GB",
        "ENGINE_KV_TOKENS",
        "ENGINE_MAX_CONCURRENCY",
        "SPEC_STEP_S",
        "SPEC_TOKENS_PER_STEP",
        "SPEC_TOKS",
    ):
        assert name in native.NATIVE and name not in native.PYTHON_ONLY
    # what stays Python only: the searches and the catalog lookups by name, none of them a queue
    assert set(native.PYTHON_ONLY) == {
        "PLAN_OPTIONS",
        "PLAN_OPTIONS_AT",
        "TRAIN_OPTIONS",
        "DEMAND_PROFILE",
        "PROFILE_GPUS",
        "TIER_MIX_BASE",
        "TIER_MIX_COST",
        "TIER_MIX_SHARE",
        "GRID_INTENSITY",
        "HOSTED_PRICE",
        "PORTFOLIO",
    }


# --- LibreOffice: one workbook, one conversion ------------------------------------------------------------------


def _efficiency_cases() -> list[list[Any]]:
    rng = random.Random(11)
    out = []
    for kind in ("decode_bandwidth", "prefill", "train_mfu"):
        for g in ("H100-SXM", "A100", "datacenter", "consumer"):
            for q in (0.1, 0.5, 0.9, rng.uniform(0.01, 0.99), 1.0):
                out.append([kind, g, "bf16", 4096, 0, q])
    return out


@pytest.mark.slow
@pytest.mark.skipif(SOFFICE is None, reason="LibreOffice (soffice) is not installed")
def test_libreoffice_computes_erlang_ttft_replicas_and_efficiency_quantiles_as_python_does(tmp_path):
    """LibreOffice recalculates, in one conversion, the Erlang C sweep, the TTFT and replica scenarios and
    EFFICIENCY at P10, P50, P90 and another quantile: every value equals Python's within 1e-9 relative (counts
    exactly), every check is TRUE, and EFFICIENCY is #N/A where Python refuses."""
    wb = openpyxl.Workbook()
    cat = wb.active
    cat.title = "Catalog"
    tables = native.write_catalog(cat)
    erl, scen, eff = wb.create_sheet("Erlang"), wb.create_sheet("Scenarios"), wb.create_sheet("Efficiency")
    erlang = _erlang_cases()
    _write_erlang(
        erlang, lambda r, c, v: erl.cell(row=r, column=c, value=v), lambda r, c, f: erl.cell(row=r, column=c, value=f)
    )
    cases = _scenarios()
    w = _Book(None, "Scenarios")
    for r, (name, args) in enumerate(cases, 1):
        w.write(
            r,
            name,
            args,
            lambda r_, c, v: scen.cell(row=r_, column=c, value=v),
            lambda r_, c, f: scen.cell(row=r_, column=c, value=f),
        )
    effs = _efficiency_cases()
    for i, args in enumerate(effs, 1):
        for j, v in enumerate(args):
            eff.cell(row=i, column=2 + j, value=v)
        refs = [f"{get_column_letter(2 + j)}{i}" for j in range(len(args))]
        eff.cell(row=i, column=1, value="=" + tables.lookup("EFFICIENCY", *refs))
    original = tmp_path / "queueing.xlsx"
    wb.save(original)
    outdir = convert([original], tmp_path)
    got = openpyxl.load_workbook(outdir / "queueing.xlsx", data_only=True)
    wrong: list[Any] = _erlang_wrong(erlang, lambda i: got["Erlang"].cell(row=i, column=3).value)
    s = got["Scenarios"]
    wrong += _wrong(
        [(s.cell(row=r, column=1).value, s.cell(row=r, column=26).value) for r in range(1, len(cases) + 1)], cases
    )
    for i, args in enumerate(effs, 1):
        value = got["Efficiency"].cell(row=i, column=1).value
        try:
            want = registry.FUNCTIONS["EFFICIENCY"](*args)
        except Exception:
            if not (isinstance(value, str) and value.startswith("#")):
                wrong.append((args, value, "an error"))
            continue
        if not _agrees(value, want):
            wrong.append((args, value, want))
    assert wrong == []


def test_the_replicas_check_asks_for_its_result_cell():
    """Its bound is a rule on the result, whose formula is line items only: the check names what it needs."""
    refs = [f"A{i}" for i in range(1, 8)]
    with pytest.raises(XlsxplanError, match="give result, the cell holding it"):
        native.check("REPLICAS_FOR_TTFT", *refs)
    assert "A9" in native.check("REPLICAS_FOR_TTFT", *refs, result="A9")
    assert "ISNUMBER(A9)" not in native.check("REPLICAS_FOR_TTFT", *refs, result="A9", limits=False)
