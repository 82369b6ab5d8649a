"""A model preset from a Hugging Face ``config.json``: architecture fields and the parameter count they imply.

The file is one the user already has (nothing is downloaded). Field names follow the ``transformers`` configuration
classes of each family; where a config leaves a field out, the family's default applies (Gemma ties its embeddings,
Llama does not). The parameter count is derived from the shape by :func:`xlsxplan.catalog.models.count_params`, so a
preset made here and a shipped one are counted the same way.

Supported ``model_type`` values are those whose weights :func:`~xlsxplan.catalog.models.count_params` describes: gated
MLPs, grouped-query or latent attention, optional routed and shared experts. Others are refused by name rather than
counted wrongly.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import ArgumentError
from . import ModelPreset
from .models import count_params

__all__ = ["SUPPORTED", "figures_from_config", "read_config", "read_config_and_digest"]

SUPPORTED = (
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "gemma", "gemma2", "gemma3",
    "gemma3_text", "deepseek_v2", "deepseek_v3",
)  # fmt: skip

_TIED_BY_DEFAULT = ("gemma", "gemma2", "gemma3", "gemma3_text")


def read_config(path: str | Path) -> dict[str, Any]:
    """The JSON object in ``path``; a file or JSON error becomes an :class:`ArgumentError` naming the file."""
    return read_config_and_digest(path)[0]


def read_config_and_digest(path: str | Path) -> tuple[dict[str, Any], str]:
    """:func:`read_config`, and the SHA-256 of the bytes it read (hex), from one read of the file."""
    p = Path(path)
    try:
        raw = p.read_bytes()
        data = json.loads(raw.decode("utf-8"))
    except OSError as err:
        raise ArgumentError(f"{p}: cannot be read: {err.strerror or err}", "config") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ArgumentError(f"{p}: not a JSON config file: {err}", "config") from None
    if not isinstance(data, dict):
        raise ArgumentError(f"{p}: a config.json holds one JSON object, got {type(data).__name__}", "config")
    return data, hashlib.sha256(raw).hexdigest()


def _text_config(config: dict[str, Any]) -> dict[str, Any]:
    """The language model's part of a config (multimodal configs nest it under ``text_config``)."""
    if "num_hidden_layers" not in config and isinstance(config.get("text_config"), dict):
        merged = dict(config["text_config"])
        merged.setdefault("model_type", config.get("model_type"))
        return merged
    return config


def _whole(config: dict[str, Any], key: str, where: str, default: int | None = None) -> int:
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        shown = "missing" if key not in config else f"{value!r}"
        raise ArgumentError(f"{where}: {key} must be a positive whole number, got {shown}", key)
    return value


def _optional(config: dict[str, Any], key: str, where: str, default: int | None = None, low: int = 0) -> int | None:
    """An optional whole-number field: ``default`` when it is missing or null (JSON ``null`` is how configs say "not
    used"), else a whole number of at least ``low``, or an :class:`ArgumentError` naming the file and the field."""
    value = config.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        kind = "a positive whole number" if low > 0 else "a whole number of at least 0"
        raise ArgumentError(f"{where}: {key} must be {kind} or null, got {value!r}", key)
    return value


def _window_layers(c: dict[str, Any], model_type: str, layers: int, where: str) -> tuple[int | None, int | None]:
    """(sliding_window, layers limited to it), or (None, None) when every layer sees the whole context."""
    window = _optional(c, "sliding_window", where)
    if not window or c.get("use_sliding_window") is False:
        return None, None
    if isinstance(c.get("layer_types"), list):  # newer configs list every layer
        count = sum(1 for t in c["layer_types"] if t == "sliding_attention")
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
    else:  # Mistral-7B v0.1: every layer
        count = layers
    return (window, count) if count else (None, None)


def _dense_layers(c: dict[str, Any], model_type: str, layers: int, where: str) -> int:
    first_k = _optional(c, "first_k_dense_replace", where)
    if first_k is not None:  # DeepSeek: the first k layers keep a dense MLP
        return first_k
    step = _optional(c, "decoder_sparse_step", where, 1, low=0) or 1
    only = c.get("mlp_only_layers") or []
    if not isinstance(only, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in only):
        raise ArgumentError(f"{where}: mlp_only_layers must be a list of layer numbers or null, got {only!r}",
                            "mlp_only_layers")  # fmt: skip
    moe = sum(1 for i in range(layers) if i not in set(only) and (i + 1) % step == 0)
    return layers - moe


def _shared_experts(c: dict[str, Any], moe_intermediate: int | None, where: str) -> int | None:
    if "n_shared_experts" in c:
        return _optional(c, "n_shared_experts", where, 0)
    size = _optional(c, "shared_expert_intermediate_size", where)  # Qwen2-MoE: one wide shared expert
    if size and moe_intermediate:
        if size % moe_intermediate:
            raise ArgumentError(
                f"{where}: shared_expert_intermediate_size {size} is not a multiple of moe_intermediate_size "
                f"{moe_intermediate}",
                "shared_expert_intermediate_size",
            )
        return size // moe_intermediate
    return None


def figures_from_config(config: dict[str, Any], where: str = "config.json") -> dict[str, Any]:
    """Catalog figures for a model preset from a Hugging Face config: shape, context and parameter counts.

    Returns the fields of :class:`~xlsxplan.catalog.ModelPreset` (``params_b`` and, for a mixture of experts,
    ``active_params_b`` derived from the shape), ready for :func:`xlsxplan.catalog.save_user_preset`.
    """
    c = _text_config(config)
    model_type = str(c.get("model_type") or "")
    if model_type not in SUPPORTED:
        raise ArgumentError(
            f"{where}: model_type {model_type or 'missing'!r} is not supported; supported: {', '.join(SUPPORTED)}",
            "model_type",
        )
    layers = _whole(c, "num_hidden_layers", where)
    hidden = _whole(c, "hidden_size", where)
    heads = _whole(c, "num_attention_heads", where)
    mla = bool(c.get("kv_lora_rank"))
    figures: dict[str, Any] = {
        "layers": layers,
        "hidden": hidden,
        "heads": heads,
        "kv_heads": _whole(c, "num_key_value_heads", where, default=heads),
        "head_dim": _whole(c, "qk_nope_head_dim" if mla else "head_dim", where, default=hidden // heads),
        "vocab": _whole(c, "vocab_size", where),
        "context": _whole(c, "max_position_embeddings", where),
        "intermediate": _whole(c, "intermediate_size", where),
        "tied_embeddings": bool(c.get("tie_word_embeddings", model_type in _TIED_BY_DEFAULT)),
    }
    experts = (
        _optional(c, "num_local_experts", where)
        or _optional(c, "num_experts", where)
        or _optional(c, "n_routed_experts", where)
    )
    if experts:
        moe_intermediate = _optional(c, "moe_intermediate_size", where, low=1)
        figures.update(
            experts=experts,
            experts_per_token=_whole(c, "num_experts_per_tok", where),
            moe_intermediate=moe_intermediate,
            shared_experts=_shared_experts(c, moe_intermediate, where),
            dense_layers=_dense_layers(c, model_type, layers, where) or None,
        )
    if mla:
        figures.update(
            kv_lora_rank=_whole(c, "kv_lora_rank", where),
            qk_rope_head_dim=_whole(c, "qk_rope_head_dim", where),
            q_lora_rank=_optional(c, "q_lora_rank", where) or None,
        )
    window, window_layers = _window_layers(c, model_type, layers, where)
    figures.update(sliding_window=window, sliding_window_layers=window_layers)
    figures = {k: v for k, v in figures.items() if v is not None}
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
