"""One serving chain: the step `xlsxplan plan` ranks an option by is the step `xlsxplan validate` scores a published
run with. Every feasible option of 500 random plans (seeded; stratified over dense, mixture-of-experts, latent-
attention, hybrid and sliding-window models, 16-bit, 8-bit and 4-bit weights (FP4 where the accelerator has an FP4
peak) and a mixture of experts' routed experts stored apart (gpt-oss's ``bf16+mxfp4``), tensor parallel 1 to 8, expert parallel with attention data-parallel and pipeline stages beyond a server,
aggregated and disaggregated serving, with and without targets), then of one plan of every other preset of the
catalog, is written as the run it describes (model, accelerator, GPUs, precisions, lengths, its layout and batch)
and predicted by validate's own step (:func:`xlsxplan.calibration.measurements.serving_step`): the step and each of
its parts agree to 1e-9; an aggregated option on one server is also predicted whole
(:func:`~xlsxplan.calibration.measurements.predict`): its speed per user and its replica's throughput.

Neither side's numbers are copied into the other: the plan builds its step from its option's figures
(``plan.search._Chain``), validate from the row's columns (``measurements.serve_step_seconds``), both through
:func:`xlsxplan.core.step.step_parts`; what this holds is that the two read the same weights (as the checkpoint
stores them), route the same tokens to the experts, and lay a replica out the same way.
"""

from __future__ import annotations

import dataclasses
import functools
import random
import re
from collections import Counter

import pytest

from xlsxplan import calibration
from xlsxplan.calibration import measurements
from xlsxplan.catalog import model_names
from xlsxplan.errors import XlsxplanError
from xlsxplan.plan.search import Assumptions, Option, Targets, Traffic, plan

SCENARIOS = 500
STRATA = {
    "dense": ("Llama-3.1-8B", "Llama-3.1-70B", "Qwen2.5-72B", "Phi-4", "Mistral-7B", "Qwen3-32B"),
    "mixture of experts": ("Qwen3-30B-A3B", "Mixtral-8x7B", "gpt-oss-120b", "GLM-4.5-Air", "Qwen3-235B-A22B"),
    "latent attention": ("DeepSeek-V3", "Kimi-K2"),
    "hybrid": ("Qwen3-Next-80B-A3B", "Nemotron-H-56B"),
    "sliding window": ("Gemma-3-27B", "Gemma-2-9B"),
}
ACCELERATORS = ("A100-80GB", "H100-SXM", "H200", "B200", "B300", "GB200", "L40S", "MI300X", "MI325X", "MI355X")
WEIGHTS = ("bf16", "fp8", "nvfp4", "mxfp4", "awq", "bf16+mxfp4", "fp8+nvfp4")  # REST+EXPERTS: experts stored apart
OTHERS = sorted(set(model_names()) - {m for models in STRATA.values() for m in models})
LAYOUT = re.compile(r"ep(?P<ep>\d+) dp-attention(?: tp(?P<ep_tp>\d+))?|tp(?P<tp>\d+)(?: pp(?P<pp>\d+))?")


def _scenario(rng: random.Random, k: int) -> tuple[str, str, str, str, Traffic, Targets]:
    """The ``k``-th scenario: the strata in turn, then every other preset of the catalog once."""
    stratum = list(STRATA)[k % len(STRATA)] if k < SCENARIOS else "any other preset"
    model = rng.choice(STRATA[stratum]) if k < SCENARIOS else OTHERS[k - SCENARIOS]
    traffic = Traffic(
        requests_per_day=rng.choice([1e5, 1e6, 2e6, 1e7]),
        prompt_tokens=rng.randint(100, 20_000),
        output_tokens=rng.randint(50, 4_000),
        reasoning_tokens=rng.choice([0, 0, rng.randint(100, 4_000)]),
    )
    targets = Targets(rng.choice([10, 20, 40])) if rng.random() < 0.4 else Targets()
    return stratum, model, rng.choice(ACCELERATORS), rng.choice(WEIGHTS), traffic, targets


def as_run(model: str, traffic: Traffic, o: Option) -> measurements.Measurement:
    """The published run an option describes: its model, accelerator, GPUs, precisions, lengths, layout and batch."""
    laid = LAYOUT.fullmatch(o.layout) if o.layout else None
    if o.layout and laid is None:
        raise AssertionError(f"a layout this test cannot write as a run: {o.layout!r}")
    layout: dict[str, int | None] = {}
    if laid is not None and laid["ep"]:
        layout = {"ep": int(laid["ep"]), "tp": int(laid["ep_tp"] or 1)}
    elif laid is not None:
        layout = {"tp": int(laid["tp"]), "pp": int(laid["pp"]) if laid["pp"] else None}
    return measurements.Measurement(
        line=0,
        kind="serve",
        name=f"{model} {o.label()}",
        metric="output_tokens_per_sec_total",
        value=1.0,
        model=model,
        gpu=o.gpu,
        n_gpus=o.gpus_per_replica,
        precision=o.weights,
        kv_precision=o.kv,
        input_len=traffic.prompt_tokens,
        output_len=traffic.decode_tokens,
        concurrency=o.calibrated.batch,
        pool="decode" if o.serving == "disaggregated" else None,
        **layout,
    )


@functools.cache
def compared() -> tuple[list[tuple[str, float, float]], Counter[str]]:
    """(label, the plan's step, validate's) for every feasible option of every scenario, and what they covered."""
    factors = calibration.load_factors()
    rng = random.Random(20261207)
    out: list[tuple[str, float, float]] = []
    seen: Counter[str] = Counter()
    for k in range(SCENARIOS + len(OTHERS)):
        stratum, model, gpu, weights, traffic, targets = _scenario(rng, k)
        try:
            p = plan(model, traffic, targets, {gpu: None}, Assumptions(weight_precisions=(weights,)))
        except XlsxplanError:  # a format the model or accelerator cannot take is refused in one line: no option
            seen["refused"] += 1
            continue
        for o in p.feasible:
            if o.speculative:
                continue
            run = as_run(model, traffic, o)
            step, parts = measurements.serving_step(run, factors, int(o.calibrated.batch or 0))
            planned = o.calibrated.extra["step_parts_s"]
            label = f"{o.label()} {o.layout} batch {o.calibrated.batch} ({stratum}, {model})"
            out.append((label, o.calibrated.extra["step_s"], step))
            out += [(f"{label}: {part}", planned[part], parts[part]) for part in planned]
            if o.serving == "aggregated" and not o.layout:  # a run validate scores whole: its speeds, not the step
                per_user = measurements.predict(
                    dataclasses.replace(run, metric="output_tokens_per_sec_per_user"), factors
                )
                total = measurements.predict(
                    dataclasses.replace(run, metric="output_tokens_per_sec_per_instance"), factors
                )
                out.append((f"{label}: tokens/s a user", o.calibrated.tokens_per_s_per_user or 0.0, per_user[0]))
                out.append((f"{label}: tokens/s a replica", o.calibrated.extra["tokens_per_s_total"], total[0]))
                seen["whole run"] += 1
            shape = "dp-attention" if "dp-attention" in o.layout else "pp" if o.layout else f"tp{o.gpus_per_replica}"
            seen.update([stratum, o.serving, shape])
            seen.update(["fp4"] * ("fp4" in o.weights) + ["target"] * (targets.tokens_per_s is not None))
            seen.update(["mixed"] * ("+" in o.weights))
    return out, seen


def test_every_options_step_is_validates_step_for_the_run_it_describes():
    pairs, _ = compared()
    differ = [(label, a, b) for label, a, b in pairs if b != pytest.approx(a, rel=1e-9, abs=1e-15)]
    assert not differ, f"{len(differ)} of {len(pairs)} differ, first: {differ[:3]}"


def test_the_scenarios_reach_every_stratum_layout_and_way_of_serving():
    pairs, seen = compared()
    assert len(pairs) > 5_000  # each option's step and its eight parts
    for key in (
        *STRATA,
        "any other preset",
        "aggregated",
        "disaggregated",
        "tp1",
        "tp2",
        "tp4",
        "tp8",
        "dp-attention",
        "pp",
        "fp4",
        "mixed",
    ):
        assert seen[key] >= 3, (key, seen)  # pp: tensor parallel in a server, pipeline stages across
    assert seen["target"] >= 3 and seen["whole run"] >= 200, seen
