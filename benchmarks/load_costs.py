"""What a workbook costs to load before its formulas: rows, shared strings, style records, rules, names, elements.

Each case is a small real workbook (tests/helpers/hostile.py's ``plain_xlsx``) with ``--count`` copies of one kind
of record added, loaded with ``xlsxplan.headless.Workbook.load`` (the checks, xlsxplan's reading of the sheets, then the
engine's) and calculated in a fresh process, within limits wide enough to let it through. The time and peak
resident memory of a plain workbook are subtracted, and what is left is divided by the count: the per-record costs
behind ``xlsxplan.headless.untrusted.Limits`` and its memory estimate.

Usage::

    python benchmarks/load_costs.py                  # 100,000 of each (names: 5,000), under a minute
    python benchmarks/load_costs.py --count 20000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"


def _sheet_with(before_end: str = "", in_data: str = "") -> bytes:
    from tests.helpers.hostile import members, pack, plain_xlsx

    parts = members(plain_xlsx())
    sheet = parts["xl/worksheets/sheet1.xml"].decode()
    sheet = sheet.replace("</sheetData>", in_data + "</sheetData>" + before_end)
    parts["xl/worksheets/sheet1.xml"] = sheet.encode()
    return pack(parts, level=1)


def make(kind: str, n: int) -> bytes:
    from tests.helpers.hostile import _with_shared_strings, members, pack, plain_xlsx

    if kind == "plain":
        return plain_xlsx()
    if kind == "rows":
        return _sheet_with(in_data="".join(f'<row r="{r}" s="0" customFormat="1"/>' for r in range(10, 10 + n)))
    if kind == "shared strings":
        xml = f'<sst xmlns="{MAIN}">' + "".join(f"<si><t>{i:x}</t></si>" for i in range(n)) + "</sst>"
        return pack(_with_shared_strings(members(plain_xlsx()), xml.encode()), level=1)
    if kind == "cell formats":
        parts = members(plain_xlsx())
        styles = parts["xl/styles.xml"].decode()
        i, j = styles.index("<cellXfs"), styles.index("</cellXfs>")
        xfs = "".join(
            f'<xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0" applyAlignment="{r}"/>' for r in range(n)
        )
        parts["xl/styles.xml"] = (styles[:i] + f'<cellXfs count="{n}">' + xfs + styles[j:]).encode()
        return pack(parts, level=1)
    if kind == "conditional formats":
        return _sheet_with(
            "".join(
                f'<conditionalFormatting sqref="A{r}"><cfRule type="expression" priority="{r}">'
                "<formula>A1&gt;1</formula></cfRule></conditionalFormatting>"
                for r in range(1, n + 1)
            )
        )
    if kind == "data validations":
        body = "".join(
            f'<dataValidation type="whole" sqref="A{r}"><formula1>1</formula1></dataValidation>'
            for r in range(1, n + 1)
        )
        return _sheet_with(f'<dataValidations count="{n}">{body}</dataValidations>')
    if kind == "single hyperlinks":
        links = "".join(f'<hyperlink ref="C{r}" location="Sheet1!A1"/>' for r in range(1, n + 1))
        return _sheet_with(f"<hyperlinks>{links}</hyperlinks>")
    if kind == "wide grid":  # A1, XFD1 and A<n>: the engine's storage spans the last used column and row
        return _wide(n)
    if kind == "value cells":
        return _sheet_with(
            in_data="".join(
                f'<row r="{r}"><c r="A{r}"><v>{r}</v></c><c r="B{r}"><v>{r}.5</v></c></row>'
                for r in range(10, 10 + n // 2)
            )
        )
    if kind == "other elements":
        return _sheet_with("<extLst>" + "".join(f'<ext uri="{i}"/>' for i in range(n)) + "</extLst>")
    if kind == "defined names":
        parts = members(plain_xlsx())
        names = "".join(f'<definedName name="N{i}">Sheet1!$A$1</definedName>' for i in range(n))
        workbook = parts["xl/workbook.xml"].decode()
        parts["xl/workbook.xml"] = workbook.replace("<calcPr", f"<definedNames>{names}</definedNames><calcPr").encode()
        return pack(parts, level=1)
    raise ValueError(kind)


def _wide(n: int) -> bytes:
    from tests.helpers.hostile import members, pack, plain_xlsx

    parts = members(plain_xlsx())
    sheet = parts["xl/worksheets/sheet1.xml"].decode()
    sheet = sheet.replace('<c r="B1"', '<c r="XFD1"><v>1</v></c><c r="B1"').replace(
        "</sheetData>", f'<row r="{n}"><c r="A{n}"><v>1</v></c></row></sheetData>'
    )
    parts["xl/worksheets/sheet1.xml"] = sheet.encode()
    return pack(parts, level=1)


CHILD = """
import json, resource, sys, time
from xlsxplan.headless import Workbook
from xlsxplan.headless.untrusted import Limits
roomy = Limits(max_rows=10**8, max_strings=10**8, max_styles=10**8, max_rules=10**8, max_areas=10**8,
               max_elements=10**9, max_formula_cells=10**8, max_cells=10**9, max_memory_gb=1000,
               max_range_cells=10**12)
t = time.perf_counter()
Workbook.load(sys.argv[1], limits=roomy).calculate()
hwm = [int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")]  # not inherited
peak = hwm[0] / 1024 if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"s": time.perf_counter() - t, "peak_mb": peak}))
"""

KINDS = [
    "value cells",
    "rows",
    "shared strings",
    "cell formats",
    "conditional formats",
    "data validations",
    "single hyperlinks",
    "other elements",
    "defined names",
    "wide grid",
]
UNITS = {"wide grid": lambda n: 16_384 * min(n, 32_768)}  # what the per-record cost is of: the grid's cells


def measure(path: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--count",
        type=int,
        default=100_000,
        help="records per case (defined names: a twentieth; the wide grid: a tenth of the rows)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base_path = Path(tmp) / "plain.xlsx"
        base_path.write_bytes(make("plain", 0))
        base = measure(base_path)
        print(f"plain workbook: {base['s']:.2f} s, {base['peak_mb']:.0f} MB peak")
        print(f"{'records':<20} {'count':>8} {'zipped':>9} {'load s':>7} {'peak MB':>8} {'us each':>8} {'kB each':>8}")
        for kind in KINDS:
            n = args.count // 20 if kind == "defined names" else args.count // 10 if kind == "wide grid" else args.count
            path = Path(tmp) / "case.xlsx"
            path.write_bytes(make(kind, n))
            got = measure(path)
            units = UNITS.get(kind, lambda k: k)(n)
            each_us = (got["s"] - base["s"]) / units * 1e6
            each_kb = (got["peak_mb"] - base["peak_mb"]) * 1024 / units
            print(
                f"{kind:<20} {n:>8,} {path.stat().st_size:>9,} {got['s']:>7.2f} {got['peak_mb']:>8.0f} "
                f"{each_us:>8.3f} {each_kb:>8.4f}"
            )


if __name__ == "__main__":
    main()
