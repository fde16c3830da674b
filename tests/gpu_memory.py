"""What the GPU's caching allocator holds over one training step, less the scratch of a matmul.

`torch.cuda.max_memory_allocated()` counts every block the allocator handed out, and recent PyTorch
hands out cuBLAS's workspace through it: each matmul takes its own (32 MiB by default on an H100)
and gives it back when done. One such workspace is therefore inside the peak of any step, and no
count of parameters, activations, gradients and optimizer state (handout/08_adagrad.md §8.3) has
it. Older PyTorch, or TORCH_CUBLAS_WORKSPACE_CACHE=1, keeps one workspace for good instead; then
a matmul takes no scratch once it has run. Rather than assume either, the test measures the
scratch of the step's own matmuls in the same process just before the step and leaves it out, by
name, of the figure it compares with the student's estimate.

Only `CudaMemory` needs a GPU; the staff's tests drive the rest with a scripted allocator. Every
figure is in bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import torch

# A (batch, dim, layers) step whose peak the lecture's count predicts (see test_08_adagrad.py), and
# how far apart the two may be, either way.
STEP_CASE = (2048, 1024, 4)
STEP_MARGIN = 1.25


class DeviceMemory(Protocol):
    """The allocator's counters: bytes held now, the most held since the last reset."""

    def synchronize(self) -> None: ...

    def allocated(self) -> int: ...

    def peak(self) -> int: ...

    def reset_peak(self) -> None: ...


class CudaMemory:
    """The CUDA caching allocator's counters for the current device, read after the device is idle."""

    def synchronize(self) -> None:
        torch.cuda.synchronize()

    def allocated(self) -> int:
        return torch.cuda.memory_allocated()

    def peak(self) -> int:
        return torch.cuda.max_memory_allocated()

    def reset_peak(self) -> None:
        torch.cuda.reset_peak_memory_stats()


def peak_above_start(run: Callable[[], object], memory: DeviceMemory) -> int:
    """The most bytes held above the starting level while `run` ran."""
    memory.synchronize()
    start = memory.allocated()
    memory.reset_peak()
    run()
    memory.synchronize()
    return memory.peak() - start


def scratch_bytes(run: Callable[[], object], memory: DeviceMemory) -> int:
    """Bytes `run` held only while it ran: its peak less what was still held once it returned
    (what it returned is kept alive until then, so its result does not count as scratch)."""
    memory.synchronize()
    memory.reset_peak()
    kept = run()
    memory.synchronize()
    scratch = memory.peak() - memory.allocated()
    del kept
    return scratch


@dataclass(frozen=True)
class StepPeak:
    """The peak over one step above where it started, and the scratch of one of its matmuls."""

    peak: int
    matmul_scratch: int

    @property
    def held(self) -> int:
        """What the step's own tensors held at the peak: the peak less one matmul's scratch."""
        return self.peak - self.matmul_scratch

    def describe(self) -> str:
        mib = 2**20
        return (f"{self.held / mib:.1f} MiB: a peak of {self.peak / mib:.1f} MiB less "
                f"{self.matmul_scratch / mib:.1f} MiB of cuBLAS workspace, the scratch one of the step's matmuls "
                f"took when measured just before it")


def step_peak(step: Callable[[], object], products: Sequence[Callable[[], object]], memory: DeviceMemory) -> StepPeak:
    """Run each of `products` (matmuls of the step's shapes) and keep the largest scratch, then run
    `step` once and take its peak above the start."""
    scratch = max(scratch_bytes(product, memory) for product in products)
    return StepPeak(peak=peak_above_start(step, memory), matmul_scratch=scratch)
