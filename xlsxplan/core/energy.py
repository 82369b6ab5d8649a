"""Energy and carbon per million tokens: what a fleet draws from the grid for the tokens it serves, beside the cost.

A GPU draws its busy power while it works and a share of it while it idles; the facility adds its overhead (power
usage effectiveness, PUE). Over an hour at a utilisation ``u`` (the share of the hour the GPU works at full load),
one GPU takes ``kW x (u + idle_share x (1 - u)) x PUE`` kWh from the grid and serves ``tokens_per_s x 3600 x u``
tokens: the energy per million tokens rises as the load falls, as an owned GPU's cost does
(:func:`xlsxplan.core.cost.cost_per_m_owned`). The grid's carbon intensity (gCO2e per kWh, location-based: the
average of the grid the fleet draws from) turns it into emissions.

References
----------
.. [1] The Green Grid 2012, White Paper 49, "PUE: A Comprehensive Examination of the Metric"; ISO/IEC 30134-2:2016:
   power usage effectiveness is the facility's energy over the IT equipment's.
.. [2] GHG Protocol, "Scope 2 Guidance" (2015): location-based emissions are the energy used times the average
   emission factor of the grid where it is used.
.. [3] Ember, "Yearly Electricity Data" (lifecycle gCO2e per kWh of generation, by country), as Our World in Data
   publishes it: the defaults of ``catalog/grid.toml``.
"""

from __future__ import annotations

from ..domains import PUE, Fraction, FractionOrZero, GramsPerKWh, KWhPerMTokens, KWPositive, TokensPerS, checked

__all__ = ["gco2_per_m_tokens", "kwh_per_m_tokens"]

_SECONDS_PER_HOUR = 3600


@checked(arrays=True)
def kwh_per_m_tokens(
    kw: KWPositive,
    tokens_per_s: TokensPerS,
    utilisation: Fraction,
    pue: PUE = 1,
    idle_share: FractionOrZero = 0,
) -> float:
    """Energy a fleet takes from the grid per million tokens: busy and idle draw of its GPUs, times the PUE.

    Parameters
    ----------
    kw : float
        Power one GPU draws at full load, with its share of the server (GPU_SPEC power_w / 1000 for the card) [kW].
    tokens_per_s : float
        Tokens one GPU produces per second at full load [tokens/s].
    utilisation : float
        Share of the hours the GPU works at full load; the rest it idles [fraction].
    pue : float, default 1
        Power usage effectiveness: the facility's power over the IT equipment's; 1.58 industry average, 2023 [ratio].
    idle_share : float, default 0
        Power an idle GPU draws over its full-load power; 0 counts the busy hours only [fraction].

    Returns
    -------
    float
        Energy from the grid per million tokens served [kWh/M tokens].

    Notes
    -----
    ``kW x PUE x (u + idle_share x (1 - u)) / (tokens_per_s x 3600 x u) x 1e6``: an hour's energy over an hour's
    tokens (PUE as The Green Grid defines it). 1 kW at PUE 1.2 and 1,000 tokens/s: 0.3333 kWh per million at full
    load; at 50% with idle at 30% of busy power, 1.2 x 0.65 / 1,800 x 1,000 = 0.4333.
    """
    drawn = kw * pue * (utilisation + idle_share * (1 - utilisation))
    return drawn / (tokens_per_s * _SECONDS_PER_HOUR * utilisation) * 1e6


@checked(arrays=True)
def gco2_per_m_tokens(kwh_per_m: KWhPerMTokens, grams_per_kwh: GramsPerKWh) -> float:
    """Emissions per million tokens: the energy per million tokens times the grid's carbon intensity.

    Parameters
    ----------
    kwh_per_m : float
        Energy per million tokens, from KWH_PER_M_TOKENS [kWh/M tokens].
    grams_per_kwh : float
        Carbon intensity of the grid the fleet draws from, from GRID_INTENSITY or your supplier's figure
        [gCO2e/kWh].

    Returns
    -------
    float
        Location-based emissions per million tokens [gCO2e/M tokens].

    Notes
    -----
    ``kWh x gCO2e/kWh`` (GHG Protocol, "Scope 2 Guidance", location-based method). 0.4333 kWh per million on a grid
    of 381 gCO2e/kWh (Germany, Ember 2023): 165.1 g per million tokens.
    """
    return kwh_per_m * grams_per_kwh
