"""``xlsxplan eval FORMULA``: print the value of one Excel formula."""

from __future__ import annotations

import argparse
import sys

from .common import EXIT_FORMULA_ERROR, EXIT_OK, format_value, warn_catalog_problems

ORDER = 10


def _outer_unit(formula: str) -> str:
    """The unit of the formula's result when the whole formula is one registry call, ``=KV_GB(...)``; else "".

    Anything around the call (``=TRAIN_FLOPS(...)/FLOPS_6N(...)`` is seconds, not FLOPs) leaves the unit unknown.
    Parentheses inside string literals do not count.
    """
    import re

    from .. import registry

    text = formula.strip().removeprefix("=").strip()
    m = re.match(r"([A-Za-z_][A-Za-z0-9_.]*)\s*\(", text)
    if not m or m.group(1).upper() not in registry.FUNCTIONS:
        return ""
    depth, in_string = 0, False
    for i in range(m.end() - 1, len(text)):
        ch = text[i]
        if ch == '"':
            in_string = not in_string  # a doubled "" inside a literal closes and reopens it: same effect
        elif not in_string and ch == "(":
            depth += 1
        elif not in_string and ch == ")":
            depth -= 1
            if depth == 0:
                return registry.FUNCTIONS[m.group(1).upper()].unit if not text[i + 1 :].strip() else ""
    return ""


def run(args: argparse.Namespace) -> int:
    from ..cells import collect_warnings
    from ..engine import evaluate_formula

    warn_catalog_problems()
    with collect_warnings() as warnings:
        result = evaluate_formula(args.formula)
    for warning in warnings:  # a legal but implausible input, e.g. 3350 where TB/s is meant
        print(f"xlsxplan: warning: {warning}", file=sys.stderr)
    if result.error is not None:
        print(str(result.error))
        return EXIT_FORMULA_ERROR
    unit = _outer_unit(args.formula) if args.format else ""
    value = result.value
    if hasattr(value, "shape"):  # an array result: one row per line, tab-separated
        for row in value:
            print("\t".join(format_value(v, args.format, unit) for v in row))
    else:
        print(format_value(value, args.format, unit))
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval",
        help="evaluate one Excel formula and print its value",
        description="Evaluate one Excel formula of constants with every xlsxplan function and Excel's native ones. "
        "Prints the bare value; an error prints as its Excel value and reason, with exit status 1.",
    )
    p.add_argument("formula", help='an Excel formula, e.g. "=ROUND(DECODE_TOKS(72.7,1,2,3.35),0)"')
    p.add_argument("--format", action="store_true", help="group digits, round to 4 figures and add the unit")
    p.set_defaults(handler=run)
