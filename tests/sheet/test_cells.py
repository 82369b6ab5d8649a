"""How cell contents become arguments: the rules every adapter shares (see xlsxplan.sheet.cells)."""

from __future__ import annotations

from typing import Annotated

import numpy as np
import pytest

from xlsxplan.domains import Domain, checked
from xlsxplan.errors import CellError
from xlsxplan.registry import FUNCTIONS
from xlsxplan.sheet.cells import evaluate, evaluate_broadcast

KV = FUNCTIONS["KV_BYTES_PER_TOKEN"]
USABLE = FUNCTIONS["USABLE_GB"]
WEIGHTS = FUNCTIONS["WEIGHTS_GB"]


@pytest.mark.parametrize("raw", [8, 8.0, "8", " 8 ", "8.0", "8E+0", np.float64(8), np.int64(8)])
def test_numbers_and_numbers_typed_as_text_are_read(raw):
    assert evaluate(KV, [80, raw, 128]) == 327_680


def test_percent_text_is_a_fraction():
    assert evaluate(USABLE, [2, 80, "90%"]) == pytest.approx(144)


@pytest.mark.parametrize(
    "raw, message",
    [
        ("1,000", "kv_heads must be a number, got text '1,000': type it without thousands separators"),
        ("8 heads", "kv_heads must be a number, got text '8 heads': give the number alone"),
        ("eight", "kv_heads must be a number, got text 'eight'"),
        ("８", "kv_heads must be a number, got text '８'"),  # a full-width digit is not read as 8
        (True, "kv_heads must be a number, got TRUE"),
        (object(), "kv_heads must be a number, got a object"),
    ],
)
def test_text_and_booleans_are_refused_with_the_reason(raw, message):
    result = evaluate(KV, [80, raw, 128])
    assert result == CellError("#VALUE!", message)


def test_units_in_text_name_the_expected_unit():
    assert evaluate(WEIGHTS, ["80 GB"]).message.endswith("give the number alone, in B params")


def test_empty_cells_take_the_default_or_are_required():
    assert evaluate(KV, [80, 8, 128, None]) == 327_680
    assert evaluate(KV, [80, 8, 128, ""]) == 327_680
    assert evaluate(KV, [80, None, 128]) == CellError("#VALUE!", "kv_heads is required but the cell is empty")


def test_error_values_propagate_first_in_argument_order():
    assert evaluate(KV, [CellError("#REF!"), CellError("#N/A"), 128]).code == "#REF!"
    assert evaluate(KV, [80, "#N/A", 128]) == CellError("#N/A", "kv_heads is #N/A, passed on from its cell")


def test_a_precision_name_is_accepted_for_a_byte_count():
    assert evaluate(KV, [80, 8, 128, "fp8"]) == 163_840
    assert evaluate(KV, [80, 8, 128, "fp9"]).code == "#N/A"


def test_overflow_in_a_result_is_a_num_error():
    result = evaluate(FUNCTIONS["TRAIN_FLOPS"], [1e6, 1e18])
    assert result == 6e33  # large but finite
    assert isinstance(evaluate(FUNCTIONS["TRAIN_FLOPS"], [1e6, 1e19]), CellError)


def test_broadcast_column_against_row_makes_a_grid():
    out = evaluate_broadcast(WEIGHTS, [[[7], [70]], [[2, 1]]])
    assert out.shape == (2, 2)
    assert out.tolist() == [[14, 7], [140, 70]]


def test_broadcast_matches_scalar_calls_element_by_element():
    layers = [[80], [28], [-1], ["x"]]
    out = evaluate_broadcast(KV, [layers, 8, 128])
    for (row,), got in zip(layers, out[:, 0]):
        assert got == evaluate(KV, [row, 8, 128])


def test_a_one_d_list_counts_as_a_column():
    out = evaluate_broadcast(KV, [[80, 28], [8, 4], 128])
    assert out.shape == (2, 1)


def test_mismatched_ranges_are_one_clear_error():
    out = evaluate_broadcast(KV, [[[80], [28], [32]], [[8], [4]], 128])
    assert out == CellError(
        "#VALUE!", "KV_BYTES_PER_TOKEN: ranges of 3x1 and 2x1 cells cannot be matched up element by element"
    )


def test_a_single_cell_range_is_a_scalar():
    assert evaluate_broadcast(KV, [[[80]], 8, 128]) == 327_680


def test_too_many_and_too_few_arguments():
    assert evaluate(WEIGHTS, [1, 2, 3]).message == "WEIGHTS_GB takes at most 2 arguments, got 3"
    assert evaluate(KV, [80]).message.startswith("KV_BYTES_PER_TOKEN needs kv_heads (argument 2)")


def test_a_column_of_scenarios_equals_scalar_calls_through_the_checked_path():
    # The broadcast reads and checks each distinct cell once (domains.checked's call_checked); its results, errors
    # included, must be what a scalar call of each row gives, first failure in evaluate's order.
    fn = FUNCTIONS["DECODE_TOKS_TOTAL"]
    batch = [[1], [94], [0], ["x"], [None], [True], ["#N/A"], [2.5], [1e308]]
    params = [[72.7], [-1], [72.7], [72.7], [72.7], ["1,000"], [72.7], [72.7], ["#REF!"]]
    out = evaluate_broadcast(fn, [params, "fp8", 2, 3.35, batch, 327680, 2300])
    assert out.shape == (9, 1)
    for (p,), (b,), got in zip(params, batch, out[:, 0]):
        assert got == evaluate(fn, [p, "fp8", 2, 3.35, b, 327680, 2300])
    assert out[1, 0] == CellError("#NUM!", "params_b must be a positive number up to 1,000,000, got -1")
    assert out[5, 0].message == "params_b must be a number, got text '1,000': type it without thousands separators"
    assert out[8, 0].code == "#REF!"  # an error passed in wins over batch's 1e308 being out of range


def test_a_range_with_no_cells_is_one_clear_error():
    assert evaluate_broadcast(KV, [[], 8, 128]) == CellError("#VALUE!", "KV_BYTES_PER_TOKEN: a range with no cells")


def test_implausible_values_are_used_but_collected_as_warnings_once_each():
    from xlsxplan.sheet.cells import collect_warnings

    decode = FUNCTIONS["DECODE_TOKS"]
    with collect_warnings() as warnings:
        assert evaluate(decode, [72.7, 1, 2, 3350]) > 90_000
        evaluate_broadcast(decode, [[[72.7], [7.6]], 1, 2, 3350])
        evaluate(FUNCTIONS["WEIGHTS_GB"], [72.7e3])
    assert warnings == [
        "bandwidth_tb_s = 3,350 is outside the usual range 0.01 to 50: check its unit",
        "params_b = 72,700 is outside the usual range 0.0001 to 10,000: check its unit",
    ]
    assert evaluate(decode, [72.7, 1, 2, 3350]) > 90_000  # outside a collect block nothing is recorded


def test_a_refused_value_earns_no_warning_on_either_path():
    # evaluate must not note an "outside the usual range" warning before the domain check, or a value it
    # then refuses is also warned about, while the broadcast path checks first. Both note a value only once the
    # call it belongs to succeeded.
    from xlsxplan.sheet.cells import collect_warnings

    moe = FUNCTIONS["MOE_PARAMS_READ_B"]  # refuses active_params_b above params_b after both pass their domains
    calls = [
        (WEIGHTS, [-1.0]),  # outside the domain and the usual range
        (moe, [2e5, 3e5, 8, 2]),  # both legal and implausible, refused together
        (moe, [[[2e5], [2e4]], 1e5, 8, 2]),  # a column: the first element refused, the second fine
    ]
    for fn, args in calls:
        with collect_warnings() as one_by_one:
            if any(isinstance(a, list) for a in args):
                for row in args[0]:
                    evaluate(fn, [row[0], *args[1:]])
            else:
                evaluate(fn, args)
        with collect_warnings() as broadcast:
            evaluate_broadcast(fn, args)
        assert broadcast == one_by_one, fn.name
    assert one_by_one == [
        "params_b = 200,000 is outside the usual range 0.0001 to 10,000: check its unit",
        "active_params_b = 100,000 is outside the usual range 0.0001 to 10,000: check its unit",
    ]
    with collect_warnings() as warnings:
        assert evaluate(WEIGHTS, [-1.0]).code == "#NUM!"
        assert evaluate(moe, [2e5, 3e5, 8, 2]).code == "#NUM!"
    assert warnings == []


@checked
def _broken(x: Annotated[float, Domain("number", 0, 10)]) -> float:
    """A function with a bug.

    Parameters
    ----------
    x : float
        A number [count].

    Returns
    -------
    float
        Nothing useful [count].
    """
    return 1 / (x - x)


def test_the_last_resort_and_passed_on_messages_are_the_same_on_every_path():
    # One helper each, pinned: a core bug ends as the same #VALUE! line, and an
    # error value without a reason gets the same one, whether a call is scalar or broadcast.
    from xlsxplan.registry import describe

    fn = describe("BROKEN", _broken, "test")
    line = CellError("#VALUE!", "BROKEN: ZeroDivisionError: float division by zero")
    assert evaluate(fn, [1]) == line
    assert evaluate_broadcast(fn, [[[1], [2]]]).tolist() == [[line], [line]]
    passed = CellError("#N/A", "x is #N/A, passed on from its cell")
    assert evaluate(fn, [CellError("#N/A")]) == passed
    assert evaluate_broadcast(fn, [[[CellError("#N/A")], [1]]]).tolist() == [[passed], [line]]


def test_one_list_of_excel_errors_for_every_face():
    # One list of error values for cells and udfs: with seven in one and seventeen in the other, `recalc --set
    # X=#BLOCKED!` stored the text "#BLOCKED!" and a #BLOCKED! cell reached a function as text to be read as a number.
    from xlsxplan import calibration, precision
    from xlsxplan.errors import EXCEL_ERRORS
    from xlsxplan.excel import udfs
    from xlsxplan.headless.workbook import parse_value
    from xlsxplan.sheet.cells import as_error

    assert udfs.ERROR_CODES is EXCEL_ERRORS
    for code in ("#BLOCKED!", "#CONNECT!", "#BUSY!", "#PYTHON!", "#N/A"):
        assert as_error(code) == CellError(code)
        assert parse_value(code) == CellError(code)
        assert evaluate(WEIGHTS, [code]) == CellError(code, f"params_b is {code}, passed on from its cell")
    # and one normalisation of format names for the precision table and the calibration
    assert precision.format_key(" Q4_K-M ") == "q4km"
    assert calibration.format_group(" Q4_K-M ") == calibration.format_group("q4_k_m") == "4-bit"  # via precision


def test_a_repeated_tail_after_a_varying_lead_is_checked_once_and_answers_as_a_full_check(monkeypatch):
    # KV_BYTES_PER_TOKEN with its first argument declared varying (as PLAN_OPTIONS_AT's row and column are): a call
    # whose other arguments equal the last call's, type for type, coerces the lead only; any other call checks all
    import dataclasses
    import functools

    from xlsxplan.sheet import cells

    @functools.wraps(KV.func)
    def varying(*args):
        return KV.func(*args)

    varying.varying_lead = 1
    fn = dataclasses.replace(KV, name="KV_VARYING_TEST", func=varying)
    coerced = []
    real = cells.coerce
    monkeypatch.setattr(cells, "coerce", lambda arg, raw: coerced.append(arg.name) or real(arg, raw))
    # (arguments, arguments coerced): the first call checks all three; the second repeats the tail (8, 128); text
    # "8" and the bool True are other types (True refused at the second argument, nothing kept); then (8, 128)
    # again after "8", a new tail (8, 64) and that tail repeated
    cases = [
        ([80, 8, 128], 3),
        ([40, 8, 128], 1),
        ([40, "8", 128], 3),
        ([40, True, 128], 2),
        ([20, 8, 128], 3),
        ([20, 8, 64], 3),
        ([10, 8, 64], 1),
    ]
    for args, count in cases:
        coerced.clear()
        got = evaluate(fn, args)
        assert len(coerced) == count, (args, coerced)
        want = evaluate(KV, args)
        if isinstance(want, CellError):
            assert isinstance(got, CellError) and (got.code, got.message) == (want.code, want.message)
        else:
            assert got == want, args


def test_plain_numbers_reach_the_function_without_a_coercion_each_and_answer_as_coerced_ones(monkeypatch):
    # a call whose arguments are all plain numbers (as a sheet's cells give them) passes them as they came: coerce
    # returns a float or an int of an argument that is no range as it is; text, a bool, an empty cell or a range
    # argument still go through it, and the answers are those of a call that coerces every argument
    from xlsxplan.sheet import cells

    coerced = []
    real = cells.coerce
    monkeypatch.setattr(cells, "coerce", lambda arg, raw: coerced.append(arg.name) or real(arg, raw))
    cases = [([80, 8, 128], 0), ([80.0, 8, 128.0], 0), ([80, "8", 128], 3), ([80, True, 128], 2), ([80, None, 128], 2)]
    for args, count in cases:
        coerced.clear()
        got = evaluate(KV, args)
        assert len(coerced) == count, (args, coerced)
        want = [real(arg, raw) for arg, raw in zip(KV.args, args)] if count == 0 else None
        if want is not None:
            assert got == KV.func(*want)
    assert evaluate(KV, [80, True, 128]) == CellError("#VALUE!", "kv_heads must be a number, got TRUE")


def test_a_call_of_plain_numbers_finds_its_function_s_facts_once_and_asks_no_float_result_if_it_is_numpy(monkeypatch):
    # each call of a sheet's formula reads what it needs to know of the function (its varying lead, whether it
    # takes a range, which arguments have a usual range) once, where it read them twice and asked its lead again,
    # and a float result is not asked whether it is a numpy scalar; answers and warnings are as before
    from xlsxplan.sheet import cells

    found, asked = [], []
    facts, numpy_scalar = cells._facts, cells._is_numpy_scalar
    monkeypatch.setattr(cells, "_facts", lambda fn: found.append(fn.name) or facts(fn))
    monkeypatch.setattr(cells, "_is_numpy_scalar", lambda value: asked.append(value) or numpy_scalar(value))
    with cells.collect_warnings() as warnings:
        got = [evaluate(WEIGHTS, [params, 2]) for params in (7.0, 8.0, 20_000.0, 30_000.0)]
    assert got == [WEIGHTS.func(params, 2) for params in (7.0, 8.0, 20_000.0, 30_000.0)]
    assert len(found) == 4 and asked == []
    assert list(warnings) == [
        "params_b = 20,000 is outside the usual range 0.0001 to 10,000: check its unit "
        "(and 1 other value of params_b outside it)"
    ]
