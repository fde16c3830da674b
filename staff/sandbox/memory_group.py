"""A memory cgroup of the worker's own: all the memory it causes counted to it and bounded.

A memfd, a file in /dev/shm or in any tmpfs holds pages that are in no process's RSS and outside
RLIMIT_AS; the kernel charges them to the memory cgroup of the process that wrote them. So the
grader makes a group for each worker, below the cgroup it runs in (the container's, or the batch's),
limited to the grade's memory setting, and the worker's launcher joins it before anything is
imported. A kill for that group's memory is then the worker's own doing, and its peak says how much
the student's code used, whatever form the memory took.

Where no group can be made (not root; the cgroup file system read-only, as in Docker; cgroup v2
without the memory controller delegated below this process's group) the worker goes without and
the grader says why; the worker's oom_score_adj (see `user_limits.killed_first`) still makes the kernel
kill it first.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

from staff.sandbox import memory

PREFIX = "cs336-worker-"
# What one grade needs outside its worker: the test process (pytest, the suites, torch) and the grader's
# own process. An estimate from what was measured here: the reference's whole grade fits in 1,024 MiB
# (memory.MIN_MEMORY_BYTES) and its worker's group peaks at about 420 MiB, which leaves about 600 MiB;
# the container test's -j 2 batch in 4 GiB holds with it.
GRADER_BYTES = 640 << 20
LEAST_WORKER_BYTES = 512 << 20  # below this a worker cannot import torch; a smaller share is not made smaller


def machine_bytes(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """The machine's memory (MemTotal), bytes, or None where it cannot be read."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) << 10
    except (OSError, ValueError, IndexError):
        pass
    return None


def worker_limit(memory_bytes: int | None, jobs: int, room_bytes: int | None) -> int | None:
    """The limit of one worker's group: the grade's memory setting, but no more than its share of
    `room_bytes` (the container's limit, else the machine's memory) among `jobs` grades at once, less
    what each grade's own processes need. So workers together cannot fill the room: each one that
    tries meets its own group's limit, and the kernel kills it there, not a neighbour or a test process.
    None: no limit (no setting and no room known)."""
    share = None if room_bytes is None else max(room_bytes // max(jobs, 1) - GRADER_BYTES, LEAST_WORKER_BYTES)
    limits = [value for value in (memory_bytes, share) if value is not None]
    return min(limits) if limits else None


def make(limit_bytes: int | None, found: tuple[Path, bool] | None = None) -> tuple[Path | None, str]:
    """A new memory cgroup folder for one worker, below this process's, holding at most `limit_bytes`
    (None: no limit, counted only) with no swap; (the folder, "on") or (None, "off: why"). `found`:
    the parent folder and whether it is cgroup v2 (by default this process's memory cgroup)."""
    found = found or memory.own_cgroup("memory")
    if found is None:
        return None, "off: no memory cgroup to read (cgroup v1's memory controller, or v2 with it)"
    if os.geteuid() != 0:
        return None, "off: the grader does not run as root"
    parent, v2 = found
    group = parent / f"{PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        group.mkdir()
    except OSError as error:
        return None, f"off: cannot make a cgroup in {parent.name or '/'} ({error.strerror})"
    why = configure(group, v2, limit_bytes)
    if why is not None:
        remove(group)
        return None, f"off: {why}"
    return group, "on"


def configure(group: Path, v2: bool, limit_bytes: int | None) -> str | None:
    """Set a new group's limit (`limit_bytes`, None: counted only), no swap beyond it, and, on v2, one
    kill for the whole group; None, or why it cannot be used. A control file the kernel does not
    offer (no swap accounting) is skipped, never created: a cgroup file system refuses new files."""
    limit = "max" if limit_bytes is None else str(limit_bytes)
    if v2:
        try:
            delegated = "memory" in (group / "cgroup.controllers").read_text().split()
        except OSError as error:
            return error.strerror
        if not delegated:
            return "the memory controller is not delegated below the grader's cgroup"
        settings = {"memory.max": limit, "memory.swap.max": "0", "memory.oom.group": "1"}
    else:
        settings = {"memory.limit_in_bytes": "-1" if limit_bytes is None else limit}
        if limit_bytes is not None:
            settings["memory.memsw.limit_in_bytes"] = limit  # no swap beyond the limit
    required = {"memory.max", "memory.limit_in_bytes"}
    for key, value in settings.items():
        if key not in required and not (group / key).exists():
            continue
        try:
            (group / key).write_text(value)
        except OSError as error:
            return f"{key}: {error.strerror}"
    return None


def usage_bytes(group: Path) -> int | None:
    """What the group holds now, bytes (page cache and in-memory files included), or None."""
    for name in ("memory.current", "memory.usage_in_bytes"):
        try:
            return int((group / name).read_text())
        except (OSError, ValueError):
            continue
    return None


def remove(group: Path | None, wait_s: float = 5.0) -> bool:
    """Remove the group once its processes are gone (they are being killed); whether it went. What the
    group still holds (files in a tmpfs) the kernel hands to its parent."""
    if group is None:
        return True
    deadline = time.monotonic() + wait_s
    while True:
        try:
            group.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)


def remove_left_by(pid: int) -> list[Path]:
    """Remove the groups the test process `pid` made (it ended, so their workers are gone); those that
    would not go. A test process killed at the run's limit has no chance to remove its own."""
    found = memory.own_cgroup("memory")
    if found is None:
        return []
    return [group for group in found[0].glob(f"{PREFIX}{pid}-*") if not remove(group, wait_s=1.0)]
