"""Calibrated efficiencies: the share of peak that real runs reach, fitted on published measurements.

The seeds' formulas are ceilings. Real runs reach a fraction of them, and that fraction is where estimates go wrong.
Three fractions carry almost all of it:

* ``train_mfu``: model FLOPs utilisation in training, counting attention's FLOPs as PaLM defines it;
* ``prefill``: the share of dense peak compute reached while reading a prompt (time to first token);
* ``decode_bandwidth``: the share of peak memory bandwidth reached while generating.

Each is a small model with physical parameters, fitted on ``xlsxplan/data/measurements.csv`` (a copy of the
project's published measurements, each row with its source) and stored with the fit's provenance in
``xlsxplan/data/calibration.json``: the rows behind every fitted level, the fit's error, and the levels no row
supports. ``xlsxplan validate`` predicts each measurement from a fit that never saw it.

``xlsxplan calibrate --fit [--data FILE]`` refits in one command and writes the user's own factors file,
``calibration.json`` in the user catalog folder (``$XLSXPLAN_CATALOG_DIR``, else the platform config folder, as the
user presets); EFFICIENCY, ``validate`` and the templates use it whenever it exists. ``$XLSXPLAN_CALIBRATION``
chooses: ``auto`` (the default: the user's file if there is one, else the shipped one), ``shipped``, ``user``, or
the path of a factors file. ``calibrate --fit --shipped`` rewrites the shipped file, from a source checkout only.

What the factors do not cover
-----------------------------
A level (GPU class or weights format) that no measurement supports keeps multiplier 1: the datacenter, 16-bit
share. That is an assumption, recorded in the provenance (``levels``: rows per level, ``assumed`` for none) and
stated by :func:`efficiency_basis`. With the shipped data: decode with 8-bit weights (the FP8 throughput rows
20-22, predicted with the 16-bit share, support it indirectly), prefill with 4-bit weights. A share of a peak the
catalog does not hold (prefill on Apple GPUs, FP4 tensor cores, FP8 on an A100) is refused as ``#N/A``.

A preset measured by ``xlsxplan calibrate --save`` is its own class, ``measured``: its bandwidth and FLOP/s are
what a copy kernel and a matrix multiply sustained on that device, not datasheet peaks, so its decode and prefill
factors are 1 (times the weights-format multiplier), and its train_mfu is its measured 6N training rate over its
measured matmul rate.

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
import os
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy is only needed to fit, not to look a factor up: `import xlsxplan` stays light
    import numpy as np

from .domains import Count, Name, TokensOrZero, checked
from .errors import ArgumentError, CatalogError, NotAvailableError
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
    "active",
    "Calibration",
    "factors_path",
    "user_factors_path",
    "compute_group",
    "level_counts",
    "efficiency",
    "efficiency_basis",
    "MEASURED_SOURCE",
    "FACTORS_ENV",
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


def _compute_bits(precision: str) -> int:
    """Bits of the multiply the weights' format runs at: its ``compute`` in formats.toml, else by its width."""
    if not precision or not precision.strip():
        return 16
    from .precision import lookup

    fmt = lookup(precision)
    if fmt.compute is not None:
        return fmt.compute
    group = format_group(precision)
    return 8 if group == "8-bit" else 16


def compute_group(precision: str) -> str:
    """The level a prefill efficiency is fitted at: ``"8-bit"`` for an 8-bit multiply (FP8, W8A8, Q8_0),
    ``"4-bit"`` for formats stored in under 6 bits (widened before the multiply, or FP4), ``"16-bit"`` otherwise,
    W8A16 included (INT8 storage, 16-bit multiply).

    Decode is fitted by storage (:func:`format_group`), since it moves bytes; prefill by the multiply.
    """
    bits = _compute_bits(precision)
    if bits == 8:
        return "8-bit"
    if bits == 4 or format_group(precision) == "4-bit":
        return "4-bit"
    return "16-bit"


def peak_field(precision: str) -> str:
    """The catalog field with the dense peak that computes in ``precision``.

    The format's multiply width (formats.toml ``compute``) decides: 8-bit multiplies (FP8, W8A8, and Q8_0 by its
    width) on FP8 tensor cores (``fp8_tflops``; Hopper's and Ada's dense INT8 rate is the same figure); weight-only
    formats widened before the multiply (W8A16, AWQ/GPTQ W4A16, llama.cpp's 4- and 5-bit blocks) and 16-bit ones on
    16-bit tensor cores (``bf16_tflops``). FP4 tensor cores (NVFP4, MXFP4 on Blackwell) have no catalog figure, so
    an FP4 compute estimate is refused (``#N/A``).
    """
    bits = _compute_bits(precision)
    if bits == 4:
        raise NotAvailableError(
            f"precision {precision!r} computes on FP4 tensor cores, whose peak the catalog does not hold", "precision"
        )
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
    from .catalog import load_catalog

    table = load_catalog().accelerators
    preset = table.get(text)
    if is_measured(preset):
        return MEASURED
    return class_of_id(preset.id)


def is_measured(preset: Any) -> bool:
    """Whether an accelerator preset was saved by ``xlsxplan calibrate --save`` (its source says so)."""
    from .catalog import load_catalog

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

    def raw(self, balance: float, hidden: float) -> float:
        """The model's value before the cap at 1."""
        return self.ceiling / (1.0 + self.overhead_bytes * balance / (72.0 * hidden))

    def value(self, balance: float, hidden: float) -> float:
        return min(1.0, self.raw(balance, hidden))


@dataclass(frozen=True)
class GroupFit:
    """``base * class multiplier * format multiplier``, capped at 1.

    A measured preset (class ``measured``) has no base and no class multiplier: its figures are already sustained
    rates, so only the weights-format multiplier applies.
    """

    base: float
    classes: dict[str, float] = field(default_factory=dict)
    formats: dict[str, float] = field(default_factory=dict)

    def raw(self, gpu_class: str, fmt: str) -> float:
        """The model's value before the cap at 1."""
        if gpu_class == MEASURED:
            return self.formats.get(fmt, 1.0)
        return self.base * self.classes.get(gpu_class, 1.0) * self.formats.get(fmt, 1.0)

    def value(self, gpu_class: str, fmt: str) -> float:
        return min(1.0, self.raw(gpu_class, fmt))


@dataclass(frozen=True)
class Factors:
    """The three calibrated models, and how well each fits the rows it was fitted on."""

    train_mfu: TrainFit
    prefill: GroupFit
    decode_bandwidth: GroupFit

    def raw(self, kind: str, gpu_class: str = "datacenter", fmt: str = "16-bit", balance: float = 0.0,
            hidden: float = 4096.0) -> float:  # fmt: skip
        """The model's value before the cap at 1: above 1, the fit says more than the hardware can do."""
        if kind == "train_mfu":
            return self.train_mfu.raw(balance, hidden)
        if kind == "prefill":
            return self.prefill.raw(gpu_class, fmt)
        if kind == "decode_bandwidth":
            return self.decode_bandwidth.raw(gpu_class, fmt)
        raise ArgumentError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}", "kind")

    def value(self, kind: str, gpu_class: str = "datacenter", fmt: str = "16-bit", balance: float = 0.0,
              hidden: float = 4096.0) -> float:  # fmt: skip
        return min(1.0, self.raw(kind, gpu_class, fmt, balance, hidden))

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
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise CatalogError(f"calibration file: missing or malformed entry {err}") from None


def level_counts(kind: str, observations: Sequence[Observation]) -> dict[str, dict[str, int]]:
    """Rows behind each level of a group kind: ``{"class": {"datacenter": n, ...}, "format": {"16-bit": n, ...}}``.

    A level with no row keeps multiplier 1 (the datacenter, 16-bit share): an assumption, not a fit.
    """
    mine = [o for o in observations if o.kind == kind and o.gpu_class != MEASURED]
    return {
        "class": {c: sum(o.gpu_class == c for o in mine) for c in CLASSES},
        "format": {f: sum(o.fmt == f for o in mine) for f in FORMAT_GROUPS},
    }


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

    obs = [o for o in obs if o.gpu_class != MEASURED]  # shares of measured rates, not of datasheet peaks
    if not obs:
        return GroupFit(SEED_FACTORS[kind], {c: 1.0 for c in CLASSES[1:]}, {f: 1.0 for f in FORMAT_GROUPS[1:]})
    # a level no row has is not a parameter: it stays at multiplier 1 (recorded as assumed in the provenance)
    counts = level_counts(kind, obs)
    levels = [(k, v) for k in ("class", "format") for v, n in list(counts[k].items())[1:] if n]
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
        {c: mult.get(("class", c), 1.0) for c in CLASSES[1:]},
        {f: mult.get(("format", f), 1.0) for f in FORMAT_GROUPS[1:]},
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

FACTORS_ENV = "XLSXPLAN_CALIBRATION"
"""Which factors EFFICIENCY, validate and the templates use: ``auto`` (default), ``shipped``, ``user`` or a path."""

STAT_INTERVAL = 1.0
"""Seconds between two looks at the factors file: EFFICIENCY in a column of cells would otherwise ask the file system
on every call. ``xlsxplan calibrate --fit`` makes the next lookup look at once."""


@dataclass(frozen=True)
class Calibration:
    """The factors in use and where they come from."""

    factors: Factors
    origin: str
    """``shipped``, ``user`` (the user catalog folder's calibration.json) or ``file`` (a path in the environment)."""
    path: Path
    data: dict[str, Any]
    """The provenance's ``data`` entry: the measurements file it was fitted on, its sha256 and rows."""
    levels: dict[str, dict[str, dict[str, int]]]
    """Rows behind each level, per group kind (empty for a file written before levels were recorded)."""

    def describe(self) -> str:
        fitted = self.data.get("path") or self.data.get("file", "?")
        return f"{self.origin} factors ({self.path}), fitted on {fitted}"


_loaded: dict[str, Any] = {}


def factors_path() -> Path:
    """Where the shipped fit lives (inside the package: ``xlsxplan/data/calibration.json``)."""
    return Path(str(resources.files(DATA_PACKAGE).joinpath(FACTORS_FILE)))


def user_factors_path() -> Path:
    """Where ``xlsxplan calibrate --fit`` writes the user's own fit: calibration.json in the user catalog folder."""
    from .catalog import user_catalog_dir

    return user_catalog_dir() / FACTORS_FILE


def measurements_path() -> Path:
    """The shipped copy of the published measurements (``xlsxplan/data/measurements.csv``)."""
    return Path(str(resources.files(DATA_PACKAGE).joinpath(MEASUREMENTS_FILE)))


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def selected() -> tuple[str, Path]:
    """The factors file ``$XLSXPLAN_CALIBRATION`` selects, and its origin; CatalogError for a choice that is missing."""
    choice = (os.environ.get(FACTORS_ENV) or "auto").strip()
    low = choice.lower()
    if low == "shipped":
        return "shipped", factors_path()
    if low in ("auto", "user"):
        user = user_factors_path()
        if user.is_file():
            return "user", user
        if low == "user":
            raise CatalogError(f"{FACTORS_ENV}=user, but {user} does not exist: run `xlsxplan calibrate --fit`")
        return "shipped", factors_path()
    path = Path(choice).expanduser()
    if not path.is_file():
        raise CatalogError(f"{FACTORS_ENV}={choice}: no such factors file (give auto, shipped, user or a path)")
    return "file", path


def _read(origin: str, path: Path) -> Calibration:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise CatalogError(f"{path}: cannot be read: {err}; run `xlsxplan calibrate --fit`") from None
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: not a calibration file (a JSON object is expected)")
    try:
        factors = Factors.from_dict(data)
    except CatalogError as err:
        raise CatalogError(f"{path}: {err.message}") from None
    levels = {k: data[k]["levels"] for k in ("prefill", "decode_bandwidth") if isinstance(data[k].get("levels"), dict)}
    return Calibration(factors, origin, path, dict(data.get("data") or {}), levels)


def refresh() -> None:
    """Make the next lookup read the factors file again (after ``calibrate --fit`` in the same process)."""
    _loaded.clear()


def active() -> Calibration:
    """The factors in use: the user's refit when there is one (or as ``$XLSXPLAN_CALIBRATION`` says), else the
    shipped fit. Read once, and again when the file or the choice changes (looked at once a second at most)."""
    env = (os.environ.get(FACTORS_ENV), os.environ.get("XLSXPLAN_CATALOG_DIR"))
    now = time.monotonic()
    if _loaded.get("env") == env and now - _loaded.get("looked", -STAT_INTERVAL) < STAT_INTERVAL:
        return _loaded["calibration"]  # type: ignore[no-any-return]
    origin, path = selected()
    try:
        st = path.stat()
        stamp: tuple = (origin, str(path), st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = (origin, str(path), None, None)
    if _loaded.get("stamp") != stamp:
        _loaded["calibration"] = _read(origin, path)
        _loaded["stamp"] = stamp
    _loaded["env"], _loaded["looked"] = env, now
    return _loaded["calibration"]  # type: ignore[no-any-return]


def load_factors() -> Factors:
    """The calibrated factors in use (:func:`active`): the user's refit if there is one, else the shipped fit."""
    return active().factors


def _machine_balance(gpu: str, precision: str) -> float:
    from .catalog import gpu_spec

    return gpu_spec(gpu, peak_field(precision)) * 1e12 / (gpu_spec(gpu, "bandwidth_tb_s") * 1e12)


def _require_peak(gpu: str, cls: str, precision: str) -> None:
    """Refuse (#N/A) a compute share where the catalog has no peak for the precision: a share of nothing."""
    field_name = peak_field(precision)  # FP4: NotAvailableError
    if gpu.strip().lower() in CLASSES + (MEASURED,):
        if cls == "apple":
            raise NotAvailableError(
                "gpu: Apple GPUs have no published FLOP/s, so a prefill share of peak compute is undefined; measure "
                "one with `xlsxplan calibrate --save NAME` and pass NAME",
                "gpu",
            )
        return
    from .catalog import gpu_spec

    try:
        gpu_spec(gpu, field_name)
    except NotAvailableError as err:
        hint = ""
        if field_name == "fp8_tflops" and "not-supported" in _unavailable_key(gpu, field_name):
            from .precision import lookup

            if lookup(precision).name in ("fp8", "fp8_block128", "mxfp8"):
                hint = ("; FP8 weights there run weight-only, widened to 16 bits before the multiply (vLLM docs, "
                        "'FP8 W8A8': W8A16 with FP8 Marlin on Turing and Ampere): give precision w8a16")  # fmt: skip
            else:
                hint = "; the catalog holds no INT8 tensor rate"
        raise NotAvailableError(f"{err.message}; a prefill share of it is undefined{hint}", "gpu") from None


def _unavailable_key(gpu: str, field_name: str) -> str:
    from .catalog import load_catalog

    return load_catalog().accelerators.get(gpu).unavailable.get(field_name, "")


def _measured_train_mfu(gpu: str) -> float:
    """A measured preset's 6N training rate over its matmul rate, both from ``xlsxplan calibrate``."""
    from .catalog import load_catalog

    preset = load_catalog().accelerators.get(gpu)
    hit = MEASURED_RATE.search(preset.note or "")
    if hit is None or not preset.figure("bf16_tflops"):
        raise NotAvailableError(
            f"gpu: {preset.id} was measured, but its note gives no 6N training rate; measure it again with "
            "`xlsxplan calibrate --save`",
            "gpu",
        )
    return min(1.0, float(hit.group(1)) / (float(preset.figure("bf16_tflops")) * 1e12))  # type: ignore[arg-type]


def _prepared(kind: str, gpu: str) -> tuple[str, str]:
    """The kind, checked and lower-cased, and the GPU's class."""
    key = kind.strip().lower()
    if key not in KINDS:
        raise ArgumentError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}", "kind")
    return key, gpu_class(gpu)


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
    Fitted on the published measurements (xlsxplan/data/measurements.csv), or on yours after ``xlsxplan calibrate
    --fit --data FILE`` (the user catalog folder's calibration.json; ``$XLSXPLAN_CALIBRATION`` chooses);
    ``xlsxplan validate`` shows each row's error from a fit without its run. prefill and decode_bandwidth are ``base
    * class * format``, decode's format by storage, prefill's by the width of the multiply (W8A16 computes in 16
    bits); train_mfu is ``ceiling / (1 + overhead_bytes * (C/B) / (72 hidden))`` with C/B the accelerator's dense
    FLOP/s over its bandwidth at the precision (PaLM, arXiv:2204.02311, Appendix B). With seq_len, train_mfu is
    divided by ``1 + seq_len / (6 hidden)``, attention's ``12 L d T`` over ``6N`` for ``N = 12 L d^2``. A level no
    measurement supports keeps multiplier 1 (shipped data: 8-bit decode, 4-bit prefill), as the factors file records;
    a share of a peak the catalog lacks (prefill on Apple, FP4, FP8 on an A100) is #N/A. A preset saved by
    ``xlsxplan calibrate --save`` gives 1 for decode and prefill (its figures are measured rates, times the format
    multiplier) and its measured 6N rate over its measured matmul rate for train_mfu.
    """
    key, cls = _prepared(kind, gpu)
    factors = load_factors()
    if key == "train_mfu":
        if gpu.strip().lower() in CLASSES + (MEASURED,):
            raise ArgumentError(
                "gpu must name an accelerator for train_mfu (its FLOP/s per byte sets the small-model penalty), "
                f"got the class {gpu!r}",
                "gpu",
            )
        if cls == MEASURED:
            peak_field(precision)  # FP4 is still refused
            return _measured_train_mfu(gpu)
        value = factors.value(key, balance=_machine_balance(gpu, precision), hidden=hidden)
        if seq_len > 0:
            value /= 1.0 + seq_len / (6.0 * hidden)
        return value
    if key == "prefill":
        _require_peak(gpu, cls, precision)
        return factors.value(key, cls, compute_group(precision))
    return factors.value(key, cls, format_group(precision))


def efficiency_basis(kind: str, gpu: str = "H100-SXM", precision: str = "bf16") -> str:
    """What EFFICIENCY's value for these arguments rests on, in words: the factors file, and for each level the rows
    behind it, or that none does and multiplier 1 is assumed.

    Raises the errors EFFICIENCY raises for the same arguments.
    """
    key, cls = _prepared(kind, gpu)
    cal = active()
    where = f"{cal.origin} factors"
    if cls == MEASURED:
        return f"{where}: a measured preset, its own measured rates (factor 1 x the weights-format multiplier)"
    if key == "train_mfu":
        return f"{where}: train_mfu model fitted on {cal.data.get('train_rows', 'its')} training rows"
    fmt = compute_group(precision) if key == "prefill" else format_group(precision)
    counts = cal.levels.get(key)
    if not counts:
        return f"{where}: {key} for {cls}, {fmt} (the file records no rows per level)"
    parts = []
    for axis, level in (("class", cls), ("format", fmt)):
        n = counts.get(axis, {}).get(level, 0)
        parts.append(f"{level}: {n} row{'s' if n != 1 else ''}" if n else f"{level}: no rows, multiplier 1 assumed")
    return f"{where}: {key} " + "; ".join(parts)
