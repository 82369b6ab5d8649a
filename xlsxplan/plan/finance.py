"""Rank 1's bill as finance reads it: over a day of demand on price tiers, its energy and carbon, a hosted API beside.

The plan prices its fleet at one rate, rented around the clock and sized for the peak hour. This module takes the
plan's rank-1 option (in the view the plan ranks by) and prices it the other ways a finance team asks, each through
the registry's own function, so a figure here is the figure the same function gives in a cell:

* **following the day**: the hourly GPUs of a demand profile (PROFILE_GPUS, DEMAND_PROFILE) scaled to the planned
  fleet, billed on demand only for the hours used, and the cheapest mix of committed and on-demand (or spot) capacity
  (TIER_MIX_COST, TIER_MIX_BASE, TIER_MIX_SHARE);
* **energy and carbon**: kWh per million tokens (KWH_PER_M_TOKENS) of the planned fleet at its own utilisation, prompt
  and decoded tokens both counted, and grams of CO2e (GCO2_PER_M_TOKENS, GRID_INTENSITY) where a region is given;
* **build or buy**: a hosted API's monthly bill for the same traffic (API_COST_MONTH, HOSTED_PRICE) and the traffic
  at which it costs what the planned fleet does (API_CROSSOVER_RPD);
* **owning the fleet instead**: its capital cost at costs.toml's figures, the straight-line depreciation a year
  (DEPRECIATION_SL), power and hosting a year (GPU_HOUR_OWNED less its capital recovery), and the present cost of
  owning over the capital's life (OWNED_NPV) against renting the same GPUs for as long, discounted at the same cost of
  capital (the yearly rent over CAPITAL_RECOVERY).

Every default is named beside the figure it moves: the profile (a shape, not a measurement), the committed price and
its source, the server power and PUE with theirs, the idle power share, the provider. See docs/finance.md.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from ..catalog import finance as tables
from ..catalog import load_catalog, load_prices
from ..catalog.costs import cost_figure, load_costs, server_kw
from ..core import cost, energy, hosted, tiers
from ..domains import FractionOrZero, Price, domain_of
from ..errors import NotAvailableError
from .search import Plan, busy_share

PROFILE_SPREAD = 0.1
"""How far (as a fraction) a profile's peak-over-mean may differ from the plan's peak factor before the output says
that the day's GPU-hours follow the profile rather than the peak factor."""


@dataclass(frozen=True)
class FinanceInputs:
    """What the finance view takes beyond the plan; each None is a default the output names."""

    profile: str = "business-day"
    """A demand.toml profile: the day's shape, scaled to the planned fleet at its peak hour."""
    usd_committed: float | None = None
    """A committed (one-year) price per GPU-hour [USD/GPU-h]; None: the catalog's where it has one."""
    spot_discount: float = 0.0
    """Spot's discount off the on-demand price; 0 leaves spot out [fraction]."""
    region: str | None = None
    """A grid.toml region for the carbon figure; None: energy only."""
    idle_share: float = 0.0
    """An idle GPU's power over its full-load power; 0 counts the busy hours' draw only [fraction]."""
    api_provider: str | None = None
    """A hosted.toml provider of the plan's model; None: the first that prices it, if any."""


def _usd(amount: float) -> str:
    """Dollars as the finance lines print them: whole dollars, or cents below $100 (a small bill is never "$0")."""
    return f"${amount:,.0f}" if amount >= 100 else f"${amount:,.2f}"


def _check(name: str, annotation: Any, value: Any) -> Any:
    """``value`` checked as a registry function checks its argument, the error naming the flag ``name``; None
    passes (a default the output names)."""
    found = domain_of(annotation)
    return value if value is None or found is None else found.check(name, value)


def _committed(gpu: str, given: float | None) -> tuple[float | None, str]:
    if given is not None:
        return given, "given"
    try:
        price = load_prices().get(gpu, "committed")
    except NotAvailableError:
        return None, f"the catalog has no committed price for {gpu}: give --committed-price"
    return price.usd_per_gpu_hour, f"the catalog's one-year price, as of {price.as_of.isoformat()}"


def _api(model: str, provider: str | None) -> dict[str, Any]:
    model_id = load_catalog().models.get(model).id
    offers = [e for e in tables.load_hosted().entries.values() if e.model == model_id]
    if provider is None and not offers:
        return {"reason": f"hosted.toml has no API price for {model_id} (--api PROVIDER for one it has)"}
    try:
        entry = offers[0] if provider is None else tables.hosted_entry(model_id, provider)
    except NotAvailableError as err:  # no price for the model at all: the flag that asked for one is at fault
        raise NotAvailableError(err.message, "provider") from None
    return {
        "provider": entry.provider,
        "usd_per_m_input": entry.usd_per_m_input,
        "usd_per_m_output": entry.usd_per_m_output,
        "source": f"{tables.load_hosted().titles[entry.source]}, as of {entry.as_of.isoformat()}",
    }


def check(given: FinanceInputs, model: str) -> FinanceInputs:
    """``given`` with every field checked before the plan runs, or an error naming the field's argument
    (``--committed-price``, ``--spot-discount``, ``--idle-share``, ``profile``, ``region``, ``provider``)."""
    _check("--committed-price", Price, given.usd_committed)
    _check("--spot-discount", FractionOrZero, given.spot_discount)
    _check("--idle-share", FractionOrZero, given.idle_share)
    tables.demand_profile(given.profile)
    if given.region is not None:
        tables.grid_intensity(given.region)
    _api(model, given.api_provider)
    return given


def finance(result: Plan, given: FinanceInputs | None = None) -> dict[str, Any] | None:
    """Rank 1 priced over the day, in energy and against a hosted API, as a dict (``--json``'s ``finance``); None
    when no option is feasible. Units: USD a month, GPUs, kWh and gCO2e per million tokens, requests a day."""
    given = given or FinanceInputs()
    feasible = [o for o in result.options if o.view(result.rank_by).feasible]
    if not feasible:
        return None
    o = feasible[0]
    f = o.view(result.rank_by)
    t = result.traffic
    hours = result.assumptions.hours_per_month
    price = o.usd_per_gpu_hour
    gpus = f.gpus or 0
    day = tuple(tables.demand_profile(given.profile))
    hourly = tiers.profile_gpus(day, gpus)
    out: dict[str, Any] = {
        "option": o.label(),
        "gpus": gpus,
        "usd_per_gpu_hour": price,
        "usd_per_month_peak_sized": f.usd_per_month,
        "profile": {
            "name": given.profile,
            "source": tables.demand_source(given.profile),
            "peak_over_mean": max(day) / statistics.fmean(day),
            "plan_peak_factor": t.peak_factor,
        },
        "hourly_gpus": hourly,
        "usd_per_month_on_demand_following_the_day": sum(hourly) / len(hourly) * price * hours,
    }
    committed, basis = _committed(o.gpu, _check("--committed-price", Price, given.usd_committed))
    if committed is None:
        out["tier_mix"] = {"reason": basis}
    else:
        mix = tiers.tier_mix(
            day, gpus, committed, price, _check("--spot-discount", FractionOrZero, given.spot_discount)
        )
        out["tier_mix"] = {
            "usd_committed": committed,
            "committed_source": basis,
            "spot_discount": given.spot_discount,
            "committed_gpus": mix.committed_gpus,
            "above": mix.above,
            "usd_per_month": mix.usd_per_month,
            "shares": mix.shares,
        }
    out["energy"] = _energy(o.gpu, f, result, given)
    out["owned"] = owned(o.gpu, gpus, f.usd_per_month or 0.0, hours)  # feasible: priced
    out["api"] = _api(result.model, given.api_provider)
    if "reason" not in out["api"]:
        api = out["api"]
        tokens_out = t.decode_tokens
        api["usd_per_month"] = hosted.api_cost_per_month(
            t.requests_per_day, t.prompt_tokens, tokens_out, api["usd_per_m_input"], api["usd_per_m_output"]
        )
        api["crossover_requests_per_day"] = hosted.api_crossover_rpd(
            out["usd_per_month_peak_sized"],
            t.prompt_tokens,
            tokens_out,
            api["usd_per_m_input"],
            api["usd_per_m_output"],
        )
    return out


OWNED_FIELDS = ("capex_usd", "years", "residual_fraction", "annual_rate", "pue", "usd_per_kwh", "usd_per_kw_month")
"""The costs.toml figures owning reads (with the server's power per GPU, :func:`server_kw`)."""


def owned(gpu: str, gpus: int, rented_usd_per_month: float, hours_per_month: float) -> dict[str, Any]:
    """``gpus`` of ``gpu`` bought instead of rented, at costs.toml's figures (each with its source and date).

    Units: USD, USD a year, years, USD/GPU-h. The capital is ``gpus x capex``; depreciation is ``gpus x``
    DEPRECIATION_SL of a GPU's capital to its residual over the life; the running cost a year is GPU_HOUR_OWNED less
    its capital recovery (power and hosting per GPU-hour) over ``hours_per_month x 12`` hours; the present cost of
    owning is ``gpus x`` OWNED_NPV of one GPU (the purchase, the running costs as an annuity, the resale deducted) and
    of renting ``rented_usd_per_month x 12`` a year over the same life at the same cost of capital, over
    CAPITAL_RECOVERY. A figure costs.toml lacks gives ``reason``."""
    try:
        figures = {key: cost_figure(gpu, key) for key in OWNED_FIELDS}
        kw, kw_title, _ = server_kw(gpu)
    except NotAvailableError as err:
        return {"reason": f"{err.message} (owning is not priced)"}
    v = {key: fig.value for key, fig in figures.items()}
    capital = gpus * v["capex_usd"]
    years, residual, rate = v["years"], v["residual_fraction"], v["annual_rate"]
    all_in = cost.gpu_hour_owned(
        v["capex_usd"], years, residual, rate, kw, v["pue"], v["usd_per_kwh"], v["usd_per_kw_month"]
    )
    running_hour = all_in - cost.gpu_hour_owned(v["capex_usd"], years, residual, rate)
    running = running_hour * gpus * hours_per_month * cost.MONTHS_PER_YEAR
    # per GPU, times the GPUs (a GPU's capital is what CapexUSD's usual range describes), as the Finance sheet does
    owning = gpus * cost.owned_npv(v["capex_usd"], years, residual, rate, running / gpus) if gpus else 0.0
    renting = rented_usd_per_month * cost.MONTHS_PER_YEAR / cost.capital_recovery_factor(rate, years)
    titles = load_costs().titles
    return {
        "capex_usd_per_gpu": v["capex_usd"],
        "years": years,
        "residual_fraction": residual,
        "annual_rate": rate,
        "sources": {
            key: f"{titles.get(fig.source, fig.source)}, as of {fig.as_of.isoformat()}" for key, fig in figures.items()
        }
        | {"server_kw_per_gpu": kw_title},
        "capital_usd": capital,
        "depreciation_usd_per_year": gpus * cost.depreciation_sl(v["capex_usd"], v["capex_usd"] * residual, years),
        "running_usd_per_year": running,
        "present_cost_owned_usd": owning,
        "present_cost_rented_usd": renting,
        "owning_saves_usd": renting - owning,
    }


def _energy(gpu: str, f: Any, result: Plan, given: FinanceInputs) -> dict[str, Any]:
    t = result.traffic
    kw, title, as_of = server_kw(gpu)
    kw_source = title if as_of is None else f"{title}, as of {as_of.isoformat()}"
    pue = cost_figure(gpu, "pue")
    u = busy_share(f, t)
    gpus = f.gpus or 0
    hours = result.assumptions.hours_per_month
    idle = _check("--idle-share", FractionOrZero, given.idle_share)
    tokens_per_month = t.requests_per_day * (t.prompt_tokens + t.decode_tokens) * hours / 24
    # KWH_PER_M_TOKENS per GPU: the full-load rate that serves this month's tokens at utilisation u
    full_load_tokens_per_s = tokens_per_month / (gpus * hours * 3600 * u)
    kwh = energy.kwh_per_m_tokens(kw, full_load_tokens_per_s, min(u, 1.0), pue.value, idle)
    out: dict[str, Any] = {
        "kw_per_gpu": kw,
        "kw_source": kw_source,
        "pue": pue.value,
        "pue_source": f"{load_costs().titles[pue.source]}, as of {pue.as_of.isoformat()}",
        "idle_share": idle,
        "utilisation": u,
        "tokens_per_month": tokens_per_month,
        "kwh_per_m_tokens": kwh,
        "kwh_per_month": kwh * tokens_per_month / 1e6,
    }
    if given.region is not None:
        grams = tables.grid_intensity(given.region)
        out["region"] = given.region
        out["g_co2e_per_kwh"] = grams
        out["grid_source"] = tables.grid_source(given.region)
        out["g_co2e_per_m_tokens"] = energy.gco2_per_m_tokens(kwh, grams)
    return out


def render(fin: dict[str, Any] | None) -> list[str]:
    """The finance view in lines, for the plan's text output: each figure with the default it rests on."""
    if fin is None:
        return []
    p = fin["profile"]
    lines = [
        "",
        f"Finance, rank 1 ({fin['option']}, {fin['gpus']} GPUs at ${fin['usd_per_gpu_hour']:g} per GPU-hour, "
        "the plan's price):",
        f"  peak-sized, rented around the clock: ${fin['usd_per_month_peak_sized']:,.0f} a month; following the day "
        f"({p['name']} profile, a shape, not a measurement; --demand-profile), on demand for the hours used: "
        f"${fin['usd_per_month_on_demand_following_the_day']:,.0f} (GPUs by the hour {min(fin['hourly_gpus'])} to "
        f"{max(fin['hourly_gpus'])})",
    ]
    if abs(p["peak_over_mean"] / p["plan_peak_factor"] - 1) > PROFILE_SPREAD:
        carried = p["plan_peak_factor"] / p["peak_over_mean"]  # the profile's day, pinned at the plan's peak
        lines.append(
            f"    the profile's peak is {p['peak_over_mean']:.2f}x its mean, the plan's peak factor "
            f"{p['plan_peak_factor']:g}: the day's GPU-hours follow the profile, whose day at the plan's peak carries "
            f"{carried:.2g}x the requests a day given, so this bill is {'high' if carried > 1 else 'low'} by about "
            f"that much (--peak-factor {p['peak_over_mean']:.2g} plans the peak this profile has)"
        )
    mix = fin["tier_mix"]
    if "reason" in mix:
        lines.append(f"  tier mix: not priced: {mix['reason']}")
    else:
        above = "spot" if mix["above"] == "spot" else "on demand"
        lines.append(
            f"  tier mix: {mix['committed_gpus']:g} GPUs committed at ${mix['usd_committed']:g} "
            f"({mix['committed_source']}), {above} above them: ${mix['usd_per_month']:,.0f} a month, "
            f"{mix['shares']['committed']:.0%} of the GPU-hours committed"
        )
        if mix["usd_committed"] >= fin["usd_per_gpu_hour"]:  # as the workbook's check "Committed price at or above
            lines.append(  # on demand" flags it: a commitment that costs more than the plan's hourly price
                f"    the committed price (${mix['usd_committed']:g}) is at or above the plan's price "
                f"(${fin['usd_per_gpu_hour']:g}): committing saves nothing; give --committed-price for your quote"
            )
    e = fin["energy"]
    carbon = (
        f", {e['g_co2e_per_m_tokens']:,.0f} gCO2e per million at {e['g_co2e_per_kwh']:g} g/kWh ({e['region']})"
        if "g_co2e_per_m_tokens" in e
        else " (--region for the carbon figure)"
    )
    lines.append(
        f"  energy: {e['kwh_per_m_tokens']:.3g} kWh per million tokens (prompt and output), "
        f"{e['kwh_per_month']:,.0f} kWh a month{carbon}; at {e['kw_per_gpu']:g} kW a GPU ({e['kw_source']}), PUE "
        f"{e['pue']:g} ({e['pue_source']}), {e['utilisation']:.0%} utilisation, idle power "
        f"{e['idle_share']:.0%} of busy (--idle-share)"
    )
    own = fin["owned"]
    if "reason" in own:
        lines.append(f"  owned instead: {own['reason']}")
    else:
        verdict = "owning" if own["owning_saves_usd"] > 0 else "renting"
        lines.append(
            f"  owned instead: ${own['capital_usd']:,.0f} of capital (${own['capex_usd_per_gpu']:,.0f} a GPU, "
            f"costs.toml), depreciated ${own['depreciation_usd_per_year']:,.0f} a year over {own['years']:g} years "
            f"to {own['residual_fraction']:.0%}; power and hosting ${own['running_usd_per_year']:,.0f} a year; "
            f"present cost over the {own['years']:g} years at {own['annual_rate']:.0%}: "
            f"${own['present_cost_owned_usd']:,.0f} owned against ${own['present_cost_rented_usd']:,.0f} rented "
            f"around the clock, {verdict} cheaper (OWNED_NPV, the rent over CAPITAL_RECOVERY)"
        )
    api = fin["api"]
    if "reason" in api:
        lines.append(f"  hosted API: {api['reason']}")
    else:
        cheaper = "the API" if api["usd_per_month"] < fin["usd_per_month_peak_sized"] else "self-hosting"
        lines.append(
            f"  hosted API ({api['provider']}, ${api['usd_per_m_input']:g} in and ${api['usd_per_m_output']:g} out "
            f"per million, {api['source']}): {_usd(api['usd_per_month'])} a month for this traffic, {cheaper} "
            f"cheaper; the bills meet at {api['crossover_requests_per_day']:,.0f} requests a day (API_CROSSOVER_RPD, "
            "against the peak-sized bill)"
        )
    return lines
