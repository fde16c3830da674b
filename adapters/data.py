"""Problem 9 adapters: token files and batch sampling (handout/09_data.md).

Files go in as paths, batches come out as tensors. Generators go in as seeds. Instruments report
how much of a file the call read (page cache) and, on CUDA, how the batch reached the device.
"""

from __future__ import annotations

import os

import numpy as np
import torch

from adapters._convert import to_generator
from adapters._instrument import HostToDeviceCopies, resident_bytes


def run_open_tokens(path: str, dtype: str) -> dict:
    """{"is_memmap", "writeable", "dtype" (name), "tokens" (a copy, as a plain ndarray)} of open_tokens(path, dtype)."""
    from cs336_basics import data

    tokens = data.open_tokens(path, np.dtype(dtype))
    return {"is_memmap": isinstance(tokens, np.memmap), "writeable": bool(tokens.flags.writeable),
            "dtype": tokens.dtype.name, "tokens": np.array(tokens)}


def run_get_batch(
    tokens: np.ndarray, batch_size: int, context_length: int, device: str = "cpu", seed: int | None = None
) -> dict:
    """{"inputs", "targets"} of get_batch on `tokens`; "copies": [(source pinned, non_blocking)] for
    each CPU-to-CUDA copy made."""
    from cs336_basics import data

    with HostToDeviceCopies() as watch:
        inputs, targets = data.get_batch(tokens, batch_size, context_length, device, to_generator(seed))
    return {"inputs": inputs, "targets": targets, "copies": watch.copies}


def run_get_batch_from_file(
    path: str, dtype: str, batch_size: int, context_length: int, seed: int | None = None
) -> dict:
    """open_tokens then get_batch on CPU. {"inputs", "targets", "bytes_read": bytes of the file in
    the page cache afterwards, "file_bytes"}. Give it a fresh sparse file, so nothing is cached before."""
    from cs336_basics import data

    tokens = data.open_tokens(path, np.dtype(dtype))
    inputs, targets = data.get_batch(tokens, batch_size, context_length, "cpu", to_generator(seed))
    del tokens
    return {"inputs": inputs, "targets": targets, "bytes_read": resident_bytes(path),
            "file_bytes": os.path.getsize(path)}
