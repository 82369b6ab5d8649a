"""Figures of a preset model from its shape: parameter counts, weights as checkpoints store them, KV cache.

The arithmetic of attention, windows and experts is :mod:`xlsxplan.core.architecture`'s; these functions read a
preset's shape from the catalog (MODEL_SPEC) and apply it. A precision name and its byte count give the same
answer everywhere: what differs between a checkpoint's parts (the 16-bit token embeddings and output head that
FP8, INT8, INT4 and NVFP4 checkpoints keep) is an argument of its own, ``embedding_bytes_per_param``.

References
----------
.. [1] DeepSeek-AI 2024, "DeepSeek-V2", arXiv:2405.04434, section 2.1 and Table 1.
.. [2] Jiang et al. 2023, "Mistral 7B", arXiv:2310.06825, section 2.
.. [3] Jiang et al. 2024, "Mixtral of Experts", arXiv:2401.04088, section 2.
"""

from __future__ import annotations

from typing import Any

from ..core import architecture
from ..domains import Batch, Flag, GPUs, Name, Tokens, TokensOrZero, checked
from ..elementwise import ceil, is_array, maximum, where
from ..precision import BytesPerValue, BytesPerValueOrZero
from .schema import ModelPreset
from .store import load_catalog

__all__ = [
    "count_params",
    "PUBLISHED_EMBEDDING_BYTES",
    "embedding_bytes",
    "embedding_params",
    "model_expert_params_b",
    "model_kv_bytes_per_token",
    "model_kv_gb",
    "model_weights_gb",
    "preset_figures",
]

_GIGA = 1e9


def _attention_params(m: ModelPreset) -> int:
    """Weights of one attention block: projections only (no biases)."""
    h, heads, d = m.hidden, m.heads, m.head_dim
    if m.kv_lora_rank is not None:  # multi-head latent attention (DeepSeek-V2/V3 modeling code)
        rope = m.qk_rope_head_dim or 0
        q_out = heads * (d + rope)
        q = h * q_out if m.q_lora_rank is None else h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * q_out
        kv_down = h * (m.kv_lora_rank + rope) + m.kv_lora_rank  # latent + shared rotary key, and the latent's norm
        kv_up = m.kv_lora_rank * heads * (d + d)  # keys without rope and values, head_dim each
        return q + kv_down + kv_up + heads * d * h
    return h * d * (heads + 2 * m.kv_heads) + heads * d * h


def _moe_layers(m: ModelPreset) -> int:
    return 0 if m.experts is None else m.layers - (m.dense_layers or 0)


def _expert_params(m: ModelPreset) -> int:
    """Weights of one routed expert: a gated MLP (gate, up and down projections)."""
    return 3 * m.hidden * (m.moe_intermediate or m.intermediate or 0)


def count_params(m: ModelPreset) -> tuple[int, int]:
    """Total and active parameters of a model from its shape: ``(total, active)``.

    Embeddings (once if tied), attention projections (grouped-query, or latent attention with its low-rank
    projections and norms), gated MLPs (three matrices), routed and shared experts with their router, and two norms
    per layer plus the final one. Biases and extra norms (Qwen2's QKV bias, Gemma 2's four norms per layer) are left
    out: under 0.01% of any model here. ``active`` drops the routed experts a token does not use.
    """
    h = m.hidden
    embeddings = m.vocab * h * (1 if m.tied_embeddings else 2)
    moe_layers = _moe_layers(m)
    dense_layers = m.layers - moe_layers
    dense_mlp = 3 * h * (m.intermediate or 0)
    expert = _expert_params(m)
    moe_mlp = 0
    if moe_layers:
        moe_mlp = (m.experts + (m.shared_experts or 0)) * expert + m.experts * h  # type: ignore[operator]
    total = embeddings + m.layers * (_attention_params(m) + 2 * h) + dense_layers * dense_mlp + moe_layers * moe_mlp + h
    unused = moe_layers * ((m.experts or 0) - (m.experts_per_token or 0)) * expert
    return total, total - unused


def _model(model: str) -> ModelPreset:
    return load_catalog().models.get(model)  # type: ignore[return-value]


def _kv_bytes_per_layer_token(m: ModelPreset, bytes_per_value: float, tp: int) -> float:
    """Bytes one token adds to one layer's cache, summed over the tensor-parallel group (replicas included)."""
    if m.kv_lora_rank is not None:
        return tp * (m.kv_lora_rank + (m.qk_rope_head_dim or 0)) * bytes_per_value  # latent replicated on every GPU
    return tp * 2.0 * ceil(m.kv_heads / tp) * m.head_dim * bytes_per_value


def _cached_layer_tokens(m: ModelPreset, context_tokens: float, windows: int = 1) -> float:
    """Layer-tokens a sequence of ``context_tokens`` keeps in a preset model; ``windows`` 0 ignores its windows."""
    if not is_array(windows) and not windows:
        return m.layers * context_tokens
    windowed = architecture.layer_tokens(m.layers, m.sliding_window, m.sliding_window_layers, context_tokens)
    return where(windows == 0, m.layers * context_tokens, windowed)


@checked(arrays=True)
def model_kv_bytes_per_token(
    model: Name, context_tokens: TokensOrZero = 0, bytes_per_value: BytesPerValue = 2, tp: GPUs = 1,
    windows: Flag = 1,
) -> float:  # fmt: skip
    """KV cache per token of a preset model, by its architecture: latent attention, sliding windows, GQA, replicas.

    Parameters
    ----------
    model : str
        A preset model name, e.g. DeepSeek-V3 or Gemma-2-9B [name].
    context_tokens : float, default 0
        Sequence length the average is taken over; window layers stop growing past their window. 0 counts every
        layer in full (a short sequence) [tokens].
    bytes_per_value : float, default 2
        Bytes per cached number, or a precision name such as bf16, fp8 or q8_0 [bytes].
    tp : int, default 1
        Tensor-parallel GPUs; KV heads are replicated when tp exceeds them, a latent cache on every GPU [count].
    windows : int, default 1
        1 caches a window layer's window only; 0 caches every layer in full, as engines without sliding-window
        support allocate (vLLM's first Gemma 2 support, PR #5908) [flag].

    Returns
    -------
    float
        KV cache per token across the tensor-parallel group, replicas included [bytes].

    Notes
    -----
    Grouped-query: ``2 * ceil(kv_heads / tp) * tp * head_dim * b`` per layer; latent attention: ``tp *
    (kv_lora_rank + qk_rope_head_dim) * b`` per layer (DeepSeek-V2, arXiv:2405.04434). Averaged over a sequence,
    window layers count ``min(T, window) / T`` (Mistral 7B, arXiv:2310.06825), as Hugging Face transformers'
    static sliding-window cache allocates them (cache_utils.py StaticSlidingWindowLayer). Llama-3.1-70B: 327,680
    bytes; DeepSeek-V3: 70,272; Qwen3-235B-A22B: 192,512; Gemma-2-9B at 8,192 tokens 258,048, or 344,064 with
    windows 0.
    """
    m = _model(model)
    per_layer = _kv_bytes_per_layer_token(m, bytes_per_value, tp)
    if not is_array(context_tokens) and context_tokens == 0:
        return per_layer * m.layers
    none = context_tokens == 0  # over arrays: a divisor of 1 keeps these elements harmless
    averaged = per_layer * _cached_layer_tokens(m, context_tokens, windows) / where(none, 1.0, context_tokens)
    return where(none, per_layer * m.layers, averaged)


@checked(arrays=True)
def model_kv_gb(
    model: Name,
    context_tokens: Tokens,
    sequences: Batch = 1,
    bytes_per_value: BytesPerValue = 2,
    tp: GPUs = 1,
    windows: Flag = 1,
) -> float:
    """KV cache that sequences of a given length hold for a preset model, windows and latent attention included.

    Parameters
    ----------
    model : str
        A preset model name [name].
    context_tokens : float
        Tokens in each sequence, prompt plus output [tokens].
    sequences : int, default 1
        Sequences held at once [count].
    bytes_per_value : float, default 2
        Bytes per cached number, or a precision name [bytes].
    tp : int, default 1
        Tensor-parallel GPUs; replicated heads count on every GPU that holds them [count].
    windows : int, default 1
        1 caches a window layer's window only; 0 every layer in full, as an engine without sliding-window support
        does [flag].

    Returns
    -------
    float
        KV cache across the tensor-parallel group [GB].

    Notes
    -----
    ``sequences * MODEL_KV_BYTES_PER_TOKEN(model, T, b, tp, windows) * T / 1e9``. Mistral-7B at 32,768 tokens:
    0.537 GB, one eighth of 4.29 GB without its window (Mistral 7B, arXiv:2310.06825, section 2).
    """
    m = _model(model)
    per_layer = _kv_bytes_per_layer_token(m, bytes_per_value, tp)
    return sequences * per_layer * _cached_layer_tokens(m, context_tokens, windows) / _GIGA


def embedding_params(m: ModelPreset) -> int:
    """Token-embedding and output-head parameters of a preset: ``vocab * hidden``, twice unless they are tied."""
    return m.vocab * m.hidden * (1 if m.tied_embeddings else 2)


PUBLISHED_EMBEDDING_BYTES = 2.0
"""Bytes per parameter that quantized checkpoints keep their token embeddings and output head in: 16 bits. AutoAWQ,
GPTQ, llm-compressor and ModelOpt quantize only the Linear layers of the decoder blocks (formats.toml ``embeddings``
cites each)."""


def embedding_bytes(bytes_per_param: float, embedding_bytes_per_param: float = 0) -> float:
    """The bytes per parameter of the embeddings and head: the given width, or for 0 the published default [bytes].

    0 means as checkpoints are published: 16 bits (:data:`PUBLISHED_EMBEDDING_BYTES`) when the weights are narrower
    than that, else the weights' own width (a BF16 or FP32 checkpoint stores every tensor alike). Unchecked.
    """
    if not is_array(embedding_bytes_per_param) and embedding_bytes_per_param:
        return embedding_bytes_per_param
    return where(embedding_bytes_per_param != 0, embedding_bytes_per_param,
                 maximum(bytes_per_param, PUBLISHED_EMBEDDING_BYTES))  # fmt: skip


@checked(arrays=True)
def model_weights_gb(
    model: Name, bytes_per_param: BytesPerValue = 2, embedding_bytes_per_param: BytesPerValueOrZero = 0
) -> float:
    """Memory a preset model's weights take: every parameter, every expert, embeddings as checkpoints store them.

    Parameters
    ----------
    model : str
        A preset model name [name].
    bytes_per_param : float, default 2
        Bytes per weight of the decoder blocks, or a format name (fp8, awq, nvfp4, q4_k_m) [bytes].
    embedding_bytes_per_param : float, default 0
        Bytes per weight of the token embeddings and output head, or a format name; 0 as checkpoints are
        published: 16-bit below 16-bit weights, else the weights' own. Give the weights' format for llama.cpp [bytes].

    Returns
    -------
    float
        Weights memory [GB].

    Notes
    -----
    ``(N - E) * b + E * b_emb`` with N the catalog's published total (MODEL_SPEC params_b), ``E = vocab * hidden``
    (twice when the embeddings are not tied) and ``b_emb`` the embedding width: AutoAWQ, GPTQ, llm-compressor and
    ModelOpt quantize only the Linear layers of the decoder blocks (catalog/formats.toml ``embeddings`` cites them;
    FORMAT_SOURCE names the format's source), so 0 gives 2 bytes below 16-bit weights. llama.cpp's formats quantize
    every tensor and their measured bits per weight include the embeddings: give the format twice. A name and its
    byte count give the same result: ``MODEL_WEIGHTS_GB(m, "fp8")`` is ``MODEL_WEIGHTS_GB(m, 1)``. Llama-3-8B: AWQ
    5.73 GB (published checkpoints 4.68 + 1.05 GB), FP8 9.08 GB (5 + 4.08 GB), where ``N * b`` alone gives 4.17 and
    8.03. A mixture-of-experts model holds all its experts (Mixtral of Experts, arXiv:2401.04088: 47B held, 13B used
    per token). WEIGHTS_GB stays the plain ``N * b`` of "Back-of-the-Envelope Estimation for LLM Systems".
    """
    m = _model(model)
    total = m.params_b * _GIGA
    emb = min(float(embedding_params(m)), total)
    return ((total - emb) * bytes_per_param + emb * embedding_bytes(bytes_per_param, embedding_bytes_per_param)) / _GIGA


@checked
def model_expert_params_b(model: Name) -> float:
    """Parameters in a preset model's routed experts, from its shape; 0 for a dense model.

    Parameters
    ----------
    model : str
        A preset model name [name].

    Returns
    -------
    float
        Routed-expert parameters, in billions [B params].

    Notes
    -----
    ``moe_layers * experts * 3 * hidden * moe_intermediate`` (gated expert MLPs; moe_layers = layers -
    dense_layers). DeepSeek-V3: 58 x 256 x 3 x 7168 x 2048 = 653.9B of its 671B. Feed it to WEIGHTS_GB_PER_GPU.
    """
    m = _model(model)
    return _moe_layers(m) * (m.experts or 0) * _expert_params(m) / _GIGA


def preset_figures(m: ModelPreset) -> dict[str, Any]:
    """The architecture fields of a preset as a plain dict (for display): the figures it has, in catalog order."""
    figures = {field: m.figure(field) for field in m.FIGURES}
    return {field: value for field, value in figures.items() if value is not None}
