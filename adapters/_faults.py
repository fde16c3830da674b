"""Faults injected into a checkpoint save, one step at a time (handout/10_checkpoint.md §10.3).

A save to a path is a sequence of steps: writes to files under the checkpoint's folder, flushes to disk
(os.fsync / os.fdatasync) and renames. `injected_faults(folder, plan)` counts those steps while it is
open; the step numbered `plan.fail_at` raises OSError (as a full disk or a failing device would), and
before every step `plan.crash_check()` is called, which sees the files as a crash at that moment would
leave them. The steps are seen by whatever route correct code takes to them:

- Writes: every file opened for writing under `folder` through open, io.open, os.fdopen, pathlib's
  Path.open or tempfile (they all call io.open) is handed back wrapped, its `write` counted; os.write
  on a file in `folder` is counted too; and torch.save given a path writes through such a file (it
  would otherwise write from C++, out of sight).
- Flushes: os.fsync and os.fdatasync, under any name a cs336_basics module bound them to.
- Renames: the audit event "os.rename", raised inside os.rename and os.replace themselves (any alias,
  pathlib's rename and replace). A hook that raises aborts the rename.

Only what happens inside the block is counted; outside it every wrapper passes straight through. One
block may serve many saves: `plan.begin(...)` starts the count anew (finding the bindings to wrap takes
longer than a small save).
"""

from __future__ import annotations

import builtins
import errno
import io
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from unittest import mock

import torch

from adapters._file_routes import SYNCS, fd_path, renames_seen_by, student_bindings

_OPEN = io.open
_WRITE = os.write
_SAVE = torch.save


class InjectedFault(OSError):
    """The failure a step was made to raise (an OSError, as an I/O error is)."""


@dataclass
class FaultPlan:
    """Which step fails (None: none does), what to call before each step, and the steps seen, in order,
    as (kind, detail) with kind "write", "sync" or "rename"."""

    fail_at: int | None = None
    crash_check: Callable[[str], None] = lambda step: None
    steps: list[tuple[str, str]] = field(default_factory=list)
    busy: bool = False

    def begin(self, fail_at: int | None, crash_check: Callable[[str], None]) -> None:
        """Start counting anew, for another save."""
        self.fail_at, self.crash_check, self.steps = fail_at, crash_check, []

    def step(self, kind: str, detail: str) -> None:
        """Step number len(steps): check the files as a crash now would leave them, then fail if it is the one."""
        if self.busy:
            return
        self.busy = True
        try:
            self.crash_check(f"before step {len(self.steps)} ({kind} {detail})")
        finally:
            self.busy = False
        self.steps.append((kind, detail))
        if len(self.steps) - 1 == self.fail_at:
            raise InjectedFault(errno.EIO, f"input/output error (injected by the test into step {self.fail_at}: "
                                           f"{kind} {detail})")


def _in_folder(path: str, folder: str) -> bool:
    return path.startswith(folder + os.sep)


class _CountedFile:
    """A file opened for writing whose every write() is a step; everything else is the file's own."""

    def __init__(self, file, plan: FaultPlan, name: str) -> None:
        self._file, self._plan, self._name = file, plan, name

    def write(self, data) -> int:
        self._plan.step("write", f"of {len(memoryview(data).cast('B'))} bytes to {os.path.basename(self._name)}")
        return self._file.write(data)

    def __getattr__(self, name: str):
        return getattr(self._file, name)

    def __enter__(self):
        self._file.__enter__()
        return self

    def __exit__(self, *exc):
        return self._file.__exit__(*exc)

    def __iter__(self):
        return iter(self._file)


def _opening(plan: FaultPlan, folder: str):
    """io.open, handing back files opened for writing in `folder` wrapped as _CountedFile."""

    def open_(file, mode="r", *args, **kwargs):
        handle = _OPEN(file, mode, *args, **kwargs)
        if not any(flag in mode for flag in "wax+") or "b" not in mode:
            return handle
        path = fd_path(file) if isinstance(file, int) else os.path.realpath(os.fsdecode(os.fspath(file)))
        return _CountedFile(handle, plan, path) if _in_folder(path, folder) else handle

    return open_


def _writing(plan: FaultPlan, folder: str):
    def write(fd, data):
        path = fd_path(fd)
        if _in_folder(path, folder):
            plan.step("write", f"(os.write) of {len(memoryview(data).cast('B'))} bytes to {os.path.basename(path)}")
        return _WRITE(fd, data)

    return write


def _syncing(plan: FaultPlan, original):
    def sync(fd):
        number = fd if isinstance(fd, int) else fd.fileno()
        plan.step("sync", f"({original.__name__}) of {os.path.basename(fd_path(number)) or fd_path(number)}")
        return original(fd)

    sync.__name__ = sync.__qualname__ = original.__name__
    return sync


def _saving(plan: FaultPlan, folder: str):
    """torch.save that writes to a path through io.open (as patched), so that its writes are steps."""

    def save(obj, f, *args, **kwargs):
        if isinstance(f, (str, os.PathLike)):
            with io.open(f, "wb") as handle:
                return _SAVE(obj, handle, *args, **kwargs)
        return _SAVE(obj, f, *args, **kwargs)

    return save


def _renames(plan: FaultPlan):
    """A rename listener making each rename a step (a step that raises aborts the rename)."""

    def seen(src, dst, src_dir_fd, dst_dir_fd) -> None:
        plan.step("rename", f"of {os.path.basename(os.fsdecode(os.fspath(src)))} "
                            f"onto {os.path.basename(os.fsdecode(os.fspath(dst)))}")

    return seen


def _bindings() -> list[tuple[object, str, object]]:
    """(owner, name, original) for every place that can name a function this module wraps: where the
    standard library and torch define them, and each global of a cs336_basics module bound to one."""
    originals = (_OPEN, _WRITE, _SAVE, *SYNCS)
    known = [(io, "open"), (builtins, "open"), (torch, "save"), (torch.serialization, "save")]
    known += [(owner, name) for owner in (os, sys.modules.get("posix")) if owner is not None
              for name in ("write", "fsync", "fdatasync")]
    places = [(owner, name, getattr(owner, name)) for owner, name in known
              if any(getattr(owner, name, None) is f for f in originals)]
    return places + student_bindings(originals)


def _wrapper(original, plan: FaultPlan, folder: str):
    if original is _OPEN:
        return _opening(plan, folder)
    if original is _WRITE:
        return _writing(plan, folder)
    if original is _SAVE:
        return _saving(plan, folder)
    return _syncing(plan, original)


@contextmanager
def injected_faults(folder: str, plan: FaultPlan) -> Iterator[FaultPlan]:
    """Count (and fail, per `plan`) the steps of whatever runs inside the block; see the module docstring.

    Raises:
        RuntimeError: a block is already open (blocks do not nest)."""
    folder = os.path.realpath(folder)
    with ExitStack() as patches:
        for owner, name, original in _bindings():
            patches.enter_context(mock.patch.object(owner, name, _wrapper(original, plan, folder)))
        with renames_seen_by(_renames(plan)):
            yield plan
