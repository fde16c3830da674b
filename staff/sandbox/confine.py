"""Confining the worker process, one protection at a time, each reporting whether it took effect.

Used by the worker's launcher before any student code is imported. Every function here returns a
short status ("on", or "off: why") instead of raising, so a platform that lacks a protection
(macOS, an old kernel, a container without the right privileges) still grades, and the grader can
say which protections were off. Linux-specific parts use the C library through ctypes. This file is
copied into the worker's folder and imports only the standard library.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import resource
import stat
import sys

ON = "on"
_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True) if sys.platform == "linux" else None

# <linux/sched.h>, <linux/prctl.h>, <linux/mount.h>
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x08000000, 0x10000000, 0x20000000, \
    0x40000000
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP, PR_CAP_AMBIENT = 1, 4, 38, 24, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
MS_BIND, MS_REC, MS_PRIVATE, MS_NOSUID, MS_NODEV = 4096, 16384, 1 << 18, 2, 4
LAST_CAP = 63


def off(what: str) -> str:
    return f"off: {what}"


def _errno_text() -> str:
    code = ctypes.get_errno()
    return f"{errno.errorcode.get(code, code)} ({os.strerror(code)})"


def _prctl(option: int, arg: int = 0) -> bool:
    return _libc is not None and _libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0) == 0


def die_with_parent() -> str:
    """Be killed (SIGKILL) when the process that started this one ends."""
    if _libc is None:
        return off("Linux only")
    return ON if _prctl(PR_SET_PDEATHSIG, 9) else off(_errno_text())


def set_dumpable(dumpable: bool) -> str:
    """Whether processes of the same user may read this one's memory and open files through /proc
    (and whether it may read its own /proc entries when it is not root)."""
    if _libc is None:
        return off("Linux only")
    return ON if _prctl(PR_SET_DUMPABLE, int(dumpable)) else off(_errno_text())


def no_new_privileges() -> str:
    """Make execve unable to grant privileges (setuid binaries, file capabilities)."""
    if _libc is None:
        return off("Linux only")
    return ON if _prctl(PR_SET_NO_NEW_PRIVS, 1) else off(_errno_text())


def unshare(flags: int) -> str:
    if _libc is None:
        return off("Linux only")
    return ON if _libc.unshare(flags) == 0 else off(_errno_text())


NAMESPACES = {"network": CLONE_NEWNET, "pid": CLONE_NEWPID, "ipc": CLONE_NEWIPC}
# Measured on an H100 (driver 580.159.04, torch 2.11, 2026-11-25), each alone in a fresh process before CUDA
# starts: a new PID namespace, Landlock's file rules (reading everything, writing /tmp and the GPU's devices),
# and refusing socket() each make cuInit fail ("cudaGetDeviceCount(): Error 304: OS call failed"); a new
# network or IPC namespace, refusing only internet sockets, and the rest of the filter do not. A GPU grade
# (one submission at a time, public `cuda` tests only) therefore goes without those three.
CUDA_NOTE = "CUDA's driver does not start under it (error 304, measured on an H100)"


def new_namespaces(pid: bool = True) -> dict[str, str]:
    """A new network namespace (no interfaces but a loopback that is down), a new PID namespace for
    the children of this process, and a new IPC namespace (System V objects and POSIX message queues
    of its own, destroyed with its last process). As root directly; otherwise inside a new user
    namespace in which this process keeps its own uid and gid. Without `pid`, no PID namespace (CUDA's
    driver does not start in one: see CUDA_NOTE). Returns {"network": status, "pid": status, "ipc": status}."""
    if _libc is None:
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
    wanted = {name: flag for name, flag in NAMESPACES.items() if pid or name != "pid"}
    flags = 0
    for flag in wanted.values():
        flags |= flag
    skipped = {} if pid else {"pid": off(f"a GPU grade: {CUDA_NOTE}")}
    if unshare(flags) == ON:
        return {**{name: ON for name in wanted}, **skipped}
    return {**{name: unshare(flag) for name, flag in wanted.items()}, **skipped}


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
    return _libc.mount(encode(source), encode(target), encode(fstype), ctypes.c_ulong(flags), encode(data)) == 0


def reveal(paths: list[str], owned: list[str] = ()) -> str:
    """In a new mount namespace, let an unprivileged user reach each of `paths` (which it must be
    able to read) and `owned` (folders it owns, or may only pass through) even when a folder above
    them is closed to others (an interpreter under /root, say): that folder is covered with an empty
    tmpfs that holds only the way to each path, each path bind-mounted back in. Everything else under the closed folder
    disappears from this process's view. Needs root."""
    if _libc is None:
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
        return off(f"no private mount namespace to open {', '.join(blocked)}: {_errno_text()}")
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
        return f"cannot cover {folder}: {_errno_text()}"
    for path, handle in handles:
        if stat.S_ISDIR(os.fstat(handle).st_mode):
            os.makedirs(path, mode=0o755, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
            open(path, "a").close()
        bound = _mount(f"/proc/self/fd/{handle}", path, None, MS_BIND | MS_REC)
        os.close(handle)
        if not bound:
            return f"cannot bind {path}: {_errno_text()}"
    return None


SHARED_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm")  # every user may write there; files outlive processes


def _private_mounts() -> str:
    """A mount namespace of this process's own, whose mounts do not reach the parent's."""
    if unshare(CLONE_NEWNS) != ON or not _mount(None, "/", None, MS_REC | MS_PRIVATE):
        return off(f"no private mount namespace: {_errno_text()}")
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
    if _libc is None:
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
    if _libc is None:
        return off("Linux only")
    status = _private_mounts()
    if status != ON:
        return status
    for folder, mode, uid in folders:
        if not _tmpfs(folder, mode, size_bytes, files, uid):
            return off(f"cannot mount a tmpfs on {folder}: {_errno_text()}")
    return f"{ON} (tmpfs of {size_bytes / 2**30:g} GiB and {files} files each)"


def drop_user(uid: int, gid: int) -> str:
    """Become `uid`/`gid` with no supplementary groups, for good (needs root)."""
    try:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    except OSError as error:
        return off(str(error))
    return ON if os.geteuid() == uid and os.getegid() == gid else off("the ids did not change")


OOM_SCORE_ADJ_MAX = 1000


def killed_first() -> str:
    """Make this process and its future children the kernel's first choice when memory runs out
    (oom_score_adj 1000): the worker dies before the test process or a neighbour's grade, whatever
    form its memory takes. Set by root with CAP_SYS_RESOURCE, the kernel keeps it as a floor the worker
    cannot go below; without that capability (Docker drops it) only Landlock, which keeps the worker from
    writing /proc, keeps it there."""
    try:
        with open("/proc/self/oom_score_adj", "w") as handle:
            handle.write(str(OOM_SCORE_ADJ_MAX))
    except OSError as error:
        return off(f"oom_score_adj: {error.strerror}")
    return ON


def join_memory_group(group: str | None) -> str:
    """Move this process (and so its future children) into the memory cgroup folder `group` that the
    grader made for this worker, which counts all the worker's memory (in-memory files included) and
    bounds it. Needs root, before dropping to the worker's user (who then cannot leave it)."""
    if group is None:
        return off("the grader could not make one")
    try:
        with open(os.path.join(group, "cgroup.procs"), "w") as handle:
            handle.write(str(os.getpid()))
    except OSError as error:
        return off(f"cannot join {os.path.basename(group)}: {error.strerror}")
    return ON


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_capabilities() -> str:
    """Give up every capability (bounding, ambient, effective, permitted, inheritable): a root
    process keeps its uid but loses the powers that go with it (mounting, loading modules, killing
    other users' processes, reading files regardless of their mode)."""
    if _libc is None:
        return off("Linux only")
    for cap in range(LAST_CAP + 1):
        _prctl(PR_CAPBSET_DROP, cap)  # EINVAL past the kernel's last capability: ignored
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    if _libc.capset(ctypes.byref(header), data) != 0:
        return off(_errno_text())
    return ON


def set_limits(memory_bytes: int | None, cpu_seconds: int, file_bytes: int, processes: int, open_files: int) -> str:
    """Resource limits for this process and its children; None leaves memory unlimited."""
    wanted = [(resource.RLIMIT_CPU, cpu_seconds), (resource.RLIMIT_FSIZE, file_bytes),
              (resource.RLIMIT_NOFILE, open_files), (resource.RLIMIT_CORE, 0)]
    if memory_bytes is not None:
        wanted.append((resource.RLIMIT_AS, memory_bytes))
    if hasattr(resource, "RLIMIT_NPROC"):
        wanted.append((resource.RLIMIT_NPROC, processes))
    failed = []
    for kind, value in wanted:
        try:
            _, hard = resource.getrlimit(kind)
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(kind, (value, value))
        except (ValueError, OSError) as error:
            failed.append(f"{kind}: {error}")
    return ON if not failed else off("; ".join(failed))


# -- Landlock (Linux 5.13+): an allow-list of the files this process may touch --------------------

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # the same on every architecture
_FS_EXECUTE, _FS_WRITE_FILE, _FS_READ_FILE, _FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_ALL_V1 = (1 << 13) - 1  # the 13 rights of ABI 1: execute ... make_sym
_FS_REFER, _FS_TRUNCATE, _FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1
_FILE_ONLY = _FS_EXECUTE | _FS_WRITE_FILE | _FS_READ_FILE | _FS_TRUNCATE | _FS_IOCTL_DEV


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, or 0 where there is none."""
    if _libc is None:
        return 0
    _libc.syscall.restype = ctypes.c_long
    version = _libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return max(int(version), 0)


def landlock(read_only: list[str], read_write: list[str], devices: list[str]) -> dict[str, str]:
    """Restrict this process and its future children, for good: files may be read (and run) only
    under `read_only`, read and changed only under `read_write`, and the device files `devices`
    read, written and controlled (GPUs). Where the kernel can (ABI 4, 6), also no TCP bind or
    connect, and no signal or abstract unix socket to a process outside the restriction.
    Returns {"files": status, "signals": status, "tcp": status}. Paths that do not exist are skipped."""
    abi = landlock_abi()
    if abi == 0:
        why = off("Landlock is not available (Linux 5.13+ with Landlock enabled)")
        return {"files": why, "signals": why, "tcp": why}
    fs = _FS_ALL_V1 | (_FS_REFER if abi >= 2 else 0) | (_FS_TRUNCATE if abi >= 3 else 0) | \
        (_FS_IOCTL_DEV if abi >= 5 else 0)
    net = _NET_BIND_TCP | _NET_CONNECT_TCP if abi >= 4 else 0
    scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL if abi >= 6 else 0
    attr = _RulesetAttr(fs, net, scoped)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = _libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        why = off(f"landlock_create_ruleset: {_errno_text()}")
        return {"files": why, "signals": why, "tcp": why}
    reading = _FS_EXECUTE | _FS_READ_FILE | _FS_READ_DIR
    try:
        for paths, rights in ((read_only, reading), (read_write, fs), (devices, reading | _FS_WRITE_FILE | fs &
                                                                      (_FS_IOCTL_DEV | _FS_TRUNCATE))):
            for path in paths:
                try:
                    handle = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue
                try:
                    allowed = rights if stat.S_ISDIR(os.fstat(handle).st_mode) else rights & _FILE_ONLY
                    rule = _PathBeneathAttr(allowed & fs, handle)
                    if _libc.syscall(_SYS_ADD_RULE, ruleset, 1, ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
                        why = off(f"landlock_add_rule({path}): {_errno_text()}")
                        return {"files": why, "signals": why, "tcp": why}
                finally:
                    os.close(handle)
        if not _prctl(PR_SET_NO_NEW_PRIVS, 1) or _libc.syscall(_SYS_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)) != 0:
            why = off(f"landlock_restrict_self: {_errno_text()}")
            return {"files": why, "signals": why, "tcp": why}
    finally:
        os.close(ruleset)
    return {"files": f"{ON} (Landlock ABI {abi})",
            "signals": ON if scoped else off(f"Landlock ABI {abi} < 6"),
            "tcp": ON if net else off(f"Landlock ABI {abi} < 4")}


# -- seccomp: an allow-list of system calls, reviewed one by one in syscalls.py -------------------
# Docker's default profile refuses new namespaces, so on Gradescope the worker has the container's
# network and IPC; this filter needs no privilege (only no_new_privs) and closes both. Every call is
# reviewed in syscalls.py against the class "a kernel object that can carry data between grades or out
# of one": allowed with a reason, allowed with its arguments checked, or refused; any other number
# (a call newer than the review) fails with ENOSYS.

try:
    from . import syscalls
except ImportError:  # in the worker's folder, beside it
    import syscalls

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_X32_SYSCALL_BIT = 0x40000000  # x32 numbers: refused whole, with every other architecture's
_AF_UNIX, _AF_INET, _AF_INET6 = 1, 2, 10
_SOCK_STREAM, _SOCK_SEQPACKET, _SOCK_TYPE_MASK = 1, 5, 0xF
_CLONE_NEW_ANY = 0x7E020000  # CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
_TIOCSTI, _TIOCLINUX = 0x5412, 0x541C
_F_SETLK, _F_SETLKW, _F_OFD_SETLK, _F_OFD_SETLKW, _F_SETLEASE, _F_NOTIFY = 6, 7, 37, 38, 1024, 1026
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_LD_W_ABS, _AND_K, _JEQ_K, _JGT_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x54, 0x15, 0x25, 0x35, 0x45, 0x06
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
REFUSED = {name: syscalls.NUMBERS[name] for name, (verdict, _, _) in syscalls.review().items() if verdict == "refused"}


def refused_numbers(machine: str) -> dict[str, int]:
    """The refused system calls that `machine` has, by name, with its numbers."""
    have = syscalls.numbers(machine)
    return {name: have[name] for name in REFUSED if name in have}


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def _arg(index: int) -> tuple[int, int, int, int]:
    return (_LD_W_ABS, 0, 0, 16 + 8 * index)  # the low 32 bits of seccomp_data.args[index]


def _refuse_values(index: int, values: list[int], deny: int) -> list[tuple[int, int, int, int]]:
    """Refuse (`deny`) when argument `index` is one of `values`; allow otherwise."""
    count = len(values)
    checks = [(_JEQ_K, count - 1 - i, 0 if i < count - 1 else 1, value) for i, value in enumerate(values)]
    return [_arg(index), *checks, (_RET_K, 0, 0, deny), (_RET_K, 0, 0, _RET_ALLOW)]


def seccomp_program(machine: str, sockets: bool = True) -> list[tuple[int, int, int, int]]:
    """The classic-BPF program (code, jt, jf, k) for `machine`, from syscalls.py's review: another
    architecture's calls (32-bit ones on a 64-bit kernel, x32) fail with EPERM; each refused call
    with its errno; socket() with EAFNOSUPPORT, socketpair() but for AF_UNIX stream and seqpacket
    pairs, clone() with a new namespace, TIOCSTI and file locks with EPERM; the allowed calls pass;
    any other number fails with ENOSYS. Without `sockets` (a GPU grade: CUDA's driver makes a unix
    socket as it starts), socket() fails only for AF_INET and AF_INET6, and syscalls.GPU_ONLY,
    socketpair() of any type and fcntl's locks are allowed."""
    deny, no_family, allow = _RET_ERRNO | errno.EPERM, _RET_ERRNO | errno.EAFNOSUPPORT, _RET_ALLOW
    have = syscalls.numbers(machine)
    program = [(_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
               (_JEQ_K, 1, 0, _AUDIT_ARCH[machine]),
               (_RET_K, 0, 0, deny),
               (_LD_W_ABS, 0, 0, 0)]  # seccomp_data.nr
    if machine == "x86_64":
        program += [(_JGE_K, 0, 1, _X32_SYSCALL_BIT), (_RET_K, 0, 0, deny)]
    checked = {
        "socket": [(_RET_K, 0, 0, no_family)] if sockets else
        [_arg(0), (_JEQ_K, 1, 0, _AF_INET), (_JEQ_K, 0, 1, _AF_INET6), (_RET_K, 0, 0, no_family),
         (_RET_K, 0, 0, allow)],
        "socketpair": [_arg(0), (_JEQ_K, 1, 0, _AF_UNIX), (_RET_K, 0, 0, no_family)] + (
            [_arg(1), (_AND_K, 0, 0, _SOCK_TYPE_MASK), (_JEQ_K, 2, 0, _SOCK_STREAM), (_JEQ_K, 1, 0, _SOCK_SEQPACKET),
             (_RET_K, 0, 0, deny)] if sockets else []) + [(_RET_K, 0, 0, allow)],
        "clone": [_arg(0), (_JSET_K, 0, 1, _CLONE_NEW_ANY), (_RET_K, 0, 0, deny), (_RET_K, 0, 0, allow)],
        "ioctl": _refuse_values(1, [_TIOCSTI, _TIOCLINUX], deny),
        "fcntl": _refuse_values(1, [_F_SETLK, _F_SETLKW, _F_OFD_SETLK, _F_OFD_SETLKW, _F_SETLEASE, _F_NOTIFY], deny)
        if sockets else [(_RET_K, 0, 0, allow)],
    }
    for name, body in checked.items():
        if name in have:
            program += [(_JEQ_K, 0, len(body), have[name]), *body]
    action = {}
    for name, (verdict, _, code) in syscalls.review().items():
        if name in have and name not in checked:
            allowed = verdict == "allowed" or (not sockets and name in syscalls.GPU_ONLY)
            action[have[name]] = allow if allowed else _RET_ERRNO | code
    # Runs of numbers with the same answer, from 0 up, the gaps ENOSYS: "above this run's end: next run".
    enosys, runs = _RET_ERRNO | errno.ENOSYS, []
    for number in range(max(action) + 1):
        answer = action.get(number, enosys)
        if runs and runs[-1][1] == answer:
            runs[-1][0] = number
        else:
            runs.append([number, answer])
    for last, answer in runs:
        program += [(_JGT_K, 1, 0, last), (_RET_K, 0, 0, answer)]
    return program + [(_RET_K, 0, 0, enosys)]


def deny_syscalls(sockets: bool = True) -> str:
    """Install the seccomp filter of `seccomp_program` (`sockets` as there) on this process and its
    future children, for good. Needs Linux on x86_64 or aarch64."""
    machine = os.uname().machine if _libc is not None else ""
    if machine not in _AUDIT_ARCH:
        return off(f"no filter for {machine or sys.platform}")
    program = seccomp_program(machine, sockets)
    filters = (_SockFilter * len(program))(*[_SockFilter(*instruction) for instruction in program])
    fprog = _SockFprog(len(program), filters)
    if not _prctl(PR_SET_NO_NEW_PRIVS, 1):
        return off(f"no_new_privs: {_errno_text()}")
    if _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        return off(f"seccomp: {_errno_text()}")
    made = "no sockets but unix pairs" if sockets else "no internet sockets (a GPU grade: unix sockets allowed)"
    allowed = sum(v == "allowed" for v, _, _ in syscalls.review().values()) + (0 if sockets else len(syscalls.GPU_ONLY))
    return f"{ON} (seccomp: an allow-list of {allowed} " \
           f"calls, {made}, no System V IPC, message queues, kernel keys, memfd, io_uring, BPF, namespaces or " \
           "access to other processes)"
