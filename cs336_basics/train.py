"""Problem 11: train the deep linear model, resume it exactly, and run it in mixed precision.

Handout: handout/11_train.md. Puts together Cruncher (Problem 7), AdaGrad (Problem 8), get_batch
(Problem 9) and checkpoints (Problem 10). Losses are mean squared errors of token values scaled to
[0, 1); B is the batch size, D the model dimension (also the context length).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
import torch
from jaxtyping import Float

from cs336_basics.checkpoint import load_checkpoint, save_checkpoint, set_seed
from cs336_basics.data import get_batch, open_tokens
from cs336_basics.model import Cruncher
from cs336_basics.optimizer import AdaGrad

# Token files for this problem are raw uint16 arrays (numpy's .tofile()).
TOKEN_DTYPE = np.uint16


@dataclass(frozen=True)
class TrainConfig:
    """What one training run does. Every field has the default the handout's examples use.

    Attributes:
        dim: Cruncher's width D, and the context length: one example is D consecutive tokens.
        num_layers: Cruncher's number of Linear(D, D) layers (0: the head alone).
        batch_size: examples per step, B.
        num_steps: steps in the whole run, counting any done before a resume.
        lr: AdaGrad's learning rate.
        vocab_size: every token is below it; inputs and targets are tokens / vocab_size, in [0, 1).
        seed: set_seed(seed) before the model is built; step i's batch is drawn from a generator
            seeded with seed + i.
        checkpoint_every: after every this many steps, save a checkpoint; 0 never saves.
        mixed_precision: run the forward pass under torch.autocast with bfloat16.
        device: where the model, its optimizer state and each batch live ("cpu", "cuda"). The model
            is built on the CPU, so its initial weights are the same on every device, then moved.
    """

    dim: int = 16
    num_layers: int = 2
    batch_size: int = 32
    num_steps: int = 100
    lr: float = 0.1
    vocab_size: int = 1024
    seed: int = 0
    checkpoint_every: int = 0
    mixed_precision: bool = False
    device: str = "cpu"


@dataclass
class TrainResult:
    """What `train` hands back: the model and optimizer as the last step left them, and the loss
    of every step it ran, in order (a float each)."""

    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    losses: list[float] = field(default_factory=list)


def checkpoint_path(checkpoint_dir: str | os.PathLike, iteration: int) -> Path:
    """Where the checkpoint saved after `iteration` completed steps lives: checkpoint_dir/step_000040.pt.
    Creates checkpoint_dir (and its parents) if it does not exist yet."""
    folder = Path(checkpoint_dir)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"step_{iteration:06d}.pt"


def step_batch(
    tokens: npt.NDArray[np.integer], config: TrainConfig, step: int
) -> tuple[Float[torch.Tensor, "B D"], Float[torch.Tensor, "B"]]:
    """The batch of step `step` (0-based), which depends on nothing but the tokens, the config and the step.

    Draw it with your get_batch(tokens, config.batch_size, config.dim, generator=g), where g is a
    new CPU torch.Generator seeded with config.seed + step. The example in row b predicts the token
    that follows its window: x[b] = inputs[b] / vocab_size, y[b] = targets[b, -1] / vocab_size.

    Returns:
        (x, y): float32 tensors of shape (B, D) and (B,).
    """
    # BEGIN SOLUTION
    generator = torch.Generator().manual_seed(config.seed + step)
    inputs, targets = get_batch(tokens, config.batch_size, config.dim, generator=generator)
    scale = float(config.vocab_size)
    return inputs.to(torch.float32) / scale, targets[:, -1].to(torch.float32) / scale
    # END SOLUTION


def train(
    data_path: str | os.PathLike,
    config: TrainConfig,
    checkpoint_dir: str | os.PathLike | None = None,
    resume_from: str | os.PathLike | None = None,
) -> TrainResult:
    """Train Cruncher(config.dim, config.num_layers) with AdaGrad on the uint16 token file at `data_path`.

    1. open_tokens(data_path, TOKEN_DTYPE); set_seed(config.seed); build the model on the CPU and
       move it to config.device; build AdaGrad(model.parameters(), lr=config.lr).
    2. With `resume_from`, load_checkpoint it into the model and optimizer: its iteration is the
       number of steps already done, and the run continues from there.
    3. For each remaining step i: x, y = step_batch(tokens, config, i), moved to config.device; the
       prediction model(x), under torch.autocast(device_type=that device's type, e.g. "cpu" or
       "cuda", dtype=torch.bfloat16) when config.mixed_precision;
       loss = mean((prediction - y) ** 2) computed in float32; backward; optimizer.step(); then
       optimizer.zero_grad(set_to_none=True). After a step that leaves i + 1 steps done, with
       checkpoint_every > 0 and i + 1 a multiple of it, save_checkpoint(model, optimizer, i + 1,
       checkpoint_path(checkpoint_dir, i + 1)).

    Parameters and optimizer state stay float32 throughout; under mixed precision only the matmuls
    run in bfloat16.

    Returns:
        A TrainResult with the loss of each step run here (none before a resume), as Python floats.

    Raises:
        ValueError: checkpoint_every > 0 without a checkpoint_dir (no checkpoint is silently dropped).
    """
    # BEGIN SOLUTION
    if config.checkpoint_every > 0 and checkpoint_dir is None:
        raise ValueError(f"checkpoint_every={config.checkpoint_every} needs a checkpoint_dir to save into")
    tokens = open_tokens(data_path, TOKEN_DTYPE)
    set_seed(config.seed)
    device = torch.device(config.device)
    model = Cruncher(config.dim, config.num_layers).to(device)
    optimizer = AdaGrad(model.parameters(), lr=config.lr)
    start = 0 if resume_from is None else load_checkpoint(resume_from, model, optimizer)
    losses = []
    for step in range(start, config.num_steps):
        x, y = step_batch(tokens, config, step)
        x, y = x.to(device), y.to(device)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=config.mixed_precision):
            prediction = model(x)
        loss = (prediction.float() - y).square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
        done = step + 1
        if config.checkpoint_every > 0 and done % config.checkpoint_every == 0:
            save_checkpoint(model, optimizer, done, checkpoint_path(checkpoint_dir, done))
    return TrainResult(model, optimizer, losses)
    # END SOLUTION
