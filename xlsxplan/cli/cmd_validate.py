"""``xlsxplan validate [--data FILE.csv] [--json]``: predict published measurements and show the error."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from .common import EXIT_FORMULA_ERROR, EXIT_OK, human_number

ORDER = 60

# the bar the calibration is held to: at least 90% of rows predicted, median absolute error under 20%, every row
# within 2x
CHECK_COVERAGE, CHECK_MEDIAN_ERROR = 0.9, 0.2


def behind_factors() -> tuple[list, str]:
    """The measurements the factors in use were fitted on, and in words which: the shipped measurements for the
    shipped fit, the user's data file (its path is recorded) for a refit by ``calibrate --fit --data``."""
    from .. import calibration
    from ..calibration import measurements
    from ..errors import CatalogError

    cal = calibration.active()
    recorded = cal.data.get("path")
    if cal.origin == "shipped" or not recorded:
        path = calibration.measurements_path()
        label = "the shipped measurements" if cal.origin == "shipped" else f"the shipped measurements ({cal.path})"
        return measurements.read_measurements(path), label
    path = Path(recorded)
    if not path.is_file():
        raise CatalogError(
            f"{cal.path} was fitted on {path}, which is no longer there: run `xlsxplan calibrate "
            "--fit --data FILE` again, or set XLSXPLAN_CALIBRATION=shipped"
        )
    if calibration.sha256(path) != cal.data.get("sha256"):
        raise CatalogError(
            f"{cal.path} was fitted on {path}, which has changed since: run `xlsxplan calibrate --fit "
            f"--data {path}` again"
        )
    return measurements.read_measurements(path), f"the measurements behind your factors ({path})"


def _pool(rows: list, data_only: bool) -> tuple[list, str]:
    """The rows a fit may use: the file's, plus those behind the factors in use unless ``data_only``; no row twice."""
    from ..calibration import measurements

    if data_only:
        return list(rows), "the file's rows"
    behind, label = behind_factors()
    seen = {(measurements.run_key(m), m.metric, m.value) for m in rows}
    pool = list(rows) + [m for m in behind if (measurements.run_key(m), m.metric, m.value) not in seen]
    return pool, f"the file's rows and {label}"


def _cell(x: float | None) -> str:
    if x is None:
        return "-"
    return human_number(x) if abs(x) >= 1e-3 else f"{x:.3g}"


def _table(results: list, summary: dict[str, Any]) -> str:
    lines = [
        f"{'line':>4}  {'name':<30} {'metric':<30} {'measured':>14} {'predicted':>14} {'P10-P90':>23} "
        f"{'ratio':>6}  note"
    ]
    for r in results:
        ratio = f"{r.ratio:.2f}" if r.ratio is not None else "-"
        band = "-" if r.p10 is None else f"{_cell(r.p10)}-{_cell(r.p90)}" + ("" if r.inside is not False else "*")
        flag = "" if r.ratio is None or 0.5 <= r.ratio <= 2 else "  OUTSIDE 2x"
        note = r.basis if r.ratio is not None else f"not predicted: {r.reason}"
        if r.ratio is not None and r.reason:
            note += f" [{r.reason}]"
        name = r.name if len(r.name) <= 30 else r.name[:29] + "~"
        lines.append(
            f"{r.line:>4}  {name:<30} {r.metric:<30} {_cell(r.measured):>14} {_cell(r.predicted):>14} "
            f"{band:>23} {ratio:>6}  {note}{flag}"
        )
    lines.append("")
    groups = summary.get("groups") or {}
    if len(groups) > 1:
        width = max(42, *(len(name) for name in groups))  # the longest group's name sets the column
        lines.append(f"{'group':<{width}} {'rows':>5} {'predicted':>9} {'median error':>12} {'within 2x':>9}")
        for name, g in groups.items():
            err = "-" if g["median_abs_error"] is None else f"{100 * g['median_abs_error']:.1f}%"
            within = "-" if g["within_2x"] is None else f"{100 * g['within_2x']:.1f}%"
            lines.append(f"{name:<{width}} {g['rows']:>5} {g['predicted']:>9} {err:>12} {within:>9}")
        lines.append("")
    lines.append(_summary_line(summary))
    return "\n".join(lines)


def _summary_line(s: dict[str, Any]) -> str:
    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{100 * x:.1f}%"

    text = (
        f"{s['rows']} rows, {s['predicted']} predicted (coverage {pct(s['coverage'])}); "
        f"median absolute error {pct(s['median_abs_error'])}, within 2x {pct(s['within_2x'])}; "
        f"inside their own P10-P90 range {pct(s.get('band_coverage'))} of {s.get('rows_with_band', 0)} "
        f"({s['fit']})"
    )
    if s.get("worst_ratio"):
        w = s["worst_ratio"]
        text += f"; worst: line {w['line']} {w['name']} {w['metric']} at {w['ratio']:.2f}x"
    return text


def _passes(s: dict[str, Any]) -> bool:
    return (
        s["coverage"] >= CHECK_COVERAGE
        and s["median_abs_error"] is not None
        and s["median_abs_error"] < CHECK_MEDIAN_ERROR
        and not s["outside_2x"]
    )


def run(args: argparse.Namespace) -> int:
    import os

    from .. import calibration

    if not args.calibration:
        return _run(args)
    before = os.environ.get(calibration.FACTORS_ENV)
    os.environ[calibration.FACTORS_ENV] = args.calibration  # for this command only
    try:
        return _run(args)
    finally:
        if before is None:
            os.environ.pop(calibration.FACTORS_ENV, None)
        else:
            os.environ[calibration.FACTORS_ENV] = before


def _train_table(section: dict[str, Any], unit: str) -> str:
    lines = [f"{'line':>4}  {'name':<44} {'metric':<30} {'measured':>10} {'predicted':>10} {'error':>7}  note"]
    for r in section["rows"]:
        err = "-" if r["error"] is None else f"{100 * r['error']:+.0f}%"
        note = r["basis"] if r["reason"] == "" else f"not predicted: {r['reason']}"
        if r["assumptions"]:
            note += " [" + "; ".join(r["assumptions"]) + "]"
        name = r["name"] if len(r["name"]) <= 44 else r["name"][:43] + "~"
        lines.append(
            f"{r['line']:>4}  {name:<44} {r['metric']:<30} {_cell(r['measured']):>10} {_cell(r['predicted']):>10} "
            f"{err:>7}  {note}"
        )
    s = section["summary"]
    lines.append("")
    lines.append(f"{'publication':<62} {'rows':>5} {'predicted':>9} {'median error':>12} {'within 2x':>9}")
    for name, g in s["publications"].items():
        err = "-" if g["median_abs_error"] is None else f"{100 * g['median_abs_error']:.1f}%"
        within = "-" if g["within_2x"] is None else f"{100 * g['within_2x']:.1f}%"
        lines.append(f"{name[:62]:<62} {g['rows']:>5} {g['predicted']:>9} {err:>12} {within:>9}")
    med = "n/a" if s["median_abs_error"] is None else f"{100 * s['median_abs_error']:.1f}%"
    within = "n/a" if s["within_2x"] is None else f"{100 * s['within_2x']:.1f}%"
    text = (
        f"{unit}: {s['rows']} rows, {s['predicted']} predicted; median absolute error {med}, within 2x {within}"
        f" ({section['fit']})"
    )
    if "within_target" in s:
        text += f"; {s['within_target']} within {100 * s['target']:.0f}%"
    else:
        text += f"; target median <= {100 * s['target']:.0f}%: " + ("met" if s["meets_target"] else "not met")
    lines.append(text)
    return "\n".join(lines)


def _run_train(args: argparse.Namespace) -> int:
    from ..plan.train_fit import validate_training

    out = validate_training(args.train_data, leave_out=not args.in_sample)
    if args.json:
        json.dump(out, sys.stdout, indent=2)
        print()
    else:
        print("Training step time (as tokens/s/GPU), each publication predicted from the others:")
        print(_train_table(out["step_time"], "step time"))
        print()
        print("Peak memory per GPU (GB):")
        print(_train_table(out["memory"], "peak memory"))
        print()
        print("Published interruption rates (count / (days x 24 x GPUs)):")
        for g in out["goodput_rates"]:
            mark = "  <- the plan's failures_per_gpu_hour" if g["plan_default"] else ""
            print(
                f"{g['line']:>4}  {g['name'][:56]:<56} {g['per_gpu_hour']:.3g} per GPU-hour, one every "
                f"{g['hours_between_on_1000_gpus']:.3g} h on 1,000 GPUs{mark}"
            )
    return EXIT_OK


def _run(args: argparse.Namespace) -> int:
    from .. import calibration

    if args.train:
        return _run_train(args)
    from ..calibration import measurements

    path = Path(args.data) if args.data else calibration.measurements_path()
    rows = measurements.read_measurements(path)
    leave_out = not args.in_sample
    if args.factors_as_is:
        cal = calibration.active()
        results = measurements.validate(rows, factors_as_is=cal.factors)
        summary = measurements.summarise(results)
        summary["fit"] = f"the {cal.describe()}, as they are: nothing refitted"
    else:
        pool_rows, pool = _pool(rows, args.data_only)
        results = measurements.validate(rows, pool_rows, leave_out=leave_out)
        summary = measurements.summarise(results)
        summary["fit"] = f"fitted on {pool}, " + ("leaving out each row's publication" if leave_out else "in sample")
    summary["factors"] = calibration.active().describe()
    summary["data"] = str(path)
    if args.json:

        def clean(x: Any) -> Any:
            return None if isinstance(x, float) and not math.isfinite(x) else x

        out = {"rows": [{k: clean(v) for k, v in r.as_json().items()} for r in results], "summary": summary}
        json.dump(out, sys.stdout, indent=2)
        print()
    else:
        print(_table(results, summary))
    unread = [m for m in rows if m.problem]  # a cell the schema cannot read: the row is shown, never dropped
    if unread or not summary["predicted"]:  # bad input: the table says each row, the exit status says so too
        if unread:
            what = f"{len(unread)} row{'s' if len(unread) != 1 else ''} of {path} could not be read"
            line, reason = unread[0].line, unread[0].problem
        else:
            what = f"no row of {path} could be predicted"
            line, reason = (results[0].line, results[0].reason) if results else (1, "the file has no rows")
        print(f"xlsxplan: error: {what} (line {line}: {reason})", file=sys.stderr)
        return EXIT_FORMULA_ERROR
    if args.check and not _passes(summary):
        print(
            f"check failed: needs coverage >= {CHECK_COVERAGE:.0%}, median absolute error < "
            f"{CHECK_MEDIAN_ERROR:.0%} and every row within 2x",
            file=sys.stderr,
        )
        return EXIT_FORMULA_ERROR
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "validate",
        help="predict published (or your own) measurements and show each row's error",
        description="Read measurements in the schema of the data README (kind, name, model, params_b, "
        "active_params_b, tokens, gpu, n_gpus, precision, input_len, output_len, concurrency, metric, value, unit, "
        "source), predict every row it can from the catalog and the calibrated efficiencies, and print measured, "
        "predicted, its P10-P90 range and their ratio per row, then coverage, median absolute error, the share within "
        "2x and the share inside its own range. Each row is predicted from a fit that leaves out every row of the same "
        "publication (the optional publication column, else the arXiv id, GitHub document or source text), and its "
        "range comes from the other publications' residuals, so the error shown is what a new source would see. "
        "The fit uses the file's rows and the measurements behind the factors in use: the shipped ones, or yours after "
        "`xlsxplan calibrate --fit --data FILE`.",
    )
    p.add_argument("--data", metavar="FILE.csv", help="measurements to validate (default: the shipped copy)")
    p.add_argument("--json", action="store_true", help='print {"rows": [...], "summary": {...}} as JSON')
    p.add_argument(
        "--data-only",
        action="store_true",
        help="fit only on the file's rows, not also on the measurements behind the factors in use",
    )
    p.add_argument("--in-sample", action="store_true", help="fit on every row, the validated one included")
    p.add_argument(
        "--train",
        action="store_true",
        help="validate the training plan instead: its step time and peak memory per GPU against published runs with "
        "their layouts (the shipped training_runs.csv, or --train-data), an MFU scale per accelerator and precision "
        "fitted leaving each row's publication out",
    )
    p.add_argument("--train-data", metavar="FILE.csv", help="training runs to validate with --train (default: shipped)")
    p.add_argument(
        "--factors-as-is",
        action="store_true",
        help="predict with the factors in use (shipped, or yours after `calibrate --fit`) without refitting: how "
        "well do they predict these measurements?",
    )
    p.add_argument(
        "--calibration",
        metavar="CHOICE",
        help="whose fit: auto (default: yours after `calibrate --fit`, "
        "else the shipped one), shipped, user, or a factors file; as XLSXPLAN_CALIBRATION",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="exit 1 unless coverage >= 90%%, median absolute error < 20%% and every row is within 2x",
    )
    p.set_defaults(handler=run)
