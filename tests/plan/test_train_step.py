"""The training plan's step time, term by term, against hand computations from the equations its docstrings cite: FP8's
attention core at the BF16 peak and its casts at the memory bandwidth, a mixture of experts' routed term from the
calibration, torchtitan's selective recompute for a gated layer, the interleaved pipeline bubble, the NVL72 domain a
GB200 row's traffic stays in, and ZeRO-3's gathered stage under pipeline parallelism. The expected figures come from
the catalog, the calibration's fitted numbers and EFFICIENCY, never from the functions under test."""

from __future__ import annotations

import dataclasses

import pytest

from xlsxplan.calibration import efficiency, load_factors
from xlsxplan.calibration.shape import preset_shape
from xlsxplan.calibration.training_runs import read_training_runs
from xlsxplan.catalog import load_catalog
from xlsxplan.plan import train_fit
from xlsxplan.plan.train import layout_option
from xlsxplan.plan.train_inputs import TRAIN_INPUTS

CATALOG = load_catalog()
H100 = CATALOG.accelerators.get("H100-SXM")
SEQ = 8192


def _llama8b(precision: str, recompute: str = "none", **layout):
    shape = preset_shape("Llama-3.1-8B")
    assert shape is not None
    args = {"gpus": 8, "tp": 1, "pp": 1, "dp": 8, "micro_batch": 1, "global_batch": 8, **layout}
    return shape, layout_option(shape, "H100-SXM", recompute=recompute, precision=precision, seq_len=SEQ, **args)


def test_fp8_runs_the_linear_layers_at_the_fp8_peak_the_attention_at_bf16_and_pays_for_its_casts():
    shape, fp8 = _llama8b("fp8")
    _, bf16 = _llama8b("bf16")
    tokens = 8 * SEQ
    linear = 6 * shape.active_b * 1e9  # 6N
    attention = 12 * 32 * 32 * 128 * SEQ  # PaLM's 12 L H Q T: Llama 3.1 8B, 32 layers of 32 heads of 128
    casts = 40 * 4096 * 32  # 40 bytes a hidden unit a layer: the output gradients and attention output, cast twice
    eff_bf16 = efficiency("train_mfu", "H100-SXM", "bf16", 4096)
    eff_fp8 = efficiency("train_mfu", "H100-SXM", "fp8", 4096)
    assert bf16.calibrated_mfu == eff_bf16 and fp8.calibrated_mfu == eff_fp8
    bf16_s = tokens * (linear + attention) / (8 * H100.bf16_tflops * 1e12 * eff_bf16)
    fp8_s = (
        tokens
        * (
            linear / (H100.fp8_tflops * 1e12)
            + attention / (H100.bf16_tflops * 1e12)
            + casts / (H100.bandwidth_tb_s * 1e12)
        )
        / (8 * eff_fp8)
    )
    assert bf16.option.step["compute"] == pytest.approx(bf16_s, rel=1e-12)
    assert fp8.option.step["compute"] == pytest.approx(fp8_s, rel=1e-12)
    # at 8,192 tokens a sequence FP8 is well short of twice BF16's rate
    assert 1.2 < bf16.option.step["compute"] / fp8.option.step["compute"] < 1.6


def test_a_mixture_of_experts_mfu_carries_the_calibrations_routed_term():
    shape = preset_shape("Qwen3-30B-A3B")
    assert shape is not None
    model = CATALOG.models.get("Qwen3-30B-A3B")
    lr = layout_option(
        shape, "H100-SXM", gpus=8, tp=1, pp=1, dp=8, ep=8, global_batch=8, precision="bf16", seq_len=4096
    )
    fit = load_factors().train_mfu
    balance = H100.bf16_tflops / H100.bandwidth_tb_s  # FLOP per byte
    flops = 6 * shape.active_b * 1e9 + 12 * shape.layers * shape.heads * shape.head_dim * 4096
    moe_layers = model.layers - (model.dense_layers or 0)
    routed = model.experts_per_token * shape.hidden * moe_layers * balance / flops  # k d L_moe over F at C/B
    dense = 1 + fit.overhead_bytes * balance / (72 * shape.hidden)
    share = dense / (dense + fit.routed_bytes * routed)
    assert lr.calibrated_mfu == pytest.approx(efficiency("train_mfu", "H100-SXM", "bf16", shape.hidden) * share)
    assert share < 0.7  # top-8 of 128 experts on a 2,048-wide model: the routed traffic costs a third or more


def test_torchtitans_selective_recompute_repeats_every_other_matmul_of_a_gated_layer():
    shape, lr = _llama8b("bf16", "selective", ffn_hidden=14_336, vocab=128_256)
    # wk, wo and w3 (every second of wq, wk, wv, wo, w1, w3, w2) once more: 2 L h (kv + h + f)
    again = 2 * 32 * 4096 * (1024 + 4096 + 14_336)
    assert lr.recompute_flops_per_token == again
    flops = 6 * shape.active_b * 1e9 + 12 * 32 * 32 * 128 * SEQ + again  # the attention core is saved
    eff = efficiency("train_mfu", "H100-SXM", "bf16", 4096)
    assert lr.option.step["compute"] == pytest.approx(8 * SEQ * flops / (8 * H100.bf16_tflops * 1e12 * eff))
    # without ffn_hidden, selective is Korthikanti et al.'s: the attention core's forward again, 4 L H Q T
    _, korthikanti = _llama8b("bf16", "selective")
    assert korthikanti.recompute_flops_per_token == 4 * 32 * 32 * 128 * SEQ


def test_the_interleaved_schedule_shrinks_the_bubble_v_times_and_sends_v_times_as_much():
    layout = {"pp": 4, "dp": 2, "global_batch": 16}  # 8 micro-batches a replica, 4 stages
    _, plain = _llama8b("bf16", **layout)
    _, interleaved = _llama8b("bf16", virtual_stages=2, **layout)
    assert plain.bubble_factor == (8 + 3) / 8 and interleaved.bubble_factor == (8 + 3 / 2) / 8
    for lr, v in ((plain, 1), (interleaved, 2)):
        step = lr.option.step
        stage = step["compute"] + step["tensor_parallel"] + step["pipeline_sends"] + step["expert_all_to_all"]
        assert step["pipeline_bubble"] == pytest.approx(stage * 3 / v / 8, rel=1e-12)
    assert interleaved.option.step["pipeline_sends"] == pytest.approx(2 * plain.option.step["pipeline_sends"])
    assert interleaved.option.step["compute"] == plain.option.step["compute"]


def test_a_gb200_rows_expert_traffic_stays_in_its_nvl72_rack():
    # Megatron-Bridge 25.11, DeepSeek-V3 on 256 GB200s with expert parallel 32: the NVL72 rack's 72 GPUs share
    # NVLink (systems.toml, GB200-NVL72), so the all-to-all crosses the 900 GB/s link, not the 50 GB/s network
    (run,) = [r for r in read_training_runs() if r.line == 70]
    assert (run.gpu, run.ep, run.tp) == ("GB200", 32, 1)
    rack, result = train_fit.predict_row(run)
    assert any("scale-up domain of 72 GPUs" in a and "GB200-NVL72" in a for a in result.assumptions)
    shape = preset_shape("DeepSeek-V3")
    assert shape is not None
    layout = {"gpus": 256, "tp": 1, "pp": 8, "dp": 32, "ep": 32, "micro_batch": 1, "global_batch": 4096}
    same = layout_option(shape, "GB200", precision="fp8", seq_len=4096, virtual_stages=4, gpus_per_node=72, **layout)
    assert same.option.step == rack.option.step  # the row's layout, as published
    node = layout_option(shape, "GB200", precision="fp8", seq_len=4096, virtual_stages=4, **layout)  # 8-GPU nodes
    gb200 = CATALOG.accelerators.get("GB200")
    ratio = rack.option.step["expert_all_to_all"] / node.option.step["expert_all_to_all"]
    assert ratio == pytest.approx(50 / gb200.link_gb_s, rel=1e-12)


def test_zero3_under_pipeline_parallelism_keeps_the_stage_gathered_and_moves_the_gradients_twice():
    # torchtitan@9dec370, parallelize_llama.py apply_fsdp: reshard_after_forward = False under pipeline parallelism
    # (Table 5's 405B runs; the Llama 3 paper's FSDP 'without resharding after forward', arXiv:2407.21783, section
    # 3.3.2): one gather and one reduce-scatter a step, 2 (d - 1) / d of the 16-bit gradients, while the stage holds
    # its 16-bit weights, 2 N / (p t); without pipeline parallelism ZeRO-3 gathers for every micro-batch's forward and
    # backward, (2 m + 1) (d - 1) / d (ZeRO, arXiv:1910.02054, section 7)
    defaults = {p.name: p.default for p in TRAIN_INPUTS}
    hidden = 1.0 - defaults["dp_overlap"]
    shape, piped = _llama8b("bf16", gpus=16, tp=1, pp=2, dp=8, zero=3, global_batch=32)
    _, flat = _llama8b("bf16", gpus=16, tp=1, pp=1, dp=16, zero=3, global_batch=32)
    grads = 2 * shape.params_b * 1e9  # 16-bit gradients of Llama 3.1 8B (dense), before the pipeline's split
    # 8 data-parallel GPUs of one stage share a node's NVLink (450 GB/s); 16 span two nodes: the network
    piped_s = 2 * 7 / 8 * grads / 2 / (H100.link_gb_s * 1e9) * hidden
    flat_s = (2 * 2 + 1) * 15 / 16 * grads / (defaults["network_gb_s"] * 1e9) * hidden  # m = 32 / 16 = 2
    assert piped.option.step["data_parallel_exposed"] == pytest.approx(piped_s, rel=1e-12)
    assert flat.option.step["data_parallel_exposed"] == pytest.approx(flat_s, rel=1e-12)
    assert piped.option.memory["gathered_stage"] == pytest.approx(2 * shape.params_b / 2, rel=1e-12)
    assert "gathered_stage" not in flat.option.memory


def test_a_mixture_of_experts_routed_share_is_read_from_the_factors_in_use():
    # the routed term's share of the dense MFU, (1 + o) / (1 + o + routed_bytes x routed), is remembered by the
    # factors it is read from, so factors of one's own (a refit) give their own share, never the shipped one's
    from xlsxplan.plan import train

    fit = load_factors().train_mfu
    balance, hidden, routed = 989.0 / 3.35, 7_168.0, 0.01
    o = fit.overhead_bytes * balance / (72.0 * hidden)
    assert train._routed_share(fit, balance, hidden, routed) == pytest.approx(
        (1 + o) / (1 + o + fit.routed_bytes * routed), rel=1e-12
    )
    doubled = dataclasses.replace(fit, routed_bytes=2 * fit.routed_bytes)
    assert train._routed_share(doubled, balance, hidden, routed) == pytest.approx(
        (1 + o) / (1 + o + 2 * fit.routed_bytes * routed), rel=1e-12
    )
