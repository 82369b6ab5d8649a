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

from ..core import architecture, engine, equations
from ..domains import Batch, Count, Flag, Fraction, GPUs, MemoryGB, MemoryGBOrZero, Name, Tokens, TokensOrZero, checked
from ..infra.elementwise import ceil, is_array, maximum, minimum, refused, where
from ..precision import BytesPerValue, BytesPerValueOrZero
from .schema import ModelPreset
from .store import load_catalog

__all__ = [
    "routed_expert_params",
    "count_params",
    "PUBLISHED_EMBEDDING_BYTES",
    "embedding_bytes",
    "embedding_params",
    "model_expert_params_b",
    "model_kv_bytes_per_token",
    "model_engine_concurrency",
    "model_engine_kv_tokens",
    "model_kv_gb",
    "model_sequence_bytes",
    "model_state_bytes",
    "model_weights_gb",
    "preset_figures",
    "SPARSE_MLA_SCALE_BLOCK",
    "latent_bytes_per_layer_token",
    "sequence_bytes",
    "state_bytes",
    "weights_gb",
]

_GIGA = 1e9


def _attention_params(m: ModelPreset) -> int:
    """Weights of one attention block: projections, and the biases, sinks, output gate and indexer a config has."""
    h, heads, d = m.hidden, m.heads, m.head_dim
    if m.kv_lora_rank is not None:  # multi-head latent attention (DeepSeek-V2/V3 modeling code)
        rope = m.qk_rope_head_dim or 0
        q_out = heads * (d + rope)
        q = h * q_out if m.q_lora_rank is None else h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * q_out
        kv_down = h * (m.kv_lora_rank + rope) + m.kv_lora_rank  # latent + shared rotary key, and the latent's norm
        v = m.v_head_dim or d  # values as wide as the keys without rope (DeepSeek), or wider (GLM-5)
        kv_up = m.kv_lora_rank * heads * (d + v)  # keys without rope and values
        total = q + kv_down + kv_up + heads * v * h
    else:
        q_out = heads * d * (2 if m.attention_output_gate else 1)  # Qwen3-Next: query and its output gate
        total = h * (q_out + 2 * m.kv_heads * d) + heads * d * h
        if m.attention_bias:  # q, k, v and o biases (gpt-oss; transformers' attention_bias)
            total += heads * d + 2 * m.kv_heads * d + h
    if m.attention_sinks:  # one learned logit per head (gpt-oss)
        total += heads
    if m.index_heads is not None and m.index_head_dim is not None:
        # DeepSeek sparse attention's lightning indexer: wq_b from the query latent, wk, k_norm, weights_proj
        total += (m.q_lora_rank or h) * m.index_heads * m.index_head_dim + h * m.index_head_dim
        total += 2 * m.index_head_dim + h * m.index_heads
    return total


def _linear_attention_params(m: ModelPreset) -> int:
    """Weights of one linear-attention layer. Gated DeltaNet (Qwen3-Next): in_proj_qkvz, in_proj_ba, the short
    convolution, A_log and dt_bias per value head, the gated norm and out_proj. Lightning attention (MiniMax-M1's
    MiniMaxM1LightningAttention): qkv_proj, output_gate, an RMSNorm over all heads and out_proj; its decay rates are
    fixed per head (slope_rate), not weights."""
    if not m.linear_attention_layers:
        return 0
    nk, nv = m.linear_key_heads or 0, m.linear_value_heads or 0
    dk, dv = m.linear_key_head_dim or 0, m.linear_value_head_dim or 0
    conv_dim = 2 * nk * dk + nv * dv
    if m.lightning_attention:  # q, k and v, the output gate, the norm, out_proj
        return m.hidden * (conv_dim + nv * dv) + nv * dv + nv * dv * m.hidden
    return (
        m.hidden * (conv_dim + nv * dv)
        + m.hidden * 2 * nv
        + conv_dim * (m.linear_conv_kernel or 0)
        + 2 * nv
        + dv
        + nv * dv * m.hidden
    )


def _mamba_params(m: ModelPreset) -> int:
    """Weights of one Mamba-2 mixer (Nemotron-H): in_proj to z, x, B, C and dt; the convolution with its bias; A_log,
    D and dt_bias per head; the gated norm; out_proj."""
    if not m.mamba_layers:
        return 0
    inner = (m.mamba_heads or 0) * (m.mamba_head_dim or 0)
    bc = 2 * (m.mamba_groups or 0) * (m.mamba_state_size or 0)
    heads = m.mamba_heads or 0
    conv_dim = inner + bc
    return (
        m.hidden * (2 * inner + bc + heads)
        + conv_dim * ((m.mamba_conv_kernel or 0) + 1)
        + 3 * heads
        + inner
        + inner * m.hidden
    )


def _moe_layers(m: ModelPreset) -> int:
    return 0 if m.experts is None else m.mlp_layer_count - (m.dense_layers or 0)


def _mlp_params(m: ModelPreset, width: int) -> int:
    """One MLP of ``width``: three matrices if gated, two if not, and their biases if the config has them."""
    matrices = 3 if m.gated_mlp else 2
    biases = ((matrices - 1) * width + m.hidden) if m.mlp_bias else 0
    return matrices * m.hidden * width + biases


def _expert_params(m: ModelPreset) -> int:
    """Weights of one routed expert: an MLP of the expert width (gate, up and down projections when gated)."""
    return _mlp_params(m, m.moe_intermediate or m.intermediate or 0)


def count_params(m: ModelPreset) -> tuple[int, int]:
    """Total and active parameters of a model from its shape: ``(total, active)``.

    Embeddings (once if tied), attention projections (grouped-query, or latent attention with its low-rank
    projections and norms; biases, sinks, an output gate and a sparse-attention indexer where the preset has them),
    linear-attention (Gated DeltaNet or lightning attention) and Mamba-2 mixers, MLPs (gated: three matrices; else
    two), routed and shared experts with their router, and one norm per mixer and per MLP plus the final one. Extra
    norms (Qwen3's and Llama 4's query-key norms, Gemma 2's four per layer) are left out: under 0.01% of any model
    here. ``active`` drops the routed experts a token does not use and keeps both embedding matrices;
    multi-token-prediction modules (``mtp_layers``) are in neither.
    """
    h = m.hidden
    embeddings = m.vocab * h * (1 if m.tied_embeddings else 2)
    attention = m.attention_layer_count
    linear, mamba = m.linear_attention_layers or 0, m.mamba_layers or 0
    moe_layers = _moe_layers(m)
    dense_layers = m.mlp_layer_count - moe_layers
    expert = _expert_params(m)
    moe_mlp = 0
    if moe_layers:
        moe_mlp = (m.experts + (m.shared_experts or 0)) * expert + m.experts * h  # type: ignore[operator]
        moe_mlp += m.experts if m.mlp_bias else 0  # type: ignore[operator]  # the router's bias (gpt-oss)
    norms = (attention + linear + mamba + m.mlp_layer_count + 1) * h
    total = (
        embeddings
        + attention * _attention_params(m)
        + linear * _linear_attention_params(m)
        + mamba * _mamba_params(m)
        + dense_layers * _mlp_params(m, m.intermediate or 0)
        + moe_layers * moe_mlp
        + norms
    )
    unused = moe_layers * ((m.experts or 0) - (m.experts_per_token or 0)) * expert
    return total, total - unused


def _model(model: str) -> ModelPreset:
    return load_catalog().models.get(model)


SPARSE_MLA_SCALE_BLOCK = 128
"""Latent values sharing one FP32 scale in the FP8 cache of DeepSeek sparse attention, and indexer-key values sharing
one in its indexer cache (vLLM FlashMLASparseBackend's 656-byte fp8_ds_mla layout; DeepseekV32IndexerCache's
``index_head_dim + index_head_dim // 128 * 4`` bytes; SGLang's NSA pools alike)."""


def latent_bytes_per_layer_token(m: ModelPreset, bytes_per_value: float) -> float:
    """Bytes of one token's latent (and indexer key) in one layer on one GPU, under latent attention.

    ``(kv_lora_rank + qk_rope_head_dim) * b``; with DeepSeek's sparse-attention indexer, its key adds
    ``index_head_dim`` FP8 values and an FP32 scale per 128 (always FP8), and an FP8 latent is stored as the sparse
    kernels read it: ``kv_lora_rank`` FP8 values, an FP32 scale per 128 and the rotary key kept in 16 bits (656 bytes
    for DeepSeek-V3.2)."""
    rope = m.qk_rope_head_dim or 0
    latent = (m.kv_lora_rank or 0) + rope
    if m.index_head_dim is None:
        return latent * bytes_per_value
    scales = 4 * ((m.kv_lora_rank or 0) // SPARSE_MLA_SCALE_BLOCK)
    stored = where(bytes_per_value == 1, (m.kv_lora_rank or 0) + scales + 2 * rope, latent * bytes_per_value)
    return stored + m.index_head_dim + 4 * (m.index_head_dim // SPARSE_MLA_SCALE_BLOCK)


def _kv_bytes_per_layer_token(m: ModelPreset, bytes_per_value: float, tp: int) -> float:
    """Bytes one token adds to one layer's cache, summed over the tensor-parallel group (replicas included)."""
    if m.kv_lora_rank is not None:
        return tp * latent_bytes_per_layer_token(m, bytes_per_value)  # latent replicated on every GPU
    return tp * 2.0 * ceil(m.kv_heads / tp) * m.head_dim * bytes_per_value


def _cached_layer_tokens(m: ModelPreset, context_tokens: float, windows: int = 1) -> float:
    """Layer-tokens a sequence of ``context_tokens`` keeps in a preset model's attention layers; ``windows`` 0
    ignores its windows and chunks."""
    attention = m.attention_layer_count
    if not is_array(windows) and not windows:
        return attention * context_tokens
    chunked = m.chunked_layers or 0
    kept = architecture.layer_tokens(attention - chunked, m.sliding_window, m.sliding_window_layers, context_tokens)
    windowed = kept + chunked * minimum(context_tokens, m.attention_chunk or context_tokens)
    return windowed if not is_array(windows) else where(windows == 0, attention * context_tokens, windowed)


def state_bytes(
    m: ModelPreset, state_bytes_per_value: float = 2, conv_bytes_per_value: float = 2, tp: int = 1
) -> float:
    """Fixed state of one sequence in a preset's linear-attention and Mamba-2 layers, over the tensor-parallel group
    [bytes]; 0 for a model with attention only. Unchecked: MODEL_STATE_BYTES and the serving figures."""
    total = 0.0
    if m.linear_attention_layers:
        total += m.linear_attention_layers * architecture.linear_attention_state(
            m.linear_key_heads or 0,
            m.linear_value_heads or 0,
            m.linear_key_head_dim or 0,
            m.linear_value_head_dim or 0,
            m.linear_conv_kernel or 1,
            state_bytes_per_value,
            conv_bytes_per_value,
        )
    if m.mamba_layers:
        total += m.mamba_layers * architecture.mamba_state(
            m.mamba_heads or 0,
            m.mamba_head_dim or 0,
            m.mamba_state_size or 0,
            m.mamba_groups or 1,
            m.mamba_conv_kernel or 1,
            state_bytes_per_value,
            conv_bytes_per_value,
            tp,
        )
    return total


def sequence_bytes(
    m: ModelPreset,
    context_tokens: float,
    bytes_per_value: float = 2,
    tp: int = 1,
    windows: int = 1,
    state_bytes_per_value: float = 2,
) -> float:
    """KV cache plus fixed state of one sequence of ``context_tokens`` in a preset, over the tensor-parallel group
    [bytes]. Unchecked: MODEL_SEQ_BYTES, MODEL_KV_GB and the engine figures. The convolution state is kept at 2 bytes
    (the model's 16 bits, as vLLM and SGLang keep it by default)."""
    kv = _kv_bytes_per_layer_token(m, bytes_per_value, tp) * _cached_layer_tokens(m, context_tokens, windows)
    return kv + state_bytes(m, state_bytes_per_value, 2, tp)


@checked(arrays=True)
def model_kv_bytes_per_token(
    model: Name,
    context_tokens: TokensOrZero = 0,
    bytes_per_value: BytesPerValue = 2,
    tp: GPUs = 1,
    windows: Flag = 1,
    state_bytes_per_value: BytesPerValue = 2,
) -> float:
    """KV cache per token of a preset model, by its architecture: latent attention, windows, GQA, replicas, state.

    Parameters
    ----------
    model : str
        A preset model name, e.g. DeepSeek-V3 or Gemma-2-9B [name].
    context_tokens : float, default 0
        Sequence length the average is taken over; window and chunked layers stop growing past their window, and a
        hybrid model's fixed state is shared out over it. 0 counts every attention layer in full and no state [tokens].
    bytes_per_value : float, default 2
        Bytes per cached number, or a precision name such as bf16, fp8 or q8_0 [bytes].
    tp : int, default 1
        Tensor-parallel GPUs; KV heads are replicated when tp exceeds them, a latent cache on every GPU [count].
    windows : int, default 1
        1 caches a window layer's window only; 0 caches every layer in full, as engines without sliding-window
        support allocate (vLLM's first Gemma 2 support, PR #5908) [flag].
    state_bytes_per_value : float, default 2
        Bytes per recurrent-state value of linear-attention and Mamba layers: bf16 as vLLM keeps it, fp32 as SGLang
        does by default [bytes].

    Returns
    -------
    float
        KV cache (and state) per token across the tensor-parallel group, replicas included [bytes].

    Notes
    -----
    Grouped-query: ``2 * ceil(kv_heads / tp) * tp * head_dim * b`` per attention layer; latent attention: ``tp *
    (kv_lora_rank + qk_rope_head_dim) * b`` per layer (DeepSeek-V2, arXiv:2405.04434). Averaged over a sequence,
    window layers count ``min(T, window) / T`` (Mistral 7B, arXiv:2310.06825), as Hugging Face transformers'
    static sliding-window cache allocates them (cache_utils.py StaticSlidingWindowLayer), chunked layers
    ``min(T, chunk) / T``, and MODEL_STATE_BYTES adds ``state / T``. Llama-3.1-70B: 327,680 bytes; DeepSeek-V3:
    70,272; Qwen3-235B-A22B: 192,512; Gemma-2-9B at 8,192 tokens 258,048, or 344,064 with windows 0.
    """
    m = _model(model)
    per_layer = _kv_bytes_per_layer_token(m, bytes_per_value, tp)
    if not is_array(context_tokens) and context_tokens == 0:
        return per_layer * m.attention_layer_count
    none = context_tokens == 0  # over arrays: a divisor of 1 keeps these elements harmless
    averaged = sequence_bytes(m, context_tokens, bytes_per_value, tp, windows, state_bytes_per_value) / where(
        none, 1.0, context_tokens
    )
    return where(none, per_layer * m.attention_layer_count, averaged)


@checked(arrays=True)
def model_kv_gb(
    model: Name,
    context_tokens: Tokens,
    sequences: Batch = 1,
    bytes_per_value: BytesPerValue = 2,
    tp: GPUs = 1,
    windows: Flag = 1,
    state_bytes_per_value: BytesPerValue = 2,
) -> float:
    """KV cache that sequences hold for a preset model: windows, latent attention and hybrid layers' state included.

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
    state_bytes_per_value : float, default 2
        Bytes per recurrent-state value of linear-attention and Mamba layers (bf16 in vLLM, fp32 in SGLang) [bytes].

    Returns
    -------
    float
        KV cache and fixed state across the tensor-parallel group [GB].

    Notes
    -----
    ``sequences * MODEL_SEQ_BYTES(model, T, b, b_state, tp, windows) / 1e9``: the cache of the attention layers plus
    MODEL_STATE_BYTES for each sequence. Mistral-7B at 32,768 tokens: 0.537 GB, one eighth of 4.29 GB without its
    window (Mistral 7B, arXiv:2310.06825, section 2).
    """
    m = _model(model)
    return sequences * sequence_bytes(m, context_tokens, bytes_per_value, tp, windows, state_bytes_per_value) / _GIGA


@checked(arrays=True)
def model_state_bytes(
    model: Name, state_bytes_per_value: BytesPerValue = 2, conv_bytes_per_value: BytesPerValue = 2, tp: GPUs = 1
) -> float:
    """Fixed state one sequence holds in a preset's linear-attention and Mamba layers, whatever its length.

    Parameters
    ----------
    model : str
        A preset model name, e.g. Qwen3-Next-80B-A3B or Nemotron-H-56B [name].
    state_bytes_per_value : float, default 2
        Bytes per recurrent-state value, or a precision name: bf16 (vLLM's default, the model's dtype) or fp32
        (SGLang's default --mamba-ssm-dtype) [bytes].
    conv_bytes_per_value : float, default 2
        Bytes per convolution-state value: the model's 16 bits in vLLM and SGLang [bytes].
    tp : int, default 1
        Tensor-parallel GPUs; the state is split across them (Mamba groups they do not divide are replicated) [count].

    Returns
    -------
    float
        State of one sequence across the tensor-parallel group; 0 for a model with attention only [bytes].

    Notes
    -----
    LINEAR_STATE_BYTES over the preset's linear-attention layers plus MAMBA_STATE_BYTES over its Mamba-2 layers, the
    state shapes vLLM allocates (mamba_utils.py MambaStateShapeCalculator). Qwen3-Next-80B-A3B: 39,518,208 bytes in
    BF16, 77,266,944 with an FP32 state; Nemotron-H-56B: 459,620,352 in BF16.
    """
    return state_bytes(_model(model), state_bytes_per_value, conv_bytes_per_value, tp)


@checked(arrays=True)
def model_sequence_bytes(
    model: Name,
    context_tokens: Tokens,
    bytes_per_value: BytesPerValue = 2,
    state_bytes_per_value: BytesPerValue = 2,
    tp: GPUs = 1,
    windows: Flag = 1,
) -> float:
    """Memory one sequence holds in a preset model: the attention layers' KV cache plus the fixed state of the rest.

    Parameters
    ----------
    model : str
        A preset model name [name].
    context_tokens : float
        Tokens in the sequence, prompt plus output [tokens].
    bytes_per_value : float, default 2
        Bytes per cached key or value (or latent), or a precision name such as bf16 or fp8 [bytes].
    state_bytes_per_value : float, default 2
        Bytes per recurrent-state value of linear-attention and Mamba layers (bf16 in vLLM, fp32 in SGLang); the
        convolution state stays 16-bit [bytes].
    tp : int, default 1
        Tensor-parallel GPUs; replicated KV heads count on every GPU that holds them [count].
    windows : int, default 1
        1 caches a window or chunk layer's window only; 0 every attention layer in full [flag].

    Returns
    -------
    float
        KV cache and state of one sequence across the tensor-parallel group [bytes].

    Notes
    -----
    ``KV per layer-token * layer-tokens kept + MODEL_STATE_BYTES`` (KV cache: MODEL_KV_BYTES_PER_TOKEN's
    arithmetic; state: vLLM's MambaSpec page per sequence). Qwen3-Next-80B-A3B at 32,768 tokens in BF16: 24,576 bytes
    a token in its 12 attention layers x 32,768 + 39,518,208 of state = 844,824,576 bytes, the state 4.7% of it.
    """
    m = _model(model)
    return sequence_bytes(m, context_tokens, bytes_per_value, tp, windows, state_bytes_per_value)


def routed_expert_params(m: ModelPreset) -> int:
    """Routed-expert parameters of a preset: ``moe_layers * experts * expert_params`` (gated expert MLPs; 0 for a
    dense model) [count]."""
    return _moe_layers(m) * (m.experts or 0) * _expert_params(m)


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
    return where(
        embedding_bytes_per_param != 0, embedding_bytes_per_param, maximum(bytes_per_param, PUBLISHED_EMBEDDING_BYTES)
    )


@checked(arrays=True)
def model_weights_gb(
    model: Name,
    bytes_per_param: BytesPerValue = 2,
    embedding_bytes_per_param: BytesPerValueOrZero = 0,
    expert_bytes_per_param: BytesPerValueOrZero = 0,
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
    expert_bytes_per_param : float, default 0
        Bytes per weight of the routed experts when they are stored apart (gpt-oss: mxfp4 experts, the rest bf16);
        0: as the other decoder weights [bytes].

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
    per token). With expert_bytes_per_param the routed experts (MODEL_EXPERT_PARAMS_B) take that width instead:
    gpt-oss-120b with MXFP4 experts (4.25 bits, its model card, arXiv:2508.10925) and the rest in BF16 holds 65.1 GB,
    which is what lets it fit one 80 GB GPU. WEIGHTS_GB stays the plain ``N * b`` of "Back-of-the-Envelope
    Estimation for LLM Systems".
    """
    return weights_gb(_model(model), bytes_per_param, embedding_bytes_per_param, expert_bytes_per_param)


def weights_gb(
    m: ModelPreset, bytes_per_param: float, embedding_bytes_per_param: float = 0, expert_bytes_per_param: float = 0
) -> float:
    """MODEL_WEIGHTS_GB's arithmetic on a preset, unchecked [GB]."""
    total = m.params_b * _GIGA
    emb = min(float(embedding_params(m)), total)
    held = min(routed_expert_params(m), total - emb)
    if not is_array(expert_bytes_per_param):
        experts = held if expert_bytes_per_param else 0
    else:
        experts = where(expert_bytes_per_param != 0, held, 0)
    rest = total - emb - experts
    return (
        rest * bytes_per_param
        + experts * expert_bytes_per_param
        + emb * embedding_bytes(bytes_per_param, embedding_bytes_per_param)
    ) / _GIGA


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
    return routed_expert_params(m) / _GIGA


def preset_figures(m: ModelPreset) -> dict[str, Any]:
    """The architecture fields of a preset as a plain dict (for display): the figures it has, in catalog order."""
    figures = {field: m.figure(field) for field in m.FIGURES}
    return {field: value for field, value in figures.items() if value is not None}


# --- memory as serving engines allocate it ------------------------------------------------------------------------


@checked(arrays=True)
def model_engine_kv_tokens(
    model: Name,
    memory_gb: MemoryGB,
    tp: GPUs = 1,
    bytes_per_param: BytesPerValue = 2,
    kv_bytes_per_value: BytesPerValue = 2,
    memory_fraction: Fraction = 0.9,
    reserve_gb: MemoryGBOrZero = 0,
    block_size: Count = 16,
) -> int:
    """KV cache tokens a serving engine allocates for a preset model: the "GPU KV cache size" it prints at start-up.

    Parameters
    ----------
    model : str
        A preset model name [name].
    memory_gb : float
        Memory of one GPU as CUDA reports it, in GB (an engine's GiB x 1.0737; an 80 GB H100 reports about 85 GB)
        [GB].
    tp : int, default 1
        Tensor-parallel GPUs; the weights and KV heads are split, a GPU keeping at least one head [count].
    bytes_per_param : float, default 2
        Bytes per weight, or a format name; embeddings as checkpoints keep them (MODEL_WEIGHTS_GB) [bytes].
    kv_bytes_per_value : float, default 2
        Bytes per cached value, or a precision name (vLLM's and SGLang's auto: the activations' 16 bits) [bytes].
    memory_fraction : float, default 0.9
        vLLM's gpu_memory_utilization (0.9; 0.92 from v0.22) or SGLang's mem_fraction_static [fraction].
    reserve_gb : float, default 0
        Held besides the weights inside that share, per GPU: vLLM's activation peak, non-torch memory and CUDA
        graphs; SGLang's CUDA context and NCCL buffers [GB].
    block_size : int, default 16
        Tokens per block: vLLM's 16; 1 for SGLang [tokens].

    Returns
    -------
    int
        Tokens every GPU of the group holds; 0 when the weights do not fit [tokens].

    Notes
    -----
    ENGINE_KV_TOKENS(ENGINE_KV_GB(memory, MODEL_WEIGHTS_GB / tp, fraction, reserve), MODEL_KV_BYTES_PER_TOKEN / tp,
    block): every attention layer in full, as vLLM counts its printed tokens (a window layer's saving shows in the
    concurrency, MODEL_ENGINE_CONCURRENCY). github.com/vllm-project/vllm/issues/10517, Llama-3.1-8B on an RTX 3090
    (23.58 GiB, 0.9, 2.42 GiB of activations and non-torch memory): 31,232 tokens, the 1,952 blocks it logs.
    """
    m = _model(model)
    pool = engine.kv_pool_gb(memory_gb, weights_gb(m, bytes_per_param) / tp, memory_fraction, reserve_gb)
    per_token = _kv_bytes_per_layer_token(m, kv_bytes_per_value, tp) / tp * m.attention_layer_count
    return engine.pool_tokens(pool * _GIGA, per_token, block_size)


@checked(arrays=True)
def model_engine_concurrency(
    model: Name,
    memory_gb: MemoryGB,
    max_model_len: Tokens,
    tp: GPUs = 1,
    bytes_per_param: BytesPerValue = 2,
    kv_bytes_per_value: BytesPerValue = 2,
    memory_fraction: Fraction = 0.9,
    reserve_gb: MemoryGBOrZero = 0,
    block_size: Count = 16,
    state_bytes_per_value: BytesPerValue = 2,
) -> float:
    """Requests of the full context a serving engine holds at once for a preset: its "Maximum concurrency".

    Parameters
    ----------
    model : str
        A preset model name [name].
    memory_gb : float
        Memory of one GPU as CUDA reports it, in GB [GB].
    max_model_len : float
        Context length each request may reach (vLLM's max_model_len) [tokens].
    tp : int, default 1
        Tensor-parallel GPUs sharing the weights, the KV heads and the state [count].
    bytes_per_param : float, default 2
        Bytes per weight, or a format name [bytes].
    kv_bytes_per_value : float, default 2
        Bytes per cached value, or a precision name [bytes].
    memory_fraction : float, default 0.9
        vLLM's gpu_memory_utilization or SGLang's mem_fraction_static [fraction].
    reserve_gb : float, default 0
        Held besides the weights inside that share, per GPU [GB].
    block_size : int, default 16
        Tokens per block; a request's cache is rounded up to whole blocks [tokens].
    state_bytes_per_value : float, default 2
        Bytes per recurrent-state value of Mamba and linear-attention layers (bf16 in vLLM, fp32 in SGLang) [bytes].

    Returns
    -------
    float
        Requests at max_model_len that fit on the group; 0 when the weights do not fit [requests].

    Notes
    -----
    ``pool / (KV of max_model_len tokens in whole blocks + MODEL_STATE_BYTES)``, per GPU: window and chunk layers
    hold their window, a hybrid model's fixed state counts once per request. For attention alone it is vLLM's
    num_tokens / max_model_len within a block. Llama-3.1-8B on an RTX 3090 at 20,000 tokens
    (github.com/vllm-project/vllm/issues/10517): 1.56x, as logged.
    """
    m = _model(model)
    pool = engine.kv_pool_gb(memory_gb, weights_gb(m, bytes_per_param) / tp, memory_fraction, reserve_gb)
    if not is_array(pool) and pool <= 0:
        return 0.0
    length = equations.whole_ceil(max_model_len / block_size) * block_size
    if is_array(length):  # layer-tokens past int64's exact whole numbers: the one-call path, whose ints have no limit
        refused(length * float(m.attention_layer_count) >= equations.EXACT_INT64)
    kv = _kv_bytes_per_layer_token(m, kv_bytes_per_value, tp) * _cached_layer_tokens(m, length) / tp
    return where(pool <= 0, 0.0, pool * _GIGA / (kv + state_bytes(m, state_bytes_per_value, 2, tp) / tp))
