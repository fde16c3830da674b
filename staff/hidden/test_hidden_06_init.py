"""Hidden tests, Problem 6: a single input (d_in = 1), wide and narrow shapes, torch's global
generator when none is given, and the distributions at another size. The statistical checks are
the public suite's: bounds at least 5 standard errors wide, on generators seeded by the test.

PYTEST_DONT_REWRITE: a failure shows the check's message, never this file's source.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from adapters import init as A
from tests.checks import check_close, check_equal, explain
from tests.test_06_init import check_mean_and_std, check_shape, truncated_std

pytestmark = pytest.mark.problem(6)
SEE = "handout/06_init.md"


@pytest.mark.points(1)
@given(st.integers(1, 10**7))
def test_init_std_of_any_width(d_in):
    check_close(A.run_init_std(d_in), 1 / math.sqrt(d_in), rel=1e-12, what="init std = 1/sqrt(d_in)",
                inputs=f"d_in={d_in}", see=f"{SEE} §6.1")


@pytest.mark.points(1)
def test_normal_init_of_a_single_input(seed_everything):
    w = A.run_normal_init(1, 400_000, seed_everything)
    inputs = "normal_init(1, 400000): std 1"
    check_equal((tuple(w.shape), w.dtype), ((1, 400_000), torch.float32), what="shape and dtype", inputs=inputs,
                see=f"{SEE} §6.1")
    check_mean_and_std(w, 1.0, what="normal_init", inputs=inputs, see=f"{SEE} §6.1")
    for d_in, d_out in [(7, 1), (1, 1), (3, 5)]:
        w = A.run_normal_init(d_in, d_out, seed_everything)
        check_equal((tuple(w.shape), w.dtype), ((d_in, d_out), torch.float32), what="shape and dtype",
                    inputs=f"normal_init({d_in}, {d_out})", see=f"{SEE} §6.1")


@pytest.mark.points(1)
def test_trunc_normal_init_of_a_single_input(seed_everything):
    w = A.run_trunc_normal_init(1, 400_000, seed_everything)
    inputs = "trunc_normal_init(1, 400000): std 1, cut at +-3"
    largest = w.abs().max().item()
    assert largest <= 3.0 * (1 + 1e-6), explain("every value within 3 standard deviations", inputs=inputs,
                                                expected="|w| <= 3", got=f"max |w| = {largest}", see=f"{SEE} §6.2")
    check_mean_and_std(w, truncated_std(3.0), what="trunc_normal_init", inputs=inputs, see=f"{SEE} §6.2")
    check_shape(w, 1.0, 3.0, what="trunc_normal_init", inputs=inputs, see=f"{SEE} §6.2")


@pytest.mark.points(1)
def test_init_without_a_generator_draws_from_the_global_one(seed_everything):
    for kind in ("normal", "trunc_normal"):
        first = A.run_init_from_global_seed(kind, 32, 16, seed_everything)
        again = A.run_init_from_global_seed(kind, 32, 16, seed_everything)
        other = A.run_init_from_global_seed(kind, 32, 16, seed_everything + 1)
        inputs = f"torch.manual_seed(s); {kind}_init(32, 16) with no generator, for s, s and s + 1"
        assert torch.equal(first, again) and not torch.equal(first, other), explain(
            "with no generator, the weight comes from torch's global generator (the same seed gives the same "
            "weight)", inputs=inputs, expected="equal, then different",
            got=f"{torch.equal(first, again)}, {not torch.equal(first, other)}", see=f"{SEE} §6.1")


@pytest.mark.points(1)
def test_trunc_normal_init_at_a_moderate_width(seed_everything):
    d_in, d_out = 256, 4096
    std = 1 / math.sqrt(d_in)
    w = A.run_trunc_normal_init(d_in, d_out, seed_everything)
    inputs = f"trunc_normal_init({d_in}, {d_out}): std 1/16, cut at +-3/16"
    check_equal((tuple(w.shape), w.dtype), ((d_in, d_out), torch.float32), what="shape and dtype", inputs=inputs,
                see=f"{SEE} §6.2")
    assert w.abs().max().item() <= 3 * std * (1 + 1e-6), explain(
        "every value within 3 standard deviations", inputs=inputs, expected=f"|w| <= {3 * std}",
        got=f"max |w| = {w.abs().max().item()}", see=f"{SEE} §6.2")
    check_mean_and_std(w, truncated_std(3.0) * std, what="trunc_normal_init", inputs=inputs, see=f"{SEE} §6.2")
    check_shape(w, std, 3.0, what="trunc_normal_init", inputs=inputs, see=f"{SEE} §6.2")
