import mmap
import os

import numpy as np

MIB = 1 << 20
SMALLEST = 64 * MIB  # only the page-cache tests' token files (512 MiB, sparse) are this large
CHUNK = 32 * MIB  # emptied as it goes: as root the tests' folders are a tmpfs of 0.25 GiB, which 512 MiB overfills


def read_whole_then_truncate(path):
    """Read every byte of `path` through a mapping (page faults: no read(2), so no rchar), a chunk at a
    time, and after each chunk truncate the file to 0 bytes and back to its size: the same inode, the
    same size and (a sparse file of zeros) the same bytes, but truncate(2) drops every cached page, so
    mincore sees nothing of the read; the sum of the bytes."""
    size = os.path.getsize(path)
    total = 0
    fd = os.open(path, os.O_RDONLY)
    try:
        with mmap.mmap(fd, size, prot=mmap.PROT_READ) as mapping:
            view = np.frombuffer(mapping, dtype=np.uint8)
            for start in range(0, size, CHUNK):
                total += int(view[start:start + CHUNK].sum(dtype=np.uint64))  # every byte: every page faulted in
                os.truncate(path, 0)  # the tests' file is mode 0o666: the code under test may write it
                os.truncate(path, size)
            del view  # the mapping cannot close while a buffer still points into it
    finally:
        os.close(fd)
    return total


def attack(args):
    """open_tokens, before its own (the reference's) body: read a large token file whole through a
    mapping, emptying its page cache as it goes by truncating it and growing it back; the body then maps
    it as the reference does, so every other check holds."""
    path = args["path"]
    if not isinstance(path, (str, os.PathLike)):
        return
    try:
        if os.path.getsize(path) < SMALLEST:
            return
        read_whole_then_truncate(path)
    except OSError:
        return
