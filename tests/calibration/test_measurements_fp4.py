"""FP4: the formats as stored, the FP4 peaks, and NVFP4 serving rows on a B200 predicted from them."""

from __future__ import annotations

import pytest

import xlsxplan as x
from tests.helpers import DATA
from xlsxplan.calibration import load_factors
from xlsxplan.calibration.measurements import Unpredictable, predict, read_measurements


def test_block_scaled_formats_as_stored():
    # MXFP4 (OCP Microscaling Formats v1.0): 32 E2M1 values share one E8M0 scale, 4 + 8/32 = 4.25 bits, "MoE weights
    # ... quantized to the MXFP4 format at 4.25 bits/parameter" (gpt-oss model card, arXiv:2508.10925). NVFP4 (NVIDIA,
    # 'Introducing NVFP4 for Efficient and Accurate Low-Precision Inference'): 16 values share an E4M3 scale, 4.5 bits
    # (one FP32 scale per tensor besides, negligible); "3.5x compared to FP16 and 1.8x compared to FP8" = 16/4.5 and
    # 8/4.5. DeepSeek's FP8 (arXiv:2412.19437, section 3.3.2): one FP32 scale per 128 x 128 block, 8 + 32/16384 bits.
    assert x.bytes_per_param("mxfp4") * 8 == 4.25
    assert x.bytes_per_param("nvfp4") * 8 == 4.5
    assert 16 / (x.bytes_per_param("nvfp4") * 8) == pytest.approx(3.56, abs=0.01)
    assert x.bytes_per_param("fp8_block128") * 8 == pytest.approx(8 + 32 / 16_384)
    assert "FP32 scale per tensor" in x.format_source("nvfp4")


def test_nvfp4_rows_on_b200_are_predicted_with_the_fp4_peak():
    # TensorRT-LLM perf-overview.md @00f37686, B200 TP1 (FP4): Llama 3.3 70B at 1000/1000 makes 7,007 output tokens/s.
    # Before the catalog held FP4 peaks an NVFP4 row could not be predicted at all (no dense FP4 rate to take a share
    # of); now the prefill share is taken of B200's 9,000 dense FP4 TFLOP/s.
    factors = load_factors()
    rows = read_measurements(DATA / "nvfp4_b200.csv")
    ratios = {}
    for m in rows:
        predicted, basis = predict(m, factors)
        ratios[(m.model, m.input_len, m.output_len)] = predicted / m.value
        assert "roofline" in basis
    assert ratios[("Llama-3.3-70B", 1000, 1000)] == pytest.approx(1, abs=0.5)  # within 2x: 1.04 at writing
    # the rest at writing: 128/128 1.97, 2048/2048 0.82, Qwen3-30B-A3B 1.29, Llama-3.1-405B on 4 GPUs 2.26; within 3x
    assert all(1 / 3 < r < 3 for r in ratios.values()), ratios


def test_an_nvfp4_row_on_a_chip_without_fp4_says_why():
    m = read_measurements(DATA / "nvfp4_b200.csv")[1]
    from dataclasses import replace

    with pytest.raises(Unpredictable, match=r"H100-SXM has no fp4_tflops: the chip has no tensor cores"):
        predict(replace(m, gpu="H100-SXM"), load_factors())


def test_mxfp4_experts_beside_bf16_attention_as_gpt_oss_stores_them():
    # gpt-oss's config: quantization_config mxfp4 with modules_to_not_convert self_attn, router, embed_tokens, lm_head;
    # its model card (arXiv:2508.10925): "MoE weights ... quantized to the MXFP4 format at 4.25 bits/parameter",
    # letting gpt-oss-120b run on one 80 GB GPU. The routed experts (36 layers x 128 experts x gate, up and down
    # projections of 2880 x 2880 with their biases) at 4.25 bits, the other 116.8B - experts at 2 bytes:
    experts = 36 * 128 * (3 * 2880 * 2880 + 2 * 2880 + 2880)
    assert x.model_expert_params_b("gpt-oss-120b") * 1e9 == experts
    expected = (experts * 4.25 / 8 + (116.8e9 - experts) * 2) / 1e9
    assert x.model_weights_gb("gpt-oss-120b", "bf16", 0, "mxfp4") == pytest.approx(expected)
    assert 60 < expected < 80 * 0.9  # fits one 80 GB GPU with room for a cache
    assert x.model_weights_gb("gpt-oss-120b", "mxfp4") < expected  # everything in MXFP4 would understate it
    assert x.model_weights_gb("Llama-3.1-8B", "fp8", 0, "nvfp4") == x.model_weights_gb("Llama-3.1-8B", "fp8")  # dense
