"""The GPU harness's logic, on the CPU: scripted clocks stand in for CUDA events, so warm-up,
rotation, the median and the rules that judge a student's timer are checked without a GPU."""

from __future__ import annotations

import pytest
import torch

from tests import gpu_timing as H


class ScriptedClock:
    """Returns the scripted durations in turn and logs each start and stop in `events`."""

    def __init__(self, durations: list[float], events: list) -> None:
        self.durations, self.events = list(durations), events

    def start(self) -> int:
        self.events.append("start")
        return len(self.events)

    def stop(self, mark: object) -> float:
        self.events.append("stop")
        return self.durations.pop(0)


def test_warm_ups_are_run_but_never_timed():
    # Catches a harness that starts the clock before the warm-ups, or times them and drops them late.
    events: list = []
    times = H.time_calls(lambda x: events.append(("run", x)), [(1,), (2,)], ScriptedClock([5.0, 6.0, 7.0], events),
                         warmup=2, repeats=3)
    assert times == [5.0, 6.0, 7.0]
    assert events[:2] == [("run", 1), ("run", 2)], "the warm-ups come first, outside any clock"
    assert events[2:] == ["start", ("run", 1), "stop", "start", ("run", 2), "stop", "start", ("run", 1), "stop"]


def test_inputs_rotate_through_warm_ups_and_repeats():
    # Catches a harness that times the same operands every repeat (a cache would be measured).
    seen: list = []
    H.time_calls(seen.append, [("a",), ("b",), ("c",)], ScriptedClock([1.0] * 4, []), warmup=2, repeats=4)
    assert seen == ["a", "b", "c", "a", "b", "c"]


@pytest.mark.parametrize("warmup, repeats, inputs", [(0, 3, [(1,)]), (1, 0, [(1,)]), (1, 1, [])])
def test_time_calls_refuses_no_warm_up_no_repeats_or_no_inputs(warmup, repeats, inputs):
    with pytest.raises(ValueError):
        H.time_calls(lambda *a: None, inputs, ScriptedClock([1.0], []), warmup, repeats)


def test_the_host_clock_reads_wall_time_around_a_call():
    # Catches CPU time (time.process_time) in place of a wall clock: a sleep takes no CPU time.
    import time

    seconds = H.time_calls(time.sleep, [(0.02,)], H.PerfCounterClock("cpu"), warmup=1, repeats=2)
    assert all(0.02 <= s < 5 for s in seconds)


def test_median_resists_one_slow_outlier():
    # Catches a mean: one 100 s repeat would move it to 20 s.
    assert H.median([1.0, 1.1, 100.0, 0.9, 1.0]) == 1.0
    assert H.median([1.0, 3.0]) == 2.0
    with pytest.raises(ValueError):
        H.median([])


def test_operands_are_random_and_never_zero():
    pairs = H.matmul_operands(3, 4, 5, torch.bfloat16, "cpu", 3, torch.Generator().manual_seed(0))
    assert [(a.shape, b.shape, a.dtype) for a, b in pairs] == [((3, 4), (4, 5), torch.bfloat16)] * 3
    assert not torch.equal(pairs[0][0], pairs[1][0]), "each input set differs, or rotation measures a cache"
    with pytest.raises(ValueError, match="all zeros"):
        H.refuse_zeros([torch.ones(2), torch.zeros(3, 3)])


def test_matmul_seconds_runs_on_the_cpu_with_a_host_clock():
    seconds = H.matmul_seconds(32, 32, 32, torch.float32, "cpu", warmup=1, repeats=3)
    assert 0 < seconds < 60


PEAK = 989.5e12  # an H100 SXM's bf16 figure
FLOPS = 2 * 8192**3  # 1.1 TFLOP: about 1.5 ms on that device


def test_a_timer_that_does_not_synchronize_is_told_so():
    # What a no-synchronize timer reports: the launch, about 10 us, so 110 PFLOP/s.
    verdict = H.judge_timer(10e-6, 1.5e-3, FLOPS, PEAK)
    assert verdict and "above the device's peak" in verdict and "synchronize" in verdict


def test_a_timer_below_the_peak_but_far_faster_than_the_harness_is_told_to_synchronize():
    verdict = H.judge_timer(0.5e-3, 1.5e-3, FLOPS, None)
    assert verdict and "faster than the harness" in verdict and "synchronize" in verdict


def test_a_timer_that_times_its_warm_ups_is_told_so_with_room_to_spare():
    # The GPU test's own counts: a clock around every warm-up and trial, divided by the trials,
    # reports (warm-ups + trials) / trials of the real time. Catches counts that put that chaff on
    # the bound (5 warm-ups, 10 trials: 1.5x, where launch-free back-to-back kernels let it pass
    # about half the time): it must sit 1.5x past the bound, as the honest timer sits 1.5x inside.
    real = 1.5e-3
    reported = real * (H.STUDENT_WARMUP + H.STUDENT_TRIALS) / H.STUDENT_TRIALS
    verdict = H.judge_timer(reported, real, FLOPS, PEAK)
    assert verdict and "slower than the harness" in verdict and "warm-up" in verdict
    assert reported / real >= 1.5 * H.TIMER_TOLERANCE, (
        f"{H.STUDENT_WARMUP} warm-ups over {H.STUDENT_TRIALS} trials: the chaff reports {reported / real:.2f}x, "
        f"within 1.5x of the {H.TIMER_TOLERANCE}x bound")


@pytest.mark.parametrize("student", [1.5e-3, 1.2e-3, 2.1e-3, 1.12e-3])
def test_an_honest_timer_within_the_tolerance_passes(student):
    # A host clock around synchronize adds microseconds; the band leaves room for clocks and power states.
    assert H.judge_timer(student, 1.5e-3, FLOPS, PEAK) is None


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan")])
def test_a_non_positive_or_nan_time_is_refused(bad):
    assert "positive" in H.judge_timer(bad, 1.5e-3, FLOPS, PEAK)


@pytest.mark.parametrize("name, row", [
    ("NVIDIA H100 80GB HBM3", "H100"), ("NVIDIA H100 PCIe", "H100 PCIE"), ("NVIDIA H100 NVL", "H100 NVL"),
    ("NVIDIA H200", "H200"), ("NVIDIA H200 NVL", "H200 NVL"), ("NVIDIA A100-SXM4-80GB", "A100"),
    ("NVIDIA A100 80GB PCIe", "A100"), ("nvidia h100 pcie", "H100 PCIE"),
])
def test_peak_rows_match_the_names_the_driver_reports(name, row):
    # Catches a table that gives an H100 PCIe the SXM part's higher peak (the PCIe row must match first).
    found = H.peak_row(name)
    assert found is not None and found[0] == row


def test_an_unknown_device_has_no_row_and_a_skip_reason_the_plugin_scores_0_of_0():
    from tests.grading import GPU_SKIP_PREFIX

    assert H.peak_row("NVIDIA L4") is None and H.peak_row("cpu") is None
    assert H.unknown_device_reason("NVIDIA L4").startswith(GPU_SKIP_PREFIX)


@pytest.mark.parametrize("name", ["NVIDIA H800", "NVIDIA H20", "NVIDIA L40S"])
def test_a_timing_test_on_a_device_outside_the_table_skips_as_0_of_0(name):
    # Catches a timing test that looks the device up and raises (a KeyError, or the reference's
    # ValueError from its own table): a TA's H800 would fail the student for the machine.
    from tests.grading import GPU_SKIP_PREFIX

    with pytest.raises(pytest.skip.Exception, match=GPU_SKIP_PREFIX):
        H.peak_or_skip(name, torch.bfloat16)
    assert H.peak_or_skip("NVIDIA H100 PCIe", torch.float32) == 51.2e12
