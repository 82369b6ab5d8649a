"""``xlsxplan functions``: list the Excel functions with their arguments."""

from __future__ import annotations

import argparse
import json

from .common import EXIT_OK

ORDER = 20


def describe_all() -> list[dict]:
    """The registry as plain data, for ``--json``."""
    from .. import registry

    return [
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
        for fn in registry.FUNCTIONS.values()
    ]


def run(args: argparse.Namespace) -> int:
    from .. import registry

    if args.json:
        print(json.dumps(describe_all(), indent=2))
        return EXIT_OK
    category = None
    for fn in registry.FUNCTIONS.values():
        if fn.category != category:
            if category is not None:
                print()  # a blank line between categories, none before the first
            category = fn.category
            print(category)
        print(f"  {fn.signature()}  ->  {fn.unit}")
        print(f"      {fn.summary}")
        for a in fn.args:
            extra = f" (default {a.default_text()})" if a.optional else ""
            print(f"      {a.name}: {a.doc} [{a.unit}]{extra}")
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("functions", help="list the Excel functions with their arguments")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(handler=run)
