"""Problem 5 adapters: the hand-written forward and backward pass (handout/05_backward.md).

Student code runs with autograd blocked (`NoAutograd`) and on inputs that do not require gradients;
the backward also runs under FlopCounterMode, which reports the matmul FLOPs it really performed.
"""

from __future__ import annotations

import torch

from adapters._instrument import FlopCounterMode, NoAutograd, same_bits
from adapters._returns import exact_int
from adapters._route import routed


@routed
def run_squared_error_grad(x: torch.Tensor, w: torch.Tensor, target: float) -> torch.Tensor:
    """d/dw of 0.5 * (x @ w - target)^2."""
    from cs336_basics import backward

    with NoAutograd():
        return backward.squared_error_grad(x.detach(), w.detach(), target)


@routed
def run_two_layer_forward(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> dict[str, torch.Tensor]:
    """{"h1", "h2", "loss"} of x @ w1 @ w2 with loss = mean(h2^2)."""
    from cs336_basics import backward

    with NoAutograd():
        result = backward.two_layer_forward(x.detach(), w1.detach(), w2.detach())
    return {"h1": result.h1, "h2": result.h2, "loss": result.loss}


@routed
def run_two_layer_backward(
    x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor, h1: torch.Tensor, h2: torch.Tensor, loss: torch.Tensor
) -> dict[str, torch.Tensor | int | list[str]]:
    """{"h2", "h1", "w2", "w1"}: the gradients, given the forward values; "matmul_flops": the FLOPs
    the backward's matmuls performed, as FlopCounterMode counts them; "changed_inputs": the names of
    the inputs (x, w1, w2, h1, h2, loss) the call wrote into."""
    from cs336_basics import backward

    inputs = {"x": x.detach(), "w1": w1.detach(), "w2": w2.detach(), "h1": h1.detach(), "h2": h2.detach(),
              "loss": loss.detach()}
    before = {name: t.clone() for name, t in inputs.items()}
    forward = backward.TwoLayerForward(h1=inputs["h1"], h2=inputs["h2"], loss=inputs["loss"])
    with NoAutograd(), FlopCounterMode(display=False) as counter:
        grads = backward.two_layer_backward(inputs["x"], inputs["w1"], inputs["w2"], forward)
    changed = [name for name, t in inputs.items() if not same_bits(t, before[name])]
    return {"h2": grads.h2, "h1": grads.h1, "w2": grads.w2, "w1": grads.w1, "matmul_flops": counter.get_total_flops(),
            "changed_inputs": changed}


@routed
def run_two_layer_backward_flops(batch_size: int, hidden: int, outputs: int) -> int:
    """The matmul FLOPs the student says their backward performs."""
    from cs336_basics import backward

    return exact_int(backward.two_layer_backward_flops(batch_size, hidden, outputs), "two_layer_backward_flops")
