"""Numeric formats by name, and the bytes each stores per parameter or cached value, scales included.

Wherever a function takes a byte count (``bytes_per_param``, ``bytes_per_value``) it also takes one of these names,
so ``=WEIGHTS_GB(72.7, "fp8")`` reads like the sentence it stands for. The formats and the source of every figure
live in ``catalog/formats.toml``: plain widths (``bf16``), block formats whose scales and zero-points are counted
(``q4_0``, ``nvfp4``, ``int4_g128``) and measured checkpoint averages (llama.cpp's ``q4_k_m``).

Two more facts per format, also from ``formats.toml``:

* ``embeddings``: the format a published checkpoint keeps its token embeddings and output head in. AWQ, GPTQ,
  llm-compressor and ModelOpt quantize the Linear layers of the transformer blocks only, so an FP8, INT8, INT4 or
  NVFP4 checkpoint keeps both in 16 bits; llama.cpp's formats quantize them too and their measured averages already
  include them. A name never carries this into a calculation: MODEL_WEIGHTS_GB takes the embeddings' width as an
  argument of its own, and the calibration's predictions pass the format's published one explicitly.
* ``compute``: the width of the tensor-core multiply the format runs at: 8 for FP8 and W8A8, 16 for weight-only
  formats widened before the multiply (W8A16, W4A16 such as AWQ, llama.cpp's 4- and 5-bit blocks), 4 for NVFP4 and
  MXFP4 on FP4 tensor cores.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from importlib import resources
from typing import Annotated, Any, ClassVar

from .domains import Domain, Name, checked, whole
from .errors import CatalogError, UnknownPresetError

__all__ = [
    "FORMATS",
    "Format",
    "ByteCount",
    "BytesPerValue",
    "BytesPerValueOrZero",
    "TrainBytes",
    "bytes_per_param",
    "compute_precision",
    "expert_precision",
    "format_names",
    "format_source",
    "block_bytes_per_param",
    "format_key",
    "lookup",
    "published_embedding_bytes",
]

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
    embeddings: str | None = None
    """The format checkpoints keep token embeddings and the output head in; None: this format, like the rest."""
    embeddings_source: str = ""
    """The citation for ``embeddings``."""
    compute: int | None = None
    """Bits of the tensor-core multiply (16, 8 or 4); None: by the stored width (16 for 12 bits and wider, 8 for 6 to
    12 bits, else 16 for a format widened before the multiply), as ``calibration.format_group`` groups it."""

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


@functools.cache
def _formats() -> dict[str, Format]:
    """The formats of ``catalog/formats.toml``, read and checked on first use (never at import: ``import
    xlsxplan.core`` reads no file and loads no TOML parser), by name in file order."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    # read as a file of the package, not through the xlsxplan.catalog package, whose import loads pydantic
    text = resources.files("xlsxplan").joinpath("catalog").joinpath("formats.toml").read_text(encoding="utf-8")
    raw = tomllib.loads(text)
    sources: dict[str, str] = raw.get("sources", {})
    formats: dict[str, Format] = {}
    for name, body in raw.get("formats", {}).items():
        if body.get("source") not in sources:
            raise CatalogError(f"formats.toml: {name}: source {body.get('source')!r} is not in [sources]")
        compute = body.get("compute")
        if compute is not None and compute not in (4, 8, 16):
            raise CatalogError(f"formats.toml: {name}: compute must be 4, 8 or 16 (bits of the multiply)")
        embeddings = body.get("embeddings")
        if embeddings is not None and body.get("embeddings_source") not in sources:
            raise CatalogError(f"formats.toml: {name}: embeddings needs an embeddings_source from [sources]")
        formats[name] = Format(
            name,
            _bits(name, body),
            sources[body["source"]],
            tuple(body.get("aliases", ())),
            embeddings,
            sources.get(body.get("embeddings_source", ""), ""),
            compute,
        )
    for f in formats.values():
        if f.embeddings is not None and f.embeddings not in formats:
            raise CatalogError(f"formats.toml: {f.name}: embeddings {f.embeddings!r} is not a format")
    return formats


FORMATS: dict[str, tuple[float, str]]  # declared for the checkers; made by __getattr__ on first use


def __getattr__(name: str) -> Any:
    """``FORMATS``: name -> (bytes per value including scales, citation), in the order of formats.toml, built on
    first use (PEP 562) like the rest of the table."""
    if name == "FORMATS":
        return _table()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _table() -> dict[str, tuple[float, str]]:
    """``FORMATS``, built once from :func:`_formats`."""
    return {f.name: (f.bytes_per_value, f.source) for f in _formats().values()}


def format_key(name: str) -> str:
    """A format name as names are matched: case, spaces, hyphens and underscores ignored (``Q4_K-M`` is ``q4km``)."""
    return name.strip().lower().replace("-", "").replace("_", "").replace(" ", "")


@functools.cache
def _index() -> dict[str, Format]:
    """Every format by the key of its name and of each alias (the first format to claim a key keeps it)."""
    index: dict[str, Format] = {}
    for f in _formats().values():
        for n in (f.name, *f.aliases):
            index.setdefault(format_key(n), f)
    return index


def format_names() -> list[str]:
    """The precision names :func:`bytes_per_param` accepts (aliases aside), in catalog order."""
    return list(_formats())


def lookup(precision: str, argument: str = "precision") -> Format:
    """The :class:`Format` a name means (aliases, case, hyphens and underscores ignored).

    Raises
    ------
    UnknownPresetError
        If no format has that name, with the closest names; the message and the error name ``argument``.
    """
    return _lookup(precision, argument)


def _lookup(precision: str, argument: str = "precision") -> Format:
    hit = _index().get(format_key(precision))
    if hit is not None:
        return hit
    import difflib  # only for a name that is not known

    close = difflib.get_close_matches(precision.strip().lower(), list(_formats()), n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {', '.join(_formats())}"
    raise UnknownPresetError(f"{argument} {precision!r} is not a known format{hint}", argument)


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


def compute_precision(weights: str) -> str:
    """The precision weights compute in: their own, or the other layers' when a mixture of experts stores its routed
    experts apart (``REST+EXPERTS``; ``bf16+mxfp4``: bf16, the 4-bit experts widened to it before the multiply, as
    w4a16 kernels do). The plan's options and validate's rows name weights so."""
    return weights.partition("+")[0]


def expert_precision(weights: str) -> str:
    """The routed experts' precision of weights named ``REST+EXPERTS`` (``bf16+mxfp4``: mxfp4); empty for weights
    of one precision."""
    return weights.partition("+")[2]


def published_embedding_bytes(precision: str) -> float:
    """Bytes per parameter that published checkpoints in this format keep their token embeddings and output head in:
    16 bits for FP8, INT8, INT4 and NVFP4 checkpoints (``embeddings`` in formats.toml, with its source), the format's
    own width for llama.cpp's formats and the 16- and 32-bit ones [bytes]. UnknownPresetError for an unknown name."""
    fmt = _lookup(precision)
    return _lookup(fmt.embeddings).bytes_per_value if fmt.embeddings else fmt.bytes_per_value


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


@checked(arrays=True)
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


@dataclass(frozen=True)
class ByteCount(Domain):
    """A byte count per value that may also be given as a precision name: ``"fp8"`` is 1, ``"q4_0"`` 0.5625.

    The one byte-count domain: a name reaches the function as its byte count (:func:`bytes_per_param`), so a name
    and its number give the same answer everywhere.
    """

    numbers_alone: ClassVar[bool] = True  # a number is checked as the base class checks it

    def check(self, name: str, value: object) -> Any:
        if isinstance(value, str):
            try:
                return _lookup(value).bytes_per_value
            except UnknownPresetError as err:
                raise UnknownPresetError(f"{name}: {err.message}", name) from None
        return super().check(name, value)

    def check_array(self, x: Any) -> tuple[Any, Any] | None:
        """The number checks on an array (:meth:`Domain.check_array`): a precision name never reaches one, it is
        read cell by cell before."""
        return super().check_array(x)


BytesPerValue = Annotated[float, ByteCount("bytes", 0, 64, low_open=True, typical=(0.1, 8))]
"""Bytes per weight or cached value, or a precision name."""
BytesPerValueOrZero = Annotated[float, ByteCount("bytes", 0, 64)]
"""As :data:`BytesPerValue`, 0 allowed (for "none given": the function says what 0 means)."""
TrainBytes = Annotated[float, ByteCount("bytes", 0, 1000, low_open=True)]
"""Bytes of training state per parameter (16 for mixed-precision Adam), or a precision name."""
