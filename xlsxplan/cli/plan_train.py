"""``xlsxplan plan --train``: the cheapest training layout that fits in memory and finishes within the budget and the
deadline (:mod:`xlsxplan.plan.train`), its flags made from the training plan's input specification
(:data:`xlsxplan.plan.train_inputs.TRAIN_INPUTS`)."""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from typing import Any

from .common import EXIT_FORMULA_ERROR, EXIT_OK, EXIT_USAGE, flag_number
from .common import UsageError as _Usage

SHARED = {"model": "model", "gpus": "gpu", "usable_fraction": "usable_fraction"}
"""Training inputs whose flag the serving plan already has (``--model``, ``--gpu``, ``--usable-fraction``): one flag,
read by whichever plan runs."""

SERVING_ONLY = ("requests_per_day", "prompt_tokens", "output_tokens", "tokens_per_s", "ttft_s", "ttft_percentile")
"""Serving flags a training plan refuses rather than ignores."""


def _dest(name: str) -> str:
    return SHARED.get(name, f"train_{name}")


def add_flags(p: argparse.ArgumentParser) -> None:
    """The ``--train`` switch and a flag for each training input that the serving plan does not already have."""
    from ..plan.train_inputs import TRAIN_INPUTS

    group = p.add_argument_group(
        "training (--train: every layout of a training run, the cheapest that fits and finishes first; --model, "
        "--gpu, --usable-fraction, --top and --json apply too)"
    )
    group.add_argument(
        "--train",
        action="store_true",
        help="plan a training run instead of serving: accelerator x GPUs x tensor x pipeline x data x expert "
        "parallel x ZeRO stage x micro-batch x recompute x precision",
    )
    for inp in TRAIN_INPUTS:
        if inp.name in SHARED:
            continue
        unit = inp.doc.rsplit("[", 1)[1].rstrip("].")
        shown = inp.default if isinstance(inp.default, str) else f"{inp.default:g}"
        group.add_argument(
            inp.cli_flag,
            dest=_dest(inp.name),
            metavar="LIST" if inp.type_name == "str" else unit.upper().replace(" ", "_").replace("/", "_PER_"),
            help=f"{inp.doc.rsplit(' [', 1)[0]} (default {shown})".replace("%", "%%"),
        )


def wanted(args: argparse.Namespace) -> bool:
    """Whether the command line asks for a training plan: ``--train``, or a training-only flag (refused without it)."""
    from ..plan.train_inputs import TRAIN_INPUTS

    return bool(args.train) or any(
        getattr(args, _dest(i.name), None) is not None for i in TRAIN_INPUTS if i.name not in SHARED
    )


def _given(args: argparse.Namespace) -> dict[str, Any]:
    """The training inputs the flags give, as numbers where the specification says so."""
    from ..plan.train_inputs import TRAIN_INPUTS

    if not args.train:
        first = next(i.cli_flag for i in TRAIN_INPUTS if getattr(args, _dest(i.name), None) is not None)
        raise _Usage(f"{first} plans a training run: add --train")
    serving = [f"--{n.replace('_', '-')}" for n in SERVING_ONLY if getattr(args, n, None) is not None]
    if serving:
        raise _Usage(f"{serving[0]} is for serving plans: --train plans a training run and takes none")
    given: dict[str, Any] = {}
    for inp in TRAIN_INPUTS:
        text = getattr(args, _dest(inp.name), None)
        if text is None:
            continue
        if inp.name == "gpus":
            given["gpus"] = ",".join(text)
            continue
        if inp.type_name == "str":
            given[inp.name] = text
            continue
        given[inp.name] = flag_number(text, inp.cli_flag, inp.type_name == "int")
    return given


def _top(text: str | None) -> int:
    if text is None:
        return 0
    if not text.strip().isdigit():
        raise _Usage(f"--top must be a whole number, got {text!r}")
    return int(text)


def _flag_message(message: str, name: str) -> str:
    """An error naming an input, spelt with its flag."""
    from ..plan.train_inputs import TRAIN_INPUTS

    flags = {i.name: i.cli_flag for i in TRAIN_INPUTS}
    if name not in flags:
        return message
    flag = flags[name]
    if message.startswith(name) and message[len(name) : len(name) + 1] in (" ", ":"):
        message = flag + message[len(name) :]
    elif flag not in message:
        message = f"{flag}: {message}"
    for other, spelt in flags.items():  # the other inputs it names, as flags
        if "_" in other:
            message = re.sub(rf"(?<![\w-]){other}\b", spelt, message)
    return message


def run(args: argparse.Namespace) -> int:
    """Plan the training run the flags describe; print it as a table or JSON. Exit 1 when no option is feasible."""
    from ..errors import XlsxplanError
    from ..plan.train import plan_training

    try:
        top = _top(args.top)
        result = plan_training(**_given(args))
    except _Usage as err:
        print(f"xlsxplan plan: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except XlsxplanError as err:
        print(f"xlsxplan plan: error: {_flag_message(err.message, err.argument or '')}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        print(render(result, top))
    return EXIT_OK if result.feasible else EXIT_FORMULA_ERROR


_HEADER = "# gpu gpus tp pp dp ep zero mb recompute prec params GB/GPU step_s MFU goodput days GPU-h cost status"
_HEADER_CELLS = tuple(x.replace("_", " ") for x in _HEADER.split())


def _money(x: float) -> str:
    return "inf" if not math.isfinite(x) else f"${x:,.0f}"


def render(result: Any, top: int = 0) -> str:
    """The training plan as a terminal reads it: the run, how the size was chosen, the options ranked (the ``top``
    first, 0 for all), which limit binds, and the assumptions that move the result."""
    from ..plan.train import PRECISIONS

    a = result.inputs
    lines = []
    limits = [
        f"budget ${a['budget_usd']:,.0f}" if a["budget_usd"] else "",
        f"at most {a['max_days']:g} days" if a["max_days"] else "",
        f"at most {a['max_gpus']:,} GPUs",
    ]
    what = a["model"] or "a dense model"
    lines.append(
        f"Training {what}: {a['seq_len']:,.0f}-token sequences, {a['global_batch_tokens']:,.0f} tokens a step; "
        + ", ".join(x for x in limits if x)
    )
    for gpu, s in result.sizing.items():
        lines.append(
            f"  size chosen on {gpu}: {s['params_b']:g}B parameters on {s['tokens'] / 1e9:,.4g}B tokens "
            f"(N = sqrt(C t / {6 * a['tokens_per_param']:g}), C t at {s['sustained_flops_per_gpu'] / 1e12:,.0f} "
            "TFLOP/s a GPU sustained: the best layout's MFU x goodput x peak)"
        )
    rows = [list(_HEADER_CELLS)]
    shown = result.options if not top else result.options[:top]
    for k, o in enumerate(shown, 1):
        rows.append(
            [
                str(k),
                o.gpu,
                f"{o.gpus:,}",
                str(o.tp),
                str(o.pp),
                str(o.dp),
                str(o.ep),
                "3/FSDP" if o.zero == 3 else str(o.zero),
                str(o.micro_batch),
                o.recompute,
                o.precision,
                f"{o.params_b:g}B",
                f"{o.memory_gb_per_gpu:,.1f}",
                "" if math.isnan(o.step_s) else f"{o.step_s:.2f}",
                "" if math.isnan(o.mfu) else f"{o.mfu:.1%}",
                "" if math.isnan(o.goodput) else f"{o.goodput:.1%}",
                "" if math.isnan(o.days) else f"{o.days:,.1f}",
                "" if math.isnan(o.gpu_hours) else f"{o.gpu_hours:,.0f}",
                "" if math.isnan(o.usd) else _money(o.usd),
                "feasible" if o.feasible else o.reason,
            ]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    right = {0, 2, 3, 4, 5, 6, 8, 11, 12, 13, 14, 15, 16, 17, 18}
    for r in rows:
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r[:-1], widths))]
        lines.append("  " + "  ".join(cells) + "  " + r[-1])
    if top and len(result.options) > top:
        lines.append(f"  ... {len(result.options) - top:,} more (--top 0 for all)")
    for limit in result.limits:
        lines.append(f"  {'binds' if limit['binds'] else 'holds'}: {limit['text']}")
    for note in result.skipped:
        lines.append(f"  not tried: {note}")
    best = result.options[0] if result.options else None
    if best is not None:
        from ..calibration import efficiency_basis

        lines.append(
            "  step time: PaLM's FLOPs a token (6N + 12 L H Q T, the forward again where recomputed) at the "
            f"calibrated MFU (rank 1: {best.calibrated_mfu:.1%}, EFFICIENCY train_mfu for {best.gpu} {best.precision} "
            f"at its width, {efficiency_basis('train_mfu', best.gpu, best.precision).split(': ', 1)[0]}; in FP8 "
            "the attention core at the BF16 peak and the casts to FP8 at the memory bandwidth), plus "
            f"tensor-parallel all-reduces on the scale-up link, the pipeline bubble (p-1)/(m+p-1), expert "
            f"all-to-alls, and the data-parallel gradient traffic ({a['dp_overlap']:.0%} hidden behind the backward "
            f"pass) over {a['network_gb_s']:g} GB/s a GPU between nodes of {a['gpus_per_node']}; MFU counts 6N only"
        )
        lines.append(
            f"  goodput: {a['failures_per_gpu_hour']:.3g} interruptions a GPU-hour (Llama 3 405B: 419 in 54 days on "
            f"16,384 H100s), a checkpoint of the weights and optimizer states at {a['checkpoint_gb_s']:.3g} GB/s a "
            f"GPU every Young's interval sqrt(2 C M), {a['restart_s']:g} s a restart: the effective-time ratio"
        )
        lines.append(
            f"  memory: weights, gradients and optimizer states by ZeRO stage, activations of the first stage's "
            f"in-flight micro-batches (fused attention, no dropout), against {a['usable_fraction']:.0%} of each "
            f"GPU's memory; {', '.join(PRECISIONS)} keep the same state"
        )
    return "\n".join(lines)
