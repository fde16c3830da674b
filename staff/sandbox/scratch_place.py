"""Where a grade's scratch folder goes: where the tests see what the worker reads of their files twice.

Problem 9's tests measure what a call read of a token file as the larger of the file's pages in the
page cache and the bytes the worker's processes read through read(2) (`adapters._instrument.FileReads`).
As root the tests read every worker process's count. As an ordinary user they read those of the
processes that are dumpable, and a process that ran a program it may not read is not (docs/sandbox.md);
there the page cache is what shows its read, and on a tmpfs (/tmp on Debian 13, Fedora and Arch) reading a
hole of a sparse file caches nothing. So a sandboxed grade by an ordinary user makes its scratch folder
(the tests' folders inside it) in the first of the temporary folder ($TMPDIR, else /tmp) and /var/tmp
whose files show their reads, and in the temporary folder where neither does (the counts alone then).
"""

from __future__ import annotations

import os
import tempfile

FALLBACKS = ("/var/tmp",)  # on a disk by the file-system hierarchy's rule, where /tmp may be a tmpfs


def scratch_parent(sandboxed: bool, euid: int | None = None, candidates: tuple[str, ...] | None = None) -> str | None:
    """The folder to make a grade's scratch folder in; None for the temporary folder, as tempfile
    chooses. Only a `sandboxed` grade by an ordinary user (`euid`, this process's by default) looks
    further: the first of `candidates` (the temporary folder, then FALLBACKS) whose files show their
    reads in the page cache, or None where none does."""
    euid = os.geteuid() if euid is None else euid
    if not sandboxed or euid == 0:
        return None
    from adapters._page_cache import page_cache_shows_reads

    for folder in (tempfile.gettempdir(), *FALLBACKS) if candidates is None else candidates:
        try:
            if page_cache_shows_reads(folder):
                return folder
        except OSError:  # not ours to write, or gone: the next
            continue
    return None
