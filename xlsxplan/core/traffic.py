"""Plans that survive real traffic: long-tail prompts, reasoning tokens, prefix caching, latency targets, the
prefill/decode mix, spares, and input and output priced separately.

Section 7 of "Back-of-the-Envelope Estimation for LLM Systems" lists where a back-of-the-envelope serving plan goes
wrong. Each function here turns one of those warnings into an input with a neutral default and a visible effect,
built on the document's own math in :mod:`xlsxplan.core.serving` (batch, decode speed, prefill time, replicas), which
this module calls rather than restates. Units follow :mod:`xlsxplan.core.serving`.

The serving model has three parts, each a documented simplification:

* **Memory** holds the weights and every sequence's KV cache. Sizing every slot at a tail prompt (Back-of-the-Envelope)
  is safe for any engine; an engine that pages its KV cache (vLLM) needs only the batch's *total* to fit, which
  :func:`paged_batch` sizes from the spread of lengths.
* **Decode** is bound by memory bandwidth and **prefill** by compute (Back-of-the-Envelope, sections 4 and 5). A replica
  that lets them take turns spends, per request, the prefill time plus its share of the decode steps
  (:func:`replica_rps`); one that chunks prefills into decode steps overlaps the two up to the roofline
  ``max(compute, memory)`` (:func:`replica_rps_chunked`); separate prefill and decode GPUs split the request stream
  between two pools (:func:`prefill_replicas`, :func:`decode_replicas`).
* **Cost** is the GPU-hours billed around the clock, spares included, apportioned to input and output tokens by
  the share of time each phase takes (:func:`cost_per_m_input`, :func:`cost_per_m_output`).

References
----------
.. [1] "Back-of-the-Envelope Estimation for LLM Systems", sections 1-7.
.. [2] Agrawal et al. 2024, "Taming Throughput-Latency Tradeoff in LLM Inference with Sarathi-Serve", OSDI 2024,
   arXiv:2403.02310 (chunked prefills, stall-free batching, the token budget per iteration).
.. [3] Zhong et al. 2024, "DistServe: Disaggregating Prefill and Decoding for Goodput-optimized Large Language
   Model Serving", OSDI 2024, arXiv:2401.09670.
.. [4] Patel et al. 2024, "Splitwise: Efficient Generative LLM Inference Using Phase Splitting", ISCA 2024,
   arXiv:2311.18677.
.. [5] Kwon et al. 2023, "Efficient Memory Management for Large Language Model Serving with PagedAttention",
   SOSP 2023, arXiv:2309.06180.
.. [6] Xiang et al. 2025, "ServeGen: Workload Characterization and Generation of Large Language Model Serving in
   Production", arXiv:2505.09999 (input lengths: a mixture of log-normal and Pareto; output lengths exponential).
.. [7] Fenton 1960, "The Sum of Log-Normal Probability Distributions in Scatter Transmission Systems", IRE
   Transactions on Communications Systems 8(1), 57-67.
.. [8] vLLM documentation, "Automatic Prefix Caching", https://docs.vllm.ai/en/latest/features/automatic_prefix_caching/
.. [9] OpenAI, "Reasoning models" guide (reasoning tokens occupy the context and are billed as output tokens),
   https://platform.openai.com/docs/guides/reasoning; OpenAI API pricing, https://openai.com/api/pricing/ and
   Anthropic pricing, https://www.anthropic.com/pricing (input, cached input and output priced per million tokens).
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

from ..domains import (
    BandwidthTBs,
    BandwidthTBsOrZero,
    Count,
    Fraction,
    FractionOrZero,
    FreeGB,
    GPUs,
    KvBytes,
    KvBytesOrZero,
    LinkGBs,
    ParamsB,
    PerDay,
    Price,
    RequestsPerS,
    Seconds,
    Spare,
    TailProbability,
    TFLOPs,
    Tokens,
    TokenSample,
    TokensOrZero,
    TokensPerS,
    checked,
    format_number,
)
from ..errors import OutOfRangeError
from ..infra.elementwise import apply, count_above, is_array, maximum, minimum, negated, power, refused, sqrt, where
from ..precision import BytesPerValue, BytesPerValueOrZero
from . import equations, serving
from .equations import whole_floor

__all__ = [
    "tail_share",
    "length_sd",
    "tail_share_data",
    "paged_batch",
    "max_context_tokens",
    "context_tokens",
    "time_to_answer_s",
    "prefill_tokens",
    "batch_for_latency",
    "batch_for_ttft",
    "prefill_share",
    "replica_rps",
    "replica_rps_chunked",
    "prefill_replicas",
    "decode_replicas",
    "kv_transfer_s",
    "fleet_replicas",
    "fleet_utilisation",
    "peak_coverage",
    "cost_per_m_input",
    "cost_per_m_output",
    "lognormal_from_mean_p95",
    "LOGNORMAL_MAX_P95_OVER_MEAN",
]

_GIGA, _TERA = 1e9, 1e12
_MAX_BATCH = 1_000_000_000  # the largest batch the functions taking one accept (domains.Batch)
_HOURS_PER_DAY = 24
_NORMAL = NormalDist()


def _upper_tail(z: float) -> float:
    """``P(Z > z)`` for a standard normal, as ``erfc(z / sqrt 2) / 2``: exact to the last digits in the far tail,
    where ``1 - cdf`` (and ``NormalDist.cdf``, which is ``(1 + erf) / 2``) loses them to cancellation."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


_Z95 = _NORMAL.inv_cdf(0.95)

LOGNORMAL_MAX_P95_OVER_MEAN = math.exp(_Z95**2 / 2)
"""The largest ratio of 95th percentile to mean that any log-normal distribution has: about 3.87."""


# --- Long-tail prompts -----------------------------------------------------------------------------------------


def lognormal_from_mean_p95(mean_tokens: float, p95_tokens: float) -> tuple[float, float]:
    """The log-normal ``(mu, sigma)`` whose mean and 95th percentile are the given ones.

    ``mean = exp(mu + sigma^2 / 2)`` and ``p95 = exp(mu + z sigma)`` with ``z = 1.645`` give
    ``sigma^2 - 2 z sigma + 2 ln(p95 / mean) = 0``; the smaller root is the lighter tail that matches both. A real
    root needs ``p95 / mean <= exp(z^2 / 2)``, about 3.87: a longer p95 is a tail heavier than any log-normal.
    """
    ratio = p95_tokens / mean_tokens
    if refused(ratio < 1):
        raise OutOfRangeError(
            f"p95_tokens must be at least mean_tokens ({format_number(mean_tokens)}) for a log-normal fit, "
            f"got {format_number(p95_tokens)}",
            "p95_tokens",
        )
    log_ratio = apply(math.log, ratio)
    if refused(2 * log_ratio > _Z95**2 * (1 + 1e-12)):
        raise OutOfRangeError(
            f"p95_tokens ({format_number(p95_tokens)}) is {ratio:.3g} times mean_tokens ({format_number(mean_tokens)})"
            f"; a log-normal's 95th percentile is at most {LOGNORMAL_MAX_P95_OVER_MEAN:.3g} times its mean, so this "
            "tail is heavier: use measured lengths instead (TAIL_SHARE_DATA, STDEV.P)",
            "p95_tokens",
        )
    sigma = _Z95 - sqrt(maximum(_Z95**2 - 2 * log_ratio, 0.0))
    return apply(math.log, mean_tokens) - power(sigma, 2) / 2, sigma


@checked(arrays=True)
def tail_share(cap_tokens: Tokens, mean_tokens: Tokens, p95_tokens: Tokens) -> float:
    """Share of requests longer than a cap, with lengths log-normal through the given mean and 95th percentile.

    Parameters
    ----------
    cap_tokens : float
        Longest prompt accepted; longer requests are rejected [tokens].
    mean_tokens : float
        Mean prompt length [tokens].
    p95_tokens : float
        95th-percentile prompt length, at least the mean and at most 3.87 times it [tokens].

    Returns
    -------
    float
        Share of requests the cap rejects [fraction].

    Notes
    -----
    ``1 - Phi((ln cap - mu) / sigma)`` for the log-normal with ``exp(mu + sigma^2/2) = mean`` and
    ``exp(mu + 1.645 sigma) = p95`` ("Back-of-the-Envelope Estimation for LLM Systems", section 7: size by the tail, cap
    the maximum). Production input lengths fit a mixture of log-normal and Pareto distributions (ServeGen,
    arXiv:2505.09999), so the log-normal is the light-tailed reading; a p95 above 3.87 times the mean fits no log-normal
    and is refused (#NUM!): give measured lengths to TAIL_SHARE_DATA. Mean 2,000 and p95 6,000 put 0.32% of prompts
    above 16,384 tokens.
    """
    mu, sigma = lognormal_from_mean_p95(mean_tokens, p95_tokens)
    if not is_array(sigma) and sigma == 0:
        return 1.0 if cap_tokens < mean_tokens else 0.0
    point = sigma == 0  # over arrays: these elements' lengths are all the mean (a divisor of 1 keeps the rest harmless)
    share = apply(_upper_tail, (apply(math.log, cap_tokens) - mu) / where(point, 1.0, sigma))
    return where(point, where(cap_tokens < mean_tokens, 1.0, 0.0), share)


@checked(arrays=True)
def length_sd(mean_tokens: Tokens, p95_tokens: Tokens) -> float:
    """Standard deviation of lengths that are log-normal through the given mean and 95th percentile.

    Parameters
    ----------
    mean_tokens : float
        Mean length [tokens].
    p95_tokens : float
        95th-percentile length, at least the mean and at most 3.87 times it [tokens].

    Returns
    -------
    float
        Standard deviation of the length, for PAGED_BATCH [tokens].

    Notes
    -----
    ``mean * sqrt(exp(sigma^2) - 1)`` for the log-normal of TAIL_SHARE (ServeGen, arXiv:2505.09999: production
    input lengths fit a mixture of log-normal and Pareto distributions). Refused (#NUM!) where no log-normal
    fits; then take the standard deviation of measured lengths, ``STDEV.P(range)``. Mean 2,000 and p95 6,000:
    2,352 tokens.
    """
    _, sigma = lognormal_from_mean_p95(mean_tokens, p95_tokens)
    return mean_tokens * sqrt(apply(math.expm1, power(sigma, 2)))


@checked(arrays=True)
def tail_share_data(lengths: TokenSample, cap_tokens: Tokens) -> float:
    """Share of measured requests longer than a cap: give the lengths as a column.

    Parameters
    ----------
    lengths : tuple of float
        Measured prompt lengths, one per cell, as a range; empty cells are skipped [tokens].
    cap_tokens : float
        Longest prompt accepted; longer requests are rejected [tokens].

    Returns
    -------
    float
        Share of the measured requests the cap rejects [fraction].

    Notes
    -----
    ``count(length > cap) / count(length)``: the empirical tail, with no distribution assumed ("Back-of-the-Envelope
    Estimation for LLM Systems", section 7). Use it when the tail is heavier than a log-normal, as production traces
    often are (ServeGen, arXiv:2505.09999). Equal to ``COUNTIF(range, ">"&cap) / COUNT(range)``.
    """
    return count_above(lengths, cap_tokens) / len(lengths)


@checked(arrays=True)
def paged_batch(
    free_gb: FreeGB,
    kv_bytes_per_token: KvBytes,
    mean_context_tokens: Tokens,
    sd_context_tokens: TokensOrZero,
    overflow: TailProbability = 0.05,
) -> int:
    """Sequences whose total KV cache fits in free memory at all but a small chance, for an engine that pages it.

    Parameters
    ----------
    free_gb : float
        Memory left for the KV cache once the weights are loaded, from FREE_GB [GB].
    kv_bytes_per_token : float
        KV cache per token [bytes].
    mean_context_tokens : float
        Mean tokens a sequence holds: prompt plus generated [tokens].
    sd_context_tokens : float
        Standard deviation of those tokens across requests; 0 makes every request the mean [tokens].
    overflow : float, default 0.05
        Accepted chance that the batch's cache outgrows memory at a given moment, when the engine preempts a
        sequence [fraction].

    Returns
    -------
    int
        Largest batch that fits with that confidence; 0 when not even one sequence does [sequences].

    Notes
    -----
    A paged engine (vLLM) allocates the cache in blocks as sequences grow and preempts a sequence when blocks run
    out (Kwon et al. 2023, arXiv:2309.06180, sections 4.2 and 4.5), so what must fit is the sum of the batch's
    contexts, not every slot at a tail length (the worst case of "Back-of-the-Envelope Estimation for LLM Systems",
    section 3). With independent requests the sum of ``B`` has mean ``B m`` and variance ``B s^2``; taking it as
    log-normal (Fenton 1960) gives ``q(B) = B m exp(z t - t^2/2)``, ``t^2 = ln(1 + s^2 / (B m^2))``,
    ``z = Phi^-1(1 - overflow)``, and the answer is the largest ``B`` with
    ``q(B) <= free_gb * 1e9 / kv_bytes_per_token``, never above the batch of mean-length sequences. With
    ``sd_context_tokens = 0`` it equals MAX_BATCH at the mean.
    """
    capacity = free_gb * _GIGA / kv_bytes_per_token  # tokens of KV cache that fit
    if is_array(capacity):
        return _paged_batch_array(capacity, mean_context_tokens, sd_context_tokens, overflow)
    if capacity <= 0:
        return 0
    z = _NORMAL.inv_cdf(1 - overflow)
    cv2 = (sd_context_tokens / mean_context_tokens) ** 2

    def quantile(batch: int) -> float:
        t = math.sqrt(math.log1p(cv2 / batch))
        return batch * mean_context_tokens * math.exp(z * t - t * t / 2)

    low, high = 0, whole_floor(capacity / mean_context_tokens)
    while low < high:  # the largest batch whose quantile fits; quantile(B) grows with B
        mid = (low + high + 1) // 2
        if quantile(mid) <= capacity * (1 + 1e-12):
            low = mid
        else:
            high = mid - 1
    return low


def _paged_batch_array(capacity: Any, mean_context_tokens: Any, sd_context_tokens: Any, overflow: Any) -> Any:
    """:func:`paged_batch` over numpy arrays: the same bisection for every element at once, so each element takes
    the steps (and reaches the answer) of its own call.

    Each step's quantile is computed with numpy's exp and log1p, which may differ from the math module's in the last
    bits; a comparison that close to its limit (within 1e-9 of it, a million times any such difference) is decided
    again with the math module's own functions, so every decision is the one-call path's.
    """
    import numpy as np

    fits = capacity > 0
    z = apply(_NORMAL.inv_cdf, 1 - overflow)
    cv2 = power(sd_context_tokens / mean_context_tokens, 2)
    limit = capacity * (1 + 1e-12)
    low = np.zeros(np.broadcast(capacity, mean_context_tokens, sd_context_tokens, overflow).shape, dtype=np.int64)
    high = where(fits, whole_floor(where(fits, capacity, 0.0) / mean_context_tokens), 0)
    while True:
        searching = low < high
        if not searching.any():
            return low
        mid = (low + high + 1) // 2
        batch = where(searching, mid, 1)  # a stand-in of 1 where the search is over
        t = np.sqrt(np.log1p(cv2 / batch))
        growth = np.exp(z * t - t * t / 2)
        refused(searching & ~(growth < 1e300))  # math.exp raises where this overflows: the one-call path says so
        quantile = batch * mean_context_tokens * growth
        ok = quantile <= limit
        close = np.abs(quantile - limit) <= 1e-9 * np.abs(limit)
        if close.any():
            b, m, c, zz, lim = (
                np.broadcast_to(x, close.shape)[close] for x in (batch, mean_context_tokens, cv2, z, limit)
            )
            t_math = sqrt(apply(math.log1p, c / b))
            ok[close] = b * m * apply(math.exp, zz * t_math - t_math * t_math / 2) <= lim
        low = where(searching & ok, mid, low)
        high = where(searching & negated(ok), mid - 1, high)


@checked(arrays=True)
def max_context_tokens(free_gb: FreeGB, kv_bytes_per_token: KvBytes) -> int:
    """Longest single sequence whose KV cache fits beside the weights: the ceiling on a request cap.

    Parameters
    ----------
    free_gb : float
        Memory left for the KV cache once the weights are loaded, from FREE_GB [GB].
    kv_bytes_per_token : float
        KV cache per token [bytes].

    Returns
    -------
    int
        Tokens of context one sequence can hold alone; 0 when the weights do not fit [tokens].

    Notes
    -----
    ``floor(free_gb * 1e9 / kv_bytes_per_token)`` ("Back-of-the-Envelope Estimation for LLM Systems", sections 1 and 3:
    check the largest request you accept). Qwen2.5-72B in FP8 on two H100s leaves 71.3 GB: 217,590 tokens. A cap on
    prompt plus output above this cannot be served at all.
    """
    if not is_array(free_gb):
        if free_gb <= 0:
            return 0
        return whole_floor(free_gb * _GIGA / kv_bytes_per_token)
    return where(free_gb <= 0, 0, whole_floor(free_gb * _GIGA / kv_bytes_per_token))


# --- Output length and reasoning tokens ------------------------------------------------------------------------


@checked(arrays=True)
def context_tokens(prompt_tokens: Tokens, output_tokens: Tokens, reasoning_tokens: TokensOrZero = 0) -> float:
    """Tokens a sequence holds in its KV cache by its last step: prompt, hidden reasoning and visible answer.

    Parameters
    ----------
    prompt_tokens : float
        Tokens in the prompt [tokens].
    output_tokens : float
        Visible answer tokens [tokens].
    reasoning_tokens : float, default 0
        Hidden reasoning tokens written before the answer [tokens].

    Returns
    -------
    float
        Context per sequence, for MAX_BATCH and DECODE_TOKS [tokens].

    Notes
    -----
    ``prompt + reasoning + output``. Reasoning tokens are generated one by one like the answer, occupy the context
    and are billed as output tokens (OpenAI, "Reasoning models" guide); "Back-of-the-Envelope Estimation for LLM
    Systems", section 7: they drive decode cost directly. 2,000 + 300 is Back-of-the-Envelope's 2,300; 1,000 reasoning
    tokens make it 3,300.
    """
    return prompt_tokens + reasoning_tokens + output_tokens


@checked(arrays=True)
def time_to_answer_s(prefill_s: Seconds, reasoning_tokens: TokensOrZero, tokens_per_s_per_user: TokensPerS) -> float:
    """Time a user waits for the first visible token: prefill, then the hidden reasoning.

    Parameters
    ----------
    prefill_s : float
        Prefill time of the prompt, from PREFILL_S [s].
    reasoning_tokens : float
        Hidden reasoning tokens written before the answer [tokens].
    tokens_per_s_per_user : float
        Decode speed one sequence sees, from DECODE_TOKS [tokens/s].

    Returns
    -------
    float
        Time to the first visible token [s].

    Notes
    -----
    ``prefill_s + reasoning_tokens / tokens_per_s_per_user``: the answer starts only after the reasoning is
    written (OpenAI, "Reasoning models" guide; "Back-of-the-Envelope Estimation for LLM Systems", sections 5 and 7).
    0.29 s of prefill and 1,000 reasoning tokens at 60 tokens/s: 16.96 s.
    """
    return prefill_s + reasoning_tokens / tokens_per_s_per_user


# --- Prefix caching --------------------------------------------------------------------------------------------


@checked(arrays=True)
def prefill_tokens(prompt_tokens: Tokens, prefix_tokens: TokensOrZero = 0, hit_rate: FractionOrZero = 0) -> float:
    """Prompt tokens a request still has to prefill on average when a shared prefix is served from cache.

    Parameters
    ----------
    prompt_tokens : float
        Tokens in the prompt, prefix included [tokens].
    prefix_tokens : float, default 0
        Tokens at the start of every prompt that are the same (system prompt, tools, shared documents) [tokens].
    hit_rate : float, default 0
        Share of requests that find the prefix cached; 0 (off) until the prefix is confirmed stable [fraction].

    Returns
    -------
    float
        Tokens to prefill per request, for PREFILL_S [tokens].

    Notes
    -----
    ``prompt - hit_rate * prefix``, at least one token: a hit skips the prefix's prefill and reuses its cached
    keys and values (vLLM, "Automatic Prefix Caching"; "Back-of-the-Envelope Estimation for LLM Systems", section 7:
    count it only once the prefix is confirmed stable). Engines match whole KV blocks (16 tokens in vLLM), so a prefix
    is reused to its last full block. 2,000-token prompts sharing a 1,500-token prefix at an 80% hit rate prefill 800
    tokens.
    """
    if refused(prefix_tokens > prompt_tokens):
        raise OutOfRangeError(
            f"prefix_tokens must be at most prompt_tokens ({format_number(prompt_tokens)}), "
            f"got {format_number(prefix_tokens)}",
            "prefix_tokens",
        )
    return maximum(prompt_tokens - hit_rate * prefix_tokens, minimum(prompt_tokens, 1.0))


# --- Latency targets cap the batch -----------------------------------------------------------------------------


@checked(arrays=True)
def batch_for_latency(
    params_b: ParamsB,
    bytes_per_param: BytesPerValue,
    n_gpus: GPUs,
    bandwidth_tb_s: BandwidthTBs,
    tokens_per_s_per_user: TokensPerS,
    kv_bytes_per_token: KvBytes,
    context_tokens: Tokens,
    efficiency: Fraction = 1,
) -> int:
    """Largest batch whose decode step still gives each user a target speed; 0 when no batch can.

    Parameters
    ----------
    params_b : float
        Parameters read per step, in billions [B params].
    bytes_per_param : float
        Bytes per weight, or a precision name [bytes].
    n_gpus : int
        Accelerators sharing the model, their bandwidths adding up [count].
    bandwidth_tb_s : float
        Memory bandwidth of one accelerator [TB/s].
    tokens_per_s_per_user : float
        Target decode speed each user must see [tokens/s].
    kv_bytes_per_token : float
        KV cache per token [bytes].
    context_tokens : float
        Mean tokens of KV cache each sequence reads per step [tokens].
    efficiency : float, default 1
        Share of peak bandwidth reached [fraction].

    Returns
    -------
    int
        Batch size, at most 1,000,000,000; 0 when even one sequence alone is slower than the target [sequences].

    Notes
    -----
    The largest ``B`` with DECODE_TOKS at ``B`` at least the target:
    ``floor((n_gpus * B_w * efficiency / target - N b) / (kv * context))`` ("Back-of-the-Envelope Estimation for LLM
    Systems", sections 4 and 7: pick the batch from the latency target first). Qwen2.5-72B in FP8 on two H100s at 2,300
    tokens: 51 for 60 tokens/s; 0 for 100 tokens/s, above the 92 it reaches alone. Use the mean context: the step reads
    the batch's total.
    """
    bytes_per_step = n_gpus * bandwidth_tb_s * _TERA * efficiency / tokens_per_s_per_user
    per_sequence = kv_bytes_per_token * context_tokens
    room = (bytes_per_step - params_b * _GIGA * bytes_per_param) / per_sequence
    args = (params_b, bytes_per_param, n_gpus, bandwidth_tb_s)
    if is_array(room):  # the same, each element stepping down on its own until its speed meets the target
        batch = where(room < 1 - 1e-9, 0, minimum(whole_floor(room), _MAX_BATCH))
        while True:
            step = equations.decode_step_s(*args, batch, kv_bytes_per_token, context_tokens, efficiency)
            slow = (batch > 0) & (1.0 / step < tokens_per_s_per_user * (1 - 1e-12))
            if not slow.any():
                return batch
            batch = where(slow, batch - 1, batch)
    if room < 1 - 1e-9:
        return 0
    batch = min(whole_floor(room), _MAX_BATCH)
    while batch > 0 and (
        1.0 / equations.decode_step_s(*args, batch, kv_bytes_per_token, context_tokens, efficiency)
        < tokens_per_s_per_user * (1 - 1e-12)
    ):
        batch -= 1  # float rounding at the boundary: the published decode speed has the last word
    return batch


@checked(arrays=True)
def batch_for_ttft(
    params_b: ParamsB,
    n_gpus: GPUs,
    tflops: TFLOPs,
    tokens_per_s_per_user: TokensPerS,
    prompt_tokens: Tokens,
    ttft_s: Seconds,
    utilisation: Fraction = 0.5,
    bytes_per_param: BytesPerValueOrZero = 0,
    bandwidth_tb_s: BandwidthTBsOrZero = 0,
    kv_bytes_per_token: KvBytesOrZero = 0,
    context_tokens: TokensOrZero = 0,
    efficiency: Fraction = 1,
) -> int:
    """Largest batch that leaves each chunked-prefill step room to read a prompt within a time-to-first-token target.

    Parameters
    ----------
    params_b : float
        Parameters used per token, in billions; a mixture of experts' active ones [B params].
    n_gpus : int
        Accelerators sharing the work [count].
    tflops : float
        Dense throughput of one accelerator at the serving precision [TFLOP/s].
    tokens_per_s_per_user : float
        Decode speed each user must see: the slowest a step may run while a prompt is read [tokens/s].
    prompt_tokens : float
        Tokens to prefill for the prompt that must meet the target, e.g. the 95th percentile [tokens].
    ttft_s : float
        Time-to-first-token target [s].
    utilisation : float, default 0.5
        Share of peak compute reached [fraction].
    bytes_per_param : float, default 0
        Bytes per weight, or a precision name; with bandwidth_tb_s, steps run at their memory-bound speed [bytes].
    bandwidth_tb_s : float, default 0
        Memory bandwidth of one accelerator; 0 runs every step at the target speed [TB/s].
    kv_bytes_per_token : float, default 0
        KV cache per token, read by every decoding sequence [bytes].
    context_tokens : float, default 0
        Mean tokens of KV cache each decoding sequence reads per step [tokens].
    efficiency : float, default 1
        Share of peak bandwidth reached [fraction].

    Returns
    -------
    int
        Batch size, at most 1,000,000,000; 0 when the prompt cannot be read in time even alone [sequences].

    Notes
    -----
    With chunked prefill each step carries one token per decoding sequence plus a chunk of a prompt (Sarathi-Serve,
    arXiv:2403.02310, section 4). The compute left to prompts is ``R = C - decode tokens/s``, with
    ``C = COMPUTE_TOKS(N, n_gpus * tflops * utilisation)``, and a prompt of ``P`` tokens is read in ``P / R``, so
    the decode steps may use at most ``C - P / ttft``. Steps run at the target speed (a token budget sized to it):
    decode uses ``B * target``, so ``B <= (C - P / ttft) / target``. Given the memory figures, a step runs as fast
    as memory allows (DECODE_TOKS at ``B``, the speed a plan reports), and decode uses DECODE_TOKS_TOTAL at ``B``,
    which must also be at most ``C - P / ttft``; the batch is the largest meeting both. The first token comes at the
    end of the step that reads the prompt's last chunk, so that step must end within the target too: ``w + B s <=
    ttft`` (``w`` a step's weight read, ``s`` one sequence's cache read; without the memory figures, a step at the
    target speed, ``1 / target <= ttft``). Queueing, attention and chunk overheads are left out. Qwen2.5-72B in FP8
    on two H100s (989 TFLOP/s, 50%): C = 6,802 tokens/s; a 12,000-token prompt in 3 s leaves 2,802 for decode: 46 at
    60 tokens/s, 44 at the memory-bound speed (63.3 tokens/s each, 2,785 together, so the prompt takes 2.99 s; a step
    of 16 ms ends well within it). A mixture of experts reads more than ``params_b`` per step, which leaves more
    compute: the batch is then a safe bound.
    """
    compute_tokens_per_s = equations.compute_tokens_per_s(params_b, tflops) * n_gpus * utilisation
    room = compute_tokens_per_s - prompt_tokens / ttft_s  # decode tokens/s the target leaves
    at_target = room / tokens_per_s_per_user
    if is_array(at_target):
        return _batch_for_ttft_array(
            params_b,
            n_gpus,
            room,
            at_target,
            bytes_per_param,
            bandwidth_tb_s,
            kv_bytes_per_token,
            context_tokens,
            efficiency,
            tokens_per_s_per_user,
            ttft_s,
        )
    if at_target < 1 - 1e-9:
        return 0
    batch = min(whole_floor(at_target), _MAX_BATCH)
    if bandwidth_tb_s <= 0:  # every step at the target speed: the first token ends one, within the target
        return batch if 1.0 / tokens_per_s_per_user <= ttft_s * (1 + 1e-12) else 0
    if bytes_per_param <= 0:
        raise OutOfRangeError("bytes_per_param must be positive when bandwidth_tb_s is given", "bytes_per_param")
    args = (params_b, bytes_per_param, n_gpus, bandwidth_tb_s)
    weights_s = equations.decode_step_s(*args, 0, 0, 0, efficiency)  # a step's weight read
    per_sequence_s = equations.decode_step_s(
        0, 0, n_gpus, bandwidth_tb_s, 1, kv_bytes_per_token, context_tokens, efficiency
    )
    # B / (weights_s + B per_sequence_s) <= room  <=>  B (1 - room per_sequence_s) <= room weights_s
    if room * per_sequence_s < 1:
        batch = min(batch, whole_floor(room * weights_s / (1 - room * per_sequence_s) * (1 + 1e-12)))
    # the step that reads the prompt's last chunk ends within the target: weights_s + B per_sequence_s <= ttft_s
    if weights_s > ttft_s * (1 + 1e-12):
        return 0
    if per_sequence_s > 0:
        batch = min(batch, whole_floor((ttft_s - weights_s) / per_sequence_s * (1 + 1e-12)))
    while batch > 0 and batch / equations.decode_step_s(
        *args, batch, kv_bytes_per_token, context_tokens, efficiency
    ) > room * (1 + 1e-12):
        batch -= 1  # float rounding at the boundary: DECODE_TOKS_TOTAL has the last word
    return batch


def _batch_for_ttft_array(
    params_b: Any,
    n_gpus: Any,
    room: Any,
    at_target: Any,
    bytes_per_param: Any,
    bandwidth_tb_s: Any,
    kv_bytes_per_token: Any,
    context_tokens: Any,
    efficiency: Any,
    tokens_per_s_per_user: Any,
    ttft_s: Any,
) -> Any:
    """:func:`batch_for_ttft` over numpy arrays, from ``at_target`` on: every element as its own call gives it (the
    elements without a bandwidth keep the compute-bound batch where a step at the target speed ends within the
    first-token target; stand-ins keep the memory-bound arithmetic harmless there)."""
    some = at_target >= 1 - 1e-9
    batch = where(some, minimum(whole_floor(at_target), _MAX_BATCH), 0)
    batch = where((bandwidth_tb_s <= 0) & (1.0 / tokens_per_s_per_user > ttft_s * (1 + 1e-12)), 0, batch)
    memory = some & (bandwidth_tb_s > 0)
    if refused(memory & (bytes_per_param <= 0)):
        raise OutOfRangeError("bytes_per_param must be positive when bandwidth_tb_s is given", "bytes_per_param")
    bandwidth = where(memory, bandwidth_tb_s, 1.0)
    args = (params_b, where(memory, bytes_per_param, 1.0), n_gpus, bandwidth)
    weights_s = equations.decode_step_s(*args, 0, 0, 0, efficiency)
    per_sequence_s = equations.decode_step_s(0, 0, n_gpus, bandwidth, 1, kv_bytes_per_token, context_tokens, efficiency)
    tight = memory & (room * per_sequence_s < 1)
    bound = whole_floor(room * weights_s / where(tight, 1 - room * per_sequence_s, 1.0) * (1 + 1e-12))
    batch = where(tight, minimum(batch, bound), batch)
    # the step that reads the prompt's last chunk ends within the target (the scalar form's words)
    batch = where(memory & (weights_s > ttft_s * (1 + 1e-12)), 0, batch)
    reads = memory & (per_sequence_s > 0)
    within = whole_floor(maximum(ttft_s - weights_s, 0) / where(reads, per_sequence_s, 1.0) * (1 + 1e-12))
    batch = where(reads, minimum(batch, within), batch)
    while True:
        step = equations.decode_step_s(*args, batch, kv_bytes_per_token, context_tokens, efficiency)
        fast = memory & (batch > 0) & (batch / step > room * (1 + 1e-12))
        if not fast.any():
            return batch
        batch = where(fast, batch - 1, batch)


# --- Chunked prefill, the prefill/decode mix and disaggregated serving -----------------------------------------


@checked(arrays=True)
def prefill_share(prefill_s: Seconds, decode_tokens: Tokens, decode_tokens_per_s_total: TokensPerS) -> float:
    """Share of a replica's time spent reading prompts when prefill and decode take turns: decode throughput lost.

    Parameters
    ----------
    prefill_s : float
        Prefill time of one request, from PREFILL_S [s].
    decode_tokens : float
        Tokens generated per request: visible output plus reasoning [tokens].
    decode_tokens_per_s_total : float
        Decode throughput of the batch, from DECODE_TOKS_TOTAL [tokens/s].

    Returns
    -------
    float
        Share of time in prefill; also the share of GPUs that balances separate prefill and decode pools
        [fraction].

    Notes
    -----
    Per request the replica spends ``prefill_s`` on its prompt and ``decode_tokens / decode_tokens_per_s_total``
    on its share of the decode steps; the share is ``prefill_s / (prefill_s + decode_tokens /
    decode_tokens_per_s_total)``. Without chunking, decodes stall while a prompt is read (Sarathi-Serve,
    arXiv:2403.02310, section 3), so each user's speed falls by this share too. Disaggregated pools balance when
    the prefill pool has this share of the GPUs (DistServe, arXiv:2401.09670; Splitwise, arXiv:2311.18677).
    The plan in "Back-of-the-Envelope Estimation for LLM Systems" (0.294 s prefill, 300 tokens at 4,387 tokens/s):
    0.81. It moves with the batch (through the decode throughput) even where the fleet does not: to split the bill of
    replicas that chunk their prefills, take ``prefill_s * REPLICA_RPS_CHUNKED(...)`` instead, the prefill's share of a
    chunked replica's time per request, which is ``prompt / (prompt + output)`` (the token-FLOP split) wherever compute
    binds.
    """
    return prefill_s / (prefill_s + decode_tokens / decode_tokens_per_s_total)


@checked(arrays=True)
def replica_rps(prefill_s: Seconds, decode_tokens: Tokens, decode_tokens_per_s_total: TokensPerS) -> float:
    """Requests per second one replica serves when prefill and decode take turns.

    Parameters
    ----------
    prefill_s : float
        Prefill time of one request, from PREFILL_S [s].
    decode_tokens : float
        Tokens generated per request: visible output plus reasoning [tokens].
    decode_tokens_per_s_total : float
        Decode throughput of the batch, from DECODE_TOKS_TOTAL [tokens/s].

    Returns
    -------
    float
        Request capacity of one replica [requests/s].

    Notes
    -----
    ``1 / (prefill_s + decode_tokens / decode_tokens_per_s_total)``: the time-share of the two phases of
    "Back-of-the-Envelope Estimation for LLM Systems" (sections 4 and 5), which its throughput figure leaves out. Its
    plan: 2.76 requests/s, not the 14.6 its 4,387 tokens/s of 300-token answers suggest, because each 2,000-token prompt
    takes 0.29 s.
    """
    return 1.0 / (prefill_s + decode_tokens / decode_tokens_per_s_total)


@checked(arrays=True)
def replica_rps_chunked(
    prefill_s: Seconds, prefill_tokens: Tokens, decode_tokens: Tokens, decode_tokens_per_s_total: TokensPerS
) -> float:
    """Requests per second one replica serves when prompts are chunked into decode steps: the overlap ceiling.

    Parameters
    ----------
    prefill_s : float
        Prefill time of one request, from PREFILL_S [s].
    prefill_tokens : float
        Tokens that prefill reads, the ones PREFILL_S was given [tokens].
    decode_tokens : float
        Tokens generated per request: visible output plus reasoning [tokens].
    decode_tokens_per_s_total : float
        Decode throughput of the batch, from DECODE_TOKS_TOTAL at the latency-capped batch [tokens/s].

    Returns
    -------
    float
        Request capacity of one replica [requests/s].

    Notes
    -----
    A step's time is ``max(compute, memory)`` (Sarathi-Serve, arXiv:2403.02310, section 3); chunked prefill fills
    the compute that memory-bound decode steps leave idle (section 4). At best a request then costs the larger of
    its compute, ``prefill_s * (prefill_tokens + decode_tokens) / prefill_tokens``, and its share of the decode
    steps, ``decode_tokens / decode_tokens_per_s_total``. An upper bound: chunk overheads and attention are left
    out. The plan in "Back-of-the-Envelope Estimation for LLM Systems" at the 60-tokens/s batch of 51: 2.96 requests/s,
    against 2.55 taking turns.
    """
    compute_s = prefill_s * (prefill_tokens + decode_tokens) / prefill_tokens
    return 1.0 / maximum(compute_s, decode_tokens / decode_tokens_per_s_total)


@checked(arrays=True)
def prefill_replicas(requests_per_s: RequestsPerS, prefill_s: Seconds, spare: Spare = 0) -> int:
    """Prefill-only replicas for a request rate, when prefill and decode run on separate GPUs.

    Parameters
    ----------
    requests_per_s : float
        Requests per second to serve, e.g. from PEAK_RPS [requests/s].
    prefill_s : float
        Prefill time of one request on one replica, from PREFILL_S [s].
    spare : int, default 0
        Replicas added for failures and deployments [count].

    Returns
    -------
    int
        Whole prefill replicas [count].

    Notes
    -----
    ``ceil(requests_per_s * prefill_s) + spare``, REPLICAS with a replica reading ``1 / prefill_s`` prompts a
    second (DistServe, arXiv:2401.09670; Splitwise, arXiv:2311.18677: a prompt pool and a token pool). The peak in
    "Back-of-the-Envelope Estimation for LLM Systems", 6.94 requests/s of 0.294 s prefills: 3.
    """
    return equations.replicas_for(requests_per_s * prefill_s, 1.0, spare)


@checked(arrays=True)
def decode_replicas(
    requests_per_s: RequestsPerS, decode_tokens: Tokens, decode_tokens_per_s_total: TokensPerS, spare: Spare = 0
) -> int:
    """Decode-only replicas for a request rate, when prefill and decode run on separate GPUs.

    Parameters
    ----------
    requests_per_s : float
        Requests per second to serve, e.g. from PEAK_RPS [requests/s].
    decode_tokens : float
        Tokens generated per request: visible output plus reasoning [tokens].
    decode_tokens_per_s_total : float
        Decode throughput of one replica, from DECODE_TOKS_TOTAL at the latency-capped batch [tokens/s].
    spare : int, default 0
        Replicas added for failures and deployments [count].

    Returns
    -------
    int
        Whole decode replicas [count].

    Notes
    -----
    ``ceil(requests_per_s * decode_tokens / decode_tokens_per_s_total) + spare``, REPLICAS on generated tokens
    (DistServe, arXiv:2401.09670; Splitwise, arXiv:2311.18677). The peak in "Back-of-the-Envelope Estimation for LLM
    Systems" at 3,075 tokens/s per replica (the 60-tokens/s batch): 1. Add KV_TRANSFER_S to the time to first token.
    """
    return equations.replicas_for(requests_per_s * decode_tokens, decode_tokens_per_s_total, spare)


@checked(arrays=True)
def kv_transfer_s(kv_bytes_per_token: KvBytes, prompt_tokens: Tokens, link_gb_s: LinkGBs) -> float:
    """Time to move a prompt's KV cache from a prefill GPU to a decode GPU.

    Parameters
    ----------
    kv_bytes_per_token : float
        KV cache per token [bytes].
    prompt_tokens : float
        Tokens in the prompt whose cache moves [tokens].
    link_gb_s : float
        Bandwidth of the link between the pools: about 450 per direction for NVLink on H100, 50 for 400 Gb/s
        InfiniBand [GB/s].

    Returns
    -------
    float
        Transfer time, added to the time to first token [s].

    Notes
    -----
    ``kv_bytes_per_token * prompt_tokens / (link_gb_s * 1e9)``: the cost disaggregation pays (DistServe,
    arXiv:2401.09670, which places the two phases to keep this transfer on fast links; Splitwise,
    arXiv:2311.18677). A 2,000-token prompt on Qwen2.5-72B (655 MB) over 50 GB/s: 13 ms.
    """
    return kv_bytes_per_token * prompt_tokens / (link_gb_s * _GIGA)


# --- Spares and availability -----------------------------------------------------------------------------------


@checked(arrays=True)
def fleet_replicas(
    requests_per_s: RequestsPerS, requests_per_s_per_replica: RequestsPerS, spare: Spare = 1, min_replicas: Count = 2
) -> int:
    """Replicas for the peak plus spares for failures and deployments, and never fewer than a minimum.

    Parameters
    ----------
    requests_per_s : float
        Requests per second at peak, from PEAK_RPS [requests/s].
    requests_per_s_per_replica : float
        Request capacity of one replica, from REPLICA_RPS or REPLICA_RPS_CHUNKED [requests/s].
    spare : int, default 1
        Replicas added so one failure or deployment leaves the peak covered [count].
    min_replicas : int, default 2
        Fewest replicas to run whatever the load; "Back-of-the-Envelope Estimation for LLM Systems" says at least two
        [count].

    Returns
    -------
    int
        Whole replicas; multiply by GPUs per replica for GPUs in total [count].

    Notes
    -----
    ``max(ceil(requests_per_s / requests_per_s_per_replica) + spare, min_replicas)``, REPLICAS with
    Back-of-the-Envelope's rule (section 6: "at least two replicas, four GPUs, so that one failure or deployment doesn't
    take the service down"). Back-of-the-Envelope's peak of 6.94 requests/s at 2.96 per replica: 3 for the peak, 4 with
    a spare.
    """
    return maximum(equations.replicas_for(requests_per_s, requests_per_s_per_replica, spare), min_replicas)


@checked(arrays=True)
def fleet_utilisation(requests_per_day: PerDay, requests_per_s_per_replica: RequestsPerS, replicas: Count) -> float:
    """Average load of a fleet over the day, as a share of what its replicas could serve.

    Parameters
    ----------
    requests_per_day : float
        Requests in a day [requests/day].
    requests_per_s_per_replica : float
        Request capacity of one replica, from REPLICA_RPS or REPLICA_RPS_CHUNKED [requests/s].
    replicas : int
        Replicas running around the clock, spares included, from FLEET_REPLICAS [count].

    Returns
    -------
    float
        Average utilisation; above 1 the fleet cannot keep up even on average [fraction].

    Notes
    -----
    ``(requests_per_day / 86400) / (replicas * requests_per_s_per_replica)``: the figure "Back-of-the-Envelope
    Estimation for LLM Systems" assumes at 30% "for traffic with daily peaks" (section 6), computed from the plan
    instead. Headroom for the peak, rounding up and spares all lower it: Back-of-the-Envelope's 200,000 requests a day
    on 4 replicas of 2.96 requests/s: 19.6%.
    """
    return requests_per_day / serving.SECONDS_PER_DAY / (replicas * requests_per_s_per_replica)


@checked(arrays=True)
def peak_coverage(
    requests_per_s: RequestsPerS, requests_per_s_per_replica: RequestsPerS, replicas: Count, spare: Spare = 1
) -> float:
    """Capacity left when the spares are down, as a multiple of the peak demand; below 1 the peak is not covered.

    Parameters
    ----------
    requests_per_s : float
        Requests per second at peak, from PEAK_RPS [requests/s].
    requests_per_s_per_replica : float
        Request capacity of one replica [requests/s].
    replicas : int
        Replicas planned [count].
    spare : int, default 1
        Replicas that may be down at once for failures and deployments [count].

    Returns
    -------
    float
        Capacity without the spares over peak demand [ratio].

    Notes
    -----
    ``max(replicas - spare, 0) * requests_per_s_per_replica / requests_per_s`` ("Back-of-the-Envelope Estimation for LLM
    Systems", section 6: a failure or deployment must not take the service down). Below 1 the demand is beyond what the
    plan serves with its spares out, a Checks-sheet flag. 4 replicas of 2.96 requests/s with one spare at a 6.94 peak:
    1.28.
    """
    return maximum(replicas - spare, 0) * requests_per_s_per_replica / requests_per_s


# --- Input and output priced separately ------------------------------------------------------------------------


def _daily_cost(n_gpus: int, usd_per_gpu_hour: float) -> float:
    return n_gpus * usd_per_gpu_hour * _HOURS_PER_DAY


def _tokens_per_day(requests_per_day: float, tokens_per_request: float, name: str) -> Any:
    """Tokens billed a day, refused where the product of two legal values underflows to 0 (it would divide by 0)."""
    tokens = requests_per_day * tokens_per_request
    if refused(tokens == 0):
        raise OutOfRangeError(
            f"requests_per_day x {name} is too small for a double (it rounds to 0 tokens a day); check their units",
            "requests_per_day",
        )
    return where(tokens == 0, 1.0, tokens)  # over arrays, a harmless divisor where refused


@checked(arrays=True)
def cost_per_m_input(
    n_gpus: GPUs,
    usd_per_gpu_hour: Price,
    requests_per_day: PerDay,
    prompt_tokens: Tokens,
    prefill_share: FractionOrZero,
) -> float:
    """What a million input tokens cost: the prefill share of the fleet's GPU-hours over the prompts served.

    Parameters
    ----------
    n_gpus : int
        Accelerators billed around the clock, spares included [count].
    usd_per_gpu_hour : float
        Price of one accelerator for an hour [USD/GPU-h].
    requests_per_day : float
        Requests served in a day [requests/day].
    prompt_tokens : float
        Input tokens billed per request, cached ones included [tokens].
    prefill_share : float
        Share of GPU time that belongs to prefill, from PREFILL_SHARE [fraction].

    Returns
    -------
    float
        Cost per million input tokens [USD/M tokens].

    Notes
    -----
    ``n_gpus * price * 24 * prefill_share / (requests_per_day * prompt_tokens) * 1e6``. Providers price input and
    output tokens separately (OpenAI and Anthropic pricing pages); here the day's GPU-hours are split between them
    by the share of time prefill takes per request, so input and output costs add up to the bill. Which share:
    PREFILL_SHARE for replicas whose phases take turns; ``prefill_s * REPLICA_RPS_CHUNKED(...)`` for replicas
    that chunk their prefills (the serving template's), which is ``prompt / (prompt + output)`` wherever compute
    binds. Prefix caching lowers the prefill time and with it this price. The fleet in "Back-of-the-Envelope Estimation
    for LLM Systems", 4 GPUs at $2.50 serving 200,000 requests of 2,000 tokens, prefill share 0.81: $0.49 per million.
    """
    tokens = _tokens_per_day(requests_per_day, prompt_tokens, "prompt_tokens")
    return _daily_cost(n_gpus, usd_per_gpu_hour) * prefill_share / tokens * 1e6


@checked(arrays=True)
def cost_per_m_output(
    n_gpus: GPUs,
    usd_per_gpu_hour: Price,
    requests_per_day: PerDay,
    output_tokens: Tokens,
    prefill_share: FractionOrZero,
) -> float:
    """What a million output tokens cost: the decode share of the fleet's GPU-hours over the tokens generated.

    Parameters
    ----------
    n_gpus : int
        Accelerators billed around the clock, spares included [count].
    usd_per_gpu_hour : float
        Price of one accelerator for an hour [USD/GPU-h].
    requests_per_day : float
        Requests served in a day [requests/day].
    output_tokens : float
        Output tokens billed per request: visible answer plus hidden reasoning [tokens].
    prefill_share : float
        Share of GPU time that belongs to prefill, from PREFILL_SHARE [fraction].

    Returns
    -------
    float
        Cost per million output tokens [USD/M tokens].

    Notes
    -----
    ``n_gpus * price * 24 * (1 - prefill_share) / (requests_per_day * output_tokens) * 1e6``, the complement of
    COST_PER_M_INPUT, so the two add up to the day's bill. Reasoning tokens are billed as output (OpenAI,
    "Reasoning models" guide). The fleet in "Back-of-the-Envelope Estimation for LLM Systems", 4 GPUs at $2.50 serving
    200,000 answers of 300 tokens, prefill share 0.81: $0.75 per million.
    """
    tokens = _tokens_per_day(requests_per_day, output_tokens, "output_tokens")
    return _daily_cost(n_gpus, usd_per_gpu_hour) * (1 - prefill_share) / tokens * 1e6
