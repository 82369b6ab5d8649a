"""The plan search (`xlsxplan plan`, PLAN_OPTIONS): every option planned as the serving template plans its scenario,
ranked by monthly cost, each rejected option with its reason.

The published figures are those of "Back-of-the-Envelope Estimation for LLM Systems" (its support assistant:
200,000 requests a day of 2,000 prompt + 300 output tokens, a peak three times the average, Qwen2.5-72B on H100s at
$2.50 an hour; section 6 prints its four configurations), read with the text's own counting of the weights
(parameters x bytes). The other cases are computed by hand below, from first principles, not by calling the
functions under test.
"""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from xlsxplan import calibration, registry
from xlsxplan.calibration.measurements import Measurement, predict
from xlsxplan.catalog import gpu_price, gpu_price_source, load_catalog, load_prices, model_names
from xlsxplan.cli import main
from xlsxplan.core.step import StepShape, serve_step, step_parts
from xlsxplan.errors import NotAvailableError, UnknownPresetError, XlsxplanError
from xlsxplan.plan.search import (
    FRONTIER_STEP,
    HOURS_PER_MONTH,
    TABLE_HEADER,
    Assumptions,
    Targets,
    Traffic,
    plan,
    plan_options,
)

ASSISTANT = Traffic(200_000, 2_000, 300, 3)
TEXT = Assumptions(weights="params x bytes")  # the source text counts the weights as parameters x bytes
PEAK_RPS = 200_000 / 86_400 * 3


def _option(result, gpu="H100-SXM", weights="fp8", kv="bf16", n=2, serving="aggregated"):
    (found,) = [
        o
        for o in result.options
        if (o.gpu, o.weights, o.kv, o.gpus_per_replica, o.serving) == (gpu, weights, kv, n, serving)
    ]
    return found


# --- the source text's support assistant ------------------------------------------------------------------------


def test_the_support_assistant_comes_out_with_the_texts_figures_ranked():
    # "Back-of-the-Envelope Estimation for LLM Systems", section 6, prints:
    #   72B, BF16, 2 GPUs: weights 145 GB don't fit in 144 GB of usable memory
    #   72B, FP8, 2 GPUs: batch 94, 47 tok/s per user, 4,387 tok/s total, prefill 0.29 s, $0.32 per M output tokens
    #   72B, BF16, 4 GPUs: batch 189, 47 tok/s per user, 8,799 tok/s total, prefill 0.15 s, $0.32 per M
    result = plan("Qwen2.5-72B", ASSISTANT, gpus={"H100": 2.5}, assumptions=TEXT)
    bf16_2 = _option(result, weights="bf16", n=2)
    assert not bf16_2.assumed.feasible and bf16_2.assumed.reason == "weights need 145 GB, 144 GB usable"
    fp8_2, bf16_4 = _option(result), _option(result, weights="bf16", n=4)
    for option, batch, total, prefill in ((fp8_2, 94, "4,387", 0.29), (bf16_4, 189, "8,799", 0.15)):
        f = option.assumed
        assert f.feasible and f.batch == batch and f.binding == "memory"
        assert round(f.tokens_per_s_per_user) == 47
        assert f"{f.extra['tokens_per_s_total']:,.0f}" == total
        assert round(f.extra["prefill_s"], 2) == prefill
        assert round(f.extra["usd_per_m_output_full_load"], 2) == 0.32
    # Fleets the text leaves to its reader: with prefill counted, a chunked replica serves 2.96 requests/s (the
    # traffic functions' worked figure, REPLICA_RPS_CHUNKED and FLEET_REPLICAS): 3 for the 6.94 peak, 4 with a spare
    assert round(fp8_2.assumed.extra["requests_per_s_per_replica"], 2) == 2.96
    assert (fp8_2.assumed.replicas, fp8_2.assumed.gpus, fp8_2.assumed.usd_per_month) == (4, 8, 8 * 2.5 * 730)
    assert (bf16_4.assumed.replicas, bf16_4.assumed.gpus) == (3, 12)
    ranked = result.feasible
    assert ranked[0] is fp8_2 and ranked.index(fp8_2) < ranked.index(bf16_4)
    assert fp8_2.frontier


def test_the_small_model_of_the_text_fits_430_sequences_on_one_gpu():
    # section 6: "7B, BF16, 1 GPU: batch 430, 47 tok/s per user, 20,031 tok/s total" (the text's 7.6B; the
    # catalog's 7.61B from the model card leaves the batch at 430 and the throughput 0.02% lower)
    result = plan("Qwen2.5-7B", ASSISTANT, gpus={"H100": 2.5}, assumptions=TEXT)
    f = _option(result, weights="bf16", n=1).assumed
    assert f.batch == 430 and round(f.tokens_per_s_per_user) == 47
    assert f.extra["tokens_per_s_total"] == pytest.approx(20_031, rel=3e-4)


def test_published_weights_keep_the_embeddings_in_16_bits_and_fit_three_fewer_sequences():
    # MODEL_WEIGHTS_GB: an FP8 checkpoint keeps its untied embeddings and output head (2 x 152,064 x 8,192) in BF16
    embeddings = 2 * 152_064 * 8_192
    weights = (72.7e9 - embeddings) * 1 + embeddings * 2
    kv_per_sequence = 2 * 80 * 8 * 128 * 2 * 2_300  # 327,680 bytes a token, 2,300 tokens
    batch = math.floor((2 * 80e9 * 0.9 - weights) / kv_per_sequence)
    assert batch == 91
    f = _option(plan("Qwen2.5-72B", ASSISTANT, gpus={"H100": 2.5})).assumed
    assert f.batch == 91 and f.extra["weights_gb"] == pytest.approx(weights / 1e9)
    one = _option(plan("Qwen2.5-72B", ASSISTANT, gpus={"H100": 2.5}), n=1).assumed
    assert one.reason == "weights need 75.2 GB, 72 GB usable"


def test_the_calibrated_view_plans_afresh_at_the_calibrated_efficiencies():
    result = plan("Qwen2.5-72B", ASSISTANT, gpus={"H100": 2.5}, assumptions=TEXT)
    c = _option(result).calibrated
    bw = calibration.efficiency("decode_bandwidth", "H100-SXM", "fp8")
    pf = calibration.efficiency("prefill", "H100-SXM", "fp8")
    assert (c.decode_bandwidth_efficiency, c.prefill_efficiency) == (bw, pf)
    # the step of core.step at the option's own numbers: 2 x H100 (3.35 TB/s, 1,978.9 FP8 TFLOP/s, NVLink 450 GB/s),
    # 72.7B FP8 weights, 94 sequences at 2,000 + 300 / 2 tokens of context (a 16-bit cache, 327,680 bytes a token over
    # both GPUs), 94 x 2,000 / 300 prompt tokens prefilled in the same step, over the fitted serving scale
    shape = StepShape(80, 64 * 128, 8192)
    parts = step_parts(
        72.7, 1.0, 72.7, 94, 94 * 2_000 / 300, 2_000, 327_680, 2_150, shape, 2, 3.35, 1978.9, bw, pf, 450
    )
    step = serve_step(parts, calibration.active().factors.serving_scale(2, "H100-SXM"))
    assert c.batch == 94 and c.tokens_per_s_per_user == pytest.approx(1 / step, rel=1e-12)
    rps = 94 / step / 300  # the prompts are prefilled inside the steps: a request costs its 300 decode steps
    assert c.extra["requests_per_s_per_replica"] == pytest.approx(rps, rel=1e-12)
    assert c.replicas == math.ceil(PEAK_RPS / rps) + 1 and c.gpus == 2 * c.replicas


# One serving step for the plan's calibrated view and validate: each option below is planned, then the same model,
# accelerator, GPUs, precisions, lengths and batch are written as a published row and predicted by validate; the
# per-user speed and the replica's throughput must agree to 1e-9. Dense, mixture-of-experts, latent-attention and
# sliding-window models; 16-bit, FP8 and FP4 weights; one to eight GPUs; Hopper, Blackwell and Instinct parts.
ONE_STEP = [
    ("Qwen2.5-72B", "H100-SXM", "fp8", "bf16", 2),
    ("Llama-3.1-8B", "L40S", "bf16", "fp8", 1),
    ("Mixtral-8x7B", "H200", "bf16", "bf16", 2),
    ("DeepSeek-V3", "H200", "fp8", "fp8", 8),
    ("gpt-oss-120b", "B200", "mxfp4", "fp8", 1),
    ("gpt-oss-120b", "MI300X", "fp8", "bf16", 4),
    ("Gemma-3-27B", "H100-SXM", "bf16", "bf16", 1),
]


@pytest.mark.parametrize("model, gpu, weights, kv, n", ONE_STEP)
def test_the_calibrated_view_runs_the_step_validate_scores(model, gpu, weights, kv, n):
    traffic_ = Traffic(200_000, 2_000, 300, 3, reasoning_tokens=100)
    a = Assumptions(weights="params x bytes", weight_precisions=(weights,), kv_precisions=(kv,), gpus_per_replica=(n,))
    result = plan(model, traffic_, gpus={gpu: 2.0}, assumptions=a)
    (o,) = [x for x in result.options if x.serving == "aggregated"]
    c = o.calibrated
    assert c.feasible, c.reason
    row = Measurement(
        0,
        "serve",
        "plan option",
        "output_tokens_per_sec_per_user",
        None,
        model=model,
        gpu=gpu,
        n_gpus=n,
        precision=weights,
        kv_precision=kv,
        input_len=2_000,
        output_len=400,
        concurrency=c.batch,
    )
    factors = calibration.active().factors
    per_user, _ = predict(row, factors)
    assert c.tokens_per_s_per_user == pytest.approx(per_user, rel=1e-9)
    total, _ = predict(dataclasses.replace(row, metric="output_tokens_per_sec_per_instance"), factors)
    assert c.extra["tokens_per_s_total"] == pytest.approx(total, rel=1e-9)


def test_the_calibrated_view_carries_p10_p90_ranges_from_the_serving_residuals():
    # P10-P90 of the calibrated fleet: a replica's capacity times the throughput band's multipliers (the conformal
    # quantiles of validate's leave-one-source-out residuals, calibration.band), replicas recounted as REPLICAS does
    result = plan("Qwen2.5-72B", ASSISTANT, gpus={"H100": 2.5}, assumptions=TEXT)
    o = _option(result)
    c, r = o.calibrated, o.calibrated.extra["range"]
    low, high = calibration.band("throughput", 0.1), calibration.band("throughput", 0.9)
    assert low < 1 < high
    rps = c.extra["requests_per_s_per_replica"]
    slow = max(math.ceil(PEAK_RPS / (rps * low)) + 1, 2) * o.gpus_per_replica
    fast = max(math.ceil(PEAK_RPS / (rps * high)) + 1, 2) * o.gpus_per_replica
    assert r["gpus"] == [min(fast, c.gpus), max(slow, c.gpus)] and r["gpus"][0] <= c.gpus <= r["gpus"][1]
    assert r["usd_per_month"] == [g * 2.5 * HOURS_PER_MONTH for g in r["gpus"]]
    d = calibration.band("decode", 0.1), calibration.band("decode", 0.9)
    assert r["tokens_per_s_per_user"] == pytest.approx([c.tokens_per_s_per_user * d[0], c.tokens_per_s_per_user * d[1]])
    assert o.to_json("assumed")["calibrated"]["range"] == r == o.to_json()["range"]
    assert "range" not in o.assumed.extra  # the assumed view is the texts' figures, with no residuals behind them


# --- hand-computed cases ----------------------------------------------------------------------------------------


def test_a_mixture_of_experts_batch_reads_the_experts_that_batch_touches():
    # Mixtral-8x7B (46.7B, 12.9B active, 2 of 8 experts) in BF16 on two H100s, a 100 tokens/s target. A step of B
    # sequences reads N - R + R (1 - (1 - k/E)^B) parameters, R = (N - N_active) / (1 - k/E) (uniform routing).
    N, active, share = 46.7, 12.9, 2 / 8
    routed = (N - active) / (1 - share)
    kv_per_sequence = 2 * 32 * 8 * 128 * 2 * 2_300

    def step(b):
        read = N - routed + routed * (1 - (1 - share) ** b)
        return (read * 1e9 * 2 + b * kv_per_sequence) / (2 * 3.35e12)

    batch = max(b for b in range(1, 200) if 1 / step(b) >= 100)
    assert batch == 4
    f = _option(plan("Mixtral-8x7B", ASSISTANT, Targets(tokens_per_s=100), {"H100": 2.5}), "H100-SXM", "bf16").assumed
    assert f.batch == 4 and f.binding == "speed target"
    assert f.tokens_per_s_per_user == pytest.approx(1 / step(4))
    prefill = 2 * active * 1e9 * 2_000 / (2 * 989.4e12 * 0.5)
    rps = 1 / max(prefill * 2_300 / 2_000, 300 * step(4) / 4)
    assert f.replicas == math.ceil(PEAK_RPS / rps) + 1 == 7 and f.gpus == 14
    # the serving template reads memory's batch (167 sequences: every expert) at every batch, so no batch meets
    # the target there; reading the experts each batch touches finds 4
    memory_batch = math.floor((2 * 80 * 0.9 - 93.4) * 1e9 / kv_per_sequence)
    assert f.extra["batch_memory"] == memory_batch == 167
    assert 1 / step(memory_batch) < 100 / 2


def test_disaggregated_pools_win_when_the_first_token_target_starves_chunked_decode():
    # 1,000,000 requests a day of 2,000 + 600 tokens, the first token within 0.32 s; Qwen2.5-72B in FP8 on pairs of
    # H100s, the text's assumptions. Aggregated, the decode steps may use only what the prompts leave of the compute.
    traffic = Traffic(1_000_000, 2_000, 600, 3)
    result = plan(
        "Qwen2.5-72B",
        traffic,
        Targets(ttft_s=0.32),
        {"H100": 2.5},
        Assumptions(
            weights="params x bytes", weight_precisions=("fp8",), kv_precisions=("bf16",), gpus_per_replica=(2,)
        ),
        rank_by="assumed",
    )
    peak = 1_000_000 / 86_400 * 3
    compute = 2 * 989.4e12 * 0.5 / (2 * 72.7e9)  # tokens/s two GPUs compute at half the BF16 peak
    room = compute - 2_000 / 0.32  # decode tokens/s the target leaves
    kv = 327_680 * 2_600
    step = lambda b: (72.7e9 + b * kv) / (2 * 3.35e12)  # noqa: E731
    agg_batch = max(b for b in range(1, 100) if b / step(b) <= room)
    assert agg_batch == 6
    prefill = 2 * 72.7e9 * 2_000 / (2 * 989.4e12 * 0.5)
    agg_rps = 1 / max(prefill * 2_600 / 2_000, 600 * step(6) / 6)
    agg = _option(result).assumed
    assert (agg.batch, agg.binding) == (6, "first-token target")
    assert agg.replicas == math.ceil(peak / agg_rps) + 1 == 42 and agg.gpus == 84
    # disaggregated: decode runs memory's batch; prefill replicas read a prompt each in `prefill` seconds
    dis_batch = math.floor((144e9 - 72.7e9) / kv)
    prefill_replicas = math.ceil(peak * prefill) + 1
    decode_replicas = math.ceil(peak * 600 / (dis_batch / step(dis_batch))) + 1
    ttft = prefill + 327_680 * 2_000 / 50e9  # and the KV cache over 50 GB/s
    dis = _option(result, serving="disaggregated").assumed
    assert (dis_batch, prefill_replicas, decode_replicas) == (83, 12, 7)
    assert (dis.batch, dis.extra["prefill_replicas"], dis.extra["decode_replicas"]) == (83, 12, 7)
    assert dis.gpus == 38 and dis.ttft_s == pytest.approx(ttft) and ttft < 0.32
    assert dis.usd_per_m_input == pytest.approx(38 * 2.5 * 24 * 12 / 19 / (1_000_000 * 2_000) * 1e6)
    assert result.feasible[0].serving == "disaggregated"


# --- what every plan promises -----------------------------------------------------------------------------------


def _invariant_id(value: object) -> str:
    if isinstance(value, Targets):
        return "no targets" if value == Targets() else "20 tokens/s, 2 s"
    return value if isinstance(value, str) else f"accelerators {value}"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("model", "targets", "half"),
    [(name, (Targets(), Targets(20, 2))[i % 2], i // 2 % 2) for i, name in enumerate(model_names())],
    ids=_invariant_id,
)
def test_every_rejected_option_carries_a_reason_and_every_feasible_one_its_figures(model, targets, half):
    """Every model in four formats on half the catalog's accelerators: with no targets for one model and with a speed
    and a first-token target for the next, in turn, and the two halves of the accelerators in turn across each such
    pair, so that every accelerator is planned with and without targets over the models (every model on every
    accelerator cost 16 s of the suite, 7.5 s this way)."""
    names = list(load_catalog().accelerators.names())
    every_gpu = {gpu: 2.0 for j, gpu in enumerate(names) if j % 2 == half}
    result = plan(
        model,
        Traffic(200_000, 2_000, 300, 3, prompt_p95=6_000, max_prompt_tokens=32_768),
        targets,
        every_gpu,
        Assumptions(weight_precisions=("bf16", "fp8", "int4_g128", "nvfp4")),
    )
    for o in result.options:
        for f in (o.assumed, o.calibrated):
            if f.feasible:
                assert f.reason is None and f.batch >= 1 and f.binding
                assert None not in (
                    f.tokens_per_s_per_user,
                    f.replicas,
                    f.gpus,
                    f.usd_per_month,
                    f.usd_per_m_input,
                    f.usd_per_m_output,
                )
                assert f.usd_per_month == pytest.approx(f.gpus * 2.0 * HOURS_PER_MONTH)
            else:
                assert f.reason and "\n" not in f.reason and f.extra["rejected_by"]
                assert "seed" not in f.reason.lower()


def test_a_target_applies_only_when_given():
    none = plan("Qwen2.5-72B", ASSISTANT, gpus={"H100": 2.5})
    assert {o.assumed.binding for o in none.feasible} == {"memory"}
    fast = plan("Qwen2.5-72B", ASSISTANT, Targets(tokens_per_s=100), {"H100": 2.5})
    # alone, FP8 on two H100s reads 75.2 GB of weights and one 2,300-token cache a step at 6.7 TB/s: 88.2 tokens/s
    assert round(6.7e12 / (75.19e9 + 327_680 * 2_300), 1) == 88.2
    assert _option(fast).assumed.reason == "no batch reaches 100 tokens/s per user: the fastest is 88.2"
    assert fast.feasible and all(o.assumed.tokens_per_s_per_user >= 100 for o in fast.feasible)
    assert {o.assumed.binding for o in fast.feasible} == {"speed target"}


def test_prices_change_the_ranking_as_they_should():
    # FP8 on one H200 needs 6 GPUs for the peak, on two H100s 8: the H200 wins below 8/6 of the H100's price
    def first(h200_price):
        return plan("Qwen2.5-72B", ASSISTANT, gpus={"H100": 2.5, "H200": h200_price}, rank_by="assumed").feasible[0]

    cheap, dear = first(3.0), first(3.5)
    assert (cheap.gpu, cheap.gpus_per_replica, cheap.assumed.gpus) == ("H200", 1, 6)
    assert (dear.gpu, dear.gpus_per_replica, dear.assumed.gpus) == ("H100-SXM", 2, 8)
    assert cheap.assumed.usd_per_month == 6 * 3.0 * 730 and dear.assumed.usd_per_month == 8 * 2.5 * 730


def test_the_frontier_compares_an_option_with_every_cheaper_one_starred_or_not():
    from types import SimpleNamespace

    from xlsxplan.plan.search import _rank

    def option(usd: float, speed: float) -> SimpleNamespace:
        view = SimpleNamespace(feasible=True, usd_per_month=usd, gpus=1, tokens_per_s_per_user=speed, ttft_s=1.0)
        return SimpleNamespace(view=lambda _: view, frontier=False)

    # 100.9 is within 1% of 100 (not starred); 101.5 is 1.5% faster than 100 but 0.6% than 100.9: not starred either
    options = [option(100, 100.0), option(110, 100.9), option(120, 101.5), option(130, 103.0)]
    _rank(options, "calibrated")
    assert [o.frontier for o in options] == [True, False, False, True]


def test_the_frontier_holds_exactly_the_options_no_other_beats_on_cost_and_speed():
    # beaten: a cheaper (or as cheap, earlier) option within FRONTIER_STEP of its speed per user; target-capped
    # batches meet a decode-speed target within a fraction of a token, which marks no dearer option
    result = plan(
        "Qwen2.5-72B",
        Traffic(200_000, 2_000, 300, 3, prompt_p95=6_000),
        Targets(20, 2),
        {"H100": None, "H200": None, "A100-40GB": None},
        rank_by="assumed",
    )
    feasible = result.feasible
    costs = [o.assumed.usd_per_month for o in feasible]
    assert costs == sorted(costs) and any(o.frontier for o in feasible) and not all(o.frontier for o in feasible)
    for i, o in enumerate(feasible):
        f = o.assumed
        beaten = any(
            p.assumed.usd_per_month <= f.usd_per_month
            and p.assumed.tokens_per_s_per_user * (1 + FRONTIER_STEP) >= f.tokens_per_s_per_user
            for p in feasible[:i]
        )
        assert o.frontier == (not beaten), o.label()


def test_an_imported_model_is_planned_like_a_shipped_one():
    # a user preset may not take a shipped preset's name, so the import gets its own; it plans as the shipped one
    assert main(["model", "add", "tests/data/qwen3-30b-a3b.json", "--name", "My-Qwen3-30B-A3B"]) == 0
    imported = plan("My-Qwen3-30B-A3B", ASSISTANT, Targets(20, 2), {"H100": 2.5})
    best = imported.feasible[0]
    assert best.assumed.feasible and best.assumed.extra["params_read_b"] < 31
    shipped = plan("Qwen3-30B-A3B", ASSISTANT, Targets(20, 2), {"H100": 2.5}).feasible[0]
    assert (best.label(), best.assumed.usd_per_month) == (shipped.label(), shipped.assumed.usd_per_month)


def test_precisions_an_accelerator_cannot_compute_are_rejected_with_the_reason():
    result = plan(
        "Llama-3.1-8B",
        ASSISTANT,
        gpus={"A100-40GB": None},
        assumptions=Assumptions(weight_precisions=("bf16", "fp8", "w8a16", "nvfp4")),
    )
    fp8 = _option(result, "A100-40GB", "fp8", n=1).assumed
    assert fp8.reason.startswith("A100-40GB has no FP8 tensor cores") and "w8a16" in fp8.reason
    assert _option(result, "A100-40GB", "w8a16", n=1).assumed.feasible
    assert "FP4" in _option(result, "A100-40GB", "nvfp4", n=1).assumed.reason


def test_fp4_weights_are_planned_on_an_accelerator_with_an_fp4_peak():
    # B200: 9,000 dense FP4 TFLOP/s in the catalog (GPU_SPEC("B200", "fp4_tflops")); an H100 has no FP4 tensor cores
    result = plan(
        "Llama-3.1-70B",
        ASSISTANT,
        Targets(20, 2),
        gpus={"B200": 6.0, "H100": 3.2},
        assumptions=Assumptions(weight_precisions=("nvfp4", "fp8")),
    )
    fp4 = _option(result, "B200", "nvfp4", n=1)
    assert fp4.assumed.feasible and fp4.calibrated.feasible
    assert fp4.assumed.extra["prefill_peak"] == "bf16_tflops"  # the source text's view: half the BF16 peak
    assert fp4.calibrated.extra["prefill_peak"] == "fp4_tflops"  # calibrated: a share of the FP4 peak
    # NVFP4 stores 4.5 bits a weight (4 + an 8-bit scale per 16), FP8 8: the weights take less memory
    fp8 = _option(result, "B200", "fp8", n=1)
    assert fp4.assumed.extra["weights_gb"] < 0.7 * fp8.assumed.extra["weights_gb"]
    assert "no published FP4 peak" in _option(result, "H100-SXM", "nvfp4", n=2).assumed.reason


# --- prices -------------------------------------------------------------------------------------------------------


def test_the_catalog_prices_accelerators_with_a_dated_source():
    # on demand: Hyperstack's price card as transcribed 2026-08-26 (H100 SXM $3.20, H200 SXM $3.99); Lambda's
    # instances page read 2026-09-20 (8x A100 SXM 40 GB, $1.99 per GPU per hour)
    assert (gpu_price("H100"), gpu_price("H200"), gpu_price("A100-40GB")) == (3.20, 3.99, 1.99)
    assert "Hyperstack" in gpu_price_source("H100") and "2026-08-26" in gpu_price_source("H100")
    accelerators = load_catalog().accelerators
    assert all(pid in accelerators.presets for pid in load_prices().ids())
    with pytest.raises(NotAvailableError, match="A40 has no on demand rental price"):
        gpu_price("A40")
    with pytest.raises(UnknownPresetError):
        gpu_price("H1000")


def test_without_gpus_every_priced_accelerator_is_searched_at_its_catalog_price():
    result = plan("Qwen2.5-72B", ASSISTANT)
    assert list(result.prices) == load_prices().ids()
    assert {o.usd_per_gpu_hour for o in result.options if o.gpu == "H200"} == {3.99}


# --- the faces ----------------------------------------------------------------------------------------------------


def test_the_excel_function_spills_the_same_ranked_table_header_first():
    fn = registry.FUNCTIONS["PLAN_OPTIONS"]
    assert fn.table and fn.category == "xlsxplan Planning"
    rows = plan_options("Qwen2.5-72B", 200_000, 2_000, 300, 3, 20, 2, 1, "H100=2.5,H200", 6_000)
    assert tuple(rows[0]) == TABLE_HEADER
    expected = plan(
        "Qwen2.5-72B", Traffic(200_000, 2_000, 300, 3, prompt_p95=6_000), Targets(20, 2), {"H100": 2.5, "H200": None}
    )
    assert rows == expected.rows()
    assert [r[0] for r in rows[1 : len(expected.feasible) + 1]] == list(range(1, len(expected.feasible) + 1))
    assert all(r[0] == "" and r[15] == "no" and r[17] for r in rows[len(expected.feasible) + 1 :])
    grid = fn("Qwen2.5-72B", 200_000, 2_000, 300)
    assert grid.shape == (len(grid), len(TABLE_HEADER)) and grid[0, 0] == "rank"


def test_plan_options_zero_means_no_target():
    untargeted = plan_options("Qwen2.5-72B", 200_000, 2_000, 300, 3, 0, 0, 1, "H100=2.5", ideal=1)
    assert {r[7] for r in untargeted[1:] if r[15] == "yes"} == {"memory"}
    # the worked figure of its Notes: FP8 on two GPUs at batch 91, 8 GPUs, $14,600 a month, first
    assert untargeted[1][:7] == [1, "H100-SXM", 2, "fp8", "bf16", "aggregated", 91]
    assert (untargeted[1][11], untargeted[1][12]) == (8, 14_600)


def test_plan_options_ranks_at_the_calibrated_efficiencies_unless_asked_for_the_ideal_ones():
    args = ("Qwen2.5-72B", 200_000, 2_000, 300, 3, 20, 2, 1, "H100=2.5,H200=3.5")
    calibrated, ideal = plan_options(*args), plan_options(*args, ideal=1)
    by_view = {
        view: plan("Qwen2.5-72B", ASSISTANT, Targets(20, 2), {"H100": 2.5, "H200": 3.5}, rank_by=view)
        for view in ("calibrated", "assumed")
    }
    assert calibrated == by_view["calibrated"].rows() and ideal == by_view["assumed"].rows()
    first = by_view["calibrated"].feasible[0]
    # the calibrated view's figures lead the row, the ideal view's GPUs and cost follow under other_view_*
    assert calibrated[1][11:13] == [first.calibrated.gpus, first.calibrated.usd_per_month]
    assert calibrated[1][18:20] == [first.assumed.gpus, first.assumed.usd_per_month]


def test_ranked_by_the_calibrated_view_the_json_keeps_its_shape(capsys):
    data = _json(capsys, "--gpu", "H100=2.5", "--rank", "assumed")
    assert data["inputs"]["ranked_by"] == "assumed"
    gpus = [o["gpus"] for o in data["options"] if o["feasible"]]
    assert gpus and gpus == sorted(gpus) and "calibrated" in data["options"][0]
    assert data["options"][0]["calibrated"]["decode_bandwidth_efficiency"] < 1
    assert data["options"][0]["decode_bandwidth_efficiency"] == 1  # the source text's: full bandwidth


def _json(capsys, *args):
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
            *args,
            "--json",
        ]
    )
    assert code == 0
    return json.loads(capsys.readouterr().out)


def test_the_json_has_exactly_the_promised_shape(capsys):
    data = _json(capsys, "--gpu", "H100=2.5", "--tokens-per-s", "20", "--ttft-s", "2", "--prompt-p95", "6000")
    assert list(data) == ["inputs", "options", "finance"]
    keys = [
        "gpu",
        "gpus_per_replica",
        "layout",
        "weights",
        "kv",
        "serving",
        "batch",
        "binding",
        "tokens_per_s_per_user",
        "ttft_s",
        "replicas",
        "gpus",
        "usd_per_month",
        "usd_per_m_input",
        "usd_per_m_output",
        "feasible",
        "reason",
        "decode_bandwidth_efficiency",
        "prefill_efficiency",
        "frontier",
        "assumed",
    ]
    # a feasible option's calibrated figures carry their P10-P90 range after the efficiencies, then the step by part;
    # a feasible disaggregated one its prefill and decode pools first
    ranged = keys[:-2] + ["range", "step_s", "comm_s", "step_parts_s"] + keys[-2:]
    split = keys[:-2] + ["prefill_replicas", "decode_replicas"] + ranged[-6:]
    for o in data["options"]:
        promised = keys if not o["feasible"] else split if o["serving"] == "disaggregated" else ranged
        assert list(o) == promised, (o["serving"], o["feasible"])
    assert {o["weights"] for o in data["options"]} == {"bf16", "fp8"} == {o["kv"] for o in data["options"]}
    assert {o["serving"] for o in data["options"]} == {"aggregated", "disaggregated"}
    first = data["options"][0]
    assert first["feasible"] and first["reason"] is None and first["frontier"]
    assert data["inputs"]["ranked_by"] == "calibrated"
    assert set(first["assumed"]) >= {
        "batch",
        "gpus",
        "usd_per_month",
        "feasible",
        "reason",
        "decode_bandwidth_efficiency",
        "prefill_efficiency",
    }
    inputs = data["inputs"]
    assert inputs["model"] == "Qwen2.5-72B" and inputs["tokens_per_s_target"] == 20 and inputs["ttft_target_s"] == 2
    assert inputs["gpus"] == {"H100-SXM": {"usd_per_gpu_hour": 2.5, "source": "given"}}
    assert inputs["peak_requests_per_s"] == pytest.approx(PEAK_RPS)
    assert not any(o["feasible"] for o in data["options"][len([o for o in data["options"] if o["feasible"]]) :])


def test_the_table_prints_the_ranking_the_rejections_and_the_assumptions(capsys):
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
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "targets: none given, so none applies" in out
    lines = out.splitlines()
    first = lines[lines.index(next(x for x in lines if x.startswith("rank"))) + 1].split()
    assert first[:8] == ["1*", "H100-SXM", "2", "fp8", "bf16", "agg", "94", "memory"]
    assert "  H100-SXM bf16 on 1 or 2 GPUs: weights need 145 GB, at most 144 GB usable" in lines
    assert any(x.startswith("  assumed view: decode at 100% of the peak memory bandwidth") for x in lines)
    assert any(x.startswith("  fleet: 1 spare replica") for x in lines)


@pytest.mark.parametrize(
    "args, says",
    [
        (["--requests-per-day", "many"], "--requests-per-day must be a number, got 'many'"),
        (
            ["--requests-per-day", "1,000,000"],
            "--requests-per-day must be a number, got '1,000,000': type it without thousands separators",
        ),
        (["--model", "Qwen2.5-72X"], "model 'Qwen2.5-72X' is not in the catalog; did you mean Qwen2.5-72B"),
        (["--gpu", "H1000=2"], "--gpu: 'H1000' is not in the catalog; did you mean H100"),
        (["--gpu", "H100=cheap"], "--gpu 'H100=cheap': the price after '=' must be a number of USD per GPU-hour"),
        (["--gpu", "H100=-1"], "--gpu 'H100=-1': the price must be a positive number"),
        (["--gpu", "A40"], "A40 has no rental price in the catalog: give one as A40=USD_PER_HOUR"),
        (["--prompt-p95", "1000"], "--prompt-p95 must be at least the mean prompt (2,000), got 1,000"),
        (["--spare", "1.5"], "--spare must be a whole number, got '1.5'"),
        (["--peak-factor", "0.5"], "--peak-factor must be a number from 1"),
        (["--top", "some"], "--top must be a number, got 'some'"),
        (["--top", "-1"], "--top must be 0 or more (0 or none: every option), got -1"),
        (["--tokens-per-s", "0"], "--tokens-per-s target must be a positive number, or none, got 0\n"),
        (["--rank", "best"], "argument --rank: invalid choice: 'best' (choose from 'assumed', 'calibrated')"),
        (["--weights", "fp9"], "--weights 'fp9' is not a known format"),
        (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
    ],
)
def test_bad_input_is_one_line_and_a_non_zero_exit(capsys, args, says):
    base = {
        "--model": "Qwen2.5-72B",
        "--requests-per-day": "200000",
        "--prompt-tokens": "2000",
        "--output-tokens": "300",
    }
    argv = ["plan"]
    for flag, value in base.items():
        if flag not in args:
            argv += [flag, value]
    try:
        code = main(argv + args)
    except SystemExit as stop:  # argparse's own refusals end the process; the message is still one line
        code = stop.code
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and says in err, err


def test_no_feasible_option_exits_1_and_says_why(capsys):
    argv = [
        "plan",
        "--model",
        "DeepSeek-V3",
        "--requests-per-day",
        "200000",
        "--prompt-tokens",
        "2000",
        "--output-tokens",
        "300",
        "--gpu",
        "RTX-4090=0.5",
    ]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "no option is feasible" in out and "RTX-4090 bf16 on 1, 2, 4 or 8 GPUs: weights need 1,342 GB" in out


def test_a_missing_required_flag_is_named(capsys):
    assert main(["plan", "--model", "Qwen2.5-72B", "--prompt-tokens", "2000", "--output-tokens", "300"]) == 2
    assert capsys.readouterr().err == "xlsxplan plan: error: --requests-per-day is required\n"


def test_bad_python_input_raises_one_clean_error():
    for bad in (
        Traffic(-1, 2_000, 300),
        Traffic(1, 2_000, 300, prompt_p95=1_000),
        Traffic(1, 2_000, 300, max_prompt_tokens=1_500),
    ):
        with pytest.raises(XlsxplanError) as err:
            plan("Qwen2.5-72B", bad)
        assert "\n" not in err.value.message
    with pytest.raises(XlsxplanError, match="rank_by"):
        plan("Qwen2.5-72B", ASSISTANT, rank_by="cheapest")


def test_a_request_longer_than_the_models_context_window_is_refused_with_the_reason():
    # Llama 2's context window is 4,096 tokens (max_position_embeddings, the catalog's context): the red team's
    # 300,000-token prompts got 28 feasible options; now every option says why it cannot serve them
    assert load_catalog().models.get("Llama-2-7B").figure("context") == 4096
    long = plan("Llama-2-7B", Traffic(100_000, 300_000, 200, 3), gpus={"H100": 3.2})
    assert not long.feasible
    assert {o.assumed.reason for o in long.options} == {
        "Llama-2-7B reads at most 4,096 tokens (its context window); the longest request is 300,200 (prompt, "
        "reasoning and answer)"
    }
    # the bound is prompt + reasoning + answer, at the longest prompt accepted where one is given
    assert plan("Llama-2-7B", Traffic(100_000, 3_000, 1_096, 3), gpus={"H100": 3.2}).feasible
    assert not plan("Llama-2-7B", Traffic(100_000, 3_000, 1_097, 3), gpus={"H100": 3.2}).feasible
    capped = plan("Llama-2-7B", Traffic(100_000, 2_000, 200, 3, max_prompt_tokens=8_000), gpus={"H100": 3.2})
    assert not capped.feasible and "longest request is 8,200" in capped.options[0].assumed.reason


def test_an_option_that_never_answers_is_rejected_target_or_no_target():
    # Llama-3.1-8B at 1,000,000 requests a day with no target: memory alone would set batches so large that decoding
    # them takes more than the whole compute the view allows, so a prompt is never read. Such an option was ranked
    # feasible with an infinite first token; it is rejected, and every feasible option answers in finite time.
    result = plan("Llama-3.1-8B", Traffic(1_000_000, 2_000, 300, 3), rank_by="assumed")
    for view in ("assumed", "calibrated"):
        feasible = [o.view(view) for o in result.options if o.view(view).feasible]
        assert feasible and all(f.ttft_s is not None and math.isfinite(f.ttft_s) for f in feasible)
    starved = [o.assumed for o in result.options if o.assumed.extra.get("rejected_by") == "first token"]
    assert starved and all("takes all the compute" in f.reason for f in starved)
    for f in starved:  # at that batch the decode's 2 N flops a token reach the view's compute: none left for prompts
        decode_flops = 2 * 8.03e9 * f.extra["tokens_per_s_total"]
        o = next(o for o in result.options if o.assumed is f)
        assert decode_flops >= f.extra["prefill_peak_tflops"] * 1e12 * o.gpus_per_replica * f.prefill_efficiency


def test_a_mixture_of_experts_is_planned_as_shipped_with_its_experts_stored_apart():
    # gpt-oss-120b ships its routed experts in MXFP4 (4-bit elements in blocks of 32 sharing an 8-bit scale: 4.25 bits,
    # OCP MX v1.0 section 5) and every other layer in BF16 (openai/gpt-oss-120b's model card). bf16+mxfp4 plans it so.
    result = plan(
        "gpt-oss-120b",
        Traffic(100_000, 2_000, 300, 3),
        gpus={"H100": 2.5},
        assumptions=Assumptions(weight_precisions=("bf16+mxfp4", "bf16"), gpus_per_replica=(2,)),
        rank_by="assumed",
    )
    mixed = _option(result, "H100-SXM", "bf16+mxfp4").assumed
    params, experts = 116.8, registry.get("MODEL_EXPERT_PARAMS_B").func("gpt-oss-120b")
    mxfp4 = 4.25 / 8
    shipped = registry.get("MODEL_WEIGHTS_GB").func("gpt-oss-120b", 2, 0, "mxfp4")
    assert mixed.extra["weights_gb"] == pytest.approx(shipped) and 60 < shipped < 70  # 65.1 GB, not 234 in BF16
    # a step reads every non-expert weight at 2 bytes and the experts its batch touches at 4.25 bits, and each
    # sequence's KV cache at its full 2,300 tokens, over two H100s' 3.35 TB/s each (the source text's full bandwidth)
    batch, read = mixed.batch, mixed.extra["params_read_b"]
    assert read == pytest.approx(registry.get("MOE_PARAMS_READ_B").func(params, 5.1, 128, 4, batch))
    dense_gb = shipped - experts * mxfp4
    step = (dense_gb + (read - (params - experts)) * mxfp4) * 1e9 + batch * mixed.extra["kv_bytes_per_token"] * 2_300
    assert mixed.tokens_per_s_per_user == pytest.approx(2 * 3.35e12 / step, rel=1e-9)
    # it computes at the BF16 peak (4-bit experts widened to 16 bits), so it needs no FP4 tensor cores on an H100
    assert mixed.feasible and mixed.extra["prefill_peak"] == "bf16_tflops"
    assert _option(result, "H100-SXM", "bf16").assumed.reason.startswith("weights need")  # 234 GB in BF16: no fit
    with pytest.raises(XlsxplanError, match="has no experts"):
        plan("Llama-3.1-8B", ASSISTANT, gpus={"H100": 2.5}, assumptions=Assumptions(weight_precisions=("bf16+fp8",)))


def test_gpt_oss_as_shipped_is_planned_between_published_throughput_and_aiconfigurator():
    # docs/planning.md's case. Floor: TensorRT-LLM's performance overview (NVIDIA/TensorRT-LLM@585c756,
    # docs/source/developer-guide/perf-overview.md, "GPT-OSS 120B", H100 DEP4) measures about 4,700 output tokens/s a
    # GPU offline at 1,000/1,000 tokens with no per-user cap: the peak's 43.4 x 1,800 tokens/s need at least 17 GPUs.
    # Ceiling: AIConfigurator 0.12.0 (trtllm, h100_sxm, MoE w4a16_mxfp4) answers 21 replicas of TP2/EP2, 42 GPUs.
    traffic = Traffic(1_500_000, 6_000, 600, 2.5, prompt_p95=20_000, max_prompt_tokens=64_000, reasoning_tokens=1_200)
    result = plan(
        "gpt-oss-120b",
        traffic,
        Targets(40, 3, 0.99),
        {"H100": 2.5},
        Assumptions(weight_precisions=("bf16+mxfp4",)),
    )
    first = result.feasible[0].calibrated
    floor = math.ceil(traffic.peak_requests_per_s * 1_800 / 4_700)
    assert floor == 17
    assert floor <= first.gpus <= 42 + 2  # AIConfigurator's 42 with this plan's spare replica
    low, high = first.extra["range"]["gpus"]
    assert floor <= low <= first.gpus < 42 <= high  # the range's fast end above the floor, its slow end past 42


def test_the_table_names_the_published_rows_rank_one_rests_on(capsys):
    code = main(
        ["plan", "--model", "Qwen2.5-72B", "--requests-per-day", "200000", "--prompt-tokens", "2000"]
        + ["--output-tokens", "300", "--gpu", "H100=2.5", "--top", "1"]
    )
    out = capsys.readouterr().out
    assert code == 0
    first = plan("Qwen2.5-72B", ASSISTANT, gpus={"H100": 2.5}).feasible[0]
    (line,) = [x for x in out.splitlines() if x.startswith("  rank 1 rests on: ")]
    for kind in ("decode_bandwidth", "prefill"):  # the rows behind each efficiency, as EFFICIENCY's basis states them
        assert calibration.efficiency_basis(kind, first.gpu, first.weights).split(": ", 1)[1] in line
    rows, sources = calibration.active().band_rows["throughput"]
    assert f"{rows:,} held-out serving residuals of {sources} publications, each weighted alike" in line


def test_without_a_speed_target_the_summary_says_the_speed_each_user_gets(capsys):
    # no --tokens-per-s: the batch memory holds decodes slowly for each user; the summary says so beside the bill
    argv = ["plan", "--model", "Qwen2.5-7B", "--requests-per-day", "100000", "--prompt-tokens", "1000"]
    argv += ["--output-tokens", "200", "--gpu", "H100"]
    assert main([*argv, "--json"]) == 0
    first = json.loads(capsys.readouterr().out)["options"][0]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-3] == (
        f"  speed: {first['tokens_per_s_per_user']:,.1f} tokens/s a user at batch {first['batch']:,}, set by "
        f"{first['binding']} (no --tokens-per-s target: give one for a floor on each user's speed)"
    )
    assert main([*argv, "--tokens-per-s", "20"]) == 0
    assert not any(x.startswith("  speed: ") for x in capsys.readouterr().out.splitlines())


def test_the_plan_ends_with_the_bill_in_short(capsys):
    argv = ["plan", "--model", "Qwen2.5-72B", "--requests-per-day", "200000", "--prompt-tokens", "2000"]
    argv += ["--prompt-p95", "6000", "--output-tokens", "300", "--tokens-per-s", "20", "--ttft-s", "2", "--gpu", "H100"]
    assert main([*argv, "--gpu", "H200=3.5", "--top", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    traffic = Traffic(200_000, 2_000, 300, 3, prompt_p95=6_000)
    first = plan("Qwen2.5-72B", traffic, Targets(20, 2), {"H100": None, "H200": 3.5}).feasible[0]
    c, ideal = first.calibrated, first.assumed
    low, high = c.extra["range"]["usd_per_month"]
    assert lines[-3] == (
        f"In short: {first.gpus_per_replica} x {first.gpu} a replica, {first.weights} weights, {first.serving}: "
        f"{c.gpus} GPUs, ${c.usd_per_month:,.0f} a month at the efficiencies published runs reach, likely "
        f"${low:,.0f} to ${high:,.0f} (P10 to P90 of published runs); ${c.usd_per_m_input:,.2f} per million input "
        f"and ${c.usd_per_m_output:,.2f} per million output tokens"
    )
    price = "$3.5 per GPU-hour (given)" if first.gpu == "H200" else "$3.2 per GPU-hour (the catalog's, on demand"
    assert lines[-2].startswith(f"  price: {price}")
    assert lines[-2].endswith(f"the same option needs {ideal.gpus} GPUs, ${ideal.usd_per_month:,.0f}")
    assert lines[-1].startswith("Next: ")
    # the ideal view, as the table names it, ranks the plan under that name too; the sentence ends as it begins
    assert main([*argv, "--gpu", "H200=3.5", "--top", "1", "--rank", "ideal"]) == 0
    lines = capsys.readouterr().out.splitlines()
    ranked = plan("Qwen2.5-72B", traffic, Targets(20, 2), {"H100": None, "H200": 3.5}, rank_by="assumed").feasible[0]
    assert f"${ranked.assumed.usd_per_month:,.0f} a month at the source text's ideal efficiencies; " in lines[-3]
