"""Real model architectures: what the KV cache, the weights and the bandwidth of today's models actually are.

A plain ``2 * layers * kv_heads * head_dim`` KV cache and a ``params * bytes`` weight read are right for a dense,
full-attention model. Today's models break them in four ways, each handled here:

* **Multi-head latent attention** (DeepSeek-V2/V3) caches one compressed latent of ``kv_lora_rank`` numbers plus a
  shared rotary key of ``qk_rope_head_dim`` numbers per layer, not keys and values per head.
* **Sliding windows** (Mistral-7B v0.1 on every layer, Gemma 2 on every other layer, Gemma 3 on five in six): a layer
  limited to a window of W tokens never caches more than W tokens, whatever the context.
* **Mixture of experts**: memory holds every expert (total parameters) but a token reads and computes only the experts
  it is routed to (active parameters); a batch touches more experts than one token does.
* **Tensor parallelism** splits KV heads across GPUs, but a GPU cannot hold less than one head: with more GPUs than KV
  heads, heads are replicated. A latent-attention cache is replicated on every tensor-parallel GPU.

Functions taking a ``model`` name read its shape from the catalog (MODEL_SPEC); the others take the numbers.

References
----------
.. [1] DeepSeek-AI 2024, "DeepSeek-V2", arXiv:2405.04434, section 2.1 and Table 1 (MLA caches (d_c + d_h^R) l
   elements per token).
.. [2] Jiang et al. 2023, "Mistral 7B", arXiv:2310.06825, section 2 (sliding window 4096; rolling buffer cache: 8x
   less cache memory at 32k tokens).
.. [3] Gemma Team 2024, "Gemma 2", arXiv:2408.00118, section 2 (local sliding window 4096 and global attention in
   alternating layers).
.. [4] Fedus et al. 2022, "Switch Transformers", arXiv:2101.03961; Jiang et al. 2024, "Mixtral of Experts",
   arXiv:2401.04088, section 2 (47B parameters held, 13B used per token).
.. [5] Shoeybi et al. 2019, "Megatron-LM", arXiv:1909.08053, section 3 (attention heads split across tensor-parallel
   GPUs).
"""

from __future__ import annotations

import math
from typing import Any

from .catalog import ModelPreset, load_catalog
from .domains import (
    Batch,
    BytesPerValue,
    Count,
    CountOrZero,
    Flag,
    GPUs,
    Name,
    ParamsB,
    ParamsBOrZero,
    Tokens,
    TokensOrZero,
    checked,
)
from .errors import OutOfRangeError
from .precision import WeightFormat, lookup

__all__ = [
    "count_params",
    "kv_bytes_per_token_mla",
    "kv_bytes_per_sequence",
    "kv_heads_per_gpu",
    "model_kv_bytes_per_token",
    "model_kv_gb",
    "model_weights_gb",
    "embedding_params",
    "model_expert_params_b",
    "moe_params_read_b",
    "weights_gb_per_gpu",
]

_GIGA = 1e9


# --- parameter counts from a model's shape --------------------------------------------------------------------------


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


# --- KV cache ---------------------------------------------------------------------------------------------------------


@checked
def kv_bytes_per_token_mla(
    layers: Count, kv_lora_rank: Count, qk_rope_head_dim: Count, bytes_per_value: BytesPerValue = 2
) -> float:
    """KV cache one token occupies under multi-head latent attention: the latent plus the rotary key, per layer.

    Parameters
    ----------
    layers : int
        Transformer layers [count].
    kv_lora_rank : int
        Width of the compressed key-value latent (config kv_lora_rank; 512 for DeepSeek-V3) [count].
    qk_rope_head_dim : int
        Width of the rotary key shared by all heads (config qk_rope_head_dim; 64 for DeepSeek-V3) [count].
    bytes_per_value : float, default 2
        Bytes per cached number, or a precision name such as bf16, fp8 or q8_0 [bytes].

    Returns
    -------
    float
        KV cache per token [bytes].

    Notes
    -----
    ``layers * (kv_lora_rank + qk_rope_head_dim) * bytes_per_value`` (DeepSeek-V2, arXiv:2405.04434, Table 1:
    (d_c + d_h^R) l elements). DeepSeek-V3 in BF16: 61 x 576 x 2 = 70,272 bytes, against 2 x 61 x 128 x 128 x 2 =
    3,997,696 for the same 128 heads cached in full: 57 times less.
    """
    return float(layers * (kv_lora_rank + qk_rope_head_dim) * bytes_per_value)


@checked
def kv_bytes_per_sequence(
    layers: Count,
    kv_heads: Count,
    head_dim: Count,
    context_tokens: Tokens,
    window: CountOrZero = 0,
    window_layers: CountOrZero = 0,
    bytes_per_value: BytesPerValue = 2,
) -> float:
    """KV cache one sequence holds when some layers attend only to a sliding window of recent tokens.

    Parameters
    ----------
    layers : int
        Transformer layers [count].
    kv_heads : int
        Key-value heads per layer [count].
    head_dim : int
        Dimension of one attention head [count].
    context_tokens : float
        Tokens in the sequence, prompt plus output [tokens].
    window : int, default 0
        Sliding-window length; 0 for none (every layer sees the whole context) [tokens].
    window_layers : int, default 0
        Layers limited to the window: all for Mistral-7B v0.1, half for Gemma 2, 5 in 6 for Gemma 3; required with a
        window, 0 without one [count].
    bytes_per_value : float, default 2
        Bytes per cached number, or a precision name [bytes].

    Returns
    -------
    float
        KV cache of the sequence [bytes].

    Notes
    -----
    ``2 * kv_heads * head_dim * b * ((layers - window_layers) * T + window_layers * min(T, window))`` (Mistral 7B,
    arXiv:2310.06825, section 2, rolling buffer cache; Gemma 2, arXiv:2408.00118, section 2). Mistral-7B at 32,768
    tokens with a 4,096 window on all 32 layers holds 8 times less than without it, as its paper says. A window and
    the layers it limits go together: one without the other is refused (#NUM!) rather than guessed.
    """
    if window_layers > layers:
        raise OutOfRangeError(
            f"window_layers must be at most layers ({layers:,}), got {window_layers:,}", "window_layers"
        )
    if window_layers and not window:
        raise OutOfRangeError("window must be given (above 0) when window_layers is above 0", "window")
    if window and not window_layers:
        raise OutOfRangeError(
            f"window_layers must be given (1 to layers, {layers:,}) when window is above 0: the layers limited to "
            "the window (all of them for Mistral-7B v0.1, half for Gemma 2)",
            "window_layers",
        )
    return 2.0 * kv_heads * head_dim * bytes_per_value * _layer_tokens(layers, window, window_layers, context_tokens)


@checked
def kv_heads_per_gpu(kv_heads: Count, tp: GPUs) -> int:
    """Key-value heads each tensor-parallel GPU holds: a share of the heads, but never less than one whole head.

    Parameters
    ----------
    kv_heads : int
        Key-value heads per layer [count].
    tp : int
        Tensor-parallel GPUs sharing each layer [count].

    Returns
    -------
    int
        Key-value heads per GPU; with more GPUs than heads, heads are replicated [count].

    Notes
    -----
    ``ceil(kv_heads / tp)`` (heads split across GPUs: Megatron-LM, arXiv:1909.08053, section 3; vLLM and SGLang
    replicate a KV head when tp exceeds kv_heads). Llama-3.1-70B's 8 KV heads on 16 GPUs: 1 per GPU, so the cache
    across the group is twice the model's.
    """
    return math.ceil(kv_heads / tp)


def _model(model: str) -> ModelPreset:
    return load_catalog().models.get(model)  # type: ignore[return-value]


def _kv_bytes_per_layer_token(m: ModelPreset, bytes_per_value: float, tp: int) -> float:
    """Bytes one token adds to one layer's cache, summed over the tensor-parallel group (replicas included)."""
    if m.kv_lora_rank is not None:
        return tp * (m.kv_lora_rank + (m.qk_rope_head_dim or 0)) * bytes_per_value  # latent replicated on every GPU
    return tp * 2.0 * math.ceil(m.kv_heads / tp) * m.head_dim * bytes_per_value


def _layer_tokens(layers: int, window: int | None, window_layers: int | None, context_tokens: float) -> float:
    """Layer-tokens a sequence of ``context_tokens`` keeps: window layers stop at the window. Unchecked."""
    window_layers = window_layers or 0
    capped = min(context_tokens, window) if window else context_tokens
    return (layers - window_layers) * context_tokens + window_layers * capped


def _cached_layer_tokens(m: ModelPreset, context_tokens: float, windows: int = 1) -> float:
    """Layer-tokens a sequence of ``context_tokens`` keeps in a preset model; ``windows`` 0 ignores its windows."""
    if not windows:
        return m.layers * context_tokens
    return _layer_tokens(m.layers, m.sliding_window, m.sliding_window_layers, context_tokens)


@checked
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
    if context_tokens == 0:
        return per_layer * m.layers
    return per_layer * _cached_layer_tokens(m, context_tokens, windows) / context_tokens


@checked
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


# --- weights and bandwidth --------------------------------------------------------------------------------------------


def embedding_params(m: ModelPreset) -> int:
    """Token-embedding and output-head parameters of a preset: ``vocab * hidden``, twice unless they are tied."""
    return m.vocab * m.hidden * (1 if m.tied_embeddings else 2)


@checked
def model_weights_gb(model: Name, bytes_per_param: WeightFormat = 2) -> float:
    """Memory a preset model's weights take: every parameter, every expert, embeddings as checkpoints store them.

    Parameters
    ----------
    model : str
        A preset model name [name].
    bytes_per_param : float, default 2
        Bytes per weight for every parameter, or a format name (fp8, awq, nvfp4, q4_k_m), stored as its checkpoints
        are: 16-bit embeddings for fp8, int8, awq, nvfp4 [bytes].

    Returns
    -------
    float
        Weights memory [GB].

    Notes
    -----
    ``(N - E) * b + E * b_emb`` with N the catalog's published total (MODEL_SPEC params_b), ``E = vocab * hidden``
    (twice when the embeddings are not tied) and ``b_emb`` the format's embedding width (catalog/formats.toml
    ``embeddings``; FORMAT_SOURCE cites it): AutoAWQ, GPTQ, llm-compressor and ModelOpt quantize only the Linear
    layers of the decoder blocks. llama.cpp's formats quantize every tensor and their measured bits per weight
    include the embeddings, so ``b_emb = b``. Llama-3-8B: AWQ 5.73 GB (published checkpoints 4.68 + 1.05 GB), FP8
    9.08 GB (5 + 4.08 GB), where ``N * b`` alone gives 4.17 and 8.03. A mixture-of-experts model holds all its
    experts (Mixtral of Experts, arXiv:2401.04088: 47B held, 13B used per token). WEIGHTS_GB stays the plain
    ``N * b`` of seed 000.
    """
    m = _model(model)
    fmt = getattr(bytes_per_param, "format", None)
    total = m.params_b * _GIGA
    if fmt is None or fmt.embeddings is None:
        return total * bytes_per_param / _GIGA
    emb = min(float(embedding_params(m)), total)
    return ((total - emb) * bytes_per_param + emb * lookup(fmt.embeddings).bytes_per_value) / _GIGA


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


@checked
def moe_params_read_b(
    params_b: ParamsB, active_params_b: ParamsB, experts: Count, experts_per_token: Count, batch: Batch = 1
) -> float:
    """Parameters a decode step reads from memory for a mixture-of-experts model: more experts as the batch grows.

    Parameters
    ----------
    params_b : float
        Total parameters, in billions [B params].
    active_params_b : float
        Parameters one token uses, in billions [B params].
    experts : int
        Routed experts per MoE layer [count].
    experts_per_token : int
        Routed experts each token uses [count].
    batch : int, default 1
        Tokens decoded together, each routed on its own [count].

    Returns
    -------
    float
        Parameters read per step, in billions: active_params_b at batch 1, approaching params_b [B params].

    Notes
    -----
    Routed-expert parameters R = (N - N_active) / (1 - k/E); with uniform, independent routing a layer's expert is
    touched by some token of the batch with probability ``1 - (1 - k/E)^batch``, so a step reads
    ``N - R + R * (1 - (1 - k/E)^batch)``. Real routers are less uniform, so this is an upper estimate. Use it as
    DECODE_TOKS's params_b. Mixtral-8x7B (46.7B, 12.9B, 2 of 8) at batch 8 reads 42.2B.
    """
    _check_moe(params_b, active_params_b, experts, experts_per_token)
    return _moe_read(params_b, active_params_b, experts, experts_per_token, batch)


def _check_moe(params_b: float, active_params_b: float, experts: int, experts_per_token: int) -> None:
    """MOE_PARAMS_READ_B's checks: the active parameters within the total, the routed experts within the experts."""
    if active_params_b > params_b:
        raise OutOfRangeError("active_params_b cannot exceed params_b", "active_params_b")
    if experts_per_token > experts:
        raise OutOfRangeError(
            f"experts_per_token must be at most experts ({experts:,}), got {experts_per_token:,}", "experts_per_token"
        )


def _moe_read(params_b: float, active_params_b: float, experts: int, experts_per_token: int, batch: float) -> float:
    """MOE_PARAMS_READ_B's arithmetic, for callers whose arguments are already checked."""
    share = experts_per_token / experts
    if share == 1:
        return params_b
    routed = (params_b - active_params_b) / (1 - share)
    touched = 1 - (1 - share) ** batch
    return min(params_b, params_b - routed + routed * touched)


@checked
def weights_gb_per_gpu(
    params_b: ParamsB,
    expert_params_b: ParamsBOrZero,
    tp: GPUs,
    ep: GPUs = 1,
    bytes_per_param: BytesPerValue = 2,
) -> float:
    """Weights one GPU holds when the dense part is split by tensor parallelism and the experts by expert parallelism.

    Parameters
    ----------
    params_b : float
        Total parameters, in billions [B params].
    expert_params_b : float
        Routed-expert parameters among them, in billions; 0 for a dense model (MODEL_EXPERT_PARAMS_B) [B params].
    tp : int
        GPUs sharing each dense (attention, embedding, shared) weight matrix [count].
    ep : int, default 1
        GPUs the routed experts are spread over, each holding experts / ep whole experts [count].
    bytes_per_param : float, default 2
        Bytes per weight, or a precision name [bytes].

    Returns
    -------
    float
        Weights on one GPU [GB].

    Notes
    -----
    ``((N - N_experts) / tp + N_experts / ep) * b`` (expert parallelism: GShard, Lepikhin et al. 2020,
    arXiv:2006.16668, section 2.2; tensor parallelism: Megatron-LM, arXiv:1909.08053). DeepSeek-V3 in FP8 on 8 GPUs
    (tp 8, ep 8) holds 83.9 GB per GPU.
    """
    if expert_params_b > params_b:
        raise OutOfRangeError("expert_params_b cannot exceed params_b", "expert_params_b")
    return ((params_b - expert_params_b) / tp + expert_params_b / ep) * bytes_per_param


def preset_figures(m: ModelPreset) -> dict[str, Any]:
    """The architecture fields of a preset as a plain dict (for display): the figures it has, in catalog order."""
    figures = {field: m.figure(field) for field in m.FIGURES}
    return {field: value for field, value in figures.items() if value is not None}
