"""Memory as serving engines allocate it: the KV pool vLLM and SGLang set aside, and the tokens it holds.

``USABLE_GB``'s flat share of memory is a planning figure. A serving engine decides its KV pool at start-up, per GPU,
by its own rule, and prints the result:

* **vLLM** takes ``gpu_memory_utilization`` (0.9 by default; 0.92 from v0.22) of the memory CUDA reports, then
  subtracts the peak of a profiling run (the weights plus the activations of the largest batch it will run) and the
  memory outside PyTorch's allocator (CUDA context, NCCL buffers; CUDA graphs too once PR #19312 profiles them
  first). What is left is "Available KV cache memory"; it is cut into blocks of ``block_size`` tokens (16 on CUDA),
  and "GPU KV cache size" is the whole blocks times the block size. "Maximum concurrency" is that over the model's
  context length.
* **SGLang** takes ``mem_fraction_static`` of the memory for the weights and the pool together: the pool is that
  share less what the process holds once the weights are loaded; activations and CUDA graphs live in the rest. Its
  pool is counted in tokens (one token a page by default).

Both split the weights and the KV heads across tensor-parallel GPUs, a GPU holding at least one whole KV head
(``max(1, kv_heads // tp)``, KV_HEADS_PER_GPU): the pool, the tokens and the concurrency are per GPU, and every GPU of
the group holds the same tokens. The functions here take the numbers; MODEL_ENGINE_KV_TOKENS and
MODEL_ENGINE_CONCURRENCY (:mod:`xlsxplan.catalog.models`) take a preset. Memory is in GB (1e9 bytes) as everywhere
in xlsxplan; the engines print GiB (2^30 bytes, 1.0737 GB).

References
----------
.. [1] vLLM, vllm/v1/worker/gpu_worker.py, ``determine_available_memory``: ``total_gpu_memory *
   gpu_memory_utilization - peak_memory``, the profiling run's peak plus non-torch allocations;
   github.com/vllm-project/vllm/issues/16570 prints the terms ("total_gpu_memory (39.38GiB) x
   gpu_memory_utilization (0.95) = 37.41GiB ... model weights take 34.43GiB; non_torch_memory takes 0.34GiB;
   PyTorch activation peak memory takes 2.51GiB; the rest of the memory reserved for KV Cache is 0.13GiB").
.. [2] vLLM, vllm/v1/core/kv_cache_utils.py: ``num_blocks = available_memory // page_size // num_layers``,
   ``num_tokens = num_blocks * block_size``, ``max_concurrency = num_tokens / max_model_len``.
.. [3] SGLang, python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py: ``rest_memory =
   available_gpu_memory - total_gpu_memory * (1 - mem_fraction_static)``, ``max_total_num_tokens = rest_memory /
   cell_size``, cell_size the KV bytes of one token over the layers (latent attention: ``(kv_lora_rank +
   qk_rope_head_dim) * layers * bytes``).
.. [4] vLLM, vllm/config ModelConfig.get_num_kv_heads: ``max(1, total_num_kv_heads // tensor_parallel_size)``.
.. [5] TensorRT-LLM, tensorrt_llm/builder.py ``BuildConfig`` (NVIDIA/TensorRT-LLM@008b2b8, read 2026-12-07):
   ``max_batch_size: int = 2048``, ``max_num_tokens: int = 8192``, the defaults ``trtllm-build`` builds an engine with
   ("Maximum number of batched input tokens after padding is removed in each batch", tensorrt_llm/commands/build.py);
   its perf-overview page (docs/source/performance/perf-overview.md@258c754) prints them back as "Max Runtime Batch
   Size" and "Max Runtime Tokens: 8192". ``trtllm-bench build --dataset`` tunes both from the dataset instead
   (tensorrt_llm/bench/build/tuning.py ``calc_engine_setting``).
.. [6] vLLM, vllm/engine/arg_utils.py ``EngineArgs.get_batch_defaults`` (vllm-project/vllm main, read 2026-12-07):
   ``max_num_batched_tokens`` 8192 for the API server and 16384 for the ``LLM`` class on GPUs of 70 GiB or more other
   than the A100 (2048 and 8192 elsewhere), ``max_num_seqs`` 1024 there (256 elsewhere). SGLang's equivalents are
   ``chunked_prefill_size`` and ``max_running_requests`` (python/sglang/srt/server_args.py).

The per-step token budget
-------------------------
An engine caps the tokens one step computes (TensorRT-LLM's ``max_num_tokens``, vLLM's ``max_num_batched_tokens``,
SGLang's ``chunked_prefill_size``) and the sequences it runs at once (``max_batch_size``, ``max_num_seqs``,
``max_running_requests``). In the steady state of continuous batching every step decodes ``B`` tokens and prefills
``B P / O`` prompt tokens (:func:`xlsxplan.core.effects.prefill_tokens_per_step`), so the budget ``T`` holds at most
``B = floor(T / (1 + P / O))`` sequences (:func:`budget_batch`), whatever memory would hold: past it, requests wait.
"""

from __future__ import annotations

import math

from ..domains import (
    Count,
    Fraction,
    FreeGB,
    KvBytes,
    KvBytesOrZero,
    MemoryGB,
    MemoryGBOrZero,
    Tokens,
    checked,
)
from ..infra.elementwise import is_array, refused, where
from . import equations

__all__ = [
    "TRTLLM_MAX_BATCH_SIZE",
    "TRTLLM_MAX_NUM_TOKENS",
    "VLLM_BLOCK_SIZE",
    "VLLM_GPU_MEMORY_UTILIZATION",
    "budget_batch",
    "step_limits_text",
    "concurrency",
    "engine_kv_gb",
    "engine_kv_tokens",
    "engine_max_concurrency",
    "kv_pool_gb",
    "trtllm_batch_that_fits",
    "pool_tokens",
]

VLLM_GPU_MEMORY_UTILIZATION = 0.9
"""vLLM's default ``gpu_memory_utilization`` through v0.19 (vllm/config/cache.py CacheConfig); 0.92 from v0.22."""
VLLM_BLOCK_SIZE = 16
"""vLLM's default KV block on CUDA, in tokens (CacheConfig.block_size)."""
TRTLLM_FREE_GPU_MEMORY_FRACTION = 0.9
"""The share of the memory left after the weights that a TensorRT-LLM engine gives its KV cache by default
(KvCacheConfig.free_gpu_memory_fraction, 0.9: "TensorRT LLM will try to allocate 90% of free GPU memory for KV
cache", nvidia.github.io/TensorRT-LLM/examples/kvcacheconfig.html, read 2026-12-07) [fraction]: a share of what the
weights leave, where vLLM's and SGLang's are shares of the whole memory (VLLM_GPU_MEMORY_UTILIZATION)."""
TRTLLM_MAX_NUM_TOKENS = 8192
"""The tokens one step of a TensorRT-LLM engine computes at most, as ``trtllm-build`` builds it by default
(tensorrt_llm/builder.py BuildConfig.max_num_tokens; reference [5]) [tokens]."""
TRTLLM_MAX_BATCH_SIZE = 2048
"""The sequences a TensorRT-LLM engine runs at once at most, as ``trtllm-build`` builds it by default
(BuildConfig.max_batch_size; reference [5]) [sequences]."""


def trtllm_batch_that_fits(
    params_b: float,
    bytes_per_param: float,
    kv_bytes_per_token: float,
    context_tokens: float,
    n_gpus: int,
    memory_gb: float,
) -> int:
    """Whole sequences a TensorRT-LLM engine's KV cache holds beside ``params_b`` [B] of weights at
    ``bytes_per_param`` [bytes], each ``context_tokens`` [tokens] of ``kv_bytes_per_token`` [bytes] across its
    ``n_gpus`` of ``memory_gb`` [GB]: TRTLLM_FREE_GPU_MEMORY_FRACTION of the memory the weights leave, where
    :func:`xlsxplan.core.equations.batch_that_fits` takes a share of the whole memory, as vLLM and SGLang do; 0 when
    the weights do not fit. Unchecked: validate's steady state calls it with checked figures."""
    free = TRTLLM_FREE_GPU_MEMORY_FRACTION * equations.free_bytes(params_b, bytes_per_param, n_gpus, memory_gb, 1.0)
    return max(0, math.floor(free / (kv_bytes_per_token * context_tokens)))


def kv_pool_gb(memory_gb: float, weights_gb: float, memory_fraction: float, reserve_gb: float) -> float:
    """``memory * fraction - weights - reserve`` [GB], negative when they do not fit. Unchecked: ENGINE_KV_GB and the
    preset functions."""
    return memory_gb * memory_fraction - weights_gb - reserve_gb


def pool_tokens(pool_bytes: float, kv_bytes_per_token: float, block_size: int) -> int:
    """Tokens in whole blocks that ``pool_bytes`` holds at ``kv_bytes_per_token`` [tokens]; 0 for an empty pool.
    Unchecked."""
    if not is_array(pool_bytes):
        if pool_bytes <= 0:
            return 0
        return equations.whole_floor(pool_bytes / (kv_bytes_per_token * block_size)) * block_size
    blocks = pool_bytes / (kv_bytes_per_token * block_size)
    refused(blocks * block_size >= equations.EXACT_INT64)  # past int64's exact whole numbers: the one-call path
    return where(pool_bytes <= 0, 0, equations.whole_floor(blocks) * block_size)


@checked(arrays=True)
def engine_kv_gb(
    memory_gb: MemoryGB, weights_gb: MemoryGBOrZero, memory_fraction: Fraction = 0.9, reserve_gb: MemoryGBOrZero = 0
) -> float:
    """KV cache pool a serving engine sets aside on one GPU: its memory share less the weights and its reserves.

    Parameters
    ----------
    memory_gb : float
        Memory of one GPU as CUDA reports it (vLLM's total_gpu_memory; an 80 GB H100 reports about 85 GB), in GB; an
        engine's GiB times 1.0737 [GB].
    weights_gb : float
        Weights on this GPU: MODEL_WEIGHTS_GB or WEIGHTS_GB over the tensor-parallel GPUs [GB].
    memory_fraction : float, default 0.9
        The engine's share of memory: vLLM's gpu_memory_utilization (0.9; 0.92 from v0.22), SGLang's
        mem_fraction_static (about 0.8 to 0.93, chosen from the GPU's memory unless given) [fraction].
    reserve_gb : float, default 0
        Memory held besides the weights inside that share: for vLLM the profiling run's activation peak plus
        non-torch memory and CUDA graphs, for SGLang what the process holds besides the weights (CUDA context, NCCL)
        [GB].

    Returns
    -------
    float
        KV cache pool of the GPU; negative when the weights and reserve do not fit [GB].

    Notes
    -----
    ``memory * fraction - weights - reserve``: vLLM's determine_available_memory (gpu_worker.py), SGLang's
    rest_memory (model_runner_kv_cache_mixin.py). github.com/vllm-project/vllm/issues/16570, Qwen2.5-VL-72B on four
    40 GB A100s: 39.38 GiB x 0.95 - 34.43 - (0.34 + 2.51) GiB = 0.13 GiB, as the engine logs.
    """
    return kv_pool_gb(memory_gb, weights_gb, memory_fraction, reserve_gb)


@checked(arrays=True)
def engine_kv_tokens(kv_gb: FreeGB, kv_bytes_per_token: KvBytes, block_size: Count = 16) -> int:
    """KV cache tokens a pool holds, in whole blocks: the "GPU KV cache size" an engine prints at start-up.

    Parameters
    ----------
    kv_gb : float
        KV cache pool of one GPU (ENGINE_KV_GB, or the engine's logged "Available KV cache memory" in GB) [GB].
    kv_bytes_per_token : float
        KV cache one token takes on that GPU, every attention layer (MODEL_KV_BYTES_PER_TOKEN over tp) [bytes].
    block_size : int, default 16
        Tokens per block: vLLM's 16 on CUDA; 1 for SGLang's token pool [tokens].

    Returns
    -------
    int
        Tokens the pool holds; 0 for an empty or negative pool [tokens].

    Notes
    -----
    ``floor(pool / (kv * block)) * block`` (vLLM kv_cache_utils.py: num_blocks = available_memory // page_size //
    num_layers; num_tokens = num_blocks * block_size; SGLang: rest_memory // cell_size). Qwen3-14B (40 layers, 8 KV
    heads of 128, BF16: 163,840 bytes) with vLLM's "Available KV cache memory: 6.51 GiB" holds 42,656 tokens, the
    "GPU KV cache size" github.com/LMCache/LMCache/issues/1739 logs.
    """
    return pool_tokens(kv_gb * equations.GIGA, kv_bytes_per_token, block_size)


@checked(arrays=True)
def engine_max_concurrency(
    kv_gb: FreeGB,
    kv_bytes_per_token: KvBytes,
    max_model_len: Tokens,
    block_size: Count = 16,
    state_bytes_per_sequence: KvBytesOrZero = 0,
) -> float:
    """Requests of the full context length the pool holds at once: the "Maximum concurrency" an engine prints.

    Parameters
    ----------
    kv_gb : float
        KV cache pool of one GPU (ENGINE_KV_GB) [GB].
    kv_bytes_per_token : float
        KV cache one token takes on that GPU, averaged over a request of max_model_len tokens (window layers counted
        at their window: MODEL_KV_BYTES_PER_TOKEN with the context) [bytes].
    max_model_len : float
        Context length each request may reach (vLLM's max_model_len) [tokens].
    block_size : int, default 16
        Tokens per block; a request's cache is rounded up to whole blocks [tokens].
    state_bytes_per_sequence : float, default 0
        Fixed state each request holds on that GPU besides its cache (MODEL_STATE_BYTES over tp: Mamba and linear
        attention layers) [bytes].

    Returns
    -------
    float
        Requests at max_model_len that fit; fractional, as vLLM prints it (1.30x) [requests].

    Notes
    -----
    ``pool / (kv * ceil(L / block) * block + state)``, 0 for an empty pool: for attention alone, within a block of
    vLLM's ``num_tokens / max_model_len`` (kv_cache_utils.py). Qwen3-14B's 6.51 GiB pool at 32,768 tokens per
    request: 1.30x, as github.com/LMCache/LMCache/issues/1739 logs.
    """
    return concurrency(kv_gb * equations.GIGA, kv_bytes_per_token, max_model_len, block_size, state_bytes_per_sequence)


def concurrency(
    pool_bytes: float, kv_bytes_per_token: float, max_model_len: float, block_size: int, state_bytes: float
) -> float:
    """Requests of ``max_model_len`` tokens a pool holds, each rounded up to whole blocks, plus its fixed state
    [requests]; 0 for an empty pool. Unchecked: ENGINE_MAX_CONCURRENCY and MODEL_ENGINE_CONCURRENCY."""
    if not is_array(pool_bytes) and pool_bytes <= 0:
        return 0.0
    per_request = kv_bytes_per_token * equations.whole_ceil(max_model_len / block_size) * block_size
    return where(pool_bytes <= 0, 0.0, pool_bytes / (per_request + state_bytes))


def budget_batch(max_num_tokens: float, prompt_tokens: float, output_tokens: float, max_batch: float = 0) -> int:
    """The most sequences a continuous-batching engine decodes together under its per-step limits [sequences].

    Parameters
    ----------
    max_num_tokens : float
        Tokens one step may compute, decoded and prefilled together: TensorRT-LLM's ``max_num_tokens`` (8192 by
        default, TRTLLM_MAX_NUM_TOKENS), vLLM's ``max_num_batched_tokens``, SGLang's ``chunked_prefill_size``; 0: no
        budget [tokens].
    prompt_tokens : float
        Tokens each request's prompt prefills; 0 for a decode pool, which prefills nothing [tokens].
    output_tokens : float
        Tokens each request generates [tokens].
    max_batch : float, default 0
        Sequences the engine runs at once at most: ``max_batch_size``, ``max_num_seqs``, ``max_running_requests``; 0:
        no limit [sequences].

    Returns
    -------
    int
        ``floor(T / (1 + P / O))``, at most ``max_batch``, at least 1 (one sequence always runs, its prompt chunked);
        0 when neither limit is given (nothing caps the batch) [sequences].

    Notes
    -----
    A step of ``B`` sequences computes ``B`` decoded tokens and, in the steady state, ``B P / O`` prompt tokens
    (PREFILL_TOKENS_PER_STEP; Orca, OSDI '22, section 3.2; Sarathi-Serve, arXiv:2403.02310, section 4): the budget
    ``T`` holds ``B (1 + P / O) <= T``. TensorRT-LLM's perf-overview (docs/source/performance/perf-overview.md@258c754,
    online serving, Llama 3.1 70B on four H200s, 467 tokens in and 16 out, requests sent without pause): at the default
    8,192 tokens ``B = floor(8192 / (1 + 467 / 16)) = 271``, and the page's 457 output tokens/s at a mean inter-token
    latency of 546 ms put 250 sequences in flight (Little's law, 457 x 0.546).
    """
    cap = 0
    if max_num_tokens > 0:
        per_sequence = 1.0 + prompt_tokens / output_tokens
        cap = max(1, math.floor(max_num_tokens / per_sequence * (1 + 1e-12)))
    if max_batch > 0:
        cap = int(max_batch) if not cap else min(cap, int(max_batch))
    return cap


def step_limits_text(max_num_tokens: float, max_batch: float) -> str:
    """An engine's per-step limits as :func:`budget_batch` takes them, in words: ``8,192 tokens a step and 2,048
    sequences``; the one given alone; empty when neither is (0: not given)."""
    said = [f"{max_num_tokens:,.0f} tokens a step"] if max_num_tokens else []
    return " and ".join(said + ([f"{max_batch:,.0f} sequences"] if max_batch else []))
