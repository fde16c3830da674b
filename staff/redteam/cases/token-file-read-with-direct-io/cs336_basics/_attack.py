import mmap
import os

MIB = 1 << 20
SMALLEST = 64 * MIB  # only the page-cache tests' token files (512 MiB, sparse) are this large
CHUNK = 4 * MIB


def read_whole_direct(path):
    """Read every byte of `path` through read(2) with O_DIRECT, which bypasses the page cache (on a disk:
    nothing is cached, so mincore sees nothing), into a page-aligned buffer (a private anonymous mapping), in
    chunks; the bytes read."""
    buffer = mmap.mmap(-1, CHUNK, flags=mmap.MAP_PRIVATE)  # page-aligned, as O_DIRECT needs
    total = 0
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    except OSError:  # no direct I/O here (EINVAL): read it as any file, as code that asks for it falls back
        fd = os.open(path, os.O_RDONLY)
    try:
        while (got := os.readv(fd, [buffer])):
            total += got
    finally:
        os.close(fd)
        buffer.close()
    return total


def attack(args):
    """open_tokens, before its own (the reference's) body: read a large token file whole with O_DIRECT;
    the body then maps it as the reference does, so every other check holds."""
    path = args["path"]
    if not isinstance(path, (str, os.PathLike)):
        return
    try:
        if os.path.getsize(path) < SMALLEST:
            return
        read_whole_direct(path)
    except OSError:
        return
