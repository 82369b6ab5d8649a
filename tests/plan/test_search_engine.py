"""The plan search with memory as a serving engine allocates it, and with speculative decoding.

Every figure is computed by hand below from the catalog's numbers (the H100's 80 GB, 3.35 TB/s and 989.4 dense BF16
TFLOP/s; Qwen2.5-72B's and Llama-3.1's layers and KV heads), with vLLM's rule for the KV pool (vllm/v1/worker/
gpu_worker.py determine_available_memory, vllm/v1/core/kv_cache_utils.py: whole blocks of 16 tokens) and the
speculative step of Leviathan, Kalman and Matias 2023 (arXiv:2211.17192: the draft's steps, then one verify pass
of the target over gamma + 1 tokens a sequence, each bound by the slower of memory and arithmetic; Eq. 1 for the
tokens a step yields), not by calling the functions under test.
"""

from __future__ import annotations

import json
import math

import pytest

from xlsxplan.cli import main
from xlsxplan.errors import XlsxplanError
from xlsxplan.plan.search import Assumptions, Engine, Speculative, Targets, Traffic, plan

ASSISTANT = Traffic(200_000, 2_000, 300, 3)
TEXT = Assumptions(weights="params x bytes")
KV_72B = 80 * 8 * 128 * 2 * 2  # Qwen2.5-72B and Llama-3.1-70B: 80 layers, 8 KV heads of 128, K and V, BF16
KV_8B = 32 * 8 * 128 * 2 * 2  # Llama-3.1-8B: 32 layers


def _option(result, weights="fp8", kv="bf16", n=2, serving="aggregated", speculative=False):
    (o,) = [
        o
        for o in result.options
        if (o.gpu, o.weights, o.kv, o.gpus_per_replica, o.serving, o.speculative)
        == ("H100-SXM", weights, kv, n, serving, speculative)
    ]
    return o.assumed


# --- memory as vLLM allocates it ----------------------------------------------------------------------------------


def test_the_batch_comes_from_the_kv_tokens_vllm_would_allocate():
    a = Assumptions(weights="params x bytes", engine=Engine(memory_fraction=0.9, reserve_gb=2, block_size=16))
    f = _option(plan("Qwen2.5-72B", ASSISTANT, gpus={"H100": 2.5}, assumptions=a))
    # per GPU: 0.9 x 80 GB, less half of the 72.7 GB of FP8 weights and 2 GB of activations: 33.65 GB of KV pool;
    # each GPU holds 4 of the 8 KV heads, 163,840 bytes a token, in blocks of 16 tokens
    pool = 0.9 * 80 - 72.7 / 2 - 2
    tokens = math.floor(pool * 1e9 / (KV_72B / 2 * 16)) * 16
    assert tokens == 205_376
    engine = f.extra["engine"]
    assert engine["kv_pool_gb_per_gpu"] == pytest.approx(pool)
    assert engine["kv_cache_tokens"] == tokens
    # a 2,300-token request holds 144 blocks (2,304 tokens): at most 89 at once, as vLLM's "Maximum concurrency"
    assert engine["max_model_len"] == 2_300
    assert engine["max_concurrency"] == pytest.approx(tokens / 2_304)
    assert f.extra["batch_per_slot"] == tokens // 2_304 == 89 and f.batch == 89 and f.binding == "memory"
    # the flat 90% usable of the source text holds 94 (test_plan.py): the engine's reserve and blocks cost 5
    assert _option(plan("Qwen2.5-72B", ASSISTANT, gpus={"H100": 2.5}, assumptions=TEXT)).batch == 94


def test_the_engines_step_budget_caps_the_batch_and_says_so(capsys):
    # TensorRT-LLM's default 8,192 tokens a step (tensorrt_llm/builder.py BuildConfig.max_num_tokens): at 2,000 tokens
    # in and 300 out a sequence brings 2000 / 300 = 6.67 prompt tokens a step beside its own, 8192 / 7.67 = 1,068
    # sequences, more than the 94 the flat 90% of memory holds (test_plan.py): memory still sets the batch
    budget = Assumptions(weights="params x bytes", max_num_tokens=8192)
    f = _option(plan("Qwen2.5-72B", ASSISTANT, gpus={"H100": 2.5}, assumptions=budget))
    assert f.extra["batch_budget"] == 1_068 and f.batch == 94 and f.binding == "memory"
    short = Traffic(2_000_000, 467, 16, 3)  # the perf-overview's 467 in, 16 out: 8192 / (1 + 467 / 16) = 271
    free = _option(plan("Llama-3.1-8B", short, gpus={"H100": 2.5}, assumptions=TEXT), "bf16", n=1)
    capped = _option(
        plan(
            "Llama-3.1-8B",
            short,
            gpus={"H100": 2.5},
            assumptions=Assumptions(weights="params x bytes", max_num_tokens=8192),
        ),
        "bf16",
        n=1,
    )
    assert free.batch > 271 and free.binding == "memory"
    assert capped.batch == capped.extra["batch_budget"] == 271 and capped.binding == "engine's step budget"
    assert capped.tokens_per_s_per_user > free.tokens_per_s_per_user
    args = "plan --model Llama-3.1-8B --requests-per-day 2000000 --prompt-tokens 467 --output-tokens 16 --gpu H100"
    args += " --gpus-per-replica 1 --weights bf16 --serving aggregated --max-num-tokens 8192 --max-batch-size 2048"
    assert main(args.split()) == 0
    out = capsys.readouterr().out
    assert "  271  budget  " in out  # the table's batch and "set by"
    assert "engine's step budget: 8,192 tokens a step and 2,048 sequences at most" in out
    assert "it allows a batch of 271 at 467 in and 16 out, and sets rank 1's" in out


def test_a_share_that_leaves_no_pool_rejects_the_option_saying_so():
    a = Assumptions(weights="params x bytes", engine=Engine(memory_fraction=0.45))
    f = _option(plan("Qwen2.5-72B", ASSISTANT, gpus={"H100": 2.5}, assumptions=a))
    # 0.45 x 80 = 36 GB a GPU, less than half of the 72.7 GB of weights
    assert not f.feasible and f.extra["rejected_by"] == "weights"
    assert f.reason == "weights need 36.4 GB a GPU, the engine's 0.45 of 80 GB less 0 GB reserved leaves 36"


def test_the_engine_flags_show_kv_tokens_and_concurrency(capsys):
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
            "--weights-as",
            "params-x-bytes",
            "--gpu-memory-utilization",
            "0.9",
            "--activation-reserve-gb",
            "2",
            "--json",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert data["inputs"]["assumptions"]["engine"] == {"gpu_memory_utilization": 0.9, "reserve_gb": 2, "block_size": 16}
    (o,) = [
        o
        for o in data["options"]
        if (o["weights"], o["kv"], o["gpus_per_replica"], o["serving"]) == ("fp8", "bf16", 2, "aggregated")
    ]
    assert o["engine"]["kv_cache_tokens"] == 205_376 and o["batch"] == 89
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
            "--block-size",
            "16",
            "--top",
            "1",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "KV tokens  max conc" in out and "as vLLM allocates it: 0.9 of each GPU's memory" in out


# --- speculative decoding -----------------------------------------------------------------------------------------

H100_BW, H100_BF16 = 3.35e12, 989.4e12


def _roofline(read_bytes: float, flops: float, n: int = 2) -> float:
    return max(read_bytes / (n * H100_BW * 1.0), flops / (n * H100_BF16 * 0.5))


def _spec_token_s(batch: int, context: float = 2_300) -> float:
    """Llama-3.1-70B in FP8 (70.554B x 1 byte) on two H100s with Llama-3.1-8B in BF16 drafting 4 tokens a step,
    each accepted at 0.8: the draft's 4 steps and the target's verify pass, over the 3.3616 tokens a step yields."""
    gamma, per_step = 4, (1 - 0.8**5) / (1 - 0.8)
    assert round(per_step, 4) == 3.3616
    draft = _roofline(8.03e9 * 2, 2 * 8.03e9 * batch)
    verify = _roofline(70.554e9 * 1 + batch * KV_72B * context, 2 * 70.554e9 * batch * (gamma + 1))
    return (gamma * draft + verify) / per_step


def _plain_token_s(batch: int, context: float = 2_300) -> float:
    return (70.554e9 + batch * KV_72B * context) / (2 * H100_BW)


SPEC = Speculative(draft_tokens=4, acceptance=0.8, draft="Llama-3.1-8B")


def test_a_draft_changes_speed_memory_and_cost_as_the_hand_computation_says():
    a = Assumptions(weights="params x bytes", speculative=SPEC)
    result = plan("Llama-3.1-70B", ASSISTANT, gpus={"H100": 2.5}, assumptions=a)
    f, plain = _option(result, speculative=True), _option(result)
    # memory: the draft's 16.06 GB of BF16 weights beside the target's 70.554 GB, each sequence holding both caches
    # for its 2,300 tokens and the 4 drafted ones
    free = 0.9 * 160 - 70.554 - 16.06
    assert f.extra["speculative"]["draft_gb"] == pytest.approx(16.06)
    assert f.batch == math.floor(free * 1e9 / ((KV_72B + KV_8B) * 2_304)) == 54
    assert plain.batch == math.floor((0.9 * 160 - 70.554) * 1e9 / (KV_72B * 2_300)) == 97
    # speed per user at the planned batch: 69.9 tokens/s with the draft (the verify pass is bound by arithmetic),
    # where plain decoding at that batch reads the weights and the cache once a token: 60.2; at its own batch of
    # 97, plain decoding runs at 46.6
    assert f.tokens_per_s_per_user == pytest.approx(1 / _spec_token_s(54), rel=1e-12)
    assert f.extra["speculative"]["speedup"] == pytest.approx(_plain_token_s(54) / _spec_token_s(54), rel=1e-12)
    assert plain.tokens_per_s_per_user == pytest.approx(1 / _plain_token_s(97), rel=1e-12)
    assert f.extra["tokens_per_s_total"] == pytest.approx(54 / _spec_token_s(54), rel=1e-12)
    # compute: each kept token costs the verify pass's 5 tokens and the draft's 4 x 8.03/70.554, over 3.3616
    k = (5 + 4 * 8.03 / 70.554) / 3.3616
    assert f.extra["speculative"]["compute_per_token"] == pytest.approx(k)
    compute = 2 * H100_BF16 * 0.5 / (2 * 70.554e9)  # tokens/s two H100s compute at half the BF16 peak
    assert f.ttft_s == pytest.approx(2_000 / (compute - k * 54 / _spec_token_s(54)), rel=1e-9)
    rps = 1 / max(2_000 / compute * (2_000 + 300 * k) / 2_000, 300 / (54 / _spec_token_s(54)))
    assert f.extra["requests_per_s_per_replica"] == pytest.approx(rps, rel=1e-9)
    assert f.replicas == max(math.ceil(200_000 / 86_400 * 3 / rps) + 1, 2)
    assert f.usd_per_month == f.replicas * 2 * 2.5 * 730


def test_the_speed_target_finds_a_larger_batch_with_the_draft():
    a = Assumptions(weights="params x bytes", speculative=SPEC)
    result = plan("Llama-3.1-70B", ASSISTANT, Targets(tokens_per_s=70), {"H100": 2.5}, a)
    f, plain = _option(result, speculative=True), _option(result)
    # plain decoding reaches 70 tokens/s at most at batch 33 (6.7 TB/s over 70.554 GB + 33 x 754 MB of cache)
    assert plain.batch == 33 and 1 / _plain_token_s(33) >= 70 > 1 / _plain_token_s(34)
    assert plain.binding == "speed target"
    # with the draft, 53 of the 54 sequences memory holds still decode at 70 tokens/s each
    assert f.batch == 53 and f.binding == "speed target" and 1 / _spec_token_s(53) >= 70 > 1 / _spec_token_s(54)
    assert f.extra["tokens_per_s_total"] == pytest.approx(53 / _spec_token_s(53))  # 3,760 tokens/s against 2,317
    assert plain.extra["tokens_per_s_total"] == pytest.approx(33 / _plain_token_s(33))


def test_measured_acceptance_per_position_and_a_draft_head():
    sp = Speculative(acceptance_rates=(0.85, 0.6), draft_params_b=14, draft_weights="fp8")
    a = Assumptions(weights="params x bytes", speculative=sp)
    f = _option(plan("Llama-3.1-70B", ASSISTANT, gpus={"H100": 2.5}, assumptions=a), speculative=True)
    assert f.extra["speculative"]["tokens_per_step"] == pytest.approx(2.45)  # 1 + 0.85 + 0.6
    assert f.extra["speculative"]["draft_gb"] == pytest.approx(14) and f.extra["speculative"]["draft_tokens"] == 2
    free = 0.9 * 160 - 70.554 - 14
    assert f.batch == math.floor(free * 1e9 / (KV_72B * 2_302))  # a head's own cache is left out
    draft = _roofline(14e9, 2 * 14e9 * f.batch)
    verify = _roofline(70.554e9 + f.batch * KV_72B * 2_300, 2 * 70.554e9 * f.batch * 3)
    assert f.tokens_per_s_per_user == pytest.approx(2.45 / (2 * draft + verify), rel=1e-12)


def test_the_json_and_the_table_carry_the_draft(capsys):
    args = [
        "plan",
        "--model",
        "Llama-3.1-70B",
        "--requests-per-day",
        "200000",
        "--prompt-tokens",
        "2000",
        "--output-tokens",
        "300",
        "--gpu",
        "H100=2.5",
        "--spec-draft",
        "Llama-3.1-8B",
        "--spec-tokens",
        "4",
        "--spec-acceptance",
        "0.8",
    ]
    assert main([*args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    spec = data["inputs"]["assumptions"]["speculative"]
    assert spec["draft"] == "Llama-3.1-8B" and spec["draft_tokens"] == 4 and spec["tokens_per_step"] == 3.3616
    assert {o["draft"] for o in data["options"]} == {True, False}
    drafted = [o for o in data["options"] if o["draft"] and o["feasible"]]
    assert drafted and all(o["speculative"]["tokens_per_step"] == 3.3616 for o in drafted)
    assert all("speculative" not in o for o in data["options"] if not o["draft"])
    assert main([*args, "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "draft  spec x" in out and "3.362 tokens per target step" in out
    assert "bf16 with the draft on 1 GPU: weights and the draft need" in out


@pytest.mark.parametrize(
    "args, says",
    [
        (["--spec-acceptance", "0.8"], "needs one draft"),
        (["--spec-draft", "Llama-3.1-8B"], "needs one acceptance"),
        (["--spec-draft", "Llama-3.1-9B", "--spec-acceptance", "0.8"], "Llama-3.1-8B"),
        (["--spec-draft-params-b", "1", "--spec-acceptance-rates", "0.5,0.7"], "--spec-acceptance-rates must not rise"),
        (["--spec-draft-params-b", "1", "--spec-acceptance-rates", "0.5", "--spec-tokens", "2"], "--spec-tokens is"),
        (["--spec-draft-params-b", "1", "--spec-acceptance", "0.5", "--spec-draft-weights", "fp7"], "fp7"),
        (["--gpu-memory-utilization", "1.5"], "--gpu-memory-utilization must be"),
        (["--block-size", "0"], "--block-size must be"),
    ],
)
def test_bad_engine_or_draft_input_is_one_line_naming_the_flag(capsys, args, says):
    code = main(
        [
            "plan",
            "--model",
            "Llama-3.1-70B",
            "--requests-per-day",
            "200000",
            "--prompt-tokens",
            "2000",
            "--output-tokens",
            "300",
            "--gpu",
            "H100=2.5",
            *args,
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1


def test_bad_python_input_names_the_argument():
    with pytest.raises(XlsxplanError) as err:
        plan(
            "Llama-3.1-70B",
            ASSISTANT,
            gpus={"H100": 2.5},
            assumptions=Assumptions(speculative=Speculative(acceptance=0.8)),
        )
    assert err.value.argument == "draft"


# --- PLAN_OPTIONS ---------------------------------------------------------------------------------------------------


def test_plan_options_takes_the_new_inputs_as_trailing_arguments_and_keeps_its_old_table():
    from xlsxplan.plan.search import TABLE_HEADER, Owned, plan_options

    old = plan_options("Qwen2.5-72B", 200_000, 2_000, 300, 3, 20, 2, 1, "H100=2.5", 6_000)
    assert old[0] == list(TABLE_HEADER)  # without the new arguments, the table it always spilled
    table = plan_options(
        "Qwen2.5-72B",
        200_000,
        2_000,
        300,
        3,
        20,
        2,
        1,
        "H100=2.5",
        6_000,
        0,
        0,
        2,
        0.99,
        0.9,
        2,
        16,
        "Qwen2.5-7B",
        0.7,
        3,
        1,
    )
    head = table[0]
    assert head[: len(TABLE_HEADER)] == list(TABLE_HEADER)
    assert head[len(TABLE_HEADER) :] == [
        "ttft_p50_s",
        "ttft_p90_s",
        "ttft_p99_s",
        "replicas_binding",
        "kv_cache_tokens",
        "max_concurrency",
        "speculative",
        "spec_speedup",
        "owned_usd_per_month",
        "owned_usd_per_m_input",
        "owned_usd_per_m_output",
    ]
    a = Assumptions(engine=Engine(0.9, 2, 16), speculative=Speculative(3, 0.7, (), "Qwen2.5-7B"), owned=Owned())
    result = plan(
        "Qwen2.5-72B", Traffic(200_000, 2_000, 300, 3, prompt_p95=6_000), Targets(20, 2, 0.99), {"H100": 2.5}, a
    )
    first, row = result.feasible[0], dict(zip(head, table[1]))
    f = first.calibrated  # both ranked at the calibrated efficiencies
    assert row["usd_per_month"] == f.usd_per_month and row["ttft_p99_s"] == f.extra["ttft_percentiles_s"]["p99"]
    assert row["kv_cache_tokens"] == f.extra["engine"]["kv_cache_tokens"]
    assert row["speculative"] == ("yes" if first.speculative else "no")
    assert row["owned_usd_per_month"] == f.extra["owned"]["usd_per_month"]


def test_a_fleet_beyond_any_size_is_a_rejection_with_its_reason_not_an_error():
    # a trillion requests a day: the text's 2.96 requests/s a replica of two H100s needs 23 million GPUs at the peak
    result = plan("Qwen2.5-72B", Traffic(1e12, 2_000, 300, 3), gpus={"H100": 2.5}, assumptions=TEXT)
    f = _option(result, kv="bf16")
    replicas = math.ceil(1e12 / 86_400 * 3 / f.extra["requests_per_s_per_replica"]) + 1
    assert not f.feasible and f.extra["rejected_by"] == "fleet"
    assert f.reason == f"the peak needs {2 * replicas:,} GPUs, more than any fleet (10,000,000)"
    assert not result.feasible
