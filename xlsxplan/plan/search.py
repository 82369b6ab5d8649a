"""The plan search: every way to deploy a model for a traffic profile, the cheapest that meets the targets first.

A question about serving is a choice: which accelerator, in which precision, on how many GPUs a replica, with
prefill and decode together or apart. :func:`plan` enumerates every option

    accelerator x weight precision x KV-cache precision x GPUs per replica (1, 2, 4, 8) x aggregated or disaggregated

and plans each as the serving template plans its active scenario (:mod:`xlsxplan.templates.serving`, whose chain of
core functions this module calls in the same order): the batch memory allows, the batches the targets allow, the
smallest of them, decode speed, prefill time, replicas for the peak with spares, GPUs, the monthly bill and its
split between input and output tokens. Each option is planned twice: at the efficiencies the assumptions give (by
default those of "Back-of-the-Envelope Estimation for LLM Systems": the full memory bandwidth and half the dense
BF16 peak) and at the calibrated ones (:func:`xlsxplan.calibration.efficiency`). Feasible options come first,
cheapest per month first; every rejected option carries its reason in words; the options no other option beats on
both cost and speed per user are marked as the frontier.

What the template and this search do differently, and why:

* **Weights** are MODEL_WEIGHTS_GB's, every expert and the embeddings as published checkpoints store them (16-bit
  beside 8-bit weights), not ``params x bytes``: one weights figure per plan. ``Assumptions(weights="params x
  bytes")`` gives the source text's own reading, with which its printed batches come out exactly. The template's
  weights are MODEL_WEIGHTS_GB too, its *Embedding precision* input choosing between the two readings ("as the
  weights", the source text's, by default; "as published", this search's).
* **A target applies only when given**; with none, memory sets the batch, in the template as here. Where the
  template is given both a mean and a percentile first-token target, its Options sheet searches at the percentile
  one (a search has one first-token target).
* **A mixture of experts**' batch for a speed or first-token target is searched with the experts each batch
  actually reads (MOE_PARAMS_READ_B at that batch); the template reads the experts of memory's batch at every batch,
  a safe lower bound. For a dense model the two are the same core functions with the same arguments.
* **Weights that compute in a precision the accelerator has no peak for** (FP8 on an A100) are rejected with the
  reason; the template falls back to the BF16 peak. Give ``w8a16`` to plan 8-bit weights widened before the
  multiply.
* **The calibrated view** plans afresh (its own batch, replicas and feasibility) on the serving step ``validate``
  scores published runs with (:mod:`xlsxplan.core.step`, the calibrated efficiencies and the fitted serving scale):
  prompts are prefilled inside the decode steps, so a replica serves ``batch / step / output tokens`` requests a
  second. The template's Calibration sheet still keeps the assumed column's batch and the bandwidth-bound step at the
  calibrated efficiencies: one more place to bring onto this step.
* **Disaggregated decode** is not capped by the first-token target, since prompts are read elsewhere; its first
  token is the prefill replica's time for the tail prompt plus the KV-cache transfer. The template prices both pools
  at the aggregated batch. Both pools use the same GPUs per replica, as the template's do.
* **The longest prompt accepted** must fit alone beside the weights, or the option is rejected (the template flags
  it on Checks).

Optional inputs, each absent unless given, so that a plan without them is the plan it always was:

* **A percentile target for the first token** (:attr:`Targets.ttft_percentile`): each aggregated replica is a queue
  of ``batch`` slots fed its share of the peak's Poisson arrivals (SLOT_S, Erlang C), a disaggregated prefill pool
  one queue with a server per replica; replicas are added until the percentile holds with the spares down
  (REPLICAS_FOR_TTFT), smaller batches are tried where they leave time to wait, and P50/P90/P99 at the planned
  fleet are reported (:mod:`xlsxplan.core.queueing`).
* **Memory as vLLM allocates it** (:class:`Engine`): the engine's share of each GPU less the weights and a reserve,
  in whole blocks (ENGINE_KV_TOKENS), in place of the flat usable share.
* **The engine's per-step limits** (:attr:`Assumptions.max_num_tokens`, :attr:`Assumptions.max_batch_size`): each
  step of ``B`` sequences decodes ``B`` tokens and prefills ``B P / O`` prompt tokens, so a budget of ``T`` tokens a
  step runs at most ``floor(T / (1 + P / O))`` sequences (:func:`xlsxplan.core.engine.budget_batch`, the same function
  validate's steady state calls; TensorRT-LLM's trtllm-build builds 8,192 tokens and 2,048 sequences by default); the
  batch is the smallest of memory's, the targets' and this one, which the option's binding then names.
* **A speculative draft** (:class:`Speculative`): every option is planned with it and without it; with it a token
  costs SPEC_STEP_S over the tokens a step yields, the draft's weights and cache take memory, and its verify pass
  takes compute from the prompts (:mod:`xlsxplan.core.speculative`).
* **The owned case** (:class:`Owned`): the same fleet bought, GPU_HOUR_OWNED with the catalog's sourced defaults
  (:func:`xlsxplan.catalog.costs.cost_figure`), per month and per million tokens beside the rent
  (:mod:`xlsxplan.core.cost`).

Where other plans plug in: a new input goes into :class:`Traffic`, :class:`Targets` or :class:`Assumptions` (each a
frozen dataclass with defaults, so older calls keep working) and into :data:`xlsxplan.plan.inputs.PLAN_INPUTS` (at
its end), from which PLAN_OPTIONS, PLAN_OPTIONS_AT, the Options sheet's call and a flag of ``xlsxplan plan`` are
made; :func:`plan_from_cells` reads it; a new per-option figure goes into
:attr:`Figures.extra` (it reaches the Python API and, by its key, any face that asks for it); a new set of
efficiencies is one more :class:`View` in :func:`views`.

References
----------
.. [1] "Back-of-the-Envelope Estimation for LLM Systems", sections 1-7.
.. [2] Agrawal et al. 2024, "Taming Throughput-Latency Tradeoff in LLM Inference with Sarathi-Serve",
   arXiv:2403.02310 (chunked prefill).
.. [3] Zhong et al. 2024, "DistServe: Disaggregating Prefill and Decoding for Goodput-optimized Large Language Model
   Serving", arXiv:2401.09670.
.. [4] Lepikhin et al. 2020, "GShard", arXiv:2006.16668, section 2.2 (experts spread over devices).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from .. import calibration, catalog, precision
from ..calibration.shape import preset_step_shape
from ..catalog import models
from ..catalog.systems import Topology, topology_of
from ..core import cost, engine, equations, queueing, serving, speculative, traffic
from ..core.step import (
    SERVER_GPUS,
    Layout,
    StepShape,
    comm_seconds,
    dense_weights_gb,
    dispatch_bytes,
    linked,
    mean_context,
    pipelined,
    read_weights,
    routed_tokens,
    serve_step,
    step_parts,
)
from ..domains import (
    CoefficientOfVariation,
    Count,
    CountOrZero,
    Fraction,
    FractionOrZero,
    MemoryGBOrZero,
    ParamsB,
    PeakFactor,
    Percentile,
    PerDay,
    Spare,
    Tokens,
    TokensOrZero,
    checked,
    domain_of,
    format_number,
)
from ..errors import ArgumentError, NotAvailableError, OutOfRangeError, XlsxplanError
from ..precision import compute_precision, expert_precision
from .inputs import PLAN_INPUTS, with_inputs

__all__ = [
    "HOURS_PER_MONTH",
    "GPUS_PER_REPLICA",
    "SERVINGS",
    "Traffic",
    "Targets",
    "Assumptions",
    "View",
    "Figures",
    "Option",
    "Plan",
    "plan",
    "views",
    "parse_gpus",
    "plan_options",
    "figure_text",
    "TABLE_HEADER",
    "Owned",
    "OWNED_FIELDS",
    "Engine",
    "Speculative",
]

HOURS_PER_MONTH = 730
"""Hours a month that GPUs are billed around the clock: a 365-day year's 8,760 hours over 12 months, the serving
template's *Hours per month*."""

GPUS_PER_REPLICA = (1, 2, 4, SERVER_GPUS)
"""GPUs per replica the search tries: tensor parallelism within one 8-GPU server, and for a mixture of experts the
same number of GPUs sharing the experts (expert parallelism)."""
MAX_GPUS_PER_REPLICA = 64
"""The largest replica the search escalates to by default, where the sizes of :data:`GPUS_PER_REPLICA` cannot hold
the weights: eight 8-GPU nodes, the largest expert-parallel group DeepSeek-V3's decode runs on per node group (its
report, section 3.4.2: 40 nodes of 320 GPUs hold 256 experts, 64 nodes being AIConfigurator's top size too) [GPUs]."""

SERVINGS = ("aggregated", "disaggregated")
"""Prefill and decode on the same replicas (chunked prefill), or on separate pools of them."""

AGGREGATED, DISAGGREGATED = SERVINGS
MEMORY, SPEED, FIRST_TOKEN, BUDGET = "memory", "speed target", "first-token target", "engine's step budget"
PARAMS_X_BYTES, PUBLISHED = "params x bytes", "published"
MOST_GPUS = 10_000_000
"""The most GPUs a plan may need (the GPU counts the cost functions accept); an option that needs more is rejected."""
_NO_SPEED = 1e-9
"""The speed BATCH_FOR_TTFT is given when no speed target applies: slow enough that only memory-bound decode and
the compute it leaves count."""


# --- what is asked ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Traffic:
    """The traffic a deployment serves: requests, their lengths and how peaked the day is."""

    requests_per_day: float
    prompt_tokens: float
    """Mean prompt [tokens]."""
    output_tokens: float
    """Visible answer per request [tokens]."""
    peak_factor: float = 3.0
    """How much busier the peak hour is than the day's average ("Back-of-the-Envelope", section 1: 3)."""
    prompt_p95: float | None = None
    """95th-percentile prompt, what a slot and the first-token target are sized for; None: the mean (no spread)."""
    max_prompt_tokens: float | None = None
    """Longest prompt accepted, which must fit alone beside the weights; None: no such check."""
    reasoning_tokens: float = 0.0
    """Hidden reasoning tokens per request, decoded and billed as output [tokens]."""
    prompt_sd: float | None = None
    """Standard deviation of prompt lengths for a paged KV cache's batch; None: a log-normal's through the mean and
    p95 where one fits (at most 3.87 times the mean), else every slot at the p95."""

    @property
    def tail_prompt(self) -> float:
        return self.prompt_tokens if self.prompt_p95 is None else self.prompt_p95

    @property
    def decode_tokens(self) -> float:
        return self.output_tokens + self.reasoning_tokens

    @property
    def peak_requests_per_s(self) -> float:
        return serving.peak_requests_per_s(self.requests_per_day, self.peak_factor)


@dataclass(frozen=True)
class Targets:
    """What users must see. A target that is None does not apply: no default decides a plan unseen."""

    tokens_per_s: float | None = None
    """Slowest decode per user [tokens/s]."""
    ttft_s: float | None = None
    """Longest wait for the first token of the tail prompt [s]."""
    ttft_percentile: float | None = None
    """With ``ttft_s``: the share of requests whose first token, queueing for a batch slot at the peak included,
    must come within ``ttft_s`` (0.99 for P99); replicas are added until it holds with the spares down. Given alone,
    the plan only reports the P50, P90 and P99 under load. None: the first token of a request that never waits."""


@dataclass(frozen=True)
class Assumptions:
    """What the plan takes as given, each printed beside the result it moves. Defaults: the source text's, and
    the serving template's where the text has none."""

    usable_fraction: float = 0.9
    """Share of memory the serving engine can use ("Back-of-the-Envelope", section 2)."""
    decode_bandwidth_efficiency: float = 1.0
    """Share of peak bandwidth decode reaches in the assumed view: the ceiling of section 4."""
    prefill_utilisation: float = 0.5
    """Share of the dense BF16 peak prefill reaches in the assumed view (section 5)."""
    kv_overflow: float = 0.05
    """Chance a paged batch's KV cache outgrows memory at a given moment (PAGED_BATCH)."""
    spare: int = 1
    """Replicas added for a failure or a deployment; a disaggregated plan adds them to each pool."""
    min_replicas: int = 2
    """Fewest aggregated replicas whatever the load (section 6: at least two)."""
    kv_link_gb_s: float = 50.0
    """Bandwidth between prefill and decode pools, for the KV cache's transfer: 400 Gb/s InfiniBand [GB/s]."""
    weights: str = PUBLISHED
    """``published``: MODEL_WEIGHTS_GB, embeddings as checkpoints store them; ``params x bytes``: the text's N x b."""
    hours_per_month: float = HOURS_PER_MONTH
    weight_precisions: tuple[str, ...] = ("bf16", "fp8")
    kv_precisions: tuple[str, ...] = ("bf16", "fp8")
    gpus_per_replica: tuple[int, ...] = GPUS_PER_REPLICA
    servings: tuple[str, ...] = SERVINGS
    max_gpus_per_replica: int = 0
    """Largest replica tried beyond :attr:`gpus_per_replica`, doubling from the largest of them, each size laid out
    as the accelerator's system allows (:func:`layouts`); 0: up to :data:`MAX_GPUS_PER_REPLICA`, and only for an
    accelerator whose largest size listed cannot hold the smallest weights tried."""
    service_cv: float = 1.0
    """Coefficient of variation of the time a request holds a batch slot, for the queue in front of the slots
    (QUEUE_WAIT_S): 1 is exponential, the M/M/c case; other values use the Allen-Cunneen approximation."""
    arrival_cv: float = 1.0
    """Coefficient of variation of the time between requests at the peak, for the same queue (QUEUE_WAIT_GG_S): 1
    is Poisson arrivals; above 1, bursts, which scale the wait by Allen-Cunneen's ``(ca^2 + cs^2) / 2``."""
    owned: Owned | None = None
    """The owned-case assumptions; None: the plan prices rented GPUs only."""
    engine: Engine | None = None
    """Memory as a serving engine allocates it; None: :attr:`usable_fraction` of memory, less the weights."""
    max_num_tokens: int = 0
    """Tokens the engine computes in one step at most, decoded and prefilled together (TensorRT-LLM's max_num_tokens,
    vLLM's max_num_batched_tokens, SGLang's chunked_prefill_size): the batch is at most ``T / (1 +
    P / O)`` (:func:`xlsxplan.core.engine.budget_batch`); 0: no budget [tokens]."""
    max_batch_size: int = 0
    """Sequences the engine runs at once at most (max_batch_size, max_num_seqs, max_running_requests); 0: none."""
    speculative: Speculative | None = None
    """A draft (a model or a multi-token-prediction head) proposing tokens the target checks; None: plain decode."""


@dataclass(frozen=True)
class Engine:
    """The KV cache as vLLM allocates it on each GPU (ENGINE_KV_GB, ENGINE_KV_TOKENS): ``memory_fraction`` of the
    GPU's memory, less its share of the weights (and a draft's) and ``reserve_gb``, cut into whole blocks of
    ``block_size`` tokens; each sequence holds whole blocks."""

    memory_fraction: float = 0.9
    """vLLM's gpu_memory_utilization (0.9; 0.92 from v0.22), SGLang's mem_fraction_static [fraction]."""
    reserve_gb: float = 0.0
    """Held per GPU besides the weights inside that share: the profiling run's activation peak, non-torch memory and
    CUDA graphs [GB]."""
    block_size: int = 16
    """Tokens per KV block: vLLM's 16 on CUDA; 1 for SGLang's token pool [tokens]."""


@dataclass(frozen=True)
class Speculative:
    """Speculative decoding: a draft proposes ``draft_tokens`` tokens a step, the target checks them in one pass.

    The draft is a preset model (``draft``) or a head of ``draft_params_b`` billion parameters (a model's own
    multi-token-prediction module, or an EAGLE head); acceptance is one rate ``acceptance`` for every drafted token
    (SPEC_TOKENS_PER_STEP) or measured rates per position ``acceptance_rates`` (SPEC_ACCEPT_LENGTH, whose length
    is then the drafted tokens)."""

    draft_tokens: int = 1
    acceptance: float | None = None
    acceptance_rates: tuple[float, ...] = ()
    draft: str | None = None
    draft_params_b: float | None = None
    draft_weights: str = "bf16"
    """Precision of the draft's weights (a precision name of the catalog)."""

    @property
    def gamma(self) -> int:
        return len(self.acceptance_rates) if self.acceptance_rates else self.draft_tokens

    def tokens_per_step(self) -> float:
        """Expected tokens a target step yields."""
        if self.acceptance_rates:
            return speculative.spec_accept_length(tuple(self.acceptance_rates))
        return speculative.spec_tokens_per_step(self.acceptance or 0.0, self.draft_tokens)


OWNED_FIELDS = (
    "capex_usd",
    "years",
    "residual_fraction",
    "annual_rate",
    "kw",
    "pue",
    "usd_per_kwh",
    "usd_per_kw_month",
)
"""The assumptions of an owned GPU-hour, in GPU_HOUR_OWNED's order (:class:`xlsxplan.core.cost.OwnedCase`)."""
_OWNED_UNITS = {
    "capex_usd": "USD",
    "years": "years",
    "residual_fraction": "fraction",
    "annual_rate": "fraction/year",
    "kw": "kW",
    "pue": "ratio",
    "usd_per_kwh": "USD/kWh",
    "usd_per_kw_month": "USD/kW-month",
}
_COSTS_KEY = {"kw": "server_kw_per_gpu"}
"""The costs.toml figure an owned-case field defaults to, where its name differs."""


@dataclass(frozen=True)
class Owned:
    """What owning the GPUs costs, beside renting them: the assumptions GPU_HOUR_OWNED takes, each defaulted from the
    catalog's sourced figures (``catalog/costs.toml``; the power per GPU from the server's draw there, else the
    board's ``power_w`` in accelerators.toml) unless given here."""

    given: Mapping[str, float] = field(default_factory=dict)
    """Field of :data:`OWNED_FIELDS` -> value, for every accelerator."""
    per_gpu: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    """Accelerator id -> field -> value, for one accelerator (before :attr:`given`)."""
    utilisation: float | None = None
    """Average load of the owned GPUs over full load, across every hour, if other work fills the hours this traffic
    leaves idle; None: the fleet's own utilisation (this traffic alone)."""


@dataclass(frozen=True)
class View:
    """One set of efficiencies an option is planned at."""

    name: str
    """``assumed`` or ``calibrated``."""
    decode_bandwidth: float | None
    """Share of peak bandwidth in decode; None: EFFICIENCY's for the accelerator and weights."""
    prefill: float | None
    """Share of peak compute in prefill; None: EFFICIENCY's."""
    prefill_peak: str
    """Which peak the prefill share is of: ``bf16_tflops`` (the source text's) or ``weights`` (the weights')."""


def views(assumptions: Assumptions) -> tuple[View, View]:
    """The two views every option is planned at: the assumed efficiencies and the calibrated ones."""
    return (
        View("assumed", assumptions.decode_bandwidth_efficiency, assumptions.prefill_utilisation, "bf16_tflops"),
        View("calibrated", None, None, "weights"),
    )


# --- what comes back ----------------------------------------------------------------------------------------------


@dataclass
class Figures:
    """An option planned at one view. A rejected option has ``feasible`` False, ``reason`` in words, and whatever
    figures were reached before the reason (None for the rest)."""

    feasible: bool = False
    reason: str | None = None
    batch: int | None = None
    binding: str | None = None
    """What sets the batch: ``memory``, ``speed target`` or ``first-token target``."""
    tokens_per_s_per_user: float | None = None
    ttft_s: float | None = None
    """First token of the tail prompt: at the planned batch with chunked prefill, or on a prefill replica plus the
    KV-cache transfer when disaggregated; None where decode leaves no compute for prompts."""
    replicas: int | None = None
    gpus: int | None = None
    usd_per_month: float | None = None
    usd_per_m_input: float | None = None
    usd_per_m_output: float | None = None
    decode_bandwidth_efficiency: float | None = None
    prefill_efficiency: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """Every other figure of the plan, by name: weights_gb, usable_gb, kv_bytes_per_token, batch_memory,
    batch_speed, batch_first_token, batch_budget (the engine's step budget's, where given), tokens_per_s_total,
    prefill_s, requests_per_s_per_replica, prefill_replicas, decode_replicas, prefill_share,
    usd_per_m_output_full_load..."""

    def reject(self, reason: str, limit: str) -> Figures:
        """Mark the option rejected: ``reason`` in words, ``limit`` the check it failed (``precision``, ``efficiency``,
        ``experts``, ``weights``, ``sequence``, ``longest prompt``, ``speed``, ``first token``, ``fleet``), kept in
        ``extra`` as ``rejected_by`` for a face that groups rejections."""
        self.feasible, self.reason = False, reason
        self.extra["rejected_by"] = limit
        return self

    def summary(self) -> dict[str, Any]:
        """The figures the JSON carries, in its order."""
        keys = (
            "batch",
            "binding",
            "tokens_per_s_per_user",
            "ttft_s",
            "replicas",
            "gpus",
            "usd_per_month",
            "usd_per_m_input",
            "usd_per_m_output",
            "feasible",
            "reason",
        )
        return {k: getattr(self, k) for k in keys}


_OPTIONAL_JSON = (
    "prefill_replicas",
    "decode_replicas",
    "ttft_percentiles_s",
    "replicas_binding",
    "owned",
    "engine",
    "speculative",
    "range",
    "step_s",
    "comm_s",
    "step_parts_s",
)
_STEP_JSON = ("step_s", "comm_s", "step_parts_s")
"""The calibrated step at the planned batch, its communication and its parts [s], which the JSON carries for every
feasible option."""
"""Keys of :attr:`Figures.extra` the JSON carries when a plan computed them (a disaggregated option's pools, its
spares in each, ``--own``, ``--ttft-percentile``, the engine's memory, a speculative draft); absent otherwise, so a
plan without them prints what it always printed."""


@dataclass
class Option:
    """One deployment: an accelerator at a price, the weights' and KV cache's precisions, GPUs per replica, serving."""

    gpu: str
    gpus_per_replica: int
    weights: str
    kv: str
    serving: str
    usd_per_gpu_hour: float
    assumed: Figures
    calibrated: Figures
    frontier: bool = False
    layout: str = ""
    """How the replica's GPUs share the model beyond one tensor-parallel group (``tp8 pp2``, ``ep32 dp-attention``);
    empty: the ``gpus_per_replica`` share every layer by tensor parallelism within one server, as they always have."""
    speculative: bool = False
    """Decoded with the plan's speculative draft (:attr:`Assumptions.speculative`); a plan with one tries every
    option with it and without it."""

    def view(self, name: str) -> Figures:
        return self.assumed if name == "assumed" else self.calibrated

    def label(self) -> str:
        draft = " with the draft" if self.speculative else ""
        laid = f" ({self.layout})" if self.layout else ""
        return f"{self.gpu} {self.weights}/{self.kv} x{self.gpus_per_replica}{laid} {self.serving}{draft}"

    def to_json(self, rank_by: str = "calibrated") -> dict[str, Any]:
        """The option as ``--json`` prints it: the figures of the view the plan is ranked by (``rank_by``), then the
        other view's under its name (``assumed`` or ``calibrated``), each with its efficiencies. ``frontier`` is that
        of the ranked view."""
        other = "assumed" if rank_by == "calibrated" else "calibrated"
        out: dict[str, Any] = {
            "gpu": self.gpu,
            "gpus_per_replica": self.gpus_per_replica,
            "layout": self.layout or f"tp{self.gpus_per_replica}",
            "weights": self.weights,
            "kv": self.kv,
            "serving": self.serving,
        }
        out.update(self._view_json(rank_by))
        out["frontier"] = self.frontier
        out[other] = self._view_json(other)
        return out

    def _view_json(self, name: str) -> dict[str, Any]:
        f = self.view(name)
        out = f.summary()
        out["decode_bandwidth_efficiency"] = f.decode_bandwidth_efficiency
        out["prefill_efficiency"] = f.prefill_efficiency
        # only what a plan asked for; the step by part for a feasible option (a rejected one may stop before it)
        out.update({k: f.extra[k] for k in _OPTIONAL_JSON if k in f.extra and (f.feasible or k not in _STEP_JSON)})
        return out


@dataclass
class Plan:
    """Every option, feasible ones ranked by monthly cost (then GPUs, then speed per user), then the rejected ones."""

    model: str
    traffic: Traffic
    targets: Targets
    assumptions: Assumptions
    prices: dict[str, tuple[float, str]]
    """accelerator id -> (USD per GPU-hour, where the price comes from)."""
    options: list[Option]
    rank_by: str = "calibrated"
    notes: list[str] = field(default_factory=list)
    """What the plan assumed about the inputs, in words (the spread of prompt lengths, the memory basis)."""
    owned: dict[str, dict[str, Any]] = field(default_factory=dict)
    """accelerator id -> the owned case: ``usd_per_gpu_hour``, ``running_usd_per_gpu_hour``,
    ``breakeven_utilisation``, ``payback_months``, ``assumptions`` (field -> value, unit, source, as_of) or
    ``reason`` where a figure is missing; empty without :attr:`Assumptions.owned`."""

    @property
    def feasible(self) -> list[Option]:
        return [o for o in self.options if o.view(self.rank_by).feasible]

    @property
    def rejected(self) -> list[Option]:
        return [o for o in self.options if not o.view(self.rank_by).feasible]

    def inputs(self) -> dict[str, Any]:
        t, g, a = self.traffic, self.targets, self.assumptions
        return {
            "model": self.model,
            "requests_per_day": t.requests_per_day,
            "peak_factor": t.peak_factor,
            "peak_requests_per_s": t.peak_requests_per_s,
            "prompt_tokens": t.prompt_tokens,
            "prompt_p95": t.prompt_p95,
            "max_prompt_tokens": t.max_prompt_tokens,
            "prompt_sd": t.prompt_sd,
            "output_tokens": t.output_tokens,
            "reasoning_tokens": t.reasoning_tokens,
            "tokens_per_s_target": g.tokens_per_s,
            "ttft_target_s": g.ttft_s,
            "spare": a.spare,
            "min_replicas": a.min_replicas,
            "gpus": {gpu: {"usd_per_gpu_hour": p, "source": s} for gpu, (p, s) in self.prices.items()},
            "ranked_by": self.rank_by,
            "assumptions": {
                "usable_fraction": a.usable_fraction,
                "decode_bandwidth_efficiency": a.decode_bandwidth_efficiency,
                "prefill_utilisation": a.prefill_utilisation,
                "prefill_peak": "bf16_tflops",
                "kv_overflow": a.kv_overflow,
                "kv_link_gb_s": a.kv_link_gb_s,
                "weights": a.weights,
                "hours_per_month": a.hours_per_month,
                "weight_precisions": list(a.weight_precisions),
                "kv_precisions": list(a.kv_precisions),
                "gpus_per_replica": list(a.gpus_per_replica),
                "max_gpus_per_replica": a.max_gpus_per_replica,
                "servings": list(a.servings),
                "calibration": calibration.active().describe(),
                **(
                    {
                        "engine": {
                            "gpu_memory_utilization": a.engine.memory_fraction,
                            "reserve_gb": a.engine.reserve_gb,
                            "block_size": a.engine.block_size,
                        }
                    }
                    if a.engine
                    else {}
                ),
                **(
                    {"step_budget": {"max_num_tokens": a.max_num_tokens, "max_batch_size": a.max_batch_size}}
                    if a.max_num_tokens or a.max_batch_size
                    else {}
                ),
                **(
                    {
                        "speculative": {
                            "draft": a.speculative.draft,
                            "draft_params_b": a.speculative.draft_params_b,
                            "draft_weights": a.speculative.draft_weights,
                            "draft_tokens": a.speculative.gamma,
                            "acceptance": a.speculative.acceptance,
                            "acceptance_rates": list(a.speculative.acceptance_rates),
                            "tokens_per_step": a.speculative.tokens_per_step(),
                        }
                    }
                    if a.speculative
                    else {}
                ),
            },
            "notes": list(self.notes),
            **(
                {"ttft_percentile": g.ttft_percentile, "service_cv": a.service_cv, "arrival_cv": a.arrival_cv}
                if g.ttft_percentile is not None
                else {}
            ),
            **({"owned": {"utilisation": a.owned.utilisation, "gpus": self.owned}} if a.owned else {}),
        }

    def to_json(self) -> dict[str, Any]:
        options = [o.to_json(self.rank_by) for o in self.options]
        if self.assumptions.speculative is not None:  # which options decode with the draft
            for o, out in zip(self.options, options):
                out["draft"] = o.speculative
        return {"inputs": self.inputs(), "options": options}

    def extra_columns(self) -> list[str]:
        """The columns a plan adds after :data:`TABLE_HEADER` for what it was asked beyond the base search: none
        without a percentile target, the engine's memory, a draft or the owned case."""
        a, cols = self.assumptions, []
        if self.targets.ttft_percentile is not None:
            cols += ["ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "replicas_binding"]
        if a.engine is not None:
            cols += ["kv_cache_tokens", "max_concurrency"]
        if a.speculative is not None:
            cols += ["speculative", "spec_speedup"]
        if a.owned is not None:
            cols += ["owned_usd_per_month", "owned_usd_per_m_input", "owned_usd_per_m_output"]
        if self.multi_node:
            cols += list(TOPOLOGY_COLUMNS)
        return cols

    @property
    def multi_node(self) -> bool:
        """Whether the plan laid any replica out beyond one tensor-parallel server (:attr:`Option.layout`)."""
        return any(o.layout for o in self.options)

    def _extra_cells(self, o: Option, f: Figures) -> list[Any]:
        ex, cells = f.extra, []
        a = self.assumptions
        if self.targets.ttft_percentile is not None:
            at = ex.get("ttft_percentiles_s", {})
            cells += [at.get("p50"), at.get("p90"), at.get("p99"), ex.get("replicas_binding")]
        if a.engine is not None:
            cells += [ex.get("engine", {}).get("kv_cache_tokens"), ex.get("engine", {}).get("max_concurrency")]
        if a.speculative is not None:
            cells += ["yes" if o.speculative else "no", ex.get("speculative", {}).get("speedup")]
        if a.owned is not None:
            owned = ex.get("owned", {})
            cells += [owned.get("usd_per_month"), owned.get("usd_per_m_input"), owned.get("usd_per_m_output")]
        if self.multi_node:
            c = o.calibrated.extra
            cells += [o.layout or f"tp{o.gpus_per_replica}", c.get("step_s"), c.get("comm_s")]
        return cells

    def rows(self) -> list[list[Any]]:
        """The ranked table, header first: what PLAN_OPTIONS spills."""
        out: list[list[Any]] = [list(TABLE_HEADER) + self.extra_columns()]
        feasible = self.feasible
        for i, o in enumerate(self.options):
            f = o.view(self.rank_by)
            c = o.calibrated if self.rank_by == "assumed" else o.assumed
            out.append(
                [
                    i + 1 if i < len(feasible) else "",
                    o.gpu,
                    o.gpus_per_replica,
                    o.weights,
                    o.kv,
                    o.serving,
                    f.batch,
                    f.binding,
                    f.tokens_per_s_per_user,
                    f.ttft_s,
                    f.replicas,
                    f.gpus,
                    f.usd_per_month,
                    f.usd_per_m_input,
                    f.usd_per_m_output,
                    "yes" if f.feasible else "no",
                    "yes" if o.frontier else "",
                    f.reason or "",
                    c.gpus if c.feasible else "",
                    c.usd_per_month if c.feasible else "",
                    c.reason or "",
                    *o.calibrated.extra.get("range", {}).get("gpus", ("", "")),
                    *self._extra_cells(o, f),
                ]
            )
        return [["" if v is None else v for v in row] for row in out]


TABLE_HEADER = (
    "rank",
    "gpu",
    "gpus_per_replica",
    "weights",
    "kv",
    "serving",
    "batch",
    "binding",
    "tokens_per_s_per_user",
    "ttft_s",
    "replicas",
    "gpus",
    "usd_per_month",
    "usd_per_m_input",
    "usd_per_m_output",
    "feasible",
    "frontier",
    "reason",
    "other_view_gpus",
    "other_view_usd_per_month",
    "other_view_reason",
    "gpus_p10",
    "gpus_p90",
)
"""The columns of :meth:`Plan.rows`: the ranked view's figures, then the other view's GPUs, cost and reason (the
calibrated view when ranked by the assumed one), then the calibrated view's GPUs at the P10 and P90 of the
published runs' speeds (:func:`_add_range`; empty for a rejected option)."""
TOPOLOGY_COLUMNS = ("layout", "step_s", "comm_s")
"""The columns a plan adds last where it laid a replica out beyond one server: the layout, and the calibrated step
and the communication in it at the planned batch (all-reduces, all-to-alls, pipeline sends) [s]."""


# --- checking what is asked ---------------------------------------------------------------------------------------


def _check(name: str, annotation: Any, value: Any) -> Any:
    return domain_of(annotation).check(name, value)  # type: ignore[union-attr]


def _checked_inputs(traffic: Traffic, targets: Targets, assumptions: Assumptions) -> None:
    """One-line errors naming the argument, before any option is planned."""
    _check("requests_per_day", PerDay, traffic.requests_per_day)
    _check("prompt_tokens", Tokens, traffic.prompt_tokens)
    _check("output_tokens", Tokens, traffic.output_tokens)
    _check("peak_factor", PeakFactor, traffic.peak_factor)
    _check("reasoning_tokens", TokensOrZero, traffic.reasoning_tokens)
    for name in ("prompt_p95", "max_prompt_tokens", "prompt_sd"):
        value = getattr(traffic, name)
        if value is not None:
            _check(name, TokensOrZero if name == "prompt_sd" else Tokens, value)
    if traffic.prompt_p95 is not None and traffic.prompt_p95 < traffic.prompt_tokens:
        raise OutOfRangeError(
            f"prompt_p95 must be at least the mean prompt ({format_number(traffic.prompt_tokens)}), "
            f"got {format_number(traffic.prompt_p95)}",
            "prompt_p95",
        )
    if traffic.max_prompt_tokens is not None and traffic.max_prompt_tokens < traffic.tail_prompt:
        which = "prompt_p95" if traffic.prompt_p95 is not None else "the mean prompt"
        raise OutOfRangeError(
            f"max_prompt_tokens must be at least {which} ({format_number(traffic.tail_prompt)}), "
            f"got {format_number(traffic.max_prompt_tokens)}",
            "max_prompt_tokens",
        )
    for name, value in (("tokens_per_s", targets.tokens_per_s), ("ttft_s", targets.ttft_s)):
        if value is not None and not (isinstance(value, (int, float)) and value > 0 and math.isfinite(value)):
            shown = format_number(value) if isinstance(value, (int, float)) and math.isfinite(value) else repr(value)
            raise OutOfRangeError(f"{name} target must be a positive number, or none, got {shown}", name)
    if targets.ttft_percentile is not None:
        _check("ttft_percentile", Percentile, targets.ttft_percentile)
        _check("service_cv", CoefficientOfVariation, assumptions.service_cv)
        _check("arrival_cv", CoefficientOfVariation, assumptions.arrival_cv)
    _check("spare", Spare, assumptions.spare)
    _check("min_replicas", Count, assumptions.min_replicas)
    _check("max_num_tokens", CountOrZero, assumptions.max_num_tokens)
    _check("max_batch_size", CountOrZero, assumptions.max_batch_size)
    if assumptions.weights not in (PUBLISHED, PARAMS_X_BYTES):
        raise ArgumentError(
            f"weights must be {PUBLISHED!r} or {PARAMS_X_BYTES!r}, got {assumptions.weights!r}", "weights"
        )
    for name, allowed in (("gpus_per_replica", assumptions.gpus_per_replica), ("servings", assumptions.servings)):
        if not allowed:
            raise ArgumentError(f"{name} must list at least one choice", name)
    owned = assumptions.owned
    if owned is not None:
        for name in [*owned.given, *(k for v in owned.per_gpu.values() for k in v)]:
            if name not in OWNED_FIELDS:
                raise ArgumentError(
                    f"owned: {name!r} is not an owned-case assumption ({', '.join(OWNED_FIELDS)})", "owned"
                )
        if owned.utilisation is not None:
            _check("utilisation", Fraction, owned.utilisation)
    if assumptions.engine is not None:
        e = assumptions.engine
        _check("gpu_memory_utilization", Fraction, e.memory_fraction)
        _check("reserve_gb", MemoryGBOrZero, e.reserve_gb)
        _check("block_size", Count, e.block_size)
    if assumptions.speculative is not None:
        _checked_speculative(assumptions.speculative)
    bad = [s for s in assumptions.servings if s not in SERVINGS]
    if bad:
        raise ArgumentError(f"servings must be among {', '.join(SERVINGS)}, got {', '.join(bad)}", "servings")


def _checked_speculative(sp: Speculative) -> None:
    if (sp.draft is None) == (sp.draft_params_b is None):
        raise ArgumentError(
            "speculative decoding needs one draft: a preset model (draft) or a head's parameters in "
            "billions (draft_params_b)",
            "draft",
        )
    if sp.draft is not None:
        try:
            _model(sp.draft)
        except XlsxplanError as err:  # an unknown name, with the closest ones
            raise type(err)(f"draft: {err.message}", "draft") from None
    else:
        _check("draft_params_b", ParamsB, sp.draft_params_b)
    if (sp.acceptance is None) == (not sp.acceptance_rates):
        raise ArgumentError(
            "speculative decoding needs one acceptance: a rate for every drafted token (acceptance) "
            "or measured rates per position (acceptance_rates)",
            "acceptance",
        )
    if sp.acceptance is not None:
        _check("acceptance", FractionOrZero, sp.acceptance)
        _check("draft_tokens", Count, sp.draft_tokens)
    else:
        for rate in sp.acceptance_rates:
            _check("acceptance_rates", FractionOrZero, rate)
        sp.tokens_per_step()  # rates that rise with the position are refused, naming acceptance_rates
    precision.lookup(sp.draft_weights)


def parse_gpus(text: str | Iterable[str], argument: str = "gpus") -> dict[str, float | None]:
    """Accelerators with an optional price each, from ``"H100=2.5, H200"`` or ``["H100=2.5", "H200"]``: name ->
    USD per GPU-hour, None for the catalog's price. ``all`` (or nothing) is every accelerator with a catalog price.
    The names are the catalog's ids (aliases resolved). An unknown name or a bad price raises a one-line error
    naming ``argument``."""
    items = [p.strip() for p in text.split(",")] if isinstance(text, str) else [p.strip() for p in text]
    items = [p for p in items if p]
    if not items or items == ["all"]:
        return {gpu: None for gpu in catalog.load_prices().ids()}
    table = catalog.load_catalog().accelerators
    out: dict[str, float | None] = {}
    for item in items:
        name, sep, price_text = item.partition("=")
        try:
            gpu = table.get(name.strip()).id
        except XlsxplanError as err:  # an unknown name, with the closest ones
            raise type(err)(f"{argument}: {err.message.removeprefix('gpu ')}", argument) from None
        price: float | None = None
        if sep:
            try:
                price = float(price_text.strip())
            except ValueError:
                raise ArgumentError(
                    f"{argument} {item!r}: the price after '=' must be a number of USD per GPU-hour", argument
                ) from None
            if not (math.isfinite(price) and price > 0):
                raise OutOfRangeError(
                    f"{argument} {item!r}: the price must be a positive number of USD per GPU-hour", argument
                )
        out[gpu] = price
    return out


def _prices(gpus: Mapping[str, float | None] | None) -> dict[str, tuple[float, str]]:
    given = parse_gpus("all") if gpus is None else dict(gpus)
    if not given:
        raise ArgumentError("gpus must name at least one accelerator", "gpus")
    table = catalog.load_catalog().accelerators
    out: dict[str, tuple[float, str]] = {}
    for name, price in given.items():
        gpu = table.get(name).id
        if price is None:
            try:
                price = catalog.load_prices().get(gpu).usd_per_gpu_hour
            except NotAvailableError:
                raise NotAvailableError(
                    f"gpus: {gpu} has no rental price in the catalog: give one as {gpu}=USD_PER_HOUR", "gpus"
                ) from None
            source = catalog.load_prices().citation(gpu)
        else:
            source = "given"
        out[gpu] = (float(price), source)
    return out


# --- planning one option ------------------------------------------------------------------------------------------


def figure_text(x: float) -> str:
    """A figure as a reason quotes it: three significant figures, ``145``, ``72``, ``75.2``, ``0.754``, ``1,450``."""
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"


_sig = figure_text


@dataclass(frozen=True)
class _Model:
    """The figures of the model that do not depend on the option."""

    name: str
    params: float
    active: float
    experts: int
    experts_per_token: int
    expert_params: float
    context: int | None = None
    """The longest sequence the model reads, prompt and output together (the catalog's ``context``,
    max_position_embeddings) [tokens]; None where the catalog has none."""

    @property
    def moe(self) -> bool:
        return self.active < self.params and self.experts > 0

    def read(self, batch: float) -> float:
        """Parameters a decode step of ``batch`` sequences reads (MOE_PARAMS_READ_B; all of them for a dense model)."""
        if not self.moe:
            return self.params
        return equations.moe_params_read(self.params, self.active, self.experts, self.experts_per_token, batch)


def _weights_name(text: str, m: _Model) -> str:
    """A weights precision as the catalog names it (fp8, mxfp4), or ``REST+EXPERTS`` for a mixture of experts stored
    mixed (gpt-oss: bf16+mxfp4, the routed experts in MXFP4 and every other layer in BF16)."""
    rest, plus, apart = text.partition("+")
    if not plus:
        return precision.lookup(text, "weights").name
    if not m.moe:
        raise ArgumentError(
            f"weights {text!r}: REST+EXPERTS stores a mixture of experts' routed experts apart, and {m.name} has no "
            "experts; give one precision",
            "weights",
        )
    if not rest.strip() or not apart.strip() or "+" in apart:
        raise ArgumentError(f"weights {text!r}: give one precision, or REST+EXPERTS such as bf16+mxfp4", "weights")
    return f"{precision.lookup(rest.strip(), 'weights').name}+{precision.lookup(apart.strip(), 'weights').name}"


def _model(name: str) -> _Model:
    preset = catalog.load_catalog().models.get(name)
    params = float(preset.params_b)
    active = min(params, float(preset.figure("active_params_b")))  # type: ignore[arg-type]
    experts = int(preset.figure("experts") or 0)
    per_token = int(preset.figure("experts_per_token") or 0)
    moe = active < params and experts > 0
    return _Model(
        preset.id,
        params,
        active,
        experts if moe else 1,
        per_token if moe else 1,
        models.model_expert_params_b(preset.id) if moe else 0.0,
        int(window) if (window := preset.figure("context")) else None,
    )


@dataclass(frozen=True)
class _Setup:
    """One option's hardware figures, shared by its views."""

    model: _Model
    gpu: str
    memory: float
    bandwidth: float
    peaks: dict[str, float | None]
    weights_name: str
    kv_name: str
    n: int
    weights_gb: float
    bytes_per_param: float
    """Bytes per parameter a decode step reads: the weights' memory over the parameters (the embeddings' width
    counted in, as published), so that every core function reads the same weights figure."""
    kv_bytes: float
    """KV cache per token across the replica's GPUs, at the mean context (MODEL_KV_BYTES_PER_TOKEN)."""
    spec: _Spec | None = None
    compute: tuple[float, float] = (0.0, 0.0)
    """The view's peak [TFLOP/s] and share of it, for a speculative verify step's roofline (set per view)."""
    chain: _Chain | None = None
    """The calibrated view's serving step (validate's, :mod:`xlsxplan.core.step`); None: the view's bandwidth-bound
    decode step, as the source text plans."""
    expert_bytes: float = 0.0
    """Bytes per routed-expert weight when the experts are stored apart from the other layers (weights named
    ``REST+EXPERTS``, gpt-oss's bf16+mxfp4); 0: every weight at :attr:`bytes_per_param`."""
    layout: Layout | None = None
    """How the replica's GPUs share the model beyond one tensor-parallel server (:func:`layouts`); None: the ``n``
    GPUs share every layer by tensor parallelism, as the plan always laid a replica out."""

    @property
    def compute_name(self) -> str:
        return compute_precision(self.weights_name)

    @property
    def copies(self) -> int:
        """Extra copies of the layers outside the routed experts: ``dp - 1`` with attention data-parallel, each group
        holding them whole; 0 otherwise [count]."""
        return self.layout.dp - 1 if self.layout is not None else 0

    @property
    def dense_gb(self) -> float:
        """Memory of the layers outside the routed experts, embeddings included, as the weights store them [GB]."""
        m = self.model
        return dense_weights_gb(m.params, m.expert_params, self.weights_gb, self.expert_bytes)

    @property
    def held_gb(self) -> float:
        """Weights the replica holds: one copy of the model and :attr:`copies` more of its layers outside the
        routed experts [GB]."""
        return self.weights_gb + self.copies * self.dense_gb

    def reading(self, batch: float) -> tuple[float, float]:
        """Parameters a step of ``batch`` tokens reads [B] and their mean bytes per parameter [bytes]: with the
        experts stored apart, every other weight at its own width (the embeddings as published) and the experts
        the batch touches (MOE_PARAMS_READ_B) at theirs; with attention data-parallel, the layers outside the routed
        experts once by every group (:attr:`copies` more): :func:`xlsxplan.core.step.read_weights`, as validate reads
        a published run's."""
        m = self.model
        return read_weights(m.read(batch), self.copies, m.params, m.expert_params, self.weights_gb, self.expert_bytes)

    @property
    def decode_compute(self) -> float:
        """Tokens the target (and draft) compute per token decoded: 1 for plain decoding; with a draft,
        ``(gamma + 1 + gamma N_draft / N_active) / tokens_per_step``."""
        return 1.0 if self.spec is None else self.spec.compute_per_token


@dataclass(frozen=True)
class _Chain:
    """What the calibrated view's step needs beside the option's figures: the same step :func:`xlsxplan.calibration.
    measurements.serve_step_seconds` scores published runs with (:func:`xlsxplan.core.step.step_parts`), divided by
    the fitted serving scale for the replica's GPUs."""

    shape: StepShape
    link_gb_s: float
    """The accelerator's scale-up link per direction [GB/s]; 0: none in the catalog (no all-reduce counted)."""
    tflops: float
    """The view's peak for the weights' arithmetic [TFLOP/s]."""
    compute_eff: float
    scale: float
    """The calibrated serving scale (:meth:`xlsxplan.calibration.Factors.serving_scale`) [multiplier]."""
    prompt_tokens: float
    """Tokens each prompt prefills [tokens]; 0 for a decode pool, which prefills nothing."""
    decode_tokens: float
    """Tokens each request generates, reasoning included [tokens]."""
    context: float
    """Tokens a sequence holds on average while it decodes (MEAN_CONTEXT of the mean prompt and the generated
    tokens), as validate reads a published run [tokens]."""
    kv_bytes: float
    """KV cache per token across the replica's GPUs at that context (MODEL_KV_BYTES_PER_TOKEN) [bytes]."""

    def step(self, s: _Setup, batch: int, eff_bw: float) -> float:
        """The step at ``batch`` [s]: every sequence decodes a token and, in the steady state of continuous batching,
        ``batch P / O`` prompt tokens are prefilled in the same step, the sequences reading their average context."""
        return serve_step(self.parts(s, batch, eff_bw), self.scale)

    def parts(self, s: _Setup, batch: int, eff_bw: float) -> dict[str, float]:
        """The step's parts at ``batch`` before the serving scale [s] (:func:`xlsxplan.core.step.step_parts`), laid
        out as the option's :attr:`_Setup.layout`."""
        prefill = batch * self.prompt_tokens / self.decode_tokens
        return step_parts(
            *s.reading(routed_tokens(batch, prefill)),
            s.model.active,
            batch,
            prefill,
            self.prompt_tokens,
            self.kv_bytes,
            self.context,
            self.shape,
            s.n,
            s.bandwidth,
            self.tflops,
            eff_bw,
            self.compute_eff,
            self.link_gb_s,
            s.layout,
        )


@dataclass(frozen=True)
class _Spec:
    """A draft's figures for one option: what it holds and reads, and what a target step yields."""

    draft_tokens: int
    tokens_per_step: float
    draft_params_b: float
    draft_bytes_per_param: float
    weights_gb: float
    kv_bytes: float
    """The draft's KV cache per token across the replica's GPUs; 0 for a head whose cache is left out."""
    compute_per_token: float


def _unsupported(setup: _Setup, view: View) -> str | None:
    """Why the accelerator cannot compute these weights at this view, or None."""
    gpu, w = setup.gpu, setup.compute_name
    try:
        needed = calibration.peak_field(w)
    except NotAvailableError:
        return f"{w} weights compute on FP4 tensor cores, whose peak the catalog does not hold"
    peak = "bf16_tflops" if view.prefill_peak == "bf16_tflops" else needed
    for f in dict.fromkeys((needed, peak)):
        if setup.peaks.get(f) is None:
            if f == "fp8_tflops":
                return (
                    f"{gpu} has no FP8 tensor cores, which {w} weights compute on "
                    "(w8a16 plans 8-bit weights widened to 16 bits before the multiply)"
                )
            if f == "fp4_tflops":
                return (
                    f"{gpu} has no published FP4 peak, which {w} weights compute on (FP4 tensor cores: "
                    "Blackwell and MI355X; awq or int4_g128 plan 4-bit weights widened to 16 bits)"
                )
            return (
                f"{gpu} has no published 16-bit peak, so its prefill time is unknown (measure one with "
                "`xlsxplan calibrate --save`)"
            )
    return None


@dataclass(frozen=True)
class _Rates:
    """What an accelerator reaches with these weights at a view, or why it cannot compute them."""

    decode_bandwidth: float = 0.0
    prefill: float = 0.0
    peak_tflops: float = 0.0
    peak_field: str = ""
    reason: str = ""
    limit: str = ""


def _rates(setup: _Setup, view: View) -> _Rates:
    """The decode bandwidth share, the prefill share and the peak it is of, at a view; or the reason there are none.
    The same for every option of one accelerator and weights, so :func:`plan` asks once for each."""
    why = _unsupported(setup, view)
    if why:
        return _Rates(reason=why, limit="precision")
    try:
        bw = view.decode_bandwidth
        if bw is None:
            bw = calibration.efficiency("decode_bandwidth", setup.gpu, setup.compute_name)
        pf = view.prefill
        if pf is None:
            pf = calibration.efficiency("prefill", setup.gpu, setup.compute_name)
    except XlsxplanError as err:
        return _Rates(reason=err.message, limit="efficiency")
    field_name = "bf16_tflops" if view.prefill_peak == "bf16_tflops" else calibration.peak_field(setup.compute_name)
    return _Rates(float(bw), float(pf), float(setup.peaks[field_name]), field_name)  # type: ignore[arg-type]


def _largest(low_ok: bool, hi: int, ok: Any) -> int:
    """The largest batch in 1..hi for which ``ok`` holds, ``ok`` holding for all batches below one that holds."""
    if not low_ok:
        return 0
    lo = 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _step_s(s: _Setup, batch: int, context: float, eff_bw: float) -> float:
    """One bandwidth-bound decode step at ``batch``: DECODE_TOKS's, reading the experts that batch touches. With a
    draft, the time per token each sequence sees: SPEC_STEP_S (the draft's steps and the target's verify pass over
    gamma + 1 tokens a sequence, each a roofline, the experts that many tokens touch) over the tokens a step
    yields. The calibrated view: its serving step (:class:`_Chain`)."""
    if s.chain is not None:
        return s.chain.step(s, batch, eff_bw)
    if s.spec is not None:
        sp, (peak, eff) = s.spec, s.compute
        step = speculative.spec_step_seconds(
            *s.reading(batch * (sp.draft_tokens + 1)),
            batch,
            s.kv_bytes,
            context,
            s.n,
            s.bandwidth,
            peak,
            sp.draft_tokens,
            sp.draft_params_b,
            sp.draft_bytes_per_param,
            eff_bw,
            eff,
            s.model.active if s.model.moe else 0.0,
        )
        return step / sp.tokens_per_step
    return equations.decode_step_s(*s.reading(batch), s.n, s.bandwidth, batch, s.kv_bytes, context, eff_bw)


def _batch_for_speed(s: _Setup, target: float, context: float, eff_bw: float, cap: int) -> int:
    """Largest batch (at most ``cap``) whose decode reaches ``target`` per user; 0 if none."""
    if not s.model.moe and s.spec is None and s.chain is None:
        return min(
            cap,
            traffic.batch_for_latency(
                s.model.params, s.bytes_per_param, s.n, s.bandwidth, target, s.kv_bytes, context, eff_bw
            ),
        )
    ok = lambda b: 1.0 / _step_s(s, b, context, eff_bw) >= target * (1 - 1e-12)  # noqa: E731
    return _largest(ok(1), cap, ok)


def _batch_for_ttft(
    s: _Setup, target: Targets, tail_tokens: float, context: float, eff_bw: float, eff_pf: float, peak: float, cap: int
) -> int:
    """Largest batch (at most ``cap``) whose chunked decode leaves compute to read the tail prompt in time."""
    speed = target.tokens_per_s or _NO_SPEED
    ttft = float(target.ttft_s)  # type: ignore[arg-type]
    if not s.model.moe and s.spec is None and s.chain is None:
        batch = traffic.batch_for_ttft(
            s.model.active,
            s.n,
            peak,
            speed,
            tail_tokens,
            ttft,
            eff_pf,
            s.bytes_per_param,
            s.bandwidth,
            s.kv_bytes,
            context,
            eff_bw,
        )
        return min(cap, batch)
    room = equations.compute_tokens_per_s(s.model.active, peak) * s.n * eff_pf - tail_tokens / ttft
    k = s.decode_compute

    def ok(b: int) -> bool:  # decode leaves the prompt its compute, and the step that ends it ends within the target
        step = _step_s(s, b, context, eff_bw)
        within = step <= ttft * (1 + 1e-12)
        return within and b * speed * k <= room * (1 + 1e-12) and k * b / step <= room * (1 + 1e-12)

    return _largest(room > 0 and ok(1), cap, ok)


def _plan_view(
    s: _Setup, rates: _Rates, t: Traffic, g: Targets, a: Assumptions, serving_mode: str, price: float, sd: float | None
) -> Figures:
    f = Figures()
    ex = f.extra
    if rates.reason:
        return f.reject(rates.reason, rates.limit)
    eff_bw, eff_pf, peak, peak_field = rates.decode_bandwidth, rates.prefill, rates.peak_tflops, rates.peak_field
    f.decode_bandwidth_efficiency, f.prefill_efficiency = eff_bw, eff_pf
    ex.update(
        prefill_peak=peak_field,
        prefill_peak_tflops=peak,
        weights_gb=s.held_gb,
        weights_gb_per_gpu=s.held_gb / s.n,
        kv_bytes_per_token=s.kv_bytes,
    )
    sp, e = s.spec, a.engine
    if sp is not None:
        s = replace(s, compute=(peak, eff_pf))
    draft_gb = sp.weights_gb if sp else 0.0
    seq_kv = s.kv_bytes + (sp.kv_bytes if sp else 0.0)  # each sequence holds the target's cache and the draft's
    more = sp.draft_tokens if sp else 0  # the drafted tokens cached while they are checked
    held = s.held_gb + draft_gb
    if e is None:
        usable = serving.usable_gb(s.n, s.memory, a.usable_fraction)
        free = usable - held
    else:
        usable = s.n * s.memory * e.memory_fraction
        pool = engine.kv_pool_gb(s.memory, held / s.n, e.memory_fraction, e.reserve_gb)
        tokens = engine.pool_tokens(pool * equations.GIGA, seq_kv / s.n, e.block_size)
        free = tokens * seq_kv / equations.GIGA if pool > 0 else pool * s.n
        ex["engine"] = {"kv_pool_gb_per_gpu": pool, "kv_cache_tokens": tokens}
    ex.update(usable_gb=usable, free_gb=free)
    if s.model.context is not None:
        asked = t.tail_prompt if t.max_prompt_tokens is None else max(t.tail_prompt, t.max_prompt_tokens)
        longest_request = traffic.context_tokens(asked, t.output_tokens, t.reasoning_tokens)
        if longest_request > s.model.context:
            return f.reject(
                f"{s.model.name} reads at most {format_number(s.model.context)} tokens (its context window); the "
                f"longest request is {format_number(round(longest_request))} (prompt, reasoning and answer)",
                "context window",
            )
    ep = s.n if s.layout is None else s.layout.ep
    if s.model.moe and s.model.experts % ep:
        return f.reject(f"{s.model.experts} experts do not split evenly over {ep} GPUs", "experts")
    if free <= 0:
        what = "weights" if sp is None else "weights and the draft"
        if e is None:
            return f.reject(f"{what} need {figure_text(held)} GB, {figure_text(usable)} GB usable", "weights")
        return f.reject(
            f"{what} need {figure_text(held / s.n)} GB a GPU, the engine's {e.memory_fraction:g} of "
            f"{figure_text(s.memory)} GB less {figure_text(e.reserve_gb)} GB reserved leaves "
            f"{figure_text(s.memory * e.memory_fraction - e.reserve_gb)}",
            "weights",
        )
    context = traffic.context_tokens(t.prompt_tokens, t.output_tokens, t.reasoning_tokens)
    tail_context = traffic.context_tokens(t.tail_prompt, t.output_tokens, t.reasoning_tokens)
    if e is None and sp is None:
        per_slot = equations.batch_that_fits(
            s.held_gb / s.bytes_per_param,
            s.bytes_per_param,
            s.kv_bytes,
            tail_context,
            s.n,
            s.memory,
            a.usable_fraction,
        )
    else:
        block = e.block_size if e else 1
        per_sequence = seq_kv * equations.whole_ceil((tail_context + more) / block) * block
        per_slot = equations.whole_floor(free * equations.GIGA / per_sequence)
    if per_slot < 1:
        need = seq_kv * tail_context / 1e9
        tokens_text = format_number(round(tail_context))
        return f.reject(
            f"the weights leave {figure_text(free)} GB, less than one {tokens_text}-token sequence's KV "
            f"cache ({figure_text(need)} GB)",
            "sequence",
        )
    if t.max_prompt_tokens is not None:
        longest = traffic.context_tokens(t.max_prompt_tokens, t.output_tokens, t.reasoning_tokens)
        alone = traffic.max_context_tokens(free, seq_kv)
        ex["max_context_tokens"] = alone
        if longest > alone:
            alone_gb = figure_text(seq_kv * longest / 1e9)
            return f.reject(
                f"the longest prompt accepted ({format_number(round(longest))} tokens with its answer) "
                f"needs {alone_gb} GB of KV cache alone, {figure_text(free)} GB is free",
                "longest prompt",
            )
    if e is not None:
        length = tail_context if t.max_prompt_tokens is None else longest
        ex["engine"].update(
            max_model_len=length,
            max_concurrency=engine.concurrency(tokens * seq_kv / s.n, seq_kv / s.n, length, e.block_size, 0.0),
        )
    memory_batch = per_slot if sd is None else traffic.paged_batch(free, seq_kv, context + more, sd, a.kv_overflow)
    ex.update(batch_per_slot=per_slot, batch_memory=memory_batch)
    speed_batch = first_batch = None
    if g.tokens_per_s is not None:
        speed_batch = _batch_for_speed(s, g.tokens_per_s, context, eff_bw, memory_batch)
        ex["batch_speed"] = speed_batch
        if speed_batch < 1:
            fastest = 1.0 / _step_s(s, 1, context, eff_bw)
            return f.reject(
                f"no batch reaches {format_number(g.tokens_per_s)} tokens/s per user: the fastest is {_sig(fastest)}",
                "speed",
            )
    tail_tokens = traffic.prefill_tokens(t.tail_prompt)
    compute_tokens_per_s = equations.compute_tokens_per_s(s.model.active, peak) * s.n * eff_pf
    if g.ttft_s is not None and serving_mode == AGGREGATED:
        first_batch = _batch_for_ttft(s, g, tail_tokens, context, eff_bw, eff_pf, peak, memory_batch)
        ex["batch_first_token"] = first_batch
        if first_batch < 1:
            left = compute_tokens_per_s - s.decode_compute / _step_s(s, 1, context, eff_bw)
            took = f"at batch 1 it takes {_sig(tail_tokens / left)} s" if left > 0 else "decode takes all the compute"
            return f.reject(
                f"no batch reads the {format_number(round(tail_tokens))}-token tail prompt within "
                f"{format_number(g.ttft_s)} s: {took}",
                "first token",
            )
    budget_batch = None
    if a.max_num_tokens or a.max_batch_size:  # the engine's per-step limits, in the steady state of its steps
        prompt = traffic.prefill_tokens(t.prompt_tokens) if serving_mode == AGGREGATED else 0.0
        budget_batch = engine.budget_batch(a.max_num_tokens, prompt, t.decode_tokens, a.max_batch_size)
        ex["batch_budget"] = budget_batch
    # the smallest batch a limit allows, and the limit (on a tie the first listed: memory, speed, first token, budget)
    limits = ((memory_batch, MEMORY), (speed_batch, SPEED), (first_batch, FIRST_TOKEN), (budget_batch, BUDGET))
    batch, f.binding = min(((b, why) for b, why in limits if b is not None), key=lambda limit: limit[0])
    if g.ttft_percentile is not None and g.ttft_s is not None and serving_mode == AGGREGATED:
        mean_prefill = serving.prefill_seconds(
            s.model.active, traffic.prefill_tokens(t.prompt_tokens), s.n, peak, eff_pf
        )
        queued = _batch_for_percentile(s, t, g, a, batch, context, eff_bw, compute_tokens_per_s, mean_prefill)
        if queued < batch:
            batch, f.binding = queued, FIRST_TOKEN
        ex["batch_for_percentile"] = queued
    f.batch = batch
    step = _step_s(s, batch, context, eff_bw)
    f.tokens_per_s_per_user = 1.0 / step
    if s.chain is not None and s.spec is None:  # the calibrated step by part, its communication apart
        parts = s.chain.parts(s, batch, eff_bw)
        ex.update(
            step_s=step,
            comm_s=comm_seconds(parts, s.chain.scale),
            step_parts_s={k: v / s.chain.scale for k, v in parts.items()},
        )
    total = batch / step
    prefill = serving.prefill_seconds(s.model.active, traffic.prefill_tokens(t.prompt_tokens), s.n, peak, eff_pf)
    if sp is not None:
        plain = 1.0 / _step_s(replace(s, spec=None), batch, context, eff_bw)
        ex["speculative"] = {
            "tokens_per_step": sp.tokens_per_step,
            "draft_tokens": sp.draft_tokens,
            "draft_gb": sp.weights_gb,
            "draft_kv_bytes_per_token": sp.kv_bytes,
            "tokens_per_s_per_user_without": plain,
            "speedup": f.tokens_per_s_per_user / plain,
            "compute_per_token": sp.compute_per_token,
        }
    ex.update(
        params_read_b=s.model.read(batch),
        tokens_per_s_total=total,
        prefill_s=prefill,
        usd_per_m_output_full_load=serving.cost_per_m_tokens(s.n, price, total),
    )
    peak_rps = t.peak_requests_per_s
    if serving_mode == AGGREGATED:
        k = s.decode_compute  # a draft's verify pass computes more tokens than it keeps
        left = compute_tokens_per_s - total * k
        if left <= 0:
            return f.reject(
                f"decode at batch {format_number(batch)} takes all the compute, so no prompt is ever read (no first "
                "token)",
                "first token",
            )
        f.ttft_s = max(tail_tokens / left, step)  # the first token ends the step that reads the prompt's last chunk
        if s.chain is None:
            rps = traffic.replica_rps_chunked(
                prefill, traffic.prefill_tokens(t.prompt_tokens), t.decode_tokens * k, total * k
            )
        else:  # the prompts are prefilled inside the steps: a request costs its decode steps
            rps = total / t.decode_tokens
        f.replicas = traffic.fleet_replicas(peak_rps, rps, a.spare, a.min_replicas)
        if s.chain is None:  # prefill's share of a replica's GPU time, the bill split by it
            share = prefill * rps
        else:  # prefilled inside the steps: a request's step time split by the tokens it computes, prompt to answer
            prompt = traffic.prefill_tokens(t.prompt_tokens)
            share = prompt / (prompt + t.decode_tokens * k)
        ex.update(requests_per_s_per_replica=rps)
        if g.ttft_percentile is not None:
            mean_tokens = traffic.prefill_tokens(t.prompt_tokens)
            why = _queue(
                f,
                g,
                a,
                peak_rps,
                batch,
                mean_tokens / left,
                t.decode_tokens * step,
                rps,
                f.ttft_s,
                "replicas",
            )
            if why:
                return f.reject(why, "first token")
    else:
        tail_prefill = serving.prefill_seconds(s.model.active, tail_tokens, s.n, peak, eff_pf)
        transfer = traffic.kv_transfer_s(s.kv_bytes, t.tail_prompt, a.kv_link_gb_s)
        f.ttft_s = tail_prefill + transfer
        ex.update(tail_prefill_s=tail_prefill, kv_transfer_s=transfer)
        if g.ttft_s is not None and f.ttft_s > g.ttft_s * (1 + 1e-12):
            return f.reject(
                f"a prefill replica reads the {format_number(round(tail_tokens))}-token tail prompt in "
                f"{_sig(tail_prefill)} s and moves its KV cache in {_sig(transfer)} s: over the "
                f"{format_number(g.ttft_s)} s target",
                "first token",
            )
        p = traffic.prefill_replicas(peak_rps, prefill, a.spare)
        d = traffic.decode_replicas(peak_rps, t.decode_tokens, total, a.spare)
        if g.ttft_percentile is not None:
            p = _prefill_queue(f, g, a, peak_rps, p, prefill, f.ttft_s)
        f.replicas = p + d
        share = p / (p + d)
        ex.update(prefill_replicas=p, decode_replicas=d)
    f.gpus = f.replicas * s.n
    if f.gpus > MOST_GPUS:
        return f.reject(
            f"the peak needs {format_number(f.gpus)} GPUs, more than any fleet ({format_number(MOST_GPUS)})", "fleet"
        )
    f.usd_per_month = f.gpus * price * a.hours_per_month
    f.usd_per_m_input = traffic.cost_per_m_input(f.gpus, price, t.requests_per_day, t.prompt_tokens, share)
    f.usd_per_m_output = traffic.cost_per_m_output(f.gpus, price, t.requests_per_day, t.decode_tokens, share)
    ex.update(prefill_share=share)
    f.feasible = True
    return f


RANGE_KINDS = {
    "gpus": "throughput",
    "usd_per_month": "throughput",
    "tokens_per_s_per_user": "decode",
    "ttft_s": "prefill",
}
"""The band kind (:mod:`xlsxplan.calibration.bands`) each calibrated plan figure's P10-P90 range comes from."""


def _add_range(f: Figures, t: Traffic, a: Assumptions, serving_mode: str, price: float) -> None:
    """The calibrated view's P10-P90 ranges, in ``f.extra["range"]``: each figure at the kind's P10 and P90 speed
    multipliers (:func:`xlsxplan.calibration.band`, split-conformal quantiles of the leave-one-source-out residuals of
    published serving rows).

    Replicas are recounted from a replica's capacity times the multiplier (REPLICAS' ceiling and spares applied
    again), so the GPU range is whole replicas; monthly cost follows the GPUs. The per-user speed is multiplied by the
    decode band, the first-token time divided by the prefill band. A time-like or count-like figure's low end comes
    from the fast multiplier. A percentile target's queue is not re-solved at the ends: the range is of the fleet the
    load needs. Nothing is added to a rejected option or when the factors file records no bands."""
    if not f.feasible or f.replicas is None or f.gpus is None:
        return
    try:
        mult = {kind: (calibration.band(kind, 0.1), calibration.band(kind, 0.9)) for kind in set(RANGE_KINDS.values())}
    except XlsxplanError:
        return
    ex = f.extra
    peak_rps = t.peak_requests_per_s

    def replicas(m: float) -> int:
        if serving_mode == AGGREGATED:
            return traffic.fleet_replicas(peak_rps, ex["requests_per_s_per_replica"] * m, a.spare, a.min_replicas)
        p = traffic.prefill_replicas(peak_rps, ex["prefill_s"] / m, a.spare)
        d = traffic.decode_replicas(peak_rps, t.decode_tokens, ex["tokens_per_s_total"] * m, a.spare)
        return p + d

    planned: int = f.gpus
    n = planned // f.replicas
    low, high = mult["throughput"]
    gpus = (min(planned, replicas(high) * n), max(planned, replicas(low) * n))
    out: dict[str, Any] = {
        "quantiles": [0.1, 0.9],
        "gpus": list(gpus),
        "usd_per_month": [g * price * a.hours_per_month for g in gpus],
    }
    if f.tokens_per_s_per_user is not None:
        lo, hi = mult["decode"]
        out["tokens_per_s_per_user"] = [f.tokens_per_s_per_user * lo, f.tokens_per_s_per_user * hi]
    if f.ttft_s is not None:
        lo, hi = mult["prefill"]
        out["ttft_s"] = [f.ttft_s / hi, f.ttft_s / lo]
    ex["range"] = out


_BATCH_SHARES = (1, 0.95, 0.9, 0.85, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1)
"""Shares of the largest batch the targets allow that a percentile target tries: a smaller batch reads the tail
prompt sooner and leaves time to wait for a slot, at the cost of fewer slots and less throughput a replica."""


def _batch_for_percentile(
    s: _Setup,
    t: Traffic,
    g: Targets,
    a: Assumptions,
    cap: int,
    context: float,
    eff_bw: float,
    compute_tokens_per_s: float,
    prefill: float,
) -> int:
    """The batch (at most ``cap``, among :data:`_BATCH_SHARES` of it) that needs the fewest replicas for the
    percentile target at the peak; of batches needing as many, the largest. A replica's capacity falls with its
    batch, so once the replicas the load alone needs reach the best found, no smaller batch is tried."""
    mean_tokens, tail_tokens = traffic.prefill_tokens(t.prompt_tokens), traffic.prefill_tokens(t.tail_prompt)
    assert g.ttft_s is not None and g.ttft_percentile is not None  # the caller's condition
    best: tuple[int, int] | None = None
    for b in sorted({max(1, round(cap * k)) for k in _BATCH_SHARES}, reverse=True):
        step = _step_s(s, b, context, eff_bw)
        total = b / step
        left = compute_tokens_per_s - total * s.decode_compute
        if left <= 0:
            continue
        mean_s, tail_s = mean_tokens / left, tail_tokens / left
        target = g.ttft_s - (tail_s - mean_s)
        if target < mean_s:
            continue
        rps = traffic.replica_rps_chunked(
            prefill, mean_tokens, t.decode_tokens * s.decode_compute, total * s.decode_compute
        )
        load = traffic.fleet_replicas(t.peak_requests_per_s, rps, a.spare, a.min_replicas)
        if best is not None and load >= best[0]:  # a smaller batch serves no more a replica: none does better
            break
        need = max(
            load,
            queueing.replicas_for_ttft(
                t.peak_requests_per_s,
                target,
                g.ttft_percentile,
                b,
                mean_s,
                t.decode_tokens * step,
                rps,
                a.service_cv,
                a.arrival_cv,
            )
            + a.spare,
        )
        if best is None or need < best[0]:
            best = (need, b)
    return cap if best is None else best[1]


PERCENTILES = (0.5, 0.9, 0.99)
"""The percentiles of the time to first token a plan with a percentile target reports."""


def _queue(
    f: Figures,
    g: Targets,
    a: Assumptions,
    peak_rps: float,
    servers: int,
    mean_s: float,
    decode_s: float,
    capacity: float,
    tail_s: float,
    pool: str,
) -> str | None:
    """Replicas for a percentile of the time to first token under load, and P50/P90/P99 at the planned fleet.

    ``f.replicas`` holds the replicas the load needs (the pool's, ``pool`` naming it in ``extra``); each is a queue
    of ``servers`` slots held ``mean_s + decode_s`` (SLOT_S, with the replica's ``capacity``), ``mean_s`` the mean
    prompt's first token without a wait and ``tail_s`` the tail prompt's: the first token of the tail prompt at a
    percentile is the wait at that percentile plus ``tail_s``. With a target, REPLICAS_FOR_TTFT sizes the replicas so
    that it holds with the spares down, given the target less what the tail prompt adds to the mean's. Returns the
    reason the option fails, or None."""
    extra_s = tail_s - mean_s
    f.extra["replicas_binding"] = "peak load"
    percentile = g.ttft_percentile or 0.5  # the caller's condition: given
    if g.ttft_s is not None:
        target = g.ttft_s - extra_s
        if target < mean_s * (1 - 1e-9):  # the cap on the batch keeps the tail prompt's own time within the target
            return (
                f"the {_sig(tail_s)} s first token of the tail prompt leaves no room to wait within the "
                f"{format_number(g.ttft_s)} s target"
            )
        target = max(target, mean_s)
        need = (
            queueing.replicas_for_ttft(
                peak_rps, target, percentile, servers, mean_s, decode_s, capacity, a.service_cv, a.arrival_cv
            )
            + a.spare
        )
        f.extra[f"{pool}_for_ttft"] = need
        if need > (f.replicas or 0):
            f.replicas = need
            f.extra["replicas_binding"] = f"P{format_number(percentile * 100)} first-token target"
    at: dict[str, float | None] = {}
    for q in PERCENTILES:
        try:
            wait = queueing.ttft_at_load_s(
                peak_rps, f.replicas or 1, servers, mean_s, decode_s, capacity, q, a.service_cv, a.arrival_cv
            )
            at[f"p{round(q * 100)}"] = extra_s + wait
        except OutOfRangeError:  # slots held longer than the load's sizing assumed: the queue grows without bound
            at[f"p{round(q * 100)}"] = None
    f.extra["ttft_percentiles_s"] = at
    return None


def _prefill_queue(
    f: Figures, g: Targets, a: Assumptions, peak_rps: float, replicas: int, mean_s: float, tail_s: float
) -> int:
    """Prefill replicas for a percentile of the time to first token, and P50/P90/P99 at the planned pool.

    The pool is one queue (the router hands the next prompt to the first prefill replica that frees), each replica
    a server reading one prompt in ``mean_s`` on average (QUEUE_WAIT_S with ``replicas`` servers); the tail prompt's
    first token is the wait plus ``tail_s`` (its prefill and KV-cache transfer). With a target, replicas are added
    until it holds with the spares down."""
    f.extra["replicas_binding"] = "peak load"
    percentile = g.ttft_percentile or 0.5  # the caller's condition: given

    def at(q: float, servers: int) -> float | None:
        if peak_rps * mean_s >= servers:
            return None
        return tail_s + queueing.queue_wait_gg_s(peak_rps, mean_s, servers, q, a.arrival_cv, a.service_cv)

    if g.ttft_s is not None:
        need = max(replicas - a.spare, 1)
        while (t := at(percentile, need)) is None or t > g.ttft_s:
            need += 1
        f.extra["prefill_replicas_for_ttft"] = need + a.spare
        if need + a.spare > replicas:
            replicas = need + a.spare
            f.extra["replicas_binding"] = f"P{format_number(percentile * 100)} first-token target"
    f.extra["ttft_percentiles_s"] = {f"p{round(q * 100)}": at(q, replicas) for q in PERCENTILES}
    return replicas


def _spread(t: Traffic) -> tuple[float | None, str]:
    """The standard deviation of prompt lengths a paged batch is sized for (None: every slot at the tail), and how
    it was chosen, in words."""
    if t.prompt_sd is not None:
        return t.prompt_sd, f"a paged KV cache, prompt lengths spread {format_number(t.prompt_sd)} tokens (given)"
    if t.prompt_p95 is None or t.prompt_p95 == t.prompt_tokens:
        return 0.0, "every prompt at the mean (no p95 or spread given)"
    try:
        sd = traffic.length_sd(t.prompt_tokens, t.prompt_p95)
    except OutOfRangeError:
        ratio = t.prompt_p95 / t.prompt_tokens
        return None, (
            f"every slot at the {format_number(t.prompt_p95)}-token p95: a p95 {ratio:.3g} times the "
            f"mean fits no log-normal (at most {traffic.LOGNORMAL_MAX_P95_OVER_MEAN:.3g} times), so no "
            "spread is assumed; give the spread of measured lengths (--prompt-sd) for a paged KV cache's "
            "batch"
        )
    return sd, (
        f"a paged KV cache, prompt lengths log-normal through the mean and p95 (spread "
        f"{format_number(round(sd))} tokens)"
    )


def plan(
    model: str,
    traffic_: Traffic,
    targets: Targets | None = None,
    gpus: Mapping[str, float | None] | None = None,
    assumptions: Assumptions | None = None,
    rank_by: str = "calibrated",
) -> Plan:
    """Every option for serving ``model`` to ``traffic_``, ranked.

    ``gpus`` maps accelerator names to a price per GPU-hour (None: the catalog's, :func:`parse_gpus`); without it,
    every accelerator with a catalog price. ``rank_by`` is ``calibrated`` (the serving step ``validate`` scores, at the
    fitted efficiencies: the default) or ``assumed`` (the assumptions' efficiencies, by default the source text's
    ideal ones, under which its worked examples come out exactly). Raises an :class:`~xlsxplan.errors.XlsxplanError`
    with a one-line message for bad input (an unknown model or accelerator, a p95 below the mean, a price that is no
    number).
    """
    targets = targets or Targets()
    a = assumptions or Assumptions()
    if rank_by not in ("assumed", "calibrated"):
        raise ArgumentError(f"rank_by must be assumed or calibrated, got {rank_by!r}", "rank_by")
    _checked_inputs(traffic_, targets, a)
    m = _model(model)
    prices = _prices(gpus)
    weight_names = tuple(dict.fromkeys(_weights_name(w, m) for w in a.weight_precisions))
    kv_names = tuple(dict.fromkeys(precision.lookup(k, "kv").name for k in a.kv_precisions))
    a = replace(a, weight_precisions=weight_names, kv_precisions=kv_names)
    sd, basis = _spread(traffic_)
    notes = [f"memory: {basis}"]
    context = traffic.context_tokens(traffic_.prompt_tokens, traffic_.output_tokens, traffic_.reasoning_tokens)
    kv_memo: dict[tuple[str, int, float], float] = {}

    def kv_bytes_at(kv: str, tp: int, ctx: float) -> float:
        """MODEL_KV_BYTES_PER_TOKEN across a tensor-parallel group of ``tp`` at ``ctx`` tokens, once each."""
        key = (kv, tp, ctx)
        if key not in kv_memo:
            kv_memo[key] = models.model_kv_bytes_per_token(m.name, ctx, precision.bytes_per_param(kv), tp)
        return kv_memo[key]

    specs = (
        {}
        if a.speculative is None
        else {(kv, n): _spec(a.speculative, m, kv, n, context) for kv in kv_names for n in a.gpus_per_replica}
    )
    both = views(a)
    chain = _chain_base(m, traffic_)
    weights_of = {w: _weights_gb(m, w, a.weights) for w in weight_names}
    table = catalog.load_catalog().accelerators
    options: list[Option] = []
    for gpu, (price, _) in prices.items():
        preset = table.get(gpu)
        memory, bandwidth = float(preset.figure("memory_gb")), float(preset.figure("bandwidth_tb_s"))  # type: ignore[arg-type]
        peaks = {f: preset.figure(f) for f in ("bf16_tflops", "fp8_tflops", "fp4_tflops")}
        link = float(preset.figure("link_gb_s") or 0.0)
        sizes = replica_sizes(gpu, memory, m, a, min(weights_of.values()))
        shared = sorted({n for n, layout, why in sizes if n > 1 and layout is None and not why})
        if not link and shared:  # said beside the plan: these replicas read faster than they are
            missing = table.sources.get(preset.unavailable.get("link_gb_s", ""), "no figure in the catalog")
            notes.append(
                f"links: {gpu} has no scale-up link in the catalog ({missing}): the tensor-parallel all-reduces of "
                f"its replicas of {', '.join(map(str, shared))} GPUs are not counted, so their steps read short"
            )
        for w in weight_names:
            apart = expert_precision(w)
            b_experts = precision.bytes_per_param(apart) if apart else 0.0
            weights_gb = weights_of[w]
            computes = compute_precision(w)
            dispatch = dispatch_bytes(computes, precision.bytes_per_param(computes))
            rates: list[_Rates] | None = None
            for kv in kv_names:
                for n, layout, why in sizes:
                    if layout is not None:
                        layout = layout._replace(dispatch_bytes=dispatch)
                    tp = n if layout is None else layout.tp
                    drafts = (None, specs[(kv, n)]) if specs and layout is None and not why else (None,)
                    for draft in drafts:  # with a draft: both ways
                        setup = _Setup(
                            m,
                            gpu,
                            memory,
                            bandwidth,
                            peaks,
                            w,
                            kv,
                            n,
                            weights_gb,
                            weights_gb / m.params,
                            kv_bytes_at(kv, tp, context),
                            draft,
                            expert_bytes=b_experts,
                            layout=layout,
                        )
                        rates = rates or [_rates(setup, v) for v in both]
                        for mode in a.servings:
                            if why:  # the size cannot be laid out on this accelerator's system
                                figures = [Figures().reject(why, "layout"), Figures().reject(why, "layout")]
                            else:
                                calibrated = _calibrated(
                                    setup, rates[1], chain, kv_bytes_at(kv, tp, chain.context), mode, link
                                )
                                figures = [
                                    _plan_view(setup, rates[0], traffic_, targets, a, mode, price, sd),
                                    _plan_view(calibrated, rates[1], traffic_, targets, a, mode, price, sd),
                                ]
                                _add_range(figures[1], traffic_, a, mode, price)
                            options.append(
                                Option(
                                    gpu,
                                    n,
                                    w,
                                    kv,
                                    mode,
                                    price,
                                    figures[0],
                                    figures[1],
                                    layout=layout.name() if layout is not None else "",
                                    speculative=draft is not None,
                                )
                            )
    owned: dict[str, dict[str, Any]] = {}
    if a.owned is not None:
        owned = {gpu: _owned_case(gpu, price, a.owned, a.hours_per_month) for gpu, (price, _) in prices.items()}
        for o in options:
            for f in (o.assumed, o.calibrated):
                _own(f, owned[o.gpu], traffic_, a.owned, o.usd_per_gpu_hour, a.hours_per_month)
    _rank(options, rank_by)
    return Plan(m.name, traffic_, targets, a, prices, options, rank_by, notes, owned)


def _weights_gb(m: _Model, w: str, basis: str) -> float:
    """The weights' memory in precision ``w`` (``REST+EXPERTS`` for experts stored apart) [GB]: MODEL_WEIGHTS_GB as
    published, or the text's N x b (``params x bytes``), the experts at their own width."""
    rest, apart = compute_precision(w), expert_precision(w)
    b, b_experts = precision.bytes_per_param(rest), precision.bytes_per_param(apart) if apart else 0.0
    if basis == PUBLISHED:
        return models.model_weights_gb(m.name, b, 0, b_experts)
    return serving.weights_gb(m.params, b) + (
        serving.weights_gb(m.expert_params, b_experts) - serving.weights_gb(m.expert_params, b) if apart else 0.0
    )


def layouts(n: int, topo: Topology, m: _Model, heads: int) -> list[tuple[Layout, str]]:
    """The ways to lay a replica of ``n`` GPUs out on a system, each with the reason it cannot be (empty if it can).

    * **tensor and pipeline parallel**: tensor parallel over ``min(n, scale-up domain)`` GPUs, the rest as pipeline
      stages of such groups across domains, ``p`` micro-batches in flight (as vLLM keeps one batch per stage;
      the bubble ``(p-1)/(2p-1)`` of GPipe's schedule, PIPELINE_BUBBLE);
    * **expert parallel with attention data-parallel** (a mixture of experts only): the routed experts spread over
      all ``n`` GPUs, each GPU attending to its own sequences with the other layers whole (DeepSeek-V3 Technical
      Report, arXiv:2412.19437, section 3.4.2).

    A size must fill whole scale-up domains once it is larger than one (the domain limit), and the attention heads
    must split evenly over the tensor-parallel group; the experts' split is checked with the option's other limits.
    The links are the system's (SYSTEM_SPEC): the scale-up bandwidth and, across domains, its NIC's; latencies
    SCALE_UP_LATENCY_US and SCALE_OUT_LATENCY_US where it publishes none.
    """
    up = topo.scale_up_gpus
    base = linked(up, topo.scale_up_gb_s, topo.scale_out_gb_s, topo.scale_up_latency_us, topo.scale_out_latency_us)
    tp = min(n, up)
    pp = max(1, n // tp)
    out: list[tuple[Layout, str]] = []
    why = ""
    if n % tp:
        why = f"{n} GPUs do not fill whole scale-up domains of {up} on {topo.system}"
    elif heads % tp:
        why = f"{heads} attention heads do not split evenly over {tp} GPUs (tensor parallel within the domain)"
    out.append((pipelined(base, tp, pp), why))
    if m.moe:
        out.append((base._replace(tp=1, dp=n), ""))
    return out


def replica_sizes(
    gpu: str, memory: float, m: _Model, a: Assumptions, smallest_gb: float
) -> list[tuple[int, Layout | None, str]]:
    """The replica sizes the search tries on accelerator ``gpu``, each with its layout (None: the GPUs share every
    layer by tensor parallelism within one server) and the reason it cannot be laid out (empty if it can).

    The sizes of :attr:`Assumptions.gpus_per_replica` (1, 2, 4, 8) within one scale-up domain, as the plan always
    laid them out; then, doubling, sizes up to :attr:`Assumptions.max_gpus_per_replica`, or by default up to
    :data:`MAX_GPUS_PER_REPLICA` where the largest size listed (a whole server, 8, or more: a shorter list is a limit
    the user set) cannot hold ``smallest_gb`` (the smallest weights tried) [GB] at the usable share of ``memory``
    [GB]; each such size, and a listed one beyond the domain, laid out as :func:`layouts` says on the accelerator's
    system (systems.toml). An accelerator no system is built of stops at one server, larger sizes rejected with the
    reason."""
    topo = topology_of(gpu)
    domain = max(GPUS_PER_REPLICA) if topo is None else topo.scale_up_gpus
    heads = int(catalog.load_catalog().models.get(m.name).heads)
    out: list[tuple[int, Layout | None, str]] = []
    listed = sorted(set(a.gpus_per_replica))
    one_server = min(domain, SERVER_GPUS)  # more GPUs than a server: laid out on the system's links
    beyond = [n for n in listed if n > one_server]
    out += [(n, None, "") for n in listed if n <= one_server]
    top = max(listed)
    limit = a.max_gpus_per_replica
    short = serving.usable_gb(top, memory, a.usable_fraction) < smallest_gb
    if not limit and short and top >= max(GPUS_PER_REPLICA):  # a list short of a server is a limit set
        limit = MAX_GPUS_PER_REPLICA
    n = top * 2
    while n <= limit:
        beyond.append(n)
        n *= 2
    for n in beyond:
        if topo is None:
            out.append((n, None, f"no system preset gives {gpu}'s topology (systems.toml): one server at most"))
            continue
        out += [(n, layout, why) for layout, why in layouts(n, topo, m, heads)]
    return out


def _chain_base(m: _Model, t: Traffic) -> _Chain:
    """What every option's calibrated step shares in one plan: the model's shape (with the calibrated bytes per
    routed value), the prompts prefilled, the tokens generated and the average context; the option's own figures
    (link, peak, efficiency, serving scale, KV bytes) are set by :func:`_calibrated`."""
    factors = calibration.active().factors
    return _Chain(
        preset_step_shape(m.name, factors),
        0.0,
        0.0,
        0.0,
        1.0,
        traffic.prefill_tokens(t.prompt_tokens),
        t.decode_tokens,
        mean_context(t.prompt_tokens, t.decode_tokens),
        0.0,
    )


def _calibrated(setup: _Setup, rates: _Rates, base: _Chain, kv_bytes: float, mode: str, link: float) -> _Setup:
    """The option's setup for the calibrated view: the serving step validate scores (:class:`_Chain`), with the
    fitted serving scale for its GPUs and ``kv_bytes`` at the chain's average context; a decode pool of a
    disaggregated option prefills nothing. An option with a speculative draft keeps the draft's step (SPEC_STEP_S)
    at the calibrated efficiencies."""
    if setup.spec is not None or rates.reason:
        return setup
    return replace(
        setup,
        chain=replace(
            base,
            link_gb_s=link,
            tflops=rates.peak_tflops,
            compute_eff=rates.prefill,
            scale=calibration.active().factors.serving_scale(
                setup.n if setup.layout is None else setup.layout.tp, setup.gpu
            ),
            prompt_tokens=base.prompt_tokens if mode == AGGREGATED else 0.0,
            kv_bytes=kv_bytes,
        ),
    )


# --- a speculative draft ----------------------------------------------------------------------------------------


def _spec(sp: Speculative, m: _Model, kv: str, n: int, context: float) -> _Spec:
    """The draft's figures beside one option: its weights (MODEL_WEIGHTS_GB for a preset draft, SPEC_DRAFT_GB for a
    head), its KV cache per token at the KV cache's precision over ``n`` GPUs (a head's one layer left out), the
    parameters a draft step reads, and the compute a kept token costs."""
    draft_bytes = precision.bytes_per_param(sp.draft_weights)
    if sp.draft is not None:
        draft = _model(sp.draft)
        params, weights = draft.params, models.model_weights_gb(draft.name, draft_bytes)
        kv_bytes = models.model_kv_bytes_per_token(draft.name, context, precision.bytes_per_param(kv), n)
        active = draft.active
    else:
        params = active = float(sp.draft_params_b)  # type: ignore[arg-type]
        weights, kv_bytes = speculative.spec_draft_gb(params, draft_bytes), 0.0
    per_step = sp.tokens_per_step()
    compute = (sp.gamma + 1 + sp.gamma * active / m.active) / per_step
    return _Spec(sp.gamma, per_step, active, weights / params, weights, kv_bytes, compute)


# --- owning the GPUs ---------------------------------------------------------------------------------------------


def _owned_case(gpu: str, rent: float, owned: Owned, hours_per_month: float) -> dict[str, Any]:
    """One accelerator's owned case: each assumption with its unit and source, the owned GPU-hour (GPU_HOUR_OWNED),
    its running part (power and hosting), the utilisation at which owning and renting cost the same per token
    (BREAKEVEN_UTILISATION) and the months until buying has cost less than renting around the clock
    (BREAKEVEN_MONTH); or the reason a figure is missing."""
    from ..catalog.costs import cost_figure, load_costs, server_kw

    costs = load_costs()
    values: dict[str, float] = {}
    shown: dict[str, dict[str, Any]] = {}
    for name in OWNED_FIELDS:
        given = owned.per_gpu.get(gpu, {}).get(name, owned.given.get(name))
        if given is not None:
            values[name] = float(given)
            shown[name] = {"value": values[name], "unit": _OWNED_UNITS[name], "source": "given", "as_of": None}
            continue
        try:
            if name == "kw":  # the server's share per GPU, else the board power (server_kw)
                kw, title, as_of = server_kw(gpu)
                values[name] = kw
                shown[name] = {"value": kw, "unit": "kW", "source": title, "as_of": as_of and as_of.isoformat()}
                continue
            figure = cost_figure(gpu, _COSTS_KEY.get(name, name))
        except NotAvailableError as err:
            flag = "--own-capex" if name == "capex_usd" else "--own-kw"
            return {
                "reason": f"{err.message} (give it: {flag} {gpu}={_OWNED_UNITS[name]})",
                "field": name,
                "assumptions": shown,
            }
        values[name] = figure.value
        shown[name] = {
            "value": figure.value,
            "unit": _OWNED_UNITS[name],
            "source": costs.titles[figure.source],
            "as_of": figure.as_of.isoformat(),
        }
    case = cost.OwnedCase(**values)
    hour = cost.owned_cost_per_gpu_hour(case)
    running = cost.owned_cost_per_gpu_hour(replace(case, capex_usd=0.0))
    rent_month, running_month = rent * hours_per_month, running * hours_per_month
    payback = cost.breakeven_month(case.capex_usd, rent_month, running_month) if rent_month > running_month else None
    return {
        "usd_per_gpu_hour": hour,
        "running_usd_per_gpu_hour": running,
        "breakeven_utilisation": cost.breakeven_utilisation(hour, rent),
        "payback_months": payback,
        "assumptions": shown,
    }


def busy_share(f: Figures, t: Traffic) -> float:
    """Share of the fleet's replica-hours this traffic keeps busy, on the day's average: requests per second times
    what one request takes of a replica, over the replicas (FLEET_UTILISATION for aggregated serving)."""
    ex = f.extra
    average = t.requests_per_day / serving.SECONDS_PER_DAY
    if "requests_per_s_per_replica" in ex:  # FLEET_UTILISATION's arithmetic, for fleets of any size
        return average / ((f.replicas or 1) * ex["requests_per_s_per_replica"])
    per_request = ex["prefill_s"] + t.decode_tokens / ex["tokens_per_s_total"]
    return average * per_request / (f.replicas or 1)


def _own(f: Figures, case: dict[str, Any], t: Traffic, owned: Owned, price: float, hours_per_month: float) -> None:
    """The option's owned figures into ``f.extra["owned"]``: the same GPUs owned, paid for every hour, their cost a
    month and per million input and output tokens at the fleet's own utilisation (or the one given)."""
    if not f.feasible:
        return
    if "reason" in case:
        f.extra["owned"] = {"reason": case["reason"]}
        return
    hour = case["usd_per_gpu_hour"]
    busy = busy_share(f, t)
    at = owned.utilisation if owned.utilisation is not None else busy
    scale = hour / price * busy / at  # the rented split at the owned price, then at the utilisation given
    gpus, per_m_in, per_m_out = f.gpus or 0, f.usd_per_m_input or 0.0, f.usd_per_m_output or 0.0  # set: feasible
    f.extra["owned"] = {
        "usd_per_gpu_hour": hour,
        "usd_per_month": gpus * hour * hours_per_month,
        "usd_per_m_input": per_m_in * scale,
        "usd_per_m_output": per_m_out * scale,
        "fleet_utilisation": busy,
        "utilisation": at,
    }


FRONTIER_STEP = 0.01
"""How much faster per user [fraction] an option must be than every cheaper one to be on the cost-versus-speed
frontier: options whose batches a decode-speed target caps all meet it within a fraction of a token per second, and
a difference under 1% is inside any model's error, so a dearer option is never marked for it."""


def _rank(options: list[Option], rank_by: str) -> None:
    """Feasible first, by monthly cost, then fewer GPUs, then faster per user, then the sooner first token; rejected
    ones in search order. Marks the cost-versus-speed frontier: an option at least FRONTIER_STEP faster per user than
    every option ranked before it (as cheap or cheaper); of options equal in both, the first."""
    order = {id(o): i for i, o in enumerate(options)}

    def key(o: Option) -> tuple:
        f = o.view(rank_by)
        if not f.feasible:
            return (1, 0.0, 0, 0.0, 0.0, order[id(o)])
        return (0, f.usd_per_month, f.gpus, -(f.tokens_per_s_per_user or 0.0), f.ttft_s, order[id(o)])

    options.sort(key=key)
    best_speed = -math.inf
    for o in options:  # by cost: on the frontier when faster than every cheaper (or equally cheap, earlier) one
        f = o.view(rank_by)
        if not f.feasible:
            break
        speed = f.tokens_per_s_per_user or 0.0
        if speed > best_speed * (1 + FRONTIER_STEP) or best_speed == -math.inf:
            o.frontier = True
        best_speed = max(best_speed, speed)  # every cheaper option's speed, starred or not


# --- the Excel face -----------------------------------------------------------------------------------------------


def _zero_is_none(x: float) -> float | None:
    return None if x == 0 else x


def name_list(value: str, argument: str) -> tuple[str, ...]:
    """A comma-separated list of names, as a cell or a flag gives it; none is refused naming ``argument``."""
    names = tuple(x.strip() for x in value.split(",") if x.strip())
    if not names:
        raise ArgumentError(f"{argument} must list at least one name, separated by commas, got {value!r}", argument)
    return names


def size_list(value: str, argument: str = "gpus_per_replica") -> tuple[int, ...]:
    """A comma-separated list of GPUs per replica (``1,2,4,8``), as a cell or a flag gives it."""
    sizes = name_list(value, argument)
    bad = [x for x in sizes if not x.isdigit()]
    if bad:
        raise ArgumentError(f"{argument} must list whole numbers such as 1,2,4,8, got {bad[0]!r}", argument)
    return tuple(int(x) for x in sizes)


def plan_from_cells(*values: Any) -> Plan:
    """The plan for PLAN_OPTIONS's arguments (:data:`xlsxplan.plan.inputs.PLAN_INPUTS`, in order, checked), as cells
    give them: 0 for a target, a p95, a longest prompt, a percentile or an engine share not given; comma-separated
    lists for the precisions, sizes and serving modes to try."""
    v = dict(zip((p.name for p in PLAN_INPUTS), values, strict=True))
    targets = Targets(
        _zero_is_none(v["tokens_per_s_target"]), _zero_is_none(v["ttft_target_s"]), _zero_is_none(v["ttft_percentile"])
    )
    t = Traffic(
        v["requests_per_day"],
        v["prompt_tokens"],
        v["output_tokens"],
        v["peak_factor"],
        _zero_is_none(v["prompt_p95"]),
        _zero_is_none(v["max_prompt_tokens"]),
        v["reasoning_tokens"],
    )
    fraction = v["gpu_memory_utilization"]
    engine_ = Engine(fraction, v["reserve_gb"], v["block_size"]) if fraction else None
    draft = None
    if v["spec_draft"].strip().lower() != "none":
        draft = Speculative(v["spec_tokens"], v["spec_acceptance"], (), v["spec_draft"])
        try:
            _checked_speculative(draft)
        except XlsxplanError as err:  # named as this function spells it
            raise type(err)(
                "spec_" + err.message if err.argument in ("draft", "acceptance") else err.message,
                "spec_" + (err.argument or "draft"),
            ) from None
    weights_as = " ".join(v["weights_as"].replace("-", " ").split()).lower()
    if weights_as not in (PUBLISHED, PARAMS_X_BYTES):
        raise ArgumentError(
            f"weights_as must be {PUBLISHED} or {PARAMS_X_BYTES}, got {v['weights_as']!r}", "weights_as"
        )
    a = Assumptions(
        usable_fraction=v["usable_fraction"],
        decode_bandwidth_efficiency=v["decode_bandwidth_efficiency"],
        prefill_utilisation=v["prefill_utilisation"],
        kv_overflow=v["kv_overflow"],
        spare=v["spare"],
        min_replicas=v["min_replicas"],
        kv_link_gb_s=v["kv_link_gb_s"],
        weights=weights_as,
        hours_per_month=v["hours_per_month"],
        weight_precisions=name_list(v["weights"], "weights"),
        kv_precisions=name_list(v["kv"], "kv"),
        gpus_per_replica=size_list(v["gpus_per_replica"]),
        servings=tuple(x.lower() for x in name_list(v["servings"], "servings")),
        max_gpus_per_replica=v["max_gpus_per_replica"],
        service_cv=v["service_cv"],
        arrival_cv=v["arrival_cv"],
        owned=Owned() if v["own"] else None,
        engine=engine_,
        speculative=draft,
        max_num_tokens=v["max_num_tokens"],
        max_batch_size=v["max_batch_size"],
    )
    return plan(v["model"], t, targets, parse_gpus(v["gpus"]), a, "assumed" if v["ideal"] else "calibrated")


def _plan_table(*values: Any) -> list[list[Any]]:
    return plan_from_cells(*values).rows()


plan_options = checked(
    with_inputs(
        "plan_options",
        _plan_table,
        (),
        "Every way to serve a model for a traffic, ranked by monthly cost, with each rejected option's reason.",
        """
    Returns
    -------
    list of list
        A table with a header row: rank, accelerator, GPUs per replica, precisions, serving, batch and what sets it,
        speed, first token, replicas, GPUs, USD a month and per M tokens, feasible, frontier, reason; then the
        columns of the optional arguments given (P50/P90/P99 first token, KV tokens, the draft, owned cost) [table].

    Notes
    -----
    Each option is planned as the serving template plans its scenario ("Back-of-the-Envelope Estimation for LLM
    Systems": the batch memory allows, capped by the targets given; chunked prefill, Sarathi-Serve arXiv:2403.02310;
    disaggregated pools, DistServe arXiv:2401.09670), ranked at the calibrated efficiencies (the serving step
    xlsxplan validate scores published runs with) or, with ideal 1, at the text's (full bandwidth, half the BF16
    peak), the other view's GPUs and cost beside them. Weights as MODEL_WEIGHTS_GB; 730 hours a month. The support
    assistant (200,000 requests of 2,000 + 300 tokens on Qwen2.5-72B, H100 at $2.50), ideal 1: FP8 on two GPUs at
    batch 91, 8 GPUs, $14,600 a month, first.
""",
        list[list[Any]],
    )
)
"""PLAN_OPTIONS: the arguments are :data:`xlsxplan.plan.inputs.PLAN_INPUTS`'s, checked by their domains."""
