"""Memory as serving engines allocate it: published vLLM and SGLang start-up logs reproduced within 5%.

Each log is quoted from the GitHub thread named with it. The engines print GiB (2^30 bytes; SGLang prints "GB" but
divides by 1 << 30); xlsxplan's functions take GB, so a logged figure enters as ``GiB * 2**30 / 1e9``.
"""

from __future__ import annotations

import pytest

import xlsxplan as x
from xlsxplan.catalog.models import model_kv_bytes_per_token, model_weights_gb
from xlsxplan.core import engine
from xlsxplan.errors import OutOfRangeError

GIB = 2**30 / 1e9  # GB in one GiB


def test_vllm_and_sglang_on_qwen3_235b_fp8_4xh100():
    # github.com/vllm-project/vllm issue #21348 (2025-07-22): Qwen3-235B-A22B-FP8, --tensor-parallel-size 4 on 4 x H100,
    # BF16 cache. vLLM: "Available KV cache memory: 8.11 GiB", "GPU KV cache size: 178,880 tokens". SGLang
    # (--mem-fraction-static 0.93): "KV Cache is allocated. #tokens: 367404, K size: 8.23 GB, V size: 8.23 GB".
    # 4 KV heads over 4 GPUs is one head a GPU (vLLM get_num_kv_heads: max(1, 4 // 4)): 94 x 128 x 2 x 2 bytes.
    per_gpu = model_kv_bytes_per_token("Qwen3-235B-A22B", 0, "bf16", 4) / 4
    assert per_gpu == 48_128
    vllm = x.engine_kv_tokens(8.11 * GIB, per_gpu, 16)  # whole 16-token blocks
    assert vllm == 180_928 and vllm == pytest.approx(178_880, rel=0.05)  # +1.1%: the log rounds to 8.11 GiB
    sglang = x.engine_kv_tokens(2 * 8.23 * GIB, per_gpu, 1)  # SGLang's pool is counted in tokens
    assert sglang == pytest.approx(367_404, rel=0.005)
    # the same weights on the same GPUs: SGLang's pool is 2.03x vLLM's. With 0.93 of an H100's memory as CUDA reports
    # it (79.19 GiB) and MODEL_WEIGHTS_GB's 55.0 GiB of FP8 weights a GPU, SGLang's logged pool leaves 2.2 GiB for
    # the process's other memory (CUDA context, NCCL), vLLM's 8.1 GiB for its profiled activations, CUDA graphs and
    # LMCache's buffers: reserves the engines do not print here, so the pools are taken as logged
    weights = model_weights_gb("Qwen3-235B-A22B", "fp8") / 4
    assert weights / GIB == pytest.approx(55.0, abs=0.1)
    sglang_reserve = x.engine_kv_gb(79.19 * GIB, weights, 0.93, 0) - 2 * 8.23 * GIB
    vllm_reserve = x.engine_kv_gb(79.19 * GIB, weights, 0.90, 0) - 8.11 * GIB
    assert (sglang_reserve / GIB, vllm_reserve / GIB) == (pytest.approx(2.2, abs=0.1), pytest.approx(8.1, abs=0.1))


@pytest.mark.parametrize(
    "max_model_len, peak_torch, tokens, concurrency",
    [(20_000, 17.06, 31_232, 1.56), (29_000, 17.98, 23_648, 0.82)],
)
def test_vllm_llama31_8b_on_an_rtx3090_from_its_whole_budget(max_model_len, peak_torch, tokens, concurrency):
    # vllm-project/vllm issue #10517 (kaspersiminski, 2024-12-02): "Loading model weights took 14.9888 GB" (GiB),
    # "Memory profiling results: total_gpu_memory=23.58GiB ... peak_torch_memory=17.06GiB ... non_torch_memory=0.35GiB
    # kv_cache_size=3.81GiB gpu_memory_utilization=0.90", "GPU blocks: 1952", "Maximum concurrency for 20000 tokens
    # per request: 1.56x"; at --max-model-len 29000 peak_torch_memory=17.98GiB, 1478 blocks (23,648 tokens), 0.82x.
    # The reserve is the log's activations (peak torch memory less the weights) and non-torch memory; the weights
    # are MODEL_WEIGHTS_GB's.
    reserve = (peak_torch - 14.9888 + 0.35) * GIB
    got = x.model_engine_kv_tokens("Llama-3.1-8B", 23.58 * GIB, 1, "bf16", "bf16", 0.90, reserve, 16)
    assert got == pytest.approx(tokens, rel=0.05)
    assert got % 16 == 0
    conc = x.model_engine_concurrency("Llama-3.1-8B", 23.58 * GIB, max_model_len, 1, "bf16", "bf16", 0.90, reserve)
    assert conc == pytest.approx(concurrency, rel=0.05)
    # the pool from the log's own figures is its kv_cache_size, and its blocks the logged count
    pool = x.engine_kv_gb(23.58 * GIB, 14.9888 * GIB, 0.90, reserve)
    assert pool / GIB == pytest.approx(3.81 if peak_torch == 17.06 else 2.89, abs=0.01)
    assert x.engine_kv_tokens(pool, 131_072) == pytest.approx(tokens, abs=32)


def test_vllm_qwen3_14b_tokens_and_concurrency():
    # github.com/LMCache/LMCache issue #1739 (2025-10-03), vLLM V1: "Available KV cache memory: 6.51 GiB", "GPU KV
    # cache size: 42,656 tokens", "Maximum concurrency for 32,768 tokens per request: 1.30x". Qwen3-14B (Qwen/Qwen3-14B
    # model card: 40 layers, 40 query and 8 KV heads; head_dim 128 in every Qwen3 config) in BF16: 163,840 bytes a token.
    per_token = x.kv_bytes_per_token(40, 8, 128, "bf16")
    assert per_token == 163_840
    assert x.engine_kv_tokens(6.51 * GIB, per_token) == 42_656
    assert round(x.engine_max_concurrency(6.51 * GIB, per_token, 32_768), 2) == 1.30


def test_vllm_budget_terms_of_qwen25_vl_72b_on_4xa100():
    # vllm-project/vllm issue #16570 (hanggun, 2025-04-15): "total_gpu_memory (39.38GiB) x gpu_memory_utilization
    # (0.95) = 37.41GiB", "model weights take 34.43GiB; non_torch_memory takes 0.34GiB; PyTorch activation peak memory
    # takes 2.51GiB; the rest of the memory reserved for KV Cache is 0.13GiB"
    pool = x.engine_kv_gb(39.38 * GIB, 34.43 * GIB, 0.95, (0.34 + 2.51) * GIB)
    assert pool / GIB == pytest.approx(0.13, abs=0.005)
    # Qwen2.5-72B's weights over 4 GPUs (the language model; the vision tower adds 0.67B): within 2% of the log
    assert model_weights_gb("Qwen2.5-72B") / 4 / GIB == pytest.approx(34.43, rel=0.02)


def test_sglang_deepseek_v32_pools_with_and_without_the_indexer():
    # sgl-project/sglang PR #11309 (2025-10-07), DeepSeek-V3.2-Exp on 8 x B200 (--tp 8 --dp 8 --enable-dp-attention,
    # FP8 cache, a whole latent on each GPU): "KV Cache is allocated. #tokens: 975424, KV size: 43.67 GB"; before the
    # PR, which added the indexer cache to the estimate, "#tokens: 1462784, KV size: 54.52 GB" and "KV size including
    # index is actually 65.49 GB".
    per_token = model_kv_bytes_per_token("DeepSeek-V3.2", 0, "fp8")  # 61 x (656 latent + 132 indexer)
    assert x.engine_kv_tokens(43.67 * GIB, per_token, 1) == pytest.approx(975_424, rel=0.005)
    latent_only = per_token - 61 * 132
    assert x.engine_kv_tokens(54.52 * GIB, latent_only, 1) == pytest.approx(1_462_784, rel=0.005)
    assert 1_462_784 * per_token / 2**30 == pytest.approx(65.49, rel=0.005)


def test_kv_heads_are_replicated_not_split_below_one():
    # vLLM ModelConfig.get_num_kv_heads: max(1, total_num_kv_heads // tensor_parallel_size). Qwen3-235B-A22B's 4 KV
    # heads on 8 GPUs: one each, so every GPU holds as many tokens as on 4 and the group twice the cache.
    on_4 = x.model_engine_kv_tokens("Qwen3-235B-A22B", 85, 4, "fp8")
    on_8 = x.model_engine_kv_tokens("Qwen3-235B-A22B", 85, 8, "fp8")
    assert x.kv_heads_per_gpu(4, 8) == 1
    per_token = 94 * 2 * 1 * 128 * 2
    weights = model_weights_gb("Qwen3-235B-A22B", "fp8")
    assert on_8 == engine.pool_tokens((85 * 0.9 - weights / 8) * 1e9, per_token, 16)
    assert on_4 == engine.pool_tokens((85 * 0.9 - weights / 4) * 1e9, per_token, 16)
    # a latent cache is whole on every GPU: DeepSeek-V3's 70,272 bytes a token whatever the TP degree
    assert model_kv_bytes_per_token("DeepSeek-V3", 0, 2, 8) / 8 == 70_272


def test_hybrid_concurrency_counts_the_state_once_per_request():
    # Qwen3-Next-80B-A3B with FP8 weights on one 141 GB H200 (CUDA reports about 150 GB), vLLM's 0.9, no reserve: the
    # pool over (24,576 bytes x 262,144 tokens + 39.5 MB of DeltaNet state, BF16) per request at its full context
    pool = x.engine_kv_gb(150, model_weights_gb("Qwen3-Next", "fp8"), 0.9, 0)
    per_request = 24_576 * 262_144 + 39_518_208
    got = x.model_engine_concurrency("Qwen3-Next", 150, 262_144, 1, "fp8", "bf16", 0.9, 0, 16)
    assert got == pytest.approx(pool * 1e9 / per_request)
    assert x.engine_max_concurrency(pool, 24_576, 262_144, 16, 39_518_208) == pytest.approx(got)
    # an FP32 state (SGLang's default) doubles the temporal part and lowers the concurrency
    assert got > 5
    assert x.model_engine_concurrency("Qwen3-Next", 150, 262_144, 1, "fp8", 2, 0.9, 0, 16, "fp32") < got


def test_sliding_window_layers_show_in_the_concurrency_not_the_tokens():
    # gpt-oss-120b on one H100 (CUDA: about 85 GB), MXFP4 experts approximated by mxfp4 weights: tokens count all 36
    # layers (as vLLM prints them), concurrency at 131,072 tokens keeps 18 layers at their 128-token window
    tokens = x.model_engine_kv_tokens("gpt-oss-120b", 85, 1, "mxfp4", "bf16", 0.9, 5)
    conc = x.model_engine_concurrency("gpt-oss-120b", 85, 131_072, 1, "mxfp4", "bf16", 0.9, 5)
    assert conc > tokens / 131_072 * 1.9  # half the layers stop growing: about twice the requests


def test_weights_that_do_not_fit_leave_no_tokens():
    assert x.engine_kv_gb(80, 100) == pytest.approx(-28)
    assert x.engine_kv_tokens(-28, 100_000) == 0
    assert x.model_engine_kv_tokens("DeepSeek-V3", 85, 1, "fp8") == 0
    assert x.model_engine_concurrency("DeepSeek-V3", 85, 8192, 1, "fp8") == 0
    with pytest.raises(OutOfRangeError, match=r"^memory_fraction must be a fraction above 0 and at most 1"):
        x.engine_kv_gb(80, 10, 1.2)


# --- the per-step token budget ------------------------------------------------------------------------------------


def test_the_step_budget_holds_t_over_one_plus_p_over_o_sequences():
    # TensorRT-LLM's trtllm-build default, 8,192 tokens a step (tensorrt_llm/builder.py BuildConfig.max_num_tokens):
    # at 467 tokens in and 16 out each sequence brings 467 / 16 = 29.19 prompt tokens a step beside its own token,
    # 8192 / 30.19 = 271.4. TensorRT-LLM's perf-overview (docs/source/performance/perf-overview.md@258c754, online
    # serving, Llama 3.1 70B on four H200s, QPS INF) prints 457 output tokens/s at a mean inter-token latency of
    # 546 ms: 457 x 0.546 = 250 sequences decoding, within 10% of the budget's 271
    assert engine.budget_batch(8192, 467, 16) == 271
    assert abs(271 / (457 * 0.546) - 1) < 0.1
    assert engine.budget_batch(engine.TRTLLM_MAX_NUM_TOKENS, 467, 16, engine.TRTLLM_MAX_BATCH_SIZE) == 271
    # at 467 in and 256 out the same budget holds 8192 / 2.824 = 2,900 sequences: the 2,048 of max_batch_size bind
    assert engine.budget_batch(8192, 467, 256) == 2_900
    assert engine.budget_batch(8192, 467, 256, 2_048) == 2_048
    # a decode pool prefills nothing: every token of the budget is a sequence's
    assert engine.budget_batch(8192, 0, 16) == 8_192
    # vLLM's max_num_seqs alone (256 by default on GPUs under 70 GiB, vllm/engine/arg_utils.py get_batch_defaults)
    assert engine.budget_batch(0, 2_000, 300, 256) == 256
    # nothing given: nothing caps the batch; a prompt longer than the budget still runs one sequence, chunked
    assert engine.budget_batch(0, 2_000, 300) == 0
    assert engine.budget_batch(2_048, 8_192, 1) == 1
