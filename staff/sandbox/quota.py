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

    def usage(self) -> tuple[int, int]:
        """(bytes, entries) under the folders, links not followed; counting stops just past the limits."""
        size = files = 0
        pending = [str(folder) for folder in self.folders]
        while pending and size <= self.max_bytes and files <= self.max_files:
            try:
                entries = list(os.scandir(pending.pop()))
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
        return size, files

    def exceeded(self) -> str | None:
        """Why the folders are over the quota (then their contents are removed), or None."""
        size, files = self.usage()
        if size <= self.max_bytes and files <= self.max_files:
            return None
        for folder in self.folders:
            for entry in list(os.scandir(folder)):
                remove_tree(entry.path)
        return (f"your code's files took more than the grader's disk limit ({self.max_bytes / 2**30:g} GiB and "
                f"{self.max_files} files in all; found at least {size / 2**20:.0f} MiB in {files} files), so they "
                f"were removed")
