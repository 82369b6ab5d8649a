"""Numeric formats by name, and the bytes each stores per parameter or cached value, scales included.

Wherever a function takes a byte count (``bytes_per_param``, ``bytes_per_value``) it also takes one of these names,
so ``=WEIGHTS_GB(72.7, "fp8")`` reads like the sentence it stands for. The formats and the source of every figure
live in ``catalog/formats.toml``: plain widths (``bf16``), block formats whose scales and zero-points are counted
(``q4_0``, ``nvfp4``, ``int4_g128``) and measured checkpoint averages (llama.cpp's ``q4_k_m``).
"""

from __future__ import annotations

import difflib
import sys
from dataclasses import dataclass
from importlib import resources
from typing import Annotated, Any

from .domains import Domain, Name, checked, whole
from .errors import CatalogError, UnknownPresetError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = [
    "FORMATS", "Format", "bytes_per_param", "format_names", "format_source", "block_bytes_per_param", "format_key",
]  # fmt: skip

Bits = Annotated[int, whole(1, 64)]
BlockSize = Annotated[int, whole(1, 1_000_000)]
MetaBits = Annotated[int, Domain("whole", 0, 1024)]


@dataclass(frozen=True)
class Format:
    """One stored numeric format."""

    name: str
    bits_per_value: float
    """Average bits per value, scales and zero-points included [bits]."""
    source: str
    """The citation of the figure."""
    aliases: tuple[str, ...] = ()

    @property
    def bytes_per_value(self) -> float:
        return self.bits_per_value / 8


def _bits(name: str, body: dict[str, Any]) -> float:
    if "bits_per_weight" in body:
        if "bits" in body or "block" in body:
            raise CatalogError(f"formats.toml: {name}: give bits_per_weight or bits (with block), not both")
        return float(body["bits_per_weight"])
    bits = body.get("bits")
    if not isinstance(bits, int) or bits <= 0:
        raise CatalogError(f"formats.toml: {name}: bits must be a positive whole number")
    block = body.get("block")
    if block is None:
        if "scale_bits" in body or "zero_bits" in body:
            raise CatalogError(f"formats.toml: {name}: scale_bits and zero_bits need a block size")
        return float(bits)
    if not isinstance(block, int) or block <= 0 or "scale_bits" not in body:
        raise CatalogError(f"formats.toml: {name}: a block format needs a positive block and scale_bits")
    return (bits * block + body["scale_bits"] + body.get("zero_bits", 0)) / block


def _load() -> dict[str, Format]:
    text = resources.files("xlsxplan.catalog").joinpath("formats.toml").read_text(encoding="utf-8")
    raw = tomllib.loads(text)
    sources: dict[str, str] = raw.get("sources", {})
    formats: dict[str, Format] = {}
    for name, body in raw.get("formats", {}).items():
        if body.get("source") not in sources:
            raise CatalogError(f"formats.toml: {name}: source {body.get('source')!r} is not in [sources]")
        formats[name] = Format(name, _bits(name, body), sources[body["source"]], tuple(body.get("aliases", ())))
    return formats


_FORMATS = _load()

FORMATS: dict[str, tuple[float, str]] = {f.name: (f.bytes_per_value, f.source) for f in _FORMATS.values()}
"""name -> (bytes per value including scales, citation), in the order of formats.toml."""


def format_key(name: str) -> str:
    """A format name as names are matched: case, spaces, hyphens and underscores ignored (``Q4_K-M`` is ``q4km``)."""
    return name.strip().lower().replace("-", "").replace("_", "").replace(" ", "")


_INDEX: dict[str, Format] = {}
for _f in _FORMATS.values():
    for _n in (_f.name, *_f.aliases):
        _INDEX.setdefault(format_key(_n), _f)


def format_names() -> list[str]:
    """The precision names :func:`bytes_per_param` accepts (aliases aside), in catalog order."""
    return list(_FORMATS)


def _lookup(precision: str) -> Format:
    hit = _INDEX.get(format_key(precision))
    if hit is not None:
        return hit
    close = difflib.get_close_matches(precision.strip().lower(), list(_FORMATS), n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {', '.join(_FORMATS)}"
    raise UnknownPresetError(f"precision {precision!r} is not a known format{hint}", "precision")


@checked
def bytes_per_param(precision: Name) -> float:
    """Bytes one parameter takes in a numeric format, its share of block scales and zero-points included.

    Parameters
    ----------
    precision : str
        A format name such as bf16, fp8, int4_g128, nvfp4, mxfp4, q4_0 or q4_k_m, case-insensitive [name].

    Returns
    -------
    float
        Storage per parameter [bytes].

    Notes
    -----
    Block formats store a scale (and a zero-point) per block of B values: ``(bits * B + scale_bits + zero_bits) /
    B / 8``. Q4_0 is 18 bytes per 32 weights (0.5625), Q8_0 34 per 32, NVFP4 4 + 8/16 bits, MXFP4 4 + 8/32 bits,
    AWQ/GPTQ INT4 with group 128 4 + (16 + 4)/128 bits. llama.cpp's K-quant mixes (q4_k_m 4.84 bits) are measured
    averages over Llama 2 7B. Sources: catalog/formats.toml; FORMAT_SOURCE names them.
    """
    return _lookup(precision).bytes_per_value


@checked
def format_source(precision: Name) -> str:
    """Where a numeric format's bytes per value come from.

    Parameters
    ----------
    precision : str
        A format name such as q4_k_m or nvfp4 [name].

    Returns
    -------
    str
        The citation [text].
    """
    return _lookup(precision).source


@checked
def block_bytes_per_param(bits: Bits, block_size: BlockSize, scale_bits: MetaBits, zero_bits: MetaBits = 0) -> float:
    """Bytes per parameter of a block-quantized format: the values plus their share of each block's scale and zero.

    Parameters
    ----------
    bits : int
        Bits per stored value, e.g. 4 for INT4 or FP4 [bits].
    block_size : int
        Values sharing one scale (the group size), e.g. 128 for AWQ/GPTQ, 32 for MXFP4 and Q4_0 [count].
    scale_bits : int
        Bits of the scale stored per block: 16 for FP16, 8 for E4M3 or E8M0, 32 for FP32 [bits].
    zero_bits : int, default 0
        Bits of the zero-point stored per block; 0 for symmetric formats [bits].

    Returns
    -------
    float
        Storage per parameter [bytes].

    Notes
    -----
    ``(bits * block_size + scale_bits + zero_bits) / block_size / 8``: Q4_0 (4, 32, 16) is 18 bytes per 32 weights
    (llama.cpp ggml-common.h); INT4 group 128 with FP16 scale and 4-bit zero is 0.5195 bytes (AWQ, arXiv:2306.00978).
    """
    return (bits * block_size + scale_bits + zero_bits) / block_size / 8
