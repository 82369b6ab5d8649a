"""The templates compute what the Python core computes, for the seeds' inputs and for inputs changed through the
headless engine (model, accelerator, GPUs, precision, traffic, budget), line by line.

Each test changes inputs on a recalculated template (issue 4's Workbook API, loaded once per module), reads every
line item of Calculations, Scenarios, Measured rates and Outputs, and compares it with a reference computed here
from :mod:`xlsxplan.serving`, :mod:`xlsxplan.training` and the catalog.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any

import pytest

from xlsxplan import catalog, serving, traffic, training
from xlsxplan.cells import CellError
from xlsxplan.precision import bytes_per_param
from xlsxplan.workbooks import serving as serving_book
from xlsxplan.workbooks import training as training_book
from xlsxplan.workbooks.build import Built, build_all
from xlsxplan.workbooks.layout import SIDE_COLUMNS


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Built]:
    with pytest.MonkeyPatch.context() as mp:  # the shipped catalog only, whatever the user has saved
        mp.setenv("XLSXPLAN_CATALOG_DIR", str(tmp_path_factory.mktemp("no-user-presets")))
        return build_all(tmp_path_factory.mktemp("workbooks"))


@pytest.fixture(scope="module")
def plan(built) -> Built:
    return built[serving_book.FILENAME]


@pytest.fixture(scope="module")
def train(built) -> Built:
    return built[training_book.FILENAME]


@contextlib.contextmanager
def changed(b: Built, values: dict[str, Any]) -> Iterator[Built]:
    """Set inputs (cells or names), recalculate, and put the old values back afterwards."""
    wb = b.workbook
    old = {ref: wb.get(ref) for ref in values}
    try:
        for ref, value in values.items():
            wb.set(ref, value)
        wb.calculate()
        yield b
    finally:
        for ref, value in old.items():
            wb.set(ref, value)
        wb.calculate()


def case_cell(b: Built, key: str, case: int) -> str:
    """The Inputs cell of a scenario-block row for case 1..4."""
    ref = b.book.ref(f"{key}@{case - 1}")
    return f"Inputs!{ref.col}{ref.row}"


def same(actual: Any, expected: Any, where: str) -> None:
    if isinstance(expected, str) or isinstance(actual, (str, CellError)) or actual is None:
        assert actual == expected, f"{where}: workbook {actual!r}, Python {expected!r}"
    else:
        assert actual == pytest.approx(expected, rel=1e-9, abs=1e-12), f"{where}: workbook {actual}, Python {expected}"


# -- the serving plan ------------------------------------------------------------------------------------------------
def _figure(override: Any, spec: Any, name: str, field: str) -> float:
    return override if isinstance(override, (int, float)) and override > 0 else spec(name, field)


def serving_reference(case: dict[str, Any], g: dict[str, Any]) -> dict[str, Any]:
    """Every line item of one serving case, from the Python core. ``case``: the scenario-block values;
    ``g``: the global inputs, by defined name."""
    params = _figure(case["params_override"], catalog.model_spec, case["model"], "params_b")
    layers = _figure(case["layers_override"], catalog.model_spec, case["model"], "layers")
    kv_heads = _figure(case["kv_heads_override"], catalog.model_spec, case["model"], "kv_heads")
    head_dim = _figure(case["head_dim_override"], catalog.model_spec, case["model"], "head_dim")
    memory = _figure(case["memory_override"], catalog.gpu_spec, case["gpu"], "memory_gb")
    bandwidth = _figure(case["bandwidth_override"], catalog.gpu_spec, case["gpu"], "bandwidth_tb_s")
    tflops = _figure(case["tflops_override"], catalog.gpu_spec, case["gpu"], "bf16_tflops")
    n = case["n_gpus"]
    bw, bkv = bytes_per_param(case["weight_precision"]), bytes_per_param(case["kv_precision"])
    frac, eff = g["Usable_Memory_Fraction"], g["Decode_Bandwidth_Efficiency"]
    prompt, output = g["Prompt_Tokens_Per_Request"], g["Output_Tokens_Per_Request"]
    ctx = prompt + output
    r = dict(params=params, layers=layers, kv_heads=kv_heads, head_dim=head_dim, memory=memory, bandwidth=bandwidth,
             tflops=tflops, bytes_weight=bw, bytes_kv=bkv)  # fmt: skip
    r["weights"] = serving.weights_gb(params, bw)
    r["usable"] = serving.usable_gb(n, memory, frac)
    r["free"] = serving.free_gb(params, bw, n, memory, frac)
    kv = r["kv_bytes"] = serving.kv_bytes_per_token(layers, kv_heads, head_dim, bkv)
    r["kv_kib"] = kv / 1024
    r["kv_seq"] = serving.kv_gb(kv, ctx)
    fit = r["batch_fit"] = serving.max_batch(params, bw, kv, ctx, n, memory, frac)
    r["fits"] = "fits" if fit >= 1 else "does not fit"
    lat = r["batch_latency"] = traffic.batch_for_latency(params, bw, n, bandwidth, g["Latency_Target"], kv, ctx, eff)
    batch = r["batch"] = max(1, lat) if lat < fit else fit
    r["latency_caps"] = "yes" if lat < fit else "no"
    peak_output = serving.peak_tokens_per_s(g["Requests_Per_Day"], output, g["Peak_Hour_Factor"])
    price, spare = g["Price_Per_GPU_Hour"], g["Spare_Replicas"]
    if batch < 1:
        for key in ("tps_user", "tps_alone", "tps_total", "prefill", "replica_rps", "cost_full", "cost_avg",
                    "replicas_decode", "replicas_peak", "gpus_peak", "replicas_decode_growth",
                    "replicas_growth", "gpus_growth", "monthly"):  # fmt: skip
            r[key] = "does not fit"
        return r
    r["tps_user"] = serving.decode_tokens_per_s(params, bw, n, bandwidth, batch, kv, ctx, eff)
    r["tps_alone"] = serving.decode_tokens_per_s(params, bw, n, bandwidth, 1, 0, 0, eff)
    total = r["tps_total"] = serving.decode_tokens_per_s_total(params, bw, n, bandwidth, batch, kv, ctx, eff)
    r["prefill"] = serving.prefill_seconds(params, prompt, n, tflops, g["Prefill_Compute_Utilisation"])
    r["cost_full"] = serving.cost_per_m_tokens(n, price, total)
    r["cost_avg"] = serving.cost_per_m_tokens(n, price, total, g["Average_Utilisation"])
    r["replicas_decode"] = serving.replicas(peak_output, total, spare)
    rps = r["replica_rps"] = traffic.replica_rps(r["prefill"], output, total)
    peak_rps = serving.peak_requests_per_s(g["Requests_Per_Day"], g["Peak_Hour_Factor"])
    r["replicas_peak"] = math.ceil(peak_rps / rps) + spare
    r["gpus_peak"] = r["replicas_peak"] * n
    r["replicas_decode_growth"] = serving.replicas(peak_output * g["Traffic_Growth_Multiple"], total, spare)
    r["replicas_growth"] = math.ceil(peak_rps * g["Traffic_Growth_Multiple"] / rps) + spare
    r["gpus_growth"] = r["replicas_growth"] * n
    r["monthly"] = r["gpus_peak"] * price * g["Hours_Per_Month"]
    return r


SERVING_GLOBALS = ("Requests_Per_Day", "Prompt_Tokens_Per_Request", "Output_Tokens_Per_Request", "Peak_Hour_Factor",
                   "Usable_Memory_Fraction", "Decode_Bandwidth_Efficiency", "Prefill_Compute_Utilisation",
                   "Latency_Target", "Spare_Replicas", "Traffic_Growth_Multiple", "Price_Per_GPU_Hour",
                   "Average_Utilisation", "Hours_Per_Month")  # fmt: skip


def serving_inputs(b: Built) -> tuple[list[dict[str, Any]], dict[str, Any], int]:
    """The four cases, the global inputs and the active case (1-based), as the workbook holds them now."""
    cases = [{spec.key: b.get(case_cell(b, spec.key, i)) for spec in serving_book.CASE_INPUTS} for i in range(1, 5)]
    return cases, {name: b.get(name) for name in SERVING_GLOBALS}, b.get("Scenario_Number")


def check_serving(b: Built) -> dict[str, Any]:
    """Compare every line of Calculations, Scenarios and Outputs with the reference; returns the active case's."""
    cases, g, active = serving_inputs(b)
    assert b.workbook.errors() == {}
    for i, case in enumerate(cases):
        expected = serving_reference(case, g)
        for line in serving_book.CASE_LINES:
            if line.compare:
                ref = b.book.ref(f"Scenarios:{line.key}")
                same(
                    b.get(f"Scenarios!{SIDE_COLUMNS[i]}{ref.row}"),
                    expected[line.key],
                    f"Scenarios {line.key} case {i + 1}",
                )
    live = serving_reference(cases[active - 1], g)
    for line in serving_book.CASE_LINES:
        same(b.get(b.book.address(line.key)), live[line.key], f"Calculations {line.key}")
        if b.book.refs.get(f"Outputs:{line.key}"):
            same(b.get(b.book.address(f"Outputs:{line.key}")), live[line.key], f"Outputs {line.key}")
    prompt_peak = serving.peak_tokens_per_s(
        g["Requests_Per_Day"], g["Prompt_Tokens_Per_Request"], g["Peak_Hour_Factor"]
    )
    out_peak = serving.peak_tokens_per_s(g["Requests_Per_Day"], g["Output_Tokens_Per_Request"], g["Peak_Hour_Factor"])
    for key, value in {
        "peak_rps": serving.peak_requests_per_s(g["Requests_Per_Day"], g["Peak_Hour_Factor"]),
        "peak_prompt": prompt_peak,
        "peak_output": out_peak,
        "growth_output": out_peak * g["Traffic_Growth_Multiple"],
        "context": g["Prompt_Tokens_Per_Request"] + g["Output_Tokens_Per_Request"],
    }.items():
        same(b.get(b.book.address(key)), value, f"Calculations {key}")
    return live


def test_seed_000_four_cases_come_out_exactly(plan):
    # Seed 000 §6, the printed table: H100 at 80 GB, 3.35 TB/s, 989 TFLOP/s; Qwen2.5-72B 72.7B, Qwen2.5-7B 7.6B.
    rows = {}
    for i in range(4):

        def cell(key: str, col: str = SIDE_COLUMNS[i]) -> Any:
            return plan.get(f"Scenarios!{col}{plan.book.ref(f'Scenarios:{key}').row}")

        rows[cell("scenario_name")] = cell
    c1 = rows["72B BF16, 2 GPUs"]
    assert (round(c1("weights")), round(c1("usable")), c1("fits")) == (145, 144, "does not fit")
    assert c1("tps_user") == "does not fit" and c1("cost_full") == "does not fit"
    expected = {  # batch, tok/s per user, alone, total, prefill s, $ per M output tokens at full load
        "72B FP8, 2 GPUs": (94, 47, 92, 4387, 0.29, 0.32),
        "72B BF16, 4 GPUs": (189, 47, 92, 8799, 0.15, 0.32),
        "7B BF16, 1 GPU": (430, 47, 220, 20031, 0.06, 0.03),
    }
    for name, (batch, user, alone, total, prefill, cost) in expected.items():
        c = rows[name]
        got = (c("batch"), round(c("tps_user")), round(c("tps_alone")), round(c("tps_total")),
               round(c("prefill"), 2), round(c("cost_full"), 2))  # fmt: skip
        assert got == (batch, user, alone, total, prefill, cost), name
    kib = {plan.get(case_cell(plan, "model", i)): rows[n]("kv_kib") for i, n in enumerate(rows, start=1)}
    assert kib == {"Qwen2.5-72B": 320, "Qwen2.5-7B": 56}  # seed 000 §3
    assert round(plan.get(plan.book.address("peak_rps")), 1) == 6.9  # seed 000 §1
    assert round(plan.get(plan.book.address("peak_output"))) == 2083


def test_seed_000_reading_the_result(plan):
    # Seed 000 §6, "Reading the result": ten times the traffic needs 5 replicas, 10 GPUs (decode only), and the
    # 72B FP8 setup costs about $1.05 per M output tokens at 30% utilisation ($0.3166 / 0.3 = $1.0552).
    assert plan.get("Scenario_Name") == "72B FP8, 2 GPUs"
    assert plan.get(plan.book.address("replicas_decode_growth")) == 5
    assert plan.get(plan.book.address("replicas_decode")) == 1
    assert plan.get(plan.book.address("cost_avg")) == pytest.approx(1.0552, abs=1e-4)
    # with prefill counted (13,889 prompt tokens/s at 6,802 per replica) the peak needs 3 replicas, not 1
    assert plan.get(plan.book.address("replicas_peak")) == 3
    assert plan.get(plan.book.address("gpus_peak")) == 6


def test_every_line_matches_the_python_core_as_shipped(plan):
    live = check_serving(plan)
    assert live["batch"] == 94


@pytest.mark.parametrize(
    "name, values",
    [
        ("active case: 72B BF16 on 4 GPUs", {"Active_Scenario": "72B BF16, 4 GPUs"}),
        ("active case: does not fit", {"Active_Scenario": "72B BF16, 2 GPUs"}),
        ("model Llama-3.1-70B on 4 GPUs, int4 weights", {"model@2": "Llama-3.1-70B", "n_gpus@2": 4,
                                                         "weight_precision@2": "int4"}),
        ("accelerator H200, FP8 KV cache", {"gpu@2": "H200", "tflops_override@2": None, "kv_precision@2": "fp8"}),
        ("Mistral-7B on an A100 80GB, 8 GPUs", {"model@2": "Mistral-7B", "gpu@2": "A100-80GB",
                                                "tflops_override@2": None, "n_gpus@2": 8}),
        ("traffic: 1M requests of 8,000 + 1,000 tokens, peak x2",
         {"Requests_Per_Day": 1_000_000, "Prompt_Tokens_Per_Request": 8000, "Output_Tokens_Per_Request": 1000,
          "Peak_Hour_Factor": 2}),
        ("latency target 80 tokens/s caps the batch", {"Latency_Target": 80}),
        ("efficiencies, spares and price", {"Decode_Bandwidth_Efficiency": 0.7, "Prefill_Compute_Utilisation": 0.4,
                                            "Spare_Replicas": 1, "Price_Per_GPU_Hour": 4.1, "Average_Utilisation": 0.5,
                                            "Usable_Memory_Fraction": 0.85, "Traffic_Growth_Multiple": 3}),
        ("a model not in the catalog, every override filled",
         {"model@2": "Our-13B", "params_override@2": 13.2, "layers_override@2": 40, "kv_heads_override@2": 8,
          "head_dim_override@2": 128, "memory_override@2": 96, "bandwidth_override@2": 4}),
    ],
)  # fmt: skip
def test_changed_inputs_match_the_python_core(plan, name, values):
    refs = {}
    for key, value in values.items():
        if "@" in key:
            field, case = key.split("@")
            refs[case_cell(plan, field, int(case))] = value
        else:
            refs[key] = value
    with changed(plan, refs):
        live = check_serving(plan)
        assert plan.get(plan.book.address("master_check")) == (1 if live["fits"] != "fits" else 0), name


def test_latency_target_caps_the_batch(plan):
    # Seed 000 §7: a product needing 80 tokens/s per user cannot fill the GPU to the 47-tokens/s batch.
    with changed(plan, {"Latency_Target": 80}):
        batch = plan.get(plan.book.address("batch"))
        assert plan.get(plan.book.address("latency_caps")) == "yes"
        assert batch == 14 < plan.get(plan.book.address("batch_fit")) == 94
        assert plan.get(plan.book.address("tps_user")) >= 80  # the capped batch meets the target ...
        one_more = serving.decode_tokens_per_s(72.7, 1, 2, 3.35, batch + 1, 327_680, 2_300)
        assert one_more < 80  # ... and is the largest that does


def test_checks_flag_problems(plan):
    master = plan.book.address("master_check")
    checks = {plan.get(f"Checks!A{r}"): f"Checks!B{r}" for r in plan.book.sheets["Checks"].check_rows}
    with changed(plan, {"Active_Scenario": "72B BF16, 2 GPUs"}):
        assert plan.get(checks["Weights do not fit in usable memory"]) == 1
        assert plan.get(checks["No full-length sequence fits beside the weights"]) == 1
        assert plan.get(master) == 1
    with changed(plan, {"Latency_Target": 200}):  # 92 tokens/s alone is the ceiling
        assert plan.get(checks["Latency target unreachable even at batch 1"]) == 1
        assert plan.get(master) == 1
    with changed(plan, {"Average_Utilisation": 1.5}):
        assert plan.get(checks["A share or utilisation outside 0 to 100%"]) == 1
        assert plan.get(checks["Error values on Calculations"]) == 1  # COST_PER_M_TOKENS refuses 1.5
    with changed(plan, {case_cell(plan, "model", 2): "Our-13B"}):  # not in the catalog, no overrides
        assert plan.get(checks["A model or accelerator figure is missing"]) == 1
        error = plan.get(plan.book.address("params"))
        assert isinstance(error, CellError) and error.code == "#N/A"
    assert plan.get(master) == 0


# -- the training plan -----------------------------------------------------------------------------------------------
TRAINING_GLOBALS = ("Model_Parameters", "Training_Tokens", "Accelerator", "Dense_BF16_Compute_Override",
                    "Memory_Per_GPU_Override", "GPUs", "Model_FLOPs_Utilisation", "Time_Budget", "Cached_Tokens",
                    "Chinchilla_Tokens_Per_Parameter", "Training_Bytes_Per_Parameter", "Price_Per_GPU_Hour")  # fmt: skip


def training_reference(g: dict[str, Any]) -> dict[str, Any]:
    n_b, tokens, gpus, mfu = g["Model_Parameters"], g["Training_Tokens"], g["GPUs"], g["Model_FLOPs_Utilisation"]
    budget, tpp = g["Time_Budget"], g["Chinchilla_Tokens_Per_Parameter"]
    tflops = _figure(g["Dense_BF16_Compute_Override"], catalog.gpu_spec, g["Accelerator"], "bf16_tflops")
    memory = _figure(g["Memory_Per_GPU_Override"], catalog.gpu_spec, g["Accelerator"], "memory_gb")
    rate = gpus * tflops * 1e12 * mfu
    r = dict(params_m=n_b * 1000, tflops=tflops, memory=memory, cluster_peak=gpus * tflops / 1000, rate=rate)
    r["flops"] = training.train_flops(n_b, tokens)
    seconds = r["seconds"] = training.train_seconds(n_b, tokens, gpus, tflops, mfu)
    r["hours"], r["days"] = seconds / 3600, seconds / 86400
    r["within"] = "within budget" if seconds <= budget else "over budget"
    r["gpu_hours"] = training.gpu_hours(seconds, gpus)
    r["cost"] = r["gpu_hours"] * g["Price_Per_GPU_Hour"]
    r["tokens_budget"] = training.train_tokens(n_b, rate, budget)
    r["chinchilla"] = training.chinchilla_tokens(n_b, tpp)
    r["ratio"] = training.chinchilla_ratio(n_b, tokens, tpp)
    r["side"] = "data-heavy" if r["ratio"] > 1 else "model-heavy or on it"
    r["optimal"] = training.optimal_params_b(rate, budget, tpp)
    r["optimal_m"] = r["optimal"] * 1000
    r["optimal_tokens"] = training.chinchilla_tokens(r["optimal"], tpp)
    r["train_mem"] = training.train_memory_gb(n_b, g["Training_Bytes_Per_Parameter"])
    r["fits_gpu"] = "yes" if r["train_mem"] <= memory else "no: shard it across the GPUs"
    r["passes"] = training.data_passes(tokens, g["Cached_Tokens"])
    return r


def benchmark_reference(bench: dict[str, Any], g: dict[str, Any]) -> dict[str, Any]:
    tps = bench["bm_tokens"] / bench["bm_seconds"]
    n_b = bench["bm_params_m"] / 1000
    c6n = training.flops_6n(n_b, tps)
    peak = bench["bm_peak"]
    r = dict(bm_tps=tps, bm_params_b=n_b, bm_c6n=c6n, bm_tflops=c6n / 1e12)
    r["bm_peak_total"] = bench["bm_accelerators"] * peak if peak else "not published"
    r["bm_mfu"] = training.mfu(n_b, tps, bench["bm_accelerators"], peak) if peak else "no published peak"
    r["bm_optimal"] = training.optimal_params_b(c6n, g["Time_Budget"], g["Chinchilla_Tokens_Per_Parameter"]) * 1000
    r["bm_tokens_budget"] = training.train_tokens(g["Model_Parameters"], c6n, g["Time_Budget"])
    r["bm_seconds_run"] = training.run_seconds(g["Model_Parameters"], g["Training_Tokens"], c6n)
    r["bm_days"] = r["bm_seconds_run"] / 86400
    return r


BENCH_KEYS = ("bm_name", "bm_params_m", "bm_tokens", "bm_seconds", "bm_accelerators", "bm_peak")


def check_training(b: Built) -> dict[str, Any]:
    assert b.workbook.errors() == {}
    g = {name: b.get(name) for name in TRAINING_GLOBALS}
    live = training_reference(g)
    for _, line in training_book.LINES:
        same(b.get(b.book.address(line.key)), live[line.key], f"Calculations {line.key}")
        same(b.get(b.book.address(f"Outputs:{line.key}")), live[line.key], f"Outputs {line.key}")
    for i in range(4):
        bench = {key: b.get(case_cell(b, key, i + 1)) for key in BENCH_KEYS}
        expected = benchmark_reference(bench, g)
        for line in training_book.MEASURED_LINES:
            row = b.book.ref(f"Measured rates:{line.key}").row
            same(b.get(f"'Measured rates'!{SIDE_COLUMNS[i]}{row}"), expected[line.key], f"{line.key} benchmark {i + 1}")
    return live


def test_seed_003_parameter_golf_figures(train):
    # Seed 003, "Parameter Golf in 10 Minutes" and "Actual Competition Runs": 35.95M parameters, 3.927B tokens,
    # eight H100s; 20N = 719M tokens; the run saw about 5.5 times that; 36M on 8B cached tokens: half a pass.
    live = check_training(train)
    assert train.get("Scenario_Name") == "Param. Golf record"
    assert live["flops"] == pytest.approx(6 * 35.95e6 * 3.927e9)
    assert train.get(train.book.address("chinchilla")) == pytest.approx(719e6)
    assert round(train.get(train.book.address("ratio")), 1) == 5.5
    assert round(train.get(train.book.address("passes")), 2) == 0.49
    assert round(train.get(train.book.address("cluster_peak")), 2) == 7.92  # 8 x 989.5 TFLOP/s dense
    assert train.get(train.book.address("within")) == "within budget"


def test_seed_003_measured_rates(train):
    # Seed 003, "Eight H100s" and "The M2": 6.55M tokens/s -> 1.41 PFLOP/s, 18% of the dense peak, 84M optimal for
    # 600 s; the 41M M2 rates (2,400 and 4,900 tokens/s) -> about 1.7-2.4M optimal and 8-16 days for the 35.95M
    # run; the 0.36M anchor (8,428 steps x 8,192 tokens in 300 s) -> about 20 days.
    def bench(key: str, i: int) -> Any:
        return train.get(f"'Measured rates'!{SIDE_COLUMNS[i]}{train.book.ref(f'Measured rates:{key}').row}")

    assert round(bench("bm_tps", 0) / 1e6, 2) == 6.55
    assert round(bench("bm_c6n", 0) / 1e15, 2) == 1.41
    assert round(bench("bm_mfu", 0), 2) == 0.18
    assert round(bench("bm_optimal", 0)) == 84
    assert [round(bench("bm_optimal", i), 1) for i in (1, 2)] == [1.7, 2.5]  # the seed says "about 1.7-2.4M"
    assert [round(bench("bm_days", i)) for i in (2, 1)] == [8, 17]  # "roughly 8-16 days": 8.1 and 16.5
    assert round(bench("bm_days", 3)) == 20
    assert train.get(case_cell(train, "bm_tokens", 4)) == 8_428 * 8_192  # seed 003 note 10
    assert bench("bm_mfu", 1) == "no published peak"


@pytest.mark.parametrize(
    "name, values",
    [
        ("active case: 7B on 140B tokens", {"Active_Scenario": "7B, 140B tokens"}),
        ("active case: Chinchilla 70B", {"Active_Scenario": "Chinchilla 70B"}),
        ("A100 80GB, 16 GPUs, 35% MFU, an hour", {"gpu@1": "A100-80GB", "tflops_override@1": None, "n_gpus@1": 16,
                                                  "mfu@1": 0.35, "budget@1": 3600}),
        ("bigger model, more tokens, less cached", {"params@1": 0.125, "tokens@1": 2.5e9, "cached@1": 1e9}),
        ("rules of thumb and price", {"Chinchilla_Tokens_Per_Parameter": 25, "Training_Bytes_Per_Parameter": 18,
                                      "Price_Per_GPU_Hour": 3.0}),
        ("a benchmark of my own", {"bm_params_m@4": 12.5, "bm_tokens@4": 1.2e6, "bm_seconds@4": 60,
                                   "bm_accelerators@4": 1, "bm_peak@4": 165.2}),
    ],
)  # fmt: skip
def test_training_changed_inputs_match_the_python_core(train, name, values):
    keys = {"gpu": "gpu", "tflops_override": "tflops_override", "n_gpus": "n_gpus", "mfu": "mfu",
            "budget": "budget", "params": "params", "tokens": "tokens", "cached": "cached"}  # fmt: skip
    refs = {}
    for key, value in values.items():
        if "@" in key:
            field, case = key.split("@")
            refs[case_cell(train, keys.get(field, field), int(case))] = value
        else:
            refs[key] = value
    with changed(train, refs):
        check_training(train)


def test_training_checks_flag_problems(train):
    checks = {train.get(f"Checks!A{r}"): f"Checks!B{r}" for r in train.book.sheets["Checks"].check_rows}
    master = train.book.address("master_check")
    with changed(train, {case_cell(train, "budget", 1): 300}):  # 594.5 s of work in a 300 s budget
        assert train.get(checks["Training time over the time budget"]) == 1
        assert train.get(master) == 1
    with changed(train, {case_cell(train, "n_gpus", 4): 8, "Active_Scenario": "Chinchilla 70B"}):
        assert train.get(checks["Training state too big for all the GPUs together"]) == 1  # 1,120 GB > 640 GB
    with changed(train, {case_cell(train, "bm_tokens", 1): 3.927e11}):  # 100 times the record: above 100% MFU
        assert train.get(checks["Error values on Measured rates"]) == 1
    assert train.get(master) == 0
