"""The worked examples of "Estimating the Compute and Memory Needed for Language Models", figure by figure.

The document (shared/seeds/003_*.txt; Compute and Memory below) takes its figures from the Parameter Golf
competition (8 x H100 SXM, 600 s) and measured M2 runs; each test names its section.
"""

from __future__ import annotations

import pytest

import xlsxplan as x
from xlsxplan.errors import OutOfRangeError

RECORD_PARAMS_B = 0.03595  # the 35.95M-parameter Calib32 record
RECORD_TOKENS = 3.927e9
RECORD_SECONDS = 599.6
H100_DENSE_BF16 = 989.5  # Compute and Memory: "about 989.5 TFLOP/s per GPU"


def test_6nd_example_training_computation():
    # "training a 7-billion-parameter model on 140 billion tokens gives" 5.88e21 FLOPs.
    assert x.train_flops(7, 140e9) == pytest.approx(5.88e21)


def test_chinchilla_tokens_actual_competition_runs():
    # "For a 35.95M model, that would be about" 0.719B tokens; "The actual run saw 3.927B tokens, or about 5.5 times".
    assert x.chinchilla_tokens(RECORD_PARAMS_B) == pytest.approx(7.19e8)
    assert round(x.chinchilla_ratio(RECORD_PARAMS_B, RECORD_TOKENS), 1) == 5.5


def test_chinchilla_rule_against_published_table():
    # Hoffmann et al. 2022 Table 3 (shared/data/measurements.csv): 1B -> 20.2B tokens, 10B -> 205.1B tokens.
    # The 20N rule of thumb is within 2.5% of both.
    assert x.chinchilla_tokens(1) == pytest.approx(20.2e9, rel=0.025)
    assert x.chinchilla_tokens(10) == pytest.approx(205.1e9, rel=0.025)


def test_eight_h100_dense_peak():
    # "The corresponding dense BF16 peak is about 989.5 TFLOP/s per GPU, or 7.92 PFLOP/s across eight GPUs."
    assert round(8 * H100_DENSE_BF16 / 1000, 2) == 7.92
    assert round(8 * x.gpu_spec("H100-SXM", "bf16_tflops") / 1000, 2) == 7.92


def test_record_token_rate_and_6n_flops():
    # "6.55M tokens/s observed, 1.41 PFLOP/s under the simple 6N normalisation."
    tokens_per_s = RECORD_TOKENS / RECORD_SECONDS
    assert round(tokens_per_s / 1e6, 2) == 6.55
    assert round(x.flops_6n(RECORD_PARAMS_B, 6.55e6) / 1e15, 2) == 1.41


def test_record_mfu_is_18_percent():
    # "Relative to the 7.92 PFLOP/s dense BF16 hardware peak, this simple normalisation is about 18%."
    assert round(x.mfu(RECORD_PARAMS_B, 6.55e6, 8, H100_DENSE_BF16), 2) == 0.18
    assert round(x.mfu(RECORD_PARAMS_B, 6.55e6, 8, x.gpu_spec("H100", "bf16_tflops")), 2) == 0.18


def test_train_tokens_reproduces_the_record_run():
    # (0.03595, 1.413e15, 599.6) -> 3.93e9 tokens; the record's log says 3.927B.
    assert round(x.train_tokens(RECORD_PARAMS_B, 1.413e15, RECORD_SECONDS) / 1e9, 2) == 3.93


def test_optimal_size_for_ten_minutes_on_eight_h100s():
    # "about 84M parameters for the eight-H100 record": N = sqrt(C t / 120) with C = 1.41 PFLOP/s, t = 600 s.
    assert round(x.optimal_params_b(1.41e15, 600) * 1000) == 84
    assert round(x.optimal_params_b(x.flops_6n(RECORD_PARAMS_B, 6.55e6), 600) * 1000) == 84


def test_optimal_size_for_ten_minutes_on_the_m2():
    # "about 1.7-2.4M for the measured M2 dense-transformer rates": the 41.2M dense model at "about 2,400
    # tokens/s" (B=1, T=2048) and "4,900 tokens/s" (B=4, T=512). 2,400 gives 1.72M. The document's 2.4M needs a
    # rate below 4,857 tokens/s, so the "about 4,900" is a rounded ~4,850: at 4,850 the size is 2.45M; at the
    # rounded 4,900 it is 2.46M, within 3% of the document's 2.4M.
    low = x.optimal_params_b(x.flops_6n(0.0412, 2_400), 600) * 1000
    assert round(low, 1) == 1.7
    high = x.optimal_params_b(x.flops_6n(0.0412, 4_850), 600) * 1000
    assert round(high, 1) == 2.4
    assert x.optimal_params_b(x.flops_6n(0.0412, 4_900), 600) * 1000 == pytest.approx(2.4, rel=0.03)


def test_m2_projection_in_days():
    # "that puts the 35.95M projection at roughly 8-16 days; the small-model anchor gives about 20 days."
    # Anchor: a 361,608-parameter run of 8,428 steps x 8,192 tokens in five minutes (Compute and Memory, note 10).
    day = 86_400
    slow = x.run_seconds(RECORD_PARAMS_B, RECORD_TOKENS, x.flops_6n(0.0412, 2_400)) / day
    fast = x.run_seconds(RECORD_PARAMS_B, RECORD_TOKENS, x.flops_6n(0.0412, 4_900)) / day
    anchor_rate = 8_428 * 8_192 / 300
    anchor = x.run_seconds(RECORD_PARAMS_B, RECORD_TOKENS, x.flops_6n(361_608e-9, anchor_rate)) / day
    assert round(fast) == 8
    assert 16 <= slow < 17
    assert round(anchor) == 20


def test_data_passes_which_fineweb():
    # "The historical baseline cached 2.5B tokens and processed 7.225B, so it made about 2.9 passes. The final
    # 36M-class run cached 8B and processed 3.927B, so it used about half of one pass."
    assert round(x.data_passes(7.225e9, 2.5e9), 1) == 2.9
    assert round(x.data_passes(RECORD_TOKENS, 8e9), 1) == 0.5
    # "The 3.927B-token 36M run is only about 0.026% of the original 15T-token corpus."
    assert round(100 / x.data_passes(15e12, RECORD_TOKENS), 3) == 0.026


def test_training_memory_storing_the_model():
    # "each parameter may need ... That can reach roughly 16 bytes per parameter": 7B -> 112 GB.
    assert x.train_memory_gb(7) == 112
    assert x.train_memory_gb(7, 2) == x.weights_gb(7, 2)


def test_ternary_packs_73_7m_parameters_under_16_mb():
    # "a ternary submission ... fit 73.7M parameters into the same 16 MB limit": at log2(3) bits each they take
    # 14.6 MB, and the 35.95M BF16 model would take 71.9 MB.
    assert x.weights_gb(0.0737, "ternary") * 1000 == pytest.approx(14.6, abs=0.05)
    assert x.weights_gb(0.0737, "ternary") < 0.016 < x.weights_gb(RECORD_PARAMS_B, "bf16")


def test_train_seconds_and_gpu_hours():
    # 6ND / (n C mfu): 7B on 140B tokens on 64 H100s (989.4 TFLOP/s) at the default 40% MFU.
    seconds = x.train_seconds(7, 140e9, 64, 989.4)
    assert seconds == pytest.approx(5.88e21 / (64 * 989.4e12 * 0.4))
    assert x.train_seconds(7, 140e9, 64, 989.4, 1) == pytest.approx(seconds * 0.4)  # the ideal lower bound
    assert x.gpu_hours(seconds, 64) == pytest.approx(seconds * 64 / 3600)


def test_llama_65b_gpu_hours_within_range_of_default_mfu():
    # LLaMA-65B: 380 tokens/s/GPU on 2,048 A100-80GB (arXiv:2302.13971 section 2.4) -> MFU by 6N is 0.476;
    # 1.4T tokens at that MFU is 1,023k GPU-hours against the 1,022,362 published (Table 15).
    utilisation = x.mfu(65.2, 380 * 2048, 2048, 312)
    assert round(utilisation, 3) == 0.476
    hours = x.gpu_hours(x.train_seconds(65.2, 1.4e12, 2048, 312, utilisation), 2048)
    assert hours == pytest.approx(1_022_362, rel=0.01)


def test_mfu_above_one_is_refused():
    with pytest.raises(OutOfRangeError, match=r"^tokens_per_s implies 143% of peak"):
        x.mfu(RECORD_PARAMS_B, 6.55e6, 1, 989.5)


def test_gpt3_train_flops_from_published_table():
    # Brown et al. 2020 Table D.1: 174.6B parameters, 300B tokens, 3.14e23 FLOPs (measurements.csv).
    assert x.train_flops(174.6, 300e9) == pytest.approx(3.14e23, rel=0.001)
