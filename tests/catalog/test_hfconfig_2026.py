"""The open models of 2025-26 added to the catalog: each config.json copy read, its parameter count against the
published figure, and each shipped preset against the copy it cites (tests/data/README.md names every copy)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

import xlsxplan as x
from tests.helpers import DATA
from xlsxplan.catalog import ModelPreset, load_catalog
from xlsxplan.catalog.hfconfig import figures_from_config, read_config
from xlsxplan.catalog.models import count_params, model_kv_bytes_per_token
from xlsxplan.cli import main
from xlsxplan.errors import ArgumentError


def figures(name: str) -> dict:
    return figures_from_config(read_config(DATA / name), name)


def embeddings_b(f: dict) -> float:
    """Token embedding and output head, in billions: what the cards that count 'active' without them leave out."""
    return f["vocab"] * f["hidden"] * (1 if f.get("tied_embeddings") else 2) / 1e9


# (config, published total, published active or None, active counted without the embeddings, tolerance, citation).
# 1% unless the publisher rounds more coarsely ("1T", "32B", "10B") or counts what the config does not describe (a
# vision encoder); each says so.
PUBLISHED = [
    (
        "deepseek-v3.json",
        671e9,
        37e9,
        False,
        0.02,
        "DeepSeek-R1, arXiv:2501.12948 and its card: 671B total, 37B activated; AIC's R1 config is this file, byte "
        "for byte",
    ),
    (
        "qwen3-235b-a22b-instruct-2507.json",
        235e9,
        22e9,
        False,
        0.01,
        "Qwen/Qwen3-235B-A22B-Instruct-2507 model card: 235B in total and 22B activated",
    ),
    (
        "qwen3-coder-480b-a35b-instruct.json",
        480e9,
        35e9,
        False,
        0.015,
        "Qwen/Qwen3-Coder-480B-A35B-Instruct model card: 480B in total and 35B activated (rounded: 35.47B)",
    ),
    (
        "glm-4.7-fp8.trimmed.json",
        355e9,
        32e9,
        True,
        0.01,
        "GLM-4.5 (transformers glm4_moe.md, arXiv:2508.06471): 355B total, 32B active; GLM-4.6 and 4.7 keep the shape",
    ),
    (
        "minimax-m2.5.msmodelslim.json",
        230e9,
        10e9,
        True,
        0.025,
        "NVIDIA NIM card minimaxai/minimax-m2: Total Parameters 230B, Active Parameters 10B (rounded: 9.80B)",
    ),
    (
        "minimax-m1.json",
        456e9,
        45.9e9,
        True,
        0.01,
        "MiniMax-M1, arXiv:2506.13585 and its README: 456 billion parameters in total, 45.9 billion activated per token",
    ),
    (
        "qwen3.5-397b-a17b.json",
        397e9,
        17e9,
        False,
        0.025,
        "Qwen3.5-397B-A17B (SGLang cookbook after Qwen's card): 397B total, 17B activated (rounded: the A17B class, 17.35B)",
    ),
    (
        "qwen3.5-122b-a10b.json",
        122e9,
        10e9,
        False,
        0.025,
        "Qwen3.5-122B-A10B (NVIDIA Megatron Bridge): 122B total, 10B activated (rounded: the A10B class, 9.77B)",
    ),
    (
        "qwen3.5-35b-a3b.json",
        35e9,
        None,
        False,
        0.01,
        "Qwen3.5-35B-A3B (NVIDIA Megatron Bridge): 35B total with the vision encoder; its '3B activated' is the A3B "
        "class (the shape uses 3.45B, 2.44B without the embeddings)",
    ),
    (
        "qwen3.5-27b.json",
        27e9,
        None,
        False,
        0.01,
        "Qwen3.5-27B (NVIDIA Megatron Bridge): a 27B parameter vision-language model",
    ),
    (
        "glm-5.json",
        744e9,
        40e9,
        True,
        0.01,
        "GLM-5 (SGLang cookbook after Z.ai's card): 744B parameters, 40B active; GLM-5.1 keeps the shape",
    ),
    (
        "kimi-k2-thinking.trimmed.json",
        1e12,
        32e9,
        False,
        0.03,
        "moonshotai/Kimi-K2-Thinking card: 1T total, 32B activated (rounded: 1.026T, 32.9B)",
    ),
    (
        "kimi-k2.5.trimmed.json",
        1.04e12,
        32.6e9,
        False,
        0.015,
        "Kimi K2.5, arXiv:2602.02276 (glennklockwood.com summary): 1.04T parameters, 32.6B active",
    ),
    (
        "kimi-k2.6-nvfp4.json",
        1e12,
        32e9,
        False,
        0.03,
        "moonshotai/Kimi-K2.6 card: 1T total, 32B activated (rounded: 1.026T, 32.9B)",
    ),
    (
        "devstral-small-2-24b-instruct-2512.json",
        24e9,
        None,
        False,
        0.02,
        "Mistral AI, Devstral Small 2: 24B, the Pixtral vision encoder (about 0.4B) included; the text model 23.57B",
    ),
    (
        "devstral-2-123b-instruct-2512.json",
        123e9,
        None,
        False,
        0.02,
        "Mistral AI, Devstral 2: a dense 123B model; the config's shape counts 125.0B (the preset's note says so)",
    ),
]


@pytest.mark.parametrize(
    "filename, total, active, without_embeddings, tolerance, citation", PUBLISHED, ids=[p[0] for p in PUBLISHED]
)
def test_parameter_counts_from_the_new_configs_match_published_figures(
    filename, total, active, without_embeddings, tolerance, citation
):
    f = figures(filename)
    assert f["params_b"] * 1e9 == pytest.approx(total, rel=tolerance), citation
    if active is not None:
        counted = f["active_params_b"] - (embeddings_b(f) if without_embeddings else 0)
        assert counted * 1e9 == pytest.approx(active, rel=tolerance), citation


# preset -> (config copy, the figures the preset takes from elsewhere: a card's count or context)
PRESETS = {
    "DeepSeek-R1": ("deepseek-v3.json", {"params_b", "active_params_b", "context"}),
    "DeepSeek-R1-0528": ("deepseek-v3.json", {"params_b", "active_params_b", "context"}),
    "Qwen3-235B-A22B-2507": ("qwen3-235b-a22b-instruct-2507.json", {"params_b", "active_params_b"}),
    "Qwen3-Coder-480B-A35B": ("qwen3-coder-480b-a35b-instruct.json", {"params_b", "active_params_b"}),
    "GLM-4.5": ("glm-4.7-fp8.trimmed.json", {"params_b", "active_params_b", "context", "mtp_layers"}),
    "GLM-4.6": ("glm-4.7-fp8.trimmed.json", {"params_b", "active_params_b", "mtp_layers"}),
    "MiniMax-M2": ("minimax-m2.5.msmodelslim.json", {"params_b", "active_params_b"}),
    "MiniMax-M1": ("minimax-m1.json", {"params_b", "active_params_b", "context"}),
    "Qwen3.5-397B-A17B": ("qwen3.5-397b-a17b.json", {"params_b"}),
    "GLM-5": ("glm-5.json", {"params_b", "active_params_b"}),
    "Qwen3.5-122B-A10B": ("qwen3.5-122b-a10b.json", {"params_b"}),
    "Qwen3.5-35B-A3B": ("qwen3.5-35b-a3b.json", {"params_b"}),
    "Qwen3.5-27B": ("qwen3.5-27b.json", {"params_b"}),
    "Kimi-K2-Thinking": ("kimi-k2-thinking.trimmed.json", set()),
    "Kimi-K2.5": ("kimi-k2.5.trimmed.json", set()),
    "Kimi-K2.6": ("kimi-k2.6-nvfp4.json", set()),
    "Devstral-Small-2": ("devstral-small-2-24b-instruct-2512.json", {"params_b", "context"}),
    "Devstral-2": ("devstral-2-123b-instruct-2512.json", set()),
    "Gemma-3-12B": ("gemma-3-12b-it.resaved.json", {"params_b"}),
}


@pytest.mark.parametrize("name", list(PRESETS))
def test_each_new_preset_is_its_config_copy(name):
    filename, elsewhere = PRESETS[name]
    preset = load_catalog().models.get(name)
    f = figures(filename)
    for field in ModelPreset.FIGURES:
        if field in elsewhere:
            continue
        got = preset.figure(field) if field != "active_params_b" else preset.active_params_b
        want = f.get(field)
        if field in ("params_b", "active_params_b") and want is not None:
            assert got == pytest.approx(want, abs=0.01), (name, field)  # the catalog keeps two decimals
        else:
            assert got == want, (name, field)
    for field in elsewhere:  # a figure from elsewhere has its own citation
        assert preset.source_key(field) != preset.source, (name, field)


def test_deepseek_r1s_config_is_deepseek_v3s_byte_for_byte_and_the_presets_agree():
    # AIconfigurator's deepseek-ai--DeepSeek-R1_config.json @095f58a5 and tt-metal's DeepSeek-V3 reference config.json
    # are the same 1,660 bytes (tests/data/README.md); R1 is trained from DeepSeek-V3-Base (arXiv:2501.12948)
    v3, r1 = load_catalog().models.get("DeepSeek-V3"), load_catalog().models.get("deepseek-ai/DeepSeek-R1")
    r0528 = load_catalog().models.get("deepseek-ai/DeepSeek-R1-0528")
    assert (r1.id, r0528.id) == ("DeepSeek-R1", "DeepSeek-R1-0528")
    shape = [f for f in ModelPreset.FIGURES if f != "mtp_layers"]
    assert [v3.figure(f) for f in shape] == [r1.figure(f) for f in shape] == [r0528.figure(f) for f in shape]
    assert r1.mtp_layers == r0528.mtp_layers == figures("deepseek-v3.json")["mtp_layers"] == 1


def test_glm_45_air_from_its_published_shape_counts_its_published_figures():
    # No GLM-4.5-Air config.json copy was found; its preset is Megatron-Bridge's shape (glm45.md). The count from that
    # shape: 106.85B in all, 12.18B active without the embeddings, against Z.ai's 106B and 12B.
    air = load_catalog().models.get("GLM-4.5-Air")
    total, active = count_params(air)
    assert total == pytest.approx(106e9, rel=0.01)
    assert active - 2 * 151_552 * 4_096 == pytest.approx(12e9, rel=0.02)


def test_glm4_moe_is_read_with_its_first_dense_layers_and_shared_expert():
    f = figures("glm-4.7-fp8.trimmed.json")
    assert (f["dense_layers"], f["experts"], f["shared_experts"], f["moe_intermediate"]) == (3, 160, 1, 1536)
    assert (f["heads"], f["kv_heads"], f["head_dim"], f["context"]) == (96, 8, 128, 202_752)


def test_minimax_m2_full_attention_experts_and_mtp_modules():
    # MiniMax-M2.5's config: attn_type_list 1 on all 62 layers (softmax attention), 256 experts as wide as
    # intermediate_size (no moe_intermediate_size), no shared expert (shared_intermediate_size 0), use_mtp with
    # num_mtp_modules 3
    m25 = figures("minimax-m2.5.msmodelslim.json")
    assert (m25["experts"], m25["experts_per_token"], m25["intermediate"], m25["mtp_layers"]) == (256, 8, 1536, 3)
    assert "shared_experts" not in m25 and "moe_intermediate" not in m25 and "attention_layers" not in m25
    no_mtp = dict(read_config(DATA / "minimax-m2.5.msmodelslim.json"), use_mtp=False)
    assert "mtp_layers" not in figures_from_config(no_mtp)
    no_list = {k: v for k, v in read_config(DATA / "minimax-m2.5.msmodelslim.json").items() if k != "attn_type_list"}
    assert figures_from_config(no_list) == m25  # a list of 1s reads as no list: softmax attention throughout


def test_minimax_m1_lightning_layers_from_attn_type_list():
    # MiniMax-M1's config (github.com/MiniMax-AI/MiniMax-M1 @4917af1b): attn_type_list 0 (lightning attention) on seven
    # layers in eight, 1 (softmax attention) on every eighth; MiniMaxM1LightningAttention has num_attention_heads heads
    # of head_dim for q, k and v; 32 experts as wide as intermediate_size, 2 per token, no shared expert
    raw = read_config(DATA / "minimax-m1.json")
    assert raw["attn_type_list"] == ([0] * 7 + [1]) * 10
    f = figures("minimax-m1.json")
    assert (f["attention_layers"], f["linear_attention_layers"], f["lightning_attention"]) == (10, 70, True)
    linear = ("linear_key_heads", "linear_value_heads", "linear_key_head_dim", "linear_value_head_dim")
    assert tuple(f[k] for k in linear) == (64, 64, 128, 128)
    assert "linear_conv_kernel" not in f and "shared_experts" not in f and "moe_intermediate" not in f
    assert (f["experts"], f["experts_per_token"], f["intermediate"], f["kv_heads"]) == (32, 2, 9216, 8)
    # the same layers read as Gated DeltaNet would count in_proj_ba, a convolution and a one-head-wide norm: the
    # lightning layer's own weights are what the published 456B needs (within 0.02%)
    assert f["params_b"] * 1e9 == pytest.approx(456e9, rel=2e-4)
    as_deltanet = ModelPreset.model_validate(
        {
            "id": "x",
            "source": "x",
            **{k: v for k, v in f.items() if k != "lightning_attention"},
            "linear_conv_kernel": 4,
        }
    )
    assert count_params(as_deltanet)[0] - f["params_b"] * 1e9 > 70 * 6144 * 2 * 64


def test_minimax_m1_state_and_kv_as_vllm_allocates_them():
    # vLLM mamba_utils.py linear_attention_state_shape: (num_heads // tp, head_dim, head_dim) per sequence and lightning
    # layer, in the model's dtype (linear_attention_state_dtype); no convolution state. 70 layers of 64 x 128 x 128 in
    # BF16; 10 softmax layers of 8 KV heads of 128 cache 40,960 bytes a token: the state is the cache of 3,584 tokens
    assert x.model_state_bytes("MiniMax-M1") == 70 * 64 * 128 * 128 * 2 == 146_800_640
    assert x.linear_attention_state_bytes(70, 64, 64, 128, 128, 1) == 146_800_640
    assert model_kv_bytes_per_token("MiniMax-M1") == 10 * 2 * 8 * 128 * 2 == 40_960
    assert x.model_sequence_bytes("MiniMax-M1", 100_000) == 40_960 * 100_000 + 146_800_640


def test_lightning_attention_goes_with_its_layers_and_has_no_convolution():
    m1 = load_catalog().models.get("MiniMax-M1").model_dump()
    with pytest.raises(ValidationError, match="lightning attention has no convolution"):
        ModelPreset.model_validate(dict(m1, linear_conv_kernel=4))
    with pytest.raises(ValidationError, match="lightning_attention needs linear_attention_layers"):
        ModelPreset.model_validate(
            {**{k: v for k, v in m1.items() if not k.startswith("linear_")}, "attention_layers": None}
        )


def test_a_bad_attn_type_list_is_refused_in_one_line():
    base = read_config(DATA / "minimax-m1.json")
    for bad in ([1] * 79, [2] * 80, "all", [True] * 80):
        with pytest.raises(ArgumentError, match=r"^c\.json: attn_type_list must give 0 or 1 per layer \(80\), got "):
            figures_from_config(dict(base, attn_type_list=bad), "c.json")


def test_deepseek_r1_0528_published_config_fields_are_the_shape_its_alias_reads():
    # No verbatim copy of deepseek-ai/DeepSeek-R1-0528's config.json was found; its preset takes DeepSeek-V3's shape
    # (deepseek-v3.json, DeepSeek-R1's config byte for byte). Two public walk-throughs of R1-0528's config.json list
    # these fields (deepseek.csdn.net/684421607e10b149bf1eed3c.html, 'DeepSeek-R1-0528训练参数全透视';
    # moe_intermediate_size from blog.youkuaiyun.com/gitblog_00129/article/details/150222242): each is the copy's
    listed = {
        "hidden": 7168,
        "layers": 61,
        "heads": 128,
        "context": 163_840,
        "experts": 256,
        "experts_per_token": 8,
        "intermediate": 18_432,
        "vocab": 129_280,
        "moe_intermediate": 2048,
    }
    f = figures("deepseek-v3.json")
    assert {k: f[k] for k in listed} == listed
    r0528 = load_catalog().models.get("DeepSeek-R1-0528")
    assert r0528.source == "deepseek-r1-0528-shape" and r0528.id == "DeepSeek-R1-0528"


def test_qwen35_hybrid_layout_and_state_as_vllm_allocates_them():
    # Qwen3.5-397B-A17B's text_config: layer_types, three Gated DeltaNet layers to one gated full-attention layer (SGLang
    # cookbook: "full attention every 4th layer", top-10 of 512 routed experts plus a shared expert)
    f = figures("qwen3.5-397b-a17b.json")
    assert (f["attention_layers"], f["linear_attention_layers"], f["attention_output_gate"]) == (15, 45, True)
    assert (f["experts"], f["experts_per_token"], f["shared_experts"], f["moe_intermediate"]) == (512, 10, 1, 1024)
    assert "lightning_attention" not in f and f["linear_conv_kernel"] == 4
    # vLLM gated_delta_net_state_shape: conv (3, 2 x 16 x 128 + 64 x 128) and temporal (64, 128, 128) per sequence and
    # layer, BF16; 15 attention layers of 2 KV heads of 256 cache 30,720 bytes a token
    assert x.model_state_bytes("Qwen3.5-397B-A17B") == 45 * (3 * 12_288 * 2 + 64 * 128 * 128 * 2) == 97_689_600
    assert model_kv_bytes_per_token("Qwen3.5-397B-A17B") == 15 * 2 * 2 * 256 * 2 == 30_720


def test_glm5_latent_attention_with_wider_values_and_the_sparse_indexer():
    # GLM-5's config (glm_moe_dsa): latent attention whose values (v_head_dim 256) are wider than its keys without rope
    # (qk_nope_head_dim 192), and DeepSeek sparse attention's indexer; DeepSeek-V3's equal widths add no field
    f = figures("glm-5.json")
    assert (f["head_dim"], f["v_head_dim"], f["kv_lora_rank"], f["qk_rope_head_dim"], f["q_lora_rank"]) == (
        192,
        256,
        512,
        64,
        2048,
    )
    assert (f["index_heads"], f["index_head_dim"], f["dense_layers"], f["shared_experts"]) == (32, 128, 3, 1)
    assert "v_head_dim" not in figures("deepseek-v3.json")
    # values as wide as the keys would miss kv_b_proj's and o_proj's extra columns, 2.13B: 0.3% under the published 744B
    wide = ModelPreset.model_validate({"id": "x", "source": "x", **f})
    narrow = ModelPreset.model_validate({"id": "x", "source": "x", **{k: v for k, v in f.items() if k != "v_head_dim"}})
    missing = count_params(wide)[0] - count_params(narrow)[0]
    assert missing == 78 * (512 * 64 * (256 - 192) + 64 * (256 - 192) * 6144)
    # the cache per token: the latent and rotary key in BF16 and the indexer's FP8 key with its scale, 78 layers
    assert model_kv_bytes_per_token("GLM-5") == 78 * ((512 + 64) * 2 + 128 + 4) == 100_152
    with pytest.raises(ValidationError, match="v_head_dim needs latent attention"):
        ModelPreset.model_validate({**load_catalog().models.get("Llama-3.1-8B").model_dump(), "v_head_dim": 256})


def test_kimi_k26_is_kimi_k25s_language_model_and_the_card_agrees():
    # NVIDIA's NVFP4 checkpoint config nests a deepseek_v3 text_config beside its quantization_config; its shape is
    # Kimi-K2.5's field for field, and the K2.6 card's table gives the same layers, experts and context
    k26, k25 = figures("kimi-k2.6-nvfp4.json"), figures("kimi-k2.5.trimmed.json")
    assert k26 == k25
    card = {"layers": 61, "dense_layers": 1, "hidden": 7168, "heads": 64, "moe_intermediate": 2048, "experts": 384}
    card |= {"experts_per_token": 8, "shared_experts": 1, "context": 256 * 1024}
    assert {k: k26[k] for k in card} == card


def test_mistral3_text_config_and_ministral3_are_read():
    small, large = figures("devstral-small-2-24b-instruct-2512.json"), figures("devstral-2-123b-instruct-2512.json")
    assert (small["layers"], small["hidden"], small["intermediate"], small["context"]) == (40, 5120, 32768, 393_216)
    assert (large["layers"], large["hidden"], large["heads"], large["kv_heads"]) == (88, 12288, 96, 8)
    # Devstral Small 2's language model is Mistral Small 3's shape (the preset that cites its published shape)
    mistral_small = load_catalog().models.get("Mistral-Small-3")
    same = ("layers", "hidden", "heads", "kv_heads", "head_dim", "vocab", "intermediate")
    assert {k: small[k] for k in same} == {k: mistral_small.figure(k) for k in same}


def test_model_list_holds_every_new_model_with_its_source(capsys):
    assert main(["model", "list"]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    for name in (*PRESETS, "GLM-4.5-Air"):
        preset = load_catalog().models.get(name)
        assert preset.source in lines[name] and preset.source_key("params_b") in lines[name], name
    assert "xlsxplan model show NAME" in out.splitlines()[-1]


@pytest.mark.parametrize("name, non_embedding", [("Gemma-3-12B", 10_759e6), ("Gemma-3-27B", 25_600e6)])
def test_gemma3_presets_count_the_reports_non_embedding_parameters(name, non_embedding):
    # Gemma 3 Technical Report, arXiv:2503.19786, Table 1: 10,759M (12B) and 25,600M (27B) non-embedding parameters.
    # The 12B's shape is its re-saved config.json's, the 27B's the report's and Google's module listing.
    preset = load_catalog().models.get(name)
    total, _ = count_params(preset)
    assert total - preset.vocab * preset.hidden == pytest.approx(non_embedding, rel=0.001), name
    f = figures("gemma-3-12b-it.resaved.json")  # five local layers to one global (layer_types)
    assert (f["sliding_window"], f["sliding_window_layers"], f["tied_embeddings"]) == (1024, 40, True)
