"""``xlsxplan recalc BOOK.xlsx``: recalculate a workbook headlessly and write it with every value cached."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..errors import WorkbookError, XlsxplanError
from .common import EXIT_FORMULA_ERROR, EXIT_OK, format_value

ORDER = 30


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
    from ..errors import CellError

    if isinstance(value, CellError):
        return {"error": value.code, "message": value.message}
    return value


def _shown(wb: Any, refs: list[str]) -> list[dict[str, Any]]:
    """One row per cell of each ``--show`` reference: the reference asked for, the cell, its value."""
    return [{"ref": ref, "cell": cell, "value": value} for ref in refs for cell, value in wb.cells(ref)]


def _one_line(text: str) -> str:
    """A value for the ``--show`` table, on one line: a backslash, line breaks and tabs escaped (``\\n``)."""
    return text.replace("\\", "\\\\").replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")


class _Progress:
    """The progress bar on a terminal: one bar whose description, unit and total follow the phase (loading cells,
    calling xlsxplan's functions, writing parts), redrawn twice a second from a thread so that the elapsed time moves
    even between updates. Does nothing when ``enabled`` is false (output piped, or --quiet)."""

    def __init__(self, enabled: bool) -> None:
        self.bar: Any = None
        if not enabled:
            return
        import threading

        from tqdm import tqdm

        self.bar = tqdm(total=0, unit="cell", desc="loading", leave=False, file=sys.stderr)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._redraw, name="xlsxplan-progress", daemon=True)
        self._thread.start()

    def _redraw(self) -> None:
        while not self._stop.wait(0.5):
            self.bar.refresh()

    def phase(self, desc: str, unit: str) -> Any:
        """Start a phase; its ``progress(done, total)`` callback (None when there is no bar)."""
        if self.bar is None:
            return None
        self.bar.reset(total=None)
        self.bar.unit = unit
        self.bar.set_description(desc)
        return self.update

    def update(self, done: int, total: int) -> None:
        self.bar.total = total
        self.bar.n = done
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self._stop.set()
            self._thread.join()
            self.bar.close()


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except XlsxplanError as err:
        if args.json:  # a program reading stdout gets the reason too; the line on stderr follows, exit status 2
            print(json.dumps({"error": err.message}, indent=2))
        raise


def _run(args: argparse.Namespace) -> int:
    from ..cells import collect_warnings
    from ..errors import CellError
    from ..headless.untrusted import Limits
    from ..headless.workbook import Workbook, default_output, parse_value
    from ..system import address_space_cap_gb, limit_address_space

    source = Path(args.book)
    out = Path(args.output) if args.output else default_output(source)
    sets = []
    for text in args.set or []:
        ref, typed = split_assignment(text)
        sets.append((ref, parse_value(typed, f"--set {ref}")))
    limits = Limits()
    # a formula can ask for more memory than the file shows (=MUNIT(100000)): let that fail as MemoryError
    limit_address_space(address_space_cap_gb(limits.max_memory_gb))
    bar = _Progress(sys.stderr.isatty() and not args.quiet)
    try:
        wb = Workbook.load(source, progress=bar.phase("loading", "cell"))
        for ref, value in sets:
            wb.set(ref, value, force=args.force_set)
        for ref in args.show or []:  # before calculating: a typo must not cost a whole recalculation
            wb.address(ref)
        with collect_warnings() as warnings:
            wb.calculate(progress=bar.phase("calculating", "call"))
        bar.phase("reading results", "cell")
        shown = _shown(wb, args.show or [])
        errors = wb.errors()
        wb.save(out, notes=not args.no_notes, progress=bar.phase("writing", "part"))
    finally:
        bar.close()
    failed = any(isinstance(row["value"], CellError) for row in shown)
    for warning in warnings:
        print(f"xlsxplan: warning: {warning}", file=sys.stderr)
    if args.json:
        report = {
            "input": str(source),
            "output": str(out),
            "warnings": warnings,
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
            print(f"{label:<{width}}  {_one_line(format_value(row['value']))}{name}".rstrip())
    if not args.quiet:
        count = len(errors)
        summary = f"wrote {out}"
        if count:
            # name a cause, not a cell that only passes an error on: the first error with a reason of its own
            causes = [item for item in errors.items() if "passed on" not in item[1].message]
            ref, error = (causes or list(errors.items()))[0]
            cells = f"{count} error cell{'s' if count > 1 else ''}"
            summary += f"; {cells}, {'caused by' if causes and count > 1 else 'e.g.'} {ref}: {error}"
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
        "--force-set",
        action="store_true",
        help="let --set replace a formula with the value (in the copy written; without it, a formula cell is "
        "refused with the input cells to set instead)",
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
