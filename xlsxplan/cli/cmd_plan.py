"""``xlsxplan plan``: the cheapest deployment that meets the targets, every other option beside it, and why the
rejected ones fail (:mod:`xlsxplan.plan.search`)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, NoReturn

from . import plan_finance, plan_portfolio, plan_train
from .common import EXIT_FORMULA_ERROR, EXIT_OK, EXIT_USAGE, flag_number
from .common import UsageError as _Usage

ORDER = 25

_FLAGS = {
    "model": "--model",
    "requests_per_day": "--requests-per-day",
    "prompt_tokens": "--prompt-tokens",
    "output_tokens": "--output-tokens",
    "prompt_p95": "--prompt-p95",
    "max_prompt_tokens": "--max-prompt-tokens",
    "reasoning_tokens": "--reasoning-tokens",
    "peak_factor": "--peak-factor",
    "tokens_per_s": "--tokens-per-s",
    "ttft_s": "--ttft-s",
    "spare": "--spare",
    "min_replicas": "--min-replicas",
    "prompt_sd": "--prompt-sd",
    "gpus": "--gpu",
    "profile": "--demand-profile",
    "region": "--region",
    "provider": "--api",
    "top": "--top",
    "weights": "--weights",
    "kv": "--kv",
    "precision": "--weights/--kv",
    "capex_usd": "--own-capex",
    "years": "--own-years",
    "residual_fraction": "--own-residual",
    "annual_rate": "--own-rate",
    "kw": "--own-kw",
    "pue": "--own-pue",
    "usd_per_kwh": "--own-usd-per-kwh",
    "usd_per_kw_month": "--own-usd-per-kw-month",
    "utilisation": "--own-utilisation",
    "ttft_percentile": "--ttft-percentile",
    "service_cv": "--service-cv",
    "arrival_cv": "--arrival-cv",
    "gpu_memory_utilization": "--gpu-memory-utilization",
    "reserve_gb": "--activation-reserve-gb",
    "block_size": "--block-size",
    "draft": "--spec-draft",
    "draft_params_b": "--spec-draft-params-b",
    "acceptance": "--spec-acceptance",
    "acceptance_rates": "--spec-acceptance-rates",
    "draft_tokens": "--spec-tokens",
}
"""Each argument of :func:`xlsxplan.plan.search.plan` by the flag that gives it, for error messages; those of
:data:`SPEC_FLAGS` are added from their specification when the parser is made (:func:`_spec_flags`)."""


_REQUIRED = ("model", "requests_per_day", "prompt_tokens", "output_tokens")
"""The options a plan needs, in the order the error names them."""


def _number(
    args: argparse.Namespace, name: str, whole: bool = False, required: bool = False, flag: str | None = None
) -> Any:
    text = getattr(args, name)
    flag = flag or _FLAGS[name]
    if text is None:
        if required:
            raise _Usage(f"{flag} is required")
        return None
    return flag_number(text, flag, whole)


def _names(text: str | None, name: str) -> tuple[str, ...] | None:
    """A comma-separated flag's names, None where it is not given; an empty list is refused naming ``name``, which
    :func:`run` spells as its flag."""
    from ..plan.search import name_list

    return None if text is None else name_list(text, name)


_OWN_SINGLE = ("years", "residual_fraction", "annual_rate", "pue", "usd_per_kwh", "usd_per_kw_month")
_OWN_PER_GPU = ("capex_usd", "kw")
"""The owned-case flags: one number for every accelerator, or (these two) ``NAME=VALUE`` for one, repeatable."""


_OWN_HELP = (
    ("--own-capex", "capex_usd", "[NAME=]USD", "capital cost per GPU with its share of the server and network; "
     "NAME=USD for one accelerator, repeatable"),
    ("--own-years", "years", "N", "life the capital is recovered over"),
    ("--own-residual", "residual_fraction", "F", "resale value at the end of the life, a share of the capital"),
    ("--own-rate", "annual_rate", "F", "cost of capital a year, 0.08 for 8%%"),
    ("--own-kw", "kw", "[NAME=]KW", "power per GPU with its share of the server (default: costs.toml's, else the "
     "board's power_w); NAME=KW for one accelerator, repeatable"),
    ("--own-pue", "pue", "X", "power usage effectiveness of the data centre"),
    ("--own-usd-per-kwh", "usd_per_kwh", "USD", "price of electricity"),
    ("--own-usd-per-kw-month", "usd_per_kw_month", "USD", "hosting per kW of IT load a month"),
    ("--own-utilisation", "utilisation", "F", "average load of the owned GPUs, if other work fills the hours this "
     "traffic leaves idle (default: the fleet's own)"),
)  # fmt: skip


def _owned(args: argparse.Namespace) -> Any:
    """The owned-case assumptions the flags give, or None when no --own flag is given."""
    from ..catalog import load_catalog
    from ..plan.search import Owned

    names = (*_OWN_SINGLE, *_OWN_PER_GPU, "utilisation")
    if not args.own and all(getattr(args, f"own_{n}") is None for n in names):
        return None
    given: dict[str, float] = {}
    per_gpu: dict[str, dict[str, float]] = {}
    for name in _OWN_SINGLE:
        value = _number(args, f"own_{name}", flag=_FLAGS[name])
        if value is not None:
            given[name] = value
    for name in _OWN_PER_GPU:
        for item in getattr(args, f"own_{name}") or ():
            gpu, sep, text = item.rpartition("=")
            value = _parse(text, _FLAGS[name], item)
            if not sep:
                given[name] = value
                continue
            try:
                gpu_id = load_catalog().accelerators.get(gpu.strip()).id
            except Exception as err:  # an unknown accelerator, with the closest names
                message = getattr(err, "message", str(err)).removeprefix("gpu ")
                raise _Usage(f"{_FLAGS[name]} {item!r}: {message}") from None
            per_gpu.setdefault(gpu_id, {})[name] = value
    return Owned(given, per_gpu, _number(args, "own_utilisation", flag=_FLAGS["utilisation"]))


def _parse(text: str, flag: str, item: str) -> float:
    try:
        return float(text.strip().replace("_", ""))
    except ValueError:
        raise _Usage(f"{flag} must be a number, or NAME=NUMBER for one accelerator, got {item!r}") from None


def _engine(args: argparse.Namespace) -> Any:
    """The engine's memory rule the flags give, or None when none of them is given."""
    from ..plan.search import Engine

    if all(getattr(args, n) is None for n in ("gpu_memory_utilization", "reserve_gb", "block_size")):
        return None
    d = Engine()
    fraction = _number(args, "gpu_memory_utilization")
    reserve = _number(args, "reserve_gb")
    block = _number(args, "block_size", whole=True)
    return Engine(
        d.memory_fraction if fraction is None else fraction,
        d.reserve_gb if reserve is None else reserve,
        d.block_size if block is None else block,
    )


def _speculative(args: argparse.Namespace) -> Any:
    """The speculative draft the flags give, or None when none of them is given."""
    from ..errors import XlsxplanError
    from ..plan.search import Speculative
    from ..precision import lookup

    names = ("draft", "draft_params_b", "draft_weights", "draft_tokens", "acceptance", "acceptance_rates")
    if all(getattr(args, n) is None for n in names):
        return None
    if args.acceptance_rates is not None and args.draft_tokens is not None:
        raise _Usage("--spec-tokens is the length of --spec-acceptance-rates: give one or the other")
    rates: tuple[float, ...] = ()
    if args.acceptance_rates is not None:
        rates = tuple(
            _parse(x, "--spec-acceptance-rates", args.acceptance_rates) for x in args.acceptance_rates.split(",")
        )
    weights = args.draft_weights or "bf16"
    try:
        weights = lookup(weights).name
    except XlsxplanError as err:
        raise _Usage(f"--spec-draft-weights: {err.message}") from None
    tokens = _number(args, "draft_tokens", whole=True)
    return Speculative(
        1 if tokens is None else tokens,
        _number(args, "acceptance"),
        rates,
        args.draft,
        _number(args, "draft_params_b"),
        weights,
    )


def _inputs(args: argparse.Namespace) -> tuple[Any, ...]:
    from ..plan.search import Assumptions, Targets, Traffic, parse_gpus, size_list

    missing = [
        _FLAGS[name] + (" (a preset name, shipped or imported with `xlsxplan model add`)" if name == "model" else "")
        for name in _REQUIRED
        if getattr(args, name) in (None, "")
    ]
    if missing:  # every one named at once, not one a run
        raise _Usage(f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} required")
    traffic = Traffic(
        requests_per_day=_number(args, "requests_per_day", required=True),
        prompt_tokens=_number(args, "prompt_tokens", required=True),
        output_tokens=_number(args, "output_tokens", required=True),
        peak_factor=3.0 if args.peak_factor is None else _number(args, "peak_factor"),
        prompt_p95=_number(args, "prompt_p95"),
        max_prompt_tokens=_number(args, "max_prompt_tokens"),
        reasoning_tokens=_number(args, "reasoning_tokens") or 0.0,
        prompt_sd=_number(args, "prompt_sd"),
    )
    targets = Targets(_number(args, "tokens_per_s"), _number(args, "ttft_s"), _number(args, "ttft_percentile"))
    for name, flag in (("service_cv", "--service-cv"), ("arrival_cv", "--arrival-cv")):
        if getattr(args, name) is not None and targets.ttft_percentile is None:
            raise _Usage(f"{flag} shapes the queue of --ttft-percentile: give --ttft-percentile too")
    defaults = Assumptions()
    given = {n: _number(args, n, whole=n in _SPEC_WHOLE) for n in SPEC_FLAGS if n not in _SPEC_LISTS}
    servings = _names(args.servings, "servings")
    assumptions = Assumptions(
        **{n: getattr(defaults, n) if v is None else v for n, v in given.items()},
        gpus_per_replica=defaults.gpus_per_replica
        if args.gpus_per_replica is None
        else size_list(args.gpus_per_replica),
        servings=defaults.servings if servings is None else tuple(x.lower() for x in servings),
        spare=defaults.spare if args.spare is None else _number(args, "spare", whole=True),
        min_replicas=defaults.min_replicas if args.min_replicas is None else _number(args, "min_replicas", whole=True),
        weights="params x bytes" if args.weights_as == "params-x-bytes" else "published",
        weight_precisions=_names(args.weights, "weights") or defaults.weight_precisions,
        kv_precisions=_names(args.kv, "kv") or defaults.kv_precisions,
        owned=_owned(args),
        service_cv=defaults.service_cv if args.service_cv is None else _number(args, "service_cv"),
        arrival_cv=defaults.arrival_cv if args.arrival_cv is None else _number(args, "arrival_cv"),
        engine=_engine(args),
        speculative=_speculative(args),
    )
    gpus = parse_gpus(args.gpu or "all")
    return traffic, targets, assumptions, gpus


def run(args: argparse.Namespace) -> int:
    from ..errors import XlsxplanError
    from ..plan.finance import check as check_finance
    from ..plan.finance import finance
    from ..plan.finance import render as render_finance
    from ..plan.search import plan

    if plan_portfolio.wanted(args):  # xlsxplan plan --workloads: several workloads on one fleet
        return plan_portfolio.run(args)
    if plan_train.wanted(args):  # xlsxplan plan --train: the training plan's own inputs and output
        return plan_train.run(args)
    try:
        money = plan_finance.inputs(args)
        traffic, targets, assumptions, gpus = _inputs(args)
        if args.model is not None:  # checked before the search, each error naming its flag
            money = check_finance(money, args.model)
        result = plan(args.model, traffic, targets, gpus, assumptions, args.rank)
    except _Usage as err:
        print(f"xlsxplan plan: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except XlsxplanError as err:
        message, name = err.message, err.argument or ""
        if name in _FLAGS and name != "model":  # the argument as this command spells it
            flag = _FLAGS[name]
            if message.startswith(name) and message[len(name) : len(name) + 1] in (" ", ":"):
                message = flag + message[len(name) :]
            elif flag not in message:
                message = f"{flag}: {message}"
        print(f"xlsxplan plan: error: {message}", file=sys.stderr)
        return EXIT_USAGE
    try:
        top = _number(args, "top", whole=True) or 0
        if top < 0:
            raise _Usage(f"--top must be 0 or more (0 or none: every option), got {top}")
    except _Usage as err:
        print(f"xlsxplan plan: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    fin = finance(result, money)
    if args.json:
        print(json.dumps({**result.to_json(), "finance": fin}, indent=2))
    else:
        print(render(result, top, render_finance(fin)))
    return EXIT_OK if result.feasible else EXIT_FORMULA_ERROR  # no option meets the targets: a check that failed


# --- the table ----------------------------------------------------------------------------------------------------


def _n(x: float | None, digits: int = 0, grouped: bool = True) -> str:
    if x is None:
        return "inf"
    return f"{x:,.{digits}f}" if grouped else f"{x:.{digits}f}"


def _table(rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for r in rows:
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))]
        out.append("  ".join(cells).rstrip())
    return out


def _variants(covered: list[tuple[str, str]], kvs: tuple[str, ...], servings: tuple[str, ...]) -> str:
    """Which KV precisions and servings a group of rejected options holds, in words ("" for all of them)."""
    kv_of = {s: {k for k, s2 in covered if s2 == s} for s in servings}
    if all(kv_of[s] == set(kvs) for s in servings):
        return ""
    full = [s for s in servings if kv_of[s] == set(kvs)]
    if full and all(kv_of[s] in (set(), set(kvs)) for s in servings):
        return f" ({', '.join(full)})"
    kvs_all = [k for k in kvs if all((k, s) in covered for s in servings)]
    if kvs_all and all(k in kvs_all or all((k, s) not in covered for s in servings) for k in kvs):
        return f" (KV {', '.join(kvs_all)})"
    return " (" + "; ".join(f"KV {k} {s}" for k, s in covered) + ")"


_SHORT = {
    "aggregated": "agg",
    "disaggregated": "disagg",
    "speed target": "speed",
    "first-token target": "1st token",
    "engine's step budget": "budget",
}
"""How the table abbreviates a serving mode and a binding limit (the JSON spells them out)."""


def _basis(o: Any) -> str:
    """What rank 1's calibrated figures rest on, in words: the published rows behind its efficiencies and behind the
    P10-P90 band (pooled over every model, so it neither widens nor narrows for this one)."""
    from ..calibration import active, efficiency_basis
    from ..precision import compute_precision

    parts = [
        efficiency_basis(kind, o.gpu, compute_precision(o.weights)).split(": ", 1)[1]
        for kind in ("decode_bandwidth", "prefill")
    ]
    rows, sources = active().band_rows.get("throughput", (len(active().bands.get("throughput", ())), 0))
    of = f" of {sources} publications, each weighted alike," if sources else ""
    return (
        f"  rank 1 rests on: EFFICIENCY {parts[0]}; {parts[1]}; its P10-P90 on {rows:,} held-out serving residuals"
        f"{of} every model pooled (as wide for this case as for any)"
    )


_VIEW_LABEL = {"assumed": "ideal", "calibrated": "calibrated"}
"""How the table's header names the view the plan is not ranked by."""


def render(result: Any, top: int = 0, finance: list[str] | None = None) -> str:
    """The plan as a terminal reads it: feasible options ranked (the ``top`` cheapest, 0 for all), the frontier
    marked, rejected ones with their reasons, and the assumptions that move the result."""
    from ..calibration import active
    from ..plan.search import PARAMS_X_BYTES, figure_text

    t, g, a = result.traffic, result.targets, result.assumptions
    other = "calibrated" if result.rank_by == "assumed" else "assumed"
    lines = []
    reasoning = f" + {t.reasoning_tokens:,.0f} reasoning" if t.reasoning_tokens else ""
    tail = f", p95 {t.prompt_p95:,.0f}" if t.prompt_p95 is not None else ""
    longest = f", at most {t.max_prompt_tokens:,.0f}" if t.max_prompt_tokens is not None else ""
    lines.append(
        f"{result.model}: {t.requests_per_day:,.0f} requests a day, {t.peak_requests_per_s:.2f} a second at "
        f"the peak ({t.peak_factor:g}x the average); prompts {t.prompt_tokens:,.0f} tokens{tail}{longest}, "
        f"answers {t.output_tokens:,.0f}{reasoning}"
    )
    given = []
    if g.tokens_per_s is not None:
        given.append(f"at least {g.tokens_per_s:g} tokens/s per user")
    if g.ttft_s is not None and g.ttft_percentile is not None:
        share = f"{g.ttft_percentile * 100:.6g}"
        given.append(
            f"first token of the {t.tail_prompt:,.0f}-token tail prompt within {g.ttft_s:g} s for {share}% "
            f"of requests at the peak (P{share}), waiting for a batch slot included"
        )
    elif g.ttft_s is not None:
        given.append(f"first token of the {t.tail_prompt:,.0f}-token tail prompt within {g.ttft_s:g} s")
    elif g.ttft_percentile is not None:
        given.append("none on the first token (--ttft-s), whose P50, P90 and P99 under load are reported")
    lines.append(
        "targets: " + ("; ".join(given) if given else "none given, so none applies (--tokens-per-s, --ttft-s)")
    )
    lines.append("prices: " + _prices(result.prices))
    lines.append("")
    feasible = result.feasible
    if feasible:
        lines.append(
            f"feasible, cheapest first, ranked at the {result.rank_by} efficiencies "
            "(* on the cost-versus-speed frontier)"
        )
        head = [
            "rank",
            "gpu",
            "gpus",
            "weights",
            "kv",
            "serving",
            "batch",
            "set by",
            "tok/s/user",
            "TTFT s",
            "replicas",
            "GPUs",
            "$/month",
            "$/M in",
            "$/M out",
            f"{_VIEW_LABEL[other]}: GPUs",
            "$/month",
            "calibrated P10-P90: GPUs",
            "$/month",
        ]
        rows = [head]
        shown = feasible if not top else feasible[:top]
        for i, o in enumerate(shown, 1):
            f, c = o.view(result.rank_by), o.view(other)
            rows.append(
                [
                    f"{i}{'*' if o.frontier else ' '}",
                    o.gpu,
                    str(o.gpus_per_replica),
                    o.weights,
                    o.kv,
                    _SHORT.get(o.serving, o.serving),
                    str(f.batch),
                    _SHORT.get(f.binding, f.binding),
                    _n(f.tokens_per_s_per_user, 1),
                    _n(f.ttft_s, 2),
                    str(f.replicas),
                    str(f.gpus),
                    _n(f.usd_per_month),
                    _n(f.usd_per_m_input, 2),
                    _n(f.usd_per_m_output, 2),
                    str(c.gpus) if c.feasible else "rejected",
                    _n(c.usd_per_month) if c.feasible else "",
                ]
            )
            rows[-1] += _range_cells(o.calibrated)
            rows[-1] += _extra_cells(result, f)
            rows[-1] += _topology_cells(result, o)
        rows[0] += _extra_head(result) + (["layout", "step ms", "comm ms"] if result.multi_node else [])
        lines += _table(rows, {0, 2, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16} | set(range(17, len(rows[0]))))
        if any("range" in o.calibrated.extra for o in shown):
            lines.append(
                "  calibrated P10-P90: the calibrated fleet at the P10 and P90 of published serving rows' "
                "throughput against xlsxplan's leave-one-source-out prediction (xlsxplan validate)"
            )
        if result.targets.ttft_percentile is not None:  # the columns' fleet is not the one the target binds on
            lines.append(
                "  P50 s, P90 s, P99 s: the first token at the peak on the planned fleet, every replica up; where a "
                "percentile sets the replicas, it holds with the spares down too, a slower case than these columns show"
            )
        lines.append(_basis(shown[0]))
        if other == "assumed":
            lines.append(
                "  ideal: the fleet at the source text's ideal efficiencies (the assumed view below; --rank "
                "assumed ranks by it)"
            )
        if len(shown) < len(feasible):
            lines.append(f"  ... and {len(feasible) - len(shown)} more feasible options (--top 0 shows them all)")
        others = [(i, o) for i, o in enumerate(shown, 1) if not o.view(other).feasible]
        for i, o in others:
            lines.append(f"  {other} view rejects rank {i}: {o.view(other).reason}")
    else:
        lines.append("no option is feasible")
    rejected = result.rejected
    if rejected:
        lines.append("")
        lines.append(f"rejected ({len(rejected)} options)")
        groups: dict[tuple[str, str, str], dict[int | str, list[Any]]] = {}
        for o in rejected:
            f = o.view(result.rank_by)
            limit = f.extra.get("rejected_by")
            plain = not (a.engine or a.speculative)  # the weights against a flat usable share: grouped by size
            draft = " with the draft" if o.speculative else ""
            grouped = limit == "weights" and plain and not o.layout  # a layout's weights are its own: said apart
            key = (o.gpu, o.weights + draft, "weights" if grouped else f.reason or "")
            size = f"{o.gpus_per_replica} ({o.layout})" if o.layout else o.gpus_per_replica
            groups.setdefault(key, {}).setdefault(size, []).append(o)
        for (gpu, w, reason), by_n in groups.items():
            ns = [
                f"{n}{_variants([(o.kv, o.serving) for o in opts], a.kv_precisions, a.servings)}"
                for n, opts in by_n.items()
            ]
            if reason == "weights":  # the same weights against each size's memory: the largest says it all
                fig = [o.view(result.rank_by).extra for opts in by_n.values() for o in opts]
                most = max(x["usable_gb"] for x in fig)
                reason = f"weights need {figure_text(fig[0]['weights_gb'])} GB, " + (
                    f"{figure_text(most)} GB usable" if len(by_n) == 1 else f"at most {figure_text(most)} GB usable"
                )
            gpus = ns[0] if len(ns) == 1 else ", ".join(ns[:-1]) + " or " + ns[-1]
            lines.append(f"  {gpu} {w} on {gpus} GPU{'' if list(by_n) == [1] else 's'}: {reason}")
    lines.append("")
    lines.append("assumptions that move the result")
    lines.append(
        f"  assumed view: decode at {a.decode_bandwidth_efficiency:.0%} of the peak memory bandwidth, prefill "
        f'at {a.prefill_utilisation:.0%} of the dense BF16 peak ("Back-of-the-Envelope Estimation for LLM '
        'Systems", sections 4-5)'
    )
    cal = active()
    f = cal.factors
    lines.append(
        f"  calibrated view: the serving step validate scores published runs with (weights or linear layers, cache "
        "or attention, routed experts, tensor-parallel all-reduce; prompts prefilled inside the steps, sequences at "
        f"their average context) over the fitted serving scale ({f.serving:.3g} x GPUs^{f.serving_tp:.2g}"
        f"{f', x {f.serving_amd:.2g} on Instinct' if f.serving_amd != 1 else ''}); EFFICIENCY "
        f"({cal.origin} factors), by weights: " + _calibrated(result)
    )
    weights = "params x bytes, as the source text counts them"
    if a.weights != PARAMS_X_BYTES:
        weights = (
            "as published checkpoints store them (MODEL_WEIGHTS_GB: the embeddings and output layer at 16 bits "
            "beside weights of a narrower format, the routed experts apart where a format names them)"
        )
    usable = f"{a.usable_fraction:.0%} usable"
    if a.engine:
        e = a.engine
        usable = (
            f"as vLLM allocates it: {e.memory_fraction:g} of each GPU's memory (the catalog's figure; CUDA "
            f"reports about 7% more on an H100) less its share of the weights and {e.reserve_gb:g} GB reserved "
            f"for activations, in whole blocks of {e.block_size} tokens (ENGINE_KV_TOKENS; KV tokens and "
            "maximum concurrency at the longest request, as vLLM prints them)"
        )
    memory = [n.removeprefix("memory: ") for n in result.notes if n.startswith("memory: ")]
    lines.append(f"  memory: {usable}; weights {weights}; " + "; ".join(memory))
    lines += [f"  {n}" for n in result.notes if not n.startswith("memory: ")]
    if a.max_num_tokens or a.max_batch_size:
        lines.append("  " + _budget_text(result))
    lines.append(
        f"  fleet: {a.spare} spare replica{'s' if a.spare != 1 else ''} (in each pool when disaggregated), "
        f"at least {a.min_replicas} aggregated; GPUs billed {a.hours_per_month:g} hours a month"
    )
    lines.append(
        f"  first token: the {t.tail_prompt:,.0f}-token tail prompt, chunked into the decode steps at the "
        "planned batch, its token at the end of the step that reads its last chunk; disaggregated, read by a "
        f"prefill replica and its KV cache sent at {a.kv_link_gb_s:g} GB/s; " + _queue_text(result)
    )
    lines += _speculative_lines(result)
    lines += _owned_lines(result)
    lines.append(
        f"  tried: weights {', '.join(a.weight_precisions)}; KV cache {', '.join(a.kv_precisions)}; "
        f"{', '.join(map(str, a.gpus_per_replica))} GPUs per replica (for a mixture of experts, the experts "
        f"spread over them); {' and '.join(a.servings)}"
        + (
            "; beyond one server, doubling: tensor parallel within the scale-up domain and pipeline stages across "
            "nodes (GPipe's bubble), or the experts over every GPU with attention data-parallel, all-reduces, "
            "all-to-alls and pipeline sends over the system's links (systems.toml)"
            if result.multi_node
            else ""
        )
    )
    lines += finance or []  # the finance lines, before the summary that ends the plan
    lines += _in_short(result)
    return "\n".join(lines)


def _in_short(result: Any) -> list[str]:
    """The plan's last lines, for a manager to read aloud: rank 1's fleet, monthly bill and its range, cost per
    million input and output tokens, the speed each user gets where no speed target set the batch, the price and
    where it comes from, the other view's figure (the assumption that moves the plan most: the efficiencies), and
    what to run next."""
    feasible = result.feasible
    if not feasible:
        return [
            "",
            "In short: no option meets the targets; each rejected line says what fails: loosen that target, or add "
            "an accelerator (--gpu) or a precision (--weights) that can meet it",
        ]
    o = feasible[0]
    f, other = o.view(result.rank_by), ("assumed" if result.rank_by == "calibrated" else "calibrated")
    g = o.view(other)
    from ..catalog import load_prices

    price, source = result.prices[o.gpu]
    basis = "given" if source == "given" else f"the catalog's, on demand, as of {load_prices().get(o.gpu).as_of}"
    span = ""
    band = f.extra.get("range", {}).get("usd_per_month")
    if band and band[0] != band[1]:
        span = f", likely ${band[0]:,.0f} to ${band[1]:,.0f} (P10 to P90 of published runs)"
    view = (
        "at the efficiencies published runs reach"
        if result.rank_by == "calibrated"
        else "at the source text's ideal efficiencies"
    )
    there = "at the source text's ideal efficiencies" if other == "assumed" else "at the calibrated efficiencies"
    if g.feasible and g.gpus == f.gpus:  # nothing to claim: say that the efficiencies leave this fleet as it is
        moves = f"the efficiencies do not move this fleet: {there} the same option needs the same {g.gpus} GPUs"
    elif g.feasible:
        moves = f"what moves it most: the efficiencies, {there} the same option needs {g.gpus} GPUs, "
        moves += f"${g.usd_per_month:,.0f}"
    else:
        moves = f"what moves it most: the efficiencies, {there} it is rejected: {g.reason}"
    pools = ""
    if "prefill_replicas" in f.extra and "decode_replicas" in f.extra:  # the split a deployment needs, spares in each
        pools = f" ({f.extra['prefill_replicas']} prefill and {f.extra['decode_replicas']} decode replicas)"
    speed = []
    if result.targets.tokens_per_s is None and f.tokens_per_s_per_user:  # the assumption that set the batch, said
        speed = [
            f"  speed: {f.tokens_per_s_per_user:,.1f} tokens/s a user at batch {f.batch:,}, set by {f.binding} "
            "(no --tokens-per-s target: give one for a floor on each user's speed)"
        ]
    return [
        "",
        f"In short: {o.gpus_per_replica} x {o.gpu} a replica{f' ({o.layout})' if o.layout else ''}, "
        f"{o.weights} weights, {o.serving}{pools}: {f.gpus} GPUs, "
        f"${f.usd_per_month:,.0f} a month {view}{span}; ${f.usd_per_m_input:,.2f} per million input and "
        f"${f.usd_per_m_output:,.2f} per million output tokens",
        *speed,
        f"  price: ${price:,.3f}".rstrip("0").rstrip(".") + f" per GPU-hour ({basis}); {moves}",
        "Next: --json for every figure, =PLAN_OPTIONS(...) for the same table in a cell, or xlsxplan build for the "
        "serving plan workbook",
    ]


def _range_cells(c: Any) -> list[str]:
    """The calibrated view's P10-P90 GPUs and monthly cost, ``lo-hi``; empty where it has no range."""
    r = c.extra.get("range") if c.feasible else None
    if not r:
        return ["", ""]
    g, usd = r["gpus"], r["usd_per_month"]

    def span(lo: str, hi: str) -> str:
        return lo if lo == hi else f"{lo}-{hi}"  # a range the band does not widen is one figure

    return [span(str(g[0]), str(g[1])), span(_n(usd[0]), _n(usd[1]))]


def _topology_cells(result: Any, o: Any) -> list[str]:
    """The layout, the calibrated step and its communication [ms], where the plan laid replicas out beyond a server."""
    if not result.multi_node:
        return []
    c = o.calibrated.extra
    ms = [_n(c[k] * 1e3, 1) if c.get(k) is not None else "" for k in ("step_s", "comm_s")]
    return [o.layout or f"tp{o.gpus_per_replica}", *ms]


def _budget_text(result: Any) -> str:
    """The engine's per-step limits, what batch they allow, and whether they set rank 1's."""
    from ..core.engine import step_limits_text
    from ..plan.search import BUDGET

    a, t = result.assumptions, result.traffic
    text = (
        f"{BUDGET}: {step_limits_text(a.max_num_tokens, a.max_batch_size)} at most (TensorRT-LLM's max_num_tokens and "
        "max_batch_size: each step decodes the batch and prefills batch x prompt / output tokens, so batch <= "
        "tokens / (1 + prompt / output))"
    )
    feasible = result.feasible
    if feasible:
        f = feasible[0].view(result.rank_by)
        cap = f.extra.get("batch_budget")
        if cap is not None:
            setting = "sets" if f.binding == BUDGET else "does not set"
            text += f"; it allows a batch of {cap:,} at {t.prompt_tokens:,.0f} in and {t.decode_tokens:,.0f} out, "
            text += f"and {setting} rank 1's"
    return text


def _extra_head(result: Any) -> list[str]:
    """Columns a plan adds to the ranked table for what it was asked beyond the base search."""
    head = []
    if result.targets.ttft_percentile is not None:
        head += ["P50 s", "P90 s", "P99 s", "replicas set by"]
    if result.assumptions.engine:
        head += ["KV tokens", "max conc"]
    if result.assumptions.speculative:
        head += ["draft", "spec x"]
    if result.assumptions.owned:
        head += ["owned $/month", "$/M in", "$/M out"]
    return head


def _extra_cells(result: Any, f: Any) -> list[str]:
    cells = []
    if result.targets.ttft_percentile is not None:
        at = f.extra.get("ttft_percentiles_s", {})
        cells += [_n(at.get(k), 2) for k in ("p50", "p90", "p99")]
        binding = f.extra.get("replicas_binding", "")
        cells.append("load" if binding == "peak load" else binding.removesuffix(" first-token target"))
    if result.assumptions.engine:
        e = f.extra.get("engine", {})
        cells += [_n(e.get("kv_cache_tokens")), _n(e.get("max_concurrency"), 1)]
    if result.assumptions.speculative:
        sp = f.extra.get("speculative", {})
        cells += ["yes" if sp else "no", f"{sp['speedup']:.2f}" if "speedup" in sp else ""]
    if not result.assumptions.owned:
        return cells
    owned = f.extra.get("owned", {})
    if "usd_per_month" not in owned:
        return [*cells, "n/a", "", ""]
    return [*cells, _n(owned["usd_per_month"]), _n(owned["usd_per_m_input"], 2), _n(owned["usd_per_m_output"], 2)]


_OWNED_LABELS = {
    "capex_usd": ("${:,.0f} capital", 1),
    "years": ("{:g} years", 1),
    "residual_fraction": ("{:.0%} residual", 100),
    "annual_rate": ("{:.0%} a year", 100),
    "kw": ("{:g} kW", 1),
    "pue": ("PUE {:g}", 1),
    "usd_per_kwh": ("${:g}/kWh", 1),
    "usd_per_kw_month": ("${:g}/kW-month", 1),
}


def _speculative_lines(result: Any) -> list[str]:
    """The draft, its acceptance and what a target step yields, in words."""
    sp = result.assumptions.speculative
    if sp is None:
        return []
    draft = (
        f"draft {sp.draft}" if sp.draft else f"a draft head of {sp.draft_params_b:g}B parameters (its cache left out)"
    )
    accept = (
        f"each of {sp.gamma} drafted tokens accepted at {sp.acceptance:g}"
        if not sp.acceptance_rates
        else "per-position acceptance " + ", ".join(f"{r:g}" for r in sp.acceptance_rates)
    )
    return [
        f"  speculative: {draft} in {sp.draft_weights}; {accept}: {sp.tokens_per_step():.4g} tokens per target "
        "step (Leviathan, Kalman and Matias 2023); a step is the draft's steps and the target's verify pass over "
        f"{sp.gamma + 1} tokens a sequence, each a roofline (SPEC_STEP_S), so the gain shrinks as the batch "
        "grows (spec x: speed per user over plain decoding at the planned batch); the draft's weights and cache "
        "take memory from the batch, its verify compute from the prompts' (SPEC_MAX_BATCH)"
    ]


def _queue_text(result: Any) -> str:
    """How the first token's wait for a batch slot is counted, in words."""
    if result.targets.ttft_percentile is None:
        return "queueing left out"
    cv, ca = result.assumptions.service_cv, result.assumptions.arrival_cv
    law = (
        "exponential slot times, the exact M/M/c case"
        if cv == 1 and ca == 1
        else f"slot times spread {cv:g} and arrivals {ca:g} times their mean, the Allen-Cunneen approximation"
    )
    arrivals = "Poisson arrivals" if ca == 1 else f"bursty arrivals (--arrival-cv {ca:g})"
    return (
        f"P50/P90/P99 at the peak on the planned fleet: the wait for a batch slot (Erlang C; each replica a "
        f"queue of batch slots fed its share of {arrivals}, {law}; a disaggregated prefill pool one "
        "queue, a server per replica) plus the tail prompt's first token; replicas for a percentile target "
        "hold it with the spares down (REPLICAS_FOR_TTFT)"
    )


def _owned_lines(result: Any) -> list[str]:
    """The owned case of each accelerator, every assumption with its source, and what it comes to."""
    owned = result.assumptions.owned
    if owned is None:
        return []
    at = (
        "the fleet's own utilisation (this traffic alone; --own-utilisation for other work in the idle hours)"
        if owned.utilisation is None
        else f"{owned.utilisation:.0%} utilisation (given)"
    )
    lines = [
        f"  owned: the same GPUs bought, paid for every hour (GPU_HOUR_OWNED: capital recovered over the life at "
        f"the cost of capital, the residual's present value deducted, power x PUE, hosting per kW), per M tokens "
        f"at {at}"
    ]
    for gpu, case in result.owned.items():
        parts = []
        for name, figure in case.get("assumptions", {}).items():
            text = _OWNED_LABELS[name][0].format(figure["value"])
            source = "given" if figure["source"] == "given" else figure["source"]
            parts.append(f"{text} ({source})")
        if "reason" in case:
            lines.append(f"    {gpu}: not priced owned: {case['reason']}")
            continue
        rent = result.prices[gpu][0]
        payback = case["payback_months"]
        pays = (
            f"buying pays back in {payback:.1f} months against renting around the clock"
            if payback is not None
            else "renting costs less than running owned GPUs: buying never pays back"
        )
        lines.append(
            f"    {gpu}: {'; '.join(parts)}: ${case['usd_per_gpu_hour']:.4f} per GPU-hour owned (of which "
            f"${case['running_usd_per_gpu_hour']:.4f} power and hosting) against ${rent:g} rented; owning "
            f"costs less per token than renting only the hours used above "
            f"{case['breakeven_utilisation']:.1%} utilisation; {pays}"
        )
    return lines


def _prices(prices: dict[str, tuple[float, str]]) -> str:
    """Each accelerator's price per GPU-hour, and where the ones not given come from."""
    from ..catalog import STALE_AFTER_DAYS, load_prices

    shown = [
        f"{gpu} ${price:,.3f}".rstrip("0").rstrip(".") + "/GPU-h" + (" (given)" if source == "given" else "")
        for gpu, (price, source) in prices.items()
    ]
    table = load_prices()
    catalog = [gpu for gpu, (_, s) in prices.items() if s != "given"]
    dates = sorted({table.get(gpu).as_of.isoformat() for gpu in catalog})
    if dates:
        cites = "GPU_PRICE_SOURCE cites them; --gpu NAME=PRICE"
        shown[-1] += f"; the catalog's, on demand, as of {', '.join(dates)} ({cites})"
    stale = [gpu for gpu in catalog if table.stale(gpu)]
    if stale:
        shown[-1] += f"; over {STALE_AFTER_DAYS} days old: {', '.join(stale)} (check before signing)"
    return ", ".join(shown)


def _calibrated(result: Any) -> str:
    """The calibrated shares per weights precision in one phrase: the common value, and the accelerators that
    differ from it."""
    by_weights: dict[str, dict[str, str]] = {}
    for o in result.options:
        c = o.calibrated
        if c.decode_bandwidth_efficiency is None:
            continue
        peak = {"fp8_tflops": "FP8", "fp4_tflops": "FP4"}.get(str(c.extra.get("prefill_peak")), "BF16")
        share = f"{c.decode_bandwidth_efficiency:.0%} of bandwidth, {c.prefill_efficiency:.0%} of the {peak} peak"
        by_weights.setdefault(o.weights, {}).setdefault(o.gpu, share)
    parts = []
    for w, shares in by_weights.items():
        values = list(shares.values())
        common = max(dict.fromkeys(values), key=values.count)
        odd = [f"{gpu} {v}" for gpu, v in shares.items() if v != common]
        parts.append(f"{w} {common}" + (f" ({'; '.join(odd)})" if odd else ""))
    return "; ".join(parts) if parts else "none applies"


def _one_line_error(parser: argparse.ArgumentParser) -> Any:
    def error(message: str) -> NoReturn:
        print(f"xlsxplan plan: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)

    return error


def _strict(parser: argparse.ArgumentParser) -> Any:
    """The parser's parse_known_args, refusing what it does not know in its own one line (the top-level parser
    would print its usage first)."""
    known = parser.parse_known_args

    def parse(args: Any = None, namespace: Any = None) -> Any:
        found, extras = known(args, namespace)
        if extras:
            parser.error(f"unrecognized arguments: {' '.join(extras)}")
        return found, extras

    return parse


SPEC_FLAGS = (
    "usable_fraction",
    "decode_bandwidth_efficiency",
    "prefill_utilisation",
    "kv_overflow",
    "kv_link_gb_s",
    "hours_per_month",
    "gpus_per_replica",
    "servings",
    "max_gpus_per_replica",
    "max_num_tokens",
    "max_batch_size",
)
"""The plan inputs whose flags are made from their specification (:data:`xlsxplan.plan.inputs.PLAN_INPUTS`: flag,
unit and text); the others have flags of their own, with a CLI's spelling of "not given"."""
_SPEC_LISTS = ("gpus_per_replica", "servings")
"""Those of them given as comma-separated lists; the rest are numbers."""
_SPEC_WHOLE = ("max_gpus_per_replica", "max_num_tokens", "max_batch_size")
"""Those of them that are whole numbers."""


def _spec_flags(p: argparse.ArgumentParser) -> None:
    from ..plan.inputs import PLAN_INPUTS

    for inp in PLAN_INPUTS:
        if inp.name in SPEC_FLAGS:
            _FLAGS[inp.name] = inp.cli_flag
            unit = inp.doc.rsplit("[", 1)[1].rstrip("].")
            shown = inp.default if isinstance(inp.default, str) else f"{inp.default:g}"
            p.add_argument(
                inp.cli_flag,
                dest=inp.name,
                metavar="LIST" if inp.type_name == "str" else unit.upper().replace(" ", "_").replace("/", "_PER_"),
                help=f"{inp.doc.rsplit(' [', 1)[0]} (default {shown})",
            )


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "plan",
        help="search every deployment of a model for a traffic profile; the cheapest that meets the targets first",
        description="Enumerate accelerator x weight precision x KV-cache precision x GPUs per replica (1, 2, 4, 8) x "
        "aggregated or disaggregated serving, plan each as the serving template does, at the source text's and "
        "at the calibrated efficiencies, and rank the feasible ones by monthly cost; each rejected option says "
        "why. A target applies only when given. Exit status 1 when no option is feasible.",
    )
    p.error = _one_line_error(p)
    p.parse_known_args = _strict(p)
    p.add_argument("--model", help="a model preset, shipped or imported (xlsxplan model add)")
    p.add_argument("--requests-per-day", metavar="N", help="requests in a day")
    p.add_argument("--prompt-tokens", metavar="N", help="mean prompt per request, tokens")
    p.add_argument("--prompt-p95", metavar="N", help="95th-percentile prompt (default: the mean)")
    p.add_argument(
        "--max-prompt-tokens", metavar="N", help="longest prompt accepted; must fit alone (default: not checked)"
    )
    p.add_argument(
        "--prompt-sd",
        metavar="N",
        help="standard deviation of prompt lengths, for a paged KV cache's "
        "batch (default: a log-normal's through the mean and p95)",
    )
    p.add_argument("--output-tokens", metavar="N", help="visible answer per request, tokens")
    p.add_argument("--reasoning-tokens", metavar="N", help="hidden reasoning tokens per request (default 0)")
    p.add_argument("--peak-factor", metavar="X", help="peak hour over the day's average (default 3)")
    p.add_argument("--tokens-per-s", metavar="X", help="target: slowest decode per user (default: none)")
    p.add_argument(
        "--ttft-s", metavar="S", help="target: first token of the tail prompt within S seconds (default: none)"
    )
    p.add_argument(
        "--ttft-percentile",
        metavar="P",
        help="with --ttft-s: the share of requests whose first token, "
        "queueing for a batch slot at the peak included, comes within S seconds (0.99 for P99); "
        "replicas are added until it holds with the spares down. Alone: report P50, P90 and P99 under "
        "load",
    )
    p.add_argument(
        "--service-cv",
        metavar="X",
        help="spread of the time a request holds a batch slot over its mean, "
        "for --ttft-percentile (default 1: exponential, the exact M/M/c case)",
    )
    p.add_argument(
        "--arrival-cv",
        metavar="X",
        help="spread of the time between requests at the peak over its mean, for --ttft-percentile (default 1: "
        "Poisson arrivals; 2 or 3 for bursts, which the Allen-Cunneen approximation turns into longer waits)",
    )
    p.add_argument("--spare", metavar="N", help="spare replicas, in each pool when disaggregated (default 1)")
    p.add_argument("--min-replicas", metavar="N", help="fewest aggregated replicas (default 2)")
    p.add_argument(
        "--gpu",
        action="append",
        metavar="NAME[=USD_PER_HOUR]",
        help="an accelerator to try, with its "
        "price per GPU-hour (default: the catalog's); repeatable; without it, every accelerator the "
        "catalog prices",
    )
    p.add_argument(
        "--weights",
        metavar="LIST",
        help="weight precisions to try (default bf16,fp8); REST+EXPERTS stores a mixture of experts' routed experts "
        "apart, as shipped (gpt-oss: bf16+mxfp4)",
    )
    p.add_argument("--kv", metavar="LIST", help="KV-cache precisions to try (default bf16,fp8)")
    p.add_argument(
        "--weights-as",
        choices=("published", "params-x-bytes"),
        default="published",
        help="weights memory: as published checkpoints store them (default), or params x bytes as the "
        "source text counts",
    )
    p.add_argument(
        "--rank",
        choices=("assumed", "calibrated"),
        type=lambda text: "assumed" if text.strip().lower() == "ideal" else text.strip().lower(),
        default="calibrated",
        help="rank at the calibrated efficiencies (the default: the serving step validate scores published runs with) "
        "or the assumed ones (also 'ideal', as the table names that view: the source text's ideal efficiencies, "
        "under which its worked examples come out exactly)",
    )
    eng = p.add_argument_group(
        "memory as a serving engine allocates it (any of these: vLLM's rule in place of a flat usable share)"
    )
    eng.add_argument(
        "--gpu-memory-utilization",
        metavar="F",
        help="the engine's share of each GPU's memory "
        "(vLLM's gpu_memory_utilization, default 0.9; SGLang's mem_fraction_static)",
    )
    eng.add_argument(
        "--activation-reserve-gb",
        dest="reserve_gb",
        metavar="GB",
        help="held per GPU besides the weights: activation peak, non-torch memory, CUDA graphs (default 0)",
    )
    eng.add_argument("--block-size", metavar="N", help="tokens per KV block (vLLM 16, the default; SGLang 1)")
    spec = p.add_argument_group("speculative decoding (a draft model or a multi-token-prediction head)")
    spec.add_argument("--spec-draft", dest="draft", metavar="MODEL", help="a preset model that drafts tokens")
    spec.add_argument(
        "--spec-draft-params-b",
        dest="draft_params_b",
        metavar="B",
        help="or a draft head of B billion parameters (an MTP module, an EAGLE head), its KV cache left out",
    )
    spec.add_argument(
        "--spec-draft-weights", dest="draft_weights", metavar="PRECISION", help="the draft's weights (default bf16)"
    )
    spec.add_argument("--spec-tokens", dest="draft_tokens", metavar="N", help="tokens drafted a step (default 1)")
    spec.add_argument(
        "--spec-acceptance",
        dest="acceptance",
        metavar="A",
        help="chance each drafted token is accepted (SPEC_TOKENS_PER_STEP)",
    )
    spec.add_argument(
        "--spec-acceptance-rates",
        dest="acceptance_rates",
        metavar="LIST",
        help="or measured rates per position, e.g. 0.8,0.6,0.45 (vLLM's per-position acceptance rate; "
        "SPEC_ACCEPT_LENGTH)",
    )
    own = p.add_argument_group(
        "owning the GPUs (any of these prices the same fleet owned beside rented; defaults: "
        "the catalog's sourced figures, COST_SPEC and COST_SOURCE)"
    )
    own.add_argument("--own", action="store_true", help="price every option owned as well as rented")
    for flag, name, metavar, text in _OWN_HELP:
        own.add_argument(
            flag, dest=f"own_{name}", metavar=metavar, action="append" if name in _OWN_PER_GPU else None, help=text
        )
    p.add_argument("--top", metavar="N", help="show the N cheapest feasible options (default: all)")
    _spec_flags(p)
    plan_train.add_flags(p)
    plan_finance.add_flags(p)
    plan_portfolio.add_flags(p)
    p.add_argument("--json", action="store_true", help="print every option as JSON")
    p.set_defaults(handler=run)
