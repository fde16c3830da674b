"""Problem 2: strides, views and storage. Expected layouts come from applying the same operation to a
real tensor and reading `shape`, `stride()` and `storage_offset()`; whether a view exists comes from
calling `Tensor.view` and seeing whether it raises."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import torch

from adapters import strides as A
from tests.checks import check_equal, check_tensor, describe

pytestmark = pytest.mark.problem(2)
SEE = "handout/02_strides.md"


def layout(x: torch.Tensor) -> tuple[list[int], list[int], int]:
    return list(x.shape), list(x.stride()), x.storage_offset()


def random_view(rng: random.Random) -> torch.Tensor:
    """A view of a fresh storage made by PyTorch ops: slicing with steps, permuting, adding size-1 dims."""
    shape = [rng.randint(1, 6) for _ in range(rng.randint(1, 4))]
    x = torch.arange(math.prod(shape)).reshape(shape)
    index = []
    for size in shape:
        start = rng.randint(0, size - 1)
        index.append(slice(start, rng.randint(start + 1, size), rng.randint(1, 2)))
    x = x[tuple(index)]
    x = x.permute(rng.sample(range(x.dim()), x.dim()))
    if rng.random() < 0.3:
        x = x.unsqueeze(rng.randint(0, x.dim()))
    return x


def random_index(rng: random.Random, shape: list[int]) -> list:
    """A basic index in adapter form: ints (possibly negative) and [start, stop, step] slices."""
    index = []
    for size in shape[: rng.randint(0, len(shape))]:
        if rng.random() < 0.35:
            index.append(rng.randint(-size, size - 1))
        else:
            bound = lambda: rng.choice([None, rng.randint(-size - 2, size + 2)])  # noqa: E731
            index.append([bound(), bound(), rng.choice([None, 1, 2, 3])])
    return index


@pytest.mark.points(1)
def test_contiguous_strides():
    for shape in [(4, 4), (2, 3, 4), (5,), (), (3, 0, 2), (1, 7, 1), (2, 1, 3), (6, 5, 4, 3)]:
        check_equal(A.run_contiguous_strides(list(shape)), list(torch.empty(shape).stride()),
                    what="contiguous strides", inputs=shape, see=f"{SEE} §2.1")


@pytest.mark.points(1)
def test_storage_index_worked_example():
    check_equal(A.run_storage_index([1, 2], [4, 1], 0), 6, what="storage index of element (1, 2) of a (4, 4) tensor",
                inputs="index=(1, 2), strides=(4, 1), offset=0", see=f"{SEE} §2.1")


@pytest.mark.points(2)
def test_storage_index_on_random_views(seed_everything):
    rng = random.Random(seed_everything)
    for _ in range(200):
        x = random_view(rng)  # storage holds 0, 1, 2, ...: an element's value is its storage index
        index = [rng.randrange(size) for size in x.shape]
        shape, strides, offset = layout(x)
        check_equal(A.run_storage_index(index, strides, offset), int(x[tuple(index)]), what="storage index",
                    inputs=f"index={index}, shape={shape}, strides={strides}, offset={offset}", see=f"{SEE} §2.1")


@pytest.mark.points(2)
def test_is_contiguous(seed_everything):
    rng = random.Random(seed_everything)
    cases = [((2, 3), (3, 1)), ((3, 2), (1, 3)), ((1, 4), (100, 1)), ((4, 1), (1, 100)), ((2, 0, 3), (1, 1, 1)),
             ((2, 2), (1, 2)), ((2, 3), (4, 1)), ((3, 4), (0, 1)), ((), ()), ((5,), (2,))]
    cases += [tuple(layout(random_view(rng))[:2]) for _ in range(200)]
    for shape, strides in cases:
        expected = torch.empty_strided(shape, strides).is_contiguous()
        check_equal(A.run_is_contiguous(list(shape), list(strides)), expected, what="is_contiguous",
                    inputs=f"shape={tuple(shape)}, strides={tuple(strides)}", see=f"{SEE} §2.2")


@pytest.mark.points(2)
def test_transpose_layout(seed_everything):
    rng = random.Random(seed_everything)
    for _ in range(100):
        x = random_view(rng)
        dim0, dim1 = rng.randint(-x.dim(), x.dim() - 1), rng.randint(-x.dim(), x.dim() - 1)
        check_equal(A.run_transpose_layout(*layout(x), dim0, dim1), layout(x.transpose(dim0, dim1)),
                    what="[shape, strides, offset] after transpose",
                    inputs=f"layout={layout(x)}, dim0={dim0}, dim1={dim1}", see=f"{SEE} §2.3")


@pytest.mark.points(2)
def test_permute_layout(seed_everything):
    rng = random.Random(seed_everything)
    for _ in range(100):
        x = random_view(rng)
        dims = [d - x.dim() if rng.random() < 0.3 else d for d in rng.sample(range(x.dim()), x.dim())]
        check_equal(A.run_permute_layout(*layout(x), dims), layout(x.permute(dims)),
                    what="[shape, strides, offset] after permute", inputs=f"layout={layout(x)}, dims={dims}",
                    see=f"{SEE} §2.3")


@pytest.mark.points(3)
def test_slice_layout(seed_everything):
    rng = random.Random(seed_everything)
    for _ in range(300):
        x = random_view(rng)
        index = random_index(rng, list(x.shape))
        check_slice_layout(x, index, section="§2.3")


def check_slice_layout(x: torch.Tensor, index: list, section: str) -> None:
    """slice_layout of x's layout and a basic index (an int or [start, stop, step] per dimension)
    against the layout of PyTorch's own view."""
    view = x[tuple(i if isinstance(i, int) else slice(*i) for i in index)]
    got, expected = A.run_slice_layout(*layout(x), index), layout(view)
    if view.numel() == 0:  # an empty view's offset addresses nothing, so any offset is right
        got, expected = got[:2], expected[:2]
    check_equal(got, expected, what="[shape, strides, offset] after basic indexing",
                inputs=f"layout={layout(x)}, index={index} (a list is [start, stop, step])", see=f"{SEE} {section}")


@pytest.mark.points(2)
def test_shares_storage():
    x = torch.arange(12.0).reshape(3, 4)
    t = x.T
    array = np.arange(6.0)
    pairs = {
        "x, x[1] (a row)": (x, x[1], True),
        "x, x[:, 2] (a column)": (x, x[:, 2], True),
        "x, x.T": (x, t, True),
        "x, x.view(4, 3)": (x, x.view(4, 3), True),
        "x, x[1:, ::2]": (x, x[1:, ::2], True),
        "x, x.contiguous() (already contiguous: the same tensor)": (x, x.contiguous(), True),
        "x, x.reshape(6, 2) (contiguous input: a view)": (x, x.reshape(6, 2), True),
        "x[0], x[2] (two rows)": (x[0], x[2], True),
        "x, x.detach()": (x, x.detach(), True),
        "x, torch.from_numpy(x.numpy()) (same memory, new tensor object)": (x, torch.from_numpy(x.numpy()), True),
        "torch.from_numpy(a), torch.from_numpy(a)[2:] (one numpy array)": (torch.from_numpy(array),
                                                                           torch.from_numpy(array)[2:], True),
        "x, x.clone()": (x, x.clone(), False),
        "x, x.T.contiguous() (a copy)": (x, t.contiguous(), False),
        "x, x.T.reshape(12) (non-contiguous input: a copy)": (x, t.reshape(12), False),
        "x, torch.arange(12.0).reshape(3, 4) (equal values, other storage)": (x, torch.arange(12.0).reshape(3, 4),
                                                                              False),
    }
    for name, (a, b, expected) in pairs.items():
        check_equal(A.run_shares_storage(a, b), expected, what="shares_storage", inputs=name, see=f"{SEE} §2.4")


def view_succeeds(x: torch.Tensor, new_shape: list[int]) -> bool:
    try:
        x.view(new_shape)
    except RuntimeError:
        return False
    return True


def candidate_shapes(rng: random.Random, shape: list[int]) -> list[list[int]]:
    """New shapes with the same numel: merge neighbours, split a dimension, add or drop size-1 dims."""
    out = [[math.prod(shape)]]
    for _ in range(6):
        s = list(shape)
        op = rng.choice(["merge", "split", "unsqueeze", "squeeze", "factor"])
        if op == "merge" and len(s) > 1:
            i = rng.randrange(len(s) - 1)
            s[i : i + 2] = [s[i] * s[i + 1]]
        elif op == "split":
            i = rng.randrange(len(s))
            factors = [f for f in range(2, s[i]) if s[i] % f == 0]
            if factors:
                f = rng.choice(factors)
                s[i : i + 1] = [f, s[i] // f]
        elif op == "unsqueeze":
            s.insert(rng.randint(0, len(s)), 1)
        elif op == "squeeze":
            s = [d for d in s if d != 1] or [1]
        else:
            n, s = math.prod(s), []
            while n > 1:
                f = rng.choice([f for f in range(2, n + 1) if n % f == 0])
                s.append(f)
                n //= f
            s = s or [1]
        out.append(s)
    return out


@pytest.mark.points(1)
def test_can_view_worked_examples():
    x = torch.arange(6).reshape(2, 3)
    cases = [
        ("x.transpose(1, 0).view(2, 3)", layout(x.T)[:2], [2, 3], False),
        ("x.transpose(1, 0).view(3, 1, 2) (a size-1 dim added)", layout(x.T)[:2], [3, 1, 2], True),
        ("x.view(6)", layout(x)[:2], [6], True),
        ("x.view(4) (wrong numel)", layout(x)[:2], [4], False),
        ("x.view(2, 2, 3) (more elements than x)", layout(x)[:2], [2, 2, 3], False),
        ("a (2, 1, 4) tensor whose size-1 dim has stride 99, .view(8)", ([2, 1, 4], [4, 99, 1]), [8], True),
        ("a (3, 1, 2) tensor whose size-1 dim has stride 1, .view(6)", ([3, 1, 2], [2, 1, 1]), [6], True),
        ("a (1, 2, 1, 3) tensor with odd size-1 strides, .view(3, 2)", ([1, 2, 1, 3], [7, 3, 5, 1]), [3, 2], True),
        ("a (2, 1, 3) tensor with a gap after dim 0, .view(6)", ([2, 1, 3], [4, 3, 1]), [6], False),
    ]
    for name, (shape, strides), new_shape, expected in cases:
        assert view_succeeds(torch.empty_strided(shape, strides), new_shape) == expected  # the cases are right
        check_equal(A.run_can_view(shape, strides, new_shape), expected, what="can_view",
                    inputs=f"{name}: shape={shape}, strides={strides}, new_shape={new_shape}", see=f"{SEE} §2.5")


@pytest.mark.points(4)
def test_can_view_matches_torch(seed_everything):
    rng = random.Random(seed_everything)
    cases = []
    for _ in range(150):
        x = random_view(rng)
        cases += [(x, new_shape) for new_shape in candidate_shapes(rng, list(x.shape))]
    outcomes = [view_succeeds(x, new_shape) for x, new_shape in cases]
    assert any(outcomes) and not all(outcomes)  # the sample has both answers
    for (x, new_shape), expected in zip(cases, outcomes):
        shape, strides, _ = layout(x)
        check_equal(A.run_can_view(shape, strides, new_shape), expected,
                    what="can_view (expected: whether Tensor.view raises)",
                    inputs=f"shape={shape}, strides={strides}, new_shape={new_shape}", see=f"{SEE} §2.5")


@pytest.mark.points(3)
def test_materialize_matches_as_strided(seed_everything):
    rng = random.Random(seed_everything)
    cases = [(torch.arange(10.0), [3, 4], [1, 2], 1), (torch.arange(5, dtype=torch.int32), [2, 3], [0, 1], 2),
             (torch.arange(4.0), [], [], 3)]
    for _ in range(60):
        x = random_view(rng)
        cases.append((torch.randn(x.untyped_storage().nbytes() // 8), *layout(x)))
    for storage, shape, strides, offset in cases:
        want = torch.as_strided(storage, shape, strides, offset).clone()
        got = A.run_materialize(storage, shape, strides, offset)
        inputs = f"storage={describe(storage)}, shape={shape}, strides={strides}, offset={offset}"
        check_equal(got["forbidden"], [], what="functions that build a strided view for you (not allowed here)",
                    inputs=inputs, see=f"{SEE} §2.6")
        check_tensor(got["result"], want, what="materialize", inputs=inputs, see=f"{SEE} §2.6")
        check_equal(got["writes_reach_storage"], False, inputs=inputs, see=f"{SEE} §2.6",
                    what="writing to the result changed the storage: materialize must copy")
