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


# -- seccomp: system calls the worker never needs, refused whatever the namespaces -----------------
# Docker's default profile refuses new namespaces, so on Gradescope the worker has the container's
# network and IPC; this filter needs no privilege (only no_new_privs) and closes both. What it
# refuses is the class "a kernel object that can carry data between grades or out of one", less
# what torch and the adapters use (pipes, the zygote's unix socketpair).

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_X32_SYSCALL_BIT = 0x40000000  # x32 numbers: refused whole, with every other architecture's
# name: (x86_64 number, aarch64 number); each refused with EPERM, as Docker's profile refuses its own.
REFUSED = {
    # System V IPC: objects that outlive their process, found by keys and ids anyone can guess.
    "shmget": (29, 194), "shmat": (30, 196), "shmctl": (31, 195), "shmdt": (67, 197),
    "semget": (64, 190), "semop": (65, 193), "semctl": (66, 191), "semtimedop": (220, 192),
    "msgget": (68, 186), "msgsnd": (69, 189), "msgrcv": (70, 188), "msgctl": (71, 187),
    # POSIX message queues: named objects of /dev/mqueue, shared by every grade outside an IPC namespace.
    "mq_open": (240, 180), "mq_unlink": (241, 181), "mq_timedsend": (242, 182), "mq_timedreceive": (243, 183),
    "mq_notify": (244, 184), "mq_getsetattr": (245, 185),
    # Kernel keys: no namespace holds them; a key of the user keyring can be made readable by all and
    # found in /proc/keys by a later grade (Docker's profile refuses these three too).
    "add_key": (248, 217), "request_key": (249, 218), "keyctl": (250, 219),
    # io_uring: it opens files and sockets past this filter.
    "io_uring_setup": (425, 425), "io_uring_enter": (426, 426), "io_uring_register": (427, 427),
    # Another process's memory and files (a worker of the same user, where there is no user of its own
    # and no PID namespace): read, written, advised, its descriptors taken or compared.
    "ptrace": (101, 117), "process_vm_readv": (310, 270), "process_vm_writev": (311, 271),
    "process_madvise": (440, 440), "pidfd_getfd": (438, 438), "kcmp": (312, 272),
    # Kernel-side programs, maps and event streams: BPF maps pinned in bpffs outlive the process;
    # perf events and fanotify watch other processes and files; userfaultfd is a tool for racing the kernel.
    "bpf": (321, 280), "perf_event_open": (298, 241), "fanotify_init": (300, 262), "userfaultfd": (323, 282),
    # Files opened by handle, past every path check (Landlock's included).
    "name_to_handle_at": (303, 264), "open_by_handle_at": (304, 265),
    # The kernel log: a crash message carries a process name the worker sets, readable where dmesg is open.
    "syslog": (103, 116),
    # Memory hidden from the kernel itself: nothing the worker does needs it.
    "memfd_secret": (447, 447),
    # Files in memory: a memfd's pages are in no process's RSS and outside RLIMIT_AS, so a worker could
    # fill the machine past every limit but a memory cgroup. Neither torch on the CPU nor the adapters
    # make one (traced: importing torch, the reference's whole grade).
    "memfd_create": (319, 279),
}
# Sockets: the worker reaches none it did not make. socket() is refused for every family (unix path
# and abstract sockets, netlink, vsock, packet, internet) with EAFNOSUPPORT, which code that probes
# for a family reads as "not on this machine"; socketpair() is allowed for AF_UNIX only.
_SOCKET, _SOCKETPAIR = {"x86_64": 41, "aarch64": 198}, {"x86_64": 53, "aarch64": 199}
_AF_UNIX, _AF_INET, _AF_INET6 = 1, 2, 10
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2


def refused_numbers(machine: str) -> dict[str, int]:
    """The system calls of `REFUSED` by name, with `machine`'s numbers."""
    column = list(_AUDIT_ARCH).index(machine)
    return {name: numbers[column] for name, numbers in REFUSED.items()}


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def seccomp_program(machine: str, sockets: bool = True) -> list[tuple[int, int, int, int]]:
    """The classic-BPF program (code, jt, jf, k) for `machine`: another architecture's calls (32-bit
    ones on a 64-bit kernel, x32) and those of `REFUSED` fail with EPERM; socket() fails with
    EAFNOSUPPORT, and so does socketpair() but for AF_UNIX; everything else is allowed. Without
    `sockets` (a GPU grade: CUDA's driver makes a socket as it starts), socket() fails only for
    AF_INET and AF_INET6, as before round 4."""
    deny, no_family = _RET_ERRNO | errno.EPERM, _RET_ERRNO | errno.EAFNOSUPPORT
    program = [(_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
               (_JEQ_K, 1, 0, _AUDIT_ARCH[machine]),
               (_RET_K, 0, 0, deny),
               (_LD_W_ABS, 0, 0, 0)]  # seccomp_data.nr
    if machine == "x86_64":
        program += [(_JGE_K, 0, 1, _X32_SYSCALL_BIT), (_RET_K, 0, 0, deny)]
    for number in sorted(refused_numbers(machine).values()):
        program += [(_JEQ_K, 0, 1, number), (_RET_K, 0, 0, deny)]
    if not sockets:
        return program + [(_JEQ_K, 0, 4, _SOCKET[machine]),
                          (_LD_W_ABS, 0, 0, 16),  # the low 32 bits of args[0], the address family
                          (_JEQ_K, 1, 0, _AF_INET),
                          (_JEQ_K, 0, 1, _AF_INET6),
                          (_RET_K, 0, 0, no_family),
                          (_RET_K, 0, 0, _RET_ALLOW)]
    program += [(_JEQ_K, 0, 1, _SOCKET[machine]),
                (_RET_K, 0, 0, no_family),
                (_JEQ_K, 0, 3, _SOCKETPAIR[machine]),
                (_LD_W_ABS, 0, 0, 16),  # the low 32 bits of args[0], the address family
                (_JEQ_K, 1, 0, _AF_UNIX),
                (_RET_K, 0, 0, no_family),
                (_RET_K, 0, 0, _RET_ALLOW)]
    return program


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
    return f"{ON} (seccomp: {made}, no System V IPC, message queues, kernel keys, memfd, io_uring, BPF or " \
           "access to other processes)"
