"""The headless commands as a user runs them: whole-process wall time and peak memory (results in BENCHMARKS.md).

Every run is a fresh process (Python's start, imports, reading the file, calculating, writing the output), timed
from the outside; the peak resident memory is the process's own (``wait4``). Cases:

* ``eval``: ``xlsxplan eval "=ROUND(DECODE_TOKS(72.7,1,2,3.35),0)"``;
* ``recalc`` of each shipped template (``workbooks/*.xlsx``), load to written file;
* ``rows``: a sheet of N scenario rows, each with one registry formula (``=DECODE_TOKS_TOTAL(A2,1,2,3.35,94,327680,
  2300)``), recalculated by ``xlsxplan recalc``; beside it, formualizer alone (``recalculate_xlsx_file`` in a
  process of its own: load, calculate, write) and LibreOffice's headless recalculation (``soffice
  --convert-to xlsx`` with a profile that recalculates every formula on load) of the same sheet with the same
  arithmetic written in native formulas (``=94*(2*3.35E12)/(A2*1E9*1+94*327680*2300)``), in the same run.

``--xlsxplan`` runs another tree's command (``/work/main/.venv/bin/xlsxplan`` gives the figures before a change), so
both are measured with this one script in one session.

Usage::

    python benchmarks/commands.py                          # eval, templates, 1,000 / 10,000 / 100,000 rows
    python benchmarks/commands.py --rows 1000 10000 --repeats 3 --no-libreoffice
    python benchmarks/commands.py --xlsxplan /work/main/.venv/bin/xlsxplan --rows 1000 10000 --repeats 1
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EVAL = "=ROUND(DECODE_TOKS(72.7,1,2,3.35),0)"
NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


ENGINE_ALONE = "import sys, formualizer; formualizer.recalculate_xlsx_file(sys.argv[1], sys.argv[2])"
"""formualizer alone: load the native sheet, calculate every formula, write the values cached (one call)."""


def run(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """(wall seconds, peak resident MB, CPU seconds) of one process. The CPU time (user and system) is what the wall
    time would be on an idle machine for a process that computes on one thread, as these do. The peak is at least
    this script's own size when it starts the process (Linux carries it over), which stays small: the workbooks are
    written by a process of their own (:func:`make`)."""
    if env is None:  # bytecode kept, as an installed package has it (pip compiles it at install); a shell that sets
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # this would recompile each run
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err}")
    return wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def make(path: Path, rows: int, native: bool) -> Path:
    """:func:`scenario_sheet`, written by a process of its own so that this one stays small."""
    flag = ["--native"] if native else []
    subprocess.run([sys.executable, __file__, "--make", str(path), str(rows), *flag], check=True)
    return path


def scenario_sheet(path: Path, rows: int, native: bool) -> Path:
    """N scenario rows: the parameters in A, one formula in B (a registry call, or the same arithmetic natively)."""
    body = []
    for r in range(2, rows + 2):
        if native:
            formula = f"94*(2*3.35E12)/(A{r}*1E9*1+94*327680*2300)"
        else:
            formula = f"DECODE_TOKS_TOTAL(A{r},1,2,3.35,94,327680,2300)"
        body.append(f'<row r="{r}"><c r="A{r}"><v>{7 + r % 70}</v></c><c r="B{r}"><f>{formula}</f></c></row>')
    parts = {
        "[Content_Types].xml": '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/xl/workbook.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
        '<Override PartName="/xl/worksheets/sheet1.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>',
        "_rels/.rels": '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        f'<Relationship Id="rId1" Type="{REL}/officeDocument" Target="xl/workbook.xml"/></Relationships>',
        "xl/workbook.xml": f'<workbook xmlns="{NS}" xmlns:r="{REL}"><sheets>'
        '<sheet name="Scenarios" sheetId="1" r:id="rId1"/></sheets></workbook>',
        "xl/_rels/workbook.xml.rels": '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/'
        f'relationships"><Relationship Id="rId1" Type="{REL}/worksheet" Target="worksheets/sheet1.xml"/>'
        "</Relationships>",
        "xl/worksheets/sheet1.xml": f'<worksheet xmlns="{NS}"><sheetData><row r="1"><c r="A1" t="inlineStr"><is>'
        "<t>Params</t></is></c></row>" + "".join(body) + "</sheetData></worksheet>",
    }
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, text in parts.items():
            zf.writestr(name, text)
    return path


RECALC_PROFILE = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema"
 xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="OOXMLRecalcMode" oor:op="fuse">
<value>0</value></prop></item>
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="ODFRecalcMode" oor:op="fuse">
<value>0</value></prop></item>
</oor:items>
"""


def libreoffice_profile(folder: Path) -> Path:
    """A LibreOffice user profile that recalculates every formula when it loads a file."""
    user = folder / "user"
    user.mkdir(parents=True, exist_ok=True)
    (user / "registrymodifications.xcu").write_text(RECALC_PROFILE)
    return folder


def median_run(cmd: list[str], repeats: int) -> dict:
    """The median of ``repeats`` runs, after one untimed run that leaves the modules' bytecode written."""
    run(cmd)
    runs = [run(cmd) for _ in range(repeats)]
    walls = [w for w, _, _ in runs]
    return {
        "median_s": statistics.median(walls),
        "runs_s": walls,
        "cpu_s": statistics.median(c for _, _, c in runs),
        "peak_mb": max(m for _, m, _ in runs),
        "load": os.getloadavg()[0],
    }


def show(label: str, row: dict) -> None:
    runs = ", ".join(f"{w:.2f}" for w in row["runs_s"])
    print(
        f"{label:<48} median {row['median_s']:7.2f} s  CPU {row['cpu_s']:6.2f} s  peak {row['peak_mb']:6.0f} MB  "
        f"load {row['load']:4.1f}  (runs: {runs})",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--xlsxplan",
        default=shutil.which("xlsxplan") or str(Path(sys.executable).with_name("xlsxplan")),
        help="the command to time (default: this environment's)",
    )
    parser.add_argument("--rows", type=int, nargs="*", default=[1_000, 10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=5, help="runs per case (the median is reported)")
    parser.add_argument("--row-repeats", type=int, default=3, help="runs per scenario-sheet case")
    parser.add_argument("--templates", default=str(ROOT / "workbooks"))
    parser.add_argument("--no-eval", action="store_true")
    parser.add_argument("--no-libreoffice", action="store_true")
    parser.add_argument("--no-engine", action="store_true", help="leave out formualizer alone")
    parser.add_argument("--json", help="also write the results to this JSON file")
    parser.add_argument("--make", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--native", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.make:
        scenario_sheet(Path(args.make[0]), int(args.make[1]), args.native)
        return
    cmd = [args.xlsxplan]
    print(f"{args.xlsxplan}; {os.cpu_count()} CPUs; {platform.platform()}; load {os.getloadavg()[0]:.2f}")
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if not args.no_eval:
            row = results["eval"] = median_run([*cmd, "eval", EVAL], args.repeats)
            show(f"xlsxplan eval {EVAL}", row)
        for template in sorted(Path(args.templates).glob("*.xlsx")):
            row = median_run([*cmd, "recalc", str(template), "-o", str(folder / template.name), "-q"], args.repeats)
            results[f"recalc {template.name}"] = row
            show(f"xlsxplan recalc {template.name}", row)
        soffice = None if args.no_libreoffice else shutil.which("soffice") or shutil.which("libreoffice")
        if soffice:
            profile = libreoffice_profile(folder / "lo-profile")
            warm = make(folder / "warm.xlsx", 10, native=True)  # the profile's first start is not timed
            lo = [
                soffice,
                "--headless",
                "--norestore",
                f"-env:UserInstallation=file://{profile}",
                "--convert-to",
                "xlsx",
                "--outdir",
                str(folder / "lo"),
            ]
            run([*lo, str(warm)])
        for n in args.rows:
            book = make(folder / f"rows{n}.xlsx", n, native=False)
            row = results[f"recalc {n} rows"] = median_run(
                [*cmd, "recalc", str(book), "-o", str(folder / f"rows{n}.out.xlsx"), "-q"], args.row_repeats
            )
            show(f"xlsxplan recalc, {n:,} rows, registry formulas", row)
            native = make(folder / f"native{n}.xlsx", n, native=True)
            if not args.no_engine:  # formualizer alone, a process of its own: load, calculate, write
                engine = [sys.executable, "-c", ENGINE_ALONE, str(native), str(folder / f"engine{n}.xlsx")]
                row = results[f"formualizer {n} rows"] = median_run(engine, args.row_repeats)
                show(f"formualizer alone, {n:,} rows, native formulas", row)
            if soffice:
                row = results[f"libreoffice {n} rows"] = median_run([*lo, str(native)], args.row_repeats)
                show(f"LibreOffice recalc, {n:,} rows, native formulas", row)
                out = folder / "lo" / native.name
                check = zipfile.ZipFile(out).read("xl/worksheets/sheet1.xml")
                if check.count(b"<v>") < n:  # it must really have calculated every row
                    raise SystemExit(f"LibreOffice left values uncalculated in {out}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
