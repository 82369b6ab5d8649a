"""Every function is total: any mix of cell contents ends as a value or one clean error.

Property-based tests over numbers (zero, negative, NaN, infinity, 1e308, booleans), text (numbers as text, "1,000",
units, unicode), empty cells, error values and arrays of these, through each face: the Python core, the shared cell
layer (what the UDFs and the engine call), the headless engine evaluating a formula (literals, array constants,
NA(), 1/0, omitted arguments, booleans, numbers at the edge of the double range, too few and too many arguments),
and a whole workbook whose formulas read cells and ranges of mixed contents.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.examples import EXAMPLES, excel_literal
from xlsxplan import registry
from xlsxplan.errors import EXCEL_ERRORS, CellError, XlsxplanError
from xlsxplan.headless.engine import evaluate_formula
from xlsxplan.sheet.cells import evaluate, evaluate_broadcast

FUNCTIONS = list(registry.FUNCTIONS.values())

numbers = st.one_of(
    st.sampled_from([0, -1, 1, 0.5, 2, 80, 1e308, -1e308, 1e-308, 2**53, float("nan"), float("inf"), -float("inf")]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**20), max_value=10**20),
)
texts = st.one_of(
    st.sampled_from(
        [
            "80",
            " 2.5 ",
            "1E+6",
            "90%",
            "1,000",
            "80 GB",
            "fp8",
            "bf16",
            "Qwen2.5-72B",
            "H100",
            "",
            "layers",
            "memory_gb",
            "x",
            "١٢",
            "８０",
            "∞",
            "NaN",
            "inf",
            "=1+1",
            "#N/A",
        ]
    ),
    st.text(max_size=12),
)
cell_values = st.one_of(numbers, texts, st.booleans(), st.none(), st.sampled_from([CellError(e) for e in EXCEL_ERRORS]))
python_values = st.one_of(numbers, texts, st.booleans(), st.none())


def _is_clean_message(message: str) -> bool:
    return bool(message) and "\n" not in message and "Traceback" not in message and len(message) < 400


@pytest.mark.slow
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
    elif fn.table:  # a table: a 2-D array of cells
        assert isinstance(result, np.ndarray) and result.ndim == 2
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
    elif fn.table:
        assert isinstance(result, np.ndarray) and result.ndim == 2
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


def _literal(value: object) -> str:
    return "TRUE" if value is True else "FALSE" if value is False else excel_literal(value)


# What an argument of a formula can be, written as Excel writes it: literals, errors made by functions, omitted
# arguments, numbers at the edge of the double range, and array constants mixing all of these.
element_literals = st.one_of(
    formula_values.map(_literal),
    st.sampled_from(["#N/A", "#VALUE!", "#DIV/0!", "#NUM!", '""', '"x"', '"1,000"', "TRUE", "-0", "9.99E+307"]),
)
array_literals = (
    st.integers(1, 3)
    .flatmap(lambda cols: st.lists(st.lists(element_literals, min_size=cols, max_size=cols), min_size=1, max_size=3))
    .map(lambda rows: "{" + ";".join(",".join(row) for row in rows) + "}")
)
argument_literals = st.one_of(
    formula_values.map(_literal),
    st.sampled_from(
        ["NA()", "1/0", "", "TRUE", "FALSE", "9.99E+307", "-9.99E+307", "1E-307", "#N/A", '"80 GB"', '"\u00e9"', "-1"]
    ),
    array_literals,
)


def _assert_value_or_clean_error(value: object, where: str) -> None:
    """A cell's worth: a finite number, text, a bool, empty, or an Excel error with a one-line reason."""
    if isinstance(value, np.ndarray):
        for item in value.ravel():
            _assert_value_or_clean_error(item, where)
        return
    if isinstance(value, CellError):
        assert value.code in EXCEL_ERRORS, where
        assert value.message == "" or _is_clean_message(value.message), (where, value)
    elif isinstance(value, float):
        assert math.isfinite(value), where
    else:
        assert value is None or isinstance(value, (bool, int, str)), (where, type(value))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(FUNCTIONS), st.data())
def test_engine_face_returns_a_value_or_an_error_value(fn, data):
    # too few arguments, each, and one too many; any literal, error, omitted argument or array constant
    n = data.draw(st.integers(max(fn.min_args - 1, 0), len(fn.args) + 1))
    args = [data.draw(argument_literals) for _ in range(n)]
    text = f"={fn.name}({','.join(args)})"
    result = evaluate_formula(text)
    if result.error is not None:
        assert result.error.code in EXCEL_ERRORS, text
        assert _is_clean_message(result.error.message) or result.error.message == "", (text, result.error)
    else:
        assert result.value is not None, text
        _assert_value_or_clean_error(result.value, text)


# Cell contents for the workbook face: what people type, errors typed and computed, empties
cell_contents = st.one_of(
    st.none(),
    formula_values,
    st.sampled_from(
        [
            0,
            -1,
            1e308,
            -1e308,
            1e-308,
            "",
            " ",
            "80",
            "1,000",
            "80 GB",
            "fp8",
            "=1+1",
            "#N/A",
            "\u00e9",
            "#DIV/0!",
            "#VALUE!",
            True,
            False,
            "=1/0",
            "=NA()",
            '=REPT("x",3)',
        ]
    ),
)
DATA_CELLS = [f"{c}{r}" for c in "AB" for r in range(1, 7)]
cell_arguments = st.one_of(
    st.sampled_from([f"Data!{ref}" for ref in DATA_CELLS]),
    st.sampled_from(["Data!A1:A3", "Data!A1:B2", "Data!B4:B6", "Data!A1:B6", "Data!A6:A6", "Empty!A1:A3"]),
    argument_literals,
)


@pytest.mark.slow
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_workbook_face_every_cell_ends_as_a_value_or_an_error(data):
    """Formulas over cells holding mixed text, typed and computed errors, empties and ranges, recalculated in one
    workbook: every cell is a value or an Excel error whose reason is one line, and so is every note written."""
    import tempfile
    from pathlib import Path

    import openpyxl

    from xlsxplan.headless import Workbook

    wb = openpyxl.Workbook()
    sheet = wb.active
    sheet.title = "Data"
    for ref in DATA_CELLS:
        value = data.draw(cell_contents)
        if isinstance(value, str) and value.startswith("=") and value not in ("=1/0", "=NA()", '=REPT("x",3)'):
            sheet[ref].value, sheet[ref].data_type = value, "s"  # text that looks like a formula, kept text
        else:
            sheet[ref] = value
    wb.create_sheet("Empty")
    formulas_sheet = wb.create_sheet("F")
    chosen = data.draw(st.lists(st.sampled_from(FUNCTIONS), min_size=15, max_size=15))
    texts = []
    for row, fn in enumerate(chosen, start=1):
        n = data.draw(st.integers(max(fn.min_args - 1, 0), len(fn.args)))
        args = [data.draw(cell_arguments) for _ in range(n)]
        texts.append(f"={fn.name}({','.join(args)})")
        formulas_sheet.cell(row, 1).value = texts[-1]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "mixed.xlsx"
        wb.save(path)
        book = Workbook.load(path)
        for row, text in enumerate(texts, start=1):
            value = book.get(f"F!A{row}")
            _assert_value_or_clean_error(value, text)
        for where, err in book.errors().items():
            assert _is_clean_message(err.message) or err.message == "", (where, err)
        out = book.save(Path(tmp) / "mixed.recalc.xlsx")
        saved = openpyxl.load_workbook(out)["F"]
        for row in range(1, len(texts) + 1):
            note = saved.cell(row, 1).comment
            assert note is None or "\n" not in note.text


def test_the_examples_cover_the_registry():
    assert set(EXAMPLES) == set(registry.FUNCTIONS)
