"""Problem 9: sampling language-modeling batches from a token file too large to load.

Handout: handout/09_data.md. Token files are raw arrays written with numpy's `.tofile()`: no header,
so the dtype must be known. Sizes are in tokens unless stated; file sizes in bytes.
"""

from __future__ import annotations

import os

import numpy as np
import numpy.typing as npt
import torch
from jaxtyping import Int


def open_tokens(path: str | os.PathLike, dtype: npt.DTypeLike) -> np.memmap:
    """Open a raw token file read-only as a 1-D np.memmap of `dtype`, without reading it.

    Args:
        path: the file.
        dtype: an integer dtype such as np.uint16 or np.int32 (anything np.dtype() accepts).

    Raises:
        ValueError: `dtype` is not an integer dtype, or the file's size in bytes is not a multiple
            of the dtype's item size (the message gives both numbers), or the file is empty.
    """
    # BEGIN SOLUTION
    dtype = np.dtype(dtype)
    if dtype.kind not in "iu":
        raise ValueError(f"token dtype must be an integer dtype such as uint16 or int32, got {dtype}")
    size = os.path.getsize(path)
    if size == 0 or size % dtype.itemsize:
        raise ValueError(
            f"{path}: {size} bytes is not a positive multiple of {dtype}'s item size ({dtype.itemsize} bytes); "
            f"is the dtype right?"
        )
    return np.memmap(path, dtype=dtype, mode="r")
    # END SOLUTION


def get_batch(
    data: npt.NDArray[np.integer],
    batch_size: int,
    context_length: int,
    device: str | torch.device = "cpu",
    generator: torch.Generator | None = None,
) -> tuple[Int[torch.Tensor, "batch_size context_length"], Int[torch.Tensor, "batch_size context_length"]]:
    """Sample `batch_size` windows of `context_length` + 1 consecutive tokens from `data`.

    Each window starts at a position drawn uniformly from every valid start, 0 to
    len(data) - context_length - 1 inclusive, independently. A window starting at s gives the
    inputs data[s : s + context_length] and the targets data[s + 1 : s + context_length + 1].
    Only the sampled windows are read, so `data` may be a memmap far larger than memory.

    Args:
        data: a 1-D integer array, typically from `open_tokens`.
        batch_size, context_length: positive ints.
        device: where the returned tensors live. On CUDA, copy from pinned host memory with
            non_blocking=True.
        generator: a CPU torch.Generator the start positions are drawn from; torch's global
            generator when None. The same generator state gives the same batch.

    Returns:
        (inputs, targets), both int64 tensors of shape (batch_size, context_length) on `device`.

    Raises:
        ValueError: non-positive batch_size or context_length, data that is not a 1-D integer
            array, or data shorter than context_length + 1 tokens.
    """
    # BEGIN SOLUTION
    if batch_size <= 0 or context_length <= 0:
        raise ValueError(f"batch_size and context_length must be positive, got {batch_size} and {context_length}")
    if data.ndim != 1 or data.dtype.kind not in "iu":
        raise ValueError(f"data must be a 1-D integer array, got {data.ndim}-D {data.dtype}")
    if len(data) < context_length + 1:
        raise ValueError(f"data has {len(data)} tokens; a window needs context_length + 1 = {context_length + 1}")
    starts = torch.randint(0, len(data) - context_length, (batch_size,), generator=generator).tolist()
    windows = np.stack([np.asarray(data[s : s + context_length + 1], dtype=np.int64) for s in starts])
    batch = torch.from_numpy(windows)
    device = torch.device(device)
    if device.type == "cuda":
        batch = batch.pin_memory().to(device, non_blocking=True)
    else:
        batch = batch.to(device)
    return batch[:, :-1], batch[:, 1:]
    # END SOLUTION
