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
from .groups import CLASSES, FORMAT_GROUPS, KINDS, MEASURED, SEED_FACTORS

__all__ = ["Observation", "TrainFit", "GroupFit", "Factors", "level_counts", "fit", "fit_kind"]

_HUBER = 0.2  # log units: errors within about 22% count quadratically, larger ones linearly
_RIDGE = 0.01  # penalty on log multipliers: settles what the data cannot separate, shrinks a one-row effect by 2%
_OVERHEAD_MAX = 1000  # overhead_bytes searched from 0 to this in steps of 1: bytes per hidden unit per layer per token


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
    """Fit the three models on measurements' implied efficiencies; a kind without any falls back to its SEED_FACTORS
    figure, the one the estimates start from."""
    obs = list(observations)
    return Factors(*(fit_kind(kind, obs) for kind in KINDS))  # type: ignore[arg-type]
