"""One worked call per registry function, shared by the tests of every face (Python, engine, UDFs, CLI).

A test that enumerates the registry fails when a function has no example here, so a new function cannot slip
past the cross-face tests.
"""

from __future__ import annotations

EXAMPLES: dict[str, tuple] = {
    "KV_BYTES_PER_TOKEN": (80, 8, 128, 2),
    "WEIGHTS_GB": (72.7, 2),
    "KV_GB": (327680, 2300, 94),
    "USABLE_GB": (2, 80, 0.9),
    "FREE_GB": (72.7, 1, 2, 80),
    "MAX_BATCH": (72.7, 1, 327680, 2300, 2, 80),
    "DECODE_TOKS": (72.7, 1, 2, 3.35, 94, 327680, 2300),
    "DECODE_TOKS_TOTAL": (72.7, 1, 2, 3.35, 94, 327680, 2300),
    "COMPUTE_TOKS": (7, 989.4),
    "TOKS_CEILING": (7, 2, 989.4, 4.8),
    "INFER_FLOPS": (7, 1000),
    "PREFILL_S": (72.7, 2000, 2, 989),
    "COST_PER_M_TOKENS": (2, 2.5, 4387, 0.3),
    "PEAK_RPS": (200000, 3),
    "PEAK_TOKS": (200000, 300),
    "REPLICAS": (20833, 4387, 1),
    "TRAIN_FLOPS": (7, 140e9),
    "TRAIN_TOKENS": (0.03595, 1.413e15, 599.6),
    "CHINCHILLA_TOKENS": (0.03595,),
    "CHINCHILLA_RATIO": (0.03595, 3.927e9),
    "OPTIMAL_PARAMS_B": (1.41e15, 600),
    "FLOPS_6N": (0.03595, 6.55e6),
    "MFU": (0.03595, 6.55e6, 8, 989.5),
    "TRAIN_SECONDS": (7, 140e9, 64, 989.4, 0.4),
    "RUN_SECONDS": (0.03595, 3.927e9, 5.93e11),
    "GPU_HOURS": (86400, 8),
    "TRAIN_MEMORY_GB": (7,),
    "DATA_PASSES": (7.225e9, 2.5e9),
    "MODEL_SPEC": ("Qwen2.5-72B", "layers"),
    "GPU_SPEC": ("H200", "bandwidth_tb_s"),
    "MODEL_SOURCE": ("Qwen2.5-72B", "params_b"),
    "GPU_SOURCE": ("H100", "bf16_tflops"),
    "MODELS": (),
    "GPUS": (),
    "BYTES_PER_PARAM": ("fp8",),
    # Architecture (issue #7)
    # Calibration (issue #6)
    "EFFICIENCY": ("decode_bandwidth", "RTX-4090", "q4_k_m"),
    "DECODE_STEP_S": (8.03, "fp8", 256, 65536, 192, 1, 3.35, 1978.9, 0.54, 0.41),
    "SERVE_TOKS": (8.03, "fp8", 65536, 1000, 1000, 1, 80, 3.35, 1978.9, 0, 0.54, 0.41),
    "TTFT_S": (6.74, "fp8", 2048, 32, 4096, 1, 1978.9, 3.35, 0.41),
    # Traffic (issue #9)
}


def excel_literal(value: object) -> str:
    """A Python value as an Excel formula literal."""
    if isinstance(value, str):
        return '"' + value.replace('"', '""') + '"'
    if isinstance(value, float):
        return repr(value).replace("e+", "E+").replace("e-", "E-").replace("e", "E+")
    return str(value)


def formula(name: str, args: tuple) -> str:
    return f"={name}({','.join(excel_literal(a) for a in args)})"
