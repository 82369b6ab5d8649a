"""Training an LLM: FLOPs, tokens, time, compute-optimal size, memory and utilisation.

Units: parameters in billions, tokens as plain counts, FLOPs and FLOP/s as plain counts (``flops_per_s``) except
accelerator peaks in TFLOP/s (``tflops``), time in seconds, memory in decimal GB.

References
----------
.. [1] "Estimating the Compute and Memory Needed for Language Models": "Training Computation",
   "Parameter Golf in 10 Minutes", "Specs, Equations, and Local Equivalents".
.. [2] Chowdhery et al. 2022, "PaLM: Scaling Language Modeling with Pathways", arXiv:2204.02311, section 4.1 and
   Appendix B (6N FLOPs per token; model FLOPs utilisation).
.. [3] Hoffmann et al. 2022, "Training Compute-Optimal Large Language Models" (Chinchilla), arXiv:2203.15556,
   Table 3 (about 20 tokens per parameter).
.. [4] Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models",
   arXiv:1910.02054, section 3.1 (16 bytes per parameter for mixed-precision Adam).
"""

from __future__ import annotations

from ..domains import FLOPsPerS, Fraction, GPUs, ParamsB, Seconds, TFLOPs, Tokens, TokensPerParam, TokensPerS, checked
from ..errors import OutOfRangeError
from ..infra.elementwise import refused, sqrt
from ..precision import TrainBytes

__all__ = [
    "DEFAULT_MFU",
    "train_flops",
    "train_tokens",
    "chinchilla_tokens",
    "chinchilla_ratio",
    "optimal_params_b",
    "flops_6n",
    "mfu",
    "train_seconds",
    "run_seconds",
    "gpu_hours",
    "train_memory_gb",
    "data_passes",
]

_GIGA, _TERA = 1e9, 1e12

DEFAULT_MFU = 0.4
"""MFU assumed when none is given. Large dense runs report 40-50%: PaLM 540B 46.2% (Chowdhery et al. 2022,
Table 3); LLaMA-65B's 380 tokens/s/GPU on A100s is 47% of 312 TFLOP/s by 6N (Touvron et al. 2023, section 2.4).
0.4 sits just below them, since smaller and less tuned runs do worse (the Parameter Golf record in
"Estimating the Compute and Memory Needed for Language Models": 18%)."""


@checked(arrays=True)
def train_flops(params_b: ParamsB, tokens: Tokens) -> float:
    """Training compute of a dense transformer: 6 FLOPs per parameter per token.

    Parameters
    ----------
    params_b : float
        Parameters, in billions; each applied once per token [B params].
    tokens : float
        Training tokens [tokens].

    Returns
    -------
    float
        Model FLOPs [FLOPs].

    Notes
    -----
    ``6 N D``: 2N forward plus 4N backward (PaLM, arXiv:2204.02311, section 4.1; "Estimating the Compute and Memory
    Needed for Language Models", "Training Computation"). 7B parameters on 140B tokens: 5.88e21 FLOPs. Self-attention's
    ``12 L H Q T`` is left out.
    """
    return 6.0 * params_b * _GIGA * tokens


@checked(arrays=True)
def train_tokens(params_b: ParamsB, flops_per_s: FLOPsPerS, seconds: Seconds) -> float:
    """Tokens a run can process at a sustained 6N-equivalent rate in a time budget.

    Parameters
    ----------
    params_b : float
        Parameters, in billions [B params].
    flops_per_s : float
        Sustained model-FLOP rate, e.g. from FLOPS_6N [FLOP/s].
    seconds : float
        Time budget [s].

    Returns
    -------
    float
        Training tokens [tokens].

    Notes
    -----
    ``D = C t / (6 N)`` ("Estimating the Compute and Memory Needed for Language Models", "The M2: What the Specification
    Does and Does Not Tell Us"): the 35.95M Parameter Golf record at 1.413e15 FLOP/s for 599.6 s processes 3.93e9
    tokens.
    """
    return flops_per_s * seconds / (6.0 * params_b * _GIGA)


@checked(arrays=True)
def chinchilla_tokens(params_b: ParamsB, tokens_per_param: TokensPerParam = 20) -> float:
    """Compute-optimal training tokens by the Chinchilla rule of thumb.

    Parameters
    ----------
    params_b : float
        Parameters, in billions [B params].
    tokens_per_param : float, default 20
        Tokens per parameter; Chinchilla's 70B model on 1.4T tokens is 20 [tokens/param].

    Returns
    -------
    float
        Training tokens [tokens].

    Notes
    -----
    ``D = 20 N`` (Hoffmann et al. 2022, arXiv:2203.15556, Table 3; "Estimating the Compute and Memory Needed for
    Language Models"): 35.95M parameters call for 7.19e8 tokens. A landmark, not an optimum for small, recurrent or
    quantised models.
    """
    return tokens_per_param * params_b * _GIGA


@checked(arrays=True)
def chinchilla_ratio(params_b: ParamsB, tokens: Tokens, tokens_per_param: TokensPerParam = 20) -> float:
    """How far a run sits from the Chinchilla rule: its tokens over 20 per parameter.

    Parameters
    ----------
    params_b : float
        Parameters, in billions [B params].
    tokens : float
        Training tokens [tokens].
    tokens_per_param : float, default 20
        Tokens per parameter taken as compute-optimal [tokens/param].

    Returns
    -------
    float
        Tokens as a multiple of the Chinchilla budget; above 1 is the small-model, data-heavy side [ratio].

    Notes
    -----
    ``D / (20 N)`` ("Estimating the Compute and Memory Needed for Language Models", "Actual Competition Runs"): 3.927B
    tokens on 35.95M parameters is 5.5 times.
    """
    return tokens / (tokens_per_param * params_b * _GIGA)


@checked(arrays=True)
def optimal_params_b(flops_per_s: FLOPsPerS, seconds: Seconds, tokens_per_param: TokensPerParam = 20) -> float:
    """Compute-optimal model size for a time budget at a sustained 6N-equivalent rate.

    Parameters
    ----------
    flops_per_s : float
        Sustained model-FLOP rate [FLOP/s].
    seconds : float
        Time budget [s].
    tokens_per_param : float, default 20
        Tokens per parameter taken as compute-optimal [tokens/param].

    Returns
    -------
    float
        Parameters, in billions [B params].

    Notes
    -----
    Combining ``D = 20 N`` with ``6 N D = C t`` gives ``N = sqrt(C t / 120)`` ("Estimating the Compute and Memory Needed
    for Language Models", "The M2"): the eight-H100 record's 1.41e15 FLOP/s for 600 s sizes an 84M model.
    """
    return sqrt(flops_per_s * seconds / (6.0 * tokens_per_param)) / _GIGA


@checked(arrays=True)
def flops_6n(params_b: ParamsB, tokens_per_s: TokensPerS) -> float:
    """The 6N-equivalent FLOP rate of an observed training throughput.

    Parameters
    ----------
    params_b : float
        Parameters, in billions [B params].
    tokens_per_s : float
        Observed training throughput [tokens/s].

    Returns
    -------
    float
        Model-FLOP rate [FLOP/s].

    Notes
    -----
    ``C_6N = 6 N (tokens/s)`` ("Estimating the Compute and Memory Needed for Language Models", "Eight H100s"): 35.95M
    parameters at 6.55M tokens/s is 1.41e15 FLOP/s. Derived from a measurement through an equation, not itself measured.
    """
    return 6.0 * params_b * _GIGA * tokens_per_s


@checked(arrays=True)
def mfu(params_b: ParamsB, tokens_per_s: TokensPerS, n_gpus: GPUs, tflops: TFLOPs) -> float:
    """Model FLOPs utilisation: the 6N-equivalent rate as a share of the accelerators' dense peak.

    Parameters
    ----------
    params_b : float
        Parameters, in billions [B params].
    tokens_per_s : float
        Observed training throughput across all accelerators [tokens/s].
    n_gpus : int
        Accelerators [count].
    tflops : float
        Dense peak of one accelerator at the training precision, never the sparse headline [TFLOP/s].

    Returns
    -------
    float
        Utilisation [fraction].

    Notes
    -----
    ``6 N (tokens/s) / (n_gpus * C)`` (PaLM, arXiv:2204.02311, Appendix B; "Estimating the Compute and Memory Needed for
    Language Models"): the Parameter Golf record on eight H100s at 989.5 TFLOP/s reaches 0.18. A result above 1 is
    impossible and refused.
    """
    value = 6.0 * params_b * _GIGA * tokens_per_s / (n_gpus * tflops * _TERA)
    if refused(value > 1):
        raise OutOfRangeError(
            f"tokens_per_s implies {value:.0%} of peak, more than the hardware can do: "
            "check tflops is the dense peak per GPU and n_gpus the accelerators used",
            "tokens_per_s",
        )
    return value


@checked(arrays=True)
def train_seconds(
    params_b: ParamsB, tokens: Tokens, n_gpus: GPUs, tflops: TFLOPs, mfu: Fraction = DEFAULT_MFU
) -> float:
    """Wall-clock training time at a model FLOPs utilisation.

    Parameters
    ----------
    params_b : float
        Parameters, in billions [B params].
    tokens : float
        Training tokens [tokens].
    n_gpus : int
        Accelerators [count].
    tflops : float
        Dense peak of one accelerator at the training precision [TFLOP/s].
    mfu : float, default 0.4
        Model FLOPs utilisation; 0.4 is just below what large dense runs report (PaLM 46%) [fraction].

    Returns
    -------
    float
        Training time [s].

    Notes
    -----
    ``6 N D / (n_gpus * C * mfu)`` ("Estimating the Compute and Memory Needed for Language Models", "Training
    Computation"). With ``mfu = 1`` it is the ideal lower bound it warns about.
    """
    return 6.0 * params_b * _GIGA * tokens / (n_gpus * tflops * _TERA * mfu)


@checked(arrays=True)
def run_seconds(params_b: ParamsB, tokens: Tokens, flops_per_s: FLOPsPerS) -> float:
    """Training time at a measured 6N-equivalent rate.

    Parameters
    ----------
    params_b : float
        Parameters, in billions [B params].
    tokens : float
        Training tokens [tokens].
    flops_per_s : float
        Sustained model-FLOP rate, e.g. FLOPS_6N of a short benchmark [FLOP/s].

    Returns
    -------
    float
        Training time [s].

    Notes
    -----
    ``6 N D / C_6N`` ("Estimating the Compute and Memory Needed for Language Models", "The M2"): a 35.95M model on
    3.927B tokens at the 41M M2 rate of 2,400 tokens/s takes about 16 days.
    """
    return 6.0 * params_b * _GIGA * tokens / flops_per_s


@checked(arrays=True)
def gpu_hours(seconds: Seconds, n_gpus: GPUs) -> float:
    """Accelerator-hours a job bills.

    Parameters
    ----------
    seconds : float
        Wall-clock time [s].
    n_gpus : int
        Accelerators held [count].

    Returns
    -------
    float
        GPU-hours [GPU-h].

    Notes
    -----
    ``seconds * n_gpus / 3600``.
    """
    return seconds * n_gpus / 3600.0


@checked(arrays=True)
def train_memory_gb(params_b: ParamsB, bytes_per_param: TrainBytes = 16) -> float:
    """Memory for weights, gradients and optimiser states in training, before activations.

    Parameters
    ----------
    params_b : float
        Parameters, in billions [B params].
    bytes_per_param : float, default 16
        Bytes per parameter; 16 for mixed-precision Adam (2 weight + 2 gradient + 4 master + 8 Adam) [bytes].

    Returns
    -------
    float
        Training state memory [GB].

    Notes
    -----
    ``N * 16`` (ZeRO, arXiv:1910.02054, section 3.1; "Estimating the Compute and Memory Needed for Language Models",
    "Storing the Model"): 7B needs 112 GB.
    """
    return params_b * bytes_per_param


@checked(arrays=True)
def data_passes(tokens: Tokens, cached_tokens: Tokens) -> float:
    """Passes a run makes over the data it has cached (epochs).

    Parameters
    ----------
    tokens : float
        Training tokens processed [tokens].
    cached_tokens : float
        Distinct tokens available to the run [tokens].

    Returns
    -------
    float
        Passes over the cached data; above 1 repeats data [passes].

    Notes
    -----
    ``tokens / cached_tokens`` ("Estimating the Compute and Memory Needed for Language Models", "Which FineWeb?"): the
    baseline processed 7.225B of 2.5B cached, 2.9 passes; the 36M record 3.927B of 8B, about half of one.
    """
    return tokens / cached_tokens
