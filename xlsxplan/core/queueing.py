"""Latency under load: how long a request waits for a batch slot, and the replicas that keep a percentile of the
time to first token under a target.

A plan sized for the peak's average load reports a time to first token that assumes no request ever waits. Real
requests queue, and service-level objectives are written on the tail. Queueing theory gives closed forms a
spreadsheet can carry, under these assumptions, each a documented simplification:

* **A replica is a queue with ``B`` servers.** A replica running a batch of ``B`` sequences (continuous batching,
  Orca and vLLM) has ``B`` slots; a request takes a free slot when it arrives, else waits, first come first
  served, until one frees. It holds the slot for its prefill and its decode (:func:`slot_s`).
* **Arrivals are Poisson** (``ca = 1``), and the peak's requests are spread evenly over the replicas: each replica
  sees ``requests_per_s / replicas``, itself Poisson when requests are routed at random. A router that sends each
  request to the least-loaded replica pools the slots and waits less, so the figures are the conservative ones.
  Bursty traffic (a coefficient of variation of the interarrival times above 1) waits more: QUEUE_WAIT_GG_S takes
  it as an argument, through the same Allen-Cunneen factor ``(ca^2 + cs^2) / 2`` (:func:`queue_wait_gg_s`).
* **Exponential service times give the exact M/M/c answer** (Erlang C); other service-time distributions use the
  Allen-Cunneen approximation, which scales the wait by ``(1 + cv^2) / 2`` (:func:`queue_wait_s`).
* **The time to first token is the wait plus the prompt's prefill** (:func:`ttft_at_load_s`). Where compute binds,
  a replica that chunks prompts into its decode steps (Sarathi-Serve) runs slower steps and holds each slot
  longer, so the slot time is stretched to make the queue saturate exactly at REPLICA_RPS_CHUNKED, the capacity
  the fleet is sized by. The prompt's own wait for compute inside the replica (behind earlier prompts' chunks) is
  not modelled: it is small while memory binds and grows where compute binds.

The Erlang B recursion keeps every term in [0, 1], so Erlang C is stable for any number of servers, where the
factorial formula overflows near 170 (the recursion used by Gunther's PDQ, ``lib/PDQ_MServer.c``, and Rossetti's
KSL, ``GGcWhittApproximation.kt``). The checked functions here call the unchecked :func:`erlang_c_value` and
:func:`wait_quantile` rather than one another, so an error names an argument the user typed.

References
----------
.. [1] Kleinrock 1975, "Queueing Systems, Volume 1: Theory", Wiley (the M/M/m queue: Erlang C and the waiting
   time distribution ``P(W > t) = C exp(-(c mu - lambda) t)``).
.. [2] Gross and Harris, "Fundamentals of Queueing Theory", Wiley (3rd ed. 1998): the M/M/c queue, and the
   worked M/M/3 example the tests quote.
.. [3] Allen 1990, "Probability, Statistics, and Queueing Theory with Computer Science Applications", 2nd ed.,
   Academic Press (the Allen-Cunneen approximation for the GI/G/c queue).
.. [4] Abate, Choudhury and Whitt 1995, "Exponential Approximations for Tail Probabilities in Queues, I: Waiting
   Times", Operations Research 43(5), 885-901 (the tail as the probability of waiting times an exponential whose
   mean keeps the mean wait).
.. [5] Agrawal et al. 2024, "Taming Throughput-Latency Tradeoff in LLM Inference with Sarathi-Serve", OSDI 2024,
   arXiv:2403.02310 (chunked prefills share each step with the decodes).
.. [6] Yu et al. 2022, "Orca: A Distributed Serving System for Transformer-Based Generative Models", OSDI 2022
   (iteration-level scheduling: a finished sequence's slot is refilled at the next step).
"""

from __future__ import annotations

import math

from ..domains import (
    CoefficientOfVariation,
    Count,
    Erlangs,
    Percentile,
    RequestsPerS,
    Seconds,
    SecondsOrZero,
    Servers,
    checked,
    format_number,
)
from ..errors import OutOfRangeError
from ..infra.elementwise import apply, maximum
from .equations import whole_ceil

__all__ = [
    "erlang_c",
    "queue_wait_s",
    "queue_wait_gg_s",
    "service_cv",
    "slot_s",
    "ttft_at_load_s",
    "replicas_for_ttft",
    "utilisation_for_ttft",
    "erlang_b_value",
    "erlang_c_value",
    "wait_quantile",
    "UNDERFLOW",
]

UNDERFLOW = 1e-300
"""Erlang C below this reads 0 (ERLANG_C): the recursion stops rather than crawl through subnormal numbers."""

NEVER_WAITS = 1e-17
"""Erlang C below this reads 0 where a wait percentile is wanted: the smallest share a percentile below 1 leaves,
``1 - p``, is at least ``2^-53`` (1.1e-16) in a double, so such a ``C`` gives a wait of 0 at every percentile, and
the recursion may stop as soon as the probability of waiting is known to be below it."""

_SKIP_SD = 10
"""How far below the load, in standard deviations of a Poisson count, the Erlang B recursion starts (see
:func:`erlang_b_value`): the start's error shrinks by about ``exp(-10^2 / 2)``, 2e-22, far below a double's
precision."""


# --- Erlang B and C, unchecked ---------------------------------------------------------------------------------


def erlang_b_value(servers: int, offered_load: float, floor: float = UNDERFLOW) -> float:
    """Erlang B, the blocking probability of ``servers`` servers offered ``offered_load`` Erlangs.

    ``B(0) = 1``, ``B(k) = a B(k-1) / (k + a B(k-1))``: every term lies in [0, 1], so nothing overflows. For a
    load below the servers the recursion starts at ``k0 = a - 10 sqrt(a) - 10`` from ``B = 1`` instead of from 0:
    below the load each step shrinks an error in ``B`` by a factor of about ``k / a``, and the product of those
    factors from ``k0`` to ``a`` is about ``exp(-10^2 / 2)``, so the start's error vanishes before the steps that
    matter. Above the load ``B`` only falls, and ``C(c) <= B(k) / (1 - a / k)`` for any ``a < k <= c``; the
    recursion returns 0 once that bound is below ``floor``. The cost is ``O(sqrt(a))`` steps rather than ``O(c)``:
    a million Erlangs start 10,000 steps below the load.
    """
    if offered_load <= 0:
        return 0.0
    start = 0
    if offered_load < servers:
        start = max(0, math.floor(offered_load - _SKIP_SD * math.sqrt(offered_load) - _SKIP_SD))
    a, b = offered_load, 1.0
    middle = min(servers, max(start, math.floor(a)))
    for k in range(start + 1, middle + 1):  # up to the load: B falls slowly, no test needed
        b = a * b / (k + a * b)
    for k in range(middle + 1, servers + 1):
        b = a * b / (k + a * b)
        if b < floor * (1.0 - a / k):
            return 0.0
    return b


def erlang_c_value(servers: int, offered_load: float, floor: float = UNDERFLOW) -> float:
    """Erlang C, the probability that an arrival waits in an M/M/c queue: ``B / (1 - rho + rho B)``; 0 below
    ``floor``.

    The caller ensures ``offered_load < servers``; ``rho = offered_load / servers``.
    """
    b = erlang_b_value(servers, offered_load, floor)
    rho = offered_load / servers
    return b / (1.0 - rho + rho * b)


def wait_quantile(
    requests_per_s: float,
    service_s: float,
    servers: int,
    percentile: float,
    service_cv: float,
    arrival_cv: float = 1.0,
) -> float:
    """The wait before service at a percentile; unchecked (QUEUE_WAIT_S, QUEUE_WAIT_GG_S).

    ``t_p = (ca^2 + cs^2) / 2 * s / (c - a) * ln(C / (1 - p))`` when ``C > 1 - p``, else 0, with ``a = lambda s``
    and ``ca = 1`` for Poisson arrivals; infinity for a load at or above the servers, which the checked functions
    refuse first.
    """
    load = requests_per_s * service_s
    if load >= servers:
        return math.inf
    waits = erlang_c_value(servers, load, NEVER_WAITS)
    miss = 1.0 - percentile
    if waits <= miss:
        return 0.0
    factor = (arrival_cv * arrival_cv + service_cv * service_cv) / 2.0
    return factor * service_s / (servers - load) * math.log(waits / miss)


def _overloaded(load: float, servers: int, what: str, argument: str) -> OutOfRangeError:
    return OutOfRangeError(
        f"{what} = {format_number(load)} Erlangs must be below servers ({format_number(servers)}): the queue is "
        "overloaded and grows without bound",
        argument,
    )


# --- The registry's functions ----------------------------------------------------------------------------------


@checked
def erlang_c(servers: Servers, offered_load: Erlangs) -> float:
    """Probability that a request waits for a server in an M/M/c queue (Erlang C).

    Parameters
    ----------
    servers : int
        Servers working in parallel: a replica's batch slots [count].
    offered_load : float
        Load offered: requests per second times the service time of one; below servers [Erlangs].

    Returns
    -------
    float
        Probability that an arrival finds every server busy and waits [fraction].

    Notes
    -----
    ``C(c, a) = B / (1 - rho + rho B)``, ``rho = a / c``, with Erlang B from the recursion ``B(k) = a B(k-1) /
    (k + a B(k-1))``, which never overflows (Kleinrock, "Queueing Systems, Volume 1", the M/M/m queue; the
    recursion as in Gunther's PDQ and Rossetti's KSL). A load at or above the servers is overloaded: the queue
    grows without bound (#NUM!). 14 servers offered 10 Erlangs (100 calls in half an hour, 3 minutes each):
    0.1741.
    """
    if offered_load >= servers:
        raise OutOfRangeError(
            f"offered_load ({format_number(offered_load)} Erlangs) must be below servers ({format_number(servers)}):"
            " at or above it the queue is overloaded and grows without bound",
            "offered_load",
        )
    return erlang_c_value(servers, offered_load)


@checked
def queue_wait_s(
    requests_per_s: RequestsPerS,
    service_s: Seconds,
    servers: Servers,
    percentile: Percentile = 0.5,
    service_cv: CoefficientOfVariation = 1,
) -> float:
    """Wait before service at a percentile, for Poisson arrivals to servers in parallel (M/M/c; Allen-Cunneen).

    Parameters
    ----------
    requests_per_s : float
        Requests arriving per second, at random (Poisson) [requests/s].
    service_s : float
        Mean time a request holds a server [s].
    servers : int
        Servers working in parallel: a replica's batch slots [count].
    percentile : float, default 0.5
        Share of requests whose wait is at most the result: 0.99 for the 99th percentile [fraction].
    service_cv : float, default 1
        Standard deviation of the service time over its mean; 1 is exponential (exact), 0 constant [ratio].

    Returns
    -------
    float
        Wait at that percentile; 0 when at least that share of requests never waits [s].

    Notes
    -----
    ``P(W > t) = C exp(-(c mu - lambda) t)`` for M/M/c (Kleinrock, "Queueing Systems, Volume 1"), so
    ``t_p = ln(C / (1 - p)) / (c mu - lambda)`` where ``C > 1 - p``, else 0; ``mu = 1 / service_s``, ``C`` =
    ERLANG_C. Other service times: the Allen-Cunneen approximation scales the mean wait by ``(1 + cv^2) / 2``
    (Allen 1990), and the tail keeps ``P(W > 0) = C`` with that mean (Abate, Choudhury and Whitt 1995), which
    scales ``t_p`` by the same factor. Arrivals are Poisson (``ca = 1``). Overloaded, ``requests_per_s *
    service_s >= servers``: #NUM!. M/M/3 at 6 requests an hour of 20 minutes each: P90 1,790 s.
    """
    load = requests_per_s * service_s
    if load >= servers:
        raise _overloaded(load, servers, "requests_per_s x service_s", "requests_per_s")
    return wait_quantile(requests_per_s, service_s, servers, percentile, service_cv)


@checked
def queue_wait_gg_s(
    requests_per_s: RequestsPerS,
    service_s: Seconds,
    servers: Servers,
    percentile: Percentile = 0.5,
    arrival_cv: CoefficientOfVariation = 1,
    service_cv: CoefficientOfVariation = 1,
) -> float:
    """Wait before service at a percentile for bursty arrivals to servers in parallel (G/G/c, Allen-Cunneen).

    Parameters
    ----------
    requests_per_s : float
        Mean requests arriving per second [requests/s].
    service_s : float
        Mean time a request holds a server [s].
    servers : int
        Servers working in parallel: a replica's batch slots [count].
    percentile : float, default 0.5
        Share of requests whose wait is at most the result: 0.99 for the 99th percentile [fraction].
    arrival_cv : float, default 1
        Burst factor: standard deviation of the time between arrivals over its mean; 1 is Poisson, above 1 bursty
        [ratio].
    service_cv : float, default 1
        Standard deviation of the service time over its mean; 1 is exponential, 0 constant [ratio].

    Returns
    -------
    float
        Wait at that percentile; 0 when at least that share of requests never waits [s].

    Notes
    -----
    QUEUE_WAIT_S with the Allen-Cunneen factor ``(ca^2 + cs^2) / 2`` on the M/M/c wait (Allen 1990): ``t_p = (ca^2
    + cs^2) / 2 x s / (c - a) x ln(C / (1 - p))`` where ``C`` = ERLANG_C exceeds ``1 - p``, else 0. With ca = 1 it is
    QUEUE_WAIT_S. Bursts make more requests wait than Erlang C says, so at a moderate load on many servers it is
    low: the simulation in the tests puts its P99 within 20% at 8 servers for ca 1 to 3 and loads 0.5 to 0.9, and
    below by up to all of it at 32 servers and loads under 0.8 (docs/queueing.md). M/M/3 at 6 requests an hour of 20
    minutes each with ca = 2: P90 4,475 s, 2.5 times the Poisson wait.
    """
    load = requests_per_s * service_s
    if load >= servers:
        raise _overloaded(load, servers, "requests_per_s x service_s", "requests_per_s")
    return wait_quantile(requests_per_s, service_s, servers, percentile, service_cv, arrival_cv)


@checked(arrays=True)
def service_cv(
    prefill_s: Seconds, prompt_cv: CoefficientOfVariation, decode_s: SecondsOrZero, output_cv: CoefficientOfVariation
) -> float:
    """Coefficient of variation of the time a request holds a batch slot, from the spread of its lengths.

    Parameters
    ----------
    prefill_s : float
        Mean prefill time of a request [s].
    prompt_cv : float
        Standard deviation of the prompt length over its mean: LENGTH_SD / mean, or STDEV.P / AVERAGE [ratio].
    decode_s : float
        Mean decode time of a request: generated tokens / DECODE_TOKS [s].
    output_cv : float
        Standard deviation of the generated length over its mean; 1 for exponential lengths [ratio].

    Returns
    -------
    float
        Standard deviation of prefill plus decode time over its mean, for QUEUE_WAIT_S [ratio].

    Notes
    -----
    ``sqrt((prefill_s * prompt_cv)^2 + (decode_s * output_cv)^2) / (prefill_s + decode_s)``: prefill time in
    proportion to the prompt (compute-bound, attention's quadratic term left out), decode time to the output (a
    fixed step per token), the two lengths independent. Production output lengths are close to exponential and
    input lengths a log-normal-Pareto mixture (ServeGen, arXiv:2505.09999). 0.294 s prefills of prompts with a
    spread of 1.18 (mean 2,000, p95 6,000) and 5 s of exponential decode: 0.947.
    """
    spread = apply(math.hypot, prefill_s * prompt_cv, decode_s * output_cv)
    return spread / (prefill_s + decode_s)


def _slot(batch: int, prefill_s: float, decode_s: float, requests_per_s_per_replica: float) -> float:
    return maximum(prefill_s + decode_s, batch / requests_per_s_per_replica)


@checked(arrays=True)
def slot_s(
    batch: Count, prefill_s: Seconds, decode_s: SecondsOrZero, requests_per_s_per_replica: RequestsPerS
) -> float:
    """Time a request holds one of a replica's batch slots: prefill plus decode, or longer where compute binds.

    Parameters
    ----------
    batch : int
        Sequences the replica runs at once: its slots [sequences].
    prefill_s : float
        Prefill time of a prompt while the batch decodes: with chunked prefill, prompt / (COMPUTE_TOKS -
        DECODE_TOKS_TOTAL); PREFILL_S alone otherwise [s].
    decode_s : float
        Decode time of a request: generated tokens / DECODE_TOKS at the batch [s].
    requests_per_s_per_replica : float
        Request capacity of one replica, from REPLICA_RPS_CHUNKED or REPLICA_RPS [requests/s].

    Returns
    -------
    float
        Mean slot time; the replica's slots serve at most batch / this requests per second [s].

    Notes
    -----
    ``max(prefill_s + decode_s, batch / requests_per_s_per_replica)``. A slot is held from admission to the last
    token (Orca's iteration-level scheduling). Where compute binds, steps that carry prefill chunks (Sarathi-Serve,
    arXiv:2403.02310) run slower than memory allows, so each slot is held longer: at saturation all ``B`` slots
    are busy at the replica's capacity, and Little's law gives ``B / capacity``. The queue then saturates exactly
    where REPLICA_RPS_CHUNKED says. At a batch of 51 (0.54 s prefill, 4.98 s decode, 2.96 requests/s): 17.2 s.
    """
    return _slot(batch, prefill_s, decode_s, requests_per_s_per_replica)


def _ttft(
    per_replica_rps: float,
    batch: int,
    prefill_s: float,
    slot: float,
    percentile: float,
    cv: float,
    arrival_cv: float = 1.0,
) -> float:
    """Time to first token at a percentile for one replica's share of the requests; infinity when overloaded."""
    if per_replica_rps * slot >= batch:
        return math.inf
    return prefill_s + wait_quantile(per_replica_rps, slot, batch, percentile, cv, arrival_cv)


@checked
def ttft_at_load_s(
    requests_per_s: RequestsPerS,
    replicas: Count,
    batch: Count,
    prefill_s: Seconds,
    decode_s: SecondsOrZero,
    requests_per_s_per_replica: RequestsPerS,
    percentile: Percentile = 0.5,
    service_cv: CoefficientOfVariation = 1,
    arrival_cv: CoefficientOfVariation = 1,
) -> float:
    """Time to first token at a percentile under load: the wait for a batch slot plus the prompt's prefill.

    Parameters
    ----------
    requests_per_s : float
        Requests per second arriving at the fleet, e.g. from PEAK_RPS [requests/s].
    replicas : int
        Replicas sharing the requests evenly [count].
    batch : int
        Sequences a replica runs at once: its slots [sequences].
    prefill_s : float
        Prefill time of a prompt while the batch decodes: with chunked prefill, prompt / (COMPUTE_TOKS -
        DECODE_TOKS_TOTAL); PREFILL_S alone otherwise [s].
    decode_s : float
        Decode time of a request: generated tokens / DECODE_TOKS at the batch [s].
    requests_per_s_per_replica : float
        Request capacity of one replica, from REPLICA_RPS_CHUNKED or REPLICA_RPS [requests/s].
    percentile : float, default 0.5
        Share of requests whose time to first token is at most the result: 0.99 for P99 [fraction].
    service_cv : float, default 1
        Standard deviation of the slot time over its mean, from SERVICE_CV; 1 is exponential [ratio].
    arrival_cv : float, default 1
        Standard deviation of the time between requests over its mean: 1 for Poisson arrivals, above 1 for bursts
        (Allen-Cunneen's factor (arrival_cv^2 + service_cv^2) / 2 scales the wait) [ratio].

    Returns
    -------
    float
        Time to first token at that percentile [s].

    Notes
    -----
    ``prefill_s + QUEUE_WAIT_S(requests_per_s / replicas, SLOT_S(...), batch, percentile, service_cv)``: each
    replica is ``batch`` servers fed Poisson arrivals, first come first served (Kleinrock, "Queueing Systems,
    Volume 1"; Allen-Cunneen for ``service_cv`` or ``arrival_cv`` other than 1, as QUEUE_WAIT_GG_S). The wait of a
    prompt for compute inside the
    replica is left out. A load at or above what a replica serves is #NUM!. 6.94 requests/s on 3 replicas of 51
    slots (0.54 s prefill, 4.98 s decode, 2.96 requests/s each): P50 0.54 s, P99 3.32 s; on 4, P99 0.54 s.
    """
    per_replica = requests_per_s / replicas
    slot = _slot(batch, prefill_s, decode_s, requests_per_s_per_replica)
    if per_replica * slot >= batch:
        raise OutOfRangeError(
            f"requests_per_s / replicas = {format_number(per_replica)} requests/s per replica is at or above the "
            f"{format_number(batch / slot)} a replica serves (the smaller of requests_per_s_per_replica and batch / "
            "(prefill_s + decode_s)): the queue is overloaded and grows without bound; add replicas",
            "requests_per_s",
        )
    return _ttft(per_replica, batch, prefill_s, slot, percentile, service_cv, arrival_cv)


def _unreachable(target_s: float, prefill_s: float, percentile: float) -> OutOfRangeError:
    return OutOfRangeError(
        f"ttft_target_s ({format_number(target_s)} s) is below prefill_s ({format_number(prefill_s)} s), the time to "
        f"first token with no wait: no number of replicas meets it; the fastest P{format_number(percentile * 100)} "
        f"achievable is {format_number(prefill_s)} s",
        "ttft_target_s",
    )


def _max_rate(
    target_s: float, percentile: float, batch: int, prefill_s: float, slot: float, cv: float, arrival_cv: float = 1.0
) -> float:
    """The largest request rate one replica takes with the percentile's time to first token within the target.

    With ``w = target_s - prefill_s`` and ``k = (arrival_cv^2 + cv^2) / 2 * slot``, the target holds at a load ``a``
    exactly where ``psi(a) = ln C(a) - ln(1 - p) - (batch - a) w / k <= 0`` (where ``C <= 1 - p`` the percentile's
    wait is 0 and ``psi`` is negative too). ``psi`` rises with the load from below 0 to ``-ln(1 - p) > 0`` at
    ``batch``, so the boundary is its one root. A load within 4 units in the last place of saturation that meets the
    target is taken at once (a loose target, or a percentile near 0); otherwise the root is found by the Illinois
    variant of regula falsi, which keeps a bracket and converges superlinearly, with a bisection whenever three
    steps fail to halve the bracket. The rate returned is the bracket's end that meets the target, checked against
    the time to first token itself.
    """
    room = target_s - prefill_s
    scale = (arrival_cv * arrival_cv + cv * cv) / 2.0 * slot
    log_miss = math.log(1.0 - percentile)

    def psi(load: float) -> float:
        if load >= batch:
            return -log_miss
        waits = erlang_c_value(batch, load, NEVER_WAITS) if load > 0 else 0.0
        return math.log(max(waits, NEVER_WAITS)) - log_miss - (batch - load) * room / scale

    def meets(load: float) -> bool:
        return prefill_s + wait_quantile(load / slot, slot, batch, percentile, cv, arrival_cv) <= target_s

    low, high = 0.0, float(batch)
    nearly = high - 4 * math.ulp(high)
    if meets(nearly):  # a target loose enough for any load short of saturation, or a percentile near 0
        return nearly / slot
    f_low, f_high = psi(low), psi(high)
    side, width, steps = 0, high - low, 0
    while high - low > 4 * math.ulp(high):
        x = (low * f_high - high * f_low) / (f_high - f_low)
        steps += 1
        if steps % 3 == 0:
            if high - low > width / 2:
                x = (low + high) / 2  # regula falsi stalls on one side: bisect
            width = high - low
        if not low < x < high:
            x = (low + high) / 2
        f = psi(x)
        if f <= 0:
            low, f_low = x, f
            if side == -1:
                f_high /= 2  # the Illinois step: halve the stale end's value so the next estimate crosses over
            side = -1
        else:
            high, f_high = x, f
            if side == 1:
                f_low /= 2
            side = 1
    back = 4 * math.ulp(low)
    while low > 0 and not meets(low):  # rounding at the boundary: the time to first token has the last word
        low, back = max(low - back, 0.0), 2 * back
    return low / slot


@checked
def replicas_for_ttft(
    requests_per_s: RequestsPerS,
    ttft_target_s: Seconds,
    percentile: Percentile,
    batch: Count,
    prefill_s: Seconds,
    decode_s: SecondsOrZero,
    requests_per_s_per_replica: RequestsPerS,
    service_cv: CoefficientOfVariation = 1,
    arrival_cv: CoefficientOfVariation = 1,
) -> int:
    """Fewest replicas whose time to first token at a percentile stays within a target at a request rate.

    Parameters
    ----------
    requests_per_s : float
        Requests per second at peak, from PEAK_RPS [requests/s].
    ttft_target_s : float
        Time-to-first-token target at the percentile [s].
    percentile : float
        Share of requests that must meet the target: 0.99 for P99 [fraction].
    batch : int
        Sequences a replica runs at once: its slots [sequences].
    prefill_s : float
        Prefill time of a prompt while the batch decodes: with chunked prefill, prompt / (COMPUTE_TOKS -
        DECODE_TOKS_TOTAL); PREFILL_S alone otherwise [s].
    decode_s : float
        Decode time of a request: generated tokens / DECODE_TOKS at the batch [s].
    requests_per_s_per_replica : float
        Request capacity of one replica, from REPLICA_RPS_CHUNKED or REPLICA_RPS [requests/s].
    service_cv : float, default 1
        Standard deviation of the slot time over its mean, from SERVICE_CV; 1 is exponential [ratio].
    arrival_cv : float, default 1
        Standard deviation of the time between requests over its mean: 1 for Poisson arrivals, above 1 for bursts
        (Allen-Cunneen's factor (arrival_cv^2 + service_cv^2) / 2 scales the wait) [ratio].

    Returns
    -------
    int
        Whole replicas, no spares: add them for failures and deployments [count].

    Notes
    -----
    The smallest ``R`` with TTFT_AT_LOAD_S(requests_per_s, R, ...) at most the target: ``ceil(requests_per_s /
    r)``, ``r`` the largest rate one replica takes within it, and TTFT_AT_LOAD_S has the last word at the
    boundary. A target below prefill_s is out of reach at any fleet (#NUM!, naming the fastest). 6.94 requests/s
    on replicas of 51 slots (0.54 s prefill, 4.98 s decode, 2.96 requests/s each): 3 for a P99 of 5 s, 4 for 3 s.
    """
    if ttft_target_s < prefill_s:
        raise _unreachable(ttft_target_s, prefill_s, percentile)
    slot = _slot(batch, prefill_s, decode_s, requests_per_s_per_replica)
    rate = _max_rate(ttft_target_s, percentile, batch, prefill_s, slot, service_cv, arrival_cv)

    def meets(r: int) -> bool:
        return _ttft(requests_per_s / r, batch, prefill_s, slot, percentile, service_cv, arrival_cv) <= ttft_target_s

    # ceil(requests_per_s / rate) is the answer but for float rounding at the boundary, where the time to first
    # token has the last word: bracket the smallest count that meets the target around it (a step that doubles, as
    # a count of 1e20 does not move by adding 1), then bisect; more replicas never wait longer.
    guess = max(whole_ceil(requests_per_s / rate), 1)
    step = 1
    if meets(guess):
        low, high = guess - 1, guess  # low = 0 stands for "no replicas", which never meets it
        while low >= 1 and meets(low):
            high, low, step = low, max(guess - 2 * step, 0), 2 * step
    else:
        low, high = guess, guess + 1
        while not meets(high):
            low, high, step = high, guess + 2 * step, 2 * step
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if meets(mid) else (mid, high)
    return high


@checked
def utilisation_for_ttft(
    ttft_target_s: Seconds,
    percentile: Percentile,
    batch: Count,
    prefill_s: Seconds,
    decode_s: SecondsOrZero,
    requests_per_s_per_replica: RequestsPerS,
    service_cv: CoefficientOfVariation = 1,
    arrival_cv: CoefficientOfVariation = 1,
) -> float:
    """Share of a replica's capacity it may carry at peak with a percentile's time to first token within a target.

    Parameters
    ----------
    ttft_target_s : float
        Time-to-first-token target at the percentile [s].
    percentile : float
        Share of requests that must meet the target: 0.99 for P99 [fraction].
    batch : int
        Sequences a replica runs at once: its slots [sequences].
    prefill_s : float
        Prefill time of a prompt while the batch decodes: with chunked prefill, prompt / (COMPUTE_TOKS -
        DECODE_TOKS_TOTAL); PREFILL_S alone otherwise [s].
    decode_s : float
        Decode time of a request: generated tokens / DECODE_TOKS at the batch [s].
    requests_per_s_per_replica : float
        Request capacity of one replica, from REPLICA_RPS_CHUNKED or REPLICA_RPS [requests/s].
    service_cv : float, default 1
        Standard deviation of the slot time over its mean, from SERVICE_CV; 1 is exponential [ratio].
    arrival_cv : float, default 1
        Standard deviation of the time between requests over its mean: 1 for Poisson arrivals, above 1 for bursts
        (Allen-Cunneen's factor (arrival_cv^2 + service_cv^2) / 2 scales the wait) [ratio].

    Returns
    -------
    float
        Peak requests per replica over requests_per_s_per_replica; always below 1 [fraction].

    Notes
    -----
    ``r / requests_per_s_per_replica``, ``r`` the largest rate at which TTFT_AT_LOAD_S on one replica is at most
    the target (bisection on the load: the wait grows with it). FLEET_REPLICAS(peak, this x
    requests_per_s_per_replica, ...) then sizes the fleet REPLICAS_FOR_TTFT gives, plus spares. A target below
    prefill_s is out of reach (#NUM!). 51 slots (0.54 s prefill, 4.98 s decode, 2.96 requests/s): 0.82 for a P99
    of 5 s, 0.75 for 2 s.
    """
    if ttft_target_s < prefill_s:
        raise _unreachable(ttft_target_s, prefill_s, percentile)
    slot = _slot(batch, prefill_s, decode_s, requests_per_s_per_replica)
    return (
        _max_rate(ttft_target_s, percentile, batch, prefill_s, slot, service_cv, arrival_cv)
        / requests_per_s_per_replica
    )
