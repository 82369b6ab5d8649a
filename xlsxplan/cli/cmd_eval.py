"""``xlsxplan eval FORMULA``: print the value of one Excel formula."""

from __future__ import annotations

import argparse
import sys

from .common import EXIT_FORMULA_ERROR, EXIT_OK, format_value

ORDER = 10

_SPECS = {"MODEL_SPEC": "model", "GPU_SPEC": "accelerator"}


def _outer_call(formula: str) -> tuple[str, list[str]] | None:
    """The registry name and the argument texts when the whole formula is one registry call, ``=KV_GB(...)``;
    else None. Anything around the call (``=TRAIN_FLOPS(...)/FLOPS_6N(...)`` is seconds, not FLOPs) makes it None.
    Parentheses and commas inside string literals do not count."""
    import re

    from .. import registry

    text = formula.strip().removeprefix("=").strip()
    m = re.match(r"([A-Za-z_][A-Za-z0-9_.]*)\s*\(", text)
    if not m or m.group(1).upper() not in registry.FUNCTIONS:
        return None
    depth, in_string, args, start = 0, False, [], m.end()
    for i in range(m.end() - 1, len(text)):
        ch = text[i]
        if ch == '"':
            in_string = not in_string  # a doubled "" inside a literal closes and reopens it: same effect
        elif not in_string and ch in "({":
            depth += 1
        elif not in_string and ch == "," and depth == 1:
            args.append(text[start:i].strip())
            start = i + 1
        elif not in_string and ch in ")}":
            depth -= 1
            if depth == 0:
                if text[i + 1 :].strip():
                    return None
                last = text[start:i].strip()
                return m.group(1).upper(), args + [last] if args or last else []
    return None


def _literal(arg: str) -> str | None:
    """The text of a string literal argument (``"layers"``), None for anything else."""
    if len(arg) >= 2 and arg[0] == arg[-1] == '"' and '"' not in arg[1:-1].replace('""', ""):
        return arg[1:-1].replace('""', '"')
    return None


def _result_kind(formula: str) -> tuple[str, bool]:
    """The unit of the formula's result and whether it is a whole number, when the whole formula is one registry
    call; ("", False) when that is not known.

    MODEL_SPEC and GPU_SPEC take the unit of the figure they return, read from the catalog, when the field is
    written as text in the formula (``=GPU_SPEC("H200","bandwidth_tb_s")`` is TB/s); otherwise no unit.
    """
    from .. import registry
    from ..catalog import figure_unit

    call = _outer_call(formula)
    if call is None:
        return "", False
    name, args = call
    if name in _SPECS:
        field = _literal(args[1]) if len(args) == 2 else None
        try:
            return figure_unit(_SPECS[name], field) if field is not None else ("", False)  # type: ignore[arg-type]
        except KeyError:  # no such figure: the result is an error, printed without a unit anyway
            return "", False
    fn = registry.FUNCTIONS[name]
    return fn.unit, fn.whole


def run(args: argparse.Namespace) -> int:
    from ..errors import CellError
    from ..headless.engine import evaluate_formula
    from ..infra.system import MEMORY_LIMIT_GB, address_space_cap_gb, limit_address_space
    from ..sheet.cells import collect_warnings

    # =LEN(REPT("x",1E+10)) fails in the formula, not the machine
    limit_address_space(address_space_cap_gb(MEMORY_LIMIT_GB))
    with collect_warnings() as warnings:
        result = evaluate_formula(args.formula)
    for warning in warnings:  # a legal but implausible input, e.g. 3350 where TB/s is meant
        print(f"xlsxplan: warning: {warning}", file=sys.stderr)
    if result.error is not None:
        print(str(result.error))
        return EXIT_FORMULA_ERROR
    unit, whole = _result_kind(args.formula) if args.format else ("", False)
    value = result.value
    if hasattr(value, "shape"):  # an array result: one row per line, tab-separated
        for row in value:
            print("\t".join(format_value(v, args.format, unit, whole) for v in row))
        failed = any(isinstance(v, CellError) for v in value.ravel())
        return EXIT_FORMULA_ERROR if failed else EXIT_OK
    print(format_value(value, args.format, unit, whole))
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval",
        help="evaluate one Excel formula and print its value",
        description="Evaluate one Excel formula of constants with every xlsxplan function and Excel's native ones. "
        "Prints the bare value; an error prints as its Excel value and reason, with exit status 1. An array result "
        "prints one row per line, each failed element as its error value and reason, and exits 1 if any element "
        "failed.",
    )
    p.add_argument("formula", help='an Excel formula, e.g. "=ROUND(DECODE_TOKS(72.7,1,2,3.35),0)"')
    p.add_argument(
        "--format",
        action="store_true",
        help="group digits, round to 4 figures (a whole-number result such as MAX_BATCH, REPLICAS or a layer count "
        "prints whole) and add the unit when the formula is one xlsxplan call",
    )
    p.set_defaults(handler=run)
