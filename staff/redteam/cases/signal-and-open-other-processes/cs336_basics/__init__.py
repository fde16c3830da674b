"""PyTorch and resource accounting: the package students complete, one module per problem."""
import ctypes
import errno
import os
import platform
import signal
import struct

# (pidfd_open, pidfd_send_signal, pidfd_getfd, kcmp, process_vm_readv, process_vm_writev, process_madvise,
#  rt_sigqueueinfo, tgkill)
_CALLS = {"x86_64": (434, 424, 438, 312, 310, 311, 440, 129, 234),
          "aarch64": (434, 424, 438, 272, 270, 271, 440, 138, 131)}.get(platform.machine())
_LIBC = ctypes.CDLL(None, use_errno=True)
_NOWHERE = 0x10  # an address no process maps: a call allowed to reach the process fails with EFAULT there
_WRITABLE = ("oom_score_adj", "oom_adj", "clear_refs", "timerslack_ns", "comm", "coredump_filter")
_READABLE = ("environ", "mem", "auxv", "syscall", "stack")


class _IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]


def _ours():
    """This process, its parent (the zygote or its init, inside the same sandbox) and their children."""
    own, parent = os.getpid(), os.getppid()
    ours = {own, parent, 0}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as handle:
                    ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid in (own, parent):
                ours.add(int(name))
    return ours


def _targets():
    """Every other pid /proc shows (at most 128), and pid 1 and the grandparent even where /proc hides them."""
    shown = sorted(int(name) for name in os.listdir("/proc") if name.isdigit())
    ours = _ours()
    return sorted(({1, *shown[:128]}) - ours)


def _syscall(number, *args):
    result = _LIBC.syscall(number, *args)
    return result, (ctypes.get_errno() if result < 0 else 0)


def _signals(pid):
    """Signal 0 (checks permission, delivers nothing) by every route that names a pid."""
    reached = []
    try:
        os.kill(pid, 0)
        reached.append("kill")
    except OSError:
        pass
    if _CALLS is None:
        return reached
    pidfd_open, send, getfd, _, _, _, _, sigqueue, tgkill = _CALLS
    info = ctypes.create_string_buffer(struct.pack("<iii", 0, 0, -1), 128)  # si_signo 0, si_code SI_QUEUE
    if _syscall(sigqueue, pid, 0, info)[0] == 0:
        reached.append("rt_sigqueueinfo")
    if _syscall(tgkill, pid, pid, 0)[0] == 0:
        reached.append("tgkill")
    fd, _ = _syscall(pidfd_open, pid, 0)
    if fd >= 0:
        try:
            if _syscall(send, fd, 0, None, 0)[0] == 0:
                reached.append("pidfd_send_signal")
            got, _ = _syscall(getfd, fd, 0, 0)
            if got >= 0:
                os.close(got)
                reached.append("pidfd_getfd")
        finally:
            os.close(fd)
    return reached


def _memory(pid):
    """Another process's memory and state by pid: a call that gets past its permission check fails with
    EFAULT (or ENOMEM) at an address no process maps, or succeeds."""
    if _CALLS is None:
        return []
    _, _, _, kcmp, readv, writev, madvise, _, _ = _CALLS
    reached = []
    if _syscall(kcmp, os.getpid(), pid, 0, 0, 0)[0] >= 0:  # KCMP_FILE of fd 0 and 0
        reached.append("kcmp")
    buffer = ctypes.create_string_buffer(8)
    local, remote = _IoVec(ctypes.addressof(buffer), 8), _IoVec(_NOWHERE, 8)
    for name, number in (("process_vm_readv", readv), ("process_vm_writev", writev)):
        result, error = _syscall(number, pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
        if result >= 0 or error == errno.EFAULT:
            reached.append(name)
    return reached


def _proc_files(pid):
    """/proc/PID files that change another process when written (opened, never written) or show its
    memory and environment."""
    reached = []
    for name in _WRITABLE:
        try:
            fd = os.open(f"/proc/{pid}/{name}", os.O_WRONLY)
        except OSError:
            continue
        os.close(fd)
        reached.append(f"/proc/{pid}/{name} for writing")
    for name in _READABLE:
        try:
            with open(f"/proc/{pid}/{name}", "rb") as handle:
                handle.read(1)
        except OSError:
            continue
        reached.append(f"/proc/{pid}/{name}")
    try:  # the folder's mode lets the same uid list the numbers; what each names needs the ptrace check
        numbers = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        numbers = []
    for number in numbers[:16]:
        try:
            os.readlink(f"/proc/{pid}/fd/{number}")
        except OSError:
            continue
        reached.append(f"/proc/{pid}/fd/{number}")
        break
    return reached


def _reached():
    reached = []
    for pid in _targets():
        reached += [f"{name}({pid})" for name in _signals(pid) + _memory(pid)] + _proc_files(pid)
    own = signal.getsignal(signal.SIGUSR1)  # unchanged: nothing is delivered anywhere
    assert own is not None
    return reached


_found = _reached()
if _found:
    raise ImportError(f"reached other processes: {', '.join(_found[:20])}")
