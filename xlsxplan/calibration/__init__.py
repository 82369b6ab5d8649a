"""Calibrated efficiencies: the share of peak that real runs reach, fitted on published measurements.

The formulas of "Back-of-the-Envelope Estimation for LLM Systems" and "Estimating the Compute and Memory Needed for
Language Models" are ceilings. Real runs reach a fraction of them, and that fraction is where estimates go wrong.
Three fractions carry almost all of it:

* ``train_mfu``: model FLOPs utilisation in training, counting attention's FLOPs as PaLM defines it;
* ``prefill``: the share of dense peak compute reached while reading a prompt (time to first token);
* ``decode_bandwidth``: the share of peak memory bandwidth reached while generating.

Each is a small model with physical parameters, fitted on ``xlsxplan/calibration/data/measurements.csv`` (a copy of the
project's published measurements, each row with its source) and stored with the fit's provenance in
``xlsxplan/calibration/data/calibration.json``: the rows behind every fitted level, the fit's error, and the levels no
row supports. ``xlsxplan validate`` predicts each measurement from a fit that never saw it.

``xlsxplan calibrate --fit [--data FILE]`` refits in one command and writes the user's own factors file,
``calibration.json`` in the user catalog folder (``$XLSXPLAN_CATALOG_DIR``, else the platform config folder, as the
user presets); EFFICIENCY, ``validate`` and the templates use it whenever it exists. ``$XLSXPLAN_CALIBRATION``
chooses: ``auto`` (the default: the user's file if there is one, else the shipped one), ``shipped``, ``user``, or
the path of a factors file. ``calibrate --fit --shipped`` rewrites the shipped file, from a source checkout only.

What the factors do not cover
-----------------------------
A level (GPU class or weights format) that no measurement supports keeps multiplier 1: the datacenter, 16-bit
share. That is an assumption, recorded in the provenance (``levels``: rows per level, ``assumed`` for none) and
stated by :func:`efficiency_basis`; the shipped file's ``assumed`` lists them (prefill on Apple GPUs, and prefill
that multiplies on FP4 tensor cores, ``4-bit multiply``: no batch-one row is NVFP4 or MXFP4 on Blackwell). A share of
a peak the catalog does not hold (FP4 on a Hopper, FP8 on an A100) is refused as ``#N/A``.

A preset measured by ``xlsxplan calibrate --save`` is its own class, ``measured``: its bandwidth and FLOP/s are
what a copy kernel and a matrix multiply sustained on that device, not datasheet peaks, so its decode and prefill
factors are 1 (times the weights-format multiplier), and its train_mfu is its measured 6N training rate over its
measured matmul rate.

The models
----------
``prefill`` and ``decode_bandwidth``: a base factor for datacenter GPUs at 16-bit precision, times a multiplier for
the GPU class (consumer, Apple) and one for the weights' format (8-bit, 4-bit, and for prefill the 4-bit multiply
apart from 4-bit weights widened to 16 bits: :func:`format_levels`), all fitted together in log space.

``train_mfu``: ``ceiling / (1 + overhead_bytes * (C / B) / (72 * hidden))``. The matrix multiplies of one layer
cost about ``72 d^2`` FLOPs per token in training (6 N with N = 12 L d^2); the work outside them (norms, activation
functions, residuals, rotary embeddings, the optimizer) is bound by memory and moves about ``overhead_bytes * d``
bytes. Their time ratio is ``overhead_bytes * (C / B) / (72 d)``, with C/B the accelerator's FLOP per byte at the
training precision. So small models (small d) and FP8 (twice the FLOP/s for the same bandwidth) reach less of peak.

The fits minimise the Huber loss of log errors (Huber 1964), quadratic for errors within about 20% and linear
beyond, so one inconsistent row (the data README warns that Llama 3's reported GPU-hours imply a far lower MFU than
Llama 2's) moves a factor no more than any other; a small ridge penalty settles the effects the data cannot
separate at zero (no multiplier).

References
----------
.. [1] Chowdhery et al. 2022, "PaLM", arXiv:2204.02311, Appendix B: model FLOPs utilisation, with the
   ``6 N + 12 L H Q T`` FLOPs per token that count attention.
.. [2] "Back-of-the-Envelope Estimation for LLM Systems", sections 4, 5 and 7: 60-80% of peak bandwidth, 40-60% of peak
   compute, 50% for prefill.
.. [3] Huber 1964, "Robust Estimation of a Location Parameter", Ann. Math. Statist. 35(1).
.. [4] llama.cpp, tools/quantize/README.md: bits per weight of its block formats including their scales
   (Q4_0 4.5, Q8_0 8.5; Q4_K_M 4.84 for Llama 2 7B), as :mod:`xlsxplan.precision` holds them.
"""

from __future__ import annotations

from .bands import BAND_KINDS, conformal_quantile
from .factors import (
    FACTORS_ENV,
    Calibration,
    active,
    band,
    efficiency,
    efficiency_basis,
    factors_path,
    load_factors,
    measurements_path,
    refresh,
    sha256,
    user_factors_path,
)
from .fit import Factors, GroupFit, Observation, TrainFit, fit, fit_kind, level_counts
from .groups import (
    CLASSES,
    FORMAT_GROUPS,
    FP4_MULTIPLY,
    KINDS,
    MEASURED,
    MEASURED_SOURCE,
    SEED_FACTORS,
    bits_per_weight,
    class_of_id,
    compute_group,
    format_group,
    format_levels,
    gpu_class,
    peak_field,
)

__all__ = [
    "BAND_KINDS",
    "CLASSES",
    "Calibration",
    "FACTORS_ENV",
    "FORMAT_GROUPS",
    "FP4_MULTIPLY",
    "Factors",
    "GroupFit",
    "KINDS",
    "MEASURED",
    "MEASURED_SOURCE",
    "Observation",
    "SEED_FACTORS",
    "TrainFit",
    "active",
    "band",
    "bits_per_weight",
    "class_of_id",
    "compute_group",
    "conformal_quantile",
    "efficiency",
    "efficiency_basis",
    "factors_path",
    "fit",
    "fit_kind",
    "format_group",
    "format_levels",
    "gpu_class",
    "load_factors",
    "level_counts",
    "measurements_path",
    "peak_field",
    "refresh",
    "sha256",
    "user_factors_path",
]
