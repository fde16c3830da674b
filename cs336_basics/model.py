"""Problem 7: the lecture's deep linear model, built from a hand-rolled Linear layer.

Handout: handout/07_model.md. B is the batch size, D the model dimension.
"""

from __future__ import annotations

import torch
from jaxtyping import Float
from torch import nn

from cs336_basics.init import trunc_normal_init


class Linear(nn.Module):
    """y = x @ weight, with no bias.

    Attributes:
        weight: an nn.Parameter of shape (d_in, d_out), float32, initialized with
            `trunc_normal_init(d_in, d_out)` (std 1/sqrt(d_in), truncated at +-3 std).
    """

    def __init__(self, d_in: int, d_out: int) -> None:
        super().__init__()
        # BEGIN SOLUTION
        self.weight = nn.Parameter(trunc_normal_init(d_in, d_out))
        # END SOLUTION

    def forward(self, x: Float[torch.Tensor, "... d_in"]) -> Float[torch.Tensor, "... d_out"]:
        # BEGIN SOLUTION
        return x @ self.weight
        # END SOLUTION


class Cruncher(nn.Module):
    """`num_layers` Linear(dim, dim) layers applied in order, then a Linear(dim, 1) head whose
    output is squeezed to one number per example. `num_layers` may be 0: then the head alone.

    Attributes:
        layers: an nn.ModuleList of the `num_layers` Linear(dim, dim) layers, so their parameters
            are named "layers.0.weight", "layers.1.weight", ...
        final: the Linear(dim, 1) head, parameter "final.weight".
    """

    def __init__(self, dim: int, num_layers: int) -> None:
        super().__init__()
        # BEGIN SOLUTION
        self.layers = nn.ModuleList(Linear(dim, dim) for _ in range(num_layers))
        self.final = Linear(dim, 1)
        # END SOLUTION

    def forward(self, x: Float[torch.Tensor, "B dim"]) -> Float[torch.Tensor, "B"]:
        # BEGIN SOLUTION
        for layer in self.layers:
            x = layer(x)
        return self.final(x).squeeze(-1)
        # END SOLUTION


def num_parameters(model: nn.Module) -> int:
    """How many numbers the model's parameters hold in total (a Cruncher has dim^2 * num_layers + dim)."""
    # BEGIN SOLUTION
    return sum(p.numel() for p in model.parameters())
    # END SOLUTION
