"""What a student's function returned, checked against the type its docstring promises, never converted.

An adapter that passed a result through float(), int() or bool() made a 0-d tensor a float, 2.0 an
int and 0.125 bytes 0: the test then checked a value the student's code never returned, and a
mistake of type passed. Each helper returns the value itself when its type is the promised one (a
numpy scalar of that kind becomes the equal Python number, which changes no value), and otherwise
raises ReturnTypeError saying what came back, what was promised and what to do.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch


class ReturnTypeError(TypeError):
    """A student's function returned a value of another type than the one it promises."""


def _shown(value: Any) -> str:
    """`value`'s type, and the value when it is short: "a torch.Tensor (shape (), torch.float32)"."""
    if isinstance(value, torch.Tensor):
        return f"a torch.Tensor (shape {tuple(value.shape)}, {value.dtype})"
    kind = type(value)
    name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    text = repr(value) if isinstance(value, (bool, int, float, np.generic)) else ""
    return f"a {name}" + (f" ({text[:60]})" if text else "")


def _fail(value: Any, promised: str, what: str, hint: str) -> ReturnTypeError:
    return ReturnTypeError(f"{what} returned {_shown(value)}, but promises {promised}; {hint} (see its docstring)")


def exact_float(value: Any, what: str) -> float | int:
    """`value` when it is a Python float or int (not a bool); a numpy float or int scalar as the equal
    Python number. Anything else (a 0-d tensor above all) raises ReturnTypeError."""
    if type(value) in (float, int):
        return value
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    hint = "return a Python number (tensor.item() for a 0-d tensor)"
    raise _fail(value, "a Python float", what, hint)


def exact_int(value: Any, what: str) -> int:
    """`value` when it is a Python int (not a bool); a numpy integer scalar as the equal Python int.
    A float, even a whole one, raises ReturnTypeError: counts are exact (past 2**53 a float is not)."""
    if type(value) is int:
        return value
    if isinstance(value, np.integer):
        return value.item()
    hint = ("keep the count in integers (// rather than /; math.prod, not a float product)" if isinstance(value, float)
            else "return a Python int (tensor.item() for a 0-d tensor)")
    raise _fail(value, "a Python int", what, hint)


def exact_bool(value: Any, what: str) -> bool:
    """`value` when it is a Python bool; a numpy bool as the equal Python bool. Anything else (1, a
    0-d bool tensor) raises ReturnTypeError."""
    if type(value) is bool:
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    raise _fail(value, "a bool (True or False)", what, "return True or False (tensor.item() for a 0-d tensor)")
