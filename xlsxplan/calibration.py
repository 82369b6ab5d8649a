"""Calibrated efficiencies: the share of peak that real runs reach, fitted on published measurements.

The seeds' formulas are ceilings. Real runs reach a fraction of them, and that fraction is where estimates go wrong.
Three fractions carry almost all of it:

* ``train_mfu``: model FLOPs utilisation in training, counting attention's FLOPs as PaLM defines it;
* ``prefill``: the share of dense peak compute reached while reading a prompt (time to first token);
* ``decode_bandwidth``: the share of peak memory bandwidth reached while generating.

Each is a small model with physical parameters, fitted on ``xlsxplan/data/measurements.csv`` (a copy of the
project's published measurements, each row with its source) and stored with the fit's provenance in
``xlsxplan/data/calibration.json``. ``xlsxplan calibrate --fit`` regenerates that file from the data in one command;
``xlsxplan validate`` predicts each measurement from a fit that never saw it.

The models
----------
``prefill`` and ``decode_bandwidth``: a base factor for datacenter GPUs at 16-bit precision, times a multiplier for
the GPU class (consumer, Apple) and one for the weights' format (8-bit, 4-bit), all fitted together in log space.

``train_mfu``: ``ceiling / (1 + overhead_bytes * (C / B) / (72 * hidden))``. The matrix multiplies of one layer
cost about ``72 d^2`` FLOPs per token in training (6 N with N = 12 L d^2); the work outside them (norms, activation
functions, residuals, rotary embeddings, the optimizer) is bound by memory and moves about ``overhead_bytes * d``
bytes. Their time ratio is ``overhead_bytes * (C / B) / (72 d)``, with C/B the accelerator's FLOP per byte at the
training precision. So small models (small d) and FP8 (twice the FLOP/s for the same bandwidth) reach less of peak.

The fits minimise the Huber loss of log errors (Huber 1964), quadratic for errors within about 20% and linear
beyond, so one inconsistent row (the data README warns that Llama 3's reported GPU-hours imply a far lower MFU than
Llama 2's) moves a factor no more than any other; a small ridge penalty settles the effects the data cannot
separate at zero (no multiplier).

References
----------
.. [1] Chowdhery et al. 2022, "PaLM", arXiv:2204.02311, Appendix B: model FLOPs utilisation, with the
   ``6 N + 12 L H Q T`` FLOPs per token that count attention.
.. [2] Seed 000, sections 4, 5 and 7: 60-80% of peak bandwidth, 40-60% of peak compute, 50% for prefill.
.. [3] Huber 1964, "Robust Estimation of a Location Parameter", Ann. Math. Statist. 35(1).
.. [4] llama.cpp, tools/quantize/README.md: bits per weight of its block formats including their scales
   (Q4_0 4.5, Q8_0 8.5; Q4_K_M 4.84 for Llama 2 7B), as :mod:`xlsxplan.precision` holds them.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy is only needed to fit, not to look a factor up: `import xlsxplan` stays light
    import numpy as np

from .domains import Count, Name, TokensOrZero, checked
from .errors import ArgumentError, CatalogError, UnknownPresetError
from .precision import format_key
from .training import DEFAULT_MFU

__all__ = [
    "KINDS",
    "CLASSES",
    "FORMAT_GROUPS",
    "SEED_FACTORS",
    "Observation",
    "TrainFit",
    "GroupFit",
    "Factors",
    "bits_per_weight",
    "format_group",
    "peak_field",
    "gpu_class",
    "class_of_id",
    "fit",
    "fit_kind",
    "load_factors",
    "factors_path",
    "efficiency",
]

KINDS = ("train_mfu", "prefill", "decode_bandwidth")
CLASSES = ("datacenter", "consumer", "apple")
FORMAT_GROUPS = ("16-bit", "8-bit", "4-bit")

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
"""What each kind falls back to with no measurement to fit: the seeds' own figures. Training: xlsxplan's default
MFU (PaLM's 46% less a margin); prefill: seed 000's 50% (section 5); decode: the middle of seed 000's 60-80% of
peak bandwidth (section 4)."""

_HUBER = 0.2  # log units: errors within about 22% count quadratically, larger ones linearly
_RIDGE = 0.01  # penalty on log multipliers: settles what the data cannot separate, shrinks a one-row effect by 2%
_OVERHEAD_MAX = 1000  # overhead_bytes searched from 0 to this in steps of 1: bytes per hidden unit per layer per token


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
    from .precision import bytes_per_param

    return 8.0 * bytes_per_param(precision)


def format_group(precision: str) -> str:
    """``"16-bit"`` (and wider), ``"8-bit"`` or ``"4-bit"``: the weights' format as the calibration groups it."""
    bits = bits_per_weight(precision)
    if bits >= 12:
        return "16-bit"
    if bits >= 6:
        return "8-bit"
    return "4-bit"


def peak_field(precision: str) -> str:
    """The catalog field with the dense peak that computes in ``precision``.

    8-bit formats compute on FP8 tensor cores (``fp8_tflops``); every other format, including 4-bit weight-only
    formats that are widened before the multiply (llama.cpp, AWQ), on 16-bit ones (``bf16_tflops``). FP4 tensor
    cores (NVFP4 on Blackwell) have no catalog figure, so an NVFP4 compute estimate is refused.
    """
    key = format_key(precision or "")
    if key in ("nvfp4", "mxfp4", "fp4"):
        raise UnknownPresetError(
            f"precision {precision!r} computes on FP4 tensor cores, whose peak the catalog does not hold", "precision"
        )
    return "fp8_tflops" if format_group(precision) == "8-bit" else "bf16_tflops"


def gpu_class(gpu: str) -> str:
    """``"datacenter"``, ``"consumer"`` or ``"apple"`` for a catalog accelerator (or a class name itself).

    Raises
    ------
    UnknownPresetError
        If ``gpu`` is neither a class nor an accelerator in the catalog (user presets included).
    """
    text = gpu.strip()
    if text.lower() in CLASSES:
        return text.lower()
    from .catalog import load_catalog

    return class_of_id(load_catalog().accelerators.get(text).id)


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


@dataclass(frozen=True)
class Observation:
    """One measurement turned into the efficiency it implies."""

    kind: str
    value: float
    gpu_class: str = "datacenter"
    fmt: str = "16-bit"
    balance: float = 0.0
    """FLOP per byte of the accelerator at the precision: dense peak over bandwidth (train_mfu only)."""
    hidden: float = 0.0
    """Model width (train_mfu only)."""
    label: str = ""
    run: tuple = ()


@dataclass(frozen=True)
class TrainFit:
    """``train_mfu = ceiling / (1 + overhead_bytes * balance / (72 * hidden))``."""

    ceiling: float
    overhead_bytes: float

    def value(self, balance: float, hidden: float) -> float:
        return min(1.0, self.ceiling / (1.0 + self.overhead_bytes * balance / (72.0 * hidden)))


@dataclass(frozen=True)
class GroupFit:
    """``base * class multiplier * format multiplier``, capped at 1."""

    base: float
    classes: dict[str, float] = field(default_factory=dict)
    formats: dict[str, float] = field(default_factory=dict)

    def value(self, gpu_class: str, fmt: str) -> float:
        return min(1.0, self.base * self.classes.get(gpu_class, 1.0) * self.formats.get(fmt, 1.0))


@dataclass(frozen=True)
class Factors:
    """The three calibrated models, and how well each fits the rows it was fitted on."""

    train_mfu: TrainFit
    prefill: GroupFit
    decode_bandwidth: GroupFit

    def value(self, kind: str, gpu_class: str = "datacenter", fmt: str = "16-bit", balance: float = 0.0,
              hidden: float = 4096.0) -> float:  # fmt: skip
        if kind == "train_mfu":
            return self.train_mfu.value(balance, hidden)
        if kind == "prefill":
            return self.prefill.value(gpu_class, fmt)
        if kind == "decode_bandwidth":
            return self.decode_bandwidth.value(gpu_class, fmt)
        raise ArgumentError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}", "kind")

    def predicted(self, obs: Observation) -> float:
        return self.value(obs.kind, obs.gpu_class, obs.fmt, obs.balance, obs.hidden)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "train_mfu": {
                "model": "ceiling / (1 + overhead_bytes * (peak FLOP/s / bandwidth) / (72 * hidden))",
                "ceiling": round(self.train_mfu.ceiling, 4),
                "overhead_bytes": self.train_mfu.overhead_bytes,
            }
        }
        for kind in ("prefill", "decode_bandwidth"):
            g: GroupFit = getattr(self, kind)
            out[kind] = {
                "model": "base * class[gpu class] * format[weights format], at most 1",
                "base": round(g.base, 4),
                "class": {k: round(v, 4) for k, v in g.classes.items()},
                "format": {k: round(v, 4) for k, v in g.formats.items()},
            }
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Factors:
        try:
            t = data["train_mfu"]
            groups = {
                kind: GroupFit(float(data[kind]["base"]), dict(data[kind]["class"]), dict(data[kind]["format"]))
                for kind in ("prefill", "decode_bandwidth")
            }
            return cls(TrainFit(float(t["ceiling"]), float(t["overhead_bytes"])), groups["prefill"],
                       groups["decode_bandwidth"])  # fmt: skip
        except (KeyError, TypeError, ValueError) as err:
            raise CatalogError(f"calibration file: missing or malformed entry {err}") from None


def _huber_weights(r: np.ndarray) -> np.ndarray:
    import numpy as np

    a = np.abs(r)
    return np.where(a <= _HUBER, 1.0, _HUBER / np.maximum(a, 1e-12))


def _huber_loss(r: np.ndarray) -> np.ndarray:
    import numpy as np

    a = np.abs(r)
    return np.where(a <= _HUBER, 0.5 * a**2, _HUBER * (a - 0.5 * _HUBER))


def _fit_group(obs: Sequence[Observation], kind: str) -> GroupFit:
    """Huber regression of log efficiency on GPU class and weights format, with a small ridge penalty."""
    import numpy as np

    if not obs:
        return GroupFit(SEED_FACTORS[kind], {c: 1.0 for c in CLASSES[1:]}, {f: 1.0 for f in FORMAT_GROUPS[1:]})
    levels = [("class", c) for c in CLASSES[1:]] + [("format", f) for f in FORMAT_GROUPS[1:]]
    x = np.array([[1.0] + [float((o.gpu_class if k == "class" else o.fmt) == v) for k, v in levels] for o in obs])
    y = np.log([o.value for o in obs])
    penalty = 2.0 * _RIDGE * np.diag([0.0] + [1.0] * len(levels))
    theta = np.zeros(x.shape[1])
    theta[0] = float(np.median(y))
    for _ in range(200):
        w = _huber_weights(y - x @ theta)
        new = np.linalg.solve(x.T @ (w[:, None] * x) + penalty, x.T @ (w * y))
        if np.max(np.abs(new - theta)) < 1e-12:
            theta = new
            break
        theta = new
    mult = dict(zip(levels, np.exp(theta[1:]).tolist()))
    return GroupFit(
        float(math.exp(theta[0])),
        {c: mult[("class", c)] for c in CLASSES[1:]},
        {f: mult[("format", f)] for f in FORMAT_GROUPS[1:]},
    )


def _fit_train(obs: Sequence[Observation]) -> TrainFit:
    """Grid search over overhead_bytes; for each, the ceiling is the Huber location of the de-penalised logs."""
    import numpy as np

    grid = np.arange(0.0, _OVERHEAD_MAX + 1.0, 1.0)
    if not obs:
        return TrainFit(SEED_FACTORS["train_mfu"], 0.0)
    x = np.array([o.balance / (72.0 * o.hidden) for o in obs])
    z = np.log([o.value for o in obs])[None, :] + np.log1p(grid[:, None] * x[None, :])
    mu = np.median(z, axis=1)
    for _ in range(100):
        w = _huber_weights(z - mu[:, None])
        new = (w * z).sum(axis=1) / w.sum(axis=1)
        done = np.max(np.abs(new - mu)) < 1e-12
        mu = new
        if done:
            break
    mu = np.minimum(mu, 0.0)  # nothing reaches more than its peak
    loss = _huber_loss(z - mu[:, None]).sum(axis=1)
    best = int(np.argmin(loss + 1e-9 * grid))  # ties go to the smaller overhead
    return TrainFit(float(math.exp(mu[best])), float(grid[best]))


def fit_kind(kind: str, observations: Sequence[Observation]) -> TrainFit | GroupFit:
    """Fit one kind's model on its observations (others are ignored)."""
    mine = [o for o in observations if o.kind == kind]
    return _fit_train(mine) if kind == "train_mfu" else _fit_group(mine, kind)


def fit(observations: Iterable[Observation]) -> Factors:
    """Fit the three models on measurements' implied efficiencies; a kind without any falls back to the seeds."""
    obs = list(observations)
    return Factors(*(fit_kind(kind, obs) for kind in KINDS))  # type: ignore[arg-type]


# --- the stored fit ---------------------------------------------------------------------------------------------

DATA_PACKAGE = "xlsxplan.data"
MEASUREMENTS_FILE = "measurements.csv"
FACTORS_FILE = "calibration.json"

_loaded: dict[str, Factors] = {}


def factors_path() -> Path:
    """Where the shipped fit lives (inside the package: ``xlsxplan/data/calibration.json``)."""
    return Path(str(resources.files(DATA_PACKAGE).joinpath(FACTORS_FILE)))


def measurements_path() -> Path:
    """The shipped copy of the published measurements (``xlsxplan/data/measurements.csv``)."""
    return Path(str(resources.files(DATA_PACKAGE).joinpath(MEASUREMENTS_FILE)))


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def load_factors() -> Factors:
    """The shipped calibrated factors, read once."""
    if "shipped" not in _loaded:
        path = factors_path()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise CatalogError(f"{path}: cannot be read: {err}; run `xlsxplan calibrate --fit`") from None
        _loaded["shipped"] = Factors.from_dict(data)
    return _loaded["shipped"]


def _machine_balance(gpu: str, precision: str) -> float:
    from .catalog import gpu_spec

    return gpu_spec(gpu, peak_field(precision)) * 1e12 / (gpu_spec(gpu, "bandwidth_tb_s") * 1e12)


@checked
def efficiency(
    kind: Name, gpu: Name = "H100-SXM", precision: Name = "bf16", hidden: Count = 4096, seq_len: TokensOrZero = 0
) -> float:
    """Calibrated share of peak that real runs reach: training MFU, prefill compute, or decode bandwidth.

    Parameters
    ----------
    kind : str
        train_mfu (training model FLOPs utilisation), prefill (share of peak compute in prefill) or
        decode_bandwidth (share of peak memory bandwidth in decode) [name].
    gpu : str, default H100-SXM
        An accelerator name, or a class: datacenter, consumer or apple [name].
    precision : str, default bf16
        The weights' format, e.g. bf16, fp16, fp8, int4, q4_0 or q4_k_m [name].
    hidden : int, default 4096
        Model width; train_mfu only: small models reach less of peak [count].
    seq_len : float, default 0
        Training sequence length; train_mfu only: when given, the MFU is restated against 6N FLOPs for
        TRAIN_SECONDS and MFU, else it counts attention as PaLM does [tokens].

    Returns
    -------
    float
        Efficiency, to pass as efficiency, utilisation or mfu [fraction].

    Notes
    -----
    Fitted on the published measurements shipped in xlsxplan/data/measurements.csv (``xlsxplan calibrate --fit``);
    ``xlsxplan validate`` shows each row's error from a fit without its run. prefill and decode_bandwidth are
    ``base * class * format``; train_mfu is ``ceiling / (1 + overhead_bytes * (C/B) / (72 hidden))`` with C/B the
    accelerator's dense FLOP/s over its bandwidth at the precision (PaLM, arXiv:2204.02311, Appendix B). With
    seq_len, train_mfu is divided by ``1 + seq_len / (6 hidden)``, attention's ``12 L d T`` over ``6N`` for
    ``N = 12 L d^2``. Batch-one decode on datacenter GPUs (llama.cpp) reaches about half of peak bandwidth,
    consumer and Apple GPUs much more.
    """
    key = kind.strip().lower()
    if key not in KINDS:
        raise ArgumentError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}", "kind")
    factors = load_factors()
    fmt = format_group(precision)
    if key == "train_mfu":
        if gpu.strip().lower() in CLASSES:
            raise ArgumentError(
                "gpu must name an accelerator for train_mfu (its FLOP/s per byte sets the small-model penalty), "
                f"got the class {gpu!r}",
                "gpu",
            )
        value = factors.value(key, balance=_machine_balance(gpu, precision), hidden=hidden)
        if seq_len > 0:
            value /= 1.0 + seq_len / (6.0 * hidden)
        return value
    return factors.value(key, gpu_class(gpu), fmt)
