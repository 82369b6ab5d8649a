"""A hosted API's monthly bill and its crossover with a self-hosted fleet (xlsxplan.core.hosted), by hand."""

from __future__ import annotations

import pytest

from xlsxplan.core import hosted
from xlsxplan.errors import XlsxplanError

DAYS_PER_MONTH = 8760 / 12 / 24  # 30.4167


def test_monthly_bill_prices_input_cached_input_and_output_tokens_apart():
    # 2,000 input tokens, half cached: 1,000 x $0.15 + 1,000 x $0.075 = $0.000225; 500 output x $0.60 = $0.0003
    per_request = (1000 * 0.15 + 1000 * 0.075 + 500 * 0.60) / 1e6
    assert per_request == pytest.approx(0.000525)
    got = hosted.api_cost_per_month(100_000, 2000, 500, 0.15, 0.60, 0.5, 0.075)
    assert got == pytest.approx(100_000 * per_request * DAYS_PER_MONTH)
    assert got == pytest.approx(1596.875)
    # no cache: every input token at the input price, the cached price unused
    assert hosted.api_cost_per_month(100_000, 2000, 500, 0.15, 0.60, 0, 99) == pytest.approx(
        100_000 * (2000 * 0.15 + 500 * 0.60) / 1e6 * DAYS_PER_MONTH
    )


def test_the_crossover_is_the_traffic_at_which_both_bills_are_equal():
    rpd = hosted.api_crossover_rpd(10_000, 2000, 500, 0.15, 0.60, 0.5, 0.075)
    assert rpd == pytest.approx(10_000 / (0.000525 * DAYS_PER_MONTH))
    assert round(rpd) == 626_223
    assert hosted.api_cost_per_month(rpd, 2000, 500, 0.15, 0.60, 0.5, 0.075) == pytest.approx(10_000)
    # above it the API costs more than the fleet, below it less
    assert hosted.api_cost_per_month(1.1 * rpd, 2000, 500, 0.15, 0.60, 0.5, 0.075) > 10_000
    assert hosted.api_cost_per_month(0.9 * rpd, 2000, 500, 0.15, 0.60, 0.5, 0.075) < 10_000


def test_a_free_request_has_no_crossover_and_bad_input_names_its_argument():
    with pytest.raises(
        XlsxplanError, match="^usd_per_m_output and usd_per_m_input give a request that costs nothing on the API"
    ) as err:
        hosted.api_crossover_rpd(10_000, 2000, 500, 0, 0)
    assert err.value.argument == "usd_per_m_output"
    with pytest.raises(XlsxplanError, match="^cached_share must be") as err:
        hosted.api_cost_per_month(1000, 2000, 500, 0.15, 0.6, 1.5)
    with pytest.raises(XlsxplanError, match="^requests_per_day must be"):
        hosted.api_cost_per_month(0, 2000, 500, 0.15, 0.6)
    with pytest.raises(XlsxplanError, match="^self_host_usd_per_month must be"):
        hosted.api_crossover_rpd(0, 2000, 500, 0.15, 0.6)
