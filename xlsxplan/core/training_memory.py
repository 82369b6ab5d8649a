"""Training memory in full, and the FLOPs that 6N leaves out: attention and recurrently reused layers.

Training memory has two parts. The model state (weights, gradients, optimizer states) is a number of bytes per
parameter, divided across data-parallel GPUs by ZeRO's stages or FSDP. The activations kept for the backward pass
depend on sequence length, micro-batch, width, heads and the parallelism and recomputation chosen, and for large
models they are the larger part.

Units: parameters in billions, memory in decimal GB, bytes per value as numbers or precision names.

References
----------
.. [1] Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models",
   arXiv:1910.02054, sections 3.1 and 5 and Figure 1 (2 + 2 + K bytes per parameter, K = 12 for mixed-precision
   Adam; stages P_os, P_os+g, P_os+g+p).
.. [2] Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models", arXiv:2205.05198,
   section 4 and Table 2 (activation bytes per layer with tensor and sequence parallelism and recomputation).
.. [3] Chowdhery et al. 2022, "PaLM", arXiv:2204.02311, Appendix B (6N + 12 L H Q T FLOPs per token).
.. [4] "Estimating the Compute and Memory Needed for Language Models", "Eight H100s: Specification Versus
   the Record" (layers 3-5 applied two more times after step 2,204; about 1.8 PFLOP/s, 23% of dense peak).
.. [6] torchtitan, github.com/pytorch/torchtitan@9dec370ad26b5f8e9a7333a0e36165018262644b (the commit its
   December 2024 Llama 3.1 benchmarks ran): torchtitan/parallelisms/parallelize_llama.py (``_save_list`` and
   ``_custom_policy``: selective activation checkpointing saves the outputs of every other matrix multiply and of
   fused attention; the tensor-parallel plan's SequenceParallel norms and Shard(1) residual; FSDP2's
   ``reshard_after_forward``), train.py (``loss_fn``: cross entropy on the logits cast to FP32; the logged
   ``memory`` is ``max_reserved``), torchtitan/metrics.py (``reserved_bytes.all.peak`` of PyTorch's caching
   allocator).
.. [5] Dao et al. 2022, "FlashAttention", arXiv:2205.14135, section 3.1 (the backward pass recomputes the attention
   matrix from Q, K, V, the output and the softmax statistics, so the s x s scores are never stored); Dao 2023,
   "FlashAttention-2", arXiv:2307.08691, section 3.1.1 (only the logsumexp L, one FP32 number per row per head, is
   kept for the backward pass).
"""

from __future__ import annotations

from ..domains import (
    Batch,
    Count,
    CountOrZero,
    Flag,
    Fraction,
    GPUs,
    Name,
    ParamsB,
    Passes,
    StateBytes,
    Tokens,
    ZeroStage,
    checked,
)
from ..errors import ArgumentError, UnknownPresetError
from ..infra.elementwise import pick, where
from ..precision import TrainBytes

__all__ = [
    "OPTIMIZERS",
    "RECOMPUTE_MODES",
    "DEFAULT_RECOMPUTE",
    "optimizer_bytes",
    "train_state_gb",
    "activation_gb",
    "train_flops_per_token",
    "attention_flops_per_token",
    "recurrent_params_b",
    "GATED_RECOMPUTE",
    "gated_layer_activation_bytes",
    "logits_bytes",
    "gathered_layer_bytes",
]

_GIGA = 1e9

OPTIMIZERS: dict[str, tuple[float, str]] = {
    "adam": (
        12.0,
        "mixed precision: FP32 master weights, momentum and variance, 4 bytes each (ZeRO, arXiv:1910.02054, "
        "section 3.1: K = 12)",
    ),
    "adamw": (12.0, "as adam: decoupled weight decay adds no state (Loshchilov & Hutter 2019, arXiv:1711.05101)"),
    "adam_fp32": (
        8.0,
        "pure FP32 training: momentum and variance only, the weights themselves are FP32 (give "
        "weight_bytes 4 and grad_bytes 4)",
    ),
    "adam_8bit": (
        6.0,
        "FP32 master weights and 8-bit momentum and variance (Dettmers et al. 2022, '8-bit Optimizers "
        "via Block-wise Quantization', arXiv:2110.02861)",
    ),
    "sgd_momentum": (8.0, "mixed precision: FP32 master weights and momentum"),
    "sgd": (4.0, "mixed precision: FP32 master weights only"),
    "adafactor": (
        4.0,
        "FP32 master weights; factored second moments (rows + columns, negligible) and no momentum "
        "(Shazeer & Stern 2018, arXiv:1804.04235, section 3)",
    ),
}
"""Optimizer state bytes per parameter (K in ZeRO's 2 + 2 + K), FP32 master weights included where kept."""

_ALIASES = {"adam_mixed": "adam", "adamw_mixed": "adam", "adam8bit": "adam_8bit", "momentum": "sgd_momentum"}

RECOMPUTE_MODES = ("none", "selective", "full", "flash")
"""The activation recomputation modes ACTIVATION_GB takes: Korthikanti et al. 2022's three, and ``flash``, fused
attention (FlashAttention, PyTorch's scaled_dot_product_attention) that never stores the attention scores."""

DEFAULT_RECOMPUTE = "flash"
"""ACTIVATION_GB's default: today's training stacks (Megatron-LM, NeMo, PyTorch SDPA, the Parameter Golf records'
FlashAttention 3) run fused attention, which stores none of Korthikanti et al.'s ``5 a s / h`` score terms."""


@checked
def optimizer_bytes(optimizer: Name) -> float:
    """Optimizer state bytes per parameter for a named optimizer, FP32 master weights included where kept.

    Parameters
    ----------
    optimizer : str
        adam or adamw (mixed precision), adam_fp32, adam_8bit, sgd_momentum, sgd or adafactor [name].

    Returns
    -------
    float
        Optimizer state per parameter, K in ZeRO's 2 + 2 + K [bytes].

    Notes
    -----
    Mixed-precision Adam keeps FP32 master weights, momentum and variance: K = 12 (ZeRO, arXiv:1910.02054,
    section 3.1), making 16 bytes per parameter with the FP16 weight and gradient. The others are listed in
    xlsxplan.core.training_memory.OPTIMIZERS with their sources.
    """
    key = optimizer.strip().lower().replace("-", "_").replace(" ", "_")
    key = _ALIASES.get(key, key)
    if key not in OPTIMIZERS:
        raise UnknownPresetError(f"optimizer {optimizer!r} is not known; known: {', '.join(OPTIMIZERS)}", "optimizer")
    return OPTIMIZERS[key][0]


@checked(arrays=True)
def train_state_gb(
    params_b: ParamsB,
    optimizer_bytes: StateBytes = 12,
    zero_stage: ZeroStage = 0,
    dp: GPUs = 1,
    model_parallel: GPUs = 1,
    weight_bytes: TrainBytes = 2,
    grad_bytes: TrainBytes = 2,
) -> float:
    """Weights, gradients and optimizer states one GPU holds, with ZeRO or FSDP sharding across data-parallel GPUs.

    Parameters
    ----------
    params_b : float
        Parameters of the model, in billions [B params].
    optimizer_bytes : float, default 12
        Optimizer state per parameter, from OPTIMIZER_BYTES; 12 for mixed-precision Adam [bytes].
    zero_stage : int, default 0
        0 replicates everything; 1 shards optimizer states, 2 also gradients, 3 (FSDP full shard) also weights [stage].
    dp : int, default 1
        Data-parallel GPUs the states are sharded over [count].
    model_parallel : int, default 1
        Tensor times pipeline parallel GPUs each holding a slice of the model [count].
    weight_bytes : float, default 2
        Bytes per working weight, or a precision name (bf16) [bytes].
    grad_bytes : float, default 2
        Bytes per gradient, or a precision name [bytes].

    Returns
    -------
    float
        Model-state memory per GPU, activations excluded [GB].

    Notes
    -----
    With W, G, O the weight, gradient and optimizer bytes of the model slice N / model_parallel: stage 0 ``W + G +
    O``, stage 1 ``W + G + O / dp``, stage 2 ``W + (G + O) / dp``, stage 3 ``(W + G + O) / dp`` (ZeRO,
    arXiv:1910.02054, section 5, Figure 1: 7.5B with Adam on 64 GPUs needs 120, 31.4, 16.6 and 1.9 GB).
    """
    n = params_b * _GIGA / model_parallel
    w, g, o = n * weight_bytes, n * grad_bytes, n * optimizer_bytes
    sharded = pick(zero_stage, (0.0, o, g + o, w + g + o))
    return ((w + g + o - sharded) + sharded / dp) / _GIGA


@checked(arrays=True)
def activation_gb(
    seq_len: Tokens,
    micro_batch: Batch,
    hidden: Count,
    heads: Count,
    layers: Count,
    tp: GPUs = 1,
    sequence_parallel: Flag = 0,
    recompute: Name = DEFAULT_RECOMPUTE,
    dropout: Flag = 1,
) -> float:
    """Activation memory one GPU keeps for the backward pass, by attention kernel, parallelism and recomputation.

    Parameters
    ----------
    seq_len : float
        Sequence length s [tokens].
    micro_batch : int
        Sequences per micro-batch b [count].
    hidden : int
        Hidden size h [count].
    heads : int
        Attention heads a [count].
    layers : int
        Layer applications this GPU stores activations for (a layer reused n times counts n); with 1F1B
        pipelining, all L layers (the first stage holds p micro-batches of L/p layers) [count].
    tp : int, default 1
        Tensor-parallel GPUs t [count].
    sequence_parallel : int, default 0
        1 to split layer norms and dropouts along the sequence across the tensor-parallel GPUs, 0 not to [flag].
    recompute : str, default "flash"
        flash: fused attention, scores never stored; none: attention as plain matrix multiplies, everything kept;
        selective: scores recomputed; full: only each layer's input kept [name].
    dropout : int, default 1
        1 counts dropout masks and outputs (Korthikanti's GPT setup); 0 for runs without dropout (Llama) [flag].

    Returns
    -------
    float
        Activation memory per GPU [GB].

    Notes
    -----
    Bytes per layer with 16-bit activations (Korthikanti et al. 2022, arXiv:2205.05198, section 4 and Table 2):
    none ``s b h (10 + 24/t + 5 a s / (h t))``, with sequence parallelism ``s b h / t (34 + 5 a s / h)``; selective
    ``s b h (10 + 24/t)``, with sequence parallelism ``34 s b h / t``; full ``2 s b h``, ``/ t`` with sequence
    parallelism. flash keeps what selective keeps plus FlashAttention-2's logsumexp, ``4 a s b / t`` bytes (Dao
    2023, section 3.1.1); its backward pass recomputes the scores inside the kernel (Dao et al. 2022, section
    3.1). Of the 34, two are the 1-byte dropout masks after attention and after the MLP, and of the 5, one is the
    softmax-dropout mask and two its output: ``dropout`` 0 leaves 32 and 2 (10 becomes 8). With t = 1, nothing
    recomputed, this is ``s b h (34 + 5 a s / h)``. At 8,192 tokens an 8B shape (h 4096, a 32, 32 layers) keeps
    36.5 GB in flash mode against 380 GB with ``none``. Embedding and loss activations are left out.
    """
    mode = recompute.strip().lower()
    if mode not in RECOMPUTE_MODES:
        raise ArgumentError(f"recompute must be one of {', '.join(RECOMPUTE_MODES)}, got {recompute!r}", "recompute")
    s, b, h, a, t = seq_len, micro_batch, hidden, heads, tp
    sbh = s * b * h
    masks = where(dropout != 0, 2, 0)  # sbh of the two 1-byte dropout masks (attention output, MLP output)
    attention = where(dropout != 0, 5, 2) * a * s / h  # scores, softmax, dropout mask and output: what flash drops
    parallel = sequence_parallel != 0
    if mode == "full":
        per_layer = 2 * sbh / where(parallel, t, 1)
    else:
        per_layer = where(
            parallel,
            sbh / t * (32 + masks + (attention if mode == "none" else 0)),
            sbh * (8 + masks + 24 / t + (attention / t if mode == "none" else 0)),
        )
    if mode == "flash":
        per_layer += 4 * a * s * b / t  # FP32 logsumexp per row per head, heads split across the t GPUs
    return layers * per_layer / _GIGA


@checked(arrays=True)
def train_flops_per_token(params_b: ParamsB, layers: Count, heads: Count, head_dim: Count, seq_len: Tokens) -> float:
    """Training FLOPs per token with self-attention counted: 6N plus PaLM's 12 L H Q T.

    Parameters
    ----------
    params_b : float
        Parameters applied per token, in billions (active parameters for a mixture of experts) [B params].
    layers : int
        Transformer layers L [count].
    heads : int
        Attention heads H [count].
    head_dim : int
        Dimension of one head Q [count].
    seq_len : float
        Training sequence length T [tokens].

    Returns
    -------
    float
        FLOPs per training token [FLOPs].

    Notes
    -----
    ``6 N + 12 L H Q T`` (PaLM, arXiv:2204.02311, Appendix B). PaLM 540B (L 118, H 48, Q 256, T 2048) at 238.3K
    tokens/s on 6,144 TPU v4 chips of 275 TFLOP/s is 46.2% MFU with the attention term, 45.7% without.
    """
    return 6.0 * params_b * _GIGA + attention_flops_per_token(layers, heads, head_dim, seq_len)


def attention_flops_per_token(layers: float, heads: float, head_dim: float, seq_len: float) -> float:
    """Training FLOPs per token of self-attention's core (``Q K^T`` and the weighted sum of ``V``): PaLM's ``12 L H Q
    T`` (arXiv:2204.02311, Appendix B), the term :func:`train_flops_per_token` adds to 6N; its forward pass is a
    third of it.

    Parameters
    ----------
    layers, heads, head_dim : float
        Transformer layers L, attention heads H and the dimension of one head Q [count].
    seq_len : float
        Training sequence length T [tokens].

    Returns
    -------
    float
        FLOPs per training token [FLOPs].
    """
    return 12.0 * layers * heads * head_dim * seq_len


@checked(arrays=True)
def recurrent_params_b(
    params_b: ParamsB,
    layer_params_b: ParamsB,
    reused_layers: CountOrZero,
    extra_passes: Passes,
    share_of_steps: Fraction = 1,
) -> float:
    """Effective parameters per token when some layers are applied more than once (weight-tied recurrence).

    Parameters
    ----------
    params_b : float
        Stored parameters, each applied once per token, in billions [B params].
    layer_params_b : float
        Parameters of one reused layer, in billions [B params].
    reused_layers : int
        Layers applied more than once [count].
    extra_passes : int
        Additional applications of each reused layer [count].
    share_of_steps : float, default 1
        Share of training steps the recurrence runs in, when it starts part-way [fraction].

    Returns
    -------
    float
        Parameters applied per token on average, for 6N and FLOPS_6N, in billions [B params].

    Notes
    -----
    ``N + layer_params * reused_layers * extra_passes * share_of_steps`` ("Estimating the Compute and Memory Needed for
    Language Models": "Weight-tied recurrent blocks require a count of block applications"). The Parameter Golf record
    (35.95M stored) applies layers 3-5 two more times after step 2,204 of 4,997; assuming d_model 512, 8 heads with 4 KV
    heads and a 4x MLP (2,883,584 parameters per layer), it applies 45.6M per token, raising 1.41 PFLOP/s to 1.79
    PFLOP/s, 23% of 7.92 PFLOP/s.
    """
    return params_b + layer_params_b * reused_layers * extra_passes * share_of_steps


GATED_RECOMPUTE = ("none", "selective", "full")
"""GATED_LAYER_ACTIVATION_BYTES's modes: everything kept (fused attention), torchtitan's operator-level selective
checkpointing, or only the layer's input kept."""


def gated_layer_activation_bytes(
    tokens: float, hidden: int, heads: int, kv_width: int, ffn_hidden: int, tp: int = 1, recompute: str = "none"
) -> float:
    """Activation bytes one pre-norm attention layer with a gated MLP (Llama: RMSNorm, grouped-query attention,
    SwiGLU, no dropout, fused attention) keeps for the backward pass, per GPU, in 16-bit activations.

    Parameters
    ----------
    tokens : float
        Tokens of the micro-batch this GPU holds, ``s b`` (``s / c`` each with context parallelism c) [tokens].
    hidden : int
        Hidden size h [count].
    heads : int
        Attention heads a [count].
    kv_width : int
        Key (and value) width, KV heads x head dimension [count].
    ffn_hidden : int
        The gated MLP's inner width f [count].
    tp : int, default 1
        Tensor-parallel GPUs t, with sequence parallelism for the norms and the residual stream (torchtitan's and
        Megatron's plan) [count].
    recompute : str, default "none"
        none, selective (torchtitan's operator policy) or full [name].

    Returns
    -------
    float
        Bytes kept per layer [bytes].

    Notes
    -----
    Korthikanti et al. 2022 (arXiv:2205.05198, section 4.1) count, tensor by tensor, what each operator's backward
    needs; the same count for this layer, per token at 2 bytes a value and ``/ t`` for every tensor (the norms' and
    residual tensors by sequence parallelism, the rest by tensor parallelism):

    * none: the two norms' inputs and outputs ``8 h``, Q ``2 h``, K and V ``4 kv``, the attention output ``2 h`` and
      its FP32 logsumexp ``4 a`` (Dao 2023, section 3.1.1), the gate and up projections, the gate's activation and
      their product ``8 f``: ``(12 h + 4 kv + 8 f + 4 a) / t``;
    * selective: torchtitan's policy saves the layer's input and the outputs of fused attention and of every other
      matrix multiply (wq, wv, w1, w2; torchtitan@9dec370:torchtitan/parallelisms/parallelize_llama.py, ``_save_list``
      and ``_custom_policy``) and recomputes the rest: ``(2 h + 2 h + 2 kv + 2 h + 4 a + 2 f + 2 h) / t = (8 h +
      2 kv + 2 f + 4 a) / t``;
    * full: the layer's input only, ``2 h / t`` (Korthikanti et al. 2022, section 4.2).

    Llama 3.1 8B (h 4,096, a 32, kv 1,024, f 14,336) keeps 168,064 bytes a token a layer with nothing recomputed,
    63,616 selective and 8,192 full.
    """
    mode = recompute.strip().lower()
    if mode not in GATED_RECOMPUTE:
        raise ArgumentError(f"recompute must be one of {', '.join(GATED_RECOMPUTE)}, got {recompute!r}", "recompute")
    h, a, kv, f = hidden, heads, kv_width, ffn_hidden
    per_token = {
        "none": 12 * h + 4 * kv + 8 * f + 4 * a,
        "selective": 8 * h + 2 * kv + 2 * f + 4 * a,
        "full": 2 * h,
    }[mode]
    return tokens * per_token / tp


def logits_bytes(tokens: float, vocab: int, tp: int = 1) -> float:
    """The output layer's logits and the loss's FP32 copies at their peak, per GPU.

    Parameters
    ----------
    tokens : float
        Tokens of the micro-batch the last pipeline stage holds [tokens].
    vocab : int
        Vocabulary size V [count].
    tp : int, default 1
        Tensor-parallel GPUs t; the vocabulary is split across them (a loss-parallel cross entropy) [count].

    Returns
    -------
    float
        Bytes [bytes].

    Notes
    -----
    ``12 T V / t``: the loss casts the logits to FP32 before its cross entropy (torchtitan@9dec370:train.py,
    ``loss_fn``); the log-softmax keeps its FP32 output for the backward pass, and at the start of the backward pass
    the FP32 gradients of the log-probabilities and of the logits exist beside it: three FP32 copies, 12 bytes a
    token a vocabulary entry. Llama 3.1 (V 128,256) at 16,384 tokens: 25.2 GB.
    """
    return 12.0 * tokens * vocab / tp


def gathered_layer_bytes(layer_params: float, tp: int = 1) -> float:
    """What ZeRO-3 (FSDP's full shard) holds unsharded beside the sharded states: two layers' 16-bit weights and
    their 16-bit gradients, per GPU.

    Parameters
    ----------
    layer_params : float
        Parameters of one layer [params].
    tp : int, default 1
        Tensor-parallel GPUs splitting the layer [count].

    Returns
    -------
    float
        Bytes [bytes].

    Notes
    -----
    ``2 x 4 P_layer / t``: FSDP gathers a layer's weights before its forward and backward and prefetches the next
    layer's (Rajbhandari et al. 2020, arXiv:1910.02054, section 5.3: the parameters are broadcast layer by layer;
    PyTorch FSDP2's default prefetch of one layer ahead), and the gathered layer's gradient exists unsharded until
    it is reduce-scattered.
    """
    return 2.0 * 4.0 * layer_params / tp
