"""Problem 7: Linear and Cruncher. Expected outputs are matmul chains written here with the weights
the test loads; initialization is checked against the student's own trunc_normal_init (Problem 6
grades its distribution), so that one mistake there costs points there alone. The Cruncher tests
build the student's Cruncher with a stand-in for their Linear (adapters/model.py), so that a
mistake in Linear costs Linear's tests alone."""

from __future__ import annotations

import pytest
import torch

from adapters import model as A
from tests.checks import check_equal, check_tensor, describe, explain
from tests.tolerances import FLOAT32

pytestmark = pytest.mark.problem(7)
SEE = "handout/07_model.md"
STAND_IN_LINEAR = "(its layers made by a stand-in for your Linear: a Linear mistake fails the Linear tests, not this)"


def cruncher_names_and_shapes(dim: int, num_layers: int) -> dict[str, tuple[int, ...]]:
    return {**{f"layers.{i}.weight": (dim, dim) for i in range(num_layers)}, "final.weight": (dim, 1)}


@pytest.mark.points(1)
def test_linear_weight_is_stored_in_out_and_initialized(seed_everything):
    d_in, d_out = 300, 7
    params = A.run_linear_init(d_in, d_out)
    inputs = f"Linear({d_in}, {d_out})"
    check_equal({name: (tuple(p.shape), p.dtype, p.requires_grad) for name, p in params.items()},
                {"weight": ((d_in, d_out), torch.float32, True)},
                what="parameters by name: (shape, dtype, requires_grad)",
                inputs=inputs, see=f"{SEE} §7.1")
    # Held to your own trunc_normal_init (Problem 6 grades its distribution), so a mistake there costs
    # points there and not here too: from the same global generator state, the same numbers.
    got = A.run_linear_init_and_trunc_normal_init(d_in, d_out, seed_everything)
    check_linear_uses_trunc_normal_init(got, f"torch.manual_seed(s); trunc_normal_init({d_in}, {d_out}); then "
                                        f"torch.manual_seed(s); {inputs}.weight")


def check_linear_uses_trunc_normal_init(got: dict, inputs: str) -> None:
    """Linear's weight is what the student's trunc_normal_init draws from the same generator state."""
    linear, drawn = got["linear"], got["trunc_normal"]
    same = linear.shape == drawn.shape and linear.dtype == drawn.dtype and torch.equal(linear, drawn)
    assert same, explain(
        "Linear's weight must be initialized with your trunc_normal_init(d_in, d_out), drawn from torch's global "
        "generator: from the same seed, the same values", inputs=inputs,
        expected=f"the weight trunc_normal_init returned ({describe(drawn)}, first values "
                 f"{drawn.flatten()[:3].tolist()})",
        got=f"{describe(linear)}, first values {linear.flatten()[:3].tolist()}", see=f"{SEE} §7.1")


@pytest.mark.points(1)
def test_linear_forward_is_x_at_weight():
    d_in, d_out = 5, 3
    weight, x = torch.randn(d_in, d_out), torch.randn(2, 4, d_in)
    check_tensor(A.run_linear(d_in, d_out, weight, x), x @ weight, **FLOAT32, what="Linear(x) = x @ weight",
                 inputs=f"weight {describe(weight)}, x {describe(x)} (extra leading dims)", see=f"{SEE} §7.1")


@pytest.mark.points(2)
@pytest.mark.parametrize("dim, num_layers", [(8, 3), (5, 1), (16, 0)])
def test_cruncher_parameters(dim, num_layers):
    got = A.run_cruncher_init(dim, num_layers)
    inputs = f"Cruncher(dim={dim}, num_layers={num_layers}) {STAND_IN_LINEAR}"
    check_equal({name: tuple(p.shape) for name, p in got["parameters"].items()},
                cruncher_names_and_shapes(dim, num_layers), what="parameter names and shapes", inputs=inputs,
                see=f"{SEE} §7.2")
    check_equal(got["num_parameters"], dim * dim * num_layers + dim, what="num_parameters(model) = D^2 L + D",
                inputs=inputs, see=f"{SEE} §7.3")


@pytest.mark.points(2)
@pytest.mark.parametrize("batch, dim, num_layers", [(4, 6, 3), (1, 3, 2)])
def test_cruncher_forward(batch, dim, num_layers):
    state = {name: torch.randn(shape) for name, shape in cruncher_names_and_shapes(dim, num_layers).items()}
    x = torch.randn(batch, dim)
    expected = x
    for i in range(num_layers):
        expected = expected @ state[f"layers.{i}.weight"]
    expected = (expected @ state["final.weight"])[:, 0]
    check_tensor(A.run_cruncher(dim, num_layers, state, x), expected, **FLOAT32,
                 what="Cruncher output: the layers in order, then the final layer, one number per example",
                 inputs=f"Cruncher({dim}, {num_layers}) with random weights {STAND_IN_LINEAR}, x {describe(x)}",
                 see=f"{SEE} §7.2")


@pytest.mark.points(1)
def test_cruncher_layers_are_initialized_by_trunc_normal_init(seed_everything):
    # Each weight of a fresh Cruncher must be one your trunc_normal_init returned while the Cruncher
    # was built: then its layers keep the variance of order one whenever Problem 6's initializer does
    # (which Problem 6 grades), and a mistake there is not charged here again.
    dim, num_layers = 16, 3
    got = A.run_cruncher_init_draws(dim, num_layers, seed_everything)
    inputs = (f"torch.manual_seed(s); Cruncher({dim}, {num_layers}) {STAND_IN_LINEAR}, watching what "
              "trunc_normal_init returns")
    drawn = got["drawn"]
    for name, weight in got["parameters"].items():
        found = any(d.shape == weight.shape and torch.equal(d, weight) for d in drawn)
        assert found, explain(
            f"{name} of a fresh Cruncher: a weight your trunc_normal_init returned while the Cruncher was built "
            f"(each layer a Linear, initialized as in §7.1, and left as drawn)", inputs=inputs,
            expected=f"one of the {len(drawn)} weights drawn, of shapes {[tuple(d.shape) for d in drawn]}",
            got=f"{describe(weight)}, first values {weight.flatten()[:3].tolist()}", see=f"{SEE} §7.2")


@pytest.mark.points(1)
def test_num_parameters_counts_every_parameter():
    cases = [([(3, 4), (4, 5)], True, False, 3 * 4 + 4 + 4 * 5 + 5), ([(3, 4), (4, 5)], False, False, 32),
             ([(10, 1)], True, False, 11),
             ([(6, 8)], False, True, 6 * 8 + 2 * 8)]  # BatchNorm1d(8): weight and bias; its running stats are buffers
    for sizes, bias, batch_norm, expected in cases:
        check_equal(A.run_num_parameters(sizes, bias, batch_norm), expected, what="num_parameters",
                    inputs=f"nn.Sequential of nn.Linear{sizes}, bias={bias}" + (", then nn.BatchNorm1d" if batch_norm
                                                                                else ""), see=f"{SEE} §7.3")
