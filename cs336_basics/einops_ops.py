"""Problem 3: named-dimension tensor operations with einops.

Handout: handout/03_einops.md. Write each tensor function with `einsum`, `rearrange` or `reduce`
from einops; the shapes in the annotations are the contract. `einsum_flops` only reads a pattern.
"""

from __future__ import annotations

import torch
from einops import einsum, rearrange, reduce
from jaxtyping import Float


def attention_scores(
    queries: Float[torch.Tensor, "batch seq1 hidden"], keys: Float[torch.Tensor, "batch seq2 hidden"]
) -> Float[torch.Tensor, "batch seq1 seq2"]:
    """Dot product of every query with every key of the same batch element (no scaling, no softmax).

    Returns:
        scores[b, i, j] = sum over h of queries[b, i, h] * keys[b, j, h].
    """
    # BEGIN SOLUTION
    return einsum(queries, keys, "batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2")
    # END SOLUTION


def split_heads(x: Float[torch.Tensor, "... model"], num_heads: int) -> Float[torch.Tensor, "... heads head_dim"]:
    """Cut the last dimension into `num_heads` consecutive chunks of head_dim = model / num_heads.

    Returns:
        out[..., h, d] = x[..., h * head_dim + d].
    """
    # BEGIN SOLUTION
    return rearrange(x, "... (heads head_dim) -> ... heads head_dim", heads=num_heads)
    # END SOLUTION


def merge_heads(x: Float[torch.Tensor, "... heads head_dim"]) -> Float[torch.Tensor, "... model"]:
    """Undo `split_heads`: concatenate the heads back into one last dimension of heads * head_dim."""
    # BEGIN SOLUTION
    return rearrange(x, "... heads head_dim -> ... (heads head_dim)")
    # END SOLUTION


def per_head_linear(
    x: Float[torch.Tensor, "... model_in"], weight: Float[torch.Tensor, "head_in head_out"], num_heads: int
) -> Float[torch.Tensor, "... model_out"]:
    """Split x into heads, apply the same (head_in, head_out) weight to every head, merge the heads.

    model_in = num_heads * head_in and model_out = num_heads * head_out.

    Returns:
        out[..., h * head_out + e] = sum over d of x[..., h * head_in + d] * weight[d, e].
    """
    # BEGIN SOLUTION
    heads = split_heads(x, num_heads)
    projected = einsum(heads, weight, "... heads head_in, head_in head_out -> ... heads head_out")
    return merge_heads(projected)
    # END SOLUTION


def sum_hidden(x: Float[torch.Tensor, "... hidden"]) -> Float[torch.Tensor, "..."]:
    """Sum over the last dimension."""
    # BEGIN SOLUTION
    return reduce(x, "... hidden -> ...", "sum")
    # END SOLUTION


def max_over_sequence(x: Float[torch.Tensor, "batch seq hidden"]) -> Float[torch.Tensor, "batch hidden"]:
    """Largest value over the sequence dimension, for every batch element and hidden unit."""
    # BEGIN SOLUTION
    return reduce(x, "batch seq hidden -> batch hidden", "max")
    # END SOLUTION


def einsum_flops(pattern: str, shape_a: tuple[int, ...], shape_b: tuple[int, ...]) -> int:
    """FLOPs of a two-operand einsum contraction, counting one multiply and one add per term.

    The pattern is einops-style: space-separated dimension names, the two inputs separated by a
    comma, then "->" and the output, e.g. "batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2".
    No "...", no parentheses. Every output element is a sum over the names missing from the output;
    each term costs a multiply and an add, so a (B, D) x (D, K) matmul costs 2 * B * D * K.

    Args:
        pattern: the contraction.
        shape_a, shape_b: the operands' shapes, one size per name.

    Returns:
        The FLOP count.

    Raises:
        ValueError: when a shape's length differs from its operand's names, or one name has two sizes.
    """
    # BEGIN SOLUTION
    inputs, _output = pattern.split("->")
    names_a, names_b = (part.split() for part in inputs.split(","))
    sizes: dict[str, int] = {}
    for names, shape in ((names_a, shape_a), (names_b, shape_b)):
        if len(names) != len(shape):
            raise ValueError(f"pattern names {names} but the shape {tuple(shape)} has {len(shape)} dimensions")
        for name, size in zip(names, shape):
            if sizes.setdefault(name, size) != size:
                raise ValueError(f"dimension {name!r} has two sizes: {sizes[name]} and {size}")
    flops = 2
    for size in sizes.values():
        flops *= size
    return flops
    # END SOLUTION
