"""The training plan's inputs, specified once: name, domain, default, unit and meaning of every argument of
:func:`xlsxplan.plan.train.plan_training`, from which ``xlsxplan plan --train`` makes its flags. A module of its own,
light to import, because the command line builds its parser (every command's) from it."""

from __future__ import annotations

from ..core import goodput
from ..domains import (
    Count,
    DaysOrZero,
    FailuresPerGPUHour,
    Flag,
    Fraction,
    FractionOrZero,
    GPUs,
    LinkGBs,
    Name,
    ParamsBOrZero,
    SecondsOrZero,
    Tokens,
    TokensOrZero,
    TokensPerParam,
    USDOrZero,
)
from .inputs import PlanInput

__all__ = ["TRAIN_INPUTS"]

TRAIN_INPUTS: tuple[PlanInput, ...] = (
    PlanInput(
        "model",
        Name,
        "none",
        "A preset model whose shape is used, shipped or imported; none: a dense model shaped from its size (width "
        "64 times depth) [name].",
        "",
    ),
    PlanInput(
        "params_b",
        ParamsBOrZero,
        0,
        "Parameters; 0: the preset's, else the compute-optimal size for the budget and deadline (size to choose) "
        "[B params].",
        "",
    ),
    PlanInput("tokens", TokensOrZero, 0, "Training tokens; 0: tokens_per_param x parameters [tokens].", ""),
    PlanInput(
        "tokens_per_param",
        TokensPerParam,
        20,
        "Tokens per parameter when tokens is 0 (Chinchilla's 20, Hoffmann et al. 2022) [tokens/param].",
        "",
    ),
    PlanInput("budget_usd", USDOrZero, 0, "Most the run may cost; 0: no budget [USD].", ""),
    PlanInput("max_days", DaysOrZero, 0, "Longest the run may take, lost time included; 0: no deadline [days].", ""),
    PlanInput("max_gpus", GPUs, 1024, "Most GPUs the run may hold [count].", ""),
    PlanInput(
        "gpus",
        Name,
        "all",
        'Accelerators to try, each with an optional price, e.g. "H100=2.5,H200"; all: every one the catalog prices '
        "on demand [names].",
        "",
        "--gpu",
    ),
    PlanInput("seq_len", Tokens, 4096, "Training sequence length [tokens].", ""),
    PlanInput(
        "global_batch_tokens",
        Tokens,
        4_194_304,
        "Tokens a step, rounded to whole sequences (LLaMA's 4M, Touvron et al. 2023, arXiv:2302.13971, Table 2) "
        "[tokens].",
        "",
    ),
    PlanInput("precisions", Name, "bf16,fp8", "Training precisions to try, bf16 and fp8 [names].", "", "--precision"),
    PlanInput(
        "recompute",
        Name,
        "none,selective,full",
        "Activation recompute modes to try: none, selective, full [names].",
        "",
    ),
    PlanInput("zero_stages", Name, "0,1,2,3", "ZeRO stages to try; 3 is FSDP's full shard [stages].", "", "--zero"),
    PlanInput("micro_batches", Name, "1,2,4,8", "Micro-batch sizes to try [sequences].", "", "--micro-batch"),
    PlanInput(
        "usable_fraction",
        Fraction,
        0.9,
        "Share of each GPU's memory the state and activations may fill; the rest for the CUDA context, "
        "communication buffers and fragmentation [fraction].",
        "",
    ),
    PlanInput(
        "dp_overlap",
        FractionOrZero,
        0.5,
        "Share of the data-parallel traffic hidden behind the backward pass (an assumption: half) [fraction].",
        "",
    ),
    PlanInput("gpus_per_node", Count, 8, "GPUs a node joins by the scale-up link (an HGX board: 8) [count].", ""),
    PlanInput(
        "network_gb_s",
        LinkGBs,
        50,
        "Network bandwidth per GPU between nodes, each way (400 Gb/s InfiniBand or RoCE a GPU, as Llama 3's: 50) "
        "[GB/s].",
        "",
    ),
    PlanInput(
        "failures_per_gpu_hour",
        FailuresPerGPUHour,
        goodput.LLAMA3_FAILURES_PER_GPU_HOUR,
        "Job interruptions per GPU-hour (Llama 3 405B: 419 in 54 days on 16,384 H100s) [failures/GPU-h].",
        "",
    ),
    PlanInput(
        "restart_s",
        SecondsOrZero,
        goodput.RESTART_S,
        "Time an interruption costs besides the redone work (ByteRobust: over ten minutes) [s].",
        "",
    ),
    PlanInput(
        "checkpoint_gb_s",
        LinkGBs,
        goodput.CHECKPOINT_GB_S_PER_GPU,
        "Checkpoint write bandwidth per GPU (Llama 3's storage: 2 TB/s over 16,384 GPUs) [GB/s].",
        "",
    ),
    PlanInput(
        "all_layouts", Flag, 0, "1 reports every layout; 0 the cheapest per accelerator, GPUs and precision [flag].", ""
    ),
)
"""Every input of the training plan, in :func:`plan_training`'s keyword order; ``xlsxplan plan --train`` has a flag
for each (:attr:`PlanInput.cli_flag`)."""
