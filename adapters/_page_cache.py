"""What of a file is in the operating system's page cache: how Problem 9's tests see what a call read
of a token file (`resident_bytes`), and whether a folder's files show their reads there at all
(`page_cache_shows_reads`: not on a tmpfs). numpy and the standard library only, so that the grader
can ask before it imports torch."""

from __future__ import annotations

import ctypes
import mmap
import os
import stat
import sys
import tempfile

import numpy as np


def resident_bytes(path: str | os.PathLike, inode: tuple[int, int] | None = None) -> int:
    """Bytes of `path` now held in the operating system's page cache, that is, read since the file
    was written (a sparse file made with truncate() starts at 0). Uses mincore(2) on a fresh
    read-only mapping, which reads nothing itself. Linux and macOS only. A symbolic link is not
    followed, and with `inode` (st_dev, st_ino) the file must still be that one: code under test
    may have put something else in its place (OSError saying so)."""
    if sys.platform == "win32":
        raise OSError("this check measures the page cache with mincore(2), which Windows lacks: it runs on Linux "
                      "and macOS (on Windows, run the tests in WSL); the graders run it on Linux")
    libc = ctypes.CDLL(None, use_errno=True)
    if not hasattr(libc, "mincore"):
        raise OSError("mincore(2) is not available on this platform; the page-cache check needs Linux or macOS")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise OSError(error.errno, f"{os.fspath(path)} cannot be measured: it is no longer the file the test "
                      f"wrote ({error.strerror}; a link put in its place is not followed)") from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if inode is not None and (info.st_dev, info.st_ino) != inode or not stat.S_ISREG(info.st_mode):
            raise OSError(f"{os.fspath(path)} is no longer the file the test wrote: the code under test put "
                          "another in its place")
        size = info.st_size
        if size == 0:
            return 0
        pages = -(-size // mmap.PAGESIZE)
        with mmap.mmap(file.fileno(), size, prot=mmap.PROT_READ) as mapping:
            view = np.frombuffer(mapping, dtype=np.uint8)
            status = (ctypes.c_ubyte * pages)()
            failed = libc.mincore(ctypes.c_void_p(view.ctypes.data), ctypes.c_size_t(size), status)
            del view  # the mapping cannot close while a buffer still points into it
    if failed:
        raise OSError(ctypes.get_errno(), "mincore failed")
    return sum(byte & 1 for byte in status) * mmap.PAGESIZE


def page_cache_shows_reads(folder: str | os.PathLike) -> bool:
    """Whether a read(2) of a file in `folder` leaves its pages in the page cache, where `resident_bytes`
    sees them: so on a disk's file system, not on a tmpfs, where reading a hole of a sparse file
    returns zeros and caches nothing. Tried on a sparse file of two pages made and removed here."""
    fd, path = tempfile.mkstemp(prefix=".page-cache-probe-", dir=folder)
    try:
        os.ftruncate(fd, 2 * mmap.PAGESIZE)
        os.pread(fd, mmap.PAGESIZE, 0)
        return resident_bytes(path) > 0
    finally:
        os.close(fd)
        os.unlink(path)
