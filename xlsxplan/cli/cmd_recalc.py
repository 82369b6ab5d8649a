"""``xlsxplan recalc BOOK.xlsx``: recalculate a workbook headlessly and write it with every value cached."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from ..errors import WorkbookError, XlsxplanError
from .common import EXIT_FORMULA_ERROR, EXIT_OK, EXIT_USAGE, format_value, terminal_text

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
    """One row per cell of each ``--show`` reference: the reference asked for, the cell, its value, and the value
    as the cell's number format shows it (a name for a formula, which has no cell, as the command line prints)."""
    return [
        {"ref": ref, "cell": cell, "value": value, "text": wb.shown(cell, value) if cell else format_value(value)}
        for ref in refs
        for cell, value in wb.cells(ref)
    ]


_CASE = re.compile(r"(.+?)\s*\(case (\d+)\)")
"""How `xlsxplan inputs` lists a scenario row's input: ``NAME (case N)``, set by the active case's cell."""


def _listed_case(inputs: list[dict[str, Any]], ref: str) -> str | None:
    """The cell `xlsxplan inputs` gives (``inputs``: its rows, :func:`.cmd_inputs.list_inputs`) for ``ref`` written as
    it lists a scenario row, ``NAME (case N)``; None when no listed input is that."""
    found = _CASE.fullmatch(ref.strip())
    if found is None:
        return None
    name, case = found.group(1).casefold(), int(found.group(2))
    for row in inputs:
        if row["case"] == case and row["name"].casefold() == name:
            return str(row["set"])
    return None


def _unknown(wb: Any, refs: list[str], flag: str) -> list[str]:
    """One line for each of ``refs`` that points nowhere in the workbook. For ``--set``: the name with the names
    nearest to it (difflib), or why the reference is not one; for ``--show``, the workbook's own reason."""
    from ..headless.package import closest

    names = sorted(wb.names)
    problems = []
    for ref in refs:
        try:
            wb.address(ref)
        except WorkbookError as err:
            if flag != "--set":
                problems.append(err.message)
                continue
            if "!" in ref or ref.strip().casefold() in {n.casefold() for n in names}:
                problems.append(f"{flag} {ref}: {err.message}")
                continue
            if re.fullmatch(r"\$?[A-Za-z]{1,3}\$?\d+", ref.strip()):  # a cell without its sheet
                problems.append(f"{flag} {ref}: {err.message}")
                continue
            if _CASE.fullmatch(ref.strip()):  # a scenario row's case that `xlsxplan inputs` does not list
                problems.append(f"{flag} {ref}: no scenario row has that case; `xlsxplan inputs {wb.path}` lists them")
                continue
            near = closest(ref.strip(), names)
            hint = f"did you mean {' or '.join(near)}?" if near else f"`xlsxplan inputs {wb.path}` lists the inputs"
            problems.append(f"{flag} {ref}: no input or cell of that name; {hint}")
    return problems


# ---------------------------------------------------------------------------------------------------------------
# The workbook's own checks

_MASTER_LABEL = "master check"


def _against_rule(wb: Any, ref: str, value: Any) -> tuple[str | None, str | None]:
    """(a refusal, a warning) for ``--set ref=value`` where the cell's data validation does not let the value in:
    a dropdown (a list) that does not offer it, or a whole-number or number rule it breaks (text where a number is
    wanted, a number outside the bounds `xlsxplan inputs` lists). Refused where Excel refuses it (the rule shows its
    error and stops), else set with a warning; a dropdown's warning names the nearest values (a template's model or
    accelerator cell takes a name of your own, with its overrides filled in). Texts compare as Excel's list does,
    without regard to case. (None, None) when the value is allowed, empty, or the cell has no rule it breaks."""
    import difflib

    from .cmd_inputs import allowed, choices, custom_allows, number_allowed

    try:
        title, row, col = wb.position(ref)
    except WorkbookError:  # a range, or a name that holds a formula: set refuses it with its own words
        return None, None
    rule = wb.validation_at(title, row, col)
    if rule is not None and rule.type in ("whole", "decimal", "custom"):
        verdict = number_allowed if rule.type != "custom" else custom_allows
        if verdict(wb, title, row, col, value) is not False:
            return None, None
        typed = repr(value) if isinstance(value, str) else format_value(value)
        if rule.type == "custom" and rule.refuses and rule.error:  # the rule's own words say what it allows
            return f"--set {ref}: {typed} is refused, as Excel refuses it: {rule.error}", None
        bounds = allowed(wb, title, row, col, "") if rule.type != "custom" else ""  # a number rule's, in words
        what = bounds if isinstance(bounds, str) and bounds else "what its cell's rule allows"
        return _as_excel(rule, f"--set {ref}: {typed} is not {what}", "its rule only warns of")
    if rule is None or rule.type != "list" or value is None:
        return None, None
    offered = choices(wb, rule.formula1, title)
    if any(isinstance(c, str) and c.startswith("=") for c in offered):  # a list that could not be read
        return None, None
    if any(_listed(value, c) for c in offered):
        return None, None
    texts = [format_value(c) for c in offered]  # (text as is)
    close = difflib.get_close_matches(format_value(value), texts, n=3)
    hint = f"did you mean {', '.join(close)}?" if close else f"its {len(texts)} values: `xlsxplan inputs` lists them"
    said = f"--set {ref}: {format_value(value)!r} is not in its cell's dropdown ({hint})"
    return _as_excel(rule, said, "its dropdown does not list")


def _as_excel(rule: Any, said: str, kept: str) -> tuple[str | None, str | None]:
    """(a refusal, a warning) for a value ``rule`` does not let in, ``said`` in words: refused where Excel refuses it
    (the rule shows its error and stops), else a warning that the value is set, as Excel keeps a value ``kept``."""
    if rule.refuses:
        return f"{said}; Excel refuses it too" + (f": {rule.error}" if rule.error else ""), None
    return None, f"{said}: set anyway, as Excel keeps a value {kept}"


def _listed(value: Any, offered: Any) -> bool:
    """Whether a dropdown item lets ``value`` through, as Excel compares them: text without regard to case, a number
    with a number (an inline list's items are text: ``"1,2,4"`` offers the number 4), TRUE and FALSE with
    themselves, never a number with a flag."""
    if isinstance(value, bool):
        if isinstance(offered, bool):
            return offered is value
        return isinstance(offered, str) and offered.strip().upper() == ("TRUE" if value else "FALSE")
    if isinstance(value, (int, float)):
        if isinstance(offered, bool):
            return False
        if isinstance(offered, str):
            try:
                offered = float(offered.strip())
            except ValueError:
                return False
        return isinstance(offered, (int, float)) and float(offered) == float(value)
    return isinstance(offered, str) and offered.casefold() == str(value).casefold()


def _fails(value: Any) -> bool:
    """Whether a check's value reports a problem: an error value, TRUE, a number other than 0, or ERROR."""
    from ..errors import CellError

    if isinstance(value, CellError):
        return True
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value != 0
    return isinstance(value, str) and value.strip().upper() in ("ERROR", "FAIL", "FAILED")


def _label(row: list[Any], col: int) -> str:
    """The first text left of column ``col`` (0-based) in a row: a check's label."""
    return next((v.strip() for v in row[:col] if isinstance(v, str) and v.strip()), "")


def read_checks(wb: Any) -> dict[str, Any] | None:
    """The workbook's master check and the checks it sums, as the templates lay them out, or None when it has none.

    The master check is the cell of a defined name ``Master_Check`` (any case, with or without the underscore);
    else, on a worksheet named Checks, the first formula to the right of the last label that begins "Master check".
    The checks are the other formulas in the master check's column of that sheet, each labelled by the first text
    to its left and explained by the first text to its right (not in a column headed Unit). A check fails when its
    value is an error, TRUE, a number other than 0 or the text ERROR; the master check says ERROR when it fails.
    Returns ``{"master": {"cell", "label", "value", "ok"}, "count": checks, "failed": [{"cell", "label",
    "detail", "value"}]}``.
    """
    from ..headless.package import col_letter, split_ref

    master_ref = None
    for name in wb.names:
        if name.replace("_", "").replace(".", "").casefold() == "mastercheck":
            try:
                master_ref = wb.address(name)
            except WorkbookError:
                continue
            if ":" in master_ref or "!" not in master_ref:
                master_ref = None
                continue
            break
    if master_ref is not None:
        sheet = master_ref.rpartition("!")[0]
        sheet = sheet[1:-1].replace("''", "'") if sheet.startswith("'") else sheet
    else:
        sheet = next((t for t in wb.sheetnames if t.casefold() == "checks"), None)
        if sheet is None:
            return None
    used = wb.used_range(sheet)
    if used is None:
        return None
    quoted = wb.address(f"'{sheet}'!A1").rpartition("!")[0]
    grid = wb.get(f"{quoted}!{used}")
    grid = grid if isinstance(grid, list) else [[grid]]
    formulas = {}

    def formula_at(r: int, c: int) -> bool:
        if (r, c) not in formulas:
            formulas[(r, c)] = wb.formula(f"{quoted}!{col_letter(c + 1)}{r + 1}") is not None
        return formulas[(r, c)]

    master: tuple[int, int] | None = None
    if master_ref is not None:
        row, col = split_ref(master_ref.rpartition("!")[2])
        master = (row - 1, col - 1)
    else:
        for r, values in enumerate(grid):
            for c, v in enumerate(values):
                if isinstance(v, str) and v.strip().casefold().startswith(_MASTER_LABEL):
                    right = next((k for k in range(c + 1, len(values)) if formula_at(r, k)), None)
                    if right is not None:
                        master = (r, right)
                    break
        if master is None:
            return None
    mr, mc = master
    unit_col = None
    checks, failed = 0, []
    for r, values in enumerate(grid):
        texts = [v.strip().casefold() if isinstance(v, str) else "" for v in values]
        if "unit" in texts or "units" in texts:
            unit_col = texts.index("unit") if "unit" in texts else texts.index("units")
        if r == mr or mc >= len(values) or not formula_at(r, mc):
            continue
        label = _label(values, mc)
        if label.casefold().startswith(_MASTER_LABEL):  # a sheet's header repeating the master check
            continue
        checks += 1
        if _fails(values[mc]):
            detail = next(
                (
                    v.strip()
                    for k, v in enumerate(values[mc + 1 :], start=mc + 1)
                    if isinstance(v, str) and v.strip() and k != unit_col
                ),
                "",
            )
            failed.append(
                {"cell": f"{quoted}!{col_letter(mc + 1)}{r + 1}", "label": label, "detail": detail, "value": values[mc]}
            )
    value = grid[mr][mc] if mr < len(grid) and mc < len(grid[mr]) else None
    return {
        "master": {
            "cell": f"{quoted}!{col_letter(mc + 1)}{mr + 1}",
            "label": _label(grid[mr], mc) if mr < len(grid) else "",
            "value": value,
            "ok": not _fails(value),
        },
        "count": checks,
        "failed": failed,
    }


def _check_lines(checks: dict[str, Any]) -> list[str]:
    """What stderr says about the checks: the master check, then each failed check with what it tests."""
    master, failed, count = checks["master"], checks["failed"], checks["count"]
    if master["ok"] and not failed:
        return [f"master check {master['cell']}: OK, all {count} checks pass"]
    state = "OK" if master["ok"] else "ERROR"
    if failed:
        state += f", {len(failed)} of {count} checks failed"
    elif not isinstance(master["value"], (int, float)) or isinstance(master["value"], bool):
        state += f" ({format_value(master['value'])})"
    lines = [f"master check {master['cell']}: {state}"]
    for check in failed:
        detail = f" ({check['detail']})" if check["detail"] else ""
        lines.append(f"  {check['cell']}  {check['label'] or '(no label)'}{detail}")
    return lines


def _one_line(text: str) -> str:
    """A value for the ``--show`` table, on one line, shown literally (:func:`~.common.terminal_text`): a backslash,
    line breaks, tabs, escape sequences and bidi overrides escaped."""
    return terminal_text(text)


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

        self.bar = tqdm(total=0, unit="cell", desc="loading", leave=False, file=getattr(sys.stderr, "raw", sys.stderr))
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
    from ..errors import CellError
    from ..headless.untrusted import Limits
    from ..headless.workbook import Workbook, default_output, parse_value
    from ..infra.system import address_space_cap_gb, limit_address_space
    from ..sheet.cells import collect_warnings

    source = Path(args.book)
    out = Path(args.output) if args.output else default_output(source)
    sets = []
    for text in args.set or []:
        ref, typed = split_assignment(text)
        sets.append((ref, parse_value(typed, f"--set {ref}")))
    cases = [ref for ref, _ in sets if _CASE.fullmatch(ref.strip())]
    problems: list[str] = []
    refreshed: list[Any] = []
    limits = Limits()
    # a formula can ask for more memory than the file shows (=MUNIT(100000)): let that fail as MemoryError
    limit_address_space(address_space_cap_gb(limits.max_memory_gb))
    bar = _Progress(sys.stderr.isatty() and not args.quiet)
    try:
        wb = Workbook.load(source, progress=bar.phase("loading", "cell"))
        if cases:  # a scenario row as `xlsxplan inputs` lists it, "NAME (case N)": the case's cell
            from .cmd_inputs import list_inputs

            inputs = list_inputs(wb)  # once, however many such names are set
            sets = [(_listed_case(inputs, ref) or ref, value) for ref, value in sets]
        # every reference first, all of them reported at once: a typo must not cost a whole recalculation, nor
        # one run per typo
        problems = _unknown(wb, [ref for ref, _ in sets], "--set") + _unknown(wb, args.show or [], "--show")
        listed = [] if problems else [_against_rule(wb, ref, value) for ref, value in sets]
        problems += [refusal for refusal, _ in listed if refusal]
        if not problems:
            for ref, value in sets:
                try:
                    wb.set(ref, value, force=args.force_set)
                except WorkbookError as err:
                    problems.append(err.message)
        if not problems:
            with collect_warnings() as warnings:
                warnings += [note for _, note in listed if note]  # first: the likeliest cause of what follows
                wb.calculate(progress=bar.phase("calculating", "call"))
                # a portable edition's values only Python computes, computed again when their inputs changed
                if wb.frozen:
                    refreshed = wb.refresh_frozen(
                        progress=bar.phase("computing again what only Python computes", "call")
                    )
            bar.phase("reading results", "cell")
            shown = _shown(wb, args.show or [])
            errors = wb.errors()
            try:
                checks = read_checks(wb)
            except WorkbookError as err:  # a Checks sheet past what can be read at once: say so, never hide it
                checks = None
                warnings.append(f"the workbook's checks were not read: {err.message}")
            wb.save(out, notes=not args.no_notes, progress=bar.phase("writing", "part"))
    finally:
        bar.close()
    if problems:
        if len(problems) == 1:
            raise WorkbookError(problems[0])
        if args.json:
            print(json.dumps({"error": problems[0], "errors": problems}, indent=2))
        for problem in problems:
            print(f"xlsxplan: error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    check_lines = _check_lines(checks) if checks is not None else []
    alarm = checks is not None and (not checks["master"]["ok"] or bool(checks["failed"]))
    strict = bool(args.strict and checks is not None and not checks["master"]["ok"])
    failed = any(isinstance(row["value"], CellError) for row in shown)
    for warning in warnings:
        print(f"xlsxplan: warning: {warning}", file=sys.stderr)
    refresh_lines = [
        f"computed again the {b.cells:,} values only Python computes on {b.group} (their inputs on "
        f"{b.sheet} had changed)"
        for b in refreshed
    ]
    if args.json:
        report = {
            "input": str(source),
            "output": str(out),
            "warnings": warnings,
            "refreshed": [
                {"sheet": b.group, "cells": b.cells, "inputs": f"{b.sheet} (the name {b.name})"} for b in refreshed
            ],
            "shown": [{**row, "value": _json_value(row["value"])} for row in shown],
            "errors": [{"cell": cell, "error": e.code, "message": e.message} for cell, e in errors.items()],
            "checks": None
            if checks is None
            else {
                "master": {**checks["master"], "value": _json_value(checks["master"]["value"])},
                "count": checks["count"],
                "failed": [{**c, "value": _json_value(c["value"])} for c in checks["failed"]],
            },
        }
        print(json.dumps(report, indent=2))
        if alarm:  # a program may read stdout only; a person watching sees the warning
            for line in check_lines:
                print(line, file=sys.stderr)
        return EXIT_FORMULA_ERROR if failed or strict else EXIT_OK
    if shown:
        width = max(len(row["cell"] or row["ref"]) for row in shown)
        for row in shown:
            label = row["cell"] or row["ref"]
            name = f"  ({row['ref']})" if row["cell"] and "!" not in row["ref"] else ""
            print(f"{label:<{width}}  {_one_line(row['text'])}{name}".rstrip())
    if not args.quiet:
        for line in refresh_lines:
            print(line, file=sys.stderr)
    if alarm or not args.quiet:  # a plan the workbook's own checks reject is never shown as if clean, even -q
        for line in check_lines:
            print(line, file=sys.stderr)
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
    return EXIT_FORMULA_ERROR if failed or strict else EXIT_OK


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "recalc",
        help="recalculate a workbook without Excel and write it with every value cached",
        description="Recalculate every formula of BOOK (xlsxplan functions and Excel's native ones) and write a "
        "copy in which each formula keeps its text and carries its computed value, so Excel, LibreOffice, file "
        "previewers and openpyxl(data_only=True) show the numbers. The input is never changed unless -o names it. "
        "In a portable edition of a template (serving_plan.xlsx) the values only Python computes (the Options "
        "table, the Finance tier mix, the Chargeback table) are computed again, as the add-in edition computes "
        "them, when their inputs have changed. "
        "Error cells get their Excel error value and a note with the reason. A workbook with checks (a master "
        "check on a Checks sheet, or a name Master_Check) has its master check and every failed check printed on "
        "stderr. Exit status: 0 written; 1 a --show cell is an error, or with --strict the master check says "
        "ERROR; 2 a reference points nowhere (every one is listed), or the file cannot be read, is refused as "
        "unsafe, or cannot be written.",
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
    p.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when the workbook's master check says ERROR (the master check and every failed check are "
        "printed on stderr with or without it)",
    )
    p.add_argument(
        "--json", action="store_true", help="print a JSON report (shown values, every error cell, the checks)"
    )
    p.add_argument("--no-notes", action="store_true", help="do not write notes with the reasons on error cells")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary line")
    p.set_defaults(handler=run)
