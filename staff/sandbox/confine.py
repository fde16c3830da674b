"""Confining the worker process, one protection at a time, each reporting whether it took effect:
the namespaces it runs in and what is mounted there; and what the other confining modules share.

Used by the worker's launcher before any student code is imported. Every function of these modules
returns a short status (`ON`, or `off("why")`) instead of raising, so a platform that lacks a
protection (macOS, an old kernel, a container without the right privileges) still grades, and the
grader can say which protections were off. Linux-specific parts use the C library through ctypes
(`libc`, `prctl`, `errno_text` here). The protections, by module:

    confine.py         new network, PID and IPC namespaces, its own /proc; a private /tmp; the worker's view of
                       closed folders (`reveal`); the disk quota's tmpfs; die with the parent,
                       dumpable, no new privileges
    user_limits.py     the worker's user and capabilities, resource limits, memory group, OOM score
    landlock_rules.py  Landlock: the files it may read and write, TCP, signals out
    syscall_filter.py  seccomp: the system calls it never needs

These files are copied into the worker's code folder, where each is a top-level module, and import
only the standard library and one another.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import stat
import sys

ON = "on"
libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True) if sys.platform == "linux" else None

# <linux/sched.h>, <linux/prctl.h>, <linux/mount.h>
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x08000000, 0x10000000, 0x20000000, \
    0x40000000
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 4, 36, 38
MS_BIND, MS_REC, MS_PRIVATE, MS_REMOUNT = 4096, 16384, 1 << 18, 32
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_RDONLY = 2, 4, 8, 1


def off(what: str) -> str:
    """The status of a protection that did not take effect, and why."""
    return f"off: {what}"


def errno_text() -> str:
    """The C library's last error (errno), as its name and text."""
    code = ctypes.get_errno()
    return f"{errno.errorcode.get(code, code)} ({os.strerror(code)})"


def prctl(option: int, arg: int = 0) -> bool:
    """prctl(option, arg); whether it succeeded (False off Linux)."""
    return libc is not None and libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0) == 0


def die_with_parent() -> str:
    """Be killed (SIGKILL) when the process that started this one ends."""
    if libc is None:
        return off("Linux only")
    return ON if prctl(PR_SET_PDEATHSIG, 9) else off(errno_text())


def set_dumpable(dumpable: bool) -> str:
    """Whether processes of the same user may read this one's memory and open files through /proc
    (and whether it may read its own /proc entries when it is not root)."""
    if libc is None:
        return off("Linux only")
    return ON if prctl(PR_SET_DUMPABLE, int(dumpable)) else off(errno_text())


def no_new_privileges() -> str:
    """Make execve unable to grant privileges (setuid binaries, file capabilities)."""
    if libc is None:
        return off("Linux only")
    return ON if prctl(PR_SET_NO_NEW_PRIVS, 1) else off(errno_text())


def unshare(flags: int) -> str:
    if libc is None:
        return off("Linux only")
    return ON if libc.unshare(flags) == 0 else off(errno_text())


def enter_mount_namespace(fd: int) -> str:
    """Join the mount namespace `fd` refers to (an open /proc/PID/ns/mnt), where it is not this process's
    own already; then close `fd`. The kernel moves the root and working folder to that namespace's root."""
    try:
        if libc is None:
            return off("Linux only")
        if os.fstat(fd).st_ino == os.stat("/proc/self/ns/mnt").st_ino:
            return ON
        return ON if libc.setns(fd, CLONE_NEWNS) == 0 else off(errno_text())
    finally:
        os.close(fd)


NAMESPACES = {"network": CLONE_NEWNET, "pid": CLONE_NEWPID, "ipc": CLONE_NEWIPC}
def new_namespaces() -> dict[str, str]:
    """A new network namespace (no interfaces but a loopback that is down), a new PID namespace for
    the children of this process, and a new IPC namespace (System V objects and POSIX message queues
    of its own, destroyed with its last process). As root directly; otherwise inside a new user
    namespace in which this process keeps its own uid and gid. The first child, the namespace's init,
    mounts a /proc of its own (`own_proc`). Returns {"network": status, "pid": status, "ipc": status}."""
    if libc is None:
        return {name: off("Linux only") for name in NAMESPACES}
    if os.geteuid() != 0:
        uid, gid = os.geteuid(), os.getegid()
        status = unshare(CLONE_NEWUSER)
        if status != ON:
            return {name: off(f"no user namespace: {status[5:]}") for name in NAMESPACES}
        try:
            for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
                with open(f"/proc/self/{name}", "w") as handle:
                    handle.write(text)
        except OSError as error:
            return {name: off(f"user namespace mapping: {error}") for name in NAMESPACES}
    flags = 0
    for flag in NAMESPACES.values():
        flags |= flag
    if unshare(flags) == ON:
        return dict.fromkeys(NAMESPACES, ON)
    return {name: unshare(flag) for name, flag in NAMESPACES.items()}


def own_proc() -> str:
    """In a mount namespace of this process's own, a fresh /proc for the PID namespace this process
    is the init of: the processes outside it are out of sight, and a thread's id (gettid, counted in
    the namespace) names its /proc/self/task entry. CUDA's driver writes /proc/self/task/<tid>/comm
    as cuInit names its threads; under the machine's /proc that entry is another process's or none,
    and cuInit fails with error 304 (what stopped a GPU grade in a PID namespace on an H100).
    Needs root, or a user namespace that owns the PID namespace."""
    if libc is None:
        return off("Linux only")
    if os.getpid() != 1:
        return off("not the init of a PID namespace")
    status = _private_mounts()
    if status != ON:
        return status
    if not _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC):
        return off(f"cannot mount a /proc of its own: {errno_text()}")
    return ON


def world_readable(path: str, itself: bool = True) -> str | None:
    """None when a user with no special rights can reach `path` (and read it, with `itself`); else
    the first path on the way that stops them."""
    parts = os.path.abspath(path).split(os.sep)
    current = os.sep
    for part in parts[1:]:
        if not os.stat(current).st_mode & stat.S_IXOTH:
            return current
        current = os.path.join(current, part)
    mode = os.stat(current).st_mode
    needed = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(mode) else 0)
    return None if not itself or mode & needed == needed else current


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> bool:
    encode = lambda s: None if s is None else s.encode()  # noqa: E731
    return libc.mount(encode(source), encode(target), encode(fstype), ctypes.c_ulong(flags), encode(data)) == 0


def reveal(paths: list[str], owned: list[str] = ()) -> str:
    """In a new mount namespace, let an unprivileged user reach each of `paths` (which it must be
    able to read) and `owned` (folders it owns, or may only pass through) even when a folder above
    them is closed to others (an interpreter under /root, say): that folder is covered with an empty
    tmpfs that holds only the way to each path, each path bind-mounted back in. Everything else under the closed folder
    disappears from this process's view. Needs root."""
    if libc is None:
        return off("Linux only")
    blocked: dict[str, list[str]] = {}
    for path in [*paths, *owned]:
        stop = world_readable(path, itself=path not in owned)
        if stop is None:
            continue
        if stop == os.path.abspath(path):
            return off(f"{path} itself is not readable by other users")
        blocked.setdefault(stop, []).append(os.path.abspath(path))
    if not blocked:
        return ON
    if unshare(CLONE_NEWNS) != ON or not _mount(None, "/", None, MS_REC | MS_PRIVATE):
        return off(f"no private mount namespace to open {', '.join(blocked)}: {errno_text()}")
    for folder in sorted(blocked, key=len):
        why = _cover(folder, "mode=0755,size=1m", blocked[folder])
        if why is not None:
            return off(why)
    return ON


def _cover(folder: str, options: str, keep: list[str]) -> str | None:
    """Mount an empty tmpfs (with `options`) on `folder`, then bind each path of `keep` (below
    `folder`) back in at its place; None, or what failed."""
    keep = [p for p in keep if not any(p != q and p.startswith(q.rstrip(os.sep) + os.sep) for q in keep)]
    handles = []
    for path in keep:
        try:
            handles.append((path, os.open(path, os.O_PATH | os.O_CLOEXEC)))
        except OSError:
            continue  # a path that does not exist needs no way back
    if not _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, options):
        return f"cannot cover {folder}: {errno_text()}"
    for path, handle in handles:
        if stat.S_ISDIR(os.fstat(handle).st_mode):
            os.makedirs(path, mode=0o755, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
            open(path, "a").close()
        bound = _mount(f"/proc/self/fd/{handle}", path, None, MS_BIND | MS_REC)
        os.close(handle)
        if not bound:
            return f"cannot bind {path}: {errno_text()}"
    return None


def _below(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def hide(folders: list[str], keep: list[str]) -> str:
    """In a mount namespace of this process's own, cover each of `folders` with an empty read-only
    tmpfs, binding back the paths of `keep` that lie below it (the Python environment, the worker's
    code and folders): the rest of each folder is out of this process's sight whatever its files'
    modes. As root, every grade's second cover of the checkout, the grader's files and the home
    folders, beside Landlock (`staff gpu-check` tries it alone with CUDA). Needs root and a mount
    namespace (Docker's default seccomp refuses one: the status then says so, and Landlock alone holds)."""
    if libc is None:
        return off("Linux only")
    status = _private_mounts()
    if status != ON:
        return status
    keep = [os.path.realpath(p) for p in keep]
    covered: list[str] = []
    for folder in sorted({os.path.realpath(f) for f in folders}, key=len):
        if not os.path.isdir(folder) or any(_below(folder, done) for done in covered):
            continue  # gone, or already out of sight with the folder above it
        why = _cover(folder, "mode=0755,size=1m,nr_inodes=4096", [p for p in keep if _below(p, folder)])
        if why is None and not _mount(None, folder, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV):
            why = f"cannot make the cover of {folder} read-only: {errno_text()}"
        if why is not None:
            return off(why)
        covered.append(folder)
    return f"{ON} ({len(covered)} folders covered)"  # no path: the status reaches results.json


SHARED_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm")  # every user may write there; files outlive processes


def _private_mounts() -> str:
    """A mount namespace of this process's own, whose mounts do not reach the parent's."""
    if unshare(CLONE_NEWNS) != ON or not _mount(None, "/", None, MS_REC | MS_PRIVATE):
        return off(f"no private mount namespace: {errno_text()}")
    return ON


def _tmpfs(target: str, mode: int, size_bytes: int, files: int, uid: int | None = None) -> bool:
    owner = f",uid={uid},gid={uid}" if uid is not None else ""
    return _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV,
                  f"mode={mode:o},size={size_bytes},nr_inodes={files}{owner}")


def private_shared_folders(size_bytes: int, files: int, keep: list[str]) -> str:
    """Cover /tmp, /var/tmp and /dev/shm, for this process and its children only, with empty tmpfs
    of bounded size: what the worker writes there is seen by no other grade and gone when it ends,
    even where Landlock (which keeps the worker out of them) is missing. The paths of `keep` that lie
    below them (the grading folders, a Python environment) are bound back in. Needs root."""
    if libc is None:
        return off("Linux only")
    status = _private_mounts()
    if status != ON:
        return status
    covered = [folder for folder in SHARED_FOLDERS if os.path.isdir(folder) and not os.path.islink(folder)]
    for folder in covered:
        below = [os.path.abspath(p) for p in keep if os.path.abspath(p).startswith(folder + os.sep)]
        why = _cover(folder, f"mode=1777,size={size_bytes},nr_inodes={files}", below)
        if why is not None:
            return off(why)
    return f"{ON} ({', '.join(covered)})"


def disk_quota(folders: list[tuple[str, int, int | None]], size_bytes: int, files: int) -> str:
    """In a mount namespace of this process's own (the test process, whose children include the
    worker), cover each (folder, mode, owner uid) with an empty tmpfs of at most `size_bytes` and
    `files` entries: what one submission writes cannot fill the disk other grades share. The folders
    must be empty (they are covered, not moved). Needs root."""
    if libc is None:
        return off("Linux only")
    status = _private_mounts()
    if status != ON:
        return status
    for folder, mode, uid in folders:
        if not _tmpfs(folder, mode, size_bytes, files, uid):
            return off(f"cannot mount a tmpfs on {folder}: {errno_text()}")
    return f"{ON} (tmpfs of {size_bytes / 2**30:g} GiB and {files} files each)"
