"""The owned fleet by hand, for the tests of `xlsxplan plan`'s "owned instead" line and the Finance sheet's owning
lines: Excel's SLN and NPV written out, not through the functions the tool calls (DEPRECIATION_SL, OWNED_NPV,
CAPITAL_RECOVERY)."""

from __future__ import annotations


def owned_by_hand(
    gpus: int,
    rented_usd_per_month: float,
    capex_usd: float,
    years: float,
    residual: float,
    rate: float,
    kw: float,
    pue: float,
    usd_per_kwh: float,
    usd_per_kw_month: float,
    hours_per_year: float = 8760,
) -> dict[str, float]:
    """``gpus`` bought at ``capex_usd`` each: capital P; straight-line depreciation ``(P - rP) / n`` a year; power
    and hosting ``gpus x kW x (PUE x $/kWh x hours a year + $/kW-month x 12)``; the present cost owned
    ``P + running x annuity - rP / (1 + i)^n`` and rented ``12 x the month x annuity``, with the annuity factor
    ``(1 - (1 + i)^-n) / i``. Keys as `plan --json`'s ``finance.owned`` names them."""
    capital = gpus * capex_usd
    running = gpus * kw * (pue * usd_per_kwh * hours_per_year + usd_per_kw_month * 12)
    annuity = (1 - (1 + rate) ** -years) / rate
    owned = capital + running * annuity - residual * capital / (1 + rate) ** years
    rented = 12 * rented_usd_per_month * annuity
    return {
        "capital_usd": capital,
        "depreciation_usd_per_year": (capital - residual * capital) / years,
        "running_usd_per_year": running,
        "present_cost_owned_usd": owned,
        "present_cost_rented_usd": rented,
        "owning_saves_usd": rented - owned,
    }
