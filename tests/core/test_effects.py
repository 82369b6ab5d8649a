"""The communication terms of a serving step (xlsxplan.core.effects), each against a published measurement.

Sources, each a figure printed in a public repository's issue thread or README:

* NCCL all-reduce on eight H100s over NVLink: 365-370 GB/s bus bandwidth with the ring algorithm, 2 to 8 GPUs
  (NVIDIA/nccl, "[SHArP] about the intranode allreduce performance with SHArP", 2024-09-19); about 480 GB/s with NVLink SHARP, 370 GB/s effective NVLink bandwidth after
  NCCL's protocol overhead on the 450 GB/s line rate (NVIDIA/nccl-tests, "H100 all reduce performance is poor", NCCL maintainer's answer,
  2024-05-06).
* DeepEP's expert all-to-all on H800s (NVLink about 160 GB/s) with a 400 Gb/s CX7 NIC each (about 50 GB/s),
  deepseek-ai/DeepEP@0297fc801788b14b338a46554faca28d419e518a:docs/legacy.md, "Performance": normal kernels
  (4,096 tokens, hidden 7,168, top-8, FP8 dispatch, BF16 combine) 153/158 GB/s NVLink within 8 GPUs and 43, 58,
  51 GB/s RDMA across 16, 32, 64; low-latency kernels (128 tokens a GPU) dispatch 118, 155, 173, 192 us and combine
  195, 273, 314, 369 us at EP 16, 32, 64, 128. The normal kernels' RDMA bytes count each token once for every node
  it reaches (deepseek-ai/DeepEP@567632d:tests/test_internode.py, ``num_rdma_token_sent``).
* NDR InfiniBand point to point: 46-48 GB/s a 400 Gb/s NIC under NCCL (NVIDIA/nccl-tests, "Single-node and multi-node performance of H100 nodes.", NCCL
  maintainer's answer, 2025-03-03), against the 50 GB/s line rate of systems.toml.
* The pipeline bubble: GPipe (arXiv:1811.06965, section 2.2) and Megatron-LM (arXiv:2104.04473, section 2.2): the
  bubble is ``(p - 1) / m`` of the ideal time, hence ``(p - 1) / (m + p - 1)`` of the step.
"""

from __future__ import annotations

import pytest

from xlsxplan import gpu_spec
from xlsxplan.catalog.systems import system_spec
from xlsxplan.core import effects
from xlsxplan.core.step import Layout, StepShape, comm_seconds, dispatch_bytes, serve_step, step_parts
from xlsxplan.errors import OutOfRangeError

_G = 1e9


def test_a_ring_all_reduce_on_eight_h100s_runs_at_the_bus_bandwidth_nccl_measures():
    link = gpu_spec("H100", "link_gb_s")  # 450 GB/s per direction, the NVLink 4 line rate
    size = 4 * 2**30
    seconds = effects.allreduce_seconds(size, 8, link)
    busbw = 2 * 7 / 8 * size / seconds / _G  # nccl-tests' bus bandwidth of the modelled time
    assert busbw == pytest.approx(450)
    for measured in (367.5, 480.0):  # ring, NVLink SHARP (NVIDIA/nccl 1455; nccl-tests 212)
        assert busbw == pytest.approx(measured, rel=0.25)
    # a small message costs the measured latency of one small collective (NVIDIA/nccl, "Is intra-node latency supposed to increase with the number of GPUs when using NVLink SHARP?": about 6 us)
    small = effects.allreduce_seconds(128, 2, link, effects.SCALE_UP_LATENCY_US)
    assert small == pytest.approx(6e-6, rel=0.01)
    assert effects.allreduce_seconds(size, 1, 0) == 0.0
    with pytest.raises(OutOfRangeError, match="link_gb_s"):
        effects.allreduce_seconds(size, 8, 0)


@pytest.mark.parametrize(("ep", "measured"), [(16, 43.0), (32, 58.0), (64, 51.0)])
def test_the_throughput_all_to_all_sends_a_token_once_a_node_at_the_rdma_bandwidth_deepep_measures(ep, measured):
    # DeepEP's normal kernels (docs/legacy.md, "Performance"): 4,096 tokens a GPU, top-8 of 256 experts in as many
    # groups as nodes, top-4 groups (tests/test_internode.py: num_topk_groups = min(num_nodes, 4)), FP8 dispatch. Its
    # RDMA bytes count each token once for every node it reaches, its own included (num_rdma_token_sent), over the
    # whole time: the model's time for the same bytes gives 1.31x, 1.15x and 1.12x its 43, 58 and 51 GB/s
    nodes = ep // 8
    reach = min(nodes, 4)
    distinct = reach * (1 - (1 - 1 / reach) ** 8)  # nodes a token reaches, its own among them
    one_copy = 4096 * 7168 * effects.FP8_DISPATCH_BYTES
    seconds = effects.forwarded_all_to_all_seconds(one_copy, 8, ep, 160, 8, 50, 0, 4)
    rdma = one_copy * distinct / seconds / _G
    assert rdma == pytest.approx(measured, rel=0.35)
    # each token crosses the network once a remote node, not once an expert: at EP32, 2.70 sends, not 8 x 24/32 = 6
    assert effects.forwarded_all_to_all_seconds(one_copy, 8, 32, 160, 8, 50) == pytest.approx(
        one_copy * 3 * (1 - 0.75**8) / (50 * _G)
    )
    assert effects.forwarded_all_to_all_seconds(one_copy, 8, 1, 0) == 0.0
    with pytest.raises(OutOfRangeError, match="max_domains"):
        effects.forwarded_all_to_all_seconds(one_copy, 8, 32, 160, 8, 50, 0, -1)


def test_within_one_domain_the_throughput_all_to_all_sends_a_token_once_a_gpu():
    one_copy = 1000.0
    # EP4 in an NVL72 rack: a token's 8 experts sit on 4 (1 - (3/4)^8) = 3.60 GPUs, 2.70 of them not its own
    seconds = effects.forwarded_all_to_all_seconds(one_copy, 8, 4, 900, 72, 50, 1.0)
    assert seconds == pytest.approx(one_copy * 3 * (1 - 0.75**8) / (900 * _G) + 1e-6)


def test_a_dispatch_carries_its_block_scales_and_nvfp4_halves_fp8s_traffic():
    # FP8: a byte a value and an FP32 scale per 128 (DeepEP's fp8_factor, (1 + 4/128) / 2 of BF16's bytes)
    assert dispatch_bytes("fp8", 1.0) == pytest.approx(2 * (1 + 4 / 128) / 2)
    assert dispatch_bytes("int4_g128", 0.52) == effects.FP8_DISPATCH_BYTES  # weight-only 4-bit: FP8 activations
    assert dispatch_bytes("bf16", 2.0) == effects.ACTIVATION_BYTES
    # NVFP4: half a byte and an FP8 scale per 16, "halving the required network traffic" of FP8 (LMSYS, GB200 Part II)
    assert dispatch_bytes("NVFP4", 0.5625) == pytest.approx(0.5625)
    assert dispatch_bytes("nvfp4", 0.5625) / dispatch_bytes("fp8", 1.0) == pytest.approx(0.5, abs=0.05)


def test_overlapped_communication_shows_the_sms_it_holds_or_what_the_computation_cannot_cover():
    share = effects.NORMAL_KERNEL_SM_SHARE
    assert share == pytest.approx(20 / 132)  # DeepEP's 20 SMs of an H800's 132 (DeepSeek-V3, section 3.5.1)
    # computation 2 s, communication 1 s: the computation loses 20/132 of the SMs for 1 s
    assert effects.exposed_comm_seconds(2.0, 1.0, share) == pytest.approx(20 / 132)
    # communication longer than the computation: the step waits for it
    assert effects.exposed_comm_seconds(0.5, 1.0, share) == pytest.approx(0.5)
    assert effects.exposed_comm_seconds(2.0, 1.0, 1.0) == 1.0  # kernels that hold every SM: no overlap
    with pytest.raises(OutOfRangeError, match="sm_share"):
        effects.exposed_comm_seconds(2.0, 1.0, 1.5)


def test_an_expert_all_to_all_within_a_node_runs_at_the_nvlink_bandwidth_deepep_measures():
    size = 4096 * 8 * 7168
    seconds = effects.all_to_all_seconds(size, 8, 160, 8, 50)
    nvlink = size * 7 / 8 / seconds / _G
    for measured in (153.0, 158.0):  # dispatch, combine
        assert nvlink == pytest.approx(measured, rel=0.05)


@pytest.mark.parametrize(
    ("ep", "dispatch_us", "combine_us"), [(16, 118, 195), (32, 155, 273), (64, 173, 314), (128, 192, 369)]
)
def test_a_decode_step_dispatch_and_combine_take_the_time_deepep_measures(ep, dispatch_us, combine_us):
    # 128 tokens a GPU, top-8 of hidden 7,168: FP8 dispatch (1 byte a value), BF16 combine (2)
    copies = 128 * 8 * 7168
    up, out = 160, system_spec("DGX-H100", "scale_out_gb_s")  # H800 NVLink; one 400 Gb/s NIC a GPU: 50 GB/s
    for bytes_per_value, measured in ((1, dispatch_us), (2, combine_us)):
        seconds = effects.all_to_all_seconds(copies * bytes_per_value, ep, up, 8, out, effects.SCALE_OUT_LATENCY_US)
        assert seconds * 1e6 == pytest.approx(measured, rel=0.25)


def test_a_pipeline_send_over_ndr_infiniband_runs_at_what_nccl_measures():
    size = 2**30
    line = system_spec("DGX-H100", "scale_out_gb_s")
    assert line == 50
    achieved = size / effects.p2p_seconds(size, line) / _G
    assert achieved == pytest.approx(
        47.0, rel=0.1
    )  # 46-48 GB/s a NIC (NVIDIA/nccl-tests, "Single-node and multi-node performance of H100 nodes.")
    assert effects.p2p_seconds(0, line, effects.SCALE_OUT_LATENCY_US) == pytest.approx(46e-6)


def test_the_pipeline_bubble_is_gpipes():
    assert effects.pipeline_bubble(1, 8) == 0.0
    assert effects.pipeline_bubble(4, 4) == pytest.approx(3 / 7)
    for p, m in ((2, 2), (4, 8), (8, 32)):  # Megatron-LM's (p-1)/m of the ideal time, as a share of the step
        ideal, bubble = 1.0, (p - 1) / m
        assert effects.pipeline_bubble(p, m) == pytest.approx(bubble / (ideal + bubble))
    with pytest.raises(OutOfRangeError, match="micro_batches"):
        effects.pipeline_bubble(2, 0)


# --- the step laid out ---------------------------------------------------------------------------------------------

SHAPE = StepShape(61, 128 * 128, 7168, 58, 8, 1.0)  # DeepSeek-V3's layers, attention width, hidden, MoE layers, top-8
ARGS = dict(
    read_params_b=40.0,
    bytes_per_param=1.0,
    active_params_b=37.0,
    batch=256,
    prefill_tokens=1280,
    prompt_tokens=3000,
    kv_bytes_per_token=70_000,
    context_tokens=3300,
    shape=SHAPE,
    bandwidth_tb_s=3.35,
    tflops=1979,
    bandwidth_eff=0.6,
    compute_eff=0.5,
)
LINKS = dict(scale_up_gpus=8, scale_up_gb_s=450, scale_out_gb_s=50, scale_up_latency_us=6, scale_out_latency_us=46)


def test_a_tensor_parallel_layout_without_latency_is_the_step_validate_scores():
    plain = step_parts(n_gpus=8, link_gb_s=450, **ARGS)
    laid = step_parts(n_gpus=8, link_gb_s=0, layout=Layout(tp=8, scale_up_gb_s=450), **ARGS)
    assert laid == plain and plain["all-to-all"] == plain["pipeline"] == 0.0
    with_latency = step_parts(n_gpus=8, link_gb_s=0, layout=Layout(tp=8, **LINKS), **ARGS)
    assert with_latency["all-reduce"] == pytest.approx(plain["all-reduce"] + 2 * 61 * 6e-6)


def test_pipeline_stages_take_m_plus_p_minus_one_stage_times_and_send_between_nodes():
    layout = Layout(tp=8, pp=2, micro_batches=2, **LINKS)
    parts = step_parts(n_gpus=16, link_gb_s=0, layout=layout, **ARGS)
    micro = step_parts(
        n_gpus=8, link_gb_s=0, layout=Layout(tp=8, **LINKS), **{**ARGS, "batch": 128, "prefill_tokens": 640}
    )
    for k in ("weights", "linear", "cache", "attention", "all-reduce"):
        assert parts[k] == pytest.approx(micro[k] * 3 / 2)  # 3 stage times of half the layers
    send = effects.p2p_seconds((128 + 640) * 7168 * 2 / 8, 50, 46)
    assert parts["pipeline"] == pytest.approx(3 * send)
    # the bubble: of the step's 3 stage times, 1 leaves each stage idle
    assert effects.pipeline_bubble(2, 2) == pytest.approx(1 / 3)


def test_wide_expert_parallel_dispatches_and_combines_every_moe_layer_over_both_fabrics():
    layout = Layout(tp=1, dp=32, dispatch_bytes=1.0, **LINKS)
    # a step that decodes (here with prompts prefilled in it): the low-latency kernels send every routed copy, and
    # their time adds to the step
    parts = step_parts(n_gpus=32, link_gb_s=0, layout=layout, **ARGS)
    per_gpu = (256 + 1280) / 32 * 8 * 7168
    one = sum(effects.all_to_all_seconds(per_gpu * b, 32, 450, 8, 50, 46) for b in (1.0, 2.0))
    assert parts["all-to-all"] == pytest.approx(58 * one)
    assert parts["all-reduce"] == 0.0  # attention data-parallel: no tensor-parallel exchange
    step = serve_step(parts, 1.1)
    assert comm_seconds(parts, 1.1) == pytest.approx(parts["all-to-all"] / 1.1) and step > comm_seconds(parts, 1.1)
    # a prefill pool's step: the throughput kernels, a token once a node and a GPU, overlapped with the computation
    prefill = {**ARGS, "batch": 0, "prefill_tokens": 16_384 * 32}
    mine = 16_384 * 7168
    comm = 58 * sum(effects.forwarded_all_to_all_seconds(mine * b, 8, 32, 450, 8, 50, 46) for b in (1.0, 2.0))
    alone = step_parts(n_gpus=32, link_gb_s=0, layout=layout._replace(overlap="none"), **prefill)
    assert alone["all-to-all"] == pytest.approx(comm) and comm < 58 * sum(
        effects.all_to_all_seconds(mine * 8 * b, 32, 450, 8, 50, 46) for b in (1.0, 2.0)
    )
    laid = step_parts(n_gpus=32, link_gb_s=0, layout=layout, **prefill)  # two-batch overlap
    compute = serve_step(laid) - laid["all-to-all"]
    assert laid["all-to-all"] == pytest.approx(max(comm * 20 / 132, comm - compute))
    assert laid["all-to-all"] < comm / 2
    # the combine alone overlapped (SGLang on GB200): the dispatch shows whole
    dispatch = 58 * effects.forwarded_all_to_all_seconds(mine * 1.0, 8, 32, 450, 8, 50, 46)
    combined = step_parts(n_gpus=32, link_gb_s=0, layout=layout._replace(overlap="combine"), **prefill)
    assert combined["all-to-all"] == pytest.approx(dispatch + (comm - dispatch) * 20 / 132)
    assert layout.name() == "ep32 dp-attention" and layout.ep == 32 and Layout(tp=8, pp=2).name() == "tp8 pp2"
