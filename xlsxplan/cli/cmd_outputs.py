"""``xlsxplan outputs BOOK``: every named result of a workbook (the headline outputs of the templates), with its
cell, value, unit and label: what ``xlsxplan recalc --show NAME`` shows."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .common import EXIT_OK, terminal_text

ORDER = 32


def run(args: argparse.Namespace) -> int:
    from ..errors import CellError
    from ..headless.workbook import Workbook
    from .cmd_inputs import list_outputs

    wb = Workbook.load(Path(args.book))
    rows = list_outputs(wb)
    if args.json:
        out = [
            {**row, "value": {"error": row["value"].code} if isinstance(row["value"], CellError) else row["value"]}
            for row in rows
        ]
        print(json.dumps({"book": str(args.book), "outputs": out}, indent=2))
        return EXIT_OK
    if not rows:
        print(
            f"{args.book} names no result; show any cell or range by its address: "
            f"xlsxplan recalc {args.book} --show Sheet!B4 (or Sheet!A:B)"
        )
        return EXIT_OK
    t = terminal_text  # a workbook's text, never raw to a terminal
    table = [("output", "cell", "value", "unit", "label")]
    table += [(t(r["name"]), t(r["cell"]), t(r["text"]), t(r["unit"]), t(r["label"])) for r in rows]
    widths = [max(len(r[i]) for r in table) for i in range(4)]
    for r in table:
        print(("  ".join(f"{r[i]:<{widths[i]}}" for i in range(4)) + "  " + r[4]).rstrip())
    return EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "outputs",
        help="list the named results of a workbook that `xlsxplan recalc --show NAME` shows",
        description="List every named result of BOOK: each defined name of one cell that holds a formula (the "
        "templates name their headline outputs: the fleet, its GPUs, the monthly cost, the cost per million "
        "input and output tokens, the first token, the decode speed, the master check), with its cell, its value "
        "as the cell shows it, its unit (the column headed Unit) and its label. Nothing is written.",
    )
    p.add_argument("book", help="the workbook (.xlsx, .xlsm, .xltx, .xltm)")
    p.add_argument("--json", action="store_true", help="print JSON: every named output")
    p.set_defaults(handler=run)
