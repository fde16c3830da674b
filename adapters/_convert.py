"""Turning plain data into the torch objects student functions take."""

from __future__ import annotations

import torch


def to_dtype(name: str) -> torch.dtype:
    """torch dtype for a name such as "float32", "bfloat16" or "float8_e4m3fn"."""
    dtype = getattr(torch, name, None) if isinstance(name, str) else None
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"{name!r} is not the name of a torch dtype (expected e.g. 'float32', 'bfloat16', 'int64')")
    return dtype


def to_index(entries: list) -> tuple[int | slice, ...]:
    """Basic index from plain data: an int stays an int; [start, stop, step] (None allowed) is a slice."""
    return tuple(entry if isinstance(entry, int) else slice(*entry) for entry in entries)


def to_generator(seed: int | None) -> torch.Generator | None:
    """A CPU generator seeded with `seed`, or None (meaning torch's global generator)."""
    return None if seed is None else torch.Generator().manual_seed(seed)
