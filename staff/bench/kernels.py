"""The reference's hot paths against what a user would otherwise write or call: get_batch from a
memmap, an AdaGrad step, the hand-written backward, and checkpoint save and load."""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import numpy as np
import torch

from cs336_basics.backward import two_layer_backward, two_layer_forward
from cs336_basics.checkpoint import load_checkpoint, save_checkpoint
from cs336_basics.data import get_batch, open_tokens
from cs336_basics.model import Cruncher
from cs336_basics.optimizer import AdaGrad
from staff.bench.measure import Row, Timing, ratio_row, repeat_pair

GET_BATCH_TOKENS = 10**9
GET_BATCH_SIZES = [(32, 256), (64, 1024), (512, 2048)]


def lecture_get_batch(data: np.ndarray, batch_size: int, context_length: int, generator: torch.Generator):
    """The lecture's version: a Python list of windows handed to torch.tensor (as int64, what
    get_batch returns, so both do the same work)."""
    starts = torch.randint(len(data) - context_length, (batch_size,), generator=generator)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch's "extremely slow" warning: the point of the baseline
        x = torch.tensor([data[s:s + context_length] for s in starts], dtype=torch.int64)
        y = torch.tensor([data[s + 1:s + context_length + 1] for s in starts], dtype=torch.int64)
    return x, y


def _file_pages_resident() -> int | None:
    """Bytes of file-backed pages this process maps and holds (Linux's RssFile), or None elsewhere."""
    try:
        with open("/proc/self/status", encoding="utf-8") as status:
            line = next(line for line in status if line.startswith("RssFile:"))
        return int(line.split()[1]) * 1024
    except (OSError, StopIteration):
        return None


def bench_get_batch(folder: Path, repeats: int) -> list[Row]:
    """get_batch against the lecture's list comprehension on a sparse file of 1e9 uint16 tokens
    (2 GB of zeros on disk cost nothing; the pages a draw reads are what is counted)."""
    path = folder / "tokens.u16"
    with open(path, "wb") as f:
        f.truncate(GET_BATCH_TOKENS * 2)
    rows = []
    for batch_size, context_length in GET_BATCH_SIZES:
        generator = torch.Generator().manual_seed(0)
        data = open_tokens(path, np.uint16)
        before = _file_pages_resident()
        get_batch(data, batch_size, context_length, generator=generator)
        after = _file_pages_resident()
        touched = "" if before is None else (
            f"{(after - before) / 2**20:.2f} MiB of file pages mapped by a draw whose windows hold "
            f"{batch_size * (context_length + 1) * 2 / 2**20:.2f} MiB")
        ours, lecture = repeat_pair(lambda: get_batch(data, batch_size, context_length, generator=generator),
                                    lambda: lecture_get_batch(data, batch_size, context_length, generator), repeats)
        rows.append(ratio_row("get_batch", f"B={batch_size}, L={context_length}", ours, lecture,
                              "the lecture's list comprehension",
                              at_most=0.1 if (batch_size, context_length) == GET_BATCH_SIZES[-1] else None,
                              note=touched))
    path.unlink()
    return rows


def _mixed_parameters(count: int, seed: int = 0) -> list[torch.Tensor]:
    """count parameters of mixed sizes, as a model has: matrices, vectors and scalars, with gradients."""
    generator = torch.Generator().manual_seed(seed)
    shapes = [(256, 256), (1024,), (64, 512), (1,), (128, 128, 3), (4096,)]
    params = []
    for i in range(count):
        p = torch.randn(shapes[i % len(shapes)], generator=generator).requires_grad_()
        p.grad = torch.randn(p.shape, generator=generator)
        params.append(p)
    return params


def bench_adagrad(repeats: int) -> list[Row]:
    """One AdaGrad step against torch.optim.Adagrad's for-loop and foreach steps, on 100 and 1,000
    parameter tensors of mixed sizes; the target is against the faster built-in."""
    rows = []
    for count in (100, 1000):
        ours = AdaGrad(_mixed_parameters(count), lr=0.01)
        builtins = {"Adagrad, for loop": torch.optim.Adagrad(_mixed_parameters(count), lr=0.01, foreach=False),
                    "Adagrad, foreach": torch.optim.Adagrad(_mixed_parameters(count), lr=0.01, foreach=True)}
        timings = {name: repeat_pair(ours.step, builtin.step, repeats, warmup=2) for name, builtin in builtins.items()}
        fastest = min(builtins, key=lambda name: timings[name][1].median)
        rows.append(ratio_row("AdaGrad step", f"{count} tensors", *timings[fastest], f"torch.optim.{fastest}",
                              at_most=1.2))
    return rows


def bench_backward(repeats: int) -> list[Row]:
    """two_layer_forward + two_layer_backward against the same forward under autograd plus backward()."""
    rows = []
    for batch, dim, outputs in [(64, 256, 64), (256, 1024, 256), (1024, 2048, 1024)]:
        generator = torch.Generator().manual_seed(0)
        x = torch.randn(batch, dim, generator=generator)
        w1 = torch.randn(dim, dim, generator=generator) / dim**0.5
        w2 = torch.randn(dim, outputs, generator=generator) / dim**0.5

        def by_hand():
            two_layer_backward(x, w1, w2, two_layer_forward(x, w1, w2))

        a1, a2 = w1.clone().requires_grad_(), w2.clone().requires_grad_()

        def by_autograd():
            h2 = x @ a1 @ a2
            (h2 * h2).mean().backward()
            a1.grad = a2.grad = None

        rows.append(ratio_row("backward by hand", f"B={batch}, D={dim}, K={outputs}",
                              *repeat_pair(by_hand, by_autograd, repeats, warmup=2), "autograd (forward + backward())",
                              at_most=1.1))
    return rows


def _model_and_optimizer(dim: int, num_layers: int) -> tuple[torch.nn.Module, AdaGrad]:
    model = Cruncher(dim, num_layers)
    optimizer = AdaGrad(model.parameters(), lr=0.01)
    for p in model.parameters():
        p.grad = torch.ones_like(p)
    optimizer.step()  # AdaGrad's g2 now exists: the checkpoint holds parameters and optimizer state
    optimizer.zero_grad(set_to_none=True)
    return model, optimizer


def bench_checkpoint(folder: Path, repeats: int, num_layers: int = 96, dim: int = 1024) -> list[Row]:
    """save_checkpoint / load_checkpoint of a Cruncher of about 100M parameters with AdaGrad's state,
    against torch.save / torch.load + load_state_dict of the same dict, to the same folder."""
    model, optimizer = _model_and_optimizer(dim, num_layers)
    parameters = sum(p.numel() for p in model.parameters())
    path, plain = folder / "checkpoint.pt", folder / "plain.pt"

    def plain_save():
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": 1}, plain)

    def plain_load():
        checkpoint = torch.load(plain, weights_only=True, map_location="cpu")
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])

    saved, baseline_save = repeat_pair(lambda: save_checkpoint(model, optimizer, 1, path), plain_save, repeats)
    size = path.stat().st_size
    loaded, baseline_load = repeat_pair(lambda: load_checkpoint(path, model, optimizer), plain_load, repeats)
    path.unlink()
    plain.unlink()
    case = f"{parameters / 1e6:.0f}M parameters + AdaGrad state, {size / 1e6:.0f} MB"

    def rate(timing: Timing) -> str:
        return f"{size / timing.median / 1e6:.0f} MB/s"

    return [
        ratio_row("checkpoint save (atomic, fsync)", case, saved, baseline_save, "torch.save to the path",
                  at_most=1.1, note=f"{rate(saved)} against {rate(baseline_save)}"),
        ratio_row("checkpoint load (strict, restores on failure)", case, loaded, baseline_load,
                  "torch.load + load_state_dict", at_most=None, note=f"{rate(loaded)} against {rate(baseline_load)}"),
    ]


def bench_kernels(repeats: int) -> list[Row]:
    """Every kernel figure, in one temporary folder next to the system's temporary files."""
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory(prefix="staff-bench-") as folder:
        return (bench_get_batch(Path(folder), repeats) + bench_adagrad(repeats) + bench_backward(repeats)
                + bench_checkpoint(Path(folder), repeats))
