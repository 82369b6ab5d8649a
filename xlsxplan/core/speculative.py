"""Speculative decoding and multi-token prediction: more than one token per step of the target model.

A small draft (a separate model, an EAGLE head, or a model's own multi-token-prediction module) proposes ``gamma``
tokens; the target checks them all in one forward pass and keeps the longest accepted prefix plus one token of its
own. Decode is bound by reading the weights and the KV cache, so checking ``gamma + 1`` tokens costs about one step:
each step yields the expected accepted length instead of one token, at the price of the draft's steps and memory.

* Tokens per target step, with every drafted token accepted with probability ``alpha`` independently (Leviathan,
  Kalman and Matias 2023, Eq. 1): ``(1 - alpha^(gamma+1)) / (1 - alpha)``; from measured per-position acceptance
  rates (the share of steps whose i-th draft is accepted, vLLM's "Per-position acceptance rate"): ``1 + sum p_i``,
  vLLM's "Mean acceptance length".
* Walltime improvement at batch one with a draft step costing ``c`` target steps (Theorem 3.8):
  ``(1 - alpha^(gamma+1)) / ((1 - alpha)(gamma c + 1))``.
* At a batch, the target's verify step computes ``gamma + 1`` tokens per sequence, so a step that was bound by
  memory may become bound by arithmetic: SPEC_STEP_S takes the roofline of the verify step plus the draft's steps,
  and the gain shrinks with the batch (EAGLE-3 reports up to 6.5x at batch 1 and 1.38x at batch 64 in SGLang).
* The draft's weights and cache take memory the batch would otherwise use (SPEC_DRAFT_GB, SPEC_MAX_BATCH).

References
----------
.. [1] Leviathan, Kalman and Matias 2023, "Fast Inference from Transformers via Speculative Decoding", ICML 2023,
   arXiv:2211.17192, section 3.1 Eq. 1 (expected tokens per run of the algorithm), Theorem 3.8 (walltime
   improvement ``(1 - alpha^(gamma+1)) / ((1 - alpha)(gamma c + 1))``), section 3.4 (the weights and KV cache are read
   once per run).
.. [2] DeepSeek-AI 2024, "DeepSeek-V3 Technical Report", arXiv:2412.19437, section 5.4.3: one MTP module, the second
   token accepted 85-90% of the time, 1.8x tokens per second.
.. [3] Li et al. 2025, "EAGLE-3: Scaling up Inference Acceleration of Large Language Models via Training-Time Test",
   arXiv:2503.01840, abstract: up to 6.5x; 1.38x throughput at batch 64 in SGLang.
.. [4] vLLM, vllm/v1/spec_decode/metrics.py: mean acceptance length ``1 + num_accepted_tokens / num_drafts``,
   per-position acceptance rate ``num_accepted_tokens_per_pos[i] / num_drafts``.
"""

from __future__ import annotations

from ..domains import (
    BandwidthTBs,
    Batch,
    Count,
    CountOrZero,
    Fraction,
    FractionOrZero,
    FractionSample,
    GPUs,
    KvBytesOrZero,
    MemoryGB,
    Multiplier,
    ParamsB,
    ParamsBOrZero,
    Seconds,
    TFLOPs,
    Tokens,
    TokensOrZero,
    checked,
)
from ..errors import OutOfRangeError
from ..infra.elementwise import is_array, power, refused, where
from ..precision import BytesPerValue
from . import equations

__all__ = [
    "expected_tokens",
    "spec_accept_length",
    "spec_draft_gb",
    "spec_max_batch",
    "spec_speedup",
    "spec_step_seconds",
    "spec_tokens_per_s",
    "spec_tokens_per_step",
]


def expected_tokens(acceptance: float, draft_tokens: int) -> float:
    """Leviathan et al.'s Eq. 1, ``(1 - a^(g+1)) / (1 - a)``, and ``g + 1`` at a = 1 [tokens]. Unchecked."""
    if not is_array(acceptance) and not is_array(draft_tokens):
        if acceptance >= 1:
            return float(draft_tokens + 1)
        return (1.0 - acceptance ** (draft_tokens + 1)) / (1.0 - acceptance)
    every = acceptance >= 1  # over arrays: a divisor of 1 keeps these elements harmless
    return where(
        every, draft_tokens + 1.0, (1.0 - power(acceptance, draft_tokens + 1)) / where(every, 1.0, 1.0 - acceptance)
    )


@checked(arrays=True)
def spec_tokens_per_step(acceptance: FractionOrZero, draft_tokens: Count) -> float:
    """Tokens one target step yields under speculative decoding, from a draft's acceptance rate.

    Parameters
    ----------
    acceptance : float
        Chance that a drafted token is accepted (alpha), each independently: 0.85-0.90 for DeepSeek-V3's MTP
        module; 0.5-0.9 for a draft model far smaller than the target [fraction].
    draft_tokens : int
        Tokens the draft proposes per step (gamma; vLLM's num_speculative_tokens) [count].

    Returns
    -------
    float
        Expected tokens per target step, 1 to draft_tokens + 1 [tokens].

    Notes
    -----
    ``(1 - alpha^(gamma+1)) / (1 - alpha)`` (Leviathan, Kalman and Matias 2023, arXiv:2211.17192, Eq. 1): the
    accepted prefix of the drafts plus the target's own token. One MTP module (gamma 1) accepted 85% of the time
    gives 1.85 tokens a step, DeepSeek-V3's measured 1.8x tokens per second (arXiv:2412.19437, section 5.4.3);
    alpha 0.8 with 4 drafts gives 3.36.
    """
    return expected_tokens(acceptance, draft_tokens)


@checked
def spec_accept_length(acceptance_rates: FractionSample) -> float:
    """Tokens one target step yields, from measured per-position acceptance rates.

    Parameters
    ----------
    acceptance_rates : range
        Share of steps whose 1st, 2nd, ... drafted token was accepted, in order (vLLM's "Per-position acceptance
        rate"); each at most the one before it [fractions].

    Returns
    -------
    float
        Expected tokens per target step: vLLM's "Mean acceptance length" [tokens].

    Notes
    -----
    ``1 + sum p_i`` (vLLM vllm/v1/spec_decode/metrics.py: mean acceptance length ``1 + accepted / drafts``,
    per-position rate ``accepted at position i / drafts``). With independent acceptance ``p_i = alpha^i`` and it is
    SPEC_TOKENS_PER_STEP (Leviathan et al. 2023, Eq. 1): 0.8, 0.64, 0.512, 0.4096 give 3.3616.
    """
    for i in range(1, len(acceptance_rates)):
        if acceptance_rates[i] > acceptance_rates[i - 1]:
            raise OutOfRangeError(
                f"acceptance_rates must not rise: position {i + 1} ({acceptance_rates[i]:g}) is above position {i} "
                f"({acceptance_rates[i - 1]:g}), but a draft is accepted only after every one before it",
                "acceptance_rates",
            )
    return 1.0 + sum(acceptance_rates)


@checked(arrays=True)
def spec_speedup(acceptance: FractionOrZero, draft_tokens: Count, cost_ratio: Multiplier) -> float:
    """Decode speed-up at batch one from speculative decoding: tokens per step over the step's cost with the draft.

    Parameters
    ----------
    acceptance : float
        Chance that a drafted token is accepted (alpha) [fraction].
    draft_tokens : int
        Tokens drafted per step (gamma) [count].
    cost_ratio : float
        Time of one draft step over one target step (c): about the draft's bytes over the target's while decode is
        bound by memory; under 0.05 in the paper's runs [ratio].

    Returns
    -------
    float
        Walltime improvement factor over plain decoding; below 1 when the draft costs more than it saves [ratio].

    Notes
    -----
    ``(1 - alpha^(gamma+1)) / ((1 - alpha)(gamma c + 1))`` (Leviathan, Kalman and Matias 2023, arXiv:2211.17192,
    Theorem 3.8). alpha 0.8, gamma 4, c 0.0286 (a 1B BF16 draft for a 70B FP8 target): 3.02x. At a batch the verify
    step computes gamma + 1 tokens per sequence and may turn compute-bound: use SPEC_STEP_S there.
    """
    return expected_tokens(acceptance, draft_tokens) / (draft_tokens * cost_ratio + 1.0)


@checked(arrays=True)
def spec_step_seconds(
    params_b: ParamsB,
    bytes_per_param: BytesPerValue,
    batch: Batch,
    kv_bytes_per_token: KvBytesOrZero,
    context_tokens: TokensOrZero,
    n_gpus: GPUs,
    bandwidth_tb_s: BandwidthTBs,
    tflops: TFLOPs,
    draft_tokens: Count,
    draft_params_b: ParamsB,
    draft_bytes_per_param: BytesPerValue = 2,
    bandwidth_eff: Fraction = 1,
    compute_eff: Fraction = 0.5,
    active_params_b: ParamsBOrZero = 0,
) -> float:
    """Time of one speculative-decoding step: the draft's steps, then the target verifying every draft at once.

    Parameters
    ----------
    params_b : float
        Target parameters read per step, in billions (MOE_PARAMS_READ_B for a mixture of experts) [B params].
    bytes_per_param : float
        Bytes per target weight, or a precision name [bytes].
    batch : int
        Sequences decoded together [sequences].
    kv_bytes_per_token : float
        Target KV cache per token; 0 counts weights only [bytes].
    context_tokens : float
        Tokens of KV cache each sequence reads per step [tokens].
    n_gpus : int
        Accelerators sharing the target and the draft [count].
    bandwidth_tb_s : float
        Memory bandwidth of one accelerator [TB/s].
    tflops : float
        Dense throughput of one accelerator at the serving precision [TFLOP/s].
    draft_tokens : int
        Tokens drafted per step (gamma) [count].
    draft_params_b : float
        Draft parameters read per draft step, in billions: a draft model's, or an MTP module's active parameters
        [B params].
    draft_bytes_per_param : float, default 2
        Bytes per draft weight, or a precision name [bytes].
    bandwidth_eff : float, default 1
        Share of peak bandwidth reached [fraction].
    compute_eff : float, default 0.5
        Share of peak compute reached [fraction].
    active_params_b : float, default 0
        Target parameters each token computes with, when fewer than those read (a mixture of experts); 0: params_b
        [B params].

    Returns
    -------
    float
        Step time; SPEC_TOKENS_PER_STEP over it is each sequence's tokens per second [s].

    Notes
    -----
    ``gamma * roofline(N_d b_d, 2 N_d batch) + roofline(N b + batch kv ctx, 2 N_active batch (gamma + 1))``: the
    roofline of DECODE_STEP_S for each of the draft's gamma steps and for the target's one verify pass over gamma + 1
    tokens per sequence (Leviathan et al. 2023, arXiv:2211.17192, section 3.4: the target's weights and cache are read
    once per step). The draft's own KV cache reads are left out (one small layer for an MTP head). A 70B FP8 target
    on two H100s with a 1B BF16 draft, gamma 4, batch 1: 10.45 + 4 x 0.30 = 11.64 ms.
    """
    if refused(active_params_b > params_b):
        raise OutOfRangeError("active_params_b cannot exceed params_b (the parameters read)", "active_params_b")
    computed = where(active_params_b == 0, params_b, active_params_b)  # 0: every parameter computed
    draft = equations.roofline_step_s(
        draft_params_b,
        draft_bytes_per_param,
        0.0,
        2.0 * draft_params_b * equations.GIGA * batch,
        n_gpus,
        bandwidth_tb_s,
        tflops,
        bandwidth_eff,
        compute_eff,
    )
    verify = equations.roofline_step_s(
        params_b,
        bytes_per_param,
        batch * kv_bytes_per_token * context_tokens,
        2.0 * computed * equations.GIGA * batch * (draft_tokens + 1),
        n_gpus,
        bandwidth_tb_s,
        tflops,
        bandwidth_eff,
        compute_eff,
    )
    return draft_tokens * draft + verify


@checked(arrays=True)
def spec_tokens_per_s(tokens_per_step: Tokens, step_seconds: Seconds, batch: Batch = 1) -> float:
    """Output tokens per second under speculative decoding: tokens per step over the step's time, times the batch.

    Parameters
    ----------
    tokens_per_step : float
        Expected tokens per target step (SPEC_TOKENS_PER_STEP or SPEC_ACCEPT_LENGTH) [tokens].
    step_seconds : float
        Time of one speculative step (SPEC_STEP_S) [s].
    batch : int, default 1
        Sequences decoded together; 1 gives one user's speed [sequences].

    Returns
    -------
    float
        Output tokens per second across the batch [tokens/s].

    Notes
    -----
    ``batch * tokens_per_step / step_seconds``, for COST_PER_M_TOKENS and REPLICAS. The 70B example: 3.3616 /
    11.64 ms = 288.7 tokens/s against 95.7 without a draft; at $2.50 per GPU-hour on two GPUs, $4.81 per million
    tokens against $14.51.
    """
    return batch * tokens_per_step / step_seconds


@checked(arrays=True)
def spec_draft_gb(
    draft_params_b: ParamsBOrZero,
    draft_bytes_per_param: BytesPerValue = 2,
    draft_kv_bytes_per_token: KvBytesOrZero = 0,
    context_tokens: TokensOrZero = 0,
    sequences: Batch = 1,
) -> float:
    """Memory a speculative draft takes beside the target: its weights and its own KV cache.

    Parameters
    ----------
    draft_params_b : float
        Draft parameters held, in billions; an MTP module's whole layer (DeepSeek-V3: 14B with its projections) [B
        params].
    draft_bytes_per_param : float, default 2
        Bytes per draft weight, or a precision name [bytes].
    draft_kv_bytes_per_token : float, default 0
        KV cache per token of the draft (an MTP module or EAGLE head: one layer's) [bytes].
    context_tokens : float, default 0
        Tokens each sequence holds [tokens].
    sequences : int, default 1
        Sequences held at once [count].

    Returns
    -------
    float
        Draft memory [GB].

    Notes
    -----
    ``N_d b_d + sequences * kv_d * context / 1e9``. DeepSeek-V3's MTP module (the 14B that takes the 671B model to
    685B on Hugging Face, arXiv:2412.19437) in FP8: 14 GB, one more latent-attention layer of KV (1,152 bytes a
    token in BF16).
    """
    return draft_params_b * draft_bytes_per_param + sequences * draft_kv_bytes_per_token * context_tokens / 1e9


@checked(arrays=True)
def spec_max_batch(
    params_b: ParamsB,
    bytes_per_param: BytesPerValue,
    kv_bytes_per_token: KvBytesOrZero,
    context_tokens: Tokens,
    n_gpus: GPUs,
    memory_gb: MemoryGB,
    draft_params_b: ParamsBOrZero,
    draft_bytes_per_param: BytesPerValue = 2,
    draft_kv_bytes_per_token: KvBytesOrZero = 0,
    draft_tokens: CountOrZero = 0,
    usable_fraction: Fraction = 0.9,
) -> int:
    """Sequences that fit beside the target's and the draft's weights, each holding both caches: the batch.

    Parameters
    ----------
    params_b : float
        Target parameters held, in billions [B params].
    bytes_per_param : float
        Bytes per target weight, or a precision name [bytes].
    kv_bytes_per_token : float
        Target KV cache per token [bytes].
    context_tokens : float
        Tokens each sequence holds at its longest [tokens].
    n_gpus : int
        Accelerators holding the model [count].
    memory_gb : float
        Memory of one accelerator [GB].
    draft_params_b : float
        Draft parameters held, in billions; 0 without a draft [B params].
    draft_bytes_per_param : float, default 2
        Bytes per draft weight, or a precision name [bytes].
    draft_kv_bytes_per_token : float, default 0
        Draft KV cache per token [bytes].
    draft_tokens : int, default 0
        Tokens drafted per step; each sequence caches that many more while they are checked [count].
    usable_fraction : float, default 0.9
        Share of memory the serving engine can use [fraction].

    Returns
    -------
    int
        Whole sequences that fit; 0 when the weights do not [sequences].

    Notes
    -----
    ``floor((n M f - N b - N_d b_d) / ((kv + kv_d)(ctx + gamma)))``: MAX_BATCH ("Back-of-the-Envelope Estimation for
    LLM Systems", section 3) with the draft's weights and cache added. A draft is memory the batch does not get:
    with little memory to spare it can cost more throughput than it gains.
    """
    free = equations.free_bytes(params_b, bytes_per_param, n_gpus, memory_gb, usable_fraction)
    free = free - draft_params_b * equations.GIGA * draft_bytes_per_param
    per_sequence = (kv_bytes_per_token + draft_kv_bytes_per_token) * (context_tokens + draft_tokens)
    if not is_array(free) and free <= 0:
        return 0
    if refused((free > 0) & (per_sequence <= 0)):
        raise OutOfRangeError(
            "kv_bytes_per_token or draft_kv_bytes_per_token must be above 0: the batch that fits is set by the caches",
            "kv_bytes_per_token",
        )
    if not is_array(free) and not is_array(per_sequence):
        return equations.whole_floor(free / per_sequence)
    fits = equations.whole_floor(free / where(per_sequence <= 0, 1.0, per_sequence))  # refused ones kept harmless
    return where(free <= 0, 0, fits)
