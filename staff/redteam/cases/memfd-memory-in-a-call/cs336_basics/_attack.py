import os

CAP = 9 << 29  # 4.5 GiB: past the 4 GiB this case is graded with; without a bound it stops here, not at the machine's end
PIECE = 256 << 20  # each file under the 1 GiB file-size limit (SIGXFSZ)
BLOCK = b"\xa5" * (1 << 20)
held = []  # the descriptors stay open for as long as the process lives


def _memfd(name):
    return os.memfd_create(name)


def _shm(name):
    return os.open(f"/dev/shm/{name}-{os.getpid()}", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)


def hold_memory(cap=CAP):
    """Hold up to `cap` bytes in files in memory (memfds, else /dev/shm), in no process's RSS and outside
    RLIMIT_AS; (bytes held, what stopped it)."""
    total = 0
    for make in (_memfd, _shm):
        while total < cap:
            try:
                fd = make(f"ballast{len(held)}")
            except OSError as error:
                stopped = f"{make.__name__[1:]}: {error.strerror}"
                break
            held.append(fd)
            try:
                for _ in range(PIECE // len(BLOCK)):
                    total += os.write(fd, BLOCK)
            except OSError as error:
                return total, f"write: {error.strerror}"
        else:
            return total, "cap"
    return total, stopped


def attack(args):
    total, stopped = hold_memory()
    raise MemoryError(f"held {total >> 20} MiB in memory files ({stopped})")
