"""What the instruments rely on is pinned before any student code runs and checked around every call
(adapters/_pins.py): a replacement is seen however the code reached it, and honest use of torch's modes,
the FLOP counter and autograd changes nothing."""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode
from torch.utils import flop_counter
from torch.utils._python_dispatch import TorchDispatchMode

from adapters import _pins, strides


def test_honest_use_of_torchs_modes_the_counter_and_autograd_changes_no_pin():
    # Mistake caught: a pin on something torch changes as it runs (a lazily set class attribute), which
    # would fail every honest grade's calls.
    _pins.import_adapters()
    pins = _pins.Pins()

    class Passing(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    class Watching(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    with Passing(), Watching(), flop_counter.FlopCounterMode(display=False) as counter:
        x = torch.ones(3, 3, requires_grad=True)
        (x @ x).sum().backward()
        torch.autograd.grad((x * 2).sum(), x)
    assert counter.get_total_flops() > 0
    assert pins.changed() == []


def test_a_replacement_is_seen_however_it_was_reached(monkeypatch):
    # Mistakes caught: only names the review scan can see were guarded, so a method replaced through a
    # container (`[FlopCounterMode][0].get_total_flops = ...`), a dunder of torch's mode base class, an
    # adapter module's global replaced or deleted, or a method added to a subclass that inherited it,
    # went unseen (the red team's backward-flops-hidden-by-patching-torchs-counter and
    # strided-view-past-a-dispatch-base-named-by-the-flop-counter, by routes the scan misses).
    _pins.import_adapters()
    pins = _pins.Pins()
    holder = [flop_counter.FlopCounterMode]
    monkeypatch.setattr(holder[0], "get_total_flops", lambda self: 0)
    monkeypatch.setattr(TorchDispatchMode, "__exit__", lambda self, *exc: None)
    monkeypatch.setattr(flop_counter.FlopCounterMode, "__torch_dispatch__", lambda *a, **k: None, raising=False)
    monkeypatch.delattr(strides, "STRIDED_VIEW_OPS")
    monkeypatch.setattr(torch.autograd, "grad", lambda *a, **k: None)
    changed = pins.changed()
    for name in ("FlopCounterMode.get_total_flops", "TorchDispatchMode.__exit__", "FlopCounterMode.__torch_dispatch__",
                 "adapters.strides.STRIDED_VIEW_OPS", "torch.autograd.grad"):
        assert any(name in found for found in changed), (name, changed)
    message = str(_pins.InstrumentsChanged(changed, "before the call"))
    assert "replaced part of the grader's instruments" in message and "get_total_flops" in message


def test_the_instruments_tables_cannot_be_emptied_in_place():
    # Mistake caught: a list the check reads (STRIDED_VIEW_MAKERS.clear() emptied ForbiddenCalls), which no
    # identity pin sees.
    assert isinstance(strides.STRIDED_VIEW_MAKERS, tuple) and isinstance(strides.STRIDED_VIEW_OPS, frozenset)
