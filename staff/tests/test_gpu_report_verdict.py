"""`staff gpu-report`'s verdict on a student's timer, on the CPU with an H100's scripted numbers: a
bf16 matmul at about 800 TFLOP/s and 30 us of host overhead (a launch and two synchronizes) per call."""

from __future__ import annotations

import pytest

from staff.gpu.report import KERNEL_OVER_OVERHEAD, verdict

PEAK = 989.5e12  # H100 SXM, bf16 dense
ACHIEVED = 800e12  # a large bf16 product on that device, as published
OVERHEAD = 30e-6


def kernel_seconds(size: int) -> float:
    return 2 * size**3 / ACHIEVED


@pytest.mark.parametrize("size", [1024, 2048])
def test_an_honest_timer_at_a_launch_bound_size_is_not_called_slow(size):
    # Catches a report that judges every size: an honest host-clock timer reads the kernel plus the
    # overhead, 3x to 12x the CUDA events' time at these sizes, and was called "slower".
    honest = kernel_seconds(size) + OVERHEAD
    said = verdict(honest, kernel_seconds(size), OVERHEAD, 2 * size**3, PEAK)
    assert said.startswith("not judged: launch-bound"), said


def test_where_the_kernel_dominates_each_timer_gets_the_harnesss_verdict():
    size = 8192
    kernel, flops = kernel_seconds(size), 2 * size**3
    assert kernel >= KERNEL_OVER_OVERHEAD * OVERHEAD, "8192^3 bf16 is judged on an H100"
    assert verdict(kernel + OVERHEAD, kernel, OVERHEAD, flops, PEAK) == "plausible"
    assert "slower" in verdict(3 * kernel, kernel, OVERHEAD, flops, PEAK)  # warm-ups inside the clock
    assert "above the device's peak" in verdict(10e-6, kernel, OVERHEAD, flops, PEAK)  # no synchronize
