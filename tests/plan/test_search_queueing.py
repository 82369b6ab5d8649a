"""`xlsxplan plan --ttft-percentile`: replicas sized so a percentile of the time to first token holds at the peak,
and P50/P90/P99 at the planned fleet.

Erlang C is computed here from its defining sum (in logarithms, Kleinrock, "Queueing Systems, Volume 1", the M/M/m
queue), not by calling ERLANG_C, and the smallest fleet is found by trying every count; the plan's figures it is
fed (batch, first token without a wait, decode speed, a replica's capacity) are those test_plan.py checks against
"Back-of-the-Envelope Estimation for LLM Systems".
"""

from __future__ import annotations

import json
import math

import pytest

from xlsxplan.cli import main
from xlsxplan.plan.search import Assumptions, Targets, Traffic, plan

TAILED = Traffic(200_000, 2_000, 300, 3, prompt_p95=6_000)
TEXT = Assumptions(weights="params x bytes")
PEAK = 200_000 / 86_400 * 3


def _erlang_c(servers: int, load: float) -> float:
    """``a^c/c! * c/(c-a) / (sum_{k<c} a^k/k! + a^c/c! * c/(c-a))``, each term in logarithms."""
    log_terms = [k * math.log(load) - math.lgamma(k + 1) for k in range(servers)]
    log_last = servers * math.log(load) - math.lgamma(servers + 1) + math.log(servers / (servers - load))
    top = max(*log_terms, log_last)
    total = sum(math.exp(x - top) for x in log_terms) + math.exp(log_last - top)
    return math.exp(log_last - top) / total


def _wait(rate: float, slot: float, servers: int, q: float) -> float:
    """M/M/c: ``P(W > t) = C exp(-(c/s - rate) t)``, so the q-th percentile is ``ln(C/(1-q)) / (c/s - rate)``."""
    c = _erlang_c(servers, rate * slot)
    return 0.0 if c <= 1 - q else math.log(c / (1 - q)) / (servers / slot - rate)


def _option(result, serving="aggregated", kv="bf16"):
    (o,) = [
        o
        for o in result.options
        if (o.gpu, o.weights, o.kv, o.gpus_per_replica, o.serving) == ("H100-SXM", "fp8", kv, 2, serving)
    ]
    return o.assumed


def _aggregated_by_hand(f, target: float, q: float, spare: int = 1) -> tuple[int, dict[str, float]]:
    """The smallest fleet whose replicas, the spares down, each a queue of ``batch`` slots fed its share of the
    peak, keep the tail prompt's first token within ``target`` at the percentile; and P50/P90/P99 at that fleet."""
    tail_s = f.ttft_s  # the 6,000-token prompt read with what decode leaves of the compute
    mean_s = tail_s * 2_000 / 6_000  # the mean prompt, at the same rate
    decode_s = 300 / f.tokens_per_s_per_user
    capacity = f.extra["requests_per_s_per_replica"]
    slot = max(mean_s + decode_s, f.batch / capacity)  # held longer where compute binds (Little's law)
    load_fleet = max(math.ceil(PEAK / capacity) + spare, 2)
    serving = 1
    while PEAK / serving * slot >= f.batch or _wait(PEAK / serving, slot, f.batch, q) + tail_s > target:
        serving += 1
    fleet = max(load_fleet, serving + spare)
    at = {f"p{round(p * 100)}": tail_s + _wait(PEAK / fleet, slot, f.batch, p) for p in (0.5, 0.9, 0.99)}
    return fleet, at


def test_bursty_arrivals_grow_the_fleet_as_allen_cunneen_says():
    # --arrival-cv: 2,000,000 requests a day, 40 tokens/s a user and a P99 first token within 1 s, FP8 Qwen2.5-72B on
    # pairs of H100s at the calibrated efficiencies; the speed target keeps each replica's batch to 30 slots, so the
    # slots fill and the queue for them binds. Allen-Cunneen scales each wait by (ca^2 + cs^2) / 2, so the replicas
    # that hold the target with the spares down grow with the bursts (28 for Poisson arrivals, 30 for spreads of 2
    # and 3: a whole replica more takes the P99 wait to none for both)
    fleets = []
    for ca in (1.0, 2.0, 3.0):
        a = Assumptions(arrival_cv=ca, servings=("aggregated",))
        targets = Targets(40, ttft_s=1, ttft_percentile=0.99)
        result = plan("Qwen2.5-72B", Traffic(2_000_000, 2_000, 300, 3), targets, {"H100": 2.5}, a)
        (o,) = [
            o for o in result.options if (o.gpu, o.weights, o.kv, o.gpus_per_replica) == ("H100-SXM", "fp8", "fp8", 2)
        ]
        f = o.view("calibrated")
        assert f.extra["replicas_binding"] == "P99 first-token target"
        fleets.append(f.replicas)
        assert result.inputs()["arrival_cv"] == ca
    assert fleets[0] < fleets[1] <= fleets[2]


def test_the_fleet_grows_as_the_p99_target_tightens_as_erlang_c_says():
    fleets = []
    for target in (8, 4, 3, 2, 1.5, 1.2):
        result = plan("Qwen2.5-72B", TAILED, Targets(ttft_s=target, ttft_percentile=0.99), {"H100": 2.5}, TEXT)
        f = _option(result)
        assert f.feasible
        fleet, at = _aggregated_by_hand(f, target, 0.99)
        assert f.replicas == fleet
        assert f.extra["ttft_percentiles_s"] == pytest.approx(at, rel=1e-9, abs=1e-12)
        assert f.extra["ttft_percentiles_s"]["p99"] <= target
        fleets.append(f.replicas)
    # 4 replicas carry the load; tighter targets shrink the batch (the tail prompt must be read in time) and ask
    # for more replicas so that at most 1% of requests wait for a slot
    assert fleets == [4, 4, 5, 5, 5, 6]
    plain = _option(plan("Qwen2.5-72B", TAILED, Targets(ttft_s=3), {"H100": 2.5}, TEXT))
    assert plain.replicas == 4  # the same target without a percentile: a request that never waits


def test_a_smaller_batch_is_taken_where_it_leaves_time_to_wait_and_needs_fewer_replicas():
    # FP8 weights as published (MODEL_WEIGHTS_GB) and an FP8 KV cache, the example of docs/planning.md
    result = plan("Qwen2.5-72B", TAILED, Targets(ttft_s=8, ttft_percentile=0.99), {"H100": 2.5})
    f = _option(result, kv="fp8")
    cap = f.extra["batch_first_token"]  # the largest batch that reads the tail prompt within 8 s without a wait
    assert f.batch == f.extra["batch_for_percentile"] < cap
    assert f.replicas == 4 == _aggregated_by_hand(f, 8, 0.99)[0]
    # at the cap itself the tail prompt takes all 8 s, so at most 1% may wait: one replica more (computed by hand
    # with the figures of the plan at that batch, the one without a percentile target)
    at_cap = _option(plan("Qwen2.5-72B", TAILED, Targets(ttft_s=8), {"H100": 2.5}), kv="fp8")
    assert at_cap.batch == cap and _aggregated_by_hand(at_cap, 8, 0.99)[0] == 5


def test_a_disaggregated_prefill_pool_is_one_queue_with_a_server_per_replica():
    fleets = []
    for target in (2.5, 2, 1.2):
        result = plan("Qwen2.5-72B", TAILED, Targets(ttft_s=target, ttft_percentile=0.99), {"H100": 2.5}, TEXT)
        f = _option(result, "disaggregated")
        mean_s, tail_s = f.extra["prefill_s"], f.ttft_s  # a mean prompt's prefill; the tail's plus its transfer
        servers = 1
        while PEAK * mean_s >= servers or _wait(PEAK, mean_s, servers, 0.99) + tail_s > target:
            servers += 1
        pool = max(math.ceil(PEAK * mean_s) + 1, servers + 1)
        assert f.extra["prefill_replicas"] == pool
        assert f.extra["ttft_percentiles_s"]["p99"] == pytest.approx(tail_s + _wait(PEAK, mean_s, pool, 0.99))
        fleets.append(pool)
    assert fleets == [4, 5, 6]


def test_a_percentile_alone_reports_the_tail_without_moving_the_plan():
    base = plan("Qwen2.5-72B", TAILED, Targets(), {"H100": 2.5}, TEXT)
    shown = plan("Qwen2.5-72B", TAILED, Targets(ttft_percentile=0.99), {"H100": 2.5}, TEXT)
    for a, b in zip(base.options, shown.options):
        assert (a.label(), a.assumed.replicas, a.assumed.usd_per_month) == (
            b.label(),
            b.assumed.replicas,
            b.assumed.usd_per_month,
        )
    f = _option(shown)
    assert "ttft_percentiles_s" not in _option(base).extra
    at = f.extra["ttft_percentiles_s"]
    assert at["p50"] <= at["p90"] <= at["p99"] and at["p50"] >= f.ttft_s


def test_the_json_carries_the_percentiles_only_when_asked(capsys):
    args = [
        "plan",
        "--model",
        "Qwen2.5-72B",
        "--requests-per-day",
        "200000",
        "--prompt-tokens",
        "2000",
        "--prompt-p95",
        "6000",
        "--output-tokens",
        "300",
        "--gpu",
        "H100=2.5",
        "--ttft-s",
        "2",
        "--json",
    ]
    assert main(args) == 0
    plain = json.loads(capsys.readouterr().out)
    assert all("ttft_percentiles_s" not in o for o in plain["options"]) and "ttft_percentile" not in plain["inputs"]
    assert main([*args, "--ttft-percentile", "0.99"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["inputs"]["ttft_percentile"] == 0.99 and data["inputs"]["service_cv"] == 1
    first = data["options"][0]
    assert set(first["ttft_percentiles_s"]) == {"p50", "p90", "p99"} and first["ttft_percentiles_s"]["p99"] <= 2
    assert first["replicas_binding"] in ("peak load", "P99 first-token target")
    assert "ttft_percentiles_s" in first["assumed"]


def test_the_table_says_what_the_percentile_target_is_and_what_set_the_replicas(capsys):
    code = main(
        [
            "plan",
            "--model",
            "Qwen2.5-72B",
            "--requests-per-day",
            "200000",
            "--prompt-tokens",
            "2000",
            "--prompt-p95",
            "6000",
            "--output-tokens",
            "300",
            "--gpu",
            "H100=2.5",
            "--ttft-s",
            "1.2",
            "--ttft-percentile",
            "0.99",
            "--weights-as",
            "params-x-bytes",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "within 1.2 s for 99% of requests at the peak (P99), waiting for a batch slot included" in out
    head = next(x for x in out.splitlines() if x.startswith("rank"))
    assert head.endswith("P50 s  P90 s  P99 s  replicas set by")
    assert "queueing left out" not in out and "REPLICAS_FOR_TTFT" in out


@pytest.mark.parametrize(
    "args, says",
    [
        (["--ttft-percentile", "1"], "--ttft-percentile must be"),
        (["--ttft-percentile", "0.99", "--service-cv", "-1"], "--service-cv"),
        (["--service-cv", "0.5"], "--service-cv shapes the queue of --ttft-percentile"),
        (["--arrival-cv", "2"], "--arrival-cv shapes the queue of --ttft-percentile"),
        (["--ttft-percentile", "0.99", "--arrival-cv", "-1"], "--arrival-cv"),
    ],
)
def test_bad_percentile_input_is_one_line_naming_the_flag(capsys, args, says):
    code = main(
        [
            "plan",
            "--model",
            "Qwen2.5-72B",
            "--requests-per-day",
            "200000",
            "--prompt-tokens",
            "2000",
            "--output-tokens",
            "300",
            "--gpu",
            "H100=2.5",
            "--ttft-s",
            "2",
            *args,
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1


def test_the_percentile_columns_say_which_fleet_they_are_measured_on(capsys):
    # the P50/P90/P99 columns are the planned fleet's, spares up; the replicas a percentile sets hold it with the
    # spares down (test above): the table says so where the columns appear, and nothing where they do not
    args = ["plan", "--model", "Qwen2.5-72B", "--requests-per-day", "2000000", "--prompt-tokens", "2000",
            "--output-tokens", "300", "--tokens-per-s", "40", "--gpu", "H100=2.5", "--top", "2"]  # fmt: skip
    legend = "P50 s, P90 s, P99 s: the first token at the peak on the planned fleet, every replica up"
    assert main([*args, "--ttft-s", "1", "--ttft-percentile", "0.99"]) == 0
    assert legend in capsys.readouterr().out
    assert main(args) == 0
    assert legend not in capsys.readouterr().out
