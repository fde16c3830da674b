"""Confining the worker with Landlock (Linux 5.13+): an allow-list of the files this process may
touch and, where the kernel can, no TCP and no signals or abstract sockets out.

Each function returns statuses as `confine`'s do (see confine.py, which lists every confining
module). Copied into the worker's code folder; imports only the standard library and confine.
"""

from __future__ import annotations

import ctypes
import os
import stat

if __package__:  # staff.sandbox.landlock_rules, in the grader
    from staff.sandbox.confine import ON, PR_SET_NO_NEW_PRIVS, errno_text, libc, off, prctl
else:  # landlock_rules, a top-level module in the worker's code folder
    from confine import ON, PR_SET_NO_NEW_PRIVS, errno_text, libc, off, prctl

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
    if libc is None:
        return 0
    libc.syscall.restype = ctypes.c_long
    version = libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return max(int(version), 0)


_PINNED: list[int] = []  # descriptors of this process's own /proc entry, open for its life (see landlock)


def landlock(read_only: list[str], read_write: list[str], devices: list[str],
             own_proc: bool = False) -> dict[str, str]:
    """Restrict this process and its future children, for good: files may be read (and run) only
    under `read_only`, read and changed (never run) only under `read_write`, and the device files `devices`
    read, written and controlled (GPUs). Where the kernel can (ABI 4, 6), also no TCP bind or
    connect, and no signal or abstract unix socket to a process outside the restriction.
    With `own_proc`, this process may also write the files of its own /proc/<pid> (CUDA's driver names
    its threads in /proc/self/task/<tid>/comm, and cuInit fails with error 304 if it cannot); a rule
    binds to the entry's inode, so a descriptor of it stays open while the process lives, lest the
    kernel drop the entry and make another. Its children, with other pids, get no such right.
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
    ruleset = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        why = off(f"landlock_create_ruleset: {errno_text()}")
        return {"files": why, "signals": why, "tcp": why}
    reading = _FS_EXECUTE | _FS_READ_FILE | _FS_READ_DIR
    try:
        # Nothing the worker wrote may be executed: a program it may run but not read leaves the process
        # not dumpable, its /proc entries closed to the zygote that counts what it holds (dlopen is not execute).
        devices_rights = reading | _FS_WRITE_FILE | fs & (_FS_IOCTL_DEV | _FS_TRUNCATE)
        for paths, rights in ((read_only, reading), (read_write, fs & ~_FS_EXECUTE), (devices, devices_rights)):
            for path in paths:
                try:
                    handle = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue
                try:
                    allowed = rights if stat.S_ISDIR(os.fstat(handle).st_mode) else rights & _FILE_ONLY
                    rule = _PathBeneathAttr(allowed & fs, handle)
                    if libc.syscall(_SYS_ADD_RULE, ruleset, 1, ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
                        why = off(f"landlock_add_rule({path}): {errno_text()}")
                        return {"files": why, "signals": why, "tcp": why}
                finally:
                    os.close(handle)
        if own_proc:
            _PINNED.append(os.open(f"/proc/{os.getpid()}", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC))
            writing = _FS_READ_FILE | _FS_READ_DIR | _FS_WRITE_FILE | _FS_TRUNCATE
            if libc.syscall(_SYS_ADD_RULE, ruleset, 1, ctypes.byref(_PathBeneathAttr(writing & fs, _PINNED[-1])),
                            ctypes.c_uint32(0)) != 0:
                why = off(f"landlock_add_rule(/proc/{os.getpid()}): {errno_text()}")
                return {"files": why, "signals": why, "tcp": why}
        if not prctl(PR_SET_NO_NEW_PRIVS, 1) or libc.syscall(_SYS_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)) != 0:
            why = off(f"landlock_restrict_self: {errno_text()}")
            return {"files": why, "signals": why, "tcp": why}
    finally:
        os.close(ruleset)
    return {"files": f"{ON} (Landlock ABI {abi})",
            "signals": ON if scoped else off(f"Landlock ABI {abi} < 6"),
            "tcp": ON if net else off(f"Landlock ABI {abi} < 4")}
