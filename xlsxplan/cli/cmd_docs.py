"""``xlsxplan docs``: regenerate the function reference in README.md and docs/FUNCTIONS.md."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import EXIT_FORMULA_ERROR, EXIT_OK

ORDER = 90


def run(args: argparse.Namespace) -> int:
    from . import reference

    root = Path(args.root)
    if args.check:
        stale = reference.stale(root)  # an unreadable checkout raises WorkbookError: one line, exit 2
        for name in stale:
            print(f"stale: {name} (run `xlsxplan docs`)")
        return EXIT_FORMULA_ERROR if stale else EXIT_OK
    for path in reference.write(root):
        print(f"wrote {path}")
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("docs", help="regenerate the function reference in README.md and docs/FUNCTIONS.md")
    p.add_argument("--root", default=".", help="the checkout holding README.md (default: here)")
    p.add_argument("--check", action="store_true", help="only report stale files; exit 1 if any")
    p.set_defaults(handler=run)
