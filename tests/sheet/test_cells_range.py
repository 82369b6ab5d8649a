"""Range arguments: a whole column reaches the function as one sample, while the other arguments still broadcast.

A function that reads a pasted distribution (measured prompt lengths, say) declares its argument with the domain
kind ``range`` (the ``TokenSample`` alias). The adapters pass that argument whole instead of calling the function
once per cell; inside it, empty cells are skipped, numbers typed as text are read and error values pass on.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xlsxplan.domains import Domain, Tokens, TokenSample, checked
from xlsxplan.errors import ArgumentError, CellError, OutOfRangeError
from xlsxplan.registry import describe
from xlsxplan.sheet.cells import evaluate, evaluate_broadcast


@checked
def share_above(lengths: TokenSample, cap_tokens: Tokens = 1000) -> float:
    """Share of a sample above a cap.

    Parameters
    ----------
    lengths : tuple of float
        Measured lengths, one per cell [tokens].
    cap_tokens : float, default 1000
        Cap [tokens].

    Returns
    -------
    float
        Share above the cap [fraction].
    """
    return sum(x > cap_tokens for x in lengths) / len(lengths)


SHARE = describe("SHARE_ABOVE", share_above, "test")
COLUMN = [[500], [1500], [None], ["2500"], [800]]  # as a spreadsheet column arrives: 2-D, an empty cell, text


def test_the_core_function_receives_a_tuple_of_numbers():
    assert share_above([500, 1500, 2500, 800]) == 0.5
    assert share_above(np.array([[500, 1500], [2500, 800]])) == 0.5
    assert share_above(1500) == 1.0  # one cell is a range of one


def test_range_domain_describes_itself_for_the_function_wizard():
    assert (
        SHARE.args[0].domain.describe() == "a range of cells, each a number from 0 to 1e+18 (empty cells are skipped)"
    )
    assert SHARE.args[0].help() == "Measured lengths, one per cell. [tokens]"


def test_a_range_is_passed_whole_not_broadcast():
    # 4 numbers (the empty cell skipped, the text read), 2 above 1,000: one value, not five
    assert evaluate_broadcast(SHARE, [COLUMN, 1000]) == 0.5
    assert evaluate(SHARE, [COLUMN, 1000]) == 0.5


def test_other_arguments_still_broadcast_against_a_whole_range():
    out = evaluate_broadcast(SHARE, [COLUMN, [[600], [1000], [3000]]])
    assert out.shape == (3, 1)
    assert out[:, 0].tolist() == [0.75, 0.5, 0.0]
    row = evaluate_broadcast(SHARE, [COLUMN, [[600, 3000]]])
    assert row.tolist() == [[0.75, 0.0]]
    # the engine and xlwings hand over numpy arrays: the range must still arrive whole, not cell by cell
    as_arrays = evaluate_broadcast(SHARE, [np.array(COLUMN, dtype=object), np.array([[600], [1000], [3000]])])
    assert as_arrays[:, 0].tolist() == [0.75, 0.5, 0.0]


def test_a_row_or_a_block_is_read_in_reading_order():
    assert evaluate_broadcast(SHARE, [[[500, 1500, 2500, 800]], 1000]) == 0.5
    assert evaluate_broadcast(SHARE, [np.array([[500, 1500], [2500, 800]], dtype=object), 2000]) == 0.25


def test_an_error_inside_the_range_is_passed_on_with_its_place():
    result = evaluate_broadcast(SHARE, [[[500], ["#N/A"], [800]], 1000])
    assert result == CellError("#N/A", "lengths holds #N/A (value 2 of 3), passed on from its cell")
    explained = CellError("#DIV/0!", "from an upstream formula")
    assert evaluate(SHARE, [[500, explained], 1000]) == explained


def test_bad_cells_are_refused_naming_the_argument_and_the_place():
    assert evaluate(SHARE, [[500, -3, 800], 1000]) == CellError(
        "#NUM!", "lengths (value 2 of 3) must be a number from 0 to 1e+18, got -3"
    )
    assert evaluate(SHARE, [[500, "1,200"], 1000]) == CellError(
        "#VALUE!", "lengths (value 2 of 2) must be a number, got text '1,200': type it without thousands separators"
    )
    assert evaluate(SHARE, [[500, True], 1000]) == CellError(
        "#VALUE!", "lengths (value 2 of 2) must be a number from 0 to 1e+18, got TRUE"
    )


def test_an_empty_range_or_cell_is_refused():
    assert evaluate(SHARE, [[None, "", None], 1000]) == CellError(
        "#VALUE!", "lengths must hold at least one number, got only empty cells"
    )
    assert evaluate(SHARE, [None, 1000]) == CellError("#VALUE!", "lengths is required but the cell is empty")


def test_domain_check_errors_from_python():
    with pytest.raises(OutOfRangeError, match=r"^lengths \(value 3 of 3\) must be a number from 0 to 1e\+18, got -1$"):
        share_above([1, 2, -1])
    with pytest.raises(ArgumentError, match=r"^lengths must hold at least one number, got no values$"):
        share_above([])
    big = Domain("range", 0, 1)
    with pytest.raises(ArgumentError, match=r"^x must hold at most 1,048,576 cells, got 1,048,577$"):
        big.check("x", [0.5] * 1_048_577)


cell_values = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.text(max_size=8),
    st.booleans(),
    st.sampled_from([CellError("#N/A"), CellError("#DIV/0!", "why"), "#REF!"]),
)
ranges = st.recursive(cell_values, lambda inner: st.lists(inner, max_size=4), max_leaves=12)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(lengths=ranges, cap=st.one_of(cell_values, st.lists(cell_values, max_size=3)))
def test_no_range_input_escapes_the_error_layer(lengths, cap):
    result = evaluate_broadcast(SHARE, [lengths, cap])
    values = result.ravel().tolist() if isinstance(result, np.ndarray) else [result]
    for value in values:
        assert isinstance(value, CellError) or (isinstance(value, float) and 0 <= value <= 1)
