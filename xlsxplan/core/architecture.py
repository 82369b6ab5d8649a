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
"""

from __future__ import annotations

from typing import Any

from ..domains import Batch, Count, CountOrZero, GPUs, ParamsB, ParamsBOrZero, Tokens, checked
from ..elementwise import ceil, minimum, refused, where
from ..errors import OutOfRangeError
from ..precision import BytesPerValue
from . import equations

__all__ = [
    "check_moe",
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
    replicate a KV head when tp exceeds kv_heads). Llama-3.1-70B's 8 KV heads on 16 GPUs: 1 per GPU, so the cache
    across the group is twice the model's.
    """
    return ceil(kv_heads / tp)


def layer_tokens(layers: int, window: int | None, window_layers: int | None, context_tokens: float) -> float:
    """Layer-tokens a sequence of ``context_tokens`` keeps: window layers stop at the window [tokens x layers].
    Unchecked: the arithmetic behind KV_BYTES_PER_SEQ and the preset functions."""
    window_layers = 0 if window_layers is None else window_layers
    window = 0 if window is None else window
    capped = where(window != 0, minimum(context_tokens, window), context_tokens)
    return (layers - window_layers) * context_tokens + window_layers * capped


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
