"""``xlsxplan build [--out DIR] [--functions] [--force]``: write the template workbooks, recalculated, and print their
summaries: the portable edition (native formulas, no add-in needed) by default, the functions (add-in) edition with
``--functions`` (``serving_plan_functions.xlsx``, ...; :mod:`xlsxplan.templates.build`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import EXIT_FORMULA_ERROR, EXIT_OK

ORDER = 30


def run(args: argparse.Namespace) -> int:
    from ..headless import Workbook
    from ..templates.build import bill_summary, build_all, master_check, serving_summary, training_summary
    from ..templates.serving import FILENAME as SERVING
    from ..templates.training import FILENAME as TRAINING

    edition = "functions" if args.functions else "portable"
    built = build_all(Path(args.out), Workbook, force=args.force, edition=edition)
    print(serving_summary(built[SERVING]))
    print()
    print(training_summary(built[TRAINING]))
    print()
    print(bill_summary(built[SERVING], str(built[SERVING].path)))
    failed = [b.path.name for b in built.values() if master_check(b) != 0]
    return EXIT_FORMULA_ERROR if failed else EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "build",
        help="write the serving and training plan templates, recalculated, and print their summaries",
        description="Generate workbooks/serving_plan.xlsx and workbooks/training_plan.xlsx with openpyxl, "
        "recalculate them headlessly so they carry their values, and print the plans for the shipped examples "
        '(the support assistant of "Back-of-the-Envelope Estimation for LLM Systems", the Parameter Golf record of '
        '"Estimating the Compute and Memory Needed for Language Models"), read back from the recalculated cells. '
        "Exit status 1 if a template's master check fails.",
    )
    p.add_argument("-o", "--out", default="workbooks", metavar="DIR", help="folder to write into (default: workbooks)")
    p.add_argument(
        "--functions",
        action="store_true",
        help="write the add-in edition (xlsxplan's functions in the cells) as *_functions.xlsx",
    )
    p.add_argument(
        "--force", action="store_true", help="replace files in DIR even if they were edited since they were built"
    )
    p.set_defaults(handler=run)
