"""``xlsxplan plan --workloads FILE``: several workloads on one fleet (:mod:`xlsxplan.plan.portfolio`): each planned
alone, the shared deployments, the saving, the bill per team and per million tokens, and each routing split against
its reference model."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from . import plan_finance
from .common import EXIT_OK, EXIT_USAGE, flag_number
from .common import UsageError as _Usage

FLEET_FLAGS = {
    "spare": ("--spare", True),
    "min_replicas": ("--min-replicas", True),
    "hours_per_month": ("--hours-per-month", False),
    "usable_fraction": ("--usable-fraction", False),
    "decode_bandwidth_efficiency": ("--decode-bandwidth-efficiency", False),
    "prefill_utilisation": ("--prefill-utilisation", False),
    "kv_overflow": ("--kv-overflow", False),
}
"""The plan's flags a portfolio reads, for every workload alike: name -> (flag, whole number)."""

PER_WORKLOAD = {
    "model": "--model",
    "requests_per_day": "--requests-per-day",
    "prompt_tokens": "--prompt-tokens",
    "prompt_p95": "--prompt-p95",
    "output_tokens": "--output-tokens",
    "reasoning_tokens": "--reasoning-tokens",
    "peak_factor": "--peak-factor",
    "tokens_per_s": "--tokens-per-s",
    "ttft_s": "--ttft-s",
}
"""Flags a workloads file sets per workload (its columns), refused beside ``--workloads``."""

NOT_SHARED = {
    "max_prompt_tokens": "--max-prompt-tokens",
    "prompt_sd": "--prompt-sd",
    "ttft_percentile": "--ttft-percentile",
    "service_cv": "--service-cv",
    "servings": "--serving",
    "gpu_memory_utilization": "--gpu-memory-utilization",
    "reserve_gb": "--activation-reserve-gb",
    "block_size": "--block-size",
    "draft": "--spec-draft",
    "draft_params_b": "--spec-draft-params-b",
    "own": "--own",
    "top": "--top",
    "train": "--train",
    "max_gpus_per_replica": "--max-gpus-per-replica",
    **{f"fin_{dest}": flag for flag, dest, _, _ in plan_finance.FLAGS},
}
"""Flags of the single plan a portfolio does not take: it shares aggregated replicas of one server at most, and
prices no finance lines."""


def add_flags(p: argparse.ArgumentParser) -> None:
    group = p.add_argument_group(
        "several workloads (--workloads: a fleet shared by workloads of one model; --gpu, --rank, --weights, --kv, "
        "--gpus-per-replica, --weights-as, --spare, --min-replicas, --hours-per-month and --json apply too)"
    )
    group.add_argument(
        "--workloads",
        metavar="FILE",
        help="a workloads table, .toml ([[workload]] tables) or .csv (a header row): name, team, model or a "
        "routing split 'A=0.7|B=0.3', quality, requests_per_day, shape, prompt_tokens, output_tokens, targets "
        "(docs/planning.md)",
    )
    group.add_argument(
        "--allocation",
        choices=("gpu-time", "peak"),
        help="how a shared deployment's cost is split between its workloads: by the GPU time each uses (the "
        "default) or by each one's own peak load",
    )


def wanted(args: argparse.Namespace) -> bool:
    return getattr(args, "workloads", None) is not None or getattr(args, "allocation", None) is not None


def _number(args: argparse.Namespace, name: str) -> Any:
    flag, whole = FLEET_FLAGS[name]
    text = getattr(args, name, None)
    return None if text is None else flag_number(text, flag, whole)


def _assumptions(args: argparse.Namespace) -> Any:
    from ..plan.search import Assumptions, name_list, size_list

    given: dict[str, Any] = {n: v for n in FLEET_FLAGS if (v := _number(args, n)) is not None}
    if args.weights is not None:
        given["weight_precisions"] = name_list(args.weights, "weights")
    if args.kv is not None:
        given["kv_precisions"] = name_list(args.kv, "kv")
    if getattr(args, "gpus_per_replica", None) is not None:
        given["gpus_per_replica"] = size_list(args.gpus_per_replica)
    given["weights"] = "params x bytes" if args.weights_as == "params-x-bytes" else "published"
    return Assumptions(**given)


def run(args: argparse.Namespace) -> int:
    from ..errors import XlsxplanError
    from ..plan.portfolio import load_workloads, portfolio
    from ..plan.search import parse_gpus

    try:
        if args.workloads is None:
            raise _Usage("--allocation splits a portfolio's bill: give --workloads FILE too")
        for name, flag in {**PER_WORKLOAD, **NOT_SHARED}.items():
            if getattr(args, name, None) not in (None, False):
                why = "is set per workload in the workloads file" if name in PER_WORKLOAD else "is not shared"
                raise _Usage(f"{flag} {why}: leave it out with --workloads")
        a = _assumptions(args)
        result = portfolio(
            load_workloads(args.workloads), parse_gpus(args.gpu or "all"), a, args.rank, args.allocation or "gpu-time"
        )
    except _Usage as err:
        print(f"xlsxplan plan: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except XlsxplanError as err:
        print(f"xlsxplan plan: error: {err.message}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(render(result))
    return EXIT_OK


def _money(x: float) -> str:
    return f"{x:,.0f}"


def _table(rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
        for r in rows
    ]


def render(result: Any) -> str:
    """The portfolio in words and tables, the figures of :meth:`Portfolio.to_json`."""
    r = result
    view = "the source text's ideal efficiencies" if r.rank_by == "assumed" else "the calibrated efficiencies"
    prices = "; ".join(f"{g} ${p:g}/GPU-h ({src})" for g, (p, src) in r.prices.items())
    lines = [
        f"{len(r.workloads)} workloads, {len(r.streams)} model streams, priced at {view}, "
        f"{r.hours_per_month:g} hours a month",
        f"prices: {prices}",
        "",
        "each workload alone (its cheapest aggregated option, sized for its own peak hour)",
    ]
    rows = [["workload", "team", "model", "share", "requests/day", "peak", "option", "replicas", "GPUs", "$/month"]]
    for s in r.streams:
        f = s.alone.view(r.rank_by)
        o = s.alone
        rows.append(
            [
                s.workload.name,
                s.workload.team,
                s.route.model,
                f"{s.route.share:.0%}",
                _money(s.requests_per_day),
                f"{s.workload.peak:.2f}x",
                f"{o.gpu} {o.weights}/{o.kv} x{o.gpus_per_replica}",
                str(f.replicas),
                str(f.gpus),
                _money(f.usd_per_month),
            ]
        )
    lines += _table(rows, {3, 4, 5, 7, 8, 9})
    lines += [
        "",
        "the fleet (a model's workloads on one deployment share its replicas, sized on the hour-by-hour sum of their "
        "loads, at the strictest of their targets)",
    ]
    rows = [["deployment", "workloads", "peak hour", "peak load", "replicas", "GPUs", "$/month"]]
    for p in r.pools:
        rows.append(
            [
                p.label(),
                ", ".join(r.streams[i].label() for i in p.members),
                f"{p.peak_hour:02d}:00",
                f"{p.peak_load:.2f}",
                str(p.replicas),
                str(p.gpus),
                _money(p.usd_per_month),
            ]
        )
    lines += _table(rows, {2, 3, 4, 5, 6})
    alone = r.alone_usd_per_month
    share = f" ({r.saving_usd_per_month / alone:.0%})" if alone else ""
    lines += [
        "  peak load: replicas' worth of work in the busiest hour, before the spares and the minimum",
        f"Fleet: {r.gpus} GPUs, ${_money(r.usd_per_month)} a month; each workload alone: {r.alone_gpus} GPUs, "
        f"${_money(alone)}; sharing saves ${_money(r.saving_usd_per_month)} a month{share}",
        "",
        f"cost per workload, allocated by {r.allocation}: {r.rule}",
    ]
    rows = [["workload", "team", "model", "GPU time", "$/month", "$/M tokens", "alone $/month"]]
    for s in r.streams:
        rows.append(
            [
                s.workload.name,
                s.workload.team,
                s.route.model,
                f"{r.gpu_hours_per_day(s):.1f}",
                _money(s.usd_per_month),
                f"{s.usd_per_month / r.tokens_m(s):.2f}",
                _money(s.alone.view(r.rank_by).usd_per_month),
            ]
        )
    lines += _table(rows, {3, 4, 5, 6})
    other = next(a for a in ("gpu-time", "peak") if a != r.allocation)
    other_text = "each workload's own peak load" if other == "peak" else "the GPU time used"
    lines += [
        "  GPU time: GPU-hours of work a day; $/M tokens: over prompt, answer and reasoning tokens",
        f"  --allocation {other} splits by {other_text} instead",
        "",
        "cost per team",
    ]
    rows = [["team", "$/month", "$/M tokens", "alone $/month", "saving"]]
    for team, t in r.teams().items():
        rows.append(
            [
                team,
                _money(t["usd_per_month"]),
                f"{t['usd_per_m_tokens']:.2f}",
                _money(t["alone_usd_per_month"]),
                _money(t["alone_usd_per_month"] - t["usd_per_month"]),
            ]
        )
    lines += _table(rows, {1, 2, 3, 4})
    for x in r.routing:
        split = " + ".join(f"{share:.0%} {m}" for m, share in x["split"].items())
        q = (
            f"quality {x['routed_quality']:g} routed against {x['reference_quality']:g} on {x['reference']} (the "
            "scores given)"
            if x["routed_quality"] is not None and x["reference_quality"] is not None
            else "quality: no score given, none assumed (give each model's score in the quality column)"
        )
        lines += [
            "",
            f"routing {x['workload']}: {split}, against all on {x['reference']}: the fleet "
            f"${_money(x['fleet_usd_per_month'])} a month against ${_money(x['unrouted_fleet_usd_per_month'])} "
            f"({x['unrouted_gpus']} GPUs unrouted), saves "
            f"${_money(x['saving_usd_per_month'])} a month; {q}",
        ]
    return "\n".join(lines)
