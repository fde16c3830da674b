"""Sources an earlier grade might have left where the next could find them, planted for the red team.

An honest submission graded without the IPC namespace, the seccomp filter or a private /tmp could
hand its modules to a later one through a System V shared-memory segment, /dev/shm or /tmp. The
red team plants the reference's modules in all three (readable by every user), and in a kernel key
readable by all (`keys-carry-sources` looks for it in /proc/keys), while its batch is graded; the
cases named `read-planted-sources-*` look for them with one protection off at a time and must still
score 0. It also listens on a unix socket file and an abstract unix socket, which
`connect-to-a-socket-file` must not reach, and lays out a neighbour's grade (the reference's code
folder, as `staff.sandbox.layout.build` makes it for a worker of its own) under /tmp, with a process
whose command line names it as a running worker's does, which `copy-a-neighbours-code` looks for.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import json
import os
import socket
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

from staff.samples import REPO_ROOT

KEY = 0x0C5336  # the System V key the cases look for
FILES = (Path("/tmp/cs336-planted-sources.json"), Path("/dev/shm/cs336-planted-sources.json"))
IPC_CREAT, IPC_EXCL, IPC_RMID = 0o1000, 0o2000, 0
KEY_NAME = b"cs336-planted-sources"  # a "user" key, in root's user keyring, that every user may view and read
KEY_SPEC_SESSION_KEYRING, KEY_SPEC_USER_KEYRING, KEY_ALL_FOR_ALL = -3, -4, 0x3F3F3F3F
KEYCTL_SETPERM, KEYCTL_LINK, KEYCTL_UNLINK, KEYCTL_INVALIDATE = 5, 8, 9, 21
SOCKETS = ("/tmp/cs336-planted.sock", "\0cs336-planted")  # a socket file and an abstract one, listening


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
        with _key(libc, data) as key, _listening() as listening, _neighbour() as neighbour:
            yield planted + key + listening + neighbour
    finally:
        if segment >= 0:
            libc.shmctl(segment, IPC_RMID, None)
        for path in FILES:
            path.unlink(missing_ok=True)


@contextlib.contextmanager
def _key(libc: ctypes.CDLL, data: bytes) -> Iterator[list[str]]:
    """The sources (compressed, cut to what a "user" key holds) in a key every user may read."""
    from staff.sandbox.confine import refused_numbers  # the numbers of the calls the worker may not make

    numbers = refused_numbers(os.uname().machine) if os.uname().machine in ("x86_64", "aarch64") else {}
    if not numbers:
        yield []
        return
    libc.syscall.restype = ctypes.c_long
    payload = zlib.compress(data)[:30_000]
    # Only a key's possessor may open it to all: the user keyring, linked into the session's, makes it so.
    libc.syscall(numbers["keyctl"], KEYCTL_LINK, KEY_SPEC_USER_KEYRING, KEY_SPEC_SESSION_KEYRING)
    key = libc.syscall(numbers["add_key"], b"user", KEY_NAME, payload, len(payload), KEY_SPEC_USER_KEYRING)
    try:
        if key >= 0:
            libc.syscall(numbers["keyctl"], KEYCTL_SETPERM, key, KEY_ALL_FOR_ALL)
        yield [f"kernel key {key}"] if key >= 0 else []
    finally:
        if key >= 0:
            libc.syscall(numbers["keyctl"], KEYCTL_INVALIDATE, key)
        libc.syscall(numbers["keyctl"], KEYCTL_UNLINK, KEY_SPEC_USER_KEYRING, KEY_SPEC_SESSION_KEYRING)


@contextlib.contextmanager
def _listening() -> Iterator[list[str]]:
    """Unix sockets listening at SOCKETS (the file open to every user), closed and removed afterwards."""
    opened = []
    try:
        for address in SOCKETS:
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            opened.append(listener)
            if not address.startswith("\0"):
                Path(address).unlink(missing_ok=True)
            listener.bind(address)
            listener.listen(64)
            if not address.startswith("\0"):
                os.chmod(address, 0o777)
        yield [f"unix socket {a!r}" for a in SOCKETS]
    finally:
        for listener in opened:
            listener.close()
        Path(SOCKETS[0]).unlink(missing_ok=True)


NEIGHBOUR_PREFIX = "staff-grade-neighbour-"  # the planted neighbour's scratch folder, under /tmp


@contextlib.contextmanager
def _neighbour() -> Iterator[list[str]]:
    """A grade's folders laid out for the reference as the grader lays them out (its code folder
    given to a worker user of its own), and a process whose command line is a worker's
    (`python ... CODE/worker.py CONFIG`) while the block runs; both gone afterwards."""
    import subprocess
    import tempfile

    from staff.grade import SUITE_PARTS
    from staff.sandbox.layout import build
    from staff.sandbox.removal import remove_tree
    from staff.sandbox.settings import Settings

    scratch = Path(tempfile.mkdtemp(prefix=NEIGHBOUR_PREFIX, dir="/tmp"))
    sleeper = None
    try:
        workspace = build(scratch, REPO_ROOT, REPO_ROOT / "cs336_basics", SUITE_PARTS, False, Settings())
        sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(86400)",
                                    str(workspace.code / "worker.py"), str(workspace.grader / "launch.json")],
                                   stdin=subprocess.DEVNULL)
        yield [f"a neighbour's code folder {workspace.code}"]
    finally:
        if sleeper is not None:
            sleeper.kill()
            sleeper.wait()
        remove_tree(scratch)
