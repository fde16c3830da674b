"""Hidden tests, Problem 7: a 1-D input, any number of leading dimensions, a Cruncher with no hidden
layer, gradients reaching every weight, parameters that are frozen or shared, and a Cruncher made of
your own Linear layers as Problems 8 to 11 use it (gradients reaching your weights; bfloat16 under
autocast). Expected values are matmul chains, autograd gradients and autocast results computed here;
counts are closed forms.

PYTEST_DONT_REWRITE: a failure shows the check's message, never this file's source.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from adapters import model as A
from tests.checks import check_equal, check_tensor, describe, explain
from tests.test_07_model import STAND_IN_LINEAR, check_linear_uses_trunc_normal_init
from tests.tolerances import BFLOAT16, FLOAT32_MODEL

pytestmark = pytest.mark.problem(7)
SEE = "handout/07_model.md"


def names_and_shapes(dim: int, num_layers: int) -> dict[str, tuple[int, ...]]:
    return {**{f"layers.{i}.weight": (dim, dim) for i in range(num_layers)}, "final.weight": (dim, 1)}


def chain(state: dict[str, torch.Tensor], num_layers: int, x: torch.Tensor) -> torch.Tensor:
    for i in range(num_layers):
        x = x @ state[f"layers.{i}.weight"]
    return (x @ state["final.weight"])[..., 0]


@pytest.mark.points(1)
@given(st.integers(1, 6), st.integers(1, 6), st.lists(st.integers(1, 3), max_size=3))
def test_linear_applies_to_any_leading_dimensions(d_in, d_out, leading):
    weight, x = torch.randn(d_in, d_out), torch.randn(*leading, d_in)
    check_tensor(A.run_linear(d_in, d_out, weight, x), x @ weight, **FLOAT32_MODEL, what="Linear(x) = x @ weight",
                 inputs=f"weight {describe(weight)}, x {describe(x)}", see=f"{SEE} §7.1")


@pytest.mark.points(1)
def test_linear_parameters_of_other_shapes(seed_everything):
    # Held to the student's own trunc_normal_init, as in the public test: a Linear drawn another way
    # (nn.init.trunc_normal_ with its default absolute cut-offs, a=-2 and b=2; an unscaled normal) fails.
    for d_in, d_out in [(1, 5), (64, 1), (17, 33), (256, 1024)]:
        params = A.run_linear_init(d_in, d_out)
        inputs = f"Linear({d_in}, {d_out})"
        check_equal({n: (tuple(p.shape), p.dtype, p.requires_grad) for n, p in params.items()},
                    {"weight": ((d_in, d_out), torch.float32, True)}, inputs=inputs, see=f"{SEE} §7.1",
                    what="parameters by name: (shape, dtype, requires_grad)")
        got = A.run_linear_init_and_trunc_normal_init(d_in, d_out, seed_everything)
        check_linear_uses_trunc_normal_init(got, f"torch.manual_seed(s); trunc_normal_init({d_in}, {d_out}); then "
                                            f"torch.manual_seed(s); {inputs}.weight")


@pytest.mark.points(1)
def test_cruncher_init_follows_the_global_seed_and_draws_each_layer_anew(seed_everything):
    # Catches a module that seeds its own initialization (torch.manual_seed(0), or a generator of its
    # own, in Linear or Cruncher): every layer then starts identical, and the global seed is ignored.
    dim, num_layers = 8, 3
    got = A.run_cruncher_init_draws(dim, num_layers, seed_everything)
    first, again, other = got["parameters"], got["again"], got["other"]
    inputs = f"Cruncher({dim}, {num_layers}) {STAND_IN_LINEAR} after torch.manual_seed(s), s again, and s + 1"
    same_seed = all(torch.equal(first[n], again[n]) for n in first)
    other_seed = any(not torch.equal(first[n], other[n]) for n in first)
    layers = [first[f"layers.{i}.weight"] for i in range(num_layers)]
    distinct = all(not torch.equal(a, b) for i, a in enumerate(layers) for b in layers[i + 1:])
    # Held to what the student's own trunc_normal_init does (Problem 6 grades that it follows the seed
    # and draws anew each call), so a mistake there is not charged here again.
    expected = (True, got["init_follows_the_seed"], got["init_draws_anew"])
    check_equal((same_seed, other_seed, distinct), expected, inputs=inputs, see=f"{SEE} §7.1",
                what="(the same global seed gives the same weights, another seed other weights, each hidden layer "
                     "its own weights): initialization draws from torch's global generator, which the caller seeds")


@pytest.mark.points(0.5)
def test_cruncher_with_no_hidden_layer():
    dim = 5
    got = A.run_cruncher_init(dim, 0)
    check_equal({n: tuple(p.shape) for n, p in got["parameters"].items()}, {"final.weight": (dim, 1)},
                what="parameter names and shapes", inputs=f"Cruncher(5, 0) {STAND_IN_LINEAR}", see=f"{SEE} §7.2")
    state = {"final.weight": torch.randn(dim, 1)}
    x = torch.randn(3, dim)
    check_tensor(A.run_cruncher(dim, 0, state, x), chain(state, 0, x), **FLOAT32_MODEL, what="Cruncher(5, 0): the "
                 "final layer alone", inputs=f"x {describe(x)}", see=f"{SEE} §7.2")


@pytest.mark.points(0.5)
@given(st.integers(1, 8), st.integers(1, 8), st.integers(0, 4))
def test_cruncher_forward_of_any_size(batch, dim, num_layers):
    state = {name: torch.randn(shape) / math.sqrt(dim) for name, shape in names_and_shapes(dim, num_layers).items()}
    x = torch.randn(batch, dim)
    check_tensor(A.run_cruncher(dim, num_layers, state, x), chain(state, num_layers, x), **FLOAT32_MODEL,
                 what="Cruncher output: the layers in order, then the final layer, one number per example",
                 inputs=f"Cruncher({dim}, {num_layers}) {STAND_IN_LINEAR}, x {describe(x)}", see=f"{SEE} §7.2")


@pytest.mark.points(1)
def test_cruncher_gradients_reach_every_weight():
    dim, num_layers = 4, 3
    state = {name: torch.randn(shape) for name, shape in names_and_shapes(dim, num_layers).items()}
    x = torch.randn(5, dim)
    leaves = {name: t.clone().requires_grad_() for name, t in state.items()}
    chain(leaves, num_layers, x).sum().backward()
    got = A.run_cruncher_gradients(dim, num_layers, state, x)
    check_equal(sorted(got), sorted(state), what="parameters by name", inputs=f"Cruncher(4, 3) {STAND_IN_LINEAR}",
                see=f"{SEE} §7.2")
    for name, leaf in leaves.items():
        assert got[name] is not None, explain(f"the gradient of {name}", inputs="Cruncher(4, 3), loss = sum of outputs",
                                              expected="a tensor", got="None (is the weight an nn.Parameter, used "
                                              "in forward?)", see=f"{SEE} §7.2")
        check_tensor(got[name], leaf.grad, **FLOAT32_MODEL, what=f"gradient of {name} (autograd of the matmul chain)",
                     inputs="Cruncher(4, 3), loss = sum of outputs", see=f"{SEE} §7.2")


@pytest.mark.points(0.5)
def test_num_parameters_counts_frozen_and_shared_parameters_once_each():
    cases = [
        ([(3, 4), (4, 5)], True, dict(frozen=True), 3 * 4 + 4 + 4 * 5 + 5, "the first layer frozen"),
        ([(4, 4), (4, 4), (4, 4)], True, dict(tied=True), 16 + 3 * 4, "three layers sharing one weight"),
        ([(6, 6), (6, 6)], False, dict(tied=True, frozen=True), 36, "two frozen layers sharing one weight"),
    ]
    for sizes, bias, options, expected, what in cases:
        check_equal(A.run_num_parameters(sizes, bias, False, **options), expected,
                    what="num_parameters: every parameter, frozen ones too, a shared one once",
                    inputs=f"nn.Sequential of nn.Linear{sizes}, bias={bias}, {what}", see=f"{SEE} §7.3")


# Real model sizes, on the meta device (shapes, no data; the handout says so in §7.3). Mistake caught: a count
# summed as float32 (inexact past 2**24 elements: 8 layers of 4097² hold 134,287,369, odd; GPT-3's 48 MLP
# blocks about 58 billion), exact on every small model. A count made from the values (nonzero, a copy of the
# data) fails too: a meta tensor has none.
REAL_SIZES = [
    ([(4097, 4097)] * 8 + [(4097, 1)], False, "a Cruncher of dim 4097 and 8 layers, as nn.Linear layers"),
    ([(12288, 49152), (49152, 12288)] * 48, True, "GPT-3's 48 MLP blocks (12288 -> 49152 -> 12288, with biases)"),
]


@pytest.mark.points(0.5)
def test_num_parameters_is_exact_at_real_model_sizes():
    for sizes, bias, what in REAL_SIZES:
        expected = sum(d_in * d_out + (d_out if bias else 0) for d_in, d_out in sizes)
        check_equal(A.run_num_parameters(sizes, bias, device="meta"), expected,
                    what="num_parameters: every element of every parameter, as an exact int",
                    inputs=f"{what}, on the meta device (shapes, no data)", see=f"{SEE} §7.3")


# Problems 8, 10 and 11 use your Linear and Cruncher together (staff/hidden/uses.toml): AdaGrad finds the
# weights through model.parameters() and steps them with their gradients, and §11.4 runs the model under
# autocast. The tests above build the Cruncher with a stand-in Linear; these two build it with yours.
OWN_LINEAR = "made of your own Linear layers"


@pytest.mark.points(0.5)
def test_gradients_reach_your_own_linear_weights_through_your_cruncher():
    # Catches a Linear whose forward uses the weight's value but not the weight itself (self.weight.data,
    # self.weight.detach()): the outputs are right, yet AdaGrad(model.parameters()) never sees a gradient.
    dim, num_layers = 5, 2
    state = {name: torch.randn(shape) / math.sqrt(dim) for name, shape in names_and_shapes(dim, num_layers).items()}
    x = torch.randn(6, dim)
    leaves = {name: t.clone().requires_grad_() for name, t in state.items()}
    chain(leaves, num_layers, x).sum().backward()
    got = A.run_own_cruncher_gradients(dim, num_layers, state, x)
    inputs = f"Cruncher({dim}, {num_layers}) {OWN_LINEAR}, x {describe(x)}, loss = sum of outputs, backward"
    check_equal(got["requires_grad"], True, what="the output requires a gradient (it depends on the weights, "
                "nn.Parameters that require one)", inputs=inputs, see=f"{SEE} §7.1")
    check_equal(sorted(got["grads"]), sorted(state), what="the parameters model.parameters() yields, by name",
                inputs=inputs, see=f"{SEE} §7.2")
    for name, leaf in leaves.items():
        assert got["grads"][name] is not None, explain(
            f"the gradient of {name}", inputs=inputs, expected="a tensor", see=f"{SEE} §7.1",
            got="None (forward must use the parameter itself, not self.weight.data or a detached copy)")
        check_tensor(got["grads"][name], leaf.grad, **FLOAT32_MODEL, inputs=inputs, see=f"{SEE} §7.1",
                     what=f"gradient of {name} (autograd of the matmul chain)")


@pytest.mark.points(0.5)
def test_your_cruncher_runs_in_bfloat16_under_autocast():
    # Catches a Linear that computes outside autocast's reach (in float64, or as a broadcast product and a
    # sum instead of a matmul): under torch.autocast(bfloat16) its output stays float32, and §11.4's mixed
    # precision never happens. Expected values: the same chain computed here under the same autocast.
    dim, num_layers = 8, 2
    state = {name: torch.randn(shape) / math.sqrt(dim) for name, shape in names_and_shapes(dim, num_layers).items()}
    x = torch.randn(4, dim)
    with torch.no_grad(), torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        expected, expected_linear = chain(state, num_layers, x), x @ state["layers.0.weight"]
    got = A.run_own_cruncher_autocast(dim, num_layers, state, x)
    inputs = (f"Cruncher({dim}, {num_layers}) {OWN_LINEAR}, x {describe(x)}, run under "
              "torch.autocast(device_type='cpu', dtype=torch.bfloat16)")
    check_tensor(got["linear"], expected_linear, **BFLOAT16, inputs=inputs, see=f"{SEE} §7.1 and "
                 "handout/11_train.md §11.4", what="the first Linear's output under autocast: bfloat16 (autocast "
                 "casts a matmul's operands), x @ weight")
    check_tensor(got["output"], expected, **BFLOAT16, inputs=inputs, see=f"{SEE} §7.2 and handout/11_train.md §11.4",
                 what="the Cruncher's output under autocast: bfloat16, the matmul chain")
    check_equal(got["parameter_dtypes"], {name: "float32" for name in state}, inputs=inputs,
                see="handout/11_train.md §11.4", what="the parameters' dtypes after the forward: they stay float32")
