"""The worker's processes as /proc shows them, and what they hold that no limit counts: page tables,
files deleted but still open or mapped, pipes (stdlib only: this file runs in the worker, copied
into its code folder).

The zygote is the init of the worker's PID namespace or else the subreaper of everything its
children start, so its descendants are every process the student's code started. Their page tables
are memory no resource limit counts and, where the worker has no memory group of its own (an
ordinary user's grade, a container), nothing in the kernel bounds: a read-only page of 4 KiB mapped
1 GiB from the next costs 8 KiB of tables, up to vm.max_map_count (65,530) mappings a process, so
512 MiB a process whatever its address-space limit. The zygote watches their sum instead
(`worker.zygote`) and ends the child's processes past `PAGE_TABLE_LIMIT_KIB`; about every 0.5 s
(at random: `file_look_due`), and whenever the grader asks after a call (`CHECK`), it also counts
what they hold in files and kernel objects (`files_past_limits`): both looks are `held_past_limits`.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

# An honest process holds a few MiB (the worker's zygote after importing torch 2.4 MiB; a 4 GiB tensor
# adds 8 MiB): the limit is for the sum over the child's processes, far above any honest grade, and
# its margin covers what grows between two looks (one process maps ~850 MiB/s of tables at most).
PAGE_TABLE_LIMIT_KIB = 256 << 10
WATCH_INTERVAL_S = 0.05
# The open files are looked at (a listing of each process's descriptors) at one watch in FILE_LOOKS_EVERY on
# average, at random and at least every FILE_LOOKS_AT_MOST: a look's end shows in the zygote's /proc/PID/stat,
# which any process may read, and a fixed schedule let a worker hold 1,075 pipes only between looks.
FILE_LOOKS_EVERY = 10
FILE_LOOKS_AT_MOST = 15
CHECK = b'{"op": "check"}'  # the grader's question to the zygote after each call: what they hold now
# Each mapping (a VMA) is ~200 bytes of kernel memory, up to vm.max_map_count (65,530) a process: 14 MiB
# a process, 423 MiB in 30 (mprotect on every other page of one region). A process that has imported
# torch holds about 1,000.
MOST_MAPPINGS = 100_000
MOST_MAPS_BYTES = 16 << 20  # the maps read in one look, over every process
# An open file of /proc keeps a kernel buffer as large as the longest line read from it: a maps line
# naming a file below folders deeper than PATH_MAX is 263 KB, and 827 descriptors read so held 414 MiB.
MOST_PROC_FILES = 32
# Shared memory with no file (a MAP_SHARED mapping of anonymous memory or of /dev/zero: a shmem object that
# /proc/PID/maps names "/dev/zero (deleted)") keeps its pages when they are dropped from every page table
# (MADV_DONTNEED), so no RSS shows them, and the OOM killer, choosing by RSS, would pick another process.
# Honest grades hold none (torch and numpy make no such mapping; multiprocessing's shared values a few
# pages): each object counts at the largest offset mapped (not what an unmapped part still holds: the maps
# do not show it), and their sum may not pass this.
SHARED_ANONYMOUS_LIMIT_BYTES = 256 << 20
SHARED_ANONYMOUS_NAME = "/dev/zero"
PIPE_PAGES = 16  # a pipe's buffer, in pages, when it cannot be resized
MOST_PROCESSES = 4096  # a walk stops here whatever /proc shows: more than any process limit of a worker


def file_look_due(watches_since: int) -> bool:
    """Whether this watch looks at the open files too, `watches_since` watches after the last look: at
    random (from the kernel, which no process below the zygote can predict), one in FILE_LOOKS_EVERY,
    and always at FILE_LOOKS_AT_MOST."""
    return watches_since >= FILE_LOOKS_AT_MOST or int.from_bytes(os.urandom(2), "little") % FILE_LOOKS_EVERY == 0


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


def descendants(pid: int | str = "self") -> list[int]:
    """Every process below process `pid`, this one by default (children, theirs, and so on), at most
    MOST_PROCESSES."""
    found: list[int] = []
    seen: set[int] = set()
    pending = children(pid)
    while pending and len(found) < MOST_PROCESSES:
        below = pending.pop()
        if below not in seen:
            seen.add(below)
            found.append(below)
            pending += children(below)
    return found


def _held_kib(status: str) -> tuple[int, int] | None:
    """VmPTE, and RssAnon with VmSwap (anonymous memory resident or swapped out), from the /proc status
    file at `status` (KiB); None where it has none (a zombie, a leader whose thread has exited) or cannot
    be read."""
    tables, anonymous = None, 0
    try:
        with open(status) as handle:
            for line in handle:
                if line.startswith(("RssAnon:", "VmSwap:")):
                    anonymous += int(line.split()[1])
                elif line.startswith("VmPTE:"):
                    tables = int(line.split()[1])
                elif line.startswith("HugetlbPages:"):
                    break  # after the others in every kernel's order
    except (OSError, ValueError, IndexError):
        pass
    return (tables, anonymous) if tables is not None else None


def _living(pid: int) -> tuple[str, int, int]:
    """The /proc folder that shows process `pid`'s descriptors, maps and working folder, and the page
    tables and private anonymous memory it holds (VmPTE, RssAnon, KiB; 0 for a process that is gone or a
    zombie).

    A process whose first thread has exited on its own (the thread-only exit call) lives on in its
    other threads, and its own folder then shows no memory, descriptors or maps at all: those are
    read from a living thread's folder (/proc/PID/task/TID), which shows the process's whole."""
    held = _held_kib(f"/proc/{pid}/status")
    if held is not None:
        return f"/proc/{pid}", *held
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return f"/proc/{pid}", 0, 0
    for task in tasks[:MOST_PROCESSES]:
        held = _held_kib(f"/proc/{pid}/task/{task}/status")
        if held is not None:
            return f"/proc/{pid}/task/{task}", *held  # the threads share one address space and file table
    return f"/proc/{pid}", 0, 0


def page_tables_kib(pid: int) -> int:
    """The page tables process `pid` holds (VmPTE, KiB), read from a living thread (`_living`)."""
    return _living(pid)[1]


def page_tables_past_limit(limit_kib: int = PAGE_TABLE_LIMIT_KIB, pids: list[int] | None = None,
                           memory: MemoryLimit | None = None) -> str | None:
    """Why the processes below this one (or `pids`) must end, when their page tables together hold more
    than `limit_kib`, or the memory they grew past what they shared with the zygote more than `memory`
    allows (as the words that follow "the process running your code"); else None."""
    listed = descendants() if pids is None else pids
    held = [_living(pid) for pid in listed]
    tables = sum(kib for _, kib, _ in held)
    if tables > limit_kib:
        return (f"was stopped by the grader: your code's processes held {tables / 1024:.0f} MiB of page tables "
                f"(the kernel's maps of their memory), past the {limit_kib / 1024:.0f} MiB a grade allows; memory "
                f"mapped in many small pieces far apart costs page tables out of proportion to its size")
    grown = sum(kib for _, _, kib in held) if memory is not None else 0
    if memory is not None and grown > memory.limit_kib:
        grown = anonymous_added_kib([(folder, kib) for folder, _, kib in held], memory.zygote)
        if pids is None:  # the walk may take seconds: a process started meanwhile counts whole
            grown += sum(_living(pid)[2] for pid in set(descendants()) - set(listed))
    if memory is not None and grown > memory.limit_kib:
        return (f"was stopped by the grader: your code's {len(held)} processes held {grown / 1024:.0f} MiB of memory "
                f"together, past the {memory.limit_kib / 2**20:g} GiB a grade's processes may hold in all "
                f"(--memory-gib)")
    return None


@dataclass(frozen=True)
class MemoryLimit:
    """What the worker's processes may hold together where no memory group of its own counts it (an
    ordinary user's grade, a container): the anonymous memory they added to the zygote's (KiB).

    Each process's RssAnon and VmSwap, summed, bound it from above (a page shared from the fork counts once per
    sharer); only past the limit is the exact figure read (`anonymous_added_kib`), as /proc/PID/smaps_rollup
    costs the kernel a walk of each process's page tables."""

    limit_kib: int
    zygote: int  # the process the worker's processes are forked from, whose pages they may share


def zygote_memory_limit(limit_bytes: int | None, group: str | None) -> MemoryLimit | None:
    """The limit for a zygote (this process) whose processes may hold `limit_bytes` together; None where a
    memory group (`group`) counts them, or none is set."""
    if not limit_bytes or group:
        return None
    return MemoryLimit(limit_bytes >> 10, os.getpid())


def _rollup_kib(folder: str, fields: tuple[str, ...]) -> dict[str, int]:
    """The `fields` of the smaps_rollup in /proc `folder` (KiB), those it has; empty where it cannot be read."""
    found: dict[str, int] = {}
    try:
        with open(f"{folder}/smaps_rollup") as handle:
            for line in handle:
                name, _, rest = line.partition(":")
                if name in fields:
                    found[name] = int(rest.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return found


def anonymous_added_kib(held: list[tuple[str, int]], zygote: int) -> int:
    """The anonymous memory, resident or swapped out, the processes `held` (their /proc folders, and their
    RssAnon and VmSwap together, KiB) hold beyond the zygote's own (KiB): their proportional shares
    (Pss_Anon, SwapPss) summed, less the part of the zygote's pages those shares include (its own less
    its own shares). A page a fork shares with the zygote so counts nothing, a page two of them share
    once, and a process that shares nothing (a fresh interpreter the worker started) in full. Where the
    kernel has no Pss_Anon (before Linux 5.8), each process's own less the zygote's, which a fresh
    interpreter holding less than the zygote passes."""
    fields = ("Pss_Anon", "Anonymous", "Swap", "SwapPss")
    own = _rollup_kib(f"/proc/{zygote}", fields)
    if "Pss_Anon" not in own:
        shared = _held_kib(f"/proc/{zygote}/status") or (0, 0)
        return sum(max(kib - shared[1], 0) for _, kib in held)
    shares = 0
    for folder, kib in held:
        rollup = _rollup_kib(folder, fields)
        # A process that made itself unreadable (not dumpable) counts its whole RssAnon and VmSwap.
        shares += rollup["Pss_Anon"] + rollup.get("SwapPss", 0) if "Pss_Anon" in rollup else kib
    zygotes_shared = own.get("Anonymous", 0) + own.get("Swap", 0) - own["Pss_Anon"] - own.get("SwapPss", 0)
    return max(shares - zygotes_shared, 0)


@dataclass(frozen=True)
class FileLimits:
    """What the worker's processes may hold in files no folder shows, and in pipes.

    `disk_bytes` is the disk quota; `file_bytes` the file-size limit, at which a deleted file held by a
    mapping alone is counted (the zygote cannot measure it: only a capability of the machine's root
    opens /proc/PID/map_files); `devices` and `folders` are the worker's writable folders (st_dev, and
    the paths a deleted mapping's name starts with); `pipes` the most pipes at once, None for any;
    `maps` whether to read each process's maps, which costs the kernel ~1 ms for a process that has
    imported torch: needless where a tmpfs holds the disk quota (it counts a deleted file's pages
    while mapped) and a memory group of the worker's own counts the mappings' kernel memory."""

    disk_bytes: int
    file_bytes: int
    devices: frozenset[int]
    folders: tuple[str, ...]
    pipes: int | None
    maps: bool = True  # read the maps: deleted files mapped, shared memory with no file, the mappings' count


def file_limits(disk_bytes: int, file_bytes: int, folders: list[str], maps: bool = True) -> FileLimits:
    """The limits for a worker whose writable folders are `folders`. Pipes: a quarter of what the uid
    may hold before each new pipe of it is cut to 8 KiB (fs.pipe-user-pages-soft, in pages; a pipe
    holds 16 at most, as the filter refuses resizing one); the count is the uid's, which an ordinary
    user's worker shares with the TA's shell, the test process and the batch's other workers."""
    try:
        with open("/proc/sys/fs/pipe-user-pages-soft") as handle:
            soft = int(handle.read())
    except (OSError, ValueError):
        soft = 0
    devices = set()
    for folder in folders:
        try:
            devices.add(os.stat(folder).st_dev)
        except OSError:
            pass
    return FileLimits(disk_bytes, file_bytes, frozenset(devices), tuple(folder.rstrip("/") + "/" for folder in folders),
                      soft // PIPE_PAGES // 4 if soft else None, maps)


@dataclass
class Mapped:
    """What one look at the maps of a worker's processes found."""

    count: int = 0  # mappings
    deleted: set[tuple[int, int]] = field(default_factory=set)  # (st_dev, st_ino) of deleted files on the disk
    shared: dict[tuple[int, int], int] = field(default_factory=dict)  # shared memory with no file -> its bytes
    bytes_read: int = 0


def _mappings(folder: str, limits: FileLimits, most_bytes: int, into: Mapped) -> None:
    """Add to `into` the mappings of the process whose /proc folder is `folder`: their count, the files
    on the worker's disk it maps after they were deleted, as (st_dev, st_ino) (/proc/PID/maps names each
    "(deleted)"), its shared memory with no file (`SHARED_ANONYMOUS_NAME`, by object, at the largest
    offset mapped), and the bytes of maps read; nothing where the maps cannot be read. Past
    `most_bytes` it stops, the bytes read saying so (a maps of 10,000 lines naming a 15 KB path each
    is 150 MB: seconds of this process's time)."""
    chunks, size = [], 0
    try:
        with open(f"{folder}/maps", "rb", buffering=0) as handle:
            while size <= most_bytes and (chunk := handle.read(1 << 16)):
                chunks.append(chunk)
                size += len(chunk)
    except OSError:
        return
    text = b"".join(chunks)
    into.count, into.bytes_read = into.count + text.count(b"\n"), into.bytes_read + size
    if size > most_bytes or b" (deleted)" not in text:
        return
    for line in text.decode("utf-8", "replace").splitlines():
        if not line.endswith(" (deleted)"):
            continue
        fields = line.split(maxsplit=5)
        try:
            major, minor = (int(part, 16) for part in fields[3].split(":"))
            device, inode = os.makedev(major, minor), int(fields[4])
            start, end = (int(part, 16) for part in fields[0].split("-"))
            offset = int(fields[2], 16)
        except (IndexError, ValueError):
            continue
        name = fields[5][:-len(" (deleted)")] if len(fields) > 5 else ""
        if name == SHARED_ANONYMOUS_NAME and fields[1].endswith("s"):
            key = (device, inode)
            into.shared[key] = max(into.shared.get(key, 0), offset + end - start)
        elif inode and (device in limits.devices or name.startswith(limits.folders)):
            into.deleted.add((device, inode))


def files_past_limits(limits: FileLimits, pids: list[int] | None = None) -> str | None:
    """Why the processes below this one (or `pids`) must end, else None: the files and folders they
    hold open (or as their working folder) or mapped after deleting them (in no folder, so no count
    of the folders sees them, yet on a disk) take more than the disk quota together, they hold more
    pipes than `limits.pipes`, more open files of /proc than MOST_PROC_FILES, more shared memory with no
    file than SHARED_ANONYMOUS_LIMIT_BYTES or more mappings than MOST_MAPPINGS (memory no limit but a
    memory group counts), or their maps are longer than MOST_MAPS_BYTES (the look's own time).

    A file open is measured (its blocks, through the descriptor); a file mapped alone counts at the
    file-size limit. A process whose descriptors or maps are closed to this one is passed over: an
    honest one can be (a daemon that ran /bin/sleep was, in the grader), and treating it as hiding
    failed honest code; the filter refuses making a process not dumpable, which would close them."""
    held, seen, pipes, proc_files, maps = 0, set(), set(), 0, Mapped()
    proc = os.stat("/proc/self").st_dev
    for pid in descendants() if pids is None else pids:
        folder = _living(pid)[0]
        try:
            descriptors = [f"fd/{descriptor}" for descriptor in os.listdir(f"{folder}/fd")]
        except OSError:
            continue
        for descriptor in [*descriptors, "cwd"]:
            try:
                info = os.stat(f"{folder}/{descriptor}")
            except OSError:
                continue
            key = (info.st_dev, info.st_ino)
            if info.st_dev == proc:
                proc_files += 1
            elif stat.S_ISFIFO(info.st_mode):
                pipes.add(key)
            elif (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)) and info.st_nlink == 0 and key not in seen:
                seen.add(key)  # a folder removed while open or the working folder keeps its blocks too
                held += info.st_blocks * 512
        if limits.maps:
            _mappings(folder, limits, MOST_MAPS_BYTES - maps.bytes_read, maps)
            if maps.bytes_read > MOST_MAPS_BYTES:
                return (f"was stopped by the grader: your code's processes' lists of their memory mappings "
                        f"(/proc/PID/maps) took more than {MOST_MAPS_BYTES >> 20} MiB to read (a process that has "
                        f"imported torch lists about 0.1 MiB; a very long file path, mapped many times, makes them "
                        f"long)")
    mapped = maps.deleted - seen
    held += len(mapped) * limits.file_bytes
    if held > limits.disk_bytes:
        also = f" ({len(mapped)} of them mapped with no descriptor open, each counted at the file-size limit of " \
               f"{limits.file_bytes / 2**30:g} GiB: the grader cannot see their size)" if mapped else ""
        return (f"was stopped by the grader: your code's processes held {held / 2**20:.0f} MiB in files and folders "
                f"deleted while still open or mapped{also}, past the disk limit of {limits.disk_bytes / 2**30:g} GiB")
    if limits.pipes is not None and len(pipes) > limits.pipes:
        return (f"was stopped by the grader: your code's processes held {len(pipes):,} pipes at once, past the "
                f"{limits.pipes:,} a grade allows (each pipe's buffer is counted toward a limit of the user the "
                f"grader runs as, which the grader's own processes share)")
    if proc_files > MOST_PROC_FILES:
        return (f"was stopped by the grader: your code's processes held {proc_files} files of /proc open at once, "
                f"past the {MOST_PROC_FILES} a grade allows (each keeps a kernel buffer as long as the longest line "
                f"read from it, which no limit counts)")
    shared = sum(maps.shared.values())
    if shared > SHARED_ANONYMOUS_LIMIT_BYTES:
        return (f"was stopped by the grader: your code's processes held {shared / 2**20:.0f} MiB of shared memory "
                f"with no file (a MAP_SHARED mapping of anonymous memory or of /dev/zero), past the "
                f"{SHARED_ANONYMOUS_LIMIT_BYTES >> 20} MiB a grade allows: the kernel counts it in no process's "
                f"memory, so the grader counts each such mapping at the size mapped")
    if maps.count > MOST_MAPPINGS:
        return (f"was stopped by the grader: your code's processes held {maps.count:,} memory mappings, past the "
                f"{MOST_MAPPINGS:,} a grade allows (each is kernel memory no limit counts; a process that has imported "
                f"torch holds about a thousand)")
    return None


def held_past_limits(limits: FileLimits, files: bool = True, memory: MemoryLimit | None = None) -> str | None:
    """Why the processes below this one must end, else None: their page tables and the memory they hold
    together (`memory`, where no memory group counts it), and with `files` what `files_past_limits`
    counts too (a look of a few ms: the zygote takes it about every 0.5 s and after each call, the rest
    every 50 ms)."""
    pids = descendants()
    return page_tables_past_limit(pids=pids, memory=memory) or (files_past_limits(limits, pids) if files else None)
