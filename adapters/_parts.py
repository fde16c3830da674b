"""Problem 11's stand-ins for the parts Problems 6 to 10 build, so that a Problem 11 test grades the
training loop alone: a mistake in an earlier part costs points in that part's own problem, not here.

Inside `stand_ins(batches)`, the names train.py takes from the student's other modules
(`Cruncher`, `AdaGrad`, `open_tokens`, `get_batch`, `set_seed`, `save_checkpoint`, `load_checkpoint`)
answer with torch's own parts, as Problem 10's adapters do with `build_training`: torch.nn.Linear
layers, torch.optim.Adagrad, np.memmap, torch.save and torch.load. get_batch picks, with the
generator it is given, one of a pool of batches the test drew itself and sent as data, so nothing
here cuts windows out of the tokens. Every name is put back when the block ends.

Each stand-in does what the handout's interface promises and no more; none is Problems 6 to 10's
answer (no checks of bad input, no durable save, another optimizer, another initialization).
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch
from torch import nn

Batches = tuple[torch.Tensor, torch.Tensor]  # a pool of batches: (inputs, targets), int64 (N, B, D) each
_MISSING = object()


class StandInCruncher(nn.Module):
    """Cruncher's shape (Problem 7): `num_layers` bias-free Linear(dim, dim), then a bias-free
    Linear(dim, 1) head squeezed to (B,); torch's default initialization."""

    def __init__(self, dim: int, num_layers: int) -> None:
        super().__init__()
        self.layers = nn.Sequential(*(nn.Linear(dim, dim, bias=False) for _ in range(num_layers)))
        self.final = nn.Linear(dim, 1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.final(self.layers(x))[:, 0]


def stand_in_adagrad(params, lr: float = 0.01) -> torch.optim.Optimizer:
    """torch.optim.Adagrad (epsilon outside the square root: not Problem 8's update, on purpose)."""
    return torch.optim.Adagrad(params, lr=lr)


def stand_in_open_tokens(path, dtype) -> np.memmap:
    return np.memmap(path, dtype=dtype, mode="r")


def stand_in_set_seed(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def stand_in_save_checkpoint(model: nn.Module, optimizer: torch.optim.Optimizer, iteration: int, out) -> None:
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": iteration}, out)


def stand_in_load_checkpoint(src, model: nn.Module, optimizer: torch.optim.Optimizer) -> int:
    saved = torch.load(src, weights_only=True)
    model.load_state_dict(saved["model"])
    optimizer.load_state_dict(saved["optimizer"])
    return saved["iteration"]


class PooledBatches:
    """get_batch(data, batch_size, context_length, device="cpu", generator=None) that draws one of the
    test's batches: index torch.randint(N, (1,), generator=generator) of the pool (inputs, targets),
    each int64 (N, batch_size, context_length); torch's global generator when given none. Like a real
    get_batch, it draws from the generator where it is, so one generator for a whole run gives other
    batches after a resume than a fresh one per step (§11.1). A batch of another size is a ValueError."""

    def __init__(self, pool: Batches) -> None:
        self.inputs, self.targets = pool

    def __call__(self, data, batch_size: int, context_length: int, device="cpu",
                 generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        wanted, pooled = (batch_size, context_length), tuple(self.inputs.shape[1:])
        if wanted != pooled:
            raise ValueError(f"step_batch asked get_batch for batch_size, context_length = {wanted}; the config "
                             f"gives {pooled} (batch_size and dim, handout/11_train.md §11.1)")
        index = int(torch.randint(len(self.inputs), (1,), generator=generator))
        return self.inputs[index].to(device), self.targets[index].to(device)


def _replacements(batches: Batches) -> dict[tuple[str, str], object]:
    return {
        ("cs336_basics.model", "Cruncher"): StandInCruncher,
        ("cs336_basics.optimizer", "AdaGrad"): stand_in_adagrad,
        ("cs336_basics.data", "open_tokens"): stand_in_open_tokens,
        ("cs336_basics.data", "get_batch"): PooledBatches(batches),
        ("cs336_basics.checkpoint", "set_seed"): stand_in_set_seed,
        ("cs336_basics.checkpoint", "save_checkpoint"): stand_in_save_checkpoint,
        ("cs336_basics.checkpoint", "load_checkpoint"): stand_in_load_checkpoint,
    }


@contextmanager
def stand_ins(batches: Batches) -> Iterator[None]:
    """Within the block, the student's earlier parts are torch's: each name is replaced in its own
    module and wherever cs336_basics.train holds the same object (under any name), then put back."""
    train = importlib.import_module("cs336_basics.train")
    undo: list[tuple[object, str, object]] = []
    try:
        for (module_name, name), stand_in in _replacements(batches).items():
            module = importlib.import_module(module_name)
            original = getattr(module, name, _MISSING)
            undo.append((module, name, original))
            setattr(module, name, stand_in)
            for alias, value in list(vars(train).items()):
                if original is not _MISSING and value is original:
                    undo.append((train, alias, value))
                    setattr(train, alias, stand_in)
        yield
    finally:
        for owner, name, value in reversed(undo):
            if value is _MISSING:
                delattr(owner, name)
            else:
                setattr(owner, name, value)
