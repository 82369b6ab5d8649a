"""``xlsxplan recalc BOOK.xlsx``: recalculate a workbook headlessly and write it with every value cached."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from ..errors import WorkbookError
from .common import EXIT_FORMULA_ERROR, EXIT_OK, format_value

ORDER = 30


def address_space_headroom_gb() -> float:
    """Address space allowed above the memory limit: shared libraries, thread stacks and malloc arenas reserve far
    more than they use, and more on machines with more cores (8 GB, or 1 GB per core if that is more)."""
    return float(max(8, os.cpu_count() or 1))


def split_assignment(text: str) -> tuple[str, str]:
    """``Sheet!B3=42`` -> ("Sheet!B3", "42"); an ``=`` inside a quoted sheet name is part of the name."""
    i = 0
    if text.startswith("'"):
        i = 1
        while i < len(text):
            if text[i] == "'":
                if text[i + 1 : i + 2] == "'":
                    i += 2
                    continue
                break
            i += 1
    eq = text.find("=", i)
    if eq <= 0:
        raise WorkbookError(f"--set {text!r}: write it as CELL=VALUE or NAME=VALUE, e.g. Inputs!B3=42")
    return text[:eq].strip(), text[eq + 1 :]


def _json_value(value: Any) -> Any:
    from ..cells import CellError

    if isinstance(value, CellError):
        return {"error": value.code, "message": value.message}
    return value


def _shown(wb: Any, refs: list[str]) -> list[dict[str, Any]]:
    """One row per cell of each ``--show`` reference: the reference asked for, the cell, its value."""
    return [{"ref": ref, "cell": cell, "value": value} for ref in refs for cell, value in wb.cells(ref)]


def _progress(enabled: bool) -> tuple[Any, Any]:
    if not enabled:
        return None, None
    from tqdm import tqdm

    bar = tqdm(total=0, unit="cell", desc="loading", leave=False, file=sys.stderr)

    def update(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    return bar, update


def run(args: argparse.Namespace) -> int:
    from ..cells import CellError
    from ..safety import Limits, limit_address_space
    from ..workbook import Workbook, default_output, parse_value

    source = Path(args.book)
    out = Path(args.output) if args.output else default_output(source)
    sets = []
    for text in args.set or []:
        ref, typed = split_assignment(text)
        sets.append((ref, parse_value(typed, f"--set {ref}")))
    limits = Limits()
    # a formula can ask for more memory than the file shows (=MUNIT(100000)): let that fail as MemoryError
    limit_address_space(limits.max_memory_gb + address_space_headroom_gb())
    show_bar = sys.stderr.isatty() and not args.quiet
    bar, update = _progress(show_bar)
    try:
        wb = Workbook.load(source, progress=update)
        if bar is not None:
            bar.set_description("calculating")
        for ref, value in sets:
            wb.set(ref, value)
        wb.calculate()
        shown = _shown(wb, args.show or [])
        errors = wb.errors()
        if bar is not None:
            bar.set_description("writing")
        wb.save(out, notes=not args.no_notes)
    finally:
        if bar is not None:
            bar.close()
    failed = any(isinstance(row["value"], CellError) for row in shown)
    if args.json:
        report = {
            "input": str(source),
            "output": str(out),
            "shown": [{**row, "value": _json_value(row["value"])} for row in shown],
            "errors": [{"cell": cell, "error": e.code, "message": e.message} for cell, e in errors.items()],
        }
        print(json.dumps(report, indent=2))
        return EXIT_FORMULA_ERROR if failed else EXIT_OK
    if shown:
        width = max(len(row["cell"] or row["ref"]) for row in shown)
        for row in shown:
            label = row["cell"] or row["ref"]
            name = f"  ({row['ref']})" if row["cell"] and "!" not in row["ref"] else ""
            print(f"{label:<{width}}  {format_value(row['value'])}{name}".rstrip())
    if not args.quiet:
        count = len(errors)
        summary = f"wrote {out}"
        if count:
            first = next(iter(errors.items()))
            summary += f"; {count} error cell{'s' if count > 1 else ''}, e.g. {first[0]}: {first[1]}"
        print(summary, file=sys.stderr)
    return EXIT_FORMULA_ERROR if failed else EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "recalc",
        help="recalculate a workbook without Excel and write it with every value cached",
        description="Recalculate every formula of BOOK (xlsxplan functions and Excel's native ones) and write a "
        "copy in which each formula keeps its text and carries its computed value, so Excel, LibreOffice, file "
        "previewers and openpyxl(data_only=True) show the numbers. The input is never changed unless -o names it. "
        "Error cells get their Excel error value and a note with the reason. Exit status: 0 written; 1 a --show "
        "cell is an error; 2 the file cannot be read, is refused as unsafe, or cannot be written.",
    )
    p.add_argument("book", help="the workbook to recalculate (.xlsx, .xlsm, .xltx, .xltm)")
    p.add_argument("-o", "--output", help="where to write (default: BOOK.recalc.xlsx beside BOOK; overwritten)")
    p.add_argument(
        "--set",
        action="append",
        metavar="REF=VALUE",
        help="set an input cell or defined name first, e.g. --set Inputs!B3=42, --set Params_B=70, "
        "--set GPU=H200, --set Flag=TRUE, --set 'Rate=\"1,5\"' (quotes keep text); repeatable",
    )
    p.add_argument(
        "--show",
        action="append",
        metavar="REF",
        help="print a cell, range or defined name after recalculating (errors with their reason); repeatable",
    )
    p.add_argument("--json", action="store_true", help="print a JSON report (shown values, every error cell)")
    p.add_argument("--no-notes", action="store_true", help="do not write notes with the reasons on error cells")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary line")
    p.set_defaults(handler=run)
