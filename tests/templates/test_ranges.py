"""The templates' ranges: every calibrated figure beside its low and high, the same formulas at the efficiencies of
the low and high quantiles of published runs (EFFICIENCY's quantile argument: the fit times that quantile of the
kind's leave-one-source-out residuals, xlsxplan.calibration.bands), and the Cover's calibrated headline as a range.

Decode throughput is proportional to the decode bandwidth share, and a training run's time inversely proportional
to its MFU, so those columns are checked against the calibrated column by hand; the rest must bracket the expected
figure, run the right way (a lower efficiency needs more GPUs and a longer run) and move with the quantiles.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers.books import built_templates, changed
from xlsxplan import calibration
from xlsxplan.templates import serving as serving_book
from xlsxplan.templates import training as training_book
from xlsxplan.templates.build import Built
from xlsxplan.templates.common import RANGE_HIGH, RANGE_LOW

SERVING_FIGURES = ("cal_tps_total", "cal_replicas", "cal_gpus", "cal_monthly", "cal_cost_in", "cal_cost_out")
"""The Calibration sheet's figures of the source text's method, each at the range block's quantiles."""


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Built]:
    # the functions (add-in) edition: these tests check each registry call against the Python core;
    # tests/templates/test_portable.py checks the portable edition against this one
    return built_templates(tmp_path_factory)


@pytest.fixture(scope="module")
def plan(built) -> Built:
    return built[serving_book.FILENAME]


@pytest.fixture(scope="module")
def train(built) -> Built:
    return built[training_book.FILENAME]


def ranged(b: Built, key: str) -> tuple[Any, Any, Any]:
    """The range block's three columns for a line: at the low quantile, calibrated, at the high quantile."""
    row = b.book.ref(f"Range:{key}").row
    return tuple(b.get(f"Calibration!{col}{row}") for col in "CDE")  # type: ignore[return-value]


def calibrated(b: Built, key: str) -> Any:
    row = b.book.ref(f"Calibration:{key}").row
    return b.get(f"Calibration!D{row}")


# -- the serving plan --------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_range_block_is_the_calibrated_column_at_the_quantiles_efficiencies(plan):
    assert (plan.get(RANGE_LOW), plan.get(RANGE_HIGH)) == (0.1, 0.9)  # P10 and P90 as shipped
    gpu, precision = plan.get("Accelerator"), plan.get("Weight_Precision")
    low, mid, high = ranged(plan, "eff_bw")
    assert low == pytest.approx(calibration.efficiency("decode_bandwidth", gpu, precision, 1, 0, 0.1), rel=1e-12)
    assert mid == calibrated(plan, "eff_bw") == calibration.efficiency("decode_bandwidth", gpu, precision)
    assert high == pytest.approx(calibration.efficiency("decode_bandwidth", gpu, precision, 1, 0, 0.9), rel=1e-12)
    assert low < mid < high
    low_pf, _, high_pf = ranged(plan, "eff_pf")
    assert low_pf == pytest.approx(calibration.efficiency("prefill", gpu, precision, 1, 0, 0.1), rel=1e-12)
    assert high_pf == pytest.approx(calibration.efficiency("prefill", gpu, precision, 1, 0, 0.9), rel=1e-12)
    # the middle column is the calibrated column, line by line, by the same formulas
    for line in serving_book.CALIBRATION_LINES:
        assert ranged(plan, line.key)[1] == calibrated(plan, line.key), line.key
    # decode throughput at a batch is proportional to the bandwidth share: by hand from the calibrated figure
    tps = ranged(plan, "cal_tps_total")
    assert tps[0] == pytest.approx(tps[1] * low / mid, rel=1e-9) and tps[2] == pytest.approx(tps[1] * high / mid)


def test_the_calibration_sheet_s_range_runs_the_right_way(plan):
    # a lower efficiency decodes slower and needs more replicas, GPUs and money; a higher one fewer
    slow, _, fast = ranged(plan, "cal_tps_total")
    assert slow < fast
    for key in ("cal_replicas", "cal_gpus", "cal_monthly"):
        slow, expected, fast = ranged(plan, key)
        assert slow >= expected >= fast, key
    slow, _, fast = ranged(plan, "cal_gpus")
    assert slow > fast  # the shipped plan: more GPUs at P10 than at P90


def test_the_range_block_moves_with_the_quantiles(plan):
    before = {key: ranged(plan, key) for key in SERVING_FIGURES}
    with changed(plan, {RANGE_LOW: 0.02, RANGE_HIGH: 0.98}):  # wider quantiles, a wider range
        for key in SERVING_FIGURES:
            slow, expected, fast = ranged(plan, key)
            assert expected == before[key][1], key
        assert ranged(plan, "cal_tps_total")[0] < before["cal_tps_total"][0]
        assert ranged(plan, "cal_tps_total")[2] > before["cal_tps_total"][2]
    with changed(plan, {RANGE_LOW: 0.5, RANGE_HIGH: 0.5}):  # the fit itself at both ends: no range
        for key in SERVING_FIGURES:
            slow, expected, fast = ranged(plan, key)
            assert slow == pytest.approx(expected, rel=1e-12) and fast == pytest.approx(expected, rel=1e-12), key


def test_the_covers_calibrated_headline_reads_as_a_range(plan):
    """The calibrated fleet (the search's figure for the active option, Options sheet) with its P10 to P90 range,
    on Outputs and the Cover."""
    low, gpus, high = (plan.get(plan.book.address(k)) for k in ("step_gpus:low", "step_gpus", "step_gpus:high"))
    assert low <= gpus <= high and low < high
    sentence = f"{gpus:,.0f} GPUs, likely {low:,.0f} to {high:,.0f}"
    assert plan.get(plan.book.address("step_gpus_range")) == sentence
    ws = plan.book.ws("Cover")
    rows = {ws[f"A{r}"].value: r for r in range(1, ws.max_row + 1)}
    label = "GPUs, calibrated (xlsxplan plan's figure), and their range"
    assert plan.get(f"Cover!B{rows[label]}") == sentence
    low, cost, high = (
        plan.get(plan.book.address(k)) for k in ("step_monthly:low", "step_monthly", "step_monthly:high")
    )
    assert low / cost == pytest.approx(plan.get(plan.book.address("step_gpus:low")) / gpus, rel=1e-12)
    assert plan.get(f"Cover!D{rows['List cost per month, calibrated']}").startswith(f"Likely {low:,.0f} to {high:,.0f}")
    with changed(plan, {"Active_Scenario": "72B BF16, 2 GPUs"}):  # nothing fits: the option is rejected, no range
        assert plan.get(plan.book.address("step_reason")).startswith("weights need")
        assert not isinstance(plan.get(plan.book.address("step_gpus")), (int, float))


def test_a_range_on_every_calibrated_figure_follows_another_accelerator(plan):
    # the active case on an H200: its calibrated shares, its range
    ref = plan.book.ref("gpu@1")
    with changed(
        plan, {f"Inputs!{ref.col}{ref.row}": "H200", f"Inputs!{ref.col}{plan.book.ref('tflops_override@1').row}": None}
    ):
        low, _, high = ranged(plan, "eff_bw")
        assert low == pytest.approx(calibration.efficiency("decode_bandwidth", "H200", "fp8", 1, 0, 0.1), rel=1e-12)
        assert high == pytest.approx(calibration.efficiency("decode_bandwidth", "H200", "fp8", 1, 0, 0.9), rel=1e-12)
        for key in SERVING_FIGURES:
            slow, expected, fast = ranged(plan, key)
            assert min(slow, fast) <= expected * (1 + 1e-12) and expected <= max(slow, fast) * (1 + 1e-12), key
        low, gpus, high = (plan.get(plan.book.address(k)) for k in ("step_gpus:low", "step_gpus", "step_gpus:high"))
        assert low <= gpus <= high  # the Outputs range of the calibrated fleet on the H200


# -- the training plan -------------------------------------------------------------------------------------------
def test_the_training_range_is_the_run_at_the_quantiles_mfu(train):
    args = (train.get("Accelerator"), "bf16", train.get(train.book.address("hidden")), train.get("Sequence_Length"))
    low, mid, high = ranged(train, "mfu")
    assert low == pytest.approx(calibration.efficiency("train_mfu", args[0], *args[1:], 0.1), rel=1e-12)
    assert mid == train.get(train.book.address("mfu_cal"))
    assert high == pytest.approx(calibration.efficiency("train_mfu", args[0], *args[1:], 0.9), rel=1e-12)
    # time is 6ND over the rate: inversely proportional to the MFU; cost follows the GPU-hours
    slow, expected, fast = ranged(train, "cal_seconds")
    assert slow == pytest.approx(expected * mid / low, rel=1e-9) and fast == pytest.approx(expected * mid / high)
    for key, figure in (("mfu_cal", "mfu_cal"), ("seconds_cal", "seconds_cal"), ("cal_cost", "cal_cost:calibrated")):
        lo = train.get(train.book.address(f"{key}:low"))
        hi = train.get(train.book.address(f"{key}:high"))
        assert lo < train.get(train.book.address(figure)) < hi, key
    assert train.get(train.book.address("seconds_cal:high")) == pytest.approx(slow)  # the slow end: the low MFU
    sentence = train.get(train.book.address("seconds_cal_range"))
    assert sentence == f"{expected:,.1f} s, likely {fast:,.1f} to {slow:,.1f}"
    with changed(train, {RANGE_LOW: 0.3, RANGE_HIGH: 0.7}):  # narrower quantiles, a narrower range
        s2, _, f2 = ranged(train, "cal_seconds")
        assert fast < f2 < expected < s2 < slow
