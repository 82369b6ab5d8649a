"""What a prediction needs to know about a model: its shape, read from the catalog's preset.

:func:`preset_shape` gives the layers, widths and context of a preset model; :func:`moe_layout` its experts;
:func:`step_shape` the figures one serving step needs (:class:`xlsxplan.core.step.StepShape`), which both
``validate`` (:mod:`xlsxplan.calibration.measurements`, for a published row) and the plan's calibrated view
(:mod:`xlsxplan.plan.search`, for an option) read, so that the two run one step on one shape. A small module of its
own, so that the plan (and the Lite add-in that bundles it) need not import the measurements' reader.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog import load_catalog
from ..core.step import StepShape
from ..errors import XlsxplanError
from .fit import Factors

__all__ = [
    "ASPECT",
    "DEFAULT_SEQ",
    "Shape",
    "estimated_shape",
    "moe_layout",
    "preset_shape",
    "preset_step_shape",
    "step_shape",
]

ASPECT = 64
"""Hidden size per layer, and head dimension, of a shape estimated from its parameters (:func:`estimated_shape`)."""
DEFAULT_SEQ = 2048
"""Context of a shape estimated from its parameters [tokens]."""


@dataclass(frozen=True)
class Shape:
    """What the predictions need to know about a model."""

    params_b: float
    active_b: float
    layers: int
    hidden: int
    heads: int
    head_dim: int
    kv_width: int
    context: int
    origin: str
    preset: str = ""
    """The catalog preset the shape comes from; empty for a shape estimated from ``params_b``."""

    @property
    def attn_width(self) -> int:
        return self.heads * self.head_dim

    @property
    def moe(self) -> bool:
        return self.active_b < self.params_b * 0.999


def preset_shape(model: str, params_b: float | None = None, active_params_b: float | None = None) -> Shape | None:
    """The shape of catalog preset ``model``, its parameters scaled to ``params_b`` [B] (and the active ones to
    ``active_params_b`` [B]) when given; None when the catalog has no such preset."""
    try:
        p = load_catalog().models.get(model)
    except XlsxplanError:
        return None
    params = params_b or p.params_b
    active = active_params_b or p.figure("active_params_b") * params / p.params_b  # type: ignore[operator]
    return Shape(
        params,
        active,
        p.layers,
        p.hidden,
        p.heads,
        p.head_dim,
        p.kv_heads * p.head_dim,
        p.context,
        f"shape of preset {p.id}",
        p.id,
    )


def estimated_shape(params_b: float, active_params_b: float | None = None) -> Shape:
    """The shape of a model known only by its parameters [B]: the width 64 times the depth (``N = 12 L d^2``, ``d =
    64 L``; Kaplan et al. 2020, arXiv:2001.08361, section 3.1 and Figure 5 find loss insensitive to this ratio over a
    wide range), heads of 64, multi-head attention and a 2,048-token context."""
    hidden = max(ASPECT, round((ASPECT / 12.0 * params_b * 1e9) ** (1 / 3) / ASPECT) * ASPECT)
    layers = max(1, round(hidden / ASPECT))
    return Shape(
        params_b,
        active_params_b or params_b,
        layers,
        hidden,
        hidden // ASPECT,
        ASPECT,
        hidden,
        DEFAULT_SEQ,
        f"shape estimated from params_b ({layers} layers of width {hidden})",
    )


def moe_layout(s: Shape) -> tuple[int, int, int]:
    """Routed experts, experts per token and layers with experts of a preset mixture of experts; (0, 0, 0) for a
    dense model or a shape without a preset."""
    if not s.moe or not s.preset:
        return 0, 0, 0
    p = load_catalog().models.get(s.preset)
    if not p.experts or not p.experts_per_token:
        return 0, 0, 0
    layers = (p.mlp_layers or p.layers) - (p.dense_layers or 0)
    return int(p.experts), int(p.experts_per_token), int(layers)


def step_shape(s: Shape, factors: Factors) -> StepShape:
    """The model's figures a serving step needs (:class:`xlsxplan.core.step.StepShape`): its layers and widths, and
    for a preset mixture of experts its layers with experts, experts per token and the calibrated bytes per routed
    value (``routed_bytes / 3``, the training fit's)."""
    _, per_token, moe_layers = moe_layout(s)
    routed = factors.train_mfu.routed_bytes / 3.0 if per_token else 0.0
    return StepShape(s.layers, s.attn_width, s.hidden, moe_layers, per_token, routed)


def preset_step_shape(model: str, factors: Factors) -> StepShape:
    """:func:`step_shape` of a catalog preset by name, as a published row naming it would have it."""
    shape = preset_shape(model)
    if shape is None:
        raise XlsxplanError(f"{model!r} is not a preset model of the catalog")
    return step_shape(shape, factors)
