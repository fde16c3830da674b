"""Start-up speed: keep torch from importing torch._dynamo (seconds) where nothing is compiled."""

from __future__ import annotations

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
