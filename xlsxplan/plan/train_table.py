"""The training plan as an Excel table: TRAIN_OPTIONS, the rows and columns ``xlsxplan plan --train --json`` prints.

One implementation: :func:`train_options` calls :func:`xlsxplan.plan.train.plan_training` with its arguments (the
training plan's inputs, :data:`xlsxplan.plan.train_inputs.TRAIN_INPUTS`, in order) and lays each option's JSON
(:meth:`xlsxplan.plan.train.TrainOption.to_json`, its figures rounded as the command prints them) out as a row, the
header row first. A sheet that shows the table a cell each (``INDEX(TRAIN_OPTIONS(...), row, column)``, the training
template's Options sheet) asks for it once a cell: the table is planned once for a set of arguments and remembered
while the catalog, its prices and the calibration are the very objects they were.
"""

from __future__ import annotations

from typing import Any

from .. import calibration, catalog
from ..domains import checked
from .inputs import with_inputs
from .train import plan_training
from .train_inputs import TRAIN_INPUTS

__all__ = ["TRAIN_TABLE_HEADER", "train_options", "train_table"]

TRAIN_TABLE_HEADER: tuple[str, ...] = (
    "gpu",
    "gpus",
    "tp",
    "pp",
    "dp",
    "ep",
    "cp",
    "zero",
    "micro_batch",
    "global_batch",
    "recompute",
    "precision",
    "params_b",
    "tokens",
    "memory_gb_per_gpu",
    "step_s",
    "mfu",
    "days",
    "gpu_hours",
    "usd",
    "price_basis",
    "goodput",
    "feasible",
    "reason",
    "checkpoint_interval_s",
    "calibrated_mfu",
)
"""TRAIN_OPTIONS's columns: every field of an option in ``xlsxplan plan --train --json`` that is one value (the
memory and step-time parts, which are dicts, stay in the JSON), in the JSON's order."""

_REMEMBERED = 16
"""Tables remembered, the least recently used forgotten first."""
_tables: list[tuple[tuple[Any, ...], tuple[Any, ...], list[list[Any]]]] = []


def _state() -> tuple[Any, ...]:
    """What a remembered table was planned against: the catalog, its prices and the calibration, each reloaded as a
    new object when its files change."""
    return (catalog.load_catalog(), catalog.load_prices(), calibration.active())


def train_table(**given: Any) -> list[list[Any]]:
    """The training plan for ``given`` (the inputs of :data:`TRAIN_INPUTS` by name) as rows: the header
    (:data:`TRAIN_TABLE_HEADER`), then each option ranked as ``xlsxplan plan --train --json`` lists it, a figure the
    option has none of (JSON's null) as empty text."""
    rows: list[list[Any]] = [list(TRAIN_TABLE_HEADER)]
    for option in plan_training(**given).to_json()["options"]:
        rows.append(["" if option[k] is None else option[k] for k in TRAIN_TABLE_HEADER])
    return rows


def _table(*values: Any) -> list[list[Any]]:
    key, state = tuple(values), _state()
    for i, (seen, was, rows) in enumerate(_tables):
        if seen == key and all(a is b for a, b in zip(was, state)):
            if i:
                _tables.insert(0, _tables.pop(i))  # used last: forgotten last
            return rows
    rows = train_table(**dict(zip((p.name for p in TRAIN_INPUTS), values, strict=True)))
    _tables.insert(0, (key, state, rows))
    del _tables[_REMEMBERED:]
    return rows


train_options = checked(
    with_inputs(
        "train_options",
        _table,
        (),
        "Every training layout for a run, the cheapest that fits and finishes first, each rejected with its reason.",
        """
    Returns
    -------
    list of list
        A table with a header row, then a row per layout as xlsxplan plan --train --json lists it; its columns:
        accelerator, GPUs, tensor, pipeline, data, expert and context parallel, ZeRO stage, micro-batch, global
        batch, recompute, precision, parameters [B], tokens, memory a GPU [GB], step time [s], MFU, days, GPU-hours,
        USD, price basis, goodput, feasible, reason, checkpoint interval [s], calibrated MFU [table].

    Notes
    -----
    xlsxplan plan --train --json's options, ranked: accelerator x GPUs x tensor x pipeline x data x expert parallel
    x ZeRO stage x micro-batch x recompute x precision; memory by ZeRO stage and activations (Korthikanti et al.
    2022) against the usable share; step time from PaLM's FLOPs a token at the calibrated MFU plus each parallel
    dimension's traffic and the pipeline bubble; goodput by Young's checkpoint interval at Llama 3's interruption
    rate. Size 0 and no model: N = sqrt(C t / 120) ("Estimating the Compute and Memory Needed for Language Models").
""",
        list[list[Any]],
        TRAIN_INPUTS,
    )
)
"""TRAIN_OPTIONS: the arguments are :data:`xlsxplan.plan.train_inputs.TRAIN_INPUTS`'s, checked by their domains."""
