"""A discrete-event simulation of continuous batching, against which the queueing closed forms are checked.

One replica runs ``B`` slots (iteration-level scheduling, as Orca and vLLM: a finished sequence's slot is refilled
at once). Requests arrive as a Poisson process (or, given :class:`Arrivals`, with gamma or hyperexponential times between them,
of a chosen coefficient of variation: bursts) and are admitted first come first served into the first slot that
frees; each holds its slot for its prefill, in proportion to its prompt length, plus its decode, a fixed time per
generated token. Prompt lengths are log-normal through a mean and a 95th percentile, as TAIL_SHARE models them;
output lengths are exponential (ServeGen, arXiv:2505.09999), fixed, or log-normal. The queue is then M/G/B, and a
request's wait is the time from its arrival to its admission (G/G/B with bursts).

The simulation is the Kiefer-Wolfowitz recursion on the slots' free times, vectorised over independent
replications (and over the loads of a grid), each started empty with its first tenth dropped as warm-up. The
replications' spread gives each statistic's standard error, which covers the autocorrelation of waits in one run.
Seeded: the same arguments give the same figures.

``python tests/helpers/sim_queue.py`` prints the table of closed form against simulation that docs/queueing.md quotes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from xlsxplan.core import queueing, traffic

PREFILL_S_PER_TOKEN = 0.294 / 2_000  # a 2,000-token prompt in 0.294 s (Qwen2.5-72B, FP8, two H100s at 50%)
DECODE_S_PER_TOKEN = 1 / 60  # 60 tokens/s per user
PERCENTILES = (0.5, 0.9, 0.99)


@dataclass(frozen=True)
class Lengths:
    """A length distribution: ``exponential``, ``fixed`` or ``lognormal`` (through a mean and a p95), or ``none``."""

    kind: str
    mean: float = 0.0
    p95: float = 0.0

    @property
    def cv(self) -> float:
        if self.kind == "exponential":
            return 1.0
        if self.kind in ("fixed", "none"):
            return 0.0
        _, sigma = traffic.lognormal_from_mean_p95(self.mean, self.p95)
        return math.sqrt(math.expm1(sigma**2))

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        if self.kind == "exponential":
            return rng.exponential(self.mean, shape)
        if self.kind == "fixed":
            return np.full(shape, self.mean)
        if self.kind == "none":
            return np.zeros(shape)
        mu, sigma = traffic.lognormal_from_mean_p95(self.mean, self.p95)
        return rng.lognormal(mu, sigma, shape)


@dataclass(frozen=True)
class Workload:
    """Requests whose slot time is ``prefill_s_per_token * prompt + decode_s_per_token * output``."""

    name: str
    prompt: Lengths
    output: Lengths
    prefill_s_per_token: float = PREFILL_S_PER_TOKEN
    decode_s_per_token: float = DECODE_S_PER_TOKEN

    @property
    def prefill_s(self) -> float:
        return self.prefill_s_per_token * self.prompt.mean

    @property
    def decode_s(self) -> float:
        return self.decode_s_per_token * self.output.mean

    @property
    def service_s(self) -> float:
        return self.prefill_s + self.decode_s

    @property
    def service_cv(self) -> float:
        if self.prefill_s == 0:
            return self.output.cv
        return queueing.service_cv(self.prefill_s, self.prompt.cv, self.decode_s, self.output.cv)

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        prefill = self.prefill_s_per_token * self.prompt.sample(rng, shape)
        return prefill + self.decode_s_per_token * self.output.sample(rng, shape)


# M/M/c: no prompt, exponential slot times of mean 1 s
EXPONENTIAL = Workload("exponential", Lengths("none"), Lengths("exponential", 60.0))
CHAT = Workload(
    "chat: log-normal prompts, exponential answers", Lengths("lognormal", 2_000, 6_000), Lengths("exponential", 300)
)
FIXED = Workload("fixed answers", Lengths("lognormal", 2_000, 6_000), Lengths("fixed", 300))
LONG_PROMPTS = Workload("long prompts, short answers", Lengths("lognormal", 8_000, 24_000), Lengths("fixed", 100))
LONG_ANSWERS = Workload("log-normal answers", Lengths("lognormal", 2_000, 6_000), Lengths("lognormal", 300, 1_000))
WORKLOADS = (EXPONENTIAL, CHAT, FIXED, LONG_PROMPTS, LONG_ANSWERS)
UTILISATIONS = (0.3, 0.5, 0.7, 0.8, 0.9, 0.95)


@dataclass(frozen=True)
class Arrivals:
    """Times between arrivals of mean 1 and coefficient of variation ``cv``: ``gamma`` (shape ``1 / cv^2``) or
    ``hyperexponential`` (two exponential phases of balanced means, for ``cv >= 1``); Poisson at ``cv = 1``."""

    kind: str
    cv: float

    def sample(self, rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        c2 = self.cv * self.cv
        if self.kind == "gamma":
            return rng.gamma(1 / c2, c2, shape)
        # balanced means (Whitt 1982): phase i with probability p_i has mean 1 / (2 p_i)
        p = 0.5 * (1 + math.sqrt((c2 - 1) / (c2 + 1)))
        first = rng.random(shape) < p
        return rng.exponential(1.0, shape) / np.where(first, 2 * p, 2 * (1 - p))


@dataclass(frozen=True)
class Result:
    """Statistics of the waits of each replication at each load: ``waits`` (the share that waited), ``mean`` and
    ``exceed`` (the share above each threshold given) have shape ``(loads, replications)`` or ``(thresholds, loads,
    replications)``; ``quantiles`` has shape ``(percentiles, loads, replications)``, for :data:`PERCENTILES`."""

    waits: np.ndarray
    mean: np.ndarray
    quantiles: np.ndarray
    exceed: np.ndarray

    @staticmethod
    def estimate(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean over the replications (the last axis) and its standard error."""
        n = values.shape[-1]
        return values.mean(axis=-1), values.std(axis=-1, ddof=1) / math.sqrt(n)


def simulate(
    batch: int,
    utilisations: tuple[float, ...],
    workload: Workload,
    customers: int = 100_000,
    replications: int = 16,
    seed: int = 0,
    thresholds: np.ndarray | None = None,
    block: int = 10_000,
    arrivals: Arrivals | None = None,
) -> Result:
    """Simulate ``replications`` runs of ``customers`` requests at each utilisation (arrival rate ``rho B / mean
    slot time``), all at once, and return the statistics of the waits after each run's warm-up tenth.

    ``thresholds``, shape ``(k, loads)``, are waits whose exceedance to count: the closed form's percentiles, so
    that ``P(W > t_p)`` estimated without bias is compared with ``1 - p``.
    """
    rng = np.random.default_rng(seed)
    loads = np.asarray(utilisations, dtype=float)
    rows = len(loads) * replications
    rate = np.repeat(loads * batch / workload.service_s, replications)
    free = np.zeros((rows, batch))  # when each slot frees
    flat = free.reshape(-1)  # the same slots, row after row: a slot of row r at r * batch + its column
    offset = np.arange(rows) * batch
    waits = np.empty((customers, rows), dtype=np.float32)
    clock = np.zeros(rows)
    starts = np.empty((min(block, customers), rows))
    ends = np.empty(rows)
    for first in range(0, customers, block):
        n = min(block, customers - first)
        gaps = rng.exponential(1.0, (n, rows)) if arrivals is None else arrivals.sample(rng, (n, rows))
        times = clock + np.cumsum(gaps, axis=0) / rate
        service = workload.sample(rng, (n, rows))
        clock = times[-1]
        # each request takes the slot that frees first, when it arrives or when that slot frees (the recursion in
        # place, on the flat view: the same arithmetic as free[index, slot], without building index arrays); the
        # waits, start - arrival, of the block at once
        for i in range(n):
            if batch == 1:  # one slot a row: no search
                slot = offset
            else:
                slot = free.argmin(axis=1)
                slot += offset
            start = np.maximum(flat.take(slot), times[i], out=starts[i])
            flat.put(slot, np.add(start, service[i], out=ends))
        np.subtract(starts[:n], times, out=waits[first : first + n], casting="same_kind")
    kept = waits[customers // 10 :].reshape(-1, len(loads), replications)
    limits = np.zeros((0, len(loads))) if thresholds is None else np.asarray(thresholds, dtype=float)
    return Result(
        waits=(kept > 0).mean(axis=0),
        mean=kept.mean(axis=0, dtype=np.float64),
        quantiles=np.quantile(kept, PERCENTILES, axis=0),
        exceed=np.array([(kept > limit[None, :, None]).mean(axis=0) for limit in limits]).reshape(
            len(limits), len(loads), replications
        ),
    )


def closed_form(batch: int, utilisation: float, workload: Workload, percentile: float) -> float:
    """QUEUE_WAIT_S for the workload at a utilisation of ``batch`` slots."""
    rate = utilisation * batch / workload.service_s
    return queueing.queue_wait_s(rate, workload.service_s, batch, percentile, workload.service_cv)


def closed_forms(batch: int, utilisations: tuple[float, ...], workload: Workload) -> np.ndarray:
    """QUEUE_WAIT_S at each of :data:`PERCENTILES` and each utilisation, shape ``(percentiles, loads)``."""
    return np.array([[closed_form(batch, rho, workload, p) for rho in utilisations] for p in PERCENTILES])


def mean_wait(batch: int, utilisation: float, workload: Workload) -> float:
    """The Allen-Cunneen mean wait, ``(1 + cv^2) / 2 * C * s / (c - a)``; exact for M/M/c."""
    load = utilisation * batch
    factor = (1 + workload.service_cv**2) / 2
    return factor * queueing.erlang_c(batch, load) * workload.service_s / (batch - load)


# The approximation's error band over the grid, as docs/queueing.md states it and the tests check it: the closed
# form's P90 and P99 waits against the simulated ones, where the simulated wait is at least FLOOR slot times,
# beyond SAMPLING standard errors of the simulation.
BAND_NEAR_EXPONENTIAL = (-0.10, 0.10)  # service cv within 0.1 of 1
BAND = (-0.35, 0.60)  # any service cv from 0 to 1.5
FLOOR = 0.02
SAMPLING = 3.0


def relative_errors(batch: int, workload: Workload, result: Result) -> np.ndarray:
    """``(closed - sim) / sim`` of the P90 and P99 waits at each load, NaN where the simulated wait is below
    :data:`FLOOR` slot times; shape ``(2, loads)``."""
    closed = closed_forms(batch, UTILISATIONS, workload)[1:]
    sim = Result.estimate(result.quantiles[1:])[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sim >= FLOOR * workload.service_s, (closed - sim) / sim, np.nan)


def _cell(value: float) -> str:
    return "·" if math.isnan(value) else f"{value:+.0%}".replace("+-", "-")


def error_tables(batches: tuple[int, ...] = (8, 32), customers: int = 100_000, replications: int = 16) -> str:
    """The closed forms against the simulation, as Markdown: one table of P99 and one of P90 relative errors."""
    head = "| B | slot times | cv | " + " | ".join(f"ρ = {rho}" for rho in UTILISATIONS) + " |"
    rule = "|---|---|---|" + "---|" * len(UTILISATIONS)
    tables = {0: [head, rule], 1: [head, rule]}
    for batch in batches:
        for workload in WORKLOADS:
            result = simulate(batch, UTILISATIONS, workload, customers, replications, seed=batch)
            errors = relative_errors(batch, workload, result)
            for j in (0, 1):
                cells = " | ".join(_cell(e) for e in errors[j])
                tables[j].append(f"| {batch} | {workload.name} | {workload.service_cv:.2f} | {cells} |")
    return "P99 wait:\n\n" + "\n".join(tables[1]) + "\n\nP90 wait:\n\n" + "\n".join(tables[0])


if __name__ == "__main__":
    print(error_tables(customers=200_000, replications=32))
