"""The stored fit and the lookups that use it: which factors file is in use, and EFFICIENCY.

See :mod:`xlsxplan.calibration` for how the file is chosen (``$XLSXPLAN_CALIBRATION``) and what it records.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from ..domains import Count, Fraction, Name, TokensOrZero, checked
from ..errors import ArgumentError, CatalogError, NotAvailableError
from .bands import BAND_KINDS, conformal_quantile
from .fit import Factors
from .groups import CLASSES, KINDS, MEASURED, MEASURED_RATE, compute_group, format_group, gpu_class, peak_field

__all__ = [
    "DATA_PACKAGE",
    "MEASUREMENTS_FILE",
    "FACTORS_FILE",
    "FACTORS_ENV",
    "Calibration",
    "factors_path",
    "user_factors_path",
    "measurements_path",
    "sha256",
    "selected",
    "refresh",
    "active",
    "load_factors",
    "efficiency",
    "efficiency_basis",
]

# --- the stored fit ---------------------------------------------------------------------------------------------

DATA_PACKAGE = "xlsxplan.calibration.data"
MEASUREMENTS_FILE = "measurements.csv"
FACTORS_FILE = "calibration.json"

FACTORS_ENV = "XLSXPLAN_CALIBRATION"
"""Which factors EFFICIENCY, validate and the templates use: ``auto`` (default), ``shipped``, ``user`` or a path."""

STAT_INTERVAL = 1.0
"""Seconds between two looks at the factors file: EFFICIENCY in a column of cells would otherwise ask the file system
on every call. ``xlsxplan calibrate --fit`` makes the next lookup look at once."""


@dataclass(frozen=True)
class Calibration:
    """The factors in use and where they come from."""

    factors: Factors
    origin: str
    """``shipped``, ``user`` (the user catalog folder's calibration.json) or ``file`` (a path in the environment)."""
    path: Path
    data: dict[str, Any]
    """The provenance's ``data`` entry: the measurements file it was fitted on, its sha256 and rows."""
    levels: dict[str, dict[str, dict[str, int]]]
    """Rows behind each level, per group kind (empty for a file written before levels were recorded)."""
    bands: dict[str, list[float]] = field(default_factory=dict)
    """Leave-one-run-out residuals per band kind (:mod:`xlsxplan.calibration.bands`), every publication weighted alike;
    empty in an older file."""
    band_rows: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Per band kind, the held-out rows and the publications its residuals come from; empty in an older file."""

    def describe(self) -> str:
        fitted = self.data.get("path") or self.data.get("file", "?")
        # the shipped file by its place in the package, never this machine's path (a workbook carries this text)
        where = f"xlsxplan/calibration/data/{FACTORS_FILE}" if self.origin == "shipped" else self.path
        return f"{self.origin} factors ({where}), fitted on {fitted}"


_loaded: dict[str, Any] = {}


def factors_path() -> Path:
    """Where the shipped fit lives (inside the package: ``xlsxplan/calibration/data/calibration.json``)."""
    return Path(str(resources.files(DATA_PACKAGE).joinpath(FACTORS_FILE)))


def user_factors_path() -> Path:
    """Where ``xlsxplan calibrate --fit`` writes the user's own fit: calibration.json in the user catalog folder."""
    from ..catalog import user_catalog_dir

    return user_catalog_dir() / FACTORS_FILE


def measurements_path() -> Path:
    """The shipped copy of the published measurements (``xlsxplan/calibration/data/measurements.csv``)."""
    return Path(str(resources.files(DATA_PACKAGE).joinpath(MEASUREMENTS_FILE)))


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def selected() -> tuple[str, Path]:
    """The factors file ``$XLSXPLAN_CALIBRATION`` selects, and its origin; CatalogError for a choice that is missing."""
    choice = (os.environ.get(FACTORS_ENV) or "auto").strip()
    low = choice.lower()
    if low == "shipped":
        return "shipped", factors_path()
    if low in ("auto", "user"):
        user = user_factors_path()
        if user.is_file():
            return "user", user
        if low == "user":
            raise CatalogError(f"{FACTORS_ENV}=user, but {user} does not exist: run `xlsxplan calibrate --fit`")
        return "shipped", factors_path()
    path = Path(choice).expanduser()
    if not path.is_file():
        raise CatalogError(f"{FACTORS_ENV}={choice}: no such factors file (give auto, shipped, user or a path)")
    return "file", path


def _read(origin: str, path: Path) -> Calibration:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise CatalogError(f"{path}: cannot be read: {err}; run `xlsxplan calibrate --fit`") from None
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: not a calibration file (a JSON object is expected)")
    try:
        factors = Factors.from_dict(data)
    except CatalogError as err:
        raise CatalogError(f"{path}: {err.message}") from None
    levels = {k: data[k]["levels"] for k in ("prefill", "decode_bandwidth") if isinstance(data[k].get("levels"), dict)}
    bands = data.get("bands")
    found = bands if isinstance(bands, dict) else {}
    residuals = {
        k: [float(x) for x in v["residuals"]]
        for k, v in found.items()
        if isinstance(v, dict) and isinstance(v.get("residuals"), list)
    }
    behind = {
        k: (int(v["rows"]), int(v.get("sources") or 0))
        for k, v in found.items()
        if isinstance(v, dict) and isinstance(v.get("rows"), int)
    }
    return Calibration(factors, origin, path, dict(data.get("data") or {}), levels, residuals, behind)


def refresh() -> None:
    """Make the next lookup read the factors file again (after ``calibrate --fit`` in the same process)."""
    _loaded.clear()


def active() -> Calibration:
    """The factors in use: the user's refit when there is one (or as ``$XLSXPLAN_CALIBRATION`` says), else the
    shipped fit. Read once, and again when the file or the choice changes (looked at once a second at most)."""
    env = (os.environ.get(FACTORS_ENV), os.environ.get("XLSXPLAN_CATALOG_DIR"))
    now = time.monotonic()
    if _loaded.get("env") == env and now - _loaded.get("looked", -STAT_INTERVAL) < STAT_INTERVAL:
        return _loaded["calibration"]
    origin, path = selected()
    try:
        st = path.stat()
        stamp: tuple = (origin, str(path), st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = (origin, str(path), None, None)
    if _loaded.get("stamp") != stamp:
        _loaded["calibration"] = _read(origin, path)
        _loaded["stamp"] = stamp
    _loaded["env"], _loaded["looked"] = env, now
    return _loaded["calibration"]


def load_factors() -> Factors:
    """The calibrated factors in use (:func:`active`): the user's refit if there is one, else the shipped fit."""
    return active().factors


def _machine_balance(gpu: str, precision: str) -> float:
    from ..catalog import gpu_spec

    return gpu_spec(gpu, peak_field(precision)) * 1e12 / (gpu_spec(gpu, "bandwidth_tb_s") * 1e12)


def _require_peak(gpu: str, cls: str, precision: str) -> None:
    """Refuse (#N/A) a compute share where the catalog has no peak for the precision: a share of nothing."""
    field_name = peak_field(precision)  # FP4: NotAvailableError
    if gpu.strip().lower() in CLASSES + (MEASURED,):
        if cls == "apple":
            raise NotAvailableError(
                "gpu: Apple GPUs have no published FLOP/s, so a prefill share of peak compute is undefined; measure "
                "one with `xlsxplan calibrate --save NAME` and pass NAME",
                "gpu",
            )
        return
    from ..catalog import gpu_spec

    try:
        gpu_spec(gpu, field_name)
    except NotAvailableError as err:
        hint = ""
        if field_name == "fp8_tflops" and "not-supported" in _unavailable_key(gpu, field_name):
            from ..precision import lookup

            if lookup(precision).name in ("fp8", "fp8_block128", "mxfp8"):
                hint = (
                    "; FP8 weights there run weight-only, widened to 16 bits before the multiply (vLLM docs, "
                    "'FP8 W8A8': W8A16 with FP8 Marlin on Turing and Ampere): give precision w8a16"
                )
            else:
                hint = "; the catalog holds no INT8 tensor rate"
        raise NotAvailableError(f"{err.message}; a prefill share of it is undefined{hint}", "gpu") from None


def _unavailable_key(gpu: str, field_name: str) -> str:
    from ..catalog import load_catalog

    return load_catalog().accelerators.get(gpu).unavailable.get(field_name, "")


def _measured_train_mfu(gpu: str) -> float:
    """A measured preset's 6N training rate over its matmul rate, both from ``xlsxplan calibrate``."""
    from ..catalog import load_catalog

    preset = load_catalog().accelerators.get(gpu)
    hit = MEASURED_RATE.search(preset.note or "")
    if hit is None or not preset.figure("bf16_tflops"):
        raise NotAvailableError(
            f"gpu: {preset.id} was measured, but its note gives no 6N training rate; measure it again with "
            "`xlsxplan calibrate --save`",
            "gpu",
        )
    return min(1.0, float(hit.group(1)) / (float(preset.figure("bf16_tflops")) * 1e12))  # type: ignore[arg-type]


def _prepared(kind: str, gpu: str) -> tuple[str, str]:
    """The kind, checked and lower-cased, and the GPU's class."""
    key = kind.strip().lower()
    if key not in KINDS:
        raise ArgumentError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}", "kind")
    return key, gpu_class(gpu)


BAND_OF = {"train_mfu": "train", "prefill": "prefill", "decode_bandwidth": "decode"}
"""The band kind (:mod:`xlsxplan.calibration.bands`) whose residuals give each efficiency's range."""


def band(kind: str, quantile: float) -> float:
    """The speed multiplier at ``quantile`` of a kind of calibrated figure: the figure's prediction times it is that
    quantile of what published runs reached (a time or a GPU count is divided by it).

    Parameters
    ----------
    kind : str
        A band kind (train, decode, prefill, throughput) or an efficiency kind (train_mfu, prefill,
        decode_bandwidth) [name].
    quantile : float
        0.1 for P10, 0.9 for P90; 0.5 gives 1, the prediction itself [fraction].

    Returns
    -------
    float
        ``exp`` of the split-conformal quantile of the kind's leave-one-source-out residuals, as the factors file in use
        records them [ratio].

    Raises
    ------
    NotAvailableError
        If the factors file records no residuals for the kind (a file written before ranges, or no measured rows).
    """
    key = BAND_OF.get(kind.strip().lower(), kind.strip().lower())
    if key not in BAND_KINDS:
        raise ArgumentError(f"kind must be one of {', '.join(BAND_KINDS + tuple(BAND_OF))}, got {kind!r}", "kind")
    residuals = active().bands.get(key)
    if not residuals:
        raise NotAvailableError(
            f"the factors in use record no {key} residuals: refit with `xlsxplan calibrate --fit`", "kind"
        )
    import math

    return math.exp(conformal_quantile(residuals, quantile))


@checked
def efficiency(
    kind: Name,
    gpu: Name = "H100-SXM",
    precision: Name = "bf16",
    hidden: Count = 4096,
    seq_len: TokensOrZero = 0,
    quantile: Fraction = 0.5,
) -> float:
    """Calibrated share of peak that real runs reach: training MFU, prefill compute, or decode bandwidth.

    Parameters
    ----------
    kind : str
        train_mfu (training model FLOPs utilisation), prefill (share of peak compute in prefill) or
        decode_bandwidth (share of peak memory bandwidth in decode) [name].
    gpu : str, default H100-SXM
        An accelerator name, or a class: datacenter, consumer or apple [name].
    precision : str, default bf16
        The weights' format, e.g. bf16, fp16, fp8, int4, q4_0 or q4_k_m [name].
    hidden : int, default 4096
        Model width; train_mfu only: small models reach less of peak [count].
    seq_len : float, default 0
        Training sequence length; train_mfu only: when given, the MFU is restated against 6N FLOPs for
        TRAIN_SECONDS and MFU, else it counts attention as PaLM does [tokens].
    quantile : float, default 0.5
        Where in the range of published runs: 0.1 for P10 (slow), 0.9 for P90 (fast), 0.5 the fit itself; the
        fit times a quantile of the kind's leave-one-source-out residuals [fraction].

    Returns
    -------
    float
        Efficiency, to pass as efficiency, utilisation or mfu [fraction].

    Notes
    -----
    Fitted on the published measurements (xlsxplan/calibration/data/measurements.csv), or on yours after ``xlsxplan
    calibrate --fit --data FILE`` (the user catalog folder's calibration.json; ``$XLSXPLAN_CALIBRATION`` chooses);
    ``xlsxplan validate`` shows each row's error from a fit without its run. prefill and decode_bandwidth are ``base
    * class * format``, decode's format by storage, prefill's by the width of the multiply (W8A16 computes in 16
    bits); train_mfu is ``ceiling / (1 + overhead_bytes * (C/B) / (72 hidden))`` with C/B the accelerator's dense
    FLOP/s over its bandwidth at the precision (PaLM, arXiv:2204.02311, Appendix B). With seq_len, train_mfu is
    divided by ``1 + seq_len / (6 hidden)``, attention's ``12 L d T`` over ``6N`` for ``N = 12 L d^2``. A level no
    measurement supports keeps multiplier 1 (shipped data: prefill on Apple GPUs and on FP4 tensor cores), as the
    factors file records; a share of a peak the catalog lacks (prefill on Apple, FP4 on a Hopper, FP8 on an A100) is
    #N/A. A preset saved by
    ``xlsxplan calibrate --save`` gives 1 for decode and prefill (its figures are measured rates, times the format
    multiplier) and its measured 6N rate over its measured matmul rate for train_mfu.
    """
    if not 0.0 < quantile < 1.0:
        from ..errors import OutOfRangeError

        raise OutOfRangeError(f"quantile must be between 0 and 1 (exclusive), got {quantile!r}", "quantile")
    value = _efficiency(kind, gpu, precision, hidden, seq_len)
    if quantile == 0.5:
        return value
    return min(1.0, value * band(kind, quantile))


def _efficiency(kind: str, gpu: str, precision: str, hidden: int, seq_len: float) -> float:
    key, cls = _prepared(kind, gpu)
    factors = load_factors()
    if key == "train_mfu":
        if gpu.strip().lower() in CLASSES + (MEASURED,):
            raise ArgumentError(
                "gpu must name an accelerator for train_mfu (its FLOP/s per byte sets the small-model penalty), "
                f"got the class {gpu!r}",
                "gpu",
            )
        if cls == MEASURED:
            peak_field(precision)  # FP4 is still refused
            return _measured_train_mfu(gpu)
        value = factors.value(key, balance=_machine_balance(gpu, precision), hidden=hidden)
        if seq_len > 0:
            value /= 1.0 + seq_len / (6.0 * hidden)
        return value
    if key == "prefill":
        _require_peak(gpu, cls, precision)
        return factors.value(key, cls, compute_group(precision))
    return factors.value(key, cls, format_group(precision))


def efficiency_basis(kind: str, gpu: str = "H100-SXM", precision: str = "bf16") -> str:
    """What EFFICIENCY's value for these arguments rests on, in words: the factors file, and for each level the rows
    behind it, or that none does and multiplier 1 is assumed.

    Raises the errors EFFICIENCY raises for the same arguments.
    """
    key, cls = _prepared(kind, gpu)
    cal = active()
    where = f"{cal.origin} factors"
    if cls == MEASURED:
        return f"{where}: a measured preset, its own measured rates (factor 1 x the weights-format multiplier)"
    if key == "train_mfu":
        return f"{where}: train_mfu model fitted on {cal.data.get('train_rows', 'its')} training rows"
    fmt = compute_group(precision) if key == "prefill" else format_group(precision)
    counts = cal.levels.get(key)
    if not counts:
        return f"{where}: {key} for {cls}, {fmt} (the file records no rows per level)"
    parts = []
    for axis, level in (("class", cls), ("format", fmt)):
        n = counts.get(axis, {}).get(level, 0)
        parts.append(f"{level}: {n} row{'s' if n != 1 else ''}" if n else f"{level}: no rows, multiplier 1 assumed")
    return f"{where}: {key} " + "; ".join(parts)
