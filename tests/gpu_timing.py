"""The GPU tests' own timing harness, and the rules that judge a student's timer against it.

An honest GPU timing (handout/04_flops.md §4.5 and §4.6):
1. reads a clock on the device, not the host: CUDA events recorded on the stream around the work,
   read only after the device has reached the second one;
2. pays one-time costs first: untimed warm-up calls;
3. does not measure a cache: repeat i gets input set i mod N, so no two neighbouring calls see the
   same operands;
4. never times zeros (a GPU draws less power on zeros, and can run faster): operands are random and
   checked;
5. reports the median of the repeats, which one slow outlier does not move.

Only `CudaEventClock` and `matmul_seconds` need a GPU. Everything else runs on any machine, and the
staff's tests drive it with scripted clocks. Every time is in seconds, every rate in FLOP/s.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Protocol

import pytest
import torch

from adapters._tf32 import float32_matmuls
from tests.grading import GPU_SKIP_PREFIX

# A student's median matmul time and the harness's agree within this factor either way (§4.6).
TIMER_TOLERANCE = 1.5
# A large bfloat16 matmul reaches this share of the promised FLOP/s in the student's own table (§4.6).
MFU_BAND = (0.30, 1.0)
# With TF32 off, bfloat16 matmuls run at least this many times the float32 FLOP/s (§4.6).
BF16_OVER_FP32 = 4.0
# The counts the GPU tests give the student's time_matmul (§4.6). A timer that starts its clock
# before the warm-ups and divides by the trials reports (warm-ups + trials) / trials = 3x the real
# time: 2x past the tolerance, where an honest timer sits near 1x, 1.5x inside it.
STUDENT_WARMUP, STUDENT_TRIALS = 10, 5

# Dense (not "with sparsity") spec-sheet FLOP/s, the tests' own copy, used only to judge whether a
# timing is physically possible. Rows are matched in order against the upper-cased device name, so
# the PCIe and NVL parts come before the SXM part whose name they contain.
PEAK_FLOP_PER_SEC: dict[str, dict[torch.dtype, float]] = {
    "H100 PCIE": {torch.float32: 51.2e12, torch.bfloat16: 756.5e12, torch.float16: 756.5e12},
    "H100 NVL": {torch.float32: 60e12, torch.bfloat16: 835e12, torch.float16: 835e12},
    "H100": {torch.float32: 67.5e12, torch.bfloat16: 989.5e12, torch.float16: 989.5e12},
    "H200 NVL": {torch.float32: 60e12, torch.bfloat16: 835e12, torch.float16: 835e12},
    "H200": {torch.float32: 67.5e12, torch.bfloat16: 989.5e12, torch.float16: 989.5e12},
    "A100": {torch.float32: 19.5e12, torch.bfloat16: 312e12, torch.float16: 312e12},  # PCIe and SXM alike
}


def peak_row(device_name: str) -> tuple[str, dict[torch.dtype, float]] | None:
    """(row name, dense FLOP/s per dtype) of the device `torch.cuda.get_device_name()` calls
    `device_name`, or None for a device the tests do not know."""
    upper = device_name.upper()
    for row, peaks in PEAK_FLOP_PER_SEC.items():
        if row in upper:
            return row, peaks
    return None


def peak_or_skip(device_name: str, dtype: torch.dtype) -> float:
    """The dense FLOP/s of `device_name` in `dtype` from the tests' table; on a device the table does
    not know, skips the calling test (0 of 0, like no GPU): its bounds were reasoned for known ones."""
    row = peak_row(device_name)
    if row is None or dtype not in row[1]:
        pytest.skip(unknown_device_reason(device_name))
    return row[1][dtype]


def unknown_device_reason(device_name: str) -> str:
    """Why a GPU test cannot judge a timing on `device_name`: a skip reason the plugin scores 0 of 0."""
    return (f"{GPU_SKIP_PREFIX} the tests know: {device_name!r} is not in tests/gpu_timing.py's peak table "
            f"({', '.join(PEAK_FLOP_PER_SEC)})")


class Clock(Protocol):
    """Reads elapsed time around one call: `start()` before it, `stop(mark)` after it, in seconds."""

    def start(self) -> object: ...

    def stop(self, mark: object) -> float: ...


class PerfCounterClock:
    """The host's wall clock. Given a CUDA `device`, it waits for the device (torch.cuda.synchronize)
    before each reading: right for work that mixes host and device steps, such as a batch read from
    a file and copied to the GPU. Without one, it is wrong for queued GPU work."""

    def __init__(self, device: str | torch.device | None = None) -> None:
        on_cuda = device is not None and torch.device(device).type == "cuda"
        self.device = torch.device(device) if on_cuda else None

    def _read(self) -> float:
        if self.device is not None:
            torch.cuda.synchronize(self.device)
        return time.perf_counter()

    def start(self) -> float:
        return self._read()

    def stop(self, mark: object) -> float:
        return self._read() - float(mark)  # type: ignore[arg-type]


class CudaEventClock:
    """CUDA events on the current stream: the device stamps each event when the work before it is
    done, so the host's launch overhead and any queued backlog are not counted."""

    def __init__(self, device: str | torch.device = "cuda") -> None:
        self.device = torch.device(device)

    def start(self) -> torch.cuda.Event:
        event = torch.cuda.Event(enable_timing=True)
        event.record(torch.cuda.current_stream(self.device))
        return event

    def stop(self, mark: object) -> float:
        end = torch.cuda.Event(enable_timing=True)
        end.record(torch.cuda.current_stream(self.device))
        end.synchronize()
        return mark.elapsed_time(end) / 1000.0  # type: ignore[attr-defined]  # milliseconds -> seconds


def time_calls(run: Callable[..., object], inputs: Sequence[tuple], clock: Clock, warmup: int,
               repeats: int) -> list[float]:
    """Seconds of each of `repeats` timed calls of `run`, after `warmup` untimed ones.

    Call j (warm-ups first, counting from 0) gets the arguments inputs[j % len(inputs)], so the
    timed calls keep rotating where the warm-ups left off.

    Raises:
        ValueError: no inputs, warmup < 1 or repeats < 1.
    """
    if not inputs:
        raise ValueError("time_calls needs at least one input set to rotate through")
    if warmup < 1 or repeats < 1:
        raise ValueError(f"time_calls needs warmup >= 1 and repeats >= 1, got warmup={warmup}, repeats={repeats}")
    for j in range(warmup):
        run(*inputs[j % len(inputs)])
    seconds = []
    for j in range(warmup, warmup + repeats):
        arguments = inputs[j % len(inputs)]
        mark = clock.start()
        run(*arguments)
        seconds.append(clock.stop(mark))
    return seconds


def median(seconds: Sequence[float]) -> float:
    """The median of the timed repeats (the mean of the middle two for an even count)."""
    if not seconds:
        raise ValueError("no timings to take the median of")
    return float(statistics.median(seconds))


def refuse_zeros(tensors: Sequence[torch.Tensor]) -> None:
    """Raise ValueError if any tensor holds only zeros: a zero operand would time a special case."""
    for i, tensor in enumerate(tensors):
        if tensor.numel() and not bool(tensor.ne(0).any()):
            raise ValueError(f"operand {i} of shape {tuple(tensor.shape)} is all zeros; the harness never times zeros")


def matmul_operands(m: int, k: int, n: int, dtype: torch.dtype, device: str | torch.device, count: int,
                    generator: torch.Generator | None = None) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """`count` pairs of random (m, k) and (k, n) operands in `dtype` on `device`, checked non-zero.
    Drawn in float32 on the CPU from `generator`, so the values do not depend on the device."""
    pairs = []
    for _ in range(count):
        a = torch.randn(m, k, generator=generator).to(device=device, dtype=dtype)
        b = torch.randn(k, n, generator=generator).to(device=device, dtype=dtype)
        refuse_zeros([a, b])
        pairs.append((a, b))
    return pairs


def matmul_seconds(m: int, k: int, n: int, dtype: torch.dtype, device: str = "cuda", warmup: int = 5,
                   repeats: int = 20, rotate: int = 3, clock: Clock | None = None) -> float:
    """The harness's median seconds of one (m, k) @ (k, n) matmul in `dtype` on `device`: CUDA
    events on a GPU (a host clock after a synchronize on the CPU), `rotate` input sets in turn, TF32
    off (adapters/_tf32.py: a TF32 that cannot be turned off raises RuntimeError)."""
    on_cuda = torch.device(device).type == "cuda"
    if clock is None:
        clock = CudaEventClock(device) if on_cuda else PerfCounterClock()
    operands = matmul_operands(m, k, n, dtype, device, rotate, torch.Generator().manual_seed(m * 31 + n))
    out = torch.empty(m, n, dtype=dtype, device=device)

    def run(a: torch.Tensor, b: torch.Tensor) -> None:
        torch.matmul(a, b, out=out)  # into one buffer: the allocator is not timed either

    with float32_matmuls():  # the same math as the student's call, which the adapter runs the same way
        if on_cuda:
            torch.cuda.synchronize(device)
        return median(time_calls(run, operands, clock, warmup, repeats))


def judge_timer(student_seconds: float, harness_seconds: float, flops: float, peak_flop_per_sec: float | None,
                tolerance: float = TIMER_TOLERANCE) -> str | None:
    """Why a student's median time of a matmul of `flops` FLOPs cannot be right, or None when it is
    plausible: the harness measured `harness_seconds` for the same matmul on the same device, whose
    peak is `peak_flop_per_sec` (None: unknown)."""
    if not student_seconds > 0:
        return f"the timer reported {student_seconds!r} s; a matmul takes a positive time"
    achieved = flops / student_seconds
    if peak_flop_per_sec is not None and achieved > peak_flop_per_sec:
        return (f"{achieved / 1e12:.0f} TFLOP/s is above the device's peak of {peak_flop_per_sec / 1e12:.0f} TFLOP/s: "
                f"no GPU runs that fast, so the clock stopped before the matmul finished. CUDA is asynchronous: "
                f"call torch.cuda.synchronize() before reading the clock, at the start and at the end")
    ratio = student_seconds / harness_seconds
    if ratio < 1 / tolerance:
        return (f"{1 / ratio:.1f}x faster than the harness's CUDA-event timing ({harness_seconds * 1e3:.3f} ms): "
                f"the clock stopped before the matmul finished; synchronize before reading the clock")
    if ratio > tolerance:
        return (f"{ratio:.1f}x slower than the harness's CUDA-event timing ({harness_seconds * 1e3:.3f} ms): "
                f"something besides one matmul is inside the clock (the warm-up runs, creating the inputs, "
                f"a total over all trials instead of each trial's own time)")
    return None
