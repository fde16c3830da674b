"""Problem 7: Linear and Cruncher. Expected outputs are matmul chains written here with the weights
the test loads; initialization is checked statistically (seeded, bounds at least 5.2 standard errors wide)."""

from __future__ import annotations

import math

import pytest
import torch

from adapters import model as A
from tests.checks import check_equal, check_tensor, describe, explain

pytestmark = pytest.mark.problem(7)
SEE = "handout/07_model.md"
FLOAT32 = dict(atol=1e-5, rtol=1e-5)  # matmul chains may round differently in another order


def cruncher_names_and_shapes(dim: int, num_layers: int) -> dict[str, tuple[int, ...]]:
    return {**{f"layers.{i}.weight": (dim, dim) for i in range(num_layers)}, "final.weight": (dim, 1)}


@pytest.mark.points(1)
def test_linear_weight_is_stored_in_out_and_initialized():
    d_in, d_out = 300, 7
    params = A.run_linear_init(d_in, d_out)
    inputs = f"Linear({d_in}, {d_out})"
    check_equal({name: (tuple(p.shape), p.dtype, p.requires_grad) for name, p in params.items()},
                {"weight": ((d_in, d_out), torch.float32, True)},
                what="parameters by name: (shape, dtype, requires_grad)",
                inputs=inputs, see=f"{SEE} §7.1")
    std, w = 1 / math.sqrt(d_in), params["weight"].double()
    # 2,100 draws: the sample std of a +-3 std truncated normal lands within 8% (5.2 standard errors) of 0.9866 * std.
    assert abs(w.std().item() / (0.9866 * std) - 1) < 0.08 and w.abs().max().item() <= 3 * std * (1 + 1e-6), explain(
        "Linear's weight: std 1/sqrt(d_in), truncated at 3 std (Problem 6's trunc_normal_init)", inputs=inputs,
        expected=f"std about {0.9866 * std:.4f}, |w| <= {3 * std:.4f}",
        got=f"std {w.std().item():.4f}, max |w| {w.abs().max().item():.4f}", see=f"{SEE} §7.1")


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
    inputs = f"Cruncher(dim={dim}, num_layers={num_layers})"
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
                 inputs=f"Cruncher({dim}, {num_layers}) with random weights, x {describe(x)}", see=f"{SEE} §7.2")


@pytest.mark.points(1)
def test_cruncher_output_variance_is_order_one_at_init():
    dim, num_layers, batch = 512, 4, 2048
    state = A.run_cruncher_init(dim, num_layers)["parameters"]
    out = A.run_cruncher(dim, num_layers, state, torch.randn(batch, dim))
    variance = out.var().item()
    # Each layer multiplies the variance by about 0.9866^2 (five layers: about 0.87), with a relative
    # spread of about 15% over seeds; the bounds sit 5 spreads away. A std of 1 instead of
    # 1/sqrt(d_in) in any one layer multiplies the variance by at least 512.
    assert 0.35 <= variance <= 2.2, explain(
        "variance of a freshly initialized Cruncher's outputs for x ~ N(0, 1)",
        inputs=f"Cruncher({dim}, {num_layers}), x ({batch}, {dim})", expected="about 0.87 (between 0.35 and 2.2)",
        got=variance, see=f"{SEE} §7.2")


@pytest.mark.points(1)
def test_num_parameters_counts_every_parameter():
    cases = [([(3, 4), (4, 5)], True, False, 3 * 4 + 4 + 4 * 5 + 5), ([(3, 4), (4, 5)], False, False, 32),
             ([(10, 1)], True, False, 11),
             ([(6, 8)], False, True, 6 * 8 + 2 * 8)]  # BatchNorm1d(8): weight and bias; its running stats are buffers
    for sizes, bias, batch_norm, expected in cases:
        check_equal(A.run_num_parameters(sizes, bias, batch_norm), expected, what="num_parameters",
                    inputs=f"nn.Sequential of nn.Linear{sizes}, bias={bias}" + (", then nn.BatchNorm1d" if batch_norm
                                                                                else ""), see=f"{SEE} §7.3")
