"""Problem 4 adapters: FLOPs, MFU and matmul timing (handout/04_flops.md)."""

from __future__ import annotations

from adapters._convert import to_dtype
from adapters._instrument import ScriptedMatmuls
from adapters._returns import exact_float, exact_int
from adapters._route import routed
from adapters._tf32 import float32_matmuls


def _flops_dict(flops) -> dict[str, int]:
    return {key: exact_int(getattr(flops, key), f"TrainingFlops.{key}") for key in ("forward", "backward", "total")}


@routed
def run_matmul_flops(m: int, k: int, n: int) -> int:
    """FLOPs of (m, k) @ (k, n)."""
    from cs336_basics import flops

    return exact_int(flops.matmul_flops(m, k, n), "matmul_flops")


@routed
def run_elementwise_flops(shape: list[int], flops_per_element: int | None = None) -> int:
    """FLOPs of an elementwise op with this cost per element (None: the function's default)."""
    from cs336_basics import flops

    if flops_per_element is None:
        return exact_int(flops.elementwise_flops(tuple(shape)), "elementwise_flops")
    return exact_int(flops.elementwise_flops(tuple(shape), flops_per_element), "elementwise_flops")


@routed
def run_linear_layer_flops(batch_size: int, d_in: int, d_out: int) -> dict[str, int]:
    """{"forward", "backward", "total"} FLOPs of one (d_in, d_out) weight matrix."""
    from cs336_basics import flops

    return _flops_dict(flops.linear_layer_flops(batch_size, d_in, d_out))


@routed
def run_deep_linear_flops(batch_size: int, dims: list[int]) -> dict:
    """{"forward", "backward", "total", "per_matrix": [{"forward", "backward", "total"}, ...]}."""
    from cs336_basics import flops

    whole, per_matrix = flops.deep_linear_flops(batch_size, list(dims))
    return {**_flops_dict(whole), "per_matrix": [_flops_dict(f) for f in per_matrix]}


@routed
def run_mfu(flops: float, seconds: float, promised_flop_per_sec: float) -> float:
    """Model FLOPs utilization."""
    from cs336_basics import flops as mod

    return exact_float(mod.mfu(flops, seconds, promised_flop_per_sec), "mfu")


@routed
def run_promised_flop_per_sec(device_name: str, dtype: str) -> float:
    """Promised dense FLOP/s of `device_name` for the dtype named `dtype`."""
    from cs336_basics import flops

    return exact_float(flops.promised_flop_per_sec(device_name, to_dtype(dtype)), "promised_flop_per_sec")


@routed
def run_training_days(
    num_parameters: float, num_tokens: float, num_devices: int, flop_per_sec_per_device: float, mfu: float
) -> float:
    """Days to train with 6 * P * tokens FLOPs."""
    from cs336_basics import flops

    return exact_float(flops.training_days(num_parameters, num_tokens, num_devices, flop_per_sec_per_device, mfu),
                       "training_days")


@routed
def run_time_matmul(
    m: int,
    k: int,
    n: int,
    dtype: str,
    device: str,
    num_warmup: int,
    num_trials: int,
    promised: float | None = None,
    matmul_delays: list[float] | None = None,
    random_delay: float = 0.0,
) -> dict[str, float | int | None]:
    """{"seconds", "flop_per_sec", "mfu"} measured for an (m, k) @ (k, n) matmul, with TF32 off for the
    call (float32 means float32 math, as in the tests' harness; handout §4.6); "matmuls": how many
    matrix multiplies the call ran, "matmul_dtypes": the sorted dtype names they ran in, and
    "matmul_seconds": how long each matmul really took. With `matmul_delays`, the i-th matmul also sleeps
    matmul_delays[i] seconds, so the test knows what a correct timer must report. With `random_delay`,
    every op that draws random numbers (torch.randn and the like) sleeps that long, and "random_draws"
    counts them."""
    from cs336_basics import flops

    with float32_matmuls(), ScriptedMatmuls(matmul_delays, random_delay) as script:
        timing = flops.time_matmul(m, k, n, to_dtype(dtype), device, num_warmup, num_trials, promised)
    return {
        "seconds": exact_float(timing.seconds, "time_matmul's seconds"),
        "flop_per_sec": exact_float(timing.flop_per_sec, "time_matmul's flop_per_sec"),
        "mfu": None if timing.mfu is None else exact_float(timing.mfu, "time_matmul's mfu"),
        "matmuls": script.calls,
        "matmul_dtypes": sorted(script.dtypes),
        "matmul_seconds": script.seconds,
        "random_draws": script.random_draws,
    }
