"""The worker's disk quota where no tmpfs can be mounted for it: counted by the grader after each call.

As root the sandbox mounts a tmpfs of bounded size on the worker's folders (`confine.disk_quota`),
and the kernel stops a write past the limit. Elsewhere (Docker's default profile refuses mounts; a
grader that is not root) the grader counts what the folders hold after every call, and a call that
leaves them over the limit fails, its files removed, so the next test and the next grade start with
room. Counting cannot stop a write while a call runs; it only bounds what stays.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from staff.sandbox.removal import remove_tree


@dataclass
class DiskQuota:
    folders: list[Path]
    max_bytes: int
    max_files: int

    def usage(self) -> tuple[int, int, str | None]:
        """(bytes, entries, a folder the grader may not list) under the folders, links not followed;
        counting stops just past the limits, or at the first folder closed to the grader (one made
        with a mode that lets its owner write but not read: what it holds cannot be counted)."""
        size = files = 0
        pending = [str(folder) for folder in self.folders]
        while pending and size <= self.max_bytes and files <= self.max_files:
            folder = pending.pop()
            try:
                entries = list(os.scandir(folder))
            except PermissionError:
                return size, files, folder
            except OSError:
                continue
            for entry in entries:
                files += 1
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(info.st_mode):
                    pending.append(entry.path)
                else:
                    size += info.st_blocks * 512  # what the disk holds: a sparse file's holes take none
        return size, files, None

    def exceeded(self) -> str | None:
        """Why the folders are over the quota or cannot be counted (then their contents are removed), or None."""
        size, files, closed = self.usage()
        if closed is None and size <= self.max_bytes and files <= self.max_files:
            return None
        for folder in self.folders:
            for entry in list(os.scandir(folder)):
                remove_tree(entry.path)
        if closed is not None:
            name = os.path.relpath(closed, next((str(f) for f in self.folders if closed.startswith(str(f))), "/"))
            return (f"your code made a folder the grader may not list ({name!r}: a mode without read permission), "
                    f"so what it holds could not be counted against the disk limit; your files were removed")
        return (f"your code's files took more than the grader's disk limit ({self.max_bytes / 2**30:g} GiB and "
                f"{self.max_files} files in all; found at least {size / 2**20:.0f} MiB in {files} files), so they "
                f"were removed")
