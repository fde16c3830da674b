"""Problem 8 adapters: the AdaGrad optimizer and training-step accounting (handout/08_adagrad.md).

Parameters, gradients and optimizer state go in and come out as tensors and plain dicts; the
adapter also reports whether torch's own Adagrad ran during the call.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from unittest import mock

import torch
import torch.optim.adagrad as torch_adagrad_module

from adapters._instrument import same_bits
from adapters._returns import exact_int
from adapters._route import routed


@routed
def run_adagrad(
    params: list[torch.Tensor],
    grads_per_step: list[list[torch.Tensor | None]],
    groups: list[dict] | None = None,
    lr: float | None = None,
    state_dict: dict | None = None,
    device: str = "cpu",
    lr_factors: list[float] | None = None,
) -> dict:
    """Run AdaGrad for len(grads_per_step) steps, setting each parameter's .grad from the step's list.

    Args:
        params: starting values (copied to `device`; the inputs are not changed).
        grads_per_step: one list per step, one gradient (or None) per parameter.
        groups: param groups as [{"params": [indices into params], "lr": ...}, ...] ("lr" optional);
            None for a single list of every parameter.
        lr: passed as AdaGrad(..., lr=lr); None leaves the default.
        state_dict: an optimizer state_dict to load before the first step.
        device: where the parameters and their gradients live ("cuda" for the GPU tests).
        lr_factors: with it, a torch.optim.lr_scheduler.LambdaLR made after the optimizer scales
            every group's starting lr by lr_factors[i] for step i (it rewrites group["lr"] before
            each step, as any scheduler does); one factor per step.

    Returns:
        {"params": final values, "state_dict": optimizer.state_dict() (state copied),
         "torch_adagrad_used": whether torch.optim.Adagrad was built or stepped, or its functional
         form called, during the call, "changed_grads": [step, parameter index] of every gradient
         that the step wrote into (a .grad that differs afterwards from what was set before it)}.
    """
    from cs336_basics import optimizer

    tensors = [torch.nn.Parameter(p.detach().clone().to(device)) for p in params]
    spec = tensors if groups is None else [
        {**g, "params": [tensors[i] for i in g["params"]]} for g in groups
    ]
    with _torch_adagrad_watch() as calls:
        opt = optimizer.AdaGrad(spec) if lr is None else optimizer.AdaGrad(spec, lr=lr)
        if state_dict is not None:
            opt.load_state_dict(state_dict)
        scheduler = None if lr_factors is None else torch.optim.lr_scheduler.LambdaLR(opt, lr_factors.__getitem__)
        changed = []
        for step, grads in enumerate(grads_per_step):
            for p, g in zip(tensors, grads):
                p.grad = None if g is None else g.detach().clone().to(device)
            given = [None if p.grad is None else p.grad.clone() for p in tensors]
            opt.step()
            changed += [[step, i] for i, (p, g) in enumerate(zip(tensors, given))
                        if g is not None and not (p.grad is not None and same_bits(p.grad, g))]
            if scheduler is not None and step + 1 < len(grads_per_step):
                scheduler.step()
    used = bool(calls) or isinstance(opt, torch.optim.Adagrad)
    saved = opt.state_dict()
    state = {k: {n: v.clone() if isinstance(v, torch.Tensor) else v for n, v in s.items()}
             for k, s in saved["state"].items()}
    return {"params": [p.detach().clone() for p in tensors], "state_dict": {**saved, "state": state},
            "torch_adagrad_used": used, "changed_grads": changed}


@contextmanager
def _torch_adagrad_watch() -> Iterator[list[str]]:
    """Lists calls into torch.optim.Adagrad (constructor, step, functional form) made inside the block."""
    calls: list[str] = []

    def recording(original, name):
        def record(*args, **kwargs):
            calls.append(name)
            return original(*args, **kwargs)

        return record

    # The functional form looks up its kernels in its module when it runs: patched there, a call through a
    # name bound before the block (`from torch.optim.adagrad import adagrad` at import) is seen too.
    kernels = [name for name in ("_single_tensor_adagrad", "_multi_tensor_adagrad", "_fused_adagrad")
               if hasattr(torch_adagrad_module, name)]
    targets = [(torch.optim.Adagrad, "__init__"), (torch.optim.Adagrad, "step"), (torch_adagrad_module, "adagrad"),
               *((torch_adagrad_module, name) for name in kernels)]
    with ExitStack() as stack:
        for obj, name in targets:
            stack.enter_context(mock.patch.object(obj, name, recording(getattr(obj, name), name)))
        yield calls


@routed
def run_adagrad_step_with_closure(param: torch.Tensor, grad: torch.Tensor, loss: float | torch.Tensor) -> dict:
    """One AdaGrad step given a closure that returns `loss` (a float, or a tensor as a real closure's
    loss is): {"returned": what step() returned, "returned_is_the_loss": whether that is the very
    object the closure returned, "closure_calls": how often the closure ran, "grad_enabled":
    torch.is_grad_enabled() inside each call of the closure, "param": the parameter afterwards}."""
    from cs336_basics import optimizer

    tensor = torch.nn.Parameter(param.detach().clone())
    tensor.grad = grad.detach().clone()
    calls = []

    def closure() -> float | torch.Tensor:
        calls.append(torch.is_grad_enabled())
        return loss

    returned = optimizer.AdaGrad([tensor], lr=0.1).step(closure)
    return {"returned": returned, "returned_is_the_loss": returned is loss, "closure_calls": len(calls),
            "grad_enabled": calls, "param": tensor.detach().clone()}


@routed
def run_training_step_memory(batch_size: int, dim: int, num_layers: int, bytes_per_value: int = 4) -> dict[str, int]:
    """{"parameters", "activations", "gradients", "optimizer_state", "total"} in bytes."""
    from cs336_basics import optimizer

    memory = optimizer.training_step_memory(batch_size, dim, num_layers, bytes_per_value)
    return {key: exact_int(getattr(memory, key), f"StepMemory.{key}")
            for key in ("parameters", "activations", "gradients", "optimizer_state", "total")}


@routed
def run_training_step_flops(batch_size: int, num_parameters: int) -> int:
    """FLOPs of one training step."""
    from cs336_basics import optimizer

    return exact_int(optimizer.training_step_flops(batch_size, num_parameters), "training_step_flops")


@routed
def run_adagrad_step_with_gradient_closure(param: torch.Tensor, stale_grad: torch.Tensor,
                                           closure_grad: torch.Tensor) -> dict:
    """One AdaGrad(lr=0.1) step of a parameter whose .grad holds `stale_grad`, given a closure that,
    as a real one does, computes the gradient: it sets .grad to `closure_grad` and returns 1.0.
    {"seen": the parameter's value when the closure ran (None if it never did), "param": the
    parameter afterwards}."""
    from cs336_basics import optimizer

    tensor = torch.nn.Parameter(param.detach().clone())
    tensor.grad = stale_grad.detach().clone()
    seen = []

    def closure() -> float:
        seen.append(tensor.detach().clone())
        tensor.grad = closure_grad.detach().clone()
        return 1.0

    optimizer.AdaGrad([tensor], lr=0.1).step(closure)
    return {"seen": seen[0] if seen else None, "param": tensor.detach().clone()}


@routed
def run_adagrad_on_a_model(weights: list[torch.Tensor], batches: list[tuple[torch.Tensor, torch.Tensor]],
                           lr: float, resume_after: int) -> dict:
    """Train a torch model (bias-free torch.nn.Linear layers in an nn.Sequential, applied as x @ w for
    each (d_in, d_out) weight in `weights`, outputs squeezed to one number per example) with your
    optimizer built as §11.2 writes it, AdaGrad(model.parameters(), lr=lr): per batch (x, y),
    loss = mean((model(x) - y) ** 2), backward, step(), zero_grad(set_to_none=True).

    Then again from the same weights, for `resume_after` steps; save {"model": model.state_dict(),
    "optimizer": optimizer.state_dict()} with torch.save, load it with torch.load(weights_only=True)
    into a new model and a new AdaGrad(new_model.parameters(), lr=lr), and run the remaining batches.

    Returns:
        {"params": [after each step, each weight as (d_in, d_out)], "grads": [each step's gradient of
         each weight as (d_in, d_out), None where it had none], "resumed": each weight after the
         resumed run}.
    """
    import io

    from cs336_basics import optimizer

    def model_of(values: list[torch.Tensor]) -> torch.nn.Sequential:
        layers = []
        for w in values:
            layer = torch.nn.Linear(w.shape[0], w.shape[1], bias=False)
            with torch.no_grad():
                layer.weight.copy_(w.detach().T)
            layers.append(layer)
        return torch.nn.Sequential(*layers)

    def steps(model, opt, todo, record: bool) -> tuple[list, list]:
        params, grads = [], []
        for x, y in todo:
            loss = (model(x)[:, 0] - y).square().mean()
            loss.backward()
            if record:
                grads.append([None if layer.weight.grad is None else layer.weight.grad.detach().T.clone()
                              for layer in model])
            opt.step()
            opt.zero_grad(set_to_none=True)
            if record:
                params.append([layer.weight.detach().T.clone() for layer in model])
        return params, grads

    model = model_of(weights)
    params, grads = steps(model, optimizer.AdaGrad(model.parameters(), lr=lr), batches, True)
    model = model_of(weights)
    opt = optimizer.AdaGrad(model.parameters(), lr=lr)
    steps(model, opt, batches[:resume_after], False)
    buffer = io.BytesIO()
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict()}, buffer)
    buffer.seek(0)
    saved = torch.load(buffer, weights_only=True)
    model = model_of(weights)
    model.load_state_dict(saved["model"])
    opt = optimizer.AdaGrad(model.parameters(), lr=lr)
    opt.load_state_dict(saved["optimizer"])
    steps(model, opt, batches[resume_after:], False)
    return {"params": params, "grads": grads, "resumed": [layer.weight.detach().T.clone() for layer in model]}
