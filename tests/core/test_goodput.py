"""Goodput: Young's checkpoint interval, a job's mean time between interruptions and the effective-time ratio, by
hand, and the Llama 3.1 405B run's effective training time from cited inputs only."""

from __future__ import annotations

import math

import pytest

from xlsxplan.core import goodput
from xlsxplan.errors import XlsxplanError


def test_young_interval_by_hand():
    # a 60 s checkpoint on a job interrupted every 10 hours: sqrt(2 x 60 x 36,000) = sqrt(4,320,000) = 2,078.46 s
    assert goodput.checkpoint_interval_s(60, 36_000) == pytest.approx(2078.46, abs=0.01)


def test_effective_time_ratio_by_hand():
    # tau 2,078.46 s of work + 60 s of checkpoint = a 2,138.46 s period, of which 97.1942% makes progress;
    # each interruption (one every 36,000 s) costs 600 s of restart and half a period redone, 1,669.23 s:
    # 4.6367% of the time. 0.971942 x (1 - 0.046367) = 0.926876
    assert goodput.effective_time_ratio(2078.46, 60, 600, 36_000) == pytest.approx(0.926876, abs=2e-6)


def test_young_interval_is_the_best_interval():
    best = goodput.checkpoint_interval_s(60, 36_000)
    at_best = goodput.effective_time_ratio(best, 60, 600, 36_000)
    for other in (best / 2, best * 0.9, best * 1.1, best * 2):
        assert goodput.effective_time_ratio(other, 60, 600, 36_000) < at_best


def test_interruptions_faster_than_recovery_leave_nothing():
    # a restart of 1,000 s on a job interrupted every 900 s never progresses
    assert goodput.effective_time_ratio(100, 10, 1_000, 900) == 0


def test_job_mtbf_falls_with_gpus():
    # Llama 3: 419 unexpected interruptions in 54 days on 16,384 GPUs: one every 54 x 86,400 / 419 = 11,135.1 s
    assert goodput.job_mtbf_s(16_384) == pytest.approx(54 * 86_400 / 419, rel=1e-12)
    assert goodput.job_mtbf_s(1_024) == pytest.approx(16 * 54 * 86_400 / 419, rel=1e-12)
    assert goodput.job_mtbf_s(10, 1e-4) == pytest.approx(3_600_000)


def test_checkpoint_time_by_hand():
    # 405B parameters x 14 bytes (BF16 weights 2, FP32 master 4, Adam moments 8) = 5,670 GB at 2,000 GB/s: 2.835 s
    assert goodput.checkpoint_s(405 * 14, 16_384) == pytest.approx(2.835, rel=1e-9)


def test_llama_405b_effective_time_from_cited_inputs():
    """The Llama 3 paper (arXiv:2407.21783) reports "higher than 90% effective training time" for the 405B run on
    16,384 H100s. Cited inputs only: 419 unexpected interruptions in 54 days (section 3.3.4), the model state written
    at the storage's sustained 2 TB/s (section 3.3.1: checkpoints of each GPU's state, 1 MB to 4 GB), and a restart
    of ten minutes (ByteRobust, arXiv:2509.16293: more than ten minutes at 10,000-GPU scale)."""
    rate = 419 / (54 * 24 * 16_384)
    mtbf = goodput.job_mtbf_s(16_384, rate)
    write = goodput.checkpoint_s(405 * 14, 16_384, 2_000 / 16_384)
    interval = goodput.checkpoint_interval_s(write, mtbf)
    ratio = goodput.effective_time_ratio(interval, write, 600, mtbf)
    assert abs(ratio - 0.90) <= 0.05
    assert 0.90 < ratio < 0.95  # "higher than 90%", and not the ideal the restarts rule out


def test_a_failure_rate_of_zero_is_refused_naming_it():
    with pytest.raises(XlsxplanError) as err:
        goodput.job_mtbf_s(8, 0)
    assert err.value.argument == "failures_per_gpu_hour"
    assert math.isfinite(goodput.job_mtbf_s(8, 1e-9))
