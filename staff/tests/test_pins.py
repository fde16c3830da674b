"""What the instruments rely on is pinned before any student code runs and checked around every call
(adapters/_pins.py): a replacement is seen however the code reached it, and honest use of torch's modes,
the FLOP counter and autograd changes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils import flop_counter
from torch.utils._python_dispatch import TorchDispatchMode

from adapters import _pins, strides
from staff import samples
from staff.grading.grade import REPO_ROOT
from staff.grading.suite_run import child_env
from staff.sandbox.layout import build
from staff.sandbox.settings import Settings


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


# A test process's one call into a worker serving the package at argv[2]; it prints what the call did as JSON.
ONE_CALL = """
import json, sys
from pathlib import Path
from adapters import _route, dtype_memory
from staff.sandbox import plugin_settings
from staff.sandbox.plugin import Sandbox

sandbox = Sandbox(plugin_settings.read(Path(sys.argv[1])))
_route.set_route(sandbox.route)
sandbox.route.begin_test("one call", 0)
try:
    print(json.dumps(["returned", dtype_memory.run_bytes_per_element("float32")]))
except Exception as error:  # noqa: BLE001 - what the call raised is the answer
    print(json.dumps([type(error).__name__, str(error)[:600]]))
finally:
    sandbox.worker.close()
"""
# Torch's FLOP counter replaced through a container when the package is imported: a route the review scan
# does not follow (an assignment to an item's attribute).
PATCH = """
import torch.utils.flop_counter as _counter
[_counter.FlopCounterMode][0].get_total_flops = lambda self: 0
"""


@pytest.mark.slow
@pytest.mark.parametrize("patched", [False, True])
def test_the_worker_fails_a_call_once_the_code_replaced_an_instrument(tmp_path, patched):
    # Mistake caught: pins made and never checked by the worker (or checked only before the student's package
    # is imported), so a replacement made at import goes unseen; and a pin that trips on the reference.
    package = samples.reference(tmp_path / "submission")
    if patched:
        with (package / "dtype_memory.py").open("a") as handle:
            handle.write(PATCH)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    settings = build(scratch, REPO_ROOT, package, ("adapters",), False, Settings(threads=1, test_timeout_s=20.0))
    done = subprocess.run([sys.executable, "-c", ONE_CALL, str(settings.settings)], capture_output=True, text=True,
                          env={**child_env(REPO_ROOT), "STAFF_GRADER_PID": str(os.getpid())}, cwd=REPO_ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    what, said = json.loads(done.stdout.strip().splitlines()[-1])
    if patched:
        assert what != "returned" and "replaced part of the grader's instruments" in said, (what, said)
        assert "FlopCounterMode.get_total_flops" in said, said
    else:
        assert (what, said) == ("returned", 4), (what, said)
