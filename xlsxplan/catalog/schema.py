"""The catalog's schema: what a preset model and a preset accelerator carry, validated with pydantic.

Every figure is a number under its field name with a source; a figure that does not exist or was never published is
listed under ``unavailable`` with the reason (see :mod:`xlsxplan.catalog`).
"""

from __future__ import annotations

import datetime
import re
import typing
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..infra.text import FORMULA_TRIGGERS, UNSEEN

__all__ = ["Kind", "Preset", "ModelPreset", "AcceleratorPreset", "PricePreset", "MODEL_FIELDS", "GPU_FIELDS"]

Kind = Literal["model", "accelerator"]


class Preset(BaseModel):
    """What every preset carries besides its figures."""

    # strict: a figure is a TOML number, never a boolean (`true` is not 1 GB) or a string ("80"); an integer is
    # accepted where a float belongs, as pydantic's strict mode allows. allow_inf_nan=False: `inf` is no figure.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    id: str
    aliases: tuple[str, ...] = Field((), strict=False)  # a TOML array is a list, which strict mode refuses as a tuple
    source: str = Field(description="key of the [sources] entry that covers every figure not in `sources`")
    sources: dict[str, str] = Field(default_factory=dict)
    unavailable: dict[str, str] = Field(default_factory=dict)
    note: str = ""

    # figures that must be given or declared unavailable; subclasses list them
    FIGURES: ClassVar[tuple[str, ...]] = ()
    REQUIRED: ClassVar[tuple[str, ...]] = ()

    @model_validator(mode="after")
    def _names_are_data(self) -> Preset:
        """A preset's name and aliases are written into workbooks and typed into formulas as text: one that a
        spreadsheet would read as a formula (it starts with ``=``, ``+``, ``-`` or ``@``) or that holds a control
        character (an escape sequence, a line break, a bidi override) is refused."""
        for name in (self.id, *self.aliases):
            if name.startswith(FORMULA_TRIGGERS) or UNSEEN.search(name):
                raise ValueError(
                    f"the name {name[:60]!r} starts with =, +, -, @ or holds a control character: "
                    "a spreadsheet would read it as a formula or show it garbled; choose a name of letters, digits "
                    "and punctuation"
                )
        return self

    @model_validator(mode="after")
    def _every_figure_accounted_for(self) -> Preset:
        for name in self.FIGURES:
            value = getattr(self, name)
            if name in self.unavailable and value is not None:
                raise ValueError(f"{name} is both given and listed as unavailable")
            if name in self.REQUIRED and value is None and name not in self.unavailable:
                raise ValueError(f"{name} is missing: give it, or list it under 'unavailable' with the reason")
        for name in list(self.sources) + list(self.unavailable):
            if name not in self.FIGURES:
                raise ValueError(f"'{name}' is not a figure of this preset (figures: {', '.join(self.FIGURES)})")
        return self

    def figure(self, field: str) -> float | int | None:
        return getattr(self, field)

    def source_key(self, field: str) -> str:
        return self.sources.get(field, self.source)

    @classmethod
    def unit(cls, field: str) -> str:
        """A figure's unit, from the bracket ending its description: ``GB``, ``TB/s``, ``count``..."""
        match = re.search(r"\[([^\[\]]+)\]$", cls.model_fields[field].description or "")
        if match is None:  # pragma: no cover - test_catalog checks every figure has one
            raise TypeError(f"{cls.__name__}.{field} has no unit in brackets at the end of its description")
        return match.group(1)

    @classmethod
    def whole(cls, field: str) -> bool:
        """True for a figure that is a whole number (a TOML integer): layers, heads, a context length."""
        return int in (cls.model_fields[field].annotation, *typing.get_args(cls.model_fields[field].annotation))


class ModelPreset(Preset):
    """A model's size and shape, as its publisher's config.json and model card give them."""

    params_b: float = Field(gt=0, description="total parameters [B params]")
    active_params_b: float | None = Field(None, gt=0, description="parameters used per token [B params]")
    layers: int = Field(gt=0, description="transformer layers [count]")
    hidden: int = Field(gt=0, description="model (embedding) width [count]")
    heads: int = Field(gt=0, description="query heads per layer [count]")
    kv_heads: int = Field(gt=0, description="key-value heads per layer [count]")
    head_dim: int = Field(gt=0, description="width of one head [count]")
    vocab: int = Field(gt=0, description="vocabulary size [tokens]")
    context: int = Field(gt=0, description="longest context the model was trained for [tokens]")
    intermediate: int | None = Field(None, gt=0, description="dense MLP width [count]")
    experts: int | None = Field(None, gt=0, description="routed experts per MoE layer [count]")
    experts_per_token: int | None = Field(None, gt=0, description="routed experts each token uses [count]")
    shared_experts: int | None = Field(None, ge=0, description="always-used experts per MoE layer [count]")
    moe_intermediate: int | None = Field(None, gt=0, description="one expert's MLP width [count]")
    dense_layers: int | None = Field(None, ge=0, description="layers with a dense MLP instead of experts [count]")
    sliding_window: int | None = Field(None, gt=0, description="attention window of a window layer [tokens]")
    sliding_window_layers: int | None = Field(None, ge=0, description="layers with a sliding window [count]")
    kv_lora_rank: int | None = Field(None, gt=0, description="latent width cached per layer (MLA) [count]")
    qk_rope_head_dim: int | None = Field(None, gt=0, description="rotary key width cached per layer (MLA) [count]")
    q_lora_rank: int | None = Field(None, gt=0, description="query latent width (MLA) [count]")
    v_head_dim: int | None = Field(
        None, gt=0, description="value head width (MLA) where it is not head_dim, GLM-5's 256 to 192 [count]"
    )
    # Hybrid and state-space layers: attention layers keep a KV cache that grows with the context; linear-attention
    # (Gated DeltaNet, lightning attention) and Mamba-2 layers keep a fixed state per sequence instead.
    attention_layers: int | None = Field(
        None,
        ge=0,
        description="layers with attention, whose KV cache grows with the context; absent: every layer [count]",
    )
    attention_chunk: int | None = Field(None, gt=0, description="attention chunk of a chunked layer (Llama 4) [tokens]")
    chunked_layers: int | None = Field(None, ge=0, description="layers with chunked attention [count]")
    mlp_layers: int | None = Field(None, ge=0, description="layers with an MLP or experts; absent: every layer [count]")
    linear_attention_layers: int | None = Field(
        None, ge=0, description="linear-attention (Gated DeltaNet or lightning attention) layers [count]"
    )
    linear_key_heads: int | None = Field(None, gt=0, description="key heads of a linear-attention layer [count]")
    linear_value_heads: int | None = Field(None, gt=0, description="value heads of a linear-attention layer [count]")
    linear_key_head_dim: int | None = Field(None, gt=0, description="width of a linear-attention key head [count]")
    linear_value_head_dim: int | None = Field(None, gt=0, description="width of a linear-attention value head [count]")
    linear_conv_kernel: int | None = Field(
        None, gt=0, description="convolution width of a linear-attention layer [tokens]"
    )
    mamba_layers: int | None = Field(None, ge=0, description="Mamba-2 (state-space) layers [count]")
    mamba_heads: int | None = Field(None, gt=0, description="heads of a Mamba-2 layer [count]")
    mamba_head_dim: int | None = Field(None, gt=0, description="width of a Mamba-2 head [count]")
    mamba_state_size: int | None = Field(
        None, gt=0, description="state size of a Mamba-2 head (ssm_state_size) [count]"
    )
    mamba_groups: int | None = Field(None, gt=0, description="B and C groups of a Mamba-2 layer (n_groups) [count]")
    mamba_conv_kernel: int | None = Field(None, gt=0, description="convolution width of a Mamba-2 layer [tokens]")
    index_heads: int | None = Field(None, gt=0, description="heads of DeepSeek's sparse-attention indexer [count]")
    index_head_dim: int | None = Field(
        None, gt=0, description="key width the sparse-attention indexer caches per layer [count]"
    )
    mtp_layers: int | None = Field(
        None, ge=0, description="multi-token-prediction modules shipped beside the model, not in params_b [count]"
    )
    tied_embeddings: bool = False
    attention_bias: bool = False
    """Biases on the query, key, value and output projections (config attention_bias; gpt-oss)."""
    mlp_bias: bool = False
    """Biases on the MLP and expert projections and the router (gpt-oss's experts)."""
    attention_sinks: bool = False
    """One learned sink logit per head and layer (gpt-oss): parameters, nothing cached."""
    attention_output_gate: bool = False
    """A sigmoid gate on the attention output, its query projection twice as wide (Qwen3-Next)."""
    lightning_attention: bool = False
    """The linear-attention layers are MiniMax's lightning attention (MiniMax-01, arXiv:2501.08313; MiniMax-M1), not
    Gated DeltaNet: one q, k, v projection, a sigmoid output gate, an RMSNorm over all heads and out_proj, with no
    convolution (``linear_conv_kernel`` absent) and no decay parameters; its state per sequence and layer is one
    key-by-value matrix per head, as Gated DeltaNet's is."""
    gated_mlp: bool = True
    """Gated MLPs (gate, up and down projections); False for two-matrix MLPs (Nemotron-H's squared ReLU)."""

    FIGURES: ClassVar[tuple[str, ...]] = (
        "params_b",
        "active_params_b",
        "layers",
        "hidden",
        "heads",
        "kv_heads",
        "head_dim",
        "vocab",
        "context",
        "intermediate",
        "experts",
        "experts_per_token",
        "shared_experts",
        "moe_intermediate",
        "dense_layers",
        "sliding_window",
        "sliding_window_layers",
        "kv_lora_rank",
        "qk_rope_head_dim",
        "q_lora_rank",
        "v_head_dim",
        "attention_layers",
        "attention_chunk",
        "chunked_layers",
        "mlp_layers",
        "linear_attention_layers",
        "linear_key_heads",
        "linear_value_heads",
        "linear_key_head_dim",
        "linear_value_head_dim",
        "linear_conv_kernel",
        "mamba_layers",
        "mamba_heads",
        "mamba_head_dim",
        "mamba_state_size",
        "mamba_groups",
        "mamba_conv_kernel",
        "index_heads",
        "index_head_dim",
        "mtp_layers",
    )
    LINEAR_FIELDS: ClassVar[tuple[str, ...]] = (
        "linear_key_heads",
        "linear_value_heads",
        "linear_key_head_dim",
        "linear_value_head_dim",
        "linear_conv_kernel",
    )
    MAMBA_FIELDS: ClassVar[tuple[str, ...]] = (
        "mamba_heads",
        "mamba_head_dim",
        "mamba_state_size",
        "mamba_groups",
        "mamba_conv_kernel",
    )
    REQUIRED: ClassVar[tuple[str, ...]] = (
        "params_b",
        "layers",
        "hidden",
        "heads",
        "kv_heads",
        "head_dim",
        "vocab",
        "context",
    )

    @model_validator(mode="after")
    def _consistent(self) -> ModelPreset:
        if self.kv_heads > self.heads:
            raise ValueError(f"kv_heads ({self.kv_heads}) cannot exceed heads ({self.heads})")
        if self.heads % self.kv_heads:
            raise ValueError(f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})")
        if self.active_params_b is not None and self.active_params_b > self.params_b:
            raise ValueError("active_params_b cannot exceed params_b")
        if (self.experts is None) != (self.experts_per_token is None):
            raise ValueError("experts and experts_per_token go together")
        if self.experts is not None and self.experts_per_token > self.experts:  # type: ignore[operator]
            raise ValueError("experts_per_token cannot exceed experts")
        if self.sliding_window_layers is not None and self.sliding_window_layers > self.layers:
            raise ValueError("sliding_window_layers cannot exceed layers")
        if (self.sliding_window is None) != (self.sliding_window_layers is None):
            raise ValueError("sliding_window and sliding_window_layers go together")
        if (self.kv_lora_rank is None) != (self.qk_rope_head_dim is None):
            raise ValueError("kv_lora_rank and qk_rope_head_dim go together (multi-head latent attention)")
        if self.dense_layers is not None and self.dense_layers > self.layers:
            raise ValueError("dense_layers cannot exceed layers")
        self._hybrid_consistent()
        return self

    def _hybrid_consistent(self) -> None:
        """The layer kinds add up: attention, linear-attention and Mamba layers within the layers, windows and
        chunks within the attention layers, each kind's dimensions given together."""
        attention = self.attention_layer_count
        for name in ("attention_layers", "mlp_layers"):
            if (getattr(self, name) or 0) > self.layers:
                raise ValueError(f"{name} cannot exceed layers")
        mixers = attention + (self.linear_attention_layers or 0) + (self.mamba_layers or 0)
        if mixers > self.layers:
            raise ValueError(
                f"attention, linear-attention and Mamba layers ({mixers}) cannot exceed layers ({self.layers})"
            )
        if (self.sliding_window_layers or 0) + (self.chunked_layers or 0) > attention:
            raise ValueError("sliding_window_layers and chunked_layers cannot exceed the attention layers")
        if (self.attention_chunk is None) != (self.chunked_layers is None):
            raise ValueError("attention_chunk and chunked_layers go together (chunked attention)")
        if self.dense_layers is not None and self.mlp_layers is not None and self.dense_layers > self.mlp_layers:
            raise ValueError("dense_layers cannot exceed mlp_layers")
        if self.lightning_attention and not self.linear_attention_layers:
            raise ValueError("lightning_attention needs linear_attention_layers")
        if self.lightning_attention and self.linear_conv_kernel is not None:
            raise ValueError("lightning attention has no convolution: leave linear_conv_kernel out")
        linear_fields = tuple(
            f for f in self.LINEAR_FIELDS if not (self.lightning_attention and f == "linear_conv_kernel")
        )
        for count, fields in (("linear_attention_layers", linear_fields), ("mamba_layers", self.MAMBA_FIELDS)):
            given = [f for f in fields if getattr(self, f) is not None]
            if getattr(self, count) and len(given) < len(fields):
                missing = ", ".join(f for f in fields if f not in given)
                raise ValueError(f"{count} needs {missing}")
            if given and not getattr(self, count):
                raise ValueError(f"{', '.join(given)} need {count}")
        if (self.index_heads is None) != (self.index_head_dim is None):
            raise ValueError("index_heads and index_head_dim go together (DeepSeek sparse attention's indexer)")
        if self.v_head_dim is not None and self.kv_lora_rank is None:
            raise ValueError("v_head_dim needs latent attention (kv_lora_rank); else head_dim is the value width")
        if self.index_heads is not None and self.kv_lora_rank is None:
            raise ValueError("the sparse-attention indexer needs latent attention (kv_lora_rank)")

    @property
    def attention_layer_count(self) -> int:
        """Layers with attention (and a KV cache): ``attention_layers``, else every layer."""
        return self.layers if self.attention_layers is None else self.attention_layers

    @property
    def mlp_layer_count(self) -> int:
        """Layers with an MLP or experts: ``mlp_layers``, else every layer."""
        return self.layers if self.mlp_layers is None else self.mlp_layers

    def figure(self, field: str) -> float | int | None:
        if field == "active_params_b" and self.active_params_b is None:
            return self.params_b  # a dense model uses every parameter for every token
        return getattr(self, field)

    def source_key(self, field: str) -> str:
        if field == "active_params_b" and self.active_params_b is None:
            field = "params_b"
        return self.sources.get(field, self.source)


class AcceleratorPreset(Preset):
    """An accelerator's memory, bandwidth and dense peak throughput, from its datasheet."""

    memory_gb: float = Field(gt=0, description="memory [GB]")
    bandwidth_tb_s: float = Field(gt=0, description="memory bandwidth [TB/s]")
    bf16_tflops: float | None = Field(None, gt=0, description="dense 16-bit tensor throughput [TFLOP/s]")
    fp8_tflops: float | None = Field(None, gt=0, description="dense FP8 tensor throughput [TFLOP/s]")
    fp4_tflops: float | None = Field(None, gt=0, description="dense FP4 tensor throughput (NVFP4, MXFP4) [TFLOP/s]")
    power_w: float | None = Field(None, gt=0, description="board power (TDP, TGP or TBP) of one accelerator [W]")
    link_gb_s: float | None = Field(
        None,
        gt=0,
        description="scale-up link bandwidth of one accelerator to its peers, "
        "per direction (NVLink, Infinity Fabric, ICI) [GB/s]",
    )

    FIGURES: ClassVar[tuple[str, ...]] = (
        "memory_gb",
        "bandwidth_tb_s",
        "bf16_tflops",
        "fp8_tflops",
        "fp4_tflops",
        "power_w",
        "link_gb_s",
    )
    REQUIRED: ClassVar[tuple[str, ...]] = ("memory_gb", "bandwidth_tb_s", "bf16_tflops", "fp8_tflops")
    """Given, or listed under ``unavailable`` with the reason, by every preset (a user's too)."""
    SHIPPED_REQUIRED: ClassVar[tuple[str, ...]] = REQUIRED + ("fp4_tflops", "power_w")
    """Given or declared unavailable by every shipped preset (tests/catalog/test_catalog.py): the FP4 peak and the
    board power came later, so a user preset saved before them still loads; the scale-up link is optional (PCIe-only
    cards have none)."""


class PricePreset(Preset):
    """What renting one accelerator costs for an hour on one basis, with the date, offer and place (prices.toml).

    The preset's id is the id of the accelerator it prices (accelerators.toml); the loader refuses any other. The
    basis (on demand, committed) is the table the entry sits in.
    """

    usd_per_gpu_hour: float = Field(gt=0, description="rental price of one accelerator for an hour [USD/GPU-h]")
    as_of: datetime.date = Field(description="the date the price was in force, or the page read")
    offer: str = Field(min_length=1, description="the offer priced: the product, instance or terms")
    region: str = Field(min_length=1, description="where the offer holds")

    FIGURES: ClassVar[tuple[str, ...]] = ("usd_per_gpu_hour",)
    REQUIRED: ClassVar[tuple[str, ...]] = FIGURES


MODEL_FIELDS: tuple[str, ...] = ModelPreset.FIGURES
GPU_FIELDS: tuple[str, ...] = AcceleratorPreset.FIGURES
