"""Hidden tests, Problem 5: any shapes (B, D or K of 1 included), float32 as well as float64, the
inputs left as they were, a 0-d loss, and FLOP counts for any shape. Expected gradients come from
torch.autograd, computed here.

PYTEST_DONT_REWRITE: a failure shows the check's message, never this file's source.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from adapters import backward as A
from tests.checks import check_equal, check_tensor, describe, explain
from tests.test_05_backward import autograd_two_layer
from tests.tolerances import FLOAT32_GRADIENT, FLOAT64

pytestmark = pytest.mark.problem(5)
SEE = "handout/05_backward.md"
TOLERANCE = {torch.float64: FLOAT64, torch.float32: FLOAT32_GRADIENT}
dims = st.integers(1, 9)


@pytest.mark.points(1)
@given(st.integers(1, 40), st.sampled_from([torch.float32, torch.float64]), st.floats(-10, 10))
def test_squared_error_grad_of_any_size_and_dtype(dim, dtype, target):
    x, w = torch.randn(dim, dtype=dtype), torch.randn(dim, dtype=dtype)
    w_ref = w.clone().requires_grad_()
    (0.5 * (x @ w_ref - target) ** 2).backward()
    check_tensor(A.run_squared_error_grad(x, w, target), w_ref.grad, **TOLERANCE[dtype],
                 what="gradient of 0.5 * (x @ w - target)^2 with respect to w (autograd's; same dtype as w)",
                 inputs=f"x={describe(x)}, w={describe(w)}, target={target}", see=f"{SEE} §5.1")


@pytest.mark.points(2)
@given(dims, dims, dims, st.sampled_from([torch.float32, torch.float64]))
def test_forward_and_backward_of_any_shape(B, D, K, dtype):
    x, w1, w2 = torch.randn(B, D, dtype=dtype), torch.randn(D, D, dtype=dtype), torch.randn(D, K, dtype=dtype)
    expected = autograd_two_layer(x, w1, w2)
    inputs = f"B={B}, D={D}, K={K}, {str(dtype).removeprefix('torch.')}; loss = mean(h2^2)"
    forward = A.run_two_layer_forward(x, w1, w2)
    for name in ("h1", "h2", "loss"):
        check_tensor(forward[name], expected[name], **TOLERANCE[dtype], what=f"forward: {name}", inputs=inputs,
                     see=f"{SEE} §5.2")
    got = A.run_two_layer_backward(x, w1, w2, expected["h1"], expected["h2"], expected["loss"])
    for name in ("h2", "h1", "w2", "w1"):
        check_tensor(got[name], expected["grad"][name], **TOLERANCE[dtype],
                     what=f"gradient of the loss with respect to {name}", inputs=inputs, see=f"{SEE} §5.3")


@pytest.mark.points(1)
def test_backward_leaves_its_inputs_as_they_were():
    B, D, K = 6, 5, 3
    x, w1, w2 = (torch.randn(*s, dtype=torch.float64) for s in [(B, D), (D, D), (D, K)])
    forward = autograd_two_layer(x, w1, w2)
    got = A.run_two_layer_backward(x, w1, w2, forward["h1"], forward["h2"], forward["loss"])
    check_equal(got["changed_inputs"], [], what="inputs the backward wrote into (a caller may still need x, the "
                "weights and the forward's values: compute new tensors instead)", inputs=f"B={B}, D={D}, K={K}",
                see=f"{SEE} §5.3")


@pytest.mark.points(1)
def test_forward_loss_is_a_0_d_tensor():
    x, w1, w2 = torch.randn(3, 4), torch.randn(4, 4), torch.randn(4, 2)
    loss = A.run_two_layer_forward(x, w1, w2)["loss"]
    shape = tuple(loss.shape) if isinstance(loss, torch.Tensor) else type(loss).__name__
    check_equal(shape, (), what="the loss: a 0-d tensor (shape ())", inputs="B=3, D=4, K=2, float32",
                see=f"{SEE} §5.2")


# torch.einsum computes a product whose contracted dimension has size 1 as a broadcast multiply, which
# FlopCounterMode does not count as a matmul: the FLOPs tests use sizes of at least 2 (handout §5.4).
matmul_dims = st.integers(2, 9)


@pytest.mark.points(1)
@given(matmul_dims, matmul_dims, matmul_dims)
def test_backward_flops_of_any_shape(B, D, K):
    x, w1, w2 = torch.randn(B, D), torch.randn(D, D), torch.randn(D, K)
    forward = autograd_two_layer(x, w1, w2)
    measured = A.run_two_layer_backward(x, w1, w2, forward["h1"], forward["h2"], forward["loss"])["matmul_flops"]
    inputs = f"B={B}, D={D}, K={K}"
    check_equal(A.run_two_layer_backward_flops(B, D, K), measured, inputs=inputs, see=f"{SEE} §5.4",
                what="two_layer_backward_flops must equal the matmul FLOPs your backward performed (FlopCounterMode)")
    P = D * D + D * K
    assert 2 * B * P + 2 * B * D * K <= measured <= 4 * B * P, explain(
        "matmul FLOPs of the backward: at least what the asked-for gradients need, at most 4*B*P", inputs=inputs,
        expected=f"between {2 * B * P + 2 * B * D * K} and {4 * B * P}", got=measured, see=f"{SEE} §5.4")
