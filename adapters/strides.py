"""Problem 2 adapters: strides, views and storage (handout/02_strides.md).

A layout is [shape, strides, offset]: lists of ints (strides in elements) and an int.
"""

from __future__ import annotations

import numpy as np
import torch
from jaxtyping import Shaped

from adapters._convert import to_index
from adapters._instrument import ForbiddenCalls, ForbiddenOps, same_bits
from adapters._returns import exact_bool, exact_int
from adapters._route import routed


def _plain(layout) -> tuple[list[int], list[int], int]:
    shape, strides, offset = layout
    return ([exact_int(s, "a layout's shape") for s in shape], [exact_int(s, "a layout's strides") for s in strides],
            exact_int(offset, "a layout's offset"))


@routed
def run_contiguous_strides(shape: list[int]) -> list[int]:
    """Row-major strides of `shape`, in elements."""
    from cs336_basics import strides

    return [exact_int(s, "contiguous_strides") for s in strides.contiguous_strides(tuple(shape))]


@routed
def run_storage_index(index: list[int], strides: list[int], offset: int) -> int:
    """Storage index of the element at `index`."""
    from cs336_basics import strides as mod

    return exact_int(mod.storage_index(tuple(index), tuple(strides), offset), "storage_index")


@routed
def run_is_contiguous(shape: list[int], strides: list[int]) -> bool:
    """Whether (shape, strides) is contiguous by PyTorch's rule."""
    from cs336_basics import strides as mod

    return exact_bool(mod.is_contiguous(tuple(shape), tuple(strides)), "is_contiguous")


@routed
def run_transpose_layout(shape: list[int], strides: list[int], offset: int, dim0: int, dim1: int):
    """[shape, strides, offset] of x.transpose(dim0, dim1)."""
    from cs336_basics import strides as mod

    return _plain(mod.transpose_layout(tuple(shape), tuple(strides), offset, dim0, dim1))


@routed
def run_permute_layout(shape: list[int], strides: list[int], offset: int, dims: list[int]):
    """[shape, strides, offset] of x.permute(dims)."""
    from cs336_basics import strides as mod

    return _plain(mod.permute_layout(tuple(shape), tuple(strides), offset, tuple(dims)))


@routed
def run_slice_layout(shape: list[int], strides: list[int], offset: int, index: list):
    """[shape, strides, offset] of x[index]; each index entry is an int or [start, stop, step]."""
    from cs336_basics import strides as mod

    return _plain(mod.slice_layout(tuple(shape), tuple(strides), offset, to_index(index)))


@routed
def run_shares_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether tensors a and b are views of one storage."""
    from cs336_basics import strides as mod

    return exact_bool(mod.shares_storage(a, b), "shares_storage")


@routed
def run_can_view(shape: list[int], strides: list[int], new_shape: list[int]) -> bool:
    """Whether x.view(new_shape) succeeds for x with this shape and these strides."""
    from cs336_basics import strides as mod

    return exact_bool(mod.can_view(tuple(shape), tuple(strides), tuple(new_shape)), "can_view")


# Functions that build a strided view for the caller: materialize must do the indexing itself.
STRIDED_VIEW_MAKERS = ((torch, "as_strided"), (torch.Tensor, "as_strided"), (torch.Tensor, "as_strided_"),
                       (torch.Tensor, "set_"), (np.lib.stride_tricks, "as_strided"))
# The same, as the dispatcher sees them however they were named (and the copying variants).
STRIDED_VIEW_OPS = frozenset(getattr(torch.ops.aten, name) for name in (
    "as_strided", "as_strided_", "as_strided_copy", "as_strided_scatter", "set_") if hasattr(torch.ops.aten, name))


@routed
def run_materialize(
    storage: Shaped[torch.Tensor, " n"], shape: list[int], strides: list[int], offset: int
) -> dict:
    """materialize(storage, shape, strides, offset) with the strided-view functions forbidden.

    Returns {"result": what it returned, "forbidden": names of the forbidden functions it called,
    "writes_reach_storage": whether writing zeros into the result changed `storage`, which means
    the result is a view rather than a copy}."""
    from cs336_basics import strides as mod

    before = storage.clone()
    message = "materialize must compute storage indices itself"
    with ForbiddenCalls(STRIDED_VIEW_MAKERS, message) as forbidden, ForbiddenOps(STRIDED_VIEW_OPS, message) as ops:
        result = mod.materialize(storage, tuple(shape), tuple(strides), offset)
    reaches = False
    if isinstance(result, torch.Tensor) and result.numel() > 0:
        kept = result.clone()
        result.zero_()
        reaches = not same_bits(storage, before)
        result = kept
    return {"result": result, "forbidden": forbidden.calls + ops.calls, "writes_reach_storage": reaches}
