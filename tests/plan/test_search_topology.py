"""The plan beyond one server: replica sizes laid out on a system's topology (xlsxplan.plan.search.replica_sizes)."""

from __future__ import annotations

import json

import pytest

from xlsxplan.cli import main
from xlsxplan.plan.search import Assumptions, Targets, Traffic, plan

DEEPSEEK = Traffic(2_000_000, 3_000, 600)
PRICES = {"H100": 2.95, "H200": 3.5, "B200": 5.5}


@pytest.fixture(scope="module")
def deepseek():
    return plan("DeepSeek-V3", DEEPSEEK, Targets(20), PRICES)


def test_deepseek_v3_is_planned_on_h100s_beyond_one_server_with_wide_expert_parallel_options(deepseek):
    h100 = [o for o in deepseek.feasible if o.gpu == "H100-SXM"]
    assert h100 and all(o.gpus_per_replica >= 16 for o in h100)  # 673 GB of FP8 weights: no 8-GPU server holds them
    assert any("dp-attention" in o.layout for o in h100)  # wide expert parallel
    assert any("pp" in o.layout for o in h100)  # tensor parallel within a server, pipeline stages across
    costs = [o.calibrated.usd_per_month for o in deepseek.feasible]
    assert costs == sorted(costs)  # ranked
    for o in h100:  # each one's step broken down, its communication apart and inside it
        ex = o.calibrated.extra
        assert 0 < ex["comm_s"] < ex["step_s"]
        parts = ex["step_parts_s"]
        assert ex["comm_s"] == pytest.approx(parts["all-reduce"] + parts["all-to-all"] + parts["pipeline"])
        assert (parts["all-to-all"] > 0) == ("dp-attention" in o.layout)
        assert (parts["pipeline"] > 0) == ("pp" in o.layout)
    rows = deepseek.rows()
    assert rows[0][-3:] == ["layout", "step_s", "comm_s"]
    first = rows[1]
    assert (
        first[-3] == (deepseek.feasible[0].layout or "tp8")
        and first[-1] == deepseek.feasible[0].calibrated.extra["comm_s"]
    )


def test_each_size_that_fails_says_why(deepseek):
    h100 = [o for o in deepseek.rejected if o.gpu == "H100-SXM" and o.layout]
    reasons = {o.calibrated.extra["rejected_by"] for o in h100}
    assert "weights" in reasons  # BF16 on 16 GPUs: memory
    # an accelerator no system preset is built of stops at one server
    l40s = plan("DeepSeek-V3", DEEPSEEK, Targets(20), {"L40S": 1.0}, Assumptions(max_gpus_per_replica=16))
    big = [o for o in l40s.options if o.gpus_per_replica == 16]
    assert big and all("no system preset gives L40S's topology" in o.calibrated.reason for o in big)
    # the attention heads must split over the tensor-parallel group: 64 GPUs of an NVL72 domain, 128 heads fit
    gb200 = plan(
        "DeepSeek-V3",
        DEEPSEEK,
        Targets(20),
        {"GB200": 6.0},
        Assumptions(max_gpus_per_replica=64, servings=("aggregated",)),
    )
    assert {o.layout for o in gb200.options if o.gpus_per_replica == 64} == {"tp64", "ep64 dp-attention"}


def test_a_model_one_server_holds_is_planned_as_before_unless_asked():
    small = plan("Qwen2.5-72B", Traffic(200_000, 2_000, 300), Targets(20), {"H100": 2.5})
    assert {o.gpus_per_replica for o in small.options} == {1, 2, 4, 8} and not small.multi_node
    asked = plan(
        "Qwen2.5-72B",
        Traffic(200_000, 2_000, 300),
        Targets(20),
        {"H100": 2.5},
        Assumptions(max_gpus_per_replica=16, weight_precisions=("fp8",), kv_precisions=("fp8",)),
    )
    assert {o.layout for o in asked.options if o.gpus_per_replica == 16} == {"tp8 pp2"}  # dense: no expert layout


def test_the_cli_prints_the_layout_and_its_communication(capsys):
    code = main(
        [
            "plan",
            "--model",
            "DeepSeek-V3",
            "--requests-per-day",
            "2000000",
            "--prompt-tokens",
            "3000",
            "--output-tokens",
            "600",
            "--tokens-per-s",
            "20",
            "--gpu",
            "H100=2.95",
            "--max-gpus-per-replica",
            "32",
            "--json",
        ]
    )
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["inputs"]["assumptions"]["max_gpus_per_replica"] == 32
    sizes = {o["gpus_per_replica"] for o in data["options"]}
    assert sizes == {1, 2, 4, 8, 16, 32}
    feasible = [o for o in data["options"] if o["feasible"]]
    assert feasible and all(0 < o["comm_s"] < o["step_s"] for o in feasible)


def test_an_accelerator_without_a_scale_up_link_says_its_all_reduces_are_left_out(capsys):
    # MI355X: AMD's per-GPU Infinity Fabric bandwidth was not found in a stored source (accelerators.toml), so a
    # replica of 2 to 8 GPUs is stepped with no all-reduce; the plan says so beside the result, not only in the JSON
    traffic, targets = Traffic(2_000_000, 3_000, 600, 3), Targets(20)
    amd = plan("Qwen2.5-72B", traffic, targets, {"MI355X": 2.59})
    shared = [o for o in amd.feasible if o.gpus_per_replica > 1]
    assert shared and all(o.calibrated.extra["step_parts_s"]["all-reduce"] == 0 for o in shared)
    (note,) = [n for n in amd.notes if n.startswith("links: ")]
    assert note.startswith("links: MI355X has no scale-up link in the catalog (AMD's per-GPU Infinity Fabric")
    assert "all-reduces of its replicas of 2, 4, 8 GPUs are not counted" in note
    # an accelerator with its link counts its all-reduces and has nothing to say
    nvidia = plan("Qwen2.5-72B", traffic, targets, {"H100": 2.95})
    assert not [n for n in nvidia.notes if n.startswith("links: ")]
    assert any(o.calibrated.extra["step_parts_s"]["all-reduce"] > 0 for o in nvidia.feasible)
    code = main(["plan", "--model", "Qwen2.5-72B", "--requests-per-day", "2000000", "--prompt-tokens", "3000",
                 "--output-tokens", "600", "--tokens-per-s", "20", "--gpu", "MI355X=2.59", "--top", "1"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and f"\n  {note}\n" in out


def test_the_summary_claims_the_efficiencies_move_the_fleet_only_where_they_do(capsys):
    # DeepSeek-V3 on H100s with a P99 first-token target: both views plan rank 1 at 96 GPUs, so "what moves it most:
    # the efficiencies" would point at a figure equal to the headline
    args = ["plan", "--model", "DeepSeek-V3", "--requests-per-day", "2000000", "--prompt-tokens", "3000",
            "--output-tokens", "600", "--tokens-per-s", "20", "--gpu", "H100=2.95", "--top", "1"]  # fmt: skip
    assert main([*args, "--ttft-s", "1", "--ttft-percentile", "0.99", "--json"]) == 0
    rank1 = json.loads(capsys.readouterr().out)["options"][0]
    assert rank1["gpus"] == rank1["assumed"]["gpus"]  # the ranked view's figures, and the other view's
    assert main([*args, "--ttft-s", "1", "--ttft-percentile", "0.99"]) == 0
    out = capsys.readouterr().out
    same = f"the same option needs the same {rank1['gpus']} GPUs"
    assert f"the efficiencies do not move this fleet: at the source text's ideal efficiencies {same}" in out
    assert "what moves it most" not in out
    # without the percentile target the two views differ, and the summary says by how much
    assert main(args) == 0
    assert "what moves it most: the efficiencies, at the source text's ideal efficiencies" in capsys.readouterr().out


def test_a_disaggregated_option_gives_its_prefill_and_decode_pools(capsys):
    # the split a deployment needs (each pool with its spare), in the JSON and in the summary's first line
    args = ["plan", "--model", "DeepSeek-V3", "--requests-per-day", "2000000", "--prompt-tokens", "3000",
            "--output-tokens", "600", "--tokens-per-s", "20", "--gpu", "H100=2.95", "--top", "0"]  # fmt: skip
    assert main([*args, "--json"]) == 0
    options = json.loads(capsys.readouterr().out)["options"]
    split = [o for o in options if o["serving"] == "disaggregated" and o["feasible"]]
    assert split and all(o["prefill_replicas"] + o["decode_replicas"] == o["replicas"] for o in split)
    assert all(o["prefill_replicas"] >= 2 and o["decode_replicas"] >= 2 for o in split)  # a spare in each pool
    assert not any("prefill_replicas" in o for o in options if o["serving"] == "aggregated")
    first = options[0]
    assert main(args[:-2] + ["--top", "1"]) == 0
    assert first["serving"] == "disaggregated"  # rank 1 here: ep16 on H100s, 96 GPUs
    pools = f"({first['prefill_replicas']} prefill and {first['decode_replicas']} decode replicas)"
    assert f"disaggregated {pools}: {first['gpus']} GPUs" in capsys.readouterr().out


def test_a_first_token_comes_no_sooner_than_the_step_that_reads_the_prompts_last_chunk(capsys):
    # DeepSeek-V3 with a 30 ms first-token target: B200's aggregated option ran 50 ms steps and showed a 20 ms first
    # token, accepted; a first token ends a step, so every aggregated option's is at least its step, and within the
    # target
    args = ["plan", "--model", "DeepSeek-V3", "--requests-per-day", "2000000", "--prompt-tokens", "3000",
            "--output-tokens", "600", "--tokens-per-s", "20", "--gpu", "H100=2.95", "--gpu", "H200=3.5",
            "--gpu", "B200=5.5", "--top", "0", "--json"]  # fmt: skip
    for target in ("0.03", "1"):
        assert main([*args, "--ttft-s", target]) == 0
        options = json.loads(capsys.readouterr().out)["options"]
        shared = [o for o in options if o["feasible"] and o["serving"] == "aggregated"]
        assert all(o["ttft_s"] >= o["step_s"] * (1 - 1e-12) for o in shared)
        assert shared and all(o["ttft_s"] <= float(target) * (1 + 1e-9) for o in shared)
