"""Assertions whose failure messages tell a student what went in, what was expected, what came
out, and where in the handout to read."""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from tests.failure_output import SEE_LINE, shown

# The first check of a test of rejections: a function that raises for every input would pass the rest.
VALID_FIRST = "a valid input first (raising for every input is not rejecting the bad ones)"


def explain(what: str, *, inputs: Any, expected: Any, got: Any, see: str) -> str:
    """A failure message: one line per fact; `expected` and `got` as repr shows them, bounded in size
    and time (`shown`)."""
    return f"{what}\n  input:    {inputs}\n  expected: {shown(expected)}\n  got:      {shown(got)}{SEE_LINE}{see}"


def call_explained(function: Callable[..., Any], *args: Any, what: str, inputs: Any, expected: Any,
                   see: str) -> Any:
    """`function(*args)`; an error raised in the student's code becomes a failure that says what was
    called and what was expected (a stub's NotImplementedError passes through as itself)."""
    try:
        return function(*args)
    except NotImplementedError:
        raise
    except Exception as error:  # noqa: BLE001 - the student's error, shown with what was called
        raise AssertionError(explain(what, inputs=inputs, expected=expected,
                                     got=f"{type(error).__name__}: {error}", see=see)) from error


def check_form(value: Any, type_name: str, shape: tuple, dtype: Any = None, *, what: str, inputs: str,
               see: str) -> None:
    """`value` is a `type_name` of this shape (and dtype, unless None), checked before a test reads any of
    it: a stride-0 view claiming 64 MiB past a storage of 2 bytes costs a reply of 150 bytes, and
    gigabytes of the test process to list or multiply."""
    got = (type(value).__name__, tuple(getattr(value, "shape", ())))
    expected = (type_name, shape)
    if dtype is not None:
        got, expected = (*got, getattr(value, "dtype", None)), (*expected, dtype)
    check_equal(got, expected, what=what, inputs=inputs, see=see)


def check_equal(got: Any, expected: Any, *, what: str, inputs: Any, see: str) -> None:
    """Exact equality (ints, bools, tuples of them)."""
    assert got == expected, explain(what, inputs=inputs, expected=expected, got=got, see=see)


def same_float(got: float, expected: float) -> bool:
    """Bit-level agreement for values that must be exact: NaN matches NaN, and 0.0 differs from -0.0."""
    if math.isnan(expected):
        return math.isnan(got)
    return got == expected and math.copysign(1.0, got) == math.copysign(1.0, expected)


def check_close(got: float, expected: float, *, rel: float, what: str, inputs: Any, see: str) -> None:
    """Relative closeness for a float that comes from arithmetic, not a lookup."""
    ok = isinstance(got, (int, float)) and math.isclose(got, expected, rel_tol=rel)
    assert ok, explain(f"{what} (relative tolerance {rel:g})", inputs=inputs, expected=expected, got=got, see=see)


def check_tensor(
    got: Any, expected: torch.Tensor, *, what: str, inputs: Any, see: str, atol: float = 0.0, rtol: float = 0.0
) -> None:
    """Same shape, same dtype, values within atol + rtol * |expected| (exact by default)."""
    base = dict(inputs=inputs, see=see)
    assert isinstance(got, torch.Tensor), explain(
        f"{what}: expected a torch.Tensor", expected="a tensor", got=type(got).__name__, **base
    )
    assert got.shape == expected.shape, explain(
        f"{what}: wrong shape", expected=tuple(expected.shape), got=tuple(got.shape), **base
    )
    assert got.dtype == expected.dtype, explain(f"{what}: wrong dtype", expected=expected.dtype, got=got.dtype, **base)
    close = torch.isclose(got, expected, atol=atol, rtol=rtol, equal_nan=True)
    if not bool(close.all()):
        where = tuple(int(i) for i in (~close).nonzero()[0])
        raise AssertionError(
            explain(
                f"{what}: {int((~close).sum())} of {close.numel()} values differ (atol {atol:g}, rtol {rtol:g}); "
                f"first at index {where}",
                expected=expected[where].item(),
                got=got[where].item(),
                **base,
            )
        )


def describe(t: torch.Tensor) -> str:
    """Short description of a tensor input for messages."""
    return f"tensor(shape={tuple(t.shape)}, dtype={t.dtype})"


def check_raises(error: type[Exception], function: Callable[..., Any], *args: Any, what: str, see: str) -> None:
    """`function(*args)` must raise `error` (a subclass is fine)."""
    try:
        returned = function(*args)
    except NotImplementedError:
        raise  # a stub: the function is not written yet, which is what the student must see
    except error:
        return
    except Exception as other:  # noqa: BLE001 - any other exception is the student's bug to see
        raise AssertionError(explain(what, inputs=args, expected=f"{error.__name__} raised",
                                     got=f"{type(other).__name__}: {other}", see=see)) from other
    raise AssertionError(explain(what, inputs=args, expected=f"{error.__name__} raised",
                                 got=f"returned {shown(returned)}", see=see))


def write_new_file(path: Path | str, data: bytes) -> str:
    """Write `data` to a new file at `path` that nothing else may stand in for: when the test's folder
    has been handed to student code, the name could already be a link it planted, which an ordinary
    write would follow. Returns the path as a string."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return str(path)


def write_token_file(path: Path | str, data: bytes = b"", *, size: int | None = None) -> str:
    """A new token file at `path` (as `write_new_file`) that the code under test may open for writing
    too, as a student's own dataset is theirs: `data`, or with `size`, a sparse file of `size` zero
    bytes (no disk used, nothing in the page cache). Behind the grader's sandbox the tests' files
    belong to another user, so numpy's default memmap mode ('r+') could not open a read-only one
    and every test reading a file would fail for it; writable here, a mapping opened for writing
    fails only the tests whose property is the read-only mapping of §9.1 (whose messages say
    mode='r'), on the grader as on a student's machine. The folder is the code's own already, so
    this gives it nothing it could not do. Returns the path as a string."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "wb") as handle:
        os.fchmod(handle.fileno(), 0o666)  # after open: the umask would clear the group's and others' write
        if size is None:
            handle.write(data)
        else:
            handle.truncate(size)
    return str(path)


def student_file_bytes(path: Path, limit: int = 32 << 20) -> bytes:
    """The bytes of a file that student code wrote, read with care: a symbolic link is not followed,
    a FIFO or device is not opened for reading, and a file of more than `limit` bytes is refused, since
    code under test may have left anything under that name (the files the tests read back are
    checkpoints of small models: a few KiB)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        raise AssertionError(f"{path} could not be opened as a regular file: {error}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            raise AssertionError(f"{path} is not a regular file of at most {limit} bytes")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(limit + 1)[:limit]
    finally:
        os.close(fd)
