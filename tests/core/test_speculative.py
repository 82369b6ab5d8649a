"""Speculative decoding and multi-token prediction: tokens per step, the draft's cost, and what they do to decode speed,
throughput, cost and the batch, against Leviathan et al. 2023 and a case computed by hand."""

from __future__ import annotations

import pytest

import xlsxplan as x
from xlsxplan.errors import OutOfRangeError


def test_expected_tokens_per_step_is_leviathans_equation_1():
    # Leviathan, Kalman and Matias 2023, arXiv:2211.17192, Eq. 1: (1 - a^(g+1)) / (1 - a); a = 1 gives g + 1, a = 0
    # one token; as g grows it tends to 1 / (1 - a)
    assert x.spec_tokens_per_step(0.8, 4) == pytest.approx((1 - 0.8**5) / 0.2) == pytest.approx(3.3616)
    assert x.spec_tokens_per_step(0.6, 4) == pytest.approx(2.3056)
    assert x.spec_tokens_per_step(1, 4) == 5
    assert x.spec_tokens_per_step(0, 7) == 1
    assert x.spec_tokens_per_step(0.9, 200) == pytest.approx(10, rel=1e-6)


def test_deepseek_v3_mtp_acceptance_gives_its_measured_speed_up():
    # DeepSeek-V3 Technical Report, arXiv:2412.19437, section 5.4.3: one MTP module, "the acceptance rate of the second
    # token prediction ranges between 85% and 90%", "1.8 times TPS": 1 + alpha tokens a step, 1.85 to 1.90
    assert x.spec_tokens_per_step(0.85, 1) == pytest.approx(1.85)
    assert x.spec_tokens_per_step(0.90, 1) == pytest.approx(1.90)
    assert 1.8 == pytest.approx(x.spec_tokens_per_step(0.85, 1), rel=0.05)


def test_per_position_acceptance_rates_as_vllm_reports_them():
    # vLLM vllm/v1/spec_decode/metrics.py: mean acceptance length 1 + accepted / drafts; per-position rate accepted at
    # position i / drafts. Independent acceptance at 0.8 gives 0.8, 0.64, 0.512, 0.4096: Eq. 1's 3.3616
    assert x.spec_accept_length((0.8, 0.64, 0.512, 0.4096)) == pytest.approx(x.spec_tokens_per_step(0.8, 4))
    assert x.spec_accept_length((0.9, 0.7, 0.5)) == pytest.approx(3.1)
    with pytest.raises(
        OutOfRangeError,
        match=r"^acceptance_rates must not rise: position 2 \(0.9\) is above position "
        r"1 \(0.5\)",
    ):
        x.spec_accept_length((0.5, 0.9))


def test_walltime_improvement_is_theorem_3_8():
    # Leviathan et al. 2023, Theorem 3.8: (1 - a^(g+1)) / ((1 - a)(g c + 1)); Corollary 3.9: with a > c some g gains
    # at least (1 + a) / (1 + c). The paper's bigram draft, a = 0.2, g = 3, c ~ 0: about 1.25x.
    assert x.spec_speedup(0.2, 3, 0) == pytest.approx(1.248)
    assert x.spec_speedup(0.8, 4, 0.05) == pytest.approx(3.3616 / 1.2)
    assert x.spec_speedup(0.5, 1, 0.2) >= (1 + 0.5) / (1 + 0.2) - 1e-12
    assert x.spec_speedup(0.3, 8, 1) < 1  # a draft as slow as the target loses


def test_a_hand_computed_case_speed_cost_and_batch():
    # A 70B target in FP8 on two H100s (3.35 TB/s, 989.4 dense TFLOP/s each), a 1B draft in BF16, alpha 0.8, 4 drafts,
    # batch 1, weights only (no KV), full bandwidth, half of peak compute:
    #   target step, memory:  70e9 B / (2 x 3.35e12 B/s)                 = 10.4478 ms
    #            arithmetic:  2 x 70e9 x 5 tokens / (2 x 989.4e12 x 0.5) =  0.7075 ms -> 10.4478 ms
    #   draft step:          2e9 B / 6.7e12 B/s                          =  0.2985 ms
    #   speculative step:    10.4478 + 4 x 0.2985                        = 11.6418 ms
    #   tokens per step:     (1 - 0.8^5) / 0.2                           =  3.3616
    #   one user:            3.3616 / 11.6418 ms = 288.75 tokens/s, against 1 / 10.4478 ms = 95.71: 3.017x
    #   cost, $2.50 per GPU-hour: 2 x 2.5 / (288.75 x 3600) x 1e6 = $4.81 per million tokens, against $14.51
    base = x.decode_step_seconds(70, 1, 1, 0, 0, 2, 3.35, 989.4)
    step = x.spec_step_seconds(70, 1, 1, 0, 0, 2, 3.35, 989.4, 4, 1, 2)
    assert base == pytest.approx(70e9 / 6.7e12)
    assert step == pytest.approx(70e9 / 6.7e12 + 4 * 2e9 / 6.7e12)
    assert step * 1e3 == pytest.approx(11.6418, abs=1e-4)
    user = x.spec_tokens_per_s(x.spec_tokens_per_step(0.8, 4), step)
    assert user == pytest.approx(288.75, abs=0.01)
    assert user * base == pytest.approx(x.spec_speedup(0.8, 4, (2e9 / 6.7e12) / base))  # Theorem 3.8, memory-bound
    assert x.cost_per_m_tokens(2, 2.5, 1 / base) == pytest.approx(14.51, abs=0.005)
    assert x.cost_per_m_tokens(2, 2.5, user) == pytest.approx(4.81, abs=0.005)


def test_at_a_large_batch_the_verify_step_turns_compute_bound_and_the_gain_shrinks():
    # Llama-3.1-70B in FP8 on two H100s, 327,680 KV bytes a token, 2,048 tokens of context. At batch 256 the verify
    # pass computes 5 tokens per sequence: 2 x 70.554e9 x 256 x 5 FLOPs take 0.183 s at half of peak, five times the
    # 0.036 s of reading the weights and caches, so the step is bound by arithmetic and speculation loses (0.66x),
    # where at batch 1 it gains 3.0x (EAGLE-3, arXiv:2503.01840: up to 6.5x at batch 1, 1.38x at batch 64 in SGLang)
    args = (70.554, 1, 256, 327_680, 2_048, 2, 3.35, 989.4)
    base = x.decode_step_seconds(*args)
    step = x.spec_step_seconds(*args, 4, 1, 2)
    compute = 2 * 70.554e9 * 256 * 5 / (2 * 989.4e12 * 0.5)
    memory = (70.554e9 + 256 * 327_680 * 2_048) / 6.7e12
    assert step == pytest.approx(max(compute, memory) + 4 * max(2e9 / 6.7e12, 2e9 * 256 / (2 * 989.4e12 * 0.5)))
    batch_gain = x.spec_tokens_per_s(x.spec_tokens_per_step(0.8, 4), step, 256) / (256 / base)
    single_gain = (
        x.spec_tokens_per_step(0.8, 4)
        / x.spec_step_seconds(70.554, 1, 1, 327_680, 2_048, 2, 3.35, 989.4, 4, 1, 2)
        * x.decode_step_seconds(70.554, 1, 1, 327_680, 2_048, 2, 3.35, 989.4)
    )
    assert (round(batch_gain, 2), round(single_gain, 2)) == (0.66, 3.02)


def test_the_draft_takes_memory_from_the_batch():
    # DeepSeek-V3's MTP module: the 14B that takes 671B to 685B on Hugging Face (arXiv:2412.19437), in FP8, plus one
    # more latent-attention layer of cache (576 x 2 bytes a token) for 64 sequences of 8,192 tokens
    assert x.spec_draft_gb(14, "fp8", 1152, 8192, 64) == pytest.approx(14 + 64 * 1152 * 8192 / 1e9)
    # Llama-3.1-70B in FP8 on two 80 GB GPUs at 8,192 tokens: 27 sequences fit alone; a 1B BF16 draft with its own
    # cache of 32,768 bytes a token (one Llama layer, 8 KV heads of 128) and 4 drafts in flight leaves 24
    alone = x.max_batch(70.554, 1, 327_680, 8192, 2, 80)
    with_draft = x.spec_max_batch(70.554, 1, 327_680, 8192, 2, 80, 1, 2, 32_768, 4)
    free = 2 * 80e9 * 0.9 - 70.554e9 - 2e9
    assert with_draft == int(free // ((327_680 + 32_768) * (8192 + 4)))
    assert (alone, with_draft) == (27, 24)
    assert x.spec_max_batch(70.554, 1, 327_680, 8192, 2, 80, 0) == alone  # no draft: MAX_BATCH
