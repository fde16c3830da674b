"""Problem 5: forward and backward by hand. Expected gradients come from torch.autograd in float64,
computed here; the adapter blocks autograd while student code runs and counts the matmul FLOPs of
the backward with FlopCounterMode."""

from __future__ import annotations

import pytest
import torch

from adapters import backward as A
from tests.checks import check_equal, check_tensor, describe, explain
from tests.tolerances import FLOAT64

pytestmark = pytest.mark.problem(5)
SEE = "handout/05_backward.md"

# (B, D, K): batch, hidden and output sizes. Shapes alone cannot catch every wrong transpose (w1 is D x D,
# and (1, 4, 1) has B = K), so the tests compare values with autograd's.
SHAPES = [(5, 3, 2), (1, 4, 1), (16, 8, 12)]


def autograd_two_layer(x, w1, w2):
    """The reference: the same forward built with autograd, and every gradient it gives."""
    w1, w2 = w1.clone().requires_grad_(), w2.clone().requires_grad_()
    h1 = x @ w1
    h2 = h1 @ w2
    h1.retain_grad()
    h2.retain_grad()
    loss = (h2**2).mean()
    loss.backward()
    return {"h1": h1.detach(), "h2": h2.detach(), "loss": loss.detach(),
            "grad": {"h2": h2.grad, "h1": h1.grad, "w2": w2.grad, "w1": w1.grad}}


def random_inputs(B, D, K):
    return torch.randn(B, D, dtype=torch.float64), torch.randn(D, D, dtype=torch.float64), torch.randn(
        D, K, dtype=torch.float64)


@pytest.mark.points(1)
def test_squared_error_grad_lecture_example():
    x, w = torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 1.0, 1.0])
    check_tensor(A.run_squared_error_grad(x, w, 5.0), torch.tensor([1.0, 2.0, 3.0]),
                 what="gradient of 0.5 * (x @ w - 5)^2 with respect to w", inputs="x=[1, 2, 3], w=[1, 1, 1]",
                 see=f"{SEE} §5.1")


@pytest.mark.points(1)
@pytest.mark.parametrize("dim", [1, 7, 32])
def test_squared_error_grad_matches_autograd(dim):
    x, w = torch.randn(dim, dtype=torch.float64), torch.randn(dim, dtype=torch.float64)
    target = float(torch.randn(()))
    w_ref = w.clone().requires_grad_()
    (0.5 * (x @ w_ref - target) ** 2).backward()
    check_tensor(A.run_squared_error_grad(x, w, target), w_ref.grad, **FLOAT64,
                 what="gradient of 0.5 * (x @ w - target)^2 with respect to w (autograd's, in float64)",
                 inputs=f"x={describe(x)}, w={describe(w)}, target={target:.4f}", see=f"{SEE} §5.1")


@pytest.mark.points(2)
def test_two_layer_forward():
    for B, D, K in SHAPES:
        x, w1, w2 = random_inputs(B, D, K)
        expected = autograd_two_layer(x, w1, w2)
        got = A.run_two_layer_forward(x, w1, w2)
        inputs = f"x {describe(x)}, w1 {describe(w1)}, w2 {describe(w2)}"
        for name in ("h1", "h2", "loss"):
            check_tensor(got[name], expected[name], **FLOAT64, what=f"forward: {name}", inputs=inputs,
                         see=f"{SEE} §5.2")


@pytest.mark.points(2)
@pytest.mark.parametrize("B, D, K", SHAPES)
def test_two_layer_backward_matches_autograd(B, D, K):
    x, w1, w2 = random_inputs(B, D, K)
    expected = autograd_two_layer(x, w1, w2)
    got = A.run_two_layer_backward(x, w1, w2, expected["h1"], expected["h2"], expected["loss"])
    inputs = f"B={B}, D={D}, K={K}, float64; loss = mean(h2^2)"
    for name in ("h2", "h1", "w2", "w1"):
        check_tensor(got[name], expected["grad"][name], **FLOAT64, what=f"gradient of the loss with respect to {name}",
                     inputs=inputs, see=f"{SEE} §5.3")


@pytest.mark.points(1)
@pytest.mark.parametrize("B, D, K", [(4, 6, 3), (32, 16, 64)])
def test_backward_flops_are_reported_and_between_the_bounds(B, D, K):
    x, w1, w2 = random_inputs(B, D, K)
    forward = autograd_two_layer(x, w1, w2)
    measured = A.run_two_layer_backward(x, w1, w2, forward["h1"], forward["h2"], forward["loss"])["matmul_flops"]
    reported = A.run_two_layer_backward_flops(B, D, K)
    inputs = f"B={B}, D={D}, K={K}"
    check_equal(reported, measured, inputs=inputs, see=f"{SEE} §5.4",
                what="two_layer_backward_flops must equal the matmul FLOPs your backward performed (FlopCounterMode)")
    P = D * D + D * K
    needed = 2 * B * P + 2 * B * D * K  # both weight gradients, and h1's gradient to reach w1
    rule = 4 * B * P  # the lecture's rule, which also pays for x's gradient
    assert needed <= measured <= rule, explain(
        "matmul FLOPs of the backward: at least what the asked-for gradients need, at most 4*B*P",
        inputs=inputs, expected=f"between {needed} and {rule}", got=measured, see=f"{SEE} §5.4")
