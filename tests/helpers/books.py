"""Workbooks the tests build with openpyxl: a realistic plan, one row per registry function, and scenario sheets.

Every workbook here is written without cached values (openpyxl never computes), so whatever a reader sees after
`xlsxplan recalc` was computed by xlsxplan.
"""

from __future__ import annotations

import contextlib
import functools
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openpyxl
from openpyxl.chart import BarChart, Reference
from openpyxl.comments import Comment
from openpyxl.styles import Font, PatternFill
from openpyxl.workbook.defined_name import DefinedName
from openpyxl.worksheet.datavalidation import DataValidation
from openpyxl.worksheet.formula import ArrayFormula

from xlsxplan import registry
from xlsxplan.sheet.xlwings_conf import add_conf_sheet
from xlsxplan.templates.build import Built

from .examples import EXAMPLES, excel_literal

INPUT_FILL = PatternFill("solid", fgColor="FFCC99")


@functools.cache
def opened(path: Path, data_only: bool = False) -> Any:
    """``openpyxl.load_workbook(path, data_only=data_only)``, once a file and a test process, for tests that only
    read what it gives from a file nothing changes (the shipped templates, or a module's own copy of them): a load of
    the serving plan costs 0.7 s, and the portable tests alone loaded the same four files 19 times."""
    return openpyxl.load_workbook(path, data_only=data_only)


def add_name(wb: openpyxl.Workbook, name: str, target: str) -> None:
    wb.defined_names[name] = DefinedName(name, attr_text=target)


def plan_book(path: Path) -> Path:
    """Qwen2.5-72B on two H100s ("Back-of-the-Envelope Estimation for LLM Systems"): inputs, a calculation sheet,
    outputs, and everything a user adds.

    Cross-sheet references, defined names, native functions (IF, IFERROR, ROUND, MIN, MAX, SUM, INDEX/MATCH,
    XLOOKUP), nested registry calls, an error cell, a note, a chart, data validation, number formats, column
    widths and the xlwings.conf sheet.
    """
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Inputs"
    rows = [
        ("Model", "Qwen2.5-72B", "name"),
        ("Parameters", 72.7, "B params"),
        ("Bytes per parameter", 1, "bytes"),
        ("GPUs", 2, "count"),
        ("Context", 2300, "tokens"),
        ("GPU", "H100", "name"),
        ("Price", 2.5, "USD/GPU-h"),
    ]
    ws.append(("Label", "Value", "Unit"))
    for label, value, unit in rows:
        ws.append((label, value, unit))
    for row in range(2, 2 + len(rows)):
        ws.cell(row, 2).fill = INPUT_FILL
    ws["B8"].number_format = '"$"#,##0.00'
    ws.column_dimensions["A"].width = 24
    ws.column_dimensions["B"].width = 14
    for name, ref in [
        ("Model", "$B$2"),
        ("Params_B", "$B$3"),
        ("Bytes_Per_Param", "$B$4"),
        ("N_GPUs", "$B$5"),
        ("Context", "$B$6"),
        ("GPU", "$B$7"),
        ("Price", "$B$8"),
    ]:
        add_name(wb, name, f"Inputs!{ref}")
    dv = DataValidation(type="whole", operator="between", formula1="1", formula2="64", showErrorMessage=True)
    dv.add("B5")
    ws.add_data_validation(dv)
    ws["B3"].comment = Comment("From the model card", "Analyst")

    calc = wb.create_sheet("Calc")
    calc.append(("Item", "Value", "Unit"))
    calc.append(("Layers", '=MODEL_SPEC(Model,"layers")', "count"))
    calc.append(
        (
            "KV bytes per token",
            '=KV_BYTES_PER_TOKEN(B2,MODEL_SPEC(Model,"kv_heads"),MODEL_SPEC(Model,"head_dim"))',
            "bytes",
        )
    )
    calc.append(("Memory per GPU", '=GPU_SPEC(GPU,"memory_gb")', "GB"))
    calc.append(("Max batch", "=MAX_BATCH(Params_B,Bytes_Per_Param,B3,Context,N_GPUs,B4)", "sequences"))
    calc.append(("Bandwidth", '=GPU_SPEC(GPU,"bandwidth_tb_s")', "TB/s"))
    calc.append(("Decode total", "=DECODE_TOKS_TOTAL(Params_B,Bytes_Per_Param,N_GPUs,B6,B5,B3,Context)", "tokens/s"))
    calc.append(("Cost", "=ROUND(COST_PER_M_TOKENS(N_GPUs,Price,B7),2)", "USD/M tokens"))
    calc.append(("Fits?", '=IF(B5=0,"does not fit","fits")', "text"))
    calc.append(("Safe FP8 TFLOPS", '=IFERROR(GPU_SPEC("A100","fp8_tflops"),0)', "TFLOP/s"))
    calc.append(("Lowest", "=MIN(B5,B7)", ""))
    calc.append(("Highest", "=MAX(B5,B7)", ""))
    calc.append(("Sum", "=SUM(B2:B4)", ""))
    calc.append(("Lookup", '=INDEX(Inputs!B2:B8,MATCH("GPUs",Inputs!A2:A8,0))', ""))
    calc.append(("XLOOKUP", '=_xlfn.XLOOKUP("Context",Inputs!A2:A8,Inputs!B2:B8)', ""))
    calc.append(("Broken", "=KV_BYTES_PER_TOKEN(B2,-1,128)", "bytes"))
    calc.append(("Ratio", "=B5/B4", ""))
    calc.column_dimensions["A"].width = 22

    out = wb.create_sheet("Outputs")
    out.append(("Result", "Value"))
    out.append(("Max batch", "=Calc!B5"))
    out.append(("Throughput", "=Calc!B7"))
    out.append(("Cost per M tokens", "=Calc!B8"))
    out["B4"].number_format = "0.00"
    out["A1"].font = Font(bold=True)
    chart = BarChart()
    chart.title = "Throughput"
    chart.add_data(Reference(out, min_col=2, min_row=2, max_row=4))
    out.add_chart(chart, "D2")
    add_conf_sheet(wb)
    wb.save(path)
    return path


def _first(name: str) -> str:
    """INDEX's arguments for the first cell of a spilled result: row 1 of a column, row 1 column 1 of a table."""
    return "1,1" if registry.FUNCTIONS[name].table else "1"


def registry_book(path: Path) -> Path:
    """One row per registry function, called on its tests/helpers/examples.py arguments.

    The arguments sit on an "Args" sheet (row per function, from column B); a range argument (a tuple) sits
    down a column of a "Ranges" sheet. "Functions" calls each function on them through cross-sheet references,
    its first argument through a defined name (``Arg_<FUNCTION>``). "Nested" calls each inside IFERROR with
    literal arguments (array constants for ranges); spilling functions are read with INDEX.
    """
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Functions"
    args_ws = wb.create_sheet("Args")
    ranges_ws = wb.create_sheet("Ranges")
    ws.append(("Function", "Result"))
    args_ws.append(("Function", "Arguments"))
    range_col = 0
    for row, (name, args) in enumerate(EXAMPLES.items(), start=2):
        ws.cell(row, 1, name)
        args_ws.cell(row, 1, name)
        refs = []
        for i, arg in enumerate(args):
            if isinstance(arg, (tuple, list)):
                range_col += 1
                for j, item in enumerate(arg, start=1):
                    ranges_ws.cell(j, range_col, item)
                letter = ranges_ws.cell(1, range_col).column_letter
                target = f"Ranges!${letter}$1:${letter}${len(arg)}"
                if i == 0:
                    add_name(wb, f"Arg_{name}", target)
                refs.append(f"Arg_{name}" if i == 0 else target.replace("$", ""))
                continue
            cell = args_ws.cell(row, 2 + i, arg)
            if isinstance(arg, str):
                cell.data_type = "s"
            if i == 0:
                add_name(wb, f"Arg_{name}", f"Args!${cell.column_letter}${row}")
                refs.append(f"Arg_{name}")
            else:
                refs.append(f"Args!{cell.coordinate}")
        call = f"{name}({','.join(refs)})"
        ws.cell(row, 2, f"=INDEX({call},{_first(name)})" if registry.FUNCTIONS[name].spills else f"={call}")
    nested = wb.create_sheet("Nested")
    for row, (name, args) in enumerate(EXAMPLES.items(), start=1):
        literal = f"{name}({','.join(excel_literal(a) for a in args)})"
        nested.cell(row, 1, name)
        nested.cell(
            row,
            2,
            f"=IFERROR(INDEX({literal},{_first(name)}),-1)"
            if registry.FUNCTIONS[name].spills
            else f"=IFERROR({literal},-1)",
        )
    wb.save(path)
    return path


def native_book(path: Path) -> Path:
    """Native functions only (what LibreOffice 7.4 also computes), plus a few registry cells it cannot.

    "Calc" column B holds native formulas, column C formulas that call xlsxplan functions.
    """
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Inputs"
    for label, value in [("a", 4), ("b", 9.5), ("c", -2), ("d", 1e6), ("e", 0.125)]:
        ws.append((label, value))
    ws["C1"] = "Qwen2.5-72B"
    add_name(wb, "Rate", "Inputs!$B$2")
    add_name(wb, "Hours", "Inputs!$B$1")
    add_name(wb, "Values", "Inputs!$B$1:$B$5")
    calc = wb.create_sheet("Calc")
    native = [
        "=Inputs!B1*2",
        "=Rate*Hours",
        '=IF(Inputs!B2>5,"big","small")',
        "=IFERROR(1/0,-1)",
        "=ROUND(PI()*1000,2)",
        "=MIN(Values)",
        "=MAX(Values)",
        "=SUM(Inputs!B1:B5)",
        '=INDEX(Inputs!B1:B5,MATCH("c",Inputs!A1:A5,0))',
        '=VLOOKUP("d",Inputs!A1:B5,2,FALSE)',
        "=AVERAGE(Values)",
        "=SUMPRODUCT(Inputs!B1:B3,Inputs!B3:B5)",
        "=ABS(Inputs!B3)+MOD(17,5)+POWER(2,10)+SQRT(16)",
        '=Inputs!C1&" on "&TEXT(Inputs!B1,"0")&" GPUs"',
        "=LEN(Inputs!C1)",
        "=AND(Inputs!B1>0,Inputs!B3<0)",
        '=COUNTIF(Values,">1")',
        "=ROUNDUP(Inputs!B2/3,1)",
        "=1/0",
        "=NA()",
        "=B1+B2+Calc!B8",
    ]
    for row, text in enumerate(native, start=1):
        calc.cell(row, 2, text)
    calc["C1"] = "=ROUND(DECODE_TOKS(72.7,1,2,3.35),0)"
    calc["C2"] = '=MAX_BATCH(72.7,1,KV_BYTES_PER_TOKEN(MODEL_SPEC(Inputs!C1,"layers"),8,128),2300,Hours/2,80)'
    wb.save(path)
    return path


def scenario_book(path: Path, rows: int, array: bool) -> Path:
    """A scenario sheet: one scenario per row (params, bytes, GPUs, bandwidth, batch) and five results.

    ``array=False`` writes a formula per result cell; ``array=True`` one array formula per result column.
    """
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Scenarios"
    ws.append(("Params", "Bytes", "GPUs", "TB/s", "Batch", "Weights GB", "Decode", "Total", "Cost", "Replicas"))
    for r in range(2, rows + 2):
        ws.append((7 + r % 70, 1 + r % 2, 1 + r % 8, 3.35, 1 + r % 64))
    last = rows + 1
    formulas = {
        "F": "WEIGHTS_GB({A},{B})",
        "G": "DECODE_TOKS({A},{B},{C},{D})",
        "H": "DECODE_TOKS_TOTAL({A},{B},{C},{D},{E})",
        "I": "COST_PER_M_TOKENS({C},2.5,{H})",
        "J": "REPLICAS(20833,{H})",
    }
    if array:
        for col, text in formulas.items():
            refs = {c: f"{c}2:{c}{last}" for c in "ABCDEH"}
            ws[f"{col}2"] = ArrayFormula(f"{col}2:{col}{last}", "=" + text.format(**refs))
    else:
        for r in range(2, last + 1):
            refs = {c: f"{c}{r}" for c in "ABCDEH"}
            for col, text in formulas.items():
                ws[f"{col}{r}"] = "=" + text.format(**refs)
    wb.save(path)
    return path


def raw_xlsx(sheets: dict[str, str]) -> bytes:
    """A workbook assembled from sheet XML bodies ({title: '<row>...</row>...'}), for sizes openpyxl is slow at."""
    import io
    import zipfile

    ns = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    parts = {
        "[Content_Types].xml": '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/xl/workbook.xml" '
        'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
        + "".join(
            f'<Override PartName="/xl/worksheets/sheet{i}.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
            for i in range(1, len(sheets) + 1)
        )
        + "</Types>",
        "_rels/.rels": '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        f'<Relationship Id="rId1" Type="{rel}/officeDocument" Target="xl/workbook.xml"/></Relationships>',
        "xl/workbook.xml": f'<workbook xmlns="{ns}" xmlns:r="{rel}"><sheets>'
        + "".join(f'<sheet name="{t}" sheetId="{i}" r:id="rId{i}"/>' for i, t in enumerate(sheets, 1))
        + "</sheets></workbook>",
        "xl/_rels/workbook.xml.rels": '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        + "".join(
            f'<Relationship Id="rId{i}" Type="{rel}/worksheet" Target="worksheets/sheet{i}.xml"/>'
            for i in range(1, len(sheets) + 1)
        )
        + "</Relationships>",
    }
    for i, body in enumerate(sheets.values(), 1):
        parts[f"xl/worksheets/sheet{i}.xml"] = f'<worksheet xmlns="{ns}"><sheetData>{body}</sheetData></worksheet>'
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name, text in parts.items():
            zf.writestr(name, text)
    return buf.getvalue()


def raw_scenario_rows(rows: int, array: bool) -> str:
    """The sheet body of :func:`scenario_book` as XML: inputs A:E, results F:J per cell or as array formulas."""
    out = []
    last = rows + 1
    for r in range(2, last + 1):
        cells = "".join(
            f'<c r="{c}{r}"><v>{v}</v></c>'
            for c, v in zip("ABCDE", (7 + r % 70, 1 + r % 2, 1 + r % 8, 3.35, 1 + r % 64))
        )
        if not array:
            cells += "".join(
                f'<c r="{c}{r}"><f>{f}</f></c>'
                for c, f in zip(
                    "FGHIJ",
                    (
                        f"WEIGHTS_GB(A{r},B{r})",
                        f"DECODE_TOKS(A{r},B{r},C{r},D{r})",
                        f"DECODE_TOKS_TOTAL(A{r},B{r},C{r},D{r},E{r})",
                        f"COST_PER_M_TOKENS(C{r},2.5,H{r})",
                        f"REPLICAS(20833,H{r})",
                    ),
                )
            )
        elif r == 2:
            cells += "".join(
                f'<c r="{c}2"><f t="array" ref="{c}2:{c}{last}">WEIGHTS_GB(A2:A{last},B2:B{last})</f></c>'
                for c in "FGHIJ"
            )
        out.append(f'<row r="{r}">{cells}</row>')
    return "".join(out)


if __name__ == "__main__":  # python tests/helpers/books.py plan.xlsx: the recalc example workbook of docs/headless.md
    import sys

    if len(sys.argv) != 2:
        sys.exit("usage: python tests/helpers/books.py OUT.xlsx")
    print(f"wrote {plan_book(Path(sys.argv[1]))}")


def case_refs(b: Built, values: dict[str, Any], aliases: dict[str, str] | None = None) -> dict[str, Any]:
    """``values`` with each ``field@N`` key (a scenario-block input of case N, 1 to 4; ``aliases`` renames a field
    to its line key) as that case's Inputs cell; other keys (cells, defined names) as given."""
    refs = {}
    for key, value in values.items():
        if "@" in key:
            field, case = key.split("@")
            ref = b.book.ref(f"{(aliases or {}).get(field, field)}@{int(case) - 1}")
            refs[f"Inputs!{ref.col}{ref.row}"] = value
        else:
            refs[key] = value
    return refs


_KEPT: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()
"""Per workbook, the value each input held before any change (kept as long as the workbook lives)."""
_DEPTH: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
"""Per workbook, how many :func:`changed` are open: inside another, an input's value is that change's."""


@contextlib.contextmanager
def changed(b: Built, values: dict[str, Any]) -> Iterator[Built]:
    """Set inputs of a built template (cells or defined names), recalculate, and put the old values back afterwards.

    The old values go back uncalculated: the next read recalculates (the Workbook API never reads a stale value).
    Reading an input's old value with ``Workbook.get`` would first recalculate what the previous change left pending
    (a whole calculation nobody reads, when a test changes inputs again at once); every test puts back what it
    changes, through here (no test sets a built template's input directly), so an input's value before any change
    is read once, the first time it is changed outside another change, and kept: a change pays for one calculation,
    not two. Inside another change an input's value is read as it is then."""
    wb = b.workbook
    kept = _KEPT.setdefault(wb, {})
    nested = _DEPTH.get(wb, 0) > 0
    old = {}
    for ref in values:
        if nested:
            old[ref] = wb.get(ref)
        else:
            if ref not in kept:
                kept[ref] = wb.get(ref)
            old[ref] = kept[ref]
    _DEPTH[wb] = _DEPTH.get(wb, 0) + 1
    try:
        for ref, value in values.items():
            wb.set(ref, value)
        wb.calculate()
        yield b
    finally:
        _DEPTH[wb] -= 1
        for ref, value in old.items():
            wb.set(ref, value)


def saved_values(path: Path, names_from: Path | None = None) -> Any:
    """A reader of the values a saved file caches, by cell (``Sheet!A1``) or defined name: a template as built, or
    as LibreOffice recalculated and saved it (whose defined names are read from ``names_from``, the file it was
    made from, where given)."""
    wb = openpyxl.load_workbook(path, data_only=True)
    names = {n: d.attr_text for n, d in openpyxl.load_workbook(names_from or path).defined_names.items()}

    def get(ref: str) -> Any:
        ref = names.get(ref, ref)
        sheet, cell = ref.replace("$", "").rsplit("!", 1)
        return wb[sheet.strip("'")][cell].value

    return get


def built_templates(tmp_path_factory: Any, edition: str = "functions") -> dict[str, Built]:
    """Both templates as shipped in workbooks/, loaded and recalculated (never saved), with the layout their build
    gives; the functions (add-in) edition unless ``edition`` says otherwise. tests/e2e/test_generated.py holds the
    shipped files to be what this version builds from the shipped catalog, so a test reading these reads a fresh
    build without paying for one."""
    from xlsxplan.headless import Workbook
    from xlsxplan.templates.build import TEMPLATES, Built, edition_filename

    from . import REPO

    out = {}
    for filename, build in TEMPLATES.items():
        path = REPO / "workbooks" / edition_filename(filename, edition)
        out[filename] = Built(path, build(), Workbook.load(path).calculate())
    return out
