"""Problem 4: FLOPs, MFU and timing. Expected counts come from closed forms written here and from
torch's FlopCounterMode on real forward and backward passes."""

from __future__ import annotations

import math
import statistics

import pytest
import torch

from adapters import flops as A
from adapters._instrument import FlopCounterMode
from tests import gpu_timing as H
from tests.checks import VALID_FIRST, check_close, check_equal, check_raises, explain
from tests.gpu_figures import record_figure

pytestmark = pytest.mark.problem(4)
SEE = "handout/04_flops.md"


@pytest.mark.points(1)
def test_matmul_and_elementwise_flops():
    for m, k, n in [(2, 3, 4), (1, 1, 1), (4096, 4096, 4096)]:
        check_equal(A.run_matmul_flops(m, k, n), 2 * m * k * n, what="matmul FLOPs", inputs=(m, k, n),
                    see=f"{SEE} §4.1")
    for shape, per in [((3, 4), 1), ((2, 5, 7), 3), ((), 2)]:
        check_equal(A.run_elementwise_flops(list(shape), per), per * math.prod(shape),
                    what="elementwise FLOPs", inputs=(shape, per), see=f"{SEE} §4.1")


@pytest.mark.points(2)
def test_linear_layer_flops():
    for batch, d_in, d_out in [(2, 4, 4), (8, 16, 3), (1, 5, 1)]:
        expected = {"forward": 2 * batch * d_in * d_out, "backward": 4 * batch * d_in * d_out,
                    "total": 6 * batch * d_in * d_out}
        check_equal(A.run_linear_layer_flops(batch, d_in, d_out), expected, what="one weight matrix's training FLOPs",
                    inputs=f"batch_size={batch}, d_in={d_in}, d_out={d_out}", see=f"{SEE} §4.2")


@pytest.mark.points(2)
def test_deep_linear_flops_closed_form():
    batch, D, K = 5, 6, 3  # x (B x D) -> w1 (D x D) -> w2 (D x K), the lecture's two-layer example
    got = A.run_deep_linear_flops(batch, [D, D, K])
    expected = {
        "forward": 2 * batch * D * D + 2 * batch * D * K,
        "backward": 4 * batch * D * D + 4 * batch * D * K,
        "total": 6 * batch * (D * D + D * K),
        "per_matrix": [
            {"forward": 2 * batch * D * D, "backward": 4 * batch * D * D, "total": 6 * batch * D * D},
            {"forward": 2 * batch * D * K, "backward": 4 * batch * D * K, "total": 6 * batch * D * K},
        ],
    }
    check_equal(got, expected, what="deep linear model FLOPs", inputs=f"batch_size={batch}, dims={[D, D, K]}",
                see=f"{SEE} §4.2")


@pytest.mark.points(2)
@pytest.mark.parametrize("batch, dims", [(4, [8, 8, 8, 2]), (3, [5, 7, 2, 9]), (2, [16, 1])])
def test_deep_linear_flops_match_torch_flop_counter(batch, dims):
    # Run the chain forward and backward (input requiring grad, as the 4*B*P rule assumes) and let
    # PyTorch count the matmul FLOPs it actually did.
    x = torch.randn(batch, dims[0], requires_grad=True)
    weights = [torch.randn(d_in, d_out, requires_grad=True) for d_in, d_out in zip(dims, dims[1:])]
    with FlopCounterMode(display=False) as forward_counter:
        h = x
        for w in weights:
            h = h @ w
    with FlopCounterMode(display=False) as backward_counter:
        h.sum().backward()
    got = A.run_deep_linear_flops(batch, dims)
    inputs = f"batch_size={batch}, dims={dims}"
    check_equal(got["forward"], forward_counter.get_total_flops(), what="forward FLOPs (FlopCounterMode)",
                inputs=inputs, see=f"{SEE} §4.2")
    check_equal(got["backward"], backward_counter.get_total_flops(), what="backward FLOPs (FlopCounterMode)",
                inputs=inputs, see=f"{SEE} §4.2")
    check_equal(len(got["per_matrix"]), len(weights), what="one entry per weight matrix", inputs=inputs,
                see=f"{SEE} §4.2")


@pytest.mark.points(1)
def test_mfu():
    check_close(A.run_mfu(6e15, 10.0, 989.5e12), 6e15 / 10.0 / 989.5e12, rel=1e-12, what="MFU",
                inputs="flops=6e15, seconds=10, promised=989.5e12", see=f"{SEE} §4.3")
    check_close(A.run_mfu(2 * 4096**3, 0.5e-3, 67.5e12), 2 * 4096**3 / 0.5e-3 / 67.5e12, rel=1e-12, what="MFU",
                inputs="flops=2*4096**3, seconds=0.5e-3, promised=67.5e12", see=f"{SEE} §4.3")


@pytest.mark.points(2)
def test_promised_flop_per_sec():
    table = [
        ("NVIDIA A100-SXM4-80GB", "float32", 19.5e12), ("NVIDIA A100-SXM4-40GB", "bfloat16", 312e12),
        ("NVIDIA A100 80GB PCIe", "float16", 312e12), ("NVIDIA H100 80GB HBM3", "float32", 67.5e12),
        ("NVIDIA H100 80GB HBM3", "bfloat16", 989.5e12), ("nvidia h100", "float16", 989.5e12),
        ("NVIDIA H100 80GB HBM3", "float8_e4m3fn", 1979e12), ("NVIDIA H200", "bfloat16", 989.5e12),
        ("NVIDIA H200", "float8_e5m2", 1979e12),
    ]
    for device, dtype, expected in table:
        check_equal(A.run_promised_flop_per_sec(device, dtype), expected, what="promised dense FLOP/s",
                    inputs=(device, dtype), see=f"{SEE} §4.3")


@pytest.mark.points(1)
def test_promised_flop_per_sec_rejects_unknown():
    check_equal(A.run_promised_flop_per_sec("NVIDIA H100 80GB HBM3", "bfloat16"), 989.5e12, see=f"{SEE} §4.3",
                inputs=("NVIDIA H100 80GB HBM3", "bfloat16"), what=VALID_FIRST)
    for device, dtype in [("NVIDIA GeForce RTX 4090", "bfloat16"), ("cpu", "float32"),
                          ("NVIDIA A100-SXM4-80GB", "float8_e4m3fn"), ("NVIDIA H100 80GB HBM3", "int8")]:
        check_raises(ValueError, A.run_promised_flop_per_sec, device, dtype,
                     what="a device or dtype missing from the table", see=f"{SEE} §4.3")


@pytest.mark.points(2)
def test_training_days():
    got = A.run_training_days(70e9, 15e12, 1024, 989.5e12, 0.5)
    check_close(got, 143.9, rel=1e-3, what="days to train 70e9 parameters on 15e12 tokens on 1024 H100s at MFU 0.5",
                inputs="(70e9, 15e12, 1024, 989.5e12, 0.5)", see=f"{SEE} §4.4")
    for args in [(1e9, 2e10, 8, 312e12, 0.4), (175e9, 300e9, 1024, 19.5e12, 0.3)]:
        P, T, N, F, U = args
        check_close(A.run_training_days(*args), 6 * P * T / (F * U * N) / 86400, rel=1e-9, what="training days",
                    inputs=args, see=f"{SEE} §4.4")


@pytest.mark.points(2)
def test_time_matmul_on_cpu_reports_consistent_numbers():
    m, k, n = 64, 96, 32
    got = A.run_time_matmul(m, k, n, "float32", "cpu", 3, 4)
    inputs = f"m={m}, k={k}, n={n}, float32, cpu, num_warmup=3, num_trials=4"
    assert got["matmuls"] >= 3 + 4, explain("time_matmul must run num_warmup + num_trials matmuls", inputs=inputs,
                                            expected=">= 7 matmuls", got=got["matmuls"], see=f"{SEE} §4.5")
    assert got["seconds"] > 0, explain("seconds per matmul", inputs=inputs, expected="> 0", got=got["seconds"],
                                       see=f"{SEE} §4.5")
    check_close(got["flop_per_sec"], 2 * m * k * n / got["seconds"], rel=1e-9, what="flop_per_sec = FLOPs / seconds",
                inputs=inputs, see=f"{SEE} §4.5")
    check_equal(got["mfu"], None, what="mfu without a promised figure on CPU", inputs=inputs, see=f"{SEE} §4.5")
    with_promise = A.run_time_matmul(m, k, n, "bfloat16", "cpu", 1, 3, 1e12)
    inputs = f"m={m}, k={k}, n={n}, bfloat16, cpu, num_warmup=1, num_trials=3, promised=1e12"
    check_close(with_promise["mfu"], with_promise["flop_per_sec"] / 1e12, rel=1e-9, what="mfu = FLOP/s / promised",
                inputs=inputs, see=f"{SEE} §4.5")
    check_equal(with_promise["matmul_dtypes"], ["bfloat16"], what="dtypes the timed matmuls ran in", inputs=inputs,
                see=f"{SEE} §4.5")


# Seconds each matmul of a time_matmul(num_warmup=2, num_trials=5) call is made to take: two slow
# warm-ups, then trials whose median (0.05) is at least 0.1 s from the first, last, largest, mean
# (0.154) and sum (0.77) of the trials, and from the median with the warm-ups included (0.3).
WARMUP_DELAYS = [0.4, 0.4]
TRIAL_DELAYS = [0.3, 0.03, 0.05, 0.04, 0.35]
# A correct timer reports the median of what the timed matmuls really took (a sleep overruns on a busy
# machine, and the instrument measures that too) plus its own small overhead around each matmul.
TIMER_SLACK_S = 0.05


def check_median_of_trials(got: dict, num_warmup: int, num_trials: int, delays: list[float], section: str) -> None:
    """The reported seconds: the median of the timed matmuls' real durations, warm-ups excluded."""
    real = got["matmul_seconds"]
    inputs = f"num_warmup={num_warmup}, num_trials={num_trials}; the matmuls were made to take {delays} s in turn"
    check_equal(len(real), num_warmup + num_trials, what="matmuls run: exactly num_warmup warm-ups, then one per "
                "trial", inputs=inputs, see=f"{SEE} {section}")
    timed = sorted(real[num_warmup:])
    # Any definition of the median of an even count (the lower or upper middle value, or their mean)
    # lies between the two middle values: the durations measured here are not the scripted ones.
    lowest, highest = timed[(len(timed) - 1) // 2], timed[len(timed) // 2]
    median = statistics.median(timed)
    assert lowest <= got["seconds"] < highest + TIMER_SLACK_S, explain(
        "seconds: the median over the timed trials, warm-ups excluded", inputs=inputs,
        expected=f"about {median:.3f} s (the timed matmuls really took {[round(t, 3) for t in real]} s)",
        got=got["seconds"], see=f"{SEE} {section}")


@pytest.mark.points(2)
def test_time_matmul_reports_the_median_of_the_timed_trials():
    got = A.run_time_matmul(4, 4, 4, "float32", "cpu", 2, 5, None, WARMUP_DELAYS + TRIAL_DELAYS)
    check_median_of_trials(got, 2, 5, WARMUP_DELAYS + TRIAL_DELAYS, "§4.5")


# Seconds each op that draws random numbers (torch.randn and the like) is made to take in the next test:
# a timer that draws its inputs inside the clock reports at least two of them more per trial.
RANDOM_DRAW_DELAY_S = 0.1


@pytest.mark.points(1)
def test_time_matmul_draws_its_inputs_outside_the_timed_region():
    got = A.run_time_matmul(8, 8, 8, "float32", "cpu", 1, 3, None, None, RANDOM_DRAW_DELAY_S)
    inputs = (f"time_matmul(8, 8, 8, num_warmup=1, num_trials=3) with every random draw made to take "
              f"{RANDOM_DRAW_DELAY_S} s (the matmuls take microseconds)")
    slowest = max(got["matmul_seconds"], default=0.0)
    assert got["seconds"] < slowest + TIMER_SLACK_S, explain(
        "seconds per matmul: the inputs are built before the clock starts, so drawing them is not timed",
        inputs=inputs, expected=f"below {slowest + TIMER_SLACK_S:.3f} s (the slowest matmul took {slowest:.2e} s)",
        got=f"{got['seconds']:.3f} s ({got['random_draws']} random draws in the call)", see=f"{SEE} §4.5")


# The GPU part (§4.6): the student's timer against the harness in tests/gpu_timing.py, on the device present.
GPU_WARMUP, GPU_TRIALS = H.STUDENT_WARMUP, H.STUDENT_TRIALS
# A product that fills an H100 in bfloat16 (1.1 TFLOP, about 1.5 ms), and one in float32 (0.14 TFLOP, about 2.5 ms).
GPU_PRODUCTS = [(8192, "bfloat16"), (4096, "float32")]


def gpu_call(size: int, dtype: str, promised: float | None = None) -> tuple[dict, str]:
    """The student's time_matmul of a size^3 product on the GPU, and the call as a student would write it."""
    got = A.run_time_matmul(size, size, size, dtype, "cuda", GPU_WARMUP, GPU_TRIALS, promised)
    given = "" if promised is None else f", promised={promised:.4g}"
    return got, (f"time_matmul({size}, {size}, {size}, torch.{dtype}, 'cuda', num_warmup={GPU_WARMUP}, "
                 f"num_trials={GPU_TRIALS}{given}) on {torch.cuda.get_device_name()}")


@pytest.mark.cuda
@pytest.mark.points(2)
@pytest.mark.parametrize("size, dtype", GPU_PRODUCTS)
def test_time_matmul_on_gpu_agrees_with_cuda_events(size, dtype, record_property):
    # A timer that does not synchronize reports the launch (microseconds): above the device's peak.
    # One that times its warm-ups, or the total of the trials, reports a multiple of the real time
    # (3x with these counts). Best of two tries: a moment's load on a shared GPU must not fail a
    # correct timer; the wrong ones above are wrong every time. The promised figure is the tests'
    # own, so that this test judges the timer alone, not the §4.3 table.
    peak = H.peak_or_skip(torch.cuda.get_device_name(), getattr(torch, dtype))
    for _ in range(2):
        got, inputs = gpu_call(size, dtype, peak)
        harness = H.matmul_seconds(size, size, size, getattr(torch, dtype), "cuda")
        verdict = H.judge_timer(got["seconds"], harness, 2 * size**3, peak)
        if verdict is None:
            break
    record_figure(record_property, "time_matmul's seconds / the harness's", got["seconds"] / harness,
                  1 / H.TIMER_TOLERANCE, H.TIMER_TOLERANCE, f"harness {harness * 1e3:.3f} ms")
    assert verdict is None, explain(
        f"seconds: the median time of one matmul, within {H.TIMER_TOLERANCE:g}x of the tests' own timing",
        inputs=inputs, expected=f"about {harness:.6f} s (CUDA events after warm-up, rotated inputs, median; TF32 off)",
        got=f"{got['seconds']:.6f} s: {verdict}", see=f"{SEE} §4.5 and §4.6")


@pytest.mark.cuda
@pytest.mark.points(1)
def test_bf16_matmul_mfu_on_gpu_is_plausible(record_property):
    name = torch.cuda.get_device_name()
    H.peak_or_skip(name, torch.bfloat16)
    got, inputs = gpu_call(8192, "bfloat16")
    promised = A.run_promised_flop_per_sec(name, "bfloat16")
    check_close(got["mfu"], got["flop_per_sec"] / promised, rel=1e-6, see=f"{SEE} §4.5", inputs=inputs,
                what=f"mfu: flop_per_sec / promised_flop_per_sec({name!r}, torch.bfloat16)")
    low, high = H.MFU_BAND
    record_figure(record_property, "MFU of 8192^3 bf16", got["mfu"], low, high,
                  f"{got['flop_per_sec'] / 1e12:.0f} TFLOP/s against {promised / 1e12:.1f} promised")
    assert low <= got["mfu"] <= high, explain(
        "MFU of a large bfloat16 matmul: above 1 means the clock stopped early (no synchronize); far below, "
        "that more than the matmul was timed", inputs=inputs, expected=f"between {low} and {high}", got=got["mfu"],
        see=f"{SEE} §4.6")


@pytest.mark.cuda
@pytest.mark.points(1)
def test_bf16_matmul_beats_float32_on_gpu(record_property):
    # Tensor cores: with TF32 off (the adapter turns it off), float32 matmuls run without them. The
    # 4x bound is reasoned from the known devices' figures, so an unknown device skips.
    name = torch.cuda.get_device_name()
    bf16, inputs = gpu_call(4096, "bfloat16", H.peak_or_skip(name, torch.bfloat16))
    fp32, _ = gpu_call(4096, "float32", H.peak_or_skip(name, torch.float32))
    ratio = bf16["flop_per_sec"] / fp32["flop_per_sec"]
    record_figure(record_property, "bf16 FLOP/s / fp32 FLOP/s at 4096^3", ratio, H.BF16_OVER_FP32, None,
                  f"{bf16['flop_per_sec'] / 1e12:.0f} against {fp32['flop_per_sec'] / 1e12:.1f} TFLOP/s")
    assert ratio >= H.BF16_OVER_FP32, explain(
        "FLOP/s of bfloat16 over float32 for the same 4096^3 matmul, TF32 off", inputs=inputs.replace(
            "torch.bfloat16", "torch.bfloat16 and torch.float32"), expected=f">= {H.BF16_OVER_FP32:g}",
        got=f"{ratio:.2f} ({bf16['flop_per_sec'] / 1e12:.1f} against {fp32['flop_per_sec'] / 1e12:.1f} TFLOP/s)",
        see=f"{SEE} §4.6")
