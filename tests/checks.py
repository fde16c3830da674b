"""Assertions whose failure messages tell a student what went in, what was expected, what came
out, and where in the handout to read."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch


def explain(what: str, *, inputs: Any, expected: Any, got: Any, see: str) -> str:
    """A failure message: one line per fact."""
    return f"{what}\n  input:    {inputs}\n  expected: {expected!r}\n  got:      {got!r}\n  see:      {see}"


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
    except error:
        return
    except Exception as other:  # noqa: BLE001 - any other exception is the student's bug to see
        raise AssertionError(explain(what, inputs=args, expected=f"{error.__name__} raised",
                                     got=f"{type(other).__name__}: {other}", see=see)) from other
    raise AssertionError(explain(what, inputs=args, expected=f"{error.__name__} raised",
                                 got=f"returned {returned!r}", see=see))
