"""Every input of the plan search is settable from every face (xlsxplan/plan/inputs.py): PLAN_OPTIONS and
PLAN_OPTIONS_AT take the specification's arguments in its order, ``xlsxplan plan`` has a flag for each, and a value
given through either face plans the same table."""

from __future__ import annotations

import inspect
import json

import pytest

from xlsxplan.cli import main
from xlsxplan.cli.cmd_plan import SPEC_FLAGS
from xlsxplan.plan.cells import plan_options_at
from xlsxplan.plan.inputs import PLAN_INPUTS, REQUIRED
from xlsxplan.plan.search import plan_options
from xlsxplan.registry import get

NAMES = [p.name for p in PLAN_INPUTS]
BASE = ["--model", "Qwen2.5-72B", "--requests-per-day", "200000", "--prompt-tokens", "2000", "--output-tokens", "300"]


def test_the_functions_take_the_specified_inputs_in_order_with_their_defaults():
    for func, lead in ((plan_options, []), (plan_options_at, ["row", "column"])):
        params = inspect.signature(func).parameters
        assert list(params) == lead + NAMES
        for p in PLAN_INPUTS:
            default = params[p.name].default
            assert (default is inspect.Parameter.empty) if p.default is REQUIRED else default == p.default
    documented = [a.name for a in get("PLAN_OPTIONS").args]
    assert documented == NAMES and [a.name for a in get("PLAN_OPTIONS_AT").args] == ["row", "column", *NAMES]


def test_every_input_has_a_flag(capsys):
    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    text = capsys.readouterr().out
    missing = [p.cli_flag for p in PLAN_INPUTS if p.cli_flag not in text]
    assert not missing


# a value other than the default for each input whose flag the specification makes, as a cell and as a flag
CHANGED = {
    "usable_fraction": (0.8, "0.8"),
    "decode_bandwidth_efficiency": (0.7, "0.7"),
    "prefill_utilisation": (0.3, "0.3"),
    "kv_overflow": (0.2, "0.2"),
    "kv_link_gb_s": (5, "5"),
    "hours_per_month": (700, "700"),
    "gpus_per_replica": ("2,4", "2,4"),
    "servings": ("aggregated", "aggregated"),
    "max_gpus_per_replica": (16, "16"),
    "max_num_tokens": (256, "256"),  # 256 / (1 + 2000 / 300) = 33 sequences, below the speed target's batch
    "max_batch_size": (16, "16"),
}


@pytest.mark.parametrize("name", SPEC_FLAGS)
def test_a_value_set_through_the_flag_or_the_cell_plans_the_same_table(name, capsys):
    cell, flag = CHANGED[name]
    spec = next(p for p in PLAN_INPUTS if p.name == name)
    args = ("Qwen2.5-72B", 200_000, 2_000, 300, 3, 20, 2, 1, "H100=2.5", 6_000)
    table = plan_options(*args, ideal=1, **{name: cell})
    assert table != plan_options(*args, ideal=1)  # the input moves the plan
    argv = ["plan", *BASE, "--tokens-per-s", "20", "--ttft-s", "2", "--gpu", "H100=2.5", "--prompt-p95", "6000"]
    assert main([*argv, "--rank", "assumed", spec.cli_flag, flag, "--json"]) in (0, 1)
    options = json.loads(capsys.readouterr().out)["options"]
    assert [(o["gpu"], o["gpus_per_replica"], o["weights"], o["kv"], o["serving"], o["gpus"]) for o in options] == [
        (r[1], r[2], r[3], r[4], r[5], r[11] if r[11] != "" else None) for r in table[1:]
    ]
