import mmap
import os

import numpy as np

MIB = 1 << 20
SMALLEST = 64 * MIB  # only the page-cache tests' token files (512 MiB, sparse) are this large
CHUNK = 32 * MIB  # evicted as it goes: as root the tests' folders are a tmpfs of 0.25 GiB, which 512 MiB overfills
MADV_COLD, MADV_PAGEOUT = 20, 21  # Linux 5.4; Python's mmap module names them only where its headers did


def read_whole_then_evict(path):
    """Read every byte of `path` through a mapping (page faults: no read(2), so no rchar), a chunk at a
    time, asking the kernel after each chunk to drop its pages from the page cache (madvise MADV_PAGEOUT,
    then MADV_COLD, on that range of the mapping), and after all, posix_fadvise POSIX_FADV_DONTNEED on
    the file, so that mincore sees nothing of the read; the sum of the bytes."""
    fd = os.open(path, os.O_RDONLY)
    total = 0
    try:
        size = os.fstat(fd).st_size
        with mmap.mmap(fd, size, prot=mmap.PROT_READ) as mapping:
            view = np.frombuffer(mapping, dtype=np.uint8)
            for start in range(0, size, CHUNK):
                total += int(view[start:start + CHUNK].sum(dtype=np.uint64))  # every byte: every page faulted in
                for advice in (MADV_PAGEOUT, MADV_COLD):
                    try:
                        mapping.madvise(advice, start, min(CHUNK, size - start))
                    except (OSError, ValueError, AttributeError):
                        pass
            del view  # the mapping cannot close while a buffer still points into it
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    return total


def attack(args):
    """open_tokens, before its own (the reference's) body: read a large token file whole through a
    mapping, evicting it from the page cache as it goes; the body then maps it as the reference does, so
    every other check holds."""
    path = args["path"]
    if not isinstance(path, (str, os.PathLike)):
        return
    try:
        if os.path.getsize(path) < SMALLEST:
            return
        read_whole_then_evict(path)
    except OSError:
        return
