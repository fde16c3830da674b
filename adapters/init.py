"""Problem 6 adapters: weight initialization (handout/06_init.md)."""

from __future__ import annotations

import torch

from adapters._convert import to_generator
from adapters._route import routed


@routed
def run_init_std(d_in: int) -> float:
    """The std that keeps x @ w of variance about 1."""
    from cs336_basics import init

    return float(init.init_std(d_in))


@routed
def run_normal_init(d_in: int, d_out: int, seed: int | None = None) -> torch.Tensor:
    """A (d_in, d_out) normal weight; drawn from a generator seeded with `seed`, or the global one when None."""
    from cs336_basics import init

    return init.normal_init(d_in, d_out, generator=to_generator(seed))


@routed
def run_trunc_normal_init(d_in: int, d_out: int, seed: int | None = None) -> torch.Tensor:
    """A (d_in, d_out) truncated-normal weight; `seed` as in run_normal_init."""
    from cs336_basics import init

    return init.trunc_normal_init(d_in, d_out, generator=to_generator(seed))


@routed
def run_init_from_global_seed(kind: str, d_in: int, d_out: int, seed: int) -> torch.Tensor:
    """torch.manual_seed(seed), then normal_init or trunc_normal_init (`kind` "normal" or
    "trunc_normal") with no generator: a weight drawn from torch's global generator."""
    from cs336_basics import init

    function = {"normal": init.normal_init, "trunc_normal": init.trunc_normal_init}[kind]
    torch.manual_seed(seed)
    return function(d_in, d_out)
