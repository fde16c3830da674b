"""Problem 10 adapters: checkpoints and seeding (handout/10_checkpoint.md).

The student's functions take a model and an optimizer; here both are torch's own (`build_training`),
rebuilt from sizes and state dicts, so checkpointing is graded apart from Problems 7 and 8 (one
mistake there costs points there, not here); `run_resume_training_with_adagrad` trains and resumes as
the training loop of Problem 11 does, with torch's Adagrad. Checkpoints go in and out as paths or bytes.
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


def _read_or_none(path: str) -> bytes | None:
    """The bytes of the regular file at `path` (a link not followed), or None when there is none."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _what_the_file_is(path: str, old: bytes, new_iteration: int, new_model: dict) -> str:
    """"old" (the previous checkpoint, byte for byte), "new" (loads, and holds the new iteration and
    model), "missing", or "invalid: why"."""
    data = _read_or_none(path)
    if data is None:
        return "missing"
    if data == old:
        return "old"
    try:
        loaded = torch.load(io.BytesIO(data), weights_only=True)
    except Exception as error:  # noqa: BLE001 - any failure to load is what a resumed run would hit
        return f"invalid: {len(data)} bytes that torch.load refuses ({type(error).__name__})"
    model = loaded.get("model") if isinstance(loaded, dict) else None
    same = (isinstance(model, dict) and set(model) == set(new_model)
            and all(torch.equal(model[k], v) for k, v in new_model.items()))
    if loaded.get("iteration") == new_iteration and same:
        return "new"
    return "invalid: a torch file that is neither the old checkpoint nor the new one"


def _save_with_a_fault(model, optimizer, iteration: int, out: str, path_kind: str, old: bytes, plan) -> dict:
    """One save of `model` and `optimizer` over the checkpoint `old`, freshly written at `out` (the
    only file in its folder), inside an open injected_faults block whose `plan` says which step fails
    (None: none, and then every moment between steps is checked as a crash). See
    run_save_with_faults_injected."""
    from cs336_basics import checkpoint

    fail_at = plan.fail_at
    folder = os.path.dirname(out)
    plan.busy = True  # the old checkpoint's write is the test's, not a step of the save
    with open(out, "wb") as f:
        f.write(old)
    plan.busy = False
    new_model = {k: v.detach().clone() for k, v in model.state_dict().items()}
    crashes: list[str] = []

    def crash_check(moment: str) -> None:
        found = _what_the_file_is(out, old, iteration, new_model)
        if found not in ("old", "new"):
            crashes.append(f"a crash {moment} would leave the checkpoint's path {found}")

    # A failing run passes the moments the run with nothing failing checked, up to its failure.
    plan.begin(fail_at, crash_check if fail_at is None else lambda moment: None)
    raised = None
    try:
        checkpoint.save_checkpoint(model, optimizer, iteration, _path(out, path_kind))
    except NotImplementedError:
        raise
    except BaseException as error:  # noqa: BLE001 - the test decides which failures are right
        raised = f"{type(error).__name__}: {error}"
    if fail_at is None:
        plan.crash_check("after the save returned")
    return {"fail_at": fail_at, "steps": [f"{kind} {detail}" for kind, detail in plan.steps], "raised": raised,
            "crashes": crashes, "target": _what_the_file_is(out, old, iteration, new_model),
            "files": sorted(os.listdir(folder))}


def _failing_steps(steps: list[str], writes: list[float]) -> list[int]:
    """Every step that is not a write, and the writes at these fractions of the way through the writes."""
    numbers = [i for i, step in enumerate(steps) if step.startswith("write")]
    chosen = {numbers[min(int(f * len(numbers)), len(numbers) - 1)] for f in writes if numbers}
    return sorted(chosen | {i for i, step in enumerate(steps) if not step.startswith("write")})


@routed
def run_save_with_faults_injected(dims: list[int], old_state: dict, model_state: dict, optimizer_state: dict,
                                  iteration: int, folder: str, path_kind: str = "str",
                                  writes: tuple[float, ...] = (0.0, 0.5, 0.999)) -> dict:
    """save_checkpoint of a model and AdamW in these states, at `iteration`, over an old checkpoint
    (`old_state`, a dict as torch.save writes it), to a path of the kind `path_kind` (see `_path`):
    first with nothing failing, then once for each step of that save that is a flush to disk or a
    rename, and once for each write at the fractions `writes` (0 the first write, 0.999 the last) of
    the way through its writes, with that step failing (see adapters/_faults.py). Each save runs in a
    new folder inside `folder` holding only the old checkpoint, "checkpoint.pt".

    Returns {"clean": the save with nothing failing, "runs": one per failing step}, each save as
    {"fail_at": the failing step's number, "steps": the steps made, as text, "raised": the exception
    that came out of the save, as text (None if it returned), "crashes": each moment between steps at
    which a crash would have left neither the old checkpoint nor the new one at the path (checked in
    the save with nothing failing), "target": what the path holds afterwards ("old", "new",
    "missing" or "invalid: why"), "files": the folder's files afterwards}."""
    import tempfile

    from adapters._faults import FaultPlan, injected_faults

    buffer = io.BytesIO()
    torch.save(old_state, buffer)
    old = buffer.getvalue()
    model, optimizer = _restored(dims, model_state, optimizer_state)
    plan = FaultPlan()

    def save(fail_at: int | None) -> dict:
        plan.fail_at = fail_at
        out = os.path.join(tempfile.mkdtemp(dir=folder), "checkpoint.pt")
        return _save_with_a_fault(model, optimizer, iteration, out, path_kind, old, plan)

    with injected_faults(folder, plan):
        clean = save(None)
        runs = [save(n) for n in _failing_steps(clean["steps"], list(writes))]
    return {"clean": clean, "runs": runs}


@routed
def run_resume_training_with_adagrad(dim: int, num_layers: int, lr: float, batches: list, stop_at: int,
                                     folder: str) -> dict:
    """As the handout's training loop (handout/11_train.md §11.3) does, with torch's pieces in the shape of
    Problems 7 and 8's (so a mistake there costs nothing here): build a Cruncher-shaped model (`num_layers`
    bias-free Linear(dim, dim) layers with ReLU, a Linear(dim, 1) head, outputs of shape (B,)) and
    torch.optim.Adagrad(model.parameters(), lr=lr) after torch.manual_seed(0);
    train on `batches` ((x of shape (B, dim), y of shape (B,)) pairs, mean squared error), calling
    save_checkpoint(model, optimizer, stop_at, path) after `stop_at` steps; then build a fresh model
    and Adagrad the same way (torch.manual_seed(1) first, so they start elsewhere), load_checkpoint(path,
    ...) into them and train them on the remaining batches.

    Returns {"straight": the first model's state dict after every batch, "resumed": the second's,
    "straight_optimizer" and "resumed_optimizer": their Adagrads' state dicts, "iteration": what
    load_checkpoint returned}."""
    from cs336_basics import checkpoint

    def build(seed: int):
        torch.manual_seed(seed)
        hidden = [m for _ in range(num_layers) for m in (torch.nn.Linear(dim, dim, bias=False), torch.nn.ReLU())]
        model = torch.nn.Sequential(*hidden, torch.nn.Linear(dim, 1, bias=False), torch.nn.Flatten(0))
        return model, torch.optim.Adagrad(model.parameters(), lr=lr)

    def train(model, optimizer, steps) -> None:
        for x, y in steps:
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

    path = os.path.join(folder, "checkpoint.pt")
    model, optimizer = build(0)
    train(model, optimizer, batches[:stop_at])
    checkpoint.save_checkpoint(model, optimizer, stop_at, path)
    train(model, optimizer, batches[stop_at:])
    resumed, resumed_optimizer = build(1)
    iteration = checkpoint.load_checkpoint(path, resumed, resumed_optimizer)
    train(resumed, resumed_optimizer, batches[stop_at:])
    return {"straight": model.state_dict(), "resumed": resumed.state_dict(), "iteration": iteration,
            "straight_optimizer": optimizer.state_dict(), "resumed_optimizer": resumed_optimizer.state_dict()}
