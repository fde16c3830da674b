"""Confining the worker with seccomp: system calls it never needs, refused whatever the namespaces.

Docker's default profile refuses new namespaces, so on Gradescope the worker has the container's
network and IPC; this filter needs no privilege (only no_new_privs) and closes both. What it
refuses is the class "a kernel object that can carry data between grades or out of one", less
what torch and the adapters use (pipes, the zygote's unix socketpair).

Each function returns a status as `confine`'s do (see confine.py, which lists every confining
module). Copied into the worker's code folder; imports only the standard library and confine.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys

if __package__:  # staff.sandbox.syscall_filter, in the grader
    from staff.sandbox.confine import ON, PR_SET_NO_NEW_PRIVS, errno_text, libc, off, prctl
else:  # syscall_filter, a top-level module in the worker's code folder
    from confine import ON, PR_SET_NO_NEW_PRIVS, errno_text, libc, off, prctl

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
    machine = os.uname().machine if libc is not None else ""
    if machine not in _AUDIT_ARCH:
        return off(f"no filter for {machine or sys.platform}")
    program = seccomp_program(machine, sockets)
    filters = (_SockFilter * len(program))(*[_SockFilter(*instruction) for instruction in program])
    fprog = _SockFprog(len(program), filters)
    if not prctl(PR_SET_NO_NEW_PRIVS, 1):
        return off(f"no_new_privs: {errno_text()}")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        return off(f"seccomp: {errno_text()}")
    made = "no sockets but unix pairs" if sockets else "no internet sockets (a GPU grade: unix sockets allowed)"
    return f"{ON} (seccomp: {made}, no System V IPC, message queues, kernel keys, memfd, io_uring, BPF or " \
           "access to other processes)"
