"""Hidden tests, Problem 3: random shapes (size-1 dimensions, many leading dimensions), float32 and
non-contiguous inputs, all-negative values for a maximum, and random einsum patterns. Expected
tensors come from plain PyTorch ops; FLOP counts from the closed form written here.

PYTEST_DONT_REWRITE: a failure shows the check's message, never this file's source.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from adapters import einops_ops as A
from tests.checks import VALID_FIRST, check_equal, check_raises, check_tensor, describe
from tests.tolerances import FLOAT32

pytestmark = pytest.mark.problem(3)
SEE = "handout/03_einops.md"
sizes = st.integers(1, 5)


def random(*shape: int, dtype=torch.float32) -> torch.Tensor:
    return torch.randn(*shape, dtype=dtype)


@pytest.mark.points(1)
@given(sizes, sizes, sizes, sizes)
def test_attention_scores_of_any_shape(batch, seq1, seq2, hidden):
    q, k = random(batch, seq1, hidden), random(batch, seq2, hidden)
    check_tensor(A.run_attention_scores(q, k), q @ k.transpose(-2, -1), what="attention_scores",
                 inputs=f"queries={describe(q)}, keys={describe(k)}", see=f"{SEE} §3.1", **FLOAT32)


@pytest.mark.points(1)
@given(st.lists(sizes, max_size=4), sizes, sizes)
def test_split_and_merge_heads_of_any_shape(leading, heads, head_dim):
    x = random(*leading, heads * head_dim)
    expected = torch.stack([x[..., h * head_dim : (h + 1) * head_dim] for h in range(heads)], dim=-2)
    inputs = f"x={describe(x)}, num_heads={heads}"
    check_tensor(A.run_split_heads(x, heads), expected, what="split_heads", inputs=inputs, see=f"{SEE} §3.2")
    check_tensor(A.run_merge_heads(expected), x, what="merge_heads", inputs=f"x={describe(expected)}",
                 see=f"{SEE} §3.2")


@pytest.mark.points(1)
def test_split_and_merge_heads_of_non_contiguous_input():
    x = random(6, 4, 5).transpose(0, 2)  # (5, 4, 6), not contiguous
    expected = x.reshape(5, 4, 3, 2)
    check_tensor(A.run_split_heads(x, 3), expected, what="split_heads of a transposed tensor",
                 inputs="x = randn(6, 4, 5).transpose(0, 2), num_heads=3", see=f"{SEE} §3.2")
    merged_input = expected.transpose(0, 1)  # (4, 5, 3, 2), not contiguous
    check_tensor(A.run_merge_heads(merged_input), merged_input.reshape(4, 5, 6), what="merge_heads of a transposed "
                 "tensor", inputs="x = split.transpose(0, 1), shape (4, 5, 3, 2)", see=f"{SEE} §3.2")
    # Heads and head_dim swapped in memory: no view can merge them (x.view(..., -1) raises), a copy can.
    swapped = random(4, 5, 2, 3).transpose(-1, -2)  # (4, 5, 3, 2)
    check_tensor(A.run_merge_heads(swapped), swapped.reshape(4, 5, 6), what="merge_heads of heads and head_dim "
                 "transposed", inputs="x = randn(4, 5, 2, 3).transpose(-1, -2), shape (4, 5, 3, 2)", see=f"{SEE} §3.2")


@pytest.mark.points(1)
@given(st.lists(sizes, max_size=3), sizes, sizes, sizes)
def test_per_head_linear_of_any_shape(leading, heads, head_in, head_out):
    x, w = random(*leading, heads * head_in), random(head_in, head_out)
    expected = torch.cat([x[..., h * head_in : (h + 1) * head_in] @ w for h in range(heads)], dim=-1)
    check_tensor(A.run_per_head_linear(x, w, heads), expected, what="per_head_linear",
                 inputs=f"x={describe(x)}, weight={describe(w)}, num_heads={heads}", see=f"{SEE} §3.3", **FLOAT32)


@pytest.mark.points(1)
def test_reductions_of_one_dimension_and_of_negative_values():
    x = random(7)
    check_tensor(A.run_sum_hidden(x), x.sum(-1), what="sum_hidden of a 1-D tensor (a 0-d result)",
                 inputs=f"x={describe(x)}", see=f"{SEE} §3.4", **FLOAT32)
    negative = -torch.rand(2, 5, 3) - 1.0  # every value below -1: a maximum must not start at 0
    check_tensor(A.run_max_over_sequence(negative), negative.amax(dim=1), what="max_over_sequence of negative values",
                 inputs=f"x={describe(negative)}, all values in (-2, -1]", see=f"{SEE} §3.4")
    single = random(3, 1, 4)
    check_tensor(A.run_max_over_sequence(single), single[:, 0], what="max_over_sequence of a length-1 sequence",
                 inputs=f"x={describe(single)}", see=f"{SEE} §3.4")


@pytest.mark.points(1)
@given(st.lists(sizes, min_size=1, max_size=4))
def test_sum_hidden_keeps_the_dtype(shape):
    x = torch.randint(-5, 5, shape, dtype=torch.int64).to(torch.float64)
    check_tensor(A.run_sum_hidden(x), x.sum(-1), what="sum_hidden of float64 integers (exact)",
                 inputs=f"x={describe(x)}", see=f"{SEE} §3.4")


NAMES = ["batch", "seq", "d_model", "h", "i", "j", "k2", "x"]


@st.composite
def contractions(draw) -> tuple[str, list[int], list[int], int]:
    """A two-operand pattern with irregular spacing, its shapes, and its FLOPs by the closed form."""
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=5, unique=True))
    size = {name: draw(st.integers(1, 7)) for name in names}
    a = draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True))
    b = draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True))
    used = list(dict.fromkeys(a + b))
    out = [n for n in used if draw(st.booleans())]
    space = lambda: " " * draw(st.integers(0, 2))  # noqa: E731
    pattern = f"{space()}{' '.join(a)}{space()},{space()}{'  '.join(b)}{space()}->{space()}{' '.join(out)}{space()}"
    flops = 2 * math.prod(size[n] for n in used)
    return pattern, [size[n] for n in a], [size[n] for n in b], flops


@pytest.mark.points(1)
@given(contractions())
def test_einsum_flops_of_random_patterns(case):
    pattern, shape_a, shape_b, expected = case
    check_equal(A.run_einsum_flops(pattern, shape_a, shape_b), expected, what="einsum FLOPs (2 per term of the "
                "product over every name)", inputs=f"{pattern!r}, {shape_a}, {shape_b}", see=f"{SEE} §3.5")


@pytest.mark.points(1)
def test_einsum_flops_rejects_more_inconsistent_shapes():
    check_equal(A.run_einsum_flops("a b c, c -> a b", [1, 2, 3], [3]), 12, inputs="'a b c, c -> a b', (1, 2, 3), (3,)",
                see=f"{SEE} §3.5", what=VALID_FIRST)
    for pattern, shape_a, shape_b in [("a b, b c -> a c", (2, 3), (3,)), ("a, a -> ", (2,), (3,)),
                                      ("a b c, c -> a b", (1, 2, 3), (4,)), ("x, y -> x y", (), (2,)),
                                      # sizes 1 and n are two sizes too (torch.einsum would broadcast them)
                                      ("a b, b c -> a c", (2, 1), (4, 5)), ("a, a -> a", (3,), (1,))]:
        check_raises(ValueError, A.run_einsum_flops, pattern, list(shape_a), list(shape_b),
                     what=f"{pattern!r} with shapes {shape_a} and {shape_b}: a dimension with two sizes (1 and n "
                          "included: no broadcasting), or a shape of the wrong length", see=f"{SEE} §3.5")
