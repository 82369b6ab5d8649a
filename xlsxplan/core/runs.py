"""A serving benchmark of a known number of requests, run step by step: what its first-token and per-token latencies
and its throughput come to when the queue, not a steady state, sets the batch.

A benchmark such as TensorRT-LLM's Triton online-serving table sends a fixed number of requests, all at once or at a
fixed rate. When the rate is one the engine serves, the batch settles where Little's law puts it and the steady-state
step (:mod:`xlsxplan.core.step`, a decode step carrying the prompts that join it) describes every request. When the
requests come faster than that, or all at once, no steady state exists: the engine admits what its memory holds, reads
the waiting prompts, then decodes the admitted sequences until they finish, and the batch each request sees depends on
how many requests there are. :func:`simulate_run` follows such a run one engine step at a time, each step's time given
by the caller (the calibrated serving step at that step's decoded sequences and prefilled prompt tokens), and returns
the figures a benchmark reports.

The engine (TensorRT-LLM's in-flight batching, as its Triton backend runs it):

* requests arrive at ``i / rate`` seconds (the even spacing of Triton's perf_analyzer, whose request distribution is
  ``constant`` by default [3]; the table does not name its client), or all at 0;
* first come, first admitted, while the running sequences are fewer than ``max_batch`` and the KV cache holds each
  admitted request's whole prompt and output (GUARANTEED_NO_EVICT, TensorRT-LLM's default scheduler policy [2]: a
  request starts only when what it will need is free, so none is evicted);
* a step decodes one token of every running sequence whose prompt is read, and reads whole prompts of admitted
  requests in arrival order while the step's tokens stay within ``max_tokens`` (a prompt longer than a step is
  refused: reading it in chunks is not modelled; the shipped rows' prompts are at most 467 tokens against 8,192);
* the step that reads a prompt gives its first token; a request is done with its ``output`` tokens.

Units: tokens, requests per second, seconds.

References
----------
.. [1] TensorRT-LLM, docs/source/performance/perf-overview.md@258c754, "Online Serving Measurements": "generated
   using version 0.14.0, with 500 requests and BF16 precision", TensorRT-LLM backend for Triton.
.. [2] TensorRT-LLM, "Useful Runtime Options" (docs/source/performance/performance-tuning-guide): "TensorRT-LLM
   currently supports three batch scheduler policies: GUARANTEED_NO_EVICT (default), MAX_UTILIZATION and
   STATIC_BATCH".
.. [3] Triton perf_analyzer, triton-inference-server/client@040e0ad:src/c++/perf_analyzer/docs/cli.md,
   ``--request-distribution=[constant|poisson]``: "Default is `constant`".
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from typing import NamedTuple

__all__ = ["RunFigures", "simulate_run"]


class RunFigures(NamedTuple):
    """What a benchmark run reports, as means over its requests: first-token time (arrival to first token) and time
    per output token after the first (``(finish - first) / (output - 1)``) [s], output tokens per second over the run
    (every request's output over the time from the first arrival to the last finish) [tokens/s], the steps it took
    and the most sequences any step decoded [count]."""

    ttft_s: float
    tpot_s: float
    output_tokens_per_s: float
    steps: int
    most_decoded: int


def simulate_run(
    requests: int,
    rate: float | None,
    prompt: int,
    output: int,
    kv_tokens: float,
    max_batch: int,
    max_tokens: int,
    step_seconds: Callable[[int, int], float],
) -> RunFigures:
    """Run ``requests`` requests of ``prompt`` tokens in and ``output`` out through a continuous-batching engine, one
    step at a time (see the module).

    Parameters
    ----------
    requests : int
        Requests the benchmark sends [count], at least 1.
    rate : float or None
        Requests per second, sent at even intervals; None or infinite: all at once [requests/s].
    prompt, output : int
        Tokens in and out of every request [tokens]; output at least 1.
    kv_tokens : float
        Tokens the engine's KV cache holds [tokens]; each admitted request holds ``prompt + output`` of them.
    max_batch : int
        Sequences the engine runs at once at most; 0: no limit [count].
    max_tokens : int
        Tokens a step computes at most, decoded and prefilled; 0: no limit [tokens].
    step_seconds : callable
        ``step_seconds(decoded, prefilled)``: one step's time decoding ``decoded`` sequences and reading
        ``prefilled`` prompt tokens [s] (the calibrated serving step, :func:`xlsxplan.core.step.step_parts`).

    Returns
    -------
    RunFigures
        The run's mean first-token time, mean time per output token, output throughput, steps and largest batch.
        ValueError when one request alone does not fit in ``kv_tokens``.
    """
    if requests < 1 or output < 1 or prompt < 0:
        raise ValueError("a run needs at least one request of at least one output token")
    if rate is not None and not rate > 0:
        raise ValueError(f"the request rate must be above 0 (None: every request at once), got {rate!r}")
    if max_batch < 0 or max_tokens < 0:
        raise ValueError("max_batch and max_tokens must be 0 (no limit) or more")
    if max_tokens and prompt + 1 > max_tokens:
        raise ValueError(
            f"a prompt of {prompt:,} tokens does not fit a step of {max_tokens:,}: reading it in chunks is not modelled"
        )
    if prompt + output > kv_tokens:
        raise ValueError(f"one request ({prompt + output:,} tokens) does not fit in the KV cache ({kv_tokens:,.0f})")
    gap = 0.0 if rate is None or math.isinf(rate) else 1.0 / rate
    arrival = [i * gap for i in range(requests)]
    first = [0.0] * requests
    finish = [0.0] * requests
    cache: dict[tuple[int, int], float] = {}
    t, steps, most = 0.0, 0, 0
    waiting = 0  # the next request not yet admitted (arrival order)
    admitted: deque[int] = deque()  # admitted, prompt not yet read
    # decoding sequences as (the step that gives their last token, request): every request has the same output, so
    # the order they start decoding in is the order they end in
    decoding: deque[tuple[int, int]] = deque()
    held = 0.0  # KV tokens the admitted and decoding requests hold
    done = 0
    while done < requests:
        if not admitted and not decoding and waiting < requests and arrival[waiting] > t:
            t = arrival[waiting]  # idle until the next request arrives
        while (
            waiting < requests
            and arrival[waiting] <= t
            and (not max_batch or len(admitted) + len(decoding) < max_batch)
            and held + prompt + output <= kv_tokens
        ):
            admitted.append(waiting)
            held += prompt + output
            waiting += 1
        budget = max_tokens - len(decoding) if max_tokens else math.inf
        reading: list[int] = []
        while admitted and prompt <= budget - prompt * len(reading):
            reading.append(admitted.popleft())
        if not reading and not decoding:  # nothing admitted can run: cannot happen once one request fits
            raise ValueError("the engine can run no request")
        key = (len(decoding), prompt * len(reading))
        dt = cache.get(key)
        if dt is None:
            dt = cache[key] = step_seconds(*key)
            if not dt > 0:
                raise ValueError(f"a step must take some time, got {dt!r} s at {key[0]} sequences and {key[1]} tokens")
        repeat = 1  # steps alike until something changes: only decoding, until a sequence ends or a request can join
        if not reading:
            repeat = decoding[0][0] - steps
            joins = not max_batch or len(decoding) < max_batch
            if waiting < requests and joins and held + prompt + output <= kv_tokens:
                repeat = min(repeat, max(1, math.ceil((arrival[waiting] - t) / dt)))
        t += dt * repeat
        steps += repeat
        most = max(most, len(decoding))
        for r in reading:  # the prompt's step gives the first token; a one-token answer ends in it
            first[r] = t
            decoding.append((steps + output - 1, r))
        while decoding and decoding[0][0] == steps:
            finish[decoding.popleft()[1]] = t
            held -= prompt + output
            done += 1
    ttft = sum(first[i] - arrival[i] for i in range(requests)) / requests
    tpot = sum((finish[i] - first[i]) / (output - 1) for i in range(requests)) / requests if output > 1 else 0.0
    return RunFigures(ttft, tpot, requests * output / (max(finish) - arrival[0]), steps, most)
