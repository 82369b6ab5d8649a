"""What a GPU costs to own, to rent and to commit to: the comparison a finance team signs a fleet off on.

Fleet *sizing* (replicas, spares, utilisation) is :mod:`.traffic`'s; this module prices what a plan needs, so it is
named for what it computes, the cost, not for the fleet. Four questions, each one function or two:

* **Owning.** One GPU-hour of an owned accelerator used all year: the capital recovered over its life at the cost of
  capital (the capital recovery factor, the residual value's present value deducted), plus power (kW x PUE x $/kWh)
  and hosting ($/kW-month), over 8,760 hours (:func:`gpu_hour_owned`, :func:`capital_recovery_factor`).
* **Owning or renting at a utilisation.** An owned GPU costs every hour, a rented one the hours billed; the cost per
  million tokens of each (:func:`cost_per_m_owned`, :func:`cost_per_m_rented`) and the utilisation at which they
  are equal (:func:`breakeven_utilisation`).
* **When buying pays back.** The month from which the cumulative cost of buying (up front or financed) is below that
  of renting (:func:`breakeven_month`).
* **Committing.** Reserved capacity at a committed price every month and the excess on demand, for a curve of monthly
  demand (:func:`committed_cost`), and the commitment that makes it cheapest (:func:`best_commitment`).
* **Accounting.** The straight-line depreciation an owned asset books each year and its book value (Excel's ``SLN``),
  the net present value of a series of cash flows (Excel's ``NPV``), and the present cost of owning over a life
  (:func:`depreciation_sl`, :func:`book_value`, :func:`npv_usd`, :func:`owned_npv`).

Units: US dollars, hours, months of the same length, kW; a year is 8,760 hours (365 x 24), a month a twelfth of it.
Money is not discounted except where a rate is an argument (the cost of capital in :func:`gpu_hour_owned`, a loan's
rate in :func:`breakeven_month`).

The plan search and the command line price an owned GPU with :func:`owned_cost_per_gpu_hour` on an
:class:`OwnedCase`, the same assumptions as GPU_HOUR_OWNED's arguments; :func:`xlsxplan.catalog.costs.owned_case`
fills one in from the catalog's sourced defaults (``catalog/costs.toml``).

References
----------
.. [1] W. Short, D. J. Packey, T. Holt 1995, "A Manual for the Economic Evaluation of Energy Efficiency and
   Renewable Energy Technologies", NREL/TP-462-5173 (the capital recovery factor in energy economics).
.. [2] "Capital recovery factor", Wikipedia: ``CRF = i (1 + i)^n / ((1 + i)^n - 1)``; i = 10%, n = 10 years gives
   0.163.
.. [3] The Green Grid 2012, White Paper 49, "PUE: A Comprehensive Examination of the Metric"; ISO/IEC 30134-2:2016:
   power usage effectiveness is the facility's energy over the IT equipment's.
.. [4] CBRE, "North America Data Center Trends H2 2024" (2025-02-26): colocation asking rates quoted per kW of
   critical IT load per month.
.. [5] AWS Savings Plans (AWS CLI reference, ``savingsplans``): "You commit to a consistent amount of usage per hour
   ... for a term of one or three years, and receive a lower price for that usage"; Scaleway, "Understanding Savings
   Plans": usage beyond the committed amount "will be charged at the regular on-demand rate", and a shortfall is
   still billed at the committed amount.
.. [6] Microsoft, Excel function reference: ``SLN(cost, salvage, life)`` is ``(cost - salvage) / life``;
   ``NPV(rate, value1, ...)`` is ``sum of value_i / (1 + rate)^i`` for i from 1, each value at the end of its period.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..domains import (
    PUE,
    AnnualRate,
    CapexUSD,
    CashFlows,
    Fraction,
    FractionOrZero,
    GPUDemand,
    GPUsOrZero,
    HoursPerPeriod,
    KWOrZero,
    Price,
    PricePositive,
    TokensPerS,
    USDAmount,
    USDPerKWh,
    USDPerKWMonth,
    USDPerMonth,
    USDPerMonthPositive,
    USDPerYear,
    Years,
    YearsOrZero,
    checked,
    format_number,
)
from ..errors import OutOfRangeError
from ..infra.elementwise import apply, is_array, maximum, minimum, refused, where

__all__ = [
    "HOURS_PER_YEAR",
    "MONTHS_PER_YEAR",
    "OwnedCase",
    "best_commitment",
    "book_value",
    "breakeven_month",
    "breakeven_utilisation",
    "capital_recovery_factor",
    "committed_cost",
    "cost_per_m_owned",
    "cost_per_m_rented",
    "crf",
    "depreciation_sl",
    "gpu_hour_owned",
    "npv_usd",
    "owned_npv",
    "owned_cost_per_gpu_hour",
]

HOURS_PER_YEAR = 8760
"""Hours in a year of 365 days: the hours an owned GPU's yearly cost is spread over (GPU_HOUR_OWNED)."""
MONTHS_PER_YEAR = 12
_SECONDS_PER_HOUR = 3600


# --- Owning ----------------------------------------------------------------------------------------------------


def crf(rate: float, periods: float) -> float:
    """``rate (1 + rate)^periods / ((1 + rate)^periods - 1)``, unchecked; ``1 / periods`` at rate 0, its limit.

    ``(1 + rate)^periods - 1`` is computed as ``expm1(periods * log1p(rate))``, exact for a rate so small that
    ``1 + rate`` rounds to 1."""
    growth = apply(math.expm1, periods * apply(math.log1p, rate))
    if not is_array(growth):
        if growth == 0:
            return 1 / periods
        return rate * (growth + 1) / growth
    flat = growth == 0  # over arrays: a divisor of 1 keeps these elements harmless
    return where(flat, 1 / periods, rate * (growth + 1) / where(flat, 1.0, growth))


def _capital_per_year(capex_usd: float, years: float, residual_fraction: float, annual_rate: float) -> float:
    """The capital an owned asset costs a year: ``(P - S / (1 + r)^n) * CRF(r, n)`` [USD/year]."""
    residual = capex_usd * residual_fraction
    present_residual = residual * apply(math.exp, -years * apply(math.log1p, annual_rate))
    return (capex_usd - present_residual) * crf(annual_rate, years)


@checked(arrays=True)
def capital_recovery_factor(annual_rate: AnnualRate, years: Years) -> float:
    """The share of a capital sum that repays it, with interest, in equal yearly amounts over a life.

    Parameters
    ----------
    annual_rate : float
        Cost of capital or interest rate per year, 0.08 for 8%; 0 repays it in equal parts [fraction/year].
    years : float
        Life over which the capital is recovered [years].

    Returns
    -------
    float
        Yearly payment per unit of capital [1/year].

    Notes
    -----
    ``CRF = r (1 + r)^n / ((1 + r)^n - 1)`` (Short, Packey and Holt, NREL/TP-462-5173; Wikipedia, "Capital recovery
    factor": r = 10%, n = 10 gives 0.163); at r = 0 it is 1/n, the straight line, its limit. The same as Excel's
    ``-PMT(r, n, 1)``. r = 8%, n = 4: 0.301921.
    """
    return crf(annual_rate, years)


@checked(arrays=True)
def gpu_hour_owned(
    capex_usd: CapexUSD,
    years: Years,
    residual_fraction: FractionOrZero = 0,
    annual_rate: AnnualRate = 0,
    kw: KWOrZero = 0,
    pue: PUE = 1,
    usd_per_kwh: USDPerKWh = 0,
    usd_per_kw_month: USDPerKWMonth = 0,
) -> float:
    """Cost of one hour of an owned GPU used all year: capital recovered at a rate, power and hosting.

    Parameters
    ----------
    capex_usd : float
        Capital cost per GPU, with its share of the server, network and storage; 0 for running costs alone [USD].
    years : float
        Life the capital is recovered over; 10-K filings use 4 to 6 for servers [years].
    residual_fraction : float, default 0
        Resale value at the end of the life, as a share of the capital cost [fraction].
    annual_rate : float, default 0
        Cost of capital per year, 0.08 for 8%; 0 recovers the capital in a straight line [fraction/year].
    kw : float, default 0
        Power one GPU draws with its share of the server [kW].
    pue : float, default 1
        Power usage effectiveness: the facility's power over the IT equipment's; 1.58 industry average, 2023 [ratio].
    usd_per_kwh : float, default 0
        Price of electricity [USD/kWh].
    usd_per_kw_month : float, default 0
        Colocation or hosting price per kW of IT load per month [USD/kW-month].

    Returns
    -------
    float
        Cost per GPU-hour, busy or idle, over 8,760 hours a year [USD/GPU-h].

    Notes
    -----
    ``[(P - S/(1+r)^n) x CRF(r, n) + kW x PUE x $/kWh x 8760 + $/kW-month x kW x 12] / 8760`` with S = residual x P:
    the residual's present value is deducted, then the capital recovery factor annualises the rest (Short, Packey and
    Holt, NREL/TP-462-5173), which equals ``(P - S) CRF + S r``; at r = 0, ``(P - S)/n``. PUE as The Green Grid
    defines it; hosting per kW of IT load a month, as CBRE quotes colocation. $30,000 over 4 years, 10% residual, 8%,
    1 kW, PUE 1.3, $0.08/kWh, $150/kW-month: 0.9580 + 0.1040 + 0.2055 = $1.2675.
    """
    capital = _capital_per_year(capex_usd, years, residual_fraction, annual_rate) / HOURS_PER_YEAR
    power = kw * pue * usd_per_kwh
    hosting = usd_per_kw_month * kw * MONTHS_PER_YEAR / HOURS_PER_YEAR
    return capital + power + hosting


@dataclass(frozen=True)
class OwnedCase:
    """The assumptions of an owned GPU, as GPU_HOUR_OWNED takes them: what the plan search and the command line pass
    around. :func:`xlsxplan.catalog.costs.owned_case` fills one in from the catalog's sourced defaults; change a
    field with :func:`dataclasses.replace`."""

    capex_usd: float
    """Capital cost per GPU with its share of the server, network and storage [USD]."""
    years: float
    """Life the capital is recovered over [years]."""
    residual_fraction: float = 0.0
    """Resale value at the end of the life over the capital cost [fraction]."""
    annual_rate: float = 0.0
    """Cost of capital per year [fraction/year]."""
    kw: float = 0.0
    """Power per GPU with its share of the server [kW]."""
    pue: float = 1.0
    """Facility power over IT power [ratio]."""
    usd_per_kwh: float = 0.0
    """Price of electricity [USD/kWh]."""
    usd_per_kw_month: float = 0.0
    """Hosting per kW of IT load per month [USD/kW-month]."""


def owned_cost_per_gpu_hour(case: OwnedCase) -> float:
    """GPU_HOUR_OWNED on an :class:`OwnedCase`: the cost of an owned GPU-hour [USD/GPU-h], for the plan search.

    Every field is checked as GPU_HOUR_OWNED checks its argument of the same name (an
    :class:`~xlsxplan.errors.OutOfRangeError` naming it). A plan comparing owned with rented GPUs divides this by
    the fleet's utilisation (:func:`cost_per_m_owned`) where a rented fleet pays only the hours billed
    (:func:`cost_per_m_rented`).
    """
    return gpu_hour_owned(
        case.capex_usd,
        case.years,
        case.residual_fraction,
        case.annual_rate,
        case.kw,
        case.pue,
        case.usd_per_kwh,
        case.usd_per_kw_month,
    )


# --- Owning or renting at a utilisation ------------------------------------------------------------------------


def _per_m_tokens(usd_per_hour_worked: float, tokens_per_s: float) -> float:
    return usd_per_hour_worked / (tokens_per_s * _SECONDS_PER_HOUR) * 1e6


@checked(arrays=True)
def cost_per_m_owned(usd_per_gpu_hour_owned: Price, tokens_per_s: TokensPerS, utilisation: Fraction) -> float:
    """What a million tokens cost on an owned GPU, paid for every hour, that works only part of them.

    Parameters
    ----------
    usd_per_gpu_hour_owned : float
        Cost of an owned GPU-hour, from GPU_HOUR_OWNED [USD/GPU-h].
    tokens_per_s : float
        Tokens one GPU produces per second at full load [tokens/s].
    utilisation : float
        Average load over full load, across every hour of the year [fraction].

    Returns
    -------
    float
        Cost per million tokens [USD/M tokens].

    Notes
    -----
    ``owned / (tokens_per_s x 3600 x utilisation) x 1e6``: an owned GPU costs the same busy or idle, so its cost per
    token rises as its load falls (the method of "Back-of-the-Envelope Estimation for LLM Systems", section 6, at the
    owned price). $1.2675 an hour at 1,000 tokens/s and 30%: $1.17 per million.
    """
    return _per_m_tokens(usd_per_gpu_hour_owned / utilisation, tokens_per_s)


@checked(arrays=True)
def cost_per_m_rented(
    usd_per_gpu_hour: Price, tokens_per_s: TokensPerS, utilisation: Fraction, idle_billed: FractionOrZero = 0
) -> float:
    """What a million tokens cost on a rented GPU, billed for the hours it works and a share of the idle ones.

    Parameters
    ----------
    usd_per_gpu_hour : float
        Rental price of one GPU for an hour [USD/GPU-h].
    tokens_per_s : float
        Tokens one GPU produces per second at full load [tokens/s].
    utilisation : float
        Share of the hours the work needs a GPU [fraction].
    idle_billed : float, default 0
        Share of the other hours still billed: 0 for capacity released whenever idle, 1 for capacity held around
        the clock (reserved) [fraction].

    Returns
    -------
    float
        Cost per million tokens [USD/M tokens].

    Notes
    -----
    ``price x (u + idle_billed x (1 - u)) / u / (tokens_per_s x 3600) x 1e6``: the hours billed per hour worked,
    times the price. Released when idle it is the full-load cost at any utilisation; held around the clock it is
    COST_PER_M_OWNED at the rent. $2.50 an hour at 1,000 tokens/s and 30%: $0.69 per million released, $2.31 held.
    """
    billed_per_worked = (utilisation + idle_billed * (1 - utilisation)) / utilisation
    return _per_m_tokens(usd_per_gpu_hour * billed_per_worked, tokens_per_s)


@checked(arrays=True)
def breakeven_utilisation(
    usd_per_gpu_hour_owned: Price, usd_per_gpu_hour_rented: PricePositive, idle_billed: FractionOrZero = 0
) -> float:
    """The utilisation above which owning a GPU costs less per token than renting one.

    Parameters
    ----------
    usd_per_gpu_hour_owned : float
        Cost of an owned GPU-hour, from GPU_HOUR_OWNED [USD/GPU-h].
    usd_per_gpu_hour_rented : float
        Rental price of one GPU for an hour [USD/GPU-h].
    idle_billed : float, default 0
        Share of the idle hours a rental still bills, below 1; 0 releases it whenever idle [fraction].

    Returns
    -------
    float
        Breakeven utilisation; 0: owning is cheaper at any load; above 1: renting is cheaper at any load [fraction].

    Notes
    -----
    COST_PER_M_OWNED = COST_PER_M_RENTED where ``owned = rent x (u + b (1 - u))``, so
    ``u = (owned / rent - b) / (1 - b)``, at least 0; with b = 0 it is the ratio of the two prices. A rental billed
    around the clock (b = 1) costs the same at every load: no utilisation breaks even. $1.2675 owned against $2.50
    rented: 50.7%.
    """
    if refused(idle_billed >= 1):
        raise OutOfRangeError(
            "idle_billed must be below 1: a rental billed around the clock costs the same at every utilisation, so "
            "none breaks even; compare GPU_HOUR_OWNED with the rent itself",
            "idle_billed",
        )
    ratio = usd_per_gpu_hour_owned / usd_per_gpu_hour_rented
    unbilled = where(idle_billed >= 1, 1.0, 1 - idle_billed)  # over arrays, refused elements kept harmless
    return maximum((ratio - idle_billed) / unbilled, 0.0)


# --- When buying pays back -------------------------------------------------------------------------------------


@checked(arrays=True)
def breakeven_month(
    capex_usd: CapexUSD,
    rent_usd_per_month: USDPerMonthPositive,
    running_usd_per_month: USDPerMonth = 0,
    loan_years: YearsOrZero = 0,
    annual_rate: AnnualRate = 0,
) -> float:
    """Months until buying has cost less in total than renting the same capacity: paid up front or financed.

    Parameters
    ----------
    capex_usd : float
        Capital cost of what is bought [USD].
    rent_usd_per_month : float
        Rent for the same capacity per month: price per GPU-hour x hours billed a month [USD/month].
    running_usd_per_month : float, default 0
        What the owned capacity costs to run per month: power and hosting [USD/month].
    loan_years : float, default 0
        Term of a loan for the capital, repaid monthly; 0 pays it up front [years].
    annual_rate : float, default 0
        The loan's interest rate per year, compounded monthly; unused when paid up front [fraction/year].

    Returns
    -------
    float
        Months from the start; 0 when the owned capacity costs less from the first month [months].

    Notes
    -----
    Cumulative cost, undiscounted. Up front: ``P + running x m = rent x m`` at ``m = P / (rent - running)``. Financed:
    a payment ``A = P x CRF(r/12, 12 x years)`` (Excel's ``-PMT(r/12, 12 x years, P)``); if ``A + running`` is at most
    the rent, buying is cheaper from the start (0); else the lines cross after the loan, at
    ``m = 12 x years x A / (rent - running)``. Resale is left out. Eight GPUs at $30,000 against $2.50 an hour
    around the clock ($14,600 a month), with 1 kW each at PUE 1.3, $0.08/kWh and $150/kW-month ($1,807 of power and
    hosting): 18.8 months.
    """
    saving = rent_usd_per_month - running_usd_per_month
    if refused(saving <= 0):
        raise OutOfRangeError(
            f"rent_usd_per_month ({format_number(rent_usd_per_month)}) must exceed running_usd_per_month "
            f"({format_number(running_usd_per_month)}): renting costs no more than running what is owned, so buying "
            "never pays back",
            "rent_usd_per_month",
        )
    if not any(map(is_array, (capex_usd, saving, loan_years, annual_rate))):
        if loan_years == 0:
            return capex_usd / saving
        months = MONTHS_PER_YEAR * loan_years
        payment = capex_usd * crf(annual_rate / MONTHS_PER_YEAR, months)
        if payment + running_usd_per_month <= rent_usd_per_month:
            return 0.0
        return months * payment / saving
    # over arrays: refused savings and up-front rows kept harmless (a divisor of 1, a loan of a year), then not chosen
    saving = where(saving <= 0, 1.0, saving)
    months = MONTHS_PER_YEAR * where(loan_years == 0, 1.0, loan_years)
    payment = capex_usd * crf(annual_rate / MONTHS_PER_YEAR, months)
    financed = where(payment + running_usd_per_month <= rent_usd_per_month, 0.0, months * payment / saving)
    return where(loan_years == 0, capex_usd / saving, financed)


# --- Committing ------------------------------------------------------------------------------------------------


@checked(arrays=True)
def committed_cost(
    demand_gpus: GPUDemand,
    committed_gpus: GPUsOrZero,
    usd_per_gpu_hour_committed: Price,
    usd_per_gpu_hour_on_demand: Price,
    hours_per_period: HoursPerPeriod = 730,
) -> float:
    """Cost of a demand curve with capacity committed every period and the excess rented on demand.

    Parameters
    ----------
    demand_gpus : tuple of float
        GPUs needed in each period, one cell per period (a row or column of months) [GPUs].
    committed_gpus : float
        GPUs committed (reserved) for every period, billed whether used or not [GPUs].
    usd_per_gpu_hour_committed : float
        Committed (reserved) price of one GPU for an hour [USD/GPU-h].
    usd_per_gpu_hour_on_demand : float
        On-demand price of one GPU for an hour, paid for the GPUs above the commitment [USD/GPU-h].
    hours_per_period : float, default 730
        Hours in one period: 730 for a month of 8,760 / 12 [h].

    Returns
    -------
    float
        Total cost over all the periods [USD].

    Notes
    -----
    ``hours x sum over periods of (R x committed + max(demand - R, 0) x on_demand)``: a commitment is billed in full
    and usage beyond it at the on-demand rate (AWS Savings Plans; Scaleway, "Understanding Savings Plans"). Demand of
    8, 8, 16, 24 GPUs with 8 committed at $2.00 and on-demand at $3.00, 730 hours: $99,280.
    """
    committed = committed_gpus * usd_per_gpu_hour_committed * len(demand_gpus)
    excess = sum(maximum(d - committed_gpus, 0.0) for d in demand_gpus) * usd_per_gpu_hour_on_demand
    return hours_per_period * (committed + excess)


@checked(arrays=True)
def best_commitment(
    demand_gpus: GPUDemand, usd_per_gpu_hour_committed: Price, usd_per_gpu_hour_on_demand: PricePositive
) -> float:
    """The commitment that makes a demand curve cheapest, the excess on demand: a level of the curve itself.

    Parameters
    ----------
    demand_gpus : tuple of float
        GPUs needed in each period, one cell per period [GPUs].
    usd_per_gpu_hour_committed : float
        Committed (reserved) price of one GPU for an hour [USD/GPU-h].
    usd_per_gpu_hour_on_demand : float
        On-demand price of one GPU for an hour [USD/GPU-h].

    Returns
    -------
    float
        GPUs to commit for every period; the smallest such level where several cost the same [GPUs].

    Notes
    -----
    COMMITTED_COST is convex in the commitment R and its slope is ``hours x (T x committed - on_demand x
    count(demand > R))`` over T periods, so the cheapest R is the lowest demand level exceeded in at most
    ``T x committed / on_demand`` periods: commit to what is needed at least ``1 - committed / on_demand`` of the time
    (the newsvendor's critical ratio). 8, 8, 16, 24 GPUs at $2.00 committed, $3.00 on demand: 8.
    """
    allowed = len(demand_gpus) * usd_per_gpu_hour_committed
    ordered = sorted(demand_gpus)
    if is_array(allowed) or is_array(usd_per_gpu_hour_on_demand):
        # over arrays: every level tested, from the highest down, each element keeping the lowest that passes (the
        # one the loop below returns first); the highest always passes, no period being above it
        best = ordered[-1]
        for k in range(len(ordered), -1, -1):
            level = ordered[k - 1] if k else 0.0
            if k < len(ordered) and ordered[k] == level:
                continue
            best = where(usd_per_gpu_hour_on_demand * (len(ordered) - k) <= allowed, level, best)
        return best
    # at level ordered[k - 1] (0 for k = 0) the periods above it are those after the last one equal to it
    for k in range(len(ordered) + 1):
        level = ordered[k - 1] if k else 0.0
        if k < len(ordered) and ordered[k] == level:
            continue  # the same level again: count its periods first
        if usd_per_gpu_hour_on_demand * (len(ordered) - k) <= allowed:
            return level
    return ordered[-1]  # pragma: no cover - no period is above the highest level, so the loop has returned


# --- Accounting ------------------------------------------------------------------------------------------------


@checked(arrays=True)
def depreciation_sl(capex_usd: CapexUSD, salvage_usd: USDAmount, years: Years) -> float:
    """Straight-line depreciation an owned asset books each year: the capital less its salvage, over its life.

    Parameters
    ----------
    capex_usd : float
        Capital cost of the asset [USD].
    salvage_usd : float
        Value at the end of its life; above the capital cost the depreciation is negative, as in Excel [USD].
    years : float
        Life it is depreciated over; 10-K filings use 4 to 6 for servers [years].

    Returns
    -------
    float
        Depreciation booked each year of the life [USD/year].

    Notes
    -----
    ``(capex - salvage) / years``, Excel's ``SLN(cost, salvage, life)``. The cash view (GPU_HOUR_OWNED) recovers the
    capital at a cost of capital; the books spread it evenly. $30,000 with $3,000 salvage over 4 years: $6,750.
    """
    return (capex_usd - salvage_usd) / years


@checked(arrays=True)
def book_value(capex_usd: CapexUSD, salvage_usd: USDAmount, years: Years, years_elapsed: YearsOrZero) -> float:
    """Book value of an owned asset after some years of straight-line depreciation; the salvage after its life.

    Parameters
    ----------
    capex_usd : float
        Capital cost of the asset [USD].
    salvage_usd : float
        Value at the end of its life [USD].
    years : float
        Life it is depreciated over [years].
    years_elapsed : float
        Years since it was put in service [years].

    Returns
    -------
    float
        Capital cost less the depreciation booked so far [USD].

    Notes
    -----
    ``capex - min(years_elapsed, years) x SLN(capex, salvage, years)``: the straight-line schedule, row by row, with
    ``years_elapsed`` 1, 2, ... $30,000 with $3,000 salvage over 4 years: $16,500 after 2 years, $3,000 from year 4.
    """
    return capex_usd - minimum(years_elapsed, years) * (capex_usd - salvage_usd) / years


@checked
def npv_usd(annual_rate: AnnualRate, cash_flows: CashFlows) -> float:
    """Net present value of cash flows at the end of each period, discounted at a rate: Excel's NPV.

    Parameters
    ----------
    annual_rate : float
        Discount rate per period, 0.08 for 8% [fraction/period].
    cash_flows : tuple of float
        One cash flow per period, the first at the end of the first period; costs negative (a row or column of
        cells, empty cells skipped) [USD].

    Returns
    -------
    float
        Sum of each flow over (1 + rate) to the power of its period [USD].

    Notes
    -----
    ``sum over i of v_i / (1 + r)^i`` for i from 1, Excel's ``NPV(rate, values)``: a flow today (the purchase) is
    added outside it. -1,000 then 600 and 600 at 10%: -909.09 + 495.87 + 450.79 = 37.57.
    """
    log_growth = math.log1p(annual_rate)
    return sum(v * math.exp(-(i + 1) * log_growth) for i, v in enumerate(cash_flows))


@checked(arrays=True)
def owned_npv(
    capex_usd: CapexUSD,
    years: Years,
    residual_fraction: FractionOrZero = 0,
    annual_rate: AnnualRate = 0,
    running_usd_per_year: USDPerYear = 0,
) -> float:
    """Present cost of owning an asset over its life: the purchase, the running costs, the resale deducted.

    Parameters
    ----------
    capex_usd : float
        Capital cost, paid at the start [USD].
    years : float
        Life it is owned for [years].
    residual_fraction : float, default 0
        Resale value at the end of the life, as a share of the capital cost [fraction].
    annual_rate : float, default 0
        Cost of capital per year, 0.08 for 8% [fraction/year].
    running_usd_per_year : float, default 0
        Power, hosting and upkeep a year, paid at the end of each year [USD/year].

    Returns
    -------
    float
        Present value of what owning costs [USD].

    Notes
    -----
    ``P + running / CRF(r, n) - S / (1 + r)^n`` with ``S = residual x P``: the running costs as an annuity (for whole
    years, Excel's ``P + NPV(r, running, ..., running - S)``). Times CAPITAL_RECOVERY(r, n) it is the yearly cost
    GPU_HOUR_OWNED spreads over 8,760 hours. $30,000 over 4 years, 10% residual, 8%, $2,700 a year: 30,000 + 8,942.74
    - 2,205.09 = $36,737.65.
    """
    present_residual = capex_usd * residual_fraction * apply(math.exp, -years * apply(math.log1p, annual_rate))
    return capex_usd + running_usd_per_year / crf(annual_rate, years) - present_residual
