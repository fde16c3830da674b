"""Where a grade's scratch folder goes (`staff.sandbox.scratch_place`): somewhere the tests can see what
the worker reads of their files. Each test names the mistake it catches."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters._page_cache import page_cache_shows_reads
from staff.sandbox.scratch_place import scratch_parent

TMPFS = "/dev/shm"


@pytest.fixture
def on_a_disk(tmp_path) -> Path:
    if not Path(TMPFS).is_dir() or page_cache_shows_reads(TMPFS) or not page_cache_shows_reads(tmp_path):
        pytest.skip("needs a tmpfs at /dev/shm and a temporary folder on a disk")
    return tmp_path


def test_an_ordinary_users_grade_passes_over_a_tmpfs_for_a_folder_on_a_disk(on_a_disk):
    # Mistake caught: the scratch folder made in a /tmp that is a tmpfs (Debian 13, Fedora, Arch) as an
    # ordinary user, where a process the tests cannot read the counts of is seen in the page cache alone:
    # np.fromfile of the whole token file there cached nothing.
    assert scratch_parent(sandboxed=True, euid=1000, candidates=(TMPFS, str(on_a_disk))) == str(on_a_disk)


def test_where_no_folder_shows_reads_the_grade_keeps_the_temporary_folder(on_a_disk, tmp_path):
    # Mistake caught: a grade refused, or a folder it may not write chosen, where nothing shows reads in
    # the page cache (the read counts still do).
    assert scratch_parent(sandboxed=True, euid=1000, candidates=(TMPFS, str(tmp_path / "missing"))) is None


def test_a_grade_that_counts_reads_keeps_the_temporary_folder(on_a_disk):
    # Mistake caught: root's grade (which reads the worker's counts) or an in-process one refused on a
    # machine whose /tmp is a tmpfs.
    assert scratch_parent(sandboxed=True, euid=0, candidates=(TMPFS,)) is None
    assert scratch_parent(sandboxed=False, euid=1000, candidates=(TMPFS,)) is None
