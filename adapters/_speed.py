"""Start-up speed: keep torch from importing torch._dynamo (seconds) where nothing is compiled."""

from __future__ import annotations

import inspect

import torch
from torch.utils import flop_counter


def _skip_dynamo_imports(*classes: type) -> None:
    """torch wraps some methods (a dispatch mode's hook, the optimizers' add_param_group, state_dict,
    ...) so that torch.compile leaves them alone; the wrapper imports torch._dynamo on first use,
    which takes seconds and compiles nothing here. Mark each wrapped method as handled already.
    Behaviour is unchanged; on a torch without these wrappers this does nothing."""
    wrapper_code = getattr(getattr(torch, "_disable_dynamo", None), "__code__", None)
    probe = torch._disable_dynamo(lambda: None) if wrapper_code is not None else None
    for cls in classes:
        for method in vars(cls).values():
            raw = getattr(method, "__wrapped__", None)
            if probe is not None and getattr(method, "__code__", None) is probe.__code__ and raw is not None \
                    and getattr(raw, "__dynamo_disable", None) is None:
                setattr(raw, "__dynamo_disable", raw)


_skip_dynamo_imports(getattr(flop_counter, "_FlopCounterMode", object), torch.optim.Optimizer,
                     *(c for c in vars(torch.optim).values() if isinstance(c, type) and
                       issubclass(c, torch.optim.Optimizer)))


def eager_step(optimizer: torch.optim.Optimizer) -> None:
    """optimizer.step() for a torch optimizer, the same update bit for bit, without the wrapper around
    the method, which imports torch._dynamo on every call (1-2 s of CPU in a fresh process) to mark a
    graph break: the method itself, run under no_grad as the wrapper runs it for an optimizer that is
    not `differentiable`. Hooks registered on the step are not run (the tests register none)."""
    step = inspect.unwrap(type(optimizer).step)
    with torch.set_grad_enabled(bool(optimizer.defaults.get("differentiable", False))):
        step(optimizer)
