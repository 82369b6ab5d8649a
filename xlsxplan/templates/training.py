"""The training plan template: how big a model, how many tokens, how long, what it costs ("Estimating the Compute
and Memory Needed for Language Models").

Sheets: Cover, Guide, Inputs (with the scenario block and the measured-rate table), Calculations (the active
scenario), Outputs, Measured rates (each benchmark side by side), Calibration (the run at the assumed, the calibrated
and your measured MFU), Checks, Version log, Options (every layout of the layout search on Inputs: TRAIN_OPTIONS, the
table ``xlsxplan plan --train`` prints), Lists and ``xlwings.conf``.

The shipped cases are the document's: the Parameter Golf record (35.95M parameters, 3.927B tokens, eight H100s, ten
minutes) and baseline, the 7B-on-140B-tokens example and Chinchilla's 70B on 1.4T tokens. The measured-rate table
turns a short benchmark's tokens per second into the 6N-equivalent FLOP rate and sizes a run from it ("The M2":
``N = sqrt(C t / 120)``), with the document's H100 record and M2 rows.

Beyond the document's equations: the model's shape from a preset or by hand, training FLOPs with PaLM's attention
term, model state per GPU by optimizer and ZeRO stage, activations by sequence length, micro-batch, tensor
parallelism and recomputation; the calibrated MFU beside the input one and a Calibration sheet for your own
measurements; usual-range checks on the inputs.
"""

from __future__ import annotations

from typing import Any

from openpyxl.styles import Alignment
from openpyxl.utils import column_index_from_string, get_column_letter
from openpyxl.worksheet.datavalidation import DataValidation

from .. import domains
from ..core.training_memory import OPTIMIZERS, RECOMPUTE_MODES
from ..domains import domain_of
from ..plan.train_inputs import TRAIN_INPUTS
from ..plan.train_table import TRAIN_TABLE_HEADER
from .book import Book, Line, Ref, Sheet, put_text, validation_for
from .common import (
    COMPUTE_MEMORY,
    COMPUTE_MEMORY_TITLE,
    ENVELOPE,
    ENVELOPE_TITLE,
    RANGE_HIGH,
    RANGE_LOW,
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
    range_cells,
    range_headings,
    range_inputs,
    range_sentence,
    table_columns,
    usual_checks,
    version_log,
)
from .styles import FMT, HEADER_ROWS, SIDE_COLUMNS, TEMPLATE_DATE

__all__ = ["build", "TITLE", "FILENAME", "CASES", "BENCHMARKS"]

TITLE = "Training plan"
FILENAME = "training_plan.xlsx"
SHEETS = [
    ("Cover", "cover"),
    ("Guide", "guide"),
    ("Inputs", "inputs"),
    ("Calculations", "calc"),
    ("Outputs", "outputs"),
    ("Measured rates", "scenarios"),
    ("Calibration", "calibration"),
    ("Checks", "checks"),
    ("Version log", "log"),
    ("Options", "scenarios"),  # a reference table (every layout searched), printed after the story with Lists
    ("Lists", "lists"),
]
PG = f"{COMPUTE_MEMORY} 'Parameter Golf' (example)"

CASES = ("Param. Golf record", "Param. Golf baseline", "7B, 140B tokens", "Chinchilla 70B")
ACTIVE_CASE = 1
_OVERRIDE = domains.Domain("number", 0, 1e9)
_NOT_MEASURED = "leave it empty when not measured"
_NOT_GIVEN = {  # inputs the formulas read as "not given" when empty (or 0, IF(x>0, ...)), and what they use then
    "Model parameters": "leave it empty for the preset's figure",
    "Layers": "0 or empty: the preset's figure",
    "Hidden size": "0 or empty: the preset's figure",
    "Attention heads": "0 or empty: the preset's figure",
    "Dense BF16 compute override": "0 or empty: the catalog's figure",
    "Memory per GPU override": "0 or empty: the catalog's figure",
    "Dense peak per accelerator": "0 or empty: none published",
}

# (label, values per case, unit, source, comment, format, kind or domain)
# (label, values per case, unit, source, comment, format, kind or domain)
# The shapes: the Parameter Golf baseline is 9 layers of width 512 with 1,024-token sequences and 524,288 tokens a step
# (github.com/openai/parameter-golf, records/track_10min_16mb/2026-03-17_NaiveBaseline/train.log, as cited in
# shared/data/measurements.csv); the record starts with 11 layers (Compute and Memory); Chinchilla 70B is 80 layers
# of width 8,192 with 64 heads of 128 (Hoffmann et al. 2022, Table 4) on 2,048-token sequences.
SCENARIO_ROWS: tuple[tuple[Any, ...], ...] = (
    ("Scenario name", CASES, "text", "Example", "Rename a case freely", "text", None),
    ("Model", ("Golf 11L 512d", "Golf 9L 512d", "Llama-2-7B", "Chinchilla-70B"), "preset",
     f"{COMPUTE_MEMORY}; Chinchilla (example)", "Pick a preset in G to J, or type a name and its figures",
     "text", "model"),
    ("Model parameters", (0.03595, 0.01706, 7, 70), "B params", f"{COMPUTE_MEMORY} (example)",
     "Empty: the preset's (notes 6, 7, 9)", "small",
     domain_of(domains.ParamsB)),
    ("Training tokens", (3.927e9, 7.225e9, 140e9, 1.4e12), "tokens", f"{COMPUTE_MEMORY} (example)",
     "Record 3.927B, baseline 7.225B (notes 6, 7)", "int", domain_of(domains.Tokens)),
    ("Layers", (11, 9, None, 80), "count", f"{COMPUTE_MEMORY}; Chinchilla (example)",
     "Empty: the preset's; the record starts with 11 layers", "override_int", _OVERRIDE),
    ("Hidden size", (512, 512, None, 8192), "count", "Golf log; Chinchilla Table 4 (example)",
     "Empty: the preset's (d_model)", "override_int", _OVERRIDE),
    ("Attention heads", (8, 8, None, 64), "count", "Assumed; Chinchilla Table 4 (example)",
     "Empty: the preset's", "override_int", _OVERRIDE),
    ("Sequence length", (2048, 1024, 4096, 2048), "tokens", "Golf logs; Llama 2; Chinchilla (example)",
     "Tokens per training sequence", "int", domain_of(domains.Tokens)),
    ("Micro-batch size", (48, 64, 1, 1), "sequences", "Golf logs (example)",
     "786,432 (record), 524,288 tokens a step / 8 / length", "int", domain_of(domains.Batch)),
    ("Activation recomputation", ("flash", "flash", "selective", "selective"), "mode",
     "Example; Korthikanti et al. 2022", "flash, none, selective or full", "text", "recompute"),
    ("Tensor-parallel GPUs", (1, 1, 1, 8), "count", "Example", "GPUs sharing each layer; the rest are data "
     "parallel", "int", domain_of(domains.GPUs)),
    ("ZeRO stage", (0, 0, 1, 1), "stage", "Example; Rajbhandari et al. 2020", "0 none; 1 optimizer, 2 + gradients, 3 + "
     "weights", "int", domain_of(domains.ZeroStage)),
    ("Accelerator", ("H100-SXM",) * 4, "preset", f"{COMPUTE_MEMORY} (example)", "Pick a preset in G to J (dropdown)",
     "text", "gpu"),
    ("Dense BF16 compute override", (989.5, 989.5, None, None), "TFLOP/s",
     f"{COMPUTE_MEMORY} 'Eight H100s' (example)", "Source: about 989.5; catalog: 989.4 (whitepaper)", "override",
     _OVERRIDE),
    ("Memory per GPU override", (None,) * 4, "GB", "Catalog (datasheet)", "Empty: the catalog's figure",
     "override", _OVERRIDE),
    ("GPUs", (8, 8, 64, 1024), "count", f"{COMPUTE_MEMORY}; cases 3-4 are examples",
     "Eight H100s (Golf rules); 64, 1,024: assumed", "int", domain_of(domains.GPUs)),
    ("Model FLOPs utilisation", (0.18, 0.18, 0.4, 0.4), "fraction",
     f"{COMPUTE_MEMORY} 'Eight H100s' (example)",
     "Record: 18%; 40%: large dense runs (PaLM 46%)", "pct",
     domain_of(domains.Fraction)),
    ("Time budget", (600, 600, 604_800, 2_592_000), "s", f"{COMPUTE_MEMORY} (example)",
     "Golf: 10 minutes; 7 and 30 days: examples", "int",
     domain_of(domains.Seconds)),
    ("Cached tokens", (8e9, 2.5e9, 15e12, 1.4e12), "tokens", f"Example; {COMPUTE_MEMORY} 'Which FineWeb?'",
     "8B (80 shards), 2.5B, FineWeb 15T, one pass", "int",
     domain_of(domains.Tokens)),
    ("Reused layers", (3, 0, 0, 0), "count", f"{COMPUTE_MEMORY} note 7 (example)",
     "Layers applied more than once: the record reapplies 3-5", "int", domain_of(domains.CountOrZero)),
    ("Extra passes per reused layer", (2, 0, 0, 0), "passes", f"{COMPUTE_MEMORY} note 7 (example)",
     "Further applications of each reused layer", "int", domain_of(domains.Passes)),
    ("Share of steps with recurrence", (round(1 - 2_204 / 4_997, 4), 1, 1, 1), "fraction",
     f"{COMPUTE_MEMORY} note 7 (example)", "The record's begins at step 2,204 of 4,997", "pct1",
     domain_of(domains.Fraction)),
    ("Parameters per reused layer", (2.883584, None, None, None), "M params", "Assumed: d 512, 4 KV heads (example)",
     "11 d^2 with a 4x MLP; empty where none is reused", "override", _OVERRIDE),
)  # fmt: skip

BENCHMARKS = (
    "8xH100 Golf record",
    "M2 41.2M, B=1 T=2048",
    "M2 41.2M, B=4 T=512",
    "M2 0.36M anchor",
)
BENCHMARK_ROWS: tuple[tuple[Any, ...], ...] = (
    ("Benchmark", BENCHMARKS, "text", f"{COMPUTE_MEMORY}, measured rows (example)", "Rename freely", "text", None),
    ("Benchmark parameters", (35.95, 41.2, 41.2, 0.361608), "M params",
     f"{COMPUTE_MEMORY} notes 7, 10, 11 (example)",
     "Parameters of the model measured", "dec2", domains.Domain("number", 0, 1e12, low_open=True)),
    ("Tokens counted", (3.927e9, 2_400, 4_900, 69_042_176), "tokens",
     f"{COMPUTE_MEMORY} notes 7, 10, 11 (example)",
     "M2: rate quoted per second; anchor 8,428 x 8,192", "int",
     domain_of(domains.Tokens)),
    ("Seconds counted", (599.6, 1, 1, 300), "s", f"{COMPUTE_MEMORY} notes 7, 10, 11 (example)",
     "599.6 s; 1 s for a quoted rate; 300 s", "dec1",
     domain_of(domains.Seconds)),
    ("Accelerators measured", (8, 1, 1, 1), "count", f"{COMPUTE_MEMORY} notes 2, 7 (example)",
     "Eight H100s; one M2 GPU", "int", domain_of(domains.GPUs)),
    ("Dense peak per accelerator", (989.5, None, None, None), "TFLOP/s",
     f"{COMPUTE_MEMORY} 'Eight H100s' (example)",
     "Empty: none published (Apple gives no GPU FLOP/s)", "dec1", _OVERRIDE),
)  # fmt: skip

_KEYS = {
    "Scenario name": "scenario_name",
    "Model": "model",
    "Model parameters": "params_input",
    "Training tokens": "tokens",
    "Layers": "layers_input",
    "Hidden size": "hidden_input",
    "Attention heads": "heads_input",
    "Sequence length": "seq_len",
    "Micro-batch size": "micro_batch",
    "Activation recomputation": "recompute",
    "Tensor-parallel GPUs": "tp",
    "ZeRO stage": "zero",
    "Accelerator": "gpu",
    "Dense BF16 compute override": "tflops_override",
    "Memory per GPU override": "memory_override",
    "GPUs": "n_gpus",
    "Model FLOPs utilisation": "mfu",
    "Time budget": "budget",
    "Cached tokens": "cached",
    "Benchmark": "bm_name",
    "Benchmark parameters": "bm_params_m",
    "Tokens counted": "bm_tokens",
    "Seconds counted": "bm_seconds",
    "Accelerators measured": "bm_accelerators",
    "Dense peak per accelerator": "bm_peak",
    "Reused layers": "reused",
    "Extra passes per reused layer": "passes",
    "Share of steps with recurrence": "recur_share",
    "Parameters per reused layer": "layer_params",
}


def _preset(field: str, override: str) -> str:
    return f'=IF({override}>0,{override},MODEL_SPEC(Model,"{field}"))'


LINES: tuple[tuple[str, Line], ...] = (
    ("The model", Line("params", "Parameters", _preset("params_b", "Model_Parameters"), "B params",
                       'The input, else MODEL_SPEC(model, "params_b")', "small")),
    ("", Line("params_m", "Model parameters, in millions", "={params}*1000", "M params", "Billions x 1,000",
              "dec2")),
    ("", Line("layers", "Layers", _preset("layers", "Layers"), "count", 'The input, else MODEL_SPEC(model, "layers")',
              "int")),
    ("", Line("hidden", "Hidden size", _preset("hidden", "Hidden_Size"), "count",
              'The input, else MODEL_SPEC(model, "hidden")', "int")),
    ("", Line("heads", "Attention heads", _preset("heads", "Attention_Heads"), "count",
              'The input, else MODEL_SPEC(model, "heads")', "int")),
    ("", Line("head_dim", "Head dimension", "=ROUND({hidden}/{heads},0)", "count", "Hidden size / heads (PaLM's Q)",
              "int")),
    ("The run", Line("tflops", "Dense BF16 compute per GPU",
                     '=IF(Dense_BF16_Compute_Override>0,Dense_BF16_Compute_Override,GPU_SPEC(Accelerator,'
                     '"bf16_tflops"))', "TFLOP/s",
                     "The override, else GPU_SPEC(accelerator, \"bf16_tflops\"): dense, never the sparse headline",
                     "dec1")),
    ("", Line("memory", "Memory per GPU",
              '=IF(Memory_Per_GPU_Override>0,Memory_Per_GPU_Override,GPU_SPEC(Accelerator,"memory_gb"))', "GB",
              "The override, else GPU_SPEC(accelerator, \"memory_gb\")", "dec1")),
    ("", Line("cluster_peak", "Dense peak of the GPUs", "=GPUs*{tflops}/1000", "PFLOP/s",
              "GPUs x dense peak: eight H100s give 7.92 PFLOP/s (Compute and Memory 'Eight H100s')", "dec2")),
    ("", Line("rate", "Sustained model-FLOP rate", "=GPUs*{tflops}*1E+12*Model_FLOPs_Utilisation", "FLOP/s",
              "Dense peak x MFU (PaLM, arXiv:2204.02311, Appendix B)", "sci")),
    ("", Line("flops", "Training compute, 6ND", "=TRAIN_FLOPS({params},Training_Tokens)", "FLOPs",
              "6 x parameters x tokens: 2N forward + 4N backward (Compute and Memory 'Training Computation'; PaLM 4.1)",
              "sci", True)),
    ("", Line("flops_token", "Training FLOPs per token with attention",
              "=TRAIN_FLOPS_PER_TOKEN({params},{layers},{heads},{head_dim},Sequence_Length)", "FLOPs",
              "6N + 12 L H Q T (PaLM, arXiv:2204.02311, Appendix B; Compute and Memory)", "sci")),
    ("", Line("flops_attn", "Training compute with attention", "={flops_token}*Training_Tokens", "FLOPs",
              "FLOPs per token x tokens: what the GPUs execute beyond 6ND", "sci")),
    ("", Line("attn_share", "Attention's share of the compute", "=1-{flops}/{flops_attn}", "fraction",
              "12 L H Q T / (6N + 12 L H Q T): large for small models and long sequences (Compute and Memory)",
              "pct1")),
    ("", Line("params_applied", "Parameters applied per token",
              "=IF(Reused_Layers>0,RECURRENT_PARAMS_B({params},Parameters_Per_Reused_Layer/1000,Reused_Layers,"
              "Extra_Passes_Per_Reused_Layer,Share_Of_Steps_With_Recurrence),{params})", "B params",
              "RECURRENT_PARAMS_B: N + layer x reused x passes x share (Compute and Memory note 1)", "small")),
    ("", Line("flops_applied", "Training compute counting recurrence", "=TRAIN_FLOPS({params_applied},Training_Tokens)",
              "FLOPs", "6 x parameters applied x tokens: what the GPUs execute, beyond 6ND", "sci")),
    ("", Line("mfu_applied", "MFU counting recurrence", "=Model_FLOPs_Utilisation*{params_applied}/{params}",
              "fraction", "The MFU above, against executed FLOPs: the record's 18% is 23% (Compute and Memory)",
              "pct1")),
    ("", Line("seconds", "Training time",
              "=TRAIN_SECONDS({params},Training_Tokens,GPUs,{tflops},Model_FLOPs_Utilisation)", "s",
              "6ND / (GPUs x dense peak x MFU) (Compute and Memory 'Training Computation')", "dec1", True)),
    ("", Line("hours", "Training time, in hours", "={seconds}/3600", "h", "Seconds / 3,600", "dec2")),
    ("", Line("days", "Training time, in days", "={seconds}/86400", "days", "Seconds / 86,400", "dec2")),
    ("", Line("within", "Within the time budget?",
              '=IF(AND(ISNUMBER({seconds}),{seconds}<=Time_Budget),"within budget","over budget")',
              "text", "Training time against the time budget", "text", True, bad=("over budget",))),
    ("", Line("gpu_hours", "GPU-hours", "=GPU_HOURS({seconds},GPUs)", "GPU-h", "Time x GPUs / 3,600", "dec2",
              True)),
    ("", Line("cost", "List cost of the run", "={gpu_hours}*Price_Per_GPU_Hour", "USD",
              "GPU-hours x price per GPU-hour", "usd", True)),
    ("Calibrated expectation", Line("mfu_cal", "Calibrated MFU",
                                    '=EFFICIENCY("train_mfu",Accelerator,"bf16",{hidden},Sequence_Length)',
                                    "fraction", "EFFICIENCY fitted on published runs: small models reach less; "
                                    "restated against 6N", "pct1")),
    ("", Line("seconds_cal", "Training time at the calibrated MFU",
              "=TRAIN_SECONDS({params},Training_Tokens,GPUs,{tflops},{mfu_cal})", "s",
              "6ND / (GPUs x dense peak x calibrated MFU): the Calibration sheet has the rest", "dec1", True)),
    ("Sizing", Line("tokens_budget", "Tokens the time budget allows",
                    "=TRAIN_TOKENS({params},{rate},Time_Budget)", "tokens",
                    "Sustained rate x budget / 6N (Compute and Memory 'The M2')", "int", True)),
    ("", Line("chinchilla", "Chinchilla tokens for the model",
              "=CHINCHILLA_TOKENS({params},Chinchilla_Tokens_Per_Parameter)", "tokens",
              "20 tokens per parameter (Hoffmann et al. 2022, Table 3; Compute and Memory)", "int")),
    ("", Line("ratio", "Training tokens over Chinchilla tokens",
              "=CHINCHILLA_RATIO({params},Training_Tokens,Chinchilla_Tokens_Per_Parameter)", "ratio",
              "Above 1: more tokens per parameter than the rule (Compute and Memory 'Actual Competition Runs')", "dec2",
              True)),
    ("", Line("side", "Where the run sits",
              '=IF(AND(ISNUMBER({ratio}),{ratio}>1),"data-heavy","model-heavy or on it")', "text",
              "A landmark, not an optimum, for small or quantised models (Compute and Memory)", "text", True)),
    ("", Line("optimal", "Compute-optimal size for the time budget",
              "=OPTIMAL_PARAMS_B({rate},Time_Budget,Chinchilla_Tokens_Per_Parameter)", "B params",
              "sqrt(rate x budget / (6 x 20)) (Compute and Memory 'The M2')", "small")),
    ("", Line("optimal_m", "Compute-optimal size, in millions", "={optimal}*1000", "M params",
              "Billions x 1,000", "dec1", True)),
    ("", Line("optimal_tokens", "Chinchilla tokens for that size",
              "=CHINCHILLA_TOKENS({optimal},Chinchilla_Tokens_Per_Parameter)", "tokens",
              "20 x the compute-optimal size", "int")),
    ("Memory and data", Line("train_mem", "Training memory before activations",
                             "=TRAIN_MEMORY_GB({params},Training_Bytes_Per_Parameter)", "GB",
                             "Parameters x 16 bytes: weights, gradients, master weights, Adam (ZeRO, "
                             "arXiv:1910.02054, 3.1)", "dec2", True)),
    ("", Line("fits_gpu", "Fits on one GPU before activations?",
              '=IF(AND(ISNUMBER({train_mem}),ISNUMBER({memory}),{train_mem}<={memory}),"yes",'
              '"no: shard it across the GPUs")',
              "text",
              "The whole state on one GPU, unsharded (Compute and Memory's 16 bytes a parameter)", "text")),
    ("", Line("dp", "Data-parallel GPUs", "=GPUs/Tensor_Parallel_GPUs", "count",
              "GPUs / tensor-parallel GPUs: the replicas ZeRO shards the state over", "int")),
    ("", Line("state", "Model state per GPU",
              "=TRAIN_STATE_GB({params},OPTIMIZER_BYTES(Optimizer),ZeRO_Stage,{dp},Tensor_Parallel_GPUs)", "GB",
              "Weights + gradients + optimizer states of a slice, sharded by ZeRO (Rajbhandari 2020, Fig. 1)",
              "dec2")),
    ("", Line("layers_applied", "Layer passes a forward pass makes", "={layers}+Reused_Layers*"
              "Extra_Passes_Per_Reused_Layer", "count", "Layers + reused layers x extra passes: each pass keeps its "
              "activations (Compute and Memory note 7)", "int")),
    ("", Line("activations", "Activations per GPU",
              "=ACTIVATION_GB(Sequence_Length,Micro_Batch_Size,{hidden},{heads},{layers_applied},Tensor_Parallel_GPUs,"
              "Sequence_Parallelism,Activation_Recomputation,Dropout)", "GB",
              "Per layer pass: s b h 34 (+ 5 a s / h if scores kept), less recomputed (Korthikanti 2022, T. 2)",
              "dec2")),
    ("", Line("mem_gpu", "Training memory per GPU", "={state}+{activations}", "GB",
              "State + activations; logits, loss and allocator slack come on top (Compute and Memory: record 41.7 GB)",
              "dec1", True)),
    ("", Line("fits_mem", "Fits in each GPU's memory?",
              '=IF(AND(ISNUMBER({mem_gpu}),ISNUMBER({memory}),{mem_gpu}<={memory}),"fits","does not fit")', "text",
              "Training memory per GPU against the GPU's memory", "text", True, bad=("does not fit",))),
    ("", Line("passes", "Passes over the cached tokens", "=DATA_PASSES(Training_Tokens,Cached_Tokens)", "passes",
              "Tokens / cached tokens; above 1 repeats data (Compute and Memory 'Which FineWeb?')", "dec2", True)),
    ("Your measurements", Line("implied_gh", "MFU your GPU-hours imply, else calibrated",
                               "=IF(Measured_GPU_Hours>0,MFU({params},Training_Tokens/(Measured_GPU_Hours*3600),1,"
                               "{tflops}),{mfu_cal})", "fraction",
                               "6N x tokens per GPU-second / dense peak (MFU; PaLM Appendix B)", "pct1")),
    ("", Line("implied", "MFU your measurements imply, else calibrated",
              "=IF(Measured_Training_Throughput>0,MFU({params},Measured_Training_Throughput,GPUs,{tflops}),"
              "{implied_gh})", "fraction", "The throughput if given, else the GPU-hours, else the calibrated MFU",
              "pct1")),
)  # fmt: skip

RANGED = "Calibrated expectation"
"""The Outputs section whose figures carry their range (low and high in columns E and F)."""
RANGED_LINES = {"mfu_cal": "mfu", "seconds_cal": "cal_seconds"}
"""Outputs lines with a range, and the Calibration range block's line each is read from."""

# The Calibration sheet: the active run at three MFUs, in columns C, D and E ({mfu} is the column's).
CALIBRATION_COLUMNS = ("Assumed (Inputs)", "Calibrated", "Measured (yours)")
CALIBRATION_LINES: tuple[Line, ...] = (
    Line("cal_seconds", "Training time", "=TRAIN_SECONDS({params},Training_Tokens,GPUs,{tflops},{mfu})", "s",
         "6ND / (GPUs x dense peak x MFU) (Compute and Memory)", "dec1"),
    Line("cal_days", "Training time, in days", "={cal_seconds}/86400", "days", "Seconds / 86,400", "dec2"),
    Line("cal_within", "Within the time budget?",
         '=IF(AND(ISNUMBER({cal_seconds}),{cal_seconds}<=Time_Budget),"within budget","over budget")',
         "text", "Training time against the time budget", "text", bad=("over budget",)),
    Line("cal_gpu_hours", "GPU-hours", "=GPU_HOURS({cal_seconds},GPUs)", "GPU-h", "Time x GPUs / 3,600", "dec2"),
    Line("cal_cost", "List cost of the run", "={cal_gpu_hours}*Price_Per_GPU_Hour", "USD",
         "GPU-hours x price per GPU-hour", "usd"),
    Line("cal_tokens_budget", "Tokens the time budget allows",
         "=TRAIN_TOKENS({params},GPUs*{tflops}*1E+12*{mfu},Time_Budget)", "tokens",
         "GPUs x dense peak x MFU x budget / 6N (Compute and Memory 'The M2')", "int"),
    Line("cal_optimal_m", "Compute-optimal size for the time budget",
         "=OPTIMAL_PARAMS_B(GPUs*{tflops}*1E+12*{mfu},Time_Budget,Chinchilla_Tokens_Per_Parameter)*1000",
         "M params", "sqrt(rate x budget / 120) (Compute and Memory 'The M2')", "dec1"),
)  # fmt: skip

USUAL: tuple[tuple[str, str, str, Any], ...] = (
    ("params_input", "Model parameters", "B params", domains.ParamsB),
    ("tflops_override", "Dense BF16 compute", "TFLOP/s", domains.TFLOPs),
    ("memory_override", "Memory per GPU", "GB", domains.MemoryGB),
    ("Price_Per_GPU_Hour", "Price per GPU-hour", "USD/GPU-h", domains.Price),
    ("bm_peak", "Benchmark peak", "TFLOP/s", domains.TFLOPs),
)
"""Inputs whose argument domain has a usual range (xlsxplan.domains): a value outside it gets a Checks row."""

MEASURED_LINES: tuple[Line, ...] = (
    Line("bm_tps", "Observed throughput", "={bm_tokens}/{bm_seconds}", "tokens/s", "Tokens counted / seconds",
         "int"),
    Line("bm_params_b", "Benchmark parameters, in billions", "={bm_params_m}/1000", "B params", "Millions / 1,000",
         "small"),
    Line("bm_c6n", "6N-equivalent rate", "=FLOPS_6N({bm_params_b},{bm_tps})", "FLOP/s",
         "6 x parameters x tokens/s: derived, not measured (Compute and Memory 'The M2')", "sci"),
    Line("bm_tflops", "6N-equivalent rate, in TFLOP/s", "={bm_c6n}/1E+12", "TFLOP/s",
         "The record: 1.41 PFLOP/s = 1,413 TFLOP/s (Compute and Memory 'Eight H100s')", "dec2"),
    Line("bm_peak_total", "Dense peak of the accelerators",
         '=IF({bm_peak}>0,{bm_accelerators}*{bm_peak},"not published")', "TFLOP/s",
         "Accelerators x dense peak; Apple publishes none for the M2's GPU", "dec1"),
    Line("bm_mfu", "Model FLOPs utilisation",
         '=IF({bm_peak}>0,MFU({bm_params_b},{bm_tps},{bm_accelerators},{bm_peak}),"no published peak")',
         "fraction", "6N-equivalent rate / dense peak: the record reaches about 18% (Compute and Memory)", "pct"),
    Line("bm_optimal", "Compute-optimal size for the time budget",
         "=OPTIMAL_PARAMS_B({bm_c6n},Time_Budget,Chinchilla_Tokens_Per_Parameter)*1000", "M params",
         "sqrt(C t / 120): record 84M for 600 s; M2 about 1.7-2.4M (Compute and Memory 'The M2')", "dec2"),
    Line("bm_tokens_budget", "Tokens the budget allows the plan's model",
         "=TRAIN_TOKENS({params},{bm_c6n},Time_Budget)", "tokens",
         "Rate x budget / 6N, for the active scenario's model", "int"),
    Line("bm_seconds_run", "Time to train the plan's model on its tokens",
         "=RUN_SECONDS({params},Training_Tokens,{bm_c6n})", "s",
         "6ND / rate: Compute and Memory projects 8-16 days on the M2, about 20 from the anchor", "int"),
    Line("bm_days", "Time to train the plan's model, in days", "={bm_seconds_run}/86400", "days",
         "Seconds / 86,400", "dec1"),
)  # fmt: skip


def _inputs(book: Book, lists: dict[str, str]) -> Sheet:
    sh = book.sheet(
        "Inputs",
        f"Every assumption, once. Orange cells are inputs; shipped values are examples ({COMPUTE_MEMORY}): replace "
        "them, and their Source and As-of date.",
        ["Label", "Value", "Unit", "Source", "As-of date", "Comment"],
    )
    sh.section("Scenario", "Type each case in G to J; column B shows the active case, which feeds the plan")
    sh.case_headings("Scenario block: one column per case", "Active")
    name_row = sh.row + 2
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
    sh.line(
        Line(
            "scenario_number",
            "Scenario number",
            f"=MATCH(Active_Scenario,$G${name_row}:$J${name_row},0)",
            "index",
            "Position of the active case (MATCH)",
            "int",
        )
    )
    book.define("Scenario_Number", "Inputs", f"$B${sh.row - 1}")
    for label, values, unit, source, comment, fmt, kind in SCENARIO_ROWS:
        sh.case_input(
            label,
            values,
            unit,
            source,
            comment,
            fmt,
            _validation(label, kind, lists),
            selector="Scenario_Number",
            key=_KEYS[label],
        )
    book.scenario_name = "Scenario_Name"

    sh.section("Rules of thumb")
    sh.input(
        "Chinchilla tokens per parameter",
        20,
        "tokens/param",
        "Rule of thumb: Hoffmann et al. 2022, Table 3",
        "Chinchilla's 70B model on 1.4T tokens",
        "dec1",
        validation_for(domain_of(domains.TokensPerParam), "Chinchilla tokens per parameter"),
    )
    sh.input(
        "Training bytes per parameter",
        16,
        "bytes",
        "Rule of thumb: ZeRO, arXiv:1910.02054, 3.1",
        "Mixed-precision Adam: 2 + 2 + 4 + 8 bytes",
        "int",
        validation_for(domains.Domain("number", 0, 1000, low_open=True), "Training bytes per parameter"),
    )

    sh.section("Training setup", "What the memory per GPU depends on besides the model")
    optimizers = DataValidation(type="list", formula1='"' + ",".join(OPTIMIZERS) + '"', showErrorMessage=True)
    optimizers.error = "Optimizer: one of " + ", ".join(OPTIMIZERS)
    sh.input(
        "Optimizer",
        "adam",
        "name",
        "Example; Rajbhandari et al. 2020, 3.1",
        "Adam keeps 12 bytes a parameter (OPTIMIZER_BYTES)",
        "text",
        optimizers,
    )
    sh.input(
        "Sequence parallelism",
        1,
        "flag",
        "Example; Korthikanti et al. 2022",
        "1 splits norms and dropouts over the TP GPUs",
        "int",
        validation_for(domain_of(domains.Flag), "Sequence parallelism"),
    )
    sh.input(
        "Dropout",
        0,
        "flag",
        "Example; Korthikanti et al. 2022",
        "1 keeps 1-byte dropout masks; Golf runs use none",
        "int",
        validation_for(domain_of(domains.Flag), "Dropout"),
    )

    sh.section("Cost and basis of estimate", "Estimate, not a quote: check your provider's current price")
    sh.input(
        "Price per GPU-hour",
        2.5,
        "USD/GPU-h",
        f"{ENVELOPE} §6 (example)",
        "List price of one GPU for an hour",
        "usd",
        validation_for(domain_of(domains.Price), "Price per GPU-hour"),
    )
    sh.input(
        "Accelerator the price is for",
        "H100-SXM",
        "name",
        "Example: the price above is an H100's",
        "Checks flag a scenario on another accelerator",
        "text",
    )
    date_dv = DataValidation(type="date", operator="greaterThan", formula1="36526")
    sh.input(
        "Price date",
        TEMPLATE_DATE,
        "date",
        "Example: when the price was checked",
        "Prices change; restate the date with the price",
        "date",
        date_dv,
    )
    sh.input("Region", "Any (example)", "text", "Example", "Where the GPUs run", "text")
    basis = DataValidation(type="list", formula1='"On-demand,Committed 1 year,Committed 3 years,Spot"')
    sh.input("Pricing basis", "On-demand", "text", "Example", "On-demand, committed or spot", "text", basis)
    sh.input("Billing currency", "USD", "ISO 4217", "Example", "Every cost line is in this currency", "text")

    _search_inputs(sh)
    range_inputs(book, sh)
    sh.section("Your measurements (optional)", "Of the active scenario's run: see the Calibration sheet")
    sh.input(
        "Measured training throughput",
        None,
        "tokens/s",
        "Example: empty, not measured",
        "All GPUs together, on the active case's model",
        "int",
        validation_for(domain_of(domains.TokensPerS), "Measured training throughput", _NOT_MEASURED),
    )
    sh.input(
        "Measured GPU-hours",
        None,
        "GPU-h",
        "Example: empty, not measured",
        "Of the whole run; the record: 8 x 599.6 s = 1.33",
        "dec2",
        validation_for(domains.Domain("number", 0, 1e12, low_open=True), "Measured GPU-hours", _NOT_MEASURED),
    )

    sh.section("Measured rates", "Short benchmarks: their 6N-equivalent rate sizes a run (Compute and Memory 'The M2')")
    sh.case_headings("Benchmarks: one column per measurement", "", "Benchmark")
    for label, values, unit, source, comment, fmt, kind in BENCHMARK_ROWS:
        sh.case_input(label, values, unit, source, comment, fmt, _validation(label, kind, lists), key=_KEYS[label])
    sh.finish()
    return sh


SEARCH_ARGUMENTS: dict[str, str] = {
    "model": "Model_Searched",
    "params_b": "Parameters_Searched",
    "tokens": "Tokens_Searched",
    "tokens_per_param": "Chinchilla_Tokens_Per_Parameter",
    "budget_usd": "Budget_For_The_Run",
    "max_days": "Deadline_For_The_Run",
    "max_gpus": "GPU_Limit",
    "gpus": 'Accelerator&"="&Price_Per_GPU_Hour',
    "seq_len": "Sequence_Length_Searched",
}
"""What the Options sheet passes TRAIN_OPTIONS for each training-plan input (:data:`TRAIN_INPUTS`' names), in its
argument order: the layout search's inputs on Inputs, the rule of thumb's tokens per parameter, and the active
scenario's accelerator at the price on Inputs; the inputs after these take their defaults, as ``xlsxplan plan
--train`` gives them."""

OPTIONS_ROWS = 32
"""Options the sheet has rows for: a GPU count (powers of two up to the limit, and above it as far as the deadline
needs) x two precisions for one accelerator. More are listed by ``xlsxplan plan --train``, and the sheet says so."""

OPTION_COLUMNS: tuple[tuple[str, str, int, str], ...] = (
    ("gpu", "Accelerator", 11, "text"),
    ("gpus", "GPUs", 7, "int"),
    ("tp", "Tensor parallel", 7, "int"),
    ("pp", "Pipeline parallel", 8, "int"),
    ("dp", "Data parallel", 7, "int"),
    ("ep", "Expert parallel", 7, "int"),
    ("cp", "Context parallel", 7, "int"),
    ("zero", "ZeRO stage", 6, "int"),
    ("micro_batch", "Micro-batch", 7, "int"),
    ("global_batch", "Global batch, sequences", 9, "int"),
    ("recompute", "Recompute", 10, "text"),
    ("precision", "Precision", 9, "text"),
    ("params_b", "Parameters, B", 9, "dec2"),
    ("tokens", "Tokens", 11, "billions"),
    ("memory_gb_per_gpu", "Memory a GPU, GB", 9, "dec1"),
    ("step_s", "Step, s", 8, "dec2"),
    ("mfu", "MFU", 7, "pct1"),
    ("days", "Days", 8, "dec1"),
    ("gpu_hours", "GPU-hours", 10, "int"),
    ("usd", "USD", 11, "usd0"),
    ("price_basis", "Price basis", 9, "text"),
    ("goodput", "Goodput", 8, "pct1"),
    ("feasible", "Feasible", 8, "general"),
    ("reason", "Why rejected", 90, "text"),
    ("checkpoint_interval_s", "Checkpoint every, s", 10, "int"),
    ("calibrated_mfu", "Calibrated MFU", 9, "pct1"),
)
"""The Options sheet's columns, TRAIN_OPTIONS's (:data:`TRAIN_TABLE_HEADER`) in its order: (field, heading, width,
format). The tokens column shows billions (B tokens)."""
OPTIONS_FIRST_ROW = HEADER_ROWS + 1
"""The row of TRAIN_OPTIONS's own header row (its field names); the options follow it."""


def search_call() -> str:
    """TRAIN_OPTIONS for the search's inputs on Inputs (:data:`SEARCH_ARGUMENTS`, in the function's order)."""
    names = [p.name for p in TRAIN_INPUTS[: len(SEARCH_ARGUMENTS)]]
    if names != list(SEARCH_ARGUMENTS):
        raise ValueError(f"SEARCH_ARGUMENTS must follow TRAIN_INPUTS' order: {names}")
    return "TRAIN_OPTIONS(" + ",".join(SEARCH_ARGUMENTS.values()) + ")"


def options_columns() -> dict[str, str]:
    """Each Options table column's letter, by TRAIN_OPTIONS's field name (column A holds the option's number)."""
    return {key: get_column_letter(i + 2) for i, (key, _, _, _) in enumerate(OPTION_COLUMNS)}


def _search_inputs(sh: Sheet) -> None:
    """The layout search's own inputs (the Options sheet, TRAIN_OPTIONS): the question "the cheapest layout that
    fits and finishes" asks, shipped as the budget case of a finance analyst (a $200,000 budget of H100 time at the
    price on Inputs, at most 14 days and 256 GPUs, the model's size to choose)."""
    sh.section("Layout search (Options sheet)", "The cheapest layout that fits and finishes: xlsxplan plan --train")
    sh.input(
        "Model searched",
        "none",
        "name",
        "Example: the size to choose",
        "A preset's shape; none: a dense model of that size",
        "text",
    )
    sh.input(
        "Parameters searched",
        0,
        "B params",
        "Example: the size to choose",
        "0: the preset's, else the compute-optimal size",
        "dec2",
        validation_for(domain_of(domains.ParamsBOrZero), "Parameters searched"),
    )
    sh.input(
        "Tokens searched",
        0,
        "tokens",
        "Example: Chinchilla's tokens",
        "0: tokens per parameter (Rules of thumb) x size",
        "int",
        validation_for(domain_of(domains.TokensOrZero), "Tokens searched"),
    )
    sh.input(
        "Budget for the run",
        200_000,
        "USD",
        "Example: a finance analyst's budget",
        "Most the run may cost, lost time included; 0: none",
        "usd0",
        validation_for(domain_of(domains.USDOrZero), "Budget for the run"),
    )
    sh.input(
        "Deadline for the run",
        14,
        "days",
        "Example",
        "Longest the run may take; 0: no deadline",
        "dec1",
        validation_for(domain_of(domains.DaysOrZero), "Deadline for the run"),
    )
    sh.input(
        "GPU limit",
        256,
        "count",
        "Example",
        "Most GPUs the run may hold",
        "int",
        validation_for(domain_of(domains.GPUs), "GPU limit"),
    )
    sh.input(
        "Sequence length searched",
        4096,
        "tokens",
        "Example (xlsxplan plan --train's default)",
        "Training sequence length of the searched run",
        "int",
        validation_for(domain_of(domains.Tokens), "Sequence length searched"),
    )


def _validation(label: str, kind: Any, lists: dict[str, str]) -> DataValidation | None:
    if kind == "recompute":
        dv = DataValidation(type="list", formula1='"' + ",".join(RECOMPUTE_MODES) + '"', showErrorMessage=True)
        dv.error = f"{label}: {', '.join(RECOMPUTE_MODES[:-1])} or {RECOMPUTE_MODES[-1]}"
        return dv
    if isinstance(kind, str):
        return DataValidation(type="list", formula1=lists[kind], showErrorMessage=False)
    return validation_for(kind, label, _NOT_GIVEN.get(label, ""))


def _calculations(book: Book) -> Sheet:
    sh = book.sheet(
        "Calculations",
        f'The active scenario, line by line, after "{COMPUTE_MEMORY_TITLE}". Every cell is a formula: click one '
        "to read it. Inputs appear by name.",
        ["Line item", "Value", "Unit", "Equation and source", "", ""],
    )
    for section, line in LINES:
        if section:
            sh.section(section)
        sh.line(line)
    sh.finish()
    return sh


def _measured(book: Book) -> Sheet:
    sh = book.sheet(
        "Measured rates",
        "Each benchmark's tokens per second turned into a 6N-equivalent rate, then a model size for the time "
        f'budget and a projection of the active scenario\'s run (the recipe of "{COMPUTE_MEMORY_TITLE}").',
        ["Line item", "Unit", *(f"Benchmark {i}" for i in range(1, 5)), "Equation and source"],
        layout="cases",
    )
    locals_: list[dict[str, Ref | str]] = [
        {_KEYS[row[0]]: book.ref(f"{_KEYS[row[0]]}@{i}") for row in BENCHMARK_ROWS} for i in range(len(BENCHMARKS))
    ]
    sh.section("The benchmarks (from Inputs, columns G to J)")
    line = Line("bm_name:shown", "Benchmark", "={bm_name}", "text", "Inputs", "text")
    names = book.refs["Measured rates:bm_name"] = sh.side_by_side(line, locals_)
    sh.wrap_row(names.row, 2, SIDE_COLUMNS)  # a benchmark's name may be longer than its column: two lines
    sh.section("From tokens per second to a model size")
    for line in MEASURED_LINES:
        book.refs[f"Measured rates:{line.key}"] = sh.side_by_side(line, locals_)
    sh.finish()
    return sh


def _options(book: Book) -> Sheet:
    """The Options sheet: every layout of the run the layout search on Inputs asks for, ranked as ``xlsxplan plan
    --train`` ranks them (TRAIN_OPTIONS's table, a cell each: ``INDEX(TRAIN_OPTIONS(...), row, column)``; the
    function plans the search once for its arguments and remembers it), in rows enough for one accelerator.

    A formula a cell, not one array formula over the range: the portable edition keeps each cell's value with the
    formula that computes it again (``xlsxplan recalc``), and a saved array formula's other cells hold cached values
    that the headless engine reads as occupied."""
    if list(TRAIN_TABLE_HEADER) != [k for k, _, _, _ in OPTION_COLUMNS]:
        raise ValueError("OPTION_COLUMNS must name TRAIN_OPTIONS's columns in order")
    sh = book.sheet(
        "Options",
        "Every layout of the run the layout search on Inputs asks for: TRAIN_OPTIONS (xlsxplan plan --train), the "
        "feasible ones first, cheapest first; each rejected layout says why, with the amounts.",
        ["Option", *(heading for _, heading, _, _ in OPTION_COLUMNS)],
    )
    ws = sh.ws
    ws.column_dimensions["A"].width = 8
    g = options_columns()
    cols = list(g.values())
    table_columns(ws, cols, [width for _, _, width, _ in OPTION_COLUMNS])
    first, last = OPTIONS_FIRST_ROW, OPTIONS_FIRST_ROW + OPTIONS_ROWS
    count_row = last + 2
    book.refs["options_count"] = Ref(sh.name, count_row, "B")
    call = search_call()
    at = f"ROW()-ROW($A${HEADER_ROWS}),COLUMN()-COLUMN($A${HEADER_ROWS})"
    for r in range(first, last + 1):
        for col, (_, _, _, fmt) in zip(cols, OPTION_COLUMNS):
            cell = ws[f"{col}{r}"]
            body = f"INDEX({call},{at})"
            # past the options listed, empty (INDEX beyond the table would be #REF!)
            cell.value = "=" + (body if r == first else f'IF(ROW()-ROW($A${first})>$B${count_row},"",{body})')
            cell.style = "Formula" if r > first else "Explanatory Text"
            cell.number_format = FMT[fmt]
            if r == first:  # TRAIN_OPTIONS's own field names under the headings: shrunk to their column
                cell.alignment = Alignment(shrink_to_fit=True)
        if r > first:
            ws[f"A{r}"] = r - first
            ws[f"A{r}"].style, ws[f"A{r}"].number_format = "Label", FMT["int"]
    put_text(ws[f"A{first}"], "TRAIN_OPTIONS", "Explanatory Text")
    book.refs["Options:table"] = Ref(sh.name, first, cols[0], cols[-1])
    sh.row = count_row
    sh.line(
        Line(
            "options_count",
            "Options the search lists",
            f"=ROWS({call})-1",
            "count",
            f"The sheet shows the first {OPTIONS_ROWS}: xlsxplan plan --train lists every one",
            "int",
        )
    )
    for text in (
        "The search plans the run the layout search on Inputs asks for (the model, or its size to choose from the "
        "budget and deadline: N = sqrt(C t / 120)), on the active scenario's accelerator at the price on Inputs: "
        "every GPU count (powers of two), tensor x pipeline x data x expert parallel, ZeRO stage, micro-batch, "
        "recompute and precision; the cheapest layout of each GPU count and precision is listed.",
        "Memory a GPU: weights, gradients and optimizer states by ZeRO stage and the activations in flight, against "
        "90% of the GPU's memory. Step time: the calibrated MFU (EFFICIENCY train_mfu) plus each parallel "
        "dimension's traffic and the pipeline bubble. Goodput: interruptions at Llama 3's rate a GPU-hour, "
        "checkpoints every Young's interval, a restart each. Days include the time lost.",
    ):
        sh.text(text)
    sh.finish()
    # the table across three pages, the option's number repeated: the layout, its figures, then the reasons
    figures, reason = g["params_b"], g["reason"]
    layout_end = get_column_letter(column_index_from_string(figures) - 1)
    before = get_column_letter(column_index_from_string(reason) - 1)
    ws.print_area = [
        f"A1:{layout_end}{sh.row - 1}",
        f"{figures}1:{before}{sh.row - 1}",
        f"{reason}1:{cols[-1]}{sh.row - 1}",
    ]
    ws.print_title_cols = "A:A"
    return sh


def _calibration(book: Book) -> Sheet:
    sh = book.sheet(
        "Calibration",
        "The active scenario's run at the MFU assumed on Inputs, at the calibrated MFU (EFFICIENCY, fitted on "
        "published runs) and at what your measurements on Inputs imply.",
        ["Line item", "Unit", *CALIBRATION_COLUMNS, "", "Equation and source"],
        layout="cases",
    )
    measured_heading(sh, ("Measured_GPU_Hours", "Measured_Training_Throughput"))
    locals_: list[dict[str, Ref | str]] = [{}, {}, {}]
    sh.section("Model FLOPs utilisation", "Measured figures from Inputs, section 'Your measurements'")
    mfu = Line(
        "mfu",
        "Model FLOPs utilisation",
        "",
        "fraction",
        'EFFICIENCY("train_mfu", GPU, "bf16", hidden, seq. length); yours: from Calculations',
        "pct1",
    )
    book.refs["Calibration:mfu"] = sh.side_by_side(
        mfu, locals_, ["=Model_FLOPs_Utilisation", "={mfu_cal}", "={implied}"]
    )
    sh.section("The active scenario's run at each MFU")
    for line in CALIBRATION_LINES:
        book.refs[f"Calibration:{line.key}"] = sh.side_by_side(line, locals_)

    def at(q: str) -> str:
        return f'=EFFICIENCY("train_mfu",Accelerator,"bf16",{{hidden}},Sequence_Length,{q})'

    ranged = Line(
        "mfu",
        "Model FLOPs utilisation",
        "",
        "fraction",
        "EFFICIENCY at the quantile: its fit times that quantile of train_mfu's residuals",
        "pct1",
    )
    range_block(
        book,
        sh,
        [(ranged, [at(RANGE_LOW), "={mfu_cal}", at(RANGE_HIGH)])],
        CALIBRATION_LINES,
        "The same formulas at the MFU of the quantiles on Inputs",
    )
    sh.skip()
    sh.text(
        "The measured column falls back to the calibrated MFU where no measurement is given; a measured "
        "throughput wins over measured GPU-hours. An MFU above 100% means the measurement and the accelerator's "
        "peak disagree: see Checks."
    )
    sh.finish()
    return sh


def _outputs(book: Book) -> Sheet:
    sh = book.sheet(
        "Outputs",
        "The plan for the active scenario: key results (bold) and links to Calculations (green).",
        ["Result", "Value", "Unit", "What it means", "", ""],
    )
    sh.section("Configuration")
    for name, label, unit, fmt in (
        ("Accelerator", "Accelerator", "preset", "text"),
        ("GPUs", "GPUs", "count", "int"),
    ):
        sh.line(Line(f"config:{name}", label, f"={name}", unit, "The active scenario, from Inputs", fmt))
    for section, line in LINES:
        if section:
            sh.section(section, "Low to high: P10 to P90 of published runs" if section == RANGED else "")
            if section == RANGED:
                range_headings(sh)
        sh.link(line.key, line.label, line.unit, line.fmt, "", line.key_result, line.bad)
        if line.key in RANGED_LINES:  # its low and high beside it, from the Calibration sheet's range block
            range_cells(book, sh, RANGED_LINES[line.key], line.fmt, line.key)
        if line.key == "seconds_cal":  # the run's cost at the calibrated MFU, with its range
            cost = book.ref("Calibration:cal_cost")
            book.refs["cal_cost:calibrated"] = Ref(cost.sheet, cost.row, SIDE_COLUMNS[1])
            sh.link(
                "cal_cost:calibrated",
                "List cost of the run at the calibrated MFU",
                "USD",
                "usd",
                "The Calibration sheet's calibrated column",
                False,
            )
            range_cells(book, sh, "cal_cost", "usd")
            sh.line(
                Line(
                    "seconds_cal_range",
                    "Training time at the calibrated MFU, with its range",
                    range_sentence("{seconds_cal}", "{seconds_cal:low}", "{seconds_cal:high}", 1, " s"),
                    "text",
                    "The low and high quantiles' figures beside it",
                    "text",
                )
            )
    _search_outputs(book, sh)
    sh.section("Basis of estimate", "Estimate, not a quote")
    for name, label, unit, fmt in (
        ("Price_Per_GPU_Hour", "Price per GPU-hour", "USD/GPU-h", "usd"),
        ("Pricing_Basis", "Pricing basis", "text", "text"),
        ("Price_Date", "Price date", "date", "date"),
        ("Region", "Region", "text", "text"),
        ("Billing_Currency", "Billing currency", "ISO 4217", "text"),
    ):
        sh.line(Line(f"basis:{name}", label, f"={name}", unit, "From Inputs", fmt))
    r = sh.text(
        "This is an estimate, not a quote: cloud prices change and differ by region, commitment and provider.",
        style="Note",
    )
    note_block(sh.ws, r, sh.row - 1)
    sh.finish()
    return sh


SEARCH_LINES: tuple[tuple[str, str, str, str, str], ...] = (
    ("params_b", "search_params", "Parameters of the searched run", "B params", "dec2"),
    ("tokens", "search_tokens", "Training tokens of the searched run", "B tokens", "billions"),
    ("gpus", "search_gpus", "GPUs", "count", "int"),
    ("memory_gb_per_gpu", "search_memory", "Training memory per GPU", "GB", "dec1"),
    ("mfu", "search_mfu", "MFU after communication and the pipeline bubble", "fraction", "pct1"),
    ("calibrated_mfu", "search_mfu_cal", "Calibrated MFU the step time starts from", "fraction", "pct1"),
    ("goodput", "search_goodput", "Goodput: the time not lost to interruptions", "fraction", "pct1"),
    ("days", "search_days", "Wall days, lost time included", "days", "dec1"),
    ("gpu_hours", "search_gpu_hours", "GPU-hours", "GPU-h", "int"),
    ("usd", "search_cost", "List cost of the run", "USD", "usd0"),
)
"""The Options table's first row on Outputs: (the table's column, the line's key, label, unit, format)."""

_BESIDE = {
    "search_params": '="The active scenario\'s model: "&FIXED({params},1)&"B"',
    "search_days": '="The active scenario\'s run (Calculations): "&FIXED({days},1)&" days"',
    "search_gpu_hours": '="The active scenario\'s run (Calculations): "&FIXED({gpu_hours},0)&" GPU-h"',
    "search_cost": '="The active scenario\'s run (Calculations): $"&FIXED({cost},0)',
    "search_memory": '="The GPU\'s memory: "&FIXED({memory},1)&" GB, the search using 90%"',
}
"""The calculator's own figure beside the search's, where they answer the same question."""


def _search_outputs(book: Book, sh: Sheet) -> None:
    """On Outputs: the layout the search ranks first (the Options table's first row), beside the calculator's
    figures, and the assumptions that move it."""
    g = {key: f"Options!${col}${OPTIONS_FIRST_ROW + 1}" for key, col in options_columns().items()}
    book.refs["search_feasible"] = Ref("Options", OPTIONS_FIRST_ROW + 1, options_columns()["feasible"])
    sh.section("Layout search (Options sheet)", "The cheapest layout that fits and finishes: rank 1 of TRAIN_OPTIONS")
    sh.line(
        Line(
            "search_layout",
            "Layout ranked first",
            f'={g["gpu"]}&" x "&{g["gpus"]}&": TP "&{g["tp"]}&" x PP "&{g["pp"]}&" x DP "&{g["dp"]}&", ZeRO-"&'
            f'{g["zero"]}&", micro-batch "&{g["micro_batch"]}&", recompute "&{g["recompute"]}&", "&{g["precision"]}',
            "text",
            "Accelerator x GPUs: tensor x pipeline x data parallel, ZeRO stage, micro-batch, recompute, precision",
            "text",
            key_result=True,
        )
    )
    sh.line(
        Line(
            "search_misses",
            "Limits the layout ranked first misses",
            f'=IF({g["reason"]}="","none listed",{g["reason"]})',
            "text",
            "Which limit binds, and by how much (Checks flags it)",
            "text",
        )
    )
    sh.line(
        Line(
            "search_status",
            "Fits, and finishes within the limits?",
            f'=IF({g["feasible"]}=TRUE,"yes: fits, within the budget, the deadline and the GPU limit",'
            '"no: "&{search_misses})',
            "text",
            "The limits it misses are on the line above",
            "text",
            key_result=True,
        )
    )
    for column, key, label, unit, fmt in SEARCH_LINES:
        sh.line(Line(key, label, f"={g[column]}", unit, _BESIDE.get(key, "Options, rank 1"), fmt, key == "search_cost"))
    sh.section("What moves the layout search", "Inputs, section 'Layout search'; the accelerator and price above")
    for name, label, unit, fmt in (
        ("Budget_For_The_Run", "Budget for the run", "USD", "usd0"),
        ("Deadline_For_The_Run", "Deadline for the run", "days", "dec1"),
        ("GPU_Limit", "GPU limit", "count", "int"),
        ("Price_Per_GPU_Hour", "Price per GPU-hour searched", "USD/GPU-h", "usd"),
        ("Chinchilla_Tokens_Per_Parameter", "Tokens per parameter", "tokens/param", "dec1"),
        ("Sequence_Length_Searched", "Sequence length searched", "tokens", "int"),
        ("Parameters_Searched", "Parameters searched (0: size to choose)", "B params", "dec2"),
    ):
        sh.line(Line(f"search:{name}", label, f"={name}", unit, "From Inputs", fmt))


def _checks(book: Book) -> Sheet:
    sh = book.sheet(
        "Checks",
        "Each row is 1 when something is wrong and 0 when it is fine; the master check is 1 if any row is.",
        ["Check", "Result", "Unit", "What it tests", "", ""],
    )
    sh.section("The active scenario", "A figure that is no number counts as a problem: NOT(ISNUMBER(...))")
    sh.check(
        "Training time over the time budget",
        "=IF(OR(NOT(ISNUMBER({seconds})),{seconds}>Time_Budget),1,0)",
        "The run does not finish within the budget at this MFU",
    )
    sh.check(
        "The price is for another accelerator",
        "=IF(Accelerator_The_Price_Is_For<>Accelerator,1,0)",
        "The run's cost is GPU-hours at this price: restate it for the active scenario's accelerator",
    )
    sh.check(
        "MFU outside 0 to 100%",
        "=IF(OR(Model_FLOPs_Utilisation>1,Model_FLOPs_Utilisation<=0),1,0)",
        "Model FLOPs utilisation must be above 0 and at most 1 (PaLM, Appendix B)",
    )
    sh.check(
        "Training state too big for all the GPUs together",
        "=IF(OR(NOT(AND(ISNUMBER({train_mem}),ISNUMBER({memory}))),{train_mem}>GPUs*{memory}),1,0)",
        "Weights, gradients and optimiser state exceed the GPUs' memory even fully sharded (ZeRO-3)",
    )
    sh.check(
        "Training memory per GPU above the GPU's memory",
        "=IF(OR(NOT(AND(ISNUMBER({mem_gpu}),ISNUMBER({memory}))),{mem_gpu}>{memory}),1,0)",
        "Model state + activations per GPU: shard more (ZeRO), recompute, or cut the micro-batch",
    )
    sh.check(
        "GPUs not a whole number of tensor-parallel groups",
        "=IF(ROUND(GPUs/Tensor_Parallel_GPUs,0)*Tensor_Parallel_GPUs<>GPUs,1,0)",
        "The data-parallel GPUs must be a whole number",
    )
    sh.check(
        "A measurement beyond the GPUs' peak",
        "=IF(OR(NOT(ISNUMBER({implied})),{implied}>1),1,0)",
        "Your throughput or GPU-hours imply an MFU above 100%: check the measurement and the accelerator",
    )
    sh.check(
        "No layout found that fits and finishes",
        "=IF({search_feasible}=TRUE,0,1)",
        "Options, rank 1: over the budget, the deadline or the GPU limit, or too large to fit (Outputs says which)",
    )
    model = [book.ref(k) for k in ("params", "layers", "hidden", "heads")]
    gpu = [book.ref(k) for k in ("tflops", "memory")]
    spans = [f"Calculations!$B${a[0].row}:$B${a[-1].row}" for a in (model, gpu)]
    sh.check(
        "A model or accelerator figure is missing",
        f"=IF(COUNT({spans[0]})+COUNT({spans[1]})<ROWS({spans[0]})+ROWS({spans[1]}),1,0)",
        "A name not in the catalog needs its figures filled in",
    )
    sh.section("Inputs in their usual range", "A legal value far from the usual range is usually a unit slip")
    usual_checks(book, sh, USUAL)
    sh.section("Every sheet", "Classic xlwings shows a failed function as text (the error and its reason): counted too")
    calc_span = f"Calculations!$B$6:$B${book.ws('Calculations').max_row}"
    measured_span = f"'Measured rates'!$C$6:$F${book.ws('Measured rates').max_row}"
    calibration_span = f"Calibration!$C$6:$E${book.ws('Calibration').max_row}"
    error_check(sh, "Calculations", calc_span)
    error_check(
        sh,
        "Measured rates",
        measured_span,
        "Any error among the benchmarks (e.g. MFU above 100%), or an error message as text",
    )
    error_check(sh, "Calibration", calibration_span)
    sh.skip()
    sh.master()
    sh.finish()
    return sh


OUTPUT_NAMES = {
    "Training_Time": "seconds",
    "GPU_Hours_Of_The_Run": "gpu_hours",
    "Cost_Of_The_Run": "cost",
    "Master_Check": "master_check",
}
"""The headline outputs' defined names (the Cover's headline figures and the master check) -> their line items."""


def build() -> Book:
    """The training plan as an openpyxl workbook in a :class:`Book` (formulas only; recalculate to cache values)."""
    book = Book(TITLE, SHEETS)
    lists = lists_sheet(book, [(key, label, unit, domain_of(alias)) for key, label, unit, alias in USUAL])
    _inputs(book, lists)
    _calculations(book)
    _measured(book)
    _calibration(book)
    _options(book)
    _outputs(book)
    _checks(book)
    cover(
        book,
        purpose=f"How big a model, how many tokens, how long and at what cost to train an LLM, after "
        f'"{COMPUTE_MEMORY_TITLE}": 6ND FLOPs, time '
        "and GPU-hours at a model FLOPs utilisation, Chinchilla's 20 tokens per parameter, the compute-optimal "
        "size for a time budget, training memory, data passes, and the size a short benchmark's measured rate "
        "supports.",
        headline=[
            Result("seconds", "Training time", "s", "dec1"),
            Result("days", "Training time, in days", "days", "dec2"),
            Result("within", "Within the time budget?", "text", "text"),
            Result("gpu_hours", "GPU-hours", "GPU-h", "dec2"),
            Result("cost", "List cost of the run", "USD", "usd"),
            Result("mem_gpu", "Training memory per GPU", "GB", "dec1"),
            Result("fits_mem", "Fits in each GPU's memory?", "text", "text"),
            Result("seconds_cal_range", "At the calibrated MFU, and its range", "", "text"),
        ],
        drivers=[
            Result("params_m", "Model parameters", "M params", "dec2"),
            Result("Training_Tokens", "Training tokens", "B tokens", "billions"),
            Result("Accelerator", "Accelerator", "", "text"),
            Result("GPUs", "GPUs", "count", "int"),
            Result("Model_FLOPs_Utilisation", "Model FLOPs utilisation", "fraction", "pct"),
            Result("Time_Budget", "Time budget", "s", "int"),
            Result("Price_Per_GPU_Hour", "Price per GPU-hour", "USD/GPU-h", "usd"),
        ],
        blocks=[
            (
                "Compute and sizing (Calculations)",
                [
                    Result(
                        "flops", "Training compute, 6ND", "FLOPs", "sci", f"6 x parameters x tokens ({COMPUTE_MEMORY})"
                    ),
                    Result(
                        "ratio",
                        "Training tokens over Chinchilla tokens",
                        "ratio",
                        "dec2",
                        "Above 1: more tokens per parameter than Chinchilla's 20",
                    ),
                    Result(
                        "optimal_m",
                        "Compute-optimal size for the time budget",
                        "M params",
                        "dec1",
                        f"The size the budget trains on Chinchilla's tokens ({COMPUTE_MEMORY} 'The M2')",
                    ),
                ],
            ),
            (
                "The layout search (Options sheet): the cheapest layout that fits and finishes",
                [
                    Result("search_layout", "Layout ranked first", "text", "text", "={search_status}"),
                    Result(
                        "search_params",
                        "Parameters of the searched run",
                        "B params",
                        "dec2",
                        '="Size "&IF(Parameters_Searched>0,"given","chosen for the budget and deadline")',
                    ),
                    Result("search_days", "Wall days, lost time included", "days", "dec1", _BESIDE["search_days"]),
                    Result("search_cost", "List cost of the searched run", "USD", "usd0", _BESIDE["search_cost"]),
                ],
            ),
            (
                "The calibrated view (Calibration sheet)",
                [
                    Result("mfu_cal", "Calibrated MFU", "fraction", "pct1", "EFFICIENCY, fitted on published runs"),
                    Result(
                        "seconds_cal",
                        "Training time at the calibrated MFU",
                        "s",
                        "dec1",
                        '=IF(AND(ISNUMBER({seconds_cal:low}),ISNUMBER({seconds_cal:high})),"Likely "&'
                        'FIXED({seconds_cal:low},1)&" to "&FIXED({seconds_cal:high},1)&" s (the range\'s quantiles '
                        'on Inputs)","Beside the training time at the MFU assumed on Inputs")',
                    ),
                    Result(
                        "cal_cost:calibrated",
                        "List cost of the run at the calibrated MFU",
                        "USD",
                        "usd",
                        '=IF(AND(ISNUMBER({cal_cost:low}),ISNUMBER({cal_cost:high})),"Likely "&'
                        'FIXED({cal_cost:low},({cal_cost:low}<1000)*1)&" to "&FIXED({cal_cost:high},'
                        '({cal_cost:high}<1000)*1)&" USD","From the Calibration sheet")',
                    ),
                ],
            ),
        ],
        examples=f'"{COMPUTE_MEMORY_TITLE}" (Parameter Golf, the M2), cited on the sheets as {COMPUTE_MEMORY}, and '
        f'the GPU price from "{ENVELOPE_TITLE}" ({ENVELOPE} §6)',
        limitations=[
            "6ND counts the parameterised matrix multiplications of a dense transformer; attention (PaLM's "
            "12 L H Q T per token) and recurrently reapplied layers (RECURRENT_PARAMS_B) add work, shown beside "
            f"it ({COMPUTE_MEMORY}).",
            "MFU is an assumption unless measured: large dense runs report 40-50%, the Parameter Golf record "
            "about 18%; the calibrated MFU is fitted on published runs, and the Calibration sheet takes yours.",
            "Chinchilla's 20 tokens per parameter is a landmark fitted on large dense models, not an optimum for "
            f"tens of millions of parameters or quantised models ({COMPUTE_MEMORY}).",
            "Activation memory follows Korthikanti et al. (2022) for a standard transformer block; embeddings, "
            "the loss, framework buffers and fragmentation come on top.",
            "A measured rate transfers to another model size only approximately: the projection assumes the "
            "6N-equivalent rate stays the same.",
            "Cost assumes GPUs billed by the hour; prices are examples, not quotes.",
        ],
    )
    guide(
        book,
        steps=[
            "Inputs, Scenario block: for each case, the model (a catalog preset from the dropdown, or your own "
            "name), its parameters, layers, hidden size and heads (empty: the preset's figure), the training tokens "
            "and sequence length, the micro-batch, recomputation, tensor-parallel GPUs and ZeRO stage, the "
            "accelerator and how many, the MFU you expect, the time budget in seconds and the tokens you have "
            "cached. Leave an override empty to use the catalog's figure.",
            "Inputs, Active scenario: choose the case that feeds Calculations and Outputs.",
            "Inputs, Training setup: the optimizer and whether tensor parallelism splits the sequence too.",
            "Inputs, Your measurements (optional): the throughput or the GPU-hours of the active scenario's run; "
            "the Calibration sheet shows the MFU they imply and the run at it, beside the calibrated MFU. Inputs, "
            "Ranges: the quantiles of published runs the calibrated MFU's low and high are read at.",
            "Inputs, Measured rates: for a machine without a published FLOP/s (a laptop, say), run a short "
            "benchmark and enter the model's parameters, the tokens it processed and in how many seconds.",
            "Inputs, Cost: price per GPU-hour with its date, region and pricing basis.",
            "Inputs, Layout search: the budget, deadline and GPU limit of a run, and its model (none and 0 "
            "parameters: the size the budget buys); Options lists every layout on the active scenario's "
            "accelerator at the price on Inputs, the cheapest that fits and finishes first, and Outputs shows it "
            "beside the calculator's figures.",
            "Read the Cover's plan in brief, then Outputs; Measured rates turns each benchmark into a model size "
            "for the time budget and a time for the active scenario's run.",
            "Checks must read OK: an ERROR names the problem (over budget, MFU above 100%, memory per GPU above "
            "the GPU's, a missing figure, an input far outside its usual range).",
            "In Excel, install the xlsxplan add-in (xlwings) and click Import Functions: the formulas then "
            "recalculate live. Without it, the values shown are those computed when the file was saved; "
            "`xlsxplan recalc` recalculates a copy without Excel.",
        ],
        sheets=[
            ("Cover", "The plan in brief with its key drivers, the other views, legend, limitations"),
            ("Guide", "This page"),
            ("Inputs", "Every assumption, once, with unit, source and date; the scenario block and benchmarks"),
            ("Calculations", "The active scenario line by line, with the equation and its source"),
            ("Outputs", "Key results and the basis of estimate"),
            ("Measured rates", "Each benchmark's rate, MFU, compute-optimal size and projected time"),
            ("Calibration", "The run at the assumed, the calibrated and your measured MFU"),
            ("Checks", "1 for a problem, 0 for OK; the master check"),
            ("Version log", "What changed, when"),
            ("Options", "Every layout the search tries, ranked (TRAIN_OPTIONS, xlsxplan plan --train)"),
            ("Lists", "The presets and precision names behind the dropdowns; the inputs' usual ranges"),
            ("xlwings.conf", "Tells the add-in which Python module holds the functions; leave it as is"),
        ],
    )
    version_log(book)
    header_statuses(book)  # the master check on every sheet's second row
    conf_sheet(book)
    book.name_outputs(OUTPUT_NAMES)
    book.finish()
    return book
