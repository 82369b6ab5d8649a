"""The ``xlsxplan`` command line: a thin layer over the core that catches only xlsxplan's own errors.

Exit status: 0 success; 1 the formula evaluated to an Excel error; 2 bad usage or a file that cannot be read or
written (argparse's own convention for usage errors).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any

from . import __version__
from .errors import XlsxplanError

__all__ = ["main", "format_value"]

EXIT_OK, EXIT_FORMULA_ERROR, EXIT_USAGE = 0, 1, 2


def format_value(value: Any, human: bool = False, unit: str = "") -> str:
    """A value as ``eval`` prints it: a number as Python prints it (integral floats without ``.0``), text as is.

    With ``human``, numbers get thousands separators and four significant figures, and the unit is appended.
    """
    from .cells import CellError

    if isinstance(value, CellError):
        return str(value)
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)):
        x = float(value)
        if human:
            text = _human_number(x)
            return f"{text} {unit}".rstrip() if unit and unit not in ("name", "names", "text") else text
        if x.is_integer() and abs(x) < 1e16:
            return str(int(x))
        return repr(x)
    if value is None:
        return ""
    return str(value)


def _human_number(x: float) -> str:
    if x == 0 or not math.isfinite(x):
        return str(x)
    magnitude = math.floor(math.log10(abs(x)))
    if magnitude >= 15 or magnitude < -3:
        return f"{x:.3e}"
    decimals = max(0, 3 - magnitude)
    return f"{x:,.{decimals}f}"


def _outer_unit(formula: str) -> str:
    from . import registry

    text = formula.strip().lstrip("=").strip()
    name = text.split("(", 1)[0].strip().upper()
    if text.endswith(")") and name in registry.FUNCTIONS:
        return registry.FUNCTIONS[name].unit
    return ""


def _cmd_eval(args: argparse.Namespace) -> int:
    from .engine import evaluate_formula

    result = evaluate_formula(args.formula)
    if result.error is not None:
        print(str(result.error), file=sys.stdout)
        return EXIT_FORMULA_ERROR
    unit = _outer_unit(args.formula) if args.format else ""
    value = result.value
    if hasattr(value, "shape"):  # an array result: one row per line, tab-separated
        for row in value:
            print("\t".join(format_value(v, args.format, unit) for v in row))
    else:
        print(format_value(value, args.format, unit))
    return EXIT_OK


def _cmd_functions(args: argparse.Namespace) -> int:
    from . import registry

    if args.json:
        out = []
        for fn in registry.FUNCTIONS.values():
            out.append(
                {
                    "name": fn.name,
                    "signature": fn.signature(),
                    "description": fn.summary,
                    "returns": fn.returns,
                    "unit": fn.unit,
                    "category": fn.category,
                    "python": f"{fn.func.__module__}.{fn.python_name}",
                    "args": [
                        {
                            "name": a.name,
                            "doc": a.doc,
                            "unit": a.unit,
                            "optional": a.optional,
                            "default": a.default if a.optional else None,
                            "allowed": a.domain.describe() if a.domain else None,
                        }
                        for a in fn.args
                    ],
                }
            )
        print(json.dumps(out, indent=2))
        return EXIT_OK
    category = None
    for fn in registry.FUNCTIONS.values():
        if fn.category != category:
            category = fn.category
            print(f"\n{category}")
        print(f"  {fn.signature()}  ->  {fn.unit}")
        print(f"      {fn.summary}")
        for a in fn.args:
            extra = f" (default {a.default_text()})" if a.optional else ""
            print(f"      {a.name}: {a.doc} [{a.unit}]{extra}")
    return EXIT_OK


def _cmd_docs(args: argparse.Namespace) -> int:
    from pathlib import Path

    from . import reference

    root = Path(args.root)
    if args.check:
        readme = (root / "README.md").read_text(encoding="utf-8")
        page = root / "docs" / "FUNCTIONS.md"
        stale = []
        if reference.splice(readme, reference.readme_table()) != readme:
            stale.append("README.md")
        if not page.exists() or page.read_text(encoding="utf-8") != reference.full_reference():
            stale.append("docs/FUNCTIONS.md")
        for name in stale:
            print(f"stale: {name} (run `xlsxplan docs`)")
        return 1 if stale else EXIT_OK
    for path in reference.write(root):
        print(f"wrote {path}")
    return EXIT_OK


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="xlsxplan",
        description="LLM capacity, cost and training planning: Excel functions, template workbooks and "
        "headless recalculation.",
    )
    parser.add_argument("--version", action="version", version=f"xlsxplan {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("eval", help="evaluate one Excel formula and print its value")
    p.add_argument("formula", help='an Excel formula, e.g. "=ROUND(DECODE_TOKS(72.7,1,2,3.35),0)"')
    p.add_argument("--format", action="store_true", help="group digits, round to 4 figures and add the unit")
    p.set_defaults(handler=_cmd_eval)

    p = sub.add_parser("functions", help="list the Excel functions with their arguments")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=_cmd_functions)

    p = sub.add_parser("docs", help="regenerate the function reference in README.md and docs/FUNCTIONS.md")
    p.add_argument("--root", default=".", help="the checkout holding README.md (default: here)")
    p.add_argument("--check", action="store_true", help="only report stale files; exit 1 if any")
    p.set_defaults(handler=_cmd_docs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except XlsxplanError as err:
        print(f"xlsxplan: error: {err.message}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("xlsxplan: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
