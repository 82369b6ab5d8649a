"""xlsxplan: LLM capacity, cost and training planning in Excel.

The core is plain typed functions (:mod:`xlsxplan.serving`, :mod:`xlsxplan.training`, the preset
:mod:`xlsxplan.catalog`); the Excel functions, the headless engine, the command line and the template workbooks
are generated faces on it (:mod:`xlsxplan.registry`). Importing this package loads no Excel, workbook or CLI
library.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .calibration import efficiency
from .catalog import gpu_names, gpu_source, gpu_spec, model_names, model_source, model_spec
from .errors import (
    ArgumentError,
    CatalogError,
    NotAvailableError,
    OutOfRangeError,
    UnknownPresetError,
    WorkbookError,
    XlsxplanError,
)
from .precision import bytes_per_param
from .roofline import decode_step_seconds, serve_tokens_per_s, ttft_seconds
from .serving import (
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
from .training import (
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

__all__ = [
    "ArgumentError",
    "CatalogError",
    "NotAvailableError",
    "OutOfRangeError",
    "UnknownPresetError",
    "WorkbookError",
    "XlsxplanError",
    "__version__",
    "bytes_per_param",
    "chinchilla_ratio",
    "chinchilla_tokens",
    "compute_tokens_per_s",
    "cost_per_m_tokens",
    "data_passes",
    "decode_step_seconds",
    "decode_tokens_per_s",
    "decode_tokens_per_s_total",
    "efficiency",
    "flops_6n",
    "free_gb",
    "gpu_hours",
    "gpu_names",
    "gpu_source",
    "gpu_spec",
    "inference_flops",
    "kv_bytes_per_token",
    "kv_gb",
    "max_batch",
    "mfu",
    "model_names",
    "model_source",
    "model_spec",
    "optimal_params_b",
    "peak_requests_per_s",
    "peak_tokens_per_s",
    "prefill_seconds",
    "replicas",
    "run_seconds",
    "serve_tokens_per_s",
    "tokens_per_s_ceiling",
    "train_flops",
    "train_memory_gb",
    "train_seconds",
    "train_tokens",
    "ttft_seconds",
    "usable_gb",
    "weights_gb",
]
