"""Hidden tests, Problem 6: a single input (d_in = 1), wide and narrow shapes, torch's global
generator when none is given, and the distributions at another size. The statistical checks are
the public suite's: bounds at least 5 standard errors wide, on generators seeded by the test.

PYTEST_DONT_REWRITE: a failure shows the check's message, never this file's source.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters import init as A
from tests.checks import check_close, check_equal, explain
from tests.test_06_init import CUT, check_cut_at_three, check_mean_and_std, largest_gap, share_within

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
    # The cut in the sample's own std, as the public test_trunc_normal_init_is_cut_at_three_standard_deviations:
    # the scale is test_trunc_normal_init_has_the_truncated_std's.
    w = A.run_trunc_normal_init(1, 400_000, seed_everything)
    inputs = "trunc_normal_init(1, 400000): cut at +-3 of its own std (measured in the sample's own std)"
    check_equal((tuple(w.shape), w.dtype), ((1, 400_000), torch.float32), what="shape and dtype", inputs=inputs,
                see=f"{SEE} §6.2")
    check_cut_at_three(w, what="trunc_normal_init", inputs=inputs, see=f"{SEE} §6.2")


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


@pytest.mark.points(0.5)
def test_trunc_normal_init_at_a_moderate_width(seed_everything):
    d_in, d_out = 256, 4096
    w = A.run_trunc_normal_init(d_in, d_out, seed_everything)
    inputs = (f"trunc_normal_init({d_in}, {d_out}): cut at +-3 of its own std (measured in the sample's own std; "
              "the scale is test_trunc_normal_init_has_the_truncated_std's)")
    check_equal((tuple(w.shape), w.dtype), ((d_in, d_out), torch.float32), what="shape and dtype", inputs=inputs,
                see=f"{SEE} §6.2")
    check_cut_at_three(w, what="trunc_normal_init", inputs=inputs, see=f"{SEE} §6.2")


@pytest.mark.points(1)
def test_init_with_a_generator_leaves_the_global_generator_alone(seed_everything):
    # Catches an initializer that reseeds torch's global generator from the one it was given, or
    # draws part of its numbers (a sign, a shuffle) from the global one.
    for kind in ("normal", "trunc_normal"):
        got = A.run_init_generator_use(kind, 32, 16, seed_everything)
        check_equal(got["global_untouched"], True, what="torch's global generator is left as it was when a generator "
                    "is given (every number comes from the generator)", see=f"{SEE} §6.1",
                    inputs=f"three calls of {kind}_init(32, 16, generator)")


@pytest.mark.points(1)
def test_init_continues_from_the_generators_current_state(seed_everything):
    # Catches an initializer that seeds a generator of its own from generator.initial_seed(): the
    # seed it was made with, not where it is now, so every call returns the same weight.
    for kind in ("normal", "trunc_normal"):
        got = A.run_init_generator_use(kind, 32, 16, seed_everything)
        inputs = (f"g = torch.Generator().manual_seed({seed_everything}); {kind}_init(32, 16, g) twice; then a new "
                  f"generator seeded the same that drew 1000 numbers first")
        differ = (not torch.equal(got["first"], got["second"]), not torch.equal(got["first"], got["advanced"]))
        check_equal(differ, (True, True), what="(the second call differs from the first, the advanced generator's "
                    "weight differs from the first): a generator that has moved on gives new numbers", inputs=inputs,
                    see=f"{SEE} §6.1")


def folded_share(a: float, cut: float) -> float:
    """P(|z| > a) for z a standard normal truncated to [-cut, cut] (a < cut)."""
    return 1.0 - share_within(a, cut)


@pytest.mark.points(1)
def test_trunc_normal_init_redraws_its_tails_rather_than_folding_or_clamping_them(seed_everything):
    # The share of values in the last tenth of a standard deviation before the cut-off, and in the last
    # half: a truncated normal puts 0.103% and 0.975% of its mass there (standard errors 1.6e-5 and
    # 4.8e-5 at 4 million draws; the bounds are 5.5 of them). Tails folded back inside (|z| -> 6 - |z|)
    # move both shares by about 47 standard errors, tails clamped to the cut-off by 56 and 172, and
    # tails replaced once by uniform draws inside by 9.4 (the last half) and 5.7.
    # Measured in the sample's own scale, max |w| / 3 (within largest_gap of the sigma a correct one
    # draws with), so that the scale is test_trunc_normal_init_has_the_truncated_std's and the cut's
    # place test_trunc_normal_init_is_cut_at_three_standard_deviations'.
    d_in, d_out = 1024, 4096
    w = A.run_trunc_normal_init(d_in, d_out, seed_everything)
    # Checked before any arithmetic: a broadcast view of any shape crosses the codec over a few bytes, and
    # .double() of 64 million of its elements built 512 MiB a step in the test process.
    check_equal((tuple(w.shape), w.dtype), ((d_in, d_out), torch.float32), what="shape and dtype",
                inputs=f"trunc_normal_init({d_in}, {d_out})", see=f"{SEE} §6.2")
    w = w.double().abs()
    sigma = w.max().item() / CUT
    z, n, gap = w / sigma, w.numel(), largest_gap(w.numel()) / CUT
    inputs = (f"trunc_normal_init({d_in}, {d_out}): {n} values, in units of max |w| / 3 = {sigma:.6g} (this test "
              "assumes the cut at +-3 std of §6.2; see test_trunc_normal_init_is_cut_at_three_standard_deviations)")
    for a in (2.5, 2.9):
        p = folded_share(a, CUT)
        got = (z > a).double().mean().item()
        density = 2 * math.exp(-a * a / 2) / math.sqrt(2 * math.pi) / share_within(CUT)
        bound = 5.5 * math.sqrt(p * (1 - p) / n) + a * gap * density  # the unit's own error widens it a little
        assert abs(got - p) <= bound, explain(
            f"the share of values between {a} and 3 standard deviations from 0: a normal truncated by redrawing what "
            f"falls outside keeps the normal's shape up to the cut-off (folding or clamping the tails piles them "
            f"up there)", inputs=inputs, expected=f"{p:.5f} +- {bound:.5f}", got=got, see=f"{SEE} §6.2")


@pytest.mark.points(0.5)
@settings(max_examples=12)
@given(dim=st.integers(1, 8192), seed=st.integers(0, 2**31 - 1))
def test_trunc_normal_init_for_a_linear_head_of_one_output(dim, seed):
    # As Problem 7's Linear(dim, 1) head calls it: trunc_normal_init(dim, 1) with no generator, after
    # the caller seeded torch. Catches a weight squeezed to (dim,) when d_out is 1, a std taken from
    # d_out (1 for the head), and a draw that ignores the global generator.
    inputs = f"torch.manual_seed({seed}); trunc_normal_init({dim}, 1) with no generator, as Linear({dim}, 1) calls it"
    see = f"{SEE} §6.1, §6.2 (and handout/07_model.md §7.1)"
    first = A.run_init_from_global_seed("trunc_normal", dim, 1, seed)
    check_equal((tuple(first.shape), first.dtype), ((dim, 1), torch.float32), what="shape and dtype", inputs=inputs,
                see=see)
    cut = 3 / math.sqrt(dim)
    largest = first.abs().max().item()
    assert largest <= cut * (1 + 1e-6), explain("max |w|: every value within 3 std = 3 / sqrt(d_in) of 0",
                                                inputs=inputs, expected=f"at most {cut:.6g}", got=largest, see=see)
    again = A.run_init_from_global_seed("trunc_normal", dim, 1, seed)
    check_equal(torch.equal(first, again), True, inputs=inputs, see=see,
                what="the same weight again after torch.manual_seed with the same seed (drawn from the global "
                     "generator)")
