"""The plan's inputs, specified once: name, domain, default, unit and meaning of every argument of the search.

PLAN_OPTIONS and PLAN_OPTIONS_AT are made from :data:`PLAN_INPUTS` (:func:`with_inputs`: their signatures, their
annotations, hence their checks, and their documented parameters), the serving template's Options sheet passes the
Inputs sheet's cell for each input that names one (:attr:`PlanInput.sheet`), and ``xlsxplan plan`` has a flag for
each (:attr:`PlanInput.flag`), so that every input is settable from every face and none can drift from another.
Cells have no "not given": a 0 (or the default) stands for it, as each input's text says.

The defaults are the source text's ("Back-of-the-Envelope Estimation for LLM Systems": 90% of memory usable, decode
at the full memory bandwidth and prefill at half the dense BF16 peak in the ideal view, a peak three times the
average, at least two replicas and one spare) or the serving template's where the text has none.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..domains import (
    CoefficientOfVariation,
    Count,
    CountOrZero,
    Flag,
    Fraction,
    FractionOrZero,
    HoursPerPeriod,
    LinkGBs,
    MemoryGBOrZero,
    Name,
    PeakFactor,
    PerDay,
    SecondsOrZero,
    Spare,
    TailProbability,
    Tokens,
    TokensOrZero,
    TokensPerSOrZero,
)

__all__ = ["PLAN_INPUTS", "REQUIRED", "PlanInput", "passed_inputs", "with_inputs"]

REQUIRED: Any = object()
"""The default of an input every search must be given."""


@dataclass(frozen=True)
class PlanInput:
    """One argument of the plan search."""

    name: str
    """The argument's name in PLAN_OPTIONS and PLAN_OPTIONS_AT (and, with dashes, the CLI's flag by default)."""
    domain: Any
    """Its domain (:mod:`xlsxplan.domains`), which checks every call."""
    default: Any
    """The value a call that leaves it out gets; :data:`REQUIRED` for none."""
    doc: str
    """What it means, ending with its unit in brackets, as the function reference shows it."""
    sheet: str
    """What the serving template's Options sheet passes: a name on Inputs, a placeholder the sheet fills
    (``{prompt_mean}``), or a constant; empty: nothing, the default (only after the last input it passes)."""
    flag: str = ""
    """The flag of ``xlsxplan plan`` that sets it; empty: ``--`` and the name with dashes."""

    @property
    def cli_flag(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")

    @property
    def type_name(self) -> str:
        return {str: "str", int: "int", float: "float"}[self.domain.__origin__]


PLAN_INPUTS: tuple[PlanInput, ...] = (
    PlanInput("model", Name, REQUIRED, "A preset model name, shipped or imported, e.g. Qwen2.5-72B [name].", "Model"),
    PlanInput("requests_per_day", PerDay, REQUIRED, "Requests in a day [requests/day].", "Requests_Per_Day"),
    PlanInput("prompt_tokens", Tokens, REQUIRED, "Mean prompt per request [tokens].", "{prompt_mean}"),
    PlanInput("output_tokens", Tokens, REQUIRED, "Visible answer per request [tokens].", "Output_Tokens_Per_Request"),
    PlanInput(
        "peak_factor",
        PeakFactor,
        3,
        "How much busier the peak hour is than the day's average [ratio].",
        "Peak_Hour_Factor",
    ),
    PlanInput(
        "tokens_per_s_target",
        TokensPerSOrZero,
        0,
        "Slowest decode each user may see; 0: no speed target [tokens/s].",
        "Latency_Target",
        "--tokens-per-s",
    ),
    PlanInput(
        "ttft_target_s",
        SecondsOrZero,
        0,
        "Longest wait for the first token of the p95 prompt; 0: no first-token target [s].",
        "{options_ttft}",
        "--ttft-s",
    ),
    PlanInput(
        "spare",
        Spare,
        1,
        "Replicas added for a failure or a deployment, to each pool when disaggregated [count].",
        "Spare_Replicas",
    ),
    PlanInput(
        "gpus",
        Name,
        "all",
        'Accelerators to try, each with an optional price, e.g. "H100=2.5,H200"; all: every one the catalog prices '
        "(GPU_PRICE) [names].",
        "{options_gpus}",
        "--gpu",
    ),
    PlanInput("prompt_p95", TokensOrZero, 0, "95th-percentile prompt; 0: the mean [tokens].", "{prompt_tail}"),
    PlanInput(
        "max_prompt_tokens",
        TokensOrZero,
        0,
        "Longest prompt accepted, which must fit alone; 0: not checked [tokens].",
        "MAX({prompt_tail},Longest_Prompt_Accepted)",
    ),
    PlanInput(
        "reasoning_tokens",
        TokensOrZero,
        0,
        "Hidden reasoning tokens per request, decoded and billed as output [tokens].",
        "Hidden_Reasoning_Tokens_Per_Request",
    ),
    PlanInput("min_replicas", Count, 2, "Fewest replicas an aggregated plan runs [count].", "Minimum_Replicas"),
    PlanInput(
        "ttft_percentile",
        FractionOrZero,
        0,
        "Share of requests whose first token, the wait for a batch slot at the peak included, must come within "
        "ttft_target_s (0.99 for P99; replicas are added until it holds); 0: a request that never waits [fraction].",
        "{options_percentile}",
    ),
    PlanInput(
        "gpu_memory_utilization",
        FractionOrZero,
        0,
        "The serving engine's share of each GPU's memory (vLLM's 0.9), the KV cache in whole blocks; 0: the flat "
        "usable share (usable_fraction) [fraction].",
        "0",
    ),
    PlanInput(
        "reserve_gb",
        MemoryGBOrZero,
        0,
        "With gpu_memory_utilization: memory held per GPU besides the weights (activations, CUDA graphs) [GB].",
        "0",
        "--activation-reserve-gb",
    ),
    PlanInput(
        "block_size",
        Count,
        16,
        "With gpu_memory_utilization: tokens per KV block (vLLM 16, SGLang 1) [tokens].",
        "Engine_KV_Block_Size",
    ),
    PlanInput(
        "spec_draft",
        Name,
        "none",
        "A preset model that drafts tokens for speculative decoding; every option is then tried with and without "
        "it; none: no draft [name].",
        '"none"',
    ),
    PlanInput(
        "spec_acceptance",
        FractionOrZero,
        0,
        "With spec_draft: chance each drafted token is accepted [fraction].",
        "0",
    ),
    PlanInput("spec_tokens", Count, 1, "With spec_draft: tokens drafted a step [count].", "1"),
    PlanInput(
        "own",
        Flag,
        0,
        "1 adds the same fleet owned (GPU_HOUR_OWNED with the catalog's sourced defaults, COST_SPEC): cost a month "
        "and per M input and output tokens [flag].",
        "0",
    ),
    PlanInput(
        "ideal",
        Flag,
        0,
        "1 ranks at the source text's ideal efficiencies (its worked examples exactly), the calibrated fleet beside; "
        "0: at the calibrated ones (the step xlsxplan validate scores), the ideal fleet beside [flag].",
        "0",
        "--rank",
    ),
    PlanInput(
        "usable_fraction",
        Fraction,
        0.9,
        "Share of each GPU's memory the weights and KV cache may fill, without gpu_memory_utilization (the source "
        "text's 0.9) [fraction].",
        "Usable_Memory_Fraction",
    ),
    PlanInput(
        "decode_bandwidth_efficiency",
        Fraction,
        1.0,
        "Share of the peak memory bandwidth decode reaches in the ideal view (the source text's ceiling: 1) "
        "[fraction].",
        "Decode_Bandwidth_Efficiency",
    ),
    PlanInput(
        "prefill_utilisation",
        Fraction,
        0.5,
        "Share of the dense BF16 peak prefill reaches in the ideal view (the source text's 0.5) [fraction].",
        "Prefill_Compute_Utilisation",
    ),
    PlanInput(
        "kv_overflow",
        TailProbability,
        0.05,
        "Chance a paged batch's KV cache outgrows memory at a given moment (PAGED_BATCH) [fraction].",
        "KV_Cache_Overflow_Accepted",
    ),
    PlanInput(
        "kv_link_gb_s",
        LinkGBs,
        50,
        "Bandwidth the KV cache crosses from a prefill to a decode replica when disaggregated (400 Gb/s InfiniBand: "
        "50) [GB/s].",
        "Prefill_To_Decode_Link_Bandwidth",
    ),
    PlanInput(
        "service_cv",
        CoefficientOfVariation,
        1,
        "With ttft_percentile: coefficient of variation of a request's time in a batch slot (1: exponential, the "
        "M/M/c queue) [ratio].",
        "1",
    ),
    PlanInput(
        "hours_per_month",
        HoursPerPeriod,
        730,
        "Hours a month GPUs are billed around the clock [hours].",
        "Hours_Per_Month",
    ),
    PlanInput(
        "weights",
        Name,
        "bf16,fp8",
        "Weight precisions to try, e.g. bf16,fp8,nvfp4; REST+EXPERTS stores a mixture of experts' experts apart "
        "(gpt-oss: bf16+mxfp4) [names].",
        '"bf16,fp8"',
    ),
    PlanInput("kv", Name, "bf16,fp8", "KV-cache precisions to try, e.g. bf16,fp8 [names].", '"bf16,fp8"'),
    PlanInput("gpus_per_replica", Name, "1,2,4,8", "GPUs per replica to try, e.g. 1,2,4,8 [counts].", '"1,2,4,8"'),
    PlanInput(
        "servings",
        Name,
        "aggregated,disaggregated",
        "Serving modes to try, e.g. aggregated,disaggregated [names].",
        '"aggregated,disaggregated"',
        "--serving",
    ),
    PlanInput(
        "weights_as",
        Name,
        "published",
        "Weights memory: published (as checkpoints store them, MODEL_WEIGHTS_GB) or params x bytes (the source "
        "text's N x b) [name].",
        '"published"',
    ),
    PlanInput(
        "max_gpus_per_replica",
        CountOrZero,
        0,
        "Largest replica to try beyond gpus_per_replica, doubling: tensor parallel in a scale-up domain, "
        "pipeline or expert parallel across nodes; 0: up to 64 where the sizes listed cannot hold the weights "
        "[count].",
        "0",
    ),
    PlanInput(
        "arrival_cv",
        CoefficientOfVariation,
        1,
        "With ttft_percentile: coefficient of variation of the time between requests (1: Poisson arrivals; above "
        "1: bursts, Allen-Cunneen's (arrival_cv^2 + service_cv^2) / 2 scaling the wait) [ratio].",
        "Arrival_Burstiness",
    ),
    PlanInput(
        "max_num_tokens",
        CountOrZero,
        0,
        "Tokens the engine computes in one step, decoded and prefilled (TensorRT-LLM max_num_tokens, 8192 by "
        "default; vLLM max_num_batched_tokens): the batch is at most this / (1 + prompt / output); 0: none [tokens].",
        "",
    ),
    PlanInput(
        "max_batch_size",
        CountOrZero,
        0,
        "Sequences the engine runs at once at most (TensorRT-LLM max_batch_size, 2048 by default; vLLM max_num_seqs; "
        "SGLang max_running_requests); 0: no limit [sequences].",
        "",
    ),
)
"""Every input of the plan search, in PLAN_OPTIONS's argument order (new ones only ever added at the end, so that a
formula written for an older version keeps its meaning)."""


def passed_inputs() -> list[str]:
    """What the serving template's Options sheet passes for each input, in order, up to the last one it passes (the
    rest take their defaults)."""
    passed = [p.sheet for p in PLAN_INPUTS]
    while passed and not passed[-1]:
        passed.pop()
    if "" in passed:
        raise ValueError(
            f"{PLAN_INPUTS[passed.index('')].name}: an input the Options sheet leaves out precedes one it passes"
        )
    return passed


def with_inputs(
    name: str,
    impl: Callable[..., Any],
    lead: tuple[PlanInput, ...],
    head: str,
    tail: str,
    returns: Any,
    specs: tuple[PlanInput, ...] | None = None,
) -> Callable[..., Any]:
    """A function named ``name`` whose arguments are ``lead`` then ``specs`` (:data:`PLAN_INPUTS` unless given: the
    training plan's are :data:`xlsxplan.plan.train_inputs.TRAIN_INPUTS`), each with its domain as its annotation and
    its default, that calls ``impl`` with them all by position; its docstring is ``head``, the Parameters section
    made from the inputs' texts, then ``tail`` (the Returns and Notes sections). Made as :mod:`dataclasses` makes
    ``__init__``: the source of one ``def`` executed, so that ``inspect.signature``, the domain checks and every
    Excel face see an ordinary function."""
    inputs = (*lead, *(PLAN_INPUTS if specs is None else specs))
    namespace: dict[str, Any] = {"_impl": impl, "_returns": returns}
    params = []
    for k, p in enumerate(inputs):
        namespace[f"_domain_{k}"] = p.domain
        if p.default is REQUIRED:
            params.append(f"{p.name}: _domain_{k}")
        else:
            namespace[f"_default_{k}"] = p.default
            params.append(f"{p.name}: _domain_{k} = _default_{k}")
    names = ", ".join(p.name for p in inputs)
    # the annotations are written in the source (not set afterwards), so that every Python keeps them as it keeps a
    # written function's: 3.14 evaluates them lazily and functools.wraps copies that evaluator, not a set dict
    exec(f"def {name}({', '.join(params)}) -> _returns:\n    return _impl({names})\n", namespace)  # noqa: S102
    func = namespace[name]
    lines = [head.rstrip(), "", "Parameters", "----------"]
    for p in inputs:
        shown = "" if p.default is REQUIRED else f", default {p.default}"
        lines += [f"{p.name} : {p.type_name}{shown}", f"    {p.doc}"]
    func.__doc__ = "\n".join(lines) + "\n\n" + textwrap.dedent(tail).strip() + "\n"
    func.__module__ = impl.__module__
    return func
