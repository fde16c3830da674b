"""Problem 1 adapters: dtype memory and float bit patterns (handout/01_dtype_memory.md)."""

from __future__ import annotations

from adapters._convert import to_dtype
from adapters._returns import exact_bool, exact_float, exact_int
from adapters._route import routed


@routed
def run_bytes_per_element(dtype: str) -> int | float:
    """Bytes per element of the dtype named `dtype` (e.g. "bfloat16" -> 2), as returned (an int or a float)."""
    from cs336_basics import dtype_memory

    value = dtype_memory.bytes_per_element(to_dtype(dtype))
    return value if type(value) in (int, float) else exact_int(value, "bytes_per_element")  # the tests check the type


@routed
def run_tensor_bytes(shape: list[int], dtype: str) -> int:
    """Bytes of a contiguous tensor of `shape` and the dtype named `dtype`."""
    from cs336_basics import dtype_memory

    return exact_int(dtype_memory.tensor_bytes(tuple(shape), to_dtype(dtype)), "tensor_bytes")


@routed
def run_decode_float_bits(bits: int, exponent_bits: int, mantissa_bits: int, finite_only: bool = False) -> float:
    """Value of the bit pattern `bits` in the format (1 sign, exponent_bits, mantissa_bits)."""
    from cs336_basics import dtype_memory

    value = dtype_memory.decode_float_bits(bits, exponent_bits, mantissa_bits, finite_only)
    return exact_float(value, "decode_float_bits")


@routed
def run_decode_float_bits_many(
    patterns: list[int], exponent_bits: int, mantissa_bits: int, finite_only: bool = False
) -> list[float]:
    """decode_float_bits of each pattern in turn: one call for many, for checks over every pattern."""
    from cs336_basics import dtype_memory

    decode = dtype_memory.decode_float_bits
    return [exact_float(decode(bits, exponent_bits, mantissa_bits, finite_only), "decode_float_bits")
            for bits in patterns]


@routed
def run_float_format_limits(exponent_bits: int, mantissa_bits: int, finite_only: bool = False) -> dict[str, float]:
    """{"largest_finite", "smallest_normal", "smallest_subnormal"} of the format, as floats."""
    from cs336_basics import dtype_memory

    return {
        "largest_finite": exact_float(dtype_memory.largest_finite(exponent_bits, mantissa_bits, finite_only),
                                      "largest_finite"),
        "smallest_normal": exact_float(dtype_memory.smallest_normal(exponent_bits, mantissa_bits), "smallest_normal"),
        "smallest_subnormal": exact_float(dtype_memory.smallest_subnormal(exponent_bits, mantissa_bits),
                                          "smallest_subnormal"),
    }


@routed
def run_underflows_to_zero(value: float, dtype: str) -> bool:
    """Whether the nonzero `value` is stored as zero in the dtype named `dtype`."""
    from cs336_basics import dtype_memory

    return exact_bool(dtype_memory.underflows_to_zero(value, to_dtype(dtype)), "underflows_to_zero")


@routed
def run_bytes_per_parameter(optimizer: str, precision: str) -> int:
    """Training-state bytes per parameter for `optimizer` ("sgd", "adagrad", "adamw") and
    `precision` ("float32", "bf16_mixed")."""
    from cs336_basics import dtype_memory

    return exact_int(dtype_memory.bytes_per_parameter(optimizer, precision), "bytes_per_parameter")


@routed
def run_max_trainable_parameters(num_devices: int, bytes_per_device: int, optimizer: str, precision: str) -> int:
    """Largest parameter count whose training state fits on `num_devices` of `bytes_per_device` bytes."""
    from cs336_basics import dtype_memory

    return exact_int(dtype_memory.max_trainable_parameters(num_devices, bytes_per_device, optimizer, precision),
                     "max_trainable_parameters")
