"""The checked wrapper's reuse of a repeated argument's check (xlsxplan.domains.checked)."""

from __future__ import annotations

import dataclasses
import math
from typing import Annotated

import pytest

from xlsxplan.domains import Domain, checked
from xlsxplan.errors import ArgumentError, OutOfRangeError


def _counting(monkeypatch) -> list[tuple[str, object]]:
    """Every Domain.check call from now on, as (argument name, value)."""
    seen: list[tuple[str, object]] = []
    real = Domain.check

    def check(self, name, value):
        seen.append((name, value))
        return real(self, name, value)

    monkeypatch.setattr(Domain, "check", check)
    return seen


def _function():
    @checked
    def f(
        x: Annotated[float, Domain("number", 0, 100)],
        n: Annotated[int, Domain("whole", 1, 10)],
        y: Annotated[float, Domain("number", -5, 5)] = 1.0,
    ) -> tuple[object, object, object]:
        return x, n, y

    return f


def test_a_number_an_argument_repeats_is_checked_once_and_the_function_sees_what_a_check_gives(monkeypatch):
    seen = _counting(monkeypatch)
    f = _function()
    assert f(1, 3.0) == (1.0, 3, 1.0)  # an int x becomes a float, a whole 3.0 an int, as the check makes them
    assert len(seen) == 3
    seen.clear()
    for x in (2.0, 3.0, 4.0):  # a sweep: the first argument varies, the others repeat
        assert f(x, 3.0) == (x, 3, 1.0)
    assert [name for name, _ in seen] == ["x", "x", "x"]
    seen.clear()
    assert f(4.0, 3, 1.0) == (4.0, 3, 1.0)  # 3 is an int where 3.0 passed, 4.0 passed for x: the int is checked
    assert seen == [("n", 3)]


@pytest.mark.parametrize(
    ("first", "then", "error", "message"),
    [
        (1.0, True, ArgumentError, "n must be a whole number from 1 to 10, got TRUE"),  # True == 1, another type
        (3.0, 3.5, OutOfRangeError, "n must be a whole number from 1 to 10, got 3.5"),
        (3.0, math.nan, OutOfRangeError, "n must be a whole number from 1 to 10, got NaN"),
    ],
)
def test_a_value_equal_in_python_but_not_the_same_argument_is_checked_again(monkeypatch, first, then, error, message):
    _counting(monkeypatch)
    f = _function()
    f(1.0, first)
    with pytest.raises(error, match=message.replace(".", r"\.")):
        f(1.0, then)


def test_a_refused_value_and_zero_are_never_reused(monkeypatch):
    seen = _counting(monkeypatch)
    f = _function()
    for _ in range(2):
        with pytest.raises(OutOfRangeError, match="x must be a number from 0 to 100, got 101"):
            f(101.0, 3)
    assert [v for name, v in seen if name == "x"] == [101.0, 101.0]
    seen.clear()
    assert math.copysign(1, f(-0.0, 3)[0]) == -1
    assert math.copysign(1, f(0.0, 3)[0]) == 1  # 0.0 == -0.0: each checked, each sign kept
    assert math.copysign(1, f(-0.0, 3)[0]) == -1
    assert [v for name, v in seen if name == "x"] == [-0.0, 0.0, -0.0]


_COUNTED: list[object] = []


@dataclasses.dataclass(frozen=True)
class _Counted(Domain):
    """A domain whose check does more than the base's (here: counts), and does not say its number check is pure."""

    def check(self, name, value):
        _COUNTED.append(value)
        return super().check(name, value)


def test_a_domain_whose_check_reads_more_than_the_number_is_checked_every_time():
    calls = _COUNTED
    calls.clear()

    @checked
    def g(x: Annotated[float, _Counted("number", 0, 10)]) -> float:
        return x

    assert [g(2.0), g(2.0)] == [2.0, 2.0]
    assert calls == [2.0, 2.0]


def test_a_usual_range_is_put_in_words_once_and_each_warning_is_as_before(monkeypatch):
    # a warning formats the value alone: the usual range's two bounds are formatted once per range, where a sheet
    # of 100,000 rows formatted them in each of its 90,000 warnings (PARAMS_B of 10,009 to 100,008)
    import xlsxplan.domains as domains

    formatted = []
    real = domains.format_number
    monkeypatch.setattr(domains, "format_number", lambda x: formatted.append(x) or real(x))
    monkeypatch.setattr(domains, "_USUAL", {})
    domain = Domain("number", 0, 1e6, low_open=True, typical=(1e-4, 1e4))
    got = [domain.suspicion("params_b", x) for x in (5.0, 20_000.0, 30_000, 12_345.678)]
    assert got == [
        None,
        "params_b = 20,000 is outside the usual range 0.0001 to 10,000: check its unit",
        "params_b = 30,000 is outside the usual range 0.0001 to 10,000: check its unit",
        "params_b = 12345.7 is outside the usual range 0.0001 to 10,000: check its unit",
    ]
    assert formatted == [20_000.0, 1e-4, 1e4, 30_000, 12_345.678]
