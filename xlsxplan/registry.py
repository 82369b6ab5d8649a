"""The Excel functions: one entry per function, everything else generated from it.

Each entry pairs an Excel name with a core function. The description, every argument's doc and unit, the
defaults and the allowed values are read from the function itself (its numpydoc docstring, its signature and the
:class:`~xlsxplan.domains.Domain` in each annotation), so nothing is written twice. The xlwings UDFs, the headless
engine, the command line and the README's function reference all iterate over :data:`FUNCTIONS`.

A docstring's parameter line carries its unit in square brackets at the end (``Transformer layers [count].``);
building an entry fails if a parameter is undocumented, a unit is missing, a doc names a parameter the signature
does not have, or a text for Excel's function wizard would not fit its 255 characters (nothing is ever cut: see
:meth:`Function.description`).

The names are known at import; each entry, and the module behind it, is built the first time it is read
(:class:`_Functions`), so a face that calls one function loads that function's module alone. ``tests/test_registry.py``
builds every entry, so a bad docstring still fails the tests.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import re
import typing
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .domains import Domain, format_number
from .errors import ArgumentError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Argument", "Function", "FUNCTIONS", "get", "REQUIRED", "EXCEL_TEXT_LIMIT"]

EXCEL_TEXT_LIMIT = 255
"""Excel's limit on a function description and on each argument description (Application.MacroOptions)."""


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()

_UNIT = re.compile(r"\s*\[([^\[\]]+)\]\s*\.?\s*$")


@dataclass(frozen=True)
class Argument:
    """One argument of an Excel function."""

    name: str
    doc: str
    unit: str
    domain: Domain | None
    default: Any = REQUIRED

    @property
    def optional(self) -> bool:
        return self.default is not REQUIRED

    def default_text(self) -> str:
        if not self.optional:
            return ""
        if isinstance(self.default, (int, float)):
            return format_number(self.default)
        return str(self.default)

    def help(self) -> str:
        """The function wizard's text for this argument: its doc, unit and default. Building the registry fails
        if it is over Excel's 255 characters (:data:`EXCEL_TEXT_LIMIT`): it is never cut."""
        text = f"{self.doc} [{self.unit}]"
        if self.optional:
            text += f" Optional, default {self.default_text()}."
        return " ".join(text.split())


@dataclass(frozen=True)
class Function:
    """An Excel function: its name, the core function behind it and its documentation."""

    name: str
    func: Callable[..., Any]
    summary: str
    args: tuple[Argument, ...]
    returns: str
    unit: str
    category: str
    notes: str = ""
    spills: bool = False
    """True when the result is a list (MODELS, GPUS) that spills down a column, or a table (see ``table``)."""
    table: bool = False
    """True when the result is a table, a list of rows with the header row first (PLAN_OPTIONS), that spills down
    and across. The entry's ``func`` returns it as a 2-D numpy object array, the form every face spills as a grid
    (the cell layer reads a plain list as one column); the core function itself returns plain lists."""
    whole: bool = False
    """True when the result is a whole number (the core function returns ``int``: MAX_BATCH, REPLICAS)."""

    def __call__(self, *args: Any) -> Any:
        return self.func(*args)

    @property
    def python_name(self) -> str:
        return self.func.__name__

    @property
    def min_args(self) -> int:
        return sum(not a.optional for a in self.args)

    def signature(self) -> str:
        """``KV_BYTES_PER_TOKEN(layers, kv_heads, head_dim, [bytes_per_value=2])``."""
        parts = [f"[{a.name}={a.default_text()}]" if a.optional else a.name for a in self.args]
        return f"{self.name}({', '.join(parts)})"

    def description(self) -> str:
        """The function wizard's text: the summary, what it returns and the result unit, composed to fit Excel's
        255 characters (:data:`EXCEL_TEXT_LIMIT`) without cutting a word.

        When the whole Returns text does not fit, its trailing clauses (after ``;``) are left out, then all of it:
        the summary and the ``[unit]`` always stay. Building the registry fails if even they do not fit.
        """
        returns = " ".join(self.returns.rstrip(".").split())
        if returns[:2].istitle():  # "Tokens per second" reads "returns tokens per second"; "KV cache" stays
            returns = returns[0].lower() + returns[1:]
        summary = " ".join(self.summary.split())
        clauses = returns.split("; ")
        for n in range(len(clauses), 0, -1):
            text = f"{summary} Returns {'; '.join(clauses[:n])} [{self.unit}]."
            if len(text) <= EXCEL_TEXT_LIMIT:
                return text
        return f"{summary} [{self.unit}]."


def _check_excel_limits(fn: Function, where: str) -> None:
    """Refuse, at import, a summary or an argument's help that Excel's function wizard would cut."""
    if len(fn.description()) > EXCEL_TEXT_LIMIT:
        raise TypeError(
            f"{where}: the summary and unit take {len(fn.description())} characters; Excel shows at most "
            f"{EXCEL_TEXT_LIMIT}: shorten the summary line"
        )
    for a in fn.args:
        if len(a.help()) > EXCEL_TEXT_LIMIT:
            raise TypeError(
                f"{where} parameter {a.name}: its help takes {len(a.help())} characters; Excel shows at "
                f"most {EXCEL_TEXT_LIMIT}: shorten its description"
            )


def _split_unit(text: str, where: str) -> tuple[str, str]:
    text = " ".join((text or "").split())
    match = _UNIT.search(text)
    if not match:
        raise TypeError(f"{where}: the description must end with its unit in brackets, e.g. '[GB].'")
    return text[: match.start()].rstrip(" .") + ".", match.group(1).strip()


def describe(name: str, func: Callable[..., Any], category: str) -> Function:
    """Build a registry entry from a core function's signature, annotations and numpydoc docstring."""
    import docstring_parser  # a function's entry is built at its first use: imported then

    doc = docstring_parser.parse(inspect.getdoc(func) or "", docstring_parser.DocstringStyle.NUMPYDOC)
    where = f"{name} ({func.__module__}.{func.__name__})"
    if not doc.short_description:
        raise TypeError(f"{where}: no summary line")
    params = inspect.signature(func).parameters
    documented = {p.arg_name: p for p in doc.params}
    if list(documented) != list(params):
        raise TypeError(f"{where}: documented parameters {list(documented)} differ from the signature {list(params)}")
    domains = getattr(func, "domains", {})
    args = []
    for pname, param in params.items():
        text, unit = _split_unit(documented[pname].description or "", f"{where} parameter {pname}")
        default = REQUIRED if param.default is inspect.Parameter.empty else param.default
        args.append(Argument(pname, text, unit, domains.get(pname), default))
    if doc.returns is None:
        raise TypeError(f"{where}: no Returns section")
    returns, unit = _split_unit(doc.returns.description or "", f"{where} returns")
    notes = " ".join(m.description or "" for m in doc.meta if m.args == ["notes"])
    result = typing.get_type_hints(func).get("return")
    spills = typing.get_origin(result) is list
    table = spills and any(typing.get_origin(a) is list for a in typing.get_args(result))
    entry = _as_grid(func, name) if table else func
    fn = Function(
        name,
        entry,
        doc.short_description.strip(),
        tuple(args),
        returns,
        unit,
        category,
        " ".join(notes.split()),
        spills=spills,
        whole=result is int,
        table=table,
    )
    _check_excel_limits(fn, where)
    return fn


def _grid(rows: list[list[Any]]) -> np.ndarray | list[list[Any]]:
    """A table's rows as a 2-D object array, each cell as it is (numpy would unpack nothing, guess no dtype).

    numpy is imported here, when a table is asked for, never when the registry is: ``import xlsxplan`` stays free of
    it. Where it is not installed (the Lite bundle in Pyodide), the same grid as a list of rows, padded with empty
    text, which every face spills as the array's rows.
    """
    width = max((len(r) for r in rows), default=0)
    try:
        import numpy as np
    except ImportError:
        return [list(row) + [""] * (width - len(row)) for row in rows]
    if rows and all(len(r) == width for r in rows):  # all at once, when numpy reads every cell as one value
        with contextlib.suppress(ValueError):
            whole = np.array(rows, dtype=object)
            if whole.shape == (len(rows), width):
                return whole
    out = np.empty((len(rows), width), dtype=object)
    out[:] = ""
    for i, row in enumerate(rows):
        for j, value in enumerate(row):
            out[i, j] = value
    return out


def _as_grid(func: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``func`` with its table result as a 2-D array (:attr:`Function.table`), its checks and domains kept.

    A table fills a block of cells by itself, so a range in place of one of its arguments (which the cell layer
    broadcasts, one call per element through ``call_checked``) gets one clean error per element instead of a table
    inside each cell.
    """

    @functools.wraps(func)
    def grid(*args: Any, **kwargs: Any) -> np.ndarray | list[list[Any]]:
        return _grid(func(*args, **kwargs))

    def per_element(*values: Any) -> Any:
        raise ArgumentError(f"{name} spills one table: give one value per argument, not a range of them")

    grid.call_checked = per_element  # type: ignore[attr-defined]
    return grid


# The published interface: these names and argument orders stay stable. Order here is the order of the README's
# reference and of `xlsxplan functions`.
_TABLE: list[tuple[str, list[tuple[str, str]]]] = [
    (
        "Serving",
        [
            ("KV_BYTES_PER_TOKEN", "serving.kv_bytes_per_token"),
            ("WEIGHTS_GB", "serving.weights_gb"),
            ("KV_GB", "serving.kv_gb"),
            ("USABLE_GB", "serving.usable_gb"),
            ("FREE_GB", "serving.free_gb"),
            ("MAX_BATCH", "serving.max_batch"),
            ("DECODE_TOKS", "serving.decode_tokens_per_s"),
            ("DECODE_TOKS_TOTAL", "serving.decode_tokens_per_s_total"),
            ("COMPUTE_TOKS", "serving.compute_tokens_per_s"),
            ("TOKS_CEILING", "serving.tokens_per_s_ceiling"),
            ("INFER_FLOPS", "serving.inference_flops"),
            ("PREFILL_S", "serving.prefill_seconds"),
            ("COST_PER_M_TOKENS", "serving.cost_per_m_tokens"),
            ("PEAK_RPS", "serving.peak_requests_per_s"),
            ("PEAK_TOKS", "serving.peak_tokens_per_s"),
            ("REPLICAS", "serving.replicas"),
        ],
    ),
    (
        "Training",
        [
            ("TRAIN_FLOPS", "training.train_flops"),
            ("TRAIN_TOKENS", "training.train_tokens"),
            ("CHINCHILLA_TOKENS", "training.chinchilla_tokens"),
            ("CHINCHILLA_RATIO", "training.chinchilla_ratio"),
            ("OPTIMAL_PARAMS_B", "training.optimal_params_b"),
            ("FLOPS_6N", "training.flops_6n"),
            ("MFU", "training.mfu"),
            ("TRAIN_SECONDS", "training.train_seconds"),
            ("RUN_SECONDS", "training.run_seconds"),
            ("GPU_HOURS", "training.gpu_hours"),
            ("TRAIN_MEMORY_GB", "training.train_memory_gb"),
            ("DATA_PASSES", "training.data_passes"),
        ],
    ),
    (
        "Presets",
        [
            ("MODEL_SPEC", "catalog.model_spec"),
            ("GPU_SPEC", "catalog.gpu_spec"),
            ("MODEL_SOURCE", "catalog.model_source"),
            ("GPU_SOURCE", "catalog.gpu_source"),
            ("MODELS", "catalog.model_names"),
            ("GPUS", "catalog.gpu_names"),
            ("BYTES_PER_PARAM", "precision.bytes_per_param"),
            ("GPU_PRICE", "catalog.gpu_price"),
            ("GPU_PRICE_SOURCE", "catalog.gpu_price_source"),
        ],
    ),
    (
        "Architecture",
        [
            # MoE, MLA, sliding windows, quantization formats, training memory
            ("KV_BYTES_MLA", "architecture.kv_bytes_per_token_mla"),
            ("KV_BYTES_PER_SEQ", "architecture.kv_bytes_per_sequence"),
            ("KV_HEADS_PER_GPU", "architecture.kv_heads_per_gpu"),
            ("MODEL_KV_BYTES_PER_TOKEN", "models.model_kv_bytes_per_token"),
            ("MODEL_KV_GB", "models.model_kv_gb"),
            ("MODEL_WEIGHTS_GB", "models.model_weights_gb"),
            ("MODEL_EXPERT_PARAMS_B", "models.model_expert_params_b"),
            ("MOE_PARAMS_READ_B", "architecture.moe_params_read_b"),
            ("WEIGHTS_GB_PER_GPU", "architecture.weights_gb_per_gpu"),
            ("QUANT_BYTES_PER_PARAM", "precision.block_bytes_per_param"),
            ("FORMAT_SOURCE", "precision.format_source"),
            ("OPTIMIZER_BYTES", "training_memory.optimizer_bytes"),
            ("TRAIN_STATE_GB", "training_memory.train_state_gb"),
            ("ACTIVATION_GB", "training_memory.activation_gb"),
            ("TRAIN_FLOPS_PER_TOKEN", "training_memory.train_flops_per_token"),
            ("RECURRENT_PARAMS_B", "training_memory.recurrent_params_b"),
        ],
    ),
    (
        "Calibration",
        [
            # calibrated efficiencies and the roofline serving model
            ("EFFICIENCY", "calibration.efficiency"),
            ("DECODE_STEP_S", "roofline.decode_step_seconds"),
            ("SERVE_TOKS", "roofline.serve_tokens_per_s"),
            ("TTFT_S", "roofline.ttft_seconds"),
        ],
    ),
    (
        "Traffic",
        [
            # long-tail prompts, prefix caching, reasoning tokens, latency targets, spares, pricing
            ("TAIL_SHARE", "traffic.tail_share"),
            ("LENGTH_SD", "traffic.length_sd"),
            ("TAIL_SHARE_DATA", "traffic.tail_share_data"),
            ("PAGED_BATCH", "traffic.paged_batch"),
            ("MAX_CONTEXT_TOKENS", "traffic.max_context_tokens"),
            ("CONTEXT_TOKENS", "traffic.context_tokens"),
            ("TIME_TO_ANSWER_S", "traffic.time_to_answer_s"),
            ("PREFILL_TOKENS", "traffic.prefill_tokens"),
            ("BATCH_FOR_LATENCY", "traffic.batch_for_latency"),
            ("BATCH_FOR_TTFT", "traffic.batch_for_ttft"),
            ("PREFILL_SHARE", "traffic.prefill_share"),
            ("REPLICA_RPS", "traffic.replica_rps"),
            ("REPLICA_RPS_CHUNKED", "traffic.replica_rps_chunked"),
            ("PREFILL_REPLICAS", "traffic.prefill_replicas"),
            ("DECODE_REPLICAS", "traffic.decode_replicas"),
            ("KV_TRANSFER_S", "traffic.kv_transfer_s"),
            ("FLEET_REPLICAS", "traffic.fleet_replicas"),
            ("FLEET_UTILISATION", "traffic.fleet_utilisation"),
            ("PEAK_COVERAGE", "traffic.peak_coverage"),
            ("COST_PER_M_INPUT", "traffic.cost_per_m_input"),
            ("COST_PER_M_OUTPUT", "traffic.cost_per_m_output"),
        ],
    ),
    (
        "Queueing",
        [
            # latency under load: the wait for a batch slot, percentiles of the time to first token, and the
            # replicas and utilisation a percentile target allows
            ("ERLANG_C", "queueing.erlang_c"),
            ("QUEUE_WAIT_S", "queueing.queue_wait_s"),
            ("QUEUE_WAIT_GG_S", "queueing.queue_wait_gg_s"),
            ("SERVICE_CV", "queueing.service_cv"),
            ("SLOT_S", "queueing.slot_s"),
            ("TTFT_AT_LOAD_S", "queueing.ttft_at_load_s"),
            ("REPLICAS_FOR_TTFT", "queueing.replicas_for_ttft"),
            ("UTILISATION_FOR_TTFT", "queueing.utilisation_for_ttft"),
        ],
    ),
    (
        "State",
        [
            # linear-attention and Mamba-2 layers: a fixed state per sequence beside the attention layers' KV cache
            ("LINEAR_STATE_BYTES", "architecture.linear_attention_state_bytes"),
            ("MAMBA_STATE_BYTES", "architecture.mamba_state_bytes"),
            ("MODEL_STATE_BYTES", "models.model_state_bytes"),
            ("MODEL_SEQ_BYTES", "models.model_sequence_bytes"),
        ],
    ),
    (
        "Engines",
        [
            # the KV pool vLLM and SGLang allocate, and the tokens and concurrency they print at start-up
            ("ENGINE_KV_GB", "engine.engine_kv_gb"),
            ("ENGINE_KV_TOKENS", "engine.engine_kv_tokens"),
            ("ENGINE_MAX_CONCURRENCY", "engine.engine_max_concurrency"),
            ("MODEL_ENGINE_KV_TOKENS", "models.model_engine_kv_tokens"),
            ("MODEL_ENGINE_CONCURRENCY", "models.model_engine_concurrency"),
        ],
    ),
    (
        "Speculative",
        [
            ("SPEC_TOKENS_PER_STEP", "speculative.spec_tokens_per_step"),
            ("SPEC_ACCEPT_LENGTH", "speculative.spec_accept_length"),
            ("SPEC_SPEEDUP", "speculative.spec_speedup"),
            ("SPEC_STEP_S", "speculative.spec_step_seconds"),
            ("SPEC_TOKS", "speculative.spec_tokens_per_s"),
            ("SPEC_DRAFT_GB", "speculative.spec_draft_gb"),
            ("SPEC_MAX_BATCH", "speculative.spec_max_batch"),
        ],
    ),
    (
        "Planning",
        [
            ("PLAN_OPTIONS", "plan_search.plan_options"),
            ("PLAN_OPTIONS_AT", "plan_cells.plan_options_at"),
            ("TRAIN_OPTIONS", "plan_train.train_options"),
            ("PORTFOLIO", "plan_portfolio.portfolio_table"),
        ],
    ),
    (
        "Cost",
        [
            # owning against renting: capital recovery, power and hosting, breakevens, commitments
            ("GPU_HOUR_OWNED", "cost.gpu_hour_owned"),
            ("CAPITAL_RECOVERY", "cost.capital_recovery_factor"),
            ("COST_PER_M_OWNED", "cost.cost_per_m_owned"),
            ("COST_PER_M_RENTED", "cost.cost_per_m_rented"),
            ("BREAKEVEN_UTILISATION", "cost.breakeven_utilisation"),
            ("BREAKEVEN_MONTH", "cost.breakeven_month"),
            ("COMMITTED_COST", "cost.committed_cost"),
            ("BEST_COMMITMENT", "cost.best_commitment"),
            ("COST_SPEC", "costs.cost_spec"),
            ("COST_SOURCE", "costs.cost_source"),
            ("DEPRECIATION_SL", "cost.depreciation_sl"),
            ("BOOK_VALUE", "cost.book_value"),
            ("NPV_USD", "cost.npv_usd"),
            ("OWNED_NPV", "cost.owned_npv"),
        ],
    ),
    (
        "Finance",
        [
            # price tiers over a day's demand, hosted APIs against self-hosting, energy and carbon per token
            ("PROFILE_GPUS", "tiers.profile_gpus"),
            ("SPOT_USD_PER_HOUR", "tiers.spot_usd_per_hour"),
            ("TIER_MIX_COST", "tiers.tier_mix_cost"),
            ("TIER_MIX_BASE", "tiers.tier_mix_base"),
            ("TIER_MIX_SHARE", "tiers.tier_mix_share"),
            ("DEMAND_PROFILE", "finance.demand_profile"),
            ("DEMAND_SOURCE", "finance.demand_source"),
            ("API_COST_MONTH", "hosted.api_cost_per_month"),
            ("API_CROSSOVER_RPD", "hosted.api_crossover_rpd"),
            ("HOSTED_PRICE", "finance.hosted_price"),
            ("HOSTED_SOURCE", "finance.hosted_source"),
            ("KWH_PER_M_TOKENS", "energy.kwh_per_m_tokens"),
            ("GCO2_PER_M_TOKENS", "energy.gco2_per_m_tokens"),
            ("GRID_INTENSITY", "finance.grid_intensity"),
            ("GRID_SOURCE", "finance.grid_source"),
        ],
    ),
]

ENTRY_MODULES = {
    "calibration": "calibration",
    "catalog": "catalog",
    "precision": "precision",
    "costs": "catalog.costs",
    "finance": "catalog.finance",
    "models": "catalog.models",
    **{m: f"core.{m}" for m in "architecture cost energy engine hosted queueing roofline serving speculative".split()},
    **{m: f"core.{m}" for m in "tiers traffic training training_memory".split()},
    "plan_cells": "plan.cells",
    "plan_portfolio": "plan.portfolio",
    "plan_search": "plan.search",
    "plan_train": "plan.train_table",
}
"""The modules :data:`_TABLE` names its functions in (``"serving.max_batch"``), under ``xlsxplan``."""


class _Functions(MutableMapping[str, Function]):
    """Every Excel function by name, in reference order, each entry built (:func:`describe`) the first time it is
    asked for.

    The names are known at import, so ``name in FUNCTIONS`` and iterating the names import nothing: a headless
    recalculation that calls DECODE_TOKS_TOTAL alone never loads the catalog, its pydantic schemas or the plan
    search. An entry's module is imported and its docstring read when the entry is first read; iterating
    ``values()`` or ``items()`` builds them all, which is where a bad docstring still fails
    (``tests/test_registry.py`` builds every entry)."""

    def __init__(self, table: list[tuple[str, list[tuple[str, str]]]]) -> None:
        self._where: dict[str, tuple[str, str] | None] = {
            name: (category, target) for category, rows in table for name, target in rows
        }
        self._built: dict[str, Function] = {}

    def __getitem__(self, name: str) -> Function:
        fn = self._built.get(name)
        if fn is None:
            where = self._where[name]  # KeyError for a name that is not a function
            assert where is not None  # an entry set from outside is always built
            category, target = where
            module, _, attr = target.partition(".")
            func = getattr(importlib.import_module(f"{__package__}.{ENTRY_MODULES[module]}"), attr)
            fn = self._built[name] = describe(name, func, f"xlsxplan {category}")
        return fn

    def __setitem__(self, name: str, fn: Function) -> None:
        self._where.setdefault(name, None)
        self._built[name] = fn

    def __delitem__(self, name: str) -> None:
        del self._where[name]
        self._built.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._where

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)


FUNCTIONS: MutableMapping[str, Function] = _Functions(_TABLE)
"""Every Excel function, by Excel name, in reference order (each built on first use: :class:`_Functions`)."""


def get(name: str) -> Function:
    """The registry entry for an Excel name, case-insensitively; KeyError if there is none."""
    return FUNCTIONS[name.strip().upper()]
