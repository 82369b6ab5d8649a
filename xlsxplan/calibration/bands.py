"""P10-P90 ranges: conformal bands from the leave-one-source-out residuals of each kind of calibrated figure.

Every calibrated figure is a prediction whose error on published measurements is known: ``xlsxplan validate``
predicts each row from a fit that never saw its run. Those errors, as speed ratios ``log(measured / predicted)``
(a time or a GPU count is one over a speed), are the residuals of the figure's kind. A range at quantile ``q`` is the
prediction times ``exp`` of the residuals' ``q`` quantile: a split-conformal band (Vovk, Gammerman and Shafer 2005;
Lei et al. 2018), honest in that it says how far such predictions have been from measurements, not how far a model
thinks it might be.

A new figure is asked of a case no publication behind the fit measured, so its residual is drawn from the spread of
*some* publication, not from the pooled rows of the largest: the residuals are weighted by publication
(:func:`by_source`), each publication's own spread summarised by SOURCE_POINTS evenly spaced quantiles, the pooled
estimate of a new group's distribution for data in groups (Dunn, Wasserman and Ramdas 2022, [3]). Pooled row by row,
one publication of 981 rows (TensorRT-LLM's performance overview) set the throughput band, and 13% of its rows, held
out, fell inside the band the others gave.

The kinds (BAND_KINDS): ``train`` (training MFU, tokens per second, time, GPU-hours), ``decode`` (decode speed at
batch 1), ``prefill`` (first-token time, prompt throughput) and ``throughput`` (serving output throughput); KV-cache
capacity has no measured row in the shipped data and no band. The expected figure stays the model's own; only the
ends of the range come from the residuals.

References
----------
.. [1] Vovk, Gammerman and Shafer 2005, "Algorithmic Learning in a Random World", Springer, chapter 2: conformal
   prediction.
.. [2] Lei, G'Sell, Rinaldo, Tibshirani and Wasserman 2018, "Distribution-Free Predictive Inference for
   Regression", J. Am. Stat. Assoc. 113(523), section 2.2: split conformal intervals from held-out residuals, the
   ``ceil((n + 1) q)``-th smallest of ``n`` residuals bounding a new one with probability at least ``q``.
.. [3] Dunn, Wasserman and Ramdas 2022, "Distribution-Free Prediction Sets for Two-Layer Hierarchical Models",
   J. Am. Stat. Assoc., arXiv:1809.07441: a new observation from a new group, bounded from the groups' empirical
   distributions pooled with equal weight ("pooling CDFs").
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence

from ..errors import OutOfRangeError

__all__ = [
    "BAND_KINDS",
    "LOW",
    "HIGH",
    "SOURCE_POINTS",
    "conformal_quantile",
    "band_multipliers",
    "by_source",
    "inside",
]

BAND_KINDS = ("train", "decode", "prefill", "throughput")
LOW, HIGH = 0.1, 0.9
"""The quantiles of the P10-P90 range."""


SOURCE_POINTS = 20
"""Evenly spaced quantiles each publication's residuals are summarised by in :func:`by_source` [count]."""


def by_source(pairs: Iterable[tuple[Hashable, float]], points: int = SOURCE_POINTS) -> list[float]:
    """Residuals with every publication weighted alike: each source's (the first of each pair) summarised by its
    ``points`` quantiles at ``(i + 0.5) / points``, linearly interpolated between its sorted residuals (one residual
    stands for all its points), the lists joined in order of source.

    Parameters
    ----------
    pairs : iterable of (source, residual)
        Held-out residuals [log ratio], each with the publication it comes from (any hashable key).
    points : int, default SOURCE_POINTS
        Quantiles per source [count].

    Returns
    -------
    list of float
        ``points`` residuals a source [log ratio]: their quantiles are those of the equal mixture of the sources'
        empirical distributions (Dunn, Wasserman and Ramdas 2022, "pooling CDFs"), to within the summary's grain.
    """
    groups: dict[Hashable, list[float]] = {}
    for key, x in pairs:
        groups.setdefault(key, []).append(x)
    out: list[float] = []
    for key in sorted(groups, key=repr):
        xs = sorted(groups[key])
        last = len(xs) - 1
        for i in range(points):
            at = (i + 0.5) / points * last
            lo = math.floor(at)
            hi = min(lo + 1, last)
            out.append(xs[lo] + (xs[hi] - xs[lo]) * (at - lo))
    return out


def conformal_quantile(residuals: Sequence[float], quantile: float) -> float:
    """The split-conformal ``quantile`` of held-out residuals (Lei et al. 2018, section 2.2).

    Parameters
    ----------
    residuals : sequence of float
        Held-out residuals, here ``log(measured / predicted)`` speed ratios [log ratio].
    quantile : float
        Between 0 and 1 [fraction].

    Returns
    -------
    float
        The ``ceil((n + 1) q)``-th smallest residual for an upper quantile (q above 0.5), the ``floor((n + 1) q)``-th
        for a lower one, clipped to the sample; 0 (the prediction itself) at 0.5 [log ratio].

    Notes
    -----
    With 50 residuals, P10 is the 5th smallest and P90 the 46th: a new residual falls between them with probability
    at least 80% when residuals are exchangeable. The rank rule widens a small sample's band rather than narrowing it.
    """
    if not 0.0 < quantile < 1.0:
        raise OutOfRangeError(f"quantile must be between 0 and 1 (exclusive), got {quantile!r}", "quantile")
    if not residuals:
        raise OutOfRangeError("no residuals to take a quantile of: the kind has no measured rows", "residuals")
    if quantile == 0.5:
        return 0.0
    ordered = sorted(residuals)
    n = len(ordered)
    rank = math.ceil((n + 1) * quantile) if quantile > 0.5 else math.floor((n + 1) * quantile)
    return ordered[min(max(rank, 1), n) - 1]


def band_multipliers(residuals: Sequence[float], low: float = LOW, high: float = HIGH) -> tuple[float, float]:
    """Speed multipliers at the two quantiles: the prediction times these brackets the measured speed."""
    return math.exp(conformal_quantile(residuals, low)), math.exp(conformal_quantile(residuals, high))


def inside(residual: float, others: Sequence[float], low: float = LOW, high: float = HIGH) -> bool:
    """Whether a held-out residual falls inside the band the other publications' residuals give."""
    return conformal_quantile(others, low) <= residual <= conformal_quantile(others, high)
