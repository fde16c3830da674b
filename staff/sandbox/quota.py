"""The worker's disk quota where no tmpfs can be mounted for it: counted by the grader after each call.

As root the sandbox mounts a tmpfs of bounded size on the worker's folders (`confine.disk_quota`),
and the kernel stops a write past the limit. Elsewhere (Docker's default profile refuses mounts; a
grader that is not root) the grader counts what the folders hold after every call, and a call that
leaves them over the limit fails, its files removed, so the next test and the next grade start with
room. Counting cannot stop a write while a call runs; it only bounds what stays. (Files deleted while
a process keeps them open are in no folder: the worker's zygote counts those, `process_tree`.)

The count walks by descriptor (a path deeper than PATH_MAX is no hiding place), holding two at most
however deep the tree (it climbs back through "..", checked against the folder it came from, as
`removal.remove_tree` does) and the names of the subfolders still to visit; it stops at the first limit
crossed (half a million links in one folder cost it nothing), counts a folder's own blocks (an ext4
folder keeps the blocks its entries once took) and a file's blocks once however many links name it,
and fails a folder it cannot count: one it may not list, or one that moved while it counted.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from staff.sandbox.removal import remove_tree

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CLOSED = "a folder the grader may not list (a mode without read permission)"


class _Uncountable(Exception):
    """A folder the count cannot enter: why, as the words after "your code made"."""


@dataclass
class DiskQuota:
    folders: list[Path]
    max_bytes: int
    max_files: int

    def usage(self) -> tuple[int, int, str | None]:
        """(bytes, entries, why a folder cannot be counted) under the folders, links not followed;
        counting stops just past the limits, or at the first folder it cannot count."""
        self._size, self._files, self._inodes = 0, 0, set()
        try:
            for folder in self.folders:
                self._walk(folder)
        except _Uncountable as why:
            return self._size, self._files, str(why)
        return self._size, self._files, None

    def _over(self) -> bool:
        return self._size > self.max_bytes or self._files > self.max_files

    def _walk(self, folder: Path) -> None:
        """Count what `folder` holds, depth first, with one folder open at a time."""
        try:
            handle = os.open(folder, _FOLDER)
        except FileNotFoundError:
            return
        try:
            info = os.fstat(handle)
            self._size += info.st_blocks * 512
            levels = [((info.st_dev, info.st_ino), self._list(handle))]  # (which folder, subfolders left)
            while levels and not self._over():
                if not levels[-1][1]:  # this folder is done: back to its parent
                    levels.pop()
                    if levels:
                        handle = self._enter(handle, "..", expected=levels[-1][0])
                    continue
                below = self._enter(handle, levels[-1][1].pop())
                if below is None:
                    continue
                handle = below
                info = os.fstat(handle)
                levels.append(((info.st_dev, info.st_ino), self._list(handle)))
        finally:
            os.close(handle)

    def _enter(self, handle: int, name: str, expected: tuple[int, int] | None = None) -> int | None:
        """The folder `name` in the folder open as `handle`, opened in its place (`handle` is closed);
        None, `handle` kept, where it is gone. `expected`: the folder it must be (climbing back)."""
        try:
            below = os.open(name, _FOLDER, dir_fd=handle)
        except FileNotFoundError:
            if expected is not None:
                raise _Uncountable("a folder that moved while the grader counted it") from None
            return None
        except PermissionError:
            raise _Uncountable(_CLOSED) from None
        except OSError as error:
            raise _Uncountable(f"a folder the grader may not open ({error.strerror})") from None
        if expected is not None:
            info = os.fstat(below)
            if (info.st_dev, info.st_ino) != expected:
                os.close(below)
                raise _Uncountable("a folder that moved while the grader counted it")
        os.close(handle)
        return below

    def _list(self, handle: int) -> list[str]:
        """Count the entries of the folder open as `handle`; the names of its subfolders."""
        folders: list[str] = []
        try:
            with os.scandir(handle) as entries:
                for entry in entries:
                    self._files += 1
                    if self._over():
                        return []
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    if info.st_nlink > 1 and not stat.S_ISDIR(info.st_mode):
                        if (info.st_dev, info.st_ino) in self._inodes:
                            continue  # another link to a file already counted
                        self._inodes.add((info.st_dev, info.st_ino))
                    self._size += info.st_blocks * 512  # what the disk holds: a sparse file's holes take none
                    if stat.S_ISDIR(info.st_mode):
                        folders.append(entry.name)
        except PermissionError:
            raise _Uncountable(_CLOSED) from None
        return folders

    def exceeded(self) -> str | None:
        """Why the folders are over the quota or cannot be counted (then their contents are removed), or None."""
        size, files, uncountable = self.usage()
        if uncountable is None and size <= self.max_bytes and files <= self.max_files:
            return None
        for folder in self.folders:
            _empty(folder)
        if uncountable is not None:
            return (f"your code made {uncountable}, so what it holds could not be counted against the disk "
                    f"limit; your files were removed")
        return (f"your code's files took more than the grader's disk limit ({self.max_bytes / 2**30:g} GiB and "
                f"{self.max_files} files in all; found at least {size / 2**20:.0f} MiB in {files} files), so they "
                f"were removed")


def _empty(folder: Path) -> None:
    """Remove everything in `folder`, reading its entries as it goes (never all of them at once)."""
    for _ in range(4):  # entries removed while listed may hide others from the same listing: look again
        removed = 0
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    remove_tree(entry.path)
                    removed += 1
        except FileNotFoundError:
            return
        if not removed:
            return
