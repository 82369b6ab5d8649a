"""A model preset from a Hugging Face ``config.json``: architecture fields and the parameter count they imply.

The file is one the user already has (nothing is downloaded). What a config says decides what is read: its
``architectures`` and ``model_type`` name the family, and its layer fields the layers, whatever the family is
called. ``layer_types`` lists each layer's attention (full, sliding-window, chunked, or linear attention with a
fixed state); Nemotron-H's ``hybrid_override_pattern`` spells its Mamba-2, attention, MLP and expert blocks; a
``kv_lora_rank`` means multi-head latent attention under any model_type (Kimi K2 is DeepSeek-V3's shape); DeepSeek
sparse attention's ``index_head_dim`` adds the indexer's cached keys; a multimodal config's ``text_config`` is the
language model. Where a config leaves a field out, the family's default applies (Gemma ties its embeddings, Llama
does not; Llama 4 uses chunked attention on three layers in four, Qwen3-Next full attention on one in
``full_attention_interval``). The parameter count is derived from the shape by
:func:`xlsxplan.catalog.models.count_params`, so a preset made here and a shipped one are counted the same way.

Supported families are those whose weights :func:`~xlsxplan.catalog.models.count_params` describes: gated or
two-matrix MLPs, grouped-query or latent attention, sliding windows and chunks, attention sinks and biases, routed
and shared experts, Gated DeltaNet, lightning-attention and Mamba-2 layers. MiniMax's ``attn_type_list`` says which
layers are lightning attention (0: MiniMax-M1's seven in eight) and which softmax attention (1: every layer of
MiniMax-M2); GLM-4.5's ``glm4_moe`` and Mistral's ``ministral3`` are read too. Others are refused by name rather than
counted wrongly.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import ArgumentError
from ..infra.text import FORMULA_TRIGGERS
from . import ModelPreset
from .models import count_params

__all__ = [
    "ARCHITECTURES",
    "BOUNDS",
    "MAX_CONFIG_BYTES",
    "MAX_DEPTH",
    "MAX_DIGITS",
    "MAX_NAME_CHARS",
    "SUPPORTED",
    "check_name",
    "figures_from_config",
    "read_config",
    "read_config_and_digest",
]

MAX_CONFIG_BYTES = 16 * 2**20
"""The largest config.json read [bytes]: published ones are a few kB (the largest, with per-layer lists, ~100 kB)."""
MAX_DEPTH = 64
"""The deepest nesting of objects and lists read: published configs nest at most four deep [count]."""
MAX_DIGITS = 30
"""The most digits a number in a config may have: a 64-bit integer has at most 20 [count]."""
MAX_NAME_CHARS = 128
"""The longest preset name [characters]."""
BOUNDS = {
    "num_hidden_layers": 10_000,  # the deepest published: 126 (Llama 3.1 405B)
    "hidden_size": 1_048_576,  # the widest: 25,600 (Megatron-Turing NLG 530B: 20,480)
    "num_attention_heads": 65_536,  # 128 (DeepSeek-V3, Llama 3.1 405B)
    "num_key_value_heads": 65_536,
    "head_dim": 65_536,  # 256 (Gemma), 512 (Gemma 3 global)
    "vocab_size": 16_777_216,  # the largest: 262,144 (Gemma 3)
    "max_position_embeddings": 2**32,  # the longest: 10,485,760 (Llama 4 Scout)
    "intermediate_size": 16_777_216,  # 53,248 (Llama 3.1 405B)
    "moe_intermediate_size": 16_777_216,
    "num_local_experts": 1_048_576,  # the most: 384 (Kimi K2)
    "num_experts": 1_048_576,
    "n_routed_experts": 1_048_576,
    "num_experts_per_tok": 1_048_576,
}
"""Upper bounds on a config's figures, each some 40 to 100 times the largest published model's: a config past one
is not a model (a vocabulary of 10^15 would make its embeddings alone 2 million TB), and is refused with the bound.
Any other whole number is bounded by 2^32."""
_DEFAULT_BOUND = 2**32

SUPPORTED = (
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen2_moe",
    "qwen3",
    "qwen3_moe",
    "gemma",
    "gemma2",
    "gemma3",
    "gemma3_text",
    "deepseek_v2",
    "deepseek_v3",
    "deepseek_v32",
    "kimi_k2",
    "phi3",
    "gpt_oss",
    "llama4",
    "llama4_text",
    "qwen3_next",
    "qwen3_5",
    "qwen3_5_text",
    "qwen3_5_moe",
    "qwen3_5_moe_text",
    "nemotron_h",
    "mistral3",
    "ministral3",
    "glm4_moe",
    "minimax_m2",
    "minimax_m1",
)
"""model_type values read. A config with another model_type is read when its ``architectures`` names a class in
:data:`ARCHITECTURES`, or when it carries ``kv_lora_rank`` (latent attention)."""

ARCHITECTURES = (
    "LlamaForCausalLM",
    "MistralForCausalLM",
    "MixtralForCausalLM",
    "Qwen2ForCausalLM",
    "Qwen2MoeForCausalLM",
    "Qwen3ForCausalLM",
    "Qwen3MoeForCausalLM",
    "GemmaForCausalLM",
    "Gemma2ForCausalLM",
    "Gemma3ForCausalLM",
    "Gemma3ForConditionalGeneration",
    "DeepseekV2ForCausalLM",
    "DeepseekV3ForCausalLM",
    "DeepseekV32ForCausalLM",
    "Phi3ForCausalLM",
    "GptOssForCausalLM",
    "Llama4ForCausalLM",
    "Llama4ForConditionalGeneration",
    "Qwen3NextForCausalLM",
    "Qwen3_5ForConditionalGeneration",
    "Qwen3_5MoeForConditionalGeneration",
    "NemotronHForCausalLM",
    "Mistral3ForConditionalGeneration",
    "Ministral3ForCausalLM",
    "Glm4MoeForCausalLM",
    "MiniMaxM2ForCausalLM",
    "MiniMaxM1ForCausalLM",
)

_TIED_BY_DEFAULT = ("gemma", "gemma2", "gemma3", "gemma3_text")
_LAYER_TYPES = ("full_attention", "sliding_attention", "chunked_attention", "linear_attention")
_PATTERN = {"M": "Mamba-2", "*": "attention", "-": "MLP", "E": "experts"}


def read_config(path: str | Path) -> dict[str, Any]:
    """The JSON object in ``path``; a file or JSON error becomes an :class:`ArgumentError` naming the file."""
    return read_config_and_digest(path)[0]


_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)
"""A JSON string, or a bracket outside strings. The string alternative never fails once it starts at a quote (its
closing quote is optional: an unterminated string runs to the end of the text) and no byte can be read by two of its
parts, so every byte of the text is looked at a bounded number of times: the scan is linear in the text. (A pattern
whose closing quote is required fails at an unterminated string after reading to its end, then starts again at the
next quote: an unterminated run of ``\\"`` made it quadratic, 20 s for 40 kB.)"""


def _depth(raw: bytes) -> int:
    """The deepest nesting of objects and lists in a JSON text (brackets inside strings aside), without parsing it;
    one pass of :data:`_TOKEN` over the text."""
    deepest = depth = 0
    for m in _TOKEN.finditer(raw):
        first = raw[m.start()]
        if first == 0x22:  # '"': a string; brackets inside it are text
            continue
        depth += 1 if first in (0x5B, 0x7B) else -1  # '[', '{'
        deepest = max(deepest, depth)
    return deepest


def _int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_DIGITS:
        raise ValueError(f"a number of {digits:,} digits; a config's numbers have at most {MAX_DIGITS}")
    return int(text)


def _float(text: str) -> float:
    if len(text) > 64:
        raise ValueError(f"a number written with {len(text):,} characters; a config's have at most 64")
    return float(text)


def read_config_and_digest(path: str | Path) -> tuple[dict[str, Any], str]:
    """:func:`read_config`, and the SHA-256 of the bytes it read (hex), from one read of the file.

    The file must be a regular file (a FIFO or a device is refused, never waited on) of at most
    :data:`MAX_CONFIG_BYTES`, nesting at most :data:`MAX_DEPTH` deep, with numbers of at most :data:`MAX_DIGITS`
    digits."""
    from ..errors import WorkbookError
    from ..infra.fileio import read_regular

    p = Path(path)
    try:
        raw = read_regular(p, MAX_CONFIG_BYTES, "config file")
    except WorkbookError as err:
        reason = err.message.removeprefix(f"cannot read {p}: ")
        raise ArgumentError(f"{p}: cannot be read: {reason}", "config") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ArgumentError(f"{p}: over {MAX_CONFIG_BYTES // 2**20} MiB; a config.json is a few kB", "config")
    depth = _depth(raw)
    if depth > MAX_DEPTH:
        raise ArgumentError(f"{p}: nests {depth:,} deep; a config.json nests at most {MAX_DEPTH} deep", "config")
    try:
        data = json.loads(raw.decode("utf-8"), parse_int=_int, parse_float=_float)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ArgumentError(f"{p}: not a JSON config file: {err}", "config") from None
    except (ValueError, RecursionError) as err:
        raise ArgumentError(f"{p}: not a config xlsxplan reads: {str(err) or type(err).__name__}", "config") from None
    if not isinstance(data, dict):
        raise ArgumentError(f"{p}: a config.json holds one JSON object, got {type(data).__name__}", "config")
    return data, hashlib.sha256(raw).hexdigest()


def _text_config(config: dict[str, Any]) -> dict[str, Any]:
    """The language model's part of a config (multimodal configs nest it under ``text_config``), with the outer
    config's ``architectures``, ``model_type`` and ``tie_word_embeddings`` where the inner one has none."""
    if "num_hidden_layers" not in config and isinstance(config.get("text_config"), dict):
        merged = dict(config["text_config"])
        for key in ("model_type", "architectures", "tie_word_embeddings"):
            if key in config:
                merged.setdefault(key, config[key])
        merged["outer_model_type"] = config.get("model_type")
        return merged
    return config


def _architectures(c: dict[str, Any]) -> tuple[str, ...]:
    names = c.get("architectures")
    return tuple(n for n in names if isinstance(n, str)) if isinstance(names, list) else ()


def _is(c: dict[str, Any], model_types: tuple[str, ...], architectures: tuple[str, ...]) -> bool:
    """Whether the config's model_type (or the outer one) or an architecture names the family."""
    kinds = {str(c.get("model_type") or ""), str(c.get("outer_model_type") or "")}
    return bool(kinds & set(model_types)) or bool(set(_architectures(c)) & set(architectures))


def _bounded(value: int, key: str, where: str) -> int:
    bound = BOUNDS.get(key, _DEFAULT_BOUND)
    if value > bound:
        raise ArgumentError(
            f"{where}: {key} {value:,} is past any published model's; xlsxplan reads up to {bound:,}", key
        )
    return value


def check_name(name: str) -> str:
    """A preset name as given (``--name``, a config's ``_name_or_path``), checked: 1 to :data:`MAX_NAME_CHARS`
    printable characters, no line breaks or other control characters, no blanks around it."""
    if not isinstance(name, str) or not name or name != name.strip():
        raise ArgumentError(f"the preset name {name!r} must be non-empty, without blanks around it", "name")
    if len(name) > MAX_NAME_CHARS:
        raise ArgumentError(f"the preset name has {len(name):,} characters; the limit is {MAX_NAME_CHARS}", "name")
    if not name.isprintable():
        raise ArgumentError(
            f"the preset name {name!r} holds a line break or another control character; use printable characters",
            "name",
        )
    if name.startswith(FORMULA_TRIGGERS):
        raise ArgumentError(
            f"the preset name {name[:60]!r} starts with {name[0]!r}, which a spreadsheet reads as the start of a "
            "formula; start it with a letter or digit (--name)",
            "name",
        )
    return name


def _whole(config: dict[str, Any], key: str, where: str, default: int | None = None) -> int:
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        shown = "missing" if key not in config else f"{value!r}"
        raise ArgumentError(f"{where}: {key} must be a positive whole number, got {shown}", key)
    return _bounded(value, key, where)


def _optional(config: dict[str, Any], key: str, where: str, default: int | None = None, low: int = 0) -> int | None:
    """An optional whole-number field: ``default`` when it is missing or null (JSON ``null`` is how configs say "not
    used"), else a whole number of at least ``low``, or an :class:`ArgumentError` naming the file and the field."""
    value = config.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        kind = "a positive whole number" if low > 0 else "a whole number of at least 0"
        raise ArgumentError(f"{where}: {key} must be {kind} or null, got {value!r}"[:300], key)
    return _bounded(value, key, where)


def _flag(config: dict[str, Any], key: str, where: str, default: bool = False) -> bool:
    """A yes-or-no field: ``default`` when it is missing or null, else a JSON boolean (``true``/``false``), or an
    :class:`ArgumentError` naming the file and the field: the text ``"false"`` is not false (Python's ``bool`` would
    read it as true)."""
    value = config.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ArgumentError(f"{where}: {key} must be true or false (a JSON boolean), got {value!r}"[:300], key)
    return value


def _layer_types(c: dict[str, Any], layers: int, where: str) -> list[str] | None:
    """The config's ``layer_types`` list, checked: one known kind per layer; None when the config has none."""
    kinds = c.get("layer_types")
    if kinds is None:
        return None
    if not isinstance(kinds, list) or len(kinds) != layers or not all(isinstance(k, str) for k in kinds):
        raise ArgumentError(
            f"{where}: layer_types must list one kind per layer ({layers:,}), got {kinds!r}"[:200], "layer_types"
        )
    unknown = sorted(set(kinds) - set(_LAYER_TYPES))
    if unknown:
        raise ArgumentError(
            f"{where}: layer_types holds {', '.join(map(repr, unknown))}, which xlsxplan does not "
            f"count; known: {', '.join(_LAYER_TYPES)}",
            "layer_types",
        )
    return kinds


def _window_layers(
    c: dict[str, Any], model_type: str, layers: int, where: str, kinds: list[str] | None
) -> tuple[int | None, int | None]:
    """(sliding_window, layers limited to it), or (None, None) when every layer sees the whole context."""
    window = _optional(c, "sliding_window", where)
    if not window or not _flag(c, "use_sliding_window", where, default=True):
        return None, None
    if kinds is not None:  # newer configs list every layer
        count = sum(1 for t in kinds if t == "sliding_attention")
    elif model_type == "gemma2":  # even layers are local (Gemma 2, arXiv:2408.00118, section 2)
        count = math.ceil(layers / 2)
    elif model_type in ("gemma3", "gemma3_text"):  # every p-th layer is global (Gemma 3: p = 6)
        pattern = _optional(c, "sliding_window_pattern", where, low=1) or _optional(
            c, "_sliding_window_pattern", where, 6, low=1
        )
        count = layers - layers // pattern  # type: ignore[operator]
    elif model_type in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe"):  # layers from max_window_layers on
        first = _optional(c, "max_window_layers", where, layers)  # a default is given: never None
        count = layers - min(layers, layers if first is None else first)
    else:  # Mistral-7B v0.1, Phi-3-mini: every layer
        count = layers
    return (window, count) if count else (None, None)


def _layer_indices(c: dict[str, Any], key: str, layers: int, where: str) -> list[int] | None:
    """A list of layer numbers (mlp_only_layers, moe_layers), checked; None when the config has none."""
    value = c.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in value):
        raise ArgumentError(f"{where}: {key} must be a list of layer numbers or null, got {value!r}", key)
    return value


def _dense_layers(c: dict[str, Any], model_type: str, layers: int, where: str) -> int:
    """Layers whose MLP is dense rather than experts: DeepSeek's first k, Llama 4's between its MoE layers, Qwen's
    decoder_sparse_step and mlp_only_layers."""
    first_k = _optional(c, "first_k_dense_replace", where)
    if first_k is not None:  # DeepSeek: the first k layers keep a dense MLP
        return first_k
    if _is(c, ("llama4", "llama4_text"), ("Llama4ForCausalLM", "Llama4ForConditionalGeneration")):
        # Llama4TextConfig: moe_layers, else every interleave_moe_layer_step-th layer from step - 1
        moe_layers = _layer_indices(c, "moe_layers", layers, where)
        if moe_layers is None:
            step = _optional(c, "interleave_moe_layer_step", where, 1, low=1) or 1
            moe_layers = list(range(step - 1, layers, step))
        return layers - len(set(moe_layers) & set(range(layers)))
    step = _optional(c, "decoder_sparse_step", where, 1, low=0) or 1
    only = set(_layer_indices(c, "mlp_only_layers", layers, where) or [])
    moe = sum(1 for i in range(layers) if i not in only and (i + 1) % step == 0)
    return layers - moe


def _shared_experts(c: dict[str, Any], moe_intermediate: int | None, where: str) -> int | None:
    if "n_shared_experts" in c and not c.get("moe_shared_expert_intermediate_size"):
        return _optional(c, "n_shared_experts", where, 0)
    for key in ("shared_expert_intermediate_size", "moe_shared_expert_intermediate_size"):
        size = _optional(c, key, where)  # Qwen2-MoE, Qwen3-Next, Nemotron-3: one shared expert this wide
        if size and moe_intermediate:
            if size % moe_intermediate:
                raise ArgumentError(
                    f"{where}: {key} {size} is not a multiple of moe_intermediate_size {moe_intermediate}", key
                )
            return size // moe_intermediate
    return None


_BLOCK_TYPES = {"mamba": "M", "attention": "*", "mlp": "-", "moe": "E"}


def _hybrid_pattern(c: dict[str, Any], layers: int, where: str) -> dict[str, int] | None:
    """Nemotron-H's blocks from ``hybrid_override_pattern`` (or the newer ``layers_block_type`` list): counts of
    Mamba-2, attention, MLP and expert blocks."""
    pattern = c.get("hybrid_override_pattern")
    blocks = c.get("layers_block_type")
    if pattern is None and isinstance(blocks, list):
        unknown = sorted({str(b) for b in blocks} - set(_BLOCK_TYPES))
        if unknown:
            raise ArgumentError(
                f"{where}: layers_block_type holds {', '.join(map(repr, unknown))}, which xlsxplan "
                f"does not count; known: {', '.join(_BLOCK_TYPES)}",
                "layers_block_type",
            )
        pattern = "".join(_BLOCK_TYPES[str(b)] for b in blocks)
    if pattern is None:
        return None
    if c.get("moe_latent_size"):
        raise ArgumentError(
            f"{where}: moe_latent_size {c['moe_latent_size']!r}: experts working in a latent space "
            "(Nemotron 3 Super) are not counted by xlsxplan",
            "moe_latent_size",
        )
    if not isinstance(pattern, str) or len(pattern) != layers or set(pattern) - set(_PATTERN):
        raise ArgumentError(
            f"{where}: hybrid_override_pattern must spell one of {''.join(_PATTERN)} per layer "
            f"({layers:,}), got {str(pattern)[:60]!r}",
            "hybrid_override_pattern",
        )
    return {kind: pattern.count(kind) for kind in _PATTERN}


def _supported(c: dict[str, Any], model_type: str, where: str) -> None:
    if model_type in SUPPORTED or set(_architectures(c)) & set(ARCHITECTURES) or c.get("kv_lora_rank"):
        return
    named = f"model_type {model_type or 'missing'!r}"
    if _architectures(c):
        named += f" (architectures {', '.join(_architectures(c))})"
    raise ArgumentError(f"{where}: {named} is not supported; supported: {', '.join(SUPPORTED)}", "model_type")


def _linear_attention(c: dict[str, Any], layers: int, kinds: list[str] | None, where: str) -> dict[str, Any]:
    """Gated DeltaNet layers and their dimensions (Qwen3-Next), and the full-attention layers beside them."""
    if kinds is not None:
        linear = kinds.count("linear_attention")
    elif c.get("linear_num_value_heads") is not None:  # Qwen3NextConfig: full attention every interval-th layer
        interval = _optional(c, "full_attention_interval", where, 4, low=1) or 4
        linear = sum(1 for i in range(layers) if (i + 1) % interval)
    else:
        return {}
    if not linear:
        return {}
    return {
        "attention_layers": layers - linear,
        "linear_attention_layers": linear,
        "linear_key_heads": _whole(c, "linear_num_key_heads", where),
        "linear_value_heads": _whole(c, "linear_num_value_heads", where),
        "linear_key_head_dim": _whole(c, "linear_key_head_dim", where),
        "linear_value_head_dim": _whole(c, "linear_value_head_dim", where),
        "linear_conv_kernel": _whole(c, "linear_conv_kernel_dim", where),
    }


def _chunked(c: dict[str, Any], layers: int, kinds: list[str] | None, where: str) -> dict[str, Any]:
    """Llama 4's chunked attention: the layers with rotary embeddings attend within chunks of attention_chunk_size."""
    chunk = _optional(c, "attention_chunk_size", where, low=1)
    if not chunk:
        return {}
    if kinds is not None and "chunked_attention" in kinds:
        count = kinds.count("chunked_attention")
    elif _is(c, ("llama4", "llama4_text"), ("Llama4ForCausalLM", "Llama4ForConditionalGeneration")):
        rope = _layer_indices(c, "no_rope_layers", layers, where)  # 1: rotary and chunked, 0: NoPE and global
        if not rope:  # Llama4TextConfig's default: a NoPE layer every no_rope_layer_interval-th
            interval = _optional(c, "no_rope_layer_interval", where, 4, low=1) or 4
            rope = [int((i + 1) % interval != 0) for i in range(layers)]
        count = sum(1 for flag in rope[:layers] if flag)
    else:
        return {}
    return {"attention_chunk": chunk, "chunked_layers": count} if count else {}


def _nemotron_h(c: dict[str, Any], layers: int, blocks: dict[str, int], where: str) -> dict[str, Any]:
    """Nemotron-H's hybrid: Mamba-2 blocks, a few attention blocks, squared-ReLU MLP or expert blocks."""
    figures: dict[str, Any] = {
        "attention_layers": blocks["*"],
        "mlp_layers": blocks["-"] + blocks["E"],
        "gated_mlp": str(c.get("mlp_hidden_act", "relu2")) not in ("relu2", "relu", "gelu"),
    }
    if blocks["M"]:
        figures.update(
            mamba_layers=blocks["M"],
            mamba_heads=_whole(c, "mamba_num_heads", where),
            mamba_head_dim=_whole(c, "mamba_head_dim", where),
            mamba_state_size=_whole(c, "ssm_state_size", where),
            mamba_groups=_whole(c, "n_groups", where, default=1),
            mamba_conv_kernel=_whole(c, "conv_kernel", where),
        )
    return figures


def _lightning_attention(c: dict[str, Any], layers: int, where: str) -> dict[str, Any]:
    """MiniMax's ``attn_type_list``: 1 marks a softmax-attention layer, 0 a lightning (linear) attention layer
    (MiniMax-01, arXiv:2501.08313). MiniMax-M2 lists 1 for every layer: softmax attention throughout, nothing to add.
    MiniMax-M1 and MiniMax-Text-01 list seven lightning layers in eight; a lightning layer has as many heads as
    ``num_attention_heads``, each ``head_dim`` wide for its keys and values (MiniMaxM1LightningAttention), and keeps
    a fixed state per sequence, a ``head_dim`` x ``head_dim`` matrix per head, instead of a KV cache."""
    kinds = c.get("attn_type_list")
    if kinds is None:
        return {}
    if (
        not isinstance(kinds, list)
        or len(kinds) != layers
        or any(k not in (0, 1) or isinstance(k, bool) for k in kinds)
    ):
        raise ArgumentError(
            f"{where}: attn_type_list must give 0 or 1 per layer ({layers:,}), got {str(kinds)[:60]!r}",
            "attn_type_list",
        )
    lightning = kinds.count(0)
    if not lightning:
        return {}
    heads = _whole(c, "num_attention_heads", where)
    head_dim = _whole(c, "head_dim", where, default=_whole(c, "hidden_size", where) // heads)
    return {
        "attention_layers": layers - lightning,
        "linear_attention_layers": lightning,
        "linear_key_heads": heads,
        "linear_value_heads": heads,
        "linear_key_head_dim": head_dim,
        "linear_value_head_dim": head_dim,
        "lightning_attention": True,
    }


def _mla_value_width(c: dict[str, Any], head_dim: int, where: str) -> int | None:
    """Latent attention's ``v_head_dim`` where it differs from ``qk_nope_head_dim`` (GLM-5: 256 and 192); None where
    they agree (DeepSeek-V3, Kimi K2: 128) or the config gives none."""
    width = _optional(c, "v_head_dim", where, low=1)
    return width if width is not None and width != head_dim else None


def _mtp_modules(c: dict[str, Any], where: str) -> int | None:
    """Multi-token-prediction modules shipped beside the model: DeepSeek's and GLM's ``num_nextn_predict_layers``,
    Qwen3-Next's ``mtp_num_hidden_layers``, MiniMax-M2's ``num_mtp_modules`` (when ``use_mtp`` is true)."""
    mtp = _optional(c, "num_nextn_predict_layers", where) or _optional(c, "mtp_num_hidden_layers", where)
    if not mtp and _flag(c, "use_mtp", where):
        mtp = _optional(c, "num_mtp_modules", where)
    return mtp or None


def figures_from_config(config: dict[str, Any], where: str = "config.json") -> dict[str, Any]:
    """Catalog figures for a model preset from a Hugging Face config: shape, context and parameter counts.

    Returns the fields of :class:`~xlsxplan.catalog.ModelPreset` (``params_b`` and, for a mixture of experts,
    ``active_params_b`` derived from the shape), ready for :func:`xlsxplan.catalog.save_user_preset`.
    """
    c = _text_config(config)
    model_type = str(c.get("model_type") or "")
    _supported(c, model_type, where)
    layers = _whole(c, "num_hidden_layers", where)
    hidden = _whole(c, "hidden_size", where)
    heads = _whole(c, "num_attention_heads", where)
    mla = bool(c.get("kv_lora_rank"))
    blocks = _hybrid_pattern(c, layers, where)
    kinds = _layer_types(c, layers, where)
    head_key = "qk_nope_head_dim" if mla else ("attention_head_dim" if "attention_head_dim" in c else "head_dim")
    gpt_oss = _is(c, ("gpt_oss",), ("GptOssForCausalLM",))
    llama4 = _is(c, ("llama4", "llama4_text"), ("Llama4ForCausalLM", "Llama4ForConditionalGeneration"))
    figures: dict[str, Any] = {
        "layers": layers,
        "hidden": hidden,
        "heads": heads,
        "kv_heads": _whole(c, "num_key_value_heads", where, default=heads),
        "head_dim": _whole(c, head_key, where, default=hidden // heads),
        "vocab": _whole(c, "vocab_size", where),
        "context": _whole(c, "max_position_embeddings", where),
        "intermediate": _optional(c, "intermediate_size_mlp" if llama4 else "intermediate_size", where, low=1),
        "tied_embeddings": _flag(c, "tie_word_embeddings", where, default=model_type in _TIED_BY_DEFAULT),
        "attention_bias": _flag(c, "attention_bias", where),
        "mlp_bias": _flag(c, "mlp_bias", where) or gpt_oss,  # gpt-oss's experts and router carry biases
        "attention_sinks": gpt_oss,  # GptOssAttention: one learned sink logit per head
        "attention_output_gate": _flag(c, "attn_output_gate", where)
        or _is(c, ("qwen3_next",), ("Qwen3NextForCausalLM",)),
    }
    if blocks is not None:
        figures.update(_nemotron_h(c, layers, blocks, where))
    figures.update(_linear_attention(c, layers, kinds, where))
    figures.update(_lightning_attention(c, layers, where))
    if kinds is not None and "linear_attention" not in kinds and blocks is None:
        attention_kinds = ("full_attention", "sliding_attention", "chunked_attention")
        attention = sum(1 for k in kinds if k in attention_kinds)
        figures["attention_layers"] = attention if attention < layers else None
    experts = (
        _optional(c, "num_local_experts", where)
        or _optional(c, "num_experts", where)
        or _optional(c, "n_routed_experts", where)
    )
    if experts:
        moe_intermediate = _optional(c, "moe_intermediate_size", where, low=1)
        if (
            llama4
        ):  # Llama 4: experts and the shared expert are intermediate_size wide, dense MLPs intermediate_size_mlp
            moe_intermediate = _whole(c, "intermediate_size", where)
        dense = blocks["-"] if blocks is not None else _dense_layers(c, model_type, layers, where)
        figures.update(
            experts=experts,
            experts_per_token=_whole(c, "num_experts_per_tok", where),
            moe_intermediate=moe_intermediate,
            shared_experts=1 if llama4 else _shared_experts(c, moe_intermediate, where),
            dense_layers=dense or None,
        )
    if figures["intermediate"] is None and (not experts or figures.get("dense_layers")):
        _whole(c, "intermediate_size", where)  # a dense MLP needs its width: the one-line reason
    if mla:
        figures.update(
            kv_lora_rank=_whole(c, "kv_lora_rank", where),
            qk_rope_head_dim=_whole(c, "qk_rope_head_dim", where),
            q_lora_rank=_optional(c, "q_lora_rank", where) or None,
            v_head_dim=_mla_value_width(c, figures["head_dim"], where),
            index_heads=_optional(c, "index_n_heads", where, low=1),
            index_head_dim=_optional(c, "index_head_dim", where, low=1),
        )
    window, window_layers = _window_layers(c, model_type, layers, where, kinds)
    figures.update(sliding_window=window, sliding_window_layers=window_layers)
    figures.update(_chunked(c, layers, kinds, where))
    figures["mtp_layers"] = _mtp_modules(c, where)
    defaults = {name: field.default for name, field in ModelPreset.model_fields.items()}
    figures = {k: v for k, v in figures.items() if v is not None and not (isinstance(v, bool) and v == defaults[k])}
    try:
        shape = ModelPreset.model_validate({"id": "config", "source": "config", "params_b": 1, **figures})
    except ValidationError as err:
        first = err.errors()[0]
        raise ArgumentError(f"{where}: {'.'.join(map(str, first['loc'])) or 'config'}: {first['msg']}") from None
    total, active = count_params(shape)
    figures["params_b"] = round(total / 1e9, 6)
    if experts:
        figures["active_params_b"] = round(active / 1e9, 6)
    return figures
