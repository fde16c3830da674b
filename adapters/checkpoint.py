"""Problem 10 adapters: checkpoints and seeding (handout/10_checkpoint.md).

The student's functions take a model and an optimizer; here both are torch's own (`build_training`),
rebuilt from sizes and state dicts, so checkpointing is graded apart from Problems 7 and 8.
Checkpoints go in and out as paths or bytes.
"""

from __future__ import annotations

import io
import os
import random
from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

import numpy as np
import torch


def build_training(dims: list[int], lr: float = 1e-2) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    """The model and optimizer the checkpoint tests train: Linear layers dims[0] -> ... -> dims[-1]
    with tanh between them, and AdamW (whose per-parameter state a checkpoint must carry)."""
    layers: list[torch.nn.Module] = []
    for i, (d_in, d_out) in enumerate(zip(dims, dims[1:])):
        layers += [torch.nn.Linear(d_in, d_out)] + ([torch.nn.Tanh()] if i < len(dims) - 2 else [])
    model = torch.nn.Sequential(*layers)
    return model, torch.optim.AdamW(model.parameters(), lr=lr)


def _restored(dims: list[int], model_state: dict | None, optimizer_state: dict | None):
    model, optimizer = build_training(dims)
    if model_state is not None:
        model.load_state_dict(model_state)
    if optimizer_state is not None:
        optimizer.load_state_dict(optimizer_state)
    return model, optimizer


class _Unpicklable:
    def __reduce__(self):
        raise RuntimeError("this object cannot be saved (the test planted it to make torch.save fail part-way)")


def run_save_checkpoint(
    dims: list[int], model_state: dict, optimizer_state: dict, iteration: int, out: str | None = None,
    fail_midway: bool = False,
) -> dict:
    """save_checkpoint of a model and optimizer in these states, to the path `out`, or, when `out`
    is None, to an in-memory binary file. With `fail_midway`, the optimizer's state holds an
    object that makes pickling fail once writing has begun (the exception propagates).

    Returns {"bytes": what was written to the in-memory file (None for a path),
    "renames": [(source, destination), ...] for every os.replace / os.rename the call made}."""
    from cs336_basics import checkpoint

    model, optimizer = _restored(dims, model_state, optimizer_state)
    if fail_midway:
        optimizer.state[next(iter(model.parameters()))]["planted"] = _Unpicklable()
    buffer = io.BytesIO() if out is None else None
    with _recorded_renames() as renames:
        checkpoint.save_checkpoint(model, optimizer, iteration, out if buffer is None else buffer)
    return {"bytes": None if buffer is None else buffer.getvalue(), "renames": renames}


@contextmanager
def _recorded_renames() -> Iterator[list[tuple[str, str]]]:
    renames: list[tuple[str, str]] = []

    def recording(original):
        def rename(src, dst, *args, **kwargs):
            renames.append((os.fspath(src), os.fspath(dst)))
            return original(src, dst, *args, **kwargs)

        return rename

    with mock.patch("os.replace", recording(os.replace)), mock.patch("os.rename", recording(os.rename)):
        yield renames


def run_load_checkpoint(
    src: str | bytes, dims: list[int], model_state: dict | None = None, optimizer_state: dict | None = None
) -> dict:
    """load_checkpoint from the path `src` (or from these bytes, as a binary file object) into a
    model and optimizer that start in the given states (fresh when None).

    Returns {"iteration" (None if it raised), "raised" (the exception or None), "model",
    "optimizer" (their state dicts afterwards)}."""
    from cs336_basics import checkpoint

    model, optimizer = _restored(dims, model_state, optimizer_state)
    source = io.BytesIO(src) if isinstance(src, bytes) else src
    iteration, raised = None, None
    try:
        iteration = checkpoint.load_checkpoint(source, model, optimizer)
    except Exception as error:  # noqa: BLE001 - the test decides which exceptions are right
        raised = error
    return {"iteration": iteration, "raised": raised, "model": model.state_dict(), "optimizer": optimizer.state_dict()}


def run_set_seed_then_draw(seed: int, count: int) -> dict[str, list[float]]:
    """set_seed(seed), then `count` draws from each of torch, numpy and random."""
    from cs336_basics import checkpoint

    checkpoint.set_seed(seed)
    return {"torch": torch.rand(count).tolist(), "numpy": np.random.rand(count).tolist(),
            "random": [random.random() for _ in range(count)]}
