"""Removing a tree a submission wrote, whatever it holds, and scratch folders that always go.

`shutil.rmtree` recurses once per level (a tree 1,200 folders deep raises RecursionError), holds a
file descriptor per level, and gives up on a folder whose mode keeps its owner out. `remove_tree`
walks with a list instead of the stack, holds two folders open at most (it climbs back through
"..", checked against the folder it came from), never follows a link (it removes the link), opens
up folders made 0o000 or read-only, stays on the tree's own file system, and reports what it could
not remove instead of raising.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from adapters._text import shown_text

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
MAX_REPORTED = 20  # problems named; a tree can hold thousands


@dataclass
class _Level:
    """A folder being emptied: how it was reached, which it is, and its subfolders still to visit."""

    name: str
    identity: tuple[int, int]  # (st_dev, st_ino)
    folders: list[str] = field(default_factory=list)


def _identity(info: os.stat_result) -> tuple[int, int]:
    return info.st_dev, info.st_ino


def _let_owner_in(name: str, parent: int) -> None:
    """Give the folder `name` (in `parent`) mode 0o700, without following a link."""
    if hasattr(os, "O_PATH"):  # Linux: change the folder itself, through a descriptor that cannot be a link's target
        handle = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
        try:
            os.chmod(f"/proc/self/fd/{handle}", 0o700)
        finally:
            os.close(handle)
    else:
        os.chmod(name, 0o700, dir_fd=parent, follow_symlinks=False)


def _open_folder(name: str, parent: int) -> int:
    """The folder `name` of `parent`, opened without following a link, with its owner's rights on it
    restored (read, write, search), so that what it holds can be removed and ".." opened from it."""
    try:
        handle = os.open(name, _FOLDER, dir_fd=parent)
    except PermissionError:
        _let_owner_in(name, parent)
        handle = os.open(name, _FOLDER, dir_fd=parent)
    if os.fstat(handle).st_mode & 0o700 != 0o700:
        with contextlib.suppress(PermissionError):  # not its owner (a file root left): root needs no mode
            os.fchmod(handle, 0o700)
    return handle


class _Remover:
    def __init__(self, top: Path) -> None:
        self.top, self.problems = top, []

    def note(self, levels: list[_Level], name: str, error: BaseException) -> None:
        if len(self.problems) < MAX_REPORTED:
            below = "/".join([level.name for level in levels[1:]][-3:] + [name])
            self.problems.append(f"{self.top}/{'.../' if len(levels) > 4 else ''}{below}: {error}")

    def empty(self, handle: int, levels: list[_Level]) -> None:
        """Remove what the folder open at `handle` (the last of `levels`) holds but its subfolders,
        which are queued on its level."""
        level = levels[-1]
        with os.scandir(handle) as entries:
            found = list(entries)
        for entry in found:
            try:
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode) and info.st_dev == level.identity[0]:
                    level.folders.append(entry.name)
                elif stat.S_ISDIR(info.st_mode):
                    raise OSError("another file system is mounted here; left alone")
                else:
                    os.unlink(entry.name, dir_fd=handle)
            except OSError as error:
                self.note(levels, entry.name, error)

    def remove_below(self, handle: int, name: str) -> None:
        """Empty the folder open at `handle` (called `name`), one level at a time; closes `handle`."""
        levels = [_Level(name, _identity(os.fstat(handle)))]
        try:
            self.empty(handle, levels)
            while levels:
                level = levels[-1]
                if level.folders:  # down into the next subfolder
                    child = level.folders.pop()
                    try:
                        below = _open_folder(child, handle)
                    except OSError as error:
                        self.note(levels, child, error)
                        continue
                    os.close(handle)
                    handle = below
                    levels.append(_Level(child, _identity(os.fstat(handle))))
                    try:
                        self.empty(handle, levels)
                    except OSError as error:
                        self.note(levels[:-1], child, error)
                    continue
                if len(levels) == 1:
                    return
                # Up: this folder is empty (or holds what could not go); remove it from its parent.
                parent = os.open("..", _FOLDER, dir_fd=handle)
                if _identity(os.fstat(parent)) != levels[-2].identity:
                    os.close(parent)
                    raise OSError(f"{level.name} was moved while it was being removed; stopped")
                os.close(handle)
                handle = parent
                levels.pop()
                try:
                    os.rmdir(level.name, dir_fd=handle)
                except OSError as error:
                    self.note(levels, level.name, error)
        finally:
            os.close(handle)


def remove_tree(path: str | os.PathLike) -> list[str]:
    """Remove `path` and everything below it (a link or a file is removed itself); what could not be
    removed, named (at most MAX_REPORTED; empty when everything went). Never raises for what the
    tree holds: a grade's result must not depend on how its scratch folder was left."""
    top = Path(path)
    remover = _Remover(top)
    try:
        parent = os.open(top.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as error:
        return [] if isinstance(error, FileNotFoundError) else [f"{top}: {error}"]
    try:
        try:
            info = os.stat(top.name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return []
        if not stat.S_ISDIR(info.st_mode):
            os.unlink(top.name, dir_fd=parent)
            return []
        remover.remove_below(_open_folder(top.name, parent), top.name)
        os.rmdir(top.name, dir_fd=parent)
    except OSError as error:
        remover.problems.append(f"{top}: {error}")
    finally:
        os.close(parent)
    return remover.problems


@contextlib.contextmanager
def scratch_folder(prefix: str, parent: str | None = None) -> Iterator[Path]:
    """A new private folder (as `tempfile.mkdtemp` makes it, in `parent` or the temporary folder),
    removed with `remove_tree` however the block ends. What could not be removed is said on stderr;
    the clean-up never raises, so whatever the block made (a grade) is kept."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        yield folder
    finally:
        try:
            left = remove_tree(folder)
        except Exception as error:  # noqa: BLE001 - a bug here must not cost the grade made in the block
            left = [f"{folder}: {type(error).__name__}: {error}"]
        if left:  # names the submission chose: shown without their control characters
            print(shown_text(f"warning: the scratch folder {folder} was not removed whole:\n  " + "\n  ".join(left)),
                  file=sys.stderr)
