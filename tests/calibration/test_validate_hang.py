"""``validate --data`` on a file of many one-row publications: its work counted at a sixteenth and a
quarter of the size that hung, and at 10 times it (tests/helpers/hangs.py, up_to_a_quarter)."""

from __future__ import annotations

import pytest

from tests.helpers.hangs import linear, up_to_a_quarter, validate_rows
from xlsxplan import calibration
from xlsxplan.calibration import measurements
from xlsxplan.errors import CatalogError


@pytest.mark.slow
def test_many_one_row_publications_are_validated_in_linear_work(monkeypatch):
    # 20,000 rows took 48 s: each row's range was built from a fresh list of every other row's residual. The
    # prediction and the fit are stubbed (each counted: a prediction costs about 0.5 ms, which is not what hung);
    # what is counted is validate's own bookkeeping: predictions made, rows fitted on, residuals the ranges read
    predictions, fitted, read = [0], [0], [0]
    real_fit, real_band = calibration.fit_kind, measurements.bands.band_multipliers
    sample = measurements.observations(measurements.parse_measurements(validate_rows(60)))
    one_fit: dict = {}

    def fit(kind, obs):  # the fit of 60 rows, made once a kind
        fitted[0] += len(obs)
        if kind not in one_fit:
            one_fit[kind] = real_fit(kind, [o for o in sample if o.kind == kind])
        return one_fit[kind]

    def predict(m, factors):
        predictions[0] += 1
        return 100.0, "stub"

    def band(xs):
        read[0] += len(xs)
        return real_band(xs)

    monkeypatch.setattr(calibration, "fit_kind", fit)
    monkeypatch.setattr(measurements, "predict", predict)
    monkeypatch.setattr(measurements.bands, "band_multipliers", band)
    # four folds, not 64: a row's work is a constant times the folds (test_holdout.py bounds them), and 64 folds
    # would take 16 times as long and show nothing more
    monkeypatch.setattr(measurements, "MAX_FOLDS", 4)
    work = {}
    for size, rows in up_to_a_quarter(20_000).items():
        predictions[0] = fitted[0] = read[0] = 0
        text = validate_rows(rows)
        if size == 10:  # answers, or refuses in one line
            with pytest.raises(CatalogError, match=r"^gen: over 100,000 rows; a measurements file holds at most that"):
                measurements.parse_measurements(text, "gen")
            assert predictions[0] == fitted[0] == 0
            continue
        results = measurements.validate(measurements.parse_measurements(text, "gen"))
        assert len(results) == rows and all(r.p10 is not None for r in results)
        assert predictions[0] == rows  # one prediction a row, whatever the folds
        work[size] = predictions[0] + fitted[0] + read[0]
    assert linear(work), work
