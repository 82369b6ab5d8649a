"""Write the templates: build with openpyxl, recalculate headlessly, cache the values, and read the summary back.

Two editions come from the same builders (:data:`EDITIONS`). The **portable** edition (``serving_plan.xlsx``,
``training_plan.xlsx``, what ``xlsxplan build`` writes) computes with the spreadsheet's own functions, so it
recalculates with no add-in in Excel 2016 and later, LibreOffice Calc and Google Sheets: the add-in edition is built,
recalculated, and turned into it by :func:`xlsxplan.templates.portable.make_portable` (its docstring and
docs/portable.md say how, and its limits). The **functions** edition (``serving_plan_functions.xlsx``, ...,
``xlsxplan build --functions``) has the registry functions in its cells and needs the add-in (xlwings or xlwings Lite)
to recalculate. The two names differ, so a user can keep both in one folder.

``xlsxplan build`` calls :func:`build_all`. Each template is built to a temporary file, loaded, calculated and
saved by the Workbook API it is given (:class:`xlsxplan.headless.Workbook`), so the written file carries every formula
**and** its value, and finally normalised (fixed zip timestamps and document dates) so that building twice writes the
same bytes. The printed summary is read from the recalculated cells, never computed again in Python: if the workbook is
wrong, the summary is wrong.

A file in the output folder is replaced only if this command wrote it and nobody saved it since (its document
properties still carry the generator's stamp), or with ``force``: a template someone filled in is never lost.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..errors import CellError, WorkbookError
from ..infra.fileio import atomic_write, check_writable, ensure_folder
from . import serving, training
from .book import Book
from .styles import GENERATOR, SIDE_COLUMNS, TEMPLATE_DATE

__all__ = [
    "EDITIONS",
    "TEMPLATES",
    "WorkbookAPI",
    "build_all",
    "build_template",
    "edition_filename",
    "serving_summary",
    "training_summary",
    "bill_summary",
    "is_generated",
    "Built",
]

TEMPLATES: dict[str, Callable[[], Book]] = {
    serving.FILENAME: serving.build,
    training.FILENAME: training.build,
}
"""File name (of the portable edition) -> builder, in the order they are written."""

EDITIONS = ("portable", "functions")
"""The editions :func:`build_template` writes: native formulas only, or the registry functions (the add-in's)."""


def edition_filename(filename: str, edition: str = "portable") -> str:
    """The file name of ``edition`` of template ``filename``: ``serving_plan.xlsx`` for the portable edition,
    ``serving_plan_functions.xlsx`` for the functions (add-in) edition."""
    if edition not in EDITIONS:
        raise ValueError(f"edition must be one of {', '.join(EDITIONS)}, got {edition!r}")
    return filename if edition == "portable" else filename.removesuffix(".xlsx") + "_functions.xlsx"


_ZIP_DATE = (1980, 1, 1, 0, 0, 0)
_STAMP = TEMPLATE_DATE.strftime("%Y-%m-%dT%H:%M:%SZ")


class WorkbookAPI(Protocol):
    """What the templates are recalculated with: :class:`xlsxplan.headless.Workbook`, passed in by the caller (the
    command line), so this face never imports another."""

    def load(self, path: Path) -> Any: ...


@dataclass
class Built:
    """One written template: where it is, its layout, and the recalculated workbook to read it from."""

    path: Path
    book: Book
    workbook: Any

    def get(self, ref: str) -> Any:
        return self.workbook.get(ref)


_DIGEST = re.compile(r"<dc:identifier>xlsxplan build sha256:([0-9a-f]{64})</dc:identifier>")
"""The digest build writes into the document properties: of every other part of the file, names and bytes."""


def _digest(parts: list[tuple[str, bytes]]) -> str:
    """sha256 of the parts (name, bytes) but ``docProps/core.xml``, in the order given."""
    h = hashlib.sha256()
    for name, data in parts:
        if name != "docProps/core.xml":
            h.update(f"{name}\0{len(data)}\0".encode())
            h.update(data)
    return h.hexdigest()


def is_generated(path: Path) -> bool:
    """True when ``path`` is a workbook this command wrote and nobody has changed since: its properties carry
    build's stamp and, where build recorded one, the digest of its other parts, so a copy recalculated with new
    inputs (`xlsxplan recalc` keeps the properties) counts as changed."""
    try:
        with zipfile.ZipFile(path) as z:
            core = z.read("docProps/core.xml").decode("utf-8", "replace")
            recorded = _DIGEST.search(core)
            digest = _digest([(i.filename, z.read(i.filename)) for i in z.infolist()]) if recorded else None
    except (OSError, KeyError, zipfile.BadZipFile):
        return False
    by = re.search(r"<cp:lastModifiedBy>([^<]*)</cp:lastModifiedBy>", core)
    modified = re.search(r"<dcterms:modified[^>]*>([^<]*)</dcterms:modified>", core)
    stamped = bool(by and by.group(1) == GENERATOR and modified and modified.group(1) == _STAMP)
    return stamped and (recorded is None or recorded.group(1) == digest)  # built before digests: the stamp alone


def _normalise(src: Path, dst: Path) -> None:
    """Copy the workbook with fixed zip timestamps and document dates, and the digest of its other parts in its
    properties (:func:`is_generated`): the same content gives the same bytes."""
    with zipfile.ZipFile(src) as zin:
        parts = [(info.filename, zin.read(info.filename)) for info in zin.infolist()]
    digest = _digest(parts)
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for name, data in parts:
            if name == "docProps/core.xml":
                text = data.decode("utf-8")
                for tag in ("created", "modified"):
                    text = re.sub(rf"(<dcterms:{tag}[^>]*>)[^<]*(</dcterms:{tag}>)", rf"\g<1>{_STAMP}\g<2>", text)
                text = re.sub(
                    r"<cp:lastModifiedBy>[^<]*</cp:lastModifiedBy>",
                    f"<cp:lastModifiedBy>{GENERATOR}</cp:lastModifiedBy>",
                    text,
                )
                text = re.sub(r"<dc:identifier>[^<]*</dc:identifier>", "", text)
                text = text.replace(
                    "</cp:coreProperties>",
                    f"<dc:identifier>xlsxplan build sha256:{digest}</dc:identifier></cp:coreProperties>",
                )
                data = text.encode("utf-8")
            out = zipfile.ZipInfo(name, date_time=_ZIP_DATE)
            out.compress_type = zipfile.ZIP_DEFLATED
            out.external_attr = 0o644 << 16
            zout.writestr(out, data)


def _kept(target: Path, force: bool) -> bool:
    """Whether ``target`` is a file someone saved (or another file of the same name) that only ``force`` replaces."""
    return target.exists() and not force and not is_generated(target)


def build_template(
    filename: str, out_dir: Path, api: WorkbookAPI, force: bool = False, edition: str = "portable"
) -> Built:
    """Build, recalculate with ``api`` and write one template (``filename`` a key of :data:`TEMPLATES`) into
    ``out_dir`` as ``edition`` (:func:`edition_filename`); returns it, recalculated.

    The portable edition is the add-in edition recalculated (its values stand in for what only Python computes),
    turned portable, and recalculated again."""
    target = Path(out_dir) / edition_filename(filename, edition)
    check_writable(target)
    if _kept(target, force):
        raise WorkbookError(
            f"{target} was not written by `xlsxplan build` or has been edited since; "
            "pass --force to replace it, or --out to write elsewhere"
        )
    book = TEMPLATES[filename]()
    fd, raw_name = tempfile.mkstemp(prefix=f".{filename}.", suffix=".raw.xlsx", dir=target.parent)
    os.close(fd)
    raw = Path(raw_name)
    calculated = raw.with_suffix(".calc.xlsx")
    try:
        book.wb.save(raw)
        workbook = api.load(raw).calculate()  # the Workbook API pauses the garbage collector while it works
        if book.fit_text(workbook.get) and edition != "portable":  # the portable pass recalculates anyway
            book.wb.save(raw)
            workbook = api.load(raw).calculate()
        if edition == "portable":
            from .portable import make_portable

            make_portable(book, workbook.get, edition_filename(filename, "functions"))
            book.wb.properties.description = (
                f"{book.wb.properties.description} Portable edition: native formulas only, no add-in needed."
            )
            book.wb.save(raw)
            workbook = api.load(raw).calculate()
        workbook.save(calculated)
        atomic_write(target, lambda tmp: _normalise(calculated, tmp))
    finally:
        for leftover in (raw, calculated):
            leftover.unlink(missing_ok=True)
    return Built(target, book, workbook)


def build_all(out_dir: Path, api: WorkbookAPI, force: bool = False, edition: str = "portable") -> dict[str, Built]:
    """Write every template into ``out_dir`` (created if missing; WorkbookError with one line if it cannot be) as
    ``edition``, recalculated with ``api``; keyed by :data:`TEMPLATES`' names."""
    out = ensure_folder(Path(out_dir))
    targets = [out / edition_filename(name, edition) for name in TEMPLATES]
    for target in targets:
        check_writable(target)
    kept = [str(t) for t in targets if _kept(t, force)]
    if kept:  # every file checked before any is written: none is replaced while another is refused
        were = "was" if len(kept) == 1 else "were"
        raise WorkbookError(
            f"{' and '.join(kept)} {were} not written by `xlsxplan build` or edited since, so nothing was written; "
            f"pass --force to replace {'it' if len(kept) == 1 else 'them'}, or --out to write elsewhere"
        )
    return {name: build_template(name, out, api, force, edition) for name in TEMPLATES}


# -- summaries, read from the recalculated cells ---------------------------------------------------------------------
def _number(value: Any, where: str) -> float:
    if isinstance(value, CellError) or isinstance(value, bool) or not isinstance(value, (int, float)):
        raise WorkbookError(f"{where} holds {value!r}, not a number")
    return float(value)


def _seconds(value: Any) -> str:
    """A time in seconds as the summary prints it, or the words a line shows in its place."""
    return f"{value:.2f} s" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def master_check(built: Built) -> Any:
    return built.get(built.book.address("master_check"))


def _case(built: Built, key: str, case: int) -> Any:
    ref = built.book.ref(f"Scenarios:{key}")
    return built.get(f"Scenarios!{SIDE_COLUMNS[case]}{ref.row}")


def _input_cell(built: Built, key: str, case: int) -> str:
    ref = built.book.ref(f"{key}@{case}")
    return f"Inputs!{ref.col}{ref.row}"


def _live(built: Built, key: str) -> Any:
    return built.get(built.book.address(key))


def _checks_text(value: Any) -> str:
    return "OK" if value == 0 else f"ERROR ({value}): see the Checks sheet"


def serving_summary(built: Built) -> str:
    """The printed table of "Back-of-the-Envelope Estimation for LLM Systems", read from the recalculated serving
    plan, and the active scenario's plan."""
    lines = [f"Serving plan: {built.path} (checks {_checks_text(master_check(built))})"]
    kib: dict[str, float] = {}
    for i in range(len(SIDE_COLUMNS)):
        model = built.get(_input_cell(built, "model", i))
        kib.setdefault(str(model), _number(_case(built, "kv_kib", i), "KV cache per token"))
    lines.append("KV cache per token: " + ", ".join(f"{m} {v:,.0f} KiB" for m, v in kib.items()))
    rps, out_tps, prompt_tps = (_number(_live(built, k), k) for k in ("peak_rps", "peak_output", "peak_prompt"))
    lines.append(f"Peak load: {rps:.1f} requests/s, {out_tps:,.0f} output tokens/s ({prompt_tps:,.0f} prompt tokens/s)")
    for i in range(len(SIDE_COLUMNS)):
        name = _case(built, "scenario_name", i)
        if _case(built, "fits", i) != "fits":
            weights, usable = _number(_case(built, "weights", i), "weights"), _number(_case(built, "usable", i), "")
            lines.append(f"{name}: does not fit: weights {weights:,.0f} GB, usable memory {usable:,.0f} GB")
            continue
        get = {
            k: _number(_case(built, k, i), f"{name} {k}")
            for k in ("batch", "tps_user", "tps_alone", "tps_total", "prefill", "cost_full")
        }
        lines.append(
            f"{name}: batch {get['batch']:.0f}, {get['tps_user']:.0f} tokens/s per user ({get['tps_alone']:.0f} "
            f"alone), {get['tps_total']:,.0f} tokens/s total, prefill {get['prefill']:.2f} s, "
            f"${get['cost_full']:.2f} per M output tokens at full load"
        )
    util = _number(built.get("Average_Utilisation"), "Average utilisation")
    costs = [
        f"{_case(built, 'scenario_name', i)}: ${_number(_case(built, 'cost_avg', i), 'cost'):.2f}"
        for i in range(len(SIDE_COLUMNS))
        if _case(built, "fits", i) == "fits"
    ]
    lines.append(f"Effective cost per M output tokens at {util:.0%} average load: " + "; ".join(costs))
    name = built.get("Scenario_Name")
    if _live(built, "fits") != "fits":
        lines.append(f"Active scenario, {name}: does not fit")
        return "\n".join(lines)
    growth = _number(built.get("Traffic_Growth_Multiple"), "Traffic growth multiple")
    keys = (
        "replicas_planned",
        "gpus_peak",
        "replicas_decode",
        "replicas_growth",
        "gpus_growth",
        "replicas_decode_growth",
        "batch",
        "batch_fit",
        "batch_mem",
        "time_to_answer",
        "fleet_util",
        "coverage",
        "cost_in",
        "cost_out",
        "prefill_share",
        "prefill_replicas",
        "decode_replicas",
        "gpus_disagg",
        "kv_transfer",
    )
    v = {k: _number(_live(built, k), k) for k in keys}
    spare = _number(built.get("Spare_Replicas"), "Spare replicas")
    targets = []  # a target not given does not apply: none is printed
    for target_name, what, key in (
        ("Latency_Target", "{:g} tokens/s target", "batch_latency"),
        ("Time_To_First_Token_Target", "{:g} s first-token target", "batch_ttft"),
    ):
        given = built.get(target_name)
        if isinstance(given, (int, float)) and given > 0:
            targets.append(f", the {what.format(given)} {_number(_live(built, key), key):.0f}")
    ttft = _live(built, "ttft_batch")  # a number, or the words that say decode leaves no compute for prompts
    binding = _live(built, "binding")
    cap = _number(built.get("Longest_Prompt_Accepted"), "Longest prompt accepted")
    tail = _live(built, "tail_share")
    tail_text = f"{tail:.1%}" if isinstance(tail, (int, float)) else str(tail)
    cal = {
        k: built.get(built.book.address(k)) for k in ("step_tps_user", "step_cost_out", "step_replicas", "step_gpus")
    }
    cal["cal_cost_avg"] = _number(built.get(built.book.address("cal_cost_avg:calibrated")), "cal_cost_avg")
    full = _number(_live(built, "cost_full"), "cost_full")
    average = _number(_live(built, "cost_avg"), "cost_avg")
    basis = _live(built, "batch_basis")
    lines += [
        f"Active scenario, {name}: {v['replicas_planned']:.0f} replicas, {v['gpus_peak']:.0f} GPUs for the peak "
        f"with {spare:.0f} spare ({v['replicas_decode']:.0f} counting output tokens only, as if prompts cost "
        "nothing, no spares); "
        f"{v['replicas_growth']:.0f} replicas, {v['gpus_growth']:.0f} GPUs at {growth:g}x today's peak (the traffic "
        f"growth multiple on Inputs; {v['replicas_decode_growth']:.0f} counting output tokens only)",
        f"  batch {v['batch']:.0f}, set by {binding}: memory allows {v['batch_mem']:.0f} ({basis}; "
        f"{v['batch_fit']:.0f} with every slot at the tail){''.join(targets) or ', no latency target given'}; "
        f"first visible token after {v['time_to_answer']:.2f} s for a mean prompt alone, {_seconds(ttft)} for a "
        f"tail prompt at that batch; prompts over "
        f"{cap:,.0f} tokens rejected: {tail_text}",
        f"  fleet utilisation {v['fleet_util']:.1%}, peak covered {v['coverage']:.2f}x with the spares down; "
        f"${v['cost_in']:.2f} per M input and ${v['cost_out']:.2f} per M output tokens at that (the bill split by "
        f"GPU time, {v['prefill_share']:.0%} prefill); disaggregated: {v['prefill_replicas']:.0f} prefill + "
        f"{v['decode_replicas']:.0f} decode replicas ({v['gpus_disagg']:.0f} GPUs), KV transfer "
        f"{v['kv_transfer'] * 1000:,.0f} ms",
        f"  per M output tokens, three bases: ${full:.2f} a replica decoding at full load around the clock "
        f"(prompts not counted); ${average:.2f} that at the {util:.0%} average load assumed on Inputs (full load over "
        f"{util:.0%}, the source text's method); ${v['cost_out']:.2f} the planned fleet of {v['gpus_peak']:.0f} "
        f"GPUs around the clock at the day's traffic, the output tokens' {1 - v['prefill_share']:.0%} of the bill: "
        f"the figure to budget",
        _calibrated_line(cal, spare, v["cost_out"], util),
    ]
    return "\n".join(lines)


def _calibrated_line(cal: dict[str, Any], spare: float, cost_out: float, util: float) -> str:
    """The summary's line of the calibrated view: the active option as `xlsxplan plan` plans it (Options sheet), or
    why there is none (the active option not searched, or rejected)."""
    avg = f"the source text's method at the calibrated efficiencies gives ${cal['cal_cost_avg']:.2f} at {util:.0%} load"
    if not all(isinstance(cal[k], (int, float)) for k in ("step_tps_user", "step_gpus", "step_cost_out")):
        return f"  calibrated (Options sheet): the active option is not planned by the search; {avg}"
    return (
        f"  calibrated (the serving step xlsxplan validate scores, as xlsxplan plan ranks): {cal['step_tps_user']:.1f} "
        f"tokens/s per user, {cal['step_replicas']:.0f} replicas ({cal['step_gpus']:.0f} GPUs) for the peak with "
        f"{spare:.0f} spare, ${cal['step_cost_out']:.2f} per M output tokens for that fleet around the clock, beside "
        f"${cost_out:.2f} at the efficiencies on Inputs; {avg}"
    )


def _date(value: Any) -> str:
    """A date cell's value (a serial day number, as the engine returns it, or a date) as 2026-12-01."""
    import datetime as _dt

    if isinstance(value, (int, float)):
        return (_dt.date(1899, 12, 30) + _dt.timedelta(days=int(value))).isoformat()
    return str(value)[:10]


SENSITIVITY = (
    ("Prefill_Compute_Utilisation", 0.75),
    ("Decode_Bandwidth_Efficiency", 0.75),
    ("Peak_Hour_Factor", 1.25),
    ("Prompt_Tokens_Per_Request", 1.25),
    ("Output_Tokens_Per_Request", 1.25),
)
"""The serving plan's assumptions the bill summary tries, each moved a quarter the costly way (a factor of its
value): the one that moves the monthly bill most is named."""


def _moves_most(built: Built) -> tuple[str, float, str]:
    """Of :data:`SENSITIVITY`, the input that moves the monthly bill most when moved a quarter the costly way, the
    bill then [USD a month] and the move in words; each input is set back after (the workbook recalculates)."""
    wb = built.workbook
    base = _number(built.get("Monthly_Cost"), "Monthly cost")
    best: tuple[float, str, float, str] = (-1.0, "", base, "")
    for name, factor in SENSITIVITY:
        was = _number(built.get(name), name)
        try:
            wb.set(name, was * factor)
            after = _number(built.get("Monthly_Cost"), "Monthly cost")
        finally:
            wb.set(name, was)
        fmt = f"{was * factor:.0%}" if was <= 1 else f"{was * factor:,.3g}"
        words = f"{'a quarter lower' if factor < 1 else 'a quarter higher'} ({fmt})"
        if abs(after - base) > best[0]:
            best = (abs(after - base), name, after, words)
    return best[1], best[2], best[3]


def bill_summary(built: Built, workbook: str) -> str:
    """The serving plan's answer in a few lines a manager can read aloud, read from the recalculated cells of
    ``built`` (the file ``workbook``): the fleet, the monthly bill at list price and its range at published
    efficiencies (USD a month), the cost per million input and output tokens (USD), the price it rests on (USD per
    GPU-hour) with its basis, date and source, the assumption that moves the bill most (:func:`_moves_most`), and
    what to open or run next. The bill is the template's: the fleet's GPUs x price x hours a month
    (Back-of-the-Envelope §6, billed around the clock)."""
    from .book import name_from_label
    from .common import price_label

    name, gpu = built.get("Scenario_Name"), str(built.get("Accelerator"))
    if _live(built, "fits") != "fits":
        return f"The bill: the active scenario ({name}) does not fit in memory; open {workbook}, sheet Cover."
    v = {k: _number(_live(built, k), k) for k in ("gpus_peak", "replicas_planned", "monthly", "cost_in", "cost_out")}
    v["peak_rps"] = _number(_live(built, "peak_rps"), "peak_rps")
    calibrated = built.get(built.book.address("step_monthly"))
    low, high = (built.get(built.book.address(f"step_monthly:{q}")) for q in ("low", "high"))
    per = _number(built.get("GPUs_Per_Replica"), "GPUs per replica")
    spare = _number(built.get("Spare_Replicas"), "Spare replicas")
    price = _number(_live(built, "price"), "price")
    row = built.book.names[name_from_label(price_label(gpu))].rsplit("$", 1)[-1]
    source, as_of = built.get(f"Lists!$D${row}"), _date(built.get(f"Lists!$E${row}"))
    basis = str(built.get("Pricing_Basis")).lower()
    name_most, moved, shifted = _moves_most(built)
    spread = (
        f", likely ${low:,.0f} to ${high:,.0f} (their P10 to P90)"
        if isinstance(low, (int, float)) and isinstance(high, (int, float))
        else ""
    )
    return "\n".join(
        [
            f"The bill, in short (the serving plan's active scenario, {name}):",
            f"  Fleet: {v['gpus_peak']:.0f} {gpu} GPUs, {v['replicas_planned']:.0f} copies of the model on "
            f"{per:.0f} GPU{'s' if per != 1 else ''} each ({spare:.0f} a spare), for a peak of {v['peak_rps']:.1f} "
            "requests a second",
            f"  Monthly bill: ${v['monthly']:,.0f} at list price, the GPUs rented around the clock; "
            + (
                f"${calibrated:,.0f} at the efficiencies published runs measured (xlsxplan plan's figure){spread}"
                if isinstance(calibrated, (int, float))
                else "the search does not plan the active option (Options sheet)"
            ),
            f"  Per million tokens: ${v['cost_in']:.2f} input (prompt) and ${v['cost_out']:.2f} output (answer), "
            "the fleet's bill split by GPU time",
            f"  Price basis: ${price:.2f} per GPU-hour for {gpu}, {basis}, as of {as_of}; source: {source}",
            f"  What moves it most: the {name_most.replace('_', ' ').lower()} on Inputs; {shifted} takes the bill "
            f"to ${moved:,.0f} (tried: {', '.join(n.replace('_', ' ').lower() for n, _ in SENSITIVITY)}, each a "
            "quarter the costly way)",
            f"Next: open {workbook} at its Cover sheet; or try another input, `xlsxplan recalc {workbook} --set "
            "Requests_Per_Day=400000 --show GPUs_In_The_Fleet` (`xlsxplan inputs` and `xlsxplan outputs` list the "
            "names)",
        ]
    )


def _bench(built: Built, key: str, case: int) -> Any:
    ref = built.book.ref(f"Measured rates:{key}")
    return built.get(f"'Measured rates'!{SIDE_COLUMNS[case]}{ref.row}")


def training_summary(built: Built) -> str:
    """The figures of "Estimating the Compute and Memory Needed for Language Models", read from the recalculated
    training plan: the active scenario and the measured rates."""
    lines = [f"Training plan: {built.path} (checks {_checks_text(master_check(built))})"]
    v = {
        k: _live(built, k)
        for k in (
            "params_m",
            "flops",
            "tflops",
            "cluster_peak",
            "seconds",
            "within",
            "gpu_hours",
            "cost",
            "tokens_budget",
            "chinchilla",
            "ratio",
            "side",
            "optimal_m",
            "train_mem",
            "passes",
            "flops_attn",
            "attn_share",
            "mfu_cal",
            "seconds_cal",
            "state",
            "activations",
            "mem_gpu",
            "memory",
            "fits_mem",
        )
    }
    n = {k: _number(x, k) for k, x in v.items() if k not in ("within", "side", "fits_mem")}
    seq = _number(built.get("Sequence_Length"), "Sequence length")
    tokens = _number(built.get("Training_Tokens"), "Training tokens")
    budget = _number(built.get("Time_Budget"), "Time budget")
    mfu = _number(built.get("Model_FLOPs_Utilisation"), "MFU")
    gpus = _number(built.get("GPUs"), "GPUs")
    cached = _number(built.get("Cached_Tokens"), "Cached tokens")
    lines += [
        f"Active scenario, {built.get('Scenario_Name')}: {n['params_m']:,.2f}M parameters on {tokens / 1e9:,.3f}B "
        f"tokens, 6ND = {n['flops']:.3g} FLOPs",
        f"{gpus:.0f} x {built.get('Accelerator')} at {n['tflops']:,.1f} TFLOP/s dense ({n['cluster_peak']:,.2f} "
        f"PFLOP/s), MFU {mfu:.0%}: {n['seconds']:,.1f} s, {v['within']} ({budget:,.0f} s); "
        f"{n['gpu_hours']:,.2f} GPU-h, ${n['cost']:,.2f} at list price",
        f"The budget allows {n['tokens_budget'] / 1e9:,.2f}B tokens; Chinchilla's rule asks "
        f"{n['chinchilla'] / 1e6:,.0f}M; the run has {n['ratio']:.1f}x that: {v['side']}",
        f"Compute-optimal size for {budget:,.0f} s: {n['optimal_m']:,.1f}M parameters; training memory before "
        f"activations {n['train_mem']:,.2f} GB; {n['passes']:.2f} passes over {cached / 1e9:,.1f}B cached tokens",
        f"With attention at {seq:,.0f}-token sequences (PaLM): {n['flops_attn']:.3g} FLOPs, {n['attn_share']:.0%} of "
        f"them attention; calibrated MFU {n['mfu_cal']:.0%}: {n['seconds_cal']:,.1f} s",
        f"Memory per GPU: {n['state']:,.2f} GB of model state + {n['activations']:,.2f} GB of activations = "
        f"{n['mem_gpu']:,.1f} GB of {n['memory']:,.0f} GB: {v['fits_mem']}",
        f"Measured rates (tokens/s -> 6N-equivalent rate -> size for {budget:,.0f} s; the active scenario's run "
        "at that rate; the anchor is the 0.36M-parameter model the source timed on an M2 and projects from):",
    ]
    for i in range(len(SIDE_COLUMNS)):
        tps = _number(_bench(built, "bm_tps", i), "tokens/s")
        tflops = _number(_bench(built, "bm_tflops", i), "TFLOP/s")
        rate = f"{tflops / 1000:,.2f} PFLOP/s" if tflops >= 1000 else f"{tflops:,.2f} TFLOP/s"
        mfu_i = _bench(built, "bm_mfu", i)
        mfu_text = f", MFU {mfu_i:.0%}" if isinstance(mfu_i, (int, float)) else ""
        optimal = _number(_bench(built, "bm_optimal", i), "optimal size")
        seconds = _number(_bench(built, "bm_seconds_run", i), "time")
        days = _number(_bench(built, "bm_days", i), "days")
        time_text = f"{days:,.1f} days" if days >= 1 else f"{seconds:,.0f} s"
        tps_text = f"{tps / 1e6:,.2f}M" if tps >= 1e6 else f"{tps:,.0f}"
        lines.append(
            f"  {_bench(built, 'bm_name', i)}: {tps_text} tokens/s, {rate}{mfu_text}; "
            f"optimal {optimal:,.2f}M parameters; run {time_text}"
        )
    lines.append(_search_line(built))
    return "\n".join(lines)


def _search_line(built: Built) -> str:
    """The training plan's layout search (its Options sheet, TRAIN_OPTIONS), rank 1 as Outputs shows it."""
    limits = [
        f"${_number(built.get('Budget_For_The_Run'), 'budget'):,.0f}",
        f"{_number(built.get('Deadline_For_The_Run'), 'deadline'):g} days",
        f"{_number(built.get('GPU_Limit'), 'GPU limit'):,.0f} GPUs",
    ]
    price = _number(built.get("Price_Per_GPU_Hour"), "price")
    head = f"Layout search (Options: {', '.join(limits)}, {built.get('Accelerator')} at ${price:,.2f} an hour): "
    f = {k: _live(built, k) for k in ("search_params", "search_memory", "search_days", "search_cost")}
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in f.values()):  # none fits
        return head + str(_live(built, "search_status"))
    return (
        f"{head}{_live(built, 'search_layout')}; {f['search_params']:g}B parameters, "
        f"{f['search_memory']:,.1f} GB a GPU, {f['search_days']:,.1f} days, ${f['search_cost']:,.0f}; "
        f"{_live(built, 'search_status')}"
    )
