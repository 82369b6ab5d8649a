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
* **State instead of a cache**: a linear-attention layer (Gated DeltaNet, Qwen3-Next; lightning attention,
  MiniMax-M1) or a Mamba-2 layer (Nemotron-H) keeps one fixed state per sequence, a short convolution's last inputs
  (none in lightning attention) plus the recurrent state, whatever the context; hybrid models put a few attention
  layers, whose cache grows, beside many such layers.

These functions take the numbers; those taking a preset ``model`` name read its shape from the catalog and live in
:mod:`xlsxplan.catalog.models`.

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
.. [6] Yang, Kautz and Hatamizadeh 2024, "Gated Delta Networks: Improving Mamba2 with Delta Rule", arXiv:2412.06464,
   section 3 (a d_k x d_v state matrix per head); vLLM vllm/model_executor/layers/mamba/mamba_utils.py,
   MambaStateShapeCalculator.gated_delta_net_state_shape (conv state (conv_kernel - 1, 2 k_heads d_k + v_heads
   d_v), temporal state (v_heads, d_v, d_k) per sequence).
.. [7] Dao and Gu 2024, "Transformers are SSMs: Generalized Models and Efficient Algorithms Through Structured State
   Space Duality" (Mamba-2), arXiv:2405.21060, section 7 (a head_dim x state_size state per head); vLLM
   mamba_utils.py, mamba2_state_shape (conv state (conv_kernel - 1, heads head_dim + 2 groups state_size), temporal
   state (heads, head_dim, state_size)).
"""

from __future__ import annotations

from typing import Any

from ..domains import Batch, Count, CountOrZero, GPUs, ParamsB, ParamsBOrZero, Tokens, checked
from ..errors import OutOfRangeError
from ..infra.elementwise import ceil, is_array, maximum, minimum, refused, where
from ..precision import BytesPerValue
from . import equations

__all__ = [
    "check_moe",
    "linear_attention_state",
    "linear_attention_state_bytes",
    "mamba_groups_held",
    "mamba_state",
    "mamba_state_bytes",
    "kv_bytes_per_sequence",
    "kv_bytes_per_token_mla",
    "kv_heads_per_gpu",
    "layer_tokens",
    "moe_params_read_b",
    "weights_gb_per_gpu",
]

_GIGA = 1e9


# --- KV cache ---------------------------------------------------------------------------------------------------------


@checked(arrays=True)
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
    return layers * (kv_lora_rank + qk_rope_head_dim) * bytes_per_value  # a float: the byte count is one


@checked(arrays=True)
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
    if refused(window_layers > layers):
        raise OutOfRangeError(
            f"window_layers must be at most layers ({layers:,}), got {window_layers:,}", "window_layers"
        )
    if refused((window_layers != 0) & (window == 0)):
        raise OutOfRangeError("window must be given (above 0) when window_layers is above 0", "window")
    if refused((window != 0) & (window_layers == 0)):
        raise OutOfRangeError(
            f"window_layers must be given (1 to layers, {layers:,}) when window is above 0: the layers limited to "
            "the window (all of them for Mistral-7B v0.1, half for Gemma 2)",
            "window_layers",
        )
    return 2.0 * kv_heads * head_dim * bytes_per_value * layer_tokens(layers, window, window_layers, context_tokens)


@checked(arrays=True)
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
    replicate a KV head when tp exceeds kv_heads). It is vLLM's ``max(1, kv_heads // tp)``
    (ModelConfig.get_num_kv_heads) wherever one of the two divides the other, which vLLM requires. Llama-3.1-70B's
    8 KV heads on 16 GPUs: 1 per GPU, so the cache across the group is twice the model's.
    """
    return ceil(kv_heads / tp)


def layer_tokens(layers: int, window: int | None, window_layers: int | None, context_tokens: float) -> float:
    """Layer-tokens a sequence of ``context_tokens`` keeps: window layers stop at the window [tokens x layers].
    Unchecked: the arithmetic behind KV_BYTES_PER_SEQ and the preset functions."""
    window_layers = 0 if window_layers is None else window_layers
    window = 0 if window is None else window
    capped = where(window != 0, minimum(context_tokens, window), context_tokens)
    return (layers - window_layers) * context_tokens + window_layers * capped


# --- fixed state per sequence: linear attention and Mamba-2 ---------------------------------------------------------


def linear_attention_state(
    key_heads: int,
    value_heads: int,
    key_head_dim: int,
    value_head_dim: int,
    conv_kernel: int,
    state_bytes: float,
    conv_bytes: float,
) -> float:
    """Bytes of one linear-attention layer's state for one sequence (Gated DeltaNet; lightning attention with
    ``conv_kernel`` 1), over every tensor-parallel GPU (the heads and the convolution's channels are split, never
    replicated). Unchecked: LINEAR_STATE_BYTES and the preset functions."""
    conv = (conv_kernel - 1) * (2 * key_heads * key_head_dim + value_heads * value_head_dim) * conv_bytes
    return conv + value_heads * value_head_dim * key_head_dim * state_bytes


def mamba_groups_held(groups: int, tp: int) -> int:
    """B and C groups a Mamba-2 layer holds across ``tp`` GPUs: its own, or as many as the GPUs when they do not divide
    them (vLLM MambaStateShapeCalculator.extra_groups_for_head_shards replicates them to shard with the heads)."""
    if not is_array(groups) and not is_array(tp):
        return groups if groups % tp == 0 else max(groups, tp)
    return where(groups % tp == 0, groups, maximum(groups, tp))


def mamba_state(
    heads: int,
    head_dim: int,
    state_size: int,
    groups: int,
    conv_kernel: int,
    state_bytes: float,
    conv_bytes: float,
    tp: int = 1,
) -> float:
    """Bytes of one Mamba-2 layer's state for one sequence, over every tensor-parallel GPU. Unchecked: MAMBA_STATE_BYTES
    and the preset functions."""
    held = mamba_groups_held(groups, tp)
    if is_array(held) or is_array(conv_kernel) or is_array(heads) or is_array(head_dim) or is_array(state_size):
        # whole numbers multiply exactly as Python ints up to int64's limit: elements past it take the one-call path
        refused((conv_kernel - 1.0) * (heads * 1.0 * head_dim + 2.0 * held * state_size) >= equations.EXACT_INT64)
    conv = (conv_kernel - 1) * (heads * head_dim + 2 * held * state_size) * conv_bytes
    return conv + heads * head_dim * state_size * state_bytes


@checked(arrays=True)
def linear_attention_state_bytes(
    layers: Count,
    key_heads: Count,
    value_heads: Count,
    key_head_dim: Count,
    value_head_dim: Count,
    conv_kernel: Count = 4,
    state_bytes_per_value: BytesPerValue = 2,
    conv_bytes_per_value: BytesPerValue = 2,
) -> float:
    """Fixed state one sequence holds in linear-attention (Gated DeltaNet, lightning) layers, whatever its length.

    Parameters
    ----------
    layers : int
        Linear-attention layers (Qwen3-Next: 36 of its 48) [count].
    key_heads : int
        Key heads of a layer (config linear_num_key_heads) [count].
    value_heads : int
        Value heads of a layer (config linear_num_value_heads) [count].
    key_head_dim : int
        Width of a key head (config linear_key_head_dim) [count].
    value_head_dim : int
        Width of a value head (config linear_value_head_dim) [count].
    conv_kernel : int, default 4
        Width of the short convolution (config linear_conv_kernel_dim); it keeps kernel - 1 inputs; 1 for lightning
        attention, which has none [tokens].
    state_bytes_per_value : float, default 2
        Bytes per recurrent-state value, or a precision name: bf16 (vLLM's default, the model's dtype) or fp32
        (SGLang's default --mamba-ssm-dtype) [bytes].
    conv_bytes_per_value : float, default 2
        Bytes per convolution-state value: the model's 16 bits in vLLM and SGLang [bytes].

    Returns
    -------
    float
        State of one sequence across all these layers [bytes].

    Notes
    -----
    Per layer ``(k - 1)(2 H_k d_k + H_v d_v) b_conv + H_v d_v d_k b_state``: the state shapes of vLLM's
    MambaStateShapeCalculator.gated_delta_net_state_shape (Gated Delta Networks, arXiv:2412.06464). Qwen3-Next-80B-A3B
    (16 key and 32 value heads of 128, kernel 4) in BF16: 36 x (49,152 + 1,048,576) = 39,518,208 bytes, the cache of
    1,608 tokens of its 12 attention layers. Tensor parallelism splits it; the sum over the GPUs is the same.
    MiniMax's lightning attention (MiniMax-01, arXiv:2501.08313) has no convolution: ``conv_kernel`` 1, and as many key
    and value heads as attention heads, giving vLLM's linear_attention_state_shape ``H d d``; MiniMax-M1 (70 layers of
    64 heads of 128) holds 146,800,640 bytes in BF16.
    """
    return layers * linear_attention_state(
        key_heads, value_heads, key_head_dim, value_head_dim, conv_kernel, state_bytes_per_value, conv_bytes_per_value
    )


@checked(arrays=True)
def mamba_state_bytes(
    layers: Count,
    heads: Count,
    head_dim: Count,
    state_size: Count,
    groups: Count = 1,
    conv_kernel: Count = 4,
    state_bytes_per_value: BytesPerValue = 2,
    conv_bytes_per_value: BytesPerValue = 2,
    tp: GPUs = 1,
) -> float:
    """Fixed state one sequence holds in Mamba-2 layers, whatever its length.

    Parameters
    ----------
    layers : int
        Mamba-2 layers (Nemotron-H-56B: 54 of its 118 blocks) [count].
    heads : int
        Heads of a layer (config mamba_num_heads) [count].
    head_dim : int
        Width of a head (config mamba_head_dim) [count].
    state_size : int
        State size per head (config ssm_state_size) [count].
    groups : int, default 1
        B and C groups (config n_groups) [count].
    conv_kernel : int, default 4
        Width of the convolution (config conv_kernel); it keeps kernel - 1 inputs [tokens].
    state_bytes_per_value : float, default 2
        Bytes per SSM-state value, or a precision name: bf16 (vLLM's default unless mamba_ssm_cache_dtype is set) or
        fp32 (SGLang's default) [bytes].
    conv_bytes_per_value : float, default 2
        Bytes per convolution-state value: the model's 16 bits in vLLM and SGLang [bytes].
    tp : int, default 1
        Tensor-parallel GPUs; groups they do not divide are replicated to match them [count].

    Returns
    -------
    float
        State of one sequence across all these layers and GPUs [bytes].

    Notes
    -----
    Per layer ``(k - 1)(H P + 2 G N) b_conv + H P N b_state`` (Mamba-2, arXiv:2405.21060; vLLM
    MambaStateShapeCalculator.mamba2_state_shape, intermediate size H P as NemotronHForCausalLM passes it). Nemotron-H
    56B (256 heads of 64, state 256, 8 groups, kernel 4) in BF16: 54 x (122,880 + 8,388,608) = 459,620,352 bytes.
    """
    return layers * mamba_state(
        heads, head_dim, state_size, groups, conv_kernel, state_bytes_per_value, conv_bytes_per_value, tp
    )


# --- weights and bandwidth --------------------------------------------------------------------------------------------


@checked(arrays=True)
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
    check_moe(params_b, active_params_b, experts, experts_per_token)
    return equations.moe_params_read(params_b, active_params_b, experts, experts_per_token, batch)


def check_moe(params_b: float, active_params_b: float, experts: int, experts_per_token: int, among: Any = True) -> None:
    """MOE_PARAMS_READ_B's checks: the active parameters within the total, the routed experts within the experts;
    over arrays, for the elements where ``among`` holds."""
    if refused(among & (active_params_b > params_b)):
        raise OutOfRangeError("active_params_b cannot exceed params_b", "active_params_b")
    if refused(among & (experts_per_token > experts)):
        raise OutOfRangeError(
            f"experts_per_token must be at most experts ({experts:,}), got {experts_per_token:,}", "experts_per_token"
        )


@checked(arrays=True)
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
    if refused(expert_params_b > params_b):
        raise OutOfRangeError("expert_params_b cannot exceed params_b", "expert_params_b")
    return ((params_b - expert_params_b) / tp + expert_params_b / ep) * bytes_per_param
