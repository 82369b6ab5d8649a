"""xlsxplan: LLM capacity, cost and training planning in Excel.

The core is plain typed functions (:mod:`xlsxplan.core.serving`, :mod:`xlsxplan.core.training`, the preset
:mod:`xlsxplan.catalog`); the Excel functions, the headless engine, the command line and the template workbooks
are generated faces on it (:mod:`xlsxplan.registry`). Importing this package loads nothing else: each public name
is imported from its module on first use (PEP 562's module ``__getattr__``), so ``import xlsxplan.core.serving``
costs no catalog, pydantic or TOML, and ``xlsxplan.max_batch(...)`` still works. No Excel, workbook or CLI library
is loaded by any of them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_PUBLIC: dict[str, str] = {
    # .calibration
    "efficiency": "calibration",
    # .catalog
    "gpu_names": "catalog",
    "gpu_price": "catalog",
    "gpu_price_source": "catalog",
    "gpu_source": "catalog",
    "gpu_spec": "catalog",
    "model_names": "catalog",
    "model_source": "catalog",
    "model_spec": "catalog",
    # .catalog.costs
    "cost_source": "catalog.costs",
    "cost_spec": "catalog.costs",
    "owned_case": "catalog.costs",
    # .catalog.models
    "model_engine_concurrency": "catalog.models",
    "model_engine_kv_tokens": "catalog.models",
    "model_expert_params_b": "catalog.models",
    "model_kv_bytes_per_token": "catalog.models",
    "model_kv_gb": "catalog.models",
    "model_sequence_bytes": "catalog.models",
    "model_state_bytes": "catalog.models",
    "model_weights_gb": "catalog.models",
    # .core.architecture
    "kv_bytes_per_sequence": "core.architecture",
    "kv_bytes_per_token_mla": "core.architecture",
    "kv_heads_per_gpu": "core.architecture",
    "linear_attention_state_bytes": "core.architecture",
    "mamba_state_bytes": "core.architecture",
    "moe_params_read_b": "core.architecture",
    "weights_gb_per_gpu": "core.architecture",
    # .core.cost
    "OwnedCase": "core.cost",
    "best_commitment": "core.cost",
    "breakeven_month": "core.cost",
    "breakeven_utilisation": "core.cost",
    "capital_recovery_factor": "core.cost",
    "committed_cost": "core.cost",
    "cost_per_m_owned": "core.cost",
    "cost_per_m_rented": "core.cost",
    "gpu_hour_owned": "core.cost",
    "owned_cost_per_gpu_hour": "core.cost",
    # .core.engine
    "engine_kv_gb": "core.engine",
    "engine_kv_tokens": "core.engine",
    "engine_max_concurrency": "core.engine",
    # .core.queueing
    "erlang_c": "core.queueing",
    "queue_wait_s": "core.queueing",
    "replicas_for_ttft": "core.queueing",
    "service_cv": "core.queueing",
    "slot_s": "core.queueing",
    "ttft_at_load_s": "core.queueing",
    "utilisation_for_ttft": "core.queueing",
    # .core.roofline
    "decode_step_seconds": "core.roofline",
    "serve_tokens_per_s": "core.roofline",
    "ttft_seconds": "core.roofline",
    # .core.serving
    "compute_tokens_per_s": "core.serving",
    "cost_per_m_tokens": "core.serving",
    "decode_tokens_per_s": "core.serving",
    "decode_tokens_per_s_total": "core.serving",
    "free_gb": "core.serving",
    "inference_flops": "core.serving",
    "kv_bytes_per_token": "core.serving",
    "kv_gb": "core.serving",
    "max_batch": "core.serving",
    "peak_requests_per_s": "core.serving",
    "peak_tokens_per_s": "core.serving",
    "prefill_seconds": "core.serving",
    "replicas": "core.serving",
    "tokens_per_s_ceiling": "core.serving",
    "usable_gb": "core.serving",
    "weights_gb": "core.serving",
    # .core.speculative
    "spec_accept_length": "core.speculative",
    "spec_draft_gb": "core.speculative",
    "spec_max_batch": "core.speculative",
    "spec_speedup": "core.speculative",
    "spec_step_seconds": "core.speculative",
    "spec_tokens_per_s": "core.speculative",
    "spec_tokens_per_step": "core.speculative",
    # .core.traffic
    "batch_for_latency": "core.traffic",
    "batch_for_ttft": "core.traffic",
    "context_tokens": "core.traffic",
    "cost_per_m_input": "core.traffic",
    "cost_per_m_output": "core.traffic",
    "decode_replicas": "core.traffic",
    "fleet_replicas": "core.traffic",
    "fleet_utilisation": "core.traffic",
    "kv_transfer_s": "core.traffic",
    "length_sd": "core.traffic",
    "max_context_tokens": "core.traffic",
    "paged_batch": "core.traffic",
    "peak_coverage": "core.traffic",
    "prefill_replicas": "core.traffic",
    "prefill_share": "core.traffic",
    "prefill_tokens": "core.traffic",
    "replica_rps": "core.traffic",
    "replica_rps_chunked": "core.traffic",
    "tail_share": "core.traffic",
    "tail_share_data": "core.traffic",
    "time_to_answer_s": "core.traffic",
    # .core.training
    "chinchilla_ratio": "core.training",
    "chinchilla_tokens": "core.training",
    "data_passes": "core.training",
    "flops_6n": "core.training",
    "gpu_hours": "core.training",
    "mfu": "core.training",
    "optimal_params_b": "core.training",
    "run_seconds": "core.training",
    "train_flops": "core.training",
    "train_memory_gb": "core.training",
    "train_seconds": "core.training",
    "train_tokens": "core.training",
    # .core.training_memory
    "activation_gb": "core.training_memory",
    "optimizer_bytes": "core.training_memory",
    "recurrent_params_b": "core.training_memory",
    "train_flops_per_token": "core.training_memory",
    "train_state_gb": "core.training_memory",
    # .errors
    "ArgumentError": "errors",
    "CatalogError": "errors",
    "NotAvailableError": "errors",
    "OutOfRangeError": "errors",
    "UnknownPresetError": "errors",
    "WorkbookError": "errors",
    "XlsxplanError": "errors",
    # .plan.cells
    "plan_options_at": "plan.cells",
    # .plan.search
    "plan_options": "plan.search",
    # .precision
    "block_bytes_per_param": "precision",
    "bytes_per_param": "precision",
    "format_source": "precision",
}
"""Every public name -> the module (under this package) that defines it."""

__all__ = [
    "ArgumentError",
    "CatalogError",
    "NotAvailableError",
    "OutOfRangeError",
    "OwnedCase",
    "UnknownPresetError",
    "WorkbookError",
    "XlsxplanError",
    "__version__",
    "activation_gb",
    "batch_for_latency",
    "batch_for_ttft",
    "best_commitment",
    "block_bytes_per_param",
    "breakeven_month",
    "breakeven_utilisation",
    "bytes_per_param",
    "capital_recovery_factor",
    "chinchilla_ratio",
    "chinchilla_tokens",
    "committed_cost",
    "compute_tokens_per_s",
    "context_tokens",
    "cost_per_m_input",
    "cost_per_m_output",
    "cost_per_m_owned",
    "cost_per_m_rented",
    "cost_per_m_tokens",
    "cost_source",
    "cost_spec",
    "data_passes",
    "decode_replicas",
    "decode_step_seconds",
    "decode_tokens_per_s",
    "decode_tokens_per_s_total",
    "efficiency",
    "engine_kv_gb",
    "engine_kv_tokens",
    "engine_max_concurrency",
    "erlang_c",
    "fleet_replicas",
    "fleet_utilisation",
    "flops_6n",
    "format_source",
    "free_gb",
    "gpu_hour_owned",
    "gpu_hours",
    "gpu_names",
    "gpu_price",
    "gpu_price_source",
    "gpu_source",
    "gpu_spec",
    "inference_flops",
    "kv_bytes_per_sequence",
    "kv_bytes_per_token",
    "kv_bytes_per_token_mla",
    "kv_gb",
    "kv_heads_per_gpu",
    "kv_transfer_s",
    "length_sd",
    "linear_attention_state_bytes",
    "mamba_state_bytes",
    "max_batch",
    "max_context_tokens",
    "mfu",
    "model_engine_concurrency",
    "model_engine_kv_tokens",
    "model_expert_params_b",
    "model_kv_bytes_per_token",
    "model_kv_gb",
    "model_names",
    "model_sequence_bytes",
    "model_source",
    "model_spec",
    "model_state_bytes",
    "model_weights_gb",
    "moe_params_read_b",
    "optimal_params_b",
    "optimizer_bytes",
    "owned_case",
    "owned_cost_per_gpu_hour",
    "paged_batch",
    "peak_coverage",
    "peak_requests_per_s",
    "peak_tokens_per_s",
    "plan_options",
    "plan_options_at",
    "prefill_replicas",
    "prefill_seconds",
    "prefill_share",
    "prefill_tokens",
    "queue_wait_s",
    "recurrent_params_b",
    "replica_rps",
    "replica_rps_chunked",
    "replicas",
    "replicas_for_ttft",
    "run_seconds",
    "serve_tokens_per_s",
    "service_cv",
    "slot_s",
    "spec_accept_length",
    "spec_draft_gb",
    "spec_max_batch",
    "spec_speedup",
    "spec_step_seconds",
    "spec_tokens_per_s",
    "spec_tokens_per_step",
    "tail_share",
    "tail_share_data",
    "time_to_answer_s",
    "tokens_per_s_ceiling",
    "train_flops",
    "train_flops_per_token",
    "train_memory_gb",
    "train_seconds",
    "train_state_gb",
    "train_tokens",
    "ttft_at_load_s",
    "ttft_seconds",
    "usable_gb",
    "utilisation_for_ttft",
    "weights_gb",
    "weights_gb_per_gpu",
]
"""The public names, sorted (a test holds them to ``_PUBLIC``)."""


def __getattr__(name: str) -> Any:
    """A public name, imported from its module the first time it is asked for, then kept in this module."""
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'xlsxplan' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})


if TYPE_CHECKING:  # the same names for type checkers and editors, which do not run __getattr__
    from .calibration import efficiency
    from .catalog import (
        gpu_names,
        gpu_price,
        gpu_price_source,
        gpu_source,
        gpu_spec,
        model_names,
        model_source,
        model_spec,
    )
    from .catalog.costs import cost_source, cost_spec, owned_case
    from .catalog.models import (
        model_engine_concurrency,
        model_engine_kv_tokens,
        model_expert_params_b,
        model_kv_bytes_per_token,
        model_kv_gb,
        model_sequence_bytes,
        model_state_bytes,
        model_weights_gb,
    )
    from .core.architecture import (
        kv_bytes_per_sequence,
        kv_bytes_per_token_mla,
        kv_heads_per_gpu,
        linear_attention_state_bytes,
        mamba_state_bytes,
        moe_params_read_b,
        weights_gb_per_gpu,
    )
    from .core.cost import (
        OwnedCase,
        best_commitment,
        breakeven_month,
        breakeven_utilisation,
        capital_recovery_factor,
        committed_cost,
        cost_per_m_owned,
        cost_per_m_rented,
        gpu_hour_owned,
        owned_cost_per_gpu_hour,
    )
    from .core.engine import engine_kv_gb, engine_kv_tokens, engine_max_concurrency
    from .core.queueing import (
        erlang_c,
        queue_wait_s,
        replicas_for_ttft,
        service_cv,
        slot_s,
        ttft_at_load_s,
        utilisation_for_ttft,
    )
    from .core.roofline import decode_step_seconds, serve_tokens_per_s, ttft_seconds
    from .core.serving import (
        compute_tokens_per_s,
        cost_per_m_tokens,
        decode_tokens_per_s,
        decode_tokens_per_s_total,
        free_gb,
        inference_flops,
        kv_bytes_per_token,
        kv_gb,
        max_batch,
        peak_requests_per_s,
        peak_tokens_per_s,
        prefill_seconds,
        replicas,
        tokens_per_s_ceiling,
        usable_gb,
        weights_gb,
    )
    from .core.speculative import (
        spec_accept_length,
        spec_draft_gb,
        spec_max_batch,
        spec_speedup,
        spec_step_seconds,
        spec_tokens_per_s,
        spec_tokens_per_step,
    )
    from .core.traffic import (
        batch_for_latency,
        batch_for_ttft,
        context_tokens,
        cost_per_m_input,
        cost_per_m_output,
        decode_replicas,
        fleet_replicas,
        fleet_utilisation,
        kv_transfer_s,
        length_sd,
        max_context_tokens,
        paged_batch,
        peak_coverage,
        prefill_replicas,
        prefill_share,
        prefill_tokens,
        replica_rps,
        replica_rps_chunked,
        tail_share,
        tail_share_data,
        time_to_answer_s,
    )
    from .core.training import (
        chinchilla_ratio,
        chinchilla_tokens,
        data_passes,
        flops_6n,
        gpu_hours,
        mfu,
        optimal_params_b,
        run_seconds,
        train_flops,
        train_memory_gb,
        train_seconds,
        train_tokens,
    )
    from .core.training_memory import (
        activation_gb,
        optimizer_bytes,
        recurrent_params_b,
        train_flops_per_token,
        train_state_gb,
    )
    from .errors import (
        ArgumentError,
        CatalogError,
        NotAvailableError,
        OutOfRangeError,
        UnknownPresetError,
        WorkbookError,
        XlsxplanError,
    )
    from .plan.cells import plan_options_at
    from .plan.search import plan_options
    from .precision import block_bytes_per_param, bytes_per_param, format_source
