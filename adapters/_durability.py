"""What a checkpoint save did to files: its renames and its flushes to disk, whatever names it used.

A save is atomic and durable when it writes a temporary file, flushes every byte of it to disk
(`os.fsync` or `os.fdatasync`), then renames it over the target (handout/10_checkpoint.md §10.3).
`recorded_file_operations()` lists both kinds of operation in the order they happened. Patching
`os.replace` and `os.fsync` alone would miss correct code that bound them before the patch
(`from os import fsync, replace`, then `replace(temp, out)`), so:

- Renames are seen by the process's audit hook (`adapters/_file_routes.py`): CPython raises the
  audit event "os.rename" inside `os.rename` and `os.replace` themselves, so the hook sees every
  route to them: any alias, `pathlib.Path.rename` / `Path.replace`, `shutil.move`, `os.renames`.
- Flushes have no audit event. They are seen by wrapping the functions wherever the student's code
  can reach them by name when the block opens: the attributes `os.fsync` and `os.fdatasync` (and
  `posix`'s, the same functions), and every global of a module of the `cs336_basics` package that
  *is* one of them (`from os import fsync as sync` included). Each call is recorded with the file's
  path (through /proc/self/fd on Linux; "<fd N>" elsewhere) and its size in bytes when synced, that
  is what had reached the file, not what still sat in a Python buffer. Either an fd or a file
  object (anything with `fileno()`) may be passed. A flush through a reference the scan cannot see
  (a default argument, a class attribute, a `functools.partial` made at import) is not recorded.

Deliberately hostile code can fake any of this; the instrument has to see what correct code does,
by any of the routes above, and never credit a flush or a rename that did not happen.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from unittest import mock

from adapters._file_routes import SYNCS, fd_path, renames_seen_by, student_bindings


def _resolved(path, dir_fd) -> str:
    """`path` (str, bytes or PathLike) as an absolute path, relative paths taken from `dir_fd` when given."""
    text = os.fsdecode(os.fspath(path))
    if dir_fd is not None and dir_fd >= 0 and not os.path.isabs(text):
        text = os.path.join(fd_path(dir_fd), text)
    return text


def _renames(records: list[tuple[str, str, str]]):
    """A rename listener recording ("rename", source's real path, destination)."""

    def seen(src, dst, src_dir_fd, dst_dir_fd) -> None:
        try:
            records.append(("rename", os.path.realpath(_resolved(src, src_dir_fd)), _resolved(dst, dst_dir_fd)))
        except Exception:  # noqa: BLE001 - an audit hook that raises would make the rename itself fail
            records.append(("rename", "<unreadable>", "<unreadable>"))

    return seen


def _syncing(original, records: list[tuple[str, str, str]]):
    """`original` (os.fsync or os.fdatasync), recording ("sync", path, size in bytes) before each call."""

    def sync(fd):
        number = fd if isinstance(fd, int) else fd.fileno()
        records.append(("sync", fd_path(number), str(os.fstat(number).st_size)))
        return original(fd)

    sync.__name__ = sync.__qualname__ = original.__name__
    sync.__doc__ = original.__doc__
    return sync


def _sync_bindings() -> list[tuple[object, str, object]]:
    """(owner, name, original) for every place the student's code can name a flush function: os's
    and posix's attributes, and each global of a cs336_basics module bound to one of them."""
    places = [(module, function.__name__, function) for module in (os, sys.modules.get("posix")) if module is not None
              for function in SYNCS if getattr(module, function.__name__, None) is function]
    return places + student_bindings(SYNCS)


@contextmanager
def recorded_file_operations() -> Iterator[list[tuple[str, str, str]]]:
    """Lists, in order, ("rename", source's real path, destination) for each rename inside the block
    (os.rename, os.replace, by any name or through pathlib), and ("sync", the file's real path, its
    size in bytes as a decimal string) for each os.fsync / os.fdatasync (see the module docstring
    for the routes seen).

    Raises:
        RuntimeError: a block is already open (blocks do not nest)."""
    records: list[tuple[str, str, str]] = []
    with renames_seen_by(_renames(records)), ExitStack() as patches:
        for owner, name, original in _sync_bindings():
            patches.enter_context(mock.patch.object(owner, name, _syncing(original, records)))
        yield records
