"""One serving step by operator: the step time that `validate` scores and the plan's calibrated view runs on.

A continuous-batching engine's step decodes one token for each of ``B`` sequences and, in its steady state, prefills
the prompts of the requests that join (``B P / O`` tokens: :func:`xlsxplan.core.effects.prefill_tokens_per_step`).
Its time is the sum of four parts, each the longer of its memory time and its compute time where it has both
(the roofline, Williams, Waterman and Patterson 2009):

* **linear layers**: the weights the batch touches read once (``N_read b`` bytes) against ``2 N_active`` FLOPs for
  every token in the step, decoded or prefilled;
* **attention**: the batch's KV cache read (``B kv ctx`` bytes) against attention's arithmetic over it
  (:func:`xlsxplan.core.effects.attention_decode_flops_per_token`) and over the prompts being prefilled
  (:func:`xlsxplan.core.effects.attention_prefill_flops`);
* **routed activations** of a mixture of experts: the bytes each token's hidden state costs on its way to and from its
  experts (:func:`xlsxplan.core.effects.moe_routed_bytes_per_token`), over the memory bandwidth;
* **tensor-parallel all-reduces** of every token's activations over the accelerator's scale-up link
  (:func:`xlsxplan.core.effects.tp_allreduce_seconds`; Megatron-LM, arXiv:1909.08053, section 3).

A replica laid out beyond one tensor-parallel group (:class:`Layout`) adds the communication of its layout, each term
a documented equation of :mod:`xlsxplan.core.effects` over the link it crosses:

* **pipeline parallel** over ``p`` stages: the batch split into ``m`` micro-batches, each stage holding ``1/p`` of the
  layers on a tensor-parallel group; the step takes ``m + p - 1`` stage times (the bubble, PIPELINE_BUBBLE) and every
  stage time ends in a send of the micro-batch's activations to the next stage (``pipeline``);
* **expert parallel with attention data-parallel** (DeepSeek-V3 Technical Report, arXiv:2412.19437, section 3.4.2:
  attention with data parallelism, the routed experts spread over 32-320 GPUs): every GPU holds its own sequences
  and the layers outside the routed experts whole, the experts ``1/ep`` each; every MoE layer dispatches each token's
  hidden state to its ``k`` experts and combines the results back, two all-to-alls over the scale-up link within a
  domain and the network beyond (``all-to-all``).

The calibrated serving scale (:meth:`xlsxplan.calibration.Factors.serving_scale`, fitted on published serving runs)
divides the step; the efficiencies are :func:`xlsxplan.calibration.efficiency`'s. The numbers come in; the presets
that turn a model or an accelerator name into numbers live in the callers (``xlsxplan.calibration.measurements``
for a published row, ``xlsxplan.plan.search`` for an option), so both run this one function.

Units: parameters in billions, bytes per parameter and per token, bandwidth in TB/s, compute in dense TFLOP/s, the
link in GB/s per direction, time in seconds.
"""

from __future__ import annotations

from typing import NamedTuple

from . import effects

__all__ = [
    "COMM_PARTS",
    "Layout",
    "OVERLAPS",
    "StepShape",
    "comm_seconds",
    "dispatch_bytes",
    "linked",
    "mean_context",
    "serve_step",
    "step_parts",
]

_GIGA, _TERA = 1e9, 1e12


def mean_context(prompt_tokens: float, output_tokens: float) -> float:
    """Tokens a sequence holds on average while it decodes [tokens]: its prompt and half its answer, ``P + O / 2``
    (the cache grows by one token a step; PagedAttention, arXiv:2309.06180, section 4, allocates it as it grows)."""
    return prompt_tokens + output_tokens / 2.0


COMM_PARTS = ("all-reduce", "all-to-all", "pipeline")
"""The parts of a step that are communication: tensor-parallel all-reduces, expert all-to-alls, pipeline sends."""


OVERLAPS = ("two-batch", "combine", "none")
"""What a prefill step's all-to-all overlaps: ``two-batch``, the dispatch and the combine of one micro-batch while
the other computes (DeepSeek's prefill, deepseek-ai/profile-data@4496024; SGLang on H100, LMSYS 2025-05-05);
``combine``, the combine alone, with the down projection and the shared experts (SGLang on GB200 NVL72: "we overlap
the combine communication with both the down GEMM and the shared experts", LMSYS 2025-09-25); ``none``."""


class Layout(NamedTuple):
    """How a replica's GPUs share the model, and the links between them.

    ``tp`` GPUs share each layer (tensor parallel, within a scale-up domain); ``pp`` pipeline stages of those groups;
    ``dp`` data-parallel attention groups (each of ``tp`` GPUs and its own sequences), the routed experts spread over
    all ``tp * pp * dp`` GPUs when ``dp > 1``; ``micro_batches`` the pipeline's micro-batches. The links:
    ``scale_up_gb_s`` and ``scale_out_gb_s`` per GPU and direction [GB/s], their latencies [us] (SCALE_UP_LATENCY_US
    and SCALE_OUT_LATENCY_US where the system publishes none), ``scale_up_gpus`` the GPUs of one scale-up domain;
    ``dispatch_bytes`` the bytes per dispatched value (:func:`dispatch_bytes`; combine is 16-bit); ``overlap`` what a
    prefill step's all-to-all overlaps with its computation (:data:`OVERLAPS`); ``max_domains`` the most scale-up
    domains one token is routed to (DeepSeek-V3's node-limited routing: 4; 0: no limit)."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    micro_batches: int = 1
    scale_up_gpus: int = 8
    scale_up_gb_s: float = 0.0
    scale_out_gb_s: float = 0.0
    scale_up_latency_us: float = 0.0
    scale_out_latency_us: float = 0.0
    dispatch_bytes: float = effects.ACTIVATION_BYTES
    overlap: str = "two-batch"
    max_domains: int = 0

    @property
    def gpus(self) -> int:
        """GPUs of the replica, ``tp * pp * dp`` [count]."""
        return self.tp * self.pp * self.dp

    @property
    def ep(self) -> int:
        """GPUs the routed experts are spread over: every GPU of the replica with attention data-parallel, else the
        tensor-parallel group (each stage's experts split as its other weights) [count]."""
        return self.gpus if self.dp > 1 else self.tp

    def name(self) -> str:
        """The layout in words: ``tp8``, ``tp8 pp2``, ``ep32 dp-attention``."""
        if self.dp > 1:
            return f"ep{self.gpus} dp-attention" + (f" tp{self.tp}" if self.tp > 1 else "")
        return f"tp{self.tp}" + (f" pp{self.pp}" if self.pp > 1 else "")


SERVER_GPUS = 8
"""The GPUs of one server whose replica shares every layer by tensor parallelism with no layout of its own (no
latency counted, as validate scores published single-server runs): a replica of more is laid out on its system's
links and latencies (:class:`Layout`), in the plan (``plan.search.replica_sizes``) and in validate
(``calibration.measurements.replica_layout``) alike [GPUs]."""


def dense_weights_gb(params_b: float, expert_params_b: float, weights_gb: float, expert_bytes: float = 0.0) -> float:
    """Memory of a model's layers outside its routed experts, embeddings included, as the weights store them [GB]:
    ``weights_gb`` less the ``expert_params_b`` [B] of routed experts at ``expert_bytes`` where they are stored apart,
    else at the weights' mean width ``weights_gb / params_b``."""
    return weights_gb - expert_params_b * (expert_bytes or weights_gb / params_b)


def read_weights(
    read_params_b: float,
    copies: int,
    params_b: float,
    expert_params_b: float,
    weights_gb: float,
    expert_bytes: float = 0.0,
) -> tuple[float, float]:
    """The parameters a step reads [B] and their mean bytes per parameter [bytes], from the ``read_params_b`` [B] of
    one copy of a model of ``params_b`` [B] whose weights take ``weights_gb`` [GB] as stored (MODEL_WEIGHTS_GB:
    embeddings at the width checkpoints keep them) and whose routed experts hold ``expert_params_b`` [B]:

    * the weights' own mean, ``weights_gb / params_b``, for one precision;
    * with the routed experts stored apart at ``expert_bytes`` (gpt-oss: MXFP4 experts, BF16 elsewhere), every other
      weight at its own width and the experts read at theirs: ``(dense_gb + (read - dense) expert_bytes) / read``,
      ``dense = params - experts`` and ``dense_gb = weights_gb - experts x expert_bytes``;
    * with attention data-parallel, the layers outside the routed experts read once more by each of ``copies``
      further groups: ``copies x dense`` parameters more, at the width they are stored in.

    The plan's step and validate's both read their weights here."""
    mean = weights_gb / params_b
    dense = params_b - expert_params_b
    dense_gb = dense_weights_gb(params_b, expert_params_b, weights_gb, expert_bytes)
    if expert_bytes:
        mean = (dense_gb + (read_params_b - dense) * expert_bytes) / read_params_b
    if not copies:
        return read_params_b, mean
    more = copies * dense
    return read_params_b + more, (read_params_b * mean + copies * dense_gb) / (read_params_b + more)


def routed_tokens(batch: float, prefill_tokens: float) -> float:
    """Tokens one step sends through a mixture of experts' routed experts [tokens]: each of the ``batch``
    sequences' decoded token and each of the ``prefill_tokens`` prompt tokens prefilled in the same step (a
    continuous-batching engine runs the whole model on both), so the experts the step reads (MOE_PARAMS_READ_B)
    are those this many tokens touch, not the decoded tokens' alone."""
    return batch + prefill_tokens


def pipelined(links: Layout, tp: int, pp: int) -> Layout:
    """``pp`` pipeline stages of ``tp`` GPUs each (tensor parallel within a stage) on ``links``' links, with ``pp``
    micro-batches in flight: vLLM keeps one batch per stage, so a step's sequences are split ``pp`` ways and the
    step takes ``2 pp - 1`` stage times (GPipe's schedule, PIPELINE_BUBBLE: the bubble ``(pp - 1) / (2 pp - 1)``)."""
    return links._replace(tp=tp, pp=pp, dp=1, micro_batches=pp)


def dispatch_bytes(weights: str, bytes_per_param: float) -> float:
    """Bytes per value an expert-parallel dispatch sends for weights computing in format ``weights`` of
    ``bytes_per_param`` [bytes]: NVFP4 for NVFP4 weights (NVFP4_DISPATCH_BYTES: SGLang fuses NVFP4 quantization into
    DeepEP's dispatch, "Deploying DeepSeek on GB200 NVL72 with PD and Large Scale EP (Part II)", lmsys.org,
    2025-09-25), FP8 with its 1x128 scales for weights of 8 bits or fewer (FP8_DISPATCH_BYTES: DeepEP's FP8
    dispatch, "matrix multiplications and dispatch transmissions adopt the FP8 format", DeepSeek's "Day 6: One More
    Thing"), else 16-bit (ACTIVATION_BYTES). The combine is 16-bit in every case."""
    if weights.strip().lower() == "nvfp4":
        return effects.NVFP4_DISPATCH_BYTES
    return effects.FP8_DISPATCH_BYTES if bytes_per_param <= 1.0 else effects.ACTIVATION_BYTES


def linked(
    scale_up_gpus: int,
    scale_up_gb_s: float | None,
    scale_out_gb_s: float | None = None,
    scale_up_latency_us: float | None = None,
    scale_out_latency_us: float | None = None,
) -> Layout:
    """A one-GPU :class:`Layout` carrying a system's links, each figure a system publishes or, where it publishes
    none (None), the default: no scale-up link (0: no exchange counted), the network at SCALE_OUT_GB_S [GB/s], the
    latencies SCALE_UP_LATENCY_US and SCALE_OUT_LATENCY_US [us]. ``scale_up_gpus`` [count] the GPUs of one scale-up
    domain. The plan's layouts and a published expert-parallel run's both start from it (``_replace`` sets the
    parallel sizes)."""
    return Layout(
        scale_up_gpus=scale_up_gpus,
        scale_up_gb_s=scale_up_gb_s or 0.0,
        scale_out_gb_s=scale_out_gb_s or effects.SCALE_OUT_GB_S,
        scale_up_latency_us=scale_up_latency_us or effects.SCALE_UP_LATENCY_US,
        scale_out_latency_us=scale_out_latency_us or effects.SCALE_OUT_LATENCY_US,
    )


class StepShape(NamedTuple):
    """What a step needs of a model beyond its parameters: layers, the attention's width (heads x head size), the
    hidden size, the layers with experts and experts per token (0 for a dense model), and the bytes per routed value
    (the calibrated ``routed_bytes`` over 3, as the fit states it)."""

    layers: int
    attn_width: int
    hidden: int
    moe_layers: int = 0
    experts_per_token: int = 0
    routed_bytes: float = 0.0


def step_parts(
    read_params_b: float,
    bytes_per_param: float,
    active_params_b: float,
    batch: float,
    prefill_tokens: float,
    prompt_tokens: float,
    kv_bytes_per_token: float,
    context_tokens: float,
    shape: StepShape,
    n_gpus: int,
    bandwidth_tb_s: float,
    tflops: float,
    bandwidth_eff: float,
    compute_eff: float,
    link_gb_s: float,
    layout: Layout | None = None,
) -> dict[str, float]:
    """The parts of one step, each in seconds: ``weights`` and ``linear`` (the linear layers' memory and compute),
    ``cache`` and ``attention`` (attention's), ``routed``, ``all-reduce``, ``all-to-all`` and ``pipeline``.

    ``read_params_b`` [B params]: the parameters the batch reads (MOE_PARAMS_READ_B for a mixture of experts);
    ``active_params_b`` [B params]: those each token computes with; ``batch`` [sequences] decoded one token each;
    ``prefill_tokens`` [tokens]: prompt tokens prefilled in the same step, from prompts of ``prompt_tokens`` each;
    ``kv_bytes_per_token`` [bytes] across the GPUs at ``context_tokens`` [tokens] of average context; ``n_gpus``
    sharing the model; ``bandwidth_tb_s`` [TB/s], ``tflops`` [TFLOP/s] and ``link_gb_s`` [GB/s] of one accelerator
    (a link of 0 or one GPU: no exchange); the two efficiencies [fraction] as EFFICIENCY gives them. Unchecked: the
    callers pass numbers they have checked.

    ``layout`` (:class:`Layout`; None: the ``n_gpus`` share every layer by tensor parallelism within one domain, no
    latency counted, as validate scores published single-node runs): with ``pp > 1``, the parts of one micro-batch of
    ``batch / m`` sequences on a ``tp`` group, over ``p`` for a stage's layers, times the ``m + p - 1`` stage times of
    the step (GPipe's schedule, PIPELINE_BUBBLE), plus a send of the micro-batch's activations (P2P_SECONDS) each
    stage time; with ``dp > 1``, the parts over all ``n_gpus`` (``read_params_b`` then counts the layers every GPU
    holds whole once per GPU, ``kv_bytes_per_token`` the cache of one data-parallel group, the routed copies' traffic
    at the dispatch's width on the way in, :func:`~xlsxplan.core.effects.dispatched_routed_share`) and per MoE layer
    a dispatch and a combine of each GPU's ``tokens / n_gpus`` tokens. A step that decodes (``batch > 0``: a decode
    pool's, or an aggregated engine's) runs the low-latency kernels: every one of the ``k`` routed copies sent
    (:func:`~xlsxplan.core.effects.all_to_all_seconds`), the kernels holding the SMs until the data arrive, so the
    time adds to the step. A step that only prefills (a disaggregated prefill pool's) runs the throughput kernels:
    SGLang runs DeepEP's "normal" dispatch in the prefill pool and "low-latency" in the decode pool, and under
    attention data-parallel only with the two apart ("Deploying DeepSeek with PD Disaggregation and Large-scale
    Expert Parallelism on 96 H100 GPUs", lmsys.org, 2025-05-05). Each token is sent once to each GPU and domain
    holding its experts (:func:`~xlsxplan.core.effects.forwarded_all_to_all_seconds`) and what the layout's
    ``overlap`` names is hidden behind the computation but for the SMs the kernels hold
    (:func:`~xlsxplan.core.effects.exposed_comm_seconds` at NORMAL_KERNEL_SM_SHARE; ``combine``: the combine
    alone, bounded by the whole step's computation where its down projection and shared experts would be the
    tighter bound). The ``all-to-all`` part is the time the step still shows.
    The tensor-parallel all-reduces of a layout add the scale-up latency to each.
    """
    if layout is not None and layout.pp > 1:
        p, m = layout.pp, max(1, layout.micro_batches)
        micro = _parts(
            read_params_b,
            bytes_per_param,
            active_params_b,
            batch / m,
            prefill_tokens / m,
            prompt_tokens,
            kv_bytes_per_token,
            context_tokens,
            shape,
            layout.tp,
            bandwidth_tb_s,
            tflops,
            bandwidth_eff,
            compute_eff,
            layout.scale_up_gb_s,
            layout.scale_up_latency_us,
        )
        slots = m + p - 1  # stage times in the step, each a p-th of the micro-batch's pass
        out = {k: v * slots / p for k, v in micro.items()}
        across = layout.gpus > layout.scale_up_gpus
        link = layout.scale_out_gb_s if across else layout.scale_up_gb_s
        latency = layout.scale_out_latency_us if across else layout.scale_up_latency_us
        # each GPU of the group sends its 1/tp of the activations (Megatron-LM, arXiv:2104.04473, section 4.1)
        sent = (batch + prefill_tokens) / m * shape.hidden * effects.ACTIVATION_BYTES / layout.tp
        out["pipeline"] = slots * effects.p2p_seconds(sent, link, latency)
        return out
    if layout is not None and layout.dp > 1:
        out = _parts(
            read_params_b,
            bytes_per_param,
            active_params_b,
            batch,
            prefill_tokens,
            prompt_tokens,
            kv_bytes_per_token,
            context_tokens,
            shape,
            n_gpus,
            bandwidth_tb_s,
            tflops,
            bandwidth_eff,
            compute_eff,
            0.0,
            0.0,
        )
        out["routed"] *= effects.dispatched_routed_share(layout.dispatch_bytes)  # the way in at the dispatch's width
        if layout.tp > 1:
            tokens = (batch + prefill_tokens) / layout.dp
            out["all-reduce"] = (
                effects.tp_allreduce_seconds(tokens, shape.hidden, shape.layers, layout.tp, layout.scale_up_gb_s)
                + effects.ALL_REDUCES_PER_LAYER * shape.layers * layout.scale_up_latency_us * 1e-6
            )
        if shape.experts_per_token and shape.moe_layers:
            mine = (batch + prefill_tokens) / n_gpus * shape.hidden  # one copy of each of a GPU's tokens [values]
            k = shape.experts_per_token
            across = n_gpus > layout.scale_up_gpus
            latency = layout.scale_out_latency_us if across else layout.scale_up_latency_us
            up, domain, out_gb_s = layout.scale_up_gb_s, layout.scale_up_gpus, layout.scale_out_gb_s
            sizes = (layout.dispatch_bytes, effects.ACTIVATION_BYTES)
            compute = serve_step(out)  # every part but the all-to-all, still 0 here
            if prefill_tokens > 0 and not batch:  # a prefill pool's: the throughput kernels, overlapped
                dispatch, combine = (
                    shape.moe_layers
                    * effects.forwarded_all_to_all_seconds(
                        mine * b, k, n_gpus, up, domain, out_gb_s, latency, layout.max_domains
                    )
                    for b in sizes
                )
                share = effects.NORMAL_KERNEL_SM_SHARE
                if layout.overlap == "two-batch":
                    out["all-to-all"] = effects.exposed_comm_seconds(compute, dispatch + combine, share)
                elif layout.overlap == "combine":
                    out["all-to-all"] = dispatch + effects.exposed_comm_seconds(compute, combine, share)
                else:
                    out["all-to-all"] = dispatch + combine
            else:  # the low-latency kernels: every copy, holding the SMs until the data arrive
                one = sum(
                    effects.all_to_all_seconds(mine * k * b, n_gpus, up, domain, out_gb_s, latency) for b in sizes
                )
                out["all-to-all"] = shape.moe_layers * one
        return out
    link = layout.scale_up_gb_s if layout is not None else link_gb_s
    latency = layout.scale_up_latency_us if layout is not None else 0.0
    return _parts(
        read_params_b,
        bytes_per_param,
        active_params_b,
        batch,
        prefill_tokens,
        prompt_tokens,
        kv_bytes_per_token,
        context_tokens,
        shape,
        n_gpus,
        bandwidth_tb_s,
        tflops,
        bandwidth_eff,
        compute_eff,
        link,
        latency,
    )


def _parts(
    read_params_b: float,
    bytes_per_param: float,
    active_params_b: float,
    batch: float,
    prefill_tokens: float,
    prompt_tokens: float,
    kv_bytes_per_token: float,
    context_tokens: float,
    shape: StepShape,
    n_gpus: int,
    bandwidth_tb_s: float,
    tflops: float,
    bandwidth_eff: float,
    compute_eff: float,
    link_gb_s: float,
    latency_us: float,
) -> dict[str, float]:
    """:func:`step_parts` for ``n_gpus`` sharing every layer by tensor parallelism, the all-reduces over a link of
    ``link_gb_s`` [GB/s] with ``latency_us`` [us] each."""
    bandwidth = n_gpus * bandwidth_tb_s * _TERA * bandwidth_eff
    rate = n_gpus * tflops * _TERA * compute_eff
    tokens = batch + prefill_tokens
    attention = effects.attention_decode_flops_per_token(shape.layers, shape.attn_width, context_tokens) * batch
    if prefill_tokens > 0 and prompt_tokens > 0:
        attention += (
            effects.attention_prefill_flops(shape.layers, shape.attn_width, prompt_tokens)
            * prefill_tokens
            / prompt_tokens
        )
    routed = 0.0
    if shape.experts_per_token and shape.moe_layers:
        per = effects.moe_routed_bytes_per_token(
            shape.hidden, shape.moe_layers, shape.experts_per_token, shape.routed_bytes
        )
        routed = per * tokens / bandwidth
    exchange = 0.0
    if n_gpus > 1 and link_gb_s:
        exchange = effects.tp_allreduce_seconds(tokens, shape.hidden, shape.layers, n_gpus, link_gb_s)
        if latency_us:
            exchange += effects.ALL_REDUCES_PER_LAYER * shape.layers * latency_us * 1e-6
    return {
        "weights": read_params_b * _GIGA * bytes_per_param / bandwidth,
        "linear": 2.0 * active_params_b * _GIGA * tokens / rate,
        "cache": batch * kv_bytes_per_token * context_tokens / bandwidth,
        "attention": attention / rate,
        "routed": routed,
        "all-reduce": exchange,
        "all-to-all": 0.0,
        "pipeline": 0.0,
    }


def serve_step(parts: dict[str, float], scale: float = 1.0) -> float:
    """The step's time [s] from its parts (:func:`step_parts`): ``(max(weights, linear) + max(cache, attention) +
    routed + all-reduce + all-to-all + pipeline) / scale``, ``scale`` the calibrated serving scale (1: the roofline
    with its effects alone)."""
    return (
        max(parts["weights"], parts["linear"])
        + max(parts["cache"], parts["attention"])
        + parts["routed"]
        + parts["all-reduce"]
        + parts.get("all-to-all", 0.0)
        + parts.get("pipeline", 0.0)
    ) / scale


def comm_seconds(parts: dict[str, float], scale: float = 1.0) -> float:
    """The step's communication [s]: its all-reduces, all-to-alls and pipeline sends (:data:`COMM_PARTS`), over the
    same ``scale`` as :func:`serve_step`."""
    return sum(parts.get(k, 0.0) for k in COMM_PARTS) / scale
