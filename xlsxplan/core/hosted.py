"""Build or buy: what a hosted API bills for a traffic level, and the traffic at which a self-hosted fleet costs less.

A hosted API bills per million tokens: input, cached input (a prompt prefix the provider serves from its cache, at a
lower price) and output (reasoning tokens included: they are generated, so billed as output). A self-hosted fleet
costs about the same each month whatever it serves, up to its capacity. The crossover is the traffic at which the
two bills are equal: below it the API is cheaper, above it (while the fleet still serves it) the fleet.

Prices are a provider's published price per million tokens, as read on a date (``catalog/hosted.toml`` holds a few,
HOSTED_PRICE reads them); a month is 730 hours, 8,760 / 12.
"""

from __future__ import annotations

from ..domains import (
    FractionOrZero,
    PerDay,
    TokensOrZero,
    USDPerMonthPositive,
    USDPerMTokens,
    checked,
)
from ..errors import OutOfRangeError
from ..infra.elementwise import refused, where
from .cost import HOURS_PER_YEAR, MONTHS_PER_YEAR

__all__ = ["api_cost_per_month", "api_crossover_rpd", "api_usd_per_request"]

_DAYS_PER_MONTH = HOURS_PER_YEAR / MONTHS_PER_YEAR / 24


def api_usd_per_request(
    prompt_tokens: float,
    output_tokens: float,
    usd_per_m_input: float,
    usd_per_m_output: float,
    cached_share: float,
    usd_per_m_cached_input: float,
) -> float:
    """What one request costs on a hosted API, unchecked: ``(prompt x ((1 - c) in + c cached) + output x out) / 1e6``
    [USD]."""
    prompt = prompt_tokens * ((1 - cached_share) * usd_per_m_input + cached_share * usd_per_m_cached_input)
    return (prompt + output_tokens * usd_per_m_output) / 1e6


@checked(arrays=True)
def api_cost_per_month(
    requests_per_day: PerDay,
    prompt_tokens: TokensOrZero,
    output_tokens: TokensOrZero,
    usd_per_m_input: USDPerMTokens,
    usd_per_m_output: USDPerMTokens,
    cached_share: FractionOrZero = 0,
    usd_per_m_cached_input: USDPerMTokens = 0,
) -> float:
    """Monthly bill of a traffic level on a hosted API priced per million input, cached-input and output tokens.

    Parameters
    ----------
    requests_per_day : float
        Requests a day [requests/day].
    prompt_tokens : float
        Input tokens of a request: system prompt, context and question [tokens].
    output_tokens : float
        Output tokens of a request, reasoning tokens included (billed as output) [tokens].
    usd_per_m_input : float
        Price of a million input tokens, from HOSTED_PRICE [USD/M tokens].
    usd_per_m_output : float
        Price of a million output tokens [USD/M tokens].
    cached_share : float, default 0
        Share of the input tokens served from the provider's prompt cache [fraction].
    usd_per_m_cached_input : float, default 0
        Price of a million cached input tokens; unused while cached_share is 0 [USD/M tokens].

    Returns
    -------
    float
        Cost of a month of 730 hours at that traffic [USD/month].

    Notes
    -----
    ``requests_per_day x 730 / 24 x (prompt x ((1 - c) x in + c x cached) + output x out) / 1e6``. 100,000 requests
    a day of 2,000 input tokens (half cached) and 500 output at $0.15, $0.075 cached and $0.60: $0.000525 a request,
    $52.50 a day, $1,596.88 a month.
    """
    per_request = api_usd_per_request(
        prompt_tokens, output_tokens, usd_per_m_input, usd_per_m_output, cached_share, usd_per_m_cached_input
    )
    return requests_per_day * _DAYS_PER_MONTH * per_request


@checked(arrays=True)
def api_crossover_rpd(
    self_host_usd_per_month: USDPerMonthPositive,
    prompt_tokens: TokensOrZero,
    output_tokens: TokensOrZero,
    usd_per_m_input: USDPerMTokens,
    usd_per_m_output: USDPerMTokens,
    cached_share: FractionOrZero = 0,
    usd_per_m_cached_input: USDPerMTokens = 0,
) -> float:
    """Traffic at which a hosted API bills as much as a self-hosted fleet: above it, self-hosting costs less.

    Parameters
    ----------
    self_host_usd_per_month : float
        What the self-hosted fleet costs a month, held whatever it serves: GPUs x price x 730, or the tier mix's
        TIER_MIX_COST [USD/month].
    prompt_tokens : float
        Input tokens of a request [tokens].
    output_tokens : float
        Output tokens of a request, reasoning tokens included [tokens].
    usd_per_m_input : float
        The API's price of a million input tokens [USD/M tokens].
    usd_per_m_output : float
        The API's price of a million output tokens [USD/M tokens].
    cached_share : float, default 0
        Share of the input tokens served from the provider's prompt cache [fraction].
    usd_per_m_cached_input : float, default 0
        The API's price of a million cached input tokens [USD/M tokens].

    Returns
    -------
    float
        Requests a day at which the two monthly bills are equal; check the fleet serves that many [requests/day].

    Notes
    -----
    ``self_host / (730 / 24 x API cost of a request)``, API_COST_MONTH solved for the traffic. A fleet's cost rises
    in steps with its replicas: compare at the fleet sized for the crossover. $10,000 a month against the request of
    API_COST_MONTH's example ($0.000525): 626,223 requests a day.
    """
    per_request = api_usd_per_request(
        prompt_tokens, output_tokens, usd_per_m_input, usd_per_m_output, cached_share, usd_per_m_cached_input
    )
    if refused(per_request <= 0):
        raise OutOfRangeError(
            "usd_per_m_output and usd_per_m_input give a request that costs nothing on the API (every price or "
            "token count is 0): no traffic makes self-hosting cheaper; give a price above 0",
            "usd_per_m_output",
        )
    return self_host_usd_per_month / (_DAYS_PER_MONTH * where(per_request <= 0, 1.0, per_request))
