"""Problem 8: the lecture's AdaGrad optimizer, and the memory and FLOPs of one training step.

Handout: handout/08_adagrad.md. Memory is in bytes, compute in FLOPs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch

ADAGRAD_EPS = 1e-5


class AdaGrad(torch.optim.Optimizer):
    """AdaGrad as written in the lecture. For each parameter p whose gradient g is not None:

        state["g2"] starts as zeros like p;   g2 += g ** 2;   p -= lr * g / sqrt(g2 + 1e-5)

    Parameters whose .grad is None are skipped (neither they nor their state change). Each
    parameter group may set its own "lr"; the default is 0.01. Subclass torch.optim.Optimizer so
    that param groups, state_dict() and load_state_dict() work; do not use torch.optim.Adagrad.
    """

    def __init__(self, params: Iterable[torch.nn.Parameter] | Iterable[dict], lr: float = 0.01) -> None:
        # BEGIN SOLUTION
        if lr < 0:
            raise ValueError(f"lr must be >= 0, got {lr}")
        super().__init__(params, defaults={"lr": lr})
        # END SOLUTION

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        """Update every parameter that has a gradient; returns closure() if one is given."""
        # BEGIN SOLUTION
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            for p in params:
                if "g2" not in self.state[p]:
                    self.state[p]["g2"] = torch.zeros_like(p)
            grads = [p.grad for p in params]
            g2s = [self.state[p]["g2"] for p in params]
            # The same rule, one call per operation for the whole group instead of one per parameter:
            # with hundreds of small tensors, per-call overhead is most of a step.
            torch._foreach_addcmul_(g2s, grads, grads)  # g2 += g * g
            denominators = torch._foreach_add(g2s, ADAGRAD_EPS)
            torch._foreach_sqrt_(denominators)
            torch._foreach_addcdiv_(params, grads, denominators, value=-group["lr"])  # p -= lr * g / sqrt(g2 + eps)
        return loss
        # END SOLUTION


@dataclass(frozen=True)
class StepMemory:
    """Bytes one training step of a deep linear model holds, by kind."""

    parameters: int
    activations: int
    gradients: int
    optimizer_state: int

    @property
    def total(self) -> int:
        return self.parameters + self.activations + self.gradients + self.optimizer_state


def training_step_memory(batch_size: int, dim: int, num_layers: int, bytes_per_value: int = 4) -> StepMemory:
    """Memory of one AdaGrad training step of Cruncher(dim, num_layers) on `batch_size` examples.

    Count, as the lecture does: the parameters (dim^2 * num_layers + dim numbers); the activations
    kept for the backward pass (one (batch_size, dim) output per Linear(dim, dim) layer); one
    gradient per parameter; AdaGrad's state (one g2 value per parameter). Every number takes
    `bytes_per_value` bytes (4 for float32).
    """
    # BEGIN SOLUTION
    parameters = dim * dim * num_layers + dim
    activations = batch_size * dim * num_layers
    return StepMemory(
        parameters=parameters * bytes_per_value,
        activations=activations * bytes_per_value,
        gradients=parameters * bytes_per_value,
        optimizer_state=parameters * bytes_per_value,
    )
    # END SOLUTION


def training_step_flops(batch_size: int, num_parameters: int) -> int:
    """FLOPs of one forward-and-backward step of a deep linear model: 2*B*P forward plus 4*B*P backward."""
    # BEGIN SOLUTION
    return 6 * batch_size * num_parameters
    # END SOLUTION
