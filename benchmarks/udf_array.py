"""Array calls vs scalar calls through the UDF layer (xlsxplan.excel.udfs), per function, in one run.

For each function a sweep of N scenarios (one argument varying down a column, or two, the others one cell: the
worked examples of "Back-of-the-Envelope Estimation for LLM Systems" and of the catalog) is evaluated three ways,
each through the same wrapper Excel calls, with arguments in the form xlwings hands them over (``ndim=2``: 2-D
lists of floats):

* ``array``: one call with N x 1 columns (what one spilled formula does): the function's arithmetic runs once over
  numpy columns (``cells`` vectorised path);
* ``element``: the same call with the vectorised path switched off, so the broadcast goes element by element,
  reading and checking each distinct input cell once (the path before the arithmetic was vectorised, and the path
  of the functions that are not);
* ``scalar``: N calls with one scenario each (N formulas).

It checks that the three agree element by element, then prints the median of each over the repeats and the
ratios. Every way is run once before timing, then its repeats one after the other, so each is measured warm in its
own state (interleaved with the scalar way, each array run would start on memory the other way had just freed).
Times are this process's CPU time (``time.process_time``): on a shared machine a 1 ms call is preempted by other
work or not, by chance (a time slice is a few ms), which would decide a wall-clock ratio. A run's result is freed
after its timing stops, and only one sweep's lists are alive at a time. In Excel each classic UDF call also costs a
COM round trip (and Lite a JavaScript-Python hop) that no Python benchmark sees, which widens the gap further.

    python benchmarks/udf_array.py [--n 10000] [--repeats 9] [--only NAME ...] [--wall]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from collections.abc import Callable
from unittest import mock

import numpy as np

from xlsxplan.excel import udfs
from xlsxplan.sheet import cells


def _column(values) -> list[list[float]]:
    return [[float(v)] for v in values]


def _column_of(names: list[str], n: int) -> list[list[str]]:
    return [[names[k % len(names)]] for k in range(n)]


def sweeps(n: int) -> dict[str, Callable[[], list]]:
    """Per function, what builds its arguments: a column (list of [value] rows) for each that varies, one cell for
    the rest. Built one function at a time, so that no other sweep's lists are alive (and scanned by the garbage
    collector) while one is timed."""
    i = np.arange(n)

    def batch():
        return _column(1 + i % 256)

    def context():
        return _column(500 + (i * 37) % 32_000)

    def prompt():
        return _column(100 + (i * 53) % 16_000)

    return {
        # "Back-of-the-Envelope Estimation for LLM Systems": Qwen2.5-72B (80 layers, 8 KV heads of 128), FP8 on two
        # 80 GB H100s at 3.35 TB/s; one argument varies down the column, as in a sweep
        "KV_BYTES_PER_TOKEN": lambda: [_column(1 + i % 128), [[8.0]], [[128.0]], [[2.0]]],
        "DECODE_TOKS_TOTAL": lambda: [
            [[72.7]],
            [["fp8"]],
            [[2.0]],
            [[3.35]],
            batch(),
            [[327_680.0]],
            [[2_300.0]],
            None,
        ],
        "MAX_BATCH": lambda: [[[72.7]], [["fp8"]], [[327_680.0]], context(), [[2.0]], [[80.0]], None],
        "PREFILL_S": lambda: [[[72.7]], prompt(), [[2.0]], [[989.0]], None],
        "COST_PER_M_TOKENS": lambda: [[[2.0]], [[2.5]], _column(100 + i), [[0.3]]],
        "REPLICAS": lambda: [_column(1_000 + 7 * i), [[4_387.0]], [[1.0]]],
        "TRAIN_SECONDS": lambda: [[[7.0]], _column(1e9 * (1 + i)), [[64.0]], [[989.4]], [[0.4]]],
        "SERVE_TOKS": lambda: [
            [[8.03]],
            [["fp8"]],
            [[65_536.0]],
            prompt(),
            [[1_000.0]],
            [[1.0]],
            [[80.0]],
            [[3.35]],
            [[1978.9]],
            [[0.0]],
            [[0.54]],
            [[0.41]],
        ],
        "TAIL_SHARE": lambda: [_column(2_000 + 3 * i), [[2_000.0]], [[6_000.0]]],
        "MODEL_KV_GB": lambda: [[["Mistral-7B"]], context()],
        "BATCH_FOR_LATENCY": lambda: [
            [[72.7]],
            [[1.0]],
            [[2.0]],
            [[3.35]],
            _column(20 + i % 40),
            [[327_680.0]],
            [[2_300.0]],
        ],
        "PAGED_BATCH": lambda: [[[71.3]], [[327_680.0]], context(), [[3_500.0]]],  # a bisection, exp and log1p per step
        # two arguments varying: twice the cells to read
        "DECODE_TOKS_TOTAL, 2 columns": lambda: [
            [[72.7]],
            [["fp8"]],
            [[2.0]],
            [[3.35]],
            batch(),
            [[327_680.0]],
            context(),
            None,
        ],
        "COST_PER_M_TOKENS, 2 columns": lambda: [[[2.0]], [[2.5]], _column(100 + i), _column(0.1 + (i % 9) / 10)],
        # not vectorised (a catalog lookup per name): the element path either way
        "MODEL_SPEC": lambda: [_column_of(["Qwen2.5-72B", "Llama-2-7B", "Mistral-7B", "DeepSeek-V3"], n), [["layers"]]],
    }


def _rows(args: list, k: int) -> list:
    return [a if a is None or len(a) == 1 else [a[k]] for a in args]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--n", type=int, default=10_000, help="scenarios (default 10,000)")
    parser.add_argument("--repeats", type=int, default=9, help="timed repeats of each way (default 9)")
    parser.add_argument("--only", nargs="*", help="these functions only")
    parser.add_argument("--wall", action="store_true", help="wall-clock time (time.perf_counter) instead of CPU time")
    args = parser.parse_args()

    built = udfs.build(lite=False)
    clock = time.perf_counter if args.wall else time.process_time
    print(
        f"Array calls over {args.n:,} scenarios vs {args.n:,} scalar calls, through xlsxplan.excel.udfs; "
        f"{'wall-clock' if args.wall else 'CPU'} time, "
        f"median of {args.repeats} repeats, every way run once before timing"
    )
    print(f"Python {platform.python_version()} on {platform.machine()}, {platform.system()}, numpy {np.__version__}")
    print(
        f"  {'function':<30} {'array':>10} {'element':>10} {'scalar':>10}   {'scalar/array':>12} {'element/array':>13}"
    )
    for name, build in sweeps(args.n).items():
        if args.only and name not in args.only:
            continue
        f = built[name.split(",")[0]]
        sweep = build()

        def array(f=f, sweep=sweep):
            return f(*sweep)

        def element(f=f, sweep=sweep):
            with mock.patch.object(cells, "_vectorised", lambda *a: None):
                return f(*sweep)

        def scalar(f=f, sweep=sweep):
            return [f(*_rows(sweep, k)) for k in range(args.n)]

        ways = {"array": array, "element": element, "scalar": scalar}
        results = {way: run() for way, run in ways.items()}  # the warm-up run, checked
        flat = [row[0] for row in results["array"]]
        assert flat == [row[0] for row in results["element"]], f"{name}: array and element paths disagree"
        assert flat == results["scalar"], f"{name}: array and scalar calls disagree"
        assert all(isinstance(v, float) and v == v for v in flat), f"{name}: an error in the sweep"
        del results, flat
        times: dict[str, list[float]] = {way: [] for way in ways}
        for way, run in ways.items():  # each way's repeats together: each measured in its own warm state
            for _ in range(args.repeats):
                start = clock()
                out = run()
                times[way].append(clock() - start)
                del out  # freed outside the timing: what Excel does with it next is not the call's cost
        med = {way: statistics.median(t) for way, t in times.items()}
        print(
            f"  {name:<30} {med['array'] * 1e3:7.1f} ms {med['element'] * 1e3:7.1f} ms {med['scalar'] * 1e3:7.1f} ms"
            f"   {med['scalar'] / med['array']:11.0f}x {med['element'] / med['array']:12.1f}x"
        )


if __name__ == "__main__":
    main()
