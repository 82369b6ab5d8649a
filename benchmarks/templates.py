"""Template recalculation, in-process warm loops: how long the shipped templates take from load to written file.

Each template is built once with openpyxl (not timed), then recalculated ``--repeats`` times in this process the way
``xlsxplan build`` does it: ``Workbook.load`` (the checks, reading the sheets, the engine parsing every formula),
``calculate`` and ``save`` (every formula kept, its value cached). The first, cold run also pays for the engine's
first workbook and the registry's callbacks; it is reported apart. These are warm loops in one process:
``benchmarks/commands.py`` times ``xlsxplan recalc`` as a user runs it, Python's start and imports included.

Usage::

    python benchmarks/templates.py               # 7 warm runs per template
    python benchmarks/templates.py --repeats 15
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _cells(path: Path) -> tuple[int, int]:
    """Formula cells and value cells (text, numbers, dates)."""
    import openpyxl

    book = openpyxl.load_workbook(path)
    cells = [c for ws in book.worksheets for row in ws.iter_rows() for c in row if c.value is not None]
    formulas = sum(1 for c in cells if c.data_type == "f")
    return formulas, len(cells) - formulas


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="warm runs per template (default 7)")
    args = parser.parse_args()

    from xlsxplan.headless import Workbook as api
    from xlsxplan.templates.build import TEMPLATES

    print(
        f"{os.cpu_count()} CPUs; Python {sys.version.split()[0]}; {args.repeats} warm runs per template "
        "(the Workbook API pauses the garbage collector while it loads and calculates)"
    )
    print(
        f"{'template':<20} {'formulas':>8} {'values':>7} {'cold s':>7} {'load s':>7} {'calc s':>7} {'save s':>7} "
        f"{'total s':>8} {'min s':>6} {'max s':>6} {'CPU s':>6}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for name, builder in TEMPLATES.items():
            raw = Path(tmp) / f"raw_{name}"
            out = Path(tmp) / name
            builder().wb.save(raw)
            runs = []
            for _ in range(args.repeats + 1):
                wall0, cpu0 = time.perf_counter(), time.process_time()
                wb = api.load(raw)
                wall1 = time.perf_counter()
                wb.calculate()
                wall2 = time.perf_counter()
                wb.save(out)
                wall3, cpu3 = time.perf_counter(), time.process_time()
                runs.append((wall3 - wall0, wall1 - wall0, wall2 - wall1, wall3 - wall2, cpu3 - cpu0))
            cold, warm = runs[0], runs[1:]

            def med(i: int, rows: list = warm) -> float:
                return statistics.median(r[i] for r in rows)

            totals = [r[0] for r in warm]
            formulas, values = _cells(raw)
            print(
                f"{name:<20} {formulas:>8} {values:>7} {cold[0]:>7.2f} {med(1):>7.2f} {med(2):>7.2f} "
                f"{med(3):>7.2f} {med(0):>8.2f} {min(totals):>6.2f} {max(totals):>6.2f} {med(4):>6.2f}"
            )


if __name__ == "__main__":
    main()
