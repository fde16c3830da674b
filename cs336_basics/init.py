"""Problem 6: initializing a weight so a layer's outputs neither blow up nor vanish.

Handout: handout/06_init.md. Weights are stored (d_in, d_out) and applied as x @ w.
"""

from __future__ import annotations

import math

import torch
from jaxtyping import Float

TRUNCATE_AT_STDS = 3.0


def init_std(d_in: int) -> float:
    """The standard deviation that keeps each output of x @ w of variance about 1 when x has
    d_in independent entries of variance 1: 1 / sqrt(d_in)."""
    # BEGIN SOLUTION
    return 1.0 / math.sqrt(d_in)
    # END SOLUTION


def normal_init(d_in: int, d_out: int, generator: torch.Generator | None = None) -> Float[torch.Tensor, "d_in d_out"]:
    """A float32 (d_in, d_out) weight drawn from N(0, std^2) with std = init_std(d_in).

    Draw from `generator` when one is given (the same generator state gives the same weight),
    otherwise from torch's global generator.
    """
    # BEGIN SOLUTION
    return torch.randn(d_in, d_out, generator=generator) * init_std(d_in)
    # END SOLUTION


def trunc_normal_init(
    d_in: int, d_out: int, generator: torch.Generator | None = None
) -> Float[torch.Tensor, "d_in d_out"]:
    """A float32 (d_in, d_out) weight from N(0, std^2), std = init_std(d_in), truncated at
    +-TRUNCATE_AT_STDS standard deviations: every value lies in [-3 std, 3 std], and values are
    redrawn (not clipped) until they do, so the density inside keeps the normal's shape.

    Draw from `generator` when one is given, as in `normal_init`.
    """
    # BEGIN SOLUTION
    std = init_std(d_in)
    weight = torch.empty(d_in, d_out)
    cut = TRUNCATE_AT_STDS * std
    return torch.nn.init.trunc_normal_(weight, mean=0.0, std=std, a=-cut, b=cut, generator=generator)
    # END SOLUTION
