"""How long `xlsxplan calibrate` takes on this machine (the target: under a minute on two cores).

Run from the repository root:

    python benchmarks/calibrate_time.py [--runs 3]

Runs the full microbenchmark (and the --quick one) as a user would, in a subprocess, and prints the median wall
time of the runs with the figures of the median run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPU threads")
    for mode in ([], ["--quick"]):
        walls, figures = [], []
        for _ in range(args.runs):
            start = time.perf_counter()
            out = subprocess.run(
                [sys.executable, "-m", "xlsxplan", "calibrate", "--json", *mode],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            walls.append(time.perf_counter() - start)
            figures.append(json.loads(out))
        mid = sorted(range(args.runs), key=lambda i: walls[i])[args.runs // 2]
        f = figures[mid]
        print(
            f"xlsxplan calibrate {' '.join(mode)}: median {statistics.median(walls):.1f} s wall "
            f"(runs: {', '.join(f'{w:.1f}' for w in walls)}); {f['backend']}: matmul {f['matmul_tflops']:.3f} "
            f"TFLOP/s, copy {f['bandwidth_tb_s'] * 1e3:.1f} GB/s, 6N rate {f['train_6n_flops'] / 1e9:.1f} GFLOP/s "
            f"({f['train_6n_flops'] / (f['matmul_tflops'] * 1e12):.0%} of the matmul rate)"
        )


if __name__ == "__main__":
    main()
