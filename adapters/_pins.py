"""What the instruments are built on, held as it was before any student code ran, and checked around every
call (the worker's `serve`): a replacement is seen however the code reached it.

The instruments run in the student's process (adapters/_instrument.py), so code there can replace a method
they rely on: `__enter__` of torch's dispatch-mode class (a mode that is never pushed sees nothing),
`FlopCounterMode.get_total_flops`, autograd's entry points that `NoAutograd` compares with, or an adapter
module's tables and instruments (`STRIDED_VIEW_MAKERS`, `NoAutograd`, the adapter functions the worker
looks up). The review scan (staff/intake/review_marks.py) marks code that reaches them by the routes it
knows; `Pins` sees the replacement itself, by any route: a container, a call's result, a name built at run
time. It compares identities, so a method replaced and put back within one call, or a mutable value
changed in place, is not seen: the instruments' own tables are tuples and frozensets for that reason.
"""

from __future__ import annotations

import importlib
import operator
import pkgutil
import sys
from types import ModuleType

import torch
import torch.overrides
import torch.utils._python_dispatch as python_dispatch
from torch.utils import flop_counter

from adapters import _instrument

# Module functions the modes and the autograd block call or compare with, by (module, name).
FUNCTIONS = (
    (python_dispatch, "_push_mode"), (python_dispatch, "_pop_mode"), (python_dispatch, "_pop_mode_temporarily"),
    (python_dispatch, "_get_current_dispatch_mode"), (python_dispatch, "_get_current_dispatch_mode_stack"),
    (torch.overrides, "_push_mode"), (torch.overrides, "_pop_mode"), (torch.overrides, "_pop_mode_temporarily"),
    (torch.autograd, "grad"), (torch.autograd, "backward"), (torch.Tensor, "backward"), (torch, "_make_dual"),
    (torch, "as_strided"), (torch.Tensor, "as_strided"), (flop_counter, "FlopCounterMode"),
)
# The modules that measure what the code does in the worker, and the stand-ins for other problems' parts:
# every global of theirs is pinned.
INSTRUMENT_MODULES = frozenset({"adapters._instrument", "adapters._durability", "adapters._faults",
                                "adapters._page_cache", "adapters._tf32", "adapters._parts"})
# What carries a call's value to the grader: checked again there whatever the worker sent, so not pinned
# (the red team replaces these to send the grader hostile replies).
TRANSPORT_MODULES = frozenset({"adapters._codec", "adapters._returns", "adapters._remote_error", "adapters._text",
                               "adapters._convert", "adapters._route", "adapters._file_routes"})


def _classes() -> list[type]:
    """torch's mode classes, the FLOP counter, and every class the instruments define."""
    own = [value for value in vars(_instrument).values()
           if isinstance(value, type) and value.__module__ == _instrument.__name__]
    return [python_dispatch.TorchDispatchMode, torch.overrides.TorchFunctionMode, flop_counter.FlopCounterMode, *own]


def _instrument_globals() -> list[tuple[ModuleType, dict]]:
    """Each adapter module imported now (the zygote imports them all before any student code) with the
    globals an instrument relies on: all of an instrument module's; of a problem's module, its tables
    (names in capitals: `STRIDED_VIEW_MAKERS`) and its classes and functions but the transport's (the
    adapters the worker looks up, `NoAutograd`, the Adagrad watch)."""
    found = []
    for name, module in sorted(sys.modules.items()):
        if not name.startswith("adapters.") or not isinstance(module, ModuleType) or name in TRANSPORT_MODULES:
            continue
        if name in INSTRUMENT_MODULES:
            found.append((module, dict(vars(module))))
        elif not name.removeprefix("adapters.").startswith("_"):
            found.append((module, {key: value for key, value in vars(module).items() if _pinned(key, value)}))
    return found


def import_adapters() -> None:
    """Import every adapter module (about 60 ms with torch imported): the zygote does, so that their globals
    are pinned before any student code runs, rather than first imported in a call."""
    import adapters

    for module in pkgutil.iter_modules(adapters.__path__):
        importlib.import_module(f"adapters.{module.name}")


def _pinned(name: str, value: object) -> bool:
    """Whether a problem module's global is pinned: a table, or a class or function not of the transport."""
    return name.isupper() or (callable(value) and not name.startswith("__")
                              and getattr(value, "__module__", None) not in TRANSPORT_MODULES)


class Pins:
    """The objects the instruments rely on, as they are when it is made: each pinned class's own
    attributes, each function of FUNCTIONS, the adapter modules' globals an instrument relies on.
    `changed` names what differs."""

    def __init__(self) -> None:
        self.classes = [(cls, dict(vars(cls))) for cls in _classes()]
        self.functions = [(owner, name, getattr(owner, name, None)) for owner, name in FUNCTIONS]
        self.modules = _instrument_globals()

    def changed(self) -> list[str]:
        """What was replaced, added or removed since, as `owner.name` (empty when nothing was)."""
        found = []
        for cls, held in self.classes:
            found += _differences(cls.__qualname__, vars(cls), held)
        for owner, name, held in self.functions:
            if getattr(owner, name, None) is not held:
                found.append(f"{getattr(owner, '__name__', type(owner).__name__)}.{name}")
        for module, held in self.modules:
            found += _differences(module.__name__, vars(module), held, whole=module.__name__ in INSTRUMENT_MODULES)
        return found


def _differences(owner: str, now: dict, held: dict, whole: bool = True) -> list[str]:
    """The names of `held` whose value in `now` is another object or none; with `whole`, names added too."""
    # The common case, in C: each held value is the very object found under its name now. (Not `==`: an
    # object of the code's can say it equals anything.)
    if (len(now) == len(held) or not whole) and all(map(operator.is_, map(now.get, held), held.values())):
        return []
    names = set(now) | set(held) if whole else set(held)
    return [f"{owner}.{name}" for name in sorted(names, key=str)
            if now.get(name, _MISSING) is not held.get(name, _MISSING)]


_MISSING = object()


class InstrumentsChanged(RuntimeError):
    """Raised in place of a call's result when the code changed what the instruments rely on."""

    def __init__(self, changed: list[str], when: str) -> None:
        shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
        super().__init__(f"{when}, your code had replaced part of the grader's instruments ({shown}); nothing "
                         "in these problems needs to change torch's classes or the adapters, and the call "
                         "does not count")
