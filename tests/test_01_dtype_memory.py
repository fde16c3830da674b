"""Problem 1: dtype memory and float bit patterns. Expected values come from PyTorch (element_size,
finfo, reinterpreting bits with `view`, casting) or from closed forms written here."""

from __future__ import annotations

import math
import struct

import pytest
import torch

from adapters import dtype_memory as A
from tests.checks import VALID_FIRST, check_equal, check_raises, explain, same_float

pytestmark = pytest.mark.problem(1)
SEE = "handout/01_dtype_memory.md"

ALL_DTYPES = [
    "float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2",
    "int64", "int32", "int16", "int8", "uint8", "bool",
]
# name -> (exponent bits, mantissa bits, finite_only)
FLOAT_FORMATS = {
    "float64": (11, 52, False),
    "float32": (8, 23, False),
    "float16": (5, 10, False),
    "bfloat16": (8, 7, False),
    "float8_e4m3fn": (4, 3, True),
    "float8_e5m2": (5, 2, False),
}


def element_size(name: str) -> int:
    return torch.empty(0, dtype=getattr(torch, name)).element_size()


@pytest.mark.points(1)
def test_bytes_per_element():
    for name in ALL_DTYPES:
        check_equal(A.run_bytes_per_element(name), element_size(name),
                    what="bytes per element", inputs=name, see=f"{SEE} §1.1")


@pytest.mark.points(1)
def test_tensor_bytes():
    cases = [((), "float32"), ((7,), "bfloat16"), ((3, 0, 5), "float32"), ((2, 3, 4), "int64"),
             ((1024, 1024), "float8_e5m2"), ((5, 7), "float16")]
    for shape, name in cases:
        check_equal(A.run_tensor_bytes(list(shape), name), math.prod(shape) * element_size(name),
                    what="tensor bytes", inputs=(shape, name), see=f"{SEE} §1.1")


# Shapes whose byte counts are multiples of 512: the GPU's caching allocator rounds each block up to
# 512 bytes, so for these the rise of memory_allocated() is the tensor's exact size.
GPU_TENSORS = [((1024, 1024), "float32"), ((256, 2048), "bfloat16"), ((3, 512, 64), "float16"),
               ((4096, 8), "int64"), ((64, 4096), "uint8"), ((2048,), "bool"), ((128, 512), "float8_e4m3fn")]


@pytest.mark.cuda
@pytest.mark.points(1)
def test_tensor_bytes_match_what_the_gpu_allocates():
    for shape, name in GPU_TENSORS:
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        tensor = torch.empty(shape, dtype=getattr(torch, name), device="cuda")
        rise = torch.cuda.memory_allocated() - before
        del tensor
        inputs = f"torch.empty({shape}, dtype=torch.{name}, device='cuda')"
        assert rise == math.prod(shape) * element_size(name), f"the GPU allocated {rise} bytes for {inputs}"
        check_equal(A.run_tensor_bytes(list(shape), name), rise, inputs=inputs, see=f"{SEE} §1.1 and §1.6",
                    what="tensor bytes against the rise of torch.cuda.memory_allocated()")


@pytest.mark.points(1)
def test_tensor_bytes_gpt3_ffn_matrix():
    got = A.run_tensor_bytes([12288 * 4, 12288], "float32")
    check_equal(got, 2304 * 2**20, what="bytes of GPT-3's float32 feed-forward matrix (2304 MiB)",
                inputs=((49152, 12288), "float32"), see=f"{SEE} §1.1")


@pytest.mark.points(1)
def test_decode_float32_worked_example():
    got = A.run_decode_float_bits(0x3E200000, 8, 23)
    assert same_float(got, 0.15625), explain("float32 pattern 0x3E200000", inputs="bits=0x3E200000, e=8, m=23",
                                             expected=0.15625, got=got, see=f"{SEE} §1.2")


def check_every_pattern(name: str, patterns: list[int], values: list[float], section: str) -> None:
    """Decode each pattern and compare with the value PyTorch (or struct) reads from the same bits."""
    exponent_bits, mantissa_bits, finite_only = FLOAT_FORMATS[name]
    decoded = A.run_decode_float_bits_many(patterns, exponent_bits, mantissa_bits, finite_only)
    for bits, value, got in zip(patterns, values, decoded, strict=True):
        if not same_float(got, value):
            raise AssertionError(explain(
                f"{name} pattern {bits:#x} decoded wrong (checked against tensor.view({name}))",
                inputs=f"bits={bits:#x}, exponent_bits={exponent_bits}, mantissa_bits={mantissa_bits}, "
                       f"finite_only={finite_only}",
                expected=value, got=got, see=f"{SEE} {section}"))


@pytest.mark.points(3)
@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_decode_every_16_bit_pattern(name):
    signed = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16)
    patterns = signed.to(torch.int32) & 0xFFFF
    check_every_pattern(name, patterns.tolist(), signed.view(getattr(torch, name)).to(torch.float64).tolist(), "§1.2")


@pytest.mark.points(2)
@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2"])
def test_decode_every_8_bit_pattern(name):
    patterns = torch.arange(256, dtype=torch.int32)
    values = patterns.to(torch.uint8).view(getattr(torch, name)).to(torch.float64)
    check_every_pattern(name, patterns.tolist(), values.tolist(), "§1.2")


@pytest.mark.points(2)
def test_decode_float32_and_float64_samples():
    special32 = [0, 0x80000000, 1, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0x3F800000]
    patterns = torch.tensor(special32 + torch.randint(0, 2**32, (3000,), dtype=torch.int64).tolist())
    as_int32 = torch.where(patterns >= 2**31, patterns - 2**32, patterns).to(torch.int32)
    check_every_pattern("float32", patterns.tolist(), as_int32.view(torch.float32).to(torch.float64).tolist(), "§1.2")
    # float64 has no wider type to compare in, so read each pattern with struct.
    bits64 = [0, 1 << 63, 1, 0x7FF0000000000000, 0x7FF8000000000000, 0x000FFFFFFFFFFFFF]
    bits64 += torch.randint(0, 2**62, (500,), dtype=torch.int64).mul(2).add(torch.randint(0, 2, (500,))).tolist()
    values = [struct.unpack("<d", struct.pack("<Q", b))[0] for b in bits64]
    check_every_pattern("float64", bits64, values, "§1.2")


@pytest.mark.points(1)
@pytest.mark.parametrize("name", list(FLOAT_FORMATS))
def test_format_limits_match_finfo(name):
    exponent_bits, mantissa_bits, finite_only = FLOAT_FORMATS[name]
    info = torch.finfo(getattr(torch, name))
    expected = {
        "largest_finite": float(info.max),
        "smallest_normal": float(info.smallest_normal),
        "smallest_subnormal": float(info.smallest_normal) * 2.0**-mantissa_bits,
    }
    got = A.run_float_format_limits(exponent_bits, mantissa_bits, finite_only)
    check_equal(got, expected, what=f"limits of {name} (expected from torch.finfo)",
                inputs=f"exponent_bits={exponent_bits}, mantissa_bits={mantissa_bits}, finite_only={finite_only}",
                see=f"{SEE} §1.3")


@pytest.mark.points(1)
def test_format_limits_of_formats_torch_lacks():
    # IEEE-style e4m3 (with infinities) tops out at 1.875 * 2**7 = 240, not e4m3fn's 448; a 6-bit
    # e3m2 format has bias 3, so 1.75 * 2**3 = 14, normals from 2**-2 and subnormals from 2**-4; its
    # "fn" variant also uses exponent 7 but not mantissa 0b11 there, so 1.5 * 2**4 = 24.
    cases = [((4, 3, False), (240.0, 2.0**-6, 2.0**-9)), ((3, 2, False), (14.0, 0.25, 0.0625)),
             ((3, 2, True), (24.0, 0.25, 0.0625))]
    for (e, m, finite_only), (largest, normal, subnormal) in cases:
        expected = {"largest_finite": largest, "smallest_normal": normal, "smallest_subnormal": subnormal}
        check_equal(A.run_float_format_limits(e, m, finite_only), expected, what="format limits",
                    inputs=f"exponent_bits={e}, mantissa_bits={m}, finite_only={finite_only}", see=f"{SEE} §1.3")


@pytest.mark.points(2)
def test_underflows_to_zero():
    # Around each format's smallest subnormal s: s/2 rounds (ties to even) to 0, 0.75*s rounds up to s.
    values = [1e-8, -1e-8, 1e-3, 1e-30, 1e-40, 1e-45, 1e-46, 2.0**-25, 0.75 * 2.0**-24, 2.0**-24, 1e-300]
    for name in ["float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"]:
        s = float(torch.finfo(getattr(torch, name)).smallest_normal) * 2.0**-FLOAT_FORMATS[name][1]
        for value in values + [s / 2, 0.75 * s, s, -0.6 * s]:
            expected = bool(torch.tensor(value, dtype=torch.float64).to(getattr(torch, name)).to(torch.float64) == 0)
            check_equal(A.run_underflows_to_zero(value, name), expected, what="underflow to zero",
                        inputs=(value, name), see=f"{SEE} §1.4")


@pytest.mark.points(1)
def test_float16_loses_1e_minus_8_but_bfloat16_keeps_it():
    check_equal(A.run_underflows_to_zero(1e-8, "float16"), True, what="1e-8 in float16",
                inputs=(1e-8, "float16"), see=f"{SEE} §1.4")
    check_equal(A.run_underflows_to_zero(1e-8, "bfloat16"), False, what="1e-8 in bfloat16",
                inputs=(1e-8, "bfloat16"), see=f"{SEE} §1.4")


# Bytes per parameter: weights + gradients (+ a float32 master copy in bf16_mixed) + float32 optimizer state.
BYTES_PER_PARAMETER = {
    ("sgd", "float32"): 4 + 4, ("adagrad", "float32"): 4 + 4 + 4, ("adamw", "float32"): 4 + 4 + 4 + 4,
    ("sgd", "bf16_mixed"): 2 + 2 + 4, ("adagrad", "bf16_mixed"): 2 + 2 + 4 + 4,
    ("adamw", "bf16_mixed"): 2 + 2 + 4 + 4 + 4,
}


@pytest.mark.points(2)
def test_bytes_per_parameter():
    for (optimizer, precision), expected in BYTES_PER_PARAMETER.items():
        check_equal(A.run_bytes_per_parameter(optimizer, precision), expected, what="bytes per parameter",
                    inputs=(optimizer, precision), see=f"{SEE} §1.5")


@pytest.mark.points(1)
def test_bytes_per_parameter_rejects_unknown_names():
    check_equal(A.run_bytes_per_parameter("adamw", "float32"), 16, inputs=("adamw", "float32"), see=f"{SEE} §1.5",
                what=VALID_FIRST)
    for optimizer, precision in [("adam8bit", "float32"), ("adamw", "float64"), ("SGD", "float32"),
                                 ("adamw", "BF16_MIXED")]:
        check_raises(ValueError, A.run_bytes_per_parameter, optimizer, precision,
                     what="an unknown optimizer or precision name", see=f"{SEE} §1.5")


@pytest.mark.points(2)
def test_max_trainable_parameters():
    got = A.run_max_trainable_parameters(8, 80 * 10**9, "adamw", "float32")
    check_equal(got, 4 * 10**10, what="largest model trainable on 8 H100s with float32 AdamW",
                inputs=(8, 80 * 10**9, "adamw", "float32"), see=f"{SEE} §1.5")
    for (optimizer, precision), per_param in BYTES_PER_PARAMETER.items():
        for devices, memory in [(1, 24 * 2**30), (3, 10**9 + 7)]:
            check_equal(A.run_max_trainable_parameters(devices, memory, optimizer, precision),
                        devices * memory // per_param, what="largest trainable parameter count (whole parameters)",
                        inputs=(devices, memory, optimizer, precision), see=f"{SEE} §1.5")
