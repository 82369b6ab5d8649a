"""xlsxplan: LLM capacity, cost and training planning in Excel.

The core is plain typed functions (:mod:`xlsxplan.serving`, :mod:`xlsxplan.training`, the preset
:mod:`xlsxplan.catalog`); the Excel functions, the headless engine, the command line and the template workbooks
are generated faces on it (:mod:`xlsxplan.registry`). Importing this package loads no Excel, workbook or CLI
library.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .architecture import (
    kv_bytes_per_sequence,
    kv_bytes_per_token_mla,
    kv_heads_per_gpu,
    model_expert_params_b,
    model_kv_bytes_per_token,
    model_kv_gb,
    model_weights_gb,
    moe_params_read_b,
    weights_gb_per_gpu,
)
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
from .precision import block_bytes_per_param, bytes_per_param, format_source
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
from .training_memory import (
    activation_gb,
    optimizer_bytes,
    recurrent_params_b,
    train_flops_per_token,
    train_state_gb,
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
    "activation_gb",
    "block_bytes_per_param",
    "bytes_per_param",
    "chinchilla_ratio",
    "chinchilla_tokens",
    "compute_tokens_per_s",
    "cost_per_m_tokens",
    "data_passes",
    "decode_tokens_per_s",
    "decode_tokens_per_s_total",
    "flops_6n",
    "format_source",
    "free_gb",
    "gpu_hours",
    "gpu_names",
    "gpu_source",
    "gpu_spec",
    "inference_flops",
    "kv_bytes_per_sequence",
    "kv_bytes_per_token",
    "kv_bytes_per_token_mla",
    "kv_gb",
    "kv_heads_per_gpu",
    "max_batch",
    "mfu",
    "model_expert_params_b",
    "model_kv_bytes_per_token",
    "model_kv_gb",
    "model_names",
    "model_source",
    "model_spec",
    "model_weights_gb",
    "moe_params_read_b",
    "optimal_params_b",
    "optimizer_bytes",
    "peak_requests_per_s",
    "peak_tokens_per_s",
    "prefill_seconds",
    "recurrent_params_b",
    "replicas",
    "run_seconds",
    "tokens_per_s_ceiling",
    "train_flops",
    "train_flops_per_token",
    "train_memory_gb",
    "train_seconds",
    "train_state_gb",
    "train_tokens",
    "usable_gb",
    "weights_gb",
    "weights_gb_per_gpu",
]
