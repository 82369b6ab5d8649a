"""One serving step by operator: the step time that `validate` scores and the plan's calibrated view runs on.

A continuous-batching engine's step decodes one token for each of ``B`` sequences and, in its steady state, prefills
the prompts of the requests that join (``B P / O`` tokens: :func:`xlsxplan.core.effects.prefill_tokens_per_step`).
Its time is the sum of four parts, each the longer of its memory time and its compute time where it has both
(the roofline, Williams, Waterman and Patterson 2009):

* **linear layers**: the weights the batch touches read once (``N_read b`` bytes) against ``2 N_active`` FLOPs for
  every token in the step, decoded or prefilled;
* **attention**: the batch's KV cache read (``B kv ctx`` bytes) against attention's arithmetic over it
  (:func:`xlsxplan.core.effects.attention_decode_flops_per_token`) and over the prompts being prefilled
  (:func:`xlsxplan.core.effects.attention_prefill_flops`);
* **routed activations** of a mixture of experts: the bytes each token's hidden state costs on its way to and from its
  experts (:func:`xlsxplan.core.effects.moe_routed_bytes_per_token`), over the memory bandwidth;
* **tensor-parallel all-reduces** of every token's activations over the accelerator's scale-up link
  (:func:`xlsxplan.core.effects.tp_allreduce_seconds`; Megatron-LM, arXiv:1909.08053, section 3).

The calibrated serving scale (:meth:`xlsxplan.calibration.Factors.serving_scale`, fitted on published serving runs)
divides the step; the efficiencies are :func:`xlsxplan.calibration.efficiency`'s. The numbers come in; the presets
that turn a model or an accelerator name into numbers live in the callers (``xlsxplan.calibration.measurements``
for a published row, ``xlsxplan.plan.search`` for an option), so both run this one function.

Units: parameters in billions, bytes per parameter and per token, bandwidth in TB/s, compute in dense TFLOP/s, the
link in GB/s per direction, time in seconds.
"""

from __future__ import annotations

from typing import NamedTuple

from . import effects

__all__ = ["StepShape", "mean_context", "serve_step", "step_parts"]

_GIGA, _TERA = 1e9, 1e12


def mean_context(prompt_tokens: float, output_tokens: float) -> float:
    """Tokens a sequence holds on average while it decodes [tokens]: its prompt and half its answer, ``P + O / 2``
    (the cache grows by one token a step; PagedAttention, arXiv:2309.06180, section 4, allocates it as it grows)."""
    return prompt_tokens + output_tokens / 2.0


class StepShape(NamedTuple):
    """What a step needs of a model beyond its parameters: layers, the attention's width (heads x head size), the
    hidden size, the layers with experts and experts per token (0 for a dense model), and the bytes per routed value
    (the calibrated ``routed_bytes`` over 3, as the fit states it)."""

    layers: int
    attn_width: int
    hidden: int
    moe_layers: int = 0
    experts_per_token: int = 0
    routed_bytes: float = 0.0


def step_parts(
    read_params_b: float,
    bytes_per_param: float,
    active_params_b: float,
    batch: float,
    prefill_tokens: float,
    prompt_tokens: float,
    kv_bytes_per_token: float,
    context_tokens: float,
    shape: StepShape,
    n_gpus: int,
    bandwidth_tb_s: float,
    tflops: float,
    bandwidth_eff: float,
    compute_eff: float,
    link_gb_s: float,
) -> dict[str, float]:
    """The parts of one step, each in seconds: ``weights`` and ``linear`` (the linear layers' memory and compute),
    ``cache`` and ``attention`` (attention's), ``routed`` and ``all-reduce``.

    ``read_params_b`` [B params]: the parameters the batch reads (MOE_PARAMS_READ_B for a mixture of experts);
    ``active_params_b`` [B params]: those each token computes with; ``batch`` [sequences] decoded one token each;
    ``prefill_tokens`` [tokens]: prompt tokens prefilled in the same step, from prompts of ``prompt_tokens`` each;
    ``kv_bytes_per_token`` [bytes] across the GPUs at ``context_tokens`` [tokens] of average context; ``n_gpus``
    sharing the model; ``bandwidth_tb_s`` [TB/s], ``tflops`` [TFLOP/s] and ``link_gb_s`` [GB/s] of one accelerator
    (a link of 0 or one GPU: no exchange); the two efficiencies [fraction] as EFFICIENCY gives them. Unchecked: the
    callers pass numbers they have checked.
    """
    bandwidth = n_gpus * bandwidth_tb_s * _TERA * bandwidth_eff
    rate = n_gpus * tflops * _TERA * compute_eff
    tokens = batch + prefill_tokens
    attention = effects.attention_decode_flops_per_token(shape.layers, shape.attn_width, context_tokens) * batch
    if prefill_tokens > 0 and prompt_tokens > 0:
        attention += (
            effects.attention_prefill_flops(shape.layers, shape.attn_width, prompt_tokens)
            * prefill_tokens
            / prompt_tokens
        )
    routed = 0.0
    if shape.experts_per_token and shape.moe_layers:
        per = effects.moe_routed_bytes_per_token(
            shape.hidden, shape.moe_layers, shape.experts_per_token, shape.routed_bytes
        )
        routed = per * tokens / bandwidth
    exchange = 0.0
    if n_gpus > 1 and link_gb_s:
        exchange = effects.tp_allreduce_seconds(tokens, shape.hidden, shape.layers, n_gpus, link_gb_s)
    return {
        "weights": read_params_b * _GIGA * bytes_per_param / bandwidth,
        "linear": 2.0 * active_params_b * _GIGA * tokens / rate,
        "cache": batch * kv_bytes_per_token * context_tokens / bandwidth,
        "attention": attention / rate,
        "routed": routed,
        "all-reduce": exchange,
    }


def serve_step(parts: dict[str, float], scale: float = 1.0) -> float:
    """The step's time [s] from its parts (:func:`step_parts`): ``(max(weights, linear) + max(cache, attention) +
    routed + all-reduce) / scale``, ``scale`` the calibrated serving scale (1: the roofline with its effects alone)."""
    return (
        max(parts["weights"], parts["linear"])
        + max(parts["cache"], parts["attention"])
        + parts["routed"]
        + parts["all-reduce"]
    ) / scale
