"""Problem 6: initialization. The checks are statistical but deterministic: each test draws from
generators seeded by the test's id, on samples large enough that every bound below sits at least
5.5 standard errors away from what a correct implementation produces: a correct implementation fails a
test's bounds with a chance below 2e-7 per run, whatever the seed."""

from __future__ import annotations

import math

import pytest
import torch

from adapters import init as A
from tests.checks import check_close, check_equal, check_form, explain

pytestmark = pytest.mark.problem(6)
SEE = "handout/06_init.md"

SIGMAS = 5.5  # every bound is this many standard errors wide (a normal passes it but for 3.8e-8)


def normal_pdf(z: float) -> float:
    return math.exp(-z * z / 2) / math.sqrt(2 * math.pi)


def truncated_std(cut: float) -> float:
    """Std of a standard normal truncated to [-cut, cut] (closed form): 0.98658... at cut = 3."""
    mass = math.erf(cut / math.sqrt(2))
    return math.sqrt(1 - 2 * cut * normal_pdf(cut) / mass)


def check_mean_and_std(w: torch.Tensor, std: float, *, what: str, inputs: str, see: str) -> None:
    """Sample mean within SIGMAS standard errors of 0, and sample std within SIGMAS of `std`.

    The standard error of a sample std is std * sqrt((kurtosis - 1) / (4n)); a normal's kurtosis is
    3 and a truncated normal's is lower, so std / sqrt(2n) is safe for both."""
    n = w.numel()
    values = w.double()
    mean, got_std = values.mean().item(), values.std().item()
    mean_bound = SIGMAS * std / math.sqrt(n)
    assert abs(mean) <= mean_bound, explain(f"{what}: mean", inputs=inputs, expected=f"within {mean_bound:.2e} of 0",
                                            got=mean, see=see)
    std_bound = SIGMAS * std / math.sqrt(2 * n)
    assert abs(got_std - std) <= std_bound, explain(
        f"{what}: standard deviation", inputs=inputs, expected=f"{std:.6f} +- {std_bound:.1e}", got=got_std, see=see)


def share_within(a: float, cut: float = math.inf) -> float:
    """P(|z| < a) for a standard normal z, or for one truncated to [-cut, cut]."""
    inside = math.erf(min(a, cut) / math.sqrt(2))
    return inside / (1.0 if math.isinf(cut) else math.erf(cut / math.sqrt(2)))


def check_shape(w: torch.Tensor, std: float, cut: float, *, what: str, inputs: str, see: str,
                scale_error: float = 0.0) -> None:
    """The share of values near 0 and beyond 1 and 2 standard deviations, each within SIGMAS standard
    errors of the normal's (truncated at `cut`). A right std with the wrong shape fails here: a
    uniform distribution, or outliers set to 0. `scale_error`: how far off (relative) `std` may be
    when it is estimated from the sample itself; each bound widens by what that moves the share."""
    z = (w.double() / std).abs()
    n = z.numel()
    for a in (0.1, 1.0, 2.0):
        p = share_within(a, cut)
        got = (z < a).double().mean().item()
        density = 2 * normal_pdf(a) / share_within(cut)  # of |z| at a; share_within(inf) is 1
        bound = SIGMAS * math.sqrt(p * (1 - p) / n) + a * scale_error * density
        assert abs(got - p) <= bound, explain(
            f"{what}: the share of values within {a} std of 0", inputs=inputs, expected=f"{p:.5f} +- {bound:.5f}",
            got=got, see=see)


STD_PREMISE = "this test assumes the std of §6.1 (init_std(d_in) = 1/sqrt(d_in)); see test_init_std"
CUT = 3.0  # §6.2: the truncated normal is cut at +-3 of its own std


def largest_gap(n: int) -> float:
    """How far below the cut (in units of the std before truncation) the largest |w| of n draws of a
    normal truncated at +-CUT may fall, but for a chance below a normal's beyond SIGMAS: each draw
    lands within g of a cut-off with probability 2 * g * density at the cut, so all n miss it with
    probability exp(-2 n g density)."""
    density = normal_pdf(CUT) / share_within(CUT)
    return -math.log(math.erfc(SIGMAS / math.sqrt(2))) / (2 * n * density)


def check_cut_at_three(w: torch.Tensor, *, what: str, inputs: str, see: str) -> None:
    """A normal truncated at +-3 of its std sigma, measured in the sample's own scale, whatever that
    scale is (the scale is test_trunc_normal_init_has_the_truncated_std's to check): max |w| / std(w)
    is 3 / 0.98658 = 3.0408 (clipping instead of redrawing gives 3.0075, no cut at all about 4.9 on a
    million draws, a cut at 2.5 sigma 2.62); then the mean and the shape, in units of max |w| / 3, the
    sigma the cut implies (within largest_gap of the right one)."""
    values = w.double()
    n = values.numel()
    largest, got_std = values.abs().max().item(), values.std().item()
    ratio, expected = largest / got_std, CUT / truncated_std(CUT)
    gap = largest_gap(n) / CUT  # relative: how far below the cut the largest draw may fall
    # The sample std is off by at most SIGMAS / sqrt(2n) relative (see check_mean_and_std); float32 by 1e-6.
    low, high = expected * (1 - SIGMAS / math.sqrt(2 * n) - gap), expected * (1 + SIGMAS / math.sqrt(2 * n)) + 1e-6
    assert low <= ratio <= high, explain(
        f"{what}: max |w| / std(w), the cut in units of the sample's own std (a normal cut at +-3 sigma has "
        f"std 0.98658 sigma, so its largest values sit at 3 / 0.98658 of its std)", inputs=inputs,
        expected=f"between {low:.4f} and {high:.4f}", got=f"{ratio:.4f} (max |w| = {largest:.6g}, std {got_std:.6g})",
        see=see)
    sigma = largest / CUT
    mean_bound = SIGMAS * sigma / math.sqrt(n)
    assert abs(values.mean().item()) <= mean_bound, explain(
        f"{what}: mean", inputs=inputs, expected=f"within {mean_bound:.2e} of 0", got=values.mean().item(), see=see)
    check_shape(w, sigma, CUT, what=what, inputs=inputs + f" (in units of max |w| / 3 = {sigma:.6g})", see=see,
                scale_error=gap)


def own_std(d_in: int) -> float:
    """The student's own init_std(d_in): the unit the truncation tests measure in, so that a wrong
    std fails test_init_std alone. Where it is no positive, finite Python float (it raised, or returned
    a tensor), the right 1/sqrt(d_in) instead: that too is test_init_std's to report, not theirs."""
    try:
        std = A.run_init_std(d_in)
    except Exception:  # noqa: BLE001 - any failure of init_std is test_init_std's to report
        return 1 / math.sqrt(d_in)
    return std if type(std) in (float, int) and math.isfinite(std) and std > 0 else 1 / math.sqrt(d_in)


@pytest.mark.points(1)
def test_init_std():
    for d_in in [1, 4, 1000, 16384]:
        check_close(A.run_init_std(d_in), 1 / math.sqrt(d_in), rel=1e-9, what="init std", inputs=f"d_in={d_in}",
                    see=f"{SEE} §6.1")


@pytest.mark.points(2)
def test_normal_init_has_std_one_over_sqrt_d_in(seed_everything):
    d_in, d_out = 4096, 256  # about a million draws
    w = A.run_normal_init(d_in, d_out, seed_everything)
    inputs = f"d_in={d_in}, d_out={d_out}"
    check_equal((tuple(w.shape), w.dtype), ((d_in, d_out), torch.float32), what="shape and dtype", inputs=inputs,
                see=f"{SEE} §6.1")
    # This test's property is the std itself: a wrong init_std fails it too, and its message says so.
    see = f"{SEE} §6.1 ({STD_PREMISE})"
    check_mean_and_std(w, 1 / math.sqrt(d_in), what="normal_init", inputs=inputs, see=see)
    check_shape(w, 1 / math.sqrt(d_in), math.inf, what="normal_init", inputs=inputs, see=see)


@pytest.mark.points(1)
@pytest.mark.parametrize("init", ["normal", "trunc_normal"])
def test_init_draws_from_the_generator(init, seed_everything):
    run = A.run_normal_init if init == "normal" else A.run_trunc_normal_init
    first, again, other = run(64, 32, seed_everything), run(64, 32, seed_everything), run(64, 32, seed_everything + 1)
    inputs = f"{init}_init(64, 32, generator) with generators seeded {seed_everything}, {seed_everything}, " \
             f"{seed_everything + 1}"
    assert torch.equal(first, again), explain("the same generator seed must give the same weight", inputs=inputs,
                                              expected="equal weights", got="different weights", see=f"{SEE} §6.1")
    assert not torch.equal(first, other), explain("different generator seeds must give different weights",
                                                  inputs=inputs, expected="different weights", got="equal weights",
                                                  see=f"{SEE} §6.1")


@pytest.mark.points(2)
def test_trunc_normal_init_is_cut_at_three_standard_deviations(seed_everything):
    # At d_in = 16384, the lecture's `a=-3, b=3` would cut at 384 standard deviations: nothing.
    # Measured in the sample's own std: the cut is this test's property, the scale
    # test_trunc_normal_init_has_the_truncated_std's, so a wrong std does not fail this test as well.
    d_in, d_out = 16384, 64
    w = A.run_trunc_normal_init(d_in, d_out, seed_everything)
    inputs = f"d_in={d_in}, d_out={d_out} (the cut measured in the sample's own std, whatever its scale)"
    check_equal((tuple(w.shape), w.dtype), ((d_in, d_out), torch.float32), what="shape and dtype", inputs=inputs,
                see=f"{SEE} §6.2")
    check_cut_at_three(w, what="trunc_normal_init (a normal truncated at +-3 std)", inputs=inputs, see=f"{SEE} §6.2")


@pytest.mark.points(1)
def test_trunc_normal_init_has_the_truncated_std(seed_everything):
    # The one test of trunc_normal_init's scale: 0.98658 * init_std(d_in), in the student's own
    # init_std (whether that is 1/sqrt(d_in) is test_init_std's). d_in != d_out: scaling by the
    # fan-out, init_std(d_out), fails here. Clipping (0.9975) and dividing the shrink back out (1.0)
    # fail here too.
    d_in, d_out = 4096, 256  # about a million draws
    std = own_std(d_in)
    w = A.run_trunc_normal_init(d_in, d_out, seed_everything)
    inputs = f"d_in={d_in}, d_out={d_out} (in units of your init_std({d_in}) = {std:.6g}; 1/64 is right)"
    check_mean_and_std(w, truncated_std(CUT) * std, what="trunc_normal_init: a normal of std init_std(d_in), "
                       "truncated at +-3 of it, has std 0.98658 * init_std(d_in) (scaled by init_std(d_in), the "
                       "fan-in)", inputs=inputs, see=f"{SEE} §6.1 and §6.2")


@pytest.mark.points(1)
@pytest.mark.parametrize("d_in", [64, 4096])
def test_trunc_normal_init_keeps_outputs_order_one(d_in, seed_everything):
    # x comes from a generator of its own, seeded apart from the weight's: drawn from torch's global
    # generator, which seed_everything seeds with the weight's seed, x's numbers and the weight's came
    # from one stream, and a correct trunc_normal_init that draws a (d_out, d_in) tensor and transposes it
    # gave x rows that match its columns (a variance of about 8 at d_in = 4096).
    x = torch.randn(512, d_in, generator=torch.Generator().manual_seed(seed_everything + 1))
    w = A.run_trunc_normal_init(d_in, 256, seed_everything)
    # The weight's form first: x @ w of a (64, 507904) view claiming 64 MiB past its storage is 992 MiB.
    check_form(w, "Tensor", (d_in, 256), torch.float32, what="the weight: (type, shape, dtype)",
               inputs=f"trunc_normal_init({d_in}, 256)", see=f"{SEE} §6.1")
    y = x @ w
    variance = y.var().item()
    # Expected 0.9866^2 = 0.973; weight std 1 would give d_in, std 1/d_in would give 1/d_in.
    assert 0.85 <= variance <= 1.1, explain(
        "variance of x @ w for x ~ N(0, 1)", inputs=f"x (512, {d_in}), w = trunc_normal_init({d_in}, 256)",
        expected="about 0.97 (between 0.85 and 1.1)", got=variance, see=f"{SEE} §6.1 ({STD_PREMISE})")
