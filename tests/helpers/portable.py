"""The portable editions' test scenarios and comparison, shared by tests/templates/test_portable.py and
tests/templates/test_portable_libreoffice.py (LibreOffice's conversion in a file of its own, so that the test runner's
two workers take it and the rest of the portable tests side by side)."""

from __future__ import annotations

import datetime
import functools
import re
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from openpyxl.formula.tokenizer import Token, Tokenizer

from tests.helpers import REPO
from tests.helpers.books import opened
from xlsxplan.errors import CellError
from xlsxplan.templates import serving, training
from xlsxplan.templates.build import edition_filename

CASES = "GHIJ"


def cases(row: int, value: Any) -> dict[str, Any]:
    """The same value in the four scenario cases of an Inputs row."""
    return {f"Inputs!{c}{row}": value for c in CASES}


SERVING = {
    "as built": {},
    "H200 for every case": cases(16, "H200") | cases(17, "H200"),
    "MI300X, 1 GPU": cases(16, "MI300X") | cases(17, "MI300X") | cases(23, 1),
    "Llama-3.1-8B on one L40S": cases(11, "Llama-3.1-8B")
    | cases(12, "Llama-3.1-8B")
    | cases(16, "L40S")
    | cases(17, "L40S")
    | cases(23, 1),
    "Mixtral-8x7B (experts) in int8": cases(11, "Mixtral-8x7B") | cases(12, "Mixtral-8x7B") | cases(21, "int8"),
    "DeepSeek-V3 (latent attention) on 8 H200 in fp8": cases(11, "DeepSeek-V3")
    | cases(12, "DeepSeek-V3")
    | cases(16, "H200")
    | cases(17, "H200")
    | cases(21, "fp8")
    | cases(22, "fp8")
    | cases(23, 8),
    "int4 weights, fp8 cache": cases(21, "int4") | cases(22, "fp8"),
    "ten times the traffic": {"Requests_Per_Day": 2_000_000, "Peak_Hour_Factor": 2},
    "longer prompts and answers": {"Inputs!B27": 4000, "Inputs!B28": 9000, "Output_Tokens_Per_Request": 800},
    "latency and first-token targets": {"Latency_Target": 40, "Time_To_First_Token_Target": 0.8},
    "refused: usable memory fraction 1.5": {"Usable_Memory_Fraction": 1.5},
}
TRAINING = {
    "as built": {},
    "H100-SXM, 64 GPUs": cases(22, "H100-SXM") | cases(25, 64),
    "A100-80GB at 35% MFU": cases(22, "A100-80GB") | cases(26, 0.35),
    "ten times the tokens": cases(13, 1e11),
    "longer sequences": cases(17, 4096),
    "tensor parallel 2, ZeRO 3": cases(20, 2) | cases(21, 3),
    "B200, a day's budget": cases(22, "B200") | cases(27, 86400),
    "adafactor, dropout": {"Optimizer": "adafactor", "Dropout": 0.1},
    "a 1.5 MFU": cases(26, 1.5),
    "H200, 8 GPUs, 1e12 tokens": cases(22, "H200") | cases(25, 8) | cases(13, 1e12),
}
TEMPLATES = {serving.FILENAME: SERVING, training.FILENAME: TRAINING}


def copy_editions(folder: Path) -> Path:
    """Both editions of both templates copied into ``folder``: the committed ones, which
    tests/templates/test_build.py holds to be byte for byte what ``xlsxplan build`` and ``build --functions`` write
    (so they are not built again here)."""
    for name in (serving.FILENAME, training.FILENAME):
        for edition in ("portable", "functions"):
            shutil.copyfile(
                REPO / "workbooks" / edition_filename(name, edition), folder / edition_filename(name, edition)
            )
    return folder


@functools.cache
def formulas(path: Path) -> Mapping[str, str]:
    """Every formula cell of a workbook, ``'Sheet'!A1`` -> its text; read once a file (the tests read each edition's
    copy in a module's own folder, never changed after it is copied there), and never changed after."""
    wb = opened(path)
    out = {}
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for c in row:
                v = c.value
                text = v.text if hasattr(v, "text") else v
                if isinstance(text, str) and text.startswith("="):
                    out[f"'{ws.title}'!{c.coordinate}"] = text
    return MappingProxyType(out)


def functions(formula: str) -> list[str]:
    """The functions ``formula`` calls, as Excel names them (the ``_xlfn.`` of storage removed)."""
    return [
        t.value[:-1].upper().removeprefix("_XLFN.")
        for t in Tokenizer(formula).items
        if t.type == Token.FUNC and t.subtype == Token.OPEN
    ]


class Layout:
    """Which cells to compare between the editions: the add-in's formulas but the frozen ones."""

    def __init__(self, folder: Path, name: str) -> None:
        addin = formulas(folder / edition_filename(name, "functions"))
        port = formulas(folder / name)
        # the sheet the portable edition leaves out (xlwings.conf) is not compared
        sheets = {k.split("!")[0] for k in port}
        self.cells = [k for k in addin if k in port]
        self.frozen = [k for k in addin if k not in port and k.split("!")[0] in sheets]
        # cells that read the frozen sheet (the Cover's and Outputs' calibrated view reads the Options table's marked
        # row): stale with it when a scenario changes its inputs, and said so by the same check
        self.reads_frozen = _reading(port, set(self.frozen))
        book = (serving if name == serving.FILENAME else training).build()
        m = book.master_check
        assert m is not None
        self.master = f"'{m.sheet}'!{m.col}{m.row}"
        master_ref = f"{m.sheet}!${m.col}${m.row}"
        here = {f"={m.col}{m.row}", f"=${m.col}${m.row}"}  # the master check's own sheet, row 2
        self.status = {
            k for k, t in addin.items() if master_ref in t or (k.startswith(f"'{m.sheet}'!") and t in here)
        } | {self.master}
        ws = opened(folder / name)[m.sheet]
        self.stale = [
            f"'{m.sheet}'!B{r}"
            for r in range(m.row + 1, ws.max_row + 1)
            if "values computed by Python for other inputs" in str(ws[f"A{r}"].value)
        ]


_REF = re.compile(r"(?:'([^']+)'|([A-Za-z][\w.]*))!\$?([A-Z]{1,3})\$?(\d+)")
_BARE = re.compile(r"(?<![!\w$'])\$?([A-Z]{1,3})\$?(\d+)(?![\w(])")


def _reading(formulas: Mapping[str, str], cells: set[str]) -> set[str]:
    """The formula cells (``'Sheet'!A1``) that read one of ``cells`` (a range by its corners), directly or through
    others."""
    refs = {}
    for k, t in formulas.items():
        here = k.split("!")[0]
        refs[k] = {f"'{m[0] or m[1]}'!{m[2]}{m[3]}" for m in _REF.findall(t)}
        refs[k] |= {f"{here}!{col}{row}" for col, row in _BARE.findall(_REF.sub("", t))}
    found = {k for k, r in refs.items() if r & cells}
    while True:
        more = {k for k, r in refs.items() if k not in found and r & found}
        if not more:
            return found
        found |= more


@functools.cache
def layout_of(folder: Path, name: str) -> Layout:
    """:class:`Layout` of ``name`` in ``folder``, made once (2 s for the serving plan: both editions read, the
    template built) for every test of a module that reads it; a Layout is never changed after it is made."""
    return Layout(folder, name)


def same(got: Any, want: Any) -> bool:
    if isinstance(got, datetime.datetime):  # LibreOffice stores a date-formatted result as a date
        got = (got - datetime.datetime(1899, 12, 30)).total_seconds() / 86400
    if isinstance(want, CellError):
        return (got.code if isinstance(got, CellError) else got) == want.code
    if isinstance(want, bool) or isinstance(got, bool):
        return bool(got) == bool(want) and type(got) in (bool, int)
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        return abs(got - want) <= 1e-9 * max(abs(want), abs(got)) or got == want
    if want in (None, "") and got in (None, ""):
        return True
    return got == want


def set_inputs(wb: Any, inputs: dict[str, Any]) -> Any:
    for ref, value in inputs.items():
        wb.set(ref, value)
    return wb.calculate()


def each_scenario(
    wb: Any, scenarios: dict[str, dict[str, Any]], cells: list[str]
) -> Iterator[tuple[str, dict[str, Any], Any]]:
    """Each scenario of ``scenarios`` set into one loaded workbook ``wb`` (a :class:`~xlsxplan.headless.Workbook`)
    and recalculated, as ``(scenario, inputs, wb)``; its inputs put back before the next is set, and after the last,
    ``wb`` recalculated with every input as it was loaded must give again, in each of ``cells``, the value it gave
    then (a put-back that left a trace fails here). One load a workbook instead of one a scenario (a load of the
    serving plan costs five of its recalculations); the engine recalculates what the changed inputs reach, as a
    spreadsheet does."""
    refs = list(dict.fromkeys(ref for inputs in scenarios.values() for ref in inputs))
    loaded = {ref: wb.get(ref) for ref in refs}  # also the workbook as loaded, calculated
    before = {ref: wb.get(ref) for ref in cells}
    for scenario, inputs in scenarios.items():
        for ref, value in inputs.items():
            wb.set(ref, value)
        yield scenario, inputs, wb.calculate()
        for ref in inputs:
            wb.set(ref, loaded[ref])
    wb.calculate()
    changed = [ref for ref in cells if not same(wb.get(ref), before[ref])]
    assert not changed, f"inputs put back, yet {len(changed)} cells differ from the workbook as loaded: {changed[:8]}"


def compare(layout: Layout, want: Any, get: Any, stale: bool) -> list[str]:
    wrong = []
    for ref in layout.cells:
        if stale and (ref in layout.status or ref.startswith("'Options'") or ref in layout.reads_frozen):
            continue
        w, g = want.get(ref), get(ref)
        if not same(g, w):
            wrong.append(f"{ref}: {g!r} where the add-in edition has {w!r}")
    return wrong


def is_stale(layout: Layout, addin_before: Any, addin_now: Any) -> bool:
    """The scenario changed what the frozen cells show in the add-in edition."""
    return any(not same(addin_now.get(k), addin_before.get(k)) for k in layout.frozen)
