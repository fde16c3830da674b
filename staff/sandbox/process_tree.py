"""The worker's processes as /proc shows them, and the page tables they hold (stdlib only: this file
runs in the worker, copied into its code folder).

The zygote is the init of the worker's PID namespace or else the subreaper of everything its
children start, so its descendants are every process the student's code started. Their page tables
are memory no resource limit counts and, where the worker has no memory group of its own (an
ordinary user's grade, a container), nothing in the kernel bounds: a read-only page of 4 KiB mapped
1 GiB from the next costs 8 KiB of tables, up to vm.max_map_count (65,530) mappings a process, so
512 MiB a process whatever its address-space limit. The zygote watches their sum instead
(`worker.zygote`) and ends the child's processes past `PAGE_TABLE_LIMIT_KIB`.
"""

from __future__ import annotations

import os
import stat

# An honest process holds a few MiB (the worker's zygote after importing torch 2.4 MiB; a 4 GiB tensor
# adds 8 MiB): the limit is for the sum over the child's processes, far above any honest grade, and
# its margin covers what grows between two looks (one process maps ~850 MiB/s of tables at most).
PAGE_TABLE_LIMIT_KIB = 256 << 10
WATCH_INTERVAL_S = 0.05
FILE_LOOKS_EVERY = 10  # watches: the open files are looked at every 0.5 s (a listing of each process's descriptors)
MOST_PROCESSES = 4096  # a walk stops here whatever /proc shows: more than any process limit of a worker


def children(pid: int | str = "self") -> list[int]:
    """The children of process `pid` (of every thread of it), living and dead-but-unreaped, as /proc
    lists them; [] where it cannot (the process is gone, or the kernel has no children files)."""
    pids: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                pids += [int(child) for child in handle.read().split()]
    except (OSError, ValueError):
        pass
    return pids


def descendants() -> list[int]:
    """Every process below this one (children, theirs, and so on), at most MOST_PROCESSES."""
    found: list[int] = []
    seen: set[int] = set()
    pending = children()
    while pending and len(found) < MOST_PROCESSES:
        pid = pending.pop()
        if pid not in seen:
            seen.add(pid)
            found.append(pid)
            pending += children(pid)
    return found


def _vmpte_kib(status: str) -> int | None:
    """VmPTE from the /proc status file at `status` (KiB); None where it has none or cannot be read."""
    try:
        with open(status) as handle:
            for line in handle:
                if line.startswith("VmPTE:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def page_tables_kib(pid: int) -> int:
    """The page tables process `pid` holds (VmPTE, KiB); 0 for a process that is gone or a zombie.

    Read from a living thread: a process whose first thread has exited on its own (the thread-only
    exit call) lives on in its other threads, and its own status file then shows no memory at all."""
    held = _vmpte_kib(f"/proc/{pid}/status")
    if held is not None:
        return held
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for task in tasks[:MOST_PROCESSES]:
        held = _vmpte_kib(f"/proc/{pid}/task/{task}/status")
        if held is not None:
            return held  # the threads share one address space: any living one says it all
    return 0


def page_tables_past_limit(limit_kib: int = PAGE_TABLE_LIMIT_KIB, pids: list[int] | None = None) -> str | None:
    """Why the processes below this one (or `pids`) must end, when their page tables together hold more
    than `limit_kib` (as the words that follow "the process running your code"); else None."""
    held = sum(page_tables_kib(pid) for pid in (descendants() if pids is None else pids))
    if held <= limit_kib:
        return None
    return (f"was stopped by the grader: your code's processes held {held / 1024:.0f} MiB of page tables (the "
            f"kernel's maps of their memory), past the {limit_kib / 1024:.0f} MiB a grade allows; memory mapped "
            f"in many small pieces far apart costs page tables out of proportion to its size")


def deleted_files_past_limit(limit_bytes: int, pids: list[int] | None = None) -> str | None:
    """Why the processes below this one (or `pids`) must end, when the files they hold open after
    deleting them (in no folder, so no count of the folders sees them, yet on a disk) take more than
    `limit_bytes` together; else None. A process whose descriptors are closed to this one is passed
    over: an honest one can be (a daemon that ran /bin/sleep was, in the grader), and treating it as
    hiding failed honest code."""
    held, seen = 0, set()
    for pid in descendants() if pids is None else pids:
        try:
            descriptors = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for descriptor in descriptors:
            try:
                info = os.stat(f"/proc/{pid}/fd/{descriptor}")
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode) and info.st_nlink == 0 and (info.st_dev, info.st_ino) not in seen:
                seen.add((info.st_dev, info.st_ino))
                held += info.st_blocks * 512
    if held <= limit_bytes:
        return None
    return (f"was stopped by the grader: your code's processes held {held / 2**20:.0f} MiB in files deleted while "
            f"still open, past the disk limit of {limit_bytes / 2**30:g} GiB")
