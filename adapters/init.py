"""Problem 6 adapters: weight initialization (handout/06_init.md)."""

from __future__ import annotations

import torch

from adapters._convert import to_generator
from adapters._returns import exact_float
from adapters._route import routed


@routed
def run_init_std(d_in: int) -> float:
    """The std that keeps x @ w of variance about 1."""
    from cs336_basics import init

    return exact_float(init.init_std(d_in), "init_std")


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


@routed
def run_init_generator_use(kind: str, d_in: int, d_out: int, seed: int) -> dict:
    """normal_init or trunc_normal_init (`kind` "normal" or "trunc_normal") with generators:
    {"first": the weight from a generator seeded `seed`, "second": the next weight from that same
    generator (it has moved on), "advanced": the weight from another generator seeded `seed` that
    first drew 1,000 numbers of its own, "global_untouched": whether torch's global generator was in
    the same state after the three calls as before them}."""
    from cs336_basics import init

    function = {"normal": init.normal_init, "trunc_normal": init.trunc_normal_init}[kind]
    before = torch.get_rng_state()
    generator = torch.Generator().manual_seed(seed)
    first = function(d_in, d_out, generator=generator)
    second = function(d_in, d_out, generator=generator)
    advanced_generator = torch.Generator().manual_seed(seed)
    torch.rand(1000, generator=advanced_generator)
    advanced = function(d_in, d_out, generator=advanced_generator)
    return {"first": first, "second": second, "advanced": advanced,
            "global_untouched": bool(torch.equal(before, torch.get_rng_state()))}
