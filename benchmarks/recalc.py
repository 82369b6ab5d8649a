"""Headless recalculation, stage by stage: load, calculate and write times and peak memory (results in
BENCHMARKS.md, and the fit of ``xlsxplan.headless.untrusted.Limits.estimate``).

Each case runs in a fresh Python process, so the times include nothing cached by an earlier case and the peak
resident memory is that case's own; the times are of the stages inside that process (``Workbook.load``,
``calculate``, ``save``), not of Python's start (``benchmarks/commands.py`` times whole commands). Cases:

* scenario sheets of 100, 1,000, 10,000 and 30,000 rows (five inputs and five results per row, the results calling
  WEIGHTS_GB, DECODE_TOKS, DECODE_TOKS_TOTAL, COST_PER_M_TOKENS and REPLICAS), with a formula per result cell
  ("per-cell") or one array formula per result column ("array");
* a workbook of 1,000 sheets, each with five inputs and five formula cells;
* the shipped templates (``workbooks/*.xlsx``, or ``--templates DIR``), load to written file, if there are any.

``load`` and ``calc`` are medians over ``--repeats`` fresh loads in the process, each calculated in full (a second
calculation of the same workbook would recalculate only what an input changed); ``load to written`` and the peak
memory are the first load's, calculation and save.

Usage::

    python benchmarks/recalc.py                 # everything, about a minute
    python benchmarks/recalc.py --rows 100 1000 --no-sheets
    python benchmarks/recalc.py --rows --no-sheets --templates workbooks   # the templates only
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def peak_mb() -> float:
    """This process's peak resident memory [MB]: VmHWM, which a process started from a larger one does not inherit
    (its ``ru_maxrss`` does: the parent's size when it forked), else ``ru_maxrss``."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _measure(path: str, repeats: int) -> dict:
    """Run in the child: time each stage of one workbook's recalculation."""

    t0 = time.perf_counter()
    from xlsxplan.headless.workbook import Workbook

    t1 = time.perf_counter()
    wb = Workbook.load(path)
    t2 = time.perf_counter()
    wb.calculate()
    t3 = time.perf_counter()
    out = Path(path).with_suffix(".out" + Path(path).suffix)
    wb.save(out)
    t4 = time.perf_counter()
    peak = peak_mb()  # one workbook's: before any reload
    errors = len(wb.errors())
    ins = wb._inspection
    loads, calcs = [t2 - t1], [t3 - t2]
    for _ in range(repeats - 1):  # fresh loads: a second calculation of one workbook recalculates only what changed
        wb = None
        start = time.perf_counter()
        wb = Workbook.load(path)
        mid = time.perf_counter()
        wb.calculate()
        loads.append(mid - start)
        calcs.append(time.perf_counter() - mid)
    return {
        "import_s": t1 - t0,
        "load_s": statistics.median(loads),
        "calc_s": statistics.median(calcs),
        "write_s": t4 - t3,
        "load_to_written_s": t4 - t1,
        "peak_rss_mb": peak,
        "cells": ins.cells,
        "formulas": ins.formulas,
        "estimate_gb": ins.estimated_bytes / 1e9,
        "errors": errors,
    }


def _sheets_book(path: Path, sheets: int) -> Path:
    import openpyxl

    wb = openpyxl.Workbook()
    wb.remove(wb.active)
    for i in range(sheets):
        ws = wb.create_sheet(f"S{i + 1}")
        ws.append((7 + i % 70, 1 + i % 2, 1 + i % 8, 3.35, 1 + i % 64))
        ws.append(
            (
                "=WEIGHTS_GB(A1,B1)",
                "=DECODE_TOKS(A1,B1,C1,D1)",
                "=DECODE_TOKS_TOTAL(A1,B1,C1,D1,E1)",
                "=COST_PER_M_TOKENS(C1,2.5,C2)",
                f"=A2+{'S1' if i else 'S2'}!A2",
            )
        )
    wb.save(path)
    return path


def _run_case(label: str, path: Path, repeats: int) -> dict:
    cmd = [sys.executable, __file__, "--child", str(path), "--repeats", str(repeats)]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"{label} failed:\n{result.stderr}")
    row = json.loads(result.stdout.strip().splitlines()[-1])
    row["case"] = label
    print(
        f"{label:<28} load {row['load_s']:8.2f} s  calc {row['calc_s']:7.2f} s  write {row['write_s']:6.2f} s  "
        f"peak {row['peak_rss_mb']:7.0f} MB  (estimate {row['estimate_gb'] * 1000:6.0f} MB)",
        flush=True,
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="*", default=[100, 1_000, 10_000, 30_000])
    parser.add_argument("--no-sheets", action="store_true", help="skip the 1,000-sheet workbook")
    parser.add_argument("--repeats", type=int, default=3, help="calculations per case (the median is reported)")
    parser.add_argument("--templates", default=str(ROOT / "workbooks"), help="folder of template workbooks to time")
    parser.add_argument("--json", help="also write the rows to this JSON file")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_measure(args.child, args.repeats)))
        return

    from tests.helpers.books import raw_scenario_rows, raw_xlsx

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for n in args.rows:
            for array in (False, True):
                label = f"{n:,} rows, {'array' if array else 'per-cell'}"
                path = folder / f"s{n}{'a' if array else 'c'}.xlsx"
                path.write_bytes(raw_xlsx({"Scenarios": raw_scenario_rows(n, array)}))
                rows.append(_run_case(label, path, args.repeats))
        if not args.no_sheets:
            path = _sheets_book(folder / "sheets.xlsx", 1_000)
            rows.append(_run_case("1,000 sheets x 5 formulas", path, args.repeats))
        for template in sorted(Path(args.templates).glob("*.xlsx")):
            copy = folder / template.name
            copy.write_bytes(template.read_bytes())
            row = _run_case(f"template {template.name}", copy, args.repeats)
            print(
                f"{'':<28} load to written {row['load_to_written_s']:.2f} s (Python start and imports: "
                f"{row['import_s']:.2f} s more)",
                flush=True,
            )
            rows.append(row)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
