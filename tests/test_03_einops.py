"""Problem 3: einops. Expected tensors come from plain PyTorch ops (matmul, reshape, loops over heads,
sum, amax) in float64; FLOP counts from the closed form written in each case and, for the
matmul-shaped patterns, from torch's own FlopCounterMode."""

from __future__ import annotations

import pytest
import torch

from adapters import einops_ops as A
from adapters._instrument import FlopCounterMode
from tests.checks import VALID_FIRST, check_equal, check_raises, check_tensor, describe
from tests.tolerances import FLOAT64

pytestmark = pytest.mark.problem(3)
SEE = "handout/03_einops.md"
# float64 inputs: results may differ from the reference ops only by summation order.


@pytest.mark.points(1)
@pytest.mark.parametrize("batch, seq1, seq2, hidden", [(2, 3, 5, 4), (1, 7, 7, 16), (4, 1, 9, 3)])
def test_attention_scores(batch, seq1, seq2, hidden):
    q = torch.randn(batch, seq1, hidden, dtype=torch.float64)
    k = torch.randn(batch, seq2, hidden, dtype=torch.float64)
    check_tensor(A.run_attention_scores(q, k), q @ k.transpose(-2, -1), what="attention_scores",
                 inputs=f"queries={describe(q)}, keys={describe(k)}", see=f"{SEE} §3.1", **FLOAT64)


@pytest.mark.points(1)
@pytest.mark.parametrize("leading, heads, head_dim", [((2, 3), 4, 5), ((), 2, 3), ((2, 1, 3), 3, 1)])
def test_split_and_merge_heads(leading, heads, head_dim):
    x = torch.randn(*leading, heads * head_dim, dtype=torch.float64)
    expected = x.reshape(*leading, heads, head_dim)  # head h holds x[..., h*head_dim : (h+1)*head_dim]
    inputs = f"x={describe(x)}, num_heads={heads}"
    check_tensor(A.run_split_heads(x, heads), expected, what="split_heads", inputs=inputs, see=f"{SEE} §3.2")
    check_tensor(A.run_merge_heads(expected), x, what="merge_heads", inputs=f"x={describe(expected)}",
                 see=f"{SEE} §3.2")


@pytest.mark.points(2)
@pytest.mark.parametrize("leading, heads, head_in, head_out", [((2, 5), 4, 3, 6), ((3,), 1, 4, 2), ((), 3, 2, 2)])
def test_per_head_linear(leading, heads, head_in, head_out):
    x = torch.randn(*leading, heads * head_in, dtype=torch.float64)
    w = torch.randn(head_in, head_out, dtype=torch.float64)
    expected = torch.cat([x[..., h * head_in : (h + 1) * head_in] @ w for h in range(heads)], dim=-1)
    check_tensor(A.run_per_head_linear(x, w, heads), expected, what="per_head_linear",
                 inputs=f"x={describe(x)}, weight={describe(w)}, num_heads={heads}", see=f"{SEE} §3.3", **FLOAT64)


@pytest.mark.points(2)
def test_reductions():
    for shape in [(2, 3, 4), (5,), (3, 1, 2, 6)]:
        x = torch.randn(shape, dtype=torch.float64)
        check_tensor(A.run_sum_hidden(x), x.sum(-1), what="sum_hidden", inputs=f"x={describe(x)}",
                     see=f"{SEE} §3.4", **FLOAT64)
    x = torch.randn(3, 7, 5, dtype=torch.float64)
    check_tensor(A.run_max_over_sequence(x), x.amax(dim=1), what="max_over_sequence", inputs=f"x={describe(x)}",
                 see=f"{SEE} §3.4")


# (pattern, shape_a, shape_b, FLOPs): two FLOPs (a multiply and an add) per term of the full product.
EINSUM_CASES = [
    ("batch d_in, d_in d_out -> batch d_out", (8, 16), (16, 4), 2 * 8 * 16 * 4),
    ("batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2", (2, 5, 7), (2, 3, 7), 2 * 2 * 5 * 3 * 7),
    ("i, j -> i j", (3,), (4,), 2 * 3 * 4),
    ("heads hidden, hidden -> heads", (6, 10), (10,), 2 * 6 * 10),
    ("b t h d, b s h d -> b h t s", (2, 3, 4, 5), (2, 6, 4, 5), 2 * 2 * 3 * 4 * 5 * 6),
    ("x y, y z -> x", (3, 4), (4, 5), 2 * 3 * 4 * 5),
]


@pytest.mark.points(2)
def test_einsum_flops_closed_forms():
    for pattern, shape_a, shape_b, expected in EINSUM_CASES:
        check_equal(A.run_einsum_flops(pattern, list(shape_a), list(shape_b)), expected, what="einsum FLOPs",
                    inputs=f"{pattern!r}, {shape_a}, {shape_b}", see=f"{SEE} §3.5")


@pytest.mark.points(1)
def test_einsum_flops_agree_with_torch_flop_counter():
    # Matmul-shaped contractions run as (batched) matmuls, whose FLOPs PyTorch counts itself.
    for pattern, equation, shape_a, shape_b in [
        ("batch d_in, d_in d_out -> batch d_out", "bi,io->bo", (8, 16), (16, 4)),
        ("batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2", "bsh,bth->bst", (2, 5, 7), (2, 3, 7)),
    ]:
        with FlopCounterMode(display=False) as counter:
            torch.einsum(equation, torch.randn(shape_a), torch.randn(shape_b))
        check_equal(A.run_einsum_flops(pattern, list(shape_a), list(shape_b)), counter.get_total_flops(),
                    what="einsum FLOPs (expected: torch.utils.flop_counter.FlopCounterMode)",
                    inputs=f"{pattern!r}, {shape_a}, {shape_b}", see=f"{SEE} §3.5")


@pytest.mark.points(1)
def test_einsum_flops_rejects_inconsistent_shapes():
    check_equal(A.run_einsum_flops("i j, j k -> i k", [2, 3], [3, 5]), 60, inputs="'i j, j k -> i k', (2, 3), (3, 5)",
                see=f"{SEE} §3.5", what=VALID_FIRST)
    for pattern, shape_a, shape_b in [("i j, j k -> i k", (2, 3), (4, 5)), ("i j, j k -> i k", (2, 3, 1), (3, 5))]:
        check_raises(ValueError, A.run_einsum_flops, pattern, list(shape_a), list(shape_b),
                     what="a dimension with two sizes, or a shape of the wrong length", see=f"{SEE} §3.5")


@pytest.mark.points(1)
def test_each_function_is_written_with_einops():
    # The adapter counts einops operations (einsum, rearrange, reduce, repeat, pack, unpack, their layers) in each call.
    x = torch.randn(2, 3, 4, dtype=torch.float64)
    calls = {"attention_scores": [x, torch.randn(2, 5, 4, dtype=torch.float64)], "split_heads": [x, 2],
             "merge_heads": [torch.randn(2, 3, 2, 2, dtype=torch.float64)],
             "per_head_linear": [x, torch.randn(2, 3, dtype=torch.float64), 2], "sum_hidden": [x],
             "max_over_sequence": [x]}
    without = [name for name, args in calls.items() if A.run_counting_einops_calls(name, args)["einops_calls"] < 1]
    check_equal(without, [], what="functions that made no einops call: write each with einops' einsum, rearrange "
                "or reduce (the problem's point is naming every axis)", inputs="each of the six tensor functions "
                "on a small float64 input", see=f"{SEE}, Functions to write (§3.1-§3.4)")
