"""Published training runs with their layouts: the figures a training step-time, memory and goodput model is tested on.

``xlsxplan/calibration/data/training_runs.csv`` holds one published figure a row: a throughput, step time, FLOP rate
or peak memory of a training run together with the layout that produced it (GPUs, tensor x pipeline x data x expert x
context parallel, ZeRO stage or FSDP, micro-batch, global batch, recompute, precision), or a goodput input
(interruptions over a period, mean time to failure, checkpoint interval, size and bandwidth, restarts). Every row names
its source exactly (repository@commit:path and table, or paper and table/section); a row read in a third-party copy
says ``[TRANSCRIBED]``. Anything not published but derived (a data-parallel size from the GPU count, say) is said in
the row's ``note``. The data README (``xlsxplan/calibration/data/README.md``) describes the columns and the sources.

Units
-----
Each metric has its own units (METRIC_UNITS); :attr:`TrainingRun.base_value` converts to the base unit of its kind:

* ``step_s``: seconds per optimizer step (one global batch), ``s``;
* ``tokens_per_sec_per_gpu``: training tokens per second per GPU, ``tok/s/GPU``;
* ``gpu_hours_per_trillion_tokens``: a whole run's GPU-hours per 10^12 training tokens, ``GPU-h`` (base unit
  GPU-seconds; tokens/s/GPU is 10^12 over the base value);
* ``tflops_per_gpu``: achieved 10^12 FLOP/s per GPU, ``TFLOP/s``, counted as ``flops_basis`` says: ``model`` (the
  model's forward and backward FLOPs, attention included; MFU = this over the dense peak) or ``hardware`` (also the
  recomputed forward pass; Narayanan et al. 2021, arXiv:2104.04473, Eq. 3 "assumes activation recomputation");
* ``mfu``: model FLOPs utilisation, a ``fraction`` of the dense peak at the row's precision;
* ``peak_memory_per_gpu``: the largest memory any GPU of the run used, ``GiB`` (2^30 bytes), ``GB`` (10^9) or
  ``MiB`` (2^20); base unit bytes;
* ``interruptions``, ``unexpected_interruptions``, ``planned_interruptions``, ``manual_restarts``,
  ``automatic_restarts``: a ``count`` over ``period_days`` days (:attr:`TrainingRun.per_day` is their ratio);
* ``effective_time_ratio``: useful training time over elapsed time, a ``fraction``;
* ``mttf``: a job's mean time to failure, ``h`` or ``days`` (base unit seconds);
* ``failures_per_1000_node_days``: node failure rate, ``per 1000 node-days``;
* ``checkpoint_interval``, ``lost_time_per_failure``, ``checkpoint_write_s``, ``restart_s``: durations, ``s``,
  ``min``, ``h`` (base unit seconds);
* ``checkpoint_size``: ``GB`` or ``TB`` (10^9, 10^12 bytes); ``checkpoint_write_bandwidth``,
  ``checkpoint_read_bandwidth``: ``GB/s`` or ``TB/s`` (base unit bytes per second).

Layout columns are whole numbers; ``global_batch`` and ``micro_batch`` count sequences of ``seq_len`` tokens, and
``grad_accum`` is the number of micro-batches each data-parallel rank runs per optimizer step, so
``global_batch = micro_batch x dp x grad_accum``. A row whose published layout does not multiply out
(``tp x pp x dp x cp != n_gpus``, or the batch identity) is kept as published only with a ``note`` saying so; a bad
cell is refused with one line naming the file, the row and the column.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import CatalogError

__all__ = [
    "COLUMNS",
    "METRIC_UNITS",
    "THROUGHPUT_METRICS",
    "MEMORY_METRICS",
    "GOODPUT_METRICS",
    "TRAINING_RUNS_PATH",
    "TrainingRun",
    "parse_training_runs",
    "read_training_runs",
]

TRAINING_RUNS_PATH = Path(__file__).resolve().parent / "data" / "training_runs.csv"
"""The shipped file of published training runs."""

MAX_BYTES = 4 << 20
"""A training-runs file is at most this large (a guard against reading a wrong file whole)."""

COLUMNS = (
    "name",
    "model",
    "params_b",
    "active_params_b",
    "layers",
    "hidden",
    "heads",
    "kv_heads",
    "ffn_hidden",
    "vocab",
    "seq_len",
    "gpu",
    "n_gpus",
    "tp",
    "pp",
    "dp",
    "ep",
    "cp",
    "vp",
    "zero",
    "micro_batch",
    "grad_accum",
    "global_batch",
    "recompute",
    "precision",
    "metric",
    "value",
    "unit",
    "flops_basis",
    "period_days",
    "source",
    "engine",
    "date",
    "note",
)
"""The file's columns, in order; every one must be in the header."""

_INT_COLUMNS = (
    "layers",
    "hidden",
    "heads",
    "kv_heads",
    "ffn_hidden",
    "vocab",
    "seq_len",
    "n_gpus",
    "tp",
    "pp",
    "dp",
    "ep",
    "cp",
    "vp",
    "micro_batch",
    "grad_accum",
    "global_batch",
)
_FLOAT_COLUMNS = ("params_b", "active_params_b", "period_days")

_SECONDS = {"s": 1.0, "min": 60.0, "h": 3600.0, "days": 86400.0}
_COUNT = {"count": 1.0}
METRIC_UNITS: dict[str, dict[str, float]] = {
    "step_s": {"s": 1.0},
    "tokens_per_sec_per_gpu": {"tok/s/GPU": 1.0},
    "gpu_hours_per_trillion_tokens": {"GPU-h": 3600.0},
    "tflops_per_gpu": {"TFLOP/s": 1e12},
    "mfu": {"fraction": 1.0},
    "peak_memory_per_gpu": {"GiB": float(1 << 30), "GB": 1e9, "MiB": float(1 << 20)},
    "interruptions": _COUNT,
    "unexpected_interruptions": _COUNT,
    "planned_interruptions": _COUNT,
    "manual_restarts": _COUNT,
    "automatic_restarts": _COUNT,
    "effective_time_ratio": {"fraction": 1.0},
    "mttf": {"h": 3600.0, "days": 86400.0},
    "failures_per_1000_node_days": {"per 1000 node-days": 1.0},
    "checkpoint_interval": _SECONDS,
    "lost_time_per_failure": _SECONDS,
    "checkpoint_write_s": _SECONDS,
    "restart_s": _SECONDS,
    "checkpoint_size": {"GB": 1e9, "TB": 1e12},
    "checkpoint_write_bandwidth": {"GB/s": 1e9, "TB/s": 1e12},
    "checkpoint_read_bandwidth": {"GB/s": 1e9, "TB/s": 1e12},
}
"""Each metric's allowed units and the factor that takes a value in that unit to the metric's base unit (seconds,
bytes, bytes per second, FLOP/s, or the unit itself)."""

THROUGHPUT_METRICS = frozenset(
    {"step_s", "tokens_per_sec_per_gpu", "gpu_hours_per_trillion_tokens", "tflops_per_gpu", "mfu"}
)
"""Metrics a step-time model predicts from the layout."""
MEMORY_METRICS = frozenset({"peak_memory_per_gpu"})
"""Metrics a memory model predicts from the layout."""
GOODPUT_METRICS = frozenset(METRIC_UNITS) - THROUGHPUT_METRICS - MEMORY_METRICS
"""Inputs and outcomes of a goodput (lost-time) model."""
_PER_PERIOD = frozenset(
    {"interruptions", "unexpected_interruptions", "planned_interruptions", "manual_restarts", "automatic_restarts"}
)
_FRACTIONS = frozenset({"mfu", "effective_time_ratio"})

ZERO_STAGES = ("0", "1", "2", "3", "fsdp")
RECOMPUTE = ("none", "selective", "full")
PRECISIONS = ("bf16", "fp16", "fp8", "mxfp8")
FLOPS_BASES = ("model", "hardware")
_DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")


@dataclass(frozen=True)
class TrainingRun:
    """One published figure of a training run; empty cells are ``None`` (numbers) or ``""`` (text)."""

    line: int
    name: str
    model: str
    params_b: float | None
    active_params_b: float | None
    layers: int | None
    hidden: int | None
    heads: int | None
    kv_heads: int | None
    ffn_hidden: int | None
    vocab: int | None
    seq_len: int | None
    gpu: str
    n_gpus: int | None
    tp: int | None
    pp: int | None
    dp: int | None
    ep: int | None
    cp: int | None
    vp: int | None
    zero: str
    micro_batch: int | None
    grad_accum: int | None
    global_batch: int | None
    recompute: str
    precision: str
    metric: str
    value: float
    unit: str
    flops_basis: str
    period_days: float | None
    source: str
    engine: str
    date: str
    note: str

    @property
    def has_layout(self) -> bool:
        """Whether the GPU count and the tensor, pipeline and data-parallel sizes are all given."""
        return None not in (self.n_gpus, self.tp, self.pp, self.dp)

    @property
    def layout_gpus(self) -> int | None:
        """``tp x pp x dp x cp`` (``cp`` 1 when empty), or ``None`` without a full layout."""
        if self.tp is None or self.pp is None or self.dp is None:
            return None
        return self.tp * self.pp * self.dp * (self.cp or 1)

    @property
    def base_value(self) -> float:
        """The value in its metric's base unit (seconds, bytes, bytes/s, FLOP/s; see METRIC_UNITS)."""
        return self.value * METRIC_UNITS[self.metric][self.unit]

    @property
    def per_day(self) -> float | None:
        """A count over ``period_days``, per day; ``None`` for other metrics or without a period."""
        if self.metric not in _PER_PERIOD or not self.period_days:
            return None
        return self.value / self.period_days

    @property
    def tokens_per_step(self) -> int | None:
        """``global_batch x seq_len``: training tokens per optimizer step, or ``None`` if either is missing."""
        if self.global_batch is None or self.seq_len is None:
            return None
        return self.global_batch * self.seq_len

    @property
    def publication(self) -> str:
        """The publication a row comes from, for leave-one-source-out checks: a repository and path without the
        commit, an arXiv id, else the source up to its first comma."""
        repo = re.match(r"github\.com/([^@\s]+)@[0-9a-f]+:([^,\s]+)", self.source)
        if repo:
            return f"{repo.group(1)}:{repo.group(2)}"
        arxiv = re.search(r"arXiv:(\d{4}\.\d{4,5})", self.source)
        if arxiv:
            return f"arXiv:{arxiv.group(1)}"
        return self.source.split(",", 1)[0].strip()


def _cell_error(origin: str, line: int, column: str, message: str) -> CatalogError:
    return CatalogError(f"{origin}: row {line - 1} (line {line}), column {column}: {message}")


def _number(raw: dict[str, str], column: str, whole: bool) -> float | int | None:
    text = raw.get(column, "")
    if text == "":
        return None
    try:
        x = float(text)
    except ValueError:
        raise ValueError(f"must be a number, got {text!r}") from None
    if not math.isfinite(x) or x <= 0:
        raise ValueError(f"must be a finite number above 0, got {text!r}")
    if whole:
        if x != int(x):
            raise ValueError(f"must be a whole number, got {text!r}")
        return int(x)
    return x


def _choice(raw: dict[str, str], column: str, allowed: tuple[str, ...]) -> str:
    text = raw.get(column, "")
    if text and text not in allowed:
        raise ValueError(f"must be one of {', '.join(allowed)} or empty, got {text!r}")
    return text


def _row(raw: dict[str, str], line: int, origin: str) -> TrainingRun:
    column = "name"
    try:
        for column in ("name", "metric", "value", "unit", "source"):
            if not raw.get(column):
                raise ValueError("is empty; every row needs a name, metric, value, unit and source")
        column = "metric"
        metric = raw["metric"]
        if metric not in METRIC_UNITS:
            raise ValueError(f"must be one of {', '.join(METRIC_UNITS)}, got {metric!r}")
        column = "unit"
        if raw["unit"] not in METRIC_UNITS[metric]:
            raise ValueError(f"for {metric} must be one of {', '.join(METRIC_UNITS[metric])}, got {raw['unit']!r}")
        column = "value"
        try:
            value = float(raw["value"])
        except ValueError:
            raise ValueError(f"must be a number, got {raw['value']!r}") from None
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"must be a finite number of at least 0, got {raw['value']!r}")
        if metric in _FRACTIONS and value > 1:
            raise ValueError(f"{metric} is a fraction of at most 1, got {raw['value']!r}")
        fields: dict[str, Any] = {}
        for column in _INT_COLUMNS:
            fields[column] = _number(raw, column, True)
        for column in _FLOAT_COLUMNS:
            fields[column] = _number(raw, column, False)
        column = "zero"
        zero = _choice(raw, "zero", ZERO_STAGES)
        column = "recompute"
        recompute = _choice(raw, "recompute", RECOMPUTE)
        column = "precision"
        precision = _choice(raw, "precision", PRECISIONS)
        column = "flops_basis"
        basis = _choice(raw, "flops_basis", FLOPS_BASES)
        if metric == "tflops_per_gpu" and not basis:
            raise ValueError("must say model or hardware for a tflops_per_gpu row")
        column = "period_days"
        if metric in _PER_PERIOD and fields["period_days"] is None:
            raise ValueError(f"is needed for a {metric} row (the span the count covers)")
        column = "date"
        if raw.get("date") and not _DATE.match(raw["date"]):
            raise ValueError(f"must be YYYY, YYYY-MM or YYYY-MM-DD, got {raw['date']!r}")
        run = TrainingRun(
            line=line,
            name=raw["name"],
            model=raw.get("model", ""),
            gpu=raw.get("gpu", ""),
            zero=zero,
            recompute=recompute,
            precision=precision,
            metric=metric,
            value=value,
            unit=raw["unit"],
            flops_basis=basis,
            source=raw["source"],
            engine=raw.get("engine", ""),
            date=raw.get("date", ""),
            note=raw.get("note", ""),
            **fields,
        )
        column = "n_gpus"
        gpus = run.layout_gpus
        if gpus is not None and run.n_gpus is not None and gpus != run.n_gpus and not run.note:
            raise ValueError(
                f"tp x pp x dp x cp is {gpus}, not {run.n_gpus}; a layout that does not multiply out needs a note "
                "saying so"
            )
        column = "global_batch"
        if None not in (run.global_batch, run.micro_batch, run.dp, run.grad_accum) and not run.note:
            implied = (run.micro_batch or 0) * (run.dp or 0) * (run.grad_accum or 0)
            if implied != run.global_batch:
                raise ValueError(
                    f"micro_batch x dp x grad_accum is {implied}, not {run.global_batch}; a batch that does not "
                    "multiply out needs a note saying so"
                )
        return run
    except ValueError as err:
        raise _cell_error(origin, line, column, str(err)) from None


def parse_training_runs(text: str, origin: str = "training_runs.csv") -> list[TrainingRun]:
    """The rows of a training-runs CSV (COLUMNS); a missing column, or a bad cell, is one line naming ``origin``,
    the row and the column."""
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise CatalogError(f"{origin}: missing column(s) {', '.join(missing)}; the columns are {', '.join(COLUMNS)}")
    runs = []
    for line, raw in enumerate(reader, start=2):
        if None in raw:
            raise _cell_error(origin, line, "(beyond the header)", "has more cells than the header has columns")
        runs.append(_row({k: (v or "").strip() for k, v in raw.items()}, line, origin))
    return runs


def read_training_runs(path: str | Path | None = None) -> list[TrainingRun]:
    """The published training runs: the shipped file, or ``path``'s."""
    path = Path(path) if path is not None else TRAINING_RUNS_PATH
    try:
        if path.stat().st_size > MAX_BYTES:
            raise CatalogError(f"{path}: over {MAX_BYTES >> 20} MiB; a training-runs file is at most that")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise CatalogError(f"{path}: cannot be read: {err}") from None
    return parse_training_runs(text, str(path))
