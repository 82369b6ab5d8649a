"""``xlsxplan excel [WORKBOOK]``: how to get the functions into Excel, and what can be checked from here."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import EXIT_FORMULA_ERROR, EXIT_OK, EXIT_USAGE

ORDER = 30


def _steps(title: str, steps: tuple[str, ...]) -> None:
    print(title)
    for i, step in enumerate(steps, start=1):
        print(f"  {i}. {step}")
    print()


def _write_lite(folder: Path, force: bool) -> int:
    import sys

    from ..excel import lite
    from ..infra.fileio import atomic_write_text, ensure_folder

    if folder.exists() and not folder.is_dir():
        print(f"xlsxplan: error: {folder} is a file, not a folder", file=sys.stderr)
        return EXIT_USAGE
    targets = {
        folder / "main.py": lite.lite_bundle(),
        folder / "requirements.txt": lite.lite_requirements(),
    }
    existing = [str(p) for p in targets if p.exists()]
    if existing and not force:
        verb = "exists" if len(existing) == 1 else "exist"
        print(f"xlsxplan: error: {' and '.join(existing)} {verb} already; use --force to replace", file=sys.stderr)
        return EXIT_USAGE
    ensure_folder(folder)  # WorkbookError (one line, exit 2) if it cannot be made
    for path, text in targets.items():
        atomic_write_text(path, text)
        print(f"wrote {path} ({len(text.encode('utf-8')):,} bytes)")
    print()
    return EXIT_OK


def run(args: argparse.Namespace) -> int:
    from ..excel import setup

    if args.lite is not None:
        status = _write_lite(Path(args.lite), args.force)
        if status != EXIT_OK:
            return status
    if not args.checks_only:
        _steps("Windows desktop Excel (classic xlwings add-in)", setup.CLASSIC_STEPS)
        _steps("Excel on Windows, macOS or the web (xlwings Lite add-in)", setup.LITE_STEPS)
    checks = setup.machine_checks()
    print("Checks on this machine")
    for check in checks:
        print(f"  {check.label:<5} {check.text}")
    if args.workbook:
        path = Path(args.workbook)
        book_checks = setup.workbook_checks(path)  # WorkbookError -> exit 2 in cli.main
        print(f"Checks of {path}")
        for check in book_checks:
            print(f"  {check.label:<5} {check.text}")
        checks += book_checks
    return EXIT_FORMULA_ERROR if any(c.ok is False for c in checks) else EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "excel",
        help="print how to set up the functions in Excel (classic xlwings or xlwings Lite) and check what it can",
        description="Print the set-up steps for Windows desktop Excel (the classic xlwings add-in) and for Excel on "
        "Windows, macOS or the web (xlwings Lite), then check this machine and, if given, a workbook. Exit status 1 "
        "when a check fails.",
    )
    p.add_argument(
        "workbook",
        nargs="?",
        help="a workbook to check: xlwings.conf sheet, .xlsm, imported functions, reference to xlwings",
    )
    p.add_argument("--lite", metavar="FOLDER", help="write main.py and requirements.txt for xlwings Lite into FOLDER")
    p.add_argument("--force", action="store_true", help="with --lite, replace files that exist")
    p.add_argument("--checks-only", action="store_true", help="print only the checks, not the steps")
    p.set_defaults(handler=run)
