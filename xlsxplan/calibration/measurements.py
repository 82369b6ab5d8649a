"""Published measurements: reading them, the efficiency each implies, and predicting each from a fit without it.

A measurements file follows the schema of the project's data README (columns ``kind, name, model, params_b,
active_params_b, tokens, gpu, n_gpus, precision, input_len, output_len, concurrency, metric, value, unit,
source``). Every row is turned into a prediction with the same functions a workbook uses (:mod:`xlsxplan.core.training`,
:mod:`xlsxplan.core.roofline`, :mod:`xlsxplan.core.serving`) and the calibrated efficiencies of
:mod:`xlsxplan.calibration`; a row that cannot be predicted says why.

How each metric is predicted
----------------------------
* Training rows (``gpu_hours``, ``wall_clock_days``/``_seconds``, ``tokens_per_sec_per_gpu``/``_global``,
  ``achieved_tflops_per_gpu``, ``mfu``): training FLOPs per token ``6 N + 12 L H Q T`` (PaLM, Appendix B;
  TRAIN_FLOPS_PER_TOKEN), at the
  calibrated ``train_mfu`` for the accelerator, precision and model width; ``T`` is the model's context, at most
  8,192 (pretraining runs at that length or shorter). An ``achieved_tflops_per_gpu`` figure is compared in the
  source's own FLOP count: where the same run also reports tokens per second, that count is their ratio (NVIDIA's
  "Model TFLOP/s" for Llama 3 8B is 1.07 x 6N per token, PaLM's count 1.27 x 6N); where the source counts the
  recomputed forward pass (hardware FLOPs: an optional ``flops`` column saying ``hardware``, or a source that says
  it counts activation recomputation), it is 4/3 of PaLM's (Narayanan et al. 2021, arXiv:2104.04473, section 5.1,
  Eq. 3: ``F = 96 B s l h^2 (1 + s/6h + V/16lh)``, "equation (3) assumes activation recomputation", a fourth pass
  over every layer against the three of forward and backward). The reason column says which.
* ``train_flops``: ``6 N D``; ``chinchilla_optimal_tokens``: ``20 N``. No efficiency involved.
* ``decode_tokens_per_sec``: one over DECODE_STEP_S at the row's batch (1 unless ``concurrency`` says more), with
  the average context ``input_len + output_len / 2`` and weights at their real bits per weight.
* The KV cache's format is the optional ``kv_precision`` column where a file has it; otherwise the engine's
  default, as the row names it: FP8 for FP8 and NVFP4 weights on TensorRT-LLM (NVIDIA's ModelOpt FP8 and NVFP4
  checkpoints carry ``"kv_cache_quant_algo": "FP8"`` in their hf_quant_config.json, and its Llama-2-7B FP8 row at
  batch 768 would not fit a 16-bit cache), 16-bit everywhere else (vLLM's and SGLang's ``auto`` cache type is the
  activations' 16 bits; llama.cpp's default is f16).
* ``ttft`` and ``prefill_tokens_per_sec``: TTFT_S, the prefill's arithmetic with causal attention at the
  calibrated ``prefill`` utilisation.
* ``output_tokens_per_sec_total``/``_per_gpu``: a decode step costed operator by operator (the linear layers'
  roofline, attention's over the cache, a mixture of experts' routed traffic, the tensor-parallel all-reduces, one
  after another; Yuan et al. 2024, "LLM Inference Unveiled: Survey and Roofline Model Insights", arXiv:2402.16363,
  whose LLM-Viewer applies the roofline to each operator of a layer), with the calibrated decode bandwidth and
  prefill compute; a continuous-batching engine prefills its prompts inside the steps (:func:`xlsxplan.core.effects.
  prefill_tokens_per_step`), a ``static`` one (optional ``batching`` column) before them; ``concurrency`` ``max``
  fills memory. These rows fit the serving scale's three parameters (:func:`fit_serving`). A mixture of experts
  (a preset with experts) holds every parameter, computes with its active ones and reads per decode step the experts
  its batch is routed to (MOE_PARAMS_READ_B).
* A deployment expert-parallel across nodes (``ep`` above 1, and ``pool`` for a prefill or decode pool of a
  disaggregated deployment; ``input_tokens_per_sec_per_node``/``_per_gpu`` and the output rates): the same step laid
  out as the plan lays such a replica out (:func:`expert_layout`: attention data-parallel, the experts over the
  ``ep`` GPUs, the dispatch and combine all-to-alls over the system's links); predicted, never fitted on.
* ``kv_cache_capacity_tokens``: usable memory (90%) less weights, over the KV bytes per token (averaged over a
  sequence of ``input_len + output_len`` tokens when the row gives them, else every layer in full).

A model named in the ``model`` column takes its shape from the catalog, and its KV cache from its architecture
(MODEL_KV_BYTES_PER_TOKEN: latent attention, sliding windows, heads replicated across more GPUs than it has). A row
without one has its shape estimated from ``params_b`` with the width 64 times the depth (``N = 12 L d^2``,
``d = 64 L``; Kaplan et al. 2020, arXiv:2001.08361, section 3.1 and Figure 5 find loss insensitive to this ratio
over a wide range), head dimension 64, multi-head attention (the plain KV formula) and a 2,048-token context.
"""

from __future__ import annotations

import bisect
import contextlib
import csv
import dataclasses
import io
import math
import re
import statistics
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast, overload

from .. import calibration
from ..catalog import load_catalog, models
from ..core import effects, engine, equations, roofline, runs, serving, training, training_memory
from ..core.step import (
    OVERLAPS,
    SERVER_GPUS,
    Layout,
    dispatch_bytes,
    linked,
    mean_context,
    pipelined,
    read_weights,
    routed_tokens,
    serve_step,
    step_parts,
)
from ..errors import CatalogError, XlsxplanError
from ..precision import compute_precision, expert_precision, published_embedding_bytes
from . import Factors, Observation, bands
from .shape import Shape, estimated_shape, moe_layout, preset_shape, step_shape

__all__ = [
    "COLUMNS",
    "Measurement",
    "Shape",
    "RowResult",
    "read_measurements",
    "parse_measurements",
    "observations",
    "predict",
    "METRICS",
    "Metric",
    "TRAIN_RATES",
    "kind_of",
    "run_key",
    "source_key",
    "holdout_key",
    "expert_layout",
    "expert_parallel_row",
    "serving_step",
    "validate",
    "summarise",
    "fit_report",
    "fitted",
]

COLUMNS = (
    "kind",
    "name",
    "model",
    "params_b",
    "active_params_b",
    "tokens",
    "gpu",
    "n_gpus",
    "precision",
    "input_len",
    "output_len",
    "concurrency",
    "metric",
    "value",
    "unit",
    "source",
)

BATCHING = ("continuous", "static")
"""The values of the optional ``batching`` column (see Measurement.batching)."""
POOLS = ("prefill", "decode")
"""The values of the optional ``pool`` column (see Measurement.pool)."""
SECONDS_PER_HOUR = 3_600.0
SECONDS_PER_DAY = 86_400.0

TRAIN_SEQ_CAP = 8192
"""Longest sequence assumed for pretraining: runs train at their context up to 8,192 tokens (Llama 3's pretraining
length, Dubey et al. 2024, arXiv:2407.21783, section 3.4); longer contexts come from short extension phases."""
USABLE_FRACTION = 0.9
"""The share of accelerator memory the weights and KV cache may take in a predicted serving row: the 90% of
"Back-of-the-Envelope Estimation for LLM Systems" (section 3)."""


MAX_MEASUREMENTS_BYTES = 64 << 20
"""The largest measurements file read: some 130,000 rows of the shipped file's width."""

MAX_MEASUREMENT_ROWS = 100_000
"""The most rows a measurements file may hold: ``validate`` refits each of its 64 folds on every other row, about
0.5 ms a row, so 100,000 rows take some minutes; the shipped file holds 2,493."""


class Unpredictable(Exception):
    """A row that cannot be predicted, with the reason."""


@dataclass(frozen=True)
class Measurement:
    """One row of a measurements file; numbers parsed, blanks as None."""

    line: int
    kind: str
    name: str
    metric: str
    value: float | None
    model: str = ""
    params_b: float | None = None
    active_params_b: float | None = None
    tokens: float | None = None
    gpu: str = ""
    n_gpus: int | None = None
    precision: str = ""
    input_len: float | None = None
    output_len: float | None = None
    concurrency: int | str | None = None
    unit: str = ""
    source: str = ""
    kv_precision: str = ""
    """The KV cache's format, from an optional ``kv_precision`` column; empty: the engine's default (see above)."""
    flops: str = ""
    """What an achieved_tflops_per_gpu figure counts: ``model`` (the default) or ``hardware`` (recomputation
    included), from an optional ``flops`` column or the source's own words."""
    gpus_per_node: int = 8
    """GPUs per node (optional ``gpus_per_node`` column, 8 by default): what a ``..._per_node`` metric counts, and the
    GPUs sharing the scale-up link (an NVL72 rack is one NVLink domain of 72)."""
    ep: int | None = None
    """Expert-parallel group of a mixture-of-experts training run (optional ``ep`` column); empty: the experts over
    ``min(experts, n_gpus, gpus_per_node)`` GPUs."""
    batching: str = "continuous"
    """How a serving row's engine batched (optional ``batching`` column): ``continuous`` (the default: iteration-level
    scheduling, prompts prefilled inside the running batch's decode steps, as trtllm-bench, vLLM and SGLang do) or
    ``static`` (one batch prefilled together, then decoded to the end: TensorRT-LLM's legacy gptSessionBenchmark)."""
    tp: int | None = None
    """GPUs of one model instance (optional ``tp`` column: the tensor-parallel size); empty: one instance over all
    ``n_gpus``. An MLPerf system of 8 GPUs running eight single-GPU copies has ``n_gpus`` 8 and ``tp`` 1."""
    pp: int | None = None
    """Pipeline stages of one instance (optional ``pp`` column): layers split over GPUs that work one after another
    for one token (llama.cpp's default ``--split-mode layer`` over several cards). At batch one such a pipeline reads
    its weights at one GPU's bandwidth at a time: its decode and prefill rows are predicted on ``n_gpus / pp`` GPUs."""
    request_rate: float | None = None
    """Requests per second sent to the row's GPUs (optional ``request_rate`` column: a benchmark driven by a rate,
    not a concurrency); the batch then follows from Little's law (see _load)."""
    requests: int | None = None
    """Requests the benchmark sent in all (optional ``requests`` column; TensorRT-LLM's Triton online-serving table:
    500). With it, a row driven by a request rate or sending every request at once (``concurrency`` ``max``) is
    predicted by running the benchmark step by step (:func:`xlsxplan.core.runs.simulate_run`): its first-token time,
    time per output token and throughput are then the queue's, not a steady state's."""
    ttft_cap_ms: float | None = None
    """A first-token latency the run had to meet (optional ``ttft_cap_ms`` column; MLPerf's Server constraint)."""
    tpot_cap_ms: float | None = None
    """A per-output-token latency the run had to meet (optional ``tpot_cap_ms`` column): the batch is the largest
    whose decode step stays within it."""
    max_num_tokens: int | None = None
    """Tokens one step of the engine computes at most, decoded and prefilled together (optional ``max_num_tokens``
    column: TensorRT-LLM's max_num_tokens, vLLM's max_num_batched_tokens, SGLang's chunked_prefill_size), where the
    source states it or the engine ran at its default: the steady-state batch is then at most
    :func:`xlsxplan.core.engine.budget_batch`'s; empty: no budget (memory alone sets a saturated batch)."""
    max_batch_size: int | None = None
    """Sequences the engine runs at once at most (optional ``max_batch_size`` column: TensorRT-LLM's max_batch_size,
    vLLM's max_num_seqs, SGLang's max_running_requests); empty: none."""
    engine: str = ""
    """The serving engine as the source names it (optional ``engine`` column): vllm, sglang, trtllm, llama.cpp..."""
    publication: str = ""
    """The publication the row was read from (optional ``publication`` column; see :func:`source_key`)."""
    pool: str = ""
    """The pool of a prefill-decode disaggregated deployment a serving row measured (optional ``pool`` column):
    ``prefill`` (its GPUs only prefill prompts, whose KV caches go to other GPUs) or ``decode`` (they only decode
    requests prefilled elsewhere); empty: the GPUs do both."""
    prefix_cache_hit: float | None = None
    """The share of input tokens served from a prefix cache, not computed (optional ``prefix_cache_hit`` column,
    0-1): an input-token rate that counts cache hits is the computed rate over ``1 - hit``."""
    scale_up_gb_s: float | None = None
    """The scale-up link per GPU and direction the source gives for its own system [GB/s] (optional
    ``scale_up_gb_s`` column), where the accelerator's catalog entry has none; empty: the catalog's."""
    overlap: str = ""
    """What a prefill pool's expert all-to-all overlaps with its computation (optional ``overlap`` column, one of
    :data:`xlsxplan.core.step.OVERLAPS`); empty: ``two-batch``, as the deployments that state theirs run it."""
    flops_per_token: float | None = None
    """The source's own FLOPs per token, where the same run reports tokens per second too (see annotate)."""
    problem: str = ""
    """Why the row could not be read (a number that is not one); empty when it was."""

    def label(self) -> str:
        where = f" on {self.gpu}" if self.gpu else ""
        return f"line {self.line}: {self.name} {self.metric}{where}"


@overload
def _number(text: str, column: str, whole: Literal[True]) -> int | None: ...


@overload
def _number(text: str, column: str, whole: Literal[False] = False) -> float | None: ...


def _number(text: str, column: str, whole: bool = False) -> float | int | None:
    text = (text or "").strip()
    if not text:
        return None
    try:
        x = float(text)
    except ValueError:
        raise ValueError(f"{column} must be a number, got {text!r}") from None
    if not math.isfinite(x) or x < 0:
        raise ValueError(f"{column} must be a finite number of at least 0, got {text!r}")
    if whole:
        if not x.is_integer():
            raise ValueError(f"{column} must be a whole number, got {text!r}")
        return int(x)
    return x


def parse_measurements(text: str, origin: str = "measurements") -> list[Measurement]:
    """Rows of a measurements CSV; a file without the schema's columns is an error naming the missing ones."""
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames:
        raise CatalogError(f"{origin}: empty; a measurements CSV begins with its header row: {', '.join(COLUMNS)}")
    missing = [c for c in COLUMNS if c not in reader.fieldnames]
    if missing:
        raise CatalogError(f"{origin}: missing column(s) {', '.join(missing)}; the schema is {', '.join(COLUMNS)}")
    rows = []
    for i, raw in enumerate(reader, start=2):
        if i - 1 > MAX_MEASUREMENT_ROWS:
            raise CatalogError(
                f"{origin}: over {MAX_MEASUREMENT_ROWS:,} rows; a measurements file holds at most that (split it by "
                "publication)"
            )
        # csv pads a short row with None (trailing optional columns may be left off; a required one may not) and
        # gathers a long one's surplus under the key None
        surplus = len(raw.get(None) or [])
        lacking = [c for c in COLUMNS if raw.get(c) is None]
        given = sum(v is not None for k, v in raw.items() if k is not None) + surplus
        raw = {k: (v or "").strip() for k, v in raw.items() if k is not None}
        common: dict[str, Any] = dict(
            line=i,
            kind=raw["kind"].lower(),
            name=raw["name"],
            metric=raw["metric"].lower(),
            model=raw["model"],
            gpu=raw["gpu"],
            precision=raw["precision"],
            unit=raw["unit"],
            source=raw["source"],
            kv_precision=raw.get("kv_precision", ""),
            flops=_flops_basis(raw.get("flops", ""), raw["source"]),
            engine=raw.get("engine", "").lower(),
            publication=raw.get("publication", ""),
        )
        try:
            if surplus or lacking:
                raise ValueError(
                    f"the row has {given} fields where the header has {len(reader.fieldnames)}"
                    + (f", so it lacks {', '.join(lacking)}" if lacking else "")
                    + ": a comma missing or one too many?"
                )
            conc_text = raw["concurrency"].lower()
            concurrency: int | str | None = "max" if conc_text == "max" else _number(conc_text, "concurrency", True)
            value = _number(raw["value"], "value")
            per_node = _number(raw.get("gpus_per_node", ""), "gpus_per_node", True)
            batching = (raw.get("batching", "") or "continuous").lower()
            if batching not in BATCHING:
                raise ValueError(f"batching must be one of {', '.join(BATCHING)}, got {raw['batching']!r}")
            pool = raw.get("pool", "").lower()
            if pool and pool not in POOLS:
                raise ValueError(f"pool must be empty or one of {', '.join(POOLS)}, got {raw['pool']!r}")
            overlap = (raw.get("overlap") or "").lower()
            if overlap and overlap not in OVERLAPS:
                raise ValueError(f"overlap must be empty or one of {', '.join(OVERLAPS)}, got {raw['overlap']!r}")
            hit = _number(raw.get("prefix_cache_hit", ""), "prefix_cache_hit")
            if hit is not None and hit >= 1:
                raise ValueError(f"prefix_cache_hit must be a share from 0 to below 1, got {raw['prefix_cache_hit']!r}")
            if per_node is not None and per_node < 1:
                raise ValueError(f"gpus_per_node must be a whole number of at least 1, got {raw['gpus_per_node']!r}")
            rows.append(
                Measurement(
                    **common,
                    gpus_per_node=int(per_node or 8),
                    batching=batching,
                    pool=pool,
                    overlap=overlap,
                    prefix_cache_hit=hit,
                    scale_up_gb_s=_number(raw.get("scale_up_gb_s", ""), "scale_up_gb_s") or None,
                    ep=_number(raw.get("ep", ""), "ep", True) or None,
                    tp=_number(raw.get("tp", ""), "tp", True) or None,
                    pp=_number(raw.get("pp", ""), "pp", True) or None,
                    request_rate=_number(raw.get("request_rate", ""), "request_rate") or None,
                    requests=_number(raw.get("requests", ""), "requests", True) or None,
                    ttft_cap_ms=_number(raw.get("ttft_cap_ms", ""), "ttft_cap_ms") or None,
                    tpot_cap_ms=_number(raw.get("tpot_cap_ms", ""), "tpot_cap_ms") or None,
                    max_num_tokens=_number(raw.get("max_num_tokens", ""), "max_num_tokens", True) or None,
                    max_batch_size=_number(raw.get("max_batch_size", ""), "max_batch_size", True) or None,
                    value=value,
                    params_b=_number(raw["params_b"], "params_b"),
                    active_params_b=_number(raw["active_params_b"], "active_params_b"),
                    tokens=_number(raw["tokens"], "tokens"),
                    n_gpus=_number(raw["n_gpus"], "n_gpus", True),
                    input_len=_number(raw["input_len"], "input_len"),
                    output_len=_number(raw["output_len"], "output_len"),
                    concurrency=concurrency,
                )
            )
        except ValueError as err:
            rows.append(Measurement(**common, value=None, problem=str(err)))
    return annotate(rows)


_HARDWARE_WORDS = re.compile(r"incl\w*\.? activation recomputation|hardware flops|\bHFU\b", re.IGNORECASE)


def _flops_basis(column: str, source: str) -> str:
    """``hardware`` when the optional column says so, or the source says its FLOPs include recomputation."""
    text = (column or "").strip().lower()
    if text:
        if text not in ("model", "hardware"):
            return "model"
        return text
    return "hardware" if _HARDWARE_WORDS.search(source or "") else "model"


def annotate(rows: list[Measurement]) -> list[Measurement]:
    """Give each achieved_tflops_per_gpu row the source's FLOPs per token, where the same run also reports tokens per
    second per GPU: the two figures' ratio is the source's FLOP convention."""
    rates = {run_key(m): m.value for m in rows if m.metric == "tokens_per_sec_per_gpu" and m.value and not m.problem}
    out = []
    for m in rows:
        rate = rates.get(run_key(m))
        if m.metric == "achieved_tflops_per_gpu" and m.value and rate:
            m = dataclasses.replace(m, flops_per_token=m.value * 1e12 / rate)
        out.append(m)
    return out


def read_measurements(path: str | Path) -> list[Measurement]:
    """Rows of a measurements CSV file."""
    from ..infra.fileio import read_regular

    path = Path(path)
    try:  # a FIFO or a device is refused, never waited on; /dev/zero is not read past the limit
        raw = read_regular(path, MAX_MEASUREMENTS_BYTES, "measurements file")
    except XlsxplanError as err:
        raise CatalogError(err.message) from None
    if len(raw) > MAX_MEASUREMENTS_BYTES:
        raise CatalogError(f"{path}: over {MAX_MEASUREMENTS_BYTES >> 20} MiB; a measurements file is at most that")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise CatalogError(f"{path}: cannot be read: {err}") from None
    return parse_measurements(text, str(path))


# --- the physics of one row -------------------------------------------------------------------------------------


def shape_of(m: Measurement) -> Shape:
    """The model's shape: from the catalog when ``model`` names a preset (:func:`xlsxplan.calibration.shape.
    preset_shape`), else estimated from ``params_b``."""
    if m.model:
        found = preset_shape(m.model, m.params_b, m.active_params_b)
        if found is not None:
            return found
        if not m.params_b:
            raise Unpredictable(f"model {m.model!r} is not in the catalog and params_b is empty")
    if not m.params_b:
        raise Unpredictable("params_b is empty and no preset model is named")
    return estimated_shape(m.params_b, m.active_params_b)


_MEMO: dict[str, dict[Any, Any]] = {}
_MEMO_CATALOG: list[Any] = [None]  # the catalog the figures in _MEMO were found in
_HELD = [0]  # how many validations in progress hold the catalog they started with (:func:`_catalog_held`)


def _sync_memo() -> None:
    """Empty every table of :func:`_remembered` if :func:`xlsxplan.catalog.load_catalog` gives another catalog."""
    catalog = load_catalog()
    if _MEMO_CATALOG[0] is not catalog:
        _MEMO.clear()
        _MEMO_CATALOG[0] = catalog


@contextlib.contextmanager
def _catalog_held() -> Iterator[None]:
    """Inside the block, the remembered figures stand for the catalog as it was when the block began: one
    validation reads one catalog, asked once, not once per figure (155,000 times for the shipped rows)."""
    _sync_memo()
    _HELD[0] += 1
    try:
        yield
    finally:
        _HELD[0] -= 1


def _remembered(table: str, key: Any, compute: Callable[[], Any]) -> Any:
    """``compute()``, a figure that depends only on a row (or its shape) and the catalog, user presets included:
    kept in ``table`` by ``key`` while :func:`xlsxplan.catalog.load_catalog` gives the same catalog, every table
    emptied when it gives another (asked once a validation: :func:`_catalog_held`). validate predicts each row five to
    six times (each fold that fits on it, and its own); these figures were most of the cost of each prediction but
    its step. A figure that raises is not kept."""
    if not _HELD[0]:
        _sync_memo()
    memo = _MEMO.setdefault(table, {})
    found = memo.get(key)
    if found is None:
        found = memo[key] = compute()
    return found


def _gpu(m: Measurement) -> Any:
    if not m.gpu:
        raise Unpredictable("no gpu given")
    return _remembered("gpu", m.gpu, lambda: _catalog_gpu(m.gpu))


def _catalog_gpu(name: str) -> Any:
    try:
        return load_catalog().accelerators.get(name)
    except XlsxplanError as err:
        raise Unpredictable(err.message) from None


def _peak_flops(m: Measurement) -> float:
    """Dense peak of one accelerator at the row's precision [FLOP/s]."""
    gpu = _gpu(m)
    try:
        field_name = calibration.peak_field(_computes(m))
    except XlsxplanError as err:
        raise Unpredictable(err.message) from None
    value = gpu.figure(field_name)
    if value is None:
        why = gpu.unavailable.get(field_name, "")
        why = load_catalog().accelerators.sources.get(why, why)
        raise Unpredictable(f"{gpu.id} has no {field_name}: {why}")
    return float(value) * 1e12


def _bandwidth(m: Measurement) -> float:
    return float(_gpu(m).bandwidth_tb_s) * 1e12


def _computes(m: Measurement) -> str:
    """The precision the row's weights compute in (:func:`xlsxplan.precision.compute_precision`, as the plan reads
    an option's)."""
    return compute_precision(m.precision)


def _bits(m: Measurement) -> float:
    """Bits per weight of the precision the row's weights compute in (:func:`_computes`)."""
    try:
        return calibration.bits_per_weight(_computes(m))
    except XlsxplanError as err:
        raise Unpredictable(err.message) from None


def _expert_bytes(m: Measurement, s: Shape) -> float:
    """Bytes per routed-expert weight where the row stores its experts apart (``REST+EXPERTS``); 0 otherwise."""
    apart = expert_precision(m.precision)
    if not apart:
        return 0.0
    if not s.moe or not s.preset:
        raise Unpredictable(f"precision {m.precision!r} stores a preset mixture of experts' routed experts apart")
    try:
        return calibration.bits_per_weight(apart) / 8.0
    except XlsxplanError as err:
        raise Unpredictable(err.message) from None


def _weight_bytes(m: Measurement, s: Shape) -> float:
    """Bytes per parameter of the weights as the row's checkpoint stores them: a preset model's MODEL_WEIGHTS_GB over
    its parameters (its token embeddings and output head at the width checkpoints in the row's format keep them:
    16 bits for FP8, INT4 and NVFP4 ones, the format's own for llama.cpp's, ``embeddings`` in formats.toml; routed
    experts stored apart at their own width), the same reading the plan's step makes
    (:class:`xlsxplan.plan.search._Setup` ``bytes_per_param``); for a shape estimated from ``params_b``, the format's
    width alone [bytes]."""
    width = _bits(m) / 8.0
    experts = _expert_bytes(m, s)
    if not s.preset or not m.precision:
        return width

    def stored() -> float:
        preset = load_catalog().models.get(s.preset)
        rest = _computes(m)
        # a format name: @checked reads it as its byte count, where the signature it keeps says float
        gb = models.model_weights_gb(s.preset, cast(float, rest), published_embedding_bytes(rest), experts)
        return gb / float(preset.params_b)

    return float(_remembered("weight_bytes", (s.preset, m.precision.lower()), stored))


def _weights_read(m: Measurement, s: Shape, read_params_b: float, copies: int = 0) -> tuple[float, float]:
    """The parameters a step of row ``m`` reads [B] and their mean bytes [bytes], from ``read_params_b`` [B] of one
    copy of the model and ``copies`` more of its layers outside the routed experts (attention data-parallel):
    :func:`xlsxplan.core.step.read_weights` over the weights as stored (:func:`_weight_bytes`), as the plan reads an
    option's."""
    expert_params = models.model_expert_params_b(s.preset) if s.moe and s.preset else 0.0
    weights_gb = _weight_bytes(m, s) * s.params_b
    return read_weights(read_params_b, copies, s.params_b, expert_params, weights_gb, _expert_bytes(m, s))


def _copies(s: Shape, layout: Layout | None) -> int:
    """Further copies an instance holds of a preset mixture of experts' layers outside its routed experts: one by
    every data-parallel attention group beyond the first [count]."""
    return layout.dp - 1 if layout is not None and layout.dp > 1 and s.moe and s.preset else 0


def _kv_bytes_per_value(m: Measurement) -> float:
    """Bytes per cached value: the ``kv_precision`` column if given, else the engine's default for the weights."""
    if m.kv_precision:
        return _bits(dataclasses.replace(m, precision=m.kv_precision)) / 8.0
    modelopt = calibration.format_group(_computes(m)) == "8-bit" or _computes(m).lower() == "nvfp4"
    return 1.0 if _trtllm(m) and modelopt else 2.0


def _trtllm(m: Measurement) -> bool:
    """Whether the row was run on TensorRT-LLM: its ``engine`` column, or its name or source naming it."""
    text = f"{m.engine} {m.name} {m.source}".lower()
    return any(word in text for word in ("tensorrt", "trt-llm", "trtllm"))


def _kv_bytes_per_token(m: Measurement, s: Shape, context: float) -> float:
    """KV cache per token across the row's GPUs, averaged over a sequence of ``context`` tokens (0: every layer in
    full). A preset model's own architecture counts (latent attention, sliding windows, KV heads replicated when the
    GPUs outnumber them: MODEL_KV_BYTES_PER_TOKEN); a shape estimated from ``params_b`` is full attention."""
    return _remembered("kv", (m, s, context), lambda: _kv_bytes_per_token_of(m, s, context))


def _kv_bytes_per_token_of(m: Measurement, s: Shape, context: float) -> float:
    if s.preset:
        return models.model_kv_bytes_per_token(s.preset, context, _kv_bytes_per_value(m), _n(m))
    return 2.0 * s.layers * s.kv_width * _kv_bytes_per_value(m)


def _routing(s: Shape) -> tuple[int, int]:
    """Routed experts and experts per token of a mixture of experts (a preset's); (0, 0) for a dense model."""
    if not s.moe:
        return 0, 0
    p = load_catalog().models.get(s.preset) if s.preset else None
    if p is None or not p.experts or not p.experts_per_token:
        raise Unpredictable(
            "mixture-of-experts throughput needs the experts and experts per token, which only a preset model gives"
        )
    return int(p.experts), int(p.experts_per_token)


def _train_seq(s: Shape) -> int:
    return min(s.context, TRAIN_SEQ_CAP)


def _train_flops_per_token(s: Shape) -> float:
    """``6 N + 12 L H Q T``: PaLM's model FLOPs per training token, attention included (TRAIN_FLOPS_PER_TOKEN)."""
    return training_memory.train_flops_per_token(s.active_b, s.layers, s.heads, s.head_dim, _train_seq(s))


def _need(value: Any, column: str, m: Measurement) -> Any:
    if value is None or value == "":
        raise Unpredictable(f"{m.metric} needs {column}, which is empty")
    return value


def _n(m: Measurement) -> int:
    return m.n_gpus or 1


def _batch(m: Measurement) -> int:
    return m.concurrency if isinstance(m.concurrency, int) and m.concurrency > 0 else 1


def _context(m: Measurement) -> float:
    """Tokens a sequence holds on average while it decodes: the prompt and half the answer (MEAN_CONTEXT)."""
    return mean_context(m.input_len or 0.0, m.output_len or 0.0)


def _sequence(m: Measurement) -> float:
    """Tokens a whole sequence holds: the prompt and the answer; 0 when the row gives neither."""
    return (m.input_len or 0.0) + (m.output_len or 0.0)


def _ttft_scale(m: Measurement) -> float:
    """Seconds per unit of a ttft row: ms unless the unit says seconds."""
    return 1.0 if m.unit.strip().lower() in ("s", "sec", "second", "seconds") else 1e-3


def expert_parallel(m: Measurement, experts: int) -> int:
    """The expert-parallel group: the ``ep`` column, else the experts over ``min(experts, n_gpus, gpus_per_node)``."""
    if m.ep:
        return int(m.ep)
    return max(1, min(experts, _n(m), m.gpus_per_node))


def moe_train_features(m: Measurement, s: Shape) -> tuple[float, float, str]:
    """A mixture of experts' two training features (see :class:`xlsxplan.calibration.Observation`) and in words how
    its all-to-all was counted: ``routed`` (MOE_ROUTED_BYTES_PER_TOKEN per byte per routed value, over the token's
    FLOPs at peak times the accelerator's FLOP per byte) and ``comm`` (:func:`xlsxplan.core.effects.
    moe_all_to_all_seconds` for one token, over its FLOPs at peak). (0, 0, "") for a dense model."""
    experts, per_token, layers = moe_layout(s)
    if not experts:
        return 0.0, 0.0, ""
    peak, fpt = _peak_flops(m), _train_flops_per_token(s)
    routed = effects.moe_routed_bytes_per_token(s.hidden, layers, per_token, 1.0) * (peak / _bandwidth(m)) / fpt
    ep = expert_parallel(m, experts)
    link = _gpu(m).link_gb_s
    if ep > 1 and not link:
        return routed, 0.0, f"{_gpu(m).id} has no link_gb_s: the all-to-all is left out"
    seconds = effects.moe_all_to_all_seconds(
        1.0, s.hidden, layers, per_token, ep, float(link or 0.0), gpus_per_node=m.gpus_per_node
    )
    where = f"{min(ep, m.gpus_per_node)} per node at {link:g} GB/s" + (
        f", the rest at {effects.SCALE_OUT_GB_S:g} GB/s between nodes" if ep > m.gpus_per_node else ""
    )
    return routed, seconds * peak / fpt, f"all-to-all over {ep}-way expert parallelism ({where})"


def _efficiency_features(m: Measurement, kind: str) -> dict[str, Any]:
    """What the efficiency of ``kind`` for row ``m`` depends on (the fit's levels and covariates); a new dict each
    call. A serving kind's (the accelerator's class and the format's group) is remembered (:func:`_remembered`);
    training's covariates are computed each time (its rows are few)."""
    if kind == "train_mfu":
        return _features_of(m, kind)
    return dict(_remembered("features", (m, kind), lambda: _features_of(m, kind)))


def _features_of(m: Measurement, kind: str) -> dict[str, Any]:
    if kind == "train_mfu":
        s = shape_of(m)
        routed, comm, _ = moe_train_features(m, s)
        return {"balance": _peak_flops(m) / _bandwidth(m), "hidden": float(s.hidden), "routed": routed, "comm": comm}
    group = calibration.compute_group if kind == "prefill" else calibration.format_group
    return {"gpu_class": calibration.gpu_class(_gpu(m).id), "fmt": group(_computes(m))}


def _source_flops_per_token(m: Measurement, s: Shape) -> float:
    """The FLOPs per token the source's achieved_tflops_per_gpu figure counts (see the module's notes)."""
    if m.flops_per_token:
        return m.flops_per_token
    palm = _train_flops_per_token(s)
    return palm * 4.0 / 3.0 if m.flops == "hardware" else palm


def flops_convention(m: Measurement) -> str:
    """In words, the FLOP count an achieved_tflops_per_gpu row is compared in; empty for other rows."""
    if m.metric != "achieved_tflops_per_gpu":
        return ""
    s = shape_of(m)
    six_n = 6.0 * s.active_b * 1e9
    palm = _train_flops_per_token(s) / six_n
    if m.flops_per_token:
        return (
            f"compared in the source's FLOP count, {m.flops_per_token / six_n:.2f} x 6N per token (its TFLOP/s "
            f"over its tokens/s), not PaLM's {palm:.2f} x 6N"
        )
    if m.flops == "hardware":
        return (
            f"the source counts hardware FLOPs, recomputation included: compared at 4/3 of PaLM's {palm:.2f} x 6N "
            "(Narayanan et al. 2021, section 5.1, Eq. 3), so its model FLOPs utilisation is 3/4 of the figure over "
            "peak"
        )
    return f"compared in PaLM's FLOP count, {palm:.2f} x 6N per token (the source's own count is not stated)"


def kind_of(m: Measurement) -> str | None:
    """The efficiency a row's metric measures: train_mfu, prefill, decode_bandwidth, or None."""
    spec = METRICS.get(m.metric)
    return spec.kind if spec else None


def run_key(m: Measurement) -> tuple:
    """Rows with the same key describe the same run and are left out of a fit together."""
    who = m.model.strip().lower() or f"{m.params_b}"
    gpu = m.gpu.strip().lower()
    if m.kind == "train":
        return ("train", who, gpu, m.precision.lower(), m.tokens)
    return (m.kind, who, gpu, m.n_gpus, m.precision.lower(), m.input_len, m.output_len, m.concurrency)


_ARXIV = re.compile(r"arxiv[:/ ]\s*(\d{4}\.\d{4,5})", re.IGNORECASE)
_GITHUB = re.compile(
    r"github\.com/([\w.-]+/[\w.-]+)(?:@[0-9a-f]{6,40})?(?:/(?:issues|pull|discussions)/(\d+))?"
    r"(?:[ :]+(?:@[0-9a-f]{6,40}[ :]*)?([\w./-]+\.\w+))?",
    re.IGNORECASE,
)


def source_key(m: Measurement) -> str:
    """The publication a row comes from, the unit ``validate`` holds out (leave-one-source-out): the ``publication``
    column where a file has it; else an arXiv id in ``source``; else a GitHub repository with its issue, discussion or
    file (every commit of one document counts as one publication); else ``source`` up to its first parenthesis,
    semicolon or comma. A whole publication is left out at once, so the error ``validate`` prints is what a new
    source would see, not a run whose siblings in the same table stayed in the fit."""
    if m.publication:
        return m.publication.strip().lower()
    text = m.source or m.name
    found = _ARXIV.search(text)
    if found:
        return f"arxiv:{found.group(1)}"
    hub = _GITHUB.search(text)
    if hub:
        repo, number, path = hub.groups()
        repo = repo.lower().removesuffix(".git")
        return f"github.com/{repo}" + (f"#{number}" if number else "") + (f":{path}" if path else "")
    return re.split(r"[(;,]", text, maxsplit=1)[0].strip().lower() or f"line {m.line}"


def holdout_key(m: Measurement) -> tuple:
    """What ``validate`` leaves out together with a row: its publication (:func:`source_key`)."""
    return ("source", source_key(m))


def implied(m: Measurement) -> Observation:
    """The efficiency a measurement implies; raises :class:`Unpredictable` if it implies none."""
    if m.problem:
        raise Unpredictable(m.problem)
    kind = kind_of(m)
    if kind is None or m.value is None or m.value <= 0:
        raise Unpredictable("not an efficiency measurement")
    if kind == "decode_bandwidth" and _batch(m) != 1:
        raise Unpredictable("decode is fitted at batch 1 only")
    if kind == "prefill" and _at_load(m):
        raise Unpredictable("a first-token time under load is not a prefill efficiency")
    value = m.value
    m = _through_pipeline(m)
    if kind == "train_mfu":
        s = shape_of(m)
        fpt = _train_flops_per_token(s)
        peak = _peak_flops(m)
        e = TRAIN_RATES[m.metric].efficiency(m, value, s, peak, fpt)
    elif kind == "prefill":
        s = shape_of(m)
        prompt = _need(m.input_len, "input_len", m)
        seconds = value * _ttft_scale(m) if m.metric == "ttft" else prompt / value
        flops = 2.0 * s.active_b * 1e9 * prompt + 2.0 * s.layers * s.attn_width * prompt**2
        e = flops / (_n(m) * _peak_flops(m) * seconds)
    else:
        s = shape_of(m)
        step_bytes = s.active_b * 1e9 * _weights_read(m, s, s.active_b)[1] + _kv_bytes_per_token(
            m, s, _context(m)
        ) * _context(m)
        e = step_bytes * value / (_n(m) * _bandwidth(m))
    return Observation(kind, e, label=m.label(), run=holdout_key(m), **_efficiency_features(m, kind))


def observations(rows: Iterable[Measurement]) -> list[Observation]:
    """Every row's implied efficiency, skipping rows that imply none."""
    out = []
    for m in rows:
        try:
            out.append(implied(m))
        except Unpredictable:
            continue
    return out


def _eff(factors: Factors, m: Measurement, kind: str) -> float:
    return factors.value(kind, **_efficiency_features(m, kind))


# --- prediction, one entry per metric -------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainRate:
    """A training metric and the efficiency it measures, both ways: ``value(m, rate, s)`` predicts the row's figure
    from the tokens per second per GPU that a ``train_mfu`` gives (``rate = mfu * peak / flops_per_token``), and
    ``efficiency(m, figure, s, peak, flops_per_token)`` is the ``train_mfu`` the row's own figure implies."""

    value: Callable[[Measurement, float, Shape], float]
    efficiency: Callable[[Measurement, float, Shape, float, float], float]


def _tokens(m: Measurement) -> float:
    return float(_need(m.tokens, "tokens", m))


def _gpus(m: Measurement) -> int:
    return int(_need(m.n_gpus, "n_gpus", m))


def _clock(m: Measurement, figure: float) -> float:
    """A wall-clock figure in seconds."""
    return figure * (SECONDS_PER_DAY if m.metric == "wall_clock_days" else 1.0)


TRAIN_RATES: dict[str, TrainRate] = {
    "gpu_hours": TrainRate(lambda m, r, s: _tokens(m) / r / SECONDS_PER_HOUR,
                           lambda m, v, s, peak, fpt: _tokens(m) * fpt / (v * SECONDS_PER_HOUR * peak)),
    "wall_clock_days": TrainRate(lambda m, r, s: _tokens(m) / (r * _gpus(m)) / SECONDS_PER_DAY,
                                 lambda m, v, s, peak, fpt: _tokens(m) * fpt / (_clock(m, v) * _gpus(m) * peak)),
    "wall_clock_seconds": TrainRate(lambda m, r, s: _tokens(m) / (r * _gpus(m)),
                                    lambda m, v, s, peak, fpt: _tokens(m) * fpt / (_clock(m, v) * _gpus(m) * peak)),
    "tokens_per_sec_per_gpu": TrainRate(lambda m, r, s: r, lambda m, v, s, peak, fpt: v * fpt / peak),
    "tokens_per_sec_global": TrainRate(lambda m, r, s: r * _gpus(m),
                                       lambda m, v, s, peak, fpt: v * fpt / (_gpus(m) * peak)),
    "tokens_per_sec_per_node": TrainRate(lambda m, r, s: r * m.gpus_per_node,
                                         lambda m, v, s, peak, fpt: v * fpt / (m.gpus_per_node * peak)),
    "gpu_hours_per_trillion_tokens": TrainRate(lambda m, r, s: 1e12 / r / SECONDS_PER_HOUR,
                                               lambda m, v, s, peak, fpt: 1e12 * fpt / (v * SECONDS_PER_HOUR * peak)),
    # the source's own FLOP count per token (see flops_convention)
    "achieved_tflops_per_gpu": TrainRate(
        lambda m, r, s: r * _source_flops_per_token(m, s) / 1e12,
        lambda m, v, s, peak, fpt: v * 1e12 * fpt / _source_flops_per_token(m, s) / peak),
    # model FLOPs utilisation itself: predicted and implied as the efficiency (the rate's FLOPs over the peak)
    "mfu": TrainRate(lambda m, r, s: r * _train_flops_per_token(s) / _peak_flops(m), lambda m, v, s, peak, fpt: v),
}  # fmt: skip
"""Every training metric, by name: how its figure follows from a training rate, and the rate from its figure."""


def _predict_train(m: Measurement, s: Shape, factors: Factors) -> tuple[float, str]:
    e = _eff(factors, m, "train_mfu")
    fpt = _train_flops_per_token(s)
    peak = _peak_flops(m)
    basis = f"train_mfu {e:.3f}, {fpt / (6 * s.active_b * 1e9):.2f} x 6N FLOPs per token; {s.origin}"
    if m.metric == "mfu":
        return e, basis  # the efficiency itself, not a round trip through a rate
    return TRAIN_RATES[m.metric].value(m, e * peak / fpt, s), basis


def _predict_chinchilla(m: Measurement, s: Shape, factors: Factors) -> tuple[float, str]:
    return training.chinchilla_tokens(_need(m.params_b, "params_b", m)), "20 tokens per parameter"


def _predict_train_flops(m: Measurement, s: Shape, factors: Factors) -> tuple[float, str]:
    return training.train_flops(s.active_b, _tokens(m)), "6 N D"


def _predict_kv_capacity(m: Measurement, s: Shape, factors: Factors) -> tuple[float, str]:
    kv = _kv_bytes_per_token(m, s, _sequence(m))
    free = equations.free_bytes(s.params_b, _weight_bytes(m, s), _n(m), _gpu(m).memory_gb, USABLE_FRACTION)
    if free <= 0:
        raise Unpredictable(f"the weights alone do not fit in {USABLE_FRACTION:.0%} of memory")
    return free / kv, f"{USABLE_FRACTION:.0%} of memory less weights over {kv:,.0f} KV bytes per token; {s.origin}"


def _predict_decode(m: Measurement, s: Shape, factors: Factors) -> tuple[float, str]:
    bits, bw = _bits(m), _gpu(m).bandwidth_tb_s
    stored = _weights_read(m, s, s.active_b)[1]
    kv = _kv_bytes_per_token(m, s, _context(m))
    e_bw = _eff(factors, m, "decode_bandwidth")
    basis = f"decode_bandwidth {e_bw:.3f}, {bits:g} bits per weight; {s.origin}"
    try:
        peak = _peak_flops(m)
    except (
        Unpredictable
    ) as why:  # no published FLOP/s (Apple): the bandwidth ceiling alone, as Back-of-the-Envelope does
        speed = serving.decode_tokens_per_s(s.active_b, stored, _n(m), bw, _batch(m), kv, _context(m), e_bw)
        return speed, f"{basis}; bandwidth bound only ({why})"
    e_c = _eff(factors, m, "prefill")
    step = roofline.decode_step_seconds(
        s.active_b, stored, _batch(m), kv, _context(m), _n(m), bw, peak / 1e12, e_bw, e_c
    )
    return 1.0 / step, basis


def _predict_prefill(m: Measurement, s: Shape, factors: Factors) -> tuple[float, str]:
    peak = _peak_flops(m)
    e_c, e_bw = _eff(factors, m, "prefill"), _eff(factors, m, "decode_bandwidth")
    prompt = _need(m.input_len, "input_len", m)
    t = roofline.ttft_seconds(
        s.active_b,
        _weights_read(m, s, s.active_b)[1],
        prompt,
        s.layers,
        s.attn_width,
        _n(m),
        peak / 1e12,
        _gpu(m).bandwidth_tb_s,
        e_c,
        e_bw,
        _link(m) if _n(m) > 1 else 0.0,
    )
    basis = f"prefill {e_c:.3f}, attention included; {s.origin}"
    if m.metric == "ttft" and _at_load(m):
        load = None if m.concurrency == "max" and not m.request_rate else _load(m, s, factors)
        if _runs(m, load):
            return _run(m, s, factors)
        if load is None:
            raise Unpredictable(
                "a first-token time with every request sent at once is the queue's, which the request count sets"
            )
        t += load.step / load.scale
        basis += f"; plus one decode step at load ({load.said})"
    return (t / _ttft_scale(m) if m.metric == "ttft" else prompt / t), basis


def _at_load(m: Measurement) -> bool:
    """A serving row measured with other requests in flight: a concurrency above 1, ``max`` or a request rate."""
    return bool(m.request_rate) or m.concurrency == "max" or (isinstance(m.concurrency, int) and m.concurrency > 1)


def _link(m: Measurement) -> float:
    """The accelerator's scale-up link per direction [GB/s]; 0 when the catalog has none (PCIe cards)."""
    return float(_gpu(m).link_gb_s or 0.0)


def expert_layout(m: Measurement) -> Layout | None:
    """How a serving row's instance of ``ep`` GPUs is laid out (:class:`xlsxplan.core.step.Layout`), or None for a
    row without an ``ep`` above 1 (its GPUs share every layer by tensor parallelism, as validate scores one server).

    Expert parallel with attention data-parallel (DeepSeek-V3 Technical Report, arXiv:2412.19437, section 3.4): the
    routed experts spread over the ``ep`` GPUs, attention and the other layers held whole by each data-parallel group
    of ``tp`` GPUs (the ``tp`` column, 1 when empty), ``ep / tp`` groups. The links are those of the first system
    preset built of the row's accelerator (systems.toml: its scale-up domain, network and latencies), the same start
    as the plan's layouts (:func:`xlsxplan.core.step.linked`); without one, a scale-up domain of ``gpus_per_node``.
    The scale-up bandwidth is the row's ``scale_up_gb_s`` where given, else the accelerator's ``link_gb_s``. Tokens
    are dispatched as :func:`xlsxplan.core.step.dispatch_bytes` says for the row's precision (DeepEP's FP8 dispatch
    for 8-bit weights, NVFP4 for NVFP4 ones, else 16-bit); a prefill pool's all-to-all overlaps what the row's
    ``overlap`` says (two-batch overlap where it says nothing)."""
    if m.kind == "train" or not m.ep or m.ep <= 1:
        return None
    tp = m.tp or 1
    if m.ep % tp:
        raise Unpredictable(f"tp {tp} does not divide the expert-parallel group of {m.ep} GPUs")
    return _links(m, "all-to-all")._replace(
        tp=tp,
        dp=m.ep // tp,
        dispatch_bytes=dispatch_bytes(_computes(m), _bits(m) / 8.0),
        overlap=m.overlap or OVERLAPS[0],
    )


def replica_layout(m: Measurement) -> Layout | None:
    """How a serving row's instance beyond one server is laid out, as the plan lays out such a replica: ``pp``
    pipeline stages of ``tp`` GPUs (:func:`xlsxplan.core.step.pipelined`: a micro-batch per stage in flight), or
    more than SERVER_GPUS sharing every layer, on the links :func:`expert_layout` reads, latencies included; None
    for an instance of one server, a row measured at one request (a layer split's one token passes the stages one
    after another: :func:`_through_pipeline`) or one laid out expert-parallel."""
    if m.kind == "train" or m.metric in _ONE_REQUEST or (m.ep and m.ep > 1):
        return None
    pp = m.pp or 1
    tp = m.tp or _split(m, pp, "pp")
    if pp <= 1 and tp <= SERVER_GPUS:
        return None
    if tp * pp > _n(m) or _n(m) % (tp * pp):
        raise Unpredictable(f"tp {tp} times pp {pp} does not divide the row's {_n(m)} GPUs")
    return pipelined(_links(m, "all-reduces and pipeline sends"), tp, pp)


def _links(m: Measurement, what: str) -> Layout:
    """The links of the first system preset built of the row's accelerator (systems.toml: its scale-up domain,
    network and latencies), the plan's start (:func:`xlsxplan.core.step.linked`); without one, a scale-up domain of
    ``gpus_per_node``. The scale-up bandwidth is the row's ``scale_up_gb_s`` where given, else the accelerator's
    ``link_gb_s``; ``what``: the traffic it carries, for the reason a row without a link is not predicted."""
    from ..catalog.systems import topology_of

    topo = topology_of(_gpu(m).id)
    up = m.scale_up_gb_s or _link(m)
    if not up:
        raise Unpredictable(
            f"{_gpu(m).id} has no link_gb_s and the row gives no scale_up_gb_s: its {what} cannot be costed"
        )
    if topo is None:
        return linked(m.gpus_per_node, up)
    return linked(topo.scale_up_gpus, up, topo.scale_out_gb_s, topo.scale_up_latency_us, topo.scale_out_latency_us)


def serve_step_seconds(
    m: Measurement, s: Shape, factors: Factors, batch: int, prefill_tokens: float = 0.0
) -> tuple[float, dict[str, float]]:
    """One decode step of ``batch`` sequences of row ``m``, at serving scale 1: :func:`xlsxplan.core.step.step_parts`
    with the row's model, accelerator, precision and lengths (the same function the plan's calibrated view runs).
    ``prefill_tokens``: prompt tokens prefilled in the same step, in the engine's steady state. A row with an
    expert-parallel group (:func:`expert_layout`) is laid out so: every data-parallel group reads the layers it holds
    whole, the KV cache is a data-parallel group's, and the dispatch and combine all-to-alls join the step; one of
    ``pp`` stages or beyond one server, as the plan lays out a replica (:func:`replica_layout`). Every layout reads
    the experts every token of the step is routed to once (MOE_PARAMS_READ_B over
    :func:`xlsxplan.core.step.routed_tokens`).
    Returns the step and its parts in seconds."""
    gpu, n = _gpu(m), _n(m)
    layout = expert_layout(m) or replica_layout(m)
    experts, per_token = _routing(s)
    routed = routed_tokens(batch, prefill_tokens)
    one = s.params_b if not s.moe else equations.moe_params_read(s.params_b, s.active_b, experts, per_token, routed)
    read, mean_bytes = _weights_read(m, s, one, _copies(s, layout))
    cache_of = m if layout is None else dataclasses.replace(m, n_gpus=layout.tp)
    parts = step_parts(
        read,
        mean_bytes,
        s.active_b,
        batch,
        prefill_tokens,
        float(m.input_len or 0.0),
        _kv_bytes_per_token(cache_of, s, _context(m)),
        _context(m),
        step_shape(s, factors),
        n,
        gpu.bandwidth_tb_s,
        _peak_flops(m) / 1e12,
        _eff(factors, m, "decode_bandwidth"),
        _eff(factors, m, "prefill"),
        _link(m),
        layout,
    )
    return serve_step(parts), parts


RATE_METRICS = {
    "output_tokens_per_sec_total": "output tokens per second of all the row's GPUs",
    "output_tokens_per_sec_per_gpu": "output tokens per second per GPU",
    "output_tokens_per_sec_per_node": "output tokens per second per node (gpus_per_node GPUs)",
    "output_tokens_per_sec_per_instance": "output tokens per second of one model instance (tp GPUs)",
    "input_tokens_per_sec_per_gpu": "prompt tokens per second per GPU (a prefill pool's, or P / O of the output)",
    "input_tokens_per_sec_per_node": "prompt tokens per second per node (gpus_per_node GPUs)",
    "total_tokens_per_sec_per_gpu": "prompt and output tokens per second per GPU",
    "output_tokens_per_sec_per_user": "one request's decode speed: 1 / the decode step [tok/s]",
    "tpot_ms": "time per output token of one request: the decode step [ms]",
}
"""The serving metrics a decode step at a batch predicts, and what each counts."""


def _split(m: Measurement, parts: int, column: str) -> int:
    """The row's GPUs over ``parts`` (its ``tp`` or ``pp``); Unpredictable when ``parts`` does not divide them."""
    n = _n(m)
    if parts > n or n % parts:
        raise Unpredictable(f"{column} {parts} does not divide the row's {n} GPUs")
    return n // parts


def _instances(m: Measurement) -> tuple[Measurement, int]:
    """One model instance of the row (``tp`` GPUs, or with an expert-parallel layout its ``ep``; its share of the
    concurrency) and how many the row's GPUs hold."""
    tp = (m.ep if expert_layout(m) is not None else m.tp) or _n(m)
    copies = _split(m, tp, "ep" if expert_layout(m) is not None else "tp")
    if copies == 1:
        return m, 1
    conc = m.concurrency if not isinstance(m.concurrency, int) else max(1, math.ceil(m.concurrency / copies))
    return dataclasses.replace(m, n_gpus=tp, concurrency=conc), copies


def _step_at(m: Measurement, s: Shape, factors: Factors, batch: int) -> tuple[float, dict[str, float]]:
    """The continuous-batching decode step at ``batch``, its prompts prefilled inside it, at serving scale 1; in a
    disaggregated deployment's pool (``pool``), a decode pool's step decodes ``batch`` sequences and prefills nothing,
    a prefill pool's prefills the prompts of ``batch`` sequences and decodes nothing."""
    prompt, output = float(m.input_len or 0.0), float(m.output_len or 1.0)
    if m.pool == "decode":
        return serve_step_seconds(m, s, factors, batch)
    if m.pool == "prefill":
        return serve_step_seconds(m, s, factors, 0, batch * prompt)
    return serve_step_seconds(m, s, factors, batch, effects.prefill_tokens_per_step(batch, prompt, output))


def serving_step(m: Measurement, factors: Factors, batch: int) -> tuple[float, dict[str, float]]:
    """The step validate predicts for serving row ``m`` at ``batch`` sequences, at the fitted serving scale
    (:meth:`xlsxplan.calibration.Factors.serving_scale` for :func:`scale_gpus`), and its parts [s]: what a published
    run at that batch is scored with, and what ``xlsxplan plan``'s calibrated view reports for the option the row
    describes (``step_s``, ``step_parts_s``; tests/plan/test_one_chain.py holds the two to one another)."""
    _, parts = _step_at(m, shape_of(m), factors, batch)
    scale = factors.serving_scale(scale_gpus(m), _gpu(m).id)
    return serve_step(parts, scale), {k: v / scale for k, v in parts.items()}


def scale_gpus(m: Measurement) -> int:
    """The GPUs the serving scale is read at for one instance of row ``m`` (:meth:`xlsxplan.calibration.Factors.
    serving_scale`): those sharing each layer, ``tp`` (the data-parallel group with an expert-parallel layout, as the
    plan reads it), else the instance's."""
    inst = _instances(m)[0]
    layout = expert_layout(inst)
    return layout.tp if layout is not None else _n(inst)


def _capped_batch(m: Measurement, s: Shape, factors: Factors, batch: int, scale: float) -> int:
    """The largest batch up to ``batch`` whose decode step, at the serving scale, meets ``tpot_cap_ms``; the step
    grows with the batch, so a bisection finds it. Raises Unpredictable when even one request misses the cap."""
    cap = float(m.tpot_cap_ms or 0.0) / 1e3
    if not cap:
        return batch
    # batches 1..batch that meet the cap come first: bisect counts them
    meeting = bisect.bisect_left(range(1, batch + 1), True, key=lambda b: _step_at(m, s, factors, b)[0] / scale > cap)
    if not meeting:
        raise Unpredictable(f"one request's decode step already misses the {m.tpot_cap_ms:g} ms cap")
    return meeting


@dataclass(frozen=True)
class _Load:
    """One instance of a serving row in its steady state: the batch, the step at it, what set the batch."""

    inst: Measurement
    copies: int
    batch: int
    step: float
    parts: dict[str, float]
    scale: float
    said: str
    rate_bound: float | None = None
    """Output tokens per second of one instance when a request rate, not the engine, sets the throughput."""
    saturated: bool = False
    """Whether the row's request rate is more than the engine serves at the largest batch it runs: no steady state."""


def _load(m: Measurement, s: Shape, factors: Factors) -> _Load:
    """The continuous-batching steady state of one instance of row ``m``: the batch is what fills memory
    (``concurrency`` ``max``), the concurrency where it is smaller, the largest batch meeting ``tpot_cap_ms``, or,
    for a row driven by a ``request_rate`` ``r`` per instance, the batch Little's law gives, ``B = r (T_1 + O
    t(B))``, requests in flight equal to the arrival rate times the time each spends (its first-token time alone
    ``T_1`` and ``O`` steps of ``t(B)``), found by bisection; beyond what memory holds the engine is saturated. Where
    the row gives the engine's per-step limits (``max_num_tokens``, ``max_batch_size``), the batch is at most
    :func:`xlsxplan.core.engine.budget_batch`'s, ``T / (1 + P / O)``: a saturated engine runs that many sequences,
    not what memory holds."""
    inst, copies = _instances(m)
    gpu = _gpu(inst)
    layout = expert_layout(inst)
    cache_of = inst if layout is None else dataclasses.replace(inst, n_gpus=layout.tp)
    kv = _kv_bytes_per_token(cache_of, s, _context(inst))
    conc = 0 if inst.concurrency in (None, "max") else int(inst.concurrency)
    if m.pool == "prefill":  # the prompts of one step, their caches sent on: the memory is the decode pool's
        if not conc:
            raise Unpredictable("a prefill pool's row needs its concurrency: the prompts prefilled in one step")
        fits: float = conc
    else:
        fits = _fits(inst, s, kv)
    batch = int(fits if conc == 0 else min(conc, fits))
    if batch < 1:
        raise Unpredictable(f"the weights or one request do not fit in {USABLE_FRACTION:.0%} of memory")
    said = f"batch {batch}" + (" (memory)" if batch == int(fits) and conc != batch else "")
    limits = (inst.max_num_tokens or 0, inst.max_batch_size or 0)
    budget = 0
    if m.pool != "prefill":  # a prefill pool's concurrency is its step's prompts, given
        prompt = 0.0 if m.pool == "decode" else float(inst.input_len or 0.0)
        budget = engine.budget_batch(limits[0], prompt, float(inst.output_len or 1.0), limits[1])
    if budget and budget < batch:
        batch = budget
        said = f"batch {batch} (the engine's {engine.step_limits_text(*limits)})"
    scale = factors.serving_scale(scale_gpus(m), gpu.id)
    rate_bound = None
    saturated = False
    if m.tpot_cap_ms:
        uncapped = batch
        batch = _capped_batch(inst, s, factors, batch, scale)
        said = f"batch {batch} of {uncapped} under the {m.tpot_cap_ms:g} ms per-token cap"
    elif m.request_rate:
        rate = m.request_rate / copies
        output = float(_need(m.output_len, "output_len", m))
        first = _predict_prefill(dataclasses.replace(inst, metric="ttft", concurrency=1, request_rate=None), s,
                                 factors)[0] * 1e-3  # fmt: skip

        def excess(b: int) -> float:  # noqa: E306
            return rate * (first + output * _step_at(inst, s, factors, b)[0] / scale) - b

        if excess(batch) > 0:
            said += f": {m.request_rate:g} requests/s saturate it"
            saturated = True
        else:  # the smallest batch whose requests in flight Little's law can hold: bisect finds it
            batch = 1 + bisect.bisect_left(range(1, batch + 1), True, key=lambda b: excess(b) <= 0)
            rate_bound = rate * output
            said = f"batch {batch} by Little's law at {m.request_rate:g} requests/s"
    step, parts = _step_at(inst, s, factors, batch)
    return _Load(inst, copies, batch, step, parts, scale, said, rate_bound, saturated)


def _fits(inst: Measurement, s: Shape, kv: float) -> float:
    """Sequences at the row's average context whose KV cache of ``kv`` bytes a token fits beside the weights of one
    instance: TensorRT-LLM's share of what the weights leave (:func:`xlsxplan.core.engine.trtllm_batch_that_fits`),
    else USABLE_FRACTION of the memory."""
    gpu, n = _gpu(inst), _n(inst)
    held, stored = _weights_read(inst, s, s.params_b, _copies(s, expert_layout(inst)))
    if _trtllm(inst):  # the KV cache gets its share of what the weights leave, not of the whole memory
        return engine.trtllm_batch_that_fits(held, stored, kv, _context(inst), n, gpu.memory_gb)
    return equations.batch_that_fits(held, stored, kv, _context(inst), n, gpu.memory_gb, USABLE_FRACTION)


_RUN_METRICS = frozenset(
    {
        "ttft",
        "tpot_ms",
        "output_tokens_per_sec_per_user",
        "output_tokens_per_sec_total",
        "output_tokens_per_sec_per_gpu",
    }
)
"""The figures a benchmark run of a known number of requests reports, predicted by running it (:func:`_run`)."""


def _runs(m: Measurement, load: _Load | None) -> bool:
    """Whether row ``m`` is predicted by running its benchmark step by step: it gives the requests it sent, on GPUs
    that both prefill and decode with continuous batching and no latency cap, and no steady state exists (every
    request sent at once, or a rate the engine does not serve at the largest batch it runs: ``load``, the row's
    :func:`_load`, saturated). A rate it serves settles where Little's law puts it, and the steady state predicts the
    row."""
    if not (
        m.requests
        and m.metric in _RUN_METRICS
        and (m.request_rate or m.concurrency == "max")
        and not m.pool
        and m.batching != "static"
        and not m.tpot_cap_ms
        and not m.ttft_cap_ms
        and expert_layout(m) is None
        and _trtllm(m)  # the run admits and batches as TensorRT-LLM does
    ):
        return False
    return not m.request_rate or (load is not None and load.saturated)


def _run_step(inst: Measurement, s: Shape, factors: Factors, scale: float) -> Callable[[int, int], float]:
    """The step time [s] at ``decoded`` sequences and ``read`` prompt tokens that a run of row instance ``inst`` takes
    (:func:`serve_step_seconds` over ``scale``). Every part of a dense model's step on one tensor-parallel group is a
    constant plus a multiple of the decoded sequences plus a multiple of the prompt tokens (the weights read once,
    the linear layers and routed values per token, the cache per sequence, attention per sequence and per prompt
    token, the all-reduces per token): such a step is read from three of them and its parts added up as
    :func:`xlsxplan.core.step.serve_step` adds them; any other is computed at each."""
    if s.moe or replica_layout(inst) is not None or expert_layout(inst) is not None:
        return lambda decoded, read: serve_step_seconds(inst, s, factors, decoded, read)[0] / scale
    base = serve_step_seconds(inst, s, factors, 0, 0.0)[1]
    per_sequence = {k: v - base[k] for k, v in serve_step_seconds(inst, s, factors, 1, 0.0)[1].items()}
    per_token = {k: v - base[k] for k, v in serve_step_seconds(inst, s, factors, 0, 1.0)[1].items()}

    def step(decoded: int, read: int) -> float:
        return serve_step({k: v + decoded * per_sequence[k] + read * per_token[k] for k, v in base.items()}, scale)

    return step


def _run(m: Measurement, s: Shape, factors: Factors) -> tuple[float, str]:
    """Row ``m``'s figure from its benchmark run step by step (:func:`xlsxplan.core.runs.simulate_run`): each
    instance of the row's GPUs gets its share of the requests and of the rate, its KV cache holds what memory fits
    at the row's average context, its per-step limits are the row's (``max_num_tokens``, ``max_batch_size``), and
    each step's time is the serving step validate scores every serving row with (:func:`serve_step_seconds` at the
    step's decoded sequences and prefilled prompt tokens, over the fitted serving scale)."""
    inst, copies = _instances(m)
    prompt = int(_need(m.input_len, "input_len", m))
    output = int(_need(m.output_len, "output_len", m))
    kv = _kv_bytes_per_token(inst, s, _context(inst))
    kv_tokens = _fits(inst, s, kv) * _context(inst)
    scale = factors.serving_scale(scale_gpus(m), _gpu(m).id)
    requests = max(1, math.ceil((m.requests or 1) / copies))
    rate = m.request_rate / copies if m.request_rate else None
    try:
        run = runs.simulate_run(
            requests,
            rate,
            prompt,
            output,
            kv_tokens,
            inst.max_batch_size or 0,
            inst.max_num_tokens or 0,
            _run_step(inst, s, factors, scale),
        )
    except ValueError as err:
        raise Unpredictable(str(err)) from None
    sent = "every one at once" if rate is None else f"{m.request_rate:g} a second"
    basis = (
        f"a run of {m.requests:,} requests ({sent}) step by step: {run.steps:,} steps, up to {run.most_decoded:,} "
        f"sequences decoding, each step the serving step at {scale:.3f} x roofline with effects; KV cache "
        f"{kv_tokens:,.0f} tokens"
        + (
            f" ({engine.step_limits_text(inst.max_num_tokens or 0, inst.max_batch_size or 0)})"
            if inst.max_num_tokens or inst.max_batch_size
            else ""
        )
        + f"; {s.origin}"
    )
    per_gpu = run.output_tokens_per_s * copies / _n(m)
    figure = {
        "ttft": run.ttft_s / _ttft_scale(m),  # in the row's unit (ms, or s), as every first-token time
        "tpot_ms": 1e3 * run.tpot_s,
        "output_tokens_per_sec_per_user": 1.0 / run.tpot_s if run.tpot_s else math.inf,
        "output_tokens_per_sec_total": run.output_tokens_per_s * copies,
        "output_tokens_per_sec_per_gpu": per_gpu,
    }[m.metric]
    return figure, basis


def _predict_throughput(m: Measurement, s: Shape, factors: Factors) -> tuple[float, str]:
    """A serving row's rate (RATE_METRICS): output throughput of the row's GPUs, per GPU, per node, per instance,
    prompt and output tokens per GPU, or one request's decode speed and time per output token.

    A continuous-batching engine's steady state (:func:`xlsxplan.core.effects.prefill_tokens_per_step`): every decode
    step of ``B`` sequences also prefills ``B P / O`` prompt tokens, whose arithmetic joins the step's roofline
    instead of queueing behind it, so ``B`` tokens come out per step. The step has the effects of
    :mod:`xlsxplan.core.effects`: attention's arithmetic over the cache and over the prompts, and the tensor-parallel
    all-reduces of every token's activations over the accelerator's link. ``B`` comes from :func:`_load`. The row's
    GPUs hold ``n_gpus / tp`` instances, each serving its share. The calibrated serving scale for the instance's GPUs
    (:meth:`xlsxplan.calibration.Factors.serving_scale`) multiplies the rate."""
    prompt = _need(m.input_len, "input_len", m)
    output = float(m.output_len or 1.0) if m.pool == "prefill" else _need(m.output_len, "output_len", m)
    if m.pool == "prefill" and not m.metric.startswith("input_"):
        raise Unpredictable(f"a prefill pool generates no output tokens: {m.metric} is not one it has")
    if m.pool and m.batching == "static":
        raise Unpredictable("a disaggregated pool's row is continuous batching: batching static does not apply")
    load = _load(m, s, factors)
    if _runs(m, load):
        return _run(m, s, factors)
    inst, copies, batch, n = load.inst, load.copies, load.batch, _n(load.inst)
    e_c, e_bw = _eff(factors, inst, "prefill"), _eff(factors, inst, "decode_bandwidth")
    if m.batching == "static":  # the batch's prompts first, then its decode steps: O B tokens in B prefills + O steps
        step, parts = serve_step_seconds(inst, s, factors, batch)
        peak, link = _peak_flops(inst), _link(inst)
        flops = 2.0 * s.active_b * 1e9 * prompt + effects.attention_prefill_flops(s.layers, s.attn_width, prompt)
        exchange = effects.tp_allreduce_seconds(prompt, s.hidden, s.layers, n, link) if n > 1 and link else 0.0
        prefill = flops / (n * peak * e_c) + exchange
        instance = load.scale * output / (output * step / batch + prefill)
        parts["prefill"] = prefill
        per_step = step / load.scale
    else:
        step, parts = load.step, load.parts
        per_step = step / load.scale
        instance = batch / per_step if load.rate_bound is None else load.rate_bound
    shares = ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in parts.items() if v)
    copies_said = f"{copies} instances of {n} GPU(s), " if copies > 1 else ""
    basis = (
        f"serving {load.scale:.3f} x {'static batch, ' if m.batching == 'static' else ''}roofline with effects at "
        f"{copies_said}{load.said}: decode_bandwidth {e_bw:.3f}, prefill {e_c:.3f}, KV "
        f"{_kv_bytes_per_value(inst):g} byte(s) per value, average context {_context(inst):g}; step {shares}; "
        f"{s.origin}"
    )
    per_gpu = instance * copies / _n(m)
    if m.pool == "prefill":  # the step's prompt tokens, not its sequences
        input_per_gpu = per_gpu * prompt
    elif m.pool == "decode":
        input_per_gpu = 0.0
        if m.metric.startswith("input_"):
            raise Unpredictable(f"a decode pool prefills nothing: {m.metric} is not one it has")
    else:
        input_per_gpu = per_gpu * prompt / output
    if m.prefix_cache_hit:  # the input rate counts the tokens a prefix cache served
        input_per_gpu /= 1.0 - m.prefix_cache_hit
        basis += f"; {m.prefix_cache_hit:.1%} of input tokens from the prefix cache"
    if m.pool:
        basis += f"; the {m.pool} pool of a disaggregated deployment"
    layout = expert_layout(load.inst)
    if layout is not None:
        basis += f"; {layout.name()} over {layout.gpus} GPUs ({layout.scale_up_gpus} a scale-up domain)"
    figure = {
        "input_tokens_per_sec_per_gpu": input_per_gpu,
        "input_tokens_per_sec_per_node": input_per_gpu * m.gpus_per_node,
        "output_tokens_per_sec_total": instance * copies,
        "output_tokens_per_sec_per_gpu": per_gpu,
        "output_tokens_per_sec_per_node": per_gpu * m.gpus_per_node,
        "output_tokens_per_sec_per_instance": instance,
        "total_tokens_per_sec_per_gpu": per_gpu * (prompt + output) / output,
        "output_tokens_per_sec_per_user": 1.0 / per_step,
        "tpot_ms": 1e3 * per_step,
    }[m.metric]
    if m.metric.endswith("per_node"):
        basis += f"; {m.gpus_per_node} GPUs per node"
    return figure, basis


@dataclass(frozen=True)
class Metric:
    """How one metric is predicted: the efficiency its figure measures (``kind``, None for one a formula gives),
    the efficiencies its prediction uses, and the function that predicts it."""

    kind: str | None
    uses: tuple[str, ...]
    predict: Callable[[Measurement, Shape, Factors], tuple[float, str]]


_SERVE = ("decode_bandwidth", "prefill")
METRICS: dict[str, Metric] = {
    **{name: Metric("train_mfu", ("train_mfu",), _predict_train) for name in TRAIN_RATES},
    "train_flops": Metric(None, (), _predict_train_flops),
    "chinchilla_optimal_tokens": Metric(None, (), _predict_chinchilla),
    "kv_cache_capacity_tokens": Metric(None, (), _predict_kv_capacity),
    "ttft": Metric("prefill", _SERVE, _predict_prefill),
    "prefill_tokens_per_sec": Metric("prefill", _SERVE, _predict_prefill),
    "decode_tokens_per_sec": Metric("decode_bandwidth", _SERVE, _predict_decode),
    **{name: Metric(None, _SERVE, _predict_throughput) for name in RATE_METRICS},
}
"""Every metric xlsxplan predicts, by name (the measurements README lists them)."""


def predict(m: Measurement, factors: Factors) -> tuple[float, str]:
    """The row's predicted value in its own unit, and how it was predicted; raises :class:`Unpredictable`."""
    if m.problem:
        raise Unpredictable(m.problem)
    spec = METRICS.get(m.metric)
    if spec is None:
        raise Unpredictable(f"metric {m.metric!r} is not one xlsxplan predicts (known: {', '.join(METRICS)})")
    return spec.predict(_through_pipeline(m), shape_of(m), factors)


_ONE_REQUEST = frozenset({"decode_tokens_per_sec", "prefill_tokens_per_sec", "ttft"})


def _through_pipeline(m: Measurement) -> Measurement:
    """A one-request row of a pipeline (``pp`` stages) as the GPUs that work at once: ``n_gpus / pp``."""
    if not m.pp or m.pp <= 1 or m.metric not in _ONE_REQUEST:
        return m
    return dataclasses.replace(m, n_gpus=_split(m, m.pp, "pp"))


# --- validation -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RowResult:
    """One input row's prediction: ``predicted`` and ``ratio`` are None when it was not predicted."""

    line: int
    name: str
    metric: str
    measured: float | None
    predicted: float | None
    ratio: float | None
    reason: str
    basis: str = ""
    kind: str = ""
    group: str = ""
    """The row's group in the summary (:func:`row_group`): what ``validate`` reports apart."""
    p10: float | None = None
    """The low end of the row's P10-P90 range, in its unit, from the other publications' residuals (see with_bands)."""
    p90: float | None = None
    inside: bool | None = None
    """Whether the measured figure lies inside the row's own P10-P90 range; None without a range."""

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "metric": self.metric,
            "measured": self.measured,
            "predicted": self.predicted,
            "ratio": self.ratio,
            "p10": self.p10,
            "p90": self.p90,
            "inside_p10_p90": self.inside,
            "reason": self.reason,
            "basis": self.basis,
            "group": self.group,
            "line": self.line,
        }


TIME_METRICS = frozenset(
    {"gpu_hours", "wall_clock_days", "wall_clock_seconds", "ttft", "gpu_hours_per_trillion_tokens", "tpot_ms"}
)
"""Metrics that are one over a speed: a faster run has less of them."""


def band_kind(metric: str) -> str | None:
    """The kind of calibrated figure a metric is (bands.BAND_KINDS), or None for one a formula gives exactly."""
    if metric in TRAIN_RATES:
        return "train"
    if metric == "decode_tokens_per_sec":
        return "decode"
    if metric in ("ttft", "prefill_tokens_per_sec"):
        return "prefill"
    if metric in RATE_METRICS:
        return "throughput"
    return None


def speed_residual(metric: str, measured: float, predicted: float) -> float:
    """``log(measured / predicted)`` as a speed: for a time-like metric, ``log(predicted / measured)``."""
    r = math.log(measured / predicted)
    return -r if metric in TIME_METRICS else r


def figure_range(metric: str, predicted: float, multipliers: tuple[float, float]) -> tuple[float, float]:
    """A predicted figure's P10 and P90 from the kind's speed multipliers: a speed is multiplied, a time divided."""
    low, high = multipliers
    return (predicted / high, predicted / low) if metric in TIME_METRICS else (predicted * low, predicted * high)


def residuals_by_kind(
    results: Sequence[RowResult], rows: Sequence[Measurement]
) -> dict[str, list[tuple[tuple, float]]]:
    """Each band kind's held-out residuals, with the publication each comes from (:func:`holdout_key`); rows
    expert-parallel across nodes (:func:`expert_parallel_row`) are scored with the band but add none to it."""
    runs = {m.line: holdout_key(m) for m in rows}
    apart = {m.line for m in rows if expert_parallel_row(m)}
    out: dict[str, list[tuple[tuple, float]]] = {}
    for r in results:
        kind = band_kind(r.metric)
        if kind and r.line not in apart and r.ratio is not None and r.measured and r.predicted:
            out.setdefault(kind, []).append(
                (runs.get(r.line, (r.line,)), speed_residual(r.metric, r.measured, r.predicted))
            )
    return out


def with_bands(
    results: Sequence[RowResult], rows: Sequence[Measurement], pooled: dict[str, list[float]] | None = None
) -> list[RowResult]:
    """Each predicted row with its P10-P90 range and whether the measurement lies inside it.

    The range comes from the residuals of the row's kind in *other* publications (leave-one-source-out, so a row never
    widens its own band), each publication weighted alike (:func:`xlsxplan.calibration.bands.by_source`), or from
    ``pooled`` residuals (a factors file's ``bands``) when given, as for a user's rows."""
    by_kind = residuals_by_kind(results, rows)
    runs = {m.line: holdout_key(m) for m in rows}
    folds = fold_map([*runs.values(), *(key for pairs in by_kind.values() for key, _ in pairs)])
    multipliers: dict[tuple, tuple[float, float] | None] = {}  # per kind and fold: one quantile each, not one a row
    out = []
    for r in results:
        kind = band_kind(r.metric)
        if not kind or r.predicted is None:
            out.append(r)
            continue
        fold = folds.get(runs.get(r.line, (r.line,)))
        if (kind, fold) not in multipliers:
            others = (pooled or {}).get(kind) or bands.by_source(
                (key, x) for key, x in by_kind.get(kind, []) if folds.get(key) != fold
            )
            multipliers[(kind, fold)] = bands.band_multipliers(others) if len(others) >= 2 else None
        band = multipliers[(kind, fold)]
        if band is None:
            out.append(r)
            continue
        p10, p90 = figure_range(r.metric, r.predicted, band)
        hit = None if r.measured is None or r.ratio is None else bool(p10 <= r.measured <= p90)
        out.append(dataclasses.replace(r, p10=p10, p90=p90, inside=hit))
    return out


def band_table(results: Sequence[RowResult], rows: Sequence[Measurement]) -> dict[str, Any]:
    """Each kind's residuals, every publication weighted alike (:func:`xlsxplan.calibration.bands.by_source`), and the
    P10/P90 speed multipliers they give, as a factors file records them (``bands``), with the rows and publications
    behind them."""
    out: dict[str, Any] = {}
    for kind, pairs in residuals_by_kind(results, rows).items():
        if len(pairs) < 2:
            continue
        values = bands.by_source(pairs)
        low, high = bands.band_multipliers(values)
        out[kind] = {
            "rows": len(pairs),
            "sources": len({key for key, _ in pairs}),
            "p10": round(low, 4),
            "p90": round(high, 4),
            "residuals": sorted(round(x, 4) for x in values),
        }
    return out


def is_serving_row(m: Measurement) -> bool:
    """A serving rate row (RATE_METRICS), continuous or static, without a latency cap or a request rate: what the
    serving scale is fitted on. A capped or rate-driven row's batch depends on the scale itself; it is predicted,
    not fitted on; so is a row expert-parallel across nodes (:func:`expert_parallel_row`), which tests the layout's
    step out of sample."""
    return (
        m.metric in RATE_METRICS
        and not m.tpot_cap_ms
        and not m.request_rate
        and not m.problem
        and bool(m.value)
        and not expert_parallel_row(m)
    )


def serving_residuals(rows: Sequence[Measurement], factors: Factors) -> list[tuple[float, float, float]]:
    """For each serving row of ``rows`` that can be predicted: the speed residual ``log(measured / predicted)`` at
    serving scale 1 (time metrics inverted), ``log`` of the GPUs of one instance, and 1 on an AMD Instinct part."""
    base = dataclasses.replace(factors, serving=1.0, serving_tp=0.0, serving_amd=1.0)
    out = []
    for m in rows:
        if not is_serving_row(m):
            continue
        try:
            predicted, _ = predict(m, base)
        except (Unpredictable, XlsxplanError):
            continue
        gpus = scale_gpus(m)
        amd = float(m.gpu.upper().startswith("MI"))
        out.append((speed_residual(m.metric, float(m.value), predicted), math.log(gpus), amd))  # type: ignore[arg-type]
    return out


def fit_serving(
    rows: Sequence[Measurement], factors: Factors, residuals: Sequence[tuple[float, float, float]] | None = None
) -> Factors:
    """``factors`` with the serving scale, its tensor-parallel exponent and its AMD multiplier fitted
    (:meth:`xlsxplan.calibration.Factors.serving_scale`): a Huber regression, in log space, of measured over
    predicted serving rates at scale 1 on the log of the instance's GPUs and an AMD indicator, over ``rows``' serving
    rows (:func:`is_serving_row`); (1, 0, 1) when there are none. ``residuals``: those triples already computed
    (:func:`serving_residuals`).

    Three free parameters: what a continuous-batching engine reaches beyond the per-operator roofline at the shares
    fitted on batch-one rows (decode bandwidth from llama.cpp, prefill from batch-one first-token times), how that
    changes with the GPUs one instance spans, and how much less of the datasheet an AMD part's engines reach. A
    feature no row varies (every row on one GPU, none on AMD) stays at 0 through the ridge penalty."""
    from .fit import huber_regression

    triples = list(serving_residuals(rows, factors) if residuals is None else residuals)
    if not triples:
        return dataclasses.replace(factors, serving=1.0, serving_tp=0.0, serving_amd=1.0)
    b0, b_tp, b_amd = huber_regression([r for r, _, _ in triples], [(x, a) for _, x, a in triples])
    return dataclasses.replace(factors, serving=math.exp(b0), serving_tp=b_tp, serving_amd=math.exp(b_amd))


MAX_FOLDS = 64
"""The most fits ``validate`` makes: with more publications than this, they are dealt in turn (sorted by key) into
this many folds, each left out whole, so a file of many thousand one-row sources costs 64 fits, not one a row."""


def fold_map(keys: Iterable[tuple]) -> dict[tuple, tuple]:
    """Each holdout key's fold: itself, or with more than MAX_FOLDS keys, one of MAX_FOLDS folds dealt in turn over
    the keys sorted."""
    ordered = sorted(set(keys), key=repr)
    many = len(ordered) > MAX_FOLDS
    return {k: (("fold", i % MAX_FOLDS) if many else k) for i, k in enumerate(ordered)}


@dataclass
class _FitCache:
    """Fits without one publication (or fold of publications, MAX_FOLDS), each kind refitted only when it had rows of
    that kind; the serving scale refitted on the serving rows of ``rows`` outside it."""

    pool: list[Observation]
    rows: Sequence[Measurement] = ()
    parts: dict[tuple, Any] = field(default_factory=dict)
    folds: dict[tuple, tuple] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.folds = fold_map({o.run for o in self.pool} | {holdout_key(m) for m in self.rows})

    def fold(self, key: tuple | None) -> tuple | None:
        """The fold ``key``'s publication is left out with (itself unless there are over MAX_FOLDS)."""
        return None if key is None else self.folds.get(key, key)

    def _kept(self, kind: str, key: tuple | None) -> tuple[int, ...]:
        fold = self.fold(key)
        memo = ("kept", kind, fold)
        if memo not in self.parts:
            if kind == "serving":
                self.parts[memo] = tuple(
                    i for i, m in enumerate(self.rows) if is_serving_row(m) and self.fold(holdout_key(m)) != fold
                )
            else:
                self.parts[memo] = tuple(
                    i for i, o in enumerate(self.pool) if o.kind == kind and (fold is None or self.fold(o.run) != fold)
                )
        return cast(tuple[int, ...], self.parts[memo])

    def counts(self, key: tuple | None) -> dict[str, dict[str, dict[str, int]]]:
        """Rows behind each level of the group kinds in the fit without ``key``'s publication."""
        memo = ("counts", self.fold(key))
        if memo not in self.parts:
            self.parts[memo] = {
                kind: calibration.level_counts(kind, [self.pool[i] for i in self._kept(kind, key)])
                for kind in ("prefill", "decode_bandwidth")
            }
        return cast(dict[str, dict[str, dict[str, int]]], self.parts[memo])

    def without(self, key: tuple | None) -> Factors:
        memo = ("factors", self.fold(key))
        if memo not in self.parts:
            self.parts[memo] = self._without(key)
        return cast(Factors, self.parts[memo])

    def _moe(self, i: int) -> bool:
        memo = ("moe", i)
        if memo not in self.parts:
            try:
                self.parts[memo] = shape_of(self.rows[i]).moe
            except (Unpredictable, XlsxplanError):
                self.parts[memo] = True  # unknown: keyed as a mixture of experts would be, never shared wrongly
        return bool(self.parts[memo])

    def _without(self, key: tuple | None) -> Factors:
        components = []
        ids = []
        for kind in calibration.KINDS:
            kept = self._kept(kind, key)
            if (kind, kept) not in self.parts:
                self.parts[(kind, kept)] = calibration.fit_kind(kind, [self.pool[i] for i in kept])
            components.append(self.parts[(kind, kept)])
            ids.append(kept)
        factors = Factors(*components)
        serve = self._kept("serving", key)
        if not serve:
            return factors
        # a serving prediction uses the training fit only through routed_bytes: folds that leave out a training run
        # with the same routed_bytes share one scale
        shares = (ids[1], ids[2], factors.train_mfu.routed_bytes)
        skey = ("serving", *shares, serve)
        if skey not in self.parts:
            pairs = []
            for i in serve:  # each row's residual at scale 1 depends on the shares only: kept across folds
                # routed_bytes moves only a mixture of experts' prediction; a dense row's residual is shared by the
                # folds that differ in it alone
                rkey = ("residual", i, ids[1], ids[2], factors.train_mfu.routed_bytes if self._moe(i) else None)
                if rkey not in self.parts:
                    self.parts[rkey] = serving_residuals([self.rows[i]], factors)
                pairs.extend(self.parts[rkey])
            fitted = fit_serving([], factors, pairs)
            self.parts[skey] = (fitted.serving, fitted.serving_tp, fitted.serving_amd)
        # the fold's own training fit, with the serving fields that folds of the same shares share
        scale, exponent, amd = self.parts[skey]
        return dataclasses.replace(factors, serving=scale, serving_tp=exponent, serving_amd=amd)


def _kinds_used(m: Measurement) -> tuple[str, ...]:
    spec = METRICS.get(m.metric)
    if spec is None:
        return ()
    return (spec.kind,) if spec.kind else spec.uses


_WHAT = {"train_mfu": "peak compute (MFU)", "prefill": "peak compute", "decode_bandwidth": "peak bandwidth"}


def notes(m: Measurement, factors: Factors, counts: dict[str, dict[str, dict[str, int]]]) -> list[str]:
    """What a predicted row's reason column says: a factor the fit would put above 1 (capped), a level no row of the
    fit supports (multiplier 1 assumed), and the FLOP count a TFLOP/s figure is compared in."""
    out = []
    for kind in _kinds_used(m):
        try:
            features = _efficiency_features(m, kind)
        except (Unpredictable, XlsxplanError):
            continue
        raw = factors.raw(kind, **features)
        if raw > 1.0:
            out.append(
                f"warning: the fit gives {raw:.2f} of {_WHAT[kind]} for this row, more than the hardware has; "
                "capped at 1.00"
            )
        if kind in counts and features.get("gpu_class") != calibration.MEASURED:
            levels = counts[kind]
            if not sum(levels["class"].values()):
                out.append(f"no {kind} row in this fit: the source documents' {calibration.SEED_FACTORS[kind]:.2f}")
                continue
            for axis, level in (("class", features["gpu_class"]), ("format", features["fmt"])):
                if not levels[axis].get(level):
                    out.append(f"{kind} has no {level} row in this fit: multiplier 1 assumed")
    convention = flops_convention(m)
    if convention:
        out.append(convention)
    return out


GROUPS = (
    "training",
    "one request (decode, prefill)",
    "serving throughput, dense",
    "serving throughput, mixture of experts",
    "expert parallel across nodes (per node, per GPU)",
    "serving latency (per token, per user)",
    "under a latency cap or a request rate",
    "formulas (capacity, FLOPs)",
)
"""The groups ``validate`` reports apart, in order (:func:`row_group`)."""


def row_group(m: Measurement) -> str:
    """The group of GROUPS a row belongs to: training, one request, serving throughput of a dense model or a mixture
    of experts, a deployment expert-parallel across nodes (:func:`expert_parallel_row`), per-token latency, rates
    under a latency cap, or figures a formula gives."""
    (training, one, dense, moe_group, spread, latency, capped, formulas) = GROUPS
    if m.kind == "train" and m.metric in TRAIN_RATES:
        return training
    if m.metric in _ONE_REQUEST:
        return one
    if m.metric in RATE_METRICS:
        if m.tpot_cap_ms or m.ttft_cap_ms or m.request_rate:
            return capped
        if m.metric in ("tpot_ms", "output_tokens_per_sec_per_user"):
            return latency
        if expert_parallel_row(m):
            return spread
        try:
            moe = shape_of(m).moe
        except (Unpredictable, XlsxplanError):
            moe = bool(m.active_params_b and m.params_b and m.active_params_b < m.params_b)
        return moe_group if moe else dense
    return formulas


def expert_parallel_row(m: Measurement) -> bool:
    """A serving row of a deployment laid out expert-parallel (an ``ep`` above 1) or of one pool of a disaggregated
    deployment (``pool``): predicted with its layout, never fitted on (see is_serving_row) and never widening the
    throughput band of the single-server rows (see residuals_by_kind), so that its error is a held-out one."""
    return m.kind != "train" and (bool(m.pool) or bool(m.ep and m.ep > 1))


def validate(
    rows: Sequence[Measurement],
    pool: Sequence[Measurement] | None = None,
    leave_out: bool = True,
    factors_as_is: Factors | None = None,
    cache: _FitCache | None = None,
) -> list[RowResult]:
    """Predict every row; with ``leave_out``, from a fit on ``pool`` (default: the rows) without the row's publication
    (:func:`source_key`, or its fold: MAX_FOLDS);
    with ``factors_as_is``, from those factors for every row, refitting nothing (``validate --factors-as-is``).
    ``cache``: leave-one-source-out fits already made on the same pool (fit_report passes its own)."""
    with _catalog_held():
        return _validate(rows, pool, leave_out, factors_as_is, cache)


def _validate(
    rows: Sequence[Measurement],
    pool: Sequence[Measurement] | None,
    leave_out: bool,
    factors_as_is: Factors | None,
    cache: _FitCache | None,
) -> list[RowResult]:
    fitted_on = rows if pool is None else pool
    cache = cache or _FitCache(observations(fitted_on), list(fitted_on))
    results = []
    for m in rows:
        kind = kind_of(m) or ""
        group = row_group(m)
        try:
            factors = factors_as_is or cache.without(holdout_key(m) if leave_out else None)
            predicted, basis = predict(m, factors)
        except Unpredictable as why:
            results.append(RowResult(m.line, m.name, m.metric, m.value, None, None, str(why), kind=kind, group=group))
            continue
        except XlsxplanError as err:
            results.append(
                RowResult(m.line, m.name, m.metric, m.value, None, None, err.message, kind=kind, group=group)
            )
            continue
        if m.value is None or m.value <= 0:
            reason = "the measured value is empty or 0, so there is no ratio"
            results.append(RowResult(m.line, m.name, m.metric, m.value, predicted, None, reason, basis, kind, group))
            continue
        said = "; ".join(notes(m, factors, cache.counts(holdout_key(m) if leave_out else None)))
        ratio = predicted / m.value
        results.append(RowResult(m.line, m.name, m.metric, m.value, predicted, ratio, said, basis, kind, group))
    return with_bands(results, rows)


def summarise(results: Sequence[RowResult]) -> dict[str, Any]:
    """Coverage, median absolute error and the share within 2x, over the rows that were predicted."""
    ratios = [r.ratio for r in results if r.ratio is not None]
    errors = [abs(x - 1.0) for x in ratios]
    within = [0.5 <= x <= 2.0 for x in ratios]
    out: dict[str, Any] = {
        "rows": len(results),
        "predicted": len(ratios),
        "coverage": len(ratios) / len(results) if results else 0.0,
        "median_abs_error": statistics.median(errors) if errors else None,
        "within_2x": sum(within) / len(within) if within else None,
        "outside_2x": [r.line for r in results if r.ratio is not None and not 0.5 <= r.ratio <= 2.0],
        "worst_ratio": None,
    }
    out["groups"] = {}
    for name in GROUPS:
        mine = [r for r in results if r.group == name]
        if not mine:
            continue
        got = [r.ratio for r in mine if r.ratio is not None]
        out["groups"][name] = {
            "rows": len(mine),
            "predicted": len(got),
            "median_abs_error": statistics.median(abs(x - 1.0) for x in got) if got else None,
            "within_2x": sum(0.5 <= x <= 2.0 for x in got) / len(got) if got else None,
        }
    banded = [r.inside for r in results if r.inside is not None]
    out["rows_with_band"] = len(banded)
    out["band_coverage"] = sum(banded) / len(banded) if banded else None
    if ratios:
        worst = max((r for r in results if r.ratio is not None), key=lambda r: abs(math.log(r.ratio)))  # type: ignore[arg-type]
        out["worst_ratio"] = {"line": worst.line, "name": worst.name, "metric": worst.metric, "ratio": worst.ratio}
    return out


def fit_report(rows: Sequence[Measurement], origin: str, digest: str, path: str | None = None) -> dict[str, Any]:
    """The calibration file's content: the fit on every row, with the rows used, the rows behind every level (a level
    with none is recorded as assumed), the free parameters and the fit's errors. ``path``: the data file's full path,
    recorded for a user's refit (validate then fits on the same rows); None for the shipped fit."""
    return fitted(rows, origin, digest, path)[0]


def fitted(
    rows: Sequence[Measurement], origin: str, digest: str, path: str | None = None
) -> tuple[dict[str, Any], Factors, list[RowResult]]:
    """:func:`fit_report`'s content, with the factors fitted on every row and the leave-one-source-out results it
    computed on the way, for a caller that needs them too (:func:`xlsxplan.calibration.figures.compute`)."""
    obs = observations(rows)
    factors = fit_serving(rows, calibration.fit(obs))
    data = factors.to_dict()
    cache = _FitCache(obs, list(rows))  # once: each run's leave-out fit serves every kind
    for kind in calibration.KINDS:
        mine = [o for o in obs if o.kind == kind]
        fitted = [factors.predicted(o) / o.value for o in mine]
        loo = [cache.without(o.run).predicted(o) / o.value for o in mine]
        data[kind]["rows_used"] = len(mine)
        data[kind]["sources"] = len({o.run for o in mine})
        if kind == "train_mfu":
            data[kind]["free_parameters"] = (3 if any(o.routed for o in mine) else 2) if mine else 0
        else:
            levels = calibration.level_counts(kind, mine)
            data[kind]["levels"] = levels
            data[kind]["assumed"] = [
                f"{level} ({axis}): no rows, multiplier 1"
                for axis in ("class", "format")
                for level, n in levels[axis].items()
                if n == 0
            ]
            data[kind]["free_parameters"] = (1 if mine else 0) + sum(
                1 for axis in ("class", "format") for level, n in list(levels[axis].items())[1:] if n
            )
        data[kind]["degrees_of_freedom"] = data[kind]["rows_used"] - data[kind]["free_parameters"]
        data[kind]["median_abs_error"] = round(statistics.median(abs(x - 1) for x in fitted), 4) if mine else None
        data[kind]["leave_one_source_out_median_abs_error"] = (
            round(statistics.median(abs(x - 1) for x in loo), 4) if mine else None
        )
    serving_rows = [m for m in rows if is_serving_row(m)]
    data["serving"]["rows_used"] = len(serving_rows)
    data["serving"]["sources"] = len({holdout_key(m) for m in serving_rows})
    widths = {m.tp or m.n_gpus or 1 for m in serving_rows}
    amd = any(m.gpu.upper().startswith("MI") for m in serving_rows)
    data["serving"]["free_parameters"] = (1 + (len(widths) > 1) + amd) if serving_rows else 0
    about = (
        "Calibrated efficiencies (xlsxplan.calibration). Generated by `xlsxplan calibrate --fit`; do not edit "
        "by hand. Errors are |fitted / implied - 1| over the rows used; with no degrees of freedom left the "
        "in-sample error is 0 by construction and only the leave-one-source-out error (a whole publication held out "
        "at a time) says anything. `levels` "
        "counts the rows behind each GPU class and weights format; a level with none keeps multiplier 1, "
        "listed under `assumed`."
    )
    held_out = validate(rows, cache=cache)
    data["bands"] = {
        "about": "P10-P90 ranges (xlsxplan.calibration.bands): per kind of figure, the leave-one-source-out residuals "
        "log(measured / predicted) as speed ratios, each publication weighted alike (its residuals summarised by "
        f"{bands.SOURCE_POINTS} quantiles), the rows and publications behind them, and the split-conformal P10 and P90 "
        "speed multipliers they give",
        **band_table(held_out, rows),
    }
    source: dict[str, Any] = {"file": origin, "sha256": digest, "rows": len(rows)}
    if path:
        source["path"] = path
    return {"about": about, "data": source, **data}, factors, held_out
