"""Array call vs scalar calls of DECODE_TOKS_TOTAL through the UDF layer (xlsxplan.excel.udfs), in one run.

A sweep of N scenarios (batch and context length varying, Qwen2.5-72B in FP8 on two H100s otherwise) is evaluated
three ways, each through the same wrapper Excel calls, with arguments in the form xlwings hands them over
(``ndim=2``: 2-D lists):

* ``array``: one call with two N x 1 columns (what one spilled formula does);
* ``array, element path``: the same call with the broadcast's checked path switched off, so every element goes
  through ``cells.evaluate`` (how evaluate_broadcast worked before reading each distinct cell once);
* ``scalar``: N calls with one scenario each (N formulas).

It checks that the three agree element by element, then prints the median of each over the repeats and the
ratios. In Excel each classic UDF call also costs a COM round trip (and Lite a JavaScript-Python hop) that no
Python benchmark sees, which widens the gap further.

    python benchmarks/udf_array.py [--n 10000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
from unittest import mock

from xlsxplan import cells
from xlsxplan.excel import udfs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--n", type=int, default=10_000, help="scenarios (default 10,000)")
    parser.add_argument("--repeats", type=int, default=7, help="timed repeats of each way (default 7)")
    args = parser.parse_args()

    f = udfs.build(lite=False)["DECODE_TOKS_TOTAL"]
    batch = [[float(1 + i % 256)] for i in range(args.n)]
    context = [[float(500 + (i * 37) % 32_000)] for i in range(args.n)]
    fixed = ([[72.7]], [["fp8"]], [[2.0]], [[3.35]])  # params_b, bytes_per_param, n_gpus, bandwidth_tb_s (H100)
    kv = [[327_680.0]]  # KV bytes per token of Qwen2.5-72B in BF16 (Back-of-the-Envelope)

    def array():
        return f(*fixed, batch, kv, context, None)

    def array_elementwise():
        with mock.patch.object(cells, "_broadcast_checked", lambda *a: None):
            return f(*fixed, batch, kv, context, None)

    def scalars():
        return [[f(*fixed, [b], kv, [c], None)] for (b,), (c,) in zip(batch, context)]

    ways = {"array": array, "array, element path": array_elementwise, "scalar": scalars}
    results = {name: way() for name, way in ways.items()}
    assert results["array"] == results["array, element path"] == results["scalar"], "the three ways disagree"
    assert all(isinstance(v, float) for (v,) in results["array"]), "an error in the sweep"

    times: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(args.repeats):
        for name, way in ways.items():
            start = time.perf_counter()
            way()
            times[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(t) for name, t in times.items()}

    print(f"DECODE_TOKS_TOTAL over {args.n:,} scenarios through xlsxplan.excel.udfs, median of {args.repeats} repeats")
    print(f"Python {platform.python_version()} on {platform.machine()}, {platform.system()}")
    for name, seconds in medians.items():
        print(f"  {name:<22} {seconds * 1000:9.1f} ms   {seconds / args.n * 1e6:6.2f} us per scenario")
    print(f"  scalar / array                 {medians['scalar'] / medians['array']:6.1f}x")
    print(f"  array element path / array     {medians['array, element path'] / medians['array']:6.1f}x")


if __name__ == "__main__":
    main()
