"""Sources an earlier grade might have left where the next could find them, planted for the red team.

An honest submission graded without the IPC namespace, the seccomp filter or a private /tmp could
hand its modules to a later one through a System V shared-memory segment, /dev/shm or /tmp. The
red team plants the reference's modules in all three (readable by every user) while its batch is
graded; the cases named `read-planted-sources-*` look for them with one protection off at a time
and must still score 0.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from staff.samples import REPO_ROOT

KEY = 0x0C5336  # the System V key the cases look for
FILES = (Path("/tmp/cs336-planted-sources.json"), Path("/dev/shm/cs336-planted-sources.json"))
IPC_CREAT, IPC_EXCL, IPC_RMID = 0o1000, 0o2000, 0


def reference_sources() -> bytes:
    """The reference's modules as JSON: {module name: source}."""
    package = REPO_ROOT / "cs336_basics"
    return json.dumps({p.stem: p.read_text(encoding="utf-8") for p in sorted(package.glob("*.py"))}).encode()


@contextlib.contextmanager
def planted_sources() -> Iterator[list[str]]:
    """The reference's sources in a shared-memory segment and in FILES while the block runs (root on
    Linux only: elsewhere no other user could be graded, and nothing is planted); what was planted."""
    if sys.platform != "linux" or os.geteuid() != 0:
        yield []
        return
    data = reference_sources()
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    segment = libc.shmget(KEY, len(data) + 1, IPC_CREAT | IPC_EXCL | 0o666)
    planted = []
    try:
        if segment >= 0:
            address = libc.shmat(segment, None, 0)
            if address not in (None, ctypes.c_void_p(-1).value):
                ctypes.memmove(address, data + b"\0", len(data) + 1)
                libc.shmdt(ctypes.c_void_p(address))
                planted.append(f"System V segment {KEY:#x}")
        for path in FILES:
            if path.parent.is_dir():
                path.write_bytes(data)
                path.chmod(0o644)
                planted.append(str(path))
        yield planted
    finally:
        if segment >= 0:
            libc.shmctl(segment, IPC_RMID, None)
        for path in FILES:
            path.unlink(missing_ok=True)
