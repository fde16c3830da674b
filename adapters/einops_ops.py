"""Problem 3 adapters: einops operations (handout/03_einops.md)."""

from __future__ import annotations

import torch
from jaxtyping import Float

from adapters._returns import exact_int
from adapters._route import routed


@routed
def run_attention_scores(
    queries: Float[torch.Tensor, "batch seq1 hidden"], keys: Float[torch.Tensor, "batch seq2 hidden"]
) -> Float[torch.Tensor, "batch seq1 seq2"]:
    """Unscaled dot products of each query with each key."""
    from cs336_basics import einops_ops

    return einops_ops.attention_scores(queries, keys)


@routed
def run_split_heads(x: Float[torch.Tensor, "... model"], num_heads: int) -> Float[torch.Tensor, "... heads head_dim"]:
    """Last dimension cut into `num_heads` consecutive chunks."""
    from cs336_basics import einops_ops

    return einops_ops.split_heads(x, num_heads)


@routed
def run_merge_heads(x: Float[torch.Tensor, "... heads head_dim"]) -> Float[torch.Tensor, "... model"]:
    """Heads concatenated back into the last dimension."""
    from cs336_basics import einops_ops

    return einops_ops.merge_heads(x)


@routed
def run_per_head_linear(
    x: Float[torch.Tensor, "... model_in"], weight: Float[torch.Tensor, "head_in head_out"], num_heads: int
) -> Float[torch.Tensor, "... model_out"]:
    """The same (head_in, head_out) map applied to each of `num_heads` heads of x."""
    from cs336_basics import einops_ops

    return einops_ops.per_head_linear(x, weight, num_heads)


@routed
def run_sum_hidden(x: Float[torch.Tensor, "... hidden"]) -> Float[torch.Tensor, "..."]:
    """Sum over the last dimension."""
    from cs336_basics import einops_ops

    return einops_ops.sum_hidden(x)


@routed
def run_max_over_sequence(x: Float[torch.Tensor, "batch seq hidden"]) -> Float[torch.Tensor, "batch hidden"]:
    """Maximum over the sequence dimension."""
    from cs336_basics import einops_ops

    return einops_ops.max_over_sequence(x)


@routed
def run_einsum_flops(pattern: str, shape_a: list[int], shape_b: list[int]) -> int:
    """FLOPs of the two-operand einsum `pattern` on operands of these shapes."""
    from cs336_basics import einops_ops

    return exact_int(einops_ops.einsum_flops(pattern, tuple(shape_a), tuple(shape_b)), "einsum_flops")


@routed
def run_counting_einops_calls(function: str, args: list) -> dict:
    """{"result": einops_ops.<function>(*args), "einops_calls": how many einops operations (einsum,
    rearrange, reduce, repeat, pack, unpack, or a Rearrange, Reduce or EinMix layer applied) the call
    made, under whatever name it imported them (see EinopsCalls)}. `function` is one of the six
    tensor functions."""
    from adapters._instrument import EinopsCalls
    from cs336_basics import einops_ops

    if function not in {"attention_scores", "split_heads", "merge_heads", "per_head_linear", "sum_hidden",
                        "max_over_sequence"}:
        raise ValueError(f"not a tensor function of Problem 3: {function!r}")
    with EinopsCalls() as watch:
        result = getattr(einops_ops, function)(*args)
    return {"result": result, "einops_calls": watch.calls}
