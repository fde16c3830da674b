"""Problem 1: how many bytes numbers take, and what the bits of a float mean.

Handout: handout/01_dtype_memory.md. Every size here is in bytes (B); 1 MiB = 2**20 bytes.
"""

from __future__ import annotations

import math

import torch

# Training recipes understood by `bytes_per_parameter`:
#   "float32": parameters and gradients in float32.
#   "bf16_mixed": parameters and gradients in bfloat16, plus a float32 master copy of the parameters.
PRECISIONS = ("float32", "bf16_mixed")
# Optimizers understood by `bytes_per_parameter` ("sgd" is plain SGD, without momentum).
OPTIMIZERS = ("sgd", "adagrad", "adamw")


def bytes_per_element(dtype: torch.dtype) -> int:
    """Bytes one element of `dtype` occupies in memory.

    Args:
        dtype: a floating-point or integer torch dtype, e.g. torch.float32, torch.bfloat16,
            torch.float8_e4m3fn, torch.int64, torch.uint8, torch.bool.

    Returns:
        Size of one element, in bytes (torch.float32 -> 4).
    """
    # BEGIN SOLUTION
    if dtype.is_floating_point:
        return torch.finfo(dtype).bits // 8
    if dtype == torch.bool:
        return 1
    return torch.iinfo(dtype).bits // 8
    # END SOLUTION


def tensor_bytes(shape: tuple[int, ...], dtype: torch.dtype) -> int:
    """Bytes a contiguous tensor of this shape and dtype needs for its elements.

    Args:
        shape: the tensor's shape; () is a scalar (one element).
        dtype: its dtype.

    Returns:
        numel * bytes per element, in bytes. A float32 (4 * 12288, 12288) matrix is 2304 MiB.
    """
    # BEGIN SOLUTION
    return math.prod(shape) * bytes_per_element(dtype)
    # END SOLUTION


def exponent_bias(exponent_bits: int) -> int:
    """The bias subtracted from a format's exponent field: 2**(exponent_bits - 1) - 1 (float32: 127)."""
    return (1 << (exponent_bits - 1)) - 1


def decode_float_bits(bits: int, exponent_bits: int, mantissa_bits: int, finite_only: bool = False) -> float:
    """The value a raw bit pattern stands for in a binary floating-point format.

    The format is 1 sign bit, then `exponent_bits` exponent bits, then `mantissa_bits` mantissa
    (fraction) bits, most significant first; the exponent bias is `exponent_bias(exponent_bits)`.
    Handles normal numbers, subnormals (exponent field 0), signed zeros, infinities and NaN.

    Args:
        bits: the pattern as a non-negative integer below 2**(1 + exponent_bits + mantissa_bits),
            e.g. 0x3E200000 for float32.
        exponent_bits: width of the exponent field (float32: 8, float16: 5, bfloat16: 8).
        mantissa_bits: width of the mantissa field (float32: 23, float16: 10, bfloat16: 7).
        finite_only: True for the "fn" formats such as float8_e4m3fn: there are no infinities,
            the all-ones exponent holds ordinary normal numbers, and only the patterns whose
            exponent and mantissa are all ones are NaN.

    Returns:
        The value as a Python float (-0.0 for negative zero, math.inf / -math.inf, math.nan). Only
        formats whose every value fits a float64 are graded (an "fn" format with 11 exponent bits
        reaches 2**1024 and is not).
    """
    # BEGIN SOLUTION
    sign = -1.0 if (bits >> (exponent_bits + mantissa_bits)) & 1 else 1.0
    exponent = (bits >> mantissa_bits) & ((1 << exponent_bits) - 1)
    mantissa = bits & ((1 << mantissa_bits) - 1)
    bias = exponent_bias(exponent_bits)
    all_ones = (1 << exponent_bits) - 1
    if exponent == all_ones:
        if finite_only:
            if mantissa == (1 << mantissa_bits) - 1:
                return math.nan
        elif mantissa == 0:
            return sign * math.inf
        else:
            return math.nan
    if exponent == 0:
        return sign * math.ldexp(mantissa, 1 - bias - mantissa_bits)
    return sign * math.ldexp((1 << mantissa_bits) + mantissa, exponent - bias - mantissa_bits)
    # END SOLUTION


def largest_finite(exponent_bits: int, mantissa_bits: int, finite_only: bool = False) -> float:
    """The largest finite value of a floating-point format (float16: 65504.0).

    Args:
        exponent_bits, mantissa_bits, finite_only: the format, as in `decode_float_bits`.

    Returns:
        The largest finite positive value, as a Python float. With no mantissa bits, the all-ones
        exponent holds no finite value even in an "fn" format (its one pattern is NaN there), so
        the largest finite value is 2^(2^e - 2 - bias): e = 4, m = 0 gives 128.0 either way.
    """
    # BEGIN SOLUTION
    bias = exponent_bias(exponent_bits)
    if finite_only and mantissa_bits > 0:
        # The top exponent is usable; its all-ones mantissa is NaN, so one step below that.
        top_exponent = (1 << exponent_bits) - 1
        top_mantissa = (1 << mantissa_bits) - 2
    else:  # the top exponent is inf/NaN (or, with no mantissa bits, only its NaN)
        top_exponent = (1 << exponent_bits) - 2
        top_mantissa = (1 << mantissa_bits) - 1
    return math.ldexp((1 << mantissa_bits) + top_mantissa, top_exponent - bias - mantissa_bits)
    # END SOLUTION


def smallest_normal(exponent_bits: int, mantissa_bits: int) -> float:
    """The smallest positive normal value of a format (torch.finfo(dtype).tiny; float16: 2**-14).

    Args:
        exponent_bits, mantissa_bits: the format, as in `decode_float_bits`.

    Returns:
        The value, as a Python float.
    """
    # BEGIN SOLUTION
    return math.ldexp(1.0, 1 - exponent_bias(exponent_bits))
    # END SOLUTION


def smallest_subnormal(exponent_bits: int, mantissa_bits: int) -> float:
    """The smallest positive value of a format, a subnormal (float16: 2**-24).

    Args:
        exponent_bits, mantissa_bits: the format, as in `decode_float_bits`.

    Returns:
        The value, as a Python float.
    """
    # BEGIN SOLUTION
    return math.ldexp(smallest_normal(exponent_bits, mantissa_bits), -mantissa_bits)
    # END SOLUTION


def underflows_to_zero(value: float, dtype: torch.dtype) -> bool:
    """Whether a nonzero value becomes zero when stored in `dtype` (round to nearest, ties to even).

    Args:
        value: a nonzero finite Python float. PyTorch narrows a float64 to a 16- or 8-bit format
            through float32, rounding twice. The graded values are either exactly representable
            in float32 (an exact tie such as half the smallest subnormal among them, which rounds
            to even: zero) or far from a tie, so rounding once or twice gives the same answer.
        dtype: a floating-point torch dtype.

    Returns:
        True when the stored value is +0.0 or -0.0. (1e-8 underflows in float16, not in bfloat16.)
    """
    # BEGIN SOLUTION
    stored = torch.tensor(value, dtype=torch.float64).to(dtype)
    return bool(stored.to(torch.float64) == 0)
    # END SOLUTION


def bytes_per_parameter(optimizer: str, precision: str) -> int:
    """Bytes of training state per model parameter: weights, gradients, master copy, optimizer state.

    Activations are not counted. AdaGrad keeps one float32 value per parameter, AdamW two
    (first and second moments), plain SGD none.

    Args:
        optimizer: one of OPTIMIZERS ("sgd", "adagrad", "adamw").
        precision: one of PRECISIONS ("float32", "bf16_mixed").

    Returns:
        Bytes per parameter (float32 AdamW: 16).

    Raises:
        ValueError: for an optimizer or precision not listed above.
    """
    # BEGIN SOLUTION
    state_floats = {"sgd": 0, "adagrad": 1, "adamw": 2}
    weights_and_grads = {"float32": 4 + 4, "bf16_mixed": 2 + 2 + 4}
    if optimizer not in state_floats:
        raise ValueError(f"unknown optimizer {optimizer!r}; expected one of {OPTIMIZERS}")
    if precision not in weights_and_grads:
        raise ValueError(f"unknown precision {precision!r}; expected one of {PRECISIONS}")
    return weights_and_grads[precision] + 4 * state_floats[optimizer]
    # END SOLUTION


def max_trainable_parameters(num_devices: int, bytes_per_device: int, optimizer: str, precision: str) -> int:
    """The largest whole number of parameters whose training state fits in the devices' memory.

    Training state is split evenly across devices; activations are ignored.

    Args:
        num_devices: number of accelerators.
        bytes_per_device: memory of each, in bytes, an integer (an H100, by the lecture's round
            convention: 80 * 10**9).
        optimizer, precision: as in `bytes_per_parameter`.

    Returns:
        floor(num_devices * bytes_per_device / bytes per parameter), a parameter count.
    """
    # BEGIN SOLUTION
    return (num_devices * bytes_per_device) // bytes_per_parameter(optimizer, precision)
    # END SOLUTION
