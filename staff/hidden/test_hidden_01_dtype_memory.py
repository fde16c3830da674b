"""Hidden tests, Problem 1: every dtype, exact integer arithmetic, formats PyTorch lacks, every
NaN and infinity pattern, rounding near the smallest subnormal. Expected values come from PyTorch
(element_size, casts) or from the exact closed form of a binary float written here with Fractions.

PYTEST_DONT_REWRITE: a failure shows the check's message, never this file's source.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import assume, given
from hypothesis import strategies as st

from adapters import dtype_memory as A
from tests.checks import VALID_FIRST, check_equal, check_raises, explain, same_float

pytestmark = pytest.mark.problem(1)
SEE = "handout/01_dtype_memory.md"
# Every floating-point dtype of this torch (the float8 variants and others), named as torch names it.
FLOAT_DTYPES = sorted(name for name, d in vars(torch).items()
                      if isinstance(d, torch.dtype) and d.is_floating_point and name == str(d).removeprefix("torch."))
INT_DTYPES = ["uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64", "bool"]


def exact_value(bits: int, exponent_bits: int, mantissa_bits: int, finite_only: bool) -> float:
    """The value of a bit pattern by the textbook formula, in exact arithmetic, then as a float."""
    sign = -1 if (bits >> (exponent_bits + mantissa_bits)) & 1 else 1
    exponent = (bits >> mantissa_bits) & ((1 << exponent_bits) - 1)
    mantissa = bits & ((1 << mantissa_bits) - 1)
    top, bias = (1 << exponent_bits) - 1, (1 << (exponent_bits - 1)) - 1
    if exponent == top and not finite_only:
        return sign * math.inf if mantissa == 0 else math.nan
    if exponent == top and mantissa == (1 << mantissa_bits) - 1:
        return math.nan
    fraction = Fraction(mantissa, 1 << mantissa_bits)
    if exponent == 0:
        magnitude = fraction * Fraction(2) ** (1 - bias)
    else:
        magnitude = (1 + fraction) * Fraction(2) ** (exponent - bias)
    return math.copysign(float(magnitude), sign)


def check_patterns(patterns: list[int], e: int, m: int, finite_only: bool, what: str) -> None:
    got = A.run_decode_float_bits_many(patterns, e, m, finite_only)
    check_equal(len(got), len(patterns), what=f"{what}: one value per pattern", inputs=f"{len(patterns)} patterns",
                see=f"{SEE} §1.2")
    for bits, value in zip(patterns, got):
        expected = exact_value(bits, e, m, finite_only)
        if not same_float(value, expected):
            raise AssertionError(explain(f"{what}: pattern {bits:#x} decoded wrong",
                                         inputs=f"bits={bits:#x}, exponent_bits={e}, mantissa_bits={m}, "
                                                f"finite_only={finite_only}",
                                         expected=expected, got=value, see=f"{SEE} §1.2"))


@pytest.mark.points(1)
def test_bytes_per_element_of_every_dtype():
    for name in FLOAT_DTYPES + INT_DTYPES:
        expected = torch.empty(0, dtype=getattr(torch, name)).element_size()
        got = A.run_bytes_per_element(name)
        check_equal((got, type(got).__name__), (expected, "int"), inputs=name, see=f"{SEE} §1.1",
                    what="(bytes per element, its type): torch's element_size, an int (bits / 8 is a float)")


@pytest.mark.points(1)
def test_tensor_bytes_is_exact_for_huge_shapes():
    # Products past 2**53 lose their last digits in floating point; byte counts are integers.
    cases = [((2**40, 2**20 + 1), "float64"), ((3,) * 34, "bfloat16"), ((10**9, 10**9 + 7), "int64"),
             ((1, 0, 10**12), "float32"), ((123456789, 987654321), "float8_e4m3fn")]
    for shape, name in cases:
        expected = math.prod(shape) * torch.empty(0, dtype=getattr(torch, name)).element_size()
        check_equal(A.run_tensor_bytes(list(shape), name), expected, what="tensor bytes, as an exact integer",
                    inputs=(shape, name), see=f"{SEE} §1.1")


# (exponent bits, mantissa bits, finite_only): every pattern of each is decoded. The e3m2 and e2m3
# six-bit formats, IEEE-style e4m3, and the no-mantissa e4m0 are formats PyTorch does not have.
SMALL_FORMATS = [(4, 3, True), (4, 3, False), (5, 2, False), (3, 2, False), (3, 2, True), (2, 3, False),
                 (2, 3, True), (4, 0, False), (4, 0, True), (5, 0, True), (2, 1, False), (6, 1, True)]


@pytest.mark.points(2)
def test_decode_every_pattern_of_small_formats():
    for e, m, finite_only in SMALL_FORMATS:
        check_patterns(list(range(1 << (1 + e + m))), e, m, finite_only,
                       f"decoding the {1 + e + m}-bit format e{e}m{m}{' (fn)' if finite_only else ''}")


@pytest.mark.points(1)
def test_every_special_pattern_of_float32_and_float64():
    # Signed zeros, every exponent's first and last mantissa, the largest subnormal, NaN payloads.
    for e, m in [(8, 23), (11, 52), (5, 10), (8, 7)]:
        top = (1 << e) - 1
        patterns = []
        for sign in (0, 1):
            for exponent in (0, 1, 2, top - 1, top):
                for mantissa in (0, 1, (1 << m) - 1, 1 << (m - 1)):
                    patterns.append((sign << (e + m)) | (exponent << m) | mantissa)
        check_patterns(patterns, e, m, False, f"special patterns of e{e}m{m}")


@pytest.mark.points(1)
@given(st.integers(2, 11), st.integers(0, 40), st.booleans(), st.data())
def test_decode_random_patterns_of_random_formats(e, m, finite_only, data):
    assume(not (finite_only and e == 11))  # its top binade reaches 2**1024, past float64: not graded (docstring)
    patterns = data.draw(st.lists(st.integers(0, (1 << (1 + e + m)) - 1), min_size=1, max_size=40))
    check_patterns(patterns, e, m, finite_only, f"decoding e{e}m{m}{' (fn)' if finite_only else ''}")


@pytest.mark.points(2)
def test_format_limits_agree_with_decoding_every_pattern():
    for e, m, finite_only in SMALL_FORMATS + [(8, 7, False), (5, 10, False), (6, 9, True)]:
        values = [exact_value(bits, e, m, finite_only) for bits in range(1 << (e + m))]  # the positive half
        finite = [v for v in values if math.isfinite(v) and v > 0]
        bias = (1 << (e - 1)) - 1
        expected = {"largest_finite": max(finite), "smallest_normal": 2.0 ** (1 - bias),
                    "smallest_subnormal": min(finite)}
        got = A.run_float_format_limits(e, m, finite_only)
        check_equal(got, expected, what="format limits (largest: the largest finite positive pattern; subnormal: "
                    "the smallest positive one)", inputs=f"exponent_bits={e}, mantissa_bits={m}, "
                    f"finite_only={finite_only}", see=f"{SEE} §1.3")


MANTISSA_BITS = {"float32": 23, "float16": 10, "bfloat16": 7, "float8_e4m3fn": 3, "float8_e5m2": 2}


@pytest.mark.points(2)
def test_underflow_near_the_smallest_subnormal(seed_everything):
    rng = random.Random(seed_everything)
    for name, mantissa_bits in MANTISSA_BITS.items():
        dtype = getattr(torch, name)
        tiny = float(torch.finfo(dtype).smallest_normal) * 2.0**-mantissa_bits
        # Values exactly representable in float32, so rounding through float32 first changes nothing.
        values = [tiny * f for f in (0.25, 0.5, 0.50001, 0.7, 1.0, 1.5, 3.0)]
        values += [tiny * rng.uniform(0.01, 4.0) for _ in range(30)]
        values = [float(np.float32(v)) for v in values if float(np.float32(v)) != 0.0]
        values += [-v for v in values[:10]] + [1e-3, 1.0, -2.5]
        for value in values:
            stored = torch.tensor(value, dtype=torch.float64).to(dtype).to(torch.float64)
            check_equal(A.run_underflows_to_zero(value, name), bool(stored == 0), what="underflows to zero (as "
                        "torch stores it: round to nearest, ties to even)", inputs=(value, name), see=f"{SEE} §1.4")
    # Every nonzero Python float is a float64, so none underflows there (float32 would lose them all).
    for value in [1e-300, -1e-300, 2.0**-1074, 1e-46]:
        check_equal(A.run_underflows_to_zero(value, "float64"), False, what="underflows to zero in float64",
                    inputs=(value, "float64"), see=f"{SEE} §1.4")


@pytest.mark.points(1)
def test_max_trainable_parameters_is_exact_for_huge_clusters():
    cases = [(100_000, 141 * 10**9 + 3, "adamw", "bf16_mixed"), (7, 2**60 + 1, "sgd", "float32"),
             (1, 15, "adagrad", "float32"), (3, 11, "adamw", "float32"), (1, 2**60 + 24, "sgd", "float32")]
    per = {("adamw", "bf16_mixed"): 16, ("sgd", "float32"): 8, ("adagrad", "float32"): 12, ("adamw", "float32"): 16}
    for devices, memory, optimizer, precision in cases:
        check_equal(A.run_max_trainable_parameters(devices, memory, optimizer, precision),
                    devices * memory // per[optimizer, precision], what="largest whole parameter count (exact "
                    "integer division, no float rounding)", inputs=(devices, memory, optimizer, precision),
                    see=f"{SEE} §1.5")


@pytest.mark.points(1)
def test_max_trainable_parameters_rejects_unknown_names():
    check_equal(A.run_max_trainable_parameters(2, 160, "sgd", "float32"), 40, inputs=(2, 160, "sgd", "float32"),
                see=f"{SEE} §1.5", what=VALID_FIRST)
    for optimizer, precision in [("adam", "float32"), ("adamw", "fp32"), ("", "float32"), ("sgd", "bf16")]:
        check_raises(ValueError, A.run_max_trainable_parameters, 8, 80 * 10**9, optimizer, precision,
                     what="an unknown optimizer or precision name", see=f"{SEE} §1.5")
