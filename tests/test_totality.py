"""Every function is total (issue #8): any mix of cell contents ends as a value or one clean error.

Property-based tests over numbers (zero, negative, NaN, infinity, 1e308, booleans), text (numbers as text, "1,000",
units, unicode), empty cells, error values and arrays of these, through each face: the Python core, the shared cell
layer (what the UDFs and the engine call), and the headless engine evaluating a formula.
"""

from __future__ import annotations

import math

import numpy as np
from examples import EXAMPLES, excel_literal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xlsxplan import registry
from xlsxplan.cells import EXCEL_ERRORS, CellError, evaluate, evaluate_broadcast
from xlsxplan.engine import evaluate_formula
from xlsxplan.errors import XlsxplanError

FUNCTIONS = list(registry.FUNCTIONS.values())

numbers = st.one_of(
    st.sampled_from([0, -1, 1, 0.5, 2, 80, 1e308, -1e308, 1e-308, 2**53, float("nan"), float("inf"), -float("inf")]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**20), max_value=10**20),
)
texts = st.one_of(
    st.sampled_from(["80", " 2.5 ", "1E+6", "90%", "1,000", "80 GB", "fp8", "bf16", "Qwen2.5-72B", "H100", "", "layers",
                     "memory_gb", "x", "١٢", "８０", "∞", "NaN", "inf", "=1+1", "#N/A"]),
    st.text(max_size=12),
)  # fmt: skip
cell_values = st.one_of(numbers, texts, st.booleans(), st.none(), st.sampled_from([CellError(e) for e in EXCEL_ERRORS]))
python_values = st.one_of(numbers, texts, st.booleans(), st.none())


def _is_clean_message(message: str) -> bool:
    return bool(message) and "\n" not in message and "Traceback" not in message and len(message) < 400


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(FUNCTIONS), st.data())
def test_python_face_returns_a_value_or_raises_one_clean_xlsxplan_error(fn, data):
    args = [data.draw(python_values) for _ in fn.args]
    n = data.draw(st.integers(min_value=fn.min_args, max_value=len(fn.args)))
    try:
        result = fn(*args[:n])
    except XlsxplanError as err:
        assert _is_clean_message(err.message)
        assert err.excel_error in ("#VALUE!", "#NUM!", "#N/A")
        return
    if isinstance(result, float):
        assert math.isfinite(result)
    else:
        assert isinstance(result, (int, str, list))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(FUNCTIONS), st.data())
def test_cell_face_never_raises(fn, data):
    args = [data.draw(cell_values) for _ in range(data.draw(st.integers(0, len(fn.args) + 1)))]
    result = evaluate(fn, args)
    if isinstance(result, CellError):
        assert result.code in EXCEL_ERRORS
        assert _is_clean_message(result.message) or result.message == ""
    elif isinstance(result, float):
        assert math.isfinite(result)
    else:
        assert isinstance(result, (int, str, list))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(FUNCTIONS), st.data())
def test_cell_face_with_ranges_gives_one_result_per_element(fn, data):
    rows = data.draw(st.integers(1, 4))
    args = []
    for _ in fn.args:
        if data.draw(st.booleans()):
            args.append([[data.draw(cell_values)] for _ in range(rows)])
        else:
            args.append(data.draw(cell_values))
    result = evaluate_broadcast(fn, args)
    if isinstance(result, np.ndarray):
        assert result.shape[1] == 1
        for item in result.ravel():
            assert isinstance(item, (int, float, str, CellError))
    else:
        assert isinstance(result, (int, float, str, CellError))


formula_values = st.one_of(
    st.sampled_from([0, -1, 1, 0.5, 80, 1e300, "80", "1,000", "80 GB", "fp8", "H100", "Qwen2.5-72B", "layers"]),
    st.floats(min_value=-1e12, max_value=1e12, allow_nan=False),
    st.integers(min_value=-(10**9), max_value=10**9),
    st.booleans(),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(FUNCTIONS), st.data())
def test_engine_face_returns_a_value_or_an_error_value(fn, data):
    args = [data.draw(formula_values) for _ in fn.args]
    literals = ["TRUE" if a is True else "FALSE" if a is False else excel_literal(a) for a in args]
    result = evaluate_formula(f"={fn.name}({','.join(literals)})")
    if result.error is not None:
        assert result.error.code in EXCEL_ERRORS
        assert "\n" not in result.error.message
    else:
        assert result.value is not None


def test_the_examples_cover_the_registry():
    assert set(EXAMPLES) == set(registry.FUNCTIONS)
