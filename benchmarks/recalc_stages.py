"""Where `xlsxplan recalc`'s CPU goes, stage by stage, beside formualizer alone (results in BENCHMARKS.md).

Builds the scenario sheets of :mod:`benchmarks.commands` (N rows of ``=DECODE_TOKS_TOTAL(A2,...)``), then, each in
a fresh process, measures ``time.process_time`` (CPU: steadier than wall time on a loaded machine) of:

* ``xlsxplan``: imports, the untrusted-file scan (``open_package``), reading the formula cells and rewriting them
  for the engine (the rest of ``Workbook.load``), calculating, reading the errors, and writing the output;
* ``engine``: formualizer alone on the same rows with the same arithmetic written natively (the registry's
  function is Python, which the engine alone cannot call): load, evaluate every cell, write the cached values.

Usage::

    python benchmarks/recalc_stages.py --rows 10000 100000 --repeats 3
    python benchmarks/recalc_stages.py --python /work/main/.venv/bin/python     # another tree's xlsxplan: before
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

sys.path.insert(0, str(Path(__file__).resolve().parent))


def stages_xlsxplan(book: str, out: str) -> dict[str, float]:
    """CPU seconds of each stage of one recalculation, as ``xlsxplan recalc`` runs them."""
    t0 = time.process_time()
    from xlsxplan.headless import untrusted
    from xlsxplan.headless.workbook import Workbook

    t1 = time.process_time()
    inspection = untrusted.open_package(book)
    t2 = time.process_time()
    wb = Workbook._from_inspection(inspection, Path(book), None, untrusted.Limits())
    t3 = time.process_time()
    wb.calculate()
    t4 = time.process_time()
    wb.errors()
    t5 = time.process_time()
    wb.save(out)
    t6 = time.process_time()
    return {
        "imports": t1 - t0,
        "scan": t2 - t1,
        "read+rewrite": t3 - t2,
        "calculate": t4 - t3,
        "errors": t5 - t4,
        "write": t6 - t5,
    }


def stages_engine(book: str, out: str) -> dict[str, float]:
    """CPU seconds of formualizer alone: import, then load, evaluate every cell and write the values cached
    (``formualizer.recalculate_xlsx_file``, one call)."""
    t0 = time.process_time()
    import formualizer

    t1 = time.process_time()
    formualizer.recalculate_xlsx_file(book, out)
    t2 = time.process_time()
    return {"imports": t1 - t0, "load+calculate+write": t2 - t1}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--python", default=sys.executable, help="the interpreter whose xlsxplan is measured")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, book, *rest = args.child
        result = stages_xlsxplan(book, rest[0]) if kind == "xlsxplan" else stages_engine(book, rest[0])
        print(json.dumps(result))
        return
    from commands import make

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for n in args.rows:
            books = {
                "xlsxplan": make(folder / f"rows{n}.xlsx", n, native=False),
                "engine": make(folder / f"native{n}.xlsx", n, native=True),
            }
            for kind, book in books.items():
                runs = []
                for _ in range(args.repeats):
                    cmd = [
                        args.python if kind == "xlsxplan" else sys.executable,
                        __file__,
                        "--child",
                        kind,
                        str(book),
                        str(folder / "out.xlsx"),
                    ]
                    runs.append(json.loads(subprocess.run(cmd, check=True, capture_output=True).stdout))
                med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
                total = sum(med.values())
                parts = ", ".join(f"{k} {v:.2f}" for k, v in med.items())
                print(f"{n:>7,} rows {kind:<9} CPU {total:5.2f} s: {parts}", flush=True)


if __name__ == "__main__":
    main()
