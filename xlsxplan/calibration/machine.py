"""Measure this machine: matrix-multiply FLOP/s, memory bandwidth, and the 6N-equivalent rate of a training step.

The advice of "Estimating the Compute and Memory Needed for Language Models" for sizing a run on any machine is to
take a 6N-equivalent rate from a short benchmark rather than a datasheet peak, because sustained utilisation is
unknown until measured. This module measures three
figures in well under a minute:

* **matmul**: a square matrix multiply, ``2 n^3`` FLOPs over its best time. With PyTorch on a GPU, BF16 on its
  tensor cores; otherwise float32 with numpy (a CPU has no faster 16-bit path that numpy reaches).
* **bandwidth**: copying a large array, counting the bytes read and written (the STREAM "copy" convention,
  McCalpin 1995), over the best time.
* **train_6n**: a real training step timed end to end, turned into FLOP/s with ``C_6N = 6 N (tokens/s)`` (Compute
  and Memory). With PyTorch, a small causal transformer with AdamW (mixed precision on a GPU). With numpy only, a
  stack of residual MLP blocks (the transformer's feed-forward half, which holds two thirds of its parameters)
  trained by hand-written backpropagation and Adam: no attention, so it overstates a transformer's rate by about
  attention's share of the FLOPs, ``T / (6 d)``, and it runs numpy's kernels, not a framework's. It is reported as
  what it is, an equation-derived rate of a measured step, never as a hardware figure.

PyTorch is imported only if installed. Timings take the best of several runs after a warm-up, so a busy machine
reads low rather than erratic.

References
----------
.. [1] "Estimating the Compute and Memory Needed for Language Models", "The M2: What the Specification Does and Does
   Not Tell Us": ``C_6N`` and ``N = sqrt(C t / 120)``.
.. [2] McCalpin 1995, "Memory Bandwidth and Machine Balance in Current High Performance Computers", IEEE TCCA
   Newsletter: the STREAM copy kernel counts 2 x 8 bytes per element.
.. [3] Kingma and Ba 2015, "Adam: A Method for Stochastic Optimization", arXiv:1412.6980, Algorithm 1.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..errors import ArgumentError

__all__ = ["BACKENDS", "Figures", "measure", "system_memory_gb", "torch_available"]

BACKENDS = ("auto", "numpy", "torch")
_DEVICE = re.compile(r"^(auto|cpu|mps|cuda(:\d{1,3})?)$")


@dataclass
class Figures:
    """What one calibration run measured."""

    device: str
    backend: str
    matmul_tflops: float
    matmul_dtype: str
    bandwidth_tb_s: float
    train_6n_flops: float
    train_tokens_per_s: float
    train_params: int
    train_model: str
    memory_gb: float
    seconds: float
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"warning": self.warning()}

    def warning(self) -> str:
        """A note when the figures contradict each other, as they do when another process held the machine.

        A training step's 6N FLOPs are matrix-multiply FLOPs (all of them in the numpy MLP, most in a
        transformer), so its 6N rate cannot honestly exceed the matmul rate by much.
        """
        if self.train_6n_flops > 1.1 * self.matmul_tflops * 1e12:
            return (
                "the 6N training rate exceeds the matmul rate, which a quiet machine cannot do: another "
                "process was probably busy while one of them ran; run again on an idle machine"
            )
        return ""


def torch_available() -> bool:
    return importlib.util.find_spec("torch") is not None


def system_memory_gb() -> float:
    """Physical memory of this machine [GB, decimal], or 0 when the platform does not say
    (:func:`xlsxplan.infra.system.physical_memory_gib`, which the command line's memory cap reads too)."""
    from ..infra.system import physical_memory_gib

    return physical_memory_gib() * 1024**3 / 1e9


def _best(
    run: Callable[[], Any], repeats: int, sync: Callable[[], None] = lambda: None, min_seconds: float = 0.0
) -> float:
    """Best time of at least ``repeats`` runs after a warm-up, running on (up to 100 runs) until ``min_seconds``
    have passed, so that a moment when another process holds a core does not decide the figure."""
    run()  # warm-up: first-touch pages, kernel selection, caches
    sync()
    best, spent, count = float("inf"), 0.0, 0
    while count < repeats or (spent < min_seconds and count < 100):
        start = time.perf_counter()
        run()
        sync()
        elapsed = time.perf_counter() - start
        best, spent, count = min(best, elapsed), spent + elapsed, count + 1
    return best


# --- numpy ------------------------------------------------------------------------------------------------------


def _numpy_matmul(n: int, repeats: int, min_seconds: float) -> float:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    out = np.empty((n, n), dtype=np.float32)
    seconds = _best(lambda: np.matmul(a, b, out=out), repeats, min_seconds=min_seconds)
    return 2.0 * n**3 / seconds


def _numpy_bandwidth(megabytes: int, repeats: int, min_seconds: float) -> float:
    count = megabytes * 1_000_000 // 8
    src = np.ones(count, dtype=np.float64)
    dst = np.empty_like(src)
    seconds = _best(lambda: np.copyto(dst, src), repeats, min_seconds=min_seconds)
    return 2.0 * src.nbytes / seconds  # read once, write once


class _NumpyMLP:
    """Residual MLP blocks ``x + relu(x W1) W2`` trained with Adam on a squared-error loss."""

    def __init__(self, width: int, depth: int, seed: int = 0, dtype: Any = np.float32) -> None:
        rng = np.random.default_rng(seed)
        scale = 1.0 / np.sqrt(width)
        self.weights: list[np.ndarray] = []
        for _ in range(depth):
            self.weights.append((rng.standard_normal((width, 4 * width)) * scale).astype(dtype))
            self.weights.append((rng.standard_normal((4 * width, width)) * scale * 0.5).astype(dtype))
        self.m = [np.zeros_like(w) for w in self.weights]
        self.v = [np.zeros_like(w) for w in self.weights]
        self.t = 0

    @property
    def params(self) -> int:
        return sum(w.size for w in self.weights)

    def loss_and_grads(self, x: np.ndarray, target: np.ndarray) -> tuple[float, list[np.ndarray]]:
        """Mean squared error and its gradient for every weight, by backpropagation."""
        saved = []
        h = x
        for i in range(0, len(self.weights), 2):
            pre = h @ self.weights[i]
            act = np.maximum(pre, 0.0)
            saved.append((h, pre, act))
            h = h + act @ self.weights[i + 1]
        diff = h - target
        loss = float(np.mean(diff * diff))
        grad_h = diff * (2.0 / diff.size)
        grads: list[np.ndarray] = [np.empty(0)] * len(self.weights)
        for j in range(len(saved) - 1, -1, -1):
            h_in, pre, act = saved[j]
            grads[2 * j + 1] = act.T @ grad_h
            grad_pre = (grad_h @ self.weights[2 * j + 1].T) * (pre > 0)
            grads[2 * j] = h_in.T @ grad_pre
            grad_h = grad_h + grad_pre @ self.weights[2 * j].T
        return loss, grads

    def step(self, x: np.ndarray, target: np.ndarray, lr: float = 1e-3) -> float:
        """One training step (forward, backward, Adam update); returns the loss before it."""
        loss, grads = self.loss_and_grads(x, target)
        self.t += 1
        b1, b2, eps = 0.9, 0.999, 1e-8
        for w, g, m, v in zip(self.weights, grads, self.m, self.v):
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * g * g
            w -= lr * (m / (1 - b1**self.t)) / (np.sqrt(v / (1 - b2**self.t)) + eps)
        return loss


def _numpy_train(width: int, depth: int, tokens: int, repeats: int, min_seconds: float) -> tuple[float, int]:
    model = _NumpyMLP(width, depth)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((tokens, width), dtype=np.float32)
    target = rng.standard_normal((tokens, width), dtype=np.float32)
    seconds = _best(lambda: model.step(x, target), repeats, min_seconds=min_seconds)
    return tokens / seconds, model.params


# --- PyTorch ----------------------------------------------------------------------------------------------------


def _torch_device(torch: Any, wanted: str) -> str:
    """The PyTorch device to measure: ``wanted``, checked to exist, or the best one for ``auto``."""
    mps = getattr(torch.backends, "mps", None)
    if wanted.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ArgumentError(f"device {wanted!r} is not available: this PyTorch sees no CUDA GPU", "device")
        index = int(wanted.partition(":")[2] or 0)
        if index >= torch.cuda.device_count():
            raise ArgumentError(
                f"device {wanted!r} is not available: this PyTorch sees {torch.cuda.device_count()} CUDA GPU(s), "
                f"cuda:0 to cuda:{torch.cuda.device_count() - 1}",
                "device",
            )
        return wanted
    if wanted == "mps" and (mps is None or not mps.is_available()):
        raise ArgumentError("device 'mps' is not available: this PyTorch sees no Apple GPU", "device")
    if wanted != "auto":
        return wanted
    if torch.cuda.is_available():
        return "cuda"
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def _torch_measure(wanted: str, quick: bool) -> Figures:
    import torch

    device = _torch_device(torch, wanted)
    start = time.perf_counter()

    cuda = device.startswith("cuda")

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize(device)
        elif device == "mps":
            torch.mps.synchronize()

    accel = device != "cpu"
    dtype = torch.bfloat16 if accel else torch.float32
    n = (4096 if quick else 8192) if accel else (1024 if quick else 2048)
    repeats = 3 if quick else 10
    budget = 0.15 if quick else 2.0

    def time_matmul() -> float:  # the arrays are freed when it returns
        a = torch.randn(n, n, device=device, dtype=dtype)
        b = torch.randn(n, n, device=device, dtype=dtype)
        return _best(lambda: torch.matmul(a, b), repeats, sync, budget)

    matmul = 2.0 * n**3 / time_matmul()
    megabytes = (1024 if quick else 4096) if accel else (64 if quick else 256)

    def time_copy() -> float:
        src = torch.ones(megabytes * 1_000_000 // 4, device=device, dtype=torch.float32)
        dst = torch.empty_like(src)
        return _best(lambda: dst.copy_(src), repeats, sync, budget)

    bandwidth = 2.0 * megabytes * 1e6 / time_copy()

    width, depth, seq, batch = (512, 4, 512, 8) if accel else (256, 2, 256, 4)
    if quick and accel:
        depth = 2
    layer = torch.nn.TransformerEncoderLayer(
        width, width // 64, 4 * width, dropout=0.0, batch_first=True, norm_first=True
    )
    model = torch.nn.TransformerEncoder(layer, depth, enable_nested_tensor=False).to(device)
    head = torch.nn.Linear(width, width).to(device)
    params = sum(p.numel() for p in model.parameters()) + sum(p.numel() for p in head.parameters())
    opt = torch.optim.AdamW(list(model.parameters()) + list(head.parameters()), lr=1e-4)
    x = torch.randn(batch, seq, width, device=device)
    target = torch.randn(batch, seq, width, device=device)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(seq, device=device)

    def train_step() -> None:
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cuda" if cuda else "cpu", dtype=torch.bfloat16, enabled=cuda):
            y = head(model(x, mask=mask, is_causal=True))
            loss = torch.nn.functional.mse_loss(y.float(), target)
        loss.backward()
        opt.step()

    seconds = _best(train_step, repeats, sync, budget)
    tokens_per_s = batch * seq / seconds
    memory = system_memory_gb()
    if cuda:
        memory = torch.cuda.get_device_properties(device).total_memory / 1e9
        name = torch.cuda.get_device_name(device)
    elif device == "mps":
        name = f"Apple GPU (MPS) on {platform.machine()}"
    else:
        name = f"CPU ({os.cpu_count()} threads, {platform.machine()})"
    return Figures(
        device=name,
        backend=f"torch {torch.__version__} on {device}",
        matmul_tflops=matmul / 1e12,
        matmul_dtype="bfloat16" if accel else "float32",
        bandwidth_tb_s=bandwidth / 1e12,
        train_6n_flops=6.0 * params * tokens_per_s,
        train_tokens_per_s=tokens_per_s,
        train_params=params,
        train_model=f"causal transformer, {depth} layers of width {width}, sequence {seq}, batch {batch}, AdamW"
        + (", bf16 autocast" if cuda else ", float32"),
        memory_gb=memory,
        seconds=time.perf_counter() - start,
        details={"matmul_n": n, "copy_mb": megabytes},
    )


def measure(quick: bool = False, backend: str = "auto", device: str = "auto") -> Figures:
    """Run the microbenchmark: PyTorch when installed (and ``backend`` allows), else numpy on the CPU.

    ``quick`` shrinks every size and repeat count (a few seconds on two cores) for tests and a first look.
    ``backend`` is auto, numpy or torch; ``device`` (PyTorch only) auto, cpu, cuda, cuda:N or mps. Both are checked
    before anything is measured: an :class:`~xlsxplan.errors.ArgumentError` says what is wrong.
    """
    if backend not in BACKENDS:
        raise ArgumentError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}", "backend")
    if not _DEVICE.match(device):
        raise ArgumentError(f"device must be auto, cpu, cuda, cuda:N or mps, got {device!r}", "device")
    if backend == "torch" and not torch_available():
        raise ArgumentError(
            "backend torch needs PyTorch, which is not installed: install it (pip install torch) or use "
            "--backend numpy",
            "backend",
        )
    use_torch = backend == "torch" or (backend == "auto" and torch_available())
    if not use_torch and device not in ("auto", "cpu"):
        why = "PyTorch is not installed" if backend == "auto" else "the numpy backend measures the CPU only"
        raise ArgumentError(f"device {device!r} needs the torch backend: {why}", "device")
    if use_torch:
        return _torch_measure(device, quick)
    start = time.perf_counter()
    budget = 0.15 if quick else 2.0  # seconds each figure keeps repeating for
    n = 1024 if quick else 2048
    matmul = _numpy_matmul(n, 3, budget)
    megabytes = 32 if quick else 256
    bandwidth = _numpy_bandwidth(megabytes, 3, budget)
    width, depth, tokens = (128, 2, 256) if quick else (512, 4, 1024)
    tokens_per_s, params = _numpy_train(width, depth, tokens, 2 if quick else 3, budget)
    return Figures(
        device=f"CPU ({os.cpu_count()} threads, {platform.machine()})",
        backend=f"numpy {np.__version__}",
        matmul_tflops=matmul / 1e12,
        matmul_dtype="float32",
        bandwidth_tb_s=bandwidth / 1e12,
        train_6n_flops=6.0 * params * tokens_per_s,
        train_tokens_per_s=tokens_per_s,
        train_params=params,
        train_model=f"residual MLP, {depth} blocks of width {width} (hidden {4 * width}), {tokens} tokens per "
        "step, Adam, float32, no attention",
        memory_gb=system_memory_gb(),
        seconds=time.perf_counter() - start,
        details={"matmul_n": n, "copy_mb": megabytes},
    )
