"""The template workbooks: `xlsxplan build`, the committed files, and the conventions of a well-built model.

The conventions come from shared/design/WORKBOOKS.md (FAST Standard rule numbers, ICAEW Financial Modelling
Code): inputs once and only they unlocked, a defined name per input named after its label, units beside every
figure, a note citing each equation, no merged or hidden cells, INDEX rather than OFFSET/INDIRECT or nested IFs,
no number typed into a formula but zero, one and unit conversions, checks as 1/0 with a master check, printing set
up, and the values cached so the files read right before any add-in is installed.
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import zipfile
from datetime import datetime
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from openpyxl.formula.tokenizer import Token, Tokenizer
from openpyxl.utils import column_index_from_string, get_column_letter, range_boundaries
from openpyxl.worksheet.formula import ArrayFormula

from tests.helpers import REPO
from tests.helpers.docpages import commands, is_build_block, matches, shell_blocks
from tests.helpers.generated import check_workbooks, screenshots_module
from xlsxplan import registry
from xlsxplan.cli import main
from xlsxplan.errors import WorkbookError
from xlsxplan.headless import Workbook
from xlsxplan.sheet.xlwings_conf import read_conf_sheet
from xlsxplan.templates import serving, training
from xlsxplan.templates.book import Book, name_from_label, quote_sheetname
from xlsxplan.templates.build import SENSITIVITY, TEMPLATES, build_template, edition_filename, is_generated
from xlsxplan.templates.common import price_label
from xlsxplan.templates.metrics import wrap_em
from xlsxplan.templates.styles import (
    ALLOWED_CONSTANTS,
    FMT,
    GENERATOR,
    LINE_HEIGHT,
    NOTE_EM_PER_WIDTH,
    PRINT_PAGES_TALL,
    STYLE_NAMES,
    TAB,
    TEMPLATE_DATE,
)

ROOT = REPO
COMMITTED = ROOT / "workbooks"
MODULES = {serving.FILENAME: serving, training.FILENAME: training}
SIDE_SHEET = {serving.FILENAME: "Scenarios", training.FILENAME: "Measured rates"}


@pytest.fixture(scope="module")
def cli_build(tmp_path_factory) -> tuple[Path, str, int]:
    """`xlsxplan build --out DIR` run once: the folder, what it printed, its exit status; and `--functions` into the
    same folder (the add-in edition, kept beside the portable one)."""
    out = tmp_path_factory.mktemp("built")
    text = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(text):
        mp.setenv("XLSXPLAN_CATALOG_DIR", str(tmp_path_factory.mktemp("no-user-presets")))
        code = main(["build", "--out", str(out)])
        printed = text.getvalue()
        assert main(["build", "--out", str(out), "--functions"]) == code
    return out, printed, code


@pytest.mark.slow
def test_the_committed_workbooks_are_what_build_writes(cli_build):
    # the drift check of the workbooks (tests/helpers/generated.py's table names this test): the build above made
    # both editions, which must be the committed bytes; `python tests/regenerate.py` writes them again
    check_workbooks(cli_build[0])


@pytest.fixture(scope="module")
def books() -> dict[str, Book]:
    """Each template's layout (which cells are inputs, where each line item is), built in memory."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XLSXPLAN_CATALOG_DIR", "/nonexistent/xlsxplan-test")
        return {name: builder() for name, builder in TEMPLATES.items()}


@pytest.fixture(scope="module", params=list(TEMPLATES))
def shipped(request, books) -> tuple[str, Book, Any, Any]:
    """A committed template's add-in edition (the registry functions in its cells): its name, layout, and the file
    opened with formulas and with cached values. The portable edition's own tests are in tests/templates/test_portable.py."""
    path = COMMITTED / edition_filename(request.param, "functions")
    return (
        request.param,
        books[request.param],
        openpyxl.load_workbook(path),
        openpyxl.load_workbook(path, data_only=True),
    )


# -- what `xlsxplan build` prints -------------------------------------------------------------------------------------
ENVELOPE_TABLE = """\
KV cache per token: Qwen2.5-72B 320 KiB, Qwen2.5-7B 56 KiB
Peak load: 6.9 requests/s, 2,083 output tokens/s (13,889 prompt tokens/s)
72B BF16, 2 GPUs: does not fit: weights 145 GB, usable memory 144 GB
72B FP8, 2 GPUs: batch 94, 47 tokens/s per user (92 alone), 4,387 tokens/s total, prefill 0.29 s, $0.32 per M output tokens at full load
72B BF16, 4 GPUs: batch 189, 47 tokens/s per user (92 alone), 8,799 tokens/s total, prefill 0.15 s, $0.32 per M output tokens at full load
7B BF16, 1 GPU: batch 430, 47 tokens/s per user (220 alone), 20,031 tokens/s total, prefill 0.06 s, $0.03 per M output tokens at full load
Effective cost per M output tokens at 30% average load: 72B FP8, 2 GPUs: $1.06; 72B BF16, 4 GPUs: $1.05; 7B BF16, 1 GPU: $0.12
Active scenario, 72B FP8, 2 GPUs: 4 replicas, 8 GPUs for the peak with 1 spare (1 counting output tokens only, as if prompts cost nothing, no spares); 25 replicas, 50 GPUs at 10x today's peak (the traffic growth multiple on Inputs; 5 counting output tokens only)
  batch 94, set by memory: memory allows 94 (paged KV cache; 94 with every slot at the tail), no latency target given; first visible token after 0.29 s for a mean prompt alone, 0.83 s for a tail prompt at that batch; prompts over 32,768 tokens rejected: 0.0%
  fleet utilisation 19.6%, peak covered 1.28x with the spares down; $1.04 per M input and $1.04 per M output tokens at that (the bill split by GPU time, 87% prefill); disaggregated: 4 prefill + 2 decode replicas (12 GPUs), KV transfer 13 ms
  per M output tokens, three bases: $0.32 a replica decoding at full load around the clock (prompts not counted); $1.06 that at the 30% average load assumed on Inputs (full load over 30%, the source text's method); $1.04 the planned fleet of 8 GPUs around the clock at the day's traffic, the output tokens' 13% of the bill: the figure to budget
  calibrated (the serving step xlsxplan validate scores, as xlsxplan plan ranks): 11.8 tokens/s per user, 3 replicas (6 GPUs) for the peak with 1 spare, $0.78 per M output tokens for that fleet around the clock, beside $1.04 at the efficiencies on Inputs; the source text's method at the calibrated efficiencies gives $1.90 at 30% load
"""


@pytest.mark.slow
def test_build_prints_the_envelope_table_read_from_the_workbook(cli_build):
    # "Back-of-the-Envelope Estimation for LLM Systems" §6 prints: KV 320/56 KiB; 6.9 requests/s, 2,083 output tokens/s; 72B BF16 on 2 GPUs does not fit
    # (145 GB in 144 GB); 72B FP8 on 2: batch 94, 47 (92) tok/s, 4,387 total, 0.29 s, $0.32; 72B BF16 on 4: 189,
    # 47 (92), 8,799, 0.15 s, $0.32; 7B BF16 on 1: 430, 47 (220), 20,031, 0.06 s, $0.03. "Reading the result": at 30%
    # average utilisation "about $1.05 per million output tokens for the 72B setup" (BF16 on 4 GPUs: $0.3157 / 0.3);
    # five replicas for ten times the traffic counting output tokens only. The lines after the source's table are the
    # plan it warns about (spares, targets, the fleet's own utilisation, input and output priced apart) and the
    # calibrated view.
    out, text, code = cli_build
    assert code == 0
    serving_part, training_part, _bill = text.split("\n\n")
    lines = serving_part.splitlines()
    assert lines[0] == f"Serving plan: {out / serving.FILENAME} (checks OK)"
    assert "\n".join(lines[1:]) + "\n" == ENVELOPE_TABLE


def test_the_three_costs_per_m_output_tokens_reconcile(shipped):
    # `build` prints three figures per M output tokens for one fleet; each is the one before it on another basis, and
    # the test recomputes each from the workbook's own cells: full load (Back-of-the-Envelope §6: GPUs x price /
    # decode throughput), that over the assumed average utilisation (its §6 "Reading the result"), and the planned
    # fleet billed around the clock with the output tokens' share of its GPU time over the day's output tokens
    name, book, _, values = shipped
    if name != serving.FILENAME:
        pytest.skip("the serving plan's costs")

    def cell(address: str) -> float:
        sheet, ref = address.replace("$", "").split("!")
        return values[sheet.strip("'")][ref].value

    def named(label: str) -> float:
        return cell(values.defined_names[label].attr_text)

    keys = "cost_full cost_avg cost_out gpus_peak price tps_total n_gpus decode_tokens prefill_share".split()
    get = {k: cell(book.address(k)) for k in keys}
    assert get["cost_full"] == pytest.approx(get["n_gpus"] * get["price"] / (get["tps_total"] * 3600) * 1e6, rel=1e-12)
    assert get["cost_avg"] == pytest.approx(get["cost_full"] / named("Average_Utilisation"), rel=1e-12)
    day = named("Requests_Per_Day") * get["decode_tokens"]
    bill = get["gpus_peak"] * get["price"] * 24 * (1 - get["prefill_share"])
    assert get["cost_out"] == pytest.approx(bill / day * 1e6, rel=1e-12)
    assert len({round(get[k], 2) for k in ("cost_full", "cost_avg", "cost_out")}) == 3


@pytest.mark.slow
def test_the_templates_page_shows_what_build_prints(cli_build):
    # docs/templates.md: the example output is the command's, line for line ("..." skips lines), by the comparison
    # tests/e2e/test_docs.py makes for every other example (which leaves this one to the build made once here)
    (block,) = [b for b in shell_blocks("docs/templates.md") if is_build_block(b)]
    ((_, shown_text),) = commands(block)
    out, text, code = cli_build
    assert code == 0
    assert matches(text.replace(str(out), "workbooks"), shown_text), text
    shown, printed = shown_text.splitlines(), text.replace(str(out), "workbooks").splitlines()
    serving_part = shown[: shown.index("")]
    assert serving_part == printed[: len(serving_part)]  # the serving plan in full
    # the README shows the bill, the last lines, as printed
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    bill = re.search(r"```text\n(The bill, in short.+?)\n```", readme, re.S).group(1).splitlines()
    assert bill == printed[-len(bill) :]


@pytest.mark.slow
def test_build_ends_with_the_bill_read_aloud_and_what_to_open_next(cli_build):
    out, text, _ = cli_build
    wb = Workbook.load(out / serving.FILENAME)
    tail = text.rstrip().splitlines()[-7:]
    figure = wb.get
    assert tail[0] == f"The bill, in short (the serving plan's active scenario, {figure('Scenario_Name')}):"
    assert f"Fleet: {figure('GPUs_In_The_Fleet'):.0f} {figure('Accelerator')} GPUs, " in tail[1]
    assert f"{figure('Replicas_In_The_Fleet'):.0f} copies of the model" in tail[1]
    assert f"Monthly bill: ${figure('Monthly_Cost'):,.0f} at list price" in tail[2]
    costs = figure("Cost_Per_M_Input_Tokens"), figure("Cost_Per_M_Output_Tokens")
    assert f"${costs[0]:.2f} input (prompt) and ${costs[1]:.2f} output (answer)" in tail[3]
    price = figure(name_from_label(price_label(figure("Accelerator"))))
    assert tail[4].startswith(f"  Price basis: ${price:.2f} per GPU-hour") and "as of 2026-11-01" in tail[4]
    # the assumption named is the one that moves the bill most: each tried, a quarter the costly way
    base, moved = figure("Monthly_Cost"), {}
    for name, factor in SENSITIVITY:
        was = figure(name)
        moved[name] = abs(wb.set(name, was * factor).get("Monthly_Cost") - base)
        wb.set(name, was)
    most = max(moved, key=lambda n: moved[n])
    assert tail[5].startswith(f"  What moves it most: the {most.replace('_', ' ').lower()} on Inputs;"), moved
    assert tail[6].startswith(f"Next: open {out / serving.FILENAME} at its Cover sheet")
    # no unexplained jargon
    assert "x the peak" not in text and "(5 output tokens only)" not in text


def test_the_ranges_the_templates_page_quotes_are_the_covers():
    # docs/templates.md quotes each Cover's calibrated headline with its P10-P90 range: those figures move with every
    # refit, so the page must quote what the committed workbooks' Covers hold, never a figure typed once
    page = " ".join((ROOT / "docs" / "templates.md").read_text(encoding="utf-8").split())
    quoted = re.findall(r'"([^"]*likely[^"]*)"', page, re.I)
    assert len(quoted) >= 3
    covers = set()
    for name in (serving.FILENAME, training.FILENAME):
        ws = openpyxl.load_workbook(COMMITTED / edition_filename(name, "functions"), data_only=True)["Cover"]
        covers |= {c.value.split(" (")[0] for r in ws.iter_rows() for c in r if isinstance(c.value, str)}
    for text in quoted:
        assert text in covers, f"docs/templates.md quotes {text!r}, which no Cover shows"


def test_formulas_the_templates_page_quotes_are_in_the_serving_plan():
    # Review: the manual quoted USABLE_GB(GPUs_Per_Replica,B18,...) after the formula had moved to B24. Every
    # formula docs/templates.md quotes with a cell reference must be a cell of the shipped serving plan, as written.
    section = (ROOT / "docs" / "templates.md").read_text(encoding="utf-8")
    quoted = [f for f in re.findall(r"`(=[A-Z][^`]*)`", " ".join(section.split())) if re.search(r"\$?B\$?\d", f)]
    assert len(quoted) >= 3
    wb = openpyxl.load_workbook(COMMITTED / edition_filename(serving.FILENAME, "functions"))
    formulas = {c.value for ws in wb.worksheets for r in ws.iter_rows() for c in r if c.data_type == "f"}
    for formula in quoted:
        assert formula in formulas, formula


@pytest.mark.slow
def test_build_prints_the_compute_and_memory_figures(cli_build):
    # "Estimating the Compute and Memory Needed for Language Models": 35.95M parameters, 3.927B tokens on eight H100s (7.92 PFLOP/s dense), 20N = 719M tokens, 5.5x;
    # 8B cached, half a pass; the record's 6.55M tokens/s -> 1.41 PFLOP/s, 18% MFU, 84M optimal for 600 s; the M2
    # rows 1.7-2.4M optimal and 8-16 days; the 0.36M anchor about 20 days.
    out, text, _ = cli_build
    lines = text.split("\n\n")[1].splitlines()
    assert lines[0] == f"Training plan: {out / training.FILENAME} (checks OK)"
    assert lines[1] == "Active scenario, Param. Golf record: 35.95M parameters on 3.927B tokens, 6ND = 8.47e+17 FLOPs"
    assert lines[2].startswith("8 x H100-SXM at 989.5 TFLOP/s dense (7.92 PFLOP/s), MFU 18%: 594.5 s, within budget")
    assert "Chinchilla's rule asks 719M; the run has 5.5x that: data-heavy" in lines[3]
    assert lines[4].startswith("Compute-optimal size for 600 s: 84.4M parameters")
    assert lines[4].endswith("0.49 passes over 8.0B cached tokens")
    # PaLM's attention term at the record's 2,048-token sequences (its log; 786,432 tokens a step is the source's
    # 3.927B tokens over 4,997 steps): 12 L H Q T = 12 x 11 x 8 x 64 x 2,048 = 138.4M FLOPs a token beside
    # 6N = 215.7M, 39% of the total; activations in flash mode over the 17 layer passes the recurrence makes
    # (48 sequences of 2,048 a GPU), with the source's measured 41.7 GB above it (logits and loss not modelled); then
    # the calibrated MFU
    # the calibrated MFU (fitted: the record's hidden size 512 at 2,048 tokens on H100s), and 6ND at it
    from xlsxplan.calibration import efficiency

    mfu = efficiency("train_mfu", "H100-SXM", "bf16", 512, 2048)
    seconds = 6 * 35.95e6 * 3.927e9 / (8 * 989.5e12 * mfu)
    assert lines[5] == (
        "With attention at 2,048-token sequences (PaLM): 1.39e+18 FLOPs, 39% of them attention; "
        f"calibrated MFU {mfu:.0%}: {seconds:.1f} s"
    )
    assert lines[6] == ("Memory per GPU: 0.58 GB of model state + 27.43 GB of activations = 28.0 GB of 80 GB: fits")
    assert (
        lines[8] == "  8xH100 Golf record: 6.55M tokens/s, 1.41 PFLOP/s, MFU 18%; optimal 84.04M parameters; run 600 s"
    )
    assert lines[9].endswith("optimal 1.72M parameters; run 16.5 days")
    assert lines[10].endswith("optimal 2.46M parameters; run 8.1 days")
    assert lines[11] == "  M2 0.36M anchor: 230,141 tokens/s, 0.50 TFLOP/s; optimal 1.58M parameters; run 19.6 days"


# -- building: deterministic, never over a file someone saved (drift: tests/e2e/test_generated.py) ---------------------
def test_the_garbage_collector_is_paused_while_a_template_recalculates_and_restored_after():
    import gc

    from xlsxplan.headless.workbook import gc_paused

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError, match="boom"), gc_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # left as the caller had it
    finally:
        gc.enable()


@pytest.mark.slow
def test_building_twice_writes_the_same_bytes(cli_build, tmp_path):
    # the first build is the module's (`xlsxplan build`, the same build_template), copied here; built again over it
    # (a file build wrote is replaced without --force), the same bytes
    first = shutil.copy(cli_build[0] / training.FILENAME, tmp_path / training.FILENAME)
    before = first.read_bytes()
    second = build_template(training.FILENAME, tmp_path, Workbook)
    assert second.path == first and second.path.read_bytes() == before


@pytest.mark.slow
def test_build_never_replaces_a_file_someone_saved(cli_build, tmp_path):
    built = cli_build[0] / training.FILENAME
    assert is_generated(built)
    edited = tmp_path / training.FILENAME
    with zipfile.ZipFile(built) as src, zipfile.ZipFile(edited, "w") as dst:  # as Excel would leave it after a save
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == "docProps/core.xml":
                data = data.replace(b"<cp:lastModifiedBy>xlsxplan build", b"<cp:lastModifiedBy>Ann Analyst")
            dst.writestr(info, data)
    assert not is_generated(edited)
    before = edited.read_bytes()
    with pytest.raises(
        WorkbookError, match=r"was not written by `xlsxplan build` or has been edited since; pass --force"
    ):
        build_template(training.FILENAME, tmp_path, Workbook)
    assert edited.read_bytes() == before
    (tmp_path / "serving_plan.xlsx").write_text("my notes")
    with pytest.raises(WorkbookError, match="serving_plan.xlsx was not written by `xlsxplan build`"):
        build_template(serving.FILENAME, tmp_path, Workbook)
    # recalculated with another input: `xlsxplan recalc` keeps the document properties, so the stamp alone would call
    # it untouched; the digest of its parts build recorded says it changed
    recalculated = tmp_path / "recalculated" / training.FILENAME
    recalculated.parent.mkdir()
    assert main(["recalc", str(built), "-o", str(recalculated), "--set", "Active_Scenario=7B, 140B tokens", "-q"]) == 0
    assert not is_generated(recalculated)
    with pytest.raises(WorkbookError, match="was not written by `xlsxplan build` or has been edited since"):
        build_template(training.FILENAME, recalculated.parent, Workbook)
    assert main(["recalc", str(built), "-o", str(recalculated), "-q"]) == 0  # nothing set: the same bytes, as built
    assert is_generated(recalculated)
    replaced = build_template(
        training.FILENAME, tmp_path, Workbook, force=True
    )  # asked to: replaced, and generated again
    assert is_generated(replaced.path) and replaced.path.read_bytes() != before


def test_build_checks_every_file_before_writing_any(tmp_path, capsys):
    # the serving plan as build left it (its stamp), the training plan saved by someone since: neither is written
    stamped = tmp_path / serving.FILENAME
    with zipfile.ZipFile(stamped, "w") as z:
        z.writestr(
            "docProps/core.xml",
            f"<cp:lastModifiedBy>{GENERATOR}</cp:lastModifiedBy>"
            f'<dcterms:modified xsi:type="x">{TEMPLATE_DATE:%Y-%m-%dT%H:%M:%SZ}</dcterms:modified>',
        )
    assert is_generated(stamped)
    before = stamped.read_bytes()
    (tmp_path / training.FILENAME).write_text("my notes")
    assert main(["build", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "training_plan.xlsx was not written" in err and "nothing was written" in err
    assert stamped.read_bytes() == before and (tmp_path / training.FILENAME).read_text() == "my notes"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([serving.FILENAME, training.FILENAME])


def test_build_refusal_exits_2_with_one_line(tmp_path, capsys):
    (tmp_path / serving.FILENAME).write_text("not a workbook")
    assert main(["build", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pass --force to replace it" in err


# -- structure ---------------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_sheets_in_order_with_a_tab_colour_per_kind(shipped):
    name, book, wb, _ = shipped
    side = SIDE_SHEET[name]
    # input sheets of their own (a pasted column each) and the month-by-month plan after Calculations
    data = ["Prompt lengths", "Monthly requests"] if name == serving.FILENAME else []
    months = ["Timeline", "Finance"] if name == serving.FILENAME else []
    options = ["Options"]  # the plan search (serving) and the layout search (training): reference tables, printed late
    # several workloads: native formulas, then PORTFOLIO's search (kept as values in the portable edition)
    portfolio = ["Portfolio", "Chargeback"] if name == serving.FILENAME else []
    assert wb.sheetnames == [
        "Cover",
        "Guide",
        "Inputs",
        *data,
        "Calculations",
        *months,
        "Outputs",
        side,
        *portfolio,
        "Calibration",
        "Checks",
        "Version log",
        *options,
        "Lists",
        "xlwings.conf",
    ]
    kinds = {
        "Cover": "cover",
        "Guide": "guide",
        "Inputs": "inputs",
        "Calculations": "calc",
        "Outputs": "outputs",
        side: "scenarios",
        "Calibration": "calibration",
        "Checks": "checks",
        "Version log": "log",
        "Lists": "lists",
        **{sheet: "inputs" for sheet in data},
        **{sheet: "calc" for sheet in months},
        **{sheet: "scenarios" for sheet in (*options, *portfolio)},
    }
    for sheet, kind in kinds.items():
        assert wb[sheet].sheet_properties.tabColor.rgb == "00" + TAB[kind], sheet
    assert read_conf_sheet(wb) == {"UDF Modules": "xlsxplan.excel.udfs"}


def test_nothing_hidden_or_merged_and_every_sheet_protected_without_a_password(shipped):
    _, _, wb, _ = shipped
    for ws in wb.worksheets:
        assert ws.sheet_state == "visible", ws.title
        assert not ws.merged_cells.ranges, ws.title
        assert not any(d.hidden for d in ws.row_dimensions.values()), ws.title
        assert not any(d.hidden for d in ws.column_dimensions.values()), ws.title
        assert ws.protection.sheet, ws.title
        assert not ws.protection.password and not ws.protection.hashValue, ws.title


def test_only_input_cells_are_unlocked_and_styled_as_inputs(shipped):
    # Inputs' A3 and docs/templates.md ask for each row's Source and As-of date to be restated with its value: the
    # register beside every input (D to F) is unlocked too, styled as register cells; nothing else is
    _, book, wb, _ = shipped
    inputs = {(row.sheet, cell) for row in book.inputs for cell in row.cells}
    register = {(row.sheet, cell) for row in book.inputs for cell in row.register}
    assert len(register) == 3 * len(book.inputs)
    assert {cell[0] for _, cell in register} == {"D", "E", "F"}
    unlocked = {
        (ws.title, c.coordinate) for ws in wb.worksheets for r in ws.iter_rows() for c in r if not c.protection.locked
    }
    assert unlocked == inputs | register
    for sheet, cell in inputs:
        assert wb[sheet][cell].style == "Input", cell
    for sheet, cell in register:
        assert wb[sheet][cell].style == ("Register Comment" if cell[0] == "F" else "Register"), cell
        if cell[0] == "E":
            assert isinstance(wb[sheet][cell].value, datetime), cell
    assert "Source and As-of date" in wb["Inputs"]["A3"].value + " " + (wb["Inputs"]["A4"].value or "")


def test_every_input_has_one_defined_name_made_from_its_label(shipped):
    _, book, wb, _ = shipped
    names = {n: d.attr_text for n, d in wb.defined_names.items()}
    for row in book.inputs:
        assert row.name == name_from_label(row.label)
        target = names.pop(row.name)
        cells = [row.live] if row.live else list(row.cells)
        expected = (
            f"${cells[0][0]}${cells[0][1:]}"
            if len(cells) == 1
            else f"${cells[0][0]}${cells[0][1:]}:${cells[-1][0]}${cells[-1][1:]}"
        )
        assert target == f"{quote_sheetname(row.sheet)}!{expected}", row.label
        assert wb[row.sheet][f"A{row.row}"].value == row.label
    for name, key in book.output_names.items():  # and the headline outputs, each on its line item's cell
        ref = book.ref(key)
        assert names.pop(name) == f"{quote_sheetname(ref.sheet)}!${ref.col}${ref.row}", name
    assert names == {"Scenario_Number": names.get("Scenario_Number")}  # names are for inputs and outputs only
    live = [row for row in book.inputs if row.live]
    assert live and all(wb["Inputs"][row.live].value.startswith("=INDEX($G") for row in live)
    assert all(re.search(r",Scenario_Number\)$", wb["Inputs"][row.live].value) for row in live)


@pytest.mark.parametrize(
    "label, name",
    [
        ("Price per GPU-hour", "Price_Per_GPU_Hour"),
        ("KV cache precision", "KV_Cache_Precision"),
        ("Model FLOPs utilisation", "Model_FLOPs_Utilisation"),
        ("Peak-hour factor (busiest hour / average)", "Peak_Hour_Factor"),
    ],
)
def test_name_from_label(label, name):
    assert name_from_label(label) == name


@pytest.mark.parametrize("label", ["AB12", "R1C1", "2nd try", "--"])
def test_a_label_that_cannot_name_a_cell_is_refused(label):
    with pytest.raises(ValueError, match=f"label {re.escape(repr(label))} gives no valid defined name"):
        name_from_label(label)


def test_inputs_are_documented_rows_with_units_sources_dates_and_examples_marked(shipped):
    _, book, wb, _ = shipped
    ws = wb["Inputs"]
    assert [ws.cell(5, i).value for i in range(1, 7)] == ["Label", "Value", "Unit", "Source", "As-of date", "Comment"]
    purpose = ws["A3"].value + " " + (ws["A4"].value or "")  # a purpose too long for one printed line takes two
    assert "shipped values are examples" in purpose
    for row in book.inputs:
        r, ws = row.row, wb[row.sheet]
        assert ws[f"C{r}"].value, f"{row.label}: no unit"
        assert isinstance(ws[f"E{r}"].value, datetime), f"{row.label}: no as-of date"
        source = ws[f"D{r}"].value
        assert re.search(r"example|catalog|convention|choose|rule of thumb", source, re.I), f"{row.label}: {source}"


def _rows_with_formulas(ws, cols: str):
    for row in ws.iter_rows(min_row=6):
        if any(c.column_letter in cols and c.data_type == "f" for c in row):
            yield row[0].row


def test_every_figure_has_a_unit_and_every_equation_a_note(shipped):
    name, _, wb, _ = shipped
    for sheet in ("Calculations", "Outputs", "Checks"):
        ws = wb[sheet]
        for r in _rows_with_formulas(ws, "B"):
            assert ws[f"C{r}"].value, f"{sheet}!C{r}: no unit for {ws[f'A{r}'].value}"
            if sheet != "Outputs":
                assert ws[f"D{r}"].value, f"{sheet}!D{r}: no note for {ws[f'A{r}'].value}"
    ws = wb[SIDE_SHEET[name]]
    for r in _rows_with_formulas(ws, "CDEF"):
        assert ws[f"B{r}"].value and ws[f"G{r}"].value, f"{ws.title} row {r}: unit or note missing"


def test_labels_fit_their_column_when_a_value_sits_beside_them(books):
    # Column A is 40 character widths; 10-point text fits about 53 characters before the value beside it cuts it.
    for name, book in books.items():
        for sheet in book.sheets.values():
            ws = sheet.ws
            for row in ws.iter_rows(min_row=6, max_col=1):
                label, beside = row[0].value, ws.cell(row[0].row, 2).value
                if isinstance(label, str) and not label.startswith("=") and beside is not None:
                    assert len(label) <= 53, f"{name} {sheet.name}!A{row[0].row}: {label}"


def test_sources_and_comments_on_inputs_fit_their_columns(books):
    # Source (D, 40 widths) has the as-of date beside it; a comment (F, 50 widths) ends its page: the scenario
    # block's cases (G to J) print on the next page, beside the labels and live values.
    for name, book in books.items():
        ws = book.ws("Inputs")
        for row in ws.iter_rows(min_row=6, max_col=1):
            r = row[0].row
            if ws[f"A{r}"].style == "Heading 2":
                continue
            source, comment = ws[f"D{r}"].value, ws[f"F{r}"].value
            assert not isinstance(source, str) or len(source) <= 44, f"{name} Inputs!D{r}: {source}"
            # the cases print on a page of their own (G to J), so a comment never runs on past F
            assert not isinstance(comment, str) or len(comment) <= 55, f"{name} F{r}: {comment}"
            if ws[f"B{r}"].style == "Input":  # a single input: nothing beside it in G to J
                assert not any(ws.cell(r, c).value for c in range(7, 11)), f"{name} Inputs row {r}"


def test_notes_fit_their_column_when_printed(books):
    # A note runs on over the empty columns to the right of it and is cut at the print area's edge: on a list sheet
    # D to F (101 character widths), where italic 10-point text fits about 105 characters. On a side-by-side sheet
    # the note column (G, 56 widths) is the last: a note wraps there, in two lines at most, in a row tall enough
    # for them (DejaVu Sans's widths, wider than Calibri's: LibreOffice prints with it where Calibri is missing).
    for name, book in books.items():
        for sheet in book.sheets.values():
            ws = sheet.ws
            for row in ws.iter_rows(min_row=6):
                for c in row:
                    text = c.value
                    if c.column_letter != sheet.note_col or not isinstance(text, str) or text.startswith("="):
                        continue
                    where = f"{name} {sheet.name}!{c.coordinate}: {text}"
                    if sheet.note_col == "D":
                        assert len(text) <= 105, where
                        continue
                    lines = wrap_em(text, NOTE_EM_PER_WIDTH * ws.column_dimensions["G"].width)
                    assert len(lines) <= 2, where
                    if len(lines) > 1:
                        assert c.alignment.wrap_text and c.alignment.vertical == "top", where
                        assert ws.row_dimensions[c.row].height >= LINE_HEIGHT * len(lines), where


def test_every_printed_page_is_at_most_181_character_widths_wide(books):
    # Fitting the page width, a sheet prints at about 784 points / (5.25 points a width): 169 widths (the list
    # sheets) at 86% of their size, 181 at 80%; the side-by-side sheets were 204 widths wide, 6-point type
    for name, book in books.items():
        for ws in book.wb.worksheets:
            titles = ws.print_title_cols
            repeated = [column_index_from_string(c) for c in titles.replace("$", "").split(":")] if titles else None
            for area in ws.print_area.split(","):
                low, _, high, _ = range_boundaries(area.split("!")[-1].replace("$", ""))
                cols = set(range(low, high + 1)) | (set(range(repeated[0], repeated[1] + 1)) if repeated else set())
                width = sum(ws.column_dimensions[get_column_letter(i)].width or 13 for i in cols)
                assert width <= 181, f"{name} {ws.title} {area}: {width} widths"


CELL = re.compile(r"\$?[A-Z]{1,3}\$?\d+")
ALLOWED_FUNCTIONS = {
    "IF",
    "INDEX",
    "MATCH",
    "MIN",
    "MAX",
    "ROUND",
    "ROUNDUP",
    "ROUNDDOWN",
    "SUM",
    "SUMPRODUCT",
    "SUMIF",
    "ISERROR",
    "ISNUMBER",
    "NOT",
    "NA",
    "COUNT",
    "COUNTIF",
    "ROWS",
    "OR",
    "AND",
    "AVERAGE",
    "PERCENTILE",
    "STDEVP",
    "EDATE",
    "TEXTJOIN",
    "ROW",
    "COLUMN",
    "LEN",
    "RIGHT",
    "SUBSTITUTE",
    "REPT",
    "TRIM",
    "UPPER",
    "FIXED",
}
"""TEXTJOIN spells the priced accelerators for the Options sheet's search (Excel 2019, LibreOffice 5.2); ROW() and
COLUMN() place each of its cells in the table. LEN, RIGHT, SUBSTITUTE, REPT, TRIM and UPPER spell the name a
scenario's inputs give (Excel and LibreOffice text functions of every version); FIXED writes a range's figures in a
sentence ("40 GPUs, likely 34 to 52"), with thousands separators and no format code. SUMIF sums the Portfolio sheet's
workloads of one model (their shared deployment's load) or of one team (Excel and LibreOffice of every version).
IFERROR is not among them: classic xlwings returns a failed function as text, which IFERROR lets through; a
fallback tests ISNUMBER instead (the checks' own IFERROR(..., 1) is added by Sheet.check around a 1/0 result)."""


@pytest.mark.slow
def test_formulas_use_no_typed_numbers_offset_indirect_or_nested_ifs(shipped):
    _, _, wb, _ = shipped
    names = set(wb.defined_names)
    count = 0
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for c in row:
                if c.data_type != "f":
                    continue
                count += 1
                text = c.value.text if isinstance(c.value, ArrayFormula) else c.value  # the Options sheet's table
                where = f"{ws.title}!{c.coordinate}: {text}"
                stack: list[str] = []
                for tok in Tokenizer(text).items:
                    if tok.type == Token.FUNC and tok.subtype == Token.OPEN:
                        fn = tok.value[:-1].upper().removeprefix("_XLFN.")  # as Excel 2010 and later store it
                        if fn == "IFERROR":  # a check's own wrapper: an error in its figures is a problem
                            assert (
                                ws.title == "Checks" and c.value.startswith("=IFERROR(") and c.value.endswith(",1)")
                            ), where
                        else:
                            assert fn in ALLOWED_FUNCTIONS or fn in registry.FUNCTIONS, where
                        assert not (fn == "IF" and "IF" in stack), f"nested IF in {where}"
                        stack.append(fn)
                    elif tok.type == Token.FUNC and tok.subtype == Token.CLOSE:
                        stack.pop()
                    elif tok.type == Token.OPERAND and tok.subtype == Token.NUMBER:
                        assert float(tok.value) in ALLOWED_CONSTANTS, f"number {tok.value} typed in {where}"
                    elif tok.type == Token.OPERAND and tok.subtype == Token.RANGE and not CELL.search(tok.value):
                        assert tok.value in names, f"unknown name {tok.value} in {where}"
    assert count > 100


def test_values_are_cached_and_none_is_an_error(shipped):
    _, _, wb, values = shipped
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for c in row:
                if c.data_type == "f":
                    cached = values[ws.title][c.coordinate].value
                    if cached is None and ("=PLAN_OPTIONS_AT(" in str(c.value) or "TRAIN_OPTIONS(" in str(c.value)):
                        continue  # a figure an option has not, or a row past the last: the empty text (read as None)
                    assert cached is not None, f"{ws.title}!{c.coordinate} has no cached value"
                    assert not (isinstance(cached, str) and cached.startswith("#")), (
                        f"{ws.title}!{c.coordinate}: {cached}"
                    )
    assert wb.calculation.fullCalcOnLoad is False and wb.calculation.calcId == 191029


def test_checks_are_1_or_0_formatted_and_summed_into_a_master_check_shown_everywhere(shipped):
    _, book, wb, values = shipped
    ws = wb["Checks"]
    master = book.ref("master_check")
    rows = list(_rows_with_formulas(ws, "B"))
    assert rows[-1] == master.row
    assert ws[f"B{master.row}"].value == f"=MIN(1,SUM(B{rows[0]}:B{rows[-2]}))"
    formatted = {str(r.sqref) for r in ws.conditional_formatting}
    for r in rows:
        cell = ws[f"B{r}"]
        assert cell.style == "Check Cell" and cell.number_format == FMT["check"] == '"ERROR";"ERROR";"OK"'
        assert f"B{r}" in formatted
        assert values["Checks"][f"B{r}"].value == 0
    link = f"=Checks!$B${master.row}"
    for ws in wb.worksheets:  # docs/templates.md and Guide: on the Cover and on every other sheet's second row
        if ws.title == "Cover":
            assert any(c.value == link for r in ws.iter_rows() for c in r)
        elif ws.title != "xlwings.conf":
            where = "" if ws.title == "Checks" else "Checks!"
            assert ws["B2"].value == (f"=B{master.row}" if not where else link), ws.title
            assert ws["A2"].value.startswith("Master check"), ws.title


def test_printing_is_set_up_and_panes_frozen(shipped):
    name, book, wb, _ = shipped
    for ws in wb.worksheets:
        assert ws.print_area, ws.title
        assert ws.page_setup.orientation == "landscape" and ws.page_setup.fitToWidth == 1, ws.title
        tall = PRINT_PAGES_TALL.get(ws.title, 0)
        assert ws.page_setup.fitToHeight == tall and ws.sheet_properties.pageSetUpPr.fitToPage, ws.title
        areas = [range_boundaries(a.split("!")[-1].replace("$", "")) for a in ws.print_area.split(",")]
        if ws.title == "Inputs":  # the register across the page, then each block of cases beside the labels
            assert areas[0][:3] == (1, 1, 6) and all(a[0] == 7 and a[2] == 10 for a in areas[1:]), ws.print_area
            # the cases print beside Label, Value and Unit: a case page shows each figure's unit
            assert len(areas) == (3 if name == training.FILENAME else 2) and ws.print_title_cols == "$A:$C"
        elif ws.title == "Options":  # column blocks side by side, a page each: the table, its figures, the reasons
            starts = [(1, 1)] + [(a[2] + 1, 1) for a in areas[:-1]]
            assert len(areas) == 3, ws.print_area
            assert [(a[0], a[1]) for a in areas] == starts and ws.print_title_cols == "$A:$A"
        elif ws.title == "Timeline":  # labels to equations down the page, then the months a year to a page
            assert areas[0][:3] == (1, 1, 4) and ws.print_title_cols == "$A:$B", ws.print_area
            assert [(a[0], a[2]) for a in areas[1:]] == [(5, 16), (17, 28), (29, 40)], ws.print_area
        else:
            assert len(areas) == 1, ws.title
        # nothing with a value lies outside the print areas: no cut-off columns or rows (the title rows, 1 to 5, print
        # at the top of every page, over whatever columns it holds: the Timeline's month headings)
        titles = 5 if ws.print_title_rows else 0
        for row in ws.iter_rows():
            for c in row:
                if c.value is not None:
                    assert any(
                        a[0] <= c.column <= a[2] and (a[1] <= c.row <= a[3] or c.row <= titles) for a in areas
                    ), f"{ws.title}!{c.coordinate} is not printed"
    for sheet in book.sheets.values():
        ws = wb[sheet.name]
        assert ws.print_title_rows == "$1:$5", sheet.name
        # the Timeline keeps its units beside the labels as the months scroll by
        assert ws.freeze_panes in (("C6",) if sheet.name == "Timeline" else ("B6", "A6")), sheet.name


def test_named_styles_registered_and_number_formats_read_well(shipped):
    name, book, wb, _ = shipped
    assert set(STYLE_NAMES) <= set(wb.named_styles)
    if name == serving.FILENAME:  # the prices of the accelerators, on Lists
        ref = book.ref(name_from_label(price_label("H100-SXM")))
        assert wb[ref.sheet][f"B{ref.row}"].number_format == '"$"#,##0.00'
    else:
        assert wb["Inputs"]["B" + str(book.ref("Price_Per_GPU_Hour").row)].number_format == '"$"#,##0.00'
    if name == serving.FILENAME:
        calc = wb["Calculations"]
        assert calc[book.address("cost_full").split("!")[1]].number_format == '"$"#,##0.00'
        assert calc[book.address("tps_total").split("!")[1]].number_format == "#,##0"
        assert calc[book.address("weights").split("!")[1]].number_format == "#,##0.0"


def _column(ws, col: str) -> list[Any]:
    """A list's values from row 6 down to the first empty cell."""
    values = []
    for cell in ws[col][5:]:
        if cell.value is None:
            break
        values.append(cell.value)
    return values


def test_dropdowns_for_presets_precisions_and_the_scenario(shipped):
    name, book, wb, _ = shipped
    ws = wb["Inputs"]
    lists = {str(dv.sqref): dv for dv in ws.data_validations.dataValidation if dv.type == "list"}
    model_names = _column(wb["Lists"], "A")
    gpu_names = _column(wb["Lists"], "C")
    assert "Qwen2.5-72B" in model_names and "H100-SXM" in gpu_names
    assert all(wb["Lists"][f"A{i}"].data_type == "s" for i in range(6, 6 + len(model_names)))
    gpu_row = book.ref("gpu@0").row
    assert lists[f"G{gpu_row}:J{gpu_row}"].formula1 == f"Lists!$C$6:$C${5 + len(gpu_names)}"
    active = book.ref("Active_Scenario").row
    assert lists[f"B{active}"].formula1.startswith("$G$")
    if name == serving.FILENAME:
        model_row, precision_row = book.ref("model@0").row, book.ref("weight_precision@0").row
        assert lists[f"G{model_row}:J{model_row}"].formula1 == f"Lists!$A$6:$A${5 + len(model_names)}"
        assert lists[f"G{precision_row}:J{precision_row}"].formula1.startswith("Lists!$E$6")
    numeric = [dv for dv in ws.data_validations.dataValidation if dv.type in ("whole", "decimal")]
    assert len(numeric) >= 8 and all(dv.error for dv in numeric)


def _validation_accepts(dv, value: float) -> bool:
    """Whether Excel would let ``value`` into the first cell a number validation covers."""
    from xlsxplan.headless.engine import evaluate_formula

    if dv.type == "custom":
        first = str(dv.sqref).split(":")[0].split()[0]
        result = evaluate_formula("=" + dv.formula1.replace(first, format(float(value), ".15G")))
        return result.value is True
    low, high = float(dv.formula1), float(dv.formula2)
    return low <= value <= high and (dv.type != "whole" or float(value).is_integer())


def test_numeric_validation_refuses_what_its_message_refuses(shipped):
    # Review finding 10: Excel's "between" includes its ends, so inputs that must be positive (Requests per day,
    # Usable memory fraction, Latency target...) took 0 while their message said "positive" or "above 0". A domain
    # with an open lower bound is a custom rule now; where 0 or an empty cell means "not given", the message says so.
    name, book, wb, _ = shipped
    numeric = [
        dv
        for ws in wb.worksheets
        for dv in ws.data_validations.dataValidation
        if dv.type in ("whole", "decimal", "custom")
    ]
    assert len(numeric) >= 8
    for dv in numeric:
        assert "{cell}" not in (dv.formula1 or ""), dv.sqref
        if " a positive " in dv.error or "above 0" in dv.error:
            assert not _validation_accepts(dv, 0), (name, str(dv.sqref), dv.error)
            assert _validation_accepts(dv, 1e-9 if "whole" not in dv.error else 1), dv.error
        elif " from 0 " in dv.error or " from 0," in dv.error:
            assert _validation_accepts(dv, 0), dv.error
        assert not _validation_accepts(dv, 1e300), dv.error
    errors = {dv.error.split(" must be")[0]: dv.error for dv in numeric}
    if name == serving.FILENAME:
        assert errors["Requests per day"] == "Requests per day must be a positive number up to 1e+15"
        assert errors["Parameters override"].endswith("; 0 or empty: the catalog's figure")
        assert errors["Measured decode speed at batch 1"].endswith("; leave it empty when not measured")
    else:
        assert errors["Layers"].endswith("; 0 or empty: the preset's figure")


def test_basis_of_estimate(shipped):
    name, _, wb, _ = shipped
    text = " ".join(str(c.value) for r in wb["Outputs"].iter_rows() for c in r if isinstance(c.value, str))
    assert "estimate, not a quote" in text
    labels = {c.value for c in wb["Inputs"]["A"]}
    assert {"Price date", "Region", "Pricing basis", "Billing currency"} <= labels
    if name == serving.FILENAME:  # each accelerator's price on Lists, the active one's on Outputs
        assert "Hours per month" in labels and "H100-SXM price per GPU-hour" in {c.value for c in wb["Lists"]["A"]}
        assert "Price per GPU-hour" in {c.value for c in wb["Outputs"]["A"]}
    else:
        assert "Price per GPU-hour" in labels


def test_serving_plan_has_its_chart_of_speed_against_batch(books):
    book = books[serving.FILENAME]
    charts = book.ws("Outputs")._charts
    assert len(charts) == 1 and len(charts[0].series) == 2
    assert charts[0].x_axis.title is not None


def test_text_from_the_catalog_is_stored_as_text_never_as_a_formula(monkeypatch, tmp_path):
    from xlsxplan import catalog
    from xlsxplan.errors import CatalogError

    monkeypatch.setenv("XLSXPLAN_CATALOG_DIR", str(tmp_path))
    figures = dict(params_b=1, layers=2, hidden=64, heads=2, kv_heads=1, head_dim=32, vocab=100, context=128)
    # a name a spreadsheet would read as a formula never becomes a preset (the catalog's schema refuses it) ...
    with pytest.raises(CatalogError, match="would read it as a formula"):
        catalog.save_user_preset("model", '=HYPERLINK("http://example.invalid","x")', figures, "a test")
    # ... and a name that merely holds one is written as text
    catalog.save_user_preset("model", 'x=HYPERLINK("http://example.invalid","x")', figures, "a test")
    book = serving.build()
    path = tmp_path / "book.xlsx"
    book.wb.save(path)
    lists = openpyxl.load_workbook(path)["Lists"]
    cells = [c for c in lists["A"] if c.value == 'x=HYPERLINK("http://example.invalid","x")']
    assert len(cells) == 1 and cells[0].data_type == "s" and cells[0].style == "Label"
    # the portable edition's Catalog sheet writes citations that start like a formula as quoted text:
    # tests/sheet/test_native.py::test_catalog_text_is_written_as_text_never_as_a_formula


# the printed plan: tests/templates/test_print.py


def test_results_that_need_attention_are_flagged_in_bad_colours(shipped):
    name, book, wb, _ = shipped
    flagged = {
        serving.FILENAME: [
            ("Calculations", "fits", '"does not fit"'),
            ("Calculations", "latency_caps", '"yes"'),
            ("Outputs", "Outputs:fits", '"does not fit"'),
        ],
        training.FILENAME: [
            ("Calculations", "within", '"over budget"'),
            ("Outputs", "Outputs:within", '"over budget"'),
        ],
    }[name]
    for sheet, key, value in flagged:
        cell = book.address(key).split("!")[1]
        rules = [r for cf in wb[sheet].conditional_formatting if cell in str(cf.sqref) for r in cf.rules]
        assert any(r.formula == [value] and r.dxf.fill.bgColor.rgb.endswith("FFC7CE") for r in rules), (sheet, key)


def test_loading_and_calculating_leave_the_callers_garbage_collector_as_it_was(tmp_path):
    import gc

    import openpyxl

    from xlsxplan.headless.workbook import Workbook

    book = openpyxl.Workbook()
    book.active["A1"] = 2
    book.active["A2"] = "=WEIGHTS_GB(A1)"
    path = tmp_path / "b.xlsx"
    book.save(path)
    assert gc.isenabled()
    wb = Workbook.load(path).calculate()
    assert gc.isenabled() and wb.get("Sheet!A2") == 4


def test_png_text_reads_what_stamp_writes(tmp_path):
    import zlib

    shots = screenshots_module()
    png = tmp_path / "x.png"  # the smallest PNG: a signature, an IHDR and an IEND
    ihdr = shots._chunk(b"IHDR", bytes.fromhex("0000000100000001080000000090")[:13])
    png.write_bytes(
        b"\x89PNG\r\n\x1a\n" + ihdr + shots._chunk(b"IDAT", zlib.compress(b"\0\0")) + shots._chunk(b"IEND", b"")
    )
    book = tmp_path / "b.xlsx"
    book.write_bytes(b"workbook bytes")
    shots.stamp(png, book)
    import hashlib

    assert shots.png_text(png.read_bytes()) == {shots.SOURCE_KEY: hashlib.sha256(b"workbook bytes").hexdigest()}
    assert png.read_bytes().endswith(shots._chunk(b"IEND", b""))
