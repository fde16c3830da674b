"""Problem 10 adapters: checkpoints and seeding (handout/10_checkpoint.md).

The student's functions take a model and an optimizer; here both are torch's own (`build_training`),
rebuilt from sizes and state dicts, so checkpointing is graded apart from Problems 7 and 8.
Checkpoints go in and out as paths or bytes.
"""

from __future__ import annotations

import io
import os
import random
from pathlib import Path

import numpy as np
import torch

from adapters._durability import recorded_file_operations
from adapters._route import routed


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


class _PathLike:
    """An os.PathLike that is neither a str nor a pathlib.Path (as a library's own path class is):
    save_checkpoint's `out` may be any os.PathLike."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __fspath__(self) -> str:
        return self.path

    def __repr__(self) -> str:
        return f"_PathLike({self.path!r})"


def _path(out: str, kind: str):
    """`out` as the path type a test asks for: "str", "path" (pathlib.Path) or "pathlike" (_PathLike)."""
    if kind not in {"str", "path", "pathlike"}:
        raise ValueError(f"unknown path kind {kind!r}")
    return {"str": out, "path": Path(out), "pathlike": _PathLike(out)}[kind]


class _Unpicklable:
    def __reduce__(self):
        raise RuntimeError("this object cannot be saved (the test planted it to make torch.save fail part-way)")


@routed
def run_save_checkpoint(
    dims: list[int], model_state: dict, optimizer_state: dict, iteration: int, out: str | None = None,
    fail_midway: bool = False, as_path_object: bool = False, path_kind: str = "str",
) -> dict:
    """save_checkpoint of a model and optimizer in these states, to the path `out` (a str, or with
    `as_path_object` a pathlib.Path; `path_kind` "path" or "pathlike" gives it as a pathlib.Path or
    as another os.PathLike), or, when `out` is None, to an in-memory binary file. With
    `fail_midway`, the optimizer's state holds an object that makes pickling fail once writing has
    begun (the exception propagates).

    Returns {"bytes": what was written to the in-memory file (None for a path),
    "renames": [(source, destination), ...] for every rename the call made (os.replace, os.rename,
    Path.replace, by whatever name: see adapters/_durability.py),
    "synced": whether a file was renamed onto `out`, and flushed to disk (os.fsync or os.fdatasync,
    by any name the student's module gave them) before that rename, holding then every byte it holds
    now (flushed from Python's buffer first)}."""
    from cs336_basics import checkpoint

    model, optimizer = _restored(dims, model_state, optimizer_state)
    if fail_midway:
        optimizer.state[next(iter(model.parameters()))]["planted"] = _Unpicklable()
    buffer = io.BytesIO() if out is None else None
    target = buffer if buffer is not None else _path(out, "path" if as_path_object else path_kind)
    with recorded_file_operations() as operations:
        checkpoint.save_checkpoint(model, optimizer, iteration, target)
    renames = [(src, dst) for kind, src, dst in operations if kind == "rename"]
    onto_out = [i for i, (kind, _, dst) in enumerate(operations)
                if kind == "rename" and buffer is None and os.path.realpath(dst) == os.path.realpath(out)]
    final_size = str(os.path.getsize(out)) if onto_out else ""
    synced = bool(onto_out) and all(any(kind == "sync" and path == operations[i][1] and size == final_size
                                        for kind, path, size in operations[:i]) for i in onto_out)
    return {"bytes": None if buffer is None else buffer.getvalue(), "renames": renames, "synced": synced}


@routed
def run_load_checkpoint(
    src: str | bytes, dims: list[int], model_state: dict | None = None, optimizer_state: dict | None = None,
    as_path_object: bool = False,
) -> dict:
    """load_checkpoint from the path `src` (a str, or with `as_path_object` a pathlib.Path; or from
    these bytes, as a binary file object) into a model and optimizer that start in the given states
    (fresh when None).

    Returns {"iteration" (None if it raised), "raised" (the exception or None), "model",
    "optimizer" (their state dicts afterwards), "optimizer_steps_the_model": whether every parameter
    the optimizer's groups hold is, object for object, a parameter of the model (so the optimizer's
    next step changes the model that was loaded)}."""
    from cs336_basics import checkpoint

    model, optimizer = _restored(dims, model_state, optimizer_state)
    source = io.BytesIO(src) if isinstance(src, bytes) else Path(src) if as_path_object else src
    iteration, raised = None, None
    try:
        iteration = checkpoint.load_checkpoint(source, model, optimizer)
    except NotImplementedError:
        raise  # a stub is not an answer to report: the test fails on it directly
    except Exception as error:  # noqa: BLE001 - the test decides which exceptions are right
        raised = error
    held = [p for group in optimizer.param_groups for p in group["params"]]
    own = {id(p) for p in model.parameters()}
    return {"iteration": iteration, "raised": raised, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
            "optimizer_steps_the_model": all(id(p) in own for p in held) and len(held) == len(own)}


@routed
def run_set_seed_then_draw(seed: int, count: int) -> dict[str, list[float]]:
    """set_seed(seed), then `count` draws from each of torch, numpy and random."""
    from cs336_basics import checkpoint

    checkpoint.set_seed(seed)
    return {"torch": torch.rand(count).tolist(), "numpy": np.random.rand(count).tolist(),
            "random": [random.random() for _ in range(count)]}


@routed
def run_save_and_load_in_the_working_folder(dims: list[int], model_state: dict, optimizer_state: dict,
                                            iteration: int, folder: str, name: str) -> dict:
    """In a new folder made inside `folder` (on the student's side, so the student's code may write
    there), made the working folder for the call: save_checkpoint to the bare file name `name` (no
    folder part, as `"ckpt.pt"`), then load_checkpoint from it into a fresh model and optimizer.
    {"iteration": what load returned, "model": the loaded model's state dict, "files": the folder's
    file names afterwards}."""
    import tempfile

    from cs336_basics import checkpoint

    model, optimizer = _restored(dims, model_state, optimizer_state)
    here, work = os.getcwd(), tempfile.mkdtemp(dir=folder)
    os.chdir(work)
    try:
        checkpoint.save_checkpoint(model, optimizer, iteration, name)
        fresh_model, fresh_optimizer = build_training(dims)
        loaded = checkpoint.load_checkpoint(name, fresh_model, fresh_optimizer)
        files = sorted(os.listdir("."))
    finally:
        os.chdir(here)
    return {"iteration": loaded, "model": fresh_model.state_dict(), "files": files}
