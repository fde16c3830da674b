"""The routes a checkpoint save takes to files, shared by the instruments that watch a save.

`adapters/_durability.py` records a save's flushes and renames; `adapters/_faults.py` makes a save's
steps fail one at a time. Both need the same three things, kept here once:

- `renames_seen_by(listener)`: a block inside which `listener(source, destination, src_dir_fd,
  dst_dir_fd)` is called for every rename. CPython raises the audit event "os.rename" inside
  `os.rename` and `os.replace` themselves, so the hook sees every route to them (any alias, pathlib's
  `rename` and `replace`, `shutil.move`). An audit hook cannot be removed: one is installed per
  process, on first use, and calls the open block's listener; outside a block it returns at once.
  A listener that raises aborts the rename (the fault injector's failing step).
- `fd_path(fd)`: the real path of an open file, through /proc/self/fd.
- `student_bindings(originals)`: every global of a `cs336_basics` module that *is* one of `originals`
  (`from os import fsync as sync` included), so that a wrapper can replace the name the student's
  code will call.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

STUDENT_PACKAGE = "cs336_basics"
# The flush functions as the interpreter made them, before anything could wrap them.
SYNCS = tuple(getattr(os, name) for name in ("fsync", "fdatasync") if hasattr(os, name))

RenameListener = Callable[[object, object, object, object], None]

_lock = threading.Lock()
_hook_installed = False
_listener: RenameListener | None = None


def fd_path(fd: int) -> str:
    """The real path of the file open as `fd`, or "<fd N>" where /proc/self/fd cannot say."""
    try:
        return os.path.realpath(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        return f"<fd {fd}>"


def student_bindings(originals: tuple[object, ...]) -> list[tuple[object, str, object]]:
    """(module, name, value) for each global of a loaded cs336_basics module that is one of `originals`."""
    places = []
    for name, module in list(sys.modules.items()):
        if module is not None and (name == STUDENT_PACKAGE or name.startswith(STUDENT_PACKAGE + ".")):
            places += [(module, attribute, value) for attribute, value in list(vars(module).items())
                       if any(value is original for original in originals)]
    return places


def _audit(event: str, args: tuple) -> None:
    listener = _listener
    if listener is not None and event == "os.rename":
        listener(*args)


@contextmanager
def renames_seen_by(listener: RenameListener) -> Iterator[None]:
    """Call `listener(src, dst, src_dir_fd, dst_dir_fd)` for each rename inside the block.

    Raises:
        RuntimeError: a block is already open, here or by the other instrument (blocks do not nest)."""
    global _hook_installed, _listener
    with _lock:
        if not _hook_installed:
            sys.addaudithook(_audit)
            _hook_installed = True
        if _listener is not None:
            raise RuntimeError("a save is already being watched; the instruments' blocks do not nest")
        _listener = listener
    try:
        yield
    finally:
        with _lock:
            _listener = None
