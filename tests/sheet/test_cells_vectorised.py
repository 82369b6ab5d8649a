"""One array call runs a function's arithmetic once over numpy columns, and gives, element by element, exactly what a
call with that element's cells gives (xlsxplan.sheet.cells: the vectorised path, the element path, the pure-Python one)."""

from __future__ import annotations

import functools
import math
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.examples import EXAMPLES
from xlsxplan.errors import CellError
from xlsxplan.infra import elementwise
from xlsxplan.registry import FUNCTIONS
from xlsxplan.sheet import cells
from xlsxplan.sheet.cells import evaluate, evaluate_broadcast

# Where the math does not allow one pass over arrays, and why; every other registry function runs vectorised.
ELEMENT_BY_ELEMENT = {
    # names in, looked up in the catalog: a range of names is a lookup per name (a single name with columns of
    # numbers does run vectorised, e.g. MODEL_KV_GB)
    "MODEL_SPEC",
    "GPU_SPEC",
    "MODEL_SOURCE",
    "GPU_SOURCE",
    "BYTES_PER_PARAM",
    "FORMAT_SOURCE",
    "OPTIMIZER_BYTES",
    "MODEL_EXPERT_PARAMS_B",
    "GPU_PRICE",
    "GPU_PRICE_SOURCE",
    "COST_SPEC",
    "COST_SOURCE",
    "MODELS",
    "GPUS",  # no arguments: nothing to broadcast
    "SPEC_ACCEPT_LENGTH",  # its one argument is a range, read whole: nothing to broadcast
    # the Erlang B recursion runs from a start set by the load up to the servers, stopping once below its floor: a
    # number of steps that differs from element to element
    "ERLANG_C",
    "QUEUE_WAIT_S",
    "TTFT_AT_LOAD_S",
    # a root search on the load (regula falsi, then a bracket on the replica count) that iterates until it converges
    "REPLICAS_FOR_TTFT",
    "UTILISATION_FOR_TTFT",
    "PLAN_OPTIONS",  # spills one table per call: a range in place of an argument is one error per element
    "PORTFOLIO",  # spills one table per call, as PLAN_OPTIONS
    "EFFICIENCY",  # calibration factors looked up by kind, accelerator class and format, with the width inside
    "PLAN_OPTIONS_AT",  # one cell of a search over the catalog, planned once per set of arguments and remembered
    "TRAIN_OPTIONS",  # spills one table per call, as PLAN_OPTIONS
    "QUEUE_WAIT_GG_S",  # the Erlang B recursion, as QUEUE_WAIT_S
    # a range read whole (cash flows, an hourly profile) and a search over its levels for the cheapest commitment
    "NPV_USD",
    "PROFILE_GPUS",
    "TIER_MIX_COST",
    "TIER_MIX_BASE",
    "TIER_MIX_SHARE",
    # names looked up in the finance tables
    "DEMAND_PROFILE",
    "DEMAND_SOURCE",
    "HOSTED_PRICE",
    "HOSTED_SOURCE",
    "GRID_INTENSITY",
    "GRID_SOURCE",
}


def _same(a: object, b: object) -> bool:
    """Equal and of one type: floats bit for bit (repr round-trips a double exactly), errors with their message."""
    return type(a) is type(b) and repr(a) == repr(b)


# worked calls whose example gives names where a number may go too
_NUMBERS_FOR_NAMES = {"MODEL_WEIGHTS_GB": ("Llama-2-13B", 0.5625, 2)}


def _base(name: str) -> list[object]:
    fn = FUNCTIONS[name]
    example = list(_NUMBERS_FOR_NAMES.get(name, EXAMPLES[name]))
    return example + [a.default for a in fn.args[len(example) :]]


def test_the_functions_that_go_element_by_element_are_the_listed_ones():
    vectorised = {name for name, fn in FUNCTIONS.items() if hasattr(fn.func, "call_array")}
    assert set(FUNCTIONS) - vectorised == ELEMENT_BY_ELEMENT


# --- what a cell may hold -----------------------------------------------------------------------------------------

_ODD = st.sampled_from(
    [
        None,
        "",
        True,
        False,
        "#N/A",
        "#DIV/0!",
        CellError("#REF!", "A1 was deleted"),
        "1,000",
        "80 GB",
        "abc",
        " 8 ",
        "90%",
        "1E+3",
        float("inf"),
        float("nan"),
        10**400,
        -0.0,
    ]
)


def _number(arg, base):
    d = arg.domain
    near = st.sampled_from([0.5, 0.9, 1.0, 1.1, 2.0, 10.0]).map(
        lambda f: base * f if isinstance(base, (int, float)) else f
    )
    bounds = st.sampled_from([b for b in (d.low, d.high, 0, 1, -1, 2.5, 1e308, 5e-324) if b is not None])
    wide = st.floats(
        min_value=d.low if d.low is not None else -1e9, max_value=d.high if d.high is not None else 1e9, allow_nan=False
    )
    value = st.one_of(near, near, bounds, wide, st.integers(-3, 10**6))
    if d.kind == "whole":
        value = st.one_of(value.map(lambda v: round(v) if math.isfinite(v) and abs(v) < 1e15 else v), value)
    text = value.map(lambda v: str(v) if not isinstance(v, float) or math.isfinite(v) else "1")
    names = st.sampled_from(["fp8", "bf16", "q4_k_m", "int4", "nope"]) if d.kind == "bytes" else st.nothing()
    return st.one_of(value, value, value, text, names, _ODD)


def _cell(arg, base):
    """One cell for ``arg``: mostly near the worked example, sometimes anywhere in (or out of) its domain, sometimes
    text, empty, a boolean or an error value."""
    if arg.domain.kind == "text":
        return st.one_of(st.just(base), st.just(base), st.sampled_from(["nope", "", 3, "H100", "Llama-2-7B"]), _ODD)
    if arg.domain.kind == "range":
        return st.one_of(st.just(base), st.just([[600], [None], ["900"], [2000]]), st.just(["#N/A", 1]))
    return _number(arg, base)


@functools.cache
def _cells(name: str, i: int) -> tuple[st.SearchStrategy, st.SearchStrategy]:
    """The strategies for argument ``i`` of ``name``: one cell, and one cell or the worked example itself. Built
    once per argument, not at every draw: hypothesis validates a strategy on its first draw, and a fresh one at each
    draw spent most of this file's time there; the values drawn are the same."""
    base = _base(name)[i]
    cell = _cell(FUNCTIONS[name].args[i], base)
    return cell, st.one_of(st.just(base), cell)


_BOOLEANS, _ROWS, _COLS = st.booleans(), st.integers(1, 5), st.integers(1, 4)
_SHAPES = st.sampled_from(["cell", "cell", "column", "row"])


@st.composite
def _call(draw, name):
    """Arguments for ``name``: some given as one cell, some as an R x 1 column, some as a 1 x C row (broadcast into
    a grid), trailing optional ones sometimes left out."""
    fn = FUNCTIONS[name]
    given_n = len(fn.args)
    while given_n and fn.args[given_n - 1].optional and draw(_BOOLEANS):
        given_n -= 1
    rows, cols = draw(_ROWS), draw(_COLS)
    args = []
    for i in range(given_n):
        arg = fn.args[i]
        shape = "cell" if arg.domain.kind == "range" else draw(_SHAPES)
        cell, cell_or_base = _cells(name, i)
        if shape == "cell":
            args.append(draw(cell_or_base))
        elif shape == "column":
            args.append([[draw(cell)] for _ in range(rows)])
        else:
            args.append([[draw(cell) for _ in range(cols)]])
    return args


def _elements(fn, args, shape):
    """The cells of each element of the broadcast, as evaluate takes them."""
    rows, cols = shape
    for r in range(rows):
        for c in range(cols):
            out = []
            for i, a in enumerate(args):
                if isinstance(a, list) and not (i < len(fn.args) and fn.args[i].domain.kind == "range"):
                    out.append(a[r if len(a) > 1 else 0][c if len(a[0]) > 1 else 0])
                else:
                    out.append(a)
            yield (r, c), out


_SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
"""20 random calls a function (about 290 functions), new ones every run: 30 cost the suite 5 s more."""


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(n for n, fn in FUNCTIONS.items() if fn.args and not fn.spills))
@_SETTINGS
@given(data=st.data())
def test_every_element_of_an_array_call_is_the_scalar_call_of_its_cells(name, data):
    # random valid and invalid cells, one cell, columns and rows broadcast into a grid; the vectorised path, the
    # element path (numpy without the vectorised arithmetic) and the pure-Python broadcaster all agree with evaluate
    fn = FUNCTIONS[name]
    args = data.draw(_call(name))
    out = evaluate_broadcast(fn, args)
    if not isinstance(out, np.ndarray):  # every argument one cell: the scalar call itself
        ((_, cells_),) = _elements(fn, args, (1, 1))
        assert _same(out, evaluate(fn, cells_))
        return
    with mock.patch.object(cells, "_vectorised", lambda *a: None):
        by_element = evaluate_broadcast(fn, args)
    with mock.patch.object(cells, "_numpy", lambda: None):
        plain = evaluate_broadcast(fn, args)
    assert isinstance(plain, list) and len(plain) == out.shape[0] and {len(row) for row in plain} == {out.shape[1]}
    for (r, c), cells_ in _elements(fn, args, out.shape):
        expected = evaluate(fn, cells_)
        assert _same(out[r, c], expected), (r, c, cells_)
        assert _same(by_element[r, c], expected), (r, c, cells_)
        assert _same(plain[r][c], expected), (r, c, cells_)


@pytest.mark.parametrize("name", sorted(n for n, fn in FUNCTIONS.items() if fn.table))
def test_a_table_spills_from_one_call_and_a_range_of_arguments_is_one_error_per_element(name):
    # a table fills a block by itself (PLAN_OPTIONS), so it is the one exception to the test above: its one call is
    # the table, and a range in place of an argument gives each element one error, never a table inside a cell
    fn = FUNCTIONS[name]
    base = _base(name)
    table = evaluate_broadcast(fn, base)
    assert isinstance(table, np.ndarray) and table.ndim == 2 and table.shape[0] > 1 and table.shape[1] > 1
    assert _same(table.tolist(), evaluate(fn, base).tolist())
    i = _numeric(name)[0]
    args = list(base)
    args[i] = [[base[i]], [base[i]]]
    out = evaluate_broadcast(fn, args)
    assert out.shape == (2, 1)
    for got in out.ravel().tolist():
        assert isinstance(got, CellError) and got.code == "#VALUE!"
        assert got.message == f"{name} spills one table: give one value per argument, not a range of them"


def _valid_column(name: str, i: int, n: int) -> list[list[object]]:
    """A column of ``n`` legal values for argument ``i`` of ``name``, spread around its worked example."""
    fn = FUNCTIONS[name]
    base = _base(name)[i]
    rng = np.random.default_rng(i)
    factors = rng.uniform(0.5, 1.5, n)
    if fn.args[i].domain.kind == "whole":
        return [[max(int(round(base * f)), fn.args[i].domain.low or 0)] for f in factors]
    if fn.args[i].domain.high is not None:
        return [[min(float(base * f), fn.args[i].domain.high)] for f in factors]
    return [[float(base * f)] for f in factors]


def _numeric(name: str) -> list[int]:
    fn = FUNCTIONS[name]
    base = _base(name)
    return [
        i
        for i, a in enumerate(fn.args)
        if a.domain.kind in ("number", "whole", "bytes") and isinstance(base[i], (int, float)) and base[i] != 0
    ]


@pytest.mark.parametrize("name", sorted(set(FUNCTIONS) - ELEMENT_BY_ELEMENT))
def test_the_arithmetic_runs_once_over_the_columns(name):
    # a column of legal values for each numeric argument in turn, and for all of them at once: the vectorised path
    # decides every element (never the whole call handed to the element path), and the results are the scalar ones
    fn = FUNCTIONS[name]
    base = _base(name)
    if not _numeric(name):
        pytest.skip(f"{name} has no numeric argument with a nonzero example")
    cases = [[i] for i in _numeric(name)] + [_numeric(name)]
    for varied in cases:
        args = list(base)
        for i in varied:
            args[i] = _valid_column(name, i, 50)
        with mock.patch.object(cells, "_broadcast_checked", lambda *a: pytest.fail(f"{name}: element path taken")):
            out = evaluate_broadcast(fn, args)
        for (r, c), cells_ in _elements(fn, args, out.shape):
            assert _same(out[r, c], evaluate(fn, cells_)), (name, varied, cells_)


def test_a_whole_result_stays_a_whole_number_in_every_element():
    for name, args, expected in [
        ("MAX_BATCH", [72.7, "fp8", 327680, [[2300], [4600], [1e12]], 2, 80], [94, 47, 0]),
        ("REPLICAS", [[[20833], [0], [4387.0]], 4387], [5, 0, 1]),
        ("KV_HEADS_PER_GPU", [8, [[1, 3, 16]]], [8, 3, 1]),
    ]:
        out = evaluate_broadcast(FUNCTIONS[name], args).ravel().tolist()
        assert out == expected and all(type(v) is int for v in out), name


def test_a_column_against_a_row_is_one_pass_over_the_grid():
    kv = FUNCTIONS["KV_BYTES_PER_TOKEN"]
    with mock.patch.object(cells, "_broadcast_checked", lambda *a: pytest.fail("element path taken")):
        out = evaluate_broadcast(kv, [[[32], [80]], [[8, 16]], 128])
    assert out.tolist() == [[131072.0, 262144.0], [327680.0, 655360.0]]  # 2 x layers x kv_heads x 128 x 2 bytes


def test_bad_cells_are_errors_in_their_own_cells_with_the_scalar_message():
    # the checks run as masks over the column; each refused cell gets the one-line message a scalar call gives
    fn = FUNCTIONS["DECODE_TOKS_TOTAL"]
    batch = [[1], [94], [0], ["x"], [None], [True], ["#N/A"], [2.5], [1e308], ["94"]]
    out = evaluate_broadcast(fn, [72.7, "fp8", 2, 3.35, batch, 327680, 2300])
    assert out[2, 0] == CellError("#NUM!", "batch must be a whole number from 1 to 1,000,000,000, got 0")
    assert out[3, 0] == CellError("#VALUE!", "batch must be a number, got text 'x'")
    assert out[7, 0] == CellError("#NUM!", "batch must be a whole number from 1 to 1,000,000,000, got 2.5")
    assert (
        out[9, 0] == out[1, 0] and round(out[1, 0]) == 4387
    )  # "94" read as 94; "Back-of-the-Envelope Estimation for LLM Systems", section 4
    for (b,), got in zip(batch, out[:, 0]):
        assert got == evaluate(fn, [72.7, "fp8", 2, 3.35, b, 327680, 2300])


def test_a_check_inside_the_function_refuses_only_its_own_elements():
    # MFU above 1 is refused by the function's body, not by a domain: over a column, only those elements take the
    # scalar path (for their message); the others come from the one pass
    fn = FUNCTIONS["MFU"]
    out = evaluate_broadcast(fn, [0.03595, [[6.55e6], [6.55e9]], 8, 989.5])
    assert out[0, 0] == evaluate(fn, [0.03595, 6.55e6, 8, 989.5])
    assert out[1, 0].code == "#NUM!" and out[1, 0].message.startswith("tokens_per_s implies 17848% of peak")


def test_refused_outside_an_array_call_is_a_type_error():
    assert elementwise.refused(True) is True and elementwise.refused(False) is False
    with pytest.raises(TypeError, match="outside an array call"):
        elementwise.refused(np.array([True]))


def test_the_helpers_are_python_s_own_on_plain_numbers():
    assert elementwise.minimum(3, 5.0) == 3 and type(elementwise.minimum(3, 5.0)) is int
    assert elementwise.where(True, 1, 2.0) == 1 and elementwise.pick(2, (0.0, 1.0, 2.5)) == 2.5
    assert elementwise.power(1.1, 3) == 1.1**3 and type(elementwise.ceil(2.2)) is int
    assert elementwise.count_above((1.0, 5.0, 9.0), 4.0) == 2
    assert elementwise.count_above((1.0, 5.0, 9.0), np.array([0.0, 5.0, 9.0])).tolist() == [3, 1, 0]


_DOMAINS = {
    id(a.domain): (a.name, a.domain)
    for fn in FUNCTIONS.values()
    for a in fn.args
    if a.domain.kind in ("number", "whole", "bytes")
}


@pytest.mark.slow
@pytest.mark.parametrize("name, domain", list(_DOMAINS.values()), ids=[n for n, _ in _DOMAINS.values()])
@settings(max_examples=40, deadline=None)
@given(
    xs=st.lists(
        st.one_of(
            st.floats(),
            st.integers(-10, 10**7).map(float),
            st.sampled_from([0.0, 1.0, 1e9, 1e18, 1e30, -1.0, 0.5, 5e-324]),
        ),
        min_size=1,
    )
)
def test_array_checks_refuse_what_the_one_value_check_refuses(name, domain, xs):
    values, refused = domain.check_array(np.array(xs, dtype=np.float64))
    for x, v, bad in zip(xs, values.tolist(), refused.tolist()):
        try:
            expected = domain.check(name, x)
        except Exception:  # noqa: BLE001
            assert bad, x
        else:
            assert not bad and _same(v, expected), x


def test_numpy_is_imported_by_the_first_array_call_and_not_before():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from xlsxplan import registry\n"
        "from xlsxplan.sheet import cells\n"
        "kv = registry.FUNCTIONS['KV_BYTES_PER_TOKEN']\n"
        "assert cells.evaluate_broadcast(kv, [[[80]], 8, 128]) == 327680.0\n"  # one cell, as xlwings hands it
        "before = 'numpy' in sys.modules\n"
        "cells.evaluate_broadcast(kv, [[[32], [80]], 8, 128])\n"
        "print(before, 'numpy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["False", "True"]


def _nest(inner):
    """One level more: lists and tuples of what ``inner`` draws."""
    return st.one_of(st.lists(inner, max_size=3), st.lists(inner, max_size=3).map(tuple))


_nested = st.recursive(
    st.one_of(st.floats(allow_nan=False), st.sampled_from(["x", "", None, True])), _nest, max_leaves=12
)


@settings(max_examples=300, deadline=None)
@given(raw=st.lists(_nested, max_size=4))
def test_a_range_is_read_as_numpy_reads_it(raw):
    # the pure-Python reading of a range (no numpy in Lite) gives the shape and cells numpy's dtype=object gives
    try:
        arr = np.array(raw, dtype=object)
    except ValueError:  # numpy refuses some ragged nestings outright
        return
    if arr.ndim > 2:
        with pytest.raises(cells.ArgumentError, match=f"got {arr.ndim} dimensions"):
            cells._grid(raw)
        return
    grid = cells._grid(raw)
    shape = (arr.shape[0], 1) if arr.ndim == 1 else arr.shape
    assert (grid.rows, grid.cols) == shape
    assert grid.cells == arr.reshape(-1).tolist()
    assert grid.kinds == set(map(type, grid.cells))


@pytest.mark.parametrize("name", sorted(n for n, fn in FUNCTIONS.items() if fn.args and fn.spills and not fn.table))
def test_a_list_spills_from_one_call_and_a_range_of_arguments_is_one_error(name):
    # a list fills a column by itself (DEMAND_PROFILE, PROFILE_GPUS): one call gives it as a column, and a range in
    # place of an argument that is not itself a range is one clear error, never a list inside a cell
    fn = FUNCTIONS[name]
    base = _base(name)
    column = evaluate_broadcast(fn, base)
    assert isinstance(column, np.ndarray) and column.shape == (len(fn(*base)), 1)
    assert [row[0] for row in column.tolist()] == fn(*base)
    spread = next(i for i, a in enumerate(fn.args) if a.domain is None or a.domain.kind != "range")
    args = list(base)
    args[spread] = [[base[spread]], [base[spread]]]
    err = evaluate_broadcast(fn, args)
    assert isinstance(err, CellError) and "spills one list: give one value per argument" in err.message
