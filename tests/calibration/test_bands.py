"""P10-P90 ranges with every publication weighted alike (xlsxplan.calibration.bands.by_source): a new figure is asked
of a case no publication behind the fit measured, so each publication's spread counts once, whatever its rows."""

from __future__ import annotations

import math
import random

import pytest

from xlsxplan.calibration import bands


def test_a_large_publication_counts_once_beside_a_small_one():
    # 980 rows of one source near 0.3 and 2 rows of another near -1.2: pooled row by row the band is the large
    # source's; weighted alike, the small source holds half the mixture and the band reaches it
    rng = random.Random(1)
    big = [("big", 0.3 + rng.gauss(0, 0.05)) for _ in range(980)]
    small = [("small", -1.2), ("small", -1.1)]
    pooled = [x for _, x in big + small]
    alike = bands.by_source(big + small)
    assert len(alike) == 2 * bands.SOURCE_POINTS
    assert bands.conformal_quantile(pooled, 0.1) > 0.2  # the small source is invisible
    assert bands.conformal_quantile(alike, 0.1) < -1.0 and bands.conformal_quantile(alike, 0.9) > 0.3


def test_each_source_is_summarised_by_its_own_quantiles():
    # one source of residuals 0..99: its 20 points are the quantiles at (i + 0.5) / 20, interpolated; a source of one
    # residual stands for all its points
    points = bands.by_source([("a", float(x)) for x in range(100)] + [("b", 7.0)], points=20)
    assert points[:20] == pytest.approx([(i + 0.5) / 20 * 99 for i in range(20)])
    assert points[20:] == [7.0] * 20


def test_the_order_of_the_rows_does_not_move_the_band():
    rng = random.Random(2)
    pairs = [(f"s{rng.randrange(6)}", rng.gauss(0, 1)) for _ in range(300)]
    shuffled = pairs[:]
    rng.shuffle(shuffled)
    assert bands.band_multipliers(bands.by_source(pairs)) == bands.band_multipliers(bands.by_source(shuffled))


def test_sources_of_equal_spread_give_the_pooled_band():
    # five sources drawn alike: weighting them alike changes nothing but the grain of the summary
    rng = random.Random(3)
    pairs = [(s, rng.gauss(0, 0.4)) for s in range(5) for _ in range(400)]
    alike = bands.band_multipliers(bands.by_source(pairs))
    pooled = bands.band_multipliers([x for _, x in pairs])
    for a, b in zip(alike, pooled):
        assert math.log(a) == pytest.approx(math.log(b), abs=0.05)
