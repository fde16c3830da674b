"""Problem 11 adapters: a whole training run (handout/11_train.md).

The config goes in as a plain dict of TrainConfig's fields; what the run left behind comes out as
tensors and numbers, together with what instruments saw while it ran: the dtypes every matmul ran
in, and after each optimizer step the bytes that parameters, gradients and optimizer state held.

Given `batches` (the test's own draw, as data), a call runs the student's train.py with torch's
stand-ins for the parts of Problems 6 to 10 (adapters/_parts.py), so the test grades the loop alone;
without, it runs the student's whole stack.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

import numpy as np
import torch
import torch.optim.optimizer as torch_optimizer_module

from adapters._instrument import Pinning, ScriptedMatmuls
from adapters._parts import Batches, stand_ins
from adapters._route import routed


def _tensors(value) -> Iterator[torch.Tensor]:
    """Every tensor inside a (nested) optimizer state value."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)


@contextmanager
def _held_after_each_step() -> Iterator[list[dict]]:
    """After every optimizer step taken inside the block (any torch.optim.Optimizer subclass), one
    record: bytes held by the parameters, their gradients and the optimizer state, the parameter
    count, and the dtypes of each kind."""
    records: list[dict] = []

    def measure(optimizer, args, kwargs) -> None:
        params = [p for group in optimizer.param_groups for p in group["params"]]
        grads = [p.grad for p in params if p.grad is not None]
        state = [t for s in optimizer.state.values() for t in _tensors(s)]
        records.append({
            "parameters": sum(p.numel() for p in params),
            "parameter_bytes": sum(p.nbytes for p in params),
            "gradient_bytes": sum(g.nbytes for g in grads),
            "state_bytes": sum(t.nbytes for t in state),
            "parameter_dtypes": sorted({str(p.dtype).removeprefix("torch.") for p in params}),
            "gradient_dtypes": sorted({str(g.dtype).removeprefix("torch.") for g in grads}),
            "state_dtypes": sorted({str(t.dtype).removeprefix("torch.") for t in state if t.is_floating_point()}),
        })

    handle = torch_optimizer_module.register_optimizer_step_post_hook(measure)
    try:
        yield records
    finally:
        handle.remove()


def _config(config_class, fields: dict):
    """TrainConfig(**fields), or a TypeError naming a field the student's TrainConfig lacks."""
    known = {field.name for field in dataclasses.fields(config_class)}
    missing = sorted(set(fields) - known)
    if missing:
        raise TypeError(f"your TrainConfig has no field {', '.join(missing)}; release 1.2.0 added "
                        f"`device: str = \"cpu\"` (see CHANGELOG.md and handout/11_train.md §11.5)")
    return config_class(**fields)


def _parts(batches: Batches | None):
    """The stand-ins for Problems 6 to 10 given batches, else nothing replaced."""
    return nullcontext() if batches is None else stand_ins(batches)


@routed
def run_train(data_path: str, config: dict, checkpoint_dir: str | None = None, resume_from: str | None = None,
              probe: torch.Tensor | None = None, batches: Batches | None = None) -> dict:
    """train(data_path, TrainConfig(**config), checkpoint_dir, resume_from), watched. checkpoint_dir,
    when given, is created first if missing; probe, a float32 (N, D) batch of inputs, is run through
    the trained model afterwards. With `batches` (a pool (inputs, targets), int64 (N, B, D) each), the
    run uses torch's stand-ins for the earlier problems' parts, and get_batch picks from the pool.

    Returns:
        {"losses": the losses train returned, as floats,
         "loss_types": the type name of each loss train returned, as it returned it ("float" for a
             Python float, "Tensor" for a tensor),
         "parameters": the model's state_dict() afterwards (copied),
         "optimizer_state": the tensors of each parameter's optimizer state, {index: {key: tensor}},
         "gradients_left": names of parameters whose .grad is not None after train returned,
         "matmul_dtypes": sorted dtypes of the operands of every matmul the run did (forward and backward),
         "matmuls": how many matmuls ran,
         "learning_rates": the "lr" of each of the optimizer's param groups,
         "steps": one record per optimizer step (see _held_after_each_step),
         "probe_predictions": the trained model's (N,) float32 outputs for probe, under no_grad (None without a probe)}.
    """
    from cs336_basics import train

    settings = _config(train.TrainConfig, config)
    if checkpoint_dir is not None:  # made here, on the student's side: a folder the test made may not be writable
        Path(checkpoint_dir).mkdir(parents=True, exist_ok=True)
    # Pinning: see adapters/data.py for why.
    with _parts(batches), _held_after_each_step() as steps, Pinning(), ScriptedMatmuls() as matmuls:
        result = train.train(data_path, settings, checkpoint_dir=checkpoint_dir, resume_from=resume_from)
    model, optimizer = result.model, result.optimizer
    with torch.no_grad():
        predictions = None if probe is None else model(probe).detach().clone()
    state = {index: {key: value.detach().clone() for key, value in s.items() if isinstance(value, torch.Tensor)}
             for index, s in optimizer.state_dict()["state"].items()}
    return {
        "losses": [float(loss) for loss in result.losses],
        "loss_types": [type(loss).__name__ for loss in result.losses],
        "parameters": {name: value.detach().clone() for name, value in model.state_dict().items()},
        "optimizer_state": state,
        "gradients_left": [name for name, p in model.named_parameters() if p.grad is not None],
        "matmul_dtypes": sorted(matmuls.dtypes),
        "matmuls": matmuls.calls,
        "learning_rates": [float(group["lr"]) for group in optimizer.param_groups],
        "steps": steps,
        "probe_predictions": predictions,
    }


@routed
def run_step_batch(tokens: np.ndarray, config: dict, step: int, batches: Batches | None = None) -> dict:
    """step_batch(tokens, TrainConfig(**config), step), next to what get_batch (the student's own, or
    with `batches` the stand-in that picks from them) gives a generator seeded with config's seed +
    step: {"x", "y", "inputs", "targets"}."""
    from cs336_basics import data, train

    settings = _config(train.TrainConfig, config)
    with _parts(batches), Pinning():
        x, y = train.step_batch(tokens, settings, step)
        generator = torch.Generator().manual_seed(settings.seed + step)
        inputs, targets = data.get_batch(tokens, settings.batch_size, settings.dim, generator=generator)
    return {"x": x, "y": y, "inputs": inputs, "targets": targets}
