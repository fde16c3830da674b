"""Problem 9: token files and batches. Token files are written here with numpy's tofile(); expected
windows are read back from the array the test wrote; start positions are counted over many seeded
draws against bounds START_SIGMAS standard errors wide. How much of a file a call read is measured in the
operating system's page cache, on a fresh sparse file."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from adapters import data as A
from adapters._instrument import FileReads
from tests.checks import (
    VALID_FIRST,
    check_equal,
    check_form,
    check_raises,
    check_tensor,
    explain,
    write_new_file,
    write_token_file,
)

pytestmark = pytest.mark.problem(9)
SEE = "handout/09_data.md"
START_SIGMAS = 5.5  # each start's count: a correct sampler passes all ten bounds but for 4e-7 per run


def write_tokens(path, tokens: np.ndarray) -> str:
    """`tokens` as a raw token file (tofile's bytes) that open_tokens may also map for writing (see
    write_token_file): the read-only mapping is READ_ONLY's tests' property alone."""
    return write_token_file(path, tokens.tobytes())


# The property of test_open_tokens_maps_the_raw_file alone (here; a hidden test checks more dtypes).
READ_ONLY = ("(is an np.memmap, writeable, dtype): the mapping must be read-only, "
             "np.memmap(path, dtype=..., mode='r'); numpy's default mode 'r+' maps the file for writing, and would "
             "raise PermissionError on a dataset you may only read")


DTYPE_ELSEWHERE = "values compared as int64; that the tensors are int64 is test_get_batch_returns_shifted_windows's"


def as_int64(tensor):
    """An integer tensor's values as int64, so that a test of windows checks values, not the dtype
    (test_get_batch_returns_shifted_windows checks the dtype); anything else is returned as it is."""
    if isinstance(tensor, torch.Tensor) and not tensor.is_floating_point() and not tensor.is_complex():
        return tensor.to(torch.int64)
    return tensor


def check_batch_form(got: dict, batch_size: int, context_length: int, *, inputs: str) -> None:
    """get_batch's inputs and targets are int64 tensors of shape (batch_size, context_length): checked
    before any is read (a stride-0 view of 33.5 million rows over 2 bytes costs a reply of 156 bytes,
    and 1.5 GiB of this process to list)."""
    for name in ("inputs", "targets"):
        check_form(got[name], "Tensor", (batch_size, context_length), torch.int64,
                   what=f"{name}: (type, shape, dtype)", inputs=inputs, see=f"{SEE} §9.2")


def listed_tokens(got: dict, count: int, *, inputs: str) -> list[int]:
    """open_tokens' tokens as a list, once they are checked to be an array of `count` tokens (a
    stride-0 view claiming 33.5 million over 2 bytes costs a reply of 150 bytes, and 1.2 GiB of this
    process to list)."""
    check_form(got["tokens"], "ndarray", (count,), what="the tokens: (type, shape)", inputs=inputs, see=f"{SEE} §9.1")
    return got["tokens"].tolist()


def starts_of(inputs: torch.Tensor, first_token: int) -> list[int]:
    """Start positions of windows sampled from np.arange(first_token, ...)."""
    return (inputs[:, 0] - first_token).tolist()


@pytest.mark.points(1)
@pytest.mark.parametrize("dtype, low, high", [("uint16", 0, 2**16), ("int32", -(2**31), 2**31)])
def test_open_tokens_maps_the_raw_file(tmp_path, dtype, low, high):
    tokens = np.random.randint(low, high, size=1000, dtype=np.int64).astype(dtype)
    got = A.run_open_tokens(write_tokens(tmp_path / "tokens.bin", tokens), dtype)
    inputs = f"1000 {dtype} tokens written with tofile()"
    check_equal((got["is_memmap"], got["writeable"], got["dtype"]), (True, False, dtype),
                what=READ_ONLY, inputs=inputs, see=f"{SEE} §9.1")
    assert np.array_equal(got["tokens"], tokens), explain("the tokens read back", inputs=inputs,
                                                         expected=tokens[:8], got=got["tokens"][:8], see=f"{SEE} §9.1")


@pytest.mark.points(1)
def test_open_tokens_rejects_a_wrong_size_or_a_float_dtype(tmp_path):
    good = write_tokens(tmp_path / "good.bin", np.arange(8, dtype=np.int32))
    check_equal(listed_tokens(A.run_open_tokens(good, "int32"), 8, inputs="8 int32 tokens"), list(range(8)),
                inputs="8 int32 tokens", see=f"{SEE} §9.1", what=VALID_FIRST)
    odd = tmp_path / "odd.bin"
    write_new_file(odd, bytes(7))
    check_raises(ValueError, A.run_open_tokens, str(odd), "int32", see=f"{SEE} §9.1",
                 what="a 7-byte file cannot hold 4-byte tokens")
    empty = tmp_path / "empty.bin"
    write_new_file(empty, b"")
    check_raises(ValueError, A.run_open_tokens, str(empty), "uint16", see=f"{SEE} §9.1", what="an empty token file")
    floats = write_tokens(tmp_path / "floats.bin", np.zeros(8, dtype=np.float32))
    check_raises(ValueError, A.run_open_tokens, floats, "float32", see=f"{SEE} §9.1",
                 what="a float dtype is not a token dtype")


@pytest.mark.points(2)
@pytest.mark.parametrize("dtype", ["uint16", "int32"])
def test_get_batch_returns_shifted_windows(dtype, seed_everything):
    first, batch_size, context_length = 100, 8, 5
    tokens = np.arange(first, first + 200).astype(dtype)
    got = A.run_get_batch(tokens, batch_size, context_length, "cpu", seed_everything)
    inputs = f"data = np.arange(100, 300) as {dtype}, batch_size=8, context_length=5"
    check_batch_form(got, batch_size, context_length, inputs=inputs)
    starts = torch.tensor(starts_of(got["inputs"], first))
    expected_inputs = torch.from_numpy(tokens.astype(np.int64))[starts[:, None] + torch.arange(context_length)]
    check_tensor(got["inputs"], expected_inputs, what="inputs: rows of consecutive tokens", inputs=inputs,
                 see=f"{SEE} §9.2")
    check_tensor(got["targets"], expected_inputs + 1, what="targets: the inputs shifted by one token", inputs=inputs,
                 see=f"{SEE} §9.2")


@pytest.mark.points(2)
def test_get_batch_starts_are_uniform_over_every_valid_start(seed_everything):
    context_length, valid_starts, draws = 6, 10, 20_000
    first = 1000
    tokens = np.arange(first, first + context_length + valid_starts, dtype=np.int32)
    counts = np.zeros(len(tokens), dtype=np.int64)
    inputs = f"{len(tokens)} tokens, context_length={context_length}: starts 0..{valid_starts - 1} are valid; " \
             f"{draws} windows"
    for call in range(4):
        got = A.run_get_batch(tokens, draws // 4, context_length, "cpu", seed_everything + call)
        check_batch_form(got, draws // 4, context_length, inputs=inputs)
        np.add.at(counts, starts_of(got["inputs"], first), 1)
    expected, p = draws / valid_starts, 1 / valid_starts
    slack = START_SIGMAS * math.sqrt(draws * p * (1 - p))
    check_equal(counts[valid_starts:].tolist(), [0] * context_length, what="windows starting past the last valid start",
                inputs=inputs, see=f"{SEE} §9.2")
    ok = all(abs(c - expected) <= slack for c in counts[:valid_starts])
    assert ok, explain("every valid start, the first and last included, drawn about equally often", inputs=inputs,
                       expected=f"each of starts 0..{valid_starts - 1}: {expected:.0f} +- {slack:.0f}",
                       got=counts[:valid_starts].tolist(), see=f"{SEE} §9.2")


@pytest.mark.points(1)
def test_get_batch_draws_from_the_generator(seed_everything):
    tokens = np.arange(10_000, dtype=np.uint16)
    first = A.run_get_batch(tokens, 16, 4, "cpu", seed_everything)["inputs"]
    again = A.run_get_batch(tokens, 16, 4, "cpu", seed_everything)["inputs"]
    other = A.run_get_batch(tokens, 16, 4, "cpu", seed_everything + 1)["inputs"]
    inputs = "get_batch(np.arange(10000), 16, 4) with generators seeded s, s and s + 1"
    assert torch.equal(first, again) and not torch.equal(first, other), explain(
        "the same generator state gives the same batch; another gives another", inputs=inputs,
        expected="equal, then different", got=f"{torch.equal(first, again)}, {not torch.equal(first, other)}",
        see=f"{SEE} §9.2")


@pytest.mark.points(1)
def test_get_batch_with_exactly_one_window():
    tokens = np.arange(7, dtype=np.int32)
    got = A.run_get_batch(tokens, 3, 6)
    inputs = "data = [0..6] (7 tokens), batch_size=3, context_length=6: only start 0 is valid"
    check_tensor(as_int64(got["inputs"]), torch.arange(6).repeat(3, 1), what=f"inputs ({DTYPE_ELSEWHERE})",
                 inputs=inputs, see=f"{SEE} §9.2")
    check_tensor(as_int64(got["targets"]), torch.arange(1, 7).repeat(3, 1), what=f"targets ({DTYPE_ELSEWHERE})",
                 inputs=inputs, see=f"{SEE} §9.2")


@pytest.mark.points(1)
def test_get_batch_on_the_cpu_pins_nothing():
    # Pinning page-locks host memory for a copy to a GPU (§9.4); for a CPU device there is no such copy.
    # The adapter lets a pin run on any machine (on one without a GPU PyTorch would raise), so this
    # mistake costs this point alone, on a CPU grader and on a GPU one alike.
    tokens = np.arange(100, dtype=np.uint16)
    for device, as_object in (("cpu", False), ("cpu", True)):
        got = A.run_get_batch(tokens, 4, 3, device, 0, device_object=as_object)
        shown = "torch.device('cpu')" if as_object else "'cpu'"
        check_equal(got["pins"], 0, what="tensors pinned (pin_memory) for a CPU device",
                    inputs=f"get_batch(np.arange(100), 4, 3, device={shown})", see=f"{SEE} §9.4")


@pytest.mark.points(1)
def test_get_batch_rejects_bad_input():
    tokens = np.arange(10, dtype=np.uint16)
    check_equal(tuple(A.run_get_batch(tokens, 2, 4)["inputs"].shape), (2, 4), inputs="10 tokens, batch_size=2, "
                "context_length=4", see=f"{SEE} §9.2", what=VALID_FIRST)
    for args, what in [((tokens, 2, 10), "10 tokens cannot fill a window of context_length + 1 = 11"),
                       ((tokens, 0, 4), "batch_size 0"), ((tokens, 2, 0), "context_length 0"),
                       ((tokens, -1, 4), "a negative batch_size"),
                       ((tokens.astype(np.float32), 2, 4), "float data is not tokens"),
                       ((np.arange(40).reshape(4, 10), 2, 2), "2-D data is not a token stream")]:
        check_raises(ValueError, A.run_get_batch, *args, what=what, see=f"{SEE} §9.2")


@pytest.mark.points(2)
def test_get_batch_reads_only_the_sampled_windows(tmp_path, seed_everything):
    path = tmp_path / "large.bin"
    write_token_file(path, size=512 * 2**20)  # a sparse 512 MiB file of int32 zeros: no disk used, nothing cached yet
    with FileReads(path) as reads:
        got = A.run_get_batch_from_file(str(path), "int32", 2, 256, seed_everything)
    bytes_read = reads.bytes
    inputs = "a 512 MiB int32 token file, batch_size=2, context_length=256"
    check_equal(tuple(got["inputs"].shape), (2, 256), what="inputs shape", inputs=inputs, see=f"{SEE} §9.3")
    # Two windows are 2 KiB; the operating system reads ahead around each (here up to 8 MiB), so
    # allow a quarter of the file. Reading the whole file reads all of it.
    limit = 512 * 2**20 // 4
    assert bytes_read <= limit, explain(
        "bytes of the file read (page cache) by open_tokens + get_batch", inputs=inputs,
        expected=f"at most {limit} (a quarter of the file)", got=bytes_read, see=f"{SEE} §9.3")


@pytest.mark.cuda
@pytest.mark.points(1)
def test_get_batch_on_cuda_copies_from_pinned_memory_without_blocking(seed_everything):
    # Mistake this also catches: choosing pinned memory by `device == "cuda"`, which is False for "cuda:0" and
    # for torch.device("cuda"); the copy is then made from ordinary memory with non_blocking=True.
    tokens = np.arange(1000, dtype=np.int32)
    for device, as_object in (("cuda", False), ("cuda:0", False), ("cuda", True)):
        got = A.run_get_batch(tokens, 4, 8, device, seed_everything, device_object=as_object)
        shown = f"torch.device({device!r})" if as_object else repr(device)
        inputs = f"get_batch(np.arange(1000), 4, 8, device={shown})"
        check_on_gpu(got, inputs, f"{SEE} §9.4")
        check_tensor(got["targets"].cpu(), got["inputs"].cpu() + 1, what="targets", inputs=inputs, see=f"{SEE} §9.4")


def check_on_gpu(got: dict, inputs: str, see: str) -> None:
    """Both tensors int64 on the GPU, and every copy there from pinned memory with non_blocking=True."""
    placed = [(t.device.type, t.dtype) for t in (got["inputs"], got["targets"])]
    check_equal(placed, [("cuda", torch.int64)] * 2, what="(device, dtype) of inputs and targets", inputs=inputs,
                see=see)
    ok = got["copies"] and all(pinned and non_blocking for pinned, non_blocking in got["copies"])
    assert ok, explain("every copy to the GPU: from pinned memory, with non_blocking=True", inputs=inputs,
                       expected="[(pinned, non_blocking), ...] all (True, True)", got=got["copies"], see=see)


@pytest.mark.cuda
@pytest.mark.points(1)
def test_get_batch_from_a_large_memmap_to_cuda(tmp_path, seed_everything):
    # The lecture's batch, 64 x 1024 tokens, from 256 MiB of uint16 tokens that count up (mod 2**16).
    tokens = np.tile(np.arange(2**16, dtype=np.uint16), 2048)
    path = write_tokens(tmp_path / "large.bin", tokens)
    got = A.run_get_batch_from_file(path, "uint16", 64, 1024, seed_everything, "cuda")
    inputs = "a 256 MiB uint16 token file, batch_size=64, context_length=1024, device='cuda'"
    check_on_gpu(got, inputs, f"{SEE} §9.4")
    x, y = got["inputs"].cpu(), got["targets"].cpu()
    check_equal(tuple(x.shape), (64, 1024), what="inputs shape", inputs=inputs, see=f"{SEE} §9.2")
    windows = torch.stack([torch.from_numpy(tokens[s:s + 1025].astype(np.int64)) for s in starts_in(x)])
    check_tensor(x, windows[:, :-1], what="inputs: windows of the file", inputs=inputs, see=f"{SEE} §9.2")
    check_tensor(y, windows[:, 1:], what="targets: the inputs shifted by one", inputs=inputs, see=f"{SEE} §9.2")


def starts_in(inputs: torch.Tensor) -> list[int]:
    """Where each window's twin starts in the counting file's first period: the file repeats every
    2**16 tokens, so a window starting at s equals the one at s mod 2**16, its first token."""
    return [int(first) for first in inputs[:, 0]]
