"""TRAIN_OPTIONS: the training plan's table, the rows and columns `xlsxplan plan --train --json` prints, planned once
for a set of arguments."""

from __future__ import annotations

import json
from typing import Any
from unittest import mock

import pytest

from xlsxplan import registry
from xlsxplan.cli import main
from xlsxplan.errors import XlsxplanError
from xlsxplan.plan import train_table
from xlsxplan.plan.train_inputs import TRAIN_INPUTS
from xlsxplan.plan.train_table import TRAIN_TABLE_HEADER, train_options

BUDGET_CASE = {"budget_usd": 200_000, "max_days": 14, "max_gpus": 256, "gpus": "H100-SXM=2.5"}
"""A finance analyst's question: $200,000 of H100 time at $2.50 an hour, at most 14 days and 256 GPUs, the size to
choose."""


def cli_json(given: dict[str, Any], capsys) -> dict[str, Any]:
    flags = {p.name: p.cli_flag for p in TRAIN_INPUTS}
    argv = ["plan", "--train", "--json"]
    for name, value in given.items():
        argv += [flags[name], str(value)]
    capsys.readouterr()
    code = main(argv)
    printed = capsys.readouterr()
    assert code in (0, 1), printed.err
    return json.loads(printed.out)


def _args(given: dict[str, Any]) -> list[Any]:
    return [given.get(p.name, p.default) for p in TRAIN_INPUTS]


@pytest.mark.parametrize(
    "given",
    [BUDGET_CASE, {**BUDGET_CASE, "params_b": 70}, {"model": "Llama-2-7B", "max_days": 30, "gpus": "H100-SXM,H200"}],
)
def test_the_table_is_the_json_of_plan_train(given, capsys):
    data = cli_json(given, capsys)
    table = registry.get("TRAIN_OPTIONS")(*_args(given))
    rows = table.tolist()
    assert rows[0] == list(TRAIN_TABLE_HEADER)
    assert len(rows) == len(data["options"]) + 1 > 1
    for row, option in zip(rows[1:], data["options"]):
        assert row == ["" if option[k] is None else option[k] for k in TRAIN_TABLE_HEADER]


def test_the_columns_are_every_single_value_field_of_an_option_in_json_order(capsys):
    option = cli_json(BUDGET_CASE, capsys)["options"][0]
    assert list(TRAIN_TABLE_HEADER) == [k for k, v in option.items() if not isinstance(v, dict)]


def test_the_budget_case_ranks_first_a_layout_that_fits_and_finishes_within_both_limits():
    rows = train_options(*_args(BUDGET_CASE))
    best = dict(zip(rows[0], rows[1]))
    assert best["feasible"] is True and best["reason"] == ""
    assert best["days"] <= 14 and best["usd"] <= 200_000 and best["gpus"] <= 256
    assert best["memory_gb_per_gpu"] <= 0.9 * 80


def test_a_size_too_large_says_which_limit_binds_and_by_how_much():
    rows = train_options(*_args({**BUDGET_CASE, "params_b": 70}))
    best = dict(zip(rows[0], rows[1]))
    assert best["feasible"] is False
    assert "over the $200,000 budget by $" in best["reason"] or "over the 14-day limit by" in best["reason"]


def test_a_search_is_planned_once_for_its_arguments_and_every_argument_is_still_checked():
    args = _args({**BUDGET_CASE, "max_gpus": 128})
    with mock.patch.object(train_table, "plan_training", wraps=train_table.plan_training) as planned:
        first = train_options(*args)
        again = train_options(*args)
        assert planned.call_count == 1 and again is first
    for bad, argument in ((("none", -1), "params_b"), (("none", 0, 0, 20, 0, 0, 0), "max_gpus")):
        with pytest.raises(XlsxplanError) as err:
            train_options(*bad)
        assert err.value.argument == argument
    with pytest.raises(XlsxplanError, match="params_b is needed"):
        train_options("none", 0, 0, 20, 0, 0)  # nothing to choose the size for
