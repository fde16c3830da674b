"""Hidden tests, Problem 9: more token dtypes, dtypes that are not token dtypes, the first and last
valid start, token values that only fit in 64 bits, tiny and exact sizes, reading a uint16 file
sparsely, and open_tokens then get_batch as Problem 11's step_batch calls them. Token files are
written here with numpy's tofile(); expected windows are read back from the arrays written.

PYTEST_DONT_REWRITE: a failure shows the check's message, never this file's source.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from adapters import data as A
from adapters._instrument import FileReads
from tests.checks import VALID_FIRST, call_explained, check_equal, check_raises, check_tensor, explain, write_token_file
from tests.test_09_data import DTYPE_ELSEWHERE, READ_ONLY, as_int64, listed_tokens, write_tokens

pytestmark = pytest.mark.problem(9)
SEE = "handout/09_data.md"


def write(path, tokens: np.ndarray) -> str:
    return write_tokens(path, tokens)  # writable by the code too: the read-only mapping is READ_ONLY's tests'


def check_windows(got: dict, tokens: np.ndarray, batch_size: int, context_length: int, inputs: str,
                  dtype: bool = False) -> list[int]:
    """Both tensors (batch_size, context_length), and int64 where `dtype` (else their values are
    compared as int64: the test of the dtype is another); each row a window of `tokens` (values all
    different) and its targets the window shifted by one. Returns the start of each row."""
    for name in ("inputs", "targets"):
        tensor = got[name]
        if dtype:
            check_equal((type(tensor).__name__, tuple(tensor.shape), tensor.dtype),
                        ("Tensor", (batch_size, context_length), torch.int64), what=f"{name}: (type, shape, dtype)",
                        inputs=inputs, see=f"{SEE} §9.2")
        else:
            check_equal((type(tensor).__name__, tuple(getattr(tensor, "shape", ()))),
                        ("Tensor", (batch_size, context_length)), what=f"{name}: (type, shape)", inputs=inputs,
                        see=f"{SEE} §9.2")
    got = {name: as_int64(got[name]) for name in ("inputs", "targets")}
    where = {int(v): i for i, v in enumerate(tokens.astype(np.int64))}
    starts = [where.get(int(row[0]), -1) for row in got["inputs"]]
    every = torch.from_numpy(tokens.astype(np.int64))
    for row, start in enumerate(starts):
        valid = 0 <= start <= len(tokens) - context_length - 1
        window = every[start : start + context_length + 1] if valid else None
        ok = valid and torch.equal(got["inputs"][row], window[:-1]) and torch.equal(got["targets"][row], window[1:])
        assert ok, explain(f"row {row}: a window of consecutive tokens and the same window shifted by one"
                           + ("" if dtype else f" ({DTYPE_ELSEWHERE})"),
                           inputs=inputs, expected="inputs = data[s : s + L], targets = data[s + 1 : s + L + 1]",
                           got=f"inputs {got['inputs'][row].tolist()}, targets {got['targets'][row].tolist()}",
                           see=f"{SEE} §9.2")
    return starts


@pytest.mark.points(0.5)
def test_open_tokens_of_more_integer_dtypes(tmp_path):
    for dtype in ["int8", "uint8", "int64", "uint32", "<u2"]:
        info = np.iinfo(np.dtype(dtype))
        tokens = np.random.randint(info.min, info.max, size=257, dtype=np.int64).astype(dtype)
        got = A.run_open_tokens(write(tmp_path / f"tokens-{np.dtype(dtype).name}.bin", tokens), dtype)
        inputs = f"257 {np.dtype(dtype).name} tokens, dtype given as {dtype!r}"
        check_equal((got["is_memmap"], got["writeable"], got["dtype"]), (True, False, np.dtype(dtype).name),
                    what=READ_ONLY, inputs=inputs, see=f"{SEE} §9.1")
        assert np.array_equal(got["tokens"], tokens), explain("the tokens read back", inputs=inputs,
                                                             expected=tokens[:6], got=got["tokens"][:6],
                                                             see=f"{SEE} §9.1")


@pytest.mark.points(1)
def test_open_tokens_rejects_dtypes_that_are_not_integers(tmp_path):
    path = write(tmp_path / "tokens.bin", np.zeros(16, dtype=np.uint8))
    check_equal(listed_tokens(A.run_open_tokens(path, "uint8"), 16, inputs="16 uint8 tokens"), [0] * 16,
                inputs="16 uint8 tokens", see=f"{SEE} §9.1", what=VALID_FIRST)
    for dtype in ["bool", "float16", "complex64", "float64"]:
        check_raises(ValueError, A.run_open_tokens, path, dtype, see=f"{SEE} §9.1",
                     what=f"{dtype} is not an integer token dtype")


@pytest.mark.points(1)
def test_get_batch_draws_the_first_and_the_last_valid_start(seed_everything):
    context_length = 5
    tokens = np.arange(100, 100 + context_length + 2, dtype=np.int32)  # starts 0 and 1 are valid
    got = A.run_get_batch(tokens, 256, context_length, "cpu", seed_everything)
    inputs = "7 tokens, context_length=5: only starts 0 and 1 are valid; 256 windows"
    starts = check_windows(got, tokens, 256, context_length, inputs)
    check_equal(sorted(set(starts)), [0, 1], what="starts drawn (both valid starts, each with probability 1/2)",
                inputs=inputs, see=f"{SEE} §9.2")


@pytest.mark.points(1)
def test_get_batch_keeps_every_token_value(tmp_path, seed_everything):
    # Token ids that need int64 (past 2**31 and 2**32, and past 2**53, where float64 stops holding
    # every integer) or are negative, in memory and in token files opened with open_tokens, as a run
    # reads them (a uint32 or int64 memmap). The one test of Problem 9 besides
    # test_get_batch_returns_shifted_windows that checks the dtype: 64-bit ids need int64.
    for dtype, low in [("uint16", 2**16 - 60), ("uint32", 2**32 - 60), ("int8", -60), ("int64", 2**40 + 1)]:
        tokens = np.arange(low, low + 50, dtype=np.int64).astype(dtype)
        got = A.run_get_batch(tokens, 6, 9, "cpu", seed_everything)
        check_windows(got, tokens, 6, 9, f"50 {dtype} tokens from {low} up: values that need 64 bits, or are "
                      "negative", dtype=True)
    for dtype, low in [("uint32", 2**32 - 80), ("int64", 2**53 + 1)]:
        tokens = np.arange(low, low + 60, dtype=np.uint64).astype(dtype)
        path = write(tmp_path / f"ids-{dtype}.bin", tokens)
        got = A.run_get_batch_from_file(path, dtype, 8, 9, seed_everything)
        check_windows(got, tokens, 8, 9, f"a {dtype} token file (open_tokens, a memmap) of 60 consecutive ids from "
                      f"{low} up", dtype=True)


@pytest.mark.points(1)
def test_get_batch_of_one_window_of_the_whole_data(seed_everything):
    tokens = np.arange(10, 30, dtype=np.uint16)
    got = A.run_get_batch(tokens, 1, 19, "cpu", seed_everything)
    inputs = "20 tokens, batch_size=1, context_length=19: one window of every token"
    check_tensor(as_int64(got["inputs"]), torch.arange(10, 29)[None], what=f"inputs ({DTYPE_ELSEWHERE})",
                 inputs=inputs, see=f"{SEE} §9.2")
    check_tensor(as_int64(got["targets"]), torch.arange(11, 30)[None], what=f"targets ({DTYPE_ELSEWHERE})",
                 inputs=inputs, see=f"{SEE} §9.2")
    # The smallest valid sizes: one example, one token of context (2 tokens, one window).
    got = A.run_get_batch(np.array([7, 9], dtype=np.int32), 1, 1, "cpu", seed_everything)
    inputs = "tokens [7, 9], batch_size=1, context_length=1"
    check_tensor(as_int64(got["inputs"]), torch.tensor([[7]]), what=f"inputs ({DTYPE_ELSEWHERE})", inputs=inputs,
                 see=f"{SEE} §9.2")
    check_tensor(as_int64(got["targets"]), torch.tensor([[9]]), what=f"targets ({DTYPE_ELSEWHERE})", inputs=inputs,
                 see=f"{SEE} §9.2")


@pytest.mark.points(1)
def test_get_batch_rejects_more_bad_input():
    check_equal(tuple(A.run_get_batch(np.arange(3, dtype=np.int32), 5, 2)["inputs"].shape), (5, 2),
                inputs="3 tokens, batch_size=5, context_length=2", see=f"{SEE} §9.2", what=VALID_FIRST)
    for args, what in [((np.array(5, dtype=np.int32), 1, 1), "0-d data is not a token stream"),
                       ((np.arange(1, dtype=np.int32), 1, 1), "1 token cannot fill a window of 2"),
                       ((np.arange(20, dtype=np.int32), 2, -3), "a negative context_length"),
                       ((np.arange(20, dtype=np.float64), 1, 2), "float64 data is not tokens"),
                       ((np.arange(20).reshape(20, 1), 1, 2), "a (20, 1) array is not a 1-D token stream")]:
        check_raises(ValueError, A.run_get_batch, *args, what=what, see=f"{SEE} §9.2")


@pytest.mark.points(1)
def test_get_batch_reads_a_uint16_file_sparsely(tmp_path, seed_everything):
    path = tmp_path / "large.bin"
    write_token_file(path, size=512 * 2**20)  # 256 Mi uint16 tokens, a sparse file: nothing cached yet
    with FileReads(path) as reads:
        got = A.run_get_batch_from_file(str(path), "uint16", 8, 512, seed_everything)
    read = reads.bytes
    inputs = "a 512 MiB uint16 token file, batch_size=8, context_length=512"
    check_equal(tuple(got["inputs"].shape), (8, 512), what="inputs shape", inputs=inputs, see=f"{SEE} §9.3")
    limit = 512 * 2**20 // 4
    assert read <= limit, explain("bytes of the file read (page cache) by open_tokens + get_batch", inputs=inputs,
                                  expected=f"at most {limit} (a quarter of the file)", got=read, see=f"{SEE} §9.3")


@pytest.mark.points(1)
def test_open_tokens_size_error_gives_both_numbers(tmp_path):
    path = tmp_path / "odd.bin"
    write_token_file(path, bytes(1003))
    inputs = "open_tokens of a 1003-byte file as int64 (8 bytes a token)"
    try:
        A.run_open_tokens(str(path), "int64")
    except ValueError as error:
        message = str(error)
    else:
        raise AssertionError(explain("open_tokens of a wrong size", inputs=inputs, expected="ValueError",
                                     got="returned", see=f"{SEE} §9.1"))
    numbers = re.findall(r"\d+", message)
    assert "1003" in numbers and "8" in numbers, explain(
        "the ValueError's message must give the file's size and the item size", inputs=inputs,
        expected="a message with 1003 and 8 in it", got=message, see=f"{SEE} §9.1")


@pytest.mark.points(1)
def test_get_batch_with_a_generator_leaves_the_global_generator_alone(seed_everything):
    # Catches a get_batch that reseeds torch's global generator from the one it was given, or draws
    # its starts from the global one after touching the generator.
    got = A.run_get_batch_generator_use(np.arange(10_000, dtype=np.uint16), 16, 4, seed_everything)
    check_equal(got["global_untouched"], True, what="torch's global generator is left as it was when a generator "
                "is given (the starts come from the generator)", see=f"{SEE} §9.2",
                inputs="three calls of get_batch(np.arange(10000), 16, 4, generator=g)")


@pytest.mark.points(1)
def test_get_batch_continues_from_the_generators_current_state(seed_everything):
    # Catches a get_batch that seeds something of its own from generator.initial_seed(): a generator
    # that has moved on would give the same batch every call. Two honest draws of 16 starts out of
    # 9,996 agree with chance 9996**-16.
    got = A.run_get_batch_generator_use(np.arange(10_000, dtype=np.uint16), 16, 4, seed_everything)
    differ = (not torch.equal(got["first"], got["second"]), not torch.equal(got["first"], got["advanced"]))
    check_equal(differ, (True, True), see=f"{SEE} §9.2",
                what="(the second batch differs from the first, the advanced generator's batch differs from the "
                     "first): a generator that has moved on gives new starts",
                inputs=f"g = torch.Generator().manual_seed({seed_everything}); get_batch(np.arange(10000), 16, 4, "
                       f"generator=g) twice; then a new generator seeded the same that drew 1000 numbers first")


@pytest.mark.points(1)
def test_get_batch_without_a_generator_follows_the_global_generator(seed_everything):
    # Catches a get_batch that makes a fresh, unseeded generator when none is given: every call would
    # then return the same batch, whatever torch.manual_seed set.
    got = A.run_get_batch_from_global_seed(np.arange(10_000, dtype=np.uint16), 16, 4, seed_everything)
    result = (torch.equal(got["first"], got["again"]), not torch.equal(got["first"], got["second"]))
    check_equal(result, (True, True), see=f"{SEE} §9.2",
                what="(the same torch.manual_seed gives the same batch, the next call another batch): with no "
                     "generator, the starts come from torch's global generator",
                inputs="torch.manual_seed(s); get_batch(np.arange(10000), 16, 4) twice; "
                       "torch.manual_seed(s); once more")


@pytest.mark.points(1)
def test_get_batch_keeps_token_ids_past_2_to_the_24_exact(tmp_path, seed_everything):
    # Catches windows converted through float32 (or float16), which holds integers exactly only up
    # to 2**24: past it, neighbouring token ids round to the same value. The last two cases are
    # token files opened with open_tokens, as a run reads them (a uint32 or int64 memmap). Every id
    # is below 2**31, so that this test is of float32's rounding alone (ids that need 64 bits are
    # test_get_batch_keeps_every_token_value's).
    for dtype, low in [("int32", 2**24 - 20), ("int64", 2**30 + 1), ("uint32", 2**31 - 80)]:
        tokens = np.arange(low, low + 60, dtype=np.int64).astype(dtype)
        got = A.run_get_batch(tokens, 8, 9, "cpu", seed_everything)
        check_windows(got, tokens, 8, 9, f"60 consecutive {dtype} token ids from {low} up (past 2**24, where float32 "
                      "stops holding every integer)")
    for dtype, low in [("uint32", 2**25 + 1), ("int64", 2**31 - 80)]:
        tokens = np.arange(low, low + 60, dtype=np.uint64).astype(dtype)
        path = write(tmp_path / f"ids-{dtype}.bin", tokens)
        got = A.run_get_batch_from_file(path, dtype, 8, 9, seed_everything)
        check_windows(got, tokens, 8, 9, f"a {dtype} token file (open_tokens, a memmap) of 60 consecutive ids from "
                      f"{low} up")


@pytest.mark.points(1)
def test_get_batch_reaches_odd_starts_past_2_to_the_24(tmp_path, seed_everything):
    # Catches starts drawn as floor(u * n) with u a float32 (torch.rand's default dtype): past 2**24 a
    # float32 holds only even integers, so no start above 2**24 can be odd and most valid starts of
    # a large file are never drawn. Token p of the file is p % 256, so a row's first token gives the
    # parity of its start. About half the starts lie past 2**24: a correct draw makes about half of
    # all starts odd; the float32 one about a quarter.
    context_length, batch_size, size = 4, 2048, 2**25 + 1000
    path = tmp_path / "tokens.bin"
    write_tokens(path, np.resize(np.arange(256, dtype=np.uint8), size))
    got = A.run_get_batch_from_file(str(path), "uint8", batch_size, context_length, seed_everything)
    inputs = (f"a uint8 token file of 2**25 + 1000 tokens (token p is p % 256), batch_size={batch_size}, "
              f"context_length={context_length}")
    check_equal(tuple(got["inputs"].shape), (batch_size, context_length), what="inputs' shape", inputs=inputs,
                see=f"{SEE} §9.2")
    first = as_int64(got["inputs"][:, :1])
    steps = torch.arange(context_length + 1)
    expected = torch.cat([first + steps[:-1], first + steps[1:]], dim=1) % 256
    check_tensor(as_int64(torch.cat([got["inputs"], got["targets"]], dim=1)), expected, what="each row: a window "
                 f"of consecutive tokens (inputs), then the same window shifted by one (targets) ({DTYPE_ELSEWHERE})",
                 inputs=inputs,
                 see=f"{SEE} §9.2")
    odd = int((first % 2).sum()) / batch_size
    assert 0.4 <= odd <= 0.6, explain(
        "share of odd starts: every valid start is equally likely, so about half are odd. Starts computed "
        "through a float32 (torch.rand(...) * n) can never be odd past 2**24, where float32 stops holding "
        "every integer: draw integers (torch.randint) or use float64", inputs=inputs,
        expected="between 0.4 and 0.6", got=odd, see=f"{SEE} §9.2")


@pytest.mark.points(1)
def test_get_batch_device_defaults_to_the_cpu(seed_everything):
    # The course's first assignment passes the device every time; here it may be left out. Problem
    # 11's step_batch leaves it out (handout/11_train.md §11.1).
    tokens = np.arange(50, dtype=np.uint16)
    got = A.run_get_batch(tokens, 4, 3, None, seed_everything)
    inputs = "get_batch(np.arange(50) as uint16, 4, 3, generator=g): no device given"
    check_windows(got, tokens, 4, 3, inputs)
    check_equal([got[name].device.type for name in ("inputs", "targets")], ["cpu", "cpu"], inputs=inputs,
                what="where inputs and targets are (device's default is \"cpu\")", see=f"{SEE} §9.2")


@pytest.mark.points(0.5)
def test_get_batch_as_step_batch_calls_it(tmp_path, seed_everything):
    # As Problem 11's step_batch uses this problem's code (handout/11_train.md §11.1; staff/hidden/uses.toml):
    # open_tokens(path, np.uint16), the dtype given as numpy's scalar type (TOKEN_DTYPE), not a string
    # or an np.dtype; get_batch with the generator by keyword and no device, a new generator seeded
    # seed + step each step, so the same step gives the same batch. Catches an open_tokens that turns
    # only strings into an np.dtype (np.uint16 has no .kind or .itemsize of its own).
    tokens = np.arange(2**16 - 300, 2**16, dtype=np.int64).astype(np.uint16)  # values past int16's range
    path = write(tmp_path / "train.bin", tokens)
    inputs = (f"tokens = open_tokens(path, np.uint16) on 300 uint16 tokens from {2**16 - 300} up; twice, "
              "get_batch(tokens, 8, 16, generator=torch.Generator().manual_seed(s))")
    got = call_explained(A.run_step_batch_use, path, "uint16", 8, 16, seed_everything,
                         what="open_tokens with numpy's scalar type np.uint16 (anything np.dtype() accepts), then "
                         "get_batch(..., generator=g)", inputs=inputs, expected="a batch", see=f"{SEE} §9.1")
    first = check_windows({"inputs": got["inputs"], "targets": got["targets"]}, tokens, 8, 16, inputs, dtype=True)
    again = check_windows({"inputs": got["again_inputs"], "targets": got["again_targets"]}, tokens, 8, 16, inputs,
                          dtype=True)
    check_equal(again, first, what="the starts of the second call: the same as the first (a new generator seeded "
                "the same gives the same batch, as Problem 11's step i draws with seed + i)", inputs=inputs,
                see=f"{SEE} §9.2")
