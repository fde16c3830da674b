"""Confining the worker with seccomp: an allow-list of system calls, reviewed one by one in syscalls.py.

Docker's default profile refuses new namespaces, so on Gradescope the worker has the container's
network and IPC; this filter needs no privilege (only no_new_privs) and closes both. Every call is
reviewed in syscalls.py against the class "a kernel object that can carry data between grades or out
of one": allowed with a reason, allowed with its arguments checked, or refused; any other number (a
call newer than the review) fails with ENOSYS.

Each function returns a status as `confine`'s do (see confine.py, which lists every confining
module). Copied into the worker's code folder; imports only the standard library and confine.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys

if __package__:  # staff.sandbox.syscall_filter, in the grader
    from staff.sandbox import syscalls
    from staff.sandbox.confine import ON, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, errno_text, libc, off, prctl
else:  # syscall_filter, a top-level module in the worker's code folder
    import syscalls
    from confine import ON, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, errno_text, libc, off, prctl

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_X32_SYSCALL_BIT = 0x40000000  # x32 numbers: refused whole, with every other architecture's
_AF_UNIX, _AF_INET, _AF_INET6 = 1, 2, 10
_SOL_SOCKET, _SO_SNDBUF, _SO_RCVBUF, _SO_SNDBUFFORCE, _SO_RCVBUFFORCE = 1, 7, 8, 32, 33  # the same on both machines
_CLONE_NEW_ANY = 0x7E020000  # CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
_CLONE_FS, _CLONE_FILES, _CLONE_THREAD = 0x200, 0x400, 0x10000
_TIOCSTI, _TIOCLINUX = 0x5412, 0x541C
# An inode's flags and attributes, set on a file opened read-only (the same numbers on both machines; the
# 32-bit forms of the flag calls too): FS_IOC_SETFLAGS, FS_IOC32_SETFLAGS, FS_IOC_FSSETXATTR,
# FS_IOC_SETVERSION, FS_IOC32_SETVERSION, FS_IOC_ENABLE_VERITY, FICLONE, FICLONERANGE, FIDEDUPERANGE
_INODE_IOCTLS = [0x40086602, 0x40046602, 0x401C5820, 0x40087602, 0x40047602, 0x40806685, 0x40049409, 0x4020940D,
                 0xC0189436]
_F_SETLK, _F_SETLKW, _F_OFD_SETLK, _F_OFD_SETLKW, _F_SETLEASE, _F_NOTIFY = 6, 7, 37, 38, 1024, 1026
_F_SETOWN, _F_SETSIG, _F_SETOWN_EX, _F_SETPIPE_SZ = 8, 10, 15, 1031
_PRIO_PROCESS = 0
_F_SETFL = 4
_O_DIRECT = {"x86_64": 0o40000, "aarch64": 0o200000}  # asm-generic's value, and arm64's own
_RWF_DONTCACHE = 0x80  # Linux 6.14: pages read or written leave the page cache after the call
_MADV_COLD, _MADV_PAGEOUT = 20, 21
_SIGCHLD = 17  # the same on both machines
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_LD_W_ABS, _JEQ_K, _JGT_K, _JGE_K, _JSET_K, _RET_K, _AND_K = 0x20, 0x15, 0x25, 0x35, 0x45, 0x06, 0x54
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
_PR_FUTEX_HASH = 78  # Linux 6.16: a process's own futex hash, up to 2**24 slots (1.28 GiB of vmalloc) each
_PR_SET_VMA = 0x53564D41  # Linux 5.17: names an anonymous mapping in /proc/PID/maps
_MAP_SHARED_TYPE, _MAP_ANONYMOUS = 0x01, 0x20  # the bit of MAP_SHARED and MAP_SHARED_VALIDATE; both machines
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


def _high(index: int) -> tuple[int, int, int, int]:
    return (_LD_W_ABS, 0, 0, 16 + 8 * index + 4)  # the high 32 bits (both architectures are little-endian)


def _only(wanted: dict[int, int], deny: int) -> list[tuple[int, int, int, int]]:
    """Allow only when each argument `index` is `wanted[index]`, its low word and its high word (the
    value zero-extended): any other value, in either word, is refused (`deny`)."""
    body: list[tuple[int, int, int, int]] = []
    for index, value in wanted.items():
        body += [_arg(index), (_JEQ_K, 0, None, value & 0xFFFFFFFF), _high(index), (_JEQ_K, 0, None, 0)]
    body.append((_RET_K, 0, 0, _RET_ALLOW))
    # every mismatch jumps to the refusal that follows the allow
    return [(code, jt, len(body) - 1 - i if jf is None else jf, k) for i, (code, jt, jf, k) in enumerate(body)] + \
        [(_RET_K, 0, 0, deny)]


def _refuse_values(index: int, values: list[int], deny: int) -> list[tuple[int, int, int, int]]:
    """Refuse (`deny`) when argument `index` is one of `values`; allow otherwise."""
    count = len(values)
    checks = [(_JEQ_K, count - 1 - i, 0 if i < count - 1 else 1, value) for i, value in enumerate(values)]
    return [_arg(index), *checks, (_RET_K, 0, 0, deny), (_RET_K, 0, 0, _RET_ALLOW)]


def _refuse_bits(index: int, bits: int, deny: int) -> list[tuple[int, int, int, int]]:
    """Refuse (`deny`) when argument `index` has any of `bits` (in its low word); allow otherwise."""
    return [_arg(index), (_JSET_K, 0, 1, bits), (_RET_K, 0, 0, deny), (_RET_K, 0, 0, _RET_ALLOW)]


def seccomp_program(machine: str, sockets: bool = True, namespace_init: bool = False,
                    narrowed_later: bool = False, shared_anonymous: bool = False) -> list[tuple[int, int, int, int]]:
    """The classic-BPF program (code, jt, jf, k) for `machine`, from syscalls.py's review: another
    architecture's calls (32-bit ones on a 64-bit kernel, x32) fail with EPERM; each refused call
    with its errno; socket() with EAFNOSUPPORT; socketpair(), clone() with a new namespace or a
    thread without its process's file table, TIOCSTI, file locks, a pipe's resize, PR_SET_DUMPABLE
    but to 1 and socket buffer sizes with EPERM; PR_FUTEX_HASH with EINVAL; fallocate but mode 0
    with EOPNOTSUPP; O_DIRECT (open, openat, F_SETFL) with EINVAL and preadv2's RWF_DONTCACHE with
    EOPNOTSUPP; MADV_COLD, MADV_PAGEOUT and a new action for SIGCHLD answered as done, not done; the
    allowed calls pass; any other number fails with ENOSYS. Without `sockets`
    (a GPU grade's worker, until each child has started CUDA: the driver connects to its daemons
    over unix sockets), socket() and socketpair() are allowed for AF_UNIX alone, and
    syscalls.GPU_ONLY, fcntl's locks and resizes, any prctl and any socket option are allowed (each
    child stacks the CPU grade's filter, which refuses them again). The calls that change a
    process's limits or scheduling act on pid 0 (the caller) only, and kill(-1) is refused unless
    `namespace_init` (the worker is its PID namespace's init, where -1 means every process of the
    namespace). With `narrowed_later` (a zygote whose children confine themselves before any student
    code), syscalls.CHILD_CONFINES and prctl's PR_SET_SECCOMP are allowed too. A mapping of shared
    memory with no file (mmap with MAP_SHARED and MAP_ANONYMOUS) fails with EPERM unless
    `shared_anonymous` or without `sockets`, and prctl's PR_SET_VMA with EINVAL."""
    deny, no_family, allow = _RET_ERRNO | errno.EPERM, _RET_ERRNO | errno.EAFNOSUPPORT, _RET_ALLOW
    done, no_direct, direct = _RET_ERRNO | 0, _RET_ERRNO | errno.EINVAL, _O_DIRECT[machine]
    have = syscalls.numbers(machine)
    program = [(_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
               (_JEQ_K, 1, 0, _AUDIT_ARCH[machine]),
               (_RET_K, 0, 0, deny),
               (_LD_W_ABS, 0, 0, 0)]  # seccomp_data.nr
    if machine == "x86_64":
        program += [(_JGE_K, 0, 1, _X32_SYSCALL_BIT), (_RET_K, 0, 0, deny)]
    checked = {
        "socket": [(_RET_K, 0, 0, no_family)] if sockets else
        [_arg(0), (_JEQ_K, 0, 1, _AF_UNIX), (_RET_K, 0, 0, allow), (_RET_K, 0, 0, no_family)],
        # A pair's buffers are kernel memory that only a memory group counts, and each forked child may
        # fill pairs up to its own open-file limit: children held 4.51 GiB as an ordinary user.
        "socketpair": [(_RET_K, 0, 0, deny)] if sockets else
        [_arg(0), (_JEQ_K, 0, 1, _AF_UNIX), (_RET_K, 0, 0, allow), (_RET_K, 0, 0, no_family)],
        # no new namespace; no thread with a file table or working folder of its own (CLONE_THREAD
        # without CLONE_FILES and CLONE_FS)
        "clone": [_arg(0), (_JSET_K, 4, 0, _CLONE_NEW_ANY), (_AND_K, 0, 0, _CLONE_THREAD | _CLONE_FILES | _CLONE_FS),
                  (_JSET_K, 0, 1, _CLONE_THREAD), (_JEQ_K, 0, 1, _CLONE_THREAD | _CLONE_FILES | _CLONE_FS),
                  (_RET_K, 0, 0, allow), (_RET_K, 0, 0, deny)],
        "fallocate": _only({1: 0}, _RET_ERRNO | errno.EOPNOTSUPP),
        "ioctl": _refuse_values(1, [_TIOCSTI, _TIOCLINUX, *_INODE_IOCTLS], deny),
        # F_SETFL with O_DIRECT fails as open's would; then the refused commands
        "fcntl": [_arg(1), (_JEQ_K, 0, 4, _F_SETFL), _arg(2), (_JSET_K, 0, 1, direct), (_RET_K, 0, 0, no_direct),
                  (_RET_K, 0, 0, allow),
                  *_refuse_values(1, [_F_SETLK, _F_SETLKW, _F_OFD_SETLK, _F_OFD_SETLKW, _F_SETLEASE, _F_NOTIFY,
                                      _F_SETOWN, _F_SETSIG, _F_SETOWN_EX, _F_SETPIPE_SZ], deny)]
        if sockets else [(_RET_K, 0, 0, allow)],
        "open": _refuse_bits(1, direct, no_direct) if sockets else [(_RET_K, 0, 0, allow)],
        "openat": _refuse_bits(2, direct, no_direct) if sockets else [(_RET_K, 0, 0, allow)],
        "preadv2": _refuse_bits(5, _RWF_DONTCACHE, _RET_ERRNO | errno.EOPNOTSUPP) if sockets else
        [(_RET_K, 0, 0, allow)],
        "madvise": _refuse_values(2, [_MADV_COLD, _MADV_PAGEOUT], done) if sockets else [(_RET_K, 0, 0, allow)],
        # SIGCHLD with a new action (a pointer not NULL, in either word): answered as done, not done
        "rt_sigaction": [_arg(0), (_JEQ_K, 0, 5, _SIGCHLD), _arg(1), (_JEQ_K, 0, 2, 0), _high(1), (_JEQ_K, 1, 0, 0),
                         (_RET_K, 0, 0, done), (_RET_K, 0, 0, allow)] if sockets else [(_RET_K, 0, 0, allow)],
        # not PR_SET_SECCOMP; PR_SET_DUMPABLE with 1 only (the zygote made itself not dumpable before this);
        # PR_FUTEX_HASH and PR_SET_VMA fail as on a kernel without them
        "prctl": [_arg(0), *([] if narrowed_later else [(_JEQ_K, 6, 0, PR_SET_SECCOMP)]),
                  (_JEQ_K, 6, 0, _PR_FUTEX_HASH), (_JEQ_K, 5, 0, _PR_SET_VMA), (_JEQ_K, 0, 2, PR_SET_DUMPABLE),
                  _arg(1), (_JEQ_K, 0, 1, 1), (_RET_K, 0, 0, allow), (_RET_K, 0, 0, deny),
                  (_RET_K, 0, 0, _RET_ERRNO | errno.EINVAL)]
        if sockets else [(_RET_K, 0, 0, allow)],
        # shared memory with no file: MAP_ANONYMOUS with the MAP_SHARED bit (MAP_SHARED, MAP_SHARED_VALIDATE)
        "mmap": [_arg(3), (_JSET_K, 0, 2, _MAP_ANONYMOUS), (_JSET_K, 0, 1, _MAP_SHARED_TYPE), (_RET_K, 0, 0, deny),
                 (_RET_K, 0, 0, allow)] if sockets and not shared_anonymous else [(_RET_K, 0, 0, allow)],
        # jt=1 skips the allow below when the level is SOL_SOCKET, whose buffer sizes are then checked
        "setsockopt": [_arg(1), (_JEQ_K, 1, 0, _SOL_SOCKET), (_RET_K, 0, 0, allow),
                       *_refuse_values(2, [_SO_SNDBUF, _SO_RCVBUF, _SO_SNDBUFFORCE, _SO_RCVBUFFORCE], deny)]
        if sockets else [(_RET_K, 0, 0, allow)],
        "prlimit64": _only({0: 0}, deny),
        "sched_setaffinity": _only({0: 0}, deny),
        "sched_setparam": _only({0: 0}, deny),
        "sched_setscheduler": _only({0: 0}, deny),
        "sched_setattr": _only({0: 0}, deny),
        "getpriority": _only({0: _PRIO_PROCESS, 1: 0}, deny),
        "setpriority": _only({0: _PRIO_PROCESS, 1: 0}, deny),
        # pid_t is an int: the kernel reads the low word alone, so the low word alone decides the refusal
        "kill": [(_RET_K, 0, 0, allow)] if namespace_init else _refuse_values(0, [0xFFFFFFFF], deny),
    }
    for name, body in checked.items():
        if name in have:
            program += [(_JEQ_K, 0, len(body), have[name]), *body]
    action = {}
    for name, (verdict, _, code) in syscalls.review().items():
        if name in have and name not in checked:
            allowed = verdict == "allowed" or (not sockets and name in syscalls.GPU_ONLY) or \
                (narrowed_later and name in syscalls.CHILD_CONFINES)
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


def deny_syscalls(sockets: bool = True, namespace_init: bool = False, narrowed_later: bool = False,
                  shared_anonymous: bool = False) -> str:
    """Install the seccomp filter of `seccomp_program` (its arguments as there) on this process and its
    future children, for good. Needs Linux on x86_64 or aarch64."""
    machine = os.uname().machine if libc is not None else ""
    if machine not in _AUDIT_ARCH:
        return off(f"no filter for {machine or sys.platform}")
    program = seccomp_program(machine, sockets, namespace_init, narrowed_later, shared_anonymous)
    filters = (_SockFilter * len(program))(*[_SockFilter(*instruction) for instruction in program])
    fprog = _SockFprog(len(program), filters)
    if not prctl(PR_SET_NO_NEW_PRIVS, 1):
        return off(f"no_new_privs: {errno_text()}")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        return off(f"seccomp: {errno_text()}")
    made = "no sockets" if sockets else \
        "no sockets but unix ones (a GPU grade's zygote; each child narrows to the CPU grade's filter)"
    if sockets and narrowed_later:
        made += " (the zygote's; each child sets a Landlock domain of its own, then narrows to this without it)"
    allowed = sum(v == "allowed" for v, _, _ in syscalls.review().values()) + \
        (len(syscalls.GPU_ONLY) if not sockets else len(syscalls.CHILD_CONFINES) if narrowed_later else 0)
    shared = ", shared memory with no file" if sockets and not shared_anonymous else ""
    return f"{ON} (seccomp: an allow-list of {allowed} " \
           f"calls, {made}, no System V IPC, message queues, kernel keys, memfd{shared}, io_uring, BPF, namespaces, " \
           "access to other processes or their limits and scheduling)"
