"""How long `xlsxplan plan` takes, the whole process as a user runs it (the target: under a second).

Run from the repository root:

    python benchmarks/plan_time.py [--runs 5]

Times, in a subprocess each, the search over every accelerator the catalog prices and over every accelerator in the
catalog (each given a price), for a dense model and a mixture of experts, with both targets and a p95 prompt; then
the in-process search over every model and every accelerator. The fourth case adds every optional input at once: a P99
first-token target (a queue per option and view, with smaller batches tried), vLLM's memory rule, a speculative draft
(every option with and without it) and the owned case. Prints the median wall time with the number of
options planned.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

TRAFFIC = [
    "--requests-per-day",
    "200000",
    "--prompt-tokens",
    "2000",
    "--prompt-p95",
    "6000",
    "--output-tokens",
    "300",
    "--tokens-per-s",
    "20",
    "--ttft-s",
    "2",
]


def _gpus() -> list[str]:
    from xlsxplan.catalog import gpu_names

    return [arg for gpu in gpu_names() for arg in ("--gpu", f"{gpu}=2")]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPU threads")
    cases = [
        ("priced accelerators", "Qwen2.5-72B", []),
        ("every accelerator", "Qwen2.5-72B", _gpus()),
        ("every accelerator, 4 weight formats", "DeepSeek-V3", _gpus() + ["--weights", "bf16,fp8,int4_g128,nvfp4"]),
        (
            "every accelerator, a P99 target, vLLM's memory, a draft, owned",
            "Qwen2.5-72B",
            _gpus()
            + [
                "--ttft-percentile",
                "0.99",
                "--gpu-memory-utilization",
                "0.9",
                "--spec-draft",
                "Qwen2.5-7B",
                "--spec-acceptance",
                "0.7",
                "--spec-tokens",
                "3",
                "--own",
            ],
        ),
    ]
    for label, model, extra in cases:
        walls, options = [], 0
        for _ in range(args.runs):
            start = time.perf_counter()
            out = subprocess.run(
                [sys.executable, "-m", "xlsxplan", "plan", "--model", model, *TRAFFIC, *extra, "--json"],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            walls.append(time.perf_counter() - start)
            options = len(json.loads(out)["options"])
        print(
            f"xlsxplan plan --model {model}, {label}: {options} options, median {statistics.median(walls):.2f} s "
            f"wall (runs: {', '.join(f'{w:.2f}' for w in walls)})"
        )
    start = time.perf_counter()
    code = (
        "import time; t = time.perf_counter()\n"
        "from xlsxplan.catalog import gpu_names, model_names\n"
        "from xlsxplan.plan.search import Targets, Traffic, plan\n"
        "n = 0\n"
        "for m in model_names():\n"
        "    n += len(plan(m, Traffic(200000, 2000, 300, prompt_p95=6000), Targets(20, 2),"
        " {g: 2.0 for g in gpu_names()}).options)\n"
        "print(n, time.perf_counter() - t)\n"
    )
    n, inside = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    print(
        f"every model x every accelerator in one process: {n} options, {float(inside):.2f} s after import, "
        f"{time.perf_counter() - start:.2f} s wall"
    )
    optional_inputs()


def optional_inputs() -> None:
    """CPU time of one search over every accelerator, in process, with each optional input (the best of 5)."""
    from xlsxplan.catalog import gpu_names
    from xlsxplan.plan.search import Assumptions, Engine, Owned, Speculative, Targets, Traffic, plan

    t, gpus = Traffic(200000, 2000, 300, prompt_p95=6000), {g: 2.0 for g in gpu_names()}
    cases = [
        ("none", Targets(20, 2), Assumptions()),
        ("--ttft-percentile 0.99", Targets(20, 2, 0.99), Assumptions()),
        ("--gpu-memory-utilization 0.9", Targets(20, 2), Assumptions(engine=Engine())),
        ("--spec-draft Qwen2.5-7B", Targets(20, 2), Assumptions(speculative=Speculative(3, 0.7, (), "Qwen2.5-7B"))),
        ("--own", Targets(20, 2), Assumptions(owned=Owned())),
    ]
    for label, targets, assumptions in cases:
        times = []
        for _ in range(5):
            start = time.process_time()
            options = len(plan("Qwen2.5-72B", t, targets, gpus, assumptions).options)
            times.append(time.process_time() - start)
        print(f"in process, Qwen2.5-72B over every accelerator, {label}: {options} options, {min(times):.2f} s CPU")


if __name__ == "__main__":
    main()
