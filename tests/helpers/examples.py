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
    "GPU_PRICE": ("H100",),
    "GPU_PRICE_SOURCE": ("H200",),
    # Architecture
    "KV_BYTES_MLA": (61, 512, 64, 2),
    "KV_BYTES_PER_SEQ": (32, 8, 128, 32768, 4096, 32),
    "KV_HEADS_PER_GPU": (8, 16),
    "MODEL_KV_BYTES_PER_TOKEN": ("Gemma-2-9B", 8192),
    "MODEL_KV_GB": ("Mistral-7B", 32768),
    "MODEL_WEIGHTS_GB": ("Llama-2-13B", "q4_k_m", "q4_k_m"),
    "MODEL_EXPERT_PARAMS_B": ("DeepSeek-V3",),
    "MOE_PARAMS_READ_B": (46.7, 12.9, 8, 2, 8),
    "WEIGHTS_GB_PER_GPU": (671, 653.9, 8, 8, "fp8"),
    "QUANT_BYTES_PER_PARAM": (4, 128, 16, 4),
    "FORMAT_SOURCE": ("q4_k_m",),
    "OPTIMIZER_BYTES": ("adamw",),
    "TRAIN_STATE_GB": (7.5, 12, 3, 64),
    "ACTIVATION_GB": (2048, 1, 12288, 96, 96, 8, 1, "selective"),
    "TRAIN_FLOPS_PER_TOKEN": (540.35, 118, 48, 256, 2048),
    "RECURRENT_PARAMS_B": (0.03595, 0.002883584, 3, 2, 0.559),
    # Calibration
    "EFFICIENCY": ("decode_bandwidth", "RTX-4090", "q4_k_m"),
    "DECODE_STEP_S": (8.03, "fp8", 256, 65536, 192, 1, 3.35, 1978.9, 0.54, 0.41),
    "SERVE_TOKS": (8.03, "fp8", 65536, 1000, 1000, 1, 80, 3.35, 1978.9, 0, 0.54, 0.41),
    "TTFT_S": (6.74, "fp8", 2048, 32, 4096, 1, 1978.9, 3.35, 0.41),
    # Traffic: Back-of-the-Envelope's support assistant on Qwen2.5-72B, FP8, two H100s, 2,000 + 300 tokens
    "TAIL_SHARE": (16384, 2000, 6000),
    "LENGTH_SD": (2000, 6000),
    "TAIL_SHARE_DATA": ((600, 900, 1200, 1500, 2000, 2600, 3500, 12000, 20000, 40000), 16384),
    "PAGED_BATCH": (71.3, 327680, 2300, 3500),
    "MAX_CONTEXT_TOKENS": (71.3, 327680),
    "CONTEXT_TOKENS": (2000, 300, 1000),
    "TIME_TO_ANSWER_S": (0.294, 1000, 60),
    "PREFILL_TOKENS": (2000, 1500, 0.8),
    "BATCH_FOR_LATENCY": (72.7, 1, 2, 3.35, 60, 327680, 2300),
    "BATCH_FOR_TTFT": (72.7, 2, 989, 60, 12000, 3),
    "PREFILL_SHARE": (0.294, 300, 4387),
    "REPLICA_RPS": (0.294, 300, 4387),
    "REPLICA_RPS_CHUNKED": (0.294, 2000, 300, 3075),
    "PREFILL_REPLICAS": (6.944, 0.294),
    "DECODE_REPLICAS": (6.944, 300, 3075),
    "KV_TRANSFER_S": (327680, 2000, 50),
    "FLEET_REPLICAS": (6.944, 2.957),
    "FLEET_UTILISATION": (200000, 2.957, 4),
    "PEAK_COVERAGE": (6.944, 2.957, 4),
    "COST_PER_M_INPUT": (4, 2.5, 200000, 2000, 0.8113),
    "COST_PER_M_OUTPUT": (4, 2.5, 200000, 300, 0.8113),
    # Queueing: the M/M/c cases the tests quote, and the source document's plan at the 60-tokens/s batch of 51
    "ERLANG_C": (14, 10),
    "QUEUE_WAIT_S": (0.0016667, 1200, 3, 0.9),
    "SERVICE_CV": (0.294, 1.176, 4.976, 1),
    "SLOT_S": (51, 0.5366, 4.976, 2.957),
    "TTFT_AT_LOAD_S": (6.944, 3, 51, 0.5366, 4.976, 2.957, 0.99),
    "REPLICAS_FOR_TTFT": (6.944, 2, 0.99, 51, 0.5366, 4.976, 2.957),
    "UTILISATION_FOR_TTFT": (2, 0.99, 51, 0.5366, 4.976, 2.957),
    # hybrid state, engine memory, speculative decoding
    "LINEAR_STATE_BYTES": (36, 16, 32, 128, 128, 4),
    "MAMBA_STATE_BYTES": (54, 256, 64, 256, 8, 4),
    "MODEL_STATE_BYTES": ("Qwen3-Next-80B-A3B",),
    "MODEL_SEQ_BYTES": ("Qwen3-Next-80B-A3B", 32768),
    "ENGINE_KV_GB": (42.31, 14.99, 0.9, 2.6),
    "ENGINE_KV_TOKENS": (6.99, 163840),
    "ENGINE_MAX_CONCURRENCY": (6.99, 163840, 32768),
    "MODEL_ENGINE_KV_TOKENS": ("Llama-3.1-8B", 25.32, 1, 2, 2, 0.9, 2.6),
    "MODEL_ENGINE_CONCURRENCY": ("Llama-3.1-8B", 25.32, 20000, 1, 2, 2, 0.9, 2.6),
    "SPEC_TOKENS_PER_STEP": (0.8, 4),
    "SPEC_ACCEPT_LENGTH": ((0.8, 0.64, 0.512, 0.4096),),
    "SPEC_SPEEDUP": (0.8, 4, 0.0286),
    "SPEC_STEP_S": (70, 1, 1, 0, 0, 2, 3.35, 989.4, 4, 1, 2),
    "SPEC_TOKS": (3.3616, 0.01164),
    "SPEC_DRAFT_GB": (14, "fp8", 1152, 8192, 64),
    "SPEC_MAX_BATCH": (70.554, 1, 327680, 8192, 2, 80, 1, 2, 0, 4),
    # Planning: the support assistant on Qwen2.5-72B, H100s at $2.50, a 20 tokens/s target
    "PLAN_OPTIONS": ("Qwen2.5-72B", 200000, 2000, 300, 3, 20, 0, 1, "H100=2.5"),
    "PLAN_OPTIONS_AT": (2, 13, "Qwen2.5-72B", 200000, 2000, 300, 3, 20, 0, 1, "H100=2.5"),
    # the training plan: a $200,000 budget of H100 time at $2.50 an hour, at most 14 days and 256 GPUs, size to choose
    "TRAIN_OPTIONS": ("none", 0, 0, 20, 200000, 14, 256, "H100=2.5"),
    # the source text's support assistant, 70% of its requests routed to the 7B
    "PORTFOLIO": (
        "name,team,model,requests_per_day,prompt_tokens,output_tokens;"
        "support,care,Qwen2.5-7B=0.7|Qwen2.5-72B=0.3,200000,2000,300",
        "H100=2.5",
        1,
        0,
        2,
        "gpu-time",
        "bf16,fp8",
        "bf16",
        "1,2",
        "params x bytes",
    ),
    # Cost: an owned GPU at $30,000 over 4 years against $2.50 an hour rented
    "GPU_HOUR_OWNED": (30000, 4, 0.1, 0.08, 1, 1.3, 0.08, 150),
    "CAPITAL_RECOVERY": (0.08, 4),
    "COST_PER_M_OWNED": (1.2675, 1000, 0.3),
    "COST_PER_M_RENTED": (2.5, 1000, 0.3, 0),
    "BREAKEVEN_UTILISATION": (1.2675, 2.5),
    "BREAKEVEN_MONTH": (240000, 14600, 1807.36),
    "COMMITTED_COST": ((8, 8, 16, 24), 8, 2, 3),
    "BEST_COMMITMENT": ((8, 8, 16, 24), 2, 3),
    "COST_SPEC": ("H100", "capex_usd"),
    "COST_SOURCE": ("H100", "pue"),
    "DEPRECIATION_SL": (30000, 3000, 4),
    "BOOK_VALUE": (30000, 3000, 4, 2),
    "NPV_USD": (0.1, (-1000, 600, 600)),
    "OWNED_NPV": (30000, 4, 0.1, 0.08, 2700),
    "QUEUE_WAIT_GG_S": (0.0016667, 1200, 3, 0.9, 2),
    "PROFILE_GPUS": ((0.25, 0.5, 1), 8),
    "SPOT_USD_PER_HOUR": (3, 0.5, 0.5, 30, 210),
    "TIER_MIX_COST": ((0.25, 0.25, 0.5, 0.5, 1, 1), 8, 1, 3, 0.5),
    "TIER_MIX_BASE": ((0.25, 0.25, 0.5, 0.5, 1, 1), 8, 2, 3),
    "TIER_MIX_SHARE": ("spot", (0.25, 0.25, 0.5, 0.5, 1, 1), 8, 1, 3, 0.5),
    "DEMAND_PROFILE": ("business-day",),
    "DEMAND_SOURCE": ("flat",),
    "API_COST_MONTH": (100000, 2000, 500, 0.15, 0.6, 0.5, 0.075),
    "API_CROSSOVER_RPD": (10000, 2000, 500, 0.15, 0.6, 0.5, 0.075),
    "HOSTED_PRICE": ("gpt-oss-120b", "Groq", "output"),
    "HOSTED_SOURCE": ("DeepSeek-V3", "DeepSeek"),
    "KWH_PER_M_TOKENS": (1, 1000, 0.5, 1.2, 0.3),
    "GCO2_PER_M_TOKENS": (0.4333, 381),
    "GRID_INTENSITY": ("DE",),
    "GRID_SOURCE": ("FR",),
}


def excel_literal(value: object) -> str:
    """A Python value as an Excel formula literal."""
    if isinstance(value, str):
        return '"' + value.replace('"', '""') + '"'
    if isinstance(value, (tuple, list)):  # a range argument: an array constant, one value per row
        return "{" + ";".join(excel_literal(v) for v in value) + "}"
    if isinstance(value, float):
        return repr(value).replace("e+", "E+").replace("e-", "E-").replace("e", "E+")
    return str(value)


def formula(name: str, args: tuple) -> str:
    return f"={name}({','.join(excel_literal(a) for a in args)})"
