"""Hidden tests, Problem 4: exact integers for huge counts, deep chains of any length, spec-sheet
lookups in every spelling, and the timer under scripted durations with other warm-up and trial
counts. Expected values come from closed forms written here.

PYTEST_DONT_REWRITE: a failure shows the check's message, never this file's source.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from adapters import flops as A
from tests.checks import check_close, check_equal, check_raises
from tests.test_04_flops import check_median_of_trials

pytestmark = pytest.mark.problem(4)
SEE = "handout/04_flops.md"


@pytest.mark.points(1)
def test_counts_are_exact_integers_and_elementwise_defaults_to_one():
    for m, k, n in [(2**30 + 1, 2**30 + 3, 2**20 + 7), (10**6, 1, 10**6)]:
        check_equal(A.run_matmul_flops(m, k, n), 2 * m * k * n, what="matmul FLOPs (exact)", inputs=(m, k, n),
                    see=f"{SEE} §4.1")
    for shape in [(3, 4), (2**27 + 1, 2**27 + 1), (), (5, 0, 2)]:
        check_equal(A.run_elementwise_flops(list(shape)), math.prod(shape), what="elementwise FLOPs with the default "
                    "cost of one FLOP per element", inputs=shape, see=f"{SEE} §4.1")


@pytest.mark.points(1.5)
@given(st.integers(1, 64), st.lists(st.integers(1, 300), min_size=2, max_size=7))
def test_deep_linear_flops_of_any_chain(batch, dims):
    pairs = list(zip(dims, dims[1:]))
    per = [{"forward": 2 * batch * a * b, "backward": 4 * batch * a * b, "total": 6 * batch * a * b} for a, b in pairs]
    expected = {"forward": sum(p["forward"] for p in per), "backward": sum(p["backward"] for p in per),
                "total": sum(p["total"] for p in per), "per_matrix": per}
    check_equal(A.run_deep_linear_flops(batch, dims), expected, what="deep linear model FLOPs (2BP forward, 4BP "
                "backward, per matrix in order)", inputs=f"batch_size={batch}, dims={dims}", see=f"{SEE} §4.2")


@pytest.mark.points(0.5)
@settings(max_examples=25)
@given(st.integers(1, 2**24), st.lists(st.integers(1024, 65536), min_size=2, max_size=129))
@example(2**22, [4096] * 97)  # 96 matrices of d_model 4096, a 4M-token batch
@example(2**24, [65536] * 129)  # 4BP is about 3.6e19, past 2**63
def test_deep_linear_flops_at_real_model_sizes(batch, dims):
    # Widths of real models (d_model 4096 and up), up to 128 matrices, batches of up to 16M tokens:
    # 6BP then passes 2**63, where a count kept in numpy's int64 wraps around and a float rounds.
    parameters = sum(a * b for a, b in zip(dims, dims[1:]))
    got = A.run_deep_linear_flops(batch, dims)
    shown = f"batch_size={batch}, dims of {len(dims)} widths from {min(dims)} to {max(dims)} (P = {parameters})"
    expected = {"forward": 2 * batch * parameters, "backward": 4 * batch * parameters, "total": 6 * batch * parameters}
    check_equal({key: got[key] for key in ("forward", "backward", "total")}, expected,
                what="deep linear model FLOPs at a real model's size (2BP forward, 4BP backward, exact integers)",
                inputs=shown, see=f"{SEE} §4.2")
    check_equal([(f["forward"], f["backward"]) for f in got["per_matrix"]],
                [(2 * batch * a * b, 4 * batch * a * b) for a, b in zip(dims, dims[1:])],
                what="(forward, backward) FLOPs of each matrix, in order", inputs=shown, see=f"{SEE} §4.2")


@pytest.mark.points(1)
@given(st.floats(1e9, 1e24), st.floats(1e-6, 1e6), st.floats(1e12, 1e16), st.floats(1e6, 1e13),
       st.floats(1e9, 1e14), st.integers(1, 100_000), st.floats(0.01, 1.0))
def test_mfu_and_training_days_of_any_numbers(flops, seconds, promised, params, tokens, devices, mfu):
    check_close(A.run_mfu(flops, seconds, promised), flops / seconds / promised, rel=1e-9, what="MFU",
                inputs=f"flops={flops}, seconds={seconds}, promised={promised}", see=f"{SEE} §4.3")
    check_close(A.run_training_days(params, tokens, devices, promised, mfu),
                6 * params * tokens / (promised * mfu * devices) / 86_400, rel=1e-9, what="training days",
                inputs=(params, tokens, devices, promised, mfu), see=f"{SEE} §4.4")


@pytest.mark.points(1)
def test_promised_flop_per_sec_in_other_spellings():
    table = [("NVIDIA A100-PCIE-40GB", "bfloat16", 312e12), ("a100", "float32", 19.5e12),
             ("NVIDIA H100 PCIe", "float16", 989.5e12), ("NVIDIA H100 NVL", "float8_e5m2", 1979e12),
             ("NVIDIA H200 NVL", "float32", 67.5e12), ("Nvidia H200", "float8_e4m3fn", 1979e12)]
    for device, dtype, expected in table:
        check_equal(A.run_promised_flop_per_sec(device, dtype), expected, what="promised dense FLOP/s (the table's "
                    "SXM figures; names in any letter case)", inputs=(device, dtype), see=f"{SEE} §4.3")
    for device, dtype in [("NVIDIA A100-SXM4-80GB", "float8_e5m2"), ("NVIDIA H100 80GB HBM3", "float64"),
                          ("Tesla V100-SXM2-16GB", "float16"), ("", "bfloat16")]:
        check_raises(ValueError, A.run_promised_flop_per_sec, device, dtype,
                     what="a device or dtype missing from the table", see=f"{SEE} §4.3")


# (num_warmup, num_trials, seconds each matmul is made to take): the median of the timed trials is
# the same for every definition of a median, and at least 0.1 s from the first and last trial, their
# mean and sum, and the median with the warm-ups included.
SCRIPTS = [(1, 1, [0.5, 0.05]), (3, 3, [0.3, 0.3, 0.3, 0.5, 0.1, 0.02]), (2, 4, [0.3, 0.3, 0.6, 0.1, 0.1, 0.02])]


@pytest.mark.points(2)
def test_time_matmul_with_other_warmup_and_trial_counts():
    for warmup, trials, delays in SCRIPTS:
        got = A.run_time_matmul(4, 4, 4, "float32", "cpu", warmup, trials, None, delays)
        check_median_of_trials(got, warmup, trials, delays, "§4.5")


@pytest.mark.points(1)
def test_time_matmul_in_float16_with_a_promise():
    m, k, n = 32, 48, 16
    got = A.run_time_matmul(m, k, n, "float16", "cpu", 2, 3, 5e11)
    inputs = f"m={m}, k={k}, n={n}, float16, cpu, num_warmup=2, num_trials=3, promised=5e11"
    check_equal(got["matmul_dtypes"], ["float16"], what="dtypes the matmuls ran in", inputs=inputs, see=f"{SEE} §4.5")
    check_close(got["flop_per_sec"], 2 * m * k * n / got["seconds"], rel=1e-9, what="flop_per_sec = FLOPs / seconds",
                inputs=inputs, see=f"{SEE} §4.5")
    check_close(got["mfu"], got["flop_per_sec"] / 5e11, rel=1e-9, what="mfu = FLOP/s / promised", inputs=inputs,
                see=f"{SEE} §4.5")
