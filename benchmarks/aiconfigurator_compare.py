"""xlsxplan beside NVIDIA's AIConfigurator on the calibration set's serving rows that both can predict.

Run from the repository root, with AIConfigurator installed in its own virtual environment (it runs offline from its
bundled kernel database):

    python3.11 -m venv /work/notes/aic-venv && /work/notes/aic-venv/bin/pip install aiconfigurator
    .venv/bin/python benchmarks/aiconfigurator_compare.py --aic /work/notes/aic-venv/bin/aiconfigurator

For every throughput row of ``xlsxplan/calibration/data/measurements.csv`` (offline ``max`` rows of TensorRT-LLM's
perf-overview), AIConfigurator's ``cli estimate`` (aggregated serving, TensorRT-LLM backend, the row's tensor
parallelism and quantization) is run over its own scheduler's two knobs, the batch (64, 256, 1,024, 2,048, 4,096)
and the context-token budget per step (``--ctx-tokens``: its default, one prompt a step, and 2,048, 8,192 and
16,384), and its answer is the highest throughput whose memory fits the GPU (95% of it, the
``kv_cache_free_gpu_mem_fraction`` perf-overview uses): AIConfigurator's best configuration under the row's
conditions, as an engine tuned for an offline run would be. (Until December 2026 only the batch was searched, at
the default budget of one prompt a step, which caps the throughput of short-prompt rows at large batch: the budget,
not the model, set AIConfigurator's answer there.)
xlsxplan's answer is ``xlsxplan validate``'s: the row predicted from a fit that never saw its run, with its P10-P90
range. A row AIConfigurator has no model config or system for is listed with the reason; xlsxplan still predicts it.

Prints a Markdown table and the two median absolute errors over the rows both predict. AIConfigurator's answers are
kept in ``--cache FILE`` (default: benchmarks/aiconfigurator_cache.json, committed), keyed by what the estimate was
asked (model, system, tensor parallelism, quantization, ISL/OSL, batch), not by the row's line, so adding rows to the
calibration set reuses every answer; the file records the command and AIConfigurator version that made it. Without
``--aic`` (or with ``--cache-only``) nothing is estimated and the cached answers are compared as they are: xlsxplan's
side is recomputed on every run, so the comparison is cheap to repeat after a refit.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import statistics
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from xlsxplan import calibration
from xlsxplan.calibration import measurements
from xlsxplan.catalog import load_catalog

BATCHES = (64, 256, 1024, 2048, 4096)
CTX_TOKENS = (0, 2048, 8192, 16384)
"""Context-token budgets per step tried (``--ctx-tokens``); 0: AIConfigurator's default, the prompt length."""
CACHE = Path(__file__).with_name("aiconfigurator_cache.json")
MEMORY_FRACTION = 0.95

SYSTEMS = {
    "H100-SXM": "h100_sxm",
    "H200": "h200_sxm",
    "B200": "b200_sxm",
    "GB200": "gb200",
    "A100-80GB": "a100_sxm",
    "L40S": "l40s",
}
MODELS = {  # xlsxplan preset -> AIConfigurator's bundled config (same architecture)
    "Llama-3.1-8B": "meta-llama/Meta-Llama-3.1-8B",
    "Llama-3-8B": "meta-llama/Meta-Llama-3.1-8B",
    "Llama-3-70B": "meta-llama/Meta-Llama-3.1-70B",
    "Qwen3-235B-A22B": "Qwen/Qwen3-235B-A22B",
    "Qwen3-30B-A3B": "Qwen/Qwen3-30B-A3B",
    "Llama-4-Maverick": "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
}
QUANT = {  # the row's weights -> AIConfigurator's quant modes (ModelOpt checkpoints: FP8 KV cache)
    "fp8": ["--gemm-quant-mode", "fp8", "--moe-quant-mode", "fp8", "--kvcache-quant-mode", "fp8"],
    "nvfp4": ["--gemm-quant-mode", "nvfp4", "--moe-quant-mode", "nvfp4", "--kvcache-quant-mode", "fp8"],
    "fp16": ["--gemm-quant-mode", "bfloat16", "--moe-quant-mode", "bfloat16", "--kvcache-quant-mode", "bfloat16"],
    "bf16": ["--gemm-quant-mode", "bfloat16", "--moe-quant-mode", "bfloat16", "--kvcache-quant-mode", "bfloat16"],
}


def why_not(m: measurements.Measurement) -> str:
    """Why AIConfigurator cannot predict a row; empty when it can."""
    if not m.metric.startswith("output_tokens_per_sec"):
        return "not a throughput row"
    if m.gpu not in SYSTEMS:
        return f"no AIConfigurator system for {m.gpu}"
    if measurements.shape_of(m).preset not in MODELS:
        return f"no AIConfigurator model config for {m.model or m.params_b}"
    if m.precision not in QUANT:
        return f"no AIConfigurator quant mode for {m.precision}"
    if m.concurrency not in ("max", None):
        return "a fixed concurrency (compared only at max)"
    return ""


def estimate(aic: str, m: measurements.Measurement, batch: int, ctx: int = 0) -> tuple[float, float] | None:
    """AIConfigurator's (tokens/s, GPU memory in GB) at ``batch`` and a context-token budget of ``ctx`` per step (0:
    its default); None when it finds no answer."""
    preset = measurements.shape_of(m).preset
    moe = measurements.shape_of(m).moe
    n = m.n_gpus or 1
    cmd = [
        aic,
        "cli",
        "estimate",
        "--model-path",
        MODELS[preset],
        "--system",
        SYSTEMS[m.gpu],
        "--backend",
        "trtllm",
        "--isl",
        str(int(m.input_len or 0)),
        "--osl",
        str(int(m.output_len or 0)),
        "--batch-size",
        str(batch),
        "--tp-size",
        str(n),
        *QUANT[m.precision],
    ]
    if moe:
        cmd += ["--moe-tp-size", "1", "--moe-ep-size", str(n)]
    if ctx:
        cmd += ["--ctx-tokens", str(ctx)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd="/tmp").stdout
    except subprocess.TimeoutExpired:
        return None
    tps = re.search(r"^\s*tokens/s:\s*([\d,.]+)", out, re.M)
    mem = re.search(r"^\s*Memory \(GPU\):\s*([\d,.]+)\s*GB", out, re.M)
    if not tps or not mem:
        return None
    return float(tps.group(1).replace(",", "")), float(mem.group(1).replace(",", ""))


def cache_key(m: measurements.Measurement, batch: int, ctx: int = 0) -> str:
    """What an estimate was asked, as the cache keys it: the same question for a row on another line is one answer
    (the default budget keeps the key it had before budgets were searched)."""
    preset = measurements.shape_of(m).preset
    return (
        f"{MODELS[preset]}|{SYSTEMS[m.gpu]}|tp{m.n_gpus or 1}|{m.precision}|{int(m.input_len or 0)}/"
        f"{int(m.output_len or 0)}|batch {batch}" + (f"|ctx {ctx}" if ctx else "")
    )


def aiconfigurator_version(aic: str) -> str:
    """The installed AIConfigurator's version, from the pip metadata beside its executable; empty if unknown."""
    pip = Path(aic).with_name("pip")
    try:
        out = subprocess.run([str(pip), "show", "aiconfigurator"], capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    found = re.search(r"^Version:\s*(\S+)", out, re.M)
    return found.group(1) if found else ""


def aic_best(
    m: measurements.Measurement, cache: dict, budgets: tuple[int, ...] = CTX_TOKENS
) -> tuple[float | None, str | None]:
    """The highest throughput whose memory fits, over BATCHES and ``budgets``, and where it was found."""
    gpu = load_catalog().accelerators.get(m.gpu)
    best: tuple[float | None, str | None] = (None, None)
    for batch in BATCHES:
        for ctx in budgets:
            got = cache.get(cache_key(m, batch, ctx))
            if got is None:
                continue
            tps, memory = got
            if memory <= MEMORY_FRACTION * float(gpu.memory_gb) and (best[0] is None or tps > best[0]):
                best = (tps, f"batch {batch}, ctx {ctx or 'ISL'}")
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--aic", default="", help="AIConfigurator's executable; empty: use the cached answers only")
    parser.add_argument("--cache", default=str(CACHE))
    parser.add_argument("--cache-only", action="store_true", help="estimate nothing, compare the cached answers")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--all-rows", action="store_true", help="list every serving row, not only those both predict")
    args = parser.parse_args()
    cache_path = Path(args.cache)
    stored = json.loads(cache_path.read_text()) if cache_path.is_file() else {}
    cache: dict = stored.get("answers", {})
    about = {k: v for k, v in stored.items() if k != "answers"}

    rows = measurements.read_measurements(calibration.measurements_path())
    ours = {r.line: r for r in measurements.validate(rows)}
    serving = [m for m in rows if m.metric.startswith("output_tokens_per_sec")]
    able = [m for m in serving if not why_not(m)]
    todo = [(m, b, c) for m in able for b in BATCHES for c in CTX_TOKENS if cache_key(m, b, c) not in cache]
    if todo and args.aic and not args.cache_only:
        lock = threading.Lock()
        about = {
            "about": "AIConfigurator's answers for benchmarks/aiconfigurator_compare.py: [tokens/s, GPU memory GB] per "
            "question, null where it gave none. Generated; do not edit by hand.",
            "command": "benchmarks/aiconfigurator_compare.py " + shlex.join(sys.argv[1:]),
            "aiconfigurator": aiconfigurator_version(args.aic) or about.get("aiconfigurator", ""),
        }

        def one(task: tuple[measurements.Measurement, int, int]) -> None:
            m, batch, ctx = task
            got = estimate(args.aic, m, batch, ctx)
            with lock:  # kept after every answer: a stopped run loses nothing
                cache[cache_key(m, batch, ctx)] = got
                cache_path.write_text(json.dumps({**about, "answers": dict(sorted(cache.items()))}, indent=1) + "\n")

        with ThreadPoolExecutor(args.jobs) as pool:
            list(pool.map(one, todo))
    elif todo:
        print(f"{len(todo)} estimate(s) not in {cache_path}: those rows show no AIConfigurator answer (pass --aic)\n")
    answers = {m.line: aic_best(m, cache) for m in able}
    capped = {m.line: aic_best(m, cache, (0,)) for m in able}  # the earlier comparison: the default budget only

    print(
        "| line | row | kind | GPU, TP, weights | ISL/OSL | measured | AIConfigurator, its best (where) | ratio "
        "| xlsxplan (P10-P90) | ratio |"
    )
    print("| ---: | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
    both_aic, both_ours, only_ours, both_capped = [], [], [], []
    neither = unasked = 0
    by_kind: dict[str, tuple[list[float], list[float]]] = {"dense": ([], []), "MoE": ([], [])}
    for m in serving:
        r = ours[m.line]
        if r.predicted is None or r.ratio is None:  # xlsxplan cannot predict it: counted, listed with --all-rows
            neither += 1
            if args.all_rows:
                print(f"| {m.line} | {m.name} | | {m.gpu} TP{m.n_gpus} {m.precision} | | {m.value:,.0f} | | | - | - |")
            continue
        x = f"{r.predicted:,.0f} ({r.p10:,.0f}-{r.p90:,.0f})" if r.p10 else f"{r.predicted:,.0f}"
        reason = why_not(m)
        tps, where = answers.get(m.line, (None, None))
        if tps is not None and m.metric.endswith("_per_gpu"):  # AIConfigurator answers for the whole instance
            tps /= m.n_gpus or 1
        kind = "MoE" if measurements.shape_of(m).moe else "dense"
        if reason or tps is None:
            only_ours.append(abs(r.ratio - 1))
            unasked += not reason and any(cache_key(m, b, c) not in cache for b in BATCHES for c in CTX_TOKENS)
            a, ar = f"- ({reason or 'no answer that fits'})", "-"
        else:
            both_aic.append(abs(tps / m.value - 1))
            both_ours.append(abs(r.ratio - 1))
            by_kind[kind][0].append(abs(tps / m.value - 1))
            by_kind[kind][1].append(abs(r.ratio - 1))
            old = capped[m.line][0]
            if old is not None:
                both_capped.append(abs(old / m.value - 1))
            a, ar = f"{tps:,.0f} ({where})", f"{tps / m.value:.2f}"
        if not (args.all_rows or (not reason and tps is not None)):
            continue
        print(
            f"| {m.line} | {m.name} | {kind} | {m.gpu} TP{m.n_gpus} {m.precision} | {m.input_len:g}/{m.output_len:g} | "
            f"{m.value:,.0f} | {a} | {ar} | {x} | {r.ratio:.2f} |"
        )
    print()
    if both_aic:
        aic, ours_error = statistics.median(both_aic), statistics.median(both_ours)
        print(
            f"rows both predict: {len(both_aic)}; median absolute error AIConfigurator {aic:.1%}, xlsxplan (leave "
            f"one run out) {ours_error:.1%}"
        )
        for kind, (a_err, o_err) in by_kind.items():
            if a_err:
                print(
                    f"  {kind}: {len(a_err)} rows; AIConfigurator {statistics.median(a_err):.1%}, xlsxplan "
                    f"{statistics.median(o_err):.1%}"
                )
        if both_capped:
            print(
                f"  AIConfigurator at its default context budget only (the earlier comparison): "
                f"{statistics.median(both_capped):.1%} over {len(both_capped)} rows"
            )
    if only_ours:
        print(
            f"rows only xlsxplan predicts: {len(only_ours)}; its median absolute error there "
            f"{statistics.median(only_ours):.1%}; of them {unasked} are rows AIConfigurator has the model and system "
            "for whose questions are not in the cache (run with --aic)"
        )
    print(f"rows neither predicts (xlsxplan: not in its catalog or not its metric): {neither}")


if __name__ == "__main__":
    main()
