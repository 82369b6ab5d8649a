"""Serving with both ceilings: every step takes the longer of its memory time and its compute time.

The serving estimate of "Back-of-the-Envelope Estimation for LLM Systems" is bandwidth-bound decode at full memory and
compute-bound prefill, each on its own. Measured offline throughput needs both at once: at a large batch a decode step
stops being bound by memory and becomes bound by arithmetic (the roofline), the sequences in flight hold their *average*
context rather than their longest, and every request's prompt must be read before its answer is written. These functions
add exactly that and nothing else, so their inputs are its own: parameters, bytes, bandwidth, dense TFLOP/s, and the two
efficiencies that :func:`xlsxplan.calibration.efficiency` calibrates on published measurements.

Units as in :mod:`xlsxplan.core.serving`: parameters in billions, memory in GB, bandwidth in TB/s, compute in dense
TFLOP/s, time in seconds.

References
----------
.. [1] Williams, Waterman and Patterson 2009, "Roofline: An Insightful Visual Performance Model for Multicore
   Architectures", Communications of the ACM 52(4): time is the larger of work over peak compute and traffic over
   peak bandwidth.
.. [2] "Back-of-the-Envelope Estimation for LLM Systems", sections 3-5 (KV cache, bandwidth-bound
   decode, compute-bound prefill at 50% utilisation).
.. [3] Kwon et al. 2023, "Efficient Memory Management for Large Language Model Serving with PagedAttention",
   arXiv:2309.06180, section 4: the KV cache is allocated as sequences grow, so memory holds their current length.
.. [4] Shoeybi et al. 2019, "Megatron-LM", arXiv:1909.08053, section 3: tensor parallelism all-reduces the
   activations twice per layer in the forward pass.
.. [5] Patarasuk and Yuan 2009, "Bandwidth optimal all-reduce algorithms for clusters of workstations", J.
   Parallel Distrib. Comput. 69(2): a ring all-reduce sends 2(n-1)/n of the data from each GPU.
.. [6] Jiang et al. 2024, "Mixtral of Experts", arXiv:2401.04088, section 2: every expert held in memory, each token
   computed by the experts it is routed to; a batch of tokens routed independently touches more of them
   (MOE_PARAMS_READ_B).

Mixture of experts: memory holds every parameter (``params_b``), a token computes with its active ones
(``active_params_b``), and a decode step of ``B`` sequences reads the experts any of them is routed to:
``MOE_PARAMS_READ_B(params_b, active_params_b, experts, experts_per_token, B)``, from the active parameters at
batch 1 towards all of them.
"""

from __future__ import annotations

from ..domains import (
    BandwidthTBs,
    Batch,
    BatchOrZero,
    Count,
    CountOrZero,
    Fraction,
    GPUs,
    KvBytes,
    KvBytesOrZero,
    LinkGBsOrZero,
    MemoryGB,
    ParamsB,
    ParamsBOrZero,
    TFLOPs,
    Tokens,
    TokensOrZero,
    checked,
)
from ..errors import OutOfRangeError
from ..infra.elementwise import is_array, maximum, minimum, negated, power, refused, where
from ..precision import BytesPerValue
from . import equations
from .architecture import check_moe

__all__ = ["decode_step_seconds", "serve_tokens_per_s", "ttft_seconds", "ACTIVATION_BYTES"]

_GIGA, _TERA = 1e9, 1e12

ACTIVATION_BYTES = 2
"""Bytes per activation value exchanged between tensor-parallel GPUs: 16-bit activations, as in Megatron-LM and
the serving engines, whatever the weights' format."""


def _step(
    params_b: float,
    bytes_per_param: float,
    batch: int,
    kv_bytes_per_token: float,
    context_tokens: float,
    n_gpus: int,
    bandwidth_tb_s: float,
    tflops: float,
    bandwidth_eff: float,
    compute_eff: float,
    active_params_b: float = 0.0,
) -> float:
    """One decode step: ``params_b`` read, ``active_params_b`` (0: the same) computed per sequence. Unchecked."""
    computed = where(active_params_b != 0, active_params_b, params_b)
    memory = (params_b * _GIGA * bytes_per_param + batch * kv_bytes_per_token * context_tokens) / (
        n_gpus * bandwidth_tb_s * _TERA * bandwidth_eff
    )
    compute = 2.0 * computed * _GIGA * batch / (n_gpus * tflops * _TERA * compute_eff)
    return maximum(memory, compute)


def _moe(params_b: float, active_params_b: float, experts: int, experts_per_token: int) -> float:
    """The active parameters (``params_b`` for a dense model), refusing a mixture of experts without its routing."""
    dense = (active_params_b == 0) | (active_params_b == params_b)
    routed = (experts != 0) & (experts_per_token != 0)
    if refused(dense & routed & (experts_per_token < experts) & (active_params_b == 0)):
        raise OutOfRangeError(
            "active_params_b must be given (above 0) with experts: the parameters one token uses", "active_params_b"
        )
    if not is_array(dense) and dense:
        return params_b
    mixture = negated(dense)
    if refused(mixture & (active_params_b < params_b) & negated(routed)):
        raise OutOfRangeError(
            "experts and experts_per_token must be given (above 0) with active_params_b below params_b: a batch "
            "reads the experts its tokens are routed to (MOE_PARAMS_READ_B)",
            "experts" if not experts else "experts_per_token",
        )
    check_moe(params_b, active_params_b, experts, experts_per_token, among=mixture)
    return where(dense, params_b, active_params_b)


@checked(arrays=True)
def decode_step_seconds(
    params_b: ParamsB,
    bytes_per_param: BytesPerValue,
    batch: Batch,
    kv_bytes_per_token: KvBytesOrZero,
    context_tokens: TokensOrZero,
    n_gpus: GPUs,
    bandwidth_tb_s: BandwidthTBs,
    tflops: TFLOPs,
    bandwidth_eff: Fraction = 1,
    compute_eff: Fraction = 0.5,
    active_params_b: ParamsBOrZero = 0,
) -> float:
    """Time of one decode step, the longer of reading the weights and caches and doing the arithmetic.

    Parameters
    ----------
    params_b : float
        Parameters read and used per step, in billions [B params].
    bytes_per_param : float
        Bytes per weight, or a precision name such as fp8 or q4_k_m [bytes].
    batch : int
        Sequences decoded together, one token each per step [sequences].
    kv_bytes_per_token : float
        KV cache per token at the cache's precision; 0 counts weights only [bytes].
    context_tokens : float
        Tokens of KV cache each sequence reads in this step, on average [tokens].
    n_gpus : int
        Accelerators sharing the model, their bandwidth and compute adding up [count].
    bandwidth_tb_s : float
        Memory bandwidth of one accelerator [TB/s].
    tflops : float
        Dense throughput of one accelerator at the serving precision [TFLOP/s].
    bandwidth_eff : float, default 1
        Share of peak bandwidth reached; 1 is the ceiling of Back-of-the-Envelope, EFFICIENCY("decode_bandwidth") the
        calibrated value [fraction].
    compute_eff : float, default 0.5
        Share of peak compute reached; 0.5 is the prefill figure of Back-of-the-Envelope, EFFICIENCY("prefill") the
        calibrated value [fraction].
    active_params_b : float, default 0
        Parameters each sequence computes with, in billions, when fewer than those read (a mixture of experts: its
        active parameters, with params_b from MOE_PARAMS_READ_B); 0: params_b [B params].

    Returns
    -------
    float
        Step time; one over it is each sequence's tokens per second [s].

    Notes
    -----
    ``max((N b + batch kv ctx) / (n B e_bw), 2 N batch / (n C e_c))``: the roofline (Williams, Waterman and
    Patterson 2009) applied to a decode step.
    The memory term is the one in "Back-of-the-Envelope Estimation for LLM Systems" (section 4); the compute term is 2
    FLOPs per parameter per token. Small batches are bound by memory, large ones by arithmetic: Llama-3.1-8B in FP8 on
    one H100 (65,536 KV bytes per token, 192 tokens of context, e_bw 0.54, e_c 0.41) is bound by memory up to batch 345
    and by arithmetic above. Attention's arithmetic on the cache is left out (a few percent below 10k tokens of
    context). A mixture of experts computes ``2 N_active batch`` FLOPs while reading ``N_read`` parameters.
    """
    if refused(active_params_b > params_b):
        raise OutOfRangeError("active_params_b cannot exceed params_b (the parameters read)", "active_params_b")
    return _step(
        params_b,
        bytes_per_param,
        batch,
        kv_bytes_per_token,
        context_tokens,
        n_gpus,
        bandwidth_tb_s,
        tflops,
        bandwidth_eff,
        compute_eff,
        active_params_b,
    )


@checked(arrays=True)
def serve_tokens_per_s(
    params_b: ParamsB,
    bytes_per_param: BytesPerValue,
    kv_bytes_per_token: KvBytes,
    prompt_tokens: Tokens,
    output_tokens: Tokens,
    n_gpus: GPUs,
    memory_gb: MemoryGB,
    bandwidth_tb_s: BandwidthTBs,
    tflops: TFLOPs,
    concurrency: BatchOrZero = 0,
    bandwidth_eff: Fraction = 1,
    compute_eff: Fraction = 0.5,
    usable_fraction: Fraction = 0.9,
    active_params_b: ParamsBOrZero = 0,
    experts: CountOrZero = 0,
    experts_per_token: CountOrZero = 0,
) -> float:
    """Output tokens per second of one model copy serving requests back to back: prefill plus roofline decode.

    Parameters
    ----------
    params_b : float
        Parameters held in memory, in billions; every expert of a mixture of experts [B params].
    bytes_per_param : float
        Bytes per weight, or a precision name [bytes].
    kv_bytes_per_token : float
        KV cache per token at the cache's precision, e.g. KV_BYTES_PER_TOKEN(layers, kv_heads, head_dim, "fp8")
        [bytes].
    prompt_tokens : float
        Prompt tokens per request [tokens].
    output_tokens : float
        Output tokens per request [tokens].
    n_gpus : int
        Accelerators holding one copy of the model [count].
    memory_gb : float
        Memory of one accelerator [GB].
    bandwidth_tb_s : float
        Memory bandwidth of one accelerator [TB/s].
    tflops : float
        Dense throughput of one accelerator at the serving precision [TFLOP/s].
    concurrency : int, default 0
        Requests in flight; 0 fills the memory, as an offline benchmark does [sequences].
    bandwidth_eff : float, default 1
        Share of peak bandwidth reached [fraction].
    compute_eff : float, default 0.5
        Share of peak compute reached, in prefill and in compute-bound decode [fraction].
    usable_fraction : float, default 0.9
        Share of memory the serving engine can use [fraction].
    active_params_b : float, default 0
        Parameters one token uses, in billions (mixture of experts); 0 for a dense model [B params].
    experts : int, default 0
        Routed experts per MoE layer; required with active_params_b [count].
    experts_per_token : int, default 0
        Routed experts each token uses; required with active_params_b [count].

    Returns
    -------
    float
        Output tokens per second of the model copy; 0 when the weights or one request do not fit [tokens/s].

    Notes
    -----
    A sequence holds on average ``ctx = P + G/2`` tokens while it decodes (paged KV cache, Kwon et al. 2023), so
    memory holds ``fits = floor((n M f - N b) / (kv ctx))`` sequences and the batch is ``B = min(concurrency,
    fits)``. Each request costs its prefill ``2 N P / (n C e_c)`` plus ``G`` decode slots of ``step / B``, with
    ``step`` from DECODE_STEP_S at batch B and context ctx, so ``tokens/s = G / (G step / B + 2 N P / (n C e_c))``.
    Prefill and decode are counted one after the other, as an engine without chunked-prefill overlap runs them.
    TensorRT-LLM's Llama-3.1-8B FP8 on one H100 makes 28,312 tokens/s at 128/128 and 15,220 at 1000/1000
    (perf-overview.md); with the calibrated efficiencies (0.55 of bandwidth, 0.41 of compute) this gives 24,958 and
    12,560. A mixture of experts holds params_b, prefills with ``2 N_active P`` FLOPs and decodes a step of B
    sequences reading ``MOE_PARAMS_READ_B(N, N_active, experts, experts_per_token, B)`` parameters and computing
    ``2 N_active B`` FLOPs (Mixtral of Experts, arXiv:2401.04088, section 2).
    """
    active = _moe(params_b, active_params_b, experts, experts_per_token)
    context = prompt_tokens + output_tokens / 2.0
    fits = equations.batch_that_fits(
        params_b, bytes_per_param, kv_bytes_per_token, context, n_gpus, memory_gb, usable_fraction
    )
    batch = where(concurrency == 0, fits, minimum(concurrency, fits))
    if not is_array(batch):
        if batch < 1:
            return 0.0
        read = (
            params_b
            if active == params_b
            else equations.moe_params_read(params_b, active, experts, experts_per_token, batch)
        )
    else:  # the same for each element; a stand-in batch of 1 where none fits, and 1 of 1 experts where dense
        empty = batch < 1
        batch = where(empty, 1, batch)
        dense = (active == params_b) | (experts == 0) | (experts_per_token == 0)  # the last two: refused by _moe
        read = where(
            dense,
            params_b,
            equations.moe_params_read(
                params_b, active, where(dense, 1, experts), where(dense, 1, experts_per_token), batch
            ),
        )
    step = _step(
        read,
        bytes_per_param,
        batch,
        kv_bytes_per_token,
        context,
        n_gpus,
        bandwidth_tb_s,
        tflops,
        bandwidth_eff,
        compute_eff,
        active,
    )
    prefill = equations.prefill_s(active, prompt_tokens, n_gpus, tflops, compute_eff)
    tokens_per_s = output_tokens / (output_tokens * step / batch + prefill)
    return where(empty, 0.0, tokens_per_s) if is_array(batch) else tokens_per_s


@checked(arrays=True)
def ttft_seconds(
    params_b: ParamsB,
    bytes_per_param: BytesPerValue,
    prompt_tokens: Tokens,
    layers: Count,
    hidden: Count,
    n_gpus: GPUs,
    tflops: TFLOPs,
    bandwidth_tb_s: BandwidthTBs,
    compute_eff: Fraction = 0.5,
    bandwidth_eff: Fraction = 1,
    link_gb_s: LinkGBsOrZero = 0,
) -> float:
    """Time to first token: prefill with attention, at least one read of the weights, plus tensor-parallel traffic.

    Parameters
    ----------
    params_b : float
        Parameters used per token, in billions [B params].
    bytes_per_param : float
        Bytes per weight, or a precision name [bytes].
    prompt_tokens : float
        Tokens in the prompt [tokens].
    layers : int
        Transformer layers [count].
    hidden : int
        Model width: hidden size, or heads times head dimension where they differ [count].
    n_gpus : int
        Accelerators sharing the model by tensor parallelism [count].
    tflops : float
        Dense throughput of one accelerator at the serving precision [TFLOP/s].
    bandwidth_tb_s : float
        Memory bandwidth of one accelerator [TB/s].
    compute_eff : float, default 0.5
        Share of peak compute reached; 0.5 is the figure of Back-of-the-Envelope, EFFICIENCY("prefill") the calibrated
        value [fraction].
    bandwidth_eff : float, default 1
        Share of peak bandwidth reached while the weights are read [fraction].
    link_gb_s : float, default 0
        GPU-to-GPU bandwidth per direction, e.g. 450 for H100 NVLink; 0 leaves the exchange out [GB/s].

    Returns
    -------
    float
        Time to first token [s].

    Notes
    -----
    Arithmetic ``2 N P + 2 L d P^2``: two FLOPs per parameter per token ("Back-of-the-Envelope Estimation for LLM
    Systems", section 5) plus causal attention's scores and weighted sums, which grow with the square of the prompt (its
    "Limit" in section 5). ``t = max(flops / (n C e_c), N b / (n B e_bw)) + 2 L * 2 (n-1)/n * P d * 2 bytes / link``:
    the roofline (Williams, Waterman and Patterson 2009), then two all-reduces of 16-bit activations per layer under
    tensor parallelism (Megatron-LM, arXiv:1909.08053, section 3), each sending 2(n-1)/n of the data (ring all-reduce,
    Patarasuk and Yuan 2009). Llama-2-7B, 2,048 tokens, one A100 at 312 TFLOP/s: 92 ms at full utilisation, 133 ms
    measured by TensorRT-LLM (performance.md).
    """
    flops = 2.0 * params_b * _GIGA * prompt_tokens + 2.0 * layers * hidden * power(prompt_tokens, 2)
    compute = flops / (n_gpus * tflops * _TERA * compute_eff)
    memory = params_b * _GIGA * bytes_per_param / (n_gpus * bandwidth_tb_s * _TERA * bandwidth_eff)
    exchanges = (n_gpus > 1) & (link_gb_s > 0)
    sent = 2 * layers * 2.0 * (n_gpus - 1) / n_gpus * prompt_tokens * hidden * ACTIVATION_BYTES
    exchange = where(exchanges, sent / (where(exchanges, link_gb_s, 1.0) * _GIGA), 0.0)
    return maximum(compute, memory) + exchange
