"""Leave-one-source-out validation and the serving rows issue 26 adds: instances, latency caps, request rates,
pipelines, per-token latency, and a measurements file that cannot hang ``validate``.

The physics checked here is the serving step of xlsxplan.calibration.measurements; the figures are computed from
it, never copied from its output: each test states a relation a correct model must keep (instances multiply, a cap
bounds the step, Little's law holds) and fails when it does not.
"""

from __future__ import annotations

import dataclasses
import math
import os

import pytest

from tests.helpers.counting import count_calls
from xlsxplan import calibration
from xlsxplan.calibration import measurements
from xlsxplan.calibration.fit import huber_regression
from xlsxplan.errors import CatalogError

COLUMNS = (
    *measurements.COLUMNS,
    "gpus_per_node",
    "batching",
    "tp",
    "pp",
    "ttft_cap_ms",
    "tpot_cap_ms",
    "request_rate",
    "publication",
)


def row(**values: object) -> str:
    return ",".join(str(values.get(c, "")) for c in COLUMNS)


def serve(**over: object) -> str:
    return row(**{**SERVE, **over})


def parse(*lines: str) -> list[measurements.Measurement]:
    return measurements.parse_measurements("\n".join([",".join(COLUMNS), *lines]))


SERVE = dict(
    kind="serve",
    name="r",
    model="Llama-3.1-8B",
    gpu="H100-SXM",
    precision="fp8",
    input_len=1000,
    output_len=1000,
    source="s",
)


@pytest.fixture(scope="module")
def factors() -> calibration.Factors:
    return calibration.active().factors


# --- which rows leave out together ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "publication", "key"),
    [
        ("anything at all (x)", "MLPerf-Inference-v5.1", "mlperf-inference-v5.1"),
        ("Touvron et al. 2023 'LLaMA' arXiv:2302.13971 Table 15 (GPU-hours)", "", "arxiv:2302.13971"),
        ("Touvron et al. 2023 'LLaMA' arXiv:2302.13971 Table 2 (params)", "", "arxiv:2302.13971"),
        (
            "github.com/NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md @00f37686 (offline)",
            "",
            "github.com/nvidia/tensorrt-llm:docs/source/performance/perf-overview.md",
        ),
        (
            "github.com/NVIDIA/TensorRT-LLM@258c754:docs/source/performance/perf-overview.md (a later commit)",
            "",
            "github.com/nvidia/tensorrt-llm:docs/source/performance/perf-overview.md",
        ),
        ("github.com/vllm-project/vllm/issues/21348 (2025-07-22), vLLM log", "", "github.com/vllm-project/vllm#21348"),
        ("Hugging Face blog 'SmolLM3' (2025), section 2", "", "hugging face blog 'smollm3'"),
    ],
)
def test_a_rows_publication_is_its_column_an_arxiv_id_a_github_document_or_its_source(source, publication, key):
    m = parse(serve(metric="decode_tokens_per_sec", value=1, concurrency=1, publication=publication))[0]
    m = dataclasses.replace(m, source=source)
    assert measurements.source_key(m) == key


def test_validate_leaves_out_every_row_of_the_rows_publication():
    # two publications: the prediction of a row of A must not move when the rest of A changes, and must move when B
    # changes (B is what it is predicted from)
    lines = [
        serve(
            metric="decode_tokens_per_sec",
            value=v,
            concurrency=1,
            output_len=128,
            input_len="",
            publication=pub,
            gpu=gpu,
        )
        for pub, gpu, v in (("a", "H100-SXM", 150), ("a", "H200", 190), ("b", "A100-80GB", 90), ("b", "L40S", 60))
    ]
    rows = parse(*lines)
    first = measurements.validate(rows)[0].predicted
    bent_a = [dataclasses.replace(m, value=m.value * 3) if m.line == 3 else m for m in rows]
    assert measurements.validate(bent_a)[0].predicted == pytest.approx(first, rel=1e-12)
    bent_b = [dataclasses.replace(m, value=m.value * 3) if m.line == 4 else m for m in rows]
    assert measurements.validate(bent_b)[0].predicted != pytest.approx(first, rel=1e-3)


def test_many_publications_cost_a_bounded_number_of_fits(monkeypatch):
    # a user's file of 300 one-row sources is validated with MAX_FOLDS fits per kind, not one per row: counted
    fits: list[str] = []
    real = calibration.fit_kind
    monkeypatch.setattr(calibration, "fit_kind", lambda kind, obs: fits.append(kind) or real(kind, obs))
    lines = [
        serve(
            metric="decode_tokens_per_sec",
            value=100 + i % 50,
            concurrency=1,
            output_len=128,
            input_len="",
            publication=f"p{i}",
        )
        for i in range(300)
    ]
    results = measurements.validate(parse(*lines))
    assert all(r.predicted for r in results)
    assert fits.count("decode_bandwidth") <= measurements.MAX_FOLDS + 1
    folds = measurements.fold_map([("source", f"p{i}") for i in range(300)])
    assert len(set(folds.values())) == measurements.MAX_FOLDS


def test_a_validation_asks_for_the_catalog_once_not_once_a_figure(monkeypatch):
    # validate keeps each row's figures (its accelerator, efficiency levels, KV cache per token) for as long as the
    # catalog is the same, and asks whether it is the same once a validation: before, once for each of the 155,000
    # figures the shipped rows read
    one = {"metric": "decode_tokens_per_sec", "concurrency": 1, "output_len": 128, "input_len": ""}
    rows = parse(*(serve(value=100 + i, publication=f"p{i % 3}", **one) for i in range(30)))
    calls = count_calls(monkeypatch, measurements, asked="_sync_memo")
    results = measurements.validate(rows)
    assert all(r.predicted for r in results) and calls["asked"] == 1
    measurements.predict(rows[0], calibration.load_factors())  # a prediction outside a validation asks each time
    assert calls["asked"] > 1


# --- the serving rows' conditions ------------------------------------------------------------------------------


def test_n_gpus_over_tp_instances_multiply_an_instances_throughput(factors):
    one = parse(serve(metric="output_tokens_per_sec_total", value=1, n_gpus=1, concurrency="max"))[0]
    eight = parse(serve(metric="output_tokens_per_sec_total", value=1, n_gpus=8, tp=1, concurrency="max"))[0]
    per_gpu = dataclasses.replace(eight, metric="output_tokens_per_sec_per_gpu")
    single = measurements.predict(one, factors)[0]
    assert measurements.predict(eight, factors)[0] == pytest.approx(8 * single, rel=1e-12)
    assert measurements.predict(per_gpu, factors)[0] == pytest.approx(single, rel=1e-12)
    with pytest.raises(measurements.Unpredictable, match="tp 3 does not divide"):
        measurements.predict(dataclasses.replace(eight, tp=3), factors)


def test_a_per_token_cap_takes_the_largest_batch_whose_step_meets_it(factors):
    free = parse(serve(metric="tpot_ms", value=1, n_gpus=1, concurrency="max"))[0]
    uncapped = measurements.predict(free, factors)[0]
    cap = uncapped / 4
    capped = dataclasses.replace(free, tpot_cap_ms=cap)
    s = measurements.shape_of(capped)
    load = measurements._load(capped, s, factors)
    step = lambda b: measurements._step_at(capped, s, factors, b)[0] / load.scale * 1e3  # noqa: E731
    assert step(load.batch) <= cap < step(load.batch + 1)
    assert measurements.predict(capped, factors)[0] == pytest.approx(step(load.batch), rel=1e-12)
    with pytest.raises(measurements.Unpredictable, match="misses the 0.001 ms cap"):
        measurements.predict(dataclasses.replace(free, tpot_cap_ms=0.001), factors)


def test_a_request_rate_sets_the_batch_by_littles_law(factors):
    rate = 2.0
    m = parse(serve(metric="output_tokens_per_sec_total", value=1, n_gpus=1, request_rate=rate))[0]
    assert measurements.predict(m, factors)[0] == pytest.approx(rate * 1000)  # every request served
    s = measurements.shape_of(m)
    load = measurements._load(m, s, factors)
    first = measurements.predict(dataclasses.replace(m, metric="ttft", request_rate=None, concurrency=1), factors)[0]
    in_flight = lambda b: rate * (first / 1e3 + 1000 * measurements._step_at(m, s, factors, b)[0] / load.scale)  # noqa: E731
    assert in_flight(load.batch) <= load.batch and in_flight(load.batch - 1) > load.batch - 1
    tpot = measurements.predict(dataclasses.replace(m, metric="tpot_ms"), factors)[0]
    assert tpot == pytest.approx(1e3 * load.step / load.scale, rel=1e-12)
    ttft = measurements.predict(dataclasses.replace(m, metric="ttft"), factors)[0]
    assert ttft == pytest.approx(first + tpot, rel=1e-9)  # its prompt, then the running step
    assert measurements.implied  # a first-token time under load implies no prefill efficiency:
    with pytest.raises(measurements.Unpredictable, match="under load"):
        measurements.implied(dataclasses.replace(m, metric="ttft", value=100.0))


def test_a_saturated_engine_runs_the_sequences_its_step_budget_holds(factors):
    # TensorRT-LLM's perf-overview (docs/source/performance/perf-overview.md@258c754), online serving, Llama 3.1 70B
    # BF16 on four H200s, 467 tokens in and 16 out, requests sent without pause: 457 output tokens/s, 546 ms between
    # tokens. Memory would hold thousands of such sequences; the engine's 8,192 tokens a step hold
    # floor(8192 / (1 + 467 / 16)) = 271, and each step decodes 271 tokens and prefills 271 x 467 / 16 = 7,910
    (m,) = [
        r
        for r in measurements.read_measurements(calibration.measurements_path())
        if r.name == "LLaMA 3.1 70B online serving, H200 131GB HBM3 TP4, 467/16, QPS INF" and r.metric == "tpot_ms"
    ]
    assert (m.max_num_tokens, m.max_batch_size, m.value, m.requests) == (8192, 2048, 546, 500)
    m = dataclasses.replace(m, requests=None)  # the steady state an endless run would settle in (the 500 run below)
    s = measurements.shape_of(m)
    load = measurements._load(m, s, factors)
    assert load.batch == 271 and "8,192 tokens a step" in load.said
    unbounded = measurements._load(dataclasses.replace(m, max_num_tokens=None, max_batch_size=None), s, factors)
    assert unbounded.batch > 2_000  # memory's batch, whose step prefills 2,000 x 29 tokens: seconds long
    tpot = measurements.predict(m, factors)[0]
    assert tpot == pytest.approx(1e3 * load.step / load.scale, rel=1e-12)
    assert 0.5 < tpot / m.value < 2  # within 2x of the page's 546 ms with the budget
    assert measurements.predict(dataclasses.replace(m, max_num_tokens=None), factors)[0] / m.value > 10  # not without
    # the throughput of a compute-bound step hardly moves with its batch: the budget changes the latency, not the rate
    rate = dataclasses.replace(m, metric="output_tokens_per_sec_total")
    ratio = (
        measurements.predict(rate, factors)[0]
        / measurements.predict(dataclasses.replace(rate, max_num_tokens=None), factors)[0]
    )
    assert 1 - 1e-9 <= ratio < 1.6
    # below the budget a request rate still sets the batch by Little's law (QPS 2: one or two in flight)
    low = dataclasses.replace(m, concurrency=None, request_rate=2.0)
    assert measurements._load(low, s, factors).batch < 10


def test_a_pipelines_one_request_rows_work_on_one_stage_at_a_time(factors):
    one = parse(serve(metric="decode_tokens_per_sec", value=1, n_gpus=1, concurrency=1, input_len=""))[0]
    piped = dataclasses.replace(one, n_gpus=4, pp=4)
    sharded = dataclasses.replace(one, n_gpus=4)
    assert measurements.predict(piped, factors)[0] == pytest.approx(measurements.predict(one, factors)[0])
    assert measurements.predict(sharded, factors)[0] > 2 * measurements.predict(one, factors)[0]


def test_per_user_speed_is_one_over_the_time_per_token(factors):
    m = parse(serve(metric="tpot_ms", value=1, n_gpus=2, concurrency=64))[0]
    tpot = measurements.predict(m, factors)[0]
    user = measurements.predict(dataclasses.replace(m, metric="output_tokens_per_sec_per_user"), factors)[0]
    total = measurements.predict(dataclasses.replace(m, metric="output_tokens_per_sec_total"), factors)[0]
    assert user == pytest.approx(1e3 / tpot, rel=1e-12)
    assert total == pytest.approx(64 * user, rel=1e-12)  # 64 requests decoding at that speed
    both = measurements.predict(dataclasses.replace(m, metric="total_tokens_per_sec_per_gpu"), factors)[0]
    assert both == pytest.approx(total / 2 * (1000 + 1000) / 1000, rel=1e-12)


def test_the_serving_scale_fit_recovers_a_known_scale_exponent_and_amd_multiplier():
    # synthetic residuals from scale 0.8, exponent -0.1, AMD 0.6, with one wild row: the Huber fit recovers them
    truth = (math.log(0.8), -0.1, math.log(0.6))
    xs = [(math.log(n), a) for n in (1, 2, 4, 8) for a in (0.0, 1.0) for _ in range(30)]
    ys = [truth[0] + truth[1] * x + truth[2] * a for x, a in xs]
    ys[0] += 3.0
    b0, b1, b2 = huber_regression(ys, xs)
    assert (math.exp(b0), b1, math.exp(b2)) == pytest.approx((0.8, -0.1, 0.6), abs=0.02)
    flat = huber_regression([0.1, 0.2, 0.3], [(0.0, 0.0)] * 3)  # nothing varies: the slopes stay at 0
    assert flat[1:] == [0.0, 0.0]


def test_the_summary_reports_dense_and_mixture_of_experts_apart(factors):
    lines = [
        serve(metric="output_tokens_per_sec_total", value=20000, n_gpus=1, concurrency="max", publication="a"),
        row(
            **{**SERVE, "model": "Qwen3-30B-A3B"},
            metric="output_tokens_per_sec_total",
            value=20000,
            n_gpus=1,
            concurrency="max",
            publication="b",
        ),
    ]
    results = measurements.validate(parse(*lines), factors_as_is=factors)
    groups = measurements.summarise(results)["groups"]
    assert groups["serving throughput, dense"]["rows"] == 1
    assert groups["serving throughput, mixture of experts"]["rows"] == 1


# --- a measurements file cannot hang validate -----------------------------------------------------------------


def test_a_fifo_a_device_and_an_oversized_file_are_refused_at_once(tmp_path):
    fifo = tmp_path / "rows.csv"
    os.mkfifo(fifo)
    with pytest.raises(CatalogError, match="FIFO"):
        measurements.read_measurements(fifo)  # no writer: an open that blocked would hang here
    with pytest.raises(CatalogError, match="device"):
        measurements.read_measurements("/dev/zero")
    big = tmp_path / "big.csv"
    with big.open("wb") as fh:
        fh.truncate(measurements.MAX_MEASUREMENTS_BYTES + 1)
    with pytest.raises(CatalogError, match="MiB"):
        measurements.read_measurements(big)


def test_bands_cost_one_quantile_per_kind_and_fold_not_one_per_row(monkeypatch):
    # with_bands computed each row's range from a fresh list of every other row: quadratic in the rows. Counted.
    calls: list[int] = []
    real = measurements.bands.band_multipliers
    monkeypatch.setattr(measurements.bands, "band_multipliers", lambda xs: calls.append(len(xs)) or real(xs))
    lines = [
        serve(
            metric="decode_tokens_per_sec",
            value=100 + i,
            concurrency=1,
            output_len=128,
            input_len="",
            publication=f"p{i % 3}",
        )
        for i in range(120)
    ]
    results = measurements.validate(parse(*lines))
    assert sum(r.p10 is not None for r in results) == 120
    assert len(calls) == 3  # three publications, one kind


ONLINE = "LLaMA 3.1 {size} online serving, H100 80GB HBM3 TP{tp}, {io}, QPS {qps}"


def _online(metric: str, **name: str) -> measurements.Measurement:
    """A row of TensorRT-LLM's perf-overview "Online Serving Measurements" table (docs/source/performance/
    perf-overview.md@258c754: "generated using version 0.14.0, with 500 requests and BF16 precision")."""
    (m,) = [
        r
        for r in measurements.read_measurements(calibration.measurements_path())
        if r.name == ONLINE.format(**name) and r.metric == metric
    ]
    return m


def test_a_run_of_500_requests_sent_at_once_is_run_step_by_step(factors):
    # Llama 3.1 8B on one H100, 467 tokens in and 256 out, the 500 requests sent without pause: the page's mean
    # first token 3,335 ms and 39 ms between tokens. No steady state exists: the engine reads the prompts 17 to a
    # step (8,192 tokens), then decodes the 500 together; the steady state of an endless run (memory's batch, each
    # step prefilling its share of prompts) put the time between tokens at 2.7x the page's
    name = {"size": "8B", "tp": "1", "io": "467/256", "qps": "INF"}
    tpot, ttft = _online("tpot_ms", **name), _online("ttft", **name)
    assert (tpot.value, ttft.value, tpot.requests, tpot.concurrency) == (39, 3335, 500, "max")
    run_tpot, basis = measurements.predict(tpot, factors)
    assert basis.startswith("a run of 500 requests (every one at once) step by step") and "up to 500 sequences" in basis
    endless = measurements.predict(dataclasses.replace(tpot, requests=None), factors)[0]
    assert endless / tpot.value > 2.5 and 1 < run_tpot / tpot.value < 2  # too slow still: the prompts' steps (below)
    # the first token waits for the prompts read before it: about half of the 30 reading steps, not one prompt's time
    run_ttft = measurements.predict(ttft, factors)[0]
    assert 1 < run_ttft / ttft.value < 2
    in_seconds = dataclasses.replace(ttft, unit="s", value=ttft.value / 1e3)  # the same run in the row's own unit
    assert measurements.predict(in_seconds, factors)[0] == pytest.approx(run_ttft / 1e3, rel=1e-12)
    with pytest.raises(measurements.Unpredictable, match="request count"):  # without the count: the queue is unknown
        measurements.predict(dataclasses.replace(ttft, requests=None), factors)


def test_a_rate_the_engine_serves_keeps_the_steady_state_and_one_it_cannot_is_run(factors):
    # at 2 requests a second the engine keeps up: Little's law sets the batch, as without the request count; at 16
    # the steady state's engine is saturated (its prefill the bound) and the run is followed step by step
    low = _online("tpot_ms", size="70B", tp="4", io="467/256", qps="2")
    assert measurements.predict(low, factors) == measurements.predict(dataclasses.replace(low, requests=None), factors)
    high = _online("tpot_ms", size="70B", tp="4", io="467/256", qps="16")
    assert measurements._load(high, measurements.shape_of(high), factors).saturated
    assert measurements.predict(high, factors)[1].startswith("a run of 500 requests (16 a second) step by step")


def test_a_runs_step_is_the_serving_step_at_its_sequences_and_prompt_tokens(factors):
    # a dense model's step on one group is read from three steps and added up by parts: the same step
    m = _online("tpot_ms", size="70B", tp="4", io="467/256", qps="INF")
    s = measurements.shape_of(m)
    scale = factors.serving_scale(measurements.scale_gpus(m), m.gpu)
    step = measurements._run_step(m, s, factors, scale)
    for decoded, read in ((0, 467), (1, 0), (17, 7_939), (500, 0), (271, 7_472), (3, 934)):
        direct = measurements.serve_step_seconds(m, s, factors, decoded, read)[0] / scale
        assert step(decoded, read) == pytest.approx(direct, rel=1e-12), (decoded, read)
