"""Calibrated efficiencies: the fit recovers what it should, resists outliers, and the shipped file is current."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from xlsxplan import calibration
from xlsxplan.calibration import Factors, GroupFit, Observation, TrainFit, measurements
from xlsxplan.calibration.bands import SOURCE_POINTS
from xlsxplan.core import training
from xlsxplan.errors import ArgumentError, NotAvailableError, UnknownPresetError


@pytest.mark.parametrize(
    "precision, bits, group",
    [
        ("", 16, "16-bit"),
        ("bf16", 16, "16-bit"),
        ("FP16", 16, "16-bit"),
        ("fp8", 8, "8-bit"),
        ("int4", 4, "4-bit"),
        # llama.cpp tools/quantize/README.md: Q4_0 4.5 bits/weight, Q8_0 8.5; Q4_K_M 4.84 for Llama 2 7B
        ("q4_0", 4.5, "4-bit"),
        ("Q4_K_M", 4.84, "4-bit"),
        ("q8_0", 8.5, "8-bit"),
        ("nvfp4", 4.5, "4-bit"),
    ],
)
def test_bits_per_weight_include_block_scales(precision, bits, group):
    assert calibration.bits_per_weight(precision) == bits
    assert calibration.format_group(precision) == group


def test_unknown_precision_is_refused():
    with pytest.raises(UnknownPresetError, match=r"precision 'q3_xyz' is not a known format"):
        calibration.bits_per_weight("q3_xyz")


def test_peak_field_by_format():
    assert calibration.peak_field("fp8") == "fp8_tflops"
    assert calibration.peak_field("w8a8") == "fp8_tflops"  # INT8 weights and activations: the 8-bit tensor rate
    assert calibration.peak_field("q4_k_m") == "bf16_tflops"  # widened to 16 bits before the multiply
    assert calibration.peak_field("awq") == "bf16_tflops"
    # weight-only INT8 (neuralmagic's w8a16 checkpoints) stores 8 bits but multiplies in 16
    assert calibration.peak_field("w8a16") == "bf16_tflops"
    assert calibration.peak_field("") == "bf16_tflops"
    # FP4 multiplies (NVFP4, MXFP4) compute on FP4 tensor cores: B200's dense 9,000 TFLOP/s (NVIDIA HGX page: HGX
    # B200 FP4 '144 PFLOPS | 72 PFLOPS' sparse | dense for 8 GPUs)
    assert calibration.peak_field("nvfp4") == calibration.peak_field("mxfp4") == "fp4_tflops"
    # ... and are not the 4-bit rows' llama.cpp blocks, widened to 16 bits before the multiply: a level of their own
    assert calibration.compute_group("nvfp4") == calibration.compute_group("mxfp4") == "4-bit multiply"
    assert calibration.compute_group("q4_k_m") == calibration.compute_group("awq") == "4-bit"


def test_decode_levels_by_storage_prefill_levels_by_the_multiply():
    assert [calibration.format_group(p) for p in ("w8a16", "fp8", "awq", "bf16")] == [
        "8-bit",
        "8-bit",
        "4-bit",
        "16-bit",
    ]
    assert [calibration.compute_group(p) for p in ("w8a16", "fp8", "awq", "bf16", "nvfp4")] == [
        "16-bit",
        "8-bit",
        "4-bit",
        "16-bit",
        "4-bit multiply",
    ]
    f = calibration.load_factors()
    assert calibration.efficiency("prefill", "H100", "w8a16") == pytest.approx(f.prefill.base)  # not the FP8 share


@pytest.mark.parametrize(
    "gpu, cls",
    [
        ("H100", "datacenter"),
        ("A100-80GB", "datacenter"),
        ("L40S", "datacenter"),
        ("RTX-4090", "consumer"),
        ("4090", "consumer"),
        ("M2-Ultra", "apple"),
        ("Apple M3 Max", "apple"),
        ("Consumer", "consumer"),
    ],
)
def test_gpu_class(gpu, cls):
    assert calibration.gpu_class(gpu) == cls


@pytest.mark.parametrize(
    "preset_id, cls",
    [
        ("GeForce-RTX-3090", "consumer"),
        ("rtx-5090-box", "consumer"),
        ("M5-Pro", "apple"),
        ("apple-studio", "apple"),
        ("my-cluster", "datacenter"),
        ("MI300X", "datacenter"),
    ],
)
def test_user_presets_are_classed_by_name(preset_id, cls):
    assert calibration.class_of_id(preset_id) == cls


def test_an_unknown_gpu_is_refused_not_guessed():
    with pytest.raises(UnknownPresetError, match=r"gpu 'H1000' is not in the catalog; did you mean H100-SXM"):
        calibration.gpu_class("H1000")


def _train_obs(ceiling, overhead, rows):
    return [
        Observation("train_mfu", ceiling / (1 + overhead * b / (72 * d)), balance=b, hidden=d, run=(i,))
        for i, (b, d) in enumerate(rows)
    ]


TRAIN_SHAPES = [(153, 4096), (153, 8192), (200, 2048), (295, 512), (590, 4096), (295, 1024), (153, 2048)]


def test_train_fit_recovers_its_parameters():
    f = calibration.fit(_train_obs(0.55, 120, TRAIN_SHAPES))
    assert f.train_mfu.ceiling == pytest.approx(0.55, rel=1e-3)
    assert f.train_mfu.overhead_bytes == 120


def test_group_fit_recovers_class_and_format_multipliers():
    truth = GroupFit(0.5, {"consumer": 1.7, "apple": 1.4}, {"8-bit": 0.8, "4-bit": 0.65})
    obs = [
        Observation("decode_bandwidth", truth.value(c, f), gpu_class=c, fmt=f, run=(c, f))
        for c in calibration.CLASSES
        for f in ("16-bit", "4-bit")
    ] + [Observation("decode_bandwidth", truth.value("datacenter", "8-bit"), fmt="8-bit")]
    g = calibration.fit(obs).decode_bandwidth
    # exact data, so only the small ridge penalty (about 1% per effect) stands between the fit and the truth
    assert g.base == pytest.approx(0.5, rel=0.02)
    assert g.classes == pytest.approx({"consumer": 1.7, "apple": 1.4}, rel=0.02)
    assert g.formats == pytest.approx({"8-bit": 0.8, "4-bit": 0.65}, rel=0.02)


def test_an_fp4_multiply_is_fitted_apart_from_4_bit_weights_widened_before_it():
    # prefill levels: a native FP4 multiply (NVFP4, MXFP4) is not llama.cpp's 4-bit blocks, which pay for widening
    # each weight to 16 bits; rows of one set the other's multiplier not at all
    truth = GroupFit(0.4, {}, {"4-bit": 0.7, "4-bit multiply": 1.3})
    obs = [
        Observation("prefill", truth.value("datacenter", f), fmt=f, run=(f, i))
        for f in ("16-bit", "4-bit", "4-bit multiply")
        for i in range(3)
    ]
    g = calibration.fit(obs).prefill
    assert g.formats["4-bit"] == pytest.approx(0.7, rel=0.02)
    assert g.formats["4-bit multiply"] == pytest.approx(1.3, rel=0.02)
    without = calibration.fit([o for o in obs if o.fmt != "4-bit multiply"]).prefill
    assert without.formats["4-bit multiply"] == 1.0  # no row: the 16-bit share, an assumption...
    assert without.formats["4-bit"] == pytest.approx(0.7, rel=0.02)
    # ... and decode keeps its levels by storage, with no such level to assume
    assert "4-bit multiply" not in calibration.level_counts("decode_bandwidth", obs)["format"]


def test_one_outlier_moves_the_fit_less_than_least_squares_would():
    # the data README warns that Llama 3's GPU-hours imply a far lower MFU than Llama 2's: one row at a third
    rows = [Observation("prefill", v) for v in (0.50, 0.52, 0.48, 0.51, 0.49)]
    clean = calibration.fit(rows).prefill.base
    bent = calibration.fit(rows + [Observation("prefill", 0.17)]).prefill.base
    least_squares = math.exp(np.mean(np.log([0.50, 0.52, 0.48, 0.51, 0.49, 0.17])))
    assert clean == pytest.approx(0.50, abs=0.002)
    assert abs(math.log(bent / clean)) < abs(math.log(least_squares / clean)) / 2


def test_an_unseen_class_takes_no_multiplier():
    g = calibration.fit([Observation("prefill", 0.6), Observation("prefill", 0.4, fmt="8-bit")]).prefill
    assert g.classes == {"consumer": 1.0, "apple": 1.0}
    assert g.value("apple", "16-bit") == pytest.approx(g.value("datacenter", "16-bit"))


def test_kinds_without_measurements_fall_back_to_the_uncalibrated_figures():
    f = calibration.fit([])
    assert f.train_mfu == TrainFit(training.DEFAULT_MFU, 0.0)
    assert f.prefill.base == 0.5  # Back-of-the-Envelope §5
    assert f.decode_bandwidth.base == 0.7  # Back-of-the-Envelope §4: 60 to 80% of peak bandwidth


def test_factors_round_trip_through_their_file_form():
    f = Factors(TrainFit(0.5, 90), GroupFit(0.7, {"consumer": 1.3}, {"8-bit": 0.6}), GroupFit(0.5, {}, {}))
    assert Factors.from_dict(json.loads(json.dumps(f.to_dict()))) == f


# --- the shipped fit --------------------------------------------------------------------------------------------


# That the shipped factors are what a fit of the shipped measurements gives (xlsxplan/calibration/data/calibration.json,
# every key to 6 digits, the data's sha256 among them) is checked by tests/e2e/test_generated.py's "calibration" step,
# which runs `xlsxplan calibrate --fit`; a second fit here cost 5 s of the suite.


def test_shipped_factors_provenance():
    stored = json.loads(calibration.factors_path().read_text(encoding="utf-8"))
    rows = measurements.read_measurements(calibration.measurements_path())
    obs = measurements.observations(rows)
    assert [stored[k]["rows_used"] for k in calibration.KINDS] == [
        sum(o.kind == k for o in obs) for k in calibration.KINDS
    ]
    for kind in calibration.KINDS:
        # in sample and held out (a Huber fit does not minimise the median, so either may be the larger), under 50% (prefill, fitted across llama.cpp's consumer
        # cards and datacenter first-token times, is the widest: docs/calibration.md)
        assert 0 <= stored[kind]["median_abs_error"] < 0.5
        assert 0 <= stored[kind]["leave_one_source_out_median_abs_error"] < 0.5
        assert stored[kind]["degrees_of_freedom"] == stored[kind]["rows_used"] - stored[kind]["free_parameters"]
    # the rows behind every level, and the levels no row supports (multiplier 1, assumed)
    for kind in ("prefill", "decode_bandwidth"):
        levels = stored[kind]["levels"]
        assert levels == calibration.level_counts(kind, obs)
        assert stored[kind]["assumed"] == [
            f"{level} ({axis}): no rows, multiplier 1"
            for axis in ("class", "format")
            for level, n in levels[axis].items()
            if n == 0
        ]
    # far fewer free parameters than rows: three for training (ceiling, dense overhead, MoE routed bytes), one per
    # level with rows for the group kinds
    assert stored["train_mfu"]["free_parameters"] == 3
    total = sum(stored[k]["free_parameters"] for k in calibration.KINDS)
    assert total <= 12 and len(rows) >= 8 * total
    # the ranges: residuals for every band kind, each publication's summarised by the same number of quantiles (every
    # publication weighted alike), with the held-out rows and publications behind them
    bands = stored["bands"]
    assert set(bands) - {"about"} == set(calibration.BAND_KINDS)
    for kind in calibration.BAND_KINDS:
        assert len(bands[kind]["residuals"]) == bands[kind]["sources"] * SOURCE_POINTS
        assert bands[kind]["rows"] >= bands[kind]["sources"] >= 2 and bands[kind]["rows"] >= 5
        assert bands[kind]["p10"] < 1 < bands[kind]["p90"]


def test_implied_mfu_of_llama_65b():
    # LLaMA paper (arXiv:2302.13971) section 2.4: 380 tokens/s/GPU on 2,048 A100-80GB (312 dense TFLOP/s).
    # PaLM's FLOPs per token with attention: 6 N + 12 L d T, with 80 layers of width 8,192 at 2,048 tokens.
    row = next(m for m in measurements.read_measurements(calibration.measurements_path()) if m.line == 6)
    expected = 380 * (6 * 65.2e9 + 12 * 80 * 8192 * 2048) / 312e12
    assert measurements.implied(row).value == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(0.496, abs=0.001)


# --- EFFICIENCY -------------------------------------------------------------------------------------------------


def test_efficiency_is_the_stored_fit():
    f = calibration.load_factors()
    assert calibration.efficiency("decode_bandwidth") == pytest.approx(f.decode_bandwidth.base)
    assert calibration.efficiency("prefill", "A100", "fp16") == pytest.approx(f.prefill.base)
    assert calibration.efficiency("prefill", "H100", "fp8") == pytest.approx(
        f.prefill.base * f.prefill.formats["8-bit"]
    )
    # train_mfu on H100 in BF16 for a 4,096-wide model: ceiling / (1 + overhead * 989.4 / 3.35 / (72 * 4096))
    t = f.train_mfu
    assert calibration.efficiency("train_mfu") == pytest.approx(
        t.ceiling / (1 + t.overhead_bytes * (989.4 / 3.35) / (72 * 4096)), rel=1e-12
    )


def test_efficiency_follows_the_physics():
    e = calibration.efficiency
    # batch-one decode: datacenter GPUs reach less of peak bandwidth than consumer and Apple ones
    assert e("decode_bandwidth", "H100") < e("decode_bandwidth", "M2-Ultra") < e("decode_bandwidth", "RTX-4090")
    # block-quantized weights reach less of peak than 16-bit ones (dequantization work per byte)
    assert e("decode_bandwidth", "RTX-4090", "q4_k_m") < 0.8 * e("decode_bandwidth", "RTX-4090", "fp16")
    # FP8 prefill, a share of the doubled FP8 peak, computes faster than BF16 prefill
    assert e("prefill", "H100", "fp8") * 1979 > e("prefill", "H100", "bf16") * 989.4
    # training: small models and FP8 reach less of peak; wider models more
    assert (
        e("train_mfu", "H100", "bf16", 512)
        < e("train_mfu", "H100", "bf16", 4096)
        < e("train_mfu", "H100", "bf16", 8192)
    )
    assert e("train_mfu", "H100", "fp8") < e("train_mfu", "H100", "bf16")
    # and nothing reaches more than its peak
    assert 0 < e("decode_bandwidth", "consumer") <= 1
    # the LLaMA runs' MFU on A100s at large widths (arXiv:2302.13971, Table 15 and section 2.4 with 6N + attention:
    # 0.47-0.55, LLaMA-65B 0.496) lies inside the P10-P90 range, above the fit, which the era's 25-40% runs
    # (BLOOM, BloombergGPT, StarCoder) pull down
    low, mid, high = (e("train_mfu", "A100-80GB", "bf16", 8192, 0, q) for q in (0.1, 0.5, 0.9))
    assert low < mid < 0.496 < high


def test_efficiency_restated_against_6n_for_train_seconds():
    e = calibration.efficiency("train_mfu", "A100", "bf16", 4096)
    e6 = calibration.efficiency("train_mfu", "A100", "bf16", 4096, 4096)
    assert e6 == pytest.approx(e / (1 + 4096 / (6 * 4096)), rel=1e-12)
    # Llama-2-7B on 2T tokens, 4,096-token sequences, on A100s: the model card's 184,320 GPU-hours within 15%, and
    # inside the P10-P90 range of GPU-hours (the fast end of MFU gives the low end of hours)
    hours = training.train_seconds(6.738, 2e12, 1, 312, e6) / 3600
    assert hours == pytest.approx(184_320, rel=0.15)
    fast, slow = (calibration.efficiency("train_mfu", "A100", "bf16", 4096, 4096, q) for q in (0.9, 0.1))
    assert (
        training.train_seconds(6.738, 2e12, 1, 312, fast) / 3600
        < 184_320
        < (training.train_seconds(6.738, 2e12, 1, 312, slow) / 3600)
    )


def test_efficiency_refuses_a_share_of_a_peak_the_catalog_lacks():
    # a prefill share is a share of a dense peak: none for FP4 on a Hopper, Apple GPUs, or FP8 on an A100
    with pytest.raises(
        NotAvailableError,
        match=r"^H100-SXM has no fp4_tflops: the chip has no tensor cores for this "
        r"precision; a prefill share of it is undefined$",
    ):
        calibration.efficiency("prefill", "H100", "nvfp4")
    f = calibration.load_factors()
    assert calibration.efficiency("prefill", "B200", "nvfp4") == pytest.approx(
        f.prefill.value("datacenter", "4-bit multiply")
    )
    with pytest.raises(
        NotAvailableError,
        match=r"^M2-Ultra has no bf16_tflops: Apple publishes no GPU FLOP/s .*; a "
        r"prefill share of it is undefined$",
    ):
        calibration.efficiency("prefill", "M2-Ultra", "fp16")
    with pytest.raises(NotAvailableError, match=r"^gpu: Apple GPUs have no published FLOP/s"):
        calibration.efficiency("prefill", "apple")
    with pytest.raises(NotAvailableError, match=r"^A100-80GB has no fp8_tflops"):
        calibration.efficiency("prefill", "A100", "fp8")
    assert 0 < calibration.efficiency("train_mfu", "B200", "nvfp4") < 1  # against B200's FP4 peak
    # decode needs only bandwidth: NVFP4 weights decode at the 4-bit share
    assert calibration.efficiency("decode_bandwidth", "B200", "nvfp4") == pytest.approx(
        f.decode_bandwidth.base * f.decode_bandwidth.formats["4-bit"]
    )


def test_efficiency_basis_says_which_levels_are_assumed():
    levels = calibration.active().levels
    n = levels["decode_bandwidth"]["class"]["datacenter"]
    k = levels["decode_bandwidth"]["format"]["8-bit"]  # llama.cpp's Q8_0 rows
    assert calibration.efficiency_basis("decode_bandwidth", "H100", "fp8") == (
        f"shipped factors: decode_bandwidth datacenter: {n} rows; 8-bit: {k} row{'s' if k != 1 else ''}"
    )
    assert levels["prefill"]["class"]["apple"] == 0
    c, b = levels["prefill"]["class"]["consumer"], levels["prefill"]["format"]["16-bit"]
    assert calibration.efficiency_basis("prefill", "RTX-4090", "fp16") == (
        f"shipped factors: prefill consumer: {c} row{'s' if c != 1 else ''}; 16-bit: {b} row{'s' if b != 1 else ''}"
    )
    assert calibration.efficiency_basis("prefill", "M2-Ultra", "q4_k_m").startswith(
        "shipped factors: prefill apple: no rows, multiplier 1 assumed"
    )
    # the shipped rows hold no batch-one prefill on FP4 tensor cores: B200's NVFP4 share is the 16-bit one, and says so
    assert levels["prefill"]["format"]["4-bit multiply"] == 0
    assert calibration.efficiency_basis("prefill", "B200", "nvfp4").endswith(
        "4-bit multiply: no rows, multiplier 1 assumed"
    )
    assert calibration.efficiency("prefill", "B200", "nvfp4") == pytest.approx(
        calibration.efficiency("prefill", "B200", "bf16")
    )


def test_megatron_counts_hardware_flops_and_nvidia_its_own():
    rows = {m.line: m for m in measurements.read_measurements(calibration.measurements_path())}
    # Narayanan et al. 2021 (arXiv:2104.04473) section 5.1, Eq. 3, F = 96 B s l h^2 (1 + s/6h + V/16lh), "assumes
    # activation recomputation": four passes over each layer where model FLOPs count three. 137 TFLOP/s on
    # A100s (312) is 44% hardware utilisation, 33% model FLOPs utilisation.
    megatron = rows[14]
    assert megatron.flops == "hardware"
    assert measurements.implied(megatron).value == pytest.approx(137 / 312 * 3 / 4, rel=1e-9)
    # Megatron-Bridge's "Model TFLOP/sec/GPU" (line 16) over the same run's tokens/s (line 15): NVIDIA counts
    # 744e12 / 14,451 = 51.5 GFLOP per token, 1.07 x 6N; PaLM's count at 8,192 tokens is 1.27 x 6N. Compared in the
    # same count, the two rows imply the same MFU.
    nvidia = rows[16]
    assert nvidia.flops_per_token == pytest.approx(744e12 / 14451)
    assert nvidia.flops_per_token / (6 * 8.03e9) == pytest.approx(1.07, abs=0.005)
    assert measurements.implied(nvidia).value == pytest.approx(measurements.implied(rows[15]).value, rel=1e-9)
    assert "1.07 x 6N per token (its TFLOP/s over its tokens/s), not PaLM's 1.27 x 6N" in measurements.flops_convention(
        nvidia
    )
    assert rows[9].flops == "model"  # OPT says nothing of recomputation


@pytest.mark.slow
def test_a_capped_factor_is_a_warning_in_the_reason():
    # a fit that puts a row above its peak is capped at 1 and says so: consumer decode at 0.7 x 1.6 = 1.12 of peak
    rows = {m.line: m for m in measurements.read_measurements(calibration.measurements_path())}
    f = calibration.load_factors()
    bent = dataclasses.replace(f, decode_bandwidth=calibration.GroupFit(0.7, {"consumer": 1.6}, {}))
    said = measurements.notes(rows[27], bent, {})  # line 27, Llama-3-8B FP16 decode on an RTX 4090
    assert said[0] == (
        "warning: the fit gives 1.12 of peak bandwidth for this row, more than the hardware has; capped at 1.00"
    )
    # lines 20 and 2 predicted as validate predicts them, from the other publications' rows (the pool), two fits
    results = {r.line: r for r in measurements.validate([rows[20], rows[2]], pool=list(rows.values()))}
    assert results[20].reason == ""  # every level behind line 20 has rows in its fit
    assert results[2].reason == ""


def test_efficiency_errors_name_the_argument():
    with pytest.raises(ArgumentError, match=r"kind must be one of train_mfu, prefill, decode_bandwidth, got 'mfu'"):
        calibration.efficiency("mfu")
    with pytest.raises(ArgumentError, match=r"gpu must name an accelerator for train_mfu .* got the class 'apple'"):
        calibration.efficiency("train_mfu", "apple")
    with pytest.raises(NotAvailableError, match=r"M2 has no bf16_tflops: Apple publishes no GPU FLOP/s"):
        calibration.efficiency("train_mfu", "M2")
    with pytest.raises(UnknownPresetError, match=r"gpu 'H1000' is not in the catalog"):
        calibration.efficiency("train_mfu", "H1000")
    with pytest.raises(UnknownPresetError, match=r"precision 'fp7' is not a known format"):
        calibration.efficiency("prefill", "H100", "fp7")
    with pytest.raises(UnknownPresetError, match=r"gpu 'RTX-9090' is not in the catalog"):
        calibration.efficiency("decode_bandwidth", "RTX-9090")


def test_calibration_block_signatures_are_stable():
    # docs/calibration.md and the templates' Calibration sheets call these by position
    from xlsxplan.registry import FUNCTIONS

    assert [FUNCTIONS[n].signature() for n in ("EFFICIENCY", "DECODE_STEP_S", "SERVE_TOKS", "TTFT_S")] == [
        "EFFICIENCY(kind, [gpu=H100-SXM], [precision=bf16], [hidden=4,096], [seq_len=0], [quantile=0.5])",
        "DECODE_STEP_S(params_b, bytes_per_param, batch, kv_bytes_per_token, context_tokens, n_gpus, bandwidth_tb_s, "
        "tflops, [bandwidth_eff=1], [compute_eff=0.5], [active_params_b=0])",
        "SERVE_TOKS(params_b, bytes_per_param, kv_bytes_per_token, prompt_tokens, output_tokens, n_gpus, memory_gb, "
        "bandwidth_tb_s, tflops, [concurrency=0], [bandwidth_eff=1], [compute_eff=0.5], [usable_fraction=0.9], "
        "[active_params_b=0], [experts=0], [experts_per_token=0])",
        "TTFT_S(params_b, bytes_per_param, prompt_tokens, layers, hidden, n_gpus, tflops, bandwidth_tb_s, "
        "[compute_eff=0.5], [bandwidth_eff=1], [link_gb_s=0])",
    ]
    assert FUNCTIONS["EFFICIENCY"].category == "xlsxplan Calibration"
