"""Numeric formats by name, and the bytes each stores per parameter or cached value.

Wherever a function takes a byte count (``bytes_per_param``, ``bytes_per_value``) it also takes one of these names,
so ``=WEIGHTS_GB(72.7, "fp8")`` reads like the sentence it stands for.
"""

from __future__ import annotations

import difflib
import math

from .domains import Name, checked
from .errors import UnknownPresetError

__all__ = ["FORMATS", "bytes_per_param", "format_names"]

# name -> (bytes per parameter, what it is and where the figure comes from)
FORMATS: dict[str, tuple[float, str]] = {
    "fp32": (4.0, "IEEE 754 single precision: 32 bits"),
    "tf32": (4.0, "NVIDIA TF32 is stored as 32-bit floats (A100 whitepaper)"),
    "fp16": (2.0, "IEEE 754 half precision: 16 bits"),
    "bf16": (2.0, "bfloat16: 16 bits (1 sign, 8 exponent, 7 mantissa)"),
    "fp8": (1.0, "FP8 E4M3/E5M2 (Micikevicius et al. 2022, arXiv:2209.05433): 8 bits; scales not counted"),
    "int8": (1.0, "8-bit integers; scales not counted"),
    "int4": (0.5, "4-bit integers; scales not counted"),
    "ternary": (
        math.log2(3) / 8,
        "three levels {-1, 0, 1}: log2(3) = 1.585 bits, the entropy bound (BitNet b1.58, arXiv:2402.17764)",
    ),
}

_ALIASES = {"float32": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16", "e4m3": "fp8", "e5m2": "fp8"}


def format_names() -> list[str]:
    """The precision names :func:`bytes_per_param` accepts, in catalog order."""
    return list(FORMATS)


@checked
def bytes_per_param(precision: Name) -> float:
    """Bytes one parameter takes in a numeric format.

    Parameters
    ----------
    precision : str
        A format name such as ``bf16``, ``fp8`` or ``int4``, case-insensitive [name].

    Returns
    -------
    float
        Storage per parameter [bytes].

    Notes
    -----
    Bits per value divided by 8; formats that store block scales beside the values say so in their description.
    """
    key = precision.strip().lower().replace("-", "").replace("_", "")
    key = _ALIASES.get(key, key)
    for name, (size, _) in FORMATS.items():
        if name.replace("_", "") == key:
            return size
    close = difflib.get_close_matches(precision.lower(), list(FORMATS), n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {', '.join(FORMATS)}"
    raise UnknownPresetError(f"precision {precision!r} is not a known format{hint}", "precision")
