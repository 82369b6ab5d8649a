"""The models of 2025-26 from their verbatim config.json: parameter counts against published figures, the layer kinds
each config spells, and the KV cache and fixed state per sequence against what vLLM and SGLang allocate."""

from __future__ import annotations

import json

import pytest

import xlsxplan as x
from tests.helpers import DATA
from xlsxplan.catalog import ModelPreset
from xlsxplan.catalog.hfconfig import figures_from_config, read_config
from xlsxplan.catalog.models import count_params, model_kv_bytes_per_token, model_kv_gb
from xlsxplan.cli import main
from xlsxplan.errors import ArgumentError, OutOfRangeError


def figures(name: str) -> dict:
    return figures_from_config(read_config(DATA / name), name)


def shape(name: str) -> ModelPreset:
    return ModelPreset.model_validate({"id": name, "source": "test", **figures(name)})


# --- parameter counts against the published figures -----------------------------------------------------------------
# (config, published total, published active or None, tolerance, citation). The tolerance is 1% unless the published
# figure is rounded more coarsely than that (Kimi K2's "1T" and "32B"), or counts what the config does not describe
# (Llama 4's vision encoder); each says so.
PUBLISHED = [
    (
        "gpt-oss-120b.json",
        116.8e9,
        None,
        0.01,
        "OpenAI 2025, 'gpt-oss-120b & gpt-oss-20b Model Card', arXiv:2508.10925, section 2.1: 116.8B total (5.1B active)",
    ),
    ("gpt-oss-20b.json", 20.9e9, None, 0.01, "same model card: 20.9B total parameters (3.6B active)"),
    ("qwen3-8b.json", 8.2e9, None, 0.01, "Qwen/Qwen3-8B model card: Number of Parameters 8.2B"),
    ("qwen3-32b.json", 32.8e9, None, 0.01, "Qwen/Qwen3-32B model card: Number of Parameters 32.8B"),
    ("qwen3-235b-a22b.json", 235e9, 22e9, 0.01, "Qwen/Qwen3-235B-A22B model card: 235B in total and 22B activated"),
    (
        "qwen3-next-80b-a3b-instruct.json",
        80e9,
        None,
        0.01,
        "Qwen/Qwen3-Next-80B-A3B-Instruct model card: 80B in total (its '3B activated' is the size class A3B)",
    ),
    (
        "nemotron-h-56b-base-8k.json",
        56e9,
        None,
        0.01,
        "NVIDIA 2025, 'Nemotron-H', arXiv:2504.03624: Nemotron-H-56B-Base, 54 Mamba-2, 54 MLP and 10 attention layers",
    ),
    (
        "phi-4.json",
        14_659_507_200,
        None,
        0.001,
        "microsoft/phi-4: 14.7B on Hugging Face; llama.cpp's GGUF of it, general.parameter_count 14,659,507,200",
    ),
    (
        "deepseek-v3.1-nvfp4.json",
        671e9,
        37e9,
        0.02,
        "DeepSeek-V3 Technical Report, arXiv:2412.19437: 671B total, 37B activated (DeepSeek-V3.1 keeps the shape)",
    ),
    (
        "mixtral-8x22b-v0.1.json",
        141e9,
        39e9,
        0.01,
        "Mistral AI 2024, Mixtral 8x22B announcement: 39B active parameters out of 141B",
    ),
    ("llama-3.1-405b.json", 405_853_388_800, None, 0.001, "meta-llama/Llama-3.1-405B safetensors total"),
    (
        "llama-4-maverick-17b-128e-instruct.trimmed.json",
        400e9,
        17e9,
        0.012,
        "meta-llama/llama-models models/llama4/MODEL_CARD.md: Maverick 17B activated, 400B total (rounded: 17.18B)",
    ),
    (
        "llama-4-scout-17b-16e-instruct.trimmed.json",
        109e9,
        17e9,
        0.012,
        "same card: Scout 17B activated, 109B total, the vision encoder (not in the text config) included",
    ),
    (
        "kimi-k2-instruct.json",
        1e12,
        32e9,
        0.03,
        "Kimi K2 model card and arXiv:2507.20534: '1 trillion total', '32 billion activated' (rounded: 1.026T, 32.9B)",
    ),
]


@pytest.mark.parametrize("filename, total, active, tolerance, citation", PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_parameter_counts_from_2026_configs_match_published_figures(filename, total, active, tolerance, citation):
    f = figures(filename)
    assert f["params_b"] * 1e9 == pytest.approx(total, rel=tolerance), citation
    if active is not None:
        assert f["active_params_b"] * 1e9 == pytest.approx(active, rel=tolerance), citation


def test_gpt_oss_active_parameters_as_its_card_counts_them():
    # The gpt-oss model card (arXiv:2508.10925) counts active parameters without the token embedding, a lookup with no
    # arithmetic (the unembedding is counted): 5.1B and 3.6B. The count keeps both matrices in active_params_b, as the
    # rest of the catalog does; without the 201,088 x 2,880 embedding it is the card's.
    for name, published in (("gpt-oss-120b.json", 5.1e9), ("gpt-oss-20b.json", 3.6e9)):
        f = figures(name)
        assert f["active_params_b"] * 1e9 - 201_088 * 2_880 == pytest.approx(published, rel=0.01), name


def test_qwen3_next_counts_decompose_as_its_card_says():
    # Qwen3-Next-80B-A3B model card: 80B total, 79B non-embedding. The count: 79.67B, 79.05B without the two
    # 151,936 x 2,048 embedding matrices. Its "3B activated" is the A3B size class: the count gives 3.87B per token with
    # both embeddings, 3.25B without (10 of 512 experts plus the shared one, 12 gated-attention and 36 DeltaNet layers).
    f = figures("qwen3-next-80b-a3b-instruct.json")
    embeddings = 2 * 151_936 * 2_048
    assert (f["params_b"] * 1e9 - embeddings) / 1e9 == pytest.approx(79, rel=0.01)
    assert f["active_params_b"] == pytest.approx(3.875, abs=0.001)
    assert (f["active_params_b"] * 1e9 - embeddings) / 1e9 == pytest.approx(3.25, abs=0.01)


def test_deepseek_v32_is_v3_plus_its_indexer():
    # DeepSeek-V3.2 (config deepseek_v32) is DeepSeek-V3's shape with DeepSeek Sparse Attention's lightning indexer
    # per layer (deepseek-ai/DeepSeek-V3.2-Exp README: V3.2-Exp builds on V3.1-Terminus by introducing DSA; vLLM's
    # Indexer: wq_b q_lora_rank -> 64 x 128, wk hidden -> 128, k_norm, weights_proj hidden -> 64).
    v31, v32 = figures("deepseek-v3.1-nvfp4.json"), figures("deepseek-v3.2.json")
    indexer = 1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64
    assert (v32["params_b"] - v31["params_b"]) * 1e9 == pytest.approx(61 * indexer, abs=2e3)  # 6 decimals of B
    assert (v32["active_params_b"] - v31["active_params_b"]) * 1e9 == pytest.approx(61 * indexer, abs=2e3)
    assert v32["params_b"] == pytest.approx(671, rel=0.002)  # 671B (arXiv:2412.19437) + 0.85B of indexer
    assert (v32["index_heads"], v32["index_head_dim"], v32["mtp_layers"]) == (64, 128, 1)


# --- what each config says, read whatever its model_type ----------------------------------------------------------


def test_gpt_oss_alternating_windows_sinks_biases_and_experts():
    # config: layer_types alternating sliding_attention / full_attention, sliding_window 128, attention_bias true,
    # 128 local experts of width 2880 (4 per token); GptOssForCausalLM has one sink logit per head and expert biases
    f = figures("gpt-oss-120b.json")
    assert (f["sliding_window"], f["sliding_window_layers"], f["layers"]) == (128, 18, 36)
    assert f["attention_sinks"] and f["attention_bias"] and f["mlp_bias"]
    assert (f["experts"], f["experts_per_token"], f["intermediate"]) == (128, 4, 2880)
    assert "moe_intermediate" not in f and "dense_layers" not in f


def test_kimi_k2_is_deepseek_v3s_shape_under_another_model_type():
    kimi, v3 = figures("kimi-k2-instruct.json"), figures("deepseek-v3.json")
    assert read_config(DATA / "kimi-k2-instruct.json")["model_type"] == "kimi_k2"
    same = ("hidden", "layers", "kv_lora_rank", "qk_rope_head_dim", "q_lora_rank", "moe_intermediate", "shared_experts")
    assert {k: kimi[k] for k in same} == {k: v3[k] for k in same}
    assert (kimi["experts"], kimi["heads"], kimi["dense_layers"], kimi["vocab"]) == (384, 64, 1, 163_840)


def test_latent_attention_is_read_under_any_model_type_that_carries_kv_lora_rank():
    config = dict(read_config(DATA / "deepseek-v3.json"), model_type="my_mla_model", architectures=["MyModel"])
    assert figures_from_config(config)["params_b"] == figures("deepseek-v3.json")["params_b"]
    # a known architecture class decides too, whatever the model_type
    config = dict(read_config(DATA / "llama-3.1-8b.json"), model_type="llama_custom")
    assert figures_from_config(config)["params_b"] == figures("llama-3.1-8b.json")["params_b"]
    with pytest.raises(
        ArgumentError,
        match=r"^c\.json: model_type 'gpt2' \(architectures GPT2LMHeadModel\) is not "
        r"supported",
    ):
        figures_from_config({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]}, "c.json")


def test_qwen3_next_hybrid_layout_from_full_attention_interval():
    # Qwen3NextConfig: full attention on every full_attention_interval-th layer (4), Gated DeltaNet on the rest;
    # card: "Hybrid Layout: 12 * (3 * (Gated DeltaNet -> MoE) -> 1 * (Gated Attention -> MoE))"
    f = figures("qwen3-next-80b-a3b-instruct.json")
    assert (f["attention_layers"], f["linear_attention_layers"]) == (12, 36)
    assert (
        f["linear_key_heads"],
        f["linear_value_heads"],
        f["linear_key_head_dim"],
        f["linear_value_head_dim"],
        f["linear_conv_kernel"],
    ) == (16, 32, 128, 128, 4)
    assert f["attention_output_gate"] and (f["experts"], f["shared_experts"], f["moe_intermediate"]) == (512, 1, 512)


def test_layer_types_list_decides_the_layers_and_unknown_kinds_are_refused():
    base = read_config(DATA / "qwen3-next-80b-a3b-instruct.json")
    listed = dict(base, layer_types=["linear_attention", "full_attention"] * 24)  # every other layer full
    f = figures_from_config(listed)
    assert (f["attention_layers"], f["linear_attention_layers"]) == (24, 24)
    with pytest.raises(
        ArgumentError,
        match=r"^c\.json: layer_types holds 'retention_layer', which xlsxplan does not "
        r"count; known: full_attention, sliding_attention",
    ):
        figures_from_config(dict(base, layer_types=["retention_layer"] * 48), "c.json")
    with pytest.raises(ArgumentError, match=r"^c\.json: layer_types must list one kind per layer \(48\)"):
        figures_from_config(dict(base, layer_types=["full_attention"] * 3), "c.json")


def test_nemotron_h_hybrid_pattern():
    # config hybrid_override_pattern: M = Mamba-2, * = attention, - = MLP (squared ReLU: up and down, no gate);
    # Nemotron-H paper (arXiv:2504.03624): 56B has 54 Mamba-2, 54 MLP and 10 self-attention layers
    f = figures("nemotron-h-56b-base-8k.json")
    assert (f["layers"], f["attention_layers"], f["mamba_layers"], f["mlp_layers"]) == (118, 10, 54, 54)
    assert f["gated_mlp"] is False and (f["head_dim"], f["kv_heads"]) == (128, 8)
    assert (f["mamba_heads"], f["mamba_head_dim"], f["mamba_state_size"], f["mamba_groups"]) == (256, 64, 256, 8)
    nano = figures("nemotron-3-nano-30b-a3b-bf16.json")  # E = expert blocks, a shared expert twice as wide
    assert (nano["attention_layers"], nano["mamba_layers"], nano["mlp_layers"]) == (6, 23, 23)
    assert (nano["experts"], nano["experts_per_token"], nano["shared_experts"]) == (128, 6, 2)
    with pytest.raises(ArgumentError, match=r"hybrid_override_pattern must spell one of M\*-E per layer \(118"):
        figures_from_config(dict(read_config(DATA / "nemotron-h-56b-base-8k.json"), hybrid_override_pattern="MX"))


def test_llama4_text_config_interleaved_experts_and_chunked_attention():
    # Llama4TextConfig: moe_layers every interleave_moe_layer_step-th layer; a NoPE global layer every 4th, the rest
    # chunked (attention_chunk_size 8192); experts and the shared expert intermediate_size wide, dense MLPs
    # intermediate_size_mlp; the multimodal config nests it under text_config
    scout, maverick = (
        figures("llama-4-scout-17b-16e-instruct.trimmed.json"),
        figures("llama-4-maverick-17b-128e-instruct.trimmed.json"),
    )
    assert "dense_layers" not in scout and maverick["dense_layers"] == 24
    for f in (scout, maverick):
        assert (f["attention_chunk"], f["chunked_layers"], f["layers"]) == (8192, 36, 48)
        assert (f["moe_intermediate"], f["intermediate"], f["shared_experts"], f["experts_per_token"]) == (
            8192,
            16384,
            1,
            1,
        )
        assert not f.get("tied_embeddings")  # untied: Llama4TextConfig's default


def test_phi4_reads_as_phi3_and_tied_or_untied_embeddings_follow_the_config():
    f = figures("phi-4.json")
    assert (f["kv_heads"], f["head_dim"], f["context"]) == (10, 128, 16_384) and "sliding_window" not in f
    tied = figures_from_config(dict(read_config(DATA / "phi-4.json"), tie_word_embeddings=True))
    assert (f["params_b"] - tied["params_b"]) * 1e9 == pytest.approx(100_352 * 5_120, abs=1e3)  # params_b to 6 decimals


def test_every_2026_config_imports_with_model_add(capsys):
    for name in (
        "gpt-oss-20b.json",
        "kimi-k2-instruct.json",
        "qwen3-next-80b-a3b-instruct.json",
        "nemotron-h-56b-base-8k.json",
        "deepseek-v3.2.json",
        "phi-4.json",
        "llama-4-scout-17b-16e-instruct.trimmed.json",
        "nemotron-3-nano-30b-a3b-bf16.json",
    ):
        preset = "Imported-" + name.split(".json")[0]
        assert main(["model", "add", str(DATA / name), "--name", preset]) == 0, capsys.readouterr().err
        assert x.model_spec(preset, "params_b") == pytest.approx(figures(name)["params_b"])
    out = capsys.readouterr().out
    assert "Imported-nemotron-h-56b-base-8k" in out
    assert x.model_spec("Imported-qwen3-next-80b-a3b-instruct", "linear_attention_layers") == 36


def test_nemotron_h_config_with_infinity_reads():
    # NVIDIA's file has "time_step_limit": [0.0, Infinity] (non-strict JSON); Python's json module reads it
    assert json.loads((DATA / "nemotron-h-56b-base-8k.json").read_text())["time_step_limit"][1] == float("inf")


# --- KV cache and state per sequence, as the engines allocate them -------------------------------------------------
GIB = 2**30


def test_gpt_oss_kv_cache_full_and_sliding_layers():
    # vLLM vllm/v1/kv_cache_interface.py: AttentionSpec page = 2 * block_size * num_kv_heads * head_size * dtype;
    # SlidingWindowSpec keeps the window (sliding_window - 1 tokens plus those scheduled). gpt-oss-120b: 8 KV heads
    # of 64 in BF16 is 2,048 bytes a token a layer; 18 full layers grow with the context, 18 stop at 128 tokens.
    per_layer = 2 * 8 * 64 * 2
    assert model_kv_bytes_per_token("gpt-oss-120b") == 36 * per_layer == 73_728
    at = 131_072
    assert model_kv_gb("gpt-oss-120b", at) * 1e9 == 18 * per_layer * at + 18 * per_layer * 128
    assert model_kv_gb("gpt-oss-20b", at) * 1e9 == 12 * per_layer * at + 12 * per_layer * 128
    # TP 8: one KV head a GPU (vLLM get_num_kv_heads: max(1, 8 // 8)), the same bytes over the group
    assert model_kv_bytes_per_token("gpt-oss-120b", 0, "bf16", 8) == 73_728
    assert x.model_state_bytes("gpt-oss-120b") == 0


def test_kimi_k2_latent_cache_as_sglang_counts_it():
    # SGLang model_runner_kv_cache_mixin.py: MLA cell_size = (kv_lora_rank + qk_rope_head_dim) * num_layers * kv_size;
    # vLLM caches one latent "head" of 576 (get_num_kv_heads: 1 under MLA): 61 x 576 x 2 bytes
    assert model_kv_bytes_per_token("Kimi-K2") == (512 + 64) * 61 * 2 == 70_272
    assert model_kv_bytes_per_token("Kimi-K2", 0, "fp8", 8) / 8 == 35_136  # replicated on every TP GPU


def test_qwen3_next_state_and_kv_as_vllm_allocates_them():
    # vLLM mamba_utils.py gated_delta_net_state_shape: conv (conv_kernel - 1, 2 * 16 * 128 + 32 * 128) and temporal
    # (32, 128, 128) per sequence and layer; 36 Gated DeltaNet layers. BF16 (vLLM's default, the model's dtype): 36 x
    # (3 x 8,192 x 2 + 32 x 128 x 128 x 2); an FP32 state (SGLang's default --mamba-ssm-dtype) doubles the temporal part
    assert x.model_state_bytes("Qwen3-Next") == 36 * (3 * 8192 * 2 + 32 * 128 * 128 * 2) == 39_518_208
    assert x.model_state_bytes("Qwen3-Next", "fp32") == 36 * (3 * 8192 * 2 + 32 * 128 * 128 * 4) == 77_266_944
    assert x.linear_attention_state_bytes(36, 16, 32, 128, 128, 4) == 39_518_208
    # 12 full-attention layers of 2 KV heads of 256: 24,576 bytes a token; at 32,768 tokens the state is 4.7%
    assert model_kv_bytes_per_token("Qwen3-Next") == 12 * 2 * 2 * 256 * 2 == 24_576
    seq = x.model_sequence_bytes("Qwen3-Next", 32_768)
    assert seq == 24_576 * 32_768 + 39_518_208
    assert model_kv_gb("Qwen3-Next", 32_768, 10) * 1e9 == pytest.approx(10 * seq)
    assert model_kv_bytes_per_token("Qwen3-Next", 32_768) == pytest.approx(seq / 32_768)
    # TP 2 splits the heads and the state (vLLM divide(num_v_heads, tp)): the group holds the same
    assert x.model_state_bytes("Qwen3-Next", 2, 2, 2) == 39_518_208


def test_nemotron_h_state_as_vllm_allocates_it():
    # vLLM mamba_utils.py mamba2_state_shape with intermediate = mamba_num_heads * mamba_head_dim (NemotronH):
    # conv (3, 16,384 + 2 x 8 x 256), temporal (256, 64, 256), per sequence and layer, 54 Mamba-2 layers, BF16
    per_layer = 3 * (256 * 64 + 2 * 8 * 256) * 2 + 256 * 64 * 256 * 2
    assert x.model_state_bytes("Nemotron-H-56B") == 54 * per_layer == 459_620_352
    assert x.mamba_state_bytes(54, 256, 64, 256, 8, 4) == 459_620_352
    assert model_kv_bytes_per_token("Nemotron-H-56B") == 10 * 2 * 8 * 128 * 2 == 40_960
    # a 32k sequence: 1.34 GB of KV in its 10 attention layers and 0.46 GB of state in its 54 Mamba layers
    assert x.model_sequence_bytes("Nemotron-H-56B", 32_768) == 40_960 * 32_768 + 459_620_352
    # groups a TP degree does not divide are replicated (extra_groups_for_head_shards): 8 groups on 16 GPUs hold 16
    assert (
        x.mamba_state_bytes(1, 256, 64, 256, 8, 4, 2, 2, 16) == 3 * (256 * 64 + 2 * 16 * 256) * 2 + 256 * 64 * 256 * 2
    )


def test_phi4_and_llama4_kv_caches():
    # Phi-4: 40 layers of 10 KV heads of 128; TP 2 holds 5 heads a GPU (vLLM: 10 // 2), TP 20 one each (replicated)
    assert model_kv_bytes_per_token("Phi-4") == 2 * 40 * 10 * 128 * 2 == 204_800
    assert model_kv_bytes_per_token("Phi-4", 0, 2, 2) == 204_800
    assert model_kv_bytes_per_token("Phi-4", 0, 2, 20) == 2 * 204_800
    # Llama 4: 48 layers of 8 KV heads of 128 (196,608 bytes a token), 36 chunked layers keep at most one 8,192-token
    # chunk (vLLM ChunkedLocalAttentionSpec); at 1M tokens the cache is a quarter of 48 full layers' plus the chunks
    assert model_kv_bytes_per_token("Llama-4-Scout") == 196_608
    per_layer = 2 * 8 * 128 * 2
    assert model_kv_gb("Llama-4-Scout", 1_048_576) * 1e9 == 12 * per_layer * 1_048_576 + 36 * per_layer * 8_192
    assert model_kv_gb("Llama-4-Scout", 1_048_576, 1, 2, 1, 0) * 1e9 == 48 * per_layer * 1_048_576  # no chunking


def test_deepseek_v32_cache_with_its_indexer_reproduces_sglangs_log():
    # sgl-project/sglang PR #11309 (DeepSeek-V3.2-Exp, 8 x B200, dp-attention): "KV Cache is allocated. #tokens:
    # 975424, KV size: 43.67 GB" (SGLang's GB are GiB). SGLang and vLLM store the FP8 latent as FlashMLA's sparse
    # kernels read it (vLLM FlashMLASparseBackend: 'custom storage format is 656 bytes': 512 FP8, 4 FP32 scales, 64
    # BF16 rotary values) and the indexer key as 128 FP8 values and one FP32 scale (DeepseekV32IndexerCache: 132).
    per_token = model_kv_bytes_per_token("DeepSeek-V3.2", 0, "fp8")
    assert per_token == 61 * (656 + 132) == 48_068
    assert 43.67 * GIB / 975_424 == pytest.approx(per_token, rel=0.001)
    # before the PR SGLang sized its pool without the indexer: "#tokens: 1462784, KV size: 54.52 GB", and "KV size
    # including index is actually 65.49 GB"
    assert 54.52 * GIB / 1_462_784 == pytest.approx(61 * 656, rel=0.001)
    assert 1_462_784 * per_token / GIB == pytest.approx(65.49, rel=0.001)
    # in BF16 the latent is 576 values of 2 bytes and the indexer stays FP8
    assert model_kv_bytes_per_token("DeepSeek-V3.2") == 61 * (576 * 2 + 132)


def test_state_functions_refuse_and_default_sensibly():
    assert x.model_state_bytes("Llama-3.1-8B") == 0  # attention only
    assert x.model_sequence_bytes("Llama-3.1-8B", 1000) == 131_072 * 1000
    with pytest.raises(OutOfRangeError, match=r"^layers must be a whole number from 1"):
        x.mamba_state_bytes(0, 256, 64, 256)


def test_presets_without_a_verbatim_config_carry_their_published_shape():
    # Gemma 3 27B: Gemma 3 Technical Report (arXiv:2503.19786), 5 local layers of 1,024 tokens to 1 global; 62 layers
    # (Google's Gemma3ForConditionalGeneration listing): 52 local, 10 global
    assert (x.model_spec("Gemma-3-27B", "sliding_window"), x.model_spec("Gemma-3-27B", "sliding_window_layers")) == (
        1024,
        52,
    )
    total, _ = count_params(
        ModelPreset.model_validate(
            {
                "id": "g",
                "source": "s",
                **{
                    k: x.model_spec("Gemma-3-27B", k)
                    for k in (
                        "params_b",
                        "layers",
                        "hidden",
                        "heads",
                        "kv_heads",
                        "head_dim",
                        "vocab",
                        "context",
                        "intermediate",
                    )
                },
                "tied_embeddings": True,
            }
        )
    )
    assert total / 1e9 == pytest.approx(27, rel=0.01)
    assert "no verbatim config.json" in x.model_source("Gemma-3-27B", "layers")
    assert "no verbatim copy" in x.model_source("Mistral-Small-3", "layers")


def test_nemotron_h_block_list_and_latent_experts():
    # Newer Nemotron-H configs list their blocks by name (layers_block_type: mamba, attention, mlp, moe) instead of
    # the pattern string: the same count. Latent experts (moe_latent_size, Nemotron 3 Super) are refused by name
    # rather than counted wrongly.
    nano = read_config(DATA / "nemotron-3-nano-30b-a3b-bf16.json")
    names = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
    listed = {k: v for k, v in nano.items() if k != "hybrid_override_pattern"}
    listed["layers_block_type"] = [names[ch] for ch in nano["hybrid_override_pattern"]]
    assert figures_from_config(listed) == figures("nemotron-3-nano-30b-a3b-bf16.json")
    with pytest.raises(ArgumentError, match=r"^c\.json: moe_latent_size 1024: experts working in a latent space"):
        figures_from_config(dict(nano, moe_latent_size=1024), "c.json")
    with pytest.raises(ArgumentError, match=r"layers_block_type holds 'retnet'"):
        figures_from_config(dict(listed, layers_block_type=["retnet"] * 52), "c.json")


def test_a_moe_config_without_a_dense_mlp_needs_no_intermediate_size():
    config = {k: v for k, v in read_config(DATA / "qwen3-235b-a22b.json").items() if k != "intermediate_size"}
    f = figures_from_config(config)
    assert "intermediate" not in f and f["params_b"] == figures("qwen3-235b-a22b.json")["params_b"]
    dense = {k: v for k, v in read_config(DATA / "llama-3.1-8b.json").items() if k != "intermediate_size"}
    with pytest.raises(
        ArgumentError, match=r"^c\.json: intermediate_size must be a positive whole number, got missing"
    ):
        figures_from_config(dense, "c.json")
