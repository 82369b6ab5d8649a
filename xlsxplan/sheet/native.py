"""The registry functions as native spreadsheet formulas: one source for the add-in and the portable editions.

A portable workbook computes with the spreadsheet's own functions, so it recalculates with no add-in (Excel 2016 and
later, LibreOffice Calc, Google Sheets). Each registry function the templates use has here a *native form*: a formula
template over its arguments (``{params_b}*{bytes_per_param}``), which :func:`formula` fills with the argument cells or
expressions, the optional ones it is not given taking their registry defaults (:data:`xlsxplan.registry.FUNCTIONS`).
Only functions Excel 2016 has are used (tests/sheet/test_native.py lists them: ``IF``, ``INT``, ``LOG``, ``ERFC``,
``INDEX``, ``MATCH``, ``SMALL``, ``COUNTIF``, ``POISSON`` and the like); never ``LET``, ``LAMBDA``, ``XLOOKUP`` or a
dynamic-array function, nor one an .xlsx must store with the ``_xlfn.`` prefix (``POISSON.DIST``: LibreOffice reads
it as #NAME?).

What a function refuses, a native formula does not: it computes. :func:`check` gives the other half, a formula that is
TRUE exactly when the Python function accepts the arguments, built from each argument's
:class:`~xlsxplan.domains.Domain` (a number, its bounds, a whole number) and from the function's own rules beyond the
domains (``Native.rules``: more experts per token than experts, an MFU above 1). A portable template puts it on its
Checks sheet, so a bad input is flagged in words, never silently computed. A ``bytes`` argument (bytes per weight) is
a number in the native form: a precision name is looked up first (:meth:`CatalogTables.bytes_per_param`).

Whole-number results (MAX_BATCH, REPLICAS) round as the Python core does, forgiving the last few bits of float
error (:func:`xlsxplan.core.equations.whole_floor`): the whole number next to ``x`` when ``x`` is within 16 units in
the last place of it, ``2^(INT(LOG(x,2))-48)``. A spreadsheet holds whole numbers exactly up to ``2**53``, Python's
ints all; LibreOffice subtracts numbers within ``2**-48`` of each other to 0, so for a count above about ``1e12`` (a
trillion tokens) its rounding may forgive up to twice as much as Python's, and above ``1e15`` it is beyond the native
form.

Functions too long for one readable formula (SERVE_TOKS, BATCH_FOR_TTFT, PAGED_BATCH, GPU_HOUR_OWNED, TTFT_AT_LOAD_S,
REPLICAS_FOR_TTFT and a few more) are line items, one step a cell as the FAST standard asks: :func:`line_items` gives
each step's formula over the cells of the earlier ones. Erlang B, which Python computes by a recursion, is the Poisson
ratio up to 500 slots and Temme's uniform expansion of the incomplete gamma function above (:data:`POISSON_SERVERS`);
REPLICAS_FOR_TTFT's search is a bisection of :data:`REPLICA_SEARCH_STEPS` steps whose count is then confirmed, #N/A
and flagged by its check where it is not (``Native.limits``). ``ln(1 + x)`` and ``exp(y) - 1``, which Excel lacks,
are written in Goldberg's and Kahan's forms, exact to the last digits for a small rate.

The preset lookups (MODEL_SPEC, GPU_SPEC, BYTES_PER_PARAM, GPU_PRICE, OPTIMIZER_BYTES, MODELS, GPUS,
MODEL_EXPERT_PARAMS_B, MODEL_KV_BYTES_PER_TOKEN, MODEL_WEIGHTS_GB, EFFICIENCY) read tables the workbook carries:
:func:`write_catalog` writes the catalog's models, accelerators, prices, formats, optimizers, the figures counted from
the models' shapes and the calibrated efficiencies in use with their leave-one-source-out residuals (EFFICIENCY's
quantile: P10 and P90 as Python computed them, any other ranked by the formula), with the source of every row, into a
worksheet, and returns the :class:`CatalogTables` whose methods give the ``INDEX``/``MATCH`` formulas over them
(``#N/A`` where the
Python lookup refuses; a figure a table lacks is the text :data:`MISSING`, so no cell of the tables is an error).
Functions with no native form are in :data:`PYTHON_ONLY` with the reason.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from .. import calibration, catalog, precision, registry
from ..calibration.bands import HIGH as BAND_HIGH
from ..calibration.bands import LOW as BAND_LOW
from ..calibration.factors import BAND_OF
from ..catalog import models
from ..core import training_memory
from ..errors import ArgumentError, XlsxplanError
from ..infra.text import set_text

__all__ = [
    "is_simple",
    "operand",
    "POISSON_SERVERS",
    "STEPPED_LOOKUPS",
    "REPLICA_SEARCH_STEPS",
    "CatalogTables",
    "NATIVE",
    "Native",
    "LONGEST_FORMULA",
    "MISSING",
    "PYTHON_ONLY",
    "Table",
    "check",
    "check_words",
    "formula",
    "catalog_line_items",
    "line_items",
    "write_catalog",
]

_Z95 = repr(NormalDist().inv_cdf(0.95))  # the 95th percentile of the standard normal, as the traffic core has it
_SQRT2 = repr(math.sqrt(2.0))


def _forgiven(x: str) -> str:
    """16 units in the last place of ``x`` (> 0), as :func:`math.ulp` counts them: ``2^(floor(log2 x) - 48)``. Below
    1e-250 it stays at 16 ulps of 1e-250: LibreOffice's POWER gives #NUM! for a result that underflows."""
    return f"2^(INT(LOG(MAX({x},1E-250),2))-48)"


def _floor(x: str) -> str:
    """``floor(x)`` for ``x >= 0``, forgiving float error below a whole number as the Python core does: the whole
    number above ``x`` when ``x`` is within 16 units in the last place of it, else the one below."""
    x = f"({x})"
    return f"(-INT(-{x})-IF(-INT(-{x})-{x}<={_forgiven(x)},0,1))"


def _ceil(x: str) -> str:
    """``ceil(x)`` for ``x >= 0``, forgiving float error above a whole number as the Python core does: the whole
    number below ``x`` when ``x`` is within 16 units in the last place of it, else the one above."""
    x = f"({x})"
    return f"(INT({x})+IF({x}-INT({x})<={_forgiven(x)},0,1))"


@dataclass(frozen=True)
class Native:
    """The native form of one registry function.

    ``template`` is the formula (no ``=``) with ``{argument}`` for each argument; ``rules`` are conditions, in the
    same form, that the Python function requires beyond its arguments' domains (``{result}`` is the function's
    value), each with the requirement in words (:func:`check_words`); ``note`` says where the native form departs
    from the Python one. ``limits`` are conditions of the same form that the Python function does not have but the
    native form needs to equal it (REPLICAS_FOR_TTFT's search within its bound): :func:`check` includes them, so an
    input beyond them is flagged in words rather than computed wrongly.

    A function too long for one readable formula is a list of ``steps``, line items ``(key, label, template)`` whose
    templates refer to the arguments and to earlier steps by their key; the last step is the result.
    :func:`line_items` gives them with the cells they sit in, :func:`formula` the one formula they make inlined.
    """

    name: str
    template: str
    rules: tuple[tuple[str, str], ...] = ()
    note: str = ""
    steps: tuple[tuple[str, str, str], ...] = ()
    limits: tuple[tuple[str, str], ...] = ()


def _n(name: str, template: str, *rules: tuple[str, str], note: str = "") -> Native:
    return Native(name, template, tuple(rules), note)


_DECODE_BYTES = "({params_b}*1E9*{bytes_per_param}+{batch}*{kv_bytes_per_token}*{context_tokens})"
_DECODE_RATE = "({n_gpus}*{bandwidth_tb_s}*1E12*{efficiency})"
_SIGMA = f"({_Z95}-SQRT(MAX({_Z95}^2-2*LN({{p95_tokens}}/{{mean_tokens}}),0)))"
_LOGNORMAL_RULES = (
    ("{p95_tokens}>={mean_tokens}", "p95_tokens at least mean_tokens"),
    (
        f"2*LN({{p95_tokens}}/{{mean_tokens}})<={_Z95}^2*(1+1E-12)",
        "p95_tokens at most about 3.87 times mean_tokens (a log-normal's limit)",
    ),
)
_MOE_SHARE = "({experts_per_token}/{experts})"
_MOE_ROUTED = f"(({{params_b}}-{{active_params_b}})/IF({_MOE_SHARE}=1,1,1-{_MOE_SHARE}))"
# the share of experts a batch touches, 1 - (1 - share)^batch: 1 where the power is below 1e-304 (as it is in
# floats), which LibreOffice's POWER would give as #NUM! once it underflows
_MOE_TOUCHED = f"IF({{batch}}*LN(1-{_MOE_SHARE})<-700,1,1-(1-{_MOE_SHARE})^{{batch}})"
_MOE_READ = f"IF({_MOE_SHARE}=1,{{params_b}},MIN({{params_b}},{{params_b}}-{_MOE_ROUTED}+{_MOE_ROUTED}*{_MOE_TOUCHED}))"
_TTFT_EXCHANGE = "2*{layers}*2*({n_gpus}-1)/{n_gpus}*{prompt_tokens}*{hidden}*2"
_FLASH = "4*{heads}*{seq_len}*{micro_batch}/{tp}"
_ACT_SBH = "({seq_len}*{micro_batch}*{hidden})"
_ACT_MASKS = "IF({dropout}<>0,2,0)"
_ACT_ATTENTION = "(IF({dropout}<>0,5,2)*{heads}*{seq_len}/{hidden})"
_ACT_PARTIAL = (
    "IF({sequence_parallel}<>0,"
    f'{_ACT_SBH}/{{tp}}*(32+{_ACT_MASKS}+IF({{mode}}="none",{_ACT_ATTENTION},0)),'
    f'{_ACT_SBH}*(8+{_ACT_MASKS}+24/{{tp}}+IF({{mode}}="none",{_ACT_ATTENTION}/{{tp}},0)))'
)
_ACT_PER_LAYER = (
    f'IF({{mode}}="full",2*{_ACT_SBH}/IF({{sequence_parallel}}<>0,{{tp}},1),{_ACT_PARTIAL})'
    f'+IF({{mode}}="flash",{_FLASH},0)'
)
_ZERO_N = "({params_b}*1E9/{model_parallel})"
_ZERO_W, _ZERO_G, _ZERO_O = (f"({_ZERO_N}*{{{b}}})" for b in ("weight_bytes", "grad_bytes", "optimizer_bytes"))
_ZERO_SHARDED = f"CHOOSE({{zero_stage}}+1,0,{_ZERO_O},{_ZERO_G}+{_ZERO_O},{_ZERO_W}+{_ZERO_G}+{_ZERO_O})"

_FORMS: list[Native] = [
    # Serving
    _n("WEIGHTS_GB", "{params_b}*{bytes_per_param}"),
    _n("KV_GB", "{kv_bytes_per_token}*{tokens}*{sequences}/1E9"),
    _n("USABLE_GB", "{n_gpus}*{memory_gb}*{usable_fraction}"),
    _n("FREE_GB", "{n_gpus}*{memory_gb}*{usable_fraction}-{params_b}*{bytes_per_param}"),
    _n(
        "MAX_BATCH",
        "IF({n_gpus}*{memory_gb}*{usable_fraction}*1E9-{params_b}*1E9*{bytes_per_param}<=0,0,"
        + _floor(
            "({n_gpus}*{memory_gb}*{usable_fraction}*1E9-{params_b}*1E9*{bytes_per_param})"
            "/({kv_bytes_per_token}*{context_tokens})"
        )
        + ")",
    ),
    _n("DECODE_TOKS", f"1/({_DECODE_BYTES}/{_DECODE_RATE})"),
    _n("DECODE_TOKS_TOTAL", f"{{batch}}/({_DECODE_BYTES}/{_DECODE_RATE})"),
    _n("COMPUTE_TOKS", "{tflops}*1E12/(2*{params_b}*1E9)"),
    _n("INFER_FLOPS", "2*{params_b}*1E9*{tokens}"),
    _n(
        "TOKS_CEILING",
        "MIN({tflops}*1E12/(2*{params_b}*1E9),{bandwidth_tb_s}*1E12/({params_b}*1E9*{bytes_per_param}))",
    ),
    _n("PREFILL_S", "2*{params_b}*1E9*{prompt_tokens}/({n_gpus}*{tflops}*1E12*{utilisation})"),
    _n("COST_PER_M_TOKENS", "{n_gpus}*{usd_per_gpu_hour}/({tokens_per_s}*3600*{utilisation})*1E6"),
    _n("PEAK_RPS", "{requests_per_day}/86400*{peak_factor}"),
    _n("PEAK_TOKS", "{requests_per_day}/86400*{peak_factor}*{tokens_per_request}"),
    _n("REPLICAS", _ceil("{demand_tokens_per_s}/{capacity_tokens_per_s}") + "+{spare}"),
    # Training
    _n("TRAIN_FLOPS", "6*{params_b}*1E9*{tokens}"),
    _n("TRAIN_TOKENS", "{flops_per_s}*{seconds}/(6*{params_b}*1E9)"),
    _n("CHINCHILLA_TOKENS", "{tokens_per_param}*{params_b}*1E9"),
    _n("CHINCHILLA_RATIO", "{tokens}/({tokens_per_param}*{params_b}*1E9)"),
    _n("OPTIMAL_PARAMS_B", "SQRT({flops_per_s}*{seconds}/(6*{tokens_per_param}))/1E9"),
    _n("FLOPS_6N", "6*{params_b}*1E9*{tokens_per_s}"),
    _n(
        "MFU",
        "6*{params_b}*1E9*{tokens_per_s}/({n_gpus}*{tflops}*1E12)",
        ("{result}<=1", "tokens_per_s within the hardware's peak (MFU at most 1)"),
    ),
    _n("TRAIN_SECONDS", "6*{params_b}*1E9*{tokens}/({n_gpus}*{tflops}*1E12*{mfu})"),
    _n("RUN_SECONDS", "6*{params_b}*1E9*{tokens}/{flops_per_s}"),
    _n("GPU_HOURS", "{seconds}*{n_gpus}/3600"),
    _n("TRAIN_MEMORY_GB", "{params_b}*{bytes_per_param}"),
    _n("DATA_PASSES", "{tokens}/{cached_tokens}"),
    # Architecture
    _n(
        "MOE_PARAMS_READ_B",
        _MOE_READ,
        ("{active_params_b}<={params_b}", "active_params_b at most params_b"),
        ("{experts_per_token}<={experts}", "experts_per_token at most experts"),
    ),
    _n(
        "WEIGHTS_GB_PER_GPU",
        "(({params_b}-{expert_params_b})/{tp}+{expert_params_b}/{ep})*{bytes_per_param}",
        ("{expert_params_b}<={params_b}", "expert_params_b at most params_b"),
    ),
    _n(
        "TRAIN_STATE_GB",
        f"(({_ZERO_W}+{_ZERO_G}+{_ZERO_O}-{_ZERO_SHARDED})+{_ZERO_SHARDED}/{{dp}})/1E9",
    ),
    _n(
        "ACTIVATION_GB",
        "{layers}*(" + _ACT_PER_LAYER.replace("{mode}", "LOWER(TRIM({recompute}))") + ")/1E9",
        (
            'OR(LOWER(TRIM({recompute}))="none",LOWER(TRIM({recompute}))="selective",'
            'LOWER(TRIM({recompute}))="full",LOWER(TRIM({recompute}))="flash")',
            "recompute one of none, selective, full or flash",
        ),
    ),
    _n("TRAIN_FLOPS_PER_TOKEN", "6*{params_b}*1E9+12*{layers}*{heads}*{head_dim}*{seq_len}"),
    _n("RECURRENT_PARAMS_B", "{params_b}+{layer_params_b}*{reused_layers}*{extra_passes}*{share_of_steps}"),
    # Calibration and the roofline
    _n(
        "TTFT_S",
        "MAX((2*{params_b}*1E9*{prompt_tokens}+2*{layers}*{hidden}*{prompt_tokens}^2)"
        "/({n_gpus}*{tflops}*1E12*{compute_eff}),"
        "{params_b}*1E9*{bytes_per_param}/({n_gpus}*{bandwidth_tb_s}*1E12*{bandwidth_eff}))"
        f"+IF(AND({{n_gpus}}>1,{{link_gb_s}}>0),{_TTFT_EXCHANGE}/(IF(AND({{n_gpus}}>1,{{link_gb_s}}>0),"
        "{link_gb_s},1)*1E9),0)",
    ),
    # Traffic
    _n(
        "TAIL_SHARE_DATA",
        'COUNTIF({lengths},">"&{cap_tokens})/COUNT({lengths})',
        note="lengths is a range; its empty cells are skipped as the Python function skips them",
    ),
    _n(
        "MAX_CONTEXT_TOKENS",
        "IF({free_gb}<=0,0," + _floor("{free_gb}*1E9/{kv_bytes_per_token}") + ")",
    ),
    _n("CONTEXT_TOKENS", "{prompt_tokens}+{reasoning_tokens}+{output_tokens}"),
    _n("TIME_TO_ANSWER_S", "{prefill_s}+{reasoning_tokens}/{tokens_per_s_per_user}"),
    _n(
        "PREFILL_TOKENS",
        "MAX({prompt_tokens}-{hit_rate}*{prefix_tokens},MIN({prompt_tokens},1))",
        ("{prefix_tokens}<={prompt_tokens}", "prefix_tokens at most prompt_tokens"),
    ),
    _n(
        "BATCH_FOR_LATENCY",
        "IF(({n_gpus}*{bandwidth_tb_s}*1E12*{efficiency}/{tokens_per_s_per_user}-{params_b}*1E9*{bytes_per_param})"
        "/({kv_bytes_per_token}*{context_tokens})<1-1E-9,0,MIN("
        + _floor(
            "({n_gpus}*{bandwidth_tb_s}*1E12*{efficiency}/{tokens_per_s_per_user}-{params_b}*1E9*{bytes_per_param})"
            "/({kv_bytes_per_token}*{context_tokens})"
        )
        + ",1E9))",
        note="Python then steps the batch down while float rounding puts its speed a hair under the target; the "
        "native form does not, so at that boundary (a few ulps) it may be one higher",
    ),
    _n("PREFILL_SHARE", "{prefill_s}/({prefill_s}+{decode_tokens}/{decode_tokens_per_s_total})"),
    _n("REPLICA_RPS", "1/({prefill_s}+{decode_tokens}/{decode_tokens_per_s_total})"),
    _n(
        "REPLICA_RPS_CHUNKED",
        "1/MAX({prefill_s}*({prefill_tokens}+{decode_tokens})/{prefill_tokens},"
        "{decode_tokens}/{decode_tokens_per_s_total})",
    ),
    _n("PREFILL_REPLICAS", _ceil("{requests_per_s}*{prefill_s}/1") + "+{spare}"),
    _n("DECODE_REPLICAS", _ceil("{requests_per_s}*{decode_tokens}/{decode_tokens_per_s_total}") + "+{spare}"),
    _n("KV_TRANSFER_S", "{kv_bytes_per_token}*{prompt_tokens}/({link_gb_s}*1E9)"),
    _n(
        "FLEET_REPLICAS",
        "MAX(" + _ceil("{requests_per_s}/{requests_per_s_per_replica}") + "+{spare},{min_replicas})",
    ),
    _n("FLEET_UTILISATION", "{requests_per_day}/86400/({replicas}*{requests_per_s_per_replica})"),
    _n("PEAK_COVERAGE", "MAX({replicas}-{spare},0)*{requests_per_s_per_replica}/{requests_per_s}"),
    _n(
        "COST_PER_M_INPUT",
        "{n_gpus}*{usd_per_gpu_hour}*24*{prefill_share}/({requests_per_day}*{prompt_tokens})*1E6",
        ("{requests_per_day}*{prompt_tokens}<>0", "requests_per_day times prompt_tokens above 0"),
    ),
    _n(
        "COST_PER_M_OUTPUT",
        "{n_gpus}*{usd_per_gpu_hour}*24*(1-{prefill_share})/({requests_per_day}*{output_tokens})*1E6",
        ("{requests_per_day}*{output_tokens}<>0", "requests_per_day times output_tokens above 0"),
    ),
    # Cost
    _n("COST_PER_M_OWNED", "{usd_per_gpu_hour_owned}/{utilisation}/({tokens_per_s}*3600)*1E6"),
    _n(
        "COST_PER_M_RENTED",
        "{usd_per_gpu_hour}*(({utilisation}+{idle_billed}*(1-{utilisation}))/{utilisation})/({tokens_per_s}*3600)*1E6",
    ),
    _n(
        "BREAKEVEN_UTILISATION",
        "MAX(({usd_per_gpu_hour_owned}/{usd_per_gpu_hour_rented}-{idle_billed})/(1-{idle_billed}),0)",
        ("{idle_billed}<1", "idle_billed below 1 (a rental billed around the clock never breaks even)"),
    ),
]


def _fill(template: str, **values: str) -> str:
    """``template`` with some placeholders filled and the others kept (``{params_b}`` stays ``{params_b}``)."""
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), template)


def _stepped(
    name: str,
    steps: list[tuple[str, str, str]],
    *rules: tuple[str, str],
    note: str = "",
    limits: tuple[tuple[str, str], ...] = (),
) -> Native:
    return Native(name, "", tuple(rules), note, tuple(steps), tuple(limits))


_MOE_DENSE = "OR({active_params_b}=0,{active_params_b}={params_b})"
_FORMS += [
    _stepped(
        "SERVE_TOKS",
        [
            ("active", "parameters one token computes [B]", f"IF({_MOE_DENSE},{{params_b}},{{active_params_b}})"),
            ("context", "mean tokens a decoding sequence holds", "{prompt_tokens}+{output_tokens}/2"),
            (
                "free",
                "bytes free for the KV cache beside the weights",
                "{n_gpus}*{memory_gb}*{usable_fraction}*1E9-{params_b}*1E9*{bytes_per_param}",
            ),
            (
                "fits",
                "sequences that fit beside the weights",
                "IF({free}<=0,0," + _floor("{free}/({kv_bytes_per_token}*{context})") + ")",
            ),
            ("batch", "sequences decoded together", "IF({concurrency}=0,{fits},MIN({concurrency},{fits}))"),
            (
                "share",
                "share of the experts a token is routed to",
                "IF({active}={params_b},1,{experts_per_token}/{experts})",
            ),
            (
                "routed",
                "parameters in the routed experts [B]",
                "IF({share}=1,0,({params_b}-{active})/(1-{share}))",
            ),
            (
                "touched",
                "share of the routed experts the batch reads",
                "IF({share}=1,1,IF({batch}*LN(1-{share})<-700,1,1-(1-{share})^{batch}))",
            ),
            (
                "read",
                "parameters a decode step reads [B]",
                "IF({share}=1,{params_b},MIN({params_b},{params_b}-{routed}+{routed}*{touched}))",
            ),
            (
                "step",
                "one decode step, the slower of memory and compute [s]",
                "MAX(({read}*1E9*{bytes_per_param}+{batch}*{kv_bytes_per_token}*{context})"
                "/({n_gpus}*{bandwidth_tb_s}*1E12*{bandwidth_eff}),"
                "2*{active}*1E9*{batch}/({n_gpus}*{tflops}*1E12*{compute_eff}))",
            ),
            (
                "prefill",
                "one prompt's prefill [s]",
                "2*{active}*1E9*{prompt_tokens}/({n_gpus}*{tflops}*1E12*{compute_eff})",
            ),
            (
                "result",
                "output tokens per second of the model copy",
                "IF({batch}<1,0,{output_tokens}/({output_tokens}*{step}/{batch}+{prefill}))",
            ),
        ],
        (
            "NOT(AND({active_params_b}=0,{experts}<>0,{experts_per_token}<>0,{experts_per_token}<{experts}))",
            "active_params_b given (above 0) with experts",
        ),
        (
            f"OR({_MOE_DENSE},AND({{active_params_b}}<{{params_b}},{{experts}}<>0,{{experts_per_token}}<>0,"
            "{experts_per_token}<={experts}))",
            "a mixture of experts with its experts and experts_per_token, active_params_b within params_b",
        ),
    ),
    _stepped(
        "BEST_COMMITMENT",
        [
            ("periods", "periods of demand", "COUNT({demand_gpus})"),
            ("allowed", "committed price times the periods", "{periods}*{usd_per_gpu_hour_committed}"),
            (
                "guess",
                "periods above the commitment, as the prices' ratio allows",
                "INT({allowed}/{usd_per_gpu_hour_on_demand})",
            ),
            (
                "above",
                "the most periods the commitment may leave above it",
                "{guess}+IF({usd_per_gpu_hour_on_demand}*({guess}+1)<={allowed},1,0)"
                "-IF({usd_per_gpu_hour_on_demand}*{guess}>{allowed},1,0)",
            ),
            (
                "result",
                "the lowest demand level exceeded in no more periods",
                "IF({above}>={periods},0,SMALL({demand_gpus},{periods}-{above}))",
            ),
        ],
        note="the cheapest level is the lowest exceeded in at most T x committed / on_demand periods: SMALL picks "
        "it from the demand itself, where Python scans the sorted levels",
    ),
    _stepped(
        "BATCH_FOR_TTFT",
        [
            (
                "compute",
                "tokens per second the compute allows",
                "{tflops}*1E12/(2*{params_b}*1E9)*{n_gpus}*{utilisation}",
            ),
            ("room", "decode tokens per second the target leaves", "{compute}-{prompt_tokens}/{ttft_s}"),
            ("at_target", "sequences at the target speed", "{room}/{tokens_per_s_per_user}"),
            (
                "batch",
                "whole sequences, at most a billion",
                "IF({at_target}<1-1E-9,0,MIN(" + _floor("{at_target}") + ",1E9))",
            ),
            (
                "weights_s",
                "a step's read of the weights [s]",
                "IF({bandwidth_tb_s}<=0,0,{params_b}*1E9*{bytes_per_param}/({n_gpus}*{bandwidth_tb_s}*1E12*{efficiency}))",
            ),
            (
                "sequence_s",
                "a step's read of one sequence's KV cache [s]",
                "IF({bandwidth_tb_s}<=0,0,{kv_bytes_per_token}*{context_tokens}/({n_gpus}*{bandwidth_tb_s}*1E12*{efficiency}))",
            ),
            (
                "bound",
                "the batch meeting both the compute and the memory bound",
                "IF(OR({batch}=0,{bandwidth_tb_s}<=0,{room}*{sequence_s}>=1),{batch},MIN({batch},"
                + _floor("{room}*{weights_s}/(1-{room}*{sequence_s})*(1+1E-12)")
                + "))",
            ),
            (
                "step_reads",
                "sequences whose caches a step reads within the target beside the weights",
                "IF({sequence_s}>0," + _floor("MAX({ttft_s}-{weights_s},0)/{sequence_s}*(1+1E-12)") + ",1E9)",
            ),
            (
                "step_cap",
                "the batch whose step, the one that reads the prompt's last chunk, ends within the target",
                "IF({bandwidth_tb_s}<=0,IF(1/{tokens_per_s_per_user}>{ttft_s}*(1+1E-12),0,1E9),"
                "IF({weights_s}>{ttft_s}*(1+1E-12),0,{step_reads}))",
            ),
            ("result", "the batch meeting all three", "MIN({bound},{step_cap})"),
        ],
        (
            "OR({bandwidth_tb_s}<=0,{bytes_per_param}>0,({tflops}*1E12/(2*{params_b}*1E9)*{n_gpus}*{utilisation}"
            "-{prompt_tokens}/{ttft_s})/{tokens_per_s_per_user}<1-1E-9)",
            "bytes_per_param above 0 when bandwidth_tb_s is given",
        ),
        note="Python then steps the batch down while float rounding puts DECODE_TOKS_TOTAL a hair over the room; the "
        "native form does not, so at that boundary (a few ulps) it may be one higher",
    ),
]


def _log1p(x: str) -> str:
    """``ln(1 + x)`` to the last digits for a small ``x`` (Goldberg's form: the rounding of ``1 + x`` cancels)."""
    return f"IF(1+{x}=1,{x},LN(1+{x})*{x}/((1+{x})-1))"


def _expm1(y: str) -> str:
    """``exp(y) - 1`` to the last digits for a small ``y`` (Kahan's form)."""
    return f"IF(EXP({y})=1,{y},(EXP({y})-1)*{y}/LN(EXP({y})))"


_CRF_STEPS = [
    ("log1p", "ln(1 + rate), exact for a small rate", _log1p("{annual_rate}")),
    ("growth", "(1 + rate)^years - 1", _expm1("{years}*{log1p}")),
    ("crf", "capital recovery factor", "IF({growth}=0,1/{years},{annual_rate}*({growth}+1)/{growth})"),
]
_API_REQUEST = (
    "({prompt_tokens}*((1-{cached_share})*{usd_per_m_input}+{cached_share}*{usd_per_m_cached_input})"
    "+{output_tokens}*{usd_per_m_output})"
)
_SPOT_LOST = "{interruptions_per_hour}*MAX({replace_s}-{notice_s},0)/3600"
_FORMS += [
    # Finance: energy and carbon, accounting, hosted APIs, spot
    _n(
        "KWH_PER_M_TOKENS",
        "{kw}*{pue}*({utilisation}+{idle_share}*(1-{utilisation}))/({tokens_per_s}*3600*{utilisation})*1E6",
    ),
    _n("GCO2_PER_M_TOKENS", "{kwh_per_m}*{grams_per_kwh}"),
    _n("DEPRECIATION_SL", "({capex_usd}-{salvage_usd})/{years}", note="Excel's SLN(cost, salvage, life)"),
    _n("BOOK_VALUE", "{capex_usd}-MIN({years_elapsed},{years})*({capex_usd}-{salvage_usd})/{years}"),
    _n("NPV_USD", "NPV({annual_rate},{cash_flows})", note="cash_flows is a range; Excel's NPV skips its empty cells"),
    _n("API_COST_MONTH", "{requests_per_day}*8760/12/24*" + _API_REQUEST + "/1E6"),
    _n(
        "API_CROSSOVER_RPD",
        "{self_host_usd_per_month}/(8760/12/24*" + _API_REQUEST + "/1E6)",
        (_API_REQUEST + ">0", "a request costing more than 0 on the API (a price and a token count above 0)"),
    ),
    _n(
        "SPOT_USD_PER_HOUR",
        "{usd_on_demand}*(1-{spot_discount})/(1-" + _SPOT_LOST + ")",
        (_SPOT_LOST + "<1", "interruptions_per_hour x (replace_s - notice_s) / 3600 below 1"),
    ),
]
_FORMS += [
    _stepped("CAPITAL_RECOVERY", [*_CRF_STEPS[:2], ("result", *_CRF_STEPS[2][1:])]),
    _stepped(
        "GPU_HOUR_OWNED",
        [
            *_CRF_STEPS,
            (
                "capital",
                "capital a year, the residual's present value deducted [USD]",
                "({capex_usd}-{capex_usd}*{residual_fraction}*EXP(-{years}*{log1p}))*{crf}",
            ),
            (
                "result",
                "cost per GPU-hour: capital, power and hosting [USD]",
                "{capital}/8760+{kw}*{pue}*{usd_per_kwh}+{usd_per_kw_month}*{kw}*12/8760",
            ),
        ],
    ),
    _stepped(
        "OWNED_NPV",
        [
            *_CRF_STEPS,
            (
                "result",
                "present cost of owning: capital, running costs as an annuity, the resale deducted [USD]",
                "{capex_usd}+{running_usd_per_year}/{crf}-{capex_usd}*{residual_fraction}*EXP(-{years}*{log1p})",
            ),
        ],
    ),
    _stepped(
        "BREAKEVEN_MONTH",
        [
            ("saving", "rent less the running cost, a month [USD]", "{rent_usd_per_month}-{running_usd_per_month}"),
            ("months", "months of the loan", "12*{loan_years}"),
            ("rate", "the loan's rate a month", "{annual_rate}/12"),
            ("log1p", "ln(1 + monthly rate), exact for a small rate", _log1p("{rate}")),
            ("growth", "(1 + monthly rate)^months - 1", _expm1("{months}*{log1p}")),
            (
                "payment",
                "the loan's payment a month [USD]",
                "IF({months}=0,0,{capex_usd}*IF({growth}=0,1/{months},{rate}*({growth}+1)/{growth}))",
            ),
            (
                "result",
                "months until buying has cost less than renting",
                "IF({loan_years}=0,{capex_usd}/{saving},IF({payment}+{running_usd_per_month}<={rent_usd_per_month},0,"
                "{months}*{payment}/{saving}))",
            ),
        ],
        ("{rent_usd_per_month}>{running_usd_per_month}", "rent_usd_per_month above running_usd_per_month"),
    ),
]


_LOGNORMAL_STEPS = [
    ("sigma", "the log-normal's sigma matching the mean and 95th percentile", _SIGMA[1:-1]),
    ("mu", "the log-normal's mu", "LN({mean_tokens})-{sigma}^2/2"),
]
_FORMS += [
    _stepped(
        "TAIL_SHARE",
        [
            *_LOGNORMAL_STEPS,
            (
                "result",
                "share of prompts longer than the cap",
                f"IF({{sigma}}=0,IF({{cap_tokens}}<{{mean_tokens}},1,0),"
                f"ERFC((LN({{cap_tokens}})-{{mu}})/IF({{sigma}}=0,1,{{sigma}})/{_SQRT2})/2)",
            ),
        ],
        *_LOGNORMAL_RULES,
        note="the normal tail is ERFC(z / sqrt 2) / 2, as the Python core has it: exact in the far tail, where "
        "1 - NORMSDIST(z) would lose the digits",
    ),
    _stepped(
        "LENGTH_SD",
        [
            _LOGNORMAL_STEPS[0],
            ("result", "standard deviation of the lengths", "{mean_tokens}*SQRT(" + _expm1("{sigma}^2") + ")"),
        ],
        *_LOGNORMAL_RULES,
    ),
]


_NEWTON_STEPS = 8
"""Newton steps PAGED_BATCH's native form takes on ``ln B``, kept within ``[0, ln(high + 1)]``: from the top of the
range, with a slope of at least about 0.66, eight leave it far below one sequence (the whole batches beside it are
then checked)."""


def _paged_quantile(batch: str, t: str) -> str:
    """PAGED_BATCH's quantile of a batch's total context, ``B mean exp(z t - t^2/2)`` (0 for no sequences)."""
    return f"IF({batch}<1,0,{batch}*{{mean_context_tokens}}*EXP({{z}}*{t}-{t}*{t}/2))"


def _paged_spread(batch: str) -> str:
    """``t = sqrt(log1p(cv2 / B))`` at a batch (0 for none)."""
    return f"IF({batch}<1,0,SQRT({_log1p('{cv2}/' + batch)}))"


def _paged_steps() -> list[tuple[str, str, str]]:
    steps = [
        ("capacity", "tokens of KV cache that fit", "{free_gb}*1E9/{kv_bytes_per_token}"),
        (
            "high",
            "sequences of the mean length that fit",
            "IF({capacity}<=0,0," + _floor("{capacity}/{mean_context_tokens}") + ")",
        ),
        ("limit", "the capacity, with a float's slack", "{capacity}*(1+1E-12)"),
        ("z", "the normal quantile of 1 - overflow", "NORMSINV(1-{overflow})"),
        ("cv2", "the lengths' squared coefficient of variation", "({sd_context_tokens}/{mean_context_tokens})^2"),
        ("u_max", "ln of one more than the sequences that fit", "LN({high}+1)"),
        ("u0", "ln of the batch: a start at or above the root", "{u_max}"),
    ]
    for k in range(1, _NEWTON_STEPS + 1):
        u = f"{{u{k - 1}}}"
        r = f"({{cv2}}/EXP({u}))"
        steps.append((f"r{k}", f"Newton step {k}: cv2 over the batch", f"{{cv2}}/EXP({u})"))
        r = f"{{r{k}}}"
        steps.append((f"t{k}", f"Newton step {k}: the spread t at that batch", f"SQRT({_log1p(r)})"))
        t = f"{{t{k}}}"
        newton = (
            f"{u}-({u}+LN({{mean_context_tokens}})+{{z}}*{t}-{t}^2/2-LN({{limit}}))"
            f"/IF({t}=0,1,1-({{z}}-{t})*{r}/(2*{t}*(1+{r})))"
        )
        steps.append(
            (
                f"u{k}",
                f"Newton step {k}: ln of the batch, kept within 0 and ln(high + 1) (0 if none fit)",
                f"IF({{capacity}}<=0,0,MIN(MAX({newton},0),{{u_max}}))",
            )
        )
    last = f"{{u{_NEWTON_STEPS}}}"
    steps += [
        ("b0", "the whole batch below the root", f"MAX(0,MIN({{high}},INT(EXP({last}))))"),
        ("t_up", "the spread t at one more", _paged_spread("({b0}+1)")),
        ("up", "one more still fits", f"AND({{b0}}+1<={{high}},{_paged_quantile('({b0}+1)', '{t_up}')}<={{limit}})"),
        ("t_b0", "the spread t at the batch", _paged_spread("{b0}")),
        ("fits", "the batch itself fits", f"{_paged_quantile('{b0}', '{t_b0}')}<={{limit}}"),
        (
            "result",
            "the largest batch whose quantile fits",
            "IF({capacity}<=0,0,IF({up},{b0}+1,IF({fits},{b0},MAX({b0}-1,0))))",
        ),
    ]
    return steps


_FORMS += [
    _stepped(
        "PAGED_BATCH",
        _paged_steps(),
        note="Python bisects over the batch; the native form takes Newton steps on ln B to the continuous root, then "
        "checks the whole batches beside it with Python's quantile: the same batch below about 1e12 sequences, "
        "above which one sequence moves the quantile less than its float rounding",
    ),
]


# Engines' memory, batch slots and speculative decoding
_FORMS += [
    _n("ENGINE_KV_GB", "{memory_gb}*{memory_fraction}-{weights_gb}-{reserve_gb}"),
    _n(
        "ENGINE_KV_TOKENS",
        "IF({kv_gb}*1E9<=0,0," + _floor("{kv_gb}*1E9/({kv_bytes_per_token}*{block_size})") + "*{block_size})",
    ),
    _n(
        "ENGINE_MAX_CONCURRENCY",
        "IF({kv_gb}*1E9<=0,0,{kv_gb}*1E9/({kv_bytes_per_token}*"
        + _ceil("{max_model_len}/{block_size}")
        + "*{block_size}+{state_bytes_per_sequence}))",
    ),
    _n("SLOT_S", "MAX({prefill_s}+{decode_s},{batch}/{requests_per_s_per_replica})"),
    _n(
        "SPEC_TOKENS_PER_STEP",
        "IF({acceptance}>=1,{draft_tokens}+1,(1-IF({acceptance}=0,0,IF(({draft_tokens}+1)*LN({acceptance})<-700,0,"
        "{acceptance}^({draft_tokens}+1))))/(1-{acceptance}))",
        note="a power below 1e-304 is 0, as it is to 1 minus it in floats: LibreOffice's POWER gives #NUM! once it "
        "underflows",
    ),
    _n("SPEC_TOKS", "{batch}*{tokens_per_step}/{step_seconds}"),
]
_SPEC_COMPUTED = "IF({active_params_b}=0,{params_b},{active_params_b})"
_FORMS += [
    _stepped(
        "SPEC_STEP_S",
        [
            (
                "draft",
                "one draft step, the slower of memory and compute [s]",
                "MAX({draft_params_b}*1E9*{draft_bytes_per_param}/({n_gpus}*{bandwidth_tb_s}*1E12*{bandwidth_eff}),"
                "2*{draft_params_b}*1E9*{batch}/({n_gpus}*{tflops}*1E12*{compute_eff}))",
            ),
            ("computed", "target parameters each token computes [B]", _SPEC_COMPUTED),
            (
                "verify",
                "the target's verify pass over draft_tokens + 1 tokens a sequence [s]",
                "MAX(({params_b}*1E9*{bytes_per_param}+{batch}*{kv_bytes_per_token}*{context_tokens})"
                "/({n_gpus}*{bandwidth_tb_s}*1E12*{bandwidth_eff}),"
                "2*{computed}*1E9*{batch}*({draft_tokens}+1)/({n_gpus}*{tflops}*1E12*{compute_eff}))",
            ),
            (
                "result",
                "one speculative step: the draft's steps and the verify pass [s]",
                "{draft_tokens}*{draft}+{verify}",
            ),
        ],
        ("{active_params_b}<={params_b}", "active_params_b at most params_b"),
    ),
]


POISSON_SERVERS = 500
"""Up to this many servers the native Erlang B is the Poisson ratio; above, Temme's uniform expansion.

``B(c, a) = P(N = c) / P(N <= c)`` for ``N`` Poisson of mean ``a``: up to 500 servers ``POISSON(c, a, FALSE) /
POISSON(c, a, TRUE)``, no recursion (POISSON is the name every spreadsheet reads: Excel keeps it beside POISSON.DIST,
which an .xlsx must store as ``_xlfn.POISSON.DIST`` or LibreOffice reads #NAME?). The spreadsheets' Poisson
distribution is not exact for many servers: against the Python recursion LibreOffice 7's POISSON is within 1e-12
relative to 3,000 servers and 1e-9 at 1e6, but the headless engine (formualizer) loses digits from about 1,000 (2e-9
at 1,200, 2e-6 at 2,000, 7% at 1e5: its incomplete gamma function). Above 500 servers the native form therefore
computes both probabilities itself, with ``alpha = c + 1``, ``x = a``, ``u = (x - alpha) / alpha`` and ``alpha eta^2 /
2 = alpha (u - ln(1 + u))`` (``eta < 0``): ``P(N <= c) = Q(alpha, x) = erfc(eta sqrt(alpha / 2)) / 2 + exp(-alpha
eta^2 / 2) / sqrt(2 pi alpha) S`` with ``S = c_0(eta) + c_1(eta) / alpha + c_2(eta) / alpha^2 + c_3(eta) /
alpha^3`` (Temme 1979, "The asymptotic expansion of the incomplete gamma functions", SIAM J. Math. Anal. 10, 757-766;
DLMF 8.12.3 and 8.12.8-8.12.10), and ``P(N = c) = alpha / x exp(-alpha eta^2 / 2) / (sqrt(2 pi alpha)
Gamma*(alpha))``, ``ln Gamma*(alpha) = 1/(12 alpha) - 1/(360 alpha^3) + 1/(1260 alpha^5)`` (Stirling's series). The
``c_k`` are their Taylor polynomials about ``eta = 0`` (:data:`_TEMME`). Where ``eta < -0.5`` (a load below about 60%
of the servers) or the exponent passes 700, B is below 1e-27 and is 0: Erlang C is then far below any percentile's
share, ``1 - p >= 2^-53``, and the wait is 0 as in Python. Tested to 1e-9 relative against the recursion from 1 to
1e6 servers in both engines (tests/sheet/test_native_queueing.py)."""

_TEMME = (
    (-0.3333333333333333, 0.08333333333333333, -0.014814814814814815, 0.0011574074074074073, 0.0003527336860670194,
     -0.0001787551440329218, 3.919263178522438e-05, -2.185448510679992e-06, -1.85406221071516e-06,
     8.296711340953087e-07, -1.7665952736826078e-07, 6.707853543401498e-09, 1.0261809784240309e-08),
    (-0.001851851851851852, -0.003472222222222222, 0.0026455026455026454, -0.0009902263374485596,
     0.00020576131687242798, -4.018775720164609e-07, -1.8098550334489977e-05, 7.64916091608111e-06),
    (0.004133597883597883, -0.0026813271604938273, 0.0007716049382716049, 2.0093878600823047e-06,
     -0.0001073665322636516),
    (0.0006494341563786008, 0.00022947209362139917),
)  # fmt: skip
"""Taylor coefficients about ``eta = 0`` of Temme's ``c_0`` to ``c_3`` (DLMF 8.12.8-8.12.10: ``c_0 = 1/(lambda - 1) -
1/eta``, ``c_k = c'_{k-1} / eta + (-1)^k gamma_k / (lambda - 1)``, ``gamma_k`` Stirling's coefficients 1/12, 1/288,
-139/51840), computed in 50-digit arithmetic from the Cauchy integral on ``|eta| = 1`` (their radius of convergence is
``2 sqrt(pi)``). ``c_0`` begins ``-1/3 + eta/12 - 2 eta^2/135 + eta^3/864``, ``c_1(0) = -1/540`` and ``c_2(0) =
25/6048``, as DLMF 8.12.9 gives. Truncated to degrees 12, 7, 4 and 1 they give ``Q(alpha, x)`` within 5e-16 relative
for ``alpha > 500`` and ``-0.5 <= eta <= 0`` (against mpmath's gammainc)."""


def _horner(coefficients: tuple[float, ...], x: str) -> str:
    """The polynomial ``sum c_j x^j`` in Horner's form, each coefficient to its 17 digits."""

    def number(c: float) -> str:
        return repr(c).upper()

    text = number(coefficients[-1])
    for c in reversed(coefficients[:-1]):
        text = f"({text})*{x}{'+' if c >= 0 else ''}{number(c)}"
    return text


def _erlang_b_steps(prefix: str, load: str, what: str) -> list[tuple[str, str, str]]:
    """Erlang B of ``{batch}`` servers at ``load`` (a step's key in braces) as line items keyed ``prefix`` + ``alpha``,
    ``u``, ``half``, ``eta``, ``c0_high``, ``c0``, ``c1``, ``series``, ``b``: the Poisson ratio up to
    :data:`POISSON_SERVERS` servers, Temme's expansion above."""
    p = prefix

    def key(name: str) -> str:
        return "{" + p + name + "}"

    alpha, eta = key("alpha"), key("eta")
    factor = f"EXP(-{key('half')})/SQRT(2*PI()*{alpha})"
    gamma_star = f"EXP(1/(12*{alpha})-1/(360*{alpha}^3)+1/(1260*{alpha}^5))"
    temme = f"{alpha}/{load}*{factor}/{gamma_star}/(ERFC({eta}*SQRT({alpha}/2))/2+{factor}*{key('series')})"
    c2, c3 = _horner(_TEMME[2], eta), _horner(_TEMME[3], eta)
    return [
        (f"{p}alpha", f"{what}: alpha, the servers + 1", "{batch}+1"),
        (f"{p}u", f"{what}: the load's distance below alpha, relative", f"({load}-{alpha})/{alpha}"),
        (f"{p}half", f"{what}: alpha eta^2 / 2, Temme's exponent", f"{alpha}*({key('u')}-{_log1p(key('u'))})"),
        (f"{p}eta", f"{what}: Temme's eta (below 0)", f"-SQRT(2*{key('half')}/{alpha})"),
        (f"{p}c0_high", f"{what}: Temme's c_0(eta), its terms from eta^7", _horner(_TEMME[0][7:], eta)),
        (f"{p}c0", f"{what}: Temme's c_0(eta)", f"{_horner(_TEMME[0][:7], eta)}+{eta}^7*{key('c0_high')}"),
        (f"{p}c1", f"{what}: Temme's c_1(eta)", _horner(_TEMME[1], eta)),
        (
            f"{p}series",
            f"{what}: Temme's series c_0 + c_1 / alpha + c_2 / alpha^2 + c_3 / alpha^3",
            f"{key('c0')}+({key('c1')}+({c2}+({c3})/{alpha})/{alpha})/{alpha}",
        ),
        (
            f"{p}b",
            f"{what}: Erlang B (Poisson ratio to {POISSON_SERVERS} slots, Temme's expansion above)",
            f"IF({{batch}}<={POISSON_SERVERS},{_erlang_b('{batch}', load)},"
            f"IF(OR({eta}<-0.5,{key('half')}>700),0,{temme}))",
        ),
    ]


def _erlang_b(servers: str, load: str) -> str:
    """Erlang B through the Poisson distribution: ``P(N = c) / P(N <= c)`` for ``N`` Poisson of mean ``a``."""
    return f"IF({load}<=0,0,POISSON({servers},{load},FALSE)/POISSON({servers},{load},TRUE))"


def _erlang_c(b: str, servers: str, load: str) -> str:
    """Erlang C from Erlang B, ``B / (1 - rho + rho B)`` with ``rho = a / c``, as the Python core has it."""
    return f"{b}/(1-{load}/{servers}+{load}/{servers}*{b})"


_SLOT = "MAX({prefill_s}+{decode_s},{batch}/{requests_per_s_per_replica})"
_FORMS += [
    _stepped(
        "TTFT_AT_LOAD_S",
        [
            ("per", "requests per second each replica takes", "{requests_per_s}/{replicas}"),
            ("slot", "time a request holds a batch slot (SLOT_S) [s]", _SLOT),
            ("load", "load offered to one replica's slots [Erlangs]", "{per}*{slot}"),
            *_erlang_b_steps("", "{load}", "Erlang B"),
            ("erlang_c", "Erlang C: the probability that a request waits", _erlang_c("{b}", "{batch}", "{load}")),
            (
                "wait",
                "the wait at the percentile, Allen-Cunneen's factor for arrival_cv and service_cv [s]",
                "IF({erlang_c}<=1-{percentile},0,({arrival_cv}*{arrival_cv}+{service_cv}*{service_cv})/2*{slot}"
                "/({batch}-{load})"
                "*LN({erlang_c}/(1-{percentile})))",
            ),
            ("result", "time to first token at the percentile [s]", "{prefill_s}+{wait}"),
        ],
        (
            f"{{requests_per_s}}/{{replicas}}*{_SLOT}<{{batch}}",
            "requests_per_s / replicas below what a replica serves (batch / SLOT_S): else the queue grows",
        ),
    ),
]

REPLICA_SEARCH_STEPS = 20
"""Bisection steps REPLICAS_FOR_TTFT's native form takes: it finds the fewest replicas within ``2**20`` (1,048,576)
above ``floor(requests_per_s * SLOT_S / batch) - 1``, the most that are surely overloaded.

The search's steps use the Poisson ratio for Erlang B at every batch (one line item a step; above 500 slots the
headless engine's may be a little off, which moves a step only at the boundary). The count found and the one below
it are then checked with the exact Erlang B (:data:`POISSON_SERVERS`): the result is the count when it meets the
target and the one below does not, else #N/A, which the check flags (a count beyond the bound, or a search the
Poisson ratio misled)."""


def _meets(b: str, load: str) -> str:
    """The time to first token at the percentile within the target, from Erlang B ``b`` at ``load`` (the load below
    the batch)."""
    c = _erlang_c(b, "{batch}", load)
    return f"{{prefill_s}}+{{scale}}/({{batch}}-{load})*LN(MAX({c},{{miss}})/{{miss}})<={{ttft_target_s}}"


def _replica_steps() -> list[tuple[str, str, str]]:
    steps = [
        ("slot", "time a request holds a batch slot (SLOT_S) [s]", _SLOT),
        (
            "scale",
            "the wait's scale, (arrival_cv^2 + service_cv^2) / 2 x the slot [s]",
            "({arrival_cv}*{arrival_cv}+{service_cv}*{service_cv})/2*{slot}",
        ),
        ("miss", "share of requests allowed past the target", "1-{percentile}"),
        (
            "lo0",
            "replicas surely overloaded: the search starts above",
            "MAX(INT({requests_per_s}*{slot}/{batch})-1,0)",
        ),
    ]
    for k in range(1, REPLICA_SEARCH_STEPS + 1):
        width = str(2 ** (REPLICA_SEARCH_STEPS - k))
        lo = f"{{lo{k - 1}}}"
        steps.append(
            (
                f"load{k}",
                f"step {k}: load on each of lo{k - 1} + {width} replicas [Erlangs]",
                f"{{requests_per_s}}/({lo}+{width})*{{slot}}",
            )
        )
        steps.append(
            (
                f"b{k}",
                f"step {k}: Erlang B at that load (the Poisson ratio)",
                f"IF({{load{k}}}>={{batch}},1,{_erlang_b('{batch}', f'{{load{k}}}')})",
            )
        )
        meets = _meets(f"{{b{k}}}", f"{{load{k}}}")
        steps.append(
            (
                f"lo{k}",
                f"step {k}: the most replicas known to miss the target",
                f"{lo}+IF({{load{k}}}>={{batch}},{width},IF({meets},0,{width}))",
            )
        )
    last = f"{{lo{REPLICA_SEARCH_STEPS}}}"
    steps.append(("count", "the count the search found", f"{last}+1"))
    for key, count, what in (("at", "{count}", "at the count"), ("below", "MAX({count}-1,1)", "one fewer")):
        steps.append((f"{key}_load", f"load on each replica {what} [Erlangs]", f"{{requests_per_s}}/{count}*{{slot}}"))
        steps += _erlang_b_steps(f"{key}_", f"{{{key}_load}}", f"exact Erlang B {what}")
    steps.append(
        ("at_meets", "the count meets the target", f"IF({{at_load}}>={{batch}},FALSE,{_meets('{at_b}', '{at_load}')})")
    )
    below = _meets("{below_b}", "{below_load}")
    steps.append(
        ("below_meets", "one fewer meets it too", f"IF(OR({{count}}<=1,{{below_load}}>={{batch}}),FALSE,{below})")
    )
    steps.append(
        (
            "result",
            "fewest replicas meeting the target, confirmed (else NA())",
            "IF(AND({at_meets},NOT({below_meets})),{count},NA())",
        )
    )
    return steps


_FORMS += [
    _stepped(
        "REPLICAS_FOR_TTFT",
        _replica_steps(),
        ("{ttft_target_s}>={prefill_s}", "ttft_target_s at least prefill_s (the time to first token with no wait)"),
        limits=(
            (
                "ISNUMBER({result})",
                f"the fewest replicas found within {2**REPLICA_SEARCH_STEPS:,} of the overloaded count and confirmed "
                "by the exact Erlang C (the native search's bound: beyond, use the add-in)",
            ),
        ),
        note="Python brackets and bisects around ceil(requests_per_s / r), r the most one replica takes; the native "
        f"form bisects {REPLICA_SEARCH_STEPS} times over the counts above the overloaded ones, checking each "
        "candidate's time to first token as Python does, then confirms the count and the one below it",
    ),
]


NATIVE: dict[str, Native] = {n.name: n for n in _FORMS}
"""Each registry function that has a native formula, by name."""

PYTHON_ONLY: dict[str, str] = {
    "PLAN_OPTIONS": "a search over models, accelerators, precisions and parallelism that spills a table: the "
    "portable template keeps its result as values with the inputs and date it was computed for",
    "PLAN_OPTIONS_AT": "one cell of PLAN_OPTIONS's table: the same search",
    "TRAIN_OPTIONS": "a search over training layouts that spills a table: kept as values, as PLAN_OPTIONS is",
    "DEMAND_PROFILE": "a table lookup in demand.toml by name (24 shares): kept as values with the name it read",
    "PROFILE_GPUS": "a column of whole GPUs per hour from a profile it reads whole: kept as values",
    "TIER_MIX_BASE": "a search over every level of the day's GPUs for the cheapest commitment: kept as values",
    "TIER_MIX_COST": "the same search over the commitment levels: kept as values",
    "TIER_MIX_SHARE": "the same search over the commitment levels: kept as values",
    "GRID_INTENSITY": "a lookup in grid.toml by region name or code, aliases included: kept as values",
    "HOSTED_PRICE": "a lookup in hosted.toml by model and provider, aliases included: kept as values",
    "PORTFOLIO": "a search over deployments for several workloads that spills a chargeback table: kept as values "
    "(the Portfolio sheet computes the shared fleet natively)",
}
"""Registry functions the templates use that have no native formula, with the reason."""


# ---------------------------------------------------------------------------------------------------------------
# Filling a template

_SIMPLE = re.compile(
    r"^(?:\$?[A-Za-z]{1,3}\$?\d+(?::\$?[A-Za-z]{1,3}\$?\d+)?|[A-Za-z_][A-Za-z0-9_.]*"
    r"|'[^']+'!\$?[A-Za-z]{1,3}\$?\d+(?::\$?[A-Za-z]{1,3}\$?\d+)?"
    r"|[A-Za-z_][A-Za-z0-9_]*!\$?[A-Za-z]{1,3}\$?\d+(?::\$?[A-Za-z]{1,3}\$?\d+)?"
    r"|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|\"[^\"]*\")$"
)
"""An argument that needs no parentheses: a cell or range reference, a name, a non-negative number, a text."""


def literal(value: Any) -> str:
    """A Python value as a formula literal: a number exactly (17 significant digits), a text quoted."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise ArgumentError(f"a formula cannot hold {value!r}")
        if float(value).is_integer() and abs(value) < 1e15:
            return str(int(value))
        text = repr(float(value))
        return text.upper().replace("E+", "E")
    if isinstance(value, str):
        return '"' + value.replace('"', '""') + '"'
    raise ArgumentError(f"a formula literal must be a number or a text, got {type(value).__name__}")


def is_simple(expr: str) -> bool:
    """Whether ``expr`` needs no parentheses as an operand (:data:`_SIMPLE`)."""
    return _SIMPLE.match(expr) is not None


def operand(expr: Any) -> str:
    """``expr`` (a formula's text, or a Python value as a literal) ready to be an operand: in parentheses unless it
    is a reference, a name, a non-negative number or a text."""
    text = expr if isinstance(expr, str) and not isinstance(expr, bool) else literal(expr)
    text = text.strip()
    return text if _SIMPLE.match(text) else f"({text})"


def _arguments(name: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, str]:
    fn = registry.get(name)
    names = [a.name for a in fn.args]
    if len(args) > len(names):
        raise ArgumentError(f"{fn.name} takes at most {len(names)} arguments, got {len(args)}")
    unknown = sorted(set(kwargs) - set(names))
    if unknown:
        raise ArgumentError(f"{fn.name} has no argument {unknown[0]}: its arguments are {', '.join(names)}")
    given = dict(zip(names, args)) | dict(kwargs)
    out = {}
    for a in fn.args:
        value = given.get(a.name)
        if value is None or (isinstance(value, str) and not value.strip()):
            if not a.optional:
                raise ArgumentError(f"{fn.name}: {a.name} is required")
            value = literal(a.default)
        out[a.name] = operand(value if isinstance(value, str) else literal(value))
    return out


def formula(name: str, *args: Any, **kwargs: Any) -> str:
    """The native formula of registry function ``name`` over argument expressions, without the ``=``.

    Each argument is a cell reference (``"Inputs!C5"``), any formula expression, or a Python number or text (written
    as a literal). An optional argument not given takes its registry default, as the add-in does::

        formula("KV_GB", "B2", "B3")  # 'B2*B3*1/1E9'

    A function of several steps (SERVE_TOKS, BATCH_FOR_TTFT) comes inlined, its steps repeated where they are
    used: thousands of characters, which a template writes as :func:`line_items` instead; where the inlined formula
    would pass Excel's 8,192 characters (PAGED_BATCH) it is an ArgumentError.
    """
    key = name.strip().upper()
    if key not in NATIVE:
        why = PYTHON_ONLY.get(key)
        raise ArgumentError(f"{key} has no native form" + (f": {why}" if why else ""))
    native = NATIVE[key]
    values = _arguments(key, args, kwargs)
    if not native.steps:
        return native.template.format(**values)
    return _inline(native.steps, values)


LONGEST_FORMULA = 8192
"""Excel's limit on the length of a formula."""

_LINE_ITEMS_ONLY = frozenset({"REPLICAS_FOR_TTFT"})
"""Native forms with a rule on ``{result}`` whose inlined formula passes :data:`LONGEST_FORMULA`."""


def _inline(steps: Any, values: dict[str, str]) -> str:
    """Steps ``(key, label, template)`` as one formula, each step's formula in place of its key; an ArgumentError
    when that is longer than Excel takes (PAGED_BATCH's Newton steps nest past it)."""
    values = dict(values)
    for step, _, template in steps:
        values[step] = f"({template.format(**values)})"
        if len(values[step]) > LONGEST_FORMULA:
            raise ArgumentError(
                f"inlined, these line items pass Excel's {LONGEST_FORMULA:,} characters at {step}: "
                "write them one a cell (line_items)"
            )
    return values[steps[-1][0]][1:-1]


def _items(steps: Any, values: dict[str, str], place: Callable[[str], str]) -> list[tuple[str, str, str]]:
    values = dict(values)
    out = []
    for step, label, template in steps:
        out.append((step, label, template.format(**values)))
        values[step] = operand(place(step))
    return out


def line_items(name: str, place: Callable[[str], str], *args: Any, **kwargs: Any) -> list[tuple[str, str, str]]:
    """The native form of ``name`` as line items, one step a row as the FAST standard asks: ``(key, label, formula)``
    for each, the last the result. ``place(key)`` is the cell a step sits in, which later steps refer to. A function
    of one formula is one line item."""
    key = name.strip().upper()
    native = NATIVE.get(key)
    if native is None or not native.steps:
        return [("result", registry.get(key).summary, formula(key, *args, **kwargs))]
    return _items(native.steps, _arguments(key, args, kwargs), place)


def catalog_line_items(
    tables: CatalogTables, name: str, place: Callable[[str], str], *args: Any
) -> list[tuple[str, str, str]]:
    """A catalog lookup as line items (the steps of MODEL_KV_BYTES_PER_TOKEN, MODEL_WEIGHTS_GB and EFFICIENCY), or
    as one line item."""
    key = name.strip().upper()
    if key == "MODEL_KV_BYTES_PER_TOKEN":
        return _items(tables.model_kv_steps(*args), {}, place)
    if key == "MODEL_WEIGHTS_GB":
        return _items(tables.model_weights_steps(*args), {}, place)
    if key == "EFFICIENCY":
        return _items(tables.efficiency_steps(*args), {}, place)
    return [("result", registry.get(name).summary, tables.lookup(name, *args))]


def _domain_checks(name: str, values: dict[str, str]) -> list[str]:
    conditions = []
    for a in registry.get(name).args:
        d, x = a.domain, values[a.name]
        if d is not None and d.kind == "range":  # numbers only (empty cells skipped), at least one, each in bounds
            conditions += [f"COUNT({x})>0", f"COUNT({x})=COUNTA({x})"]
            if d.low is not None:
                conditions.append(f'COUNTIF({x},"{"<=" if d.low_open else "<"}{literal(d.low)}")=0')
            if d.high is not None:
                conditions.append(f'COUNTIF({x},"{">=" if d.high_open else ">"}{literal(d.high)}")=0')
            continue
        if d is None or d.kind not in ("number", "whole", "bytes"):
            continue
        parts = [f"ISNUMBER({x})"]
        if d.low is not None:
            parts.append(f"{x}{'>' if d.low_open else '>='}{literal(d.low)}")
        if d.high is not None:
            parts.append(f"{x}{'<' if d.high_open else '<='}{literal(d.high)}")
        if d.kind == "whole":
            parts.append(f"{x}=INT({x})")
        conditions += parts
    return conditions


def check_words(name: str) -> str:
    """What :func:`check` tests, in words, for the Checks sheet's row: each argument's allowed values (from its
    domain) and the function's own rules, e.g. ``MFU: params_b a positive number up to 1,000,000; ...; tokens_per_s
    within the hardware's peak (MFU at most 1)``."""
    key = name.strip().upper()
    fn = registry.get(key)
    parts = [f"{a.name} {a.domain.describe()}" for a in fn.args if a.domain is not None and a.domain.kind != "text"]
    native = NATIVE.get(key)
    rules = [reason for _, reason in native.rules + native.limits] if native is not None else []
    return f"{key}: " + "; ".join(parts + rules)


def check(
    name: str, *args: Any, result: str | None = None, limits: bool = True, on_result: bool = True, **kwargs: Any
) -> str:
    """A formula, without the ``=``, that is TRUE when the Python function accepts these arguments and FALSE when it
    would refuse them: every argument in its domain and the function's own rules (``Native.rules``); with
    ``limits`` (the default) also FALSE beyond the native form's own limits (``Native.limits``: REPLICAS_FOR_TTFT's
    search bound), where Python computes but the native form would not equal it.

    ``result`` is the cell holding the native value, for a rule about it (MFU at most 1); without it the rule
    repeats the formula. Without ``on_result`` the rules and limits on the result are left out: what a template
    tests before it computes the line items (the result's rules tested after them). An argument that is an error
    value makes the check FALSE.
    """
    key = name.strip().upper()
    values = _arguments(key, args, kwargs)
    conditions = _domain_checks(key, values)
    native = NATIVE.get(key)
    every = () if native is None else native.rules + (native.limits if limits else ())
    if not on_result:
        every = tuple(r for r in every if "{result}" not in r[0])
    if every:
        if any("{result}" in rule for rule, _ in every):
            if not result and key in _LINE_ITEMS_ONLY:
                raise ArgumentError(
                    f"{key}'s check reads its result, whose formula is line items only: give result, "
                    "the cell holding it"
                )
            values["result"] = operand(result) if result else f"({formula(key, *args, **kwargs)})"
        # a rule over an out-of-domain argument may itself fail (LN of a negative): it is only read when the
        # domains hold
        rules = [rule.format(**values) for rule, _ in every]
        inner = rules[0] if len(rules) == 1 else f"AND({','.join(rules)})"
        if conditions:
            return f"IFERROR(IF(AND({','.join(conditions)}),{inner},FALSE),FALSE)"
        return f"IFERROR({inner},FALSE)"
    if not conditions:
        return "TRUE"
    return f"IFERROR(AND({','.join(conditions)}),FALSE)"


# ---------------------------------------------------------------------------------------------------------------
# The catalog as tables


@dataclass(frozen=True)
class Table:
    """A block of a worksheet: a header row of ``columns`` over one row per key, the keys in the first column.

    ``first_row`` and ``first_col`` (1-based) are where the header's first cell is; the keys start a row below.
    """

    sheet: str
    first_row: int
    first_col: int
    keys: tuple[str, ...]
    columns: tuple[str, ...]

    def _ref(self, row0: int, col0: int, row1: int, col1: int) -> str:
        sheet = "'" + self.sheet.replace("'", "''") + "'"
        return f"{sheet}!${_col(col0)}${row0}:${_col(col1)}${row1}"

    @property
    def key_range(self) -> str:
        """The key column, header excluded."""
        r = self.first_row + 1
        return self._ref(r, self.first_col, r + len(self.keys) - 1, self.first_col)

    @property
    def header_range(self) -> str:
        """The header row over the value columns (the key column's header excluded)."""
        c = self.first_col + 1
        return self._ref(self.first_row, c, self.first_row, c + len(self.columns) - 1)

    @property
    def body_range(self) -> str:
        """The values: one row per key, one column per entry of ``columns``."""
        r, c = self.first_row + 1, self.first_col + 1
        return self._ref(r, c, r + len(self.keys) - 1, c + len(self.columns) - 1)

    def column_range(self, column: str) -> str:
        """One value column, header excluded."""
        c = self.first_col + 1 + self.columns.index(column)
        r = self.first_row + 1
        return self._ref(r, c, r + len(self.keys) - 1, c)


def _col(n: int) -> str:
    out = ""
    while n:
        n, rem = divmod(n - 1, 26)
        out = chr(65 + rem) + out
    return out


MISSING = "-"
"""What a catalog table holds for a figure it does not have (a figure a preset lacks, a peak never published, a
price not listed): a visible text, never an error cell; the lookups over it give ``#N/A`` there, as Python refuses."""


def _figure(x: str) -> str:
    """A catalog cell ``x`` (an INDEX) as a lookup gives it: its number, ``#N/A`` where the table holds
    :data:`MISSING` (the error kind of Python's NotAvailableError); an error of ``x`` (an unknown name) passes on."""
    return f"IF(ISNUMBER({x}),{x},NA())"


def _hyphens(x: str) -> str:
    """A name as the catalog matches it: trimmed, spaces and underscores as hyphens (MATCH ignores case)."""
    return f'SUBSTITUTE(SUBSTITUTE(TRIM({x})," ","-"),"_","-")'


def _squeezed(x: str) -> str:
    """A precision name as formats match it: spaces, hyphens and underscores removed (MATCH ignores case)."""
    return f'SUBSTITUTE(SUBSTITUTE(SUBSTITUTE({x},"-",""),"_","")," ","")'


@dataclass(frozen=True)
class CatalogTables:
    """Where :func:`write_catalog` put each table, and the native lookups over them.

    ``models`` and ``accelerators`` hold one row per preset and one column per figure (:data:`MISSING` where a figure
    does not exist, which the lookups give as ``#N/A``), ``*_names`` one row per accepted name (ids and aliases, as the
    catalog matches them) with the row of its preset, ``formats`` and ``optimizers`` bytes per value by name, ``prices``
    the rental price per accelerator, each row with its source. ``derived`` holds figures Python counts from a preset's
    shapes (MODEL_EXPERT_PARAMS_B, MODEL_KV_BYTES_PER_TOKEN, MODEL_WEIGHTS_GB).
    ``efficiencies`` are the calibrated factors in use, one table per EFFICIENCY kind, a row per accelerator and
    class, a column per format: the value for decode_bandwidth and prefill, the accelerator's FLOP per byte at the
    precision for train_mfu, whose ``(ceiling, overhead_bytes)`` are ``train_mfu``. ``bands`` holds, a row per
    efficiency kind, the count ``n`` of its leave-one-source-out residuals, its P10 and P90 speed multipliers and the
    residuals in ascending order (``r1`` ...), for EFFICIENCY's quantile (None in tables written without them).
    """

    models: Table
    model_names: Table
    accelerators: Table
    accelerator_names: Table
    formats: Table
    optimizers: Table
    prices: Table
    derived: Table
    efficiencies: dict[str, Table]
    train_mfu: tuple[float, float]
    bands: Table | None = None

    def _preset(self, table: Table, names: Table, name: str, field: str) -> str:
        row = f"INDEX({names.column_range('row')},MATCH({_hyphens(name)},{names.key_range},0))"
        return _figure(f"INDEX({table.body_range},{row},MATCH(TRIM({field}),{table.header_range},0))")

    def model_spec(self, model: Any, field: Any) -> str:
        """MODEL_SPEC(model, field): ``#N/A`` for an unknown name or field, or a figure the model does not have."""
        return self._preset(self.models, self.model_names, operand(model), operand(field))

    def gpu_spec(self, gpu: Any, field: Any) -> str:
        """GPU_SPEC(gpu, field): ``#N/A`` for an unknown name or field, or a figure not published."""
        return self._preset(self.accelerators, self.accelerator_names, operand(gpu), operand(field))

    def bytes_per_param(self, precision_name: Any) -> str:
        """BYTES_PER_PARAM(precision): ``#N/A`` for an unknown format."""
        x = operand(precision_name)
        return (
            f"INDEX({self.formats.column_range('bytes')},MATCH({_squeezed(f'TRIM({x})')},{self.formats.key_range},0))"
        )

    def bytes_or_name(self, value: Any) -> str:
        """A ``bytes`` argument as the Python domain reads it: a number as it is, a precision name looked up."""
        x = operand(value)
        return f"IF(ISNUMBER({x}),{x},{self.bytes_per_param(x)})"

    def optimizer_bytes(self, optimizer: Any) -> str:
        """OPTIMIZER_BYTES(optimizer): ``#N/A`` for an unknown optimizer."""
        x = operand(optimizer)
        key = f'SUBSTITUTE(SUBSTITUTE(LOWER(TRIM({x})),"-","_")," ","_")'
        return f"INDEX({self.optimizers.column_range('bytes')},MATCH({key},{self.optimizers.key_range},0))"

    def gpu_price(self, gpu: Any) -> str:
        """GPU_PRICE(gpu): the rental price, ``#N/A`` for an accelerator without one."""
        x = operand(gpu)
        names = self.accelerator_names
        acc = f"INDEX({names.column_range('id')},MATCH({_hyphens(x)},{names.key_range},0))"
        return _figure(f"INDEX({self.prices.column_range('usd_per_gpu_hour')},MATCH({acc},{self.prices.key_range},0))")

    def model_expert_params_b(self, model: Any) -> str:
        """MODEL_EXPERT_PARAMS_B(model): the routed experts' parameters (0 for a dense model), counted by Python."""
        x = operand(model)
        row = f"INDEX({self.model_names.column_range('row')},MATCH({_hyphens(x)},{self.model_names.key_range},0))"
        return _figure(f"INDEX({self.derived.column_range('expert_params_b')},{row})")

    def model_kv_steps(self, *args: Any) -> list[tuple[str, str, str]]:
        """MODEL_KV_BYTES_PER_TOKEN(model, [context_tokens], [bytes_per_value], [tp], [windows],
        [state_bytes_per_value]) as steps ``(key, label, template)`` over the derived table (``{row}`` and the other
        keys are the earlier steps): for :func:`line_items` or inlined by :meth:`model_kv_bytes_per_token`."""
        v = _arguments("MODEL_KV_BYTES_PER_TOKEN", args, {})
        ctx, b, tp, w, sb = (
            v[a] for a in ("context_tokens", "bytes_per_value", "tp", "windows", "state_bytes_per_value")
        )

        def f(column: str) -> str:
            return f"INDEX({self.derived.column_range(column)},{{row}})"

        names = self.model_names
        latent = (
            f"IF({f('sparse')}=1,IF({b}=1,{f('sparse_fp8')},{f('latent')}*{b})+{f('index_bytes')},{f('latent')}*{b})"
        )
        held = f"IF(MOD({f('m_groups')},{tp})=0,{f('m_groups')},MAX({f('m_groups')},{tp}))"
        window = f"IF({f('window')}<>0,MIN({ctx},{f('window')}),{ctx})"
        chunk = f"MIN({ctx},IF({f('chunk')}=0,{ctx},{f('chunk')}))"
        return [
            (
                "row",
                "the preset's row",
                f"INDEX({names.column_range('row')},MATCH({_hyphens(v['model'])},{names.key_range},0))",
            ),
            (
                "per_layer",
                "bytes a token adds to one attention layer, over the GPUs",
                f"IF({f('mla')}=1,{tp}*{latent},{tp}*2*(-INT(-{f('kv_heads')}/{tp}))*{f('head_dim')}*{b})",
            ),
            ("attention", "attention layers", f("attention")),
            (
                "cached",
                "layer-tokens the sequence keeps",
                f"IF({w}=0,{{attention}}*{ctx},({{attention}}-{f('chunked')}-{f('window_layers')})*{ctx}"
                f"+{f('window_layers')}*{window}+{f('chunked')}*{chunk})",
            ),
            (
                "state",
                "fixed state of one sequence in linear-attention and Mamba layers [bytes]",
                f"{f('la_layers')}*({f('la_conv')}*2+{f('la_state')}*{sb})+{f('m_layers')}*({f('m_conv')}*"
                f"({f('m_width')}+2*{held}*{f('m_state_size')})*2+{f('m_state')}*{sb})",
            ),
            (
                "result",
                "KV cache (and state) per token [bytes]",
                f"IF({ctx}=0,{{per_layer}}*{{attention}},({{per_layer}}*{{cached}}+{{state}})/{ctx})",
            ),
        ]

    def model_weights_steps(self, *args: Any) -> list[tuple[str, str, str]]:
        """MODEL_WEIGHTS_GB(model, [bytes_per_param], [embedding_bytes_per_param], [expert_bytes_per_param]) as steps
        ``(key, label, template)`` over the derived table, the arithmetic of
        :func:`xlsxplan.catalog.models.weights_gb` in its order: ``((N - E - X) b + X b_x + E b_e) / 1e9`` [GB] with
        N the published total (params_b x 1e9), E the embedding and head parameters (capped at N), X the routed
        experts held apart (capped at N - E; 0 unless b_x is given) and b_e the embeddings' width (0: 16-bit below
        16-bit weights, else the weights', :data:`xlsxplan.catalog.models.PUBLISHED_EMBEDDING_BYTES`). A bytes
        argument may be a number or a precision name (:meth:`bytes_or_name`). ``#N/A`` for a model not in the
        catalog; :func:`check` flags a width Python refuses. For :func:`line_items` through
        :func:`catalog_line_items`, or inlined by :meth:`model_weights_gb`."""
        v = _arguments("MODEL_WEIGHTS_GB", args, {})
        names = self.model_names

        def width(a: str) -> str:
            return a if re.fullmatch(r"\d+(?:\.\d+)?(?:[eE][+-]?\d+)?", a) else self.bytes_or_name(a)

        published = literal(models.PUBLISHED_EMBEDDING_BYTES)
        total = _figure(f"INDEX({self.models.column_range('params_b')},{{row}})")
        return [
            (
                "row",
                "the preset's row",
                f"INDEX({names.column_range('row')},MATCH({_hyphens(v['model'])},{names.key_range},0))",
            ),
            ("b", "bytes per weight of the decoder blocks", width(v["bytes_per_param"])),
            ("b_emb", "bytes per embedding weight given (0: as published)", width(v["embedding_bytes_per_param"])),
            ("b_x", "bytes per routed-expert weight given (0: as the others)", width(v["expert_bytes_per_param"])),
            ("total", "published parameters [count]", f"{total}*1E9"),
            (
                "emb",
                "embedding and head parameters, at most the total [count]",
                f"MIN(INDEX({self.derived.column_range('embedding_params')},{{row}}),{{total}})",
            ),
            (
                "held",
                "routed-expert parameters, at most the rest [count]",
                f"MIN(INDEX({self.derived.column_range('routed_params')},{{row}}),{{total}}-{{emb}})",
            ),
            ("experts", "routed-expert parameters stored apart (their width given) [count]", "IF({b_x}<>0,{held},0)"),
            (
                "emb_bytes",
                "bytes per embedding weight (0: 16-bit as published, or the weights' if wider)",
                f"IF({{b_emb}}<>0,{{b_emb}},MAX({{b}},{published}))",
            ),
            ("result", "weights memory [GB]", "(({total}-{emb}-{experts})*{b}+{experts}*{b_x}+{emb}*{emb_bytes})/1E9"),
        ]

    def model_weights_gb(self, *args: Any) -> str:
        """MODEL_WEIGHTS_GB inlined: ``#N/A`` for an unknown model. A template writes its line items
        (:meth:`model_weights_steps` through :func:`catalog_line_items`)."""
        return _inline(self.model_weights_steps(*args), {})

    def model_kv_bytes_per_token(self, *args: Any) -> str:
        """MODEL_KV_BYTES_PER_TOKEN inlined: ``#N/A`` for an unknown model. A template writes its line items
        (:meth:`model_kv_steps` through :func:`line_items`)."""
        return _inline(self.model_kv_steps(*args), {})

    def efficiency(
        self,
        kind: Any,
        gpu: Any = None,
        precision_name: Any = None,
        hidden: Any = None,
        seq_len: Any = None,
        quantile: Any = None,
    ) -> str:
        """EFFICIENCY(kind, [gpu], [precision], [hidden], [seq_len], [quantile]) over the calibrated tables: ``#N/A``
        where the Python function refuses (an unknown name, a share of a peak the catalog lacks, train_mfu of a
        class, a quantile outside 0 to 1 exclusive, a kind whose factors record no residuals).

        A quantile other than 0.5 is ``MIN(1, value x exp(r))``, ``r`` the split-conformal quantile of the kind's
        leave-one-source-out residuals (:func:`xlsxplan.calibration.conformal_quantile`) from the ``bands`` table:
        at 0.1 and 0.9 (P10 and P90, the quantiles the templates use) the multiplier Python computed, written in the
        table; at any other the ``ceil((n + 1) q)``-th (above 0.5) or ``floor((n + 1) q)``-th smallest residual,
        ranked by the formula. That rank is Python's except where ``(n + 1) q`` lies within about 1e-15 relative of
        a whole number without being one: LibreOffice's INT snaps such a number to the whole one (its approxFloor),
        and picks the neighbouring residual."""
        v = _arguments("EFFICIENCY", (kind, gpu, precision_name, hidden, seq_len, quantile), {})
        k, g, p, h, t, q = (v[a] for a in ("kind", "gpu", "precision", "hidden", "seq_len", "quantile"))
        names = self.accelerator_names
        first = self.efficiencies["decode_bandwidth"]
        acc = f"IFERROR(INDEX({names.column_range('id')},MATCH({_hyphens(g)},{names.key_range},0)),TRIM({g}))"
        row = f"MATCH({acc},{first.key_range},0)"
        fmt = (
            f"INDEX({self.formats.column_range('format')},MATCH({_squeezed(f'TRIM({p})')},{self.formats.key_range},0))"
        )
        col = f"MATCH({fmt},{first.header_range},0)"

        def at(kind_name: str) -> str:
            return _figure(f"INDEX({self.efficiencies[kind_name].body_range},{row},{col})")

        ceiling, overhead = (literal(x) for x in self.train_mfu)
        mfu = f"MIN(1,{ceiling}/(1+{overhead}*{at('train_mfu')}/(72*{h})))/IF({t}>0,1+{t}/(6*{h}),1)"
        kind_key = f"LOWER(TRIM({k}))"
        value = (
            f'IF({kind_key}="train_mfu",{mfu},IF({kind_key}="prefill",{at("prefill")},'
            f'IF({kind_key}="decode_bandwidth",{at("decode_bandwidth")},NA())))'
        )
        if self.bands is None:  # tables written before the bands: the median only
            return f"IF({q}<>0.5,NA(),{value})"
        bands = self.bands
        band_row = f"MATCH({kind_key},{bands.key_range},0)"

        def band(column: str) -> str:
            return f"INDEX({bands.body_range},{band_row},{bands.columns.index(column) + 1})"

        n = band("n")
        rank = f"MIN(MAX(IF({q}>0.5,-INT(-({n}+1)*{q}),INT(({n}+1)*{q})),1),{n})"
        r1_col = bands.columns.index("r1") + 1
        ranked = f"EXP(INDEX({bands.body_range},{band_row},{r1_col - 1}+{rank}))"
        multiplier = f"IF({n}<1,NA(),IF({q}=0.1,{band('p10')},IF({q}=0.9,{band('p90')},{ranked})))"
        return f"IF(OR(NOT(ISNUMBER({q})),{q}<=0,{q}>=1),NA(),IF({q}=0.5,{value},MIN(1,{value}*{multiplier})))"

    def efficiency_steps(
        self,
        kind: Any,
        gpu: Any = None,
        precision_name: Any = None,
        hidden: Any = None,
        seq_len: Any = None,
        quantile: Any = None,
    ) -> list[tuple[str, str, str]]:
        """EFFICIENCY as steps ``(key, label, template)`` over the calibrated tables, for :func:`catalog_line_items`:
        the arithmetic of :meth:`efficiency` (its docstring has the method), each table read once, the figure a table
        lacks (:data:`MISSING`) ``#N/A``. Inlined they would pass Excel's 8,192 characters: :meth:`efficiency` is
        the one formula, reading the tables where it uses them."""
        v = _arguments("EFFICIENCY", (kind, gpu, precision_name, hidden, seq_len, quantile), {})
        k, g, p, h, t, q = (v[a] for a in ("kind", "gpu", "precision", "hidden", "seq_len", "quantile"))
        names = self.accelerator_names
        first = self.efficiencies["decode_bandwidth"]

        def at(kind_name: str) -> str:
            return f"INDEX({self.efficiencies[kind_name].body_range},{{row}},{{col}})"

        ceiling, overhead = (literal(x) for x in self.train_mfu)
        mfu = f"MIN(1,{ceiling}/(1+{overhead}*{{figure}}/(72*{h})))/IF({t}>0,1+{t}/(6*{h}),1)"
        steps = [
            (
                "accelerator",
                "the accelerator's id, or a class",
                f"IFERROR(INDEX({names.column_range('id')},MATCH({_hyphens(g)},{names.key_range},0)),TRIM({g}))",
            ),
            ("row", "its row in the efficiency tables", f"MATCH({{accelerator}},{first.key_range},0)"),
            (
                "format",
                "the precision's format",
                f"INDEX({self.formats.column_range('format')},MATCH({_squeezed(f'TRIM({p})')},{self.formats.key_range},0))",
            ),
            ("col", "its column in the efficiency tables", f"MATCH({{format}},{first.header_range},0)"),
            ("kind", "the kind asked for", f"LOWER(TRIM({k}))"),
            (
                "figure",
                "the calibrated figure (train_mfu: FLOP per byte at the precision)",
                f'IF({{kind}}="train_mfu",{at("train_mfu")},IF({{kind}}="prefill",{at("prefill")},'
                f'IF({{kind}}="decode_bandwidth",{at("decode_bandwidth")},NA())))',
            ),
            (
                "value",
                "the median efficiency (NA() where the catalog lacks the figure)",
                f'IF(ISNUMBER({{figure}}),IF({{kind}}="train_mfu",{mfu},{{figure}}),NA())',
            ),
        ]
        if self.bands is None:  # tables written before the bands: the median only
            return [*steps, ("result", "the efficiency (the median only)", f"IF({q}<>0.5,NA(),{{value}})")]
        bands = self.bands

        def band(column: str) -> str:
            return f"INDEX({bands.body_range},{{band_row}},{bands.columns.index(column) + 1})"

        r1_col = bands.columns.index("r1") + 1
        ranked = f"EXP(INDEX({bands.body_range},{{band_row}},{r1_col - 1}+{{rank}}))"
        return [
            *steps,
            ("band_row", "the kind's row of residuals", f"MATCH({{kind}},{bands.key_range},0)"),
            ("n", "leave-one-source-out residuals of the kind", band("n")),
            (
                "rank",
                "the quantile's split-conformal rank",
                f"MIN(MAX(IF({q}>0.5,-INT(-({{n}}+1)*{q}),INT(({{n}}+1)*{q})),1),{{n}})",
            ),
            (
                "multiplier",
                "the speed multiplier at the quantile (1 at the median)",
                f"IF({q}=0.5,1,IF({{n}}<1,NA(),IF({q}=0.1,{band('p10')},IF({q}=0.9,{band('p90')},{ranked}))))",
            ),
            (
                "result",
                "the efficiency at the quantile",
                f"IF(OR(NOT(ISNUMBER({q})),{q}<=0,{q}>=1),NA(),IF({q}=0.5,{{value}},MIN(1,{{value}}*{{multiplier}})))",
            ),
        ]

    def models_list(self) -> str:
        """MODELS(): the range of preset model names, for a data-validation list."""
        return self.models.key_range

    def gpus_list(self) -> str:
        """GPUS(): the range of preset accelerator names, for a data-validation list."""
        return self.accelerators.key_range

    def lookup(self, name: str, *args: Any) -> str:
        """The native lookup of registry function ``name`` (one of :data:`LOOKUPS`) over argument expressions."""
        methods: dict[str, Callable[..., str]] = {
            "MODEL_SPEC": self.model_spec,
            "GPU_SPEC": self.gpu_spec,
            "BYTES_PER_PARAM": self.bytes_per_param,
            "GPU_PRICE": self.gpu_price,
            "OPTIMIZER_BYTES": self.optimizer_bytes,
            "MODELS": self.models_list,
            "GPUS": self.gpus_list,
            "MODEL_EXPERT_PARAMS_B": self.model_expert_params_b,
            "EFFICIENCY": self.efficiency,
            "MODEL_KV_BYTES_PER_TOKEN": self.model_kv_bytes_per_token,
            "MODEL_WEIGHTS_GB": self.model_weights_gb,
        }
        key = name.strip().upper()
        if key not in methods:
            raise ArgumentError(f"{key} is not a catalog lookup: lookups are {', '.join(methods)}")
        return methods[key](*args)


LOOKUPS = (
    "MODEL_SPEC",
    "GPU_SPEC",
    "BYTES_PER_PARAM",
    "GPU_PRICE",
    "OPTIMIZER_BYTES",
    "MODELS",
    "GPUS",
    "MODEL_EXPERT_PARAMS_B",
    "EFFICIENCY",
    "MODEL_KV_BYTES_PER_TOKEN",
    "MODEL_WEIGHTS_GB",
)
"""The registry functions whose native form is a :class:`CatalogTables` lookup."""

STEPPED_LOOKUPS = ("MODEL_KV_BYTES_PER_TOKEN", "MODEL_WEIGHTS_GB", "EFFICIENCY")
"""The lookups a template writes as line items (:func:`catalog_line_items`)."""


def _name_key(name: str) -> str:
    return re.sub(r"[\s_]+", "-", name.strip().casefold())


def _put(cell: Any, value: Any) -> None:
    """A catalog table's value in its cell: a number as it is, any text as text (:func:`~.infra.text.set_text`),
    never a formula, whatever it starts with (a user preset's name, a citation)."""
    if isinstance(value, str):
        set_text(cell, value)
    else:
        cell.value = value


def write_catalog(ws: Any, top: int = 1, left: int = 1) -> CatalogTables:
    """Write the catalog's tables into worksheet ``ws`` (openpyxl), one below another from row ``top``, and return
    where each is.

    Every figure is a number, or the text :data:`MISSING` where the catalog has none (a figure a preset lacks, a peak
    never published): no cell of the tables is an error, and the lookups give ``#N/A`` there as Python refuses. Every
    row carries its source: the citation of the preset's figures (a field with a source of its own names
    it in a note column), of the format, of the price.
    """
    cat = catalog.load_catalog()
    row = top

    def title(text: str) -> None:
        nonlocal row
        _put(ws.cell(row=row, column=left), text)
        row += 1

    def block(keys: list[str], columns: list[str], rows: list[list[Any]], heading: str) -> Table:
        nonlocal row
        title(heading)
        first = row
        _put(ws.cell(row=row, column=left), "name")
        for j, c in enumerate(columns, 1):
            _put(ws.cell(row=row, column=left + j), c)
        for i, (k, values) in enumerate(zip(keys, rows), 1):
            _put(ws.cell(row=first + i, column=left), k)
            for j, v in enumerate(values, 1):
                _put(ws.cell(row=first + i, column=left + j), MISSING if v is None else v)
        row = first + len(keys) + 2
        return Table(ws.title, first, left, tuple(keys), tuple(columns))

    def presets(kind: str, table: Any, fields: tuple[str, ...]) -> tuple[Table, Table]:
        ids = table.names()
        body = []
        for pid in ids:
            p = table.get(pid)
            own = {
                f: table.sources[p.source_key(f)]
                for f in fields
                if p.figure(f) is not None and p.source_key(f) != p.source
            }
            notes = "; ".join(f"{f}: {s}" for f, s in own.items())
            body.append([p.figure(f) for f in fields] + [table.sources[p.source], notes])
        figures = block(ids, [*fields, "source", "other sources"], body, f"{kind} presets (figures and sources)")
        names: dict[str, tuple[int, str]] = {}
        for i, pid in enumerate(ids, 1):
            for n in (pid, *table.get(pid).aliases):
                names.setdefault(_name_key(n), (i, pid))
        named = block(list(names), ["row", "id"], [list(v) for v in names.values()], f"{kind} names and aliases")
        return figures, named

    models, model_names = presets("Model", cat.models, catalog.MODEL_FIELDS)
    accelerators, accelerator_names = presets("Accelerator", cat.accelerators, catalog.GPU_FIELDS)
    fmt_rows: dict[str, list[Any]] = {}
    for fname, (bytes_, source) in precision.FORMATS.items():
        fmt = precision.lookup(fname)
        for n in (fname, *fmt.aliases):
            fmt_rows.setdefault(precision.format_key(n), [bytes_, fname, source])
    formats = block(
        list(fmt_rows),
        ["bytes", "format", "source"],
        list(fmt_rows.values()),
        "Numeric formats (bytes per value, scales included)",
    )
    opt_names = list(training_memory.OPTIMIZERS)
    opt_rows = [[b, s] for b, s in training_memory.OPTIMIZERS.values()]
    for alias in ("adam_mixed", "adamw_mixed", "adam8bit", "momentum"):
        try:
            opt_rows.append([training_memory.optimizer_bytes(alias), "an alias: see the row of the same bytes"])
            opt_names.append(alias)
        except ArgumentError:
            continue
    optimizers = block(opt_names, ["bytes", "source"], opt_rows, "Optimizers (state bytes per parameter)")
    prices_ = catalog.load_prices()
    price_ids = [pid for pid in prices_.ids()]
    price_rows = [[prices_.get(pid).usd_per_gpu_hour, prices_.citation(pid)] for pid in price_ids]
    prices = block(price_ids, ["usd_per_gpu_hour", "source"], price_rows, "Rental prices (USD per GPU-hour)")
    expert = registry.FUNCTIONS["MODEL_EXPERT_PARAMS_B"]
    derived_rows = []
    for pid in cat.models.names():
        shapes = _cache_shapes(cat.models.get(pid))
        derived_rows.append(
            [
                _or_none(expert, pid),
                *shapes.values(),
                *_weight_counts(cat.models.get(pid)),
                "counted from the preset's figures above",
            ]
        )
    heading = (
        "Model figures counted from the shapes (MODEL_EXPERT_PARAMS_B, MODEL_KV_BYTES_PER_TOKEN, MODEL_WEIGHTS_GB)"
    )
    derived = block(
        list(cat.models.names()), ["expert_params_b", *_CACHE_SHAPES, *_WEIGHT_COUNTS, "source"], derived_rows, heading
    )
    cal = calibration.active()
    basis = f"calibrated efficiencies: {cal.describe()}"
    gpus = [*cat.accelerators.names(), *calibration.CLASSES]
    formats_ = list(precision.FORMATS)
    efficiencies = {}
    for kind in ("decode_bandwidth", "prefill", "train_mfu"):
        cells = [[_efficiency_cell(kind, g, f) for f in formats_] for g in gpus]
        heading = f"EFFICIENCY {kind}" + (" (FLOP per byte at the precision)" if kind == "train_mfu" else "")
        efficiencies[kind] = block(gpus, formats_, cells, f"{heading}; {basis}")
    band_kinds = list(BAND_OF)
    residuals = {k: sorted(cal.bands.get(BAND_OF[k]) or []) for k in band_kinds}
    longest = max((len(r) for r in residuals.values()), default=0)
    band_rows = []
    for k in band_kinds:
        r = residuals[k]
        ends = [calibration.band(k, q) if r else None for q in (BAND_LOW, BAND_HIGH)]
        band_rows.append([len(r), *ends, *r, *([""] * (longest - len(r)))])
    heading = (
        "EFFICIENCY ranges: leave-one-source-out residuals ln(measured / predicted), ascending, and the P10 / P90 "
        f"multipliers (split-conformal ranks); {basis}"
    )
    bands = block(band_kinds, ["n", "p10", "p90", *(f"r{i}" for i in range(1, longest + 1))], band_rows, heading)
    fit = cal.factors.train_mfu
    return CatalogTables(
        models,
        model_names,
        accelerators,
        accelerator_names,
        formats,
        optimizers,
        prices,
        derived,
        efficiencies,
        (fit.ceiling, fit.overhead_bytes),
        bands,
    )


_CACHE_SHAPES = (
    "attention",
    "mla",
    "latent",
    "sparse",
    "sparse_fp8",
    "index_bytes",
    "kv_heads",
    "head_dim",
    "chunked",
    "chunk",
    "window",
    "window_layers",
    "la_layers",
    "la_conv",
    "la_state",
    "m_layers",
    "m_conv",
    "m_width",
    "m_groups",
    "m_state_size",
    "m_state",
)
"""The derived table's columns behind MODEL_KV_BYTES_PER_TOKEN (see :func:`_cache_shapes`)."""


_WEIGHT_COUNTS = ("embedding_params", "routed_params")
"""The derived table's columns behind MODEL_WEIGHTS_GB (see :func:`_weight_counts`)."""


def _weight_counts(m: Any) -> tuple[int, int]:
    """What MODEL_WEIGHTS_GB counts from a preset's shape (:func:`xlsxplan.catalog.models.weights_gb`): embedding and
    output-head parameters (``vocab * hidden``, twice unless tied) and routed-expert parameters (``moe_layers *
    experts * expert_params``, 0 for a dense model) [count]."""
    return models.embedding_params(m), models.routed_expert_params(m)


def _cache_shapes(m: Any) -> dict[str, int]:
    """What a preset's KV cache and state per sequence are counted from, each 0 where the preset lacks it: attention
    layers; latent attention (1), its latent width, DeepSeek's sparse indexer (1), the FP8 latent's bytes and the
    indexer key's; KV heads and head width; chunked layers and chunk; window and window layers; linear-attention
    layers, their convolution and state values per layer; Mamba layers, their convolution kernel less one, width
    (heads x head dim), groups, state size and state values per layer."""
    rank, rope, index = m.kv_lora_rank or 0, m.qk_rope_head_dim or 0, m.index_head_dim or 0
    block = models.SPARSE_MLA_SCALE_BLOCK
    kh, vh, kd, vd = (
        m.linear_key_heads or 0,
        m.linear_value_heads or 0,
        m.linear_key_head_dim or 0,
        m.linear_value_head_dim or 0,
    )
    heads, hd, ss = m.mamba_heads or 0, m.mamba_head_dim or 0, m.mamba_state_size or 0
    values = (
        m.attention_layer_count,
        int(m.kv_lora_rank is not None),
        rank + rope,
        int(m.index_head_dim is not None),
        rank + 4 * (rank // block) + 2 * rope,
        index + 4 * (index // block),
        m.kv_heads or 0,
        m.head_dim or 0,
        m.chunked_layers or 0,
        m.attention_chunk or 0,
        m.sliding_window or 0,
        m.sliding_window_layers or 0,
        m.linear_attention_layers or 0,
        ((m.linear_conv_kernel or 1) - 1) * (2 * kh * kd + vh * vd),
        vh * vd * kd,
        m.mamba_layers or 0,
        (m.mamba_conv_kernel or 1) - 1,
        heads * hd,
        m.mamba_groups or 1,
        ss,
        heads * hd * ss,
    )
    return dict(zip(_CACHE_SHAPES, values))


def _or_none(fn: registry.Function, *args: Any) -> Any:
    try:
        return fn(*args)
    except XlsxplanError:
        return None


def _efficiency_cell(kind: str, gpu: str, fmt: str) -> float | None:
    """EFFICIENCY's value (decode_bandwidth, prefill), or for train_mfu the FLOP per byte it is computed from; None
    where EFFICIENCY refuses."""
    if _or_none(registry.FUNCTIONS["EFFICIENCY"], kind, gpu, fmt) is None:
        return None
    if kind != "train_mfu":
        return float(calibration.efficiency(kind, gpu, fmt))
    return float(
        catalog.gpu_spec(gpu, calibration.peak_field(fmt)) * 1e12 / (catalog.gpu_spec(gpu, "bandwidth_tb_s") * 1e12)
    )
