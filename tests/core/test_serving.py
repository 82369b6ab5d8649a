"""The worked example of "Back-of-the-Envelope Estimation for LLM Systems", figure by figure, and the serving
functions' edge cases.

The document (shared/seeds/000_*.txt; Back-of-the-Envelope below) prints in its section 6:

    KV cache per token: 72B 320 KiB, 7B 56 KiB
    peak load: 6.9 requests/s, 2,083 output tokens/s
    72B, BF16, 2 GPUs: weights 145 GB don't fit in 144 GB of usable memory
    72B, FP8, 2 GPUs: batch 94, 47 tok/s per user (92 if alone), 4,387 tok/s total, prefill 0.29 s, $0.32 per M ...
    72B, BF16, 4 GPUs: batch 189, 47 tok/s per user (92 if alone), 8,799 tok/s total, prefill 0.15 s, $0.32 ...
    7B, BF16, 1 GPU: batch 430, 47 tok/s per user (220 if alone), 20,031 tok/s total, prefill 0.06 s, $0.03 ...

The document's own inputs are used here (H100: 80 GB, 3.35 TB/s, 989 TFLOP/s; Qwen2.5-72B 72.7B, Qwen2.5-7B 7.6B).
"""

from __future__ import annotations

import math

import pytest

import xlsxplan as x
from xlsxplan.errors import ArgumentError, OutOfRangeError

H100_GB, H100_TBS, H100_TFLOPS = 80, 3.35, 989
KV_72B = 2 * 80 * 8 * 128 * 2
KV_7B = 2 * 28 * 4 * 128 * 2
CONTEXT = 2_000 + 300
PRICE = 2.50

# (label, params_b, bytes_per_param, n_gpus, kv bytes/token) -> printed (batch, per user, alone, total, prefill, $/M)
ENVELOPE_TABLE = [
    ("72B, FP8, 2 GPUs", 72.7, 1, 2, KV_72B, (94, 47, 92, "4,387", "0.29", "0.32")),
    ("72B, BF16, 4 GPUs", 72.7, 2, 4, KV_72B, (189, 47, 92, "8,799", "0.15", "0.32")),
    ("7B, BF16, 1 GPU", 7.6, 2, 1, KV_7B, (430, 47, 220, "20,031", "0.06", "0.03")),
]


def test_kv_bytes_per_token_back_of_the_envelope_section_3():
    # Back-of-the-Envelope §3: 2 x 80 x 8 x 128 x 2 = 327,680 bytes (320 KiB); 2 x 28 x 4 x 128 x 2 = 57,344 (56 KiB).
    assert x.kv_bytes_per_token(80, 8, 128, 2) == 327_680
    assert x.kv_bytes_per_token(28, 4, 128, 2) == 57_344
    assert x.kv_bytes_per_token(80, 8, 128) / 1024 == 320
    assert x.kv_bytes_per_token(28, 4, 128) / 1024 == 56


def test_grouped_query_attention_shrinks_cache_eightfold_back_of_the_envelope_section_3():
    # "64 query heads but only 8 KV heads, so its cache is 8 times smaller"
    assert x.kv_bytes_per_token(80, 64, 128) / x.kv_bytes_per_token(80, 8, 128) == 8


def test_one_conversation_kv_back_of_the_envelope_section_3():
    # "A single 2,300-token conversation on the 72B model therefore holds about 0.75 GB of KV cache."
    assert x.kv_gb(327_680, 2_300) == pytest.approx(0.753664)
    assert round(x.kv_gb(327_680, 2_300), 2) == 0.75
    assert x.kv_gb(327_680, 2_300, 94) == pytest.approx(94 * 0.753664)


def test_peak_load_back_of_the_envelope_section_1():
    # 200,000 requests/day, 2,000 prompt + 300 output tokens, peak 3x: "6.9 requests/s, 2,083 output tokens/s",
    # and "about 14,000 prompt tokens ... per second".
    assert f"{x.peak_requests_per_s(200_000, 3):.1f}" == "6.9"
    assert f"{x.peak_tokens_per_s(200_000, 300, 3):,.0f}" == "2,083"
    assert round(x.peak_tokens_per_s(200_000, 2_000), -3) == 14_000


def test_weights_and_usable_memory_back_of_the_envelope_section_2():
    # 72B in BF16 needs 145 GB, more than two H100s' usable 144 GB; in FP8 it fits on two.
    assert x.weights_gb(72.7, 2) == pytest.approx(145.4)
    assert f"{x.weights_gb(72.7, 2):.0f}" == "145"
    assert x.usable_gb(2, 80) == pytest.approx(144)
    assert x.usable_gb(4, 80) > x.weights_gb(72.7, 2) > x.usable_gb(2, 80) > x.weights_gb(72.7, "fp8")


def test_72b_bf16_on_two_gpus_does_not_fit_back_of_the_envelope_section_6():
    assert x.max_batch(72.7, 2, KV_72B, CONTEXT, 2, H100_GB) == 0
    assert x.free_gb(72.7, 2, 2, H100_GB) == pytest.approx(-1.4)


@pytest.mark.parametrize(
    "label, params_b, bpp, n_gpus, kv, printed", ENVELOPE_TABLE, ids=[r[0] for r in ENVELOPE_TABLE]
)
def test_back_of_the_envelope_section_6_table(label, params_b, bpp, n_gpus, kv, printed):
    batch, per_user, alone, total, prefill, dollars = printed
    b = x.max_batch(params_b, bpp, kv, CONTEXT, n_gpus, H100_GB)
    assert b == batch
    user = x.decode_tokens_per_s(params_b, bpp, n_gpus, H100_TBS, b, kv, CONTEXT)
    assert f"{user:.0f}" == str(per_user)
    assert f"{x.decode_tokens_per_s(params_b, bpp, n_gpus, H100_TBS):.0f}" == str(alone)
    throughput = x.decode_tokens_per_s_total(params_b, bpp, n_gpus, H100_TBS, b, kv, CONTEXT)
    assert f"{throughput:,.0f}" == total
    assert throughput == pytest.approx(b * user)
    assert f"{x.prefill_seconds(params_b, 2_000, n_gpus, H100_TFLOPS):.2f}" == prefill
    assert f"{x.cost_per_m_tokens(n_gpus, PRICE, throughput):.2f}" == dollars


def test_decode_at_batch_94_back_of_the_envelope_section_4():
    # 46.7 tokens/s at batch 94 with 327,680 B/token and 2,300 tokens (Back-of-the-Envelope §4 prints 47)
    assert round(x.decode_tokens_per_s(72.7, 1, 2, 3.35, 94, 327_680, 2_300), 1) == 46.7
    assert round(x.decode_tokens_per_s(72.7, 1, 2, 3.35)) == 92


def test_full_memory_step_is_about_21_ms_back_of_the_envelope_section_4():
    # "each step reads ... about 72 GB per GPU, so the step takes about 72 GB / 3.35 TB/s = 21 ms ... roughly 47
    # tokens per second" -- whatever the model: weights of 72 GB on one GPU, batch 1, no KV.
    step_ms = 1000 / x.decode_tokens_per_s(72, 1, 1, 3.35)
    assert round(step_ms) == 21
    assert round(1000 / step_ms) == 47


def test_cost_at_thirty_percent_utilisation_back_of_the_envelope_section_6():
    # "At 30% average utilisation ... divide by 0.3: about $1.05 per million output tokens for the 72B setup."
    # Unrounded $0.3166/0.3 = $1.0554: the document quotes it to the cent below.
    throughput = x.decode_tokens_per_s_total(72.7, 1, 2, 3.35, 94, KV_72B, CONTEXT)
    full = x.cost_per_m_tokens(2, PRICE, throughput)
    at_30 = x.cost_per_m_tokens(2, PRICE, throughput, 0.3)
    assert at_30 == pytest.approx(full / 0.3)
    assert math.floor(at_30 * 100) / 100 == 1.05


def test_ten_times_traffic_needs_five_replicas_back_of_the_envelope_section_6():
    # "At ten times the traffic, 20,833 output tokens/s, ... 20,833 / 4,387 = 4.7, so 5 replicas and 10 GPUs."
    demand = 10 * x.peak_tokens_per_s(200_000, 300)
    capacity = x.decode_tokens_per_s_total(72.7, 1, 2, 3.35, 94, KV_72B, CONTEXT)
    assert f"{demand:,.0f}" == "20,833"
    assert round(demand / capacity, 1) == 4.7
    assert x.replicas(demand, capacity) == 5
    assert 2 * x.replicas(demand, capacity) == 10
    assert x.replicas(20_833, 4_387) == 5
    # "In production you'd still run at least two replicas": one spare on top of the one the peak needs.
    assert x.replicas(x.peak_tokens_per_s(200_000, 300), capacity, 1) == 2


def test_7b_is_about_ten_times_cheaper_back_of_the_envelope_section_6():
    big = x.cost_per_m_tokens(2, PRICE, x.decode_tokens_per_s_total(72.7, 1, 2, 3.35, 94, KV_72B, CONTEXT))
    small = x.cost_per_m_tokens(1, PRICE, x.decode_tokens_per_s_total(7.6, 2, 1, 3.35, 430, KV_7B, CONTEXT))
    assert 9 < big / small < 12


def test_zero_demand_needs_only_the_spares():
    # Zero demand is a normal row in a sweep (a quiet hour, a product not launched yet), not an error
    assert x.replicas(0, 4387) == 0
    assert x.replicas(0, 4387, 2) == 2
    assert x.replicas(0.0, 1e-6, 1) == 1
    with pytest.raises(OutOfRangeError, match=r"^demand_tokens_per_s must be a number from 0 to "):
        x.replicas(-1, 4387)


def test_replicas_forgives_float_noise_but_not_real_excess():
    assert x.replicas(4387.0000000000001, 4387) == 1
    assert x.replicas(4388, 4387) == 2
    assert x.replicas(1, 4387, 2) == 3


def test_whole_rounding_forgives_a_few_ulps_not_a_share_of_the_number():
    # A tolerance of 1e-9 of the number would forgive a whole replica above a billion.
    assert x.replicas(2_000_000_001, 2) == 1_000_000_001
    assert x.replicas(999_999_999_999_999, 1e6) == 1_000_000_000
    assert x.replicas(999_999_999_100_000, 1e6) == 1_000_000_000
    from xlsxplan.core.equations import whole_ceil, whole_floor

    assert whole_floor(math.nextafter(95.0, 0)) == 95 and whole_ceil(math.nextafter(5.0, 6)) == 5
    assert whole_floor(1e9 - 0.5) == 999_999_999 and whole_ceil(1e9 + 0.5) == 1_000_000_001
    assert whole_floor(0.0) == 0 and whole_ceil(0.0) == 0
    assert whole_ceil(1e18) == 10**18 and whole_floor(2.0**60) == 2**60  # beyond 2**53 every float is whole


def test_max_batch_is_a_whole_count_and_exact_at_the_boundary():
    # usable 100 GB, weights 20 GB, 1 GB per sequence: exactly 80 sequences, not 79.
    assert x.max_batch(10, 2, 1e9 / 1000, 1000, 1, 100, 1) == 80


def test_compute_and_memory_bandwidth_ceilings_m2_and_h200():
    # Compute and Memory, "Apple M2 and NVIDIA H200": ideal batch-one ceilings from the weights alone; the 7B FP16 M2
    # row is 7.1 tokens/s, and 70B FP16 on the H200 leaves only about 1 GB of its 141 GB.
    assert round(x.decode_tokens_per_s(7, 2, 1, 0.1), 1) == 7.1
    assert round(x.decode_tokens_per_s(7, 2, 1, 4.8), 1) == 342.9
    assert round(x.decode_tokens_per_s(70, 2, 1, 4.8), 1) == 34.3
    assert round(x.decode_tokens_per_s(70, "int4", 1, 4.8), 1) == 137.1
    assert x.free_gb(70, 2, 1, 141, 1) == pytest.approx(1.0)
    # "The tested 8 GB M2 rules out 7B FP16": 14 GB of weights in 8 GB.
    assert x.free_gb(7, 2, 1, 8, 1) < 0


def test_compute_and_memory_inference_compute_ceiling():
    # "A 7-billion-parameter model consequently needs about 14 billion FLOPs for each generated token."
    assert x.inference_flops(7) == 14e9
    # C / 2N on an H200 (989.4 dense BF16 TFLOP/s): about 70,700 tokens/s, far above the memory ceiling.
    assert x.compute_tokens_per_s(7, 989.4) == pytest.approx(989.4e12 / 14e9)
    assert x.tokens_per_s_ceiling(7, 2, 989.4, 4.8) == pytest.approx(x.decode_tokens_per_s(7, 2, 1, 4.8))
    # "At FP16 ... only about one FLOP per byte": 2N FLOPs over 2N bytes.
    assert x.inference_flops(7) / (x.weights_gb(7, 2) * 1e9) == 1


def test_precision_names_work_where_a_byte_count_does():
    assert x.weights_gb(72.7, "fp8") == x.weights_gb(72.7, 1)
    assert x.weights_gb(72.7, "BF16") == x.weights_gb(72.7, 2)
    assert x.kv_bytes_per_token(80, 8, 128, "fp8") == 163_840


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: x.kv_bytes_per_token(80, -1, 128), r"^kv_heads must be a whole number from 1 to 1,000,000, got -1$"),
        (lambda: x.kv_bytes_per_token(80, 8.5, 128), r"^kv_heads must be a whole number .* got 8\.5$"),
        (lambda: x.max_batch(72.7, 2, 327_680, 2_300, 0, 80), r"^n_gpus must be a whole number from 1 .* got 0$"),
        (lambda: x.decode_tokens_per_s(72.7, 1, 2, 3.35, 0), r"^batch must be a whole number from 1 .* got 0$"),
        (
            lambda: x.usable_gb(2, 80, 1.2),
            r"^usable_fraction must be a fraction above 0 and at most 1 \(0\.9 for 90%\), got 1\.2$",
        ),
        (
            lambda: x.prefill_seconds(72.7, 2000, 2, 989, 0),
            r"^utilisation must be a fraction above 0 and at most 1 .* got 0$",
        ),
        (lambda: x.weights_gb(float("nan")), r"^params_b must be a positive number up to 1,000,000, got NaN$"),
        (lambda: x.weights_gb(1e308), r"^params_b must be .* got 1e\+308$"),
        (lambda: x.peak_tokens_per_s(1000, 300, 0.5), r"^peak_factor must be a number from 1 to 10,000, got 0\.5$"),
        (lambda: x.replicas(100, 0), r"^capacity_tokens_per_s must be a positive number"),
        (lambda: x.replicas(100, 10, -1), r"^spare must be a whole number from 0 to 1,000,000, got -1$"),
    ],
)
def test_out_of_range_arguments_are_refused_naming_the_argument(call, match):
    with pytest.raises(OutOfRangeError, match=match):
        call()


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: x.weights_gb("72.7"), r"^params_b must be a positive number up to 1,000,000, got text '72\.7'$"),
        (lambda: x.kv_bytes_per_token(80, True, 128), r"^kv_heads must be .* got TRUE$"),
        (lambda: x.kv_bytes_per_token(80, None, 128), r"^kv_heads is required"),
    ],
)
def test_wrong_kinds_are_refused_naming_the_argument(call, match):
    with pytest.raises(ArgumentError, match=match):
        call()


def test_unknown_precision_name_suggests_close_ones():
    with pytest.raises(x.UnknownPresetError, match=r"^bytes_per_param: precision 'fp9' is not a known format; did you"):
        x.weights_gb(7, "fp9")


def test_errors_are_value_errors_with_one_line_messages():
    with pytest.raises(ValueError) as info:
        x.kv_bytes_per_token(0, 8, 128)
    assert "\n" not in str(info.value)
    assert info.value.argument == "layers"
    assert info.value.excel_error == "#NUM!"
