"""The training plan: the cheapest layout that fits in memory and finishes within a budget and a deadline.

A question about training is a choice too: which accelerator, how many, split how. :func:`plan_training` enumerates

    accelerator x precision (BF16, FP8) x GPUs (powers of two up to the limit) x tensor x pipeline x data x expert
    parallel x ZeRO stage (0-3; 3 is FSDP's full shard) x micro-batch x activation recompute (none, selective, full)

at a global batch, and for each computes, with the core's functions (:mod:`xlsxplan.core.training`,
:mod:`xlsxplan.core.training_memory`, :mod:`xlsxplan.core.goodput`):

* **memory per GPU by component**: weights, gradients and optimizer states sharded by ZeRO over the data-parallel
  GPUs and by tensor x pipeline parallelism (TRAIN_STATE_GB), and the activations the first pipeline stage keeps for
  its in-flight micro-batches (``min(p, m)`` micro-batches of ``L / p`` layers with 1F1B scheduling) at the
  recompute chosen (ACTIVATION_GB, fused attention, no dropout, sequence parallelism with tensor parallelism), and
  with ZeRO-3 under pipeline parallelism the stage's weights kept gathered (:func:`_gathered_stage_gb`), against the
  accelerator's memory times a usable share;
* **step time**: the step's FLOPs (6N per token plus PaLM's attention ``12 L H Q T``, TRAIN_FLOPS_PER_TOKEN, and
  the forward pass again where recomputed) over the GPUs' dense peak at the calibrated efficiency
  (``EFFICIENCY("train_mfu", gpu, precision, hidden)``, counting attention as PaLM does; for a mixture of experts
  with the calibration's routed term, :func:`_model_mfu`). In FP8 the linear layers run at the FP8 peak, the
  attention core at the BF16 peak (Transformer Engine and torchao's Float8 multiply only the linear layers in FP8),
  and the casts to FP8 add ``FP8_CAST_BYTES`` a hidden unit a layer a token over the memory bandwidth. Plus, per
  micro-batch, the tensor-parallel all-reduces of each layer (four a layer, six with full recompute, Shoeybi et al.
  2019, section 3), the pipeline's activation sends and a mixture of experts' all-to-alls (four a layer), stretched
  by the pipeline bubble ``(m + p - 1) / m`` (Narayanan et al. 2021, section 2.2: the bubble is ``(p - 1) / (m + p -
  1)`` of the step; with ``v`` model chunks a stage, the interleaved schedule's ``(m + (p - 1) / v) / m`` and ``v``
  times the sends, section 2.2.2, for a layout given to :func:`layout_option`), plus the data-parallel gradient
  traffic (ring all-reduce or reduce-scatter and all-gather, ``2 (d - 1) / d`` of the gradients; ZeRO-3 gathers the
  weights again for every micro-batch, ``(2 m + 1) (d - 1) / d``, unless pipeline parallelism keeps them gathered
  through the step; ZeRO, arXiv:1910.02054, section 7; :func:`_dp_passes`) of which a
  stated share overlaps the backward pass. Tensor parallelism stays within a node; a group that fits in one node
  crosses the accelerator's scale-up link (the catalog's ``link_gb_s``; the network's bandwidth for a card without
  one), one that spans nodes the network;
* **goodput**: interruptions at a per-GPU rate (Llama 3's), checkpoints of the weights and optimizer states every
  Young's interval, a restart per interruption: the effective-time ratio (:mod:`xlsxplan.core.goodput`);
* **wall days** ``tokens / (tokens per step / step time) / goodput``, GPU-hours and dollars at the accelerator's
  on-demand price from the one price table (``catalog/prices.toml``) or the user's.

Options that fit, finish within the days, cost within the budget and use no more GPUs than allowed are feasible;
they come first, cheapest first; every other carries its reasons with the amounts. One option is reported per
accelerator, GPU count and precision, its cheapest layout (every layout with ``all_layouts``).

**The size to choose.** Without a model size, the run's is the compute-optimal one for what it can buy ("Estimating
the Compute and Memory Needed for Language Models", "The M2": ``N = sqrt(C t / 120)`` for 20 tokens a parameter,
OPTIMAL_PARAMS_B): ``C t`` is the 6N-FLOPs of the GPU-hours the budget buys (or the deadline allows on the GPU limit,
the lesser) at the sustained rate of the best layout found, which the search finds again at the new size until the
size settles; the source text's warning that a peak must not stand in for a sustained rate is what the layout's
MFU and goodput answer. With tokens given instead, ``N = C t / (6 D)``.

The calibrated MFU rests on published training runs, which communicated as they trained: the communication added
here on top of it leans the estimate slow, by the share of those runs' time their own communication took.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import catalog
from ..calibration import TrainFit, efficiency, load_factors
from ..calibration.shape import Shape, estimated_shape, moe_layout, preset_shape
from ..catalog import models
from ..core import effects, goodput, training, training_memory
from ..domains import (
    domain_of,
)
from ..errors import ArgumentError, NotAvailableError
from .inputs import REQUIRED
from .train_inputs import TRAIN_INPUTS

__all__ = [
    "TRAIN_INPUTS",
    "PRECISIONS",
    "RECOMPUTE",
    "LayoutResult",
    "TrainOption",
    "TrainPlan",
    "layout_option",
    "plan_training",
]

PRECISIONS = {"bf16": "bf16_tflops", "fp8": "fp8_tflops"}
"""The training precisions searched, by the accelerator's dense peak they run the matrix multiplies at. FP8 as
Transformer Engine trains: BF16 weights and gradients and FP32 optimizer states, only the multiplies in FP8, so
memory is the same."""

RECOMPUTE = {"none": "flash", "selective": "selective", "full": "full"}
"""Activation recompute as the plan names it, by ACTIVATION_GB's mode: none keeps everything but the attention scores
(fused attention never stores them), selective recomputes the attention core (Korthikanti et al. 2022), full keeps
only each layer's input and recomputes the forward pass."""

GIGA, TERA = 1e9, 1e12
_TOP_POWER = 1 << 20

_BY_NAME = {p.name: p for p in TRAIN_INPUTS}


@dataclass
class TrainOption:
    """One layout and what it comes to."""

    gpu: str
    gpus: int
    tp: int
    pp: int
    dp: int
    ep: int
    zero: int
    micro_batch: int
    global_batch: int
    recompute: str
    precision: str
    params_b: float
    tokens: float
    memory_gb_per_gpu: float
    memory: dict[str, float]
    usable_gb: float
    price: float
    price_basis: str
    step_s: float = math.nan
    step: dict[str, float] = field(default_factory=dict)
    mfu: float = math.nan
    goodput: float = math.nan
    checkpoint_interval_s: float = math.nan
    days: float = math.nan
    gpu_hours: float = math.nan
    usd: float = math.nan
    reasons: list[str] = field(default_factory=list)
    cp: int = 1
    calibrated_mfu: float = math.nan
    """EFFICIENCY's train_mfu for the accelerator, precision and width, attention counted (for a mixture of experts
    with the calibration's routed term): the compute's share of peak before communication and the bubble
    [fraction]."""
    feasible: bool = False
    """Fits, within the GPU limit, the days and the budget (:func:`_mark`); :attr:`reasons` says why not."""

    @property
    def fits(self) -> bool:
        return self.memory_gb_per_gpu <= self.usable_gb

    @property
    def micro_batches(self) -> int:
        """Micro-batches each data-parallel rank runs a step: the global batch over ``dp`` ranks of ``micro_batch``
        sequences (the search keeps only layouts that divide it) [count]."""
        return self.global_batch // max(1, self.dp * self.micro_batch)

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons)

    def layout(self) -> str:
        """The layout in words: ``TP 2 x PP 1 x DP 128, ZeRO-1, micro-batch 1, recompute none, bf16``."""
        ep = f" x EP {self.ep}" if self.ep > 1 else ""
        zero = "ZeRO-3/FSDP" if self.zero == 3 else f"ZeRO-{self.zero}"
        return (
            f"TP {self.tp} x PP {self.pp} x DP {self.dp}{ep}, {zero}, micro-batch {self.micro_batch}, "
            f"recompute {self.recompute}, {self.precision}"
        )

    def to_json(self) -> dict[str, Any]:
        def num(x: float, digits: int) -> float | None:
            return None if not math.isfinite(x) else round(x, digits)

        return {
            "gpu": self.gpu,
            "gpus": self.gpus,
            "tp": self.tp,
            "pp": self.pp,
            "dp": self.dp,
            "ep": self.ep,
            "cp": self.cp,
            "zero": self.zero,
            "micro_batch": self.micro_batch,
            "global_batch": self.global_batch,
            "recompute": self.recompute,
            "precision": self.precision,
            "params_b": self.params_b,
            "tokens": self.tokens,
            "memory_gb_per_gpu": num(self.memory_gb_per_gpu, 3),
            "step_s": num(self.step_s, 4),
            "mfu": num(self.mfu, 4),
            "days": num(self.days, 3),
            "gpu_hours": num(self.gpu_hours, 1),
            "usd": num(self.usd, 2),
            "price_basis": self.price_basis,
            "goodput": num(self.goodput, 4),
            "feasible": self.feasible,
            "reason": self.reason,
            "memory_gb": {k: round(v, 3) for k, v in self.memory.items()},
            "step_parts_s": {k: round(v, 4) for k, v in self.step.items()},
            "checkpoint_interval_s": num(self.checkpoint_interval_s, 1),
            "calibrated_mfu": num(self.calibrated_mfu, 4),
        }


@dataclass
class TrainPlan:
    """The inputs as given, every option ranked, and which limit binds."""

    inputs: dict[str, Any]
    options: list[TrainOption]
    limits: list[dict[str, Any]]
    sizing: dict[str, dict[str, Any]]
    skipped: list[str]
    prices: dict[str, tuple[float, str]]

    @property
    def feasible(self) -> bool:
        return bool(self.options) and self.options[0].feasible

    def to_json(self) -> dict[str, Any]:
        return {
            "inputs": self.inputs,
            "options": [o.to_json() for o in self.options],
            "limits": self.limits,
            "sizing": self.sizing,
            "skipped": self.skipped,
        }


# --- the inputs ---------------------------------------------------------------------------------------------------


def _names(value: str, argument: str, allowed: tuple[str, ...] | None = None) -> tuple[str, ...]:
    names = tuple(x.strip().lower() for x in str(value).split(",") if x.strip())
    if not names:
        raise ArgumentError(f"{argument} must list at least one name, separated by commas, got {value!r}", argument)
    if allowed is not None:
        bad = [x for x in names if x not in allowed]
        if bad:
            raise ArgumentError(f"{argument} must list names of {', '.join(allowed)}, got {bad[0]!r}", argument)
    return tuple(dict.fromkeys(names))


def _whole_list(value: str, argument: str, low: int, high: int) -> tuple[int, ...]:
    items = _names(value, argument)
    bad = [x for x in items if not x.isdigit() or not low <= int(x) <= high]
    if bad:
        raise ArgumentError(f"{argument} must list whole numbers from {low} to {high}, got {bad[0]!r}", argument)
    return tuple(sorted({int(x) for x in items}))


def _checked(given: dict[str, Any]) -> dict[str, Any]:
    """Every input with its default where not given, each checked against its domain (one line naming it)."""
    unknown = [k for k in given if k not in _BY_NAME]
    if unknown:
        raise ArgumentError(f"{unknown[0]} is not an input of the training plan", unknown[0])
    out: dict[str, Any] = {}
    for p in TRAIN_INPUTS:
        value = given.get(p.name, p.default)
        if value is REQUIRED:
            raise ArgumentError(f"{p.name} is required", p.name)
        out[p.name] = domain_of(p.domain).check(p.name, value)  # type: ignore[union-attr]
    if out["model"].strip().lower() == "none":
        out["model"] = ""
    return out


def _prices(gpus: str) -> dict[str, tuple[float, str]]:
    """Each accelerator with its price per GPU-hour and where it comes from: given, or the catalog's on-demand price
    (the one price table)."""
    from .search import parse_gpus

    table = catalog.load_prices()
    out: dict[str, tuple[float, str]] = {}
    for gpu, price in parse_gpus(gpus or "all", "gpus").items():
        if price is not None:
            out[gpu] = (price, "given")
            continue
        try:
            out[gpu] = (table.get(gpu).usd_per_gpu_hour, "on demand: " + table.citation(gpu).split(";")[0][:80])
        except NotAvailableError:
            raise NotAvailableError(
                f"gpus: {gpu} has no rental price in the catalog: give one as {gpu}=USD_PER_HOUR", "gpus"
            ) from None
    return out


# --- the model ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Model:
    shape: Shape
    params_b: float
    active_b: float
    expert_b: float
    """Parameters in the routed experts, sharded by expert parallelism [B]."""
    experts: int
    per_token: int
    moe_layers: int


def _model(name: str, params_b: float) -> _Model:
    if not name:
        return _Model(estimated_shape(params_b), params_b, params_b, 0.0, 0, 0, 0)
    shape = preset_shape(name, params_b or None)
    if shape is None:
        catalog.load_catalog().models.get(name)  # the catalog's one-line error, with the closest names
        raise ArgumentError(f"model {name!r} is not a preset", "model")
    experts, per_token, moe_layers = moe_layout(shape)
    expert_b = 0.0
    if experts:
        scale = shape.params_b / catalog.load_catalog().models.get(shape.preset).params_b
        expert_b = models.model_expert_params_b(shape.preset) * scale
    return _Model(shape, shape.params_b, shape.active_b, expert_b, experts, per_token, moe_layers)


# --- one accelerator ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Gpu:
    name: str
    memory_gb: float
    link_gb_s: float
    price: float
    basis: str
    peaks: dict[str, float]
    """Dense TFLOP/s by training precision, for those the accelerator has."""
    bf16_tflops: float
    """Dense BF16 TFLOP/s: the attention core's rate at every precision (:func:`_time`)."""
    bandwidth_tb_s: float
    """Memory bandwidth [TB/s]: a mixture of experts' routed traffic (:func:`_model_mfu`) and FP8's casts
    (:func:`_fp8_cast_bytes`) run at it."""


def _accelerator(name: str, price: float, basis: str, precisions: tuple[str, ...], skipped: list[str]) -> _Gpu:
    acc = catalog.load_catalog().accelerators.get(name)
    peaks: dict[str, float] = {}
    for prec in precisions:
        peak = getattr(acc, PRECISIONS[prec], None)
        if peak:
            peaks[prec] = float(peak)
        else:
            skipped.append(f"{acc.id} {prec}: the accelerator has no dense {prec.upper()} peak in the catalog")
    link = float(acc.link_gb_s or 0)
    bf16 = float(acc.bf16_tflops or 0.0)
    return _Gpu(acc.id, float(acc.memory_gb), link, price, basis, peaks, bf16, float(acc.bandwidth_tb_s))


@functools.lru_cache(maxsize=4096)
def _state_gb(params_b: float, zero: int, dp: int, model_parallel: int) -> tuple[float, float, float]:
    """Weights, gradients and optimizer states one GPU holds [GB], each through TRAIN_STATE_GB."""
    # TRAIN_STATE_GB is linear in each byte count: its components are differences of it
    total = _train_state_gb(params_b, 12, zero, dp, model_parallel, 2, 2)
    no_states = _train_state_gb(params_b, 0, zero, dp, model_parallel, 2, 2)
    grads = _train_state_gb(params_b, 0, zero, dp, model_parallel, 2, 4) - no_states
    weights, states = no_states - grads, total - no_states
    return weights, grads, states


@functools.lru_cache(maxsize=8192)
def _activations_gb(seq: float, mb: int, hidden: int, heads: int, layers: int, tp: int, mode: str) -> float:
    sp = 1 if tp > 1 else 0
    kept = _activation_gb(seq, mb, hidden, heads, layers, tp, sp, RECOMPUTE[mode], 0)
    if mode == "full":  # recomputing one layer's backward holds that layer's activations in full
        kept += _activation_gb(seq, mb, hidden, heads, 1, tp, sp, "flash", 0)
    return kept


@functools.lru_cache(maxsize=256)
def _mfu(gpu: str, precision: str, hidden: int) -> float:
    return efficiency("train_mfu", gpu, precision, hidden)


def _model_mfu(m: _Model, g: _Gpu, precision: str, flops_per_token: float) -> float:
    """The calibrated MFU of the model on the accelerator at the precision [fraction]: EFFICIENCY's train_mfu at the
    model's width, and for a mixture of experts the calibration's own routed term with it (:func:`_routed_share`)."""
    eff = _mfu(g.name, precision, m.shape.hidden)
    if not m.per_token or not m.moe_layers or not g.bandwidth_tb_s:
        return eff
    balance = g.peaks[precision] / g.bandwidth_tb_s  # FLOP per byte: TFLOP/s over TB/s
    per_byte = effects.moe_routed_bytes_per_token(m.shape.hidden, m.moe_layers, m.per_token, 1.0)
    fit = load_factors().train_mfu  # the factors in use now (a user's refit replaces them): part of the cache's key
    return eff * _routed_share(fit, balance, float(m.shape.hidden), per_byte * balance / flops_per_token)


@functools.lru_cache(maxsize=1024)
def _routed_share(fit: TrainFit, balance: float, hidden: float, routed: float) -> float:
    """What a mixture of experts' routed traffic leaves of the dense MFU [fraction]: the calibrated train_mfu model
    with the routed feature over the same without it, ``(1 + o) / (1 + o + routed_bytes x routed)`` (``o`` the dense
    overhead; :class:`xlsxplan.calibration.TrainFit`, fitted with its ``routed_bytes``). ``routed`` is ``k d L_moe``
    bytes per routed value (MOE_ROUTED_BYTES_PER_TOKEN at one byte) over the token's FLOPs at the accelerator's FLOP
    per byte: permuting each token's ``k`` routed copies into expert order and back, the router's gather and the
    experts' activations are memory-bound work that grows with ``k`` (DeepSeek-V3, arXiv:2412.19437, section 3.2.2).
    ``fit``: the train_mfu factors it is read from."""
    return fit.raw(balance, hidden, routed) / fit.raw(balance, hidden)


@functools.lru_cache(maxsize=1024)
def _goodput(n: int, state_gb: float, rate: float, restart: float, ckpt_bw: float) -> tuple[float, float]:
    """The effective-time ratio of a job on n GPUs, and its checkpoint interval [s]."""
    mtbf = goodput.job_mtbf_s(n, rate)
    write = goodput.checkpoint_s(state_gb, n, ckpt_bw)
    interval = goodput.checkpoint_interval_s(write, mtbf)
    return goodput.effective_time_ratio(interval, write, restart, mtbf), interval


def _counts(limit: int, beyond: int) -> list[int]:
    """GPU counts tried: powers of two up to the limit, the limit itself, and powers of two above it up to
    ``beyond`` (rejected for the limit, to show what the deadline would need)."""
    counts = {1 << k for k in range(21) if (1 << k) <= max(limit, beyond)}
    counts.add(limit)
    return sorted(counts)


def _divisors(n: int, among: tuple[int, ...]) -> list[int]:
    return [x for x in among if x <= n and n % x == 0]


@dataclass(frozen=True)
class _Run:
    """The run the layouts are asked to do."""

    params_b: float
    tokens: float


def _layouts(
    m: _Model, run: _Run, g: _Gpu, a: dict[str, Any], choices: dict[str, tuple[Any, ...]], counts: list[int]
) -> list[TrainOption]:
    """Every layout of one accelerator, each with its memory and, where it fits, its time, goodput and cost."""
    s = m.shape
    layers, hidden, heads = s.layers, s.hidden, s.heads
    seq = a["seq_len"]
    global_seqs = max(1, round(a["global_batch_tokens"] / seq))
    tokens_step = global_seqs * seq
    usable = g.memory_gb * a["usable_fraction"]
    node = a["gpus_per_node"]
    intra = g.link_gb_s or a["network_gb_s"]
    net = a["network_gb_s"]
    dense_b = m.params_b - m.expert_b
    ckpt_gb = training.train_memory_gb(m.params_b, 14)  # BF16 weights and mixed-precision Adam; gradients not saved
    flops_tok, extra = _flops_per_token(m, seq)
    act_bytes = seq * hidden * 2.0  # one sequence's activations at a layer boundary, BF16
    out: list[TrainOption] = []
    every = bool(a["all_layouts"])
    least: dict[tuple[int, str], tuple[float, Any]] = {}
    """Per GPU count and precision, the layout needing the least memory, for a group where none fits."""
    for prec, peak in g.peaks.items():
        eff = _model_mfu(m, g, prec, flops_tok)
        for n in counts:
            for tp in _divisors(n, (1, 2, 4, 8)):
                if tp > node:
                    continue
                for pp in _divisors(n // tp, (1, 2, 4, 8, 16, 32, 64)):
                    if pp > layers:
                        continue
                    dp = n // (tp * pp)
                    stage_layers = math.ceil(layers / pp)
                    for ep in _divisors(dp, (1, 2, 4, 8, 16, 32, 64)) if m.experts else [1]:
                        if m.experts and m.experts % ep:
                            continue
                        for mb in choices["micro_batches"]:
                            if global_seqs % (dp * mb):
                                continue
                            micro = global_seqs // (dp * mb)
                            in_flight = min(pp, micro)
                            for zero in choices["zero_stages"]:
                                w, gr, st = _states(m, dense_b, zero, dp, tp, pp, ep)
                                for rc in choices["recompute"]:
                                    act = _activations_gb(seq, mb, hidden, heads, stage_layers * in_flight, tp, rc)
                                    gathered = _gathered_stage_gb(zero, pp, tp, dense_b)
                                    total = w + gr + st + act + gathered
                                    fits = total <= usable
                                    group = (n, prec)
                                    if not (fits or every) and total >= least.get(group, (math.inf, None))[0]:
                                        continue
                                    memory = {"weights": w, "gradients": gr, "optimizer": st, "activations": act}
                                    if gathered:
                                        memory["gathered_stage"] = gathered
                                    o = TrainOption(
                                        g.name,
                                        n,
                                        tp,
                                        pp,
                                        dp,
                                        ep,
                                        zero,
                                        mb,
                                        global_seqs,
                                        rc,
                                        prec,
                                        run.params_b,
                                        run.tokens,
                                        total,
                                        memory,
                                        usable,
                                        g.price,
                                        g.basis,
                                    )
                                    ctx = _Step(
                                        peak,
                                        eff,
                                        tokens_step,
                                        micro,
                                        stage_layers,
                                        flops_tok + extra[rc],
                                        _attention_flops(m, seq, rc),
                                        g.bf16_tflops,
                                    )
                                    if not (fits or every):  # the group's least memory so far, timed if kept
                                        least[group] = (total, (o, ctx))
                                        continue
                                    _time(o, a, m, g, ctx, act_bytes, intra, net, node, dense_b, ckpt_gb)
                                    out.append(o)
                                    if fits and not every:  # the other modes of this stage recompute more
                                        break
                                if fits and rc == choices["recompute"][0] and not every:
                                    break  # higher stages move the same or more, for memory no longer needed
        timed = {(o.gpus, o.precision) for o in out}
        for group, (_, kept) in least.items():
            if group[1] == prec and group not in timed:
                o, ctx = kept
                _time(o, a, m, g, ctx, act_bytes, intra, net, node, dense_b, ckpt_gb)
                out.append(o)
    return out


def _flops_per_token(m: _Model, seq: float) -> tuple[float, dict[str, float]]:
    """FLOPs per trained token [FLOP] (6N plus PaLM's attention, TRAIN_FLOPS_PER_TOKEN) and, by recompute mode, the
    FLOPs a token's recomputed forward pass adds [FLOP]: the attention core for selective, the whole forward pass for
    full."""
    s = m.shape
    flops_tok = training_memory.train_flops_per_token(m.active_b, s.layers, s.heads, s.head_dim, seq)
    attn_fwd = _attention_flops(m, seq) / 3.0  # a third of PaLM's 12 L H Q T: the forward pass
    return flops_tok, {"none": 0.0, "selective": attn_fwd, "full": 2.0 * m.active_b * GIGA + attn_fwd}


def _gated_selective_flops(s: Shape, ffn: int) -> float:
    """FLOPs per token torchtitan's selective policy recomputes [FLOP]: the forward pass of the matrix multiplies
    whose outputs it does not save, every second one (wk, wo and w3 of wq, wk, wv, wo, w1, w3, w2;
    torchtitan@9dec370:torchtitan/parallelisms/parallelize_llama.py, ``_custom_policy``), ``2 L (h kv + h^2 + h
    f)``; fused attention's output is saved, so its core is not recomputed (GATED_LAYER_ACTIVATION_BYTES counts the
    memory of the same policy)."""
    return 2.0 * s.layers * s.hidden * (s.kv_width + s.hidden + ffn)


FP8_CAST_BYTES = 40.0
"""Bytes a token moves per hidden unit per layer to cast the linear layers' inputs and gradients to FP8 [bytes]:
each of a layer's GEMM outputs' gradients (``3h`` for Q, K and V, ``h`` for the attention's projection, ``4h`` for
the MLP's first layer, ``h`` for its second) and the attention's output (``h``) is read in BF16 (2 bytes) and
written in FP8 twice, as it is and transposed for the weight gradient (1 + 1 bytes): ``4 x 10 h``. The other inputs
are cast inside fused kernels (Transformer Engine's LayerNormLinear and LayerNormMLP; torch.compile's fused casts).
The work is memory-bound: its time is these bytes over the accelerator's bandwidth, at the calibrated efficiency, as
the calibrated MFU's own overhead bytes are (:class:`xlsxplan.calibration.TrainFit`: ``overhead_bytes x C/B / (72
h)`` over the ceiling), not at the FP8 peak."""


def _fp8_cast_bytes(m: _Model) -> float:
    """Bytes per token of FP8 training's casts, ``FP8_CAST_BYTES x h x L`` [bytes]."""
    return FP8_CAST_BYTES * m.shape.hidden * m.shape.layers


def _attention_flops(m: _Model, seq: float, recompute: str = "none") -> float:
    """FLOPs per trained token of the attention core, ``Q K^T`` and the weighted sum of ``V`` [FLOP]: PaLM's ``12 L
    H Q T`` (TRAIN_FLOPS_PER_TOKEN's attention term), and its forward pass again, ``4 L H Q T``, where the recompute
    mode recomputes it (selective and full)."""
    s = m.shape
    core = training_memory.attention_flops_per_token(s.layers, s.heads, s.head_dim, seq)
    return core * (1.0 if recompute == "none" else 4.0 / 3.0)


def _states(m: _Model, dense_b: float, zero: int, dp: int, tp: int, pp: int, ep: int) -> tuple[float, float, float]:
    """Weights, gradients and optimizer states one GPU holds [GB]: the dense parameters sharded by tensor x pipeline
    parallelism (and ZeRO over the data-parallel GPUs), a mixture of experts' routed experts also by expert
    parallelism (and ZeRO over the data-parallel GPUs that hold the same experts)."""
    w, gr, st = _state_gb(dense_b, zero, dp, tp * pp)
    if m.expert_b:
        we, ge, se = _state_gb(m.expert_b, zero, max(1, dp // ep), tp * pp * ep)
        w, gr, st = w + we, gr + ge, st + se
    return w, gr, st


_gpu_hours = training.gpu_hours.__wrapped__  # type: ignore[attr-defined]
_train_state_gb = training_memory.train_state_gb.__wrapped__  # type: ignore[attr-defined]
_activation_gb = training_memory.activation_gb.__wrapped__  # type: ignore[attr-defined]
"""GPU_HOURS, TRAIN_STATE_GB and ACTIVATION_GB without their argument checks, for the thousands of layouts a search
tries (their arguments are the search's own, checked once as inputs, finite and positive)."""


@dataclass(frozen=True)
class _Step:
    """What a step's time needs besides the layout."""

    peak: float
    """Dense TFLOP/s per GPU at the precision."""
    eff: float
    """Calibrated MFU, attention counted."""
    tokens: float
    """Tokens a step."""
    micro: int
    """Micro-batches a step per data-parallel replica."""
    stage_layers: int
    """Layers of the first pipeline stage."""
    flops_per_token: float
    """FLOPs per token executed, recompute included."""
    attention_flops: float = 0.0
    """Of those, the attention core's (:func:`_attention_flops`), which runs at ``attention_peak``."""
    attention_peak: float = 0.0
    """Dense TFLOP/s the attention core runs at: BF16's at every precision; 0: ``peak``."""
    virtual_stages: int = 1
    """Model chunks a pipeline stage holds (the interleaved schedule's ``v``; 1: plain 1F1B)."""


def _time(
    o: TrainOption,
    a: dict[str, Any],
    m: _Model,
    g: _Gpu,
    c: _Step,
    act_bytes: float,
    intra: float,
    net: float,
    node: int,
    dense_b: float,
    ckpt_gb: float,
) -> None:
    """Step time, MFU, goodput, days, GPU-hours and cost of one layout, and whether it is feasible (it fits)."""
    n, tp, pp, dp, ep, mb = o.gpus, o.tp, o.pp, o.dp, o.ep, o.micro_batch
    peak, tokens_step, micro, stage_layers = c.peak, c.tokens, c.micro, c.stage_layers
    # FP8 training multiplies the linear layers' inputs in FP8; the attention core stays in BF16 (Transformer Engine's
    # recipes take fp8_dpa=False by default, docs.nvidia.com/deeplearning/transformer-engine, Common API; torchao's
    # convert_to_float8_training swaps torch.nn.Linear modules only, docs.pytorch.org/ao, torchao.float8), so its
    # FLOPs run at the BF16 peak
    attention_peak = c.attention_peak or peak
    linear = c.flops_per_token - c.attention_flops
    compute = tokens_step * (linear / peak + c.attention_flops / attention_peak) / (n * TERA * c.eff)
    if o.precision == "fp8" and g.bandwidth_tb_s:
        compute += tokens_step * _fp8_cast_bytes(m) / (n * g.bandwidth_tb_s * TERA * c.eff)
    boundary = mb * act_bytes
    tp_s = 0.0
    if tp > 1:
        per_layer = 6 if o.recompute == "full" else 4
        tp_s = micro * stage_layers * per_layer * 2.0 * (tp - 1) / tp * boundary / (intra * GIGA)
    pp_s = 0.0
    v = c.virtual_stages
    if pp > 1:  # interleaved: each micro-batch crosses v times as many stage boundaries
        link = intra if n <= node else net
        pp_s = v * micro * 2.0 * boundary / tp / (link * GIGA)
    ep_s = 0.0
    if ep > 1 and m.experts:
        link = intra if tp * ep <= node else net
        moe_stage = math.ceil(m.moe_layers / pp)
        ep_s = micro * moe_stage * 4.0 * boundary * m.per_token / tp * (ep - 1) / ep / (link * GIGA)
    pipeline = (compute + tp_s + pp_s + ep_s) * (micro + (pp - 1) / v) / micro
    dp_s = 0.0
    if dp > 1:
        link = intra if tp * dp <= node else net
        grads = dense_b * GIGA * 2.0 / (tp * pp)
        passes = _dp_passes(o.zero, pp, micro)
        volume = passes * (dp - 1) / dp * grads
        if m.expert_b:
            edp = max(1, dp // ep)
            volume += passes * (edp - 1) / edp * m.expert_b * GIGA * 2.0 / (tp * pp * ep)
        dp_s = volume / (link * GIGA) * (1.0 - a["dp_overlap"])
    step = pipeline + dp_s
    o.step = {
        "compute": compute,
        "tensor_parallel": tp_s,
        "pipeline_sends": pp_s,
        "expert_all_to_all": ep_s,
        "pipeline_bubble": pipeline - (compute + tp_s + pp_s + ep_s),
        "data_parallel_exposed": dp_s,
    }
    o.step_s = step
    o.calibrated_mfu = c.eff
    o.mfu = 6.0 * m.active_b * GIGA * tokens_step / (step * n * peak * TERA)
    ratio, interval = _goodput(n, ckpt_gb, a["failures_per_gpu_hour"], a["restart_s"], a["checkpoint_gb_s"])
    o.goodput, o.checkpoint_interval_s = ratio, interval
    if ratio <= 0:
        o.days = o.gpu_hours = o.usd = math.inf
        return
    wall = o.tokens / tokens_step * step / ratio
    o.days = wall / 86_400.0
    o.gpu_hours = _gpu_hours(wall, n)
    o.usd = o.gpu_hours * g.price
    o.feasible = (
        n <= a["max_gpus"]
        and (not a["max_days"] or o.days <= a["max_days"])
        and (not a["budget_usd"] or o.usd <= a["budget_usd"])
    )


def _gathered_stage_gb(zero: int, pp: int, tp: int, dense_b: float) -> float:
    """The pipeline stage's 16-bit weights that ZeRO-3 keeps gathered through the step under pipeline parallelism,
    ``2 N / (p t)`` [GB]; 0 otherwise (torchtitan@9dec370:torchtitan/parallelisms/parallelize_llama.py,
    ``apply_fsdp``: ``reshard_after_forward = False`` under pipeline parallelism, "to avoid per-microbatch
    all-gathers"; its traffic is :func:`_dp_passes`')."""
    return 2.0 * dense_b / (pp * tp) if zero >= 3 and pp > 1 else 0.0


def _dp_passes(zero: int, pp: int, micro: int) -> float:
    """Times a step's data-parallel traffic moves the 16-bit gradients' worth of bytes, before the ring's ``(d - 1) /
    d`` [count]: an all-reduce, or a reduce-scatter and an all-gather, 2 (ZeRO, arXiv:1910.02054, section 7); ZeRO-3
    gathers the weights for every micro-batch's forward and backward and reduces the gradients once, ``2 m + 1``;
    with pipeline parallelism it keeps the stage's weights gathered through the step, 2, as the memory counts them
    (:func:`_gathered_stage_gb`; the Llama 3 paper, arXiv:2407.21783, section 3.3.2, also shards parameters 'without
    resharding after forward')."""
    return 2.0 * micro + 1.0 if zero >= 3 and pp == 1 else 2.0


def _judge(o: TrainOption, a: dict[str, Any]) -> None:
    """The reasons a layout is rejected, each with its amount."""
    r: list[str] = []
    if not o.fits:
        r.append(
            f"memory: needs {o.memory_gb_per_gpu:,.1f} GB a GPU, over the {o.usable_gb:,.1f} GB usable "
            f"({a['usable_fraction']:.0%} of {o.usable_gb / a['usable_fraction']:,.4g}) by "
            f"{o.memory_gb_per_gpu - o.usable_gb:,.1f} GB"
        )
    if o.gpus > a["max_gpus"]:
        r.append(f"GPU limit: {o.gpus:,} GPUs, over the limit of {a['max_gpus']:,} by {o.gpus - a['max_gpus']:,}")
    if not math.isnan(o.days):  # timed: it fits, or every layout is reported
        if a["max_days"] and not o.days <= a["max_days"]:
            r.append(
                f"days: takes {o.days:,.1f} days, over the {a['max_days']:g}-day limit by "
                f"{o.days - a['max_days']:,.1f} days"
            )
        if a["budget_usd"] and not o.usd <= a["budget_usd"]:
            r.append(
                f"budget: costs ${o.usd:,.0f}, over the ${a['budget_usd']:,.0f} budget by "
                f"${o.usd - a['budget_usd']:,.0f}"
            )
    o.reasons = r


def _key(o: TrainOption) -> tuple[Any, ...]:
    """Feasible first, then fitting in memory, cheapest first; the least memory among those that fit nowhere."""
    usd = o.usd if math.isfinite(o.usd) else math.inf
    return (not o.feasible, not o.fits, usd if o.fits else o.memory_gb_per_gpu, o.gpus, o.days)


def _chosen_key(o: TrainOption) -> tuple[Any, ...]:
    """With the size to choose, each accelerator has its own size: feasible first, the largest model (the most
    compute the limits buy) first, then cheapest."""
    return (not o.feasible, not o.fits, -o.params_b if o.feasible else 0.0, *_key(o)[2:])


def _best(options: list[TrainOption]) -> list[TrainOption]:
    """The first-ranked layout of each accelerator, GPU count and precision."""
    groups: dict[tuple[str, int, str], TrainOption] = {}
    for o in options:
        k = (o.gpu, o.gpus, o.precision)
        if k not in groups or _key(o) < _key(groups[k]):
            groups[k] = o
    return list(groups.values())


# --- the size to choose -------------------------------------------------------------------------------------------


def _gpu_seconds(g: _Gpu, a: dict[str, Any]) -> float:
    """GPU-seconds the run may use: what the budget buys, or the deadline allows on the GPU limit, the lesser."""
    limits = []
    if a["budget_usd"]:
        limits.append(a["budget_usd"] / g.price * 3600.0)
    if a["max_days"]:
        limits.append(a["max_days"] * 86_400.0 * a["max_gpus"])
    return min(limits)


def _size(gpu_seconds: float, rate_per_gpu: float, a: dict[str, Any]) -> tuple[float, float]:
    """The compute-optimal parameters [B] and tokens for ``gpu_seconds`` at a sustained 6N rate per GPU [FLOP/s]."""
    if a["tokens"]:  # 6 N D = C t, symmetric in N and D: N = C t / (6 D)
        params_b = training.train_tokens(a["tokens"] / GIGA, rate_per_gpu, gpu_seconds) / GIGA
        return params_b, a["tokens"]
    params_b = training.optimal_params_b(rate_per_gpu, gpu_seconds, a["tokens_per_param"])
    return params_b, training.chinchilla_tokens(params_b, a["tokens_per_param"])


def _three_figures_down(x: float) -> float:
    """``x`` rounded down to three significant figures: 29.47 -> 29.4."""
    step = 10 ** (math.floor(math.log10(x)) - 2)
    return round(math.floor(x / step + 1e-9) * step, 12)


def _choose_size(
    g: _Gpu, a: dict[str, Any], search: Callable[[float, float], list[TrainOption]]
) -> tuple[list[TrainOption], dict[str, Any]]:
    """The compute-optimal size for one accelerator: sized at the calibrated MFU first, then at the sustained rate
    (MFU after communication, times goodput) of the best layout the search finds, until it settles; shrunk while no
    layout is feasible."""
    seconds = _gpu_seconds(g, a)
    peak = max(g.peaks.values())
    prec = max(g.peaks, key=g.peaks.__getitem__)
    rate, guess = 0.0, 1.0
    for _ in range(3):  # the calibrated MFU at the width of the size it gives
        rate = peak * TERA * _mfu(g.name, prec, estimated_shape(guess).hidden)
        guess = _size(seconds, rate, a)[0]
    params_b = _three_figures_down(guess)
    history: list[dict[str, Any]] = []
    options: list[TrainOption] = []
    for _ in range(10):
        tokens = a["tokens"] or round(training.chinchilla_tokens(params_b, a["tokens_per_param"]))
        options = search(params_b, tokens)
        fitting = [o for o in options if o.fits and o.gpus <= a["max_gpus"] and math.isfinite(o.usd)]
        if not fitting:  # too large to fit on the GPUs allowed
            history.append({"params_b": params_b, "fits": False})
            params_b = _three_figures_down(params_b * 0.7)
            continue
        # with a budget, the cheapest layout within the deadline spends it; without one, the fastest spends the days
        in_time = [o for o in fitting if not a["max_days"] or o.days <= a["max_days"]]
        if a["budget_usd"] and in_time:
            best = min(in_time, key=lambda o: o.usd)
        else:
            best = min(fitting, key=lambda o: o.days)
        rate = best.mfu * best.goodput * g.peaks[best.precision] * TERA
        # cost and time grow as N^2 at a given rate (6 N x 20 N): the size that spends the binding limit
        room = min(
            [a["budget_usd"] / best.usd] * bool(a["budget_usd"]) + [a["max_days"] / best.days] * bool(a["max_days"])
        )
        history.append({"params_b": params_b, "best": best.layout(), "sustained_flops_per_gpu": rate, "room": room})
        if best.feasible and room < 1.01:
            break
        grown = params_b * (min(room, 2.0) if a["tokens"] else math.sqrt(min(room, 4.0)))  # tokens fixed: as N
        nearer = _three_figures_down(grown * 0.999)
        if best.feasible and nearer <= params_b:  # within the three figures the size is given to
            break
        params_b = nearer
    return options, {
        "params_b": params_b,
        "tokens": tokens,
        "gpu_seconds": seconds,
        "sustained_flops_per_gpu": rate,
        "steps": history,
        "rule": "N = sqrt(C t / (6 x tokens per parameter)), C t the 6N-FLOPs of the GPU-hours the budget buys (or "
        "the deadline allows on the GPU limit, the lesser) at the best layout's sustained rate",
    }


# --- the plan -----------------------------------------------------------------------------------------------------


def plan_training(**given: Any) -> TrainPlan:
    """Search every training layout of a model for a run, the cheapest feasible first.

    Parameters
    ----------
    **given
        The inputs of :data:`TRAIN_INPUTS` by name; each left out takes its default.

    Returns
    -------
    TrainPlan
        The inputs, every option ranked (feasible first, cheapest first), which limit binds and by how much, how the
        size was chosen for each accelerator, and the precisions an accelerator has no peak for.
    """
    a = _checked(given)
    if not (a["params_b"] or a["model"]) and not (a["budget_usd"] or a["max_days"]):
        raise ArgumentError(
            "params_b is needed: give a size (params_b or model), or budget_usd or max_days to choose one for",
            "params_b",
        )
    precisions = _names(a["precisions"], "precisions", tuple(PRECISIONS))
    choices: dict[str, tuple[Any, ...]] = {
        "precisions": precisions,
        "recompute": tuple(r for r in RECOMPUTE if r in _names(a["recompute"], "recompute", tuple(RECOMPUTE))),
        "zero_stages": _whole_list(a["zero_stages"], "zero_stages", 0, 3),
        "micro_batches": _whole_list(a["micro_batches"], "micro_batches", 1, 1024),
    }
    prices = _prices(a["gpus"])
    skipped: list[str] = []
    gpus = [_accelerator(name, p, basis, precisions, skipped) for name, (p, basis) in prices.items()]
    gpus = [g for g in gpus if g.peaks]
    chosen = not a["params_b"] and not a["model"]
    options: list[TrainOption] = []
    sizing: dict[str, dict[str, Any]] = {}
    for g in gpus:

        def search(params_b: float, tokens: float, g: _Gpu = g) -> list[TrainOption]:
            m = _model(a["model"], params_b)
            run = _Run(m.params_b, tokens)
            counts = _counts(a["max_gpus"], _beyond(m, run, g, a))
            return _layouts(m, run, g, a, choices, counts)

        if chosen:
            found, sizing[g.name] = _choose_size(g, a, search)
        else:
            params = a["params_b"] or _model(a["model"], 0).params_b
            tokens = a["tokens"] or training.chinchilla_tokens(params, a["tokens_per_param"])
            found = search(params, tokens)
        options += found if a["all_layouts"] else _best(found)
    options.sort(key=_chosen_key if chosen else _key)
    for o in options:
        _judge(o, a)
    inputs = {p.name: a[p.name] for p in TRAIN_INPUTS}
    return TrainPlan(inputs, options, _limits(options, a), sizing, skipped, prices)


def _beyond(m: _Model, run: _Run, g: _Gpu, a: dict[str, Any]) -> int:
    """Twice the GPUs the deadline would need at the calibrated MFU, for the counts tried above the limit (none
    without a deadline), at most 16 times the limit: the communication, the pipeline bubble and FP8's casts take a
    layout below the calibrated MFU, so the count that finishes in time is above the bare estimate."""
    if not a["max_days"]:
        return 0
    peak = max(g.peaks.values())
    rate = peak * TERA * _mfu(g.name, max(g.peaks, key=g.peaks.__getitem__), m.shape.hidden)
    need = 2.0 * training.train_flops(m.params_b, run.tokens) / (a["max_days"] * 86_400.0 * rate)
    return min(16 * a["max_gpus"], 1 << max(0, math.ceil(math.log2(max(need, 1.0)))))


def _limits(options: list[TrainOption], a: dict[str, Any]) -> list[dict[str, Any]]:
    """Each limit given, whether it binds, and by how much the closest layout misses it: the budget against the
    cheapest layout that fits (and against the cheapest that also meets the deadline), the deadline against the
    fastest within the GPU limit, the GPU limit against the fewest GPUs that meet the deadline."""
    fitting = [o for o in options if o.fits and math.isfinite(o.usd)]
    within = [o for o in fitting if o.gpus <= a["max_gpus"]]
    out: list[dict[str, Any]] = []
    if a["budget_usd"] and within:
        best = min(within, key=lambda o: o.usd)
        out.append(_limit("budget_usd", best.usd, a["budget_usd"], best, "the cheapest layout costs"))
        in_time = [o for o in within if not a["max_days"] or o.days <= a["max_days"]]
        if a["max_days"] and in_time:
            best = min(in_time, key=lambda o: o.usd)
            text = f"the cheapest layout within {a['max_days']:g} days costs"
            out.append(_limit("budget_usd", best.usd, a["budget_usd"], best, text))
    if a["max_days"] and within:
        best = min(within, key=lambda o: o.days)
        out.append(_limit("max_days", best.days, a["max_days"], best, "the fastest layout takes"))
    if a["max_days"] and fitting:
        meets = [o for o in fitting if o.days <= a["max_days"]]
        if meets:
            best = min(meets, key=lambda o: o.gpus)
            out.append(_limit("max_gpus", best.gpus, a["max_gpus"], best, "finishing in time needs"))
    return out


def _limit(name: str, best: float, allowed: float, o: TrainOption, lead: str) -> dict[str, Any]:
    binds = best > allowed
    by = best - allowed
    shown, limit, unit = {
        "budget_usd": (lambda x: f"${x:,.0f}", f"${allowed:,.0f} budget", "USD"),
        "max_days": (lambda x: f"{x:,.1f} days", f"{allowed:g}-day limit", "days"),
        "max_gpus": (lambda x: f"{x:,.0f} GPUs", f"{allowed:,.0f}-GPU limit", "GPUs"),
    }[name]
    text = f"{lead} {shown(best)} ({o.gpu} x {o.gpus}, {o.layout()}): " + (
        f"over the {limit} by {shown(by)} ({best / allowed:.2f} times)" if binds else f"within the {limit}"
    )
    bubble = o.step.get("pipeline_bubble", 0.0) / o.step_s if o.step_s and math.isfinite(o.step_s) else 0.0
    if binds and name == "max_days" and bubble >= 0.1:  # the other lever than more GPUs, said beside them
        text += (
            f"; the pipeline's bubble is {bubble:.0%} of its step at {o.micro_batches:,} micro-batches a step: a "
            "larger global batch (--global-batch-tokens) fills it"
        )
    return {"limit": name, "binds": binds, "best": best, "allowed": allowed, "by": by, "unit": unit, "text": text}


# --- one given layout ---------------------------------------------------------------------------------------------


def _gated_activation_bytes(
    s: Shape,
    tokens: float,
    ffn: int,
    vocab: int,
    tp: int,
    pp: int,
    stage_layers: int,
    in_flight: int,
    recompute: str,
    zero: int,
    dense_b: float,
) -> dict[str, float]:
    """Memory beside the states for a gated-MLP shape, by component [GB].

    * activations: ``max(L_s m_f A, L_s A + logits)``, the first pipeline stage's ``m_f = min(p, m)`` in-flight
      micro-batches of its ``L_s`` layers against the last stage's one micro-batch and the logits (the published
      peak is the largest over all GPUs), ``A`` a layer's bytes at the recompute mode
      (GATED_LAYER_ACTIVATION_BYTES);
    * recompute: the one layer whose backward is running holds what its mode recomputed, ``A_none - A``
      (Korthikanti et al. 2022, section 4.2);
    * gathered layers: with ZeRO-3, two layers' weights and gradients unsharded (``gathered_layer_bytes``), the
      layer's parameters ``(N - 2 V h) / L`` (untied input and output embeddings); with pipeline parallelism too,
      the stage's 16-bit weights stay gathered through the step, ``2 N / (p t)`` bytes (torchtitan@9dec370:
      torchtitan/parallelisms/parallelize_llama.py, ``apply_fsdp``: ``reshard_after_forward = False`` under
      pipeline parallelism, "to avoid per-microbatch all-gathers").
    """
    layer = training_memory.gated_layer_activation_bytes(tokens, s.hidden, s.heads, s.kv_width, ffn, tp, recompute)
    every = training_memory.gated_layer_activation_bytes(tokens, s.hidden, s.heads, s.kv_width, ffn, tp, "none")
    logits = training_memory.logits_bytes(tokens, vocab, tp) if vocab else 0.0
    first, last = stage_layers * in_flight * layer, stage_layers * layer + logits
    out = {"activations": max(first, last) / GIGA, "recompute": (every - layer) / GIGA}
    if zero >= 3 and pp > 1:
        out["gathered_stage"] = _gathered_stage_gb(zero, pp, tp, dense_b)
    elif zero >= 3:
        layer_params = (dense_b * GIGA - 2.0 * vocab * s.hidden) / s.layers
        out["gathered_layers"] = training_memory.gathered_layer_bytes(layer_params, tp) / GIGA
    return out


@dataclass
class LayoutResult:
    """One given layout through the plan's own memory and step-time model (:func:`layout_option`)."""

    option: TrainOption
    """The layout with its memory by component [GB], step time and its parts [s], MFU and goodput."""
    flops_per_token: float
    """Model FLOPs per trained token, 6N plus PaLM's attention (TRAIN_FLOPS_PER_TOKEN) [FLOP]."""
    recompute_flops_per_token: float
    """FLOPs the layout's recompute adds per token (the forward pass again, or its attention core) [FLOP]."""
    peak_tflops: float
    """The accelerator's dense peak at the precision [TFLOP/s per GPU]."""
    calibrated_mfu: float
    """EFFICIENCY's train_mfu for the accelerator, precision and width, before ``efficiency_scale`` [fraction]."""
    bubble_factor: float
    """``(m + p - 1) / m``: the pipeline's stretch of the per-micro-batch work [factor]."""

    seq_len: int
    """Tokens a sequence [tokens]."""

    @property
    def tokens_per_step(self) -> float:
        """Training tokens an optimizer step [tokens]."""
        return float(self.option.global_batch * self.seq_len)

    @property
    def tokens_per_s_per_gpu(self) -> float:
        """Training tokens a second a GPU at the step time [tokens/s/GPU]."""
        return self.tokens_per_step / (self.option.step_s * self.option.gpus)

    @property
    def compute_s(self) -> float:
        """The part of the step time that scales as one over the compute efficiency: the compute, stretched by the
        pipeline bubble [s]."""
        return self.option.step["compute"] * self.bubble_factor


def layout_option(
    shape: Shape,
    gpu: str,
    *,
    gpus: int,
    tp: int,
    pp: int,
    dp: int,
    ep: int = 1,
    zero: int = 1,
    micro_batch: int = 1,
    global_batch: int,
    recompute: str = "none",
    precision: str = "bf16",
    seq_len: int,
    efficiency_scale: float = 1.0,
    ffn_hidden: int = 0,
    vocab: int = 0,
    cp: int = 1,
    virtual_stages: int = 1,
    **given: Any,
) -> LayoutResult:
    """One given layout's memory per GPU and step time, by the functions the plan's search uses for every layout.

    Parameters
    ----------
    shape : Shape
        The model: a catalog preset's (:func:`~xlsxplan.calibration.shape.preset_shape`, its experts from the
        catalog) or any other (dense).
    gpu : str
        An accelerator of the catalog [name].
    gpus, tp, pp, dp, ep : int
        GPUs, and tensor, pipeline, data and expert parallel sizes (``tp x pp x dp = gpus``; experts spread inside
        data parallel) [count].
    zero : int
        ZeRO stage 0-3; 3 is FSDP's full shard [stage].
    micro_batch, global_batch : int
        Sequences a micro-batch and an optimizer step [sequences].
    recompute : str
        none, selective or full [name].
    precision : str
        bf16 or fp8: the dense peak the multiplies run at [name].
    seq_len : int
        Tokens a sequence [tokens].
    efficiency_scale : float
        Multiplies the calibrated MFU (EFFICIENCY's train_mfu) for a fit that scales it; 1 is the plan's [factor].
    ffn_hidden : int, default 0
        A gated MLP's inner width (Llama's SwiGLU); given, the activations are counted by
        GATED_LAYER_ACTIVATION_BYTES (:func:`_gated_activation_bytes`) instead of ACTIVATION_GB's GPT layer, and
        selective recompute is torchtitan's policy in the step time too (:func:`_gated_selective_flops`) [count].
    vocab : int, default 0
        Vocabulary size; given, the last pipeline stage also holds the logits and the loss's FP32 copies
        (``logits_bytes``) [count].
    cp : int, default 1
        Context-parallel GPUs: each holds ``s / cp`` tokens of a sequence, and ZeRO shards over ``dp x cp`` (as
        torchtitan's FSDP does over its ``dp_shard_cp`` mesh); only with ``ffn_hidden``. The step time does not
        count context parallelism's traffic [count].
    virtual_stages : int, default 1
        Model chunks each pipeline stage holds (Megatron's virtual pipeline size): the step time's bubble is the
        interleaved schedule's ``(p - 1) / (v m)`` and the pipeline sends ``v`` times as many; the memory stays
        1F1B's [count].
    **given
        Other inputs of :data:`TRAIN_INPUTS` (``dp_overlap``, ``network_gb_s``, ``gpus_per_node`` ...).

    Returns
    -------
    LayoutResult
        The option (memory by component [GB], step time and parts [s], MFU [fraction]) and the figures a
        comparison with a published rate needs.
    """
    if tp * pp * dp * cp != gpus:
        raise ArgumentError(f"gpus must be tp x pp x dp x cp = {tp * pp * dp * cp}, got {gpus}", "gpus")
    if cp > 1 and not ffn_hidden:
        raise ArgumentError("cp above 1 needs ffn_hidden (the gated layer's count of activations)", "cp")
    if recompute not in RECOMPUTE:
        raise ArgumentError(f"recompute must be one of {', '.join(RECOMPUTE)}, got {recompute!r}", "recompute")
    if precision not in PRECISIONS:
        raise ArgumentError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}", "precision")
    if not (math.isfinite(efficiency_scale) and efficiency_scale > 0):
        raise ArgumentError(f"efficiency_scale must be a finite number above 0, got {efficiency_scale!r}", "scale")
    a = _checked(
        {"params_b": shape.params_b, "seq_len": seq_len, "global_batch_tokens": global_batch * seq_len, **given}
    )
    if shape.preset:
        m = _model(shape.preset, shape.params_b)
    else:
        m = _Model(shape, shape.params_b, shape.active_b, 0.0, 0, 0, 0)
    skipped: list[str] = []
    g = _accelerator(gpu, 0.0, "not priced", (precision,), skipped)
    if precision not in g.peaks:
        raise NotAvailableError(skipped[0], "precision")
    peak = g.peaks[precision]
    s = m.shape
    seq = a["seq_len"]
    tokens_step = global_batch * seq
    dense_b = m.params_b - m.expert_b
    flops_tok, extra = _flops_per_token(m, seq)
    if ffn_hidden:  # the gated layer's selective mode is torchtitan's policy, as its memory is
        extra["selective"] = _gated_selective_flops(s, ffn_hidden)
    stage_layers = math.ceil(s.layers / pp)
    micro = max(1, round(global_batch / (dp * micro_batch)))
    in_flight = min(pp, micro)
    w, gr, st = _states(m, dense_b, zero, dp * cp, tp, pp, ep)
    memory = {"weights": w, "gradients": gr, "optimizer": st}
    if ffn_hidden:
        memory.update(
            _gated_activation_bytes(
                s, micro_batch * seq / cp, ffn_hidden, vocab, tp, pp, stage_layers, in_flight, recompute, zero, dense_b
            )
        )
    else:
        memory["activations"] = _activations_gb(
            seq, micro_batch, s.hidden, s.heads, stage_layers * in_flight, tp, recompute
        )
        if vocab:
            memory["logits"] = training_memory.logits_bytes(micro_batch * seq, vocab, tp) / GIGA
        if _gathered_stage_gb(zero, pp, tp, dense_b):
            memory["gathered_stage"] = _gathered_stage_gb(zero, pp, tp, dense_b)
    o = TrainOption(
        g.name,
        gpus,
        tp,
        pp,
        dp,
        ep,
        zero,
        micro_batch,
        global_batch,
        recompute,
        precision,
        m.params_b,
        float(tokens_step),
        sum(memory.values()),
        memory,
        g.memory_gb * a["usable_fraction"],
        g.price,
        g.basis,
    )
    calibrated = _model_mfu(m, g, precision, flops_tok)
    ctx = _Step(
        peak,
        calibrated * efficiency_scale,
        tokens_step,
        micro,
        stage_layers,
        flops_tok + extra[recompute],
        _attention_flops(m, seq, "none" if ffn_hidden and recompute == "selective" else recompute),
        g.bf16_tflops,
        virtual_stages,
    )
    intra = g.link_gb_s or a["network_gb_s"]
    ckpt_gb = training.train_memory_gb(m.params_b, 14)
    _time(o, a, m, g, ctx, seq * s.hidden * 2.0, intra, a["network_gb_s"], a["gpus_per_node"], dense_b, ckpt_gb)
    bubble = (micro + (pp - 1) / virtual_stages) / micro
    return LayoutResult(o, flops_tok, extra[recompute], peak, calibrated, bubble, seq)
