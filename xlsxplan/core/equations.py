"""The arithmetic behind the checked functions, unchecked: numbers in, numbers out.

The registry's functions (:mod:`.serving`, :mod:`.architecture`) check their arguments under the names the user
typed, then call these. So do the modules built on them (:mod:`.traffic`, :mod:`.roofline`, the calibration's
predictions), whose own arguments are already checked under their own names: calling the public functions instead
would check the values again under names the user never typed ("capacity_tokens_per_s must be ..."). Units are
:mod:`.serving`'s: parameters in billions, memory in GB, bandwidth in TB/s, compute in dense TFLOP/s, seconds.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import OutOfRangeError
from ..infra.elementwise import is_array, maximum, minimum, power, refused, where

__all__ = [
    "GIGA",
    "TERA",
    "ULPS",
    "finite",
    "whole_floor",
    "whole_ceil",
    "free_bytes",
    "batch_that_fits",
    "decode_step_s",
    "compute_tokens_per_s",
    "prefill_s",
    "replicas_for",
    "moe_params_read",
    "roofline_step_s",
]

GIGA, TERA = 1e9, 1e12


ULPS = 16
"""How many units in the last place :func:`whole_floor` and :func:`whole_ceil` forgive: the rounding of a few
multiplications and divisions, and no more. A tolerance relative to the number itself (1e-9 of it, say) would
forgive a whole unit above a billion: ``REPLICAS(2000000001, 2)`` must be 1,000,000,001."""


EXACT_INT64 = 2.0**62
"""Below this magnitude a product of whole numbers in int64 is exact (int64 holds up to 2**63): an array element whose
product may pass it is left to the one-call path, whose Python int has no limit."""

_EXACT_WHOLE = EXACT_INT64
"""Above this magnitude an array element of :func:`whole_floor` or :func:`whole_ceil` is left to the one-call path,
whose Python int has no limit: int64 holds up to 2**63."""


def finite(x: float) -> float:
    if not math.isfinite(x):
        raise OutOfRangeError("the result is too large to represent; check the inputs' units")
    return x


def _whole_array(x: Any) -> tuple[Any, Any]:
    """``x`` with the elements :func:`finite` refuses, or too large for int64, left to the one-call path (and set to
    0 here), and the ulp of each, as :func:`math.ulp` gives it."""
    import numpy as np

    refused(~np.isfinite(x) | (np.abs(x) >= _EXACT_WHOLE))
    x = np.where(np.isfinite(x) & (np.abs(x) < _EXACT_WHOLE), x, 0.0)
    return x, np.spacing(np.abs(x))


def whole_floor(x: float) -> int:
    """``floor(x)``, forgiving the last few bits of float error (``95 - 1 ulp`` counts as 95). Element by element
    over a numpy array (int64), identically."""
    if is_array(x):
        import numpy as np

        x, ulp = _whole_array(x)
        above = np.ceil(x)
        return np.where(above - x <= ULPS * ulp, above, above - 1).astype(np.int64)
    above = math.ceil(finite(x))
    return above if above - x <= ULPS * math.ulp(x) else above - 1


def whole_ceil(x: float) -> int:
    """``ceil(x)``, forgiving the last few bits of float error (``5 + 1 ulp`` counts as 5). Element by element over
    a numpy array (int64), identically."""
    if is_array(x):
        import numpy as np

        x, ulp = _whole_array(x)
        below = np.floor(x)
        return np.where(x - below <= ULPS * ulp, below, below + 1).astype(np.int64)
    below = math.floor(finite(x))
    return below if x - below <= ULPS * math.ulp(x) else below + 1


def free_bytes(params_b: float, bytes_per_param: float, n_gpus: int, memory_gb: float, usable_fraction: float) -> float:
    """Usable memory less the weights [bytes]; negative when the weights do not fit."""
    return n_gpus * memory_gb * usable_fraction * GIGA - params_b * GIGA * bytes_per_param


def batch_that_fits(
    params_b: float,
    bytes_per_param: float,
    kv_bytes_per_token: float,
    context_tokens: float,
    n_gpus: int,
    memory_gb: float,
    usable_fraction: float,
) -> int:
    """Whole sequences whose KV cache fits beside the weights; 0 when the weights do not fit (MAX_BATCH)."""
    free = free_bytes(params_b, bytes_per_param, n_gpus, memory_gb, usable_fraction)
    if not is_array(free):
        if free <= 0:
            return 0
        return whole_floor(free / (kv_bytes_per_token * context_tokens))
    return where(free <= 0, 0, whole_floor(free / (kv_bytes_per_token * context_tokens)))


def decode_step_s(
    params_b: float,
    bytes_per_param: float,
    n_gpus: int,
    bandwidth_tb_s: float,
    batch: int,
    kv_bytes_per_token: float,
    context_tokens: float,
    efficiency: float,
) -> float:
    """Time of one bandwidth-bound decode step [s] (one over DECODE_TOKS)."""
    bytes_per_step = params_b * GIGA * bytes_per_param + batch * kv_bytes_per_token * context_tokens
    return bytes_per_step / (n_gpus * bandwidth_tb_s * TERA * efficiency)


def compute_tokens_per_s(params_b: float, tflops: float) -> float:
    """Tokens per second if arithmetic were the only limit (COMPUTE_TOKS)."""
    return tflops * TERA / (2.0 * params_b * GIGA)


def prefill_s(params_b: float, prompt_tokens: float, n_gpus: int, tflops: float, utilisation: float) -> float:
    """Compute-bound time to read a prompt [s] (PREFILL_S)."""
    return 2.0 * params_b * GIGA * prompt_tokens / (n_gpus * tflops * TERA * utilisation)


def replicas_for(demand: float, capacity: float, spare: int) -> int:
    """Whole replicas for a demand, plus spares (REPLICAS); demand and capacity in the same unit."""
    return whole_ceil(demand / capacity) + spare


def moe_params_read(
    params_b: float, active_params_b: float, experts: int, experts_per_token: int, batch: float
) -> float:
    """Parameters a decode step of ``batch`` sequences reads from a mixture of experts, with uniform routing [B]
    (MOE_PARAMS_READ_B)."""
    share = experts_per_token / experts
    if not is_array(share) and share == 1:
        return params_b
    dense = share == 1  # over arrays: these elements read every parameter (a divisor of 1 keeps the rest harmless)
    routed = (params_b - active_params_b) / where(dense, 1.0, 1 - share)
    touched = 1 - power(1 - share, batch)
    return where(dense, params_b, minimum(params_b, params_b - routed + routed * touched))


def roofline_step_s(
    read_params_b: float,
    bytes_per_param: float,
    kv_bytes: float,
    flops: float,
    n_gpus: int,
    bandwidth_tb_s: float,
    tflops: float,
    bandwidth_eff: float,
    compute_eff: float,
) -> float:
    """One forward step bound by the slower of its memory traffic (weights read once plus ``kv_bytes``) and its
    arithmetic (``flops``) [s]: the roofline of DECODE_STEP_S, for the speculative-decoding step."""
    memory = (read_params_b * GIGA * bytes_per_param + kv_bytes) / (n_gpus * bandwidth_tb_s * TERA * bandwidth_eff)
    return maximum(memory, flops / (n_gpus * tflops * TERA * compute_eff))
