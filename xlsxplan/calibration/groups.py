"""The levels the calibration fits: kinds of efficiency, accelerator classes and weight-format groups.

A measurement or a plan is placed by the accelerator's class (datacenter, consumer, Apple, or ``measured`` for a
preset saved by ``xlsxplan calibrate --save``) and by its weights' format group (16-, 8- or 4-bit storage) and
compute width (the tensor-core multiply it runs at). See :mod:`xlsxplan.calibration`.
"""

from __future__ import annotations

import re
from typing import Any

from .. import precision as precision_module
from ..core.training import DEFAULT_MFU

__all__ = [
    "KINDS",
    "CLASSES",
    "MEASURED",
    "MEASURED_SOURCE",
    "MEASURED_RATE",
    "FORMAT_GROUPS",
    "FP4_MULTIPLY",
    "SEED_FACTORS",
    "bits_per_weight",
    "format_group",
    "compute_bits",
    "compute_group",
    "format_levels",
    "peak_field",
    "gpu_class",
    "is_measured",
    "class_of_id",
]

KINDS = ("train_mfu", "prefill", "decode_bandwidth")
CLASSES = ("datacenter", "consumer", "apple")
MEASURED = "measured"
"""The class of an accelerator preset saved by ``xlsxplan calibrate --save``: measured rates, not datasheet peaks."""
MEASURED_SOURCE = "measured by `xlsxplan calibrate`"
"""How the source of a preset saved by ``xlsxplan calibrate --save`` begins (cli/cmd_calibrate.py writes it)."""
MEASURED_RATE = re.compile(r"6N-equivalent training rate ([0-9.]+(?:[eE][+-]?[0-9]+)?) FLOP/s")
"""Where that preset's note states its measured 6N training rate."""
FORMAT_GROUPS = ("16-bit", "8-bit", "4-bit")
FP4_MULTIPLY = "4-bit multiply"
"""The prefill level of a format that multiplies on FP4 tensor cores (NVFP4, MXFP4 on Blackwell) against the FP4
peak: apart from ``4-bit``, whose rows (llama.cpp's 4-bit blocks, AWQ) widen each weight to 16 bits before the
multiply and pay for it (their 0.74 of the 16-bit share in the shipped fit), a cost a native FP4 multiply does not
pay. With no batch-one row of its own it keeps multiplier 1, listed as assumed."""

# The GPU class each shipped accelerator belongs to; anything else is classed by its name (see gpu_class).
_SHIPPED_CLASS = {
    "RTX-4090": "consumer",
    "M2": "apple",
    "M2-8GB": "apple",
    "M2-Ultra": "apple",
    "M3-Max-40c": "apple",
    "M4-Max-40c": "apple",
}

SEED_FACTORS = {"train_mfu": DEFAULT_MFU, "prefill": 0.5, "decode_bandwidth": 0.7}
"""What each kind falls back to with no measurement to fit: the figures the estimates start from. Training:
xlsxplan's default MFU (PaLM's 46% less a margin); prefill: the 50% of "Back-of-the-Envelope Estimation for LLM
Systems" (section 5); decode: the middle of its 60-80% of peak bandwidth (section 4)."""


def bits_per_weight(precision: str) -> float:
    """Bits one weight takes in ``precision``, block scales included (:func:`xlsxplan.precision.bytes_per_param`);
    an empty name is 16-bit.

    Raises
    ------
    UnknownPresetError
        If the precision table does not know the name.
    """
    if not precision or not precision.strip():
        return 16.0
    return 8.0 * precision_module.bytes_per_param(precision)


def format_group(precision: str) -> str:
    """``"16-bit"`` (and wider), ``"8-bit"`` or ``"4-bit"``: the weights' format as the calibration groups it."""
    bits = bits_per_weight(precision)
    if bits >= 12:
        return "16-bit"
    if bits >= 6:
        return "8-bit"
    return "4-bit"


def compute_bits(precision: str) -> int:
    """Bits of the multiply the weights' format runs at: its ``compute`` in formats.toml, else by its width."""
    if not precision or not precision.strip():
        return 16
    fmt = precision_module.lookup(precision)
    if fmt.compute is not None:
        return fmt.compute
    group = format_group(precision)
    return 8 if group == "8-bit" else 16


def format_levels(kind: str) -> tuple[str, ...]:
    """The weights-format levels an efficiency of ``kind`` is fitted at: :data:`FORMAT_GROUPS` by storage for decode,
    with :data:`FP4_MULTIPLY` beside them for prefill (:func:`compute_group`), the first of them the base."""
    return (*FORMAT_GROUPS, FP4_MULTIPLY) if kind == "prefill" else FORMAT_GROUPS


def compute_group(precision: str) -> str:
    """The level a prefill efficiency is fitted at: ``"8-bit"`` for an 8-bit multiply (FP8, W8A8, Q8_0),
    ``"4-bit multiply"`` (FP4_MULTIPLY) for an FP4 multiply against the FP4 peak (NVFP4, MXFP4), ``"4-bit"`` for
    other formats stored in under 6 bits (widened before the multiply), ``"16-bit"`` otherwise, W8A16 included (INT8
    storage, 16-bit multiply).

    Decode is fitted by storage (:func:`format_group`), since it moves bytes; prefill by the multiply.
    """
    bits = compute_bits(precision)
    if bits == 8:
        return "8-bit"
    if bits == 4:
        return FP4_MULTIPLY
    if format_group(precision) == "4-bit":
        return "4-bit"
    return "16-bit"


def peak_field(precision: str) -> str:
    """The catalog field with the dense peak that computes in ``precision``.

    The format's multiply width (formats.toml ``compute``) decides: 8-bit multiplies (FP8, W8A8, and Q8_0 by its
    width) on FP8 tensor cores (``fp8_tflops``; Hopper's and Ada's dense INT8 rate is the same figure); FP4 multiplies
    (NVFP4, MXFP4) on FP4 tensor cores (``fp4_tflops``: Blackwell, RTX 50, AMD CDNA 4); weight-only formats widened
    before the multiply (W8A16, AWQ/GPTQ W4A16, llama.cpp's 4- and 5-bit blocks) and 16-bit ones on 16-bit tensor
    cores (``bf16_tflops``). An accelerator without the peak (FP4 on a Hopper) says so by name: its ``unavailable``
    entry gives the reason, and a share of it is ``#N/A``.
    """
    bits = compute_bits(precision)
    if bits == 4:
        return "fp4_tflops"
    return "fp8_tflops" if bits == 8 else "bf16_tflops"


def gpu_class(gpu: str) -> str:
    """``"datacenter"``, ``"consumer"`` or ``"apple"`` for a catalog accelerator, ``"measured"`` for a preset saved
    by ``xlsxplan calibrate --save`` (:func:`is_measured`), or a class name itself.

    Raises
    ------
    UnknownPresetError
        If ``gpu`` is neither a class nor an accelerator in the catalog (user presets included).
    """
    text = gpu.strip()
    if text.lower() in CLASSES + (MEASURED,):
        return text.lower()
    from ..catalog import load_catalog

    table = load_catalog().accelerators
    preset = table.get(text)
    if is_measured(preset):
        return MEASURED
    return class_of_id(preset.id)


def is_measured(preset: Any) -> bool:
    """Whether an accelerator preset was saved by ``xlsxplan calibrate --save`` (its source says so)."""
    from ..catalog import load_catalog

    if preset.id not in load_catalog().accelerators.user:
        return False
    return load_catalog().accelerators.sources.get(preset.source, "").startswith(MEASURED_SOURCE)


def class_of_id(preset_id: str) -> str:
    """The class of an accelerator preset id: shipped presets by table, others (user presets) by their name.

    GeForce/RTX/GTX/Radeon names are consumer, Apple M-series names Apple, everything else datacenter (the class with
    the most measurements).
    """
    if preset_id in _SHIPPED_CLASS:
        return _SHIPPED_CLASS[preset_id]
    low = preset_id.lower()
    if any(word in low for word in ("rtx", "geforce", "radeon", "gtx")):
        return "consumer"
    if low.startswith("apple") or (len(low) >= 2 and low[0] == "m" and low[1].isdigit()):
        return "apple"
    return "datacenter"
