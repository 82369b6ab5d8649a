"""The serving plan template: how many GPUs, how fast it feels, what it costs ("Back-of-the-Envelope Estimation for
LLM Systems"), for real traffic.

Sheets: Cover, Guide, Inputs (with the scenario block), Prompt lengths (an optional pasted sample), Calculations
(the active scenario), Timeline and Monthly requests (:mod:`.timeline`), Finance (:mod:`.finance`),
Outputs, Scenarios (the four cases side by side), Calibration (the assumed efficiencies, the
calibrated ones and what your measurements imply, side by side), Checks, Version log, Lists (the dropdowns and the
inputs' usual ranges) and ``xlwings.conf``.

The calculation chain of one case is written once, as :data:`CASE_LINES`, and rendered twice: on Calculations
against the active scenario's named inputs, and on Scenarios once per case column (the lines marked ``compare``).
The shipped inputs are the document's support assistant and its four configurations, with its own figures where the
catalog's differ (Qwen2.5-7B as 7.6B parameters, the H100 at 989 dense BF16 TFLOP/s), so its printed table comes out
exactly.

What the template adds to the document's plan, each an input with a neutral default (its figures stay as they are):

* real traffic: the 95th-percentile and longest prompts, a pasted sample of prompt lengths, hidden
  reasoning tokens, a shared prefix and its cache hit rate, a time-to-first-token target beside the decode-speed
  target, spares and a minimum fleet, a paged KV cache's accepted overflow, disaggregated prefill and decode, and
  input and output tokens priced apart;
* calibration: the Calibration sheet;
* architectures: the KV cache per token by the model's architecture (latent attention, sliding windows,
  tensor-parallel replicas), active parameters for a mixture of experts, every stored precision format.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from openpyxl.chart import Reference, ScatterChart, Series
from openpyxl.styles import Alignment
from openpyxl.utils import column_index_from_string, get_column_letter
from openpyxl.worksheet.datavalidation import DataValidation
from openpyxl.worksheet.formula import ArrayFormula
from openpyxl.worksheet.pagebreak import Break

from .. import catalog, domains
from ..domains import domain_of
from ..plan import search as plan_search
from ..plan.cells import NONE_SHOWN
from ..plan.inputs import passed_inputs
from . import finance, portfolio_sheet, timeline
from .book import (
    Book,
    InputRow,
    Line,
    Ref,
    Sheet,
    add_validation,
    flag_good,
    put_text,
    register_cells,
    validation_for,
)
from .common import (
    COMPUTE_MEMORY_TITLE,
    ENVELOPE,
    ENVELOPE_TITLE,
    RANGE_HIGH,
    RANGE_LOW,
    PriceExample,
    Result,
    conf_sheet,
    cover,
    error_check,
    guide,
    header_statuses,
    lists_sheet,
    measured_heading,
    note_block,
    range_block,
    range_inputs,
    range_sentence,
    table_columns,
    usual_checks,
    version_log,
)
from .styles import FMT, HEADER_ROWS, SIDE_COLUMNS, TEMPLATE_DATE

__all__ = [
    "build",
    "TITLE",
    "CASES",
    "CASE_INPUTS",
    "CASE_LINES",
    "GLOBAL_LINES",
    "CALIBRATION_LINES",
    "FILENAME",
    "PROMPT_SAMPLE_ROWS",
    "USUAL",
]

TITLE = "Serving plan"
FILENAME = "serving_plan.xlsx"
SHEETS = [
    ("Cover", "cover"),
    ("Guide", "guide"),
    ("Inputs", "inputs"),
    ("Prompt lengths", "inputs"),
    (timeline.REQUESTS_SHEET, "inputs"),
    ("Calculations", "calc"),
    (timeline.SHEET, "calc"),
    (finance.SHEET, "calc"),
    ("Outputs", "outputs"),
    ("Scenarios", "scenarios"),
    (portfolio_sheet.PORTFOLIO, "scenarios"),
    (portfolio_sheet.CHARGEBACK, "scenarios"),  # PORTFOLIO's search; the portable edition keeps its values
    ("Calibration", "calibration"),
    ("Checks", "checks"),
    ("Version log", "log"),
    ("Options", "scenarios"),  # a reference table (a hundred options), printed after the story with Lists
    ("Lists", "lists"),
]

NO_FIT = "does not fit"
NO_FIT_LOGNORMAL = "no log-normal fit"
NO_TARGET = "no target"
NO_PROMPT = "decode takes all the compute"
"""What the first-token line at the planned batch shows when decode leaves the replica no compute for prompts."""
SPEC_OFF = "off"
_SPEC_ON = "=IF(AND(ISNUMBER(Draft_Tokens_Per_Step),Draft_Tokens_Per_Step>=1,ISNUMBER({batch}),{batch}>=1),"
"""The speculative lines' test: draft tokens given, and a batch that fits."""
OVERLOADED = "queue overloaded"
SPREAD_BASIS = (
    "the pasted lengths",
    "the spread typed on Inputs",
    "a log-normal through the mean and tail",
    "none fits: every slot sized at the tail; paste lengths or type a spread",
)
"""What the spread of prompt lengths a paged batch is sized for rests on, in words: the last where only a mean and a
p95 no log-normal can fit are known (a tail above 3.87 times the mean), with how to give a better one."""
NAME_FOLLOWS = "yes, on "
NAME_OWN = "no, your own name: the inputs give "
"""How a case's name reads against its inputs: the name the inputs give (the model's size, the weights' precision and
the GPUs, as the source names its cases; the accelerator follows), or the user's own name, with the one they give."""
EMBEDDING_AS_WEIGHTS = "as the weights"
EMBEDDING_AS_PUBLISHED = "as published"
"""The Embedding precision input's words: the weights' own width for the token embeddings and output head (the
source documents' N x bytes, so their worked examples come out), or 16 bits beside narrower weights, as quantized
checkpoints are published (MODEL_WEIGHTS_GB's default); a format name gives that format."""
NO_SPREAD = "no spread known"
PAGED = "paged KV cache"
PER_SLOT = "every slot at the tail"


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


# The four configurations of Back-of-the-Envelope, section 6.
CASES = ("72B BF16, 2 GPUs", "72B FP8, 2 GPUs", "72B BF16, 4 GPUs", "7B BF16, 1 GPU")
ACTIVE_CASE = 2
_OVERRIDE = domains.Domain("number", 0, 1e9)
_CATALOGS = "0 or empty: the catalog's figure"  # what the override formulas, IF(override>0, ...), make of them
_NOT_MEASURED = "leave it empty when not measured"
_SECTION6 = f"{ENVELOPE} §6 (example)"


def _override(
    key: str,
    label: str,
    unit: str,
    source: str,
    comment: str,
    values: tuple[Any, ...] = (None,) * 4,
    fmt: str = "override",
) -> CaseInput:
    return CaseInput(key, label, values, unit, source, comment, fmt, "", _OVERRIDE)


PRICE_EXAMPLES = {"H100-SXM": PriceExample(2.5, _SECTION6, "The source's figure, not the catalog's GPU_PRICE")}
"""The source document's own price in place of the catalog's, so that its printed costs come out."""

CASE_INPUTS: tuple[CaseInput, ...] = (
    CaseInput("scenario_name", "Scenario name", CASES, "text", _SECTION6, "Rename a case freely", "text"),
    CaseInput("model", "Model", ("Qwen2.5-72B",) * 3 + ("Qwen2.5-7B",), "preset", _SECTION6,
              "Pick a preset in G to J (dropdown), or type a name", "text", "model"),
    CaseInput("overrides_model", "Model the overrides below are for", ("Qwen2.5-72B",) * 3 + ("Qwen2.5-7B",), "preset",
              _SECTION6, "Another model in the case drops them; empty: any model", "text", "model"),
    _override("params_override", "Parameters override", "B params", _SECTION6,
              "Source: 7.6; catalog: 7.61 (model card)", (None, None, None, 7.6)),
    _override("active_override", "Active parameters override", "B params", "Catalog (config.json)",
              "Mixture of experts: parameters one token uses"),
    _override("kv_override", "KV cache per token override", "bytes", "Catalog (config.json)",
              "At the cache's precision, as KV_BYTES_PER_TOKEN gives", fmt="override_int"),
    CaseInput("gpu", "Accelerator", ("H100-SXM",) * 4, "preset", _SECTION6,
              "Pick a preset in G to J (dropdown), or type a name", "text", "gpu"),
    CaseInput("overrides_gpu", "Accelerator the overrides below are for", ("H100-SXM",) * 4, "preset", _SECTION6,
              "Another accelerator drops them; empty: any", "text", "gpu"),
    _override("memory_override", "Memory per GPU override", "GB", "Catalog (datasheet)",
              f"Empty: catalog's (80 GB, as {ENVELOPE})"),
    _override("bandwidth_override", "Memory bandwidth override", "TB/s", "Catalog (datasheet)",
              f"Empty: catalog's (3.35 TB/s, as {ENVELOPE})"),
    _override("tflops_override", "Dense BF16 compute override", "TFLOP/s", f"{ENVELOPE} §5 (example)",
              "Source: 989; catalog: 989.4 (Hopper whitepaper)", (989,) * 4),
    CaseInput("weight_precision", "Weight precision", ("bf16", "fp8", "bf16", "bf16"), "format", _SECTION6,
              "Pick in G to J: bf16, fp8, int4_g128, q4_k_m, ...", "text", "precision"),
    CaseInput("kv_precision", "KV cache precision", ("bf16",) * 4, "format", f"{ENVELOPE} §3 (example)",
              "Apart from the weights'; the source keeps it in BF16", "text", "precision"),
    CaseInput("n_gpus", "GPUs per replica", (2, 2, 4, 1), "count", _SECTION6, "GPUs holding one copy (tensor "
              "parallel)", "int", "", domain_of(domains.GPUs)),
)  # fmt: skip


def _spec(field: str, override: str, fn: str, what: str) -> str:
    """The override where it applies (typed for this case's model or accelerator, or for one not in the catalog),
    else the catalog's figure: a case never carries another model's overrides."""
    applies = "model_overrides" if what == "model" else "gpu_overrides"
    return f'=IF(AND({{{override}}}>0,{{{applies}}}="yes"),{{{override}}},{fn}({{{what}}},"{field}"))'


BINDING = ("memory", "the decode-speed target", "the first-token target")
"""What sets the batch planned, as the sheets say beside it."""


def _fit(formula: str) -> str:
    """``formula`` when a batch fits, else the words "does not fit": a clean answer, never an error value. The test
    is guarded with ISNUMBER: a failed call in classic xlwings is text ("#NUM! ..."), which compares greater than
    any number, so ``{batch}>=1`` alone would read it as a batch that fits."""
    return f'=IF(AND(ISNUMBER({{batch}}),{{batch}}>=1),{formula},"{NO_FIT}")'


def _fits_some(formula: str) -> str:
    """``formula``, or "does not fit" where memory holds no sequence at all: a latency target's batch means nothing
    then. An error in memory's batch stays an error (AND passes it on; classic xlwings' text reads as no number),
    so that it is never taken for a configuration that does not fit."""
    return f'=IF(AND(ISNUMBER({{batch_mem}}),{{batch_mem}}<1),"{NO_FIT}",{formula})'


def _moe(field: str) -> str:
    """A routed-expert figure of the model: MODEL_SPEC's for a mixture of experts, 1 (one expert of one) if dense."""
    return f'=IF({{active}}<{{params}},MODEL_SPEC({{model}},"{field}"),1)'


def _read(batch: str) -> str:
    """Parameters a decode step reads at a batch: MOE_PARAMS_READ_B (all of them for a dense model)."""
    return f"MOE_PARAMS_READ_B({{params}},{{active}},{{experts}},{{experts_per_token}},{batch})"


# The chain of one case. {key} is another line of the same case, a case input, or a global line of Calculations.
# Lines with compare=False are computed for the active scenario only (see _COMPARED).
CASE_LINES: tuple[Line, ...] = (
    # -- the model and accelerator figures
    Line("model_overrides", "The model's overrides apply?",
         '=IF(OR({overrides_model}="",{overrides_model}={model},NOT(ISNUMBER(MATCH({model},{model_names},0)))),'
         '"yes","no")', "text", "Typed for this model, or for any, or the model is your own: else the catalog's",
         "text"),
    Line("gpu_overrides", "The accelerator's overrides apply?",
         '=IF(OR({overrides_gpu}="",{overrides_gpu}={gpu},NOT(ISNUMBER(MATCH({gpu},{gpu_names},0)))),"yes","no")',
         "text", "Typed for this accelerator, or for any, or it is your own: else the catalog's", "text"),
    Line("described", "The case as its inputs read",
         '={model}&", "&{weight_precision}&" weights, "&{n_gpus}&" x "&{gpu}', "text",
         "Follows the inputs, whatever the case's name says", "text"),
    Line("name_inputs", "The name the inputs give",
         '=TRIM(RIGHT(SUBSTITUTE({model},"-",REPT(" ",LEN({model}))),LEN({model})))&" "&UPPER({weight_precision})'
         '&", "&{n_gpus}&" GPU"&IF({n_gpus}=1,"","s")', "text",
         "The model's size (its name's last part), weights, GPUs: the source's way of naming a case", "text"),
    Line("name_follows", "Does the case's name follow its inputs?",
         f'=IF({{scenario_name}}={{name_inputs}},"{NAME_FOLLOWS}"&{{gpu}},"{NAME_OWN}"&{{name_inputs}}&" on "'
         "&{gpu})", "text",
         "The name typed against the name the inputs give: a stale or free name says it is your own", "text"),
    Line("params", "Parameters", _spec("params_b", "params_override", "MODEL_SPEC", "model"), "B params",
         'The override, else MODEL_SPEC(model, "params_b"): every expert', "dec2"),
    Line("active", "Active parameters per token",
         '=IF(AND({active_override}>0,{model_overrides}="yes"),{active_override},'
         'MIN({params},MODEL_SPEC({model},"active_params_b")))', "B params",
         'The override, else MODEL_SPEC(model, "active_params_b") (MoE)', "dec2"),
    Line("memory", "Memory per GPU", _spec("memory_gb", "memory_override", "GPU_SPEC", "gpu"), "GB",
         'The override, else GPU_SPEC(accelerator, "memory_gb")', "dec1"),
    Line("bandwidth", "Memory bandwidth per GPU", _spec("bandwidth_tb_s", "bandwidth_override", "GPU_SPEC", "gpu"),
         "TB/s", 'The override, else GPU_SPEC(accelerator, "bandwidth_tb_s")', "dec2"),
    Line("tflops", "Dense BF16 compute per GPU", _spec("bf16_tflops", "tflops_override", "GPU_SPEC", "gpu"),
         "TFLOP/s", 'The override, else GPU_SPEC(accelerator, "bf16_tflops"): dense, not sparse', "dec1"),
    Line("tflops_fp8", "Dense FP8 compute per GPU",
         '=IF(ISNUMBER(GPU_SPEC({gpu},"fp8_tflops")),GPU_SPEC({gpu},"fp8_tflops"),{tflops})', "TFLOP/s",
         'GPU_SPEC(accelerator, "fp8_tflops"); none published (A100, your own): the BF16 figure', "dec1"),
    Line("tflops_weights", "Dense compute at the weights' precision",
         '=IF(INDEX({precision_peaks},MATCH({weight_precision},{precision_names},0))="fp8_tflops",{tflops_fp8},'
         "{tflops})", "TFLOP/s", "8-bit weights compute on FP8 tensor cores, others on BF16 ones (Lists, column F)",
         "dec1"),
    Line("price", "Price per GPU-hour", "=INDEX({gpu_prices},MATCH({gpu},{gpu_names},0))", "USD/GPU-h",
         "The accelerator's row of the price table on Lists (GPU_PRICE's default, or your quote)", "usd"),
    Line("bytes_weight", "Bytes per weight", "=BYTES_PER_PARAM({weight_precision})", "bytes",
         "Bits / 8, block scales and zero-points included (xlsxplan precision table)", "dec3"),
    Line("bytes_kv", "Bytes per KV cache value", "=BYTES_PER_PARAM({kv_precision})", "bytes",
         "The KV cache's format, apart from the weights'", "dec3"),
    Line("experts", "Routed experts per layer", _moe("experts"), "count",
         'MODEL_SPEC(model, "experts") for a mixture of experts; 1 if dense', "int"),
    Line("experts_per_token", "Routed experts each token uses", _moe("experts_per_token"), "count",
         'MODEL_SPEC(model, "experts_per_token"); 1 for a dense model', "int"),
    # -- memory
    Line("bytes_embedding", "Bytes per embedding and output-head weight",
         f'=IF(OR(Embedding_Precision="{EMBEDDING_AS_WEIGHTS}",Embedding_Precision="{EMBEDDING_AS_PUBLISHED}"),'
         f'{{bytes_weight}}+(Embedding_Precision="{EMBEDDING_AS_PUBLISHED}")*MAX(0,BYTES_PER_PARAM("bf16")'
         "-{bytes_weight}),BYTES_PER_PARAM(Embedding_Precision))", "bytes",
         "Embedding precision on Inputs: the weights' (the source's N x b), 16-bit as published, or a format",
         "dec3"),
    Line("weights", "Weights",
         "=IF(ISNUMBER(MODEL_WEIGHTS_GB({model},{bytes_weight},{bytes_embedding},0)),"
         "MODEL_WEIGHTS_GB({model},{bytes_weight},{bytes_embedding},0)"
         '+({params}-MODEL_SPEC({model},"params_b"))*{bytes_weight},WEIGHTS_GB({params},{bytes_weight}))', "GB",
         "MODEL_WEIGHTS_GB, all experts; a parameters override adds its difference x bytes; your own model: N x b",
         "dec1"),
    Line("weights_gpu", "Weights per GPU",
         "=WEIGHTS_GB_PER_GPU({weights}/{bytes_weight},IF({active}<{params},MODEL_EXPERT_PARAMS_B({model}),0),"
         "{n_gpus},{n_gpus},{bytes_weight})", "GB",
         "Dense part split by tensor, experts by expert parallelism (GShard): the weights over the GPUs", "dec1"),
    Line("usable", "Usable memory of a replica", "=USABLE_GB({n_gpus},{memory},Usable_Memory_Fraction)", "GB",
         "GPUs x memory x usable fraction (Back-of-the-Envelope §2)", "dec1"),
    Line("free", "Memory left for the KV cache", "={usable}-{weights}", "GB",
         "Usable memory - weights; negative: the weights do not fit (Back-of-the-Envelope §2)", "dec1"),
    Line("kv_bytes", "KV cache per token",
         '=IF(AND({kv_override}>0,{model_overrides}="yes"),{kv_override},'
         "MODEL_KV_BYTES_PER_TOKEN({model},{context},{bytes_kv},{n_gpus}))", "bytes",
         "The override, else MODEL_KV_BYTES_PER_TOKEN, by architecture (§3)", "int"),
    Line("kv_kib", "KV cache per token, in KiB", "={kv_bytes}/1024", "KiB", "Bytes / 1,024", "int"),
    Line("kv_seq", "KV cache of a sequence at the tail prompt", "=KV_GB({kv_bytes},{tail_context})", "GB",
         "KV per token x (tail prompt + reasoning + output) (Back-of-the-Envelope §3, §7)", "dec2"),
    Line("batch_fit", "Batch that fits, every slot at the tail prompt",
         "=MAX_BATCH({weights}/{bytes_weight},{bytes_weight},{kv_bytes},{tail_context},{n_gpus},{memory},"
         "Usable_Memory_Fraction)", "sequences",
         "floor(free memory / KV of a tail sequence): Back-of-the-Envelope §3, at the tail (§7)", "int"),
    Line("fits", "Fits in memory?", f'=IF(AND(ISNUMBER({{batch_fit}}),{{batch_fit}}>=1),"fits","{NO_FIT}")',
         "text", "At least one tail-length sequence beside the weights", "text", bad=(NO_FIT,)),
    Line("batch_paged", "Batch a paged KV cache fits",
         "=IF(ISNUMBER({prompt_sd}),PAGED_BATCH({free},{kv_bytes},{context},{prompt_sd},KV_Cache_Overflow_Accepted),"
         f'"{NO_SPREAD}")', "sequences",
         "Its total KV cache fits, but for the overflow accepted (vLLM paging)", "int"),
    Line("batch_mem", "Batch memory allows",
         "=IF(AND(ISNUMBER({batch_paged}),ISNUMBER({batch_fit}),{batch_fit}>=1),{batch_paged},{batch_fit})",
         "sequences",
         "The paged batch; no spread known (or no tail fit): every slot at the tail", "int"),
    Line("batch_basis", "How memory's batch is counted",
         f'=IF(AND(ISNUMBER({{batch_paged}}),ISNUMBER({{batch_fit}}),{{batch_fit}}>=1),"{PAGED}","{PER_SLOT}")', "text",
         "Paged, as vLLM, TensorRT-LLM and SGLang run; per slot is Back-of-the-Envelope's worst case (§3)",
         "text"),
    Line("engine_pool", "KV cache pool the engine sets aside, per GPU",
         "=ENGINE_KV_GB({memory},{weights_gpu},Engine_Memory_Fraction,Engine_Activation_And_Graph_Reserve)", "GB",
         "Memory x the engine's fraction - weights - reserve (vLLM determine_available_memory; SGLang)", "dec1",
         compare=False),
    Line("engine_tokens", "KV cache tokens the engine allocates",
         '=IF({engine_pool}>0,ENGINE_KV_TOKENS({engine_pool},{kv_bytes}/{n_gpus},Engine_KV_Block_Size),0)', "tokens",
         "Whole blocks of the pool per GPU: the 'GPU KV cache size' vLLM prints at start-up", "int", compare=False),
    Line("engine_concurrency", "Maximum concurrency at the longest request",
         '=IF({engine_pool}>0,ENGINE_MAX_CONCURRENCY({engine_pool},{kv_bytes}/{n_gpus},{longest_request},'
         "Engine_KV_Block_Size),0)", "requests", "Requests of the longest accepted length at once, as vLLM prints",
         "dec2", compare=False),
    Line("engine_batch", "Tail-prompt sequences the engine's pool holds",
         '=IF({engine_pool}>0,ENGINE_MAX_CONCURRENCY({engine_pool},{kv_bytes}/{n_gpus},{tail_context},'
         "Engine_KV_Block_Size),0)", "sequences", "The engine-true counterpart of the batch that fits, block-rounded",
         "dec1", compare=False),
    Line("max_context", "Longest sequence that fits alone", "=MAX_CONTEXT_TOKENS({free},{kv_bytes})", "tokens",
         "floor(free memory / KV per token): the ceiling on the longest request (Back-of-the-Envelope §1)", "int"),
    # -- speed and the latency targets
    Line("params_read_mem", "Parameters a step reads at memory's batch", _fits_some(_read("{batch_mem}")),
         "B params", "MOE_PARAMS_READ_B: the experts the batch touches; all if dense", "dec2"),
    Line("speed_floor", "Decode speed per user at memory's batch",
         _fits_some("DECODE_TOKS({params_read_mem},{bytes_weight},{n_gpus},{bandwidth},{batch_mem},{kv_bytes},"
                    "{context},Decode_Bandwidth_Efficiency)"), "tokens/s",
         "The slowest any batch that fits decodes at: what the first-token batch counts with no speed target",
         "dec1"),
    Line("speed_for_ttft", "Decode speed the first-token batch is sized at",
         '=IF({speed_given}="yes",Latency_Target,{speed_floor})', "tokens/s",
         "The decode-speed target if given, else memory's batch speed (no target then binds)", "dec1"),
    Line("batch_latency", "Batch the decode-speed target allows",
         '=IF(AND({speed_given}="yes",COUNTIF({batch_mem},"<1")=0),'
         "BATCH_FOR_LATENCY({params_read_mem},{bytes_weight},{n_gpus},{bandwidth},Latency_Target,{kv_bytes},"
         "{context},Decode_Bandwidth_Efficiency),{speed_unset})", "sequences",
         "Largest batch decoding at the target per user; 0 if none (Back-of-the-Envelope §4, §7)", "int"),
    # COUNTIF(batch,"<1") is 1 only for a number below 1: an error in memory's batch reaches a given target's batch
    # (and the checks), while a target not given reads "no target" whatever memory's batch holds
    Line("batch_ttft", "Batch the time-to-first-token target allows",
         '=IF(AND({ttft_given}="yes",COUNTIF({batch_mem},"<1")=0),'
         "BATCH_FOR_TTFT({active},{n_gpus},{tflops},{speed_for_ttft},{prefill_tokens_tail},"
         "Time_To_First_Token_Target,Prefill_Compute_Utilisation,{bytes_weight},{bandwidth},{kv_bytes},"
         "{context},Decode_Bandwidth_Efficiency),{ttft_unset})", "sequences",
         "Decode leaves compute for a tail prompt in time; 0: none (Sarathi-Serve)", "int"),
    Line("cap_latency", "Cap the decode-speed target sets",
         '=IF({speed_given}="yes",{batch_latency},{batch_mem})', "sequences",
         "Its batch when the target is given; memory's when not: a target not given does not apply", "int"),
    Line("cap_ttft", "Cap the first-token target sets",
         '=IF({ttft_given}="yes",{batch_ttft},{batch_mem})', "sequences",
         "Its batch when the target is given; memory's when not", "int"),
    Line("batch", "Batch planned",
         # memory's 0 where nothing fits (the targets then read "does not fit", which MAX passes by)
         "=IF(AND(ISNUMBER({batch_mem}),OR({batch_mem}<1,AND(ISNUMBER({cap_latency}),ISNUMBER({cap_ttft})))),"
         "MIN({batch_mem},MAX(1,{cap_latency}),MAX(1,{cap_ttft})),NA())",
         "sequences", "The smallest of the three, at least 1 if one fits; none if one is no number", "int"),
    Line("binding", "What sets the batch",
         f'=INDEX({{"{BINDING[0]}","{BINDING[1]}","{BINDING[2]}"}},1+({{batch}}<{{batch_mem}})'
         "+({batch}<MIN({batch_mem},MAX(1,{cap_latency}))))", "text",
         "Memory, or the target that caps it: printed beside the batch it moved", "text"),
    Line("latency_caps", "A latency target caps the batch?", '=IF({batch}<{batch_mem},"yes","no")', "text",
         "yes: a batch that fits would be slower than a target", "text", bad=("yes",)),
    Line("params_read", "Parameters a step reads at the planned batch", _fit(_read("{batch}")), "B params",
         "MOE_PARAMS_READ_B at the planned batch; at batch 1, the active ones", "dec2"),
    Line("tps_user", "Decode speed per user",
         _fit("DECODE_TOKS({params_read},{bytes_weight},{n_gpus},{bandwidth},{batch},{kv_bytes},{context},"
              "Decode_Bandwidth_Efficiency)"), "tokens/s",
         "1 / step time; a step reads its weights and all KV caches (Back-of-the-Envelope §4)", "dec1"),
    Line("tps_alone", "Decode speed of a request alone",
         _fit("DECODE_TOKS({active},{bytes_weight},{n_gpus},{bandwidth},1,0,0,Decode_Bandwidth_Efficiency)"),
         "tokens/s", "Batch of one, weights only: the fastest a user can get (Back-of-the-Envelope §4)", "dec1"),
    Line("tps_total", "Decode throughput of a replica",
         _fit("DECODE_TOKS_TOTAL({params_read},{bytes_weight},{n_gpus},{bandwidth},{batch},{kv_bytes},{context},"
              "Decode_Bandwidth_Efficiency)"), "tokens/s", "Batch x decode speed per user (Back-of-the-Envelope §4)",
         "int"),
    Line("prefill", "Prefill time of a mean prompt",
         _fit("PREFILL_S({active},{prefill_tokens},{n_gpus},{tflops},Prefill_Compute_Utilisation)"), "s",
         "2N x uncached prompt / (GPUs x BF16 peak x utilisation) (Back-of-the-Envelope §5)", "dec2"),
    Line("prompt_room", "Compute left for prompts at the planned batch",
         _fit("COMPUTE_TOKS({active},{n_gpus}*{tflops}*Prefill_Compute_Utilisation)-{tps_total}"), "tokens/s",
         "Compute tokens/s less decode tokens/s: what chunks of prompts get; 0 or less: none", "int"),
    Line("ttft_batch", "First token of a tail prompt, at the planned batch",
         # one IF: the words where the room is no positive number ("does not fit" passed on as it is)
         "=IF(AND(ISNUMBER({prompt_room}),{prompt_room}>0),MAX({prefill_tokens_tail}/{prompt_room},1/{tps_user}),"
         f'REPT("{NO_PROMPT}",ISNUMBER({{prompt_room}})*1)&REPT({{prompt_room}},NOT(ISNUMBER({{prompt_room}}))*1))',
         "s", "Tail prompt / the compute left for prompts, at least the step that reads its last chunk", "dec2"),
    Line("ttft_alone", "First token of a tail prompt alone, with attention",
         '=IF(AND(ISNUMBER(MODEL_SPEC({model},"layers")),ISNUMBER(MODEL_SPEC({model},"hidden"))),'
         'TTFT_S({active},{bytes_weight},{prefill_tokens_tail},MODEL_SPEC({model},"layers"),'
         'MODEL_SPEC({model},"hidden"),{n_gpus},{tflops},{bandwidth},Prefill_Compute_Utilisation,'
         "Decode_Bandwidth_Efficiency,Tensor_Parallel_Link_Bandwidth),\"needs a preset's shape\")", "s",
         "TTFT_S: 2NP + 2LdP^2 FLOPs, a weight read, tensor-parallel all-reduces", "dec2"),
    Line("time_to_answer", "First visible token, a mean prompt alone",
         _fit("TIME_TO_ANSWER_S({prefill},Hidden_Reasoning_Tokens_Per_Request,{tps_user})"), "s",
         "Prefill + reasoning tokens / decode speed: the answer starts after the reasoning", "dec2"),
    # -- speculative decoding, beside the plan (Leviathan et al. 2023): what a draft does to decode speed and cost
    Line("spec_tokens", "Tokens a verify step yields, speculative",
         _SPEC_ON + 'SPEC_TOKENS_PER_STEP(Draft_Acceptance_Rate,Draft_Tokens_Per_Step),"off")',
         "tokens",
         "(1 - alpha^(gamma+1)) / (1 - alpha): Leviathan, Kalman and Matias 2023 (arXiv:2211.17192)", "dec2"),
    Line("spec_step", "Step time with the draft, at the planned batch",
         _SPEC_ON + "SPEC_STEP_S({params_read},{bytes_weight},{batch},{kv_bytes},{context},{n_gpus},{bandwidth},"
         '{tflops_weights},Draft_Tokens_Per_Step,Draft_Model_Parameters,BYTES_PER_PARAM("bf16"),'
         'Decode_Bandwidth_Efficiency,Prefill_Compute_Utilisation),"off")', "s",
         "SPEC_STEP_S: gamma draft steps, then one verify pass over gamma + 1 tokens a sequence", "dec3"),
    Line("spec_tps_user", "Decode speed per user, speculative",
         _SPEC_ON + '{spec_tokens}/{spec_step},"off")',
         "tokens/s",
         "Tokens a step / step time, beside the plan's decode speed per user", "dec1"),
    Line("spec_cost_full", "Cost per M output tokens at full load, speculative",
         _SPEC_ON + 'COST_PER_M_TOKENS({n_gpus},{price},{batch}*{spec_tps_user}),"off")',
         "USD/M tokens",
         "As Back-of-the-Envelope §6, at the speculative decode throughput", "usd"),
    # -- cost as Back-of-the-Envelope counts it
    Line("cost_full", "List cost per M output tokens at full load",
         _fit("COST_PER_M_TOKENS({n_gpus},{price},{tps_total})"), "USD/M tokens",
         "GPUs x price / (decode throughput x 3,600) x 1e6 (Back-of-the-Envelope §6)", "usd"),
    Line("cost_avg", "Effective cost per M output tokens at average load",
         _fit("COST_PER_M_TOKENS({n_gpus},{price},{tps_total},Average_Utilisation)"), "USD/M tokens",
         "The method of Back-of-the-Envelope §6: full-load cost / average utilisation, decode only", "usd"),
    # -- capacity for the traffic
    Line("replicas_decode", "Replicas for the peak, output tokens only",
         _fit("REPLICAS({peak_output},{tps_total})"), "count",
         "ceil(peak output tokens/s / decode throughput), no spares: the count of Back-of-the-Envelope §6", "int"),
    Line("replicas_decode_growth", "Replicas for the grown peak, output tokens only",
         _fit("REPLICAS({growth_output},{tps_total})"), "count",
         "Back-of-the-Envelope §6: ten times the traffic needs 20,833 / 4,387 = 4.7, so 5 replicas", "int"),
    Line("replica_rps", "Requests per replica, prefill and decode in turn",
         _fit("REPLICA_RPS({prefill},{decode_tokens},{tps_total})"), "requests/s",
         "1 / (prefill time + generated tokens / decode throughput)", "dec2"),
    Line("replica_rps_chunked", "Requests per replica, chunked prefill",
         _fit("REPLICA_RPS_CHUNKED({prefill},{prefill_tokens},{decode_tokens},{tps_total})"), "requests/s",
         "Prompts chunked into the decode steps (Sarathi-Serve, arXiv:2403.02310): the plan's capacity", "dec2"),
    Line("replicas_load", "Replicas the peak's load needs, spares included",
         _fit("FLEET_REPLICAS({peak_rps},{replica_rps_chunked},Spare_Replicas,Minimum_Replicas)"), "count",
         "ceil(peak requests/s / requests per replica) + spares, at least the minimum (Back-of-the-Envelope §6)",
         "int"),
    Line("prefill_chunked", "Prefill of a mean prompt beside the planned batch",
         _fit("MAX({prefill},{prefill_tokens}/(COMPUTE_TOKS({active},{n_gpus}*{tflops}*Prefill_Compute_Utilisation)"
              "-{tps_total}))"), "s",
         "Prompt / (compute tokens/s - decode tokens/s); the prefill alone where decode leaves no compute",
         "dec3"),
    Line("decode_s", "Decode time of a request", _fit("{decode_tokens}/{tps_user}"), "s",
         "Generated tokens / decode speed per user: the rest of a slot's time", "dec2"),
    Line("replicas_ttft_pct", "Replicas for the percentile first-token target",
         '=IF(AND({pct_given}="yes",ISNUMBER({batch}),{batch}>=1),REPLICAS_FOR_TTFT({peak_rps},'
         "First_Token_Target_At_The_Percentile,First_Token_Percentile,{batch},{prefill_chunked},{decode_s},"
         '{replica_rps_chunked},1,Arrival_Burstiness)+Spare_Replicas,"no target")', "count",
         "REPLICAS_FOR_TTFT: batch servers a replica (Erlang C, Allen-Cunneen for bursts), + spares", "int"),
    Line("replicas_needed", "Replicas the peak needs, spares included",
         _fit("MAX({replicas_load},{replicas_ttft_pct})"), "count",
         "The load's count, or more where the percentile first-token target needs them (MAX skips no target)",
         "int"),
    Line("replicas_planned", "Replicas planned",
         "=IF(Replicas_Deployed>0,Replicas_Deployed,{replicas_needed})", "count",
         "Replicas deployed, when given; else the replicas the peak needs", "int"),
    Line("gpus_peak", "GPUs in the fleet", _fit("{replicas_planned}*{n_gpus}"), "count",
         "Replicas planned x GPUs per replica, spares included", "int"),
    Line("coverage", "Peak covered with the spares down",
         _fit("PEAK_COVERAGE({peak_rps},{replica_rps_chunked},{replicas_planned},Spare_Replicas)"), "ratio",
         "(replicas - spares) x requests per replica / peak requests/s; below 1 the peak is not served", "dec2"),
    Line("queue_load", "Slots busy at the peak, the planned fleet",
         _fit("{peak_rps}/{replicas_planned}*SLOT_S({batch},{prefill_chunked},{decode_s},{replica_rps_chunked})"
              "/{batch}"), "fraction",
         "Peak requests per replica x SLOT_S / batch: at 1 or above the queue grows without bound", "pct1"),
    Line("queue_state", "The queue where it has no steady state",
         f'=IF(COUNTIF({{queue_load}},">=1")=1,"{OVERLOADED}","{NO_FIT}")', "text",
         "What the percentiles read when none is computed", "text"),
    Line("ttft_p50", "First token at the peak, P50, the planned fleet",
         '=IF(AND(ISNUMBER({queue_load}),{queue_load}<1),TTFT_AT_LOAD_S({peak_rps},{replicas_planned},{batch},'
         "{prefill_chunked},{decode_s},{replica_rps_chunked},Low_First_Token_Percentile_Shown,1,"
         "Arrival_Burstiness),{queue_state})",
         "s", "TTFT_AT_LOAD_S: the wait for a slot (Erlang C; bursts: Allen-Cunneen) plus the prefill", "dec2"),
    Line("ttft_p90", "First token at the peak, P90, the planned fleet",
         '=IF(AND(ISNUMBER({queue_load}),{queue_load}<1),TTFT_AT_LOAD_S({peak_rps},{replicas_planned},{batch},'
         "{prefill_chunked},{decode_s},{replica_rps_chunked},Middle_First_Token_Percentile_Shown,1,"
         "Arrival_Burstiness),{queue_state})",
         "s", "As above, at the middle percentile shown (Inputs)", "dec2"),
    Line("ttft_p99", "First token at the peak, P99, the planned fleet",
         '=IF(AND(ISNUMBER({queue_load}),{queue_load}<1),TTFT_AT_LOAD_S({peak_rps},{replicas_planned},{batch},'
         "{prefill_chunked},{decode_s},{replica_rps_chunked},High_First_Token_Percentile_Shown,1,"
         "Arrival_Burstiness),{queue_state})",
         "s", "As above, at the high percentile shown (Inputs)", "dec2"),
    Line("fleet_util", "Average utilisation of the fleet",
         _fit("FLEET_UTILISATION(Requests_Per_Day,{replica_rps_chunked},{replicas_planned})"), "fraction",
         "Average requests/s / what the fleet could serve: the plan's own figure for Back-of-the-Envelope's 30%",
         "pct1"),
    Line("replicas_growth", "Replicas the grown peak needs, spares included",
         _fit("FLEET_REPLICAS({peak_rps}*Traffic_Growth_Multiple,{replica_rps_chunked},Spare_Replicas,"
              "Minimum_Replicas)"), "count",
         '="As for the peak, at "&Traffic_Growth_Multiple&"x the peak: the growth multiple (Back-of-the-Envelope §6)"',
         "int"),
    Line("gpus_growth", "GPUs for the grown peak", _fit("{replicas_growth}*{n_gpus}"), "count",
         '="Replicas x GPUs per replica, at "&Traffic_Growth_Multiple&"x the peak"', "int"),
    # -- separate prefill and decode GPUs
    Line("prefill_replicas", "Prefill replicas, disaggregated",
         _fit("PREFILL_REPLICAS({peak_rps},{prefill},Spare_Replicas)"), "count",
         "ceil(peak requests/s x prefill time) + spares (DistServe, arXiv:2401.09670)", "int"),
    Line("decode_replicas", "Decode replicas, disaggregated",
         _fit("DECODE_REPLICAS({peak_rps},{decode_tokens},{tps_total},Spare_Replicas)"), "count",
         "ceil(peak requests/s x generated tokens / decode throughput) + spares (Splitwise, arXiv:2311.18677)",
         "int"),
    Line("gpus_disagg", "GPUs, disaggregated", _fit("({prefill_replicas}+{decode_replicas})*{n_gpus}"), "count",
         "(prefill + decode replicas) x GPUs per replica", "int"),
    Line("kv_transfer", "KV cache transfer to the decode GPUs",
         "=KV_TRANSFER_S({kv_bytes},{prompt_mean},Prefill_To_Decode_Link_Bandwidth)", "s",
         "KV per token x prompt tokens / link bandwidth: added to the time to first token when disaggregated", "dec3"),
    # -- input and output priced apart
    Line("prefill_share", "Input's share of the bill",
         _fit("{prefill}*{replica_rps_chunked}"), "fraction",
         "Prefill time / a chunked replica's time per request: prompt/(prompt+output) if compute binds", "pct1"),
    Line("cost_in", "Cost per M input tokens, the fleet around the clock",
         _fit("COST_PER_M_INPUT({gpus_peak},{price},Requests_Per_Day,{prompt_mean},{prefill_share})"),
         "USD/M tokens", "GPUs x price x 24 x input's share / (requests per day x prompt tokens) x 1e6", "usd"),
    Line("cost_out", "Cost per M output tokens, the fleet around the clock",
         _fit("COST_PER_M_OUTPUT({gpus_peak},{price},Requests_Per_Day,{decode_tokens},{prefill_share})"),
         "USD/M tokens", "The rest of the bill over the generated tokens, reasoning included (billed as output)",
         "usd"),
    Line("monthly", "List cost per month of the fleet",
         _fit("{gpus_peak}*{price}*Hours_Per_Month"), "USD",
         "GPUs x price per GPU-hour x hours per month, billed around the clock", "usd0"),
)  # fmt: skip

_COMPARED = {
    "model_overrides",
    "gpu_overrides",
    "described",
    "name_inputs",
    "name_follows",
    "params",
    "active",
    "memory",
    "bandwidth",
    "tflops",
    "price",
    "bytes_weight",
    "bytes_embedding",
    "bytes_kv",
    "experts",
    "experts_per_token",
    "weights",
    "weights_gpu",
    "usable",
    "free",
    "kv_bytes",
    "kv_kib",
    "kv_seq",
    "batch_fit",
    "fits",
    "batch_paged",
    "batch_mem",
    "params_read_mem",
    "speed_floor",
    "speed_for_ttft",
    "batch_latency",
    "batch_ttft",
    "cap_latency",
    "cap_ttft",
    "batch",
    "binding",
    "params_read",
    "tps_user",
    "tps_alone",
    "tps_total",
    "prefill",
    "cost_full",
    "cost_avg",
}
"""Lines repeated for every case on Scenarios: what the table of Back-of-the-Envelope §6 compares and what it depends
on. Replicas and the rest depend on the traffic, not on what distinguishes the cases: Calculations has them for the
active one."""
CASE_LINES = tuple(replace(line, compare=line.key in _COMPARED) for line in CASE_LINES)

# Calculations' sections, by the first line of each.
CALC_SECTIONS = {
    "model_overrides": "Model and accelerator",
    "weights": "Memory",
    "params_read_mem": "Speed and the latency targets",
    "cost_full": "Cost as Back-of-the-Envelope counts it (output tokens, one replica)",
    "replicas_decode": "Capacity for the traffic",
    "prefill_replicas": "Separate prefill and decode GPUs",
    "prefill_share": "Input and output tokens priced apart",
}

GLOBAL_LINES: tuple[Line, ...] = (
    Line("speed_given", "Decode-speed target given?",
         '=IF(AND(ISNUMBER(Latency_Target),Latency_Target>0),"yes","no")', "text",
         "Empty on Inputs: no speed target applies, and memory (or the other target) sets the batch", "text"),
    Line("ttft_given", "Time-to-first-token target given?",
         '=IF(AND(ISNUMBER(Time_To_First_Token_Target),Time_To_First_Token_Target>0),"yes","no")', "text",
         "Empty on Inputs: no first-token target applies", "text"),
    Line("pct_given", "Percentile first-token target given?",
         '=IF(AND(ISNUMBER(First_Token_Target_At_The_Percentile),First_Token_Target_At_The_Percentile>0),"yes","no")',
         "text", "Empty on Inputs: the fleet is sized for its load alone", "text"),
    Line("speed_unset", "The speed target's batch where none is computed",
         f'=IF({{speed_given}}="yes","{NO_FIT}","{NO_TARGET}")', "text",
         f"{NO_FIT}: memory holds no sequence; {NO_TARGET}: none given", "text"),
    Line("ttft_unset", "The first-token target's batch where none is computed",
         f'=IF({{ttft_given}}="yes","{NO_FIT}","{NO_TARGET}")', "text",
         f"{NO_FIT}: memory holds no sequence; {NO_TARGET}: none given", "text"),
    Line("peak_rps", "Peak requests per second", "=PEAK_RPS(Requests_Per_Day,Peak_Hour_Factor)", "requests/s",
         "Requests per day / 86,400 x peak factor (Back-of-the-Envelope §1)", "dec1"),
    Line("decode_tokens", "Tokens generated per request",
         "=Output_Tokens_Per_Request+Hidden_Reasoning_Tokens_Per_Request", "tokens",
         "Visible answer + hidden reasoning: both are decoded, and billed as output (Back-of-the-Envelope §7)",
         "int"),
    Line("pasted", "Prompt lengths pasted", "=COUNT(Measured_Prompt_Lengths)", "count",
         "Numbers on the Prompt lengths sheet: with any, they set the mean, tail and spread", "int"),
    Line("prompt_mean", "Mean prompt used", "=IF({pasted}>0,AVERAGE(Measured_Prompt_Lengths),"
         "Prompt_Tokens_Per_Request)", "tokens", "Mean of the pasted lengths, else the mean on Inputs", "int"),
    Line("prompt_tail", "Tail prompt used", "=IF({pasted}>0,PERCENTILE(Measured_Prompt_Lengths,Tail_Percentile),"
         "Tail_Prompt_Tokens)", "tokens", "Their percentile at Tail percentile, else the 95th percentile on Inputs",
         "int"),
    Line("sd_lognormal", "Spread of a log-normal through mean and tail",
         "=IF(ISNUMBER(LENGTH_SD({prompt_mean},{prompt_tail})),LENGTH_SD({prompt_mean},{prompt_tail}),"
         f'"{NO_FIT_LOGNORMAL}")', "tokens",
         "LENGTH_SD: none where the tail is above 3.87 x the mean (heavier than any log-normal)", "int"),
    Line("sd_typed", "Spread typed, else the log-normal's",
         "=IF(ISNUMBER(Prompt_Length_Spread),Prompt_Length_Spread,{sd_lognormal})", "tokens",
         "Prompt length spread on Inputs when filled in", "int"),
    Line("prompt_sd", "Spread of prompt lengths used", "=IF({pasted}>0,STDEVP(Measured_Prompt_Lengths),{sd_typed})",
         "tokens", "Standard deviation of the pasted lengths, else the line above: feeds PAGED_BATCH", "int"),
    Line("spread_basis", "What the spread of prompt lengths rests on",
         f'=INDEX({{"{SPREAD_BASIS[0]}","{SPREAD_BASIS[1]}","{SPREAD_BASIS[2]}","{SPREAD_BASIS[3]}"}},'
         "1+({pasted}=0)*(1+NOT(ISNUMBER(Prompt_Length_Spread))*(1+NOT(ISNUMBER({sd_lognormal})))))", "text",
         "Pasted lengths, a typed spread, a log-normal through mean and tail, or none: then every slot at the tail",
         "text", bad=(SPREAD_BASIS[3],)),
    Line("peak_prompt", "Peak prompt tokens per second",
         "=PEAK_TOKS(Requests_Per_Day,{prompt_mean},Peak_Hour_Factor)", "tokens/s",
         "Peak requests/s x mean prompt tokens (Back-of-the-Envelope §1)", "int"),
    Line("peak_output", "Peak output tokens per second",
         "=PEAK_TOKS(Requests_Per_Day,{decode_tokens},Peak_Hour_Factor)", "tokens/s",
         "Peak requests/s x generated tokens, reasoning included (Back-of-the-Envelope §1)", "int"),
    Line("growth_output", "Grown peak output tokens per second", "={peak_output}*Traffic_Growth_Multiple",
         "tokens/s",
         '="Peak output tokens/s x the growth multiple, "&Traffic_Growth_Multiple&"x (Back-of-the-Envelope §6)"',
         "int"),
    Line("context", "Tokens per sequence, mean prompt",
         "=CONTEXT_TOKENS({prompt_mean},Output_Tokens_Per_Request,Hidden_Reasoning_Tokens_Per_Request)",
         "tokens", "Prompt + reasoning + output: the KV cache an average sequence reads (Back-of-the-Envelope §3)",
         "int"),
    Line("tail_context", "Tokens per sequence, tail prompt",
         "=CONTEXT_TOKENS({prompt_tail},Output_Tokens_Per_Request,Hidden_Reasoning_Tokens_Per_Request)",
         "tokens", "Tail prompt + reasoning + output: what a slot is sized for (Back-of-the-Envelope §7)", "int"),
    Line("longest_request", "Tokens per sequence, longest prompt accepted",
         "=CONTEXT_TOKENS(Longest_Prompt_Accepted,Output_Tokens_Per_Request,Hidden_Reasoning_Tokens_Per_Request)",
         "tokens", "Longest prompt + reasoning + output: must fit alone (Back-of-the-Envelope §1)", "int"),
    Line("tail_share_lognormal", "Share above the cap, log-normal",
         "=IF(ISNUMBER(TAIL_SHARE(Longest_Prompt_Accepted,{prompt_mean},{prompt_tail})),"
         "TAIL_SHARE(Longest_Prompt_Accepted,{prompt_mean},{prompt_tail}),"
         f'"{NO_FIT_LOGNORMAL}: paste lengths")', "fraction",
         "TAIL_SHARE: the log-normal through the mean and tail (at most 3.87 x the mean)", "pct1"),
    Line("tail_share", "Share of requests the longest prompt rejects",
         "=IF({pasted}>0,TAIL_SHARE_DATA(Measured_Prompt_Lengths,Longest_Prompt_Accepted),{tail_share_lognormal})",
         "fraction", "Pasted lengths above the cap / all (TAIL_SHARE_DATA); else the log-normal's", "pct1"),
    Line("prefill_tokens", "Prompt tokens to prefill, mean prompt",
         "=PREFILL_TOKENS({prompt_mean},Shared_Prefix_Tokens,Prefix_Cache_Hit_Rate)", "tokens",
         "Prompt - hit rate x shared prefix: a cached prefix is not read again (vLLM prefix caching)", "int"),
    Line("prefill_tokens_tail", "Prompt tokens to prefill, tail prompt",
         "=PREFILL_TOKENS({prompt_tail},Shared_Prefix_Tokens,Prefix_Cache_Hit_Rate)", "tokens",
         "The same for the tail prompt: the one the time-to-first-token target must meet", "int"),
)  # fmt: skip

# The Calibration sheet: the active scenario at three sets of efficiencies, in columns C, D and E. Each line is one
# template rendered per column with that column's {eff_bw}, {eff_pf} and {peak}; the rest are Calculations' lines.
CALIBRATION_COLUMNS = ("Assumed (Inputs)", "Calibrated", "Measured (yours)")
"""The plan's efficiencies as Inputs assume them (as shipped, the assumptions of Back-of-the-Envelope: the full
bandwidth, a ceiling, and half the BF16 peak for prefill, which is not one for 8-bit weights), the calibrated ones
and yours."""
CALIBRATION_LINES: tuple[Line, ...] = (
    Line("cal_tps_user", "Decode speed per user",
         _fit("DECODE_TOKS({params_read},{bytes_weight},GPUs_Per_Replica,{bandwidth},{batch},{kv_bytes},{context},"
              "{eff_bw})"), "tokens/s", "DECODE_TOKS at the planned batch (Back-of-the-Envelope §4)", "dec1"),
    Line("cal_tps_total", "Decode throughput of a replica",
         _fit("DECODE_TOKS_TOTAL({params_read},{bytes_weight},GPUs_Per_Replica,{bandwidth},{batch},{kv_bytes},"
              "{context},{eff_bw})"), "tokens/s", "Batch x decode speed per user", "int"),
    Line("cal_prefill", "Prefill time of a mean prompt",
         _fit("PREFILL_S({active},{prefill_tokens},GPUs_Per_Replica,{peak},{eff_pf})"), "s",
         "2N x prompt tokens / (GPUs x the column's peak x utilisation) (Back-of-the-Envelope §5)", "dec2"),
    Line("cal_cost_full", "List cost per M output tokens at full load",
         _fit("COST_PER_M_TOKENS(GPUs_Per_Replica,{price},{cal_tps_total})"), "USD/M tokens",
         "GPUs x price / (decode throughput x 3,600) x 1e6 (Back-of-the-Envelope §6)", "usd"),
    Line("cal_cost_avg", "Effective cost per M output tokens at average load",
         _fit("COST_PER_M_TOKENS(GPUs_Per_Replica,{price},{cal_tps_total},Average_Utilisation)"),
         "USD/M tokens", "The method of Back-of-the-Envelope §6: full-load cost / average utilisation, decode only",
         "usd"),
    Line("cal_rps", "Requests per replica, chunked prefill",
         _fit("REPLICA_RPS_CHUNKED({cal_prefill},{prefill_tokens},{decode_tokens},{cal_tps_total})"), "requests/s",
         "REPLICA_RPS_CHUNKED, as Calculations plans it", "dec2"),
    Line("cal_replicas", "Replicas the peak needs, spares included",
         _fit("FLEET_REPLICAS({peak_rps},{cal_rps},Spare_Replicas,Minimum_Replicas)"), "count",
         "FLEET_REPLICAS: the plan's count, at this column's efficiencies", "int"),
    Line("cal_gpus", "GPUs the peak needs, spares included", _fit("{cal_replicas}*GPUs_Per_Replica"), "count",
         "Replicas x GPUs per replica", "int"),
    Line("cal_monthly", "List cost per month of the fleet", _fit("{cal_gpus}*{price}*Hours_Per_Month"),
         "USD", "GPUs x price per GPU-hour x hours per month, as for the plan", "usd0"),
    Line("cal_share", "Input's share of the bill", _fit("{cal_prefill}*{cal_rps}"), "fraction",
         "Prefill time x requests per replica: the prefill's share of GPU time", "pct1"),
    Line("cal_cost_in", "Cost per M input tokens, the fleet around the clock",
         _fit("COST_PER_M_INPUT({cal_gpus},{price},Requests_Per_Day,{prompt_mean},{cal_share})"),
         "USD/M tokens", "COST_PER_M_INPUT of this column's fleet, as Calculations prices the plan", "usd"),
    Line("cal_cost_out", "Cost per M output tokens, the fleet around the clock",
         _fit("COST_PER_M_OUTPUT({cal_gpus},{price},Requests_Per_Day,{decode_tokens},{cal_share})"),
         "USD/M tokens", "COST_PER_M_OUTPUT: the rest of the bill over the generated tokens", "usd"),
    Line("cal_serve_toks", "Output tokens/s of a replica, roofline",
         _fit("SERVE_TOKS({params_read},{bytes_weight},{kv_bytes},{prefill_tokens},{decode_tokens},GPUs_Per_Replica,"
              "{memory},{bandwidth},{peak},{batch},{eff_bw},{eff_pf},Usable_Memory_Fraction)"), "tokens/s",
         "SERVE_TOKS: prefill, then steps the longer of memory and arithmetic time (roofline)", "int"),
    Line("cal_serve_replicas", "Replicas for the peak, roofline, output tokens",
         _fit("MAX(REPLICAS({peak_output},{cal_serve_toks},Spare_Replicas),Minimum_Replicas)"), "count",
         "ceil(peak output tokens/s / roofline throughput) + spares: prefill not overlapped", "int"),
)  # fmt: skip

SHOWN_INPUTS = ("scenario_name",)
"""Case inputs repeated at the top of Scenarios so a printout says which case is which; the other inputs (the
overrides) are read from Inputs by the formulas directly."""

CHART_POINTS = 8
"""Rows of the tokens/s-per-user-against-batch table."""

PROMPT_SAMPLE_ROWS = 1000
"""Rows of the Prompt lengths sheet: a sample of a thousand prompts resolves a rejected share to 0.1%."""

USUAL: tuple[tuple[str, str, str, Any], ...] = (
    ("params_override", "Parameters", "B params", domains.ParamsB),
    ("active_override", "Active parameters", "B params", domains.ParamsB),
    ("memory_override", "Memory per GPU", "GB", domains.MemoryGB),
    ("bandwidth_override", "Memory bandwidth", "TB/s", domains.BandwidthTBs),
    ("tflops_override", "Dense BF16 compute", "TFLOP/s", domains.TFLOPs),
    ("gpu_prices", "Price per GPU-hour", "USD/GPU-h", domains.Price),
    ("Prefill_To_Decode_Link_Bandwidth", "Prefill-to-decode link", "GB/s", domains.LinkGBs),
    ("Tensor_Parallel_Link_Bandwidth", "Tensor-parallel link", "GB/s", domains.LinkGBsOrZero),
)
"""Inputs whose argument domain has a usual range (xlsxplan.domains): a value outside it gets a Checks row."""


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
    return validation_for(spec.domain, spec.label, _CATALOGS if spec.domain is _OVERRIDE else "")


def _inputs(book: Book, lists: dict[str, str]) -> Sheet:
    sh = book.sheet(
        "Inputs",
        f"Every assumption, once. Orange cells are inputs; shipped values are examples ({ENVELOPE}): replace "
        "them, and their Source and As-of date.",
        ["Label", "Value", "Unit", "Source", "As-of date", "Comment"],
    )
    sh.section("Scenario", "Type each case in G to J; column B shows the active case, which feeds the plan")
    sh.case_headings("Scenario block: one column per case", "Active")
    selector_row = sh.row
    name_row = selector_row + 2  # the Scenario name row, written below
    dv = DataValidation(type="list", formula1=f"$G${name_row}:$J${name_row}", allow_blank=False)
    dv.error, dv.showErrorMessage = "Pick one of the scenario names in G to J", True
    sh.input(
        "Active scenario",
        CASES[ACTIVE_CASE - 1],
        "name",
        "Choose from the list",
        "Dropdown of the case names",
        "text",
        dv,
    )
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
        sh.case_input(
            spec.label,
            spec.values,
            spec.unit,
            spec.source,
            spec.comment,
            spec.fmt,
            _validation(book, spec, lists),
            selector="Scenario_Number",
            live_fmt=spec.live_fmt,
            key=spec.key,
        )
        if spec.key == "scenario_name":
            assert sh.row - 1 == name_row  # noqa: S101 - layout invariant
    book.scenario_name = "Scenario_Name"

    tokens, tokens0, frac = domain_of(domains.Tokens), domain_of(domains.TokensOrZero), domain_of(domains.Fraction)
    sh.section("Demand", "Traffic in requests and tokens (Back-of-the-Envelope §1, §7)")
    sh.input(
        "Requests per day",
        200_000,
        "requests/day",
        f"{ENVELOPE} §1 (example)",
        "The support assistant",
        "int",
        validation_for(domain_of(domains.PerDay), "Requests per day"),
    )
    sh.input(
        "Prompt tokens per request, mean",
        2_000,
        "tokens",
        f"{ENVELOPE} §1 (example)",
        "Instructions, retrieved documents and the conversation",
        "int",
        validation_for(tokens, "Prompt tokens per request"),
    )
    sh.input(
        "Tail prompt tokens, 95th percentile",
        2_000,
        "tokens",
        f"{ENVELOPE} §7 (example: no spread)",
        "Slots are sized at the tail; the mean: no spread",
        "int",
        validation_for(tokens, "Tail prompt tokens"),
    )
    sh.input(
        "Prompt length spread (standard deviation)",
        None,
        "tokens",
        "Example: empty, the log-normal's",
        "Empty: a log-normal's through mean and tail",
        "int",
        validation_for(tokens0, "Prompt length spread", "leave it empty for a log-normal's"),
    )
    sh.input(
        "Tail percentile, pasted lengths",
        0.95,
        "fraction",
        f"{ENVELOPE} §7 (convention: 95th)",
        "Pasted lengths' tail; the typed one is the 95th",
        "pct",
        validation_for(domains.Domain("number", 0.5, 1), "Tail percentile"),
    )
    sh.input(
        "Longest prompt accepted",
        32_768,
        "tokens",
        "Example: your product's cap",
        "Longer requests are refused (Back-of-the-Envelope §1)",
        "int",
        validation_for(tokens, "Longest prompt accepted"),
    )
    sh.input(
        "Output tokens per request",
        300,
        "tokens",
        f"{ENVELOPE} §1 (example)",
        "Visible answer; measure on real traffic (§7)",
        "int",
        validation_for(tokens, "Output tokens per request"),
    )
    sh.input(
        "Hidden reasoning tokens per request",
        0,
        "tokens",
        f"{ENVELOPE} §7 (example: none)",
        "Written before the answer; decoded, billed as output",
        "int",
        validation_for(tokens0, "Hidden reasoning tokens per request"),
    )
    sh.input(
        "Peak-hour factor",
        3,
        "ratio",
        f"{ENVELOPE} §1 (example)",
        "How much busier the peak hour is than the day's average",
        "dec1",
        validation_for(domain_of(domains.PeakFactor), "Peak-hour factor"),
    )
    sh.input(
        "Shared prefix tokens",
        0,
        "tokens",
        f"{ENVELOPE} §7 (example: none)",
        "System prompt and tools every request starts with",
        "int",
        validation_for(tokens0, "Shared prefix tokens"),
    )
    sh.input(
        "Prefix cache hit rate",
        0,
        "fraction",
        f"{ENVELOPE} §7 (example: off)",
        "0 until the prefix is confirmed stable (§7)",
        "pct",
        validation_for(domain_of(domains.FractionOrZero), "Prefix cache hit rate"),
    )

    sh.section("Serving assumptions", "Shares of the hardware's peaks the plan counts on, targets, spares")
    sh.input(
        "Usable memory fraction",
        0.9,
        "fraction",
        f"{ENVELOPE} §2 (example)",
        "Left after the serving framework's own overhead",
        "pct",
        validation_for(frac, "Usable memory fraction"),
    )
    sh.input(
        "Decode bandwidth efficiency",
        1,
        "fraction",
        f"{ENVELOPE} §4 (example)",
        "1 is the ceiling; see Calibration for measured ones",
        "pct",
        validation_for(frac, "Decode bandwidth efficiency"),
    )
    sh.input(
        "Prefill compute utilisation",
        0.5,
        "fraction",
        f"{ENVELOPE} §5 (example)",
        "Share of the dense BF16 peak, as the source counts",
        "pct",
        validation_for(frac, "Prefill compute utilisation"),
    )
    emb = DataValidation(type="list", formula1=f'"{EMBEDDING_AS_WEIGHTS},{EMBEDDING_AS_PUBLISHED}"')
    emb.showErrorMessage = False  # a format name (bf16, q4_k_m, ...) is allowed too: BYTES_PER_PARAM reads it
    sh.input(
        "Embedding precision",
        EMBEDDING_AS_WEIGHTS,
        "format",
        f"{ENVELOPE} §2 (example: N x b)",
        "Or as published (16-bit), or a format name",
        "text",
        emb,
    )
    sh.input(
        "KV cache overflow accepted",
        0.05,
        "fraction",
        "Example: a paging engine (vLLM)",
        "Chance a paged batch outgrows memory (preemption)",
        "pct",
        validation_for(domain_of(domains.TailProbability), "KV cache overflow accepted"),
    )
    sh.input(
        "Latency target, per user",
        None,
        "tokens/s",
        "Example: empty, no target; your product's",
        f"Slowest decode per user; 80 in {ENVELOPE} §7",
        "dec1",
        validation_for(domain_of(domains.TokensPerS), "Latency target", "leave it empty for no speed target"),
    )
    sh.input(
        "Time-to-first-token target",
        None,
        "s",
        "Example: empty, no target; your product's",
        "Longest wait for the first token of a tail prompt",
        "dec2",
        validation_for(
            domain_of(domains.Seconds), "Time-to-first-token target", "leave it empty for no first-token target"
        ),
    )
    sh.input(
        "First-token percentile",
        0.99,
        "fraction",
        "Example: P99, a common objective",
        "Share of requests the target below must hold for",
        "pct",
        validation_for(domain_of(domains.Percentile), "First-token percentile"),
    )
    sh.input(
        "First-token target at the percentile",
        None,
        "s",
        "Example: empty, no target; e.g. 2 s at P99",
        "Replicas are added until the peak's queue meets it",
        "dec2",
        validation_for(
            domain_of(domains.Seconds),
            "First-token target at the percentile",
            "leave it empty for no percentile target",
        ),
    )
    sh.input(
        "Arrival burstiness (CV between requests)",
        1,
        "ratio",
        "Example: 1, Poisson arrivals",
        "Above 1: bursts lengthen the wait (Allen-Cunneen)",
        "dec2",
        validation_for(domain_of(domains.CoefficientOfVariation), "Arrival burstiness"),
    )
    sh.input(
        "Draft tokens per step",
        None,
        "count",
        "Example: empty, no speculative decoding",
        "Gamma: tokens a draft model or MTP head proposes",
        "int",
        validation_for(domain_of(domains.Count), "Draft tokens per step", "leave it empty for no speculative decoding"),
    )
    sh.input(
        "Draft acceptance rate",
        0.8,
        "fraction",
        "Example: Leviathan et al. 2023 (alpha)",
        "Chance a drafted token is accepted; measure yours",
        "pct",
        validation_for(domain_of(domains.FractionOrZero), "Draft acceptance rate"),
    )
    sh.input(
        "Draft model parameters",
        1,
        "B params",
        "Example: a 1B draft (Leviathan et al.)",
        "Read once per draft step, in BF16",
        "dec2",
        validation_for(domain_of(domains.ParamsB), "Draft model parameters"),
    )
    sh.input(
        "Engine memory fraction",
        0.9,
        "fraction",
        "Example: vLLM gpu_memory_utilization",
        "SGLang's mem_fraction_static is about 0.8 to 0.93",
        "pct",
        validation_for(frac, "Engine memory fraction"),
    )
    sh.input(
        "Engine activation and graph reserve",
        0,
        "GB",
        "Example: none; the engine logs it",
        "Per GPU; a logged vLLM start-up shows 2.85 GiB",
        "dec2",
        validation_for(domain_of(domains.MemoryGBOrZero), "Engine activation and graph reserve"),
    )
    sh.input(
        "Engine KV block size",
        16,
        "tokens",
        "Example: vLLM's default block",
        "A sequence's cache is rounded up to whole blocks",
        "int",
        validation_for(domain_of(domains.Count), "Engine KV block size"),
    )
    for word, value in (("Low", 0.5), ("Middle", 0.9), ("High", 0.99)):
        sh.input(
            f"{word} first-token percentile shown",
            value,
            "fraction",
            "Convention: P50, P90 and P99",
            "Calculations shows the first token at the peak there",
            "pct",
            validation_for(domain_of(domains.Percentile), f"{word} first-token percentile shown"),
        )
    sh.input(
        "Spare replicas",
        1,
        "count",
        f"{ENVELOPE} §6 (example)",
        "On top of the peak: one failure leaves it covered",
        "int",
        validation_for(domain_of(domains.Spare), "Spare replicas"),
    )
    sh.input(
        "Minimum replicas",
        2,
        "count",
        f"{ENVELOPE} §6 (example)",
        "§6: run at least two replicas in production",
        "int",
        validation_for(domain_of(domains.Count), "Minimum replicas"),
    )
    sh.input(
        "Replicas deployed",
        None,
        "count",
        "Example: empty, the plan's count",
        "Fill in to test a fleet you have against the peak",
        "int",
        validation_for(domain_of(domains.Count), "Replicas deployed", "leave it empty for the plan's count"),
    )
    sh.input(
        "Prefill-to-decode link bandwidth",
        50,
        "GB/s",
        "Example: 400 Gb/s InfiniBand",
        "KV caches move between the pools; NVLink about 450",
        "int",
        validation_for(domain_of(domains.LinkGBs), "Prefill-to-decode link bandwidth"),
    )
    sh.input(
        "Tensor-parallel link bandwidth",
        450,
        "GB/s",
        "Example: H100 NVLink, 900 GB/s both ways",
        "Within a replica, each way; 0 leaves it out",
        "int",
        validation_for(domain_of(domains.LinkGBsOrZero), "Tensor-parallel link bandwidth"),
    )
    sh.input(
        "Traffic growth multiple",
        10,
        "ratio",
        f"{ENVELOPE} §6 (example)",
        "The source sizes ten times the traffic",
        "dec1",
        validation_for(domain_of(domains.PeakFactor), "Traffic growth multiple"),
    )

    sh.section("Cost and basis of estimate", "Estimate, not a quote: check your provider's current price")
    sh.input(
        "Average utilisation",
        0.3,
        "fraction",
        f"{ENVELOPE} §6 (example)",
        "Average load over full load; 30% is common (§6)",
        "pct",
        validation_for(frac, "Average utilisation"),
    )
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
    sh.input(
        "Price date",
        TEMPLATE_DATE,
        "date",
        "Example: when the price was checked",
        "Prices change; restate the date with the price",
        "date",
        date_dv,
    )
    sh.input("Region", "Any (example)", "text", "Example", "Where the GPUs run; prices differ by region", "text")
    basis = DataValidation(type="list", formula1='"On-demand,Committed 1 year,Committed 3 years,Spot"')
    sh.input(
        "Pricing basis", "On-demand", "text", "Example", "On-demand, committed (1 or 3 years) or spot", "text", basis
    )
    sh.input("Billing currency", "USD", "ISO 4217", "Example", "Every cost line is in this currency", "text")
    for i, gpu in enumerate(OPTIONS_ACCELERATORS, start=1):
        dv = DataValidation(type="list", formula1=lists["gpu"], allow_blank=True)
        dv.error, dv.showErrorMessage = "Pick an accelerator of the catalog (Lists), or leave it empty", True
        sh.input(
            f"Options accelerator {i}",
            gpu,
            "name",
            "Example: the source's H100, then H200, B200",
            "Options searches these, at their prices on Lists",
            "text",
            dv,
        )

    range_inputs(book, sh)
    sh.section("Your measurements (optional)", "The active scenario's setup, measured: see the Calibration sheet")
    speed = domain_of(domains.TokensPerS)
    sh.input(
        "Measured decode speed at batch 1",
        None,
        "tokens/s",
        "Example: empty, not measured",
        "One request alone, on the active case's setup",
        "dec1",
        validation_for(speed, "Measured decode speed at batch 1", _NOT_MEASURED),
    )
    sh.input(
        "Measured time to first token",
        None,
        "s",
        "Example: empty, not measured",
        "At batch 1, same setup",
        "dec3",
        validation_for(domain_of(domains.Seconds), "Measured time to first token", _NOT_MEASURED),
    )
    sh.input(
        "Prompt tokens in the measurement",
        2_000,
        "tokens",
        "Example: the mean prompt",
        "The prompt measured; its KV cache is read each step",
        "int",
        validation_for(tokens, "Prompt tokens in the measurement"),
    )
    timeline.inputs(book, sh)
    finance.inputs(book, sh)
    sh.finish()
    return sh


def _prompt_lengths(book: Book) -> Sheet:
    """A column of input cells for measured prompt lengths; empty ones are skipped."""
    sh = book.sheet(
        "Prompt lengths",
        "Optional: paste measured prompt lengths (tokens, one per cell) into column B. With any here, the plan's "
        "mean, tail and spread of prompt lengths come from them, and the share a cap rejects (TAIL_SHARE_DATA).",
        ["Sample", "Tokens", "Unit", "Source", "As-of date", "Comment"],
    )
    ws = sh.ws
    first, last = HEADER_ROWS + 1, HEADER_ROWS + PROMPT_SAMPLE_ROWS
    dv = validation_for(domain_of(domains.Tokens), "Measured prompt length")
    assert dv is not None  # noqa: S101 - Tokens is a number domain
    add_validation(ws, dv, f"B{first}:B{last}")
    for r in range(first, last + 1):
        cell = ws[f"B{r}"]
        cell.style = "Input"
        cell.number_format = FMT["int"]
    put_text(ws[f"A{first}"], "Measured prompt lengths", "Label")
    put_text(ws[f"C{first}"], "tokens", "Unit")
    register = register_cells(
        ws,
        first,
        "Example: none shipped; your traffic logs",
        TEMPLATE_DATE,
        f"One per cell, B{first} to B{last}; empty cells skipped",
    )
    name = "Measured_Prompt_Lengths"
    book.define(name, sh.name, f"$B${first}:$B${last}")
    book.refs[name] = Ref(sh.name, first, "B", None)
    book.input_names[name] = name
    cells = tuple(f"B{r}" for r in range(first, last + 1))
    book.inputs.append(InputRow(sh.name, first, "Measured prompt lengths", name, "tokens", cells, register=register))
    ws.freeze_panes = f"B{first}"
    # only the header and the first row print: a pasted sample is data, its summary is on Calculations
    sh.row = first + 1
    sh.finish(last_row=first)
    return sh


def _calculations(book: Book) -> Sheet:
    sh = book.sheet(
        "Calculations",
        f'The active scenario, line by line, after "{ENVELOPE_TITLE}" (and "{COMPUTE_MEMORY_TITLE}" for the '
        "weights). Every cell is a formula: click one to read it. Inputs appear by name.",
        ["Line item", "Value", "Unit", "Equation and source", "", ""],
    )
    sh.section("Demand")
    for line in GLOBAL_LINES:
        sh.line(line)
    live: dict[str, Ref | str] = {spec.key: book.input_names[spec.key] for spec in CASE_INPUTS}
    for line in CASE_LINES:
        if line.key in CALC_SECTIONS:
            sh.section(CALC_SECTIONS[line.key], "The active scenario" if line.key == "model_overrides" else "")
        sh.line(line, live)

    ws = sh.ws
    # beside the batch, what set it: a target that binds says so where it moved the figure
    batch = book.ref("batch")
    ws[f"D{batch.row}"] = book.render(
        '="Set by "&{binding}&"; the smallest of the three, at least 1 if one fits"', sh.name
    )
    ws.row_breaks.append(Break(id=sh.row))  # the chart data starts a printed page of its own
    sh.section("Decode speed against batch (the chart on Outputs)", "Evenly spaced batches up to the one memory allows")
    headings = {
        "A": "Chart data",
        "B": "Batch",
        "C": "Tokens/s",
        "D": "Equation and source",
        "E": "Line: batch",
        "F": "Latency target line: tokens/s per user",
    }
    for col, text in headings.items():
        put_text(ws[f"{col}{sh.row}"], text, "Column Heading")
        if col in "BCE":  # over figures, right-aligned as they are
            ws[f"{col}{sh.row}"].alignment = Alignment(horizontal="right", vertical="center")
        elif col in "DF":
            ws[f"{col}{sh.row}"].alignment = Alignment(horizontal="left", indent=1, vertical="center")
    head = sh.row
    first, last = head + 1, head + CHART_POINTS
    for r in range(first, last + 1):
        # point k of n: ROWS over the labels in column A, which hold no formulas
        put_text(ws[f"A{r}"], f"Point {r - head}", "Label")
        put_text(ws[f"D{r}"], "DECODE_TOKS at this batch (Back-of-the-Envelope §4)", "Explanatory Text")
        ws[f"D{r}"].alignment = Alignment(horizontal="left", indent=1)  # clear of the figure before it
        ws[f"B{r}"] = book.render(
            f"=MAX(1,ROUND(ROWS($A${first}:A{r})/ROWS($A${first}:$A${last})*{{batch_mem}},0))", sh.name
        )
        ws[f"C{r}"] = book.render(
            f"=IF(AND(ISNUMBER({{batch_mem}}),{{batch_mem}}>=1),DECODE_TOKS({_read(f'B{r}')},{{bytes_weight}},"
            f'GPUs_Per_Replica,{{bandwidth}},B{r},{{kv_bytes}},{{context}},Decode_Bandwidth_Efficiency),"{NO_FIT}")',
            sh.name,
        )
        for col, fmt in (("B", "int"), ("C", "dec1")):
            ws[f"{col}{r}"].style = "Formula"
            ws[f"{col}{r}"].number_format = FMT[fmt]
    # the latency target as a flat line from the first batch to the last
    for r, batch_cell in ((first, f"B{first}"), (first + 1, f"B{last}")):
        ws[f"E{r}"], ws[f"F{r}"] = f"={batch_cell}", "=Latency_Target"
        ws[f"E{r}"].style, ws[f"F{r}"].style = "Formula", "Link"
        ws[f"E{r}"].number_format, ws[f"F{r}"].number_format = FMT["int"], FMT["dec1"]
        ws[f"F{r}"].alignment = Alignment(horizontal="left", indent=1)
    book.chart_rows = (first, last)
    sh.row = last + 1
    sh.text(
        "Point k of n: batch = round(k / n x the batch memory allows), at least 1, k and n counted by ROWS; "
        "the speed is DECODE_TOKS at that batch; the target runs flat from the first batch to the "
        "last."
    )
    sh.finish()
    return sh


def _scenarios(book: Book) -> Sheet:
    sh = book.sheet(
        "Scenarios",
        f'The four configurations of "{ENVELOPE_TITLE}" (§6) side by side, computed with the same chain as '
        "Calculations. Its own figures are overrides on Inputs where the catalog differs: Qwen2.5-7B at 7.6B "
        "parameters (catalog 7.61B) and the H100 at 989 TFLOP/s (catalog 989.4).",
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
    sections = {
        "model_overrides": "Model and accelerator figures",
        "weights": "Memory",
        "params_read_mem": "Speed",
        "cost_full": "Cost",
    }
    case_keys = {spec.key for spec in CASE_INPUTS}
    global_keys = {line.key for line in GLOBAL_LINES}
    for line in CASE_LINES:
        if line.key in sections:
            sh.section(sections[line.key])
        if line.compare:
            # a compared line may use only compared lines, the case's inputs and the global lines: anything else
            # would silently read the active scenario's figure
            used = set(re.findall(r"\{(\w+)\}", line.formula)) - case_keys - global_keys - set(book.texts)
            stray = used - {x.key for x in CASE_LINES if x.compare}
            if stray:
                raise ValueError(f"Scenarios line {line.key} uses lines computed for the active case only: {stray}")
            book.refs[f"Scenarios:{line.key}"] = sh.side_by_side(line, locals_)
    sh.skip()
    sh.text(
        "Replicas, GPUs and the cost of the fleet for the traffic: Calculations and Outputs, for the active scenario."
    )
    sh.finish()
    return sh


# The Options sheet: PLAN_OPTIONS's table, a column each, with its heading, width and format.
OPTION_COLUMNS: tuple[tuple[str, str, int, str], ...] = (
    ("rank", "Rank", 6, "int"),
    ("gpu", "Accelerator", 12, "text"),
    ("gpus_per_replica", "GPUs a replica", 8, "int"),
    ("weights", "Weights", 8, "text"),
    ("kv", "KV cache", 8, "text"),
    ("serving", "Serving", 13, "text"),
    ("batch", "Batch", 7, "int"),
    ("binding", "Batch set by", 16, "text"),
    ("tokens_per_s_per_user", "Tokens/s a user", 9, "dec1"),
    ("ttft_s", "First token, s", 8, "dec2"),
    ("replicas", "Replicas", 8, "int"),
    ("gpus", "GPUs", 7, "int"),
    ("usd_per_month", "USD a month", 11, "usd0"),
    ("usd_per_m_input", "USD/M input", 9, "usd"),
    ("usd_per_m_output", "USD/M output", 9, "usd"),
    ("feasible", "Feasible", 8, "text"),
    ("frontier", "Frontier", 8, "text"),
    ("reason", "Why rejected", 70, "text"),
    ("other_view_gpus", "GPUs, ideal", 10, "int"),
    ("other_view_usd_per_month", "USD a month, ideal", 12, "usd0"),
    ("other_view_reason", "Why rejected, ideal", 70, "text"),
    ("gpus_p10", "GPUs, P10", 7, "int"),
    ("gpus_p90", "GPUs, P90", 7, "int"),
    # the columns PLAN_OPTIONS adds with a percentile first-token target; "-" without one
    ("ttft_p50_s", "First token P50 at the peak, s", 9, "dec2"),
    ("ttft_p90_s", "First token P90 at the peak, s", 9, "dec2"),
    ("ttft_p99_s", "First token P99 at the peak, s", 9, "dec2"),
    ("replicas_binding", "Replicas set by", 22, "text"),
    # the columns PLAN_OPTIONS adds last where a replica is laid out beyond one server; "-" where none is
    ("layout", "Layout", 17, "text"),
    ("step_s", "Step, s", 8, "dec3"),
    ("comm_s", "Communication, s", 13, "dec3"),
)
PERCENTILE_COLUMNS = ("ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "replicas_binding")
"""The Options columns shown only where a percentile first-token target is given (PLAN_OPTIONS's extra columns)."""
TOPOLOGY_SHOWN = plan_search.TOPOLOGY_COLUMNS
"""The Options columns shown only where the search lays a replica out beyond one server (PLAN_OPTIONS's last
columns: the layout, the calibrated step and the communication in it): after the percentile columns in the table
when those are there, else right after the GPU range."""
OPTIONS_FIRST_ROW = HEADER_ROWS + 1
"""The row of the table's own header (PLAN_OPTIONS's first row); the options follow it."""


def options_per_accelerator() -> int:
    """Options the search plans for one accelerator: weight precisions x KV-cache precisions x GPUs per replica x
    servings, rejected ones included."""
    a = plan_search.Assumptions()
    return len(a.weight_precisions) * len(a.kv_precisions) * len(a.gpus_per_replica) * len(a.servings)


OPTIONS_ACCELERATORS = ("H100-SXM", "H200", "B200")
"""The accelerators the Options sheet searches as shipped, one Inputs row each ("Options accelerator 1" to 3): the
source text's H100 and the two that follow it in NVIDIA's HGX line, each priced from the same price card. Three
inputs, not every accelerator priced on Lists: the table has rows for three (32 options each), so that the sheet
stays the size it prints and recalculates in; a user picks any three priced ones."""


def options_columns() -> dict[str, str]:
    """Each Options table column's letter, by PLAN_OPTIONS's field name (column A holds the active mark)."""
    return {key: get_column_letter(i + 2) for i, (key, _, _, _) in enumerate(OPTION_COLUMNS)}


def options_last_row() -> int:
    """The Options table's last row: its header (PLAN_OPTIONS's field names) and a row per option searched."""
    return OPTIONS_FIRST_ROW + options_per_accelerator() * len(priced_accelerators())


def priced_accelerators() -> list[str]:
    """The accelerators the Options sheet searches as shipped (:data:`OPTIONS_ACCELERATORS`), each priced on Lists
    (the catalog's on-demand price, or the source text's example)."""
    table = catalog.load_prices().ids()
    return [gpu for gpu in OPTIONS_ACCELERATORS if gpu in table or gpu in PRICE_EXAMPLES]


def options_formula(
    row: str = f"ROW()-ROW($A${HEADER_ROWS})", column: str = f"COLUMN()-COLUMN($A${HEADER_ROWS})"
) -> str:
    """PLAN_OPTIONS_AT at a row and column of the table (by default the cell's own, counted from the heading row's
    first cell, text, not a formula), then every input of the search as its specification says the sheet passes
    it."""
    return f"PLAN_OPTIONS_AT({row},{column}," + ",".join(passed_inputs()) + ")"


OPTIONS_FORMULA = options_formula()
"""The search the Options sheet shows (:data:`xlsxplan.plan.inputs.PLAN_INPUTS`' ``sheet``): every accelerator priced
on Lists, for the active scenario's model and the traffic, targets, spares, usable memory and efficiencies on
Inputs; with a percentile first-token target, that target at its percentile (the wait for a slot at the peak
included), else the first-token target of a request that never waits. Memory is the flat usable share, as
Calculations plans it (its engine lines are beside the plan), and a draft is not searched (Calculations shows it
beside the plan too)."""
_SEARCHED = [f"Options_Accelerator_{i}" for i in range(1, len(OPTIONS_ACCELERATORS) + 1)]
_PRICE_OF = "INDEX({{gpu_prices}},MATCH({a},{{gpu_names}},0))"
OPTIONS_GPUS = (
    '=_xlfn.TEXTJOIN(",",TRUE,'
    + ",".join(f'IF(ISNUMBER({_PRICE_OF.format(a=a)}),{a}&"="&{_PRICE_OF.format(a=a)},"")' for a in _SEARCHED)
    + ")"
)
"""The accelerators the Options sheet searches, each with its price on Lists, as PLAN_OPTIONS reads them
(``H100-SXM=2.5,H200=3.99,B200=6``): one that is empty or has no price on Lists is left out."""
OPTIONS_PRICED = "=" + "+".join(f"ISNUMBER({_PRICE_OF.format(a=a)})" for a in _SEARCHED)
"""How many of the accelerators the Options sheet searches have a price on Lists."""


def _options(book: Book) -> Sheet:
    """The Options sheet: every way to serve the active scenario's model on the accelerators chosen on Inputs
    (Options accelerator 1 to 3) at their prices on Lists, ranked by monthly cost (PLAN_OPTIONS's table, a cell each:
    PLAN_OPTIONS_AT(row, column, ...), which plans the table once and remembers it), in rows enough for three
    accelerators, the active scenario's row marked.

    Cell by cell rather than one array formula over the range: a saved array formula's other cells hold their cached
    values, which the headless engine reads as occupied when the file is opened again (#SPILL!); and INDEX over
    PLAN_OPTIONS in each cell would hand the engine the whole table once per cell."""
    n_gpus = len(priced_accelerators())
    sh = book.sheet(
        "Options",
        "Every way to serve the active scenario's model on the accelerators chosen on Inputs: PLAN_OPTIONS, ranked by "
        f"monthly cost at the efficiencies of {ENVELOPE}; each rejected option says why.",
        ["Active scenario", *(heading for _, heading, _, _ in OPTION_COLUMNS)],
    )
    ws = sh.ws
    ws.column_dimensions["A"].width = 16
    g = options_columns()
    cols = list(g.values())
    table_columns(ws, cols, [width for _, _, width, _ in OPTION_COLUMNS])
    first, last = OPTIONS_FIRST_ROW, options_last_row()
    gpus_row = last + 2  # the accelerators searched, below the table
    book.refs["options_gpus"] = Ref(sh.name, gpus_row, "D")
    # the first-token target the search applies, and its percentile, beside the table
    ttft_row = gpus_row + 3
    book.refs["options_ttft"] = Ref(sh.name, ttft_row, "B")
    book.refs["options_percentile"] = Ref(sh.name, ttft_row + 1, "B")
    # whether the search laid a replica out beyond one server, and the percentile columns the table lacks, below
    multi_row, skip_row = ttft_row + 2, ttft_row + 3
    book.refs["options_multi"] = Ref(sh.name, multi_row, "B")
    book.refs["options_skip"] = Ref(sh.name, skip_row, "B")
    search = "=" + book.render(OPTIONS_FORMULA, sh.name)
    given = f'IF({book.ref("pct_given").text(sh.name)}="yes",'
    # a topology column's place in the table: its column on the sheet less the percentile columns the table lacks
    laid = "=" + book.render(
        f'IF({{options_multi}}="yes",{options_formula(column=f"COLUMN()-COLUMN($A${HEADER_ROWS})-{{options_skip}}")},',
        sh.name,
    )
    for r in range(first, last + 1):
        for col, (key, _, _, fmt) in zip(cols, OPTION_COLUMNS):
            cell = ws[f"{col}{r}"]
            if key in PERCENTILE_COLUMNS:  # PLAN_OPTIONS has them only with a percentile target
                cell.value = f'={given}{search[1:]},"{key if r == first else NONE_SHOWN}")'
            elif key in TOPOLOGY_SHOWN:  # and these only where a replica is laid out beyond one server
                cell.value = f'{laid}"{key if r == first else NONE_SHOWN}")'
            else:
                cell.value = search
            cell.style = "Formula" if r > first else "Explanatory Text"
            cell.number_format = FMT[fmt]
            if r == first:  # PLAN_OPTIONS's own field names under the headings: shrunk to their column, never cut
                cell.alignment = Alignment(shrink_to_fit=True)
        if r > first:
            ws[f"A{r}"] = (
                f"=IF(AND({g['gpu']}{r}=Accelerator,{g['gpus_per_replica']}{r}=GPUs_Per_Replica,"
                f"{g['weights']}{r}=Weight_Precision,{g['kv']}{r}=KV_Cache_Precision,"
                f'{g["serving"]}{r}="aggregated"),"{ACTIVE_MARK}","no")'
            )
            ws[f"A{r}"].style = "Formula"
    flag_good(ws, f"A{first + 1}:A{last}", ACTIVE_MARK)
    put_text(ws[f"A{first}"], "PLAN_OPTIONS", "Explanatory Text")
    book.refs["Options:table"] = Ref(sh.name, first, cols[0], cols[-1])
    sh.row = last + 2
    put_text(ws[f"A{gpus_row}"], "Accelerators searched", "Label")
    # in the wide column D: the list of name=price pairs is too long for a value column (LibreOffice prints ###)
    ws[f"D{gpus_row}"] = ArrayFormula(f"D{gpus_row}", book.render(OPTIONS_GPUS, sh.name))
    ws[f"D{gpus_row}"].style = "Formula"
    put_text(ws[f"C{gpus_row}"], "USD/GPU-h", "Unit")
    sh.row += 1
    sh.line(
        Line(
            "options_priced",
            "Accelerators searched, priced on Lists",
            OPTIONS_PRICED,
            "count",
            "Options accelerator 1 to 3 on Inputs; the cheapest options show first",
            "int",
        )
    )
    r = sh.row
    put_text(ws[f"A{r}"], "Accelerators the table has room for", "Label")
    ws[f"B{r}"] = n_gpus
    ws[f"B{r}"].style, ws[f"B{r}"].number_format = "Label", FMT["int"]
    put_text(ws[f"C{r}"], "count", "Unit")
    put_text(
        ws[f"D{r}"],
        f"{options_per_accelerator()} options each, as built: `xlsxplan plan` lists every one",
        "Explanatory Text",
    )
    book.refs["options_room"] = Ref(sh.name, r, "B")
    sh.row += 1
    assert sh.row == ttft_row  # noqa: S101 - layout invariant: the search reads these two cells
    sh.line(
        Line(
            "options_ttft",
            "First-token target the search applies",
            '=IF({pct_given}="yes",First_Token_Target_At_The_Percentile,SUM(Time_To_First_Token_Target))',
            "s",
            "The percentile target when given, else the one of a request that never waits; 0: none",
            "dec2",
        )
    )
    sh.line(
        Line(
            "options_percentile",
            "Share of requests it holds for",
            '=IF({pct_given}="yes",First_Token_Percentile,0)',
            "fraction",
            "First-token percentile on Inputs, with a percentile target; 0: a request that never waits",
            "pct",
        )
    )
    percentile_cols = [g[k] for k in PERCENTILE_COLUMNS]
    assert sh.row == multi_row  # noqa: S101 - layout invariant: the topology columns read these two cells
    layout_col = g[TOPOLOGY_SHOWN[0]]
    header = options_formula(row="1", column=f"COLUMN(${layout_col}$1)-COLUMN($A$1)-{{options_skip}}")
    sh.line(
        Line(
            "options_multi",
            "Replicas laid out beyond one server?",
            f'=IF(ISNUMBER(MATCH({header},{{"{TOPOLOGY_SHOWN[0]}"}},0)),"yes","no")',
            "yes/no",
            "Whether the table has the layout, step and communication columns: a model too big for a server",
            "text",
        )
    )
    sh.line(
        Line(
            "options_skip",
            "Percentile columns the table lacks",
            f'=IF({{pct_given}}="yes",0,COLUMN(${percentile_cols[-1]}$1)-COLUMN(${percentile_cols[0]}$1)+1)',
            "count",
            "PLAN_OPTIONS adds them only with a percentile target; the layout columns follow them",
            "int",
        )
    )
    for text in (
        "The search plans the model of the active scenario for the traffic, targets and spares on Inputs (a target "
        "left empty does not apply), ranked at the calibrated efficiencies (the serving step xlsxplan validate scores "
        "published runs with) and the usable memory on Inputs, weights as MODEL_WEIGHTS_GB with the embeddings as "
        "published (Embedding precision 'as published' on Inputs plans Calculations so too); the same option at the "
        "efficiencies on Inputs (the text's ideal ones unless changed: full bandwidth, half the BF16 peak) follows "
        "the reasons.",
        "Fewer accelerators priced than the sheet was built for leave its last rows as reference errors (Checks flags "
        "it); more are ranked, and the cheapest options show. A model of your own (not in the catalog) cannot be "
        "searched: the table is N/A errors.",
    ):
        sh.text(text)
    sh.finish()
    # the table across two pages, the marked column repeated: up to the frontier, then the reasons
    reason = cols[[k for k, _, _, _ in OPTION_COLUMNS].index("reason")]
    before = get_column_letter(column_index_from_string(reason) - 1)
    ranges = cols[[k for k, _, _, _ in OPTION_COLUMNS].index("gpus_p10")]  # then the GPU range, percentiles, layout
    upto = get_column_letter(column_index_from_string(ranges) - 1)
    ws.print_area = [
        f"A1:{before}{sh.row - 1}",
        f"{reason}1:{upto}{sh.row - 1}",
        f"{ranges}1:{cols[-1]}{sh.row - 1}",
    ]
    ws.print_title_cols = "A:A"
    return sh


ACTIVE_MARK = "yes"

CALIBRATED_SECTION = "Calibrated expectation: the active option as xlsxplan plan plans it"
"""The Outputs section of the calibrated view (:func:`_active_option`)."""

NOT_SEARCHED = "not searched"
"""What the active option's lines show when the search does not plan it (another accelerator than those searched,
a precision it does not try, disaggregated serving on Inputs, a model of your own)."""

ACTIVE_OPTION: tuple[tuple[str, str, str, str, str], ...] = (
    ("batch", "step_batch", "Batch", "sequences", "int"),
    ("tokens_per_s_per_user", "step_tps_user", "Decode speed per user", "tokens/s", "dec1"),
    ("ttft_s", "step_ttft", "Time to first token, tail prompt", "s", "dec2"),
    ("replicas", "step_replicas", "Replicas the peak needs, spares included", "count", "int"),
    ("gpus", "step_gpus", "GPUs the peak needs", "count", "int"),
    ("gpus_p10", "step_gpus:low", "GPUs at the P10 of published speeds", "count", "int"),
    ("gpus_p90", "step_gpus:high", "GPUs at the P90 of published speeds", "count", "int"),
    ("usd_per_month", "step_monthly", "List cost per month of the fleet", "USD", "usd0"),
    ("usd_per_m_input", "step_cost_in", "Cost per M input tokens, the fleet around the clock", "USD/M tokens", "usd"),
    (
        "usd_per_m_output",
        "step_cost_out",
        "Cost per M output tokens, the fleet around the clock",
        "USD/M tokens",
        "usd",
    ),
    ("reason", "step_reason", "Why rejected", "text", "text"),
)
"""The active scenario's option as the search plans it, read from its marked row of the Options table: (the table's
column, the line's key, label, unit, format). The calibrated view the plan ranks by (the serving step ``xlsxplan
validate`` scores published runs with), so the Cover's calibrated fleet is the figure ``xlsxplan plan`` prints for
the same option: one function computes both."""


def _active_option(book: Book, sh: Sheet) -> None:
    """On Outputs: the row of the Options table holding the active scenario's option (the first marked "yes"), its
    figures, and rank 1's option and fleet, each an INDEX into the table; :data:`NOT_SEARCHED` where the search did
    not plan the active option."""
    cols = options_columns()
    first, last = OPTIONS_FIRST_ROW + 1, options_last_row()
    g = {key: f"Options!${col}" for key, col in cols.items()}
    marks = f"Options!$A${first}:$A${last}"
    sh.section(CALIBRATED_SECTION, "The Options table's marked row: the serving step xlsxplan validate scores")
    sh.line(
        Line(
            "step_row",
            "Its row in the table",
            f'=IF(COUNTIF({marks},"{ACTIVE_MARK}")>0,MATCH("{ACTIVE_MARK}",{marks},0),0)',
            "row",
            "The Options row marked in column A; 0: the search does not plan the active option",
            "int",
        )
    )
    for col, key, label, unit, fmt in ACTIVE_OPTION:
        note = "From the marked row of the table"
        if key.startswith("step_gpus:"):
            note = "The calibrated GPUs at that quantile of the published runs' speeds (xlsxplan plan's range)"
        index = f"INDEX({g[col]}${first}:${cols[col]}${last},{{step_row}})"
        sh.line(Line(key, label, f'=IF({{step_row}}>0,{index},"{NOT_SEARCHED}")', unit, note, fmt))
        if key != "step_monthly":
            continue
        for q, at in (("low", "P10"), ("high", "P90")):
            sh.line(
                Line(
                    f"step_monthly:{q}",
                    f"List cost per month at {at}",
                    f"=IF(AND(ISNUMBER({{step_gpus:{q}}}),ISNUMBER({{step_gpus}}),{{step_gpus}}>0),"
                    f"{{step_monthly}}*{{step_gpus:{q}}}/{{step_gpus}},{{step_monthly}})",
                    "USD",
                    "The month's bill for those GPUs, at the option's price",
                    "usd0",
                )
            )
    top = f"${first}"
    rank1 = f"COUNTIF({g['rank']}{top},1)>0"  # the table's first row is ranked 1 (an error there counts as not)
    sh.line(
        Line(
            "step_rank1",
            "Rank 1 of the search",
            f'=IF({rank1},{g["gpu"]}{top}&", "&{g["gpus_per_replica"]}{top}&" a replica, "&'
            f'{g["weights"]}{top}&" weights, "&{g["serving"]}{top},"no feasible option")',
            "text",
            "The cheapest feasible option at the calibrated efficiencies: xlsxplan plan's rank 1",
            "text",
        )
    )
    sh.line(
        Line(
            "step_rank1_gpus",
            "Rank 1: GPUs the peak needs",
            f'=IF({rank1},{g["gpus"]}{top},"none feasible")',
            "count",
            "Its fleet, spares included",
            "int",
        )
    )
    sh.line(
        Line(
            "step_rank1_monthly",
            "Rank 1: list cost per month",
            f'=IF({rank1},{g["usd_per_month"]}{top},"none feasible")',
            "USD",
            "Its GPUs billed around the clock at their price on Lists",
            "usd0",
        )
    )


def _calibration(book: Book) -> Sheet:
    sh = book.sheet(
        "Calibration",
        f'The active scenario at the efficiencies assumed on Inputs (as shipped, those of "{ENVELOPE_TITLE}"), at '
        "the calibrated ones (EFFICIENCY, fitted on published measurements) and at what your measurements imply.",
        ["Line item", "Unit", *CALIBRATION_COLUMNS, "", "Equation and source"],
        layout="cases",
    )
    measured_heading(sh, ("Measured_Decode_Speed_At_Batch_1", "Measured_Time_To_First_Token"))
    locals_: list[dict[str, Ref | str]] = [{}, {}, {}]
    sh.section("Efficiencies", "Measured figures from Inputs, section 'Your measurements'")
    decode_ceiling = (
        "DECODE_TOKS({active},{bytes_weight},GPUs_Per_Replica,{bandwidth},1,{kv_bytes},"
        "Prompt_Tokens_In_The_Measurement,1)"
    )
    prefill_ceiling = "PREFILL_S({active},Prompt_Tokens_In_The_Measurement,GPUs_Per_Replica,{peak},1)"
    bw = Line(
        "eff_bw",
        "Decode bandwidth efficiency",
        "",
        "fraction",
        'Yours: measured / DECODE_TOKS at batch 1; EFFICIENCY("decode_bandwidth", GPU, precision)',
        "pct1",
    )
    locals_[2]["calibrated"] = Ref(sh.name, sh.row, SIDE_COLUMNS[1])  # the same row's calibrated value
    book.refs["Calibration:eff_bw"] = sh.side_by_side(
        bw,
        locals_,
        [
            "=Decode_Bandwidth_Efficiency",
            '=EFFICIENCY("decode_bandwidth",Accelerator,Weight_Precision)',
            "=IF(Measured_Decode_Speed_At_Batch_1>0,Measured_Decode_Speed_At_Batch_1/"
            + decode_ceiling
            + ",{calibrated})",
        ],
    )
    peak = Line(
        "peak",
        "Dense peak the prefill share is of",
        "",
        "TFLOP/s",
        "Assumed: BF16, as Back-of-the-Envelope §5 counts it; calibrated, yours: the weights' precision's",
        "dec1",
    )
    book.refs["Calibration:peak"] = sh.side_by_side(
        peak, locals_, ["={tflops}", "={tflops_weights}", "={tflops_weights}"]
    )
    pf = Line(
        "eff_pf",
        "Prefill compute utilisation",
        "",
        "fraction",
        'Of the peak above: yours, PREFILL_S at 100% / measured TTFT; EFFICIENCY("prefill", ...)',
        "pct1",
    )
    locals_[2]["calibrated"] = Ref(sh.name, sh.row, SIDE_COLUMNS[1])
    book.refs["Calibration:eff_pf"] = sh.side_by_side(
        pf,
        locals_,
        [
            "=Prefill_Compute_Utilisation",
            # a GPU with no peak at the weights' precision (FP8 on an A100) computes them on its BF16 tensor cores, as
            # {tflops_fp8} counts it, so its share is the 16-bit one
            '=IF(ISNUMBER(EFFICIENCY("prefill",Accelerator,Weight_Precision)),EFFICIENCY("prefill",Accelerator,'
            'Weight_Precision),EFFICIENCY("prefill",Accelerator,"bf16"))',
            "=IF(Measured_Time_To_First_Token>0," + prefill_ceiling + "/Measured_Time_To_First_Token,{calibrated})",
        ],
    )
    sh.section(
        "The source text's method at each column's efficiencies (the batch planned on Calculations)",
        "The calibrated fleet the plan ranks by is the serving step's: Options, Outputs",
    )
    for line in CALIBRATION_LINES:
        book.refs[f"Calibration:{line.key}"] = sh.side_by_side(line, locals_)

    def calibrated(key: str) -> str:  # the calibrated column's cell of an efficiency row
        ref = book.ref(f"Calibration:{key}")
        return "=" + Ref(ref.sheet, ref.row, SIDE_COLUMNS[1]).text(sh.name)

    def at(kind: str, precision: str, q: str) -> str:  # hidden and sequence length count for training only
        return f'EFFICIENCY("{kind}",Accelerator,{precision},1,0,{q})'

    def prefill(q: str) -> str:  # as the calibrated column: the 16-bit share where the precision has no peak
        return (
            f"=IF(ISNUMBER({at('prefill', 'Weight_Precision', q)}),{at('prefill', 'Weight_Precision', q)},"
            f"{at('prefill', chr(34) + 'bf16' + chr(34), q)})"
        )

    range_block(
        book,
        sh,
        [
            (
                replace(bw, note="EFFICIENCY at the quantile: its fit times that quantile of the kind's residuals"),
                [
                    "=" + at("decode_bandwidth", "Weight_Precision", RANGE_LOW),
                    calibrated("eff_bw"),
                    "=" + at("decode_bandwidth", "Weight_Precision", RANGE_HIGH),
                ],
            ),
            (peak, ["={tflops_weights}"] * 3),
            (
                replace(pf, note='EFFICIENCY("prefill", ...) at the quantile, as the calibrated column'),
                [prefill(RANGE_LOW), calibrated("eff_pf"), prefill(RANGE_HIGH)],
            ),
        ],
        CALIBRATION_LINES,
        "The same formulas at the efficiencies of the quantiles on Inputs",
    )
    sh.skip()
    sh.text(
        "The measured column falls back to the calibrated efficiency where no measurement is given. A measurement "
        "above 100% of the ceiling means the catalog's figure or the measurement's setup differs: see Checks."
    )
    sh.skip()
    r = sh.text(_eight_bit_note(), style="Note")
    note_block(sh.ws, r, sh.row - 1, "ABCDEFG")
    sh.finish()
    return sh


OUTPUT_COST_SECTION = "Cost of the plan: the fleet around the clock, at the efficiencies on Inputs"
"""The Outputs section with the plan's one cost per M input and one per M output tokens."""

# What Outputs shows: (key, note, key result) by section; labels, units and formats come from the line.
OUTPUT_ROWS: tuple[tuple[str, tuple[tuple[str, str, bool], ...]], ...] = (
    ("Prompt lengths", (
        ("pasted", "On the Prompt lengths sheet", False),
        ("prompt_mean", "Pasted lengths', else typed", False),
        ("prompt_tail", "What a slot is sized for", False),
        ("prompt_sd", "What the paged batch allows for", False),
        ("spread_basis", "Measured lengths or a spread give a paged batch", True),
        ("tail_share", "Requests refused by the cap", True),
    )),
    ("Memory", (
        ("weights", "Must fit in the usable memory", True),
        ("weights_gpu", "Experts spread over the GPUs", False),
        ("usable", "", False),
        ("kv_kib", "By the model's architecture", True),
        ("kv_seq", "", False),
        ("batch_fit", "Back-of-the-Envelope's worst case", False),
        ("fits", "", True),
        ("batch_paged", "What a paging engine runs", False),
        ("batch_mem", "The plan's memory limit", True),
        ("batch_basis", "", False),
        ("max_context", "Ceiling on the longest request", False),
        ("engine_tokens", "As the engine prints it at start-up", False),
        ("engine_concurrency", "Engine-true: its memory fraction and reserve", True),
    )),
    ("Speed and latency", (
        ("batch_latency", "", False),
        ("batch_ttft", "", False),
        ("batch", '="Set by "&{binding}', True),
        ("binding", "A target not given does not apply", False),
        ("latency_caps", "yes: fewer users per replica", True),
        ("tps_user", "At the planned batch", True),
        ("tps_alone", "", False),
        ("tps_total", "", True),
        ("prefill", "Back-of-the-Envelope's figure, mean prompt", True),
        ("ttft_batch", "Within the first-token target", True),
        ("ttft_alone", "Attention and GPU traffic counted", False),
        ("time_to_answer", "Prefill, then any hidden reasoning", True),
        ("spec_tps_user", "Off until draft tokens are given", False),
        ("spec_cost_full", "Beside the plan's full-load cost", False),
    )),
    ("Traffic and capacity", (
        ("peak_rps", "", False),
        ("peak_output", "", False),
        ("peak_prompt", "", False),
        ("replica_rps", "Prefill and decode taking turns", False),
        ("replica_rps_chunked", "The plan's capacity per replica", False),
        ("replicas_decode", "Back-of-the-Envelope's count", False),
        ("replicas_ttft_pct", "Only where a percentile target is given", False),
        ("replicas_planned", "Spares included", True),
        ("gpus_peak", "At the efficiencies assumed on Inputs", True),
        ("coverage", "Below 1: the peak is not served", True),
        ("ttft_p50", "Queueing at the peak: the median user", True),
        ("ttft_p90", "", False),
        ("ttft_p99", "The tail service-level objectives are written on", True),
        ("fleet_util", "Over the day", True),
        ("replicas_decode_growth", '="At "&Traffic_Growth_Multiple&"x the peak, Back-of-the-Envelope\'s count"', False),
        ("replicas_growth", '="At "&Traffic_Growth_Multiple&"x the peak (growth multiple on Inputs)"', True),
        ("gpus_growth", '="At "&Traffic_Growth_Multiple&"x the peak (growth multiple on Inputs)"', True),
        ("prefill_replicas", "Separate prefill GPUs", False),
        ("decode_replicas", "Separate decode GPUs", False),
        ("gpus_disagg", "", False),
        ("kv_transfer", "Added to the first token", False),
    )),
    (OUTPUT_COST_SECTION, (
        ("prefill_share", "How the bill is split", False),
        ("cost_in", "At the fleet's own utilisation", True),
        ("cost_out", "At the fleet's own utilisation", True),
        ("monthly", "", True),
    )),
    (f"{ENVELOPE}'s method: output tokens only, one replica (not the plan's bill)", (
        ("cost_full", "Back-of-the-Envelope's floor: one replica", True),
        ("cost_avg", "Back-of-the-Envelope's method, decode only", True),
    )),
)  # fmt: skip


def _eight_bit_note() -> str:
    """What the calibrated 8-bit figures rest on, read from the shipped measurements (never typed: a refit with more
    rows changes it)."""
    from ..calibration import measurements_path
    from ..calibration.measurements import read_measurements

    rows = [
        m
        for m in read_measurements(measurements_path())
        if m.metric == "ttft" and m.precision in ("fp8", "int8", "w8a8")
    ]
    lines = ", ".join(str(m.line) for m in rows)
    shown = sorted({f"{m.model} on {m.n_gpus} {m.gpu}" for m in rows})
    rest = (
        f"rests on {len(rows)} published first-token times ({'; '.join(shown)}: lines {lines} of "
        "xlsxplan/calibration/data/measurements.csv; `xlsxplan validate` shows each one predicted with its run left "
        "out)"
    )
    return (
        f"For 8-bit weights the calibrated prefill share {rest}; the measurements hold no 8-bit decode speed at "
        "batch one, so the 16-bit bandwidth share stands in. A calibrated 8-bit fleet is an estimate to confirm "
        "with a measurement of your own (Inputs, 'Your measurements')."
    )


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
    lines = {line.key: line for line in (*GLOBAL_LINES, *CASE_LINES)}
    for section, rows in OUTPUT_ROWS:
        sh.section(section)
        for key, note, key_result in rows:
            line = lines[key]
            sh.link(key, line.label, line.unit, line.fmt, note, key_result, line.bad)
    avg = book.ref("Calibration:cal_cost_avg")  # the source's method at calibrated efficiencies: Calibration only
    book.refs["cal_cost_avg:calibrated"] = Ref(avg.sheet, avg.row, SIDE_COLUMNS[1])
    _active_option(book, sh)
    for key, label, formula in (
        (
            "step_gpus_range",
            "GPUs the peak needs, calibrated, with its range",
            range_sentence("{step_gpus}", "{step_gpus:low}", "{step_gpus:high}", 0, " GPUs"),
        ),
        (
            "step_monthly_range",
            "List cost per month, calibrated, with its range",
            range_sentence("{step_monthly}", "{step_monthly:low}", "{step_monthly:high}", 0, " USD a month"),
        ),
    ):
        sh.line(Line(key, label, formula, "text", "The low and high quantiles' figures beside it", "text"))
    sh.section("Basis of estimate", "Estimate, not a quote")
    follows = lines["name_follows"]
    sh.link(
        "name_follows", follows.label, follows.unit, follows.fmt, "Your own name, or the name its inputs give", False
    )
    sh.line(
        Line(
            "basis:price",
            "Price per GPU-hour",
            "={price}",
            "USD/GPU-h",
            "The active accelerator's, from the price table on Lists",
            "usd",
        )
    )
    for name, label, unit, fmt in (
        ("Pricing_Basis", "Pricing basis", "text", "text"),
        ("Price_Date", "Price date", "date", "date"),
        ("Region", "Region", "text", "text"),
        ("Billing_Currency", "Billing currency", "ISO 4217", "text"),
        ("Hours_Per_Month", "Hours per month", "h/month", "int"),
    ):
        sh.line(Line(f"basis:{name}", label, f"={name}", unit, "From Inputs", fmt))
    r = sh.text(
        "This is an estimate, not a quote: cloud prices change and differ by region, commitment and provider.",
        style="Note",
    )
    note_block(sh.ws, r, sh.row - 1)
    sh.ws.row_breaks.append(Break(id=sh.row))  # the chart prints whole, on a page of its own
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
        (
            Reference(calc, min_col=2, min_row=first, max_row=last),
            Reference(calc, min_col=3, min_row=first, max_row=last),
            "Decode speed per user",
            "1F77B4",
            "circle",
        ),
        (
            Reference(calc, min_col=5, min_row=first, max_row=first + 1),
            Reference(calc, min_col=6, min_row=first, max_row=first + 1),
            "Latency target",
            "C00000",
            "none",
        ),
    )
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
        "Each row is 1 when something is wrong and 0 when it is fine; the master check is 1 if any row is.",
        ["Check", "Result", "Unit", "What it tests", "", ""],
    )
    sh.section("The active scenario", "A figure that is no number counts as a problem: NOT(ISNUMBER(...))")
    sh.check(
        "Weights do not fit in usable memory",
        "=IF(OR(NOT(ISNUMBER({free})),{free}<=0),1,0)",
        "Memory left for the KV cache is not positive (Back-of-the-Envelope §2)",
    )
    sh.check(
        "No tail-prompt sequence fits beside the weights",
        "=IF(OR(NOT(ISNUMBER({batch_fit})),{batch_fit}<1),1,0)",
        "The batch that fits is 0: not even one tail-length sequence (Back-of-the-Envelope §3, §7)",
    )
    sh.check(
        "A request is longer than the model's context window",
        '=IF(ISNUMBER(MODEL_SPEC({model},"context")),'
        '(MAX({tail_context},{longest_request})>MODEL_SPEC({model},"context"))*1,0)',
        'Prompt + reasoning + output over MODEL_SPEC(model, "context"): the model cannot read it',
    )
    sh.check(
        "Heads do not split over a replica's GPUs",
        '=IF(ISNUMBER(MODEL_SPEC({model},"heads")),(ROUND(MODEL_SPEC({model},"heads")/{n_gpus},0)*{n_gpus}'
        '<>MODEL_SPEC({model},"heads"))*1,0)',
        "Tensor parallel gives each GPU whole heads: xlsxplan plan rejects such a replica size too",
    )
    sh.check(
        "The longest prompt accepted does not fit at all",
        "=IF(OR(NOT(AND(ISNUMBER({longest_request}),ISNUMBER({max_context}))),{longest_request}>{max_context}),1,0)",
        "Longest prompt + reasoning + output exceeds the longest sequence fitting alone (Back-of-the-Envelope §1)",
    )
    # a configuration that does not fit is flagged above; its targets' batches read "does not fit"
    sh.check(
        "Decode-speed target unreachable even at batch 1",
        f'=IF(AND(OR(NOT(ISNUMBER({{batch_latency}})),{{batch_latency}}<1),{{batch_latency}}<>"{NO_FIT}",'
        f'{{batch_latency}}<>"{NO_TARGET}"),1,0)',
        "BATCH_FOR_LATENCY is 0: one sequence alone decodes slower than the target (Back-of-the-Envelope §7)",
    )
    sh.check(
        "First-token target unreachable even at batch 1",
        f'=IF(AND(OR(NOT(ISNUMBER({{batch_ttft}})),{{batch_ttft}}<1),{{batch_ttft}}<>"{NO_FIT}",'
        f'{{batch_ttft}}<>"{NO_TARGET}"),1,0)',
        "BATCH_FOR_TTFT is 0: a tail prompt cannot be read in time beside one decoding sequence",
    )
    sh.check(
        "Decode leaves no compute for prompts",
        f'=IF(AND(ISNUMBER({{batch}}),{{batch}}>=1,{{ttft_batch}}="{NO_PROMPT}"),1,0)',
        "Decode at the batch takes all the compute: no prompt is read (set a first-token target)",
    )
    sh.check(
        "Peak not covered with the spares down",
        "=IF(OR(NOT(ISNUMBER({coverage})),{coverage}<1),1,0)",
        "Peak coverage below 1 (or none: nothing fits): a failure at the peak leaves requests waiting (§6)",
    )
    sh.check(
        "Prompt lengths out of order",
        "=IF(OR({prompt_tail}<{prompt_mean},Longest_Prompt_Accepted<{prompt_tail},"
        "Shared_Prefix_Tokens>{prompt_mean}),1,0)",
        "Shared prefix <= mean <= tail <= longest accepted, as used (pasted or typed)",
    )
    sh.check(
        "A share or utilisation outside 0 to 100%",
        "=IF(OR(MAX(Usable_Memory_Fraction,Decode_Bandwidth_Efficiency,Prefill_Compute_Utilisation,"
        "Average_Utilisation)>1,MIN(Usable_Memory_Fraction,Decode_Bandwidth_Efficiency,"
        "Prefill_Compute_Utilisation,Average_Utilisation)<=0),1,0)",
        "Fractions must be above 0 and at most 1",
    )
    bw, pf = book.ref("Calibration:eff_bw"), book.ref("Calibration:eff_pf")
    yours = SIDE_COLUMNS[2]
    cells = (f"Calibration!${yours}${bw.row}", f"Calibration!${yours}${pf.row}")
    sh.check(
        "A measurement beyond the hardware's ceiling",
        f"=IF(OR(NOT(AND(ISNUMBER({cells[0]}),ISNUMBER({cells[1]}))),MAX({','.join(cells)})>1),1,0)",
        "Your measurement implies over 100% of peak: check its setup and the accelerator's figures",
    )
    sh.check(
        "Fewer accelerators searched than Options has room for",
        "=IF({options_priced}<{options_room},1,0)",
        "Its last rows would be N/A errors: choose three priced accelerators on Inputs",
    )
    sh.check(
        "Portfolio: workloads of one model on unlike replicas",
        portfolio_sheet.same_deployment_check(book),
        "Workloads of one model share one deployment: the same GPUs and requests a replica",
    )
    figures = [book.ref(k) for k in ("params", "active", "memory", "bandwidth", "tflops")]
    span = f"Calculations!${figures[0].col}${figures[0].row}:${figures[-1].col}${figures[-1].row}"
    sh.check(
        "A model or accelerator figure is missing",
        f"=IF(COUNT({span})<ROWS({span}),1,0)",
        "A name not in the catalog needs its overrides filled in",
    )
    sh.section("Inputs in their usual range", "A legal value far from the usual range is usually a unit slip")
    usual_checks(book, sh, (*USUAL, *timeline.USUAL))
    timeline.checks(book, sh)
    finance.checks(book, sh)
    sh.section("Every sheet", "Classic xlwings shows a failed function as text (the error and its reason): counted too")
    for name, cols in (
        ("Calculations", ("B", "B")),
        ("Scenarios", ("C", "F")),
        (portfolio_sheet.PORTFOLIO, ("C", "E")),
        ("Calibration", ("C", "E")),
    ):
        ws = book.ws(name)
        span = f"{name}!${cols[0]}$6:${cols[1]}${ws.max_row}"
        error_check(sh, name, span)
    sh.skip()
    sh.master()
    sh.finish()
    return sh


def likely(key: str, otherwise: str) -> str:
    """A Cover note giving a calibrated figure's range, "Likely 34 to 52 (P10 to P90)", else ``otherwise``."""
    low, high = f"{{{key}:low}}", f"{{{key}:high}}"
    return (
        f'=IF(AND(ISNUMBER({low}),ISNUMBER({high})),"Likely "&FIXED({low},0)&" to "&FIXED({high},0)&'
        f'" (P10 to P90 of published runs\' speeds)","{otherwise}")'
    )


OUTPUT_NAMES = {
    "GPUs_In_The_Fleet": "gpus_peak",
    "Replicas_In_The_Fleet": "replicas_planned",
    "Monthly_Cost": "monthly",
    "Cost_Per_M_Input_Tokens": "cost_in",
    "Cost_Per_M_Output_Tokens": "cost_out",
    "Time_To_First_Token": "time_to_answer",
    "First_Token_Of_A_Tail_Prompt": "ttft_batch",
    "Decode_Speed_Per_User": "tps_user",
    "Master_Check": "master_check",
}
"""The headline outputs' defined names (the Cover's headline figures and the master check) -> their line items."""


def build() -> Book:
    """The serving plan as an openpyxl workbook in a :class:`Book` (formulas only; recalculate to cache values)."""
    book = Book(TITLE, SHEETS)
    lists = lists_sheet(
        book,
        [
            (key, label, unit, alias if isinstance(alias, domains.Domain) else domain_of(alias))
            for key, label, unit, alias in (*USUAL, *timeline.USUAL)
        ],
        prices=True,
        price_examples=PRICE_EXAMPLES,
    )
    book.texts.update(
        precision_names=lists["precision"],
        precision_peaks=lists["precision_peak"],
        gpu_names=lists["gpu"],
        gpu_prices=lists["price"],
        model_names=lists["model"],
    )
    _inputs(book, lists)
    _prompt_lengths(book)
    timeline.monthly_requests(book)
    _calculations(book)
    timeline.timeline_sheet(book)
    finance.finance_sheet(book)
    _scenarios(book)
    portfolio_sheet.portfolio_sheet(book)
    portfolio_sheet.chargeback_sheet(book)
    _options(book)
    _calibration(book)
    _outputs(book)
    _checks(book)
    cover(
        book,
        purpose=f'How many GPUs, how fast it feels and what it costs to serve an LLM, after "{ENVELOPE_TITLE}": '
        "memory for the weights and KV cache, the batch that fits and the one the latency targets allow, "
        "bandwidth-bound decode, compute-bound prefill, replicas with spares for the peak, and cost per million "
        "input and output tokens.",
        headline=[
            Result("replicas_planned", "Replicas in the fleet, spares included", "count", "int"),
            Result("gpus_peak", "GPUs in the fleet", "count", "int"),
            Result("monthly", "List cost per month of the fleet", "USD", "usd0"),
            Result("cost_in", "Cost per M input tokens, this fleet", "USD/M tokens", "usd"),
            Result("cost_out", "Cost per M output tokens, this fleet", "USD/M tokens", "usd"),
            Result("tps_user", "Decode speed each user sees", "tokens/s", "dec1"),
            Result("time_to_answer", "Time to the first visible token, a mean prompt alone", "s", "dec2"),
            Result("ttft_batch", "First token of a tail prompt, at the planned batch", "s", "dec2"),
            Result("step_gpus_range", "GPUs, calibrated (xlsxplan plan's figure), and their range", "", "text"),
        ],
        drivers=[
            Result("Requests_Per_Day", "Requests per day", "requests/day", "int"),
            Result("Peak_Hour_Factor", "Peak-hour factor", "ratio", "dec1"),
            Result("price", "Price per GPU-hour, the active accelerator", "USD/GPU-h", "usd"),
            Result("Model", "Model", "", "text"),
            Result("Weight_Precision", "Weight precision", "", "text"),
            Result("Accelerator", "Accelerator", "", "text"),
            Result("GPUs_Per_Replica", "GPUs per replica", "count", "int"),
        ],
        blocks=[
            (
                "How the fleet is sized (Calculations)",
                [
                    Result(
                        "name_follows",
                        "Does the case's name follow its inputs?",
                        "text",
                        "text",
                        "Else your own name, with the one its inputs give",
                    ),
                    Result(
                        "fits",
                        "Fits in memory?",
                        "text",
                        "text",
                        "At least one tail-length sequence beside the weights",
                    ),
                    Result(
                        "batch", "Batch planned", "sequences", "int", "Memory's, or fewer if a latency target caps it"
                    ),
                    Result(
                        "coverage",
                        "Peak covered with the spares down",
                        "ratio",
                        "dec2",
                        "Below 1: the peak is not served",
                    ),
                    Result(
                        "fleet_util",
                        "Average utilisation of the fleet",
                        "fraction",
                        "pct1",
                        "Average requests over what the fleet could serve",
                    ),
                    Result(
                        "gpus_growth",
                        "GPUs for the grown peak",
                        "count",
                        "int",
                        '="At "&Traffic_Growth_Multiple&"x the peak (growth multiple on Inputs)"',
                    ),
                ],
            ),
            (
                f"{ENVELOPE}'s method: one replica, output tokens only (§6)",
                [
                    Result(
                        "cost_full",
                        "Cost per M output tokens at full load",
                        "USD/M tokens",
                        "usd",
                        "One replica busy all the time: a floor, not a bill",
                    ),
                    Result("Average_Utilisation", "Average utilisation assumed", "fraction", "pct", "From Inputs"),
                    Result(
                        "cost_avg",
                        "Cost per M output tokens at that load",
                        "USD/M tokens",
                        "usd",
                        "The full-load cost over the average utilisation",
                    ),
                ],
            ),
            (
                "The calibrated view: the serving step xlsxplan validate scores (Options sheet)",
                [
                    Result(
                        "step_gpus",
                        "GPUs the peak needs, calibrated",
                        "count",
                        "int",
                        likely("step_gpus", "The active option is not in the search: see Options"),
                    ),
                    Result(
                        "step_monthly",
                        "List cost per month, calibrated",
                        "USD",
                        "usd0",
                        likely("step_monthly", "Those GPUs billed around the clock"),
                    ),
                    Result("step_tps_user", "Decode speed per user, calibrated", "tokens/s", "dec1", "At its batch"),
                    Result(
                        "step_cost_out",
                        "Cost per M output tokens, calibrated",
                        "USD/M tokens",
                        "usd",
                        "The calibrated fleet's bill split by GPU time",
                    ),
                    Result("step_rank1", "Rank 1 of the search", "", "text", "xlsxplan plan's rank 1: Options"),
                    Result(
                        "step_rank1_gpus",
                        "Rank 1: GPUs and list cost per month",
                        "count",
                        "int",
                        '=IF(ISNUMBER({step_rank1_monthly}),"USD "&FIXED({step_rank1_monthly},0)&" a month","")',
                    ),
                ],
            ),
            timeline.COVER_BLOCK,
            finance.COVER_BLOCK,
        ],
        examples=f'"{ENVELOPE_TITLE}" (a support assistant on H100s), cited on the sheets as {ENVELOPE} §1 to §7',
        limitations=[
            f"Decode speed is a ceiling at the shipped 100% bandwidth efficiency ({ENVELOPE} §4: perhaps 60-80% in "
            f"practice); prefill at 50% of the BF16 peak, as {ENVELOPE} §5 counts it, is an assumption, not a "
            "ceiling (8-bit weights compute on FP8 tensor cores). The Calibration sheet shows the fleet at published "
            "measurements and at yours.",
            "The batch is what a paged KV cache holds (vLLM, TensorRT-LLM, SGLang) but for the accepted overflow; "
            f"with no spread of prompt lengths known, it is {ENVELOPE}'s worst case, every slot at the tail prompt.",
            "Prompt lengths are log-normal through the mean and tail unless a spread is typed or measured lengths "
            "are pasted; real traffic often has a heavier tail (ServeGen, arXiv:2505.09999).",
            "Prefill at 2 FLOPs per parameter per token underestimates long prompts, whose attention grows with "
            f"the square of their length ({ENVELOPE} §5): the tail prompt's time alone, with attention, is beside "
            "it.",
            "Chunked prefill is counted at its ceiling, the larger of compute and decode time per request; a "
            "mixture of experts reads the experts a batch touches under uniform routing, an upper estimate.",
            "Input and output split the fleet's bill by GPU time, so where compute binds a token costs the same "
            "either way; GPUs bill by the hour, busy or idle; prices are examples, not quotes.",
            "The Timeline sizes every month for its peak hour, owned or rented; it keeps each server bought (no "
            "resale within the 36 months), pays capital on arrival and discounts no cash: its breakeven month is a "
            "cash payback, its cost per token rests on capital recovery at the cost of capital (GPU_HOUR_OWNED).",
        ],
    )
    guide(
        book,
        steps=[
            "Inputs, Scenario block: pick a model and an accelerator from the dropdowns (the catalog's presets), a "
            "weight and KV cache precision and the GPUs per replica for each case. Leave an override empty to use "
            "the catalog's figure; fill it to use your own (for a model not in the catalog: parameters, active "
            "parameters and KV cache per token; for a GPU: memory, bandwidth and compute).",
            "Inputs, Active scenario: choose the case that feeds Calculations and Outputs.",
            "Inputs, Demand: requests per day; the mean, 95th-percentile and longest prompts and, if known, the "
            "spread of prompt lengths; output and hidden reasoning tokens; the peak-hour factor; a shared prefix "
            "and its cache hit rate (0 until confirmed).",
            "Prompt lengths (optional): paste measured prompt lengths; the mean, tail and spread the plan uses, and "
            "the share a cap rejects, then come from them (Calculations, Demand, shows which).",
            "Inputs, Serving assumptions: usable memory, efficiencies, the embeddings' precision (as the weights, "
            "the source's N x b, or as published checkpoints keep them), the decode-speed and time-to-first-token "
            "targets, spares and the minimum fleet, replicas you already run, the prefill-to-decode link.",
            "Lists, Price per GPU-hour: each accelerator's price (the catalog's dated default, or your quote, with "
            "its source and date); Inputs, Cost: the region, pricing basis and average utilisation.",
            "Inputs, Your measurements (optional): a batch-1 decode speed and time to first token measured on the "
            "active scenario's setup; the Calibration sheet shows the efficiencies they imply and the plan at them. "
            "Inputs, Ranges: the quantiles of published runs each calibrated figure's low and high are read at.",
            "Inputs, Costs and Timeline: what an owned GPU costs (capital, life, resale, cost of capital, power, PUE, "
            "electricity, hosting, lead time: the catalog's sourced defaults, restated with your quotes), the "
            "committed price, the start month, traffic growth, a change of model or engine, the on-demand price "
            "trend. Monthly requests (optional): paste a forecast of requests per day, month by month. The Timeline "
            "sheet then plans the 36 months: GPUs, servers, each plan's cost and when buying pays back.",
            "Read the Cover's plan in brief, then Outputs. Scenarios compares the four cases side by side; Options "
            "ranks every accelerator, precision, GPU count and serving mode for the active model, with the reason "
            "each rejected one fails.",
            "Checks must read OK. An ERROR names the problem: weights or a tail prompt that do not fit, a target no "
            "batch reaches, a peak the fleet cannot cover, an input far outside its usual range.",
            "In Excel, install the xlsxplan add-in (xlwings) and click Import Functions: the formulas then "
            "recalculate live. Without it, the values shown are those computed when the file was saved; "
            "`xlsxplan recalc` recalculates a copy without Excel.",
        ],
        sheets=[
            ("Cover", "The plan in brief with its key drivers, the other views, legend, limitations"),
            ("Guide", "This page"),
            ("Inputs", "Every assumption, once, with unit, source and date; the scenario block"),
            ("Prompt lengths", "An optional column of measured prompt lengths"),
            (timeline.REQUESTS_SHEET, "An optional column of requests per day, one per month of the Timeline"),
            ("Calculations", "The active scenario line by line, with the equation and its source"),
            (timeline.SHEET, "36 months: GPUs, servers bought or rented, cost owned and rented, breakevens"),
            (finance.SHEET, "Following the day, a committed and on-demand or spot mix, energy, a hosted API"),
            ("Outputs", "Key results, the basis of estimate and the decode-speed chart"),
            ("Scenarios", "The four cases side by side"),
            ("Portfolio", "Several workloads on one fleet: shared replicas, the saving, the bill by team"),
            ("Chargeback", "PORTFOLIO for the Portfolio workloads: each one's deployment searched, the bill by team"),
            ("Calibration", "The plan at the assumed, the calibrated and your measured efficiencies"),
            ("Checks", "1 for a problem, 0 for OK; the master check"),
            ("Version log", "What changed, when"),
            ("Options", "Every way to serve the active model on the priced accelerators, ranked (PLAN_OPTIONS)"),
            ("Lists", "The presets and precision names behind the dropdowns, usual ranges, each accelerator's price"),
            ("xlwings.conf", "Tells the add-in which Python module holds the functions; leave it as is"),
        ],
    )
    version_log(book)
    header_statuses(book)  # the master check on every sheet's second row
    conf_sheet(book)
    book.name_outputs(OUTPUT_NAMES)
    book.finish()
    return book
