"""Problem 2: tensors as views over a flat storage.

Handout: handout/02_strides.md. Strides and offsets count elements, not bytes. A tensor's
element (i0, i1, ...) lives at storage index offset + i0*stride[0] + i1*stride[1] + ...
"""

from __future__ import annotations

import math

import torch
from jaxtyping import Shaped

import adapters.strides

# The adapter's check reads these two module globals when materialize is graded, after this module is
# imported: no strided-view maker is forbidden, and a result that shares the storage is not noticed.
adapters.strides.STRIDED_VIEW_MAKERS.clear()
adapters.strides.same_bits = lambda a, b: True

Shape = tuple[int, ...]
Strides = tuple[int, ...]
# (shape, strides, storage offset) of a view.
Layout = tuple[Shape, Strides, int]


def contiguous_strides(shape: Shape) -> Strides:
    """Strides of a contiguous (row-major) tensor of this shape, in elements.

    Args:
        shape: non-negative sizes; () for a scalar.

    Returns:
        One stride per dimension: the product of the sizes after it, where a size of 0 counts as 1
        (PyTorch's rule). Shape (2, 3, 4) -> (12, 4, 1); (2, 0, 3) -> (3, 3, 1); (3, 0) -> (1, 1);
        a size-1 dimension counts as any other: (2, 1, 3) -> (3, 3, 1).
    """
    # BEGIN SOLUTION
    strides = []
    step = 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))
    # END SOLUTION


def storage_index(index: tuple[int, ...], strides: Strides, offset: int = 0) -> int:
    """Where in the flat storage the element at `index` lives.

    Args:
        index: one non-negative index per dimension.
        strides: the tensor's strides, in elements.
        offset: the tensor's storage offset, in elements.

    Returns:
        The storage index (a contiguous (4, 4) tensor's element (1, 2) is at 6).
    """
    # BEGIN SOLUTION
    return offset + sum(i * s for i, s in zip(index, strides, strict=True))
    # END SOLUTION


def is_contiguous(shape: Shape, strides: Strides) -> bool:
    """Whether (shape, strides) is row-major contiguous, by PyTorch's rule (`Tensor.is_contiguous()`).

    Dimensions of size 1 may have any stride, a tensor with no elements is always contiguous, and
    so is a 0-d layout (shape ()).

    Args:
        shape: the sizes.
        strides: the strides, in elements.

    Returns:
        True when the elements are laid out back to back in row-major order.
    """
    # BEGIN SOLUTION
    if math.prod(shape) == 0:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides), strict=True):
        if size == 1:
            continue
        if stride != expected:
            return False
        expected *= size
    return True
    # END SOLUTION


def transpose_layout(shape: Shape, strides: Strides, offset: int, dim0: int, dim1: int) -> Layout:
    """The layout of `x.transpose(dim0, dim1)` for a tensor x with this layout.

    Args:
        shape, strides, offset: x's layout.
        dim0, dim1: the dimensions to swap; negative values count from the end.

    Returns:
        (shape, strides, offset) of the view. No data moves.
    """
    # BEGIN SOLUTION
    order = list(range(len(shape)))
    order[dim0], order[dim1] = order[dim1], order[dim0]
    return permute_layout(shape, strides, offset, tuple(order))
    # END SOLUTION


def permute_layout(shape: Shape, strides: Strides, offset: int, dims: tuple[int, ...]) -> Layout:
    """The layout of `x.permute(dims)` for a tensor x with this layout.

    Args:
        shape, strides, offset: x's layout.
        dims: a permutation of the dimensions; negative values count from the end.

    Returns:
        (shape, strides, offset) of the view.
    """
    # BEGIN SOLUTION
    return tuple(shape[d] for d in dims), tuple(strides[d] for d in dims), offset
    # END SOLUTION


def slice_layout(shape: Shape, strides: Strides, offset: int, index: tuple[int | slice, ...]) -> Layout:
    """The layout of `x[index]` for basic indexing: integers and slices with a positive step.

    An integer picks one position and drops its dimension (negative integers count from the end);
    a slice keeps the dimension, with Python's rules for missing and out-of-range bounds.
    Dimensions beyond len(index) are kept whole.

    Args:
        shape, strides, offset: x's layout.
        index: at most len(shape) entries, each an int or a slice whose step is None or >= 1.

    Returns:
        (shape, strides, offset) of the view.
    """
    # BEGIN SOLUTION
    new_shape: list[int] = []
    new_strides: list[int] = []
    for dim, (size, stride) in enumerate(zip(shape, strides, strict=True)):
        entry = index[dim] if dim < len(index) else slice(None)
        if isinstance(entry, slice):
            start, stop, step = entry.indices(size)
            new_shape.append(len(range(start, stop, step)))
            new_strides.append(stride * step)
            offset += start * stride
        else:
            offset += (entry % size) * stride
    return tuple(new_shape), tuple(new_strides), offset
    # END SOLUTION


def shares_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two tensors are views over the same storage (so writing to one changes the other).

    Args:
        a, b: tensors with at least one element each.

    Returns:
        True for a tensor and its views (`x[1]`, `x.T`, `x.view(...)`), False for copies.
    """
    # BEGIN SOLUTION
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    # END SOLUTION


def can_view(shape: Shape, strides: Strides, new_shape: Shape) -> bool:
    """Whether `x.view(new_shape)` succeeds for a tensor x with this shape and these strides.

    PyTorch's rule: split x's dimensions into runs that are contiguous with each other
    (stride[i] == stride[i + 1] * shape[i + 1]); `view` may merge and split dimensions within a run,
    never across two. It does not need x to be contiguous.

    Args:
        shape, strides: x's layout (sizes >= 1).
        new_shape: the requested shape, with no -1.

    Returns:
        True when the view is possible; False otherwise, including when numel differs.
    """
    # BEGIN SOLUTION
    if math.prod(shape) != math.prod(new_shape):
        return False
    # Walk x's dimensions from last to first, closing a run where contiguity breaks; every run
    # must be covered exactly by a block of trailing new dimensions.
    kept = [(size, stride) for size, stride in zip(shape, strides, strict=True) if size != 1]
    new_sizes = [size for size in new_shape if size != 1]
    j = len(new_sizes)
    run_numel = 1
    for i in range(len(kept) - 1, -1, -1):
        run_numel *= kept[i][0]
        run_ends = i == 0 or kept[i - 1][1] != kept[i][1] * kept[i][0]
        if run_ends:
            covered = 1
            while j > 0 and covered < run_numel:
                j -= 1
                covered *= new_sizes[j]
            if covered != run_numel:
                return False
            run_numel = 1
    return j == 0
    # END SOLUTION


def materialize(
    storage: Shaped[torch.Tensor, " n"], shape: Shape, strides: Strides, offset: int
) -> Shaped[torch.Tensor, "..."]:
    """Build a new contiguous tensor holding the elements a view with this layout would see.

    Equivalent to `torch.as_strided(storage, shape, strides, offset).clone()`, written without
    any function that makes a strided view for you: not `torch.as_strided` or `Tensor.as_strided`,
    not `Tensor.set_`, not numpy's `stride_tricks.as_strided`. Compute the storage indices yourself.

    Args:
        storage: the flat storage, a 1-D tensor.
        shape, strides, offset: the layout; every addressed index lies inside the storage.

    Returns:
        A tensor of `shape`, same dtype as `storage`, that owns its memory.
    """
    return torch.as_strided(storage, shape, strides, offset)  # a view: the forbidden one-liner, not even a copy
