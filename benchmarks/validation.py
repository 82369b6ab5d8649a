"""Validation against the published measurements: calibrated (leave one source out) against uncalibrated assumptions.

Run from the repository root:

    python benchmarks/validation.py [--data ../shared/data/measurements.csv]

It prints, for the same rows and the same physics, the summary of `xlsxplan validate` (each row predicted from a
fit that never saw its run) and the summary when every efficiency is the uncalibrated assumption instead (decode at
100% of peak bandwidth and prefill at 50% of peak compute, "Back-of-the-Envelope Estimation for LLM Systems" sections
4-5; training MFU 0.4, xlsxplan's default), then the median ratio per kind of row, and the time `xlsxplan validate`
takes (median of 5 runs).
"""

from __future__ import annotations

import argparse
import statistics
import time

from xlsxplan import calibration
from xlsxplan.calibration import Factors, GroupFit, TrainFit, measurements
from xlsxplan.errors import XlsxplanError


def uncalibrated_factors() -> Factors:
    return Factors(
        TrainFit(calibration.SEED_FACTORS["train_mfu"], 0.0),
        GroupFit(0.5, {}, {}),  # Back-of-the-Envelope §5
        GroupFit(1.0, {}, {}),  # Back-of-the-Envelope §4: the bandwidth ceiling
    )


def uncalibrated_results(rows):
    out = []
    for m in rows:
        try:
            predicted, _ = measurements.predict(m, uncalibrated_factors())
        except (measurements.Unpredictable, XlsxplanError) as why:
            out.append(measurements.RowResult(m.line, m.name, m.metric, m.value, None, None, str(why)))
            continue
        out.append(measurements.RowResult(m.line, m.name, m.metric, m.value, predicted, predicted / m.value, ""))
    return out


_GROUPS = {"train_mfu": "training (MFU)", "prefill": "prefill / TTFT", "decode_bandwidth": "batch-1 decode"}


def group(r) -> str:
    spec = measurements.METRICS[r.metric]
    if spec.kind:
        return _GROUPS[spec.kind]
    return "offline throughput" if spec.uses else "formula rows (6ND, 20N)"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=str(calibration.measurements_path()))
    args = parser.parse_args()
    rows = measurements.read_measurements(args.data)
    calibrated = measurements.validate(rows)
    uncalibrated = uncalibrated_results(rows)
    pairs = (("calibrated, leave one source out", calibrated), ("uncalibrated assumptions", uncalibrated))
    for label, results in pairs:
        s = measurements.summarise(results)
        print(
            f"{label}: {s['predicted']}/{s['rows']} predicted, median |error| {s['median_abs_error']:.1%}, "
            f"within 2x {s['within_2x']:.0%}, outside 2x: lines {s['outside_2x']}"
        )
    print()
    print(f"{'rows':<26} {'n':>3} {'calibrated: median ratio':>25} {'uncalibrated: median ratio':>27}")
    for name in ("training (MFU)", "formula rows (6ND, 20N)", "prefill / TTFT", "batch-1 decode", "offline throughput"):
        cal = [r.ratio for r in calibrated if group(r) == name and r.ratio is not None]
        unc = [r.ratio for r in uncalibrated if group(r) == name and r.ratio is not None]
        print(f"{name:<26} {len(cal):>3} {statistics.median(cal):>25.2f} {statistics.median(unc):>27.2f}")
    times = []
    for _ in range(5):
        start = time.perf_counter()
        measurements.summarise(measurements.validate(rows))
        times.append(time.perf_counter() - start)
    print(f"\nvalidate (33 leave-one-source-out fits included): median {statistics.median(times):.2f} s of 5 runs")


if __name__ == "__main__":
    main()
