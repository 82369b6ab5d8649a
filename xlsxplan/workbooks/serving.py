"""The serving plan template: how many GPUs, how fast it feels, what it costs (seed 000).

Sheets: Cover, Guide, Inputs (with the scenario block), Calculations (the active scenario), Outputs, Scenarios (the
four cases side by side), Checks, Version log, Lists (the dropdowns) and ``xlwings.conf``.

The calculation chain of one case is written once, as :data:`CASE_LINES`, and rendered twice: on Calculations
against the active scenario's named inputs, and on Scenarios once per case column. The shipped inputs are seed
000's support assistant and its four configurations, with the seed's own figures where the catalog's differ
(Qwen2.5-7B as 7.6B parameters, the H100 at 989 dense BF16 TFLOP/s), so the seed's printed table comes out
exactly.

Where later work adds rows (see the report of issue 5): calibrated efficiencies (issue 6) replace the
``Decode bandwidth efficiency`` and ``Prefill compute utilisation`` inputs; architecture-aware KV cache and
quantization formats (issue 7) replace the ``kv_bytes`` and ``bytes_weight`` lines; long-tail prompts, latency
caps, spares and input/output prices (issue 9) add Demand and Cost inputs and replace ``batch_latency``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from openpyxl.chart import Reference, ScatterChart, Series
from openpyxl.styles import Alignment
from openpyxl.worksheet.datavalidation import DataValidation
from openpyxl.worksheet.pagebreak import Break

from .. import domains
from .layout import (
    FMT,
    TEMPLATE_DATE,
    Book,
    Line,
    Ref,
    Sheet,
    conf_sheet,
    cover,
    guide,
    lists_sheet,
    put_text,
    validation_for,
    version_log,
)

__all__ = ["build", "TITLE", "CASES", "CASE_INPUTS", "CASE_LINES", "FILENAME"]

TITLE = "Serving plan"
FILENAME = "serving_plan.xlsx"
SHEETS = [
    ("Cover", "cover"),
    ("Guide", "guide"),
    ("Inputs", "inputs"),
    ("Calculations", "calc"),
    ("Outputs", "outputs"),
    ("Scenarios", "scenarios"),
    ("Checks", "checks"),
    ("Version log", "log"),
    ("Lists", "lists"),
]

SEED = "Seed 000"


@dataclass(frozen=True)
class CaseInput:
    """One row of the scenario block: a value per case."""

    key: str
    label: str
    values: tuple[Any, ...]
    unit: str
    source: str
    comment: str = ""
    fmt: str = "dec2"
    kind: str = ""  # "model", "gpu", "precision", a Domain for numbers, or "" for free text
    domain: domains.Domain | None = None
    live_fmt: str | None = None


# The seed's four configurations (seed 000, section 6).
CASES = ("72B BF16, 2 GPUs", "72B FP8, 2 GPUs", "72B BF16, 4 GPUs", "7B BF16, 1 GPU")
ACTIVE_CASE = 2
_OVERRIDE = domains.Domain("number", 0, 1e9)
_SECTION6 = f"{SEED} §6 (example)"

CASE_INPUTS: tuple[CaseInput, ...] = (
    CaseInput("scenario_name", "Scenario name", CASES, "text", _SECTION6, "Rename a case freely", "text"),
    CaseInput(
        "model",
        "Model",
        ("Qwen2.5-72B",) * 3 + ("Qwen2.5-7B",),
        "preset",
        _SECTION6,
        "Catalog preset (dropdown) or your own name",
        "text",
        "model",
    ),
    CaseInput(
        "params_override",
        "Parameters override",
        (None, None, None, 7.6),
        "B params",
        f"{SEED} §6 (example)",
        "Seed: 7.6; catalog: 7.61 (model card)",
        "override",
        "",
        _OVERRIDE,
    ),
    CaseInput(
        "layers_override",
        "Layers override",
        (None,) * 4,
        "count",
        "Catalog (config.json)",
        "Empty: the catalog's figure",
        "override",
        "",
        _OVERRIDE,
    ),
    CaseInput(
        "kv_heads_override",
        "KV heads override",
        (None,) * 4,
        "count",
        "Catalog (config.json)",
        "Empty: the catalog's figure",
        "override",
        "",
        _OVERRIDE,
    ),
    CaseInput(
        "head_dim_override",
        "Head dimension override",
        (None,) * 4,
        "count",
        "Catalog (config.json)",
        "Empty: the catalog's figure",
        "override",
        "",
        _OVERRIDE,
    ),
    CaseInput(
        "gpu",
        "Accelerator",
        ("H100-SXM",) * 4,
        "preset",
        _SECTION6,
        "Catalog preset (dropdown) or your own name",
        "text",
        "gpu",
    ),
    CaseInput(
        "memory_override",
        "Memory per GPU override",
        (None,) * 4,
        "GB",
        "Catalog (datasheet)",
        "Empty: catalog's (H100: 80 GB, as the seed)",
        "override",
        "",
        _OVERRIDE,
    ),
    CaseInput(
        "bandwidth_override",
        "Memory bandwidth override",
        (None,) * 4,
        "TB/s",
        "Catalog (datasheet)",
        "Empty: catalog's (H100: 3.35 TB/s, as the seed)",
        "override",
        "",
        _OVERRIDE,
    ),
    CaseInput(
        "tflops_override",
        "Dense BF16 compute override",
        (989,) * 4,
        "TFLOP/s",
        f"{SEED} §5 (example)",
        "Seed: 989; catalog: 989.4 (Hopper whitepaper)",
        "override",
        "",
        _OVERRIDE,
    ),
    CaseInput(
        "weight_precision",
        "Weight precision",
        ("bf16", "fp8", "bf16", "bf16"),
        "format",
        _SECTION6,
        "bf16, fp8, int4, ... (dropdown)",
        "text",
        "precision",
    ),
    CaseInput(
        "kv_precision",
        "KV cache precision",
        ("bf16",) * 4,
        "format",
        f"{SEED} §3 (example)",
        "The seed keeps the cache in BF16 in every case",
        "text",
        "precision",
    ),
    CaseInput(
        "n_gpus",
        "GPUs per replica",
        (2, 2, 4, 1),
        "count",
        _SECTION6,
        "GPUs holding one copy (tensor parallel)",
        "int",
        "",
        domains.GPUs.__metadata__[0],
    ),
)


def _spec(field: str, override: str, fn: str, what: str) -> str:
    return f'=IF({{{override}}}>0,{{{override}}},{fn}({{{what}}},"{field}"))'


# The chain of one case. {key} is another line of the same case, a case input, or a global line of Calculations.
CASE_LINES: tuple[Line, ...] = (
    Line(
        "params",
        "Parameters",
        _spec("params_b", "params_override", "MODEL_SPEC", "model"),
        "B params",
        'The override, else MODEL_SPEC(model, "params_b"): the catalog\'s figure',
        "dec2",
    ),
    Line(
        "layers",
        "Layers",
        _spec("layers", "layers_override", "MODEL_SPEC", "model"),
        "count",
        'The override, else MODEL_SPEC(model, "layers")',
        "int",
    ),
    Line(
        "kv_heads",
        "KV heads per layer",
        _spec("kv_heads", "kv_heads_override", "MODEL_SPEC", "model"),
        "count",
        'The override, else MODEL_SPEC(model, "kv_heads")',
        "int",
    ),
    Line(
        "head_dim",
        "Head dimension",
        _spec("head_dim", "head_dim_override", "MODEL_SPEC", "model"),
        "count",
        'The override, else MODEL_SPEC(model, "head_dim")',
        "int",
    ),
    Line(
        "memory",
        "Memory per GPU",
        _spec("memory_gb", "memory_override", "GPU_SPEC", "gpu"),
        "GB",
        'The override, else GPU_SPEC(accelerator, "memory_gb")',
        "dec1",
    ),
    Line(
        "bandwidth",
        "Memory bandwidth per GPU",
        _spec("bandwidth_tb_s", "bandwidth_override", "GPU_SPEC", "gpu"),
        "TB/s",
        'The override, else GPU_SPEC(accelerator, "bandwidth_tb_s")',
        "dec2",
    ),
    Line(
        "tflops",
        "Dense BF16 compute per GPU",
        _spec("bf16_tflops", "tflops_override", "GPU_SPEC", "gpu"),
        "TFLOP/s",
        'The override, else GPU_SPEC(accelerator, "bf16_tflops"): dense, not sparse',
        "dec1",
    ),
    Line(
        "bytes_weight",
        "Bytes per weight",
        "=BYTES_PER_PARAM({weight_precision})",
        "bytes",
        "Bits of the format / 8 (xlsxplan precision table)",
        "dec2",
    ),
    Line(
        "bytes_kv",
        "Bytes per KV cache value",
        "=BYTES_PER_PARAM({kv_precision})",
        "bytes",
        "Bits of the format / 8",
        "dec2",
    ),
    Line(
        "weights",
        "Weights",
        "=WEIGHTS_GB({params},{bytes_weight})",
        "GB",
        "N x bytes per weight (seed 000 §2; seed 003 'Storing the Model')",
        "dec1",
    ),
    Line(
        "usable",
        "Usable memory of a replica",
        "=USABLE_GB({n_gpus},{memory},Usable_Memory_Fraction)",
        "GB",
        "GPUs x memory x usable fraction (seed 000 §2)",
        "dec1",
    ),
    Line(
        "free",
        "Memory left for the KV cache",
        "=FREE_GB({params},{bytes_weight},{n_gpus},{memory},Usable_Memory_Fraction)",
        "GB",
        "Usable memory - weights; negative: the weights do not fit (seed 000 §2)",
        "dec1",
    ),
    Line(
        "kv_bytes",
        "KV cache per token",
        "=KV_BYTES_PER_TOKEN({layers},{kv_heads},{head_dim},{bytes_kv})",
        "bytes",
        "2 x layers x KV heads x head dim x bytes per value (seed 000 §3)",
        "int",
    ),
    Line("kv_kib", "KV cache per token, in KiB", "={kv_bytes}/1024", "KiB", "Bytes / 1,024", "int"),
    Line(
        "kv_seq",
        "KV cache per full-length sequence",
        "=KV_GB({kv_bytes},{context})",
        "GB",
        "KV per token x (prompt + output tokens) (seed 000 §3)",
        "dec2",
    ),
    Line(
        "batch_fit",
        "Batch that fits in memory",
        "=MAX_BATCH({params},{bytes_weight},{kv_bytes},{context},{n_gpus},{memory},Usable_Memory_Fraction)",
        "sequences",
        "floor(free memory / KV per sequence): sequences beside the weights (seed 000 §3, §6)",
        "int",
    ),
    Line(
        "fits",
        "Fits in memory?",
        '=IF({batch_fit}>=1,"fits","does not fit")',
        "text",
        "At least one full-length sequence beside the weights",
        "text",
        bad=("does not fit",),
    ),
    Line(
        "batch_latency",
        "Batch the latency target allows",
        "=BATCH_FOR_LATENCY({params},{bytes_weight},{n_gpus},{bandwidth},Latency_Target,{kv_bytes},{context},"
        "Decode_Bandwidth_Efficiency)",
        "sequences",
        "Largest batch still decoding at the target per user; 0 if none (seed 000 §4, §7)",
        "int",
    ),
    Line(
        "batch",
        "Batch planned",
        "=IF({batch_latency}<{batch_fit},MAX(1,{batch_latency}),{batch_fit})",
        "sequences",
        "The batch that fits, cut to what the target allows; at least 1 if one fits (seed 000 §7)",
        "int",
    ),
    Line(
        "latency_caps",
        "Latency target caps the batch?",
        '=IF({batch_latency}<{batch_fit},"yes","no")',
        "text",
        "yes: a batch that fits would be slower than the target per user",
        "text",
        bad=("yes",),
    ),
    Line(
        "tps_user",
        "Decode speed per user",
        "=IF({batch}>=1,DECODE_TOKS({params},{bytes_weight},{n_gpus},{bandwidth},{batch},{kv_bytes},{context},"
        'Decode_Bandwidth_Efficiency),"does not fit")',
        "tokens/s",
        "1 / step time; a step reads the weights and every sequence's KV cache (seed 000 §4)",
        "dec1",
    ),
    Line(
        "tps_alone",
        "Decode speed of a request alone",
        "=IF({batch}>=1,DECODE_TOKS({params},{bytes_weight},{n_gpus},{bandwidth},1,0,0,"
        'Decode_Bandwidth_Efficiency),"does not fit")',
        "tokens/s",
        "Batch of one, weights only: the fastest a user can get (seed 000 §4)",
        "dec1",
    ),
    Line(
        "tps_total",
        "Decode throughput of a replica",
        "=IF({batch}>=1,DECODE_TOKS_TOTAL({params},{bytes_weight},{n_gpus},{bandwidth},{batch},{kv_bytes},"
        '{context},Decode_Bandwidth_Efficiency),"does not fit")',
        "tokens/s",
        "Batch x decode speed per user (seed 000 §4)",
        "int",
    ),
    Line(
        "prefill",
        "Prefill time of one prompt",
        "=IF({batch}>=1,PREFILL_S({params},Prompt_Tokens_Per_Request,{n_gpus},{tflops},"
        'Prefill_Compute_Utilisation),"does not fit")',
        "s",
        "2N x prompt tokens / (GPUs x compute x utilisation) (seed 000 §5)",
        "dec2",
    ),
    Line(
        "cost_full",
        "List cost per M output tokens at full load",
        '=IF({batch}>=1,COST_PER_M_TOKENS({n_gpus},Price_Per_GPU_Hour,{tps_total}),"does not fit")',
        "USD/M tokens",
        "GPUs x price / (decode throughput x 3,600) x 1e6 (seed 000 §6)",
        "usd",
    ),
    Line(
        "cost_avg",
        "Effective cost per M output tokens at average load",
        '=IF({batch}>=1,COST_PER_M_TOKENS({n_gpus},Price_Per_GPU_Hour,{tps_total},Average_Utilisation),"does not fit")',
        "USD/M tokens",
        "Full-load cost / average utilisation: GPUs bill busy or idle (seed 000 §6)",
        "usd",
    ),
    Line(
        "replicas_decode",
        "Replicas for the peak, decode only",
        '=IF({batch}>=1,REPLICAS({peak_output},{tps_total},Spare_Replicas),"does not fit")',
        "count",
        "ceil(peak output tokens/s / decode throughput) + spares: seed 000 §6's count",
        "int",
    ),
    Line(
        "replica_rps",
        "Requests a replica serves per second",
        '=IF({batch}>=1,REPLICA_RPS({prefill},Output_Tokens_Per_Request,{tps_total}),"does not fit")',
        "requests/s",
        "1 / (prefill time + output tokens / decode throughput): prefill and decode take turns",
        "dec2",
    ),
    Line(
        "replicas_peak",
        "Replicas for the peak",
        '=IF({batch}>=1,ROUNDUP({peak_rps}/{replica_rps},0)+Spare_Replicas,"does not fit")',
        "count",
        "Peak requests/s / requests per replica, rounded up, + spares: counts prefill too",
        "int",
    ),
    Line(
        "gpus_peak",
        "GPUs for the peak",
        '=IF({batch}>=1,{replicas_peak}*{n_gpus},"does not fit")',
        "count",
        "Replicas x GPUs per replica",
        "int",
    ),
    Line(
        "replicas_decode_growth",
        "Replicas for the grown peak, decode only",
        '=IF({batch}>=1,REPLICAS({growth_output},{tps_total},Spare_Replicas),"does not fit")',
        "count",
        "Seed 000 §6: ten times the traffic needs 20,833 / 4,387 = 4.7, so 5 replicas",
        "int",
    ),
    Line(
        "replicas_growth",
        "Replicas for the grown peak",
        '=IF({batch}>=1,ROUNDUP({peak_rps}*Traffic_Growth_Multiple/{replica_rps},0)+Spare_Replicas,"does not fit")',
        "count",
        "Grown peak requests/s / requests per replica, rounded up, + spares (seed 000 §6)",
        "int",
    ),
    Line(
        "gpus_growth",
        "GPUs for the grown peak",
        '=IF({batch}>=1,{replicas_growth}*{n_gpus},"does not fit")',
        "count",
        "Replicas x GPUs per replica",
        "int",
    ),
    Line(
        "monthly",
        "List cost per month of the GPUs for the peak",
        '=IF({batch}>=1,{gpus_peak}*Price_Per_GPU_Hour*Hours_Per_Month,"does not fit")',
        "USD",
        "GPUs x price per GPU-hour x hours per month, billed around the clock",
        "usd0",
    ),
)

_ACTIVE_ONLY = {
    "free",
    "replica_rps",
    "replicas_decode",
    "replicas_peak",
    "gpus_peak",
    "replicas_decode_growth",
    "replicas_growth",
    "gpus_growth",
    "monthly",
}
"""Lines computed for the active scenario only: replicas and monthly cost depend on the traffic, not on what
distinguishes the cases; Scenarios compares what seed 000's table compares."""
CASE_LINES = tuple(replace(line, compare=line.key not in _ACTIVE_ONLY) for line in CASE_LINES)

GLOBAL_LINES: tuple[Line, ...] = (
    Line(
        "peak_rps",
        "Peak requests per second",
        "=PEAK_RPS(Requests_Per_Day,Peak_Hour_Factor)",
        "requests/s",
        "Requests per day / 86,400 x peak factor (seed 000 §1)",
        "dec1",
    ),
    Line(
        "peak_prompt",
        "Peak prompt tokens per second",
        "=PEAK_TOKS(Requests_Per_Day,Prompt_Tokens_Per_Request,Peak_Hour_Factor)",
        "tokens/s",
        "Peak requests/s x prompt tokens (seed 000 §1)",
        "int",
    ),
    Line(
        "peak_output",
        "Peak output tokens per second",
        "=PEAK_TOKS(Requests_Per_Day,Output_Tokens_Per_Request,Peak_Hour_Factor)",
        "tokens/s",
        "Peak requests/s x output tokens (seed 000 §1)",
        "int",
    ),
    Line(
        "growth_output",
        "Grown peak output tokens per second",
        "={peak_output}*Traffic_Growth_Multiple",
        "tokens/s",
        "Peak output tokens/s x growth multiple (seed 000 §6)",
        "int",
    ),
    Line(
        "context",
        "Tokens per sequence, prompt plus output",
        "=Prompt_Tokens_Per_Request+Output_Tokens_Per_Request",
        "tokens",
        "What each sequence's KV cache holds at its longest (seed 000 §3)",
        "int",
    ),
)

SHOWN_INPUTS = ("scenario_name",)
"""Case inputs repeated at the top of Scenarios so a printout says which case is which; the other inputs (the
overrides) are read from Inputs by the formulas directly."""

CHART_POINTS = 8
"""Rows of the tokens/s-per-user-against-batch table."""


def _validation(book: Book, spec: CaseInput, lists: dict[str, str]) -> DataValidation | None:
    if spec.kind in lists:
        dv = DataValidation(type="list", formula1=lists[spec.kind], allow_blank=False)
        dv.error = f"{spec.label}: pick a name from the list (the catalog's presets)"
        if spec.kind != "precision":
            dv.showErrorMessage = False  # your own name is allowed, with every override filled in
            dv.error = None
        else:
            dv.showErrorMessage = True
        dv.promptTitle = spec.label[:32]
        return dv
    return validation_for(spec.domain, spec.label)


def _inputs(book: Book, lists: dict[str, str]) -> Sheet:
    sh = book.sheet(
        "Inputs",
        "Every assumption, once. Orange cells are inputs; the shipped values are examples (seed 000's assistant): "
        "replace them, and their Source and As-of date.",
        ["Label", "Value", "Unit", "Source", "As-of date", "Comment"],
    )
    sh.section("Scenario", "Pick the active case; its values feed Calculations and Outputs")
    sh.case_headings("Scenario block: one column per case", "Active")
    selector_row = sh.row
    name_row = selector_row + 2  # the Scenario name row, written below
    dv = DataValidation(type="list", formula1=f"$G${name_row}:$J${name_row}", allow_blank=False)
    dv.error, dv.showErrorMessage = "Pick one of the scenario names in G to J", True
    sh.input("Active scenario", CASES[ACTIVE_CASE - 1], "name", "Choose from the list", "Dropdown of the case "
             "names", "text", dv)  # fmt: skip
    number = Line(
        "scenario_number",
        "Scenario number",
        f"=MATCH(Active_Scenario,$G${name_row}:$J${name_row},0)",
        "index",
        "Position of the active case (MATCH)",
        "int",
    )
    sh.line(number)
    book.define("Scenario_Number", "Inputs", f"$B${sh.row - 1}")
    for spec in CASE_INPUTS:
        sh.case_input(spec.label, spec.values, spec.unit, spec.source, spec.comment, spec.fmt,
                      _validation(book, spec, lists), selector="Scenario_Number", live_fmt=spec.live_fmt,
                      key=spec.key)  # fmt: skip
        if spec.key == "scenario_name":
            assert sh.row - 1 == name_row  # noqa: S101 - layout invariant
    book.scenario_name = "Scenario_Name"

    sh.section("Demand", "Traffic in requests and tokens (seed 000 §1)")
    per_day = domains.PerDay.__metadata__[0]
    tokens = domains.Tokens.__metadata__[0]
    sh.input("Requests per day", 200_000, "requests/day", f"{SEED} §1 (example)", "The support assistant", "int",
             validation_for(per_day, "Requests per day"))  # fmt: skip
    sh.input("Prompt tokens per request", 2_000, "tokens", f"{SEED} §1 (example)",
             "Instructions, retrieved documents and the conversation", "int",
             validation_for(tokens, "Prompt tokens per request"))  # fmt: skip
    sh.input("Output tokens per request", 300, "tokens", f"{SEED} §1 (example)", "Measure on real traffic "
             "(seed 000 §7)", "int", validation_for(tokens, "Output tokens per request"))  # fmt: skip
    sh.input(
        "Peak-hour factor",
        3,
        "ratio",
        f"{SEED} §1 (example)",
        "How much busier the peak hour is than the day's average",
        "dec1",
        validation_for(domains.PeakFactor.__metadata__[0], "Peak-hour factor"),
    )

    sh.section("Serving assumptions", "Shares of the hardware's peaks the plan counts on")
    frac = domains.Fraction.__metadata__[0]
    sh.input("Usable memory fraction", 0.9, "fraction", f"{SEED} §2 (example)", "Left after the serving "
             "framework's own overhead", "pct", validation_for(frac, "Usable memory fraction"))  # fmt: skip
    sh.input(
        "Decode bandwidth efficiency",
        1,
        "fraction",
        f"{SEED} §4 (example)",
        "1 is the ceiling; real kernels reach 60-80% (seed 000 §4, §7)",
        "pct",
        validation_for(frac, "Decode bandwidth efficiency"),
    )
    sh.input(
        "Prefill compute utilisation",
        0.5,
        "fraction",
        f"{SEED} §5 (example)",
        "Share of dense peak compute reached while reading prompts",
        "pct",
        validation_for(frac, "Prefill compute utilisation"),
    )
    sh.input("Latency target", 20, "tokens/s per user", "Example: your product's requirement",
             "Slowest decode speed a user should see; seed 000 §7 cites 80 for a demanding product", "dec1",
             validation_for(domains.TokensPerS.__metadata__[0], "Latency target"))  # fmt: skip
    sh.input("Spare replicas", 0, "count", f"{SEED} §6 (example)", "Seed 000 §6: run at least two replicas in "
             "production, so one failure does not stop the service", "int",
             validation_for(domains.Spare.__metadata__[0], "Spare replicas"))  # fmt: skip
    sh.input(
        "Traffic growth multiple",
        10,
        "ratio",
        f"{SEED} §6 (example)",
        "The seed sizes ten times the traffic",
        "dec1",
        validation_for(domains.PeakFactor.__metadata__[0], "Traffic growth multiple"),
    )

    sh.section("Cost and basis of estimate", "Estimate, not a quote: check your provider's current price")
    sh.input(
        "Price per GPU-hour",
        2.5,
        "USD/GPU-h",
        f"{SEED} §6 (example)",
        "List price, one GPU for an hour; the seed's assumption",
        "usd",
        validation_for(domains.Price.__metadata__[0], "Price per GPU-hour"),
    )
    sh.input("Average utilisation", 0.3, "fraction", f"{SEED} §6 (example)", "Average load as a share of full "
             "load; 30% is common for traffic with daily peaks", "pct",
             validation_for(frac, "Average utilisation"))  # fmt: skip
    sh.input(
        "Hours per month",
        730,
        "h/month",
        "Convention: 8,760 h / 12",
        "GPUs billed around the clock",
        "int",
        validation_for(domains.Domain("number", 0, 744, low_open=True), "Hours per month"),
    )
    date_dv = DataValidation(type="date", operator="greaterThan", formula1="36526")  # after 2000-01-01
    sh.input("Price date", TEMPLATE_DATE, "date", "Example: when the price was checked", "Prices change; "
             "restate the date with the price", "date", date_dv)  # fmt: skip
    sh.input("Region", "Any (example)", "text", "Example", "Where the GPUs run; prices differ by region", "text")
    basis = DataValidation(type="list", formula1='"On-demand,Committed 1 year,Committed 3 years,Spot"')
    sh.input("Pricing basis", "On-demand", "text", "Example", "On-demand, committed (1 or 3 years) or spot",
             "text", basis)  # fmt: skip
    sh.input("Billing currency", "USD", "ISO 4217", "Example", "Every cost line is in this currency", "text")
    sh.finish()
    return sh


def _calculations(book: Book) -> Sheet:
    sh = book.sheet(
        "Calculations",
        "The active scenario, line by line. Every cell is a formula: click one to read it. Inputs appear by name.",
        ["Line item", "Value", "Unit", "Equation and source", "", ""],
    )
    sh.section("Demand")
    for line in GLOBAL_LINES:
        sh.line(line)
    sh.section("The active scenario", "Inputs named after their labels on Inputs")
    live: dict[str, Ref | str] = {spec.key: book.input_names[spec.key] for spec in CASE_INPUTS}
    for line in CASE_LINES:
        sh.line(line, live)

    ws = sh.ws
    ws.row_breaks.append(Break(id=sh.row))  # the chart data starts a printed page of its own
    sh.section("Decode speed against batch (the chart on Outputs)", "Evenly spaced batches up to the one that fits")
    headings = {"A": "Chart data", "B": "Batch", "C": "Tokens/s", "D": "Equation and source", "E": "Line: batch",
                "F": "Latency target line: tokens/s per user"}  # fmt: skip
    for col, text in headings.items():
        put_text(ws[f"{col}{sh.row}"], text, "Column Heading")
    head = sh.row
    first, last = head + 1, head + CHART_POINTS
    for r in range(first, last + 1):
        # point k of n: ROWS over the labels in column A, which hold no formulas
        put_text(ws[f"A{r}"], f"Point {r - head}", "Label")
        put_text(ws[f"D{r}"], "DECODE_TOKS at this batch (seed 000 §4)", "Explanatory Text")
        ws[f"B{r}"] = book.render(
            f"=MAX(1,ROUND(ROWS($A${first}:A{r})/ROWS($A${first}:$A${last})*{{batch_fit}},0))", sh.name
        )
        ws[f"C{r}"] = book.render(
            f"=IF({{batch_fit}}>=1,DECODE_TOKS({{params}},{{bytes_weight}},GPUs_Per_Replica,{{bandwidth}},B{r},"
            f'{{kv_bytes}},{{context}},Decode_Bandwidth_Efficiency),"does not fit")',
            sh.name,
        )
        for col, fmt in (("B", "int"), ("C", "dec1")):
            ws[f"{col}{r}"].style = "Formula"
            ws[f"{col}{r}"].number_format = FMT[fmt]
    # the latency target as a flat line from the first batch to the last
    for r, batch in ((first, f"B{first}"), (first + 1, f"B{last}")):
        ws[f"E{r}"], ws[f"F{r}"] = f"={batch}", "=Latency_Target"
        ws[f"E{r}"].style, ws[f"F{r}"].style = "Formula", "Link"
        ws[f"E{r}"].number_format, ws[f"F{r}"].number_format = FMT["int"], FMT["dec1"]
        ws[f"F{r}"].alignment = Alignment(horizontal="left", indent=1)
    book.chart_rows = (first, last)
    sh.row = last + 1
    sh.text(
        "Point k of n: batch = round(k / n x batch that fits), at least 1, with k and n counted by ROWS; the "
        "speed is "
        "DECODE_TOKS at that batch; the target runs flat from the first batch to the last."
    )
    sh.finish()
    return sh


def _scenarios(book: Book) -> Sheet:
    sh = book.sheet(
        "Scenarios",
        "Seed 000's four configurations side by side, computed with the same chain as Calculations. The seed's own "
        "figures are overrides on Inputs where the catalog differs: Qwen2.5-7B at 7.6B parameters (catalog 7.61B) "
        "and the H100 at 989 TFLOP/s (catalog 989.4).",
        ["Line item", "Unit", *(f"Case {i}" for i in range(1, 5)), "Equation and source"],
        layout="cases",
    )
    locals_: list[dict[str, Ref | str]] = [
        {spec.key: book.ref(f"{spec.key}@{i}") for spec in CASE_INPUTS} for i in range(len(CASES))
    ]
    sh.section("The cases (from the scenario block on Inputs, columns G to J)")
    for spec in CASE_INPUTS:
        if spec.key in SHOWN_INPUTS:
            line = Line(f"{spec.key}:shown", spec.label, "={" + spec.key + "}", spec.unit, "Inputs", spec.fmt)
            book.refs[f"Scenarios:{spec.key}"] = sh.side_by_side(line, locals_)
    sections = {"params": "Model and accelerator figures", "weights": "Memory", "batch_latency": "Speed",
                "cost_full": "Cost"}  # fmt: skip
    for line in CASE_LINES:
        if line.key in sections:
            sh.section(sections[line.key])
        if line.compare:
            book.refs[f"Scenarios:{line.key}"] = sh.side_by_side(line, locals_)
    sh.skip()
    sh.text("Replicas, GPUs and the monthly cost for the traffic: Calculations and Outputs, for the active scenario.")
    sh.finish()
    return sh


def _outputs(book: Book) -> Sheet:
    sh = book.sheet(
        "Outputs",
        "The plan for the active scenario: key results (bold) and links to Calculations (green).",
        ["Result", "Value", "Unit", "What it means", "", ""],
    )
    sh.section("Configuration")
    for name, label, unit in (
        ("Model", "Model", "preset"),
        ("Accelerator", "Accelerator", "preset"),
        ("GPUs_Per_Replica", "GPUs per replica", "count"),
        ("Weight_Precision", "Weight precision", "format"),
        ("KV_Cache_Precision", "KV cache precision", "format"),
    ):
        sh.line(Line(f"config:{name}", label, f"={name}", unit, "The active scenario, from Inputs", "text"))
    rows = [
        ("Memory", None),
        ("weights", ("Weights", "GB", "dec1", "Must fit in the usable memory", True)),
        ("usable", ("Usable memory of a replica", "GB", "dec1", "", False)),
        ("kv_kib", ("KV cache per token", "KiB", "int", "", True)),
        ("kv_seq", ("KV cache per full-length sequence", "GB", "dec2", "", False)),
        ("batch_fit", ("Batch that fits in memory", "sequences", "int", "Conversations in progress at once", True)),
        ("fits", ("Fits in memory?", "text", "text", "", True)),
        ("Speed", None),
        ("batch_latency", ("Batch the latency target allows", "sequences", "int", "", False)),
        ("batch", ("Batch planned", "sequences", "int", "The smaller of the two", True)),
        ("latency_caps", ("Latency target caps the batch?", "text", "text", "yes: fewer users per replica", True)),
        ("tps_user", ("Decode speed per user", "tokens/s", "dec1", "At the planned batch", True)),
        ("tps_alone", ("Decode speed of a request alone", "tokens/s", "dec1", "", False)),
        ("tps_total", ("Decode throughput of a replica", "tokens/s", "int", "", True)),
        ("prefill", ("Prefill time of one prompt", "s", "dec2", "Most of the time to first token", True)),
        ("Traffic and capacity", None),
        ("peak_rps", ("Peak requests per second", "requests/s", "dec1", "", False)),
        ("peak_output", ("Peak output tokens per second", "tokens/s", "int", "", False)),
        ("peak_prompt", ("Peak prompt tokens per second", "tokens/s", "int", "", False)),
        ("replica_rps", ("Requests a replica serves per second", "requests/s", "dec2", "Prefill and decode", False)),
        ("replicas_decode", ("Replicas for the peak, decode only", "count", "int", "Seed 000's count", False)),
        ("replicas_peak", ("Replicas for the peak", "count", "int", "Prefill and decode counted", True)),
        ("gpus_peak", ("GPUs for the peak", "count", "int", "", True)),
        ("replicas_decode_growth", ("Replicas for the grown peak, decode only", "count", "int", "", False)),
        ("replicas_growth", ("Replicas for the grown peak", "count", "int", "Peak x growth multiple", True)),
        ("gpus_growth", ("GPUs for the grown peak", "count", "int", "", True)),
        ("Cost", None),
        ("cost_full", ("List cost per M output tokens at full load", "USD/M tokens", "usd", "A floor", True)),
        (
            "cost_avg",
            (
                "Effective cost per M output tokens at average load",
                "USD/M tokens",
                "usd",
                "GPUs bill whether busy or idle",
                True,
            ),
        ),  # fmt: skip
        ("monthly", ("List cost per month of the GPUs for the peak", "USD", "usd0", "", True)),
    ]
    flags = {line.key: line.bad for line in CASE_LINES}
    for key, spec in rows:
        if spec is None:
            sh.section(key)
            continue
        label, unit, fmt, note, key_result = spec
        sh.link(key, label, unit, fmt, note, key_result, flags.get(key, ()))
    sh.section("Basis of estimate", "Estimate, not a quote")
    for name, label, unit, fmt in (
        ("Price_Per_GPU_Hour", "Price per GPU-hour", "USD/GPU-h", "usd"),
        ("Pricing_Basis", "Pricing basis", "text", "text"),
        ("Price_Date", "Price date", "date", "date"),
        ("Region", "Region", "text", "text"),
        ("Billing_Currency", "Billing currency", "ISO 4217", "text"),
        ("Hours_Per_Month", "Hours per month", "h/month", "int"),
    ):
        sh.line(Line(f"basis:{name}", label, f"={name}", unit, "From Inputs", fmt))
    r = sh.text("This is an estimate, not a quote: cloud prices change and differ by region, commitment and "
                "provider.", style="Note")  # fmt: skip
    for col in "BCDEF":
        sh.ws[f"{col}{r}"].style = "Note"
    sh.section("Decode speed per user against batch")
    anchor = sh.row
    sh.row += 20
    _chart(book, sh, anchor)
    sh.finish()
    return sh


def _chart(book: Book, sh: Sheet, anchor: int) -> None:
    calc = book.ws("Calculations")
    first, last = book.chart_rows
    chart = ScatterChart()
    chart.title = "Decode speed per user against batch"
    chart.style = 2
    chart.x_axis.title = "Batch (sequences decoded together)"
    chart.y_axis.title = "Tokens/s per user"
    chart.x_axis.delete = False
    chart.y_axis.delete = False
    chart.legend.position = "b"
    series_specs = (
        (Reference(calc, min_col=2, min_row=first, max_row=last), Reference(calc, min_col=3, min_row=first,
         max_row=last), "Decode speed per user", "1F77B4", "circle"),
        (Reference(calc, min_col=5, min_row=first, max_row=first + 1), Reference(calc, min_col=6, min_row=first,
         max_row=first + 1), "Latency target", "C00000", "none"),
    )  # fmt: skip
    for xs, ys, title, colour, marker in series_specs:
        series = Series(ys, xs, title=title)
        series.marker.symbol = marker
        series.graphicalProperties.line.solidFill = colour
        series.graphicalProperties.line.width = 22000
        series.smooth = False
        chart.series.append(series)
    chart.height, chart.width = 9, 22
    sh.ws.add_chart(chart, f"A{anchor}")


def _checks(book: Book) -> Sheet:
    sh = book.sheet(
        "Checks",
        "Each row is 1 when something is wrong and 0 when it is fine; the master check adds them up.",
        ["Check", "Result", "Unit", "What it tests", "", ""],
    )
    sh.section("The active scenario")
    sh.check("Weights do not fit in usable memory", "=IF({free}<=0,1,0)",
             "Memory left for the KV cache is not positive (seed 000 §2)")  # fmt: skip
    sh.check("No full-length sequence fits beside the weights", "=IF({batch_fit}<1,1,0)",
             "The batch that fits is 0 (seed 000 §3)")  # fmt: skip
    sh.check(
        "Latency target unreachable even at batch 1",
        "=IF({batch_latency}<1,1,0)",
        "BATCH_FOR_LATENCY is 0: one sequence alone decodes slower than the target (seed 000 §7)",
    )
    sh.check(
        "Capacity short of the peak",
        "=IFERROR(IF(({replicas_peak}-Spare_Replicas)*{replica_rps}<{peak_rps},1,0),1)",
        "The replicas planned serve fewer requests/s than the peak; none when nothing fits",
    )
    sh.check("A share or utilisation outside 0 to 100%",
             "=IF(OR(MAX(Usable_Memory_Fraction,Decode_Bandwidth_Efficiency,Prefill_Compute_Utilisation,"
             "Average_Utilisation)>1,MIN(Usable_Memory_Fraction,Decode_Bandwidth_Efficiency,"
             "Prefill_Compute_Utilisation,Average_Utilisation)<=0),1,0)",
             "Fractions must be above 0 and at most 1")  # fmt: skip
    figures = [book.ref(k) for k in ("params", "layers", "kv_heads", "head_dim", "memory", "bandwidth", "tflops")]
    span = f"Calculations!${figures[0].col}${figures[0].row}:${figures[-1].col}${figures[-1].row}"
    sh.check("A model or accelerator figure is missing", f"=IF(COUNT({span})<ROWS({span}),1,0)",
             "A name not in the catalog needs every override filled in")  # fmt: skip
    sh.section("Every sheet")
    calc = book.ws("Calculations")
    scen = book.ws("Scenarios")
    calc_span = f"Calculations!$B$6:$B${calc.max_row}"
    scen_span = f"Scenarios!$C$6:$F${scen.max_row}"
    sh.check("Error values on Calculations", f"=IF(SUMPRODUCT(1*ISERROR({calc_span}))>0,1,0)",
             "Any error value on Calculations")  # fmt: skip
    sh.check("Error values on Scenarios", f"=IF(SUMPRODUCT(1*ISERROR({scen_span}))>0,1,0)",
             "Any error value among the four cases")  # fmt: skip
    sh.skip()
    sh.master()
    sh.finish()
    return sh


def build() -> Book:
    """The serving plan as an openpyxl workbook in a :class:`Book` (formulas only; recalculate to cache values)."""
    book = Book(TITLE, SHEETS)
    lists = lists_sheet(book)
    _inputs(book, lists)
    _calculations(book)
    _scenarios(book)
    _outputs(book)
    _checks(book)
    for name in ("Inputs", "Calculations", "Outputs", "Scenarios", "Checks"):
        book.sheets[name].header_status()
    cover(
        book,
        purpose="How many GPUs, how fast it feels and what it costs to serve an LLM: memory for the weights and "
        "KV cache, the batch that fits, bandwidth-bound decode, compute-bound prefill, cost per million tokens "
        "and replicas for a traffic level.",
        key_results=[
            ("fits", "Fits in memory?", "text", "text"),
            ("batch", "Batch planned", "sequences", "int"),
            ("tps_user", "Decode speed per user", "tokens/s", "dec1"),
            ("prefill", "Prefill time of one prompt", "s", "dec2"),
            ("gpus_peak", "GPUs for the peak", "count", "int"),
            ("cost_full", "List cost per M output tokens at full load", "USD/M tokens", "usd"),
            ("cost_avg", "Effective cost per M output tokens at average load", "USD/M tokens", "usd"),
        ],
        examples='seed 000, "Back-of-the-Envelope Estimation for LLM Systems" (a support assistant on H100s)',
        limitations=[
            "Decode speed is a ceiling: real kernels reach perhaps 60-80% of peak bandwidth (seed 000 §4). Set "
            "Decode bandwidth efficiency below 100% for a planning figure.",
            "The batch assumes every slot holds a full-length conversation; paged KV caches (vLLM) fit more "
            "(seed 000 §3).",
            "Averages hide the tail: a few very long prompts can take most of the memory. Size with the 95th "
            "percentile prompt (seed 000 §1, §7).",
            "Prefill at 2 FLOPs per parameter per token underestimates long prompts, whose attention grows "
            "with the square of their length (seed 000 §5).",
            "Prompt caching and hidden reasoning tokens are not modelled (seed 000 §7).",
            "Cost assumes GPUs billed by the hour, busy or idle; prices are examples, not quotes.",
        ],
    )
    guide(
        book,
        steps=[
            "Inputs, Scenario block: pick a model and an accelerator from the dropdowns (the catalog's presets), a "
            "weight and KV cache precision and the GPUs per replica for each case. Leave an override empty to use "
            "the catalog's figure; fill it to use your own (every override, for a model or GPU not in the "
            "catalog).",
            "Inputs, Active scenario: choose the case that feeds Calculations and Outputs.",
            "Inputs, Demand: requests per day, prompt and output tokens per request, and the peak-hour factor.",
            "Inputs, Serving assumptions: usable memory, bandwidth efficiency, prefill utilisation, the latency "
            "target per user, spare replicas and the traffic growth multiple.",
            "Inputs, Cost: price per GPU-hour with its date, region and pricing basis; average utilisation.",
            "Read Outputs (and the Cover's key results). Scenarios compares the four cases side by side.",
            "Checks must read OK. An ERROR names the problem: weights that do not fit, a latency target no batch "
            "reaches, a share above 100%, a figure missing from the catalog.",
            "In Excel, install the xlsxplan add-in (xlwings) and click Import Functions: the formulas then "
            "recalculate live. Without it, the values shown are those computed when the file was saved; "
            "`xlsxplan recalc` recalculates a copy without Excel.",
        ],
        sheets=[
            ("Cover", "Purpose, active scenario, master check, key results, legend, limitations"),
            ("Guide", "This page"),
            ("Inputs", "Every assumption, once, with unit, source and date; the scenario block"),
            ("Calculations", "The active scenario line by line, with the equation and its source"),
            ("Outputs", "Key results, the basis of estimate and the decode-speed chart"),
            ("Scenarios", "The four cases side by side"),
            ("Checks", "1 for a problem, 0 for OK; the master check"),
            ("Version log", "What changed, when"),
            ("Lists", "The catalog's presets and the precision names behind the dropdowns"),
            ("xlwings.conf", "Tells the add-in which Python module holds the functions; leave it as is"),
        ],
    )
    version_log(book)
    conf_sheet(book)
    book.finish()
    return book
