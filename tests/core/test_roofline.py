"""The roofline serving model: consistent with the serving functions of "Back-of-the-Envelope Estimation for LLM
Systems" where they overlap, physical where they don't."""

from __future__ import annotations

import pytest

from xlsxplan.core import equations, roofline, serving
from xlsxplan.core.roofline import decode_step_seconds, serve_tokens_per_s
from xlsxplan.errors import OutOfRangeError

# Llama-3.1-8B (meta-llama config.json: 32 layers, 8 KV heads of 128) in FP8 with an FP8 KV cache on one H100 SXM
# (NVIDIA datasheet: 80 GB, 3.35 TB/s, 1,978.9 dense FP8 TFLOP/s)
N, KV_FP8, H100_BW, H100_FP8, H100_BF16 = 8.03, 2 * 32 * 8 * 128 * 1, 3.35, 1978.9, 989.4


def test_decode_step_is_the_back_of_the_envelope_bandwidth_step_when_memory_bound():
    # Back-of-the-Envelope §4: Qwen2.5-72B in FP8 on two H100s, batch 94 of 2,300 tokens: 46.7 tokens/s per user
    step = roofline.decode_step_seconds(72.7, "fp8", 94, 327680, 2300, 2, 3.35, H100_FP8, 1, 0.5)
    assert 1 / step == pytest.approx(serving.decode_tokens_per_s(72.7, 1, 2, 3.35, 94, 327680, 2300), rel=1e-12)
    assert 1 / step == pytest.approx(46.7, abs=0.05)


def test_decode_step_becomes_compute_bound_at_large_batch():
    # the crossover stated in the docstring: memory-bound up to batch 345, compute-bound above
    def times(batch):
        memory = (N * 1e9 + batch * KV_FP8 * 192) / (H100_BW * 1e12 * 0.54)
        compute = 2 * N * 1e9 * batch / (H100_FP8 * 1e12 * 0.41)
        return memory, compute

    for batch in (1, 256, 345):
        memory, compute = times(batch)
        assert memory > compute
        assert roofline.decode_step_seconds(N, 1, batch, KV_FP8, 192, 1, H100_BW, H100_FP8, 0.54, 0.41) == memory
    for batch in (346, 4096):
        memory, compute = times(batch)
        assert compute > memory
        assert roofline.decode_step_seconds(N, 1, batch, KV_FP8, 192, 1, H100_BW, H100_FP8, 0.54, 0.41) == compute


def test_serve_toks_is_the_back_of_the_envelope_full_memory_throughput_when_prefill_and_compute_are_free():
    # With compute made (nearly) free, SERVE_TOKS is Back-of-the-Envelope's DECODE_TOKS_TOTAL at the batch that fits at
    # the average context: Qwen2.5-7B in BF16 on one H100, 2,000-token prompts, 300-token answers (Back-of-the-Envelope
    # §6)
    kv = serving.kv_bytes_per_token(28, 4, 128)
    avg = 2000 + 300 / 2
    batch = serving.max_batch(7.6, 2, kv, avg, 1, 80)
    envelope = serving.decode_tokens_per_s_total(7.6, 2, 1, 3.35, batch, kv, avg)
    fast = roofline.serve_tokens_per_s(7.6, 2, kv, 2000, 300, 1, 80, 3.35, 1e9, 0, 1, 1)
    assert fast == pytest.approx(envelope, rel=1e-4)
    # the average context holds more sequences than the longest one, so it beats Back-of-the-Envelope's worst case
    assert batch > serving.max_batch(7.6, 2, kv, 2300, 1, 80) == 430


def test_serve_toks_counts_prefill_time_and_caps_concurrency():
    kv = serving.kv_bytes_per_token(28, 4, 128)
    no_prefill = roofline.serve_tokens_per_s(7.6, 2, kv, 1, 300, 1, 80, 3.35, H100_BF16, 0, 0.6, 0.5)
    long_prompt = roofline.serve_tokens_per_s(7.6, 2, kv, 20000, 300, 1, 80, 3.35, H100_BF16, 0, 0.6, 0.5)
    assert long_prompt < no_prefill / 5
    capped = roofline.serve_tokens_per_s(7.6, 2, kv, 2000, 300, 1, 80, 3.35, H100_BF16, 8, 0.6, 0.5)
    step = roofline.decode_step_seconds(7.6, 2, 8, kv, 2150, 1, 3.35, H100_BF16, 0.6, 0.5)
    prefill = 2 * 7.6e9 * 2000 / (H100_BF16 * 1e12 * 0.5)
    assert capped == pytest.approx(300 / (300 * step / 8 + prefill), rel=1e-12)


def test_serve_toks_sizes_its_batch_and_prefill_with_the_serving_arithmetic(monkeypatch):
    # SERVE_TOKS calls the same unchecked arithmetic as MAX_BATCH and PREFILL_S rather than restating it, so a
    # change to either reaches both.
    kv = serving.kv_bytes_per_token(28, 4, 128)
    calls: list[str] = []
    for name in ("batch_that_fits", "prefill_s"):
        real = getattr(equations, name)
        monkeypatch.setattr(equations, name, lambda *a, _real=real, _name=name: calls.append(_name) or _real(*a))
    rate = roofline.serve_tokens_per_s(7.6, 2, kv, 2000, 300, 1, 80, 3.35, H100_BF16, 0, 0.6, 0.5)
    assert calls == ["batch_that_fits", "prefill_s"]
    batch = serving.max_batch(7.6, 2, kv, 2150, 1, 80)
    step = roofline.decode_step_seconds(7.6, 2, batch, kv, 2150, 1, 3.35, H100_BF16, 0.6, 0.5)
    prefill = serving.prefill_seconds(7.6, 2000, 1, H100_BF16, 0.5)
    assert rate == 300 / (300 * step / batch + prefill)


def test_serve_toks_prefill_bound_limit_is_compute_over_flops_per_output_token():
    # very short answers to long prompts: every request costs 2 N (P + G) FLOPs at e_c, nothing else matters
    rate = roofline.serve_tokens_per_s(N, 1, KV_FP8, 2048, 1, 1, 80, H100_BW, H100_FP8, 0, 1, 0.41)
    ceiling = H100_FP8 * 1e12 * 0.41 / (2 * N * 1e9 * 2048)
    assert ceiling * 0.98 < rate < ceiling


def test_serve_toks_is_zero_when_the_weights_do_not_fit():
    # Back-of-the-Envelope: 72.7B in BF16 (145 GB) does not fit in two H100s' usable 144 GB
    assert roofline.serve_tokens_per_s(72.7, 2, 327680, 2000, 300, 2, 80, 3.35, H100_BF16) == 0.0
    # nor when one request's cache does not fit beside them
    assert roofline.serve_tokens_per_s(72.7, 1, 327680, 1e6, 300, 2, 80, 3.35, H100_BF16) == 0.0


def test_ttft_is_the_back_of_the_envelope_prefill_plus_causal_attention():
    # Back-of-the-Envelope §5: Qwen2.5-72B (80 layers, width 8192), 2,000 tokens, two H100s at 989 TFLOP/s, 50%: 0.29 s
    envelope = serving.prefill_seconds(72.7, 2000, 2, 989)
    ttft = roofline.ttft_seconds(72.7, "fp8", 2000, 80, 8192, 2, 989, 3.35)
    attention = 2 * 80 * 8192 * 2000**2 / (2 * 989e12 * 0.5)
    assert envelope == pytest.approx(0.294, abs=0.001)
    assert ttft == pytest.approx(envelope + attention, rel=1e-12)


def test_ttft_ceiling_for_llama2_7b_on_a100_is_below_the_measurement():
    # TensorRT-LLM performance.md: Llama-2-7B, 2,048 tokens, batch 1, one A100 in FP16: first token in 133 ms.
    # At 100% of 312 TFLOP/s the arithmetic takes 92 ms, so the measurement implies about 69% utilisation.
    ceiling = roofline.ttft_seconds(6.74, 2, 2048, 32, 4096, 1, 312, 2.039, 1, 1)
    assert ceiling == pytest.approx(0.0920, abs=0.0005)
    assert ceiling / 0.133 == pytest.approx(0.69, abs=0.01)


def test_ttft_of_a_one_token_prompt_is_one_read_of_the_weights():
    t = roofline.ttft_seconds(70, 2, 1, 80, 8192, 1, 989.4, 4.8)
    assert t == pytest.approx(140e9 / 4.8e12, rel=1e-12)


def test_ttft_tensor_parallel_exchange():
    # two all-reduces per layer of P x d 16-bit activations, each sending 2(n-1)/n of the data (ring)
    without = roofline.ttft_seconds(72.7, 1, 2000, 80, 8192, 4, 1978.9, 3.35, 0.5, 1, 0)
    with_link = roofline.ttft_seconds(72.7, 1, 2000, 80, 8192, 4, 1978.9, 3.35, 0.5, 1, 450)
    sent = 2 * 80 * 2 * (3 / 4) * 2000 * 8192 * 2
    assert with_link - without == pytest.approx(sent / 450e9, rel=1e-12)
    # one GPU exchanges nothing whatever the link
    assert roofline.ttft_seconds(6.74, 2, 2048, 32, 4096, 1, 312, 2.039, 0.5, 1, 450) == roofline.ttft_seconds(
        6.74, 2, 2048, 32, 4096, 1, 312, 2.039, 0.5, 1, 0
    )


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: roofline.serve_tokens_per_s(8, 1, 65536, 128, 128, 1, 80, 3.35, 989, -1),
            r"concurrency must be a whole number from 0",
        ),
        (
            lambda: roofline.decode_step_seconds(8, 1, 0, 65536, 128, 1, 3.35, 989),
            r"batch must be a whole number from 1",
        ),
        (
            lambda: roofline.ttft_seconds(8, 1, 128, 32, 4096, 1, 989, 3.35, 1.5),
            r"compute_eff must be a fraction above 0 and at most 1",
        ),
        (
            lambda: roofline.ttft_seconds(8, 1, 128, 32, 4096, 1, 989, 3.35, 0.5, 1, -450),
            r"link_gb_s must be a number from 0",
        ),
    ],
)
def test_bad_arguments_are_refused_with_their_name(call, message):
    with pytest.raises(OutOfRangeError, match=message):
        call()


def test_serve_toks_with_calibrated_efficiencies_for_tensorrt_llm_llama31_8b():
    # the figures the SERVE_TOKS docstring quotes; TensorRT-LLM perf-overview.md measured 28,312 and 15,220 tokens/s
    from xlsxplan.calibration import efficiency

    e_bw, e_c = efficiency("decode_bandwidth", "H100", "fp8"), efficiency("prefill", "H100", "fp8")
    short = roofline.serve_tokens_per_s(N, "fp8", KV_FP8, 128, 128, 1, 80, H100_BW, H100_FP8, 0, e_bw, e_c)
    long = roofline.serve_tokens_per_s(N, "fp8", KV_FP8, 1000, 1000, 1, 80, H100_BW, H100_FP8, 0, e_bw, e_c)
    # the docstring's figures are the function's at the shipped efficiencies: a refit must restate them
    doc = " ".join((roofline.serve_tokens_per_s.__doc__ or "").split())
    assert f"this gives {round(short):,} and {round(long):,}" in doc
    assert 0.8 < short / 28312 < 0.95 and 0.75 < long / 15220 < 0.85  # and within a fifth or so of the measurement
    assert 0.8 < short / 28312 < 0.9 and 0.8 < long / 15220 < 0.85


# --- mixture of experts: memory holds every expert, a token computes with its active parameters, a step
# reads the experts its batch is routed to (Mixtral of Experts, arXiv:2401.04088, section 2; MOE_PARAMS_READ_B)


def test_a_dense_model_is_unchanged_by_the_moe_arguments():
    args = (8.03, "fp8", 65_536, 1000, 1000, 1, 80, 3.35, 1978.9, 0, 0.539, 0.407)
    assert (
        serve_tokens_per_s(*args)
        == serve_tokens_per_s(*args, 0.9, 0, 0, 0)
        == serve_tokens_per_s(*args, 0.9, 8.03, 0, 0)
    )


def test_mixtral_decode_reads_the_experts_its_batch_touches():
    from xlsxplan.core.architecture import moe_params_read_b

    kv = 2 * 32 * 8 * 128 * 2  # Mixtral-8x7B: 32 layers, 8 KV heads of 128, BF16 cache
    for batch in (1, 4, 32):
        read = moe_params_read_b(46.7, 12.9, 8, 2, batch)
        got = serve_tokens_per_s(46.7, 2, kv, 100, 1000, 2, 80, 3.35, 989.4, batch, 0.539, 0.5, 0.9, 12.9, 8, 2)
        step = decode_step_seconds(read, 2, batch, kv, 600, 2, 3.35, 989.4, 0.539, 0.5, 12.9)
        prefill = 2 * 12.9e9 * 100 / (2 * 989.4e12 * 0.5)  # prefill computes with the active parameters
        assert got == pytest.approx(1000 / (1000 * step / batch + prefill), rel=1e-12), batch
    # at batch 1 a step reads 12.9B, not 46.7B: 3.6 times faster than the model taken as dense
    moe = serve_tokens_per_s(46.7, 2, kv, 100, 1000, 2, 80, 3.35, 989.4, 1, 0.539, 0.5, 0.9, 12.9, 8, 2)
    dense = serve_tokens_per_s(46.7, 2, kv, 100, 1000, 2, 80, 3.35, 989.4, 1, 0.539, 0.5)
    assert moe / dense == pytest.approx(3.6, abs=0.1)


def test_decode_step_computes_with_the_active_parameters():
    # compute-bound: 2 x active x batch FLOPs, while the memory term reads params_b
    t = decode_step_seconds(235, 1, 4096, 0, 0, 8, 4.8, 1978.9, 1, 1, 22)
    assert t == pytest.approx(max(235e9 / (8 * 4.8e12), 2 * 22e9 * 4096 / (8 * 1978.9e12)))
    with pytest.raises(OutOfRangeError, match=r"^active_params_b cannot exceed params_b"):
        decode_step_seconds(10, 1, 1, 0, 0, 1, 1, 1, 1, 1, 20)


def test_moe_arguments_come_together():
    args = (46.7, 2, 131_072, 100, 1000, 2, 80, 3.35, 989.4, 0, 0.539, 0.5, 0.9)
    with pytest.raises(OutOfRangeError, match=r"^experts and experts_per_token must be given \(above 0\) with "):
        serve_tokens_per_s(*args, 12.9)
    with pytest.raises(OutOfRangeError, match=r"^experts_per_token must be at most experts \(8\), got 9$"):
        serve_tokens_per_s(*args, 12.9, 8, 9)
    with pytest.raises(OutOfRangeError, match=r"^active_params_b cannot exceed params_b$"):
        serve_tokens_per_s(*args, 50, 8, 2)
    with pytest.raises(OutOfRangeError, match=r"^active_params_b must be given \(above 0\) with experts"):
        serve_tokens_per_s(*args, 0, 8, 2)
