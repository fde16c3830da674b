"""`adapters._instrument.FileReads`, how Problem 9's tests measure what a call read of a token file.
Each test names the mistake it catches."""

from __future__ import annotations

import mmap
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from adapters._instrument import FileReads
from adapters._page_cache import page_cache_shows_reads
from tests.checks import write_token_file

SIZE = 64 << 20  # read whole
LARGE = 512 << 20  # sparse, read in two windows


def read_whole(path: Path) -> None:
    with open(path, "rb") as handle:
        while handle.read(8 << 20):
            pass


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="read(2) counts are Linux's /proc/PID/io")
@pytest.mark.parametrize("where", ["memory", "disk"])
def test_a_whole_read_counts_on_a_file_in_memory_as_on_a_disk(tmp_path, where):
    # Mistake caught: the page cache alone measured. Reading a hole of a tmpfs file through read(2)
    # returns zeros and caches no page, so a whole read passed where the tests' folders are a tmpfs
    # (root's grade) and failed elsewhere. Either way the bytes read now count.
    folder = tmp_path
    if where == "memory":
        if not Path("/dev/shm").is_dir():
            pytest.skip("no /dev/shm here")
        folder = Path(tempfile.mkdtemp(dir="/dev/shm"))
    try:
        path = Path(write_token_file(folder / "large.bin", size=SIZE))
        with FileReads(path) as reads:
            read_whole(path)
        assert reads.bytes >= SIZE, reads.bytes
    finally:
        if folder != tmp_path:
            shutil.rmtree(folder)


@pytest.mark.skipif(sys.platform == "win32", reason="mincore is Linux's and macOS's")
def test_a_window_read_through_a_mapping_stays_small(tmp_path):
    # Mistake caught: a measure that counts the whole file for a sparse read (the reference's memmap
    # slices two windows; the operating system reads ahead a few MiB around each).
    path = Path(write_token_file(tmp_path / "large.bin", size=LARGE))  # as the tests: 8 MiB read ahead a window
    with FileReads(path) as reads:
        tokens = np.memmap(path, dtype=np.int32, mode="r")
        tokens[1000:1256].sum(), tokens[LARGE // 8:LARGE // 8 + 256].sum()
    assert reads.bytes < LARGE // 4, reads.bytes


@pytest.mark.skipif(sys.platform == "win32", reason="mincore is Linux's and macOS's")
@pytest.mark.parametrize("swap", ["link", "twin"])
def test_a_file_put_in_the_measured_files_place_is_not_measured(tmp_path, swap):
    # Mistake caught: the measure follows the path, so code that read the file whole and put a fresh
    # sparse twin (or a link to one) in its place made the test measure the twin and pass.
    path = Path(write_token_file(tmp_path / "large.bin", size=SIZE))
    with pytest.raises(OSError, match="no longer the file the test wrote"):
        with FileReads(path):
            read_whole(path)
            os.rename(path, tmp_path / "large.bin.read")
            write_token_file(tmp_path / "twin.bin", size=SIZE)
            if swap == "link":
                os.symlink(tmp_path / "twin.bin", path)
            else:
                os.rename(tmp_path / "twin.bin", path)


def touch_every_page(path: Path) -> None:
    np.asarray(np.memmap(path, dtype=np.uint8, mode="r")[::4096]).sum()  # a read through a mapping: no rchar


@pytest.mark.skipif(sys.platform != "linux", reason="mincore and truncate's page-cache drop are Linux's")
@pytest.mark.parametrize("how", ["truncated and regrown", "a hole punched through a mapping"])
def test_a_file_changed_after_a_whole_read_is_not_measured(tmp_path, how):
    # Mistake caught: the measure trusts the page cache of a file the code may write (the token file is
    # the code's own). Truncating it to 0 and back to its size, or punching a hole over it through a
    # shared mapping (MADV_REMOVE), keeps its inode and size and empties its page cache, so a whole read
    # through a mapping (no rchar) then measured 0 bytes and passed.
    path = Path(write_token_file(tmp_path / "large.bin", size=SIZE))
    with pytest.raises(AssertionError, match="changed large.bin, the token file the test wrote"):
        with FileReads(path) as reads:
            touch_every_page(path)
            if how == "truncated and regrown":
                os.truncate(path, 0)
                os.truncate(path, SIZE)
            else:
                with open(path, "r+b") as handle, mmap.mmap(handle.fileno(), SIZE) as mapping:
                    mapping.madvise(mmap.MADV_REMOVE)
    assert reads.bytes < SIZE // 4, reads.bytes  # what the measure alone saw: the read gone from the page cache


@pytest.mark.skipif(sys.platform != "linux", reason="mincore is Linux's")
def test_an_unchanged_file_read_whole_through_a_mapping_is_measured_whole(tmp_path):
    # The control of the test above: without the truncation the same read shows.
    path = Path(write_token_file(tmp_path / "large.bin", size=SIZE))
    with FileReads(path) as reads:
        touch_every_page(path)
    assert reads.bytes >= SIZE * 3 // 4, reads.bytes


@pytest.mark.skipif(sys.platform != "linux", reason="tmpfs and mincore are Linux's")
def test_the_page_cache_shows_reads_on_a_disk_and_not_on_a_tmpfs(tmp_path):
    # Mistake caught: a folder for the tests' files chosen without asking (an ordinary user's grade, whose
    # worker's read counts are closed to the tests, on a machine whose /tmp is a tmpfs: Debian 13, Fedora,
    # Arch), where np.fromfile of the whole token file left nothing to see and passed.
    if not Path("/dev/shm").is_dir() or not page_cache_shows_reads(tmp_path):
        pytest.skip("needs /dev/shm (a tmpfs) and a temporary folder on a disk")
    assert not page_cache_shows_reads("/dev/shm")
    assert [entry.name for entry in tmp_path.iterdir()] == []  # the probe's file is gone
