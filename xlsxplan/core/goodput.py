"""Goodput of a long training run: interruptions, checkpoints and restarts as a share of the wall-clock time.

A synchronous training job stops whenever any of its GPUs, hosts or links fails, so its mean time between
interruptions falls as one over its GPU count. It resumes from its last checkpoint: each interruption costs the
restart and the work done since that checkpoint, and each checkpoint costs the time to write it. The interval that
balances the two is Young's; the share of the wall-clock time left for progress is the effective-time ratio (Meta's
"effective training time", ETTR).

Units: time in seconds, rates in failures per GPU-hour, memory in decimal GB, bandwidth in GB/s.

References
----------
.. [1] Young 1974, "A first order approximation to the optimum checkpoint interval", Communications of the ACM
   17(9): the interval ``sqrt(2 C M)`` for a checkpoint of C seconds and a mean time between failures M.
.. [2] Daly 2006, "A higher order estimate of the optimum checkpoint interval for restart dumps", Future Generation
   Computer Systems 22(3): the same first-order interval, the restart time R added to the cost of a failure.
.. [3] Dubey et al. 2024, "The Llama 3 Herd of Models", arXiv:2407.21783: section 3.3.4, 466 job interruptions
   in a 54-day snapshot of the 405B pre-training on 16,384 H100s, 47 planned and 419 unexpected, and "higher than 90%
   effective training time"; section 3.3.1, the Tectonic storage sustaining 2 TB/s (7 TB/s peak) for checkpoints of
   1 MB to 4 GB a GPU.
.. [4] ByteDance 2025, "Robust LLM Training Infrastructure at ByteDance" (ByteRobust), SOSP 2025, arXiv:2509.16293:
   at 10,000-GPU scale a fail-stop, diagnose, reschedule and checkpoint-reload cycle costs more than ten minutes
   (its motivation).
"""

from __future__ import annotations

from ..domains import FailuresPerGPUHour, GPUs, MemoryGB, Seconds, SecondsOrZero, checked
from ..infra.elementwise import sqrt, where

__all__ = [
    "LLAMA3_FAILURES_PER_GPU_HOUR",
    "CHECKPOINT_GB_S_PER_GPU",
    "RESTART_S",
    "job_mtbf_s",
    "checkpoint_interval_s",
    "checkpoint_s",
    "effective_time_ratio",
]

LLAMA3_FAILURES_PER_GPU_HOUR = 419 / (54 * 24 * 16_384)
"""Unexpected interruptions per GPU-hour of the Llama 3 405B pre-training: 419 in 54 days on 16,384 H100s (Llama 3,
arXiv:2407.21783, section 3.3.4), 1.97e-5, one every 3.1 hours for the whole job. Planned interruptions (47) are left
out: they are scheduled, and lose no work."""

CHECKPOINT_GB_S_PER_GPU = 2000 / 16_384
"""Checkpoint write bandwidth per GPU: the Llama 3 storage's sustained 2 TB/s shared by its 16,384 GPUs
(arXiv:2407.21783, section 3.3.1), 0.122 GB/s a GPU; a job's storage is assumed to grow with it."""

RESTART_S = 600.0
"""Seconds an interruption costs besides the lost work: detecting it, rescheduling and reloading the checkpoint,
more than ten minutes at 10,000-GPU scale (ByteRobust's motivation, arXiv:2509.16293)."""


@checked(arrays=True)
def job_mtbf_s(n_gpus: GPUs, failures_per_gpu_hour: FailuresPerGPUHour = LLAMA3_FAILURES_PER_GPU_HOUR) -> float:
    """Mean time between interruptions of a synchronous job, which stops when any of its GPUs does.

    Parameters
    ----------
    n_gpus : int
        GPUs the job holds [count].
    failures_per_gpu_hour : float, default 1.97e-5
        Interruptions per GPU-hour; the default is the Llama 3 405B run's 419 in 54 days on 16,384 H100s
        [failures/GPU-h].

    Returns
    -------
    float
        Mean time between interruptions of the job [s].

    Notes
    -----
    ``3600 / (n_gpus * rate)``: independent failures add their rates (a Poisson process). On 16,384 GPUs at the
    default rate, 11,135 s, one interruption every 3.1 hours (Llama 3, arXiv:2407.21783, section 3.3.4).
    """
    return 3600.0 / (n_gpus * failures_per_gpu_hour)


@checked(arrays=True)
def checkpoint_interval_s(checkpoint_s: Seconds, mtbf_s: Seconds) -> float:
    """Young's checkpoint interval: the work between checkpoints that loses the least time.

    Parameters
    ----------
    checkpoint_s : float
        Time to write one checkpoint, C [s].
    mtbf_s : float
        Mean time between interruptions of the job, M [s].

    Returns
    -------
    float
        Work between two checkpoints [s].

    Notes
    -----
    ``sqrt(2 C M)`` (Young 1974; Daly 2006's first-order estimate): checkpointing more often writes more, less often
    redoes more after a failure. A 60 s checkpoint on a job failing every 10 hours: every 2,078 s.
    """
    return sqrt(2.0 * checkpoint_s * mtbf_s)


@checked(arrays=True)
def checkpoint_s(state_gb: MemoryGB, n_gpus: GPUs, gb_s_per_gpu: MemoryGB = CHECKPOINT_GB_S_PER_GPU) -> float:
    """Time to write a checkpoint of the whole training state, each GPU writing its share at once.

    Parameters
    ----------
    state_gb : float
        The state saved: weights, FP32 master weights and optimizer states (gradients are not saved) [GB].
    n_gpus : int
        GPUs writing [count].
    gb_s_per_gpu : float, default 0.122
        Storage bandwidth per GPU; the Llama 3 storage's sustained 2 TB/s over its 16,384 GPUs [GB/s].

    Returns
    -------
    float
        Time to write the checkpoint [s].

    Notes
    -----
    ``state_gb / (n_gpus * gb_s_per_gpu)`` (Llama 3, arXiv:2407.21783, section 3.3.1): 405B parameters at 14 bytes
    (2 BF16 weight, 12 mixed-precision Adam) is 5,670 GB, 2.8 s at 2 TB/s.
    """
    return state_gb / (n_gpus * gb_s_per_gpu)


@checked(arrays=True)
def effective_time_ratio(
    interval_s: Seconds, checkpoint_s: SecondsOrZero, restart_s: SecondsOrZero, mtbf_s: Seconds
) -> float:
    """Share of a run's wall-clock time that makes progress, after checkpoints, restarts and redone work (goodput).

    Parameters
    ----------
    interval_s : float
        Work between checkpoints, tau; CHECKPOINT_INTERVAL_S gives Young's [s].
    checkpoint_s : float
        Time to write a checkpoint, C [s].
    restart_s : float
        Time an interruption costs besides the lost work: detection, rescheduling, reloading, R [s].
    mtbf_s : float
        Mean time between interruptions of the job, M [s].

    Returns
    -------
    float
        Effective-time ratio; 0 when interruptions come faster than the job can recover [fraction].

    Notes
    -----
    ``tau / (tau + C) * (1 - (R + (tau + C) / 2) / M)``: of each checkpoint period ``tau + C`` only ``tau`` makes
    progress, and each interruption (one every M seconds) costs R and on average half a period redone (Young 1974;
    Daly 2006, first order). With tau = 2,078 s, C = 60 s, R = 600 s and M = 36,000 s: 0.927. For Llama 3 405B's
    16,384 H100s (M = 11,135 s, C = 2.8 s, R = 600 s) it gives 0.92, against the "higher than 90%" the paper
    reports (arXiv:2407.21783, section 3.3.4).
    """
    period = interval_s + checkpoint_s
    running = 1.0 - (restart_s + period / 2.0) / mtbf_s
    return where(running > 0, running, 0.0) * interval_s / period
