"""Hidden tests, Problem 2: layouts drawn at random (hypothesis, derandomized), with size-0 and size-1
dimensions, zero strides (expanded tensors), offsets and negative indices. Every expected layout
is read off a real tensor (`shape`, `stride()`, `storage_offset()`); whether a view exists is
whether `Tensor.view` raises.

PYTEST_DONT_REWRITE: a failure shows the check's message, never this file's source.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from adapters import strides as A
from tests.checks import check_equal, check_tensor, describe
from tests.test_02_strides import check_slice_layout, layout

pytestmark = pytest.mark.problem(2)
SEE = "handout/02_strides.md"


@st.composite
def views(draw, min_size: int = 0, max_dims: int = 4, expand: bool = True) -> torch.Tensor:
    """A tensor made by PyTorch ops on a fresh storage of 0, 1, 2, ...: slicing with steps and
    offsets, permuting, unsqueezing, expanding a size-1 dimension (stride 0)."""
    shape = draw(st.lists(st.integers(max(min_size, 1), 5), min_size=0, max_size=max_dims))
    x = torch.arange(max(math.prod(shape), 1))[: math.prod(shape)].reshape(shape)
    index = []
    for size in shape:
        start = draw(st.integers(0, size - 1))
        stop = draw(st.integers(start + (1 if min_size else 0), size))
        index.append(slice(start, stop, draw(st.integers(1, 3))))
    x = x[tuple(index)]
    x = x.permute(draw(st.permutations(range(x.dim()))))
    if draw(st.booleans()):
        x = x.unsqueeze(draw(st.integers(0, x.dim())))
    if expand and x.dim() and draw(st.booleans()):
        ones = [d for d in range(x.dim()) if x.shape[d] == 1]
        if ones:
            sizes = list(x.shape)
            sizes[draw(st.sampled_from(ones))] = draw(st.integers(1, 4))
            x = x.expand(sizes)
    return x


@pytest.mark.points(1)
@given(st.lists(st.integers(0, 6), max_size=6))
def test_contiguous_strides_of_any_shape(shape):
    check_equal(A.run_contiguous_strides(shape), list(torch.empty(shape).stride()), what="contiguous strides",
                inputs=shape, see=f"{SEE} §2.1")


@pytest.mark.points(1)
@given(views(min_size=1), st.data())
def test_storage_index_of_any_element(x, data):
    index = [data.draw(st.integers(0, size - 1)) for size in x.shape]
    shape, strides, offset = layout(x)
    check_equal(A.run_storage_index(index, strides, offset), int(x[tuple(index)]) if x.numel() else offset,
                what="storage index", inputs=f"index={index}, shape={shape}, strides={strides}, offset={offset}",
                see=f"{SEE} §2.1")


@pytest.mark.points(2)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 30)), max_size=5))
def test_is_contiguous_on_arbitrary_strides(dims):
    shape, strides = [s for s, _ in dims], [t for _, t in dims]
    expected = torch.empty_strided(shape, strides).is_contiguous()
    check_equal(A.run_is_contiguous(shape, strides), expected, what="is_contiguous (expected: Tensor.is_contiguous())",
                inputs=f"shape={shape}, strides={strides}", see=f"{SEE} §2.2")


@pytest.mark.points(1)
@given(views(), st.data())
def test_transpose_and_permute_of_any_view(x, data):
    if x.dim() == 0:
        return
    dim0, dim1 = (data.draw(st.integers(-x.dim(), x.dim() - 1)) for _ in range(2))
    check_equal(A.run_transpose_layout(*layout(x), dim0, dim1), layout(x.transpose(dim0, dim1)),
                what="[shape, strides, offset] after transpose", inputs=f"layout={layout(x)}, dim0={dim0}, dim1={dim1}",
                see=f"{SEE} §2.3")
    dims = [d - x.dim() if data.draw(st.booleans()) else d for d in data.draw(st.permutations(range(x.dim())))]
    check_equal(A.run_permute_layout(*layout(x), dims), layout(x.permute(dims)),
                what="[shape, strides, offset] after permute", inputs=f"layout={layout(x)}, dims={dims}",
                see=f"{SEE} §2.3")


@st.composite
def basic_index(draw, shape: list[int]) -> list:
    index = []
    for size in shape[: draw(st.integers(0, len(shape)))]:
        if size and draw(st.booleans()):
            index.append(draw(st.integers(-size, size - 1)))
        else:
            bound = st.one_of(st.none(), st.integers(-size - 3, size + 3))
            index.append([draw(bound), draw(bound), draw(st.one_of(st.none(), st.integers(1, 4)))])
    return index


@pytest.mark.points(2)
@given(views(), st.data())
def test_slice_layout_of_any_basic_index(x, data):
    check_slice_layout(x, data.draw(basic_index(list(x.shape))), section="§2.3")


@pytest.mark.points(1)
def test_shares_storage_of_less_common_views():
    x = torch.arange(12.0).reshape(3, 4)
    pairs = {
        "x, x.view(torch.int32) (another dtype, the same bytes)": (x, x.view(torch.int32), True),
        "x, x[None] (a new leading dimension)": (x, x[None], True),
        "x[:1], x[:1].expand(5, 4) (stride 0)": (x[:1], x[:1].expand(5, 4), True),
        "x[2:], x[:1] (rows that do not overlap)": (x[2:], x[:1], True),
        "x.flatten() of contiguous x (a view)": (x, x.flatten(), True),
        "x, x.T.flatten() (a copy)": (x, x.T.flatten(), False),
        "x, x * 1 (a new tensor)": (x, x * 1, False),
        "two numpy arrays with equal values": (torch.from_numpy(np.arange(4.0)), torch.from_numpy(np.arange(4.0)),
                                               False),
        "x, torch.empty_like(x)": (x, torch.empty_like(x), False),
    }
    for name, (a, b, expected) in pairs.items():
        check_equal(A.run_shares_storage(a, b), expected, what="shares_storage", inputs=name, see=f"{SEE} §2.4")
        check_equal(A.run_shares_storage(b, a), expected, what="shares_storage, arguments swapped", inputs=name,
                    see=f"{SEE} §2.4")


def view_succeeds(x: torch.Tensor, new_shape: list[int]) -> bool:
    try:
        x.view(new_shape)
    except RuntimeError:
        return False
    return True


@st.composite
def reshapes(draw, numel: int) -> list[int]:
    """A shape with `numel` elements: a random factorization, with size-1 dimensions sprinkled in."""
    shape, left = [], numel
    while left > 1:
        factor = draw(st.sampled_from([f for f in range(2, left + 1) if left % f == 0]))
        shape.append(factor)
        left //= factor
    shape = draw(st.permutations(shape)) if shape else []
    for _ in range(draw(st.integers(0, 2))):
        shape.insert(draw(st.integers(0, len(shape))), 1)
    if draw(st.integers(0, 9)) == 0:  # now and then a wrong element count
        shape.append(2)
    return list(shape)


@pytest.mark.points(2)
@given(views(min_size=1, expand=True), st.data())
def test_can_view_agrees_with_tensor_view_on_random_layouts(x, data):
    new_shape = data.draw(reshapes(x.numel()))
    shape, strides, _ = layout(x)
    check_equal(A.run_can_view(shape, strides, new_shape), view_succeeds(x, new_shape),
                what="can_view (expected: whether Tensor.view raises)",
                inputs=f"shape={shape}, strides={strides}, new_shape={new_shape}", see=f"{SEE} §2.5")


MATERIALIZE_DTYPES = [torch.float32, torch.int64, torch.float16, torch.bfloat16, torch.bool, torch.uint8]


@pytest.mark.points(2)
@given(views(), st.sampled_from(MATERIALIZE_DTYPES), st.integers(0, 5))
def test_materialize_any_layout_and_dtype(x, dtype, extra):
    shape, strides, offset = layout(x)
    length = x.untyped_storage().nbytes() // x.element_size() + extra
    storage = (torch.randn(length) * 100).to(dtype)
    want = torch.as_strided(storage, shape, strides, offset).clone()
    got = A.run_materialize(storage, shape, strides, offset)
    inputs = f"storage={describe(storage)}, shape={shape}, strides={strides}, offset={offset}"
    check_equal(got["forbidden"], [], what="functions that build a strided view for you (not allowed here)",
                inputs=inputs, see=f"{SEE} §2.6")
    check_tensor(got["result"], want, what="materialize", inputs=inputs, see=f"{SEE} §2.6")
    check_equal(got["writes_reach_storage"], False, inputs=inputs, see=f"{SEE} §2.6",
                what="writing to the result changed the storage: materialize must copy")
