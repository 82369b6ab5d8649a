"""The plan search's table one cell at a time, for a sheet that shows it cell by cell.

PLAN_OPTIONS spills the ranked table (:func:`xlsxplan.plan.search.plan_options`). A sheet that cannot hold a spilled or
array result for good (a saved array formula's other cells keep cached values, which a headless engine that spills
reads as occupied) shows the table a cell each; PLAN_OPTIONS_AT gives the cell at a row and column of the same
table, so that every cell carries one value rather than the whole table. The table is planned once for a set of
arguments and remembered (the :data:`_REMEMBERED` used last: a sheet whose cells take turns between many searches
plans each once, not once a cell), read against the same catalog, prices and calibration; the arguments of a
search are checked once per distinct set (as the cells gave them, each with its type), each cell's row and column
every call, so that a sheet of thousands of cells pays for its arguments once.
"""

from __future__ import annotations

import functools
from typing import Any

from .. import calibration, catalog
from ..domains import (
    Count,
    Flag,
    FractionOrZero,
    MemoryGBOrZero,
    Name,
    PeakFactor,
    PerDay,
    SecondsOrZero,
    Spare,
    Tokens,
    TokensOrZero,
    TokensPerSOrZero,
    checked,
    format_number,
)
from ..errors import OutOfRangeError
from .search import plan_options

__all__ = ["NONE_SHOWN", "plan_options_at"]

NONE_SHOWN = "-"
"""What a cell shows where the option has no such figure (PLAN_OPTIONS's empty text): a cell whose cached value is
empty text is recalculated by LibreOffice when it opens the file, and this function is not one of its own."""

_REMEMBERED = 64
"""Tables remembered, the least recently used forgotten first (a table is at most a few thousand values). Only
eight, forgotten in the order planned, made 2,000 cells taking turns between nine searches plan 2,000 times (30 ms a
cell)."""
_tables: list[tuple[tuple[Any, ...], tuple[Any, ...], list[list[Any]]]] = []


def _state() -> tuple[Any, ...]:
    """What a remembered table was planned against: the catalog, its prices and the calibration, each reloaded as a
    new object when its files change."""
    return (catalog.load_catalog(), catalog.load_prices(), calibration.active())


def _table(args: tuple[Any, ...], state: tuple[Any, ...]) -> list[list[Any]]:
    """PLAN_OPTIONS's table for these (checked) arguments: remembered while the catalog, its prices and the
    calibration are the very objects they were."""
    for i, (key, seen, rows) in enumerate(_tables):
        if key == args and all(a is b for a, b in zip(seen, state)):
            if i:
                _tables.insert(0, _tables.pop(i))  # used last: forgotten last
            return rows
    rows = plan_options(*args)
    _tables.insert(0, (args, state, rows))
    del _tables[_REMEMBERED:]
    return rows


def _cell(rows: list[list[Any]], row: int, column: int) -> float | str:
    """The table's value at a row and column (the header row 1), "-" for its empty text."""
    if row > len(rows):
        raise OutOfRangeError(
            f"row must be at most {format_number(len(rows))}, the table's rows, got {format_number(row)}", "row"
        )
    if column > len(rows[0]):
        raise OutOfRangeError(
            f"column must be at most {len(rows[0])}, the table's columns, got {format_number(column)}", "column"
        )
    value: float | str = rows[row - 1][column - 1]
    return NONE_SHOWN if value == "" else value


def _plan_options_at(
    row: Count,
    column: Count,
    model: Name,
    requests_per_day: PerDay,
    prompt_tokens: Tokens,
    output_tokens: Tokens,
    peak_factor: PeakFactor = 3,
    tokens_per_s_target: TokensPerSOrZero = 0,
    ttft_target_s: SecondsOrZero = 0,
    spare: Spare = 1,
    gpus: Name = "all",
    prompt_p95: TokensOrZero = 0,
    max_prompt_tokens: TokensOrZero = 0,
    reasoning_tokens: TokensOrZero = 0,
    min_replicas: Count = 2,
    ttft_percentile: FractionOrZero = 0,
    gpu_memory_utilization: FractionOrZero = 0,
    reserve_gb: MemoryGBOrZero = 0,
    block_size: Count = 16,
    spec_draft: Name = "none",
    spec_acceptance: FractionOrZero = 0,
    spec_tokens: Count = 1,
    own: Flag = 0,
    ideal: Flag = 0,
) -> float | str:
    """One cell of PLAN_OPTIONS's ranked table: the value at a row and column, the header being row 1.

    Parameters
    ----------
    row : int
        Row of the table, 1 for its header, 2 for the cheapest feasible option [row].
    column : int
        Column of the table, 1 for the rank, 2 for the accelerator (PLAN_OPTIONS's header names them) [column].
    model : str
        A preset model name, shipped or imported, e.g. Qwen2.5-72B [name].
    requests_per_day : float
        Requests in a day [requests/day].
    prompt_tokens : float
        Mean prompt per request [tokens].
    output_tokens : float
        Visible answer per request [tokens].
    peak_factor : float, default 3
        How much busier the peak hour is than the day's average [ratio].
    tokens_per_s_target : float, default 0
        Slowest decode each user may see; 0: no speed target [tokens/s].
    ttft_target_s : float, default 0
        Longest wait for the first token of the p95 prompt; 0: no first-token target [s].
    spare : int, default 1
        Replicas added for a failure or a deployment, to each pool when disaggregated [count].
    gpus : str, default all
        Accelerators to try, each with an optional price, e.g. "H100=2.5,H200"; all: every one the catalog prices
        [names].
    prompt_p95 : float, default 0
        95th-percentile prompt; 0: the mean [tokens].
    max_prompt_tokens : float, default 0
        Longest prompt accepted, which must fit alone; 0: not checked [tokens].
    reasoning_tokens : float, default 0
        Hidden reasoning tokens per request, decoded and billed as output [tokens].
    min_replicas : int, default 2
        Fewest replicas an aggregated plan runs [count].
    ttft_percentile : float, default 0
        Share of requests whose first token, the wait for a batch slot at the peak included, must come within
        ttft_target_s (0.99 for P99); 0: a request that never waits [fraction].
    gpu_memory_utilization : float, default 0
        The serving engine's share of each GPU's memory (vLLM's 0.9), the KV cache in whole blocks; 0: the flat 90%
        usable of the source text [fraction].
    reserve_gb : float, default 0
        With gpu_memory_utilization: memory held per GPU besides the weights [GB].
    block_size : int, default 16
        With gpu_memory_utilization: tokens per KV block [tokens].
    spec_draft : str, default none
        A preset model that drafts tokens for speculative decoding; none: no draft [name].
    spec_acceptance : float, default 0
        With spec_draft: chance each drafted token is accepted [fraction].
    spec_tokens : int, default 1
        With spec_draft: tokens drafted a step [count].
    own : int, default 0
        1 adds the same fleet owned: cost a month and per M input and output tokens [flag].
    ideal : int, default 0
        1 ranks at the source text's ideal efficiencies (its worked examples exactly), the calibrated fleet beside;
        0: at the calibrated ones (the step xlsxplan validate scores), the ideal fleet beside [flag].

    Returns
    -------
    float or str
        The table's value there: a figure, a name, "yes", a reason, or "-" where the option has none (PLAN_OPTIONS
        leaves such a cell empty) [as the column].

    Notes
    -----
    The table of PLAN_OPTIONS for the same arguments (the search of "Back-of-the-Envelope Estimation for LLM
    Systems"'s plan over accelerators, precisions, GPUs per replica and serving modes), planned once and remembered.
    The support assistant on an H100 at $2.50, ideal 1: row 2, column 2 is H100-SXM, column 13 its $14,600 a month.
    """
    args = (
        model,
        requests_per_day,
        prompt_tokens,
        output_tokens,
        peak_factor,
        tokens_per_s_target,
        ttft_target_s,
        spare,
        gpus,
        prompt_p95,
        max_prompt_tokens,
        reasoning_tokens,
        min_replicas,
        ttft_percentile,
        gpu_memory_utilization,
        reserve_gb,
        block_size,
        spec_draft,
        spec_acceptance,
        spec_tokens,
        own,
        ideal,
    )
    return _cell(_table(args, _state()), row, column)


_checked_at = checked(_plan_options_at)
_ARGS = tuple(_checked_at.domains.items())  # type: ignore[attr-defined]
_DEFAULTS = _plan_options_at.__defaults__ or ()
_REQUIRED = len(_ARGS) - len(_DEFAULTS)
_ROW, _COLUMN = _ARGS[0][1], _ARGS[1][1]
_seen: dict[tuple[Any, ...], tuple[tuple[Any, ...], list[list[Any]]]] = {}
"""Tables by the arguments as the cells gave them (each with its type), so that every other cell of the same search
checks its row and column only: the serving template's 2,425 cells check the search's 21 arguments once, not once a
cell."""


@functools.wraps(_checked_at)
def plan_options_at(*args: Any, **kwargs: Any) -> float | str:
    """PLAN_OPTIONS_AT, checked as every xlsxplan function is; the search's arguments are checked once per distinct
    set (:data:`_seen`), the row and column every call."""
    if kwargs or not _REQUIRED <= len(args) <= len(_ARGS):
        return _checked_at(*args, **kwargs)
    try:
        key = tuple((type(a), a) for a in args[2:])
        hit = _seen.get(key)
    except TypeError:  # an unhashable value (a range): the plain path
        return _checked_at(*args)
    state = _state()
    row, column = _ROW.check("row", args[0]), _COLUMN.check("column", args[1])  # in argument order, as checked
    if hit is None or not all(a is b for a, b in zip(hit[0], state)):
        values = list(args) + list(_DEFAULTS[len(_DEFAULTS) - (len(_ARGS) - len(args)) :])
        checked_args = tuple(domain.check(name, v) for (name, domain), v in zip(_ARGS[2:], values[2:]))
        hit = (state, _table(checked_args, state))
    _seen.pop(key, None)
    _seen[key] = hit  # used last: forgotten last
    while len(_seen) > _REMEMBERED:
        del _seen[next(iter(_seen))]
    return _cell(hit[1], row, column)


plan_options_at.__name__ = plan_options_at.__qualname__ = "plan_options_at"  # wraps() gave it the checked core's name
