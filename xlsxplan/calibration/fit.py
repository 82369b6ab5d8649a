"""Fitting the efficiencies: robust (Huber) fits in log space of the shares of peak that measured runs reach.

See :mod:`xlsxplan.calibration` for the models and their references.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy is only needed to fit, not to look a factor up: `import xlsxplan` stays light
    import numpy as np

from ..errors import ArgumentError, CatalogError
from .groups import CLASSES, KINDS, MEASURED, SEED_FACTORS, format_levels

__all__ = [
    "Observation",
    "TrainFit",
    "GroupFit",
    "Factors",
    "level_counts",
    "fit",
    "fit_kind",
    "huber_location",
    "huber_regression",
]

_HUBER = 0.2  # log units: errors within about 22% count quadratically, larger ones linearly
_RIDGE = 0.01  # penalty on log multipliers: settles what the data cannot separate, shrinks a one-row effect by 2%
_OVERHEAD_MAX = 1000  # overhead_bytes searched from 0 to this in steps of 1: bytes per hidden unit per layer per token
_ROUTED_MAX = 400  # routed_bytes searched from 0 to this in steps of 1: bytes per routed value per token


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
    routed: float = 0.0
    """Mixture of experts (train_mfu only): ``k d L_moe (C/B) / F``, the routed copies' traffic per byte per routed
    value, in units of the token's FLOPs at peak (:func:`xlsxplan.core.effects.moe_routed_bytes_per_token`); 0 for a
    dense model."""
    comm: float = 0.0
    """Mixture of experts (train_mfu only): the expert-parallel all-to-all's time per token over the token's FLOPs
    at peak (:func:`xlsxplan.core.effects.moe_all_to_all_seconds`); 0 for a dense model or one GPU."""
    label: str = ""
    run: tuple = ()


@dataclass(frozen=True)
class TrainFit:
    """``train_mfu = 1 / ((1 + overhead_bytes * balance / (72 * hidden) + routed_bytes * routed) / ceiling + comm)``.

    Three free parameters: the ``ceiling`` share of peak, the dense ``overhead_bytes`` per hidden unit per layer and
    the ``routed_bytes`` per routed value of a mixture of experts; ``comm`` (the all-to-all) is physics, not fitted.
    """

    ceiling: float
    overhead_bytes: float
    routed_bytes: float = 0.0

    def raw(self, balance: float, hidden: float, routed: float = 0.0, comm: float = 0.0) -> float:
        """The model's value before the cap at 1."""
        slow = 1.0 + self.overhead_bytes * balance / (72.0 * hidden) + self.routed_bytes * routed
        return 1.0 / (slow / self.ceiling + comm)

    def value(self, balance: float, hidden: float, routed: float = 0.0, comm: float = 0.0) -> float:
        return min(1.0, self.raw(balance, hidden, routed, comm))


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
    serving: float = 1.0
    """Continuous-batching serving throughput over the per-operator roofline at the batch-one shares (fitted with
    ``serving_tp`` and ``serving_amd`` on the serving rows: :func:`xlsxplan.calibration.measurements.fit_serving`); 1
    in a file written before it was fitted."""
    serving_tp: float = 0.0
    """How the serving scale changes with the GPUs of one model instance: ``scale * n ** serving_tp`` (fitted with
    ``serving``). Published runs split by tensor parallelism (the per-step synchronisation, kernel launches and load
    imbalance of a sharded step beyond its all-reduces' bytes, and the larger batch a sharded instance's memory
    holds); 0 in a file written before it was fitted."""
    serving_amd: float = 1.0
    """The serving scale's multiplier on AMD Instinct accelerators (fitted with ``serving`` where rows on them exist,
    else 1): their engines reach a smaller share of the datasheet's peaks than NVIDIA's (SemiAnalysis, "MI300X vs
    H100 vs H200 Benchmark Part 1: Training", 2024-12-22, measured BF16 GEMMs well under the marketed peak)."""

    def serving_scale(self, gpus: int, gpu: str = "") -> float:
        """The serving scale for an instance on ``gpus`` accelerators of id ``gpu``:
        ``serving * gpus ** serving_tp``, times ``serving_amd`` on an AMD Instinct part (an id starting ``MI``)."""
        vendor = self.serving_amd if gpu.upper().startswith("MI") else 1.0
        return self.serving * max(1, gpus) ** self.serving_tp * vendor

    def raw(
        self,
        kind: str,
        gpu_class: str = "datacenter",
        fmt: str = "16-bit",
        balance: float = 0.0,
        hidden: float = 4096.0,
        routed: float = 0.0,
        comm: float = 0.0,
    ) -> float:
        """The model's value before the cap at 1: above 1, the fit says more than the hardware can do."""
        if kind == "train_mfu":
            return self.train_mfu.raw(balance, hidden, routed, comm)
        if kind == "prefill":
            return self.prefill.raw(gpu_class, fmt)
        if kind == "decode_bandwidth":
            return self.decode_bandwidth.raw(gpu_class, fmt)
        raise ArgumentError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}", "kind")

    def value(
        self,
        kind: str,
        gpu_class: str = "datacenter",
        fmt: str = "16-bit",
        balance: float = 0.0,
        hidden: float = 4096.0,
        routed: float = 0.0,
        comm: float = 0.0,
    ) -> float:
        return min(1.0, self.raw(kind, gpu_class, fmt, balance, hidden, routed, comm))

    def predicted(self, obs: Observation) -> float:
        return self.value(obs.kind, obs.gpu_class, obs.fmt, obs.balance, obs.hidden, obs.routed, obs.comm)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "train_mfu": {
                "model": "1 / ((1 + overhead_bytes * (peak FLOP/s / bandwidth) / (72 * hidden) + routed_bytes * "
                "routed) / ceiling + all_to_all)",
                "ceiling": round(self.train_mfu.ceiling, 4),
                "overhead_bytes": self.train_mfu.overhead_bytes,
                "routed_bytes": self.train_mfu.routed_bytes,
            }
        }
        out["serving"] = {
            "model": "throughput = serving * batch / (max(weights, linear) + max(cache, attention) + routed + "
            "all-reduce), per-operator roofline of a continuous-batching decode step with its prompts",
            "scale": round(self.serving, 4),
            "tp_exponent": round(self.serving_tp, 4),
            "amd": round(self.serving_amd, 4),
            "scale_model": "scale * (GPUs of one instance) ** tp_exponent * (amd on an AMD Instinct part)",
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
            train = TrainFit(float(t["ceiling"]), float(t["overhead_bytes"]), float(t.get("routed_bytes", 0.0)))
            serving = float(data.get("serving", {}).get("scale", 1.0))
            serving_tp = float(data.get("serving", {}).get("tp_exponent", 0.0))
            serving_amd = float(data.get("serving", {}).get("amd", 1.0))
            return cls(train, groups["prefill"], groups["decode_bandwidth"], serving, serving_tp, serving_amd)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise CatalogError(f"calibration file: missing or malformed entry {err}") from None


def level_counts(kind: str, observations: Sequence[Observation]) -> dict[str, dict[str, int]]:
    """Rows behind each level of a group kind: ``{"class": {"datacenter": n, ...}, "format": {"16-bit": n, ...}}``.

    A level with no row keeps multiplier 1 (the datacenter, 16-bit share): an assumption, not a fit.
    """
    mine = [o for o in observations if o.kind == kind and o.gpu_class != MEASURED]
    return {
        "class": {c: sum(o.gpu_class == c for o in mine) for c in CLASSES},
        "format": {f: sum(o.fmt == f for o in mine) for f in format_levels(kind)},
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
        return GroupFit(SEED_FACTORS[kind], {c: 1.0 for c in CLASSES[1:]}, {f: 1.0 for f in format_levels(kind)[1:]})
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
        {f: mult.get(("format", f), 1.0) for f in format_levels(kind)[1:]},
    )


def huber_regression(y: Sequence[float], x: Sequence[Sequence[float]]) -> list[float]:
    """Coefficients of ``y = b0 + b1 x1 + ...`` by Huber regression (threshold ``_HUBER``, log units), with the ridge
    penalty on every coefficient but the intercept, so that a feature no row varies stays at 0 (iteratively
    reweighted least squares, as :func:`_fit_group`). ``x``: one row of features per ``y``."""
    import numpy as np

    yy = np.asarray(y, dtype=float)
    xx = np.column_stack([np.ones(len(yy)), np.asarray(x, dtype=float).reshape(len(yy), -1)])
    penalty = 2.0 * _RIDGE * np.diag([0.0] + [1.0] * (xx.shape[1] - 1))
    theta = np.zeros(xx.shape[1])
    theta[0] = float(np.median(yy))
    for _ in range(200):
        w = _huber_weights(yy - xx @ theta)
        new = np.linalg.solve(xx.T @ (w[:, None] * xx) + penalty, xx.T @ (w * yy))
        done = np.max(np.abs(new - theta)) < 1e-12
        theta = new
        if done:
            break
    return [float(t) for t in theta]


def huber_location(z: np.ndarray) -> np.ndarray:
    """Row-wise Huber location of ``z`` (rows: grid points; log units), started from the median: the M-estimate of
    Huber (1964) with the threshold ``_HUBER``, by iteratively reweighted means."""
    import numpy as np

    mu = np.median(z, axis=1)
    for _ in range(100):
        w = _huber_weights(z - mu[:, None])
        new = (w * z).sum(axis=1) / w.sum(axis=1)
        done = np.max(np.abs(new - mu)) < 1e-12
        mu = new
        if done:
            break
    return mu


def _train_grid(obs: Sequence[Observation], overhead: np.ndarray, routed: np.ndarray) -> tuple[float, float, int]:
    """Best (loss, ceiling, index) over paired grids of overhead_bytes and routed_bytes."""
    import numpy as np

    x = np.array([o.balance / (72.0 * o.hidden) for o in obs])
    r = np.array([o.routed for o in obs])
    comm = np.array([o.comm for o in obs])
    e = np.array([o.value for o in obs])
    slow = 1.0 + overhead[:, None] * x[None, :] + routed[:, None] * r[None, :]
    # the ceiling each row implies at these parameters; a row faster than its all-to-all allows implies the cap
    room = np.maximum(1.0 / e - comm, 1e-6)
    mu = np.minimum(huber_location(np.log(slow / room[None, :])), 0.0)  # nothing reaches more than its peak
    predicted = 1.0 / (slow / np.exp(mu)[:, None] + comm[None, :])
    loss = _huber_loss(np.log(e)[None, :] - np.log(predicted)).sum(axis=1)
    best = int(np.argmin(loss + 1e-9 * (overhead + routed)))  # ties go to the smaller overheads
    return float(loss[best]), float(math.exp(mu[best])), best


def _fit_train(obs: Sequence[Observation]) -> TrainFit:
    """Grid search over overhead_bytes and routed_bytes, alternating one then the other; for each pair the ceiling is
    the Huber location of the logs of the ceilings the rows imply."""
    import numpy as np

    if not obs:
        return TrainFit(SEED_FACTORS["train_mfu"], 0.0, 0.0)
    grid = np.arange(0.0, _OVERHEAD_MAX + 1.0, 1.0)
    routed_grid = np.arange(0.0, _ROUTED_MAX + 1.0, 1.0)
    moe = any(o.routed > 0 for o in obs)
    overhead, routed, ceiling = 0.0, 0.0, SEED_FACTORS["train_mfu"]
    for _ in range(6 if moe else 1):
        _, ceiling, i = _train_grid(obs, grid, np.full_like(grid, routed))
        overhead = float(grid[i])
        if not moe:
            break
        _, ceiling, j = _train_grid(obs, np.full_like(routed_grid, overhead), routed_grid)
        if float(routed_grid[j]) == routed and _ > 0:
            break
        routed = float(routed_grid[j])
    return TrainFit(ceiling, overhead, routed)


def fit_kind(kind: str, observations: Sequence[Observation]) -> TrainFit | GroupFit:
    """Fit one kind's model on its observations (others are ignored)."""
    mine = [o for o in observations if o.kind == kind]
    return _fit_train(mine) if kind == "train_mfu" else _fit_group(mine, kind)


def fit(observations: Iterable[Observation]) -> Factors:
    """Fit the three models on measurements' implied efficiencies; a kind without any falls back to its SEED_FACTORS
    figure, the one the estimates start from."""
    obs = list(observations)
    return Factors(*(fit_kind(kind, obs) for kind in KINDS))  # type: ignore[arg-type]
