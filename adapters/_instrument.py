"""Instruments an adapter can wrap around a student call, reporting back plain data.

They live here, on the student's side of the adapter boundary, so they see the work the student's
code really does even when that code runs in another process.
"""

from __future__ import annotations

import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode

_MATMULS = {torch.ops.aten.mm.default, torch.ops.aten.bmm.default, torch.ops.aten.addmm.default}


class ScriptedMatmuls(TorchDispatchMode):
    """Counts matrix multiplies and the dtypes they ran in; the i-th one also sleeps `delays[i]`
    seconds (none past the list), so a timer sees durations the test chose."""

    def __init__(self, delays: list[float] | None = None) -> None:
        super().__init__()
        self.delays = list(delays or [])
        self.calls = 0
        self.dtypes: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in _MATMULS:
            if self.calls < len(self.delays):
                time.sleep(self.delays[self.calls])
            self.calls += 1
            self.dtypes.update(str(a.dtype).removeprefix("torch.") for a in args if isinstance(a, torch.Tensor))
        return func(*args, **(kwargs or {}))
