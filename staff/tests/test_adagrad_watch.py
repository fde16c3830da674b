"""Problem 8's adapter sees torch's Adagrad however the code reaches it (adapters/optimizer.py): the class,
its functional form under any name bound before the call, and nothing of an update written by hand."""

from __future__ import annotations

import torch
from torch.optim.adagrad import adagrad as adagrad_bound_at_import

from adapters.optimizer import _torch_adagrad_watch


def _tensors() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    param, grad = torch.ones(3), torch.full((3,), 0.5)
    return param, grad, torch.zeros(3), torch.tensor(0.0)


def test_the_functional_form_bound_before_the_watch_is_seen():
    # Mistake caught: only the module's `adagrad` attribute patched, so a name bound at import (as a
    # submission's `from torch.optim.adagrad import adagrad` is) ran torch's update unseen.
    param, grad, state_sum, step = _tensors()
    with _torch_adagrad_watch() as calls:
        adagrad_bound_at_import([param], [grad], [state_sum], [step], lr=0.1, weight_decay=0.0, lr_decay=0.0,
                                eps=1e-10, maximize=False)
    assert calls, "torch's functional adagrad ran through a name bound at import, and the watch saw nothing"
    assert not torch.equal(param, torch.ones(3)), "the update ran (so the test tried something)"


def test_the_class_is_seen_and_an_update_by_hand_is_not():
    param = torch.nn.Parameter(torch.ones(3))
    param.grad = torch.full((3,), 0.5)
    with _torch_adagrad_watch() as calls:
        torch.optim.Adagrad([param], lr=0.1).step()
    assert "__init__" in calls and "step" in calls, calls
    with _torch_adagrad_watch() as calls:
        state = torch.zeros(3)
        state += param.grad**2
        param.data -= 0.1 * param.grad / (state.sqrt() + 1e-10)
    assert calls == [], calls
