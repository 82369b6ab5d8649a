"""The training plan (`xlsxplan plan --train`): every layout of a run, the cheapest that fits in memory and finishes
within the budget and the deadline first, each rejected one with its reason.

The cases are the finance analyst's: a $200,000 budget of H100 time at $2.50 an hour, at most 14 days and 256 GPUs,
the model size to choose; the same with the size fixed too large (70B); and a 30.8B model (LLaMA-33B's shape) that
needs 177 GB a GPU with ZeRO-1 and no model parallelism. The figures the tests hold the plan to are computed by hand
below from the equations the plan documents, not by calling the functions under test.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from xlsxplan.catalog import load_catalog
from xlsxplan.cli import main
from xlsxplan.core import training
from xlsxplan.errors import XlsxplanError
from xlsxplan.plan.train import TRAIN_INPUTS, plan_training

BUDGET = {"gpus": "H100=2.5", "budget_usd": 200_000, "max_days": 14, "max_gpus": 256}
FLAGS = ["--gpu", "H100=2.50", "--budget-usd", "200000", "--max-days", "14", "--max-gpus", "256"]
JSON_KEYS = set(
    "gpu gpus tp pp dp ep cp zero micro_batch global_batch recompute precision params_b tokens memory_gb_per_gpu "
    "step_s mfu days gpu_hours usd price_basis goodput feasible reason".split()
)
H100 = load_catalog().accelerators.get("H100-SXM")
PEAK = {"bf16": H100.bf16_tflops * 1e12, "fp8": H100.fp8_tflops * 1e12}


@pytest.fixture(scope="module")
def budget_plan():
    return plan_training(**BUDGET)


@pytest.fixture(scope="module")
def too_large():
    return plan_training(**BUDGET, params_b=70)


def test_the_issue_sizes_30_8b_at_the_assumed_mfu():
    # $200,000 at $2.50 is 80,000 GPU-hours, 2.88e8 GPU-seconds; at 40% of 989.4 TFLOP/s that is 1.140e23 FLOPs;
    # N = sqrt(C t / 120) = sqrt(9.498e20) = 3.082e10: the 30.8B the analyst found by hand
    n = training.optimal_params_b(989.4e12 * 0.4, 200_000 / 2.5 * 3600, 20)
    assert n == pytest.approx(30.82, abs=0.01)


def test_budget_case_is_feasible_within_both_limits(budget_plan):
    best = budget_plan.options[0]
    assert best.feasible and best.reason == ""
    assert best.gpu == "H100-SXM" and best.price == 2.5 and best.price_basis == "given"
    assert best.memory_gb_per_gpu <= 80 * 0.9 and sum(best.memory.values()) == pytest.approx(best.memory_gb_per_gpu)
    assert best.days <= 14 and best.gpus <= 256 and best.usd <= 200_000
    # the cost is the GPU-hours the wall days hold, at the price
    assert best.gpu_hours == pytest.approx(best.days * 24 * best.gpus, rel=1e-12)
    assert best.usd == pytest.approx(best.gpu_hours * 2.5, rel=1e-12)
    assert best.gpus == best.tp * best.pp * best.dp


def test_budget_case_size_is_sqrt_ct_over_120_at_the_sustained_rate(budget_plan):
    """The chosen N is the source text's sqrt(C t / 120), C t the 6N-FLOPs $200,000 buys at the best layout's
    sustained rate (its MFU times its goodput times the peak): a 20-tokens-a-parameter run that spends the budget."""
    best = budget_plan.options[0]
    gpu_seconds = 200_000 / 2.5 * 3600
    rate = best.mfu * best.goodput * PEAK[best.precision]
    n = math.sqrt(gpu_seconds * rate / 120) / 1e9
    assert 0.985 * n <= best.params_b <= n * (1 + 1e-9)
    assert best.tokens == pytest.approx(20 * best.params_b * 1e9, rel=1e-12)
    assert best.usd >= 0.97 * 200_000  # the size spends the budget, the binding limit
    assert all(o.params_b == best.params_b for o in budget_plan.options)  # one accelerator, one size


def test_deadline_alone_sizes_the_largest_model_the_days_allow():
    result = plan_training(gpus="H100=2.5", max_days=14, max_gpus=64, precisions="bf16")
    best = result.options[0]
    assert best.feasible and best.gpus == 64  # the fastest layout: every GPU allowed
    assert 0.97 * 14 <= best.days <= 14
    # N = sqrt(C t / 120) with C t the 6N-FLOPs 64 GPUs sustain for 14 days
    rate = best.mfu * best.goodput * PEAK["bf16"]
    assert best.params_b == pytest.approx(math.sqrt(14 * 86_400 * 64 * rate / 120) / 1e9, rel=0.02)


def test_feasible_first_then_cheapest(budget_plan):
    flags = [o.feasible for o in budget_plan.options]
    assert flags == sorted(flags, reverse=True) and flags[0] and not flags[-1]
    feasible = [o.usd for o in budget_plan.options if o.feasible]
    assert feasible == sorted(feasible)
    for o in budget_plan.options:
        if not o.feasible:
            assert o.reason.split(":")[0] in ("memory", "days", "budget", "GPU limit")


def test_step_time_parts_by_hand(budget_plan):
    """One layout's step from the documented equations: compute at the calibrated MFU (in FP8, the linear layers at
    the FP8 peak, the attention core at the BF16 peak and the FP8 casts at the memory bandwidth), tensor-parallel
    all-reduces, the pipeline bubble (p - 1) / (m + p - 1) of the pipeline's time, the exposed half of the
    data-parallel traffic."""
    o = next(o for o in budget_plan.options if o.pp > 1 and o.tp > 1 and o.dp > 1 and o.fits)
    n_params = o.params_b * 1e9
    hidden = round((64 / 12 * n_params) ** (1 / 3) / 64) * 64  # d = 64 L and N = 12 L d^2 (Kaplan et al. 2020)
    layers = hidden // 64
    seq, seqs = 4096, 4_194_304 // 4096
    tokens_step = seqs * seq
    micro = seqs // (o.dp * o.micro_batch)
    peak = PEAK[o.precision]
    attention = 12 * layers * layers * 64 * seq  # PaLM's 12 L H Q T, heads of 64
    assert o.recompute == "none"
    seconds_per_token = 6 * n_params / peak + attention / PEAK["bf16"]  # attention stays in BF16
    if o.precision == "fp8":  # 40 bytes a hidden unit a layer cast to FP8, at the memory bandwidth
        seconds_per_token += 40 * hidden * layers / (H100.bandwidth_tb_s * 1e12)
    compute = tokens_step * seconds_per_token / (o.gpus * o.calibrated_mfu)
    assert o.step["compute"] == pytest.approx(compute, rel=1e-9)
    boundary = o.micro_batch * seq * hidden * 2
    tp = micro * math.ceil(layers / o.pp) * 4 * 2 * (o.tp - 1) / o.tp * boundary / 450e9  # NVLink, 450 GB/s each way
    assert o.step["tensor_parallel"] == pytest.approx(tp, rel=1e-9)
    stage = o.step["compute"] + o.step["tensor_parallel"] + o.step["pipeline_sends"]
    assert o.step["pipeline_bubble"] / (stage + o.step["pipeline_bubble"]) == pytest.approx(
        (o.pp - 1) / (micro + o.pp - 1), rel=1e-9
    )
    grads = 2 * n_params / (o.tp * o.pp)  # BF16 gradients of the slice, all-reduced across nodes at 50 GB/s
    assert o.tp * o.dp > 8
    assert o.step["data_parallel_exposed"] == pytest.approx(0.5 * 2 * (o.dp - 1) / o.dp * grads / 50e9, rel=1e-9)
    assert o.step_s == pytest.approx(sum(o.step.values()), rel=1e-12)
    assert o.mfu == pytest.approx(6 * n_params * tokens_step / (o.step_s * o.gpus * peak), rel=1e-12)
    assert o.days == pytest.approx(o.tokens / tokens_step * o.step_s / o.goodput / 86_400, rel=1e-12)


def test_goodput_falls_as_the_run_grows(budget_plan):
    by_gpus = sorted({(o.gpus, o.goodput) for o in budget_plan.options})
    ratios = [g for _, g in by_gpus]
    assert ratios == sorted(ratios, reverse=True) and ratios[0] < 1


def test_size_fixed_too_large_says_which_limit_binds_and_by_how_much(too_large):
    assert not any(o.feasible for o in too_large.options)
    # even at 100% of the FP8 peak, 6 x 70e9 x 1.4e12 FLOPs is 82,537 GPU-hours, $206,344: over the budget
    ideal = 6 * 70e9 * 1.4e12 / PEAK["fp8"] / 3600 * 2.5
    assert ideal == pytest.approx(206_344, abs=1)
    limits = {(x["limit"], x["text"].split(" ")[1]): x for x in too_large.limits}
    budget = limits[("budget_usd", "cheapest")]
    fitting = [o for o in too_large.options if o.fits and o.gpus <= 256]
    assert budget["binds"] and budget["best"] == min(o.usd for o in fitting) > ideal
    assert budget["by"] == pytest.approx(budget["best"] - 200_000)
    assert f"over the $200,000 budget by ${budget['by']:,.0f}" in budget["text"]
    days = limits[("max_days", "fastest")]
    assert days["binds"] and days["best"] == min(o.days for o in fitting) > 14
    gpus = limits[("max_gpus", "in")]  # "finishing in time needs ..."
    assert gpus["binds"] and gpus["best"] > 256 and gpus["by"] == gpus["best"] - 256
    assert too_large.options[0].reason.startswith(("days", "budget"))


def test_zero1_30_8b_needs_177_gb_and_the_search_finds_zero3_and_tensor_parallel():
    grid = {"precisions": "bf16", "micro_batches": "1", "recompute": "none"}
    result = plan_training(model="LLaMA-33B", params_b=30.8, gpus="H100=2.5", max_gpus=256, all_layouts=1, **grid)
    (zero1,) = [o for o in result.options if (o.gpus, o.tp, o.pp, o.zero) == (256, 1, 1, 1)]
    # weights and gradients 30.8 x (2 + 2) = 123.2 GB, Adam's 12 bytes sharded over 256: 1.444 GB; activations of
    # 60 layers at 4,096 tokens, width 6,656, 52 heads, fused attention, no dropout: 60 x (32 s h + 4 a s) bytes
    activations = 60 * (32 * 4096 * 6656 + 4 * 52 * 4096) / 1e9
    assert zero1.memory_gb_per_gpu == pytest.approx(123.2 + 30.8 * 12 / 256 + activations, rel=1e-9)
    assert zero1.memory_gb_per_gpu == pytest.approx(177.0, abs=0.05)
    assert zero1.reason.startswith("memory: needs 177.0 GB a GPU")
    fits = [o for o in result.options if o.gpus == 256 and o.fits]
    assert any(o.zero == 3 and o.tp == 1 and o.pp == 1 for o in fits)  # ZeRO-3 (FSDP) alone
    assert any(o.tp in (4, 8) and o.zero == 1 for o in fits)  # tensor parallel 4 or 8 with ZeRO-1
    assert any(o.pp > 1 for o in fits)  # and pipeline parallelism, which the template had no input for


def test_cli_json_matches_the_plan(capsys, budget_plan):
    assert main(["plan", "--train", *FLAGS, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["inputs"]) == {p.name for p in TRAIN_INPUTS}
    assert out["inputs"]["budget_usd"] == 200_000 and out["inputs"]["params_b"] == 0
    first = out["options"][0]
    assert JSON_KEYS <= set(first)
    best = budget_plan.options[0]
    layout = (best.gpus, best.tp, best.pp, best.dp, best.zero)
    assert (first["gpus"], first["tp"], first["pp"], first["dp"], first["zero"]) == layout
    assert first["usd"] == pytest.approx(best.usd, abs=0.01) and first["feasible"] is True
    assert [o["feasible"] for o in out["options"]] == sorted((o["feasible"] for o in out["options"]), reverse=True)


def test_cli_too_large_exits_1_naming_the_binding_limits(capsys):
    assert main(["plan", "--train", *FLAGS, "--params-b", "70", "--top", "2"]) == 1
    out = capsys.readouterr().out
    assert "binds: the cheapest layout costs $" in out and "over the $200,000 budget by $" in out
    assert "over the 14-day limit by" in out and "over the 256-GPU limit by" in out


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--zero", "5", "--params-b", "7"], "--zero must list whole numbers from 0 to 3"),
        (["--budget-usd", "lots"], "--budget-usd must be a number"),
        (["--params-b", "7", "--precision", "fp4"], "--precision must list names of bf16, fp8"),
        (["--params-b", "7", "--max-gpus", "0"], "--max-gpus must be a whole number from 1"),
        (["--params-b", "7", "--gpu", "H100=-1"], "--gpu 'H100=-1': the price must be a positive number"),
        ([], "--params-b is needed"),
        (["--params-b", "7", "--requests-per-day", "9"], "--requests-per-day is for serving plans"),
    ],
)
def test_cli_bad_input_is_one_line_naming_the_flag(capsys, args, flag):
    assert main(["plan", "--train", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("xlsxplan plan: error: ") and flag in err


def test_training_flag_without_train_is_refused(capsys):
    assert main(["plan", "--params-b", "7"]) == 2
    assert "--params-b plans a training run: add --train" in capsys.readouterr().err


def test_bad_input_through_the_api_names_the_argument():
    with pytest.raises(XlsxplanError) as err:
        plan_training(params_b=7, recompute="some")
    assert err.value.argument == "recompute"


def test_every_training_flag_is_in_the_planning_page():
    text = (Path(__file__).resolve().parents[2] / "docs" / "planning.md").read_text(encoding="utf-8")
    missing = [p.cli_flag for p in TRAIN_INPUTS if f"`{p.cli_flag}" not in text]
    assert not missing


def test_a_deadline_a_pipeline_bubble_misses_names_the_larger_batch_beside_more_gpus(capsys):
    # Llama 3.1 405B on 15T tokens within 60 days on at most 16,384 H100s, at the default 4M-token global batch: the
    # fastest layout pipelines 8 stages over 4 micro-batches a step, GPipe's bubble (p-1)/(m+p-1) = 7/11 of its
    # compute; the line that says the deadline binds names the global batch as the other lever
    args = ["plan", "--train", "--model", "Llama-3.1-405B", "--tokens", "15e12", "--gpu", "H100=2",
            "--max-gpus", "16384", "--max-days", "60"]  # fmt: skip
    assert main([*args, "--json"]) == 1  # no layout meets the deadline
    data = json.loads(capsys.readouterr().out)
    within = [o for o in data["options"] if o["gpus"] <= 16384 and o["days"] is not None]
    fastest = min(within, key=lambda o: o["days"])
    assert fastest["pp"] > 1 and fastest["days"] > 60
    share = fastest["step_parts_s"]["pipeline_bubble"] / fastest["step_s"]
    micro = fastest["global_batch"] / (fastest["dp"] * fastest["micro_batch"])
    assert main(args) == 1
    out = capsys.readouterr().out
    assert (
        f"the pipeline's bubble is {share:.0%} of its step at {micro:,.3g} micro-batches a step: a larger global "
        "batch (--global-batch-tokens) fills it"
    ) in out
