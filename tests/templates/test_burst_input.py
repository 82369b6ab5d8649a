"""The serving template's arrival burstiness (Inputs): the P99 first token and the replicas a percentile target needs,
as Allen-Cunneen says, by hand, in both editions (the portable one in native formulas).

The hand computation is Erlang C for ``batch`` slots a replica (Kleinrock, "Queueing Systems, Volume 1", section
3.5) and Allen-Cunneen's factor ``(ca^2 + cs^2) / 2`` on the wait (Allen, "Probability, Statistics, and Queueing
Theory", 2nd ed.): the percentile's wait is ``factor x slot / (c - a) x ln(C / (1 - p))`` where C is above ``1 - p``,
else 0. The slot time is read back from the sheet's own load line (peak per replica x slot / batch)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from tests.helpers import REPO
from xlsxplan.headless import Workbook
from xlsxplan.templates import serving

EDITIONS = {
    "add-in": REPO / "workbooks" / "serving_plan_functions.xlsx",
    "portable": REPO / "workbooks" / "serving_plan.xlsx",
}
P99, TARGET = 0.99, 1.5


def erlang_c(servers: int, load: float) -> float:
    """Probability an arrival waits, M/M/c: the Erlang C formula, its terms summed in logs."""
    log_terms = [k * math.log(load) - math.lgamma(k + 1) for k in range(servers)]
    log_last = servers * math.log(load) - math.lgamma(servers + 1) + math.log(servers / (servers - load))
    top = max([*log_terms, log_last])
    below = sum(math.exp(t - top) for t in log_terms)
    return math.exp(log_last - top) / (below + math.exp(log_last - top))


def wait_by_hand(rate: float, slot: float, batch: int, percentile: float, arrival_cv: float) -> float:
    load = rate * slot
    c = erlang_c(batch, load)
    if c <= 1 - percentile:
        return 0.0
    return (arrival_cv**2 + 1) / 2 * slot / (batch - load) * math.log(c / (1 - percentile))


@pytest.fixture(scope="module")
def book() -> Any:
    return serving.build()


@pytest.mark.slow
@pytest.mark.parametrize("edition", list(EDITIONS))
def test_bursts_lengthen_the_p99_wait_and_add_a_replica_as_allen_cunneen_says(edition, book):
    wb = Workbook.load(EDITIONS[edition])
    get = lambda key: wb.get(book.address(key))  # noqa: E731
    wb.set("First_Token_Target_At_The_Percentile", TARGET).set("First_Token_Percentile", P99)
    # three replicas deployed: the peak's slots 78% busy, where requests wait
    waits = {}
    for cv in (1, 2):
        wb.set("Replicas_Deployed", 3).set("Arrival_Burstiness", cv).calculate()
        assert wb.get("High_First_Token_Percentile_Shown") == P99
        batch, peak, prefill = get("batch"), get("peak_rps"), get("prefill_chunked")
        slot = get("queue_load") * batch * 3 / peak
        waits[cv] = get("ttft_p99") - prefill
        assert waits[cv] == pytest.approx(wait_by_hand(peak / 3, slot, batch, P99, cv), rel=1e-9)
    assert waits[1] > 0 and waits[2] == pytest.approx(2.5 * waits[1], rel=1e-12)  # (2^2 + 1) / 2
    # the replicas a 1.5 s P99 needs, spare included: the fewest serving replicas whose P99 meets it, by hand
    for cv in (1, 2):
        wb.set("Replicas_Deployed", 0).set("Arrival_Burstiness", cv).calculate()
        serving_replicas = next(
            n
            for n in range(1, 20)
            if n * batch / slot > peak and prefill + wait_by_hand(peak / n, slot, batch, P99, cv) <= TARGET
        )
        assert get("replicas_ttft_pct") == serving_replicas + wb.get("Spare_Replicas")
    assert [3, 4] == [
        next(
            n
            for n in range(1, 20)
            if n * batch / slot > peak and prefill + wait_by_hand(peak / n, slot, batch, P99, cv) <= TARGET
        )
        for cv in (1, 2)
    ]  # the burst adds a replica
