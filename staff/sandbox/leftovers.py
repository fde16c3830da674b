"""What a worker's user may leave behind outside its own folders, found and removed when a grade ends:
its processes (`kill_user`), then what they made.

The worker's IPC namespace and seccomp filter keep System V objects out of reach, and Landlock keeps
its files inside its folders. Where a platform lacks them (Docker refuses new namespaces; an old
kernel has no Landlock), the worker could leave a shared-memory segment or a file in /tmp for the
next submission to read. Each grade has a user of its own, so everything owned by that user once
its processes are dead is a leftover: this module removes it and says what could not be removed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from staff.sandbox.removal import remove_tree

# /proc/sysvipc/<kind>: its id column, and how to remove one (shmctl, msgctl, semctl with IPC_RMID)
SYSV_KINDS = {"shm": ("shmid", "shmctl"), "msg": ("msqid", "msgctl"), "sem": ("semid", "semctl")}
IPC_RMID = 0
# Folders every user may write to; files there outlive a process.
SHARED_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm", "/dev/mqueue", "/run/lock")
_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True) if sys.platform == "linux" else None


def ipc_objects(owner: Callable[[int], bool], root: Path = Path("/proc/sysvipc")) -> list[tuple[str, int]]:
    """(kind, id) of each System V object in this IPC namespace owned or created by a uid that
    `owner` accepts."""
    found = []
    for kind, (id_column, _) in SYSV_KINDS.items():
        try:
            lines = (root / kind).read_text().splitlines()
        except OSError:
            continue
        if not lines:
            continue
        columns = lines[0].split()
        for line in lines[1:]:
            row = dict(zip(columns, line.split()))
            if owner(int(row.get("uid", -1))) or owner(int(row.get("cuid", -1))):
                found.append((kind, int(row[id_column])))
    return found


def entries_in(folders: tuple[str, ...] | list[str], keep: Callable[[os.DirEntry], bool]) -> list[str]:
    """The paths of the entries directly inside `folders` that `keep` accepts (links not followed); a
    folder that cannot be read, or an entry gone or unreadable meanwhile, is passed over."""
    found = []
    for folder in folders:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if keep(entry):
                    found.append(entry.path)
            except OSError:
                continue
    return found


def files_of(owner: Callable[[int], bool], folders: tuple[str, ...] = SHARED_FOLDERS) -> list[Path]:
    """The entries directly inside `folders` owned by a uid that `owner` accepts (a folder of theirs
    counts once)."""
    return [Path(p) for p in entries_in(folders, lambda entry: owner(entry.stat(follow_symlinks=False).st_uid))]


def _remove_ipc(kind: str, ident: int) -> None:
    if _libc is None:
        return
    remove = getattr(_libc, SYSV_KINDS[kind][1])
    if kind == "sem":
        remove(ident, 0, IPC_RMID)
    else:
        remove(ident, IPC_RMID, None)


def processes() -> list[tuple[int, int]]:
    """(pid, real uid) of every process /proc lists (one that ends while we look is left out)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        uids = next((line.split()[1:] for line in status.splitlines() if line.startswith("Uid:")), [])
        if uids:
            found.append((int(entry.name), int(uids[0])))
    return found


def kill_user(uid: int) -> None:
    """SIGKILL every process whose real uid is `uid` (the sandbox user: it owns nothing else)."""
    if uid == 0:
        raise ValueError("refusing to kill every process of root")
    for _ in range(3):  # a fork bomb may still be forking while we kill
        pids = [pid for pid, owner in processes() if owner == uid]
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.05)


def remove_leftovers(uid: int) -> list[str]:
    """Remove every System V object and every file in the shared folders that `uid` owns (call it once
    the user's processes are dead); what is still there afterwards, named (empty when all went)."""
    if uid == 0:
        raise ValueError("refusing to remove everything root owns")
    return remove_owned_by(lambda owner: owner == uid)


def remove_owned_by(owner: Callable[[int], bool]) -> list[str]:
    """`remove_leftovers` for every uid that `owner` accepts."""
    for kind, ident in ipc_objects(owner):
        _remove_ipc(kind, ident)
    for path in files_of(owner):
        remove_tree(path)  # what is left is named by `leftovers` below
    return leftovers(owner)


def leftovers(owner: Callable[[int], bool]) -> list[str]:
    """What uids that `owner` accepts still own: System V objects and files in the shared folders."""
    return [f"System V {kind} {ident}" for kind, ident in ipc_objects(owner)] + [str(p) for p in files_of(owner)]
