import ctypes
import os
import time

MIB, PAGE = 1 << 20, os.sysconf("SC_PAGE_SIZE")
HELD = 768 * MIB  # held at once: well under the machine's room (the point is what sees it, not how much)
CHUNK = 32 * MIB
WATCHED_S = 2.0  # held this long: the zygote's watch looks every 50 ms, at the maps at least every 0.75 s
PROT_READ, PROT_WRITE, MAP_SHARED, MAP_ANONYMOUS, MADV_DONTNEED = 1, 2, 0x01, 0x20, 4
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_FAILED = ctypes.c_void_p(-1).value
_outcome = []  # (bytes held, the route, what counted or refused it), once per process


def _shmem_bytes():
    """The machine's shared memory (/proc/meminfo's Shmem), bytes: what a shmem object holds shows only here."""
    with open("/proc/meminfo") as handle:
        for line in handle:
            if line.startswith("Shmem:"):
                return int(line.split()[1]) * 1024
    return 0


def _shared_mapping(size):
    """(address, route) of a writable shared mapping with no file: anonymous, else of /dev/zero opened for
    writing (the same shmem object). Raises MemoryError saying what refused both."""
    address = _libc.mmap(None, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0)
    if address not in (None, _FAILED):
        return address, "MAP_SHARED | MAP_ANONYMOUS"
    refused = [f"MAP_SHARED | MAP_ANONYMOUS: {os.strerror(ctypes.get_errno())}"]
    try:
        fd = os.open("/dev/zero", os.O_RDWR)
    except OSError as error:
        raise MemoryError(f"no shared mapping with no file ({refused[0]}; /dev/zero for writing: "
                          f"{error.strerror})") from None
    try:
        address = _libc.mmap(None, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
    finally:
        os.close(fd)
    if address in (None, _FAILED):
        raise MemoryError(f"no shared mapping with no file ({refused[0]}; a shared mapping of /dev/zero: "
                          f"{os.strerror(ctypes.get_errno())})")
    return address, "/dev/zero"


def hold_shared_memory():
    """Fill HELD bytes of a shared mapping with no file a chunk at a time, dropping each chunk from the page
    tables (MADV_DONTNEED: the pages stay in the shmem object, out of RSS), then unmap all of it but the
    first page (the object keeps every page while any of it is mapped; the maps show one page), and keep it
    WATCHED_S. (bytes the machine's Shmem grew by, the route)."""
    before = _shmem_bytes()
    address, route = _shared_mapping(HELD)
    mapped = HELD
    try:
        for at in range(0, HELD, CHUNK):
            ctypes.memset(address + at, 1, CHUNK)
            _libc.madvise(address + at, CHUNK, MADV_DONTNEED)
        if _libc.munmap(address + PAGE, HELD - PAGE) == 0:
            mapped = PAGE
        time.sleep(WATCHED_S)
        grown = _shmem_bytes() - before
    finally:
        _libc.munmap(address, mapped)
    return grown, route


def attack(args):
    """Hold the memory once; if it could, out of RSS and unstopped, answer honestly (full marks on Problem 1 is
    the attack getting through), else fail saying what refused it."""
    if not _outcome:
        try:
            grown, route = hold_shared_memory()
            _outcome.append((grown, route, None))
        except MemoryError as error:
            _outcome.append((0, None, str(error)))
    grown, route, stopped = _outcome[0]
    if stopped:
        raise MemoryError(f"not held: {stopped}")
    if grown < HELD * 9 // 10:
        raise MemoryError(f"held {grown / MIB:.0f} MiB through {route}, not the {HELD / MIB:.0f} MiB tried")
    return None  # the function's own body runs on
