"""Price tiers over a day's demand: capacity committed for the base load, on demand or spot for the hours above it.

A fleet that follows its traffic needs a different number of GPUs each hour. An hourly **demand profile** (one share
per hour, any scale: the shares of a day's requests, or of the peak) scaled to the peak's GPUs gives the GPUs each
hour needs (:func:`profile_gpus`). Committed capacity (a one-month to three-year contract, a reservation) is billed
every hour whether used or not; on-demand capacity the hours it runs; spot (preemptible) capacity too, at a discount,
but it can be reclaimed: with an interruption notice shorter than the time a replacement takes to serve, each
interruption loses the difference, which more spot hours must make up (:func:`spot_usd_per_hour`).

The mix that costs least commits the lowest demand level exceeded in at most ``T x committed / above`` of the ``T``
hours, ``above`` the cheaper of on demand and spot: COMMITTED_COST and BEST_COMMITMENT of :mod:`.cost` over hours
instead of months (the newsvendor's critical ratio). :func:`tier_mix` gives the commitment, the monthly bill and the
share of the demand's GPU-hours each tier serves.

References
----------
.. [1] AWS, "Spot Instance interruption notices" (EC2 User Guide): a two-minute warning before a Spot Instance is
   reclaimed; Google Cloud, "Spot VMs": a 30-second preemption notice.
.. [2] AWS Savings Plans; Scaleway, "Understanding Savings Plans": a commitment is billed in full, usage above it at
   the on-demand rate (as in :func:`xlsxplan.core.cost.committed_cost`).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

from ..domains import (
    DemandProfile,
    Discount,
    GPUs,
    Name,
    PerHour,
    Price,
    PricePositive,
    SecondsOrZero,
    checked,
    format_number,
)
from ..errors import ArgumentError, OutOfRangeError
from ..infra.elementwise import maximum, refused, where
from .cost import HOURS_PER_YEAR, MONTHS_PER_YEAR, best_commitment, committed_cost
from .equations import whole_ceil

__all__ = ["TIERS", "TierMix", "profile_gpus", "spot_usd_per_hour", "tier_mix", "tier_mix_base", "tier_mix_cost"]

TIERS = ("committed", "on_demand", "spot")
"""The tiers a mix draws on, as TIER_MIX_SHARE names them."""

_HOURS_PER_MONTH = HOURS_PER_YEAR / MONTHS_PER_YEAR
_SECONDS_PER_HOUR = 3600


def _profile_gpus(demand_profile: tuple[float, ...], peak_gpus: int) -> list[int]:
    top = max(demand_profile, default=0.0)
    if top <= 0:
        raise ArgumentError(
            "demand_profile must hold at least one share above 0: its highest hour is the peak", "demand_profile"
        )
    return [whole_ceil(peak_gpus * share / top) for share in demand_profile]


@checked
def profile_gpus(demand_profile: DemandProfile, peak_gpus: GPUs) -> list[int]:
    """GPUs each hour of a demand profile needs: the peak's GPUs scaled by the hour's share of the peak hour.

    Parameters
    ----------
    demand_profile : tuple of float
        Demand in each hour, one cell per hour (24 for a day), any scale: shares of the day's requests or of the peak
        [share].
    peak_gpus : int
        GPUs the busiest hour needs, e.g. REPLICAS at the peak times the GPUs of a replica [GPUs].

    Returns
    -------
    list of int
        Whole GPUs for each hour, in the profile's order [GPUs].

    Notes
    -----
    ``ceil(peak_gpus x share_h / max(share))``: a fleet scaled by the hour, with no provisioning delay. Shares 0.25,
    0.5 and 1 of a peak of 8 GPUs: 2, 4 and 8.
    """
    return _profile_gpus(demand_profile, peak_gpus)


def _spot(
    usd_on_demand: float, spot_discount: float, interruptions_per_hour: float, notice_s: float, replace_s: float
) -> float:
    lost = interruptions_per_hour * maximum(replace_s - notice_s, 0.0) / _SECONDS_PER_HOUR
    if refused(lost >= 1):
        raise OutOfRangeError(
            f"interruptions_per_hour x (replace_s - notice_s) / 3600 = {format_number(lost)} loses every spot hour: "
            "it must be below 1 (fewer interruptions, or a notice closer to the replacement time)",
            "interruptions_per_hour",
        )
    return usd_on_demand * (1 - spot_discount) / where(lost >= 1, 1.0, 1 - lost)  # refused elements kept harmless


@checked(arrays=True)
def spot_usd_per_hour(
    usd_on_demand: PricePositive,
    spot_discount: Discount,
    interruptions_per_hour: PerHour = 0,
    notice_s: SecondsOrZero = 120,
    replace_s: SecondsOrZero = 0,
) -> float:
    """What a spot GPU-hour of useful work costs: the discounted price, grossed up for the work interruptions lose.

    Parameters
    ----------
    usd_on_demand : float
        On-demand price of one GPU for an hour [USD/GPU-h].
    spot_discount : float
        Spot price's discount off on demand, 0.6 for 60% off; below 1 [fraction].
    interruptions_per_hour : float, default 0
        Reclaims per spot GPU-hour, 0.01 for one in a hundred hours [1/h].
    notice_s : float, default 120
        Warning before a reclaim: 120 on AWS, 30 on Google Cloud [s].
    replace_s : float, default 0
        Time a replacement takes to serve: start-up, weights loaded, warm-up [s].

    Returns
    -------
    float
        Spot cost per GPU-hour of work; the on-demand price times (1 - discount) when nothing is lost [USD/GPU-h].

    Notes
    -----
    ``on_demand x (1 - discount) / (1 - interruptions_per_hour x max(replace_s - notice_s, 0) / 3600)``: a notice at
    least as long as the replacement time loses nothing; otherwise each reclaim loses the gap, made up by more spot
    hours. $3.00 at 50% off, 0.5 reclaims an hour, a 30 s notice and 210 s to replace: 1.50 / 0.975 = $1.5385.
    """
    return _spot(usd_on_demand, spot_discount, interruptions_per_hour, notice_s, replace_s)


@dataclass(frozen=True)
class TierMix:
    """The cheapest mix of a demand profile: GPUs committed, what the above-base hours run on, the monthly bill and
    each tier's share of the demand's GPU-hours."""

    committed_gpus: float
    above: str
    usd_per_month: float
    shares: dict[str, float]


def _mix(
    demand_profile: tuple[float, ...],
    peak_gpus: int,
    usd_committed: float,
    usd_on_demand: float,
    spot_discount: float,
    interruptions_per_hour: float,
    notice_s: float,
    replace_s: float,
) -> TierMix:
    hourly = [float(g) for g in _profile_gpus(demand_profile, peak_gpus)]
    spot = _spot(usd_on_demand, spot_discount, interruptions_per_hour, notice_s, replace_s)
    above, price = ("spot", spot) if spot < usd_on_demand else ("on_demand", usd_on_demand)
    base = best_commitment.call_checked(tuple(hourly), usd_committed, price)  # type: ignore[attr-defined]
    cost = committed_cost.call_checked(tuple(hourly), base, usd_committed, price, 1.0)  # type: ignore[attr-defined]
    total = sum(hourly)
    served = sum(min(g, base) for g in hourly)
    shares = dict.fromkeys(TIERS, 0.0)
    shares["committed"] = served / total if total else 1.0
    shares[above] = 1.0 - shares["committed"]
    return TierMix(base, above, cost * _HOURS_PER_MONTH / len(hourly), shares)


def tier_mix(
    demand_profile: tuple[float, ...],
    peak_gpus: int,
    usd_committed: float,
    usd_on_demand: float,
    spot_discount: float = 0.0,
    interruptions_per_hour: float = 0.0,
    notice_s: float = 120.0,
    replace_s: float = 0.0,
) -> TierMix:
    """The cheapest tier mix as a :class:`TierMix`, each argument checked as TIER_MIX_COST checks it."""
    given = (demand_profile, peak_gpus, usd_committed, usd_on_demand, spot_discount, interruptions_per_hour, notice_s)
    domains = tier_mix_cost.domains  # type: ignore[attr-defined]
    values = [d.check(n, v) for (n, d), v in zip(domains.items(), (*given, replace_s))]
    return _mix(*values)


_ARGS_DOC = """
    demand_profile : tuple of float
        Demand in each hour, one cell per hour (24 for a day), any scale, e.g. DEMAND_PROFILE [share].
    peak_gpus : int
        GPUs the busiest hour needs [GPUs].
    usd_committed : float
        Committed price of one GPU for an hour, billed every hour of the term [USD/GPU-h].
    usd_on_demand : float
        On-demand price of one GPU for an hour [USD/GPU-h].
    spot_discount : float, default 0
        Spot price's discount off on demand, 0.6 for 60% off; 0 leaves spot out [fraction].
    interruptions_per_hour : float, default 0
        Spot reclaims per GPU-hour [1/h].
    notice_s : float, default 120
        Warning before a spot reclaim [s].
    replace_s : float, default 0
        Time a replacement takes to serve [s]."""


@checked
def tier_mix_cost(
    demand_profile: DemandProfile,
    peak_gpus: GPUs,
    usd_committed: Price,
    usd_on_demand: PricePositive,
    spot_discount: Discount = 0,
    interruptions_per_hour: PerHour = 0,
    notice_s: SecondsOrZero = 120,
    replace_s: SecondsOrZero = 0,
) -> float:
    """Monthly bill of the cheapest mix: GPUs committed for the base load, on demand or spot for the hours above it.

    Parameters
    ----------{args}

    Returns
    -------
    float
        Cost of a month of 730 hours at the profile's shape [USD/month].

    Notes
    -----
    Per hour ``h`` the GPUs PROFILE_GPUS gives; above the base ``R`` the cheaper of on demand and SPOT_USD_PER_HOUR;
    ``R`` = BEST_COMMITMENT of the hours, the bill COMMITTED_COST over them times 730 / hours. Hours of 2, 4 and 8
    GPUs, 8 each, $1.00 committed, $3.00 on demand, spot 50% off: 2 committed, spot above, $144 a day, $4,380 a month.
    """
    return _mix(
        demand_profile,
        peak_gpus,
        usd_committed,
        usd_on_demand,
        spot_discount,
        interruptions_per_hour,
        notice_s,
        replace_s,
    ).usd_per_month


@checked
def tier_mix_base(
    demand_profile: DemandProfile,
    peak_gpus: GPUs,
    usd_committed: Price,
    usd_on_demand: PricePositive,
    spot_discount: Discount = 0,
    interruptions_per_hour: PerHour = 0,
    notice_s: SecondsOrZero = 120,
    replace_s: SecondsOrZero = 0,
) -> float:
    """GPUs to commit for the base load in the cheapest mix of a demand profile: a level of the profile itself.

    Parameters
    ----------{args}

    Returns
    -------
    float
        GPUs committed every hour; the smallest level where several cost the same [GPUs].

    Notes
    -----
    BEST_COMMITMENT over the hours of PROFILE_GPUS against the cheaper of on demand and SPOT_USD_PER_HOUR: commit to
    what is needed at least ``1 - committed / above`` of the hours. Hours of 2, 4 and 8 GPUs, 8 each, $2.00
    committed, $3.00 on demand: 2.
    """
    return _mix(
        demand_profile,
        peak_gpus,
        usd_committed,
        usd_on_demand,
        spot_discount,
        interruptions_per_hour,
        notice_s,
        replace_s,
    ).committed_gpus


@checked
def tier_mix_share(
    tier: Name,
    demand_profile: DemandProfile,
    peak_gpus: GPUs,
    usd_committed: Price,
    usd_on_demand: PricePositive,
    spot_discount: Discount = 0,
    interruptions_per_hour: PerHour = 0,
    notice_s: SecondsOrZero = 120,
    replace_s: SecondsOrZero = 0,
) -> float:
    """Share of a demand profile's GPU-hours one tier serves in the cheapest mix: committed, on_demand or spot.

    Parameters
    ----------
    tier : str
        committed, on_demand or spot [name].{args}

    Returns
    -------
    float
        That tier's GPU-hours over the demand's; the three shares add up to 1 [fraction].

    Notes
    -----
    Committed serves ``min(demand_h, R)`` each hour, the tier above the rest; the other tier 0. Hours of 2, 4 and 8
    GPUs, 8 each, $1.00 committed, $3.00 on demand, spot 50% off: committed 48 / 112 = 0.4286, spot 0.5714.
    """
    key = tier.strip().lower().replace("-", "_").replace(" ", "_")
    if key not in TIERS:
        raise ArgumentError(f"tier must be one of {', '.join(TIERS)}, got {tier!r}", "tier")
    mix = _mix(
        demand_profile,
        peak_gpus,
        usd_committed,
        usd_on_demand,
        spot_discount,
        interruptions_per_hour,
        notice_s,
        replace_s,
    )
    return mix.shares[key]


def _with_args(doc: str) -> str:
    """``doc`` with ``{args}`` replaced by the shared parameters, indented as its Parameters heading is: Python 3.13
    and later (Pyodide, xlwings Lite) strip a docstring's common indentation when compiling it, 3.11 keeps it."""
    heading = next(line for line in doc.splitlines() if line.strip() == "Parameters")
    pad = heading[: len(heading) - len(heading.lstrip())]
    return doc.replace("{args}", textwrap.indent(textwrap.dedent(_ARGS_DOC), pad))


for _f in (tier_mix_cost, tier_mix_base, tier_mix_share):
    _f.__doc__ = _with_args(_f.__doc__ or "")
