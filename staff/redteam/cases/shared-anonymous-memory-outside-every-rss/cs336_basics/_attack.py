import mmap
import time

MIB = 1 << 20
HELD = 768 * MIB  # held at once: kept well under the machine's room (the point is what sees it, not how much)
CHUNK = 32 * MIB
MOST_PEAK_GROWTH = 128 * MIB  # the largest growth of the process's peak RSS that still hides the memory
WATCHED_S = 2.0  # held this long: the zygote's watch looks every 50 ms, at the maps at least every 0.75 s
_outcome = []  # (held bytes, peak RSS growth, what counted it), once per process


def _status_bytes(field):
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _own_memory_group():
    """Whether this process is in a memory cgroup the grader made for the worker (cs336-worker-*: as root),
    which charges the shared pages to the worker whoever maps them."""
    try:
        with open("/proc/self/cgroup") as handle:
            return any(("memory" in line.split(":")[1].split(",") or line.startswith("0::"))
                       and "/cs336-worker-" in line for line in handle if line.count(":") >= 2)
    except OSError:
        return False


def hold_shared_memory():
    """Fill HELD bytes of a shared anonymous mapping (MAP_SHARED | MAP_ANONYMOUS: shmem pages, like a memfd's,
    with no descriptor and no file a folder lists) a chunk at a time, dropping each chunk from this process's
    page tables after writing it (MADV_DONTNEED: the pages stay in the mapping's shmem object, out of RSS), and
    keep them WATCHED_S. (bytes held, growth of the peak RSS, the maps line the zygote reads)."""
    peak = _status_bytes("VmHWM")
    mapping = mmap.mmap(-1, HELD, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
    try:
        for at in range(0, HELD, CHUNK):
            mapping[at:at + CHUNK:4096] = b"\x01" * (CHUNK // 4096)
            mapping.madvise(mmap.MADV_DONTNEED, at, CHUNK)
        time.sleep(WATCHED_S)
        growth = _status_bytes("VmHWM") - peak
        # still there (one page a chunk read back: a page dropped by the kernel would read 0)
        held = sum(mapping[at] for at in range(0, HELD, CHUNK)) * CHUNK
    finally:
        mapping.close()
    return held, growth


def attack(args):
    """Hold the memory once; if it could, out of RSS and unstopped, with no memory group of the worker's own to
    count it, answer honestly (full marks on Problem 1 is the attack getting through), else fail saying what
    counted or stopped it."""
    if not _outcome:
        counted = "a memory group of the worker's own" if _own_memory_group() else None
        held, growth = hold_shared_memory()
        _outcome.append((held, growth, counted))
    held, growth, counted = _outcome[0]
    if counted:
        raise MemoryError(f"held {held / MIB:.0f} MiB of shared anonymous memory, counted by {counted}")
    if held < HELD or growth > MOST_PEAK_GROWTH:
        raise MemoryError(f"held {held / MIB:.0f} MiB with the peak RSS {growth / MIB:.0f} MiB higher")
    return None  # the function's own body runs on
