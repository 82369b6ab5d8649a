"""The native queueing forms (xlsxplan.native): Erlang B through POISSON.DIST, TTFT_AT_LOAD_S and REPLICAS_FOR_TTFT,
against the Python recursion and search, in the headless engine and in LibreOffice, and their limits flagged.

tests/test_native.py property-tests every native form over random valid inputs; here the servers are swept across the
range the native Erlang B claims (1 to native.ERLANG_SERVERS slots), with loads from far below to just below the
servers, where the Poisson ratio has the most digits to lose, and the limits' checks turn FALSE beyond them.
"""

from __future__ import annotations

import math
import random
import shutil
import subprocess
from typing import Any

import openpyxl
import pytest
from openpyxl.utils import get_column_letter

from xlsxplan import native, registry
from xlsxplan.core.queueing import erlang_c_value
from xlsxplan.headless.engine import new_book

SOFFICE = shutil.which("soffice") or shutil.which("libreoffice")
RELATIVE = 1e-9
SERVERS = (1, 2, 3, 5, 8, 13, 21, 34, 51, 89, 144, 233, 377, 500, 610, 750, 900, 987, 1000)


def _loads(n: int, rng: random.Random) -> list[float]:
    """Loads on ``n`` servers from a tenth of them to within a hair of them, most within a few sqrt(n) below."""
    out = [n * 0.1, n * 0.5, n * (1 - 1e-6), n - 0.5 * math.sqrt(n) if n > 1 else 0.7]
    out += [n - rng.uniform(0, 6) * math.sqrt(n) for _ in range(6)]
    return [a for a in out if 0 < a < n]


def _erlang_cases() -> list[tuple[int, float, float]]:
    rng = random.Random(20261202)
    return [(n, a, erlang_c_value(n, a, 0.0)) for n in SERVERS for a in _loads(n, rng)]


def _erlang_c_formula(servers: str, load: str) -> str:
    b = native._erlang_b(servers, load)
    return native._erlang_c(f"({b})", servers, load)


def _agrees(got: Any, want: float) -> bool:
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        return False
    return math.isclose(got, want, rel_tol=RELATIVE, abs_tol=0.0) or got == want


def test_erlang_c_through_poisson_equals_the_recursion_up_to_the_limit():
    """C(n, a) from the Poisson ratio equals the Python recursion within 1e-9 relative in the headless engine for
    every server count up to the limit and loads up to a millionth below saturation (C above 1e-200: below, both
    are far under any percentile's share and the wait is 0)."""
    book = new_book()
    book.add_sheet("S")
    cases = _erlang_cases()
    for i, (n, a, _) in enumerate(cases, 1):
        book.set_value("S", i, 1, n)
        book.set_value("S", i, 2, a)
        book.set_formula("S", i, 3, "=" + _erlang_c_formula(f"A{i}", f"B{i}"))
    book.evaluate_all()
    wrong = [(n, a, book.get_value("S", i, 3), want) for i, (n, a, want) in enumerate(cases, 1)
             if want > 1e-200 and not _agrees(book.get_value("S", i, 3), want)]  # fmt: skip
    assert len(cases) > 150 and wrong == []


# --- scenarios: a replica's queue and the fleet sized for a target ----------------------------------------------


def _scenarios() -> list[tuple[str, list[Any]]]:
    """TTFT_AT_LOAD_S and REPLICAS_FOR_TTFT over fleets of 1 to thousands of replicas, batches to the limit, P50 to
    P99.9, service_cv 0 to 3, targets from just above the prefill to loose."""
    rng = random.Random(5)
    out: list[tuple[str, list[Any]]] = [
        ("TTFT_AT_LOAD_S", [6.94, 3, 51, 0.54, 4.98, 2.96, 0.99, 1]),  # the docstring's: P99 3.37 s
        ("REPLICAS_FOR_TTFT", [6.94, 5, 0.99, 51, 0.54, 4.98, 2.96, 1]),  # 3
        ("REPLICAS_FOR_TTFT", [6.94, 3, 0.99, 51, 0.54, 4.98, 2.96, 1]),  # 4
    ]
    while len(out) < 120:
        batch = rng.choice([1, 2, 8, 16, 51, 128, 256, 512, 1000])
        prefill, decode = 10 ** rng.uniform(-2, 0.5), 10 ** rng.uniform(-1, 1.5)
        capacity = batch / (prefill + decode) * rng.uniform(0.3, 1.0)  # chunked: at most the slots' own rate
        rps = capacity * 10 ** rng.uniform(-1, 3.5)
        pct, cv = rng.choice([0.5, 0.9, 0.95, 0.99, 0.999]), rng.choice([0, 0.5, 1, 1.5, 3])
        if rng.random() < 0.5:
            slot = max(prefill + decode, batch / capacity)
            replicas = math.floor(rps * slot / batch / rng.uniform(0.5, 0.999)) + 1
            args = [rps, replicas, batch, prefill, decode, capacity, pct, cv]
            name = "TTFT_AT_LOAD_S"
        else:
            target = prefill * (1 + 10 ** rng.uniform(-3, 2))
            args, name = [rps, target, pct, batch, prefill, decode, capacity, cv], "REPLICAS_FOR_TTFT"
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
        w.write(r, name, args, lambda r_, c, v: book.set_value("S", r_, c, v),
                lambda r_, c, f: book.set_formula("S", r_, c, f))  # fmt: skip
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


def test_a_batch_beyond_the_native_erlang_range_is_flagged():
    """Python computes 2,000 slots; the native check turns FALSE (its POISSON.DIST loses digits there in the headless
    engine), and the Checks sheet's words say why."""
    args = [100.0, 3, native.ERLANG_SERVERS + 1, 0.5, 5.0, 200.0, 0.99, 1]
    assert registry.FUNCTIONS["TTFT_AT_LOAD_S"](*args) > 0
    assert _check("TTFT_AT_LOAD_S", args)[0] is False
    assert _check("TTFT_AT_LOAD_S", args, limits=False)[0] is True
    args[2] = native.ERLANG_SERVERS
    assert _check("TTFT_AT_LOAD_S", args)[0] is True
    for name in ("TTFT_AT_LOAD_S", "REPLICAS_FOR_TTFT"):
        assert f"batch at most {native.ERLANG_SERVERS:,} slots" in native.check_words(name)


def test_replicas_beyond_the_search_bound_are_flagged():
    """A target with no room to wait at a million requests a second on one slot each: Python finds about 1e8
    replicas, past the native bisection's 2^20 above the overloaded count, so the check is FALSE and the count it
    reached does not meet the target."""
    args = [1e6, 1.0, 0.99, 1, 0.5, 0.5, 1.0, 1]
    want = registry.FUNCTIONS["REPLICAS_FOR_TTFT"](*args)
    assert want > 1e6 + 2**native.REPLICA_SEARCH_STEPS
    ok, got = _check("REPLICAS_FOR_TTFT", args)
    assert ok is False and got < want
    assert _check("REPLICAS_FOR_TTFT", args, limits=False)[0] is True
    args[0] = 1e3  # a thousand requests a second: about 1e5 replicas, within the bound
    ok, got = _check("REPLICAS_FOR_TTFT", args)
    assert ok is True and got == registry.FUNCTIONS["REPLICAS_FOR_TTFT"](*args)
    assert "the native search's bound" in native.check_words("REPLICAS_FOR_TTFT")


def test_the_queueing_functions_are_no_longer_python_only():
    for name in ("TTFT_AT_LOAD_S", "REPLICAS_FOR_TTFT", "SLOT_S", "ENGINE_KV_GB", "ENGINE_KV_TOKENS",
                 "ENGINE_MAX_CONCURRENCY", "SPEC_STEP_S", "SPEC_TOKENS_PER_STEP", "SPEC_TOKS"):  # fmt: skip
        assert name in native.NATIVE and name not in native.PYTHON_ONLY
    assert set(native.PYTHON_ONLY) == {"PLAN_OPTIONS", "PLAN_OPTIONS_AT"}


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
    for i, (n, a, _) in enumerate(erlang, 1):
        erl.cell(row=i, column=1, value=n)
        erl.cell(row=i, column=2, value=a)
        erl.cell(row=i, column=3, value="=" + _erlang_c_formula(f"A{i}", f"B{i}"))
    cases = _scenarios()
    w = _Book(None, "Scenarios")
    for r, (name, args) in enumerate(cases, 1):
        w.write(r, name, args, lambda r_, c, v: scen.cell(row=r_, column=c, value=v),
                lambda r_, c, f: scen.cell(row=r_, column=c, value=f))  # fmt: skip
    effs = _efficiency_cases()
    for i, args in enumerate(effs, 1):
        for j, v in enumerate(args):
            eff.cell(row=i, column=2 + j, value=v)
        refs = [f"{get_column_letter(2 + j)}{i}" for j in range(len(args))]
        eff.cell(row=i, column=1, value="=" + tables.lookup("EFFICIENCY", *refs))
    original = tmp_path / "queueing.xlsx"
    wb.save(original)
    outdir = tmp_path / "converted"
    subprocess.run([SOFFICE, "--headless", "--norestore", f"-env:UserInstallation=file://{tmp_path / 'profile'}",
                    "--convert-to", "xlsx", "--outdir", str(outdir), str(original)],
                   check=True, capture_output=True, timeout=240)  # fmt: skip
    got = openpyxl.load_workbook(outdir / "queueing.xlsx", data_only=True)
    wrong: list[Any] = [(n, a, got["Erlang"].cell(row=i, column=3).value, want)
                        for i, (n, a, want) in enumerate(erlang, 1)
                        if want > 1e-200 and not _agrees(got["Erlang"].cell(row=i, column=3).value, want)]  # fmt: skip
    s = got["Scenarios"]
    wrong += _wrong([(s.cell(row=r, column=1).value, s.cell(row=r, column=26).value)
                     for r in range(1, len(cases) + 1)], cases)  # fmt: skip
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
