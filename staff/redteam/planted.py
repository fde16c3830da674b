"""Sources an earlier grade might have left where the next could find them, planted for the red team.

An honest submission graded without the IPC namespace, the seccomp filter or a private /tmp could
hand its modules to a later one through a System V shared-memory segment, /dev/shm or /tmp. The
red team plants the reference's modules in all three (readable by every user), and in a kernel key
readable by all (`keys-carry-sources` looks for it in /proc/keys), while its batch is graded; the
cases named `read-planted-sources-*` look for them with one protection off at a time and must still
score 0. It also listens on a unix socket file and an abstract unix socket, which
`connect-to-a-socket-file` must not reach. Every name carries the run's token
(`staff.redteam.plantnames`), so that two runs on one machine do not collide; a name that is taken
anyway stops planting with `PlantingError`, named. It also lays out a neighbour's grade (the reference's code
folder, as `staff.sandbox.layout.build` makes it for a worker of its own) under /tmp, with a process
whose command line names it as a running worker's does, which `copy-a-neighbours-code` looks for.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import json
import os
import socket
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

from staff.errors import StaffError
from staff.redteam.plantnames import PlantedNames
from staff.samples import REPO_ROOT

IPC_CREAT, IPC_EXCL, IPC_RMID = 0o1000, 0o2000, 0
KEY_SPEC_SESSION_KEYRING, KEY_SPEC_USER_KEYRING, KEY_ALL_FOR_ALL = -3, -4, 0x3F3F3F3F
KEYCTL_SEARCH, KEYCTL_SETPERM, KEYCTL_LINK, KEYCTL_UNLINK, KEYCTL_INVALIDATE = 10, 5, 8, 9, 21


class PlantingError(StaffError, RuntimeError):
    """A name the run would plant at is taken (by another run, or something left from one)."""

    def __init__(self, what: str, error: str) -> None:
        super().__init__(f"cannot plant the red team's {what}: {error}. Another red-team run on this machine "
                         f"may be using it (its names carry a random token, so this is rare), or a killed run "
                         f"left it: remove it, or rerun to draw another token")


def reference_sources() -> bytes:
    """The reference's modules as JSON: {module name: source}."""
    package = REPO_ROOT / "cs336_basics"
    return json.dumps({p.stem: p.read_text(encoding="utf-8") for p in sorted(package.glob("*.py"))}).encode()


@contextlib.contextmanager
def planted_sources(names: PlantedNames) -> Iterator[list[str]]:
    """The reference's sources in a shared-memory segment and in files at `names` while the block runs
    (root on Linux only: elsewhere no other user could be graded, and nothing is planted); what was
    planted. Only what this call made is removed afterwards.

    Raises:
        PlantingError: a name is taken (the segment's key, a file, a socket, the kernel key).
    """
    if sys.platform != "linux" or os.geteuid() != 0:
        yield []
        return
    data = reference_sources()
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    segment = libc.shmget(names.key, len(data) + 1, IPC_CREAT | IPC_EXCL | 0o666)
    if segment < 0 and ctypes.get_errno() == errno.EEXIST:
        raise PlantingError(f"System V shared-memory key {names.key:#x}", "a segment with that key exists")
    planted, made = [], []
    try:
        if segment >= 0:
            address = libc.shmat(segment, None, 0)
            if address not in (None, ctypes.c_void_p(-1).value):
                ctypes.memmove(address, data + b"\0", len(data) + 1)
                libc.shmdt(ctypes.c_void_p(address))
                planted.append(f"System V segment {names.key:#x}")
        for path in names.files:
            if path.parent.is_dir():
                try:
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
                except FileExistsError:
                    raise PlantingError(f"sources file {path}", "it exists") from None
                made.append(path)
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                path.chmod(0o644)
                planted.append(str(path))
        with _key(libc, data, names) as key, _listening(names) as listening, _neighbour() as neighbour:
            yield planted + key + listening + neighbour
    finally:
        if segment >= 0:
            libc.shmctl(segment, IPC_RMID, None)
        for path in made:
            path.unlink(missing_ok=True)


@contextlib.contextmanager
def _key(libc: ctypes.CDLL, data: bytes, names: PlantedNames) -> Iterator[list[str]]:
    """The sources (compressed, cut to what a "user" key holds) in a key every user may read."""
    from staff.sandbox.syscall_filter import refused_numbers  # the numbers of the calls the worker may not make

    numbers = refused_numbers(os.uname().machine) if os.uname().machine in ("x86_64", "aarch64") else {}
    if not numbers:
        yield []
        return
    libc.syscall.restype = ctypes.c_long
    payload = zlib.compress(data)[:30_000]
    # Only a key's possessor may open it to all: the user keyring, linked into the session's, makes it so.
    libc.syscall(numbers["keyctl"], KEYCTL_LINK, KEY_SPEC_USER_KEYRING, KEY_SPEC_SESSION_KEYRING)
    # add_key would quietly update a key of that name (another run's): look for one first.
    if libc.syscall(numbers["keyctl"], KEYCTL_SEARCH, KEY_SPEC_USER_KEYRING, b"user", names.key_name, 0) >= 0:
        libc.syscall(numbers["keyctl"], KEYCTL_UNLINK, KEY_SPEC_USER_KEYRING, KEY_SPEC_SESSION_KEYRING)
        raise PlantingError(f"kernel key {names.key_name.decode()!r}", "root's user keyring holds one")
    key = libc.syscall(numbers["add_key"], b"user", names.key_name, payload, len(payload), KEY_SPEC_USER_KEYRING)
    try:
        if key >= 0:
            libc.syscall(numbers["keyctl"], KEYCTL_SETPERM, key, KEY_ALL_FOR_ALL)
        yield [f"kernel key {key}"] if key >= 0 else []
    finally:
        if key >= 0:
            libc.syscall(numbers["keyctl"], KEYCTL_INVALIDATE, key)
        libc.syscall(numbers["keyctl"], KEYCTL_UNLINK, KEY_SPEC_USER_KEYRING, KEY_SPEC_SESSION_KEYRING)


@contextlib.contextmanager
def _listening(names: PlantedNames) -> Iterator[list[str]]:
    """Unix sockets listening at `names.sockets` (the file open to every user), closed and removed
    afterwards (the file only if this call bound it: never another run's)."""
    opened, bound = [], []
    try:
        for address in names.sockets:
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            opened.append(listener)
            try:
                listener.bind(address)
            except OSError as error:
                raise PlantingError(f"unix socket {address!r}", os.strerror(error.errno or 0)) from None
            if not address.startswith("\0"):
                bound.append(Path(address))
                os.chmod(address, 0o777)
            listener.listen(64)
        yield [f"unix socket {a!r}" for a in names.sockets]
    finally:
        for listener in opened:
            listener.close()
        for path in bound:
            path.unlink(missing_ok=True)


NEIGHBOUR_PREFIX = "staff-grade-neighbour-"  # the planted neighbour's scratch folder, under /tmp


@contextlib.contextmanager
def _neighbour() -> Iterator[list[str]]:
    """A grade's folders laid out for the reference as the grader lays them out (its code folder
    given to a worker user of its own), and a process whose command line is a worker's
    (`python ... CODE/worker.py CONFIG`) while the block runs; both gone afterwards."""
    import subprocess
    import tempfile

    from staff.grading.grade import SUITE_PARTS
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
