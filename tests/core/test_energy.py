"""Energy and carbon per million tokens (xlsxplan.core.energy), against hand-computed figures."""

from __future__ import annotations

import math

import pytest

from xlsxplan.core import energy
from xlsxplan.errors import XlsxplanError


def test_kwh_per_million_tokens_at_full_load_is_power_times_pue_over_tokens_an_hour():
    # 1 kW x 1.2 = 1.2 kWh an hour; 1,000 tokens/s = 3.6 M tokens an hour: 1.2 / 3.6 = 0.3333 kWh per million
    assert energy.kwh_per_m_tokens(1.0, 1000, 1.0, 1.2) == pytest.approx(1 / 3, rel=1e-12)


def test_idle_draw_is_charged_to_the_tokens_of_the_busy_hours():
    # at 50% with idle at 30% of busy power: 1.2 x (0.5 + 0.3 x 0.5) = 0.78 kWh an hour for 1.8 M tokens
    assert energy.kwh_per_m_tokens(1.0, 1000, 0.5, 1.2, 0.3) == pytest.approx(0.78 / 1.8, rel=1e-12)
    # with no idle draw, the energy per token does not depend on the load
    assert energy.kwh_per_m_tokens(0.7, 2500, 0.2, 1.4) == pytest.approx(energy.kwh_per_m_tokens(0.7, 2500, 1, 1.4))
    # with idle at full power, it is the full-load figure over the utilisation, as an owned GPU's cost is
    assert energy.kwh_per_m_tokens(0.7, 2500, 0.2, 1.4, 1) == pytest.approx(
        energy.kwh_per_m_tokens(0.7, 2500, 1, 1.4) / 0.2
    )


def test_grams_of_co2_per_million_tokens_are_energy_times_grid_intensity():
    kwh = energy.kwh_per_m_tokens(1.0, 1000, 0.5, 1.2, 0.3)
    assert energy.gco2_per_m_tokens(kwh, 381) == pytest.approx(0.78 / 1.8 * 381)
    assert math.isclose(energy.gco2_per_m_tokens(kwh, 381), 165.1, abs_tol=0.05)
    assert energy.gco2_per_m_tokens(kwh, 0) == 0


@pytest.mark.parametrize(
    ("args", "argument"),
    [
        ((0, 1000, 0.5), "kw"),
        ((1, 0, 0.5), "tokens_per_s"),
        ((1, 1000, 0), "utilisation"),
        ((1, 1000, 0.5, 0.9), "pue"),
        ((1, 1000, 0.5, 1.2, 1.5), "idle_share"),
    ],
)
def test_bad_input_is_refused_naming_the_argument(args, argument):
    with pytest.raises(XlsxplanError, match=rf"^{argument} must be") as err:
        energy.kwh_per_m_tokens(*args)
    assert err.value.argument == argument
    with pytest.raises(XlsxplanError, match="^grams_per_kwh must be"):
        energy.gco2_per_m_tokens(0.4, -1)
