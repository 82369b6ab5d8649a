"""Price tiers over a day's demand (xlsxplan.core.tiers): the cheapest mix of committed, on-demand and spot
capacity for a 24-hour profile, checked by hand and against every commitment level tried in turn."""

from __future__ import annotations

import pytest

from xlsxplan.core import cost, tiers
from xlsxplan.errors import XlsxplanError

# 8 hours at a quarter of the peak, 8 at half, 8 at the peak: 2, 4 and 8 of 8 GPUs
PROFILE = (0.25,) * 8 + (0.5,) * 8 + (1.0,) * 8
HOURS_PER_MONTH = 730


def test_the_profile_scales_to_the_peak_in_whole_gpus():
    assert tiers.profile_gpus(PROFILE, 8) == [2] * 8 + [4] * 8 + [8] * 8
    # any scale: requests per hour give the same GPUs as shares of the peak
    assert tiers.profile_gpus(tuple(1000 * s for s in PROFILE), 8) == tiers.profile_gpus(PROFILE, 8)
    assert tiers.profile_gpus((0.3, 1.0), 10) == [3, 10]
    assert tiers.profile_gpus((0.31, 1.0), 10) == [4, 10]  # 3.1 GPUs need 4


def test_committed_base_with_on_demand_above_it():
    # committed $2.00, on demand $3.00: commit to what is needed at least 1 - 2/3 of the hours. At 2 GPUs, 16 hours
    # are above (16 x 3 = 48 <= 24 x 2): the level; 2 x 24 x 2 + 3 x (8 x 2 + 8 x 6) = 96 + 192 = $288 a day
    assert tiers.tier_mix_base(PROFILE, 8, 2.0, 3.0) == 2
    assert tiers.tier_mix_cost(PROFILE, 8, 2.0, 3.0) == pytest.approx(288 * HOURS_PER_MONTH / 24)
    assert tiers.tier_mix_share("committed", PROFILE, 8, 2.0, 3.0) == pytest.approx(48 / 112)
    assert tiers.tier_mix_share("on_demand", PROFILE, 8, 2.0, 3.0) == pytest.approx(64 / 112)
    assert tiers.tier_mix_share("spot", PROFILE, 8, 2.0, 3.0) == 0


def test_committed_base_with_spot_above_it():
    # spot 50% off $3.00 = $1.50 against $1.00 committed: at most 24 x 1 / 1.5 = 16 hours above the base, so 2 GPUs
    # committed; 2 x 24 x 1 + 1.5 x (8 x 2 + 8 x 6) = 48 + 96 = $144 a day, $4,380 a month
    assert tiers.tier_mix_base(PROFILE, 8, 1.0, 3.0, 0.5) == 2
    assert tiers.tier_mix_cost(PROFILE, 8, 1.0, 3.0, 0.5) == pytest.approx(4380)
    assert tiers.tier_mix_share("committed", PROFILE, 8, 1.0, 3.0, 0.5) == pytest.approx(48 / 112)
    assert tiers.tier_mix_share("spot", PROFILE, 8, 1.0, 3.0, 0.5) == pytest.approx(64 / 112)
    assert tiers.tier_mix_share("on_demand", PROFILE, 8, 1.0, 3.0, 0.5) == 0
    mix = tiers.tier_mix(PROFILE, 8, 1.0, 3.0, 0.5)
    assert (mix.committed_gpus, mix.above) == (2, "spot") and sum(mix.shares.values()) == pytest.approx(1)


def test_the_mix_chosen_is_the_cheapest_of_every_commitment_level():
    hourly = tiers.profile_gpus(PROFILE, 8)
    for committed, od, discount in [(2.0, 3.0, 0.0), (1.0, 3.0, 0.5), (2.9, 3.0, 0.0), (1.0, 3.0, 0.8), (4, 3, 0)]:
        above = min(od, od * (1 - discount))
        costs = [cost.committed_cost(tuple(map(float, hourly)), r, committed, above, 1) for r in range(0, 9)]
        got = tiers.tier_mix_cost(PROFILE, 8, committed, od, discount) * 24 / HOURS_PER_MONTH
        assert got == pytest.approx(min(costs)), (committed, od, discount)
    # a commitment dearer than on demand commits nothing
    assert tiers.tier_mix_base(PROFILE, 8, 4.0, 3.0) == 0


def test_interruptions_gross_up_the_spot_price_by_the_work_they_lose():
    # 0.5 reclaims an hour, 30 s notice, 210 s to replace: 0.5 x 180 / 3600 = 2.5% lost
    assert tiers.spot_usd_per_hour(3.0, 0.5, 0.5, 30, 210) == pytest.approx(1.5 / 0.975)
    # a notice at least as long as the replacement loses nothing
    assert tiers.spot_usd_per_hour(3.0, 0.5, 0.5, 300, 210) == pytest.approx(1.5)
    # the mix prices the hours above the base at the grossed-up spot price, $1.5385 against $1.00 committed: at
    # most 24 / 1.5385 = 15.6 hours above the base, so 4 GPUs committed (8 hours above), no longer 2 (16 hours)
    spot = 1.5 / (1 - 0.5 * 180 / 3600)
    assert tiers.tier_mix_base(PROFILE, 8, 1.0, 3.0, 0.5, 0.5, 30, 210) == 4
    want = (4 * 24 * 1.0 + spot * 8 * 4) * HOURS_PER_MONTH / 24
    assert tiers.tier_mix_cost(PROFILE, 8, 1.0, 3.0, 0.5, 0.5, 30, 210) == pytest.approx(want)
    # spot that loses most of its hours costs more than on demand, and the mix falls back to on demand
    assert tiers.tier_mix_share("spot", PROFILE, 8, 2.0, 3.0, 0.5, 10, 0, 300) == 0


@pytest.mark.parametrize(
    ("call", "argument", "message"),
    [
        (lambda: tiers.tier_mix_cost((0.0, 0.0), 8, 2, 3), "demand_profile", "at least one share above 0"),
        (
            lambda: tiers.tier_mix_cost((-1.0, 1.0), 8, 2, 3),
            "demand_profile",
            r"demand_profile \(value 1 of 2\) must be",
        ),
        (lambda: tiers.tier_mix_cost(PROFILE, 0, 2, 3), "peak_gpus", "peak_gpus must be"),
        (lambda: tiers.tier_mix_cost(PROFILE, 8, 2, 3, 1.0), "spot_discount", "spot_discount must be"),
        (lambda: tiers.tier_mix_share("reserved", PROFILE, 8, 2, 3), "tier", "tier must be one of"),
        (lambda: tiers.spot_usd_per_hour(3, 0.5, 20, 0, 180), "interruptions_per_hour", "loses every spot hour"),
    ],
)
def test_bad_input_is_refused_in_one_line_naming_the_argument(call, argument, message):
    with pytest.raises(XlsxplanError, match=message) as err:
        call()
    assert err.value.argument == argument and "\n" not in str(err.value)
