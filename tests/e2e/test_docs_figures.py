"""Figures the docs state in prose, each recomputed: by the formula the prose describes, or read from an example on
the same page that tests/e2e/test_docs.py runs. A refit or a change of model that moves a figure fails here until the
prose says what the tool prints."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from tests.helpers import REPO
from xlsxplan.headless.engine import evaluate_formula

QUEUE = "51,2000/(6802-51*60.3),300/60.3,REPLICA_RPS_CHUNKED(2000/6802,2000,300,51*60.3)"
"""docs/queueing.md's worked plan: batch, prefill (the compute decode leaves), decode, a replica's capacity."""


def value(formula: str, fmt: str) -> Callable[[str], str]:
    """The figure ``formula`` computes, written as ``fmt`` writes it."""

    def compute(page: str) -> str:
        result = evaluate_formula(formula)
        assert result.error is None, result.error
        return fmt.format(result.value)

    return compute


def printed(pattern: str) -> Callable[[str], str]:
    """The figure an example's printed output on the same page shows (the first group of ``pattern``)."""

    def read(page: str) -> str:
        found = re.search(pattern, page)
        assert found, f"no printed line matches {pattern!r}"
        return found.group(1)

    return read


CLAIMS = [
    (
        "docs/calibration.md",
        r"\)\)/3600` is ([\d,]+) GPU-hours for",
        value('=TRAIN_SECONDS(6.738,2E+12,1,312,EFFICIENCY("train_mfu","A100-80GB","bf16",4096,4096))/3600', "{:,.0f}"),
    ),
    (
        "docs/calibration.md",
        r"GPUs reaches ([\d.]+) of datasheet bandwidth on an H100",
        value('=EFFICIENCY("decode_bandwidth","H100-SXM")', "{:.2f}"),
    ),
    (
        "docs/templates.md",
        r"about (\d+%) and \d+% for the FP8 pair on H100s",
        value('=EFFICIENCY("decode_bandwidth","H100-SXM","fp8")', "{:.0%}"),
    ),
    (
        "docs/templates.md",
        r"about \d+% and (\d+%) for the FP8 pair on H100s",
        value('=EFFICIENCY("prefill","H100-SXM","fp8")', "{:.0%}"),
    ),
    (
        "docs/templates.md",
        r"that is batch \d+ at ([\d.]+) tokens/s a\s+user",
        printed(r"as xlsxplan plan ranks\): ([\d.]+) tokens/s per user"),
    ),
    (
        "docs/templates.md",
        r"tokens/s a\s+user, (\d+) GPUs and",
        printed(r"tokens/s per user, \d+ replicas \((\d+) GPUs\)"),
    ),
    ("docs/queueing.md", r"Then `C = ([\d.]+)`", value(f"=ERLANG_C(51,6.94/3*SLOT_S({QUEUE}))", "{:.3f}")),
    (
        "docs/queueing.md",
        r"the P99 time to first token is ([\d.]+) s",
        value(f"=TTFT_AT_LOAD_S(6.94,3,{QUEUE},0.99)", "{:.2f}"),
    ),
    (
        "docs/queueing.md",
        r"`SLOT_S` is `51 / 2.96 = ([\d.]+) s`",
        value(f"=SLOT_S({QUEUE})", "{:.1f}"),
    ),
    (
        "docs/FUNCTIONS.md",
        r"4.98 s decode, 2.96 requests/s each\): P50 [\d.]+ s, P99 ([\d.]+) s",
        value("=TTFT_AT_LOAD_S(6.94,3,51,0.54,4.98,2.96,0.99)", "{:.2f}"),
    ),
]


@pytest.mark.parametrize("path, pattern, expected", CLAIMS, ids=[f"{c[0]}:{c[1][:30]}" for c in CLAIMS])
def test_each_figure_the_prose_states_is_what_the_tool_computes(path, pattern, expected):
    page = (REPO / path).read_text(encoding="utf-8")
    found = re.search(pattern, page)
    assert found, f"{path}: the sentence {pattern!r} is gone: update the claim here"
    assert found.group(1) == expected(page), f"{path}: the prose says {found.group(1)}"
