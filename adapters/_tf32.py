"""float32 means float32: TF32 off for CUDA matmuls around one call, checked, and put back after.

TF32 runs "float32" matmuls on tensor cores with a 10-bit mantissa, several times faster than
float32 math (handout/04_flops.md §4.3 and §4.6). The GPU tests time and compare float32 work, so
the student's call and the tests' harness must both run with it off. Some NVIDIA containers set
TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1, which turns it on for the whole process: recent PyTorch reads
the variable once, as the starting value of the setting, so turning the setting off undoes it;
older PyTorch consults the variable on every matmul, and then the setting cannot be turned off.
That is checked: the setting is read back, and a TF32 that stays on is an error naming the variable.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

OVERRIDE = "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"


@contextmanager
def float32_matmuls(settings: object | None = None) -> Iterator[None]:
    """Within the block, float32 matmuls on CUDA run in float32 math (TF32 off); afterwards, even
    after an exception, the setting is what it was.

    Args:
        settings: the object holding `allow_tf32` (default: torch.backends.cuda.matmul); the staff's
            tests pass a scripted one.

    Raises:
        RuntimeError: TF32 reads as on after being turned off (a PyTorch on which the override
            variable wins); the message names the variable to unset.
    """
    settings = torch.backends.cuda.matmul if settings is None else settings
    saved = settings.allow_tf32
    settings.allow_tf32 = False
    try:
        if settings.allow_tf32:
            raise RuntimeError(
                f"TF32 stays on for float32 matmuls after torch.backends.cuda.matmul.allow_tf32 = False: "
                f"{OVERRIDE}=1 in this process's environment forces it on this PyTorch. Unset {OVERRIDE} "
                f"and run again; float32 timings and comparisons mean float32 math (handout §4.6)")
        yield
    finally:
        settings.allow_tf32 = saved
