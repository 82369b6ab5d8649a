"""Plans that survive real traffic: each function against a case computed by hand, and its effect.

The plan throughout is the one in "Back-of-the-Envelope Estimation for LLM Systems" (shared/seeds/000_*.txt, sections
1-6): Qwen2.5-72B (72.7B parameters, KV 327,680 bytes/token) in FP8 on two H100s (80 GB, 3.35 TB/s, 989 dense BF16
TFLOP/s at 50% for prefill), 2,000-token prompts, 300-token answers, 200,000 requests a day, peak factor 3, $2.50 per
GPU-hour. The document prints batch 94, 4,387 tokens/s, prefill 0.29 s, and "at least two replicas, four GPUs". Each
test states the hand arithmetic, then shows which way the new input moves the plan and by how much.
"""

from __future__ import annotations

import math
import re

import pytest

import xlsxplan as x
from tests.helpers import REPO
from xlsxplan.core import traffic
from xlsxplan.errors import ArgumentError, CellError, OutOfRangeError
from xlsxplan.headless.engine import evaluate_formula

PARAMS_B, BPP, N_GPUS, MEMORY_GB, BW_TBS, TFLOPS, PRICE = 72.7, 1, 2, 80, 3.35, 989, 2.50
KV = 327_680
PROMPT, OUTPUT, CONTEXT = 2_000, 300, 2_300
FREE_GB = 2 * 80 * 0.9 - 72.7  # 71.3 GB left for the KV cache
PEAK_RPS = 200_000 / 86_400 * 3  # 6.944 requests/s
PREFILL_S = 2 * 72.7e9 * 2_000 / (2 * 989e12 * 0.5)  # 0.29403 s (Back-of-the-Envelope §5: "about 0.29 seconds")
T94 = 94 / ((72.7e9 + 94 * KV * CONTEXT) / 6.7e12)  # 4,387.5 tokens/s at the memory-filling batch
T51 = 51 / ((72.7e9 + 51 * KV * CONTEXT) / 6.7e12)  # 3,074.6 tokens/s at the 60-tokens/s batch
Z95 = 1.6448536269514722


def test_the_hand_constants_are_the_back_of_the_envelope_figures():
    assert FREE_GB == pytest.approx(71.3)
    assert (
        PREFILL_S == pytest.approx(x.prefill_seconds(PARAMS_B, PROMPT, N_GPUS, TFLOPS)) and round(PREFILL_S, 2) == 0.29
    )
    assert T94 == pytest.approx(x.decode_tokens_per_s_total(PARAMS_B, BPP, N_GPUS, BW_TBS, 94, KV, CONTEXT))
    assert round(T94) == 4_387


# --- Long-tail prompts -----------------------------------------------------------------------------------------


def test_lognormal_fit_by_hand_mean_2000_p95_6000():
    # sigma = z - sqrt(z^2 - 2 ln 3) = 1.644854 - sqrt(2.705543 - 2.197225) = 0.931889; mu = ln 2000 - sigma^2 / 2
    mu, sigma = traffic.lognormal_from_mean_p95(2_000, 6_000)
    assert sigma == pytest.approx(0.931889, abs=1e-6)
    assert mu == pytest.approx(math.log(2_000) - 0.931889**2 / 2, abs=1e-6)
    assert math.exp(mu + sigma**2 / 2) == pytest.approx(2_000)  # the fit gives back its mean ...
    assert math.exp(mu + Z95 * sigma) == pytest.approx(6_000)  # ... and its 95th percentile


def test_tail_share_at_the_p95_is_five_percent_and_at_the_mean_is_hand_computed():
    assert x.tail_share(6_000, 2_000, 6_000) == pytest.approx(0.05)
    # at the mean: 1 - Phi(sigma / 2) = 1 - Phi(0.465944) = 0.32063
    assert x.tail_share(2_000, 2_000, 6_000) == pytest.approx(0.32063, abs=1e-5)
    # a 16,384-token cap: 1 - Phi((ln 16384 - mu) / sigma) = 1 - Phi(2.72267) = 0.0032
    assert x.tail_share(16_384, 2_000, 6_000) == pytest.approx(0.003236, abs=2e-6)


def test_tail_share_effect_a_higher_cap_rejects_fewer_a_heavier_tail_more():
    caps = [x.tail_share(cap, 2_000, 6_000) for cap in (4_096, 8_192, 16_384, 32_768)]
    assert caps == sorted(caps, reverse=True) and caps[0] > 0.05 > caps[-1]
    # a p95 of 7,000 instead of 6,000: sigma = z - sqrt(z^2 - 2 ln 3.5) = 1.197621, mu = ln 2000 - sigma^2/2 = 6.883754,
    # 1 - Phi((ln 16384 - mu) / sigma) = 1 - Phi(2.354925) = 0.926%: the same cap rejects 2.9 times as many
    assert x.tail_share(16_384, 2_000, 7_000) == pytest.approx(0.009264, abs=2e-6)
    assert x.tail_share(16_384, 2_000, 7_000) / x.tail_share(16_384, 2_000, 6_000) == pytest.approx(2.862, abs=1e-3)


def test_tail_share_refuses_a_tail_heavier_than_any_lognormal():
    # a p95 of 12,000 on a mean of 2,000 is six times the mean: no log-normal has that
    assert traffic.LOGNORMAL_MAX_P95_OVER_MEAN == pytest.approx(math.exp(Z95**2 / 2)) == pytest.approx(3.8681, abs=1e-4)
    with pytest.raises(
        OutOfRangeError, match=r"^p95_tokens \(12,000\) is 6 times mean_tokens \(2,000\); a log-normal's"
    ):
        x.tail_share(32_768, 2_000, 12_000)
    with pytest.raises(OutOfRangeError, match=r"use measured lengths instead \(TAIL_SHARE_DATA, STDEV.P\)$"):
        x.length_sd(2_000, 12_000)
    with pytest.raises(
        OutOfRangeError, match=r"^p95_tokens must be at least mean_tokens \(2,000\) for a log-normal fit"
    ):
        x.tail_share(8_000, 2_000, 1_500)
    # at the limit itself sigma = z, the widest log-normal for that ratio, and it is accepted
    limit = 2_000 * traffic.LOGNORMAL_MAX_P95_OVER_MEAN
    assert traffic.lognormal_from_mean_p95(2_000, limit)[1] == pytest.approx(Z95)
    assert x.tail_share(limit, 2_000, limit) == pytest.approx(0.05)


def test_tail_share_with_no_spread():
    assert x.tail_share(1_999, 2_000, 2_000) == 1.0
    assert x.tail_share(2_000, 2_000, 2_000) == 0.0
    assert x.length_sd(2_000, 2_000) == 0.0


def test_length_sd_by_hand():
    # 2,000 * sqrt(exp(0.931889^2) - 1) = 2,000 * sqrt(2.383134 - 1) = 2,352.1
    assert x.length_sd(2_000, 6_000) == pytest.approx(2_352.13, abs=0.01)


SAMPLE = (600, 900, 1_200, 1_500, 2_000, 2_600, 3_500, 12_000, 20_000, 40_000)


def test_tail_share_data_counts_strictly_longer_requests():
    assert x.tail_share_data(SAMPLE, 16_384) == 0.2  # 20,000 and 40,000
    assert x.tail_share_data(SAMPLE, 12_000) == 0.2  # 12,000 itself is accepted
    assert x.tail_share_data(SAMPLE, 11_999) == 0.3
    assert x.tail_share_data(SAMPLE, 40_000) == 0.0


def test_tail_share_data_takes_a_pasted_column_through_the_engine():
    column = "{" + ";".join(str(v) for v in SAMPLE) + "}"
    assert evaluate_formula(f"=TAIL_SHARE_DATA({column},16384)").value == 0.2
    # the cap broadcasts, the column does not: one answer per cap
    caps = evaluate_formula(f"=TAIL_SHARE_DATA({column},{{1000;16384;50000}})").value
    assert caps.tolist() == [[0.8], [0.2], [0.0]]
    # same answer as Excel's own COUNTIF over the column
    assert evaluate_formula(f'=COUNTIF({column},">16384")/COUNT({column})').value == 0.2


def test_tail_share_data_refuses_a_bad_cell_naming_its_place():
    result = evaluate_formula("=TAIL_SHARE_DATA({900;-5;1200},16384)")
    assert result.error == CellError("#NUM!", "lengths (value 2 of 3) must be a number from 0 to 1e+18, got -5")


def test_paged_batch_without_spread_is_the_back_of_the_envelope_max_batch():
    assert x.paged_batch(FREE_GB, KV, CONTEXT, 0) == 94 == x.max_batch(PARAMS_B, BPP, KV, CONTEXT, N_GPUS, MEMORY_GB)


def test_paged_batch_by_hand_small_case():
    # 10,000 tokens of cache (1 GB at 100,000 bytes/token), mean 1,000, sd 1,000, 5% overflow:
    # q(B) = 1000 B exp(z t - t^2/2), t^2 = ln(1 + 1/B)
    # B=5: t^2 = ln 1.2 = 0.182322 -> q = 5000 * exp(0.702345 - 0.091161) = 9,213 <= 10,000
    # B=6: t^2 = ln(7/6) = 0.154151 -> q = 6000 * exp(0.645810 - 0.077075) = 10,596 > 10,000
    assert x.paged_batch(1.0, 100_000, 1_000, 1_000) == 5
    assert x.paged_batch(1.0, 100_000, 1_000, 0) == 10  # all at the mean: twice as many


def fenton_wilkinson_q95(batch, mean, sd):
    """The 95th percentile of the sum of ``batch`` lengths, written out independently of the module."""
    t2 = math.log(1 + sd**2 / (batch * mean**2))
    return math.exp(math.log(batch * mean) - t2 / 2 + Z95 * math.sqrt(t2))


def test_paged_batch_at_the_readme_spread_is_the_last_batch_that_fits():
    capacity = 71.3e9 / KV  # 217,590.6 tokens of cache
    assert fenton_wilkinson_q95(71, 2_300, 3_500) <= capacity < fenton_wilkinson_q95(72, 2_300, 3_500)
    assert x.paged_batch(FREE_GB, KV, CONTEXT, 3_500) == 71


def test_paged_batch_effect_more_spread_fewer_sequences_looser_overflow_more():
    batches = [x.paged_batch(FREE_GB, KV, CONTEXT, sd) for sd in (0, 1_000, 2_000, 3_500, 6_000)]
    assert batches[0] == 94 and batches[3] == 71
    assert batches == sorted(batches, reverse=True) and len(set(batches)) == 5
    assert x.paged_batch(FREE_GB, KV, CONTEXT, 3_500, 0.01) < 71 < x.paged_batch(FREE_GB, KV, CONTEXT, 3_500, 0.2)
    # far less pessimistic than Back-of-the-Envelope's rule of sizing every slot at the 12,000-token p95 tail
    assert x.max_batch(PARAMS_B, BPP, KV, 12_000 + OUTPUT, N_GPUS, MEMORY_GB) == 17


def test_paged_batch_when_nothing_fits():
    assert x.paged_batch(-1.4, KV, CONTEXT, 1_000) == 0  # weights alone do not fit
    # one sequence at its own 95th percentile (mean 900, sd 500) needs about 1,846 tokens, more than 1,000
    assert x.paged_batch(0.1, 100_000, 900, 500) == 0
    with pytest.raises(OutOfRangeError, match=r"^overflow must be a positive number up to 0.5, got 0.6$"):
        x.paged_batch(FREE_GB, KV, CONTEXT, 1_000, 0.6)


def test_max_context_tokens_is_the_longest_request_that_fits_at_all():
    # 71.3e9 / 327,680 = 217,590.6
    assert x.max_context_tokens(FREE_GB, KV) == 217_590
    assert x.max_batch(PARAMS_B, BPP, KV, 217_590, N_GPUS, MEMORY_GB) == 1
    assert x.max_batch(PARAMS_B, BPP, KV, 217_591, N_GPUS, MEMORY_GB) == 0
    assert x.max_context_tokens(x.free_gb(PARAMS_B, 2, N_GPUS, MEMORY_GB), KV) == 0  # BF16 weights do not fit


# --- Output length and reasoning tokens ------------------------------------------------------------------------


def test_reasoning_tokens_grow_the_context_and_shrink_the_batch():
    assert x.context_tokens(PROMPT, OUTPUT) == CONTEXT
    assert x.context_tokens(PROMPT, OUTPUT, 1_000) == 3_300
    # 71.3e9 / (327,680 * 3,300) = 65.9: a thousand hidden tokens cost 29 of the 94 slots
    assert x.max_batch(PARAMS_B, BPP, KV, x.context_tokens(PROMPT, OUTPUT, 1_000), N_GPUS, MEMORY_GB) == 65
    # and decode throughput per request: 1,300 generated tokens instead of 300
    slower = x.replica_rps(PREFILL_S, OUTPUT + 1_000, T94)
    assert slower == pytest.approx(1 / (PREFILL_S + 1_300 / T94)) and slower < x.replica_rps(PREFILL_S, OUTPUT, T94)


def test_time_to_answer_waits_for_the_reasoning():
    # 0.294 s of prefill, then 1,000 hidden tokens at 60 tokens/s: 16.96 s before the first visible token
    assert x.time_to_answer_s(0.294, 1_000, 60) == pytest.approx(0.294 + 1_000 / 60)
    assert x.time_to_answer_s(0.294, 0, 60) == 0.294  # no reasoning: the time to first token


# --- Prefix caching --------------------------------------------------------------------------------------------


def test_prefix_caching_is_off_by_default_and_cuts_prefill_when_on():
    assert x.prefill_tokens(PROMPT) == PROMPT
    assert x.prefill_tokens(PROMPT, 1_500) == PROMPT  # a prefix with hit rate 0 changes nothing
    # 2,000 - 0.8 * 1,500 = 800 tokens: prefill time falls to 40%
    assert x.prefill_tokens(PROMPT, 1_500, 0.8) == 800
    cached = x.prefill_seconds(PARAMS_B, x.prefill_tokens(PROMPT, 1_500, 0.8), N_GPUS, TFLOPS)
    assert cached == pytest.approx(0.4 * PREFILL_S)
    # a hit's own time to first token reads only the 500 new tokens
    assert x.prefill_seconds(PARAMS_B, x.prefill_tokens(PROMPT, 1_500, 1), N_GPUS, TFLOPS) == pytest.approx(
        PREFILL_S / 4
    )


def test_prefix_caching_edge_cases():
    assert x.prefill_tokens(PROMPT, PROMPT, 1) == 1  # the last prompt token is always computed
    with pytest.raises(OutOfRangeError, match=r"^prefix_tokens must be at most prompt_tokens \(2,000\), got 2,500$"):
        x.prefill_tokens(PROMPT, 2_500, 0.5)
    with pytest.raises(OutOfRangeError, match=r"^hit_rate must be a number from 0 to 1, got 1.5$"):
        x.prefill_tokens(PROMPT, 1_500, 1.5)


# --- Latency target caps the batch -----------------------------------------------------------------------------


def test_batch_for_latency_by_hand():
    # (6.7e12 / 60 - 72.7e9) / (327,680 * 2,300) = 3.896667e10 / 7.53664e8 = 51.7
    assert x.batch_for_latency(PARAMS_B, BPP, N_GPUS, BW_TBS, 60, KV, CONTEXT) == 51
    assert x.decode_tokens_per_s(PARAMS_B, BPP, N_GPUS, BW_TBS, 51, KV, CONTEXT) >= 60
    assert x.decode_tokens_per_s(PARAMS_B, BPP, N_GPUS, BW_TBS, 52, KV, CONTEXT) < 60


def test_batch_for_latency_effect_and_the_unreachable_target():
    # (6.7e12 / t - 72.7e9) / 7.53664e8 for t = 30, 47, 60, 80: 199.9, 92.7, 51.7, 14.7; at 92.5 below 1
    batches = [x.batch_for_latency(PARAMS_B, BPP, N_GPUS, BW_TBS, t, KV, CONTEXT) for t in (30, 47, 60, 80, 92.5)]
    assert batches == [199, 92, 51, 14, 0]  # Back-of-the-Envelope §7: an 80 tokens/s product cannot fill the GPU
    # 92.2 tokens/s is the batch-of-one ceiling (Back-of-the-Envelope: "92 if alone"); 100 is beyond any batch: 0
    assert x.batch_for_latency(PARAMS_B, BPP, N_GPUS, BW_TBS, 100, KV, CONTEXT) == 0
    # throughput and cost at the capped batch instead of at full memory: 3,075 tokens/s, $0.45 not $0.32
    assert T51 == pytest.approx(3_074.59, abs=0.01)
    assert x.cost_per_m_tokens(N_GPUS, PRICE, T51) == pytest.approx(0.4517, abs=1e-4)


def test_batch_for_latency_is_exact_at_the_boundary():
    exact = x.decode_tokens_per_s(PARAMS_B, BPP, N_GPUS, BW_TBS, 51, KV, CONTEXT)
    assert x.batch_for_latency(PARAMS_B, BPP, N_GPUS, BW_TBS, exact, KV, CONTEXT) == 51
    assert x.batch_for_latency(PARAMS_B, BPP, N_GPUS, BW_TBS, exact * (1 + 1e-9), KV, CONTEXT) == 50


def test_batch_for_latency_through_the_engine_broadcasts_over_targets():
    value = evaluate_formula("=BATCH_FOR_LATENCY(72.7,1,2,3.35,{47;60;80;100},327680,2300)").value
    assert value[:, 0].tolist() == [92, 51, 14, 0]
    flagged = evaluate_formula('=IF(BATCH_FOR_LATENCY(72.7,1,2,3.35,100,327680,2300)=0,"unreachable","ok")')
    assert flagged.value == "unreachable"


def test_batch_for_ttft_by_hand():
    # token budget K = 989e12 * 2 * 0.5 / (2 * 72.7e9) / 60 = 113.37 tokens per 1/60 s step
    # a 12,000-token prompt in 3 s needs chunks of 12,000 / (3 * 60) = 66.67: 113.37 - 66.67 = 46.7
    assert x.batch_for_ttft(PARAMS_B, N_GPUS, TFLOPS, 60, 12_000, 3) == 46
    # the mean prompt in 2 s: 113.37 - 2,000 / 120 = 96.7
    assert x.batch_for_ttft(PARAMS_B, N_GPUS, TFLOPS, 60, 2_000, 2) == 96


def test_batch_for_ttft_effect_and_the_unreachable_target():
    batches = [x.batch_for_ttft(PARAMS_B, N_GPUS, TFLOPS, 60, 12_000, t) for t in (1.5, 2, 3, 5, 10)]
    assert batches == [0, 13, 46, 73, 93]  # a looser target leaves more of each step to decoding
    # a prompt whose prefill alone takes the whole target leaves no room to decode anything
    alone = 3 / x.prefill_seconds(PARAMS_B, 1, N_GPUS, TFLOPS)  # 20,406 tokens prefill in 3 s
    assert x.batch_for_ttft(PARAMS_B, N_GPUS, TFLOPS, 60, alone, 3) == 0
    assert x.batch_for_ttft(PARAMS_B, N_GPUS, TFLOPS, 60, alone - 180, 3) == 1  # one token per step less: batch 1


def test_batch_for_ttft_is_capped_like_batch_for_latency():
    # A tiny model on a huge fleet must not give 2.5e21: both latency batches stop at the largest batch
    # the other functions accept (1,000,000,000)
    assert x.batch_for_ttft(1e-4, 10_000_000, 1e9, 1e-3, 1, 1e12) == 1_000_000_000
    assert x.decode_tokens_per_s(1e-4, 1, 1, 1e5, x.batch_for_ttft(1e-4, 10_000_000, 1e9, 1e-3, 1, 1e12)) > 0


def test_batch_for_ttft_with_memory_bound_steps_is_consistent_with_the_decode_speed_a_plan_reports():
    # At steps of the 60 tokens/s target, batch 46 leaves 6,802 - 46 x 60 = 4,042 tokens/s for
    # the prompt (2.97 s); but a plan reports batch 46 decoding at its memory-bound 62.4 tokens/s, 2,870 together,
    # which leaves 3,932: 12,000 tokens in 3.05 s, over the target. Given the memory figures the steps run at that
    # speed, and the batch is the largest whose DECODE_TOKS_TOTAL leaves 12,000 / 3 = 4,000 tokens/s of compute.
    compute = x.compute_tokens_per_s(PARAMS_B, N_GPUS * TFLOPS * 0.5)  # 6,801.9 tokens/s
    assert compute == pytest.approx(6_801.9, abs=0.1)
    at_46 = x.decode_tokens_per_s_total(PARAMS_B, BPP, N_GPUS, BW_TBS, 46, KV, CONTEXT)
    assert 12_000 / (compute - at_46) == pytest.approx(3.05, abs=0.005)  # the inconsistency, by hand
    memory = (BPP, BW_TBS, KV, CONTEXT, 1)
    batch = x.batch_for_ttft(PARAMS_B, N_GPUS, TFLOPS, 60, 12_000, 3, 0.5, *memory)
    assert batch == 44
    ttft = [
        12_000 / (compute - x.decode_tokens_per_s_total(PARAMS_B, BPP, N_GPUS, BW_TBS, b, KV, CONTEXT))
        for b in (batch, batch + 1)
    ]
    assert ttft[0] <= 3 < ttft[1] and round(ttft[0], 2) == 2.99
    assert round(x.decode_tokens_per_s(PARAMS_B, BPP, N_GPUS, BW_TBS, batch, KV, CONTEXT), 1) == 63.3
    # the target still bounds it: steps never slower than the target (Back-of-the-Envelope's pair: 181 at 20 tokens/s,
    # 2 s)
    assert x.batch_for_ttft(PARAMS_B, N_GPUS, TFLOPS, 20, 2_000, 2, 0.5, *memory) == 181
    assert x.batch_for_ttft(PARAMS_B, N_GPUS, TFLOPS, 20, 2_000, 2) == 290
    # a model whose steps cannot use the compute up (7B on one H100): the target's bound alone
    assert (
        x.batch_for_ttft(7.6, 1, 989, 20, 2_000, 2, 0.5, 2, 3.35, 57_344, 2_300)
        == x.batch_for_ttft(7.6, 1, 989, 20, 2_000, 2)
        == 1_576
    )
    # and the same through the engine, as the serving template calls it
    assert evaluate_formula('=BATCH_FOR_TTFT(72.7,2,989,60,12000,3,0.5,"fp8",3.35,327680,2300)').value == 44
    with pytest.raises(OutOfRangeError, match=r"^bytes_per_param must be positive when bandwidth_tb_s is given"):
        x.batch_for_ttft(PARAMS_B, N_GPUS, TFLOPS, 60, 12_000, 3, 0.5, 0, BW_TBS, KV, CONTEXT)


def test_traffic_descriptions_fit_the_function_wizard_uncut():
    # No description may be cut at Excel's 255 characters, as BATCH_FOR_TTFT's was ("...even with no o...")
    from xlsxplan.registry import EXCEL_TEXT_LIMIT, FUNCTIONS

    for fn in FUNCTIONS.values():
        if fn.func.__module__ == traffic.__name__:
            text = f"{fn.summary} Returns {fn.returns.rstrip('.')} [{fn.unit}]."
            assert len(text) <= EXCEL_TEXT_LIMIT, (fn.name, len(text))
            assert not fn.description().endswith("..."), fn.name


# --- Chunked prefill, the prefill/decode mix and disaggregation ------------------------------------------------


def test_prefill_share_of_the_back_of_the_envelope_plan():
    # 0.294 / (0.294 + 300 / 4,387.5) = 0.294 / 0.362412 = 0.8113: most of the replica's time reads prompts
    assert x.prefill_share(PREFILL_S, OUTPUT, T94) == pytest.approx(0.81133, abs=1e-5)
    # so a replica taking turns serves 2.76 requests/s, not the 14.6 that 4,387 tokens/s of 300-token answers suggest
    assert x.replica_rps(PREFILL_S, OUTPUT, T94) == pytest.approx(2.7593, abs=1e-4)
    assert T94 / OUTPUT == pytest.approx(14.625, abs=1e-3)


def test_prefill_share_effect_of_the_input_output_ratio_and_of_caching():
    shares = [
        x.prefill_share(x.prefill_seconds(PARAMS_B, p, N_GPUS, TFLOPS), OUTPUT, T94) for p in (200, 2_000, 12_000)
    ]
    assert shares == sorted(shares) and shares[0] < 0.5 < shares[-1]
    cached = x.prefill_seconds(PARAMS_B, x.prefill_tokens(PROMPT, 1_500, 0.8), N_GPUS, TFLOPS)
    assert x.prefill_share(cached, OUTPUT, T94) == pytest.approx(0.6324, abs=1e-4)  # 0.1176 / (0.1176 + 0.0684)


def test_chunked_prefill_overlaps_compute_with_memory_bound_decode():
    # max(0.29403 * 2,300 / 2,000, 300 / 3,074.6) = max(0.33814, 0.09757) -> 2.957 requests/s, compute-bound
    chunked = x.replica_rps_chunked(PREFILL_S, PROMPT, OUTPUT, T51)
    assert chunked == pytest.approx(1 / (PREFILL_S * 2_300 / 2_000)) == pytest.approx(2.9574, abs=1e-4)
    taking_turns = x.replica_rps(PREFILL_S, OUTPUT, T51)
    assert taking_turns == pytest.approx(1 / (PREFILL_S + 300 / T51)) == pytest.approx(2.5536, abs=1e-4)
    assert chunked / taking_turns == pytest.approx(1.158, abs=1e-3)
    # when prompts are short the decode steps bind instead: 300 / 3,074.6 s per request
    short = x.prefill_seconds(PARAMS_B, 100, N_GPUS, TFLOPS)
    assert x.replica_rps_chunked(short, 100, OUTPUT, T51) == pytest.approx(T51 / OUTPUT)


def test_disaggregated_pools_for_the_back_of_the_envelope_peak():
    # prefill: ceil(6.944 * 0.29403) = ceil(2.042) = 3; decode: ceil(6.944 * 300 / 3,074.6) = ceil(0.678) = 1
    assert x.prefill_replicas(PEAK_RPS, PREFILL_S) == 3
    assert x.decode_replicas(PEAK_RPS, OUTPUT, T51) == 1
    assert x.prefill_replicas(PEAK_RPS, PREFILL_S, 1) == 4 and x.decode_replicas(PEAK_RPS, OUTPUT, T51, 1) == 2
    # the pools balance at the prefill share of GPUs; here 4 separate replicas against 3 colocated chunked ones
    assert math.ceil(PEAK_RPS / x.replica_rps_chunked(PREFILL_S, PROMPT, OUTPUT, T51)) == 3
    # the KV of a 2,000-token prompt, 655 MB, over 400 Gb/s InfiniBand (50 GB/s): 13 ms added to the first token
    assert x.kv_transfer_s(KV, PROMPT, 50) == pytest.approx(327_680 * 2_000 / 50e9) == pytest.approx(0.0131072)
    assert x.kv_transfer_s(KV, PROMPT, 450) == pytest.approx(0.0131072 / 9)


# --- Spares and availability -----------------------------------------------------------------------------------


def test_fleet_replicas_reproduces_the_back_of_the_envelope_two_replicas():
    # Back-of-the-Envelope §6: 4,387 tokens/s covers the 2,083 needed, "still ... at least two replicas, four GPUs"
    assert x.fleet_replicas(2_083, 4_387) == 2
    assert x.fleet_replicas(2_083, 4_387) * N_GPUS == 4
    assert x.fleet_replicas(2_083, 4_387, 0) == 2  # no spare, but never fewer than two
    assert x.fleet_replicas(2_083, 4_387, 0, 1) == 1
    # ten times the traffic: 5 replicas for the peak (Back-of-the-Envelope: "5 replicas and 10 GPUs"), 6 with a spare
    assert x.fleet_replicas(20_833, 4_387, 0) == 5 and x.fleet_replicas(20_833, 4_387) == 6


def test_fleet_for_the_back_of_the_envelope_peak_with_prefill_counted():
    per_replica = x.replica_rps_chunked(PREFILL_S, PROMPT, OUTPUT, T51)
    # ceil(6.944 / 2.957) = 3 for the peak, plus one spare
    assert x.fleet_replicas(PEAK_RPS, per_replica) == 4
    assert x.fleet_replicas(PEAK_RPS, per_replica, 2) == 5


def test_fleet_utilisation_by_hand():
    # 200,000 / 86,400 = 2.3148 requests/s on average over 4 x 2.957: 19.6%, below Back-of-the-Envelope's 30%
    per_replica = x.replica_rps_chunked(PREFILL_S, PROMPT, OUTPUT, T51)
    util = x.fleet_utilisation(200_000, per_replica, 4)
    assert util == pytest.approx(2.31481 / (4 * 2.95736), abs=1e-5) == pytest.approx(0.1957, abs=1e-4)
    assert util * 4 * per_replica * 86_400 == pytest.approx(200_000)
    assert x.fleet_utilisation(200_000, per_replica, 1) > 0.75  # fewer replicas, busier fleet
    assert x.fleet_utilisation(1_000_000, 1, 2) > 1  # cannot keep up even on average


def test_peak_coverage_flags_demand_beyond_the_spares():
    per_replica = 2.957
    assert x.peak_coverage(PEAK_RPS, per_replica, 4) == pytest.approx(3 * 2.957 / 6.94444, abs=1e-5)  # 1.277
    assert x.peak_coverage(PEAK_RPS, per_replica, 3) == pytest.approx(0.8516, abs=1e-4)  # a failure leaves it short
    assert x.peak_coverage(PEAK_RPS, per_replica, 3, 0) > 1  # fine while nothing fails
    assert x.peak_coverage(PEAK_RPS, per_replica, 1) == 0.0


# --- Input and output priced separately ------------------------------------------------------------------------


def test_input_and_output_cost_by_hand_for_the_back_of_the_envelope_four_gpus():
    share = x.prefill_share(PREFILL_S, OUTPUT, T94)  # 0.81133
    # a day costs 4 * 2.50 * 24 = $240: input 240 * 0.81133 / 400e6 tokens, output 240 * 0.18867 / 60e6 tokens
    assert x.cost_per_m_input(4, PRICE, 200_000, PROMPT, share) == pytest.approx(0.48680, abs=1e-5)
    assert x.cost_per_m_output(4, PRICE, 200_000, OUTPUT, share) == pytest.approx(0.75468, abs=1e-5)


def test_input_and_output_costs_add_up_to_the_bill():
    share = 0.6
    cin = x.cost_per_m_input(8, PRICE, 200_000, PROMPT, share)
    cout = x.cost_per_m_output(8, PRICE, 200_000, OUTPUT + 1_000, share)
    assert (cin * PROMPT + cout * (OUTPUT + 1_000)) * 200_000 / 1e6 == pytest.approx(8 * PRICE * 24)


def test_on_one_fully_loaded_replica_the_output_price_is_the_back_of_the_envelope_formula():
    # serving exactly REPLICA_RPS around the clock, the decode share of the bill over the output tokens is
    # COST_PER_M_TOKENS at the decode throughput: Back-of-the-Envelope's $0.32 per million output tokens at full load
    rps = x.replica_rps(PREFILL_S, OUTPUT, T94)
    share = x.prefill_share(PREFILL_S, OUTPUT, T94)
    out = x.cost_per_m_output(N_GPUS, PRICE, rps * 86_400, OUTPUT, share)
    assert out == pytest.approx(x.cost_per_m_tokens(N_GPUS, PRICE, T94)) and round(out, 2) == 0.32
    # and the input price is the prefill time's cost per prompt token: 2 * 2.50 * 0.29403 / 3,600 / 2,000 * 1e6
    assert x.cost_per_m_input(N_GPUS, PRICE, rps * 86_400, PROMPT, share) == pytest.approx(0.20419, abs=1e-5)


def test_cost_effect_of_prefix_caching_and_reasoning():
    base = x.prefill_share(PREFILL_S, OUTPUT, T94)
    cached = x.prefill_share(x.prefill_seconds(PARAMS_B, 800, N_GPUS, TFLOPS), OUTPUT, T94)
    # same fleet, same traffic: caching moves cost from input to output; input drops by 22%
    drop = 1 - x.cost_per_m_input(4, PRICE, 200_000, PROMPT, cached) / x.cost_per_m_input(
        4, PRICE, 200_000, PROMPT, base
    )
    assert drop == pytest.approx(1 - 0.63238 / 0.81133, abs=1e-4)
    assert x.cost_per_m_input(4, PRICE, 200_000, PROMPT, 0) == 0.0
    with pytest.raises(OutOfRangeError, match=r"^prefill_share must be a number from 0 to 1, got 1.2$"):
        x.cost_per_m_output(4, PRICE, 200_000, OUTPUT, 1.2)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (
            lambda: x.batch_for_latency(72.7, 1, 2, 3.35, 0, KV, CONTEXT),
            OutOfRangeError,
            r"^tokens_per_s_per_user must be a positive number up to 1e\+15, got 0$",
        ),
        (lambda: x.batch_for_ttft(72.7, 2, 989, 60, 2_000, 0), OutOfRangeError, r"^ttft_s must be a positive number"),
        (lambda: x.fleet_replicas(6.9, 2.9, -1), OutOfRangeError, r"^spare must be a whole number from 0 to"),
        (lambda: x.kv_transfer_s(KV, PROMPT, "fast"), ArgumentError, r"^link_gb_s must be a positive number"),
        (lambda: x.tail_share_data("600, 900", 16_384), ArgumentError, r"^lengths \(value 1 of 1\) must be a number"),
    ],
)
def test_bad_arguments_are_refused_naming_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_errors_name_only_arguments_the_user_typed():
    # Traffic functions must not call checked serving functions, whose checks would name arguments the
    # caller never typed: =PREFILL_REPLICAS(1,1E-16) said "capacity_tokens_per_s must be ...".
    assert x.prefill_replicas(1, 1e-16) == 1
    assert x.decode_replicas(1e12, 1e6, 1) == 10**18
    assert evaluate_formula("=PREFILL_REPLICAS(1,1E-16)").value == 1
    with pytest.raises(OutOfRangeError, match=r"^the result is too large to represent; check the inputs' units$"):
        x.decode_replicas(1e15, 1e18, 1e-300)
    assert x.batch_for_latency(1e-4, 1, 1, 1e5, 1e-3, 1e-12, 1e-12) == 1_000_000_000


def _extremes(domain) -> list[float]:
    """The edges of a numeric domain and its usual range: where a value passes its own check but not another's."""
    low = domain.low if domain.low is not None else -1e9
    values = {domain.high, (low + 1 if domain.kind == "whole" else low + 1e-16) if domain.low_open else low, 1.0}
    values |= set(domain.typical or ())
    if domain.kind == "whole":
        values = {math.ceil(v) for v in values}
    return sorted(v for v in values if (v > low if domain.low_open else v >= low) and v <= domain.high)


def _combination(edges: list[list[float]], index: int) -> tuple[float, ...]:
    """The ``index``-th element of ``itertools.product(*edges)``, without building the product."""
    out = []
    for values in reversed(edges):
        index, i = divmod(index, len(values))
        out.append(values[i])
    return tuple(reversed(out))


def test_combination_is_the_product_s_element():
    edges = [[1, 2], [3, 4, 5], [6]]
    import itertools

    assert [_combination(edges, i) for i in range(6)] == list(itertools.product(*edges))


@pytest.mark.slow
def test_no_numeric_function_names_an_argument_it_does_not_take():
    # The same finding across the registry: every error from a function of numbers names one of its own arguments
    # (or says the result is too large), at every combination of the edges of its arguments' domains.
    import itertools
    import random

    from xlsxplan.errors import XlsxplanError
    from xlsxplan.registry import FUNCTIONS

    rng = random.Random(0)
    checked = 0
    for fn in FUNCTIONS.values():
        if any(a.domain is None or a.domain.kind not in ("number", "whole", "bytes") for a in fn.args):
            continue
        names = {a.name for a in fn.args}
        edges = [_extremes(a.domain) for a in fn.args]
        total = math.prod(len(e) for e in edges)
        if total <= 1000:
            combos = itertools.product(*edges)
        else:  # 1,000 of the combinations, drawn by index: the whole product of 20 arguments would not fit in memory
            combos = (_combination(edges, i) for i in rng.sample(range(total), 1000))
        for combo in combos:
            try:
                fn.func(*combo)
            except XlsxplanError as err:
                first = err.message.split()[0].rstrip(":,")
                assert first in names or err.message.startswith(("the result", f"{fn.python_name}: the result")), (
                    fn.name,
                    combo,
                    err.message,
                )
            checked += 1
    assert checked > 10_000


# --- The walk-through in docs/traffic.md cannot go stale ---------------------------------------------------------

ROOT = REPO


def _section() -> str:
    return (ROOT / "docs" / "traffic.md").read_text(encoding="utf-8")


def walkthrough() -> list[tuple[str, str]]:
    """Each ``$ xlsxplan ...`` command of docs/traffic.md (a line ending in a backslash goes on), with the output
    printed under it. tests/e2e/test_docs.py runs every one of them and compares."""
    from tests.helpers.docpages import commands, shell_blocks

    return [pair for block in shell_blocks("docs/traffic.md") for pair in commands(block)]


def test_the_walkthrough_is_there():
    # The manual (docs/traffic.md) walks through one plan where these inputs change the answer (the 72B FP8 pair of
    # GPUs with a p95 prompt of 12,000 tokens and a 60 tokens/s target), with the figures the tool prints: the serving
    # template's own cells, recalculated with those inputs, so the walk-through cannot drift from the template.
    commands = [command for command, _ in walkthrough()]
    recalcs = [
        c for c in commands if c.startswith("xlsxplan recalc workbooks/serving_plan_functions.xlsx -o /tmp/p.xlsx -q ")
    ]
    assert len(recalcs) == 5
    for c in recalcs:
        for given in ("Tail_Prompt_Tokens=12000", "Latency_Target=60", "Time_To_First_Token_Target=3"):
            assert f"--set {given}" in c, c
    used = {name for c in commands for name in re.findall(r"([A-Z_]+)\(", c)}
    assert {"BATCH_FOR_TTFT", "PAGED_BATCH", "TAIL_SHARE"} <= used


def _printed_cells() -> list[dict[str, str]]:
    """What each recalc step of the walkthrough printed, cell by cell."""
    return [
        dict(line.split("  ", 1) for line in printed.splitlines())
        for command, printed in walkthrough()
        if " recalc " in f" {command} "
    ]


def test_the_walkthrough_prose_quotes_the_figures_its_commands_print():
    # The prose rounds the printed cells; each claim is formatted from the step's own output, so a change in the
    # template that moves a figure fails here as well as in the output blocks above.
    steps = _printed_cells()
    prose = " ".join(_section().split())

    def n(step: int, cell: str) -> float:  # a figure as its cell's number format prints it: 2,785, $1.04, 19.6%
        text = steps[step][f"Outputs!{cell}"].replace(",", "").replace("$", "")
        return float(text[:-1]) / 100 if text.endswith("%") else float(text)

    words = {6: "six", 8: "eight", 12: "twelve", 3: "three"}
    claims = [
        f"room for {n(0, 'B27'):.0f} sequences of 12,300 tokens",
        f"{n(1, 'B29'):.0f} sequences fit but for the 5% overflow",
        f"may read only so much, {n(1, 'B37'):.0f} sequences",
        f"{n(1, 'B38'):.0f} sequences decode {n(1, 'B44'):,.0f} tokens/s",
        f"reads a 12,000-token prompt in {n(1, 'B46'):.2f} s",
        f"So the batch is {n(1, 'B39'):.0f}, at {n(1, 'B42'):.1f} tokens/s per user",
        f"that prompt takes {n(1, 'B47'):.2f} s",
        f"a replica serves {n(2, 'B57'):.2f} requests/s",
        f"one spare makes {n(2, 'B60'):.0f}: {words[n(2, 'B61')]} GPUs",
        f"{n(2, 'B66'):.1%} busy over the day",
        f"share of the arithmetic, {n(2, 'B76'):.0%}",
        f"costs the same in or out, ${n(2, 'B77'):.2f} per million",
        f"the fastest is {steps[2]['Outputs!B99'].rsplit(' ', 1)[1]} a user",
        f"then {steps[2]['Outputs!B100']}: {words[n(2, 'B101')]} GPUs",
        f"a replica serves {n(3, 'B57'):.2f} requests/s, and {words[n(3, 'B60')]} replicas ({words[n(3, 'B61')]} GPUs)",
        f"the first-token target allows {n(3, 'B38'):.0f} and the decode-speed target, {n(3, 'B39'):.0f}, binds",
        f"${n(3, 'B77'):.2f} against ${n(3, 'B78'):.2f} per million",
        f"memory holds {n(4, 'B30'):.0f}, the 60 tokens/s target allows {n(4, 'B37'):.0f}",
        f"users wait {n(4, 'B48'):.0f} s",
        f"a replica serves {n(4, 'B57'):.2f} requests/s, so the fleet grows to {n(4, 'B60'):.0f} replicas, "
        f"{words[n(4, 'B61')]} GPUs",
        f"${n(4, 'B78'):.2f} against ${n(4, 'B77'):.2f} per million",
    ]
    for claim in claims:
        assert claim in prose, claim
    assert n(2, "B77") == pytest.approx(n(2, "B78"))  # compute binds: a token costs the same in or out
    assert n(1, "B39") == n(1, "B38") < n(1, "B37") < n(1, "B29")  # the first-token target binds, not memory
    assert n(4, "B78") > n(4, "B77")  # decode binds with reasoning: output costs more
    # the hand arithmetic the prose adds: 6,802 compute tokens/s, 0.338 s of compute and 0.108 s of decode steps
    # per request, a $480 day
    compute = x.compute_tokens_per_s(PARAMS_B, N_GPUS * TFLOPS * 0.5)
    assert f"of the {compute:,.0f} tokens/s the two GPUs compute" in prose
    assert f"{PREFILL_S:.3f} s of compute" in prose and f"{PREFILL_S * 2_300 / 2_000:.3f} s in all" in prose
    assert f"take {300 / n(1, 'B44'):.3f} s at {n(1, 'B44'):,.0f} tokens/s" in prose
    assert f"The day's ${8 * PRICE * 24:.0f}" in prose


def test_costs_per_token_refuse_a_token_count_that_rounds_to_zero():
    # 1e-308 requests a day of 1e-308 tokens each: both legal, their product below the smallest double (it was a
    # ZeroDivisionError out of the Python face)
    from xlsxplan import cost_per_m_input, cost_per_m_output
    from xlsxplan.errors import OutOfRangeError

    with pytest.raises(OutOfRangeError, match=r"^requests_per_day x prompt_tokens is too small for a double"):
        cost_per_m_input(1, 2.5, 1e-308, 1e-308, 0.5)
    with pytest.raises(OutOfRangeError, match=r"^requests_per_day x output_tokens is too small for a double"):
        cost_per_m_output(1, 2.5, 1e-308, 1e-308, 0.5)


def test_the_first_token_batch_keeps_the_step_that_ends_the_prompt_within_the_target():
    # the docstring's case (Qwen2.5-72B in FP8 on two H100s, a 12,000-token prompt in 3 s at 60 tokens/s): 44, its
    # 16 ms step far within; a 20 ms target leaves the same compute room per second, but a step must end within 20 ms
    args = (72.7, 2, 989, 60, 12_000)
    memory = (1, 3.35, 327_680, 2_300)
    assert traffic.batch_for_ttft(*args, 3, 0.5, *memory) == 44
    weights = 72.7e9 / (2 * 3.35e12)  # a step's read of the weights, 10.9 ms
    per_sequence = 327_680 * 2_300 / (2 * 3.35e12)
    b = traffic.batch_for_ttft(72.7, 2, 989, 60, 12, 0.02, 0.5, *memory)  # a 12-token prompt: room is no limit
    assert b == int((0.02 - weights) / per_sequence)  # the step's own bound
    assert traffic.batch_for_ttft(72.7, 2, 989, 60, 12, 0.01, 0.5, *memory) == 0  # the weights alone take 10.9 ms
    # without the memory figures, a step at the target speed: 1/60 s, within 0.02 s, not within 0.01 s
    assert traffic.batch_for_ttft(72.7, 2, 989, 60, 12, 0.02) > 0
    assert traffic.batch_for_ttft(72.7, 2, 989, 60, 12, 0.01) == 0
