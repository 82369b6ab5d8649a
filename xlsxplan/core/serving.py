"""Serving an LLM: memory, KV cache, the batch that fits, decode and prefill speed, cost and traffic.

Units follow "Back-of-the-Envelope Estimation for LLM Systems": parameters in billions, memory in
decimal gigabytes (1 GB = 1e9 bytes), bandwidth in TB/s (1e12 bytes/s), compute in TFLOP/s (1e12 FLOP/s), time in
seconds, bytes and tokens as plain counts. Every function is pure and checks its arguments (see
:mod:`xlsxplan.domains`).

References
----------
.. [1] "Back-of-the-Envelope Estimation for LLM Systems", sections 1-6.
.. [2] "Estimating the Compute and Memory Needed for Language Models", sections "Inference
   Computation" to "Apple M2 and NVIDIA H200".
.. [3] Kaplan et al. 2020, "Scaling Laws for Neural Language Models", arXiv:2001.08361, Table 1 (2N forward FLOPs).
"""

from __future__ import annotations

from ..domains import (
    BandwidthTBs,
    Batch,
    Count,
    Fraction,
    GPUs,
    KvBytes,
    KvBytesOrZero,
    MemoryGB,
    ParamsB,
    PeakFactor,
    PerDay,
    Price,
    Spare,
    TFLOPs,
    Tokens,
    TokensOrZero,
    TokensPerS,
    TokensPerSOrZero,
    checked,
)
from ..infra.elementwise import minimum
from ..precision import BytesPerValue
from . import equations

__all__ = [
    "kv_bytes_per_token",
    "weights_gb",
    "kv_gb",
    "usable_gb",
    "free_gb",
    "max_batch",
    "decode_tokens_per_s",
    "decode_tokens_per_s_total",
    "compute_tokens_per_s",
    "tokens_per_s_ceiling",
    "inference_flops",
    "prefill_seconds",
    "cost_per_m_tokens",
    "peak_requests_per_s",
    "peak_tokens_per_s",
    "replicas",
]

SECONDS_PER_DAY = 86_400
SECONDS_PER_HOUR = 3_600


@checked(arrays=True)
def kv_bytes_per_token(layers: Count, kv_heads: Count, head_dim: Count, bytes_per_value: BytesPerValue = 2) -> float:
    """KV cache one token occupies: a key and a value vector per layer per KV head.

    Parameters
    ----------
    layers : int
        Transformer layers [count].
    kv_heads : int
        Key-value heads per layer; fewer than query heads under grouped-query attention [count].
    head_dim : int
        Dimension of one attention head [count].
    bytes_per_value : float, default 2
        Bytes per cached number, or a precision name: 2 for BF16, 1 for FP8 [bytes].

    Returns
    -------
    float
        KV cache per token [bytes].

    Notes
    -----
    ``2 * layers * kv_heads * head_dim * bytes_per_value``; the 2 is one key and one value ("Back-of-the-Envelope
    Estimation for LLM Systems", section 3). Qwen2.5-72B: 2 x 80 x 8 x 128 x 2 = 327,680 bytes (320 KiB).
    """
    return 2.0 * layers * kv_heads * head_dim * bytes_per_value


@checked(arrays=True)
def weights_gb(params_b: ParamsB, bytes_per_param: BytesPerValue = 2) -> float:
    """Memory the model weights take.

    Parameters
    ----------
    params_b : float
        Parameters, in billions; total parameters for a mixture-of-experts model [B params].
    bytes_per_param : float, default 2
        Bytes per weight, or a precision name: 2 for BF16, 1 for FP8 [bytes].

    Returns
    -------
    float
        Weights memory [GB].

    Notes
    -----
    ``N * b`` ("Estimating the Compute and Memory Needed for Language Models", "Storing the Model";
    "Back-of-the-Envelope Estimation for LLM Systems", section 2): 72.7B in BF16 is 145.4 GB.
    """
    return params_b * bytes_per_param


@checked(arrays=True)
def kv_gb(kv_bytes_per_token: KvBytes, tokens: Tokens, sequences: Batch = 1) -> float:
    """KV cache held by one or more sequences of a given length.

    Parameters
    ----------
    kv_bytes_per_token : float
        KV cache per token, from KV_BYTES_PER_TOKEN [bytes].
    tokens : float
        Tokens in each sequence, prompt plus output [tokens].
    sequences : int, default 1
        Sequences held at once [count].

    Returns
    -------
    float
        KV cache [GB].

    Notes
    -----
    ``kv_bytes_per_token * tokens * sequences / 1e9`` ("Back-of-the-Envelope Estimation for LLM Systems", section 3):
    one 2,300-token conversation on Qwen2.5-72B holds 0.754 GB.
    """
    return kv_bytes_per_token * tokens * sequences / equations.GIGA


@checked(arrays=True)
def usable_gb(n_gpus: GPUs, memory_gb: MemoryGB, usable_fraction: Fraction = 0.9) -> float:
    """GPU memory left for weights and KV cache after the serving framework's overhead.

    Parameters
    ----------
    n_gpus : int
        Accelerators holding one copy of the model [count].
    memory_gb : float
        Memory of one accelerator [GB].
    usable_fraction : float, default 0.9
        Share of memory the serving engine can use ("Back-of-the-Envelope Estimation for LLM Systems" plans on 90%)
        [fraction].

    Returns
    -------
    float
        Usable memory across the GPUs [GB].

    Notes
    -----
    ``n_gpus * memory_gb * usable_fraction`` (Back-of-the-Envelope, section 2): two 80 GB H100s give 144 GB.
    """
    return n_gpus * memory_gb * usable_fraction


@checked(arrays=True)
def free_gb(
    params_b: ParamsB,
    bytes_per_param: BytesPerValue,
    n_gpus: GPUs,
    memory_gb: MemoryGB,
    usable_fraction: Fraction = 0.9,
) -> float:
    """Memory left for the KV cache once the weights are loaded; negative when the weights do not fit.

    Parameters
    ----------
    params_b : float
        Parameters, in billions [B params].
    bytes_per_param : float
        Bytes per weight, or a precision name [bytes].
    n_gpus : int
        Accelerators holding one copy of the model [count].
    memory_gb : float
        Memory of one accelerator [GB].
    usable_fraction : float, default 0.9
        Share of memory the serving engine can use [fraction].

    Returns
    -------
    float
        Usable memory minus weights [GB].

    Notes
    -----
    ``n_gpus * memory_gb * usable_fraction - params_b * bytes_per_param``. "Estimating the Compute and Memory Needed for
    Language Models": 70B in FP16 on one 141 GB H200 (usable_fraction 1) leaves about 1 GB; "Back-of-the-Envelope
    Estimation for LLM Systems": 72.7B in BF16 on two H100s is 1.4 GB short.
    """
    return n_gpus * memory_gb * usable_fraction - params_b * bytes_per_param


@checked(arrays=True)
def max_batch(
    params_b: ParamsB,
    bytes_per_param: BytesPerValue,
    kv_bytes_per_token: KvBytes,
    context_tokens: Tokens,
    n_gpus: GPUs,
    memory_gb: MemoryGB,
    usable_fraction: Fraction = 0.9,
) -> int:
    """Sequences of a given context length whose KV cache fits beside the weights: the batch size.

    Parameters
    ----------
    params_b : float
        Parameters, in billions [B params].
    bytes_per_param : float
        Bytes per weight, or a precision name [bytes].
    kv_bytes_per_token : float
        KV cache per token [bytes].
    context_tokens : float
        Tokens each sequence holds at its longest, prompt plus output [tokens].
    n_gpus : int
        Accelerators holding one copy of the model [count].
    memory_gb : float
        Memory of one accelerator [GB].
    usable_fraction : float, default 0.9
        Share of memory the serving engine can use [fraction].

    Returns
    -------
    int
        Whole sequences that fit at once; 0 when the weights alone do not fit [sequences].

    Notes
    -----
    ``floor((usable - weights) / (kv_bytes_per_token * context_tokens))`` ("Back-of-the-Envelope Estimation for LLM
    Systems", sections 3 and 6). This is the worst case where every slot holds a full-length conversation; paged engines
    such as vLLM fit more.
    """
    return equations.batch_that_fits(
        params_b, bytes_per_param, kv_bytes_per_token, context_tokens, n_gpus, memory_gb, usable_fraction
    )


@checked(arrays=True)
def decode_tokens_per_s(
    params_b: ParamsB,
    bytes_per_param: BytesPerValue,
    n_gpus: GPUs,
    bandwidth_tb_s: BandwidthTBs,
    batch: Batch = 1,
    kv_bytes_per_token: KvBytesOrZero = 0,
    context_tokens: TokensOrZero = 0,
    efficiency: Fraction = 1,
) -> float:
    """Decode speed one sequence sees when each step is bound by memory bandwidth.

    Parameters
    ----------
    params_b : float
        Parameters read per step, in billions; active parameters for a mixture-of-experts model [B params].
    bytes_per_param : float
        Bytes per weight, or a precision name [bytes].
    n_gpus : int
        Accelerators sharing the model, their bandwidths adding up [count].
    bandwidth_tb_s : float
        Memory bandwidth of one accelerator [TB/s].
    batch : int, default 1
        Sequences decoded together, each reading its own KV cache [sequences].
    kv_bytes_per_token : float, default 0
        KV cache per token; 0 counts weights only [bytes].
    context_tokens : float, default 0
        Tokens of KV cache each sequence reads per step [tokens].
    efficiency : float, default 1
        Share of peak bandwidth reached; 1 is the ceiling "Back-of-the-Envelope Estimation for LLM Systems" uses
        [fraction].

    Returns
    -------
    float
        Tokens per second for one sequence [tokens/s].

    Notes
    -----
    A step reads every weight once plus every sequence's KV cache:
    ``1 / ((N * b + batch * kv * context) / (n_gpus * B * efficiency))`` (Back-of-the-Envelope, section 4; "Estimating
    the Compute and Memory Needed for Language Models", "Transferring the Model for Every Token"). Qwen2.5-72B in FP8 on
    two H100s: 92 tokens/s alone, 46.7 at batch 94.
    """
    return 1.0 / equations.decode_step_s(
        params_b, bytes_per_param, n_gpus, bandwidth_tb_s, batch, kv_bytes_per_token, context_tokens, efficiency
    )


@checked(arrays=True)
def decode_tokens_per_s_total(
    params_b: ParamsB,
    bytes_per_param: BytesPerValue,
    n_gpus: GPUs,
    bandwidth_tb_s: BandwidthTBs,
    batch: Batch = 1,
    kv_bytes_per_token: KvBytesOrZero = 0,
    context_tokens: TokensOrZero = 0,
    efficiency: Fraction = 1,
) -> float:
    """Decode throughput of the whole batch when each step is bound by memory bandwidth.

    Parameters
    ----------
    params_b : float
        Parameters read per step, in billions; active parameters for a mixture-of-experts model [B params].
    bytes_per_param : float
        Bytes per weight, or a precision name [bytes].
    n_gpus : int
        Accelerators sharing the model, their bandwidths adding up [count].
    bandwidth_tb_s : float
        Memory bandwidth of one accelerator [TB/s].
    batch : int, default 1
        Sequences decoded together, each reading its own KV cache [sequences].
    kv_bytes_per_token : float, default 0
        KV cache per token; 0 counts weights only [bytes].
    context_tokens : float, default 0
        Tokens of KV cache each sequence reads per step [tokens].
    efficiency : float, default 1
        Share of peak bandwidth reached; 1 is the ceiling "Back-of-the-Envelope Estimation for LLM Systems" uses
        [fraction].

    Returns
    -------
    float
        Output tokens per second across the batch [tokens/s].

    Notes
    -----
    ``batch`` times DECODE_TOKS (Back-of-the-Envelope, section 4): Qwen2.5-72B in FP8 on two H100s at batch 94 makes
    4,387 tokens/s.
    """
    step = equations.decode_step_s(
        params_b, bytes_per_param, n_gpus, bandwidth_tb_s, batch, kv_bytes_per_token, context_tokens, efficiency
    )
    return batch / step


@checked(arrays=True)
def compute_tokens_per_s(params_b: ParamsB, tflops: TFLOPs) -> float:
    """Arithmetic ceiling on generation speed: tokens per second if compute were the only limit.

    Parameters
    ----------
    params_b : float
        Parameters used per token, in billions [B params].
    tflops : float
        Arithmetic throughput available [TFLOP/s].

    Returns
    -------
    float
        Tokens per second [tokens/s].

    Notes
    -----
    ``C / (2N)``: a forward pass costs about 2 FLOPs per parameter per token ("Estimating the Compute and Memory Needed
    for Language Models", "Inference Computation"; Kaplan et al. 2020, Table 1).
    """
    return equations.compute_tokens_per_s(params_b, tflops)


@checked(arrays=True)
def tokens_per_s_ceiling(
    params_b: ParamsB, bytes_per_param: BytesPerValue, tflops: TFLOPs, bandwidth_tb_s: BandwidthTBs
) -> float:
    """Batch-one generation ceiling: the lower of the arithmetic and the memory-bandwidth ceilings.

    Parameters
    ----------
    params_b : float
        Parameters, in billions [B params].
    bytes_per_param : float
        Bytes per weight, or a precision name [bytes].
    tflops : float
        Arithmetic throughput [TFLOP/s].
    bandwidth_tb_s : float
        Memory bandwidth [TB/s].

    Returns
    -------
    float
        Tokens per second [tokens/s].

    Notes
    -----
    ``min(C / 2N, B / (N b))`` ("Estimating the Compute and Memory Needed for Language Models", "Transferring the Model
    for Every Token"). At batch one the memory term is almost always the lower: about one FLOP per byte at FP16.
    """
    return minimum(
        equations.compute_tokens_per_s(params_b, tflops),
        bandwidth_tb_s * equations.TERA / (params_b * equations.GIGA * bytes_per_param),
    )


@checked(arrays=True)
def inference_flops(params_b: ParamsB, tokens: Tokens = 1) -> float:
    """Arithmetic to process or generate tokens in a forward pass.

    Parameters
    ----------
    params_b : float
        Parameters used per token, in billions [B params].
    tokens : float, default 1
        Tokens processed [tokens].

    Returns
    -------
    float
        Floating-point operations [FLOPs].

    Notes
    -----
    ``2 N G`` ("Estimating the Compute and Memory Needed for Language Models", "Inference Computation"): a 7B model
    needs about 14 billion FLOPs per token. Attention's context-dependent work is left out.
    """
    return 2.0 * params_b * equations.GIGA * tokens


@checked(arrays=True)
def prefill_seconds(
    params_b: ParamsB, prompt_tokens: Tokens, n_gpus: GPUs, tflops: TFLOPs, utilisation: Fraction = 0.5
) -> float:
    """Time to read a prompt in one compute-bound pass: most of the time to first token.

    Parameters
    ----------
    params_b : float
        Parameters used per token, in billions [B params].
    prompt_tokens : float
        Tokens in the prompt [tokens].
    n_gpus : int
        Accelerators sharing the work [count].
    tflops : float
        Dense throughput of one accelerator at the serving precision [TFLOP/s].
    utilisation : float, default 0.5
        Share of peak compute reached; "Back-of-the-Envelope Estimation for LLM Systems" assumes 50% [fraction].

    Returns
    -------
    float
        Prefill time [s].

    Notes
    -----
    ``2 N P / (n_gpus * C * utilisation)`` (Back-of-the-Envelope, section 5): 72.7B, 2,000 tokens, two H100s at 989
    TFLOP/s and 50% take 0.29 s. Attention grows with the square of the prompt, so very long prompts take longer.
    """
    return equations.prefill_s(params_b, prompt_tokens, n_gpus, tflops, utilisation)


@checked(arrays=True)
def cost_per_m_tokens(
    n_gpus: GPUs, usd_per_gpu_hour: Price, tokens_per_s: TokensPerS, utilisation: Fraction = 1
) -> float:
    """What a million tokens cost when GPUs are billed by the hour.

    Parameters
    ----------
    n_gpus : int
        Accelerators billed [count].
    usd_per_gpu_hour : float
        Price of one accelerator for an hour [USD/GPU-h].
    tokens_per_s : float
        Tokens produced per second at full load [tokens/s].
    utilisation : float, default 1
        Average load as a share of full load; "Back-of-the-Envelope Estimation for LLM Systems" cites 30% for traffic
        with daily peaks [fraction].

    Returns
    -------
    float
        Cost per million tokens [USD/M tokens].

    Notes
    -----
    ``n_gpus * price / (tokens_per_s * 3600 * utilisation) * 1e6`` (Back-of-the-Envelope, section 6): two H100s at $2.50
    an hour making 4,387 tokens/s cost $0.32 per million at full load and $1.05 at 30%.
    """
    return n_gpus * usd_per_gpu_hour / (tokens_per_s * SECONDS_PER_HOUR * utilisation) * 1e6


@checked(arrays=True)
def peak_requests_per_s(requests_per_day: PerDay, peak_factor: PeakFactor = 3) -> float:
    """Requests per second in the peak hour.

    Parameters
    ----------
    requests_per_day : float
        Requests in a day [requests/day].
    peak_factor : float, default 3
        How much busier the peak hour is than the daily average [ratio].

    Returns
    -------
    float
        Requests per second at peak [requests/s].

    Notes
    -----
    ``requests_per_day / 86400 * peak_factor`` ("Back-of-the-Envelope Estimation for LLM Systems", section 1): 200,000 a
    day peak at 6.9 per second.
    """
    return requests_per_day / SECONDS_PER_DAY * peak_factor


@checked(arrays=True)
def peak_tokens_per_s(requests_per_day: PerDay, tokens_per_request: Tokens, peak_factor: PeakFactor = 3) -> float:
    """Tokens per second in the peak hour.

    Parameters
    ----------
    requests_per_day : float
        Requests in a day [requests/day].
    tokens_per_request : float
        Tokens per request: prompt tokens for input load, output tokens for output load [tokens].
    peak_factor : float, default 3
        How much busier the peak hour is than the daily average [ratio].

    Returns
    -------
    float
        Tokens per second at peak [tokens/s].

    Notes
    -----
    ``requests_per_day / 86400 * peak_factor * tokens_per_request`` ("Back-of-the-Envelope Estimation for LLM Systems",
    section 1): 200,000 requests of 300 output tokens peak at 2,083 output tokens/s.
    """
    return requests_per_day / SECONDS_PER_DAY * peak_factor * tokens_per_request


@checked(arrays=True)
def replicas(demand_tokens_per_s: TokensPerSOrZero, capacity_tokens_per_s: TokensPerS, spare: Spare = 0) -> int:
    """Model replicas needed for a traffic level, plus spares.

    Parameters
    ----------
    demand_tokens_per_s : float
        Tokens per second to serve at peak; 0 for no traffic [tokens/s].
    capacity_tokens_per_s : float
        Tokens per second one replica makes [tokens/s].
    spare : int, default 0
        Replicas added for failures and deployments [count].

    Returns
    -------
    int
        Whole replicas [count].

    Notes
    -----
    ``ceil(demand / capacity) + spare`` ("Back-of-the-Envelope Estimation for LLM Systems", section 6): 20,833 tokens/s
    on 4,387-token/s replicas needs 5. Capacity scales linearly with replicas. Zero demand needs no serving replica, so
    the result is the spares alone (``REPLICAS(0, 4387)`` is 0, ``REPLICAS(0, 4387, 1)`` is 1): a sweep's quiet rows
    stay numbers, and a fleet that must never be empty takes ``MAX(REPLICAS(...), minimum)``.
    """
    return equations.replicas_for(demand_tokens_per_s, capacity_tokens_per_s, spare)
