"""The worker's disk quota where no tmpfs can be mounted for it: counted by the grader after each call.

As root the sandbox mounts a tmpfs of bounded size on the worker's folders (`confine.disk_quota`),
and the kernel stops a write past the limit. Elsewhere (Docker's default profile refuses mounts; a
grader that is not root) the grader counts what the folders hold after every call, and a call that
leaves them over the limit fails, its files removed, so the next test and the next grade start with
room. Counting cannot stop a write while a call runs; it only bounds what stays. (Files deleted while
a process keeps them open are in no folder: the worker's zygote counts those, `process_tree`.)

The count walks by descriptor (a path deeper than PATH_MAX is no hiding place), holds one folder's
subfolder names at a time and stops at the first limit crossed (half a million links in one folder
cost it nothing), counts a folder's own blocks (an ext4 folder keeps the blocks its entries once
took), a file's blocks once however many links name it, and fails a folder it cannot count: one it
may not list, or one more than MAX_DEPTH folders deep.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from staff.sandbox.removal import remove_tree

MAX_DEPTH = 64  # folders below a counted one: the walk holds a descriptor for each level
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
                try:
                    handle = os.open(folder, _FOLDER)
                except FileNotFoundError:
                    continue
                try:
                    self._size += os.fstat(handle).st_blocks * 512
                    self._walk(handle, 0)
                finally:
                    os.close(handle)
        except _Uncountable as why:
            return self._size, self._files, str(why)
        return self._size, self._files, None

    def _over(self) -> bool:
        return self._size > self.max_bytes or self._files > self.max_files

    def _walk(self, handle: int, depth: int) -> None:
        """Count what the folder open as `handle` holds, its subfolders depth first."""
        folders: list[str] = []
        try:
            with os.scandir(handle) as entries:
                for entry in entries:
                    self._files += 1
                    if self._over():
                        return
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
        for name in folders:
            if self._over():
                return
            if depth + 1 > MAX_DEPTH:
                raise _Uncountable(f"folders more than {MAX_DEPTH} levels deep")
            try:
                below = os.open(name, _FOLDER, dir_fd=handle)
            except FileNotFoundError:
                continue
            except PermissionError:
                raise _Uncountable(_CLOSED) from None
            except OSError as error:
                raise _Uncountable(f"a folder the grader may not open ({error.strerror})") from None
            try:
                self._walk(below, depth + 1)
            finally:
                os.close(below)

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
