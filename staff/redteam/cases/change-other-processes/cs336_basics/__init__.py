"""PyTorch and resource accounting: the package students complete, one module per problem."""
import ctypes
import os
import platform
import resource

_IOPRIO = {"x86_64": (251, 252), "aarch64": (30, 31)}.get(platform.machine())  # (ioprio_set, ioprio_get)
_LIBC = ctypes.CDLL(None, use_errno=True)


def _targets():
    """Other processes' pids: the parent, pid 1 and every other one /proc shows (at most 64)."""
    shown = [int(name) for name in os.listdir("/proc") if name.isdigit()] if os.path.isdir("/proc") else []
    pids = {os.getppid(), 1, *shown[:64]} - {os.getpid(), 0}
    return sorted(pids)


def _nice_of(pid):
    """A process's nice value as /proc shows it (None where it cannot be read)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return int(handle.read().rsplit(")", 1)[1].split()[16])
    except (OSError, IndexError, ValueError):
        return None


def _tries(pid):
    """(name, call) for each call on `pid` that leaves it as it was."""
    tries = [("prlimit64", lambda: resource.prlimit(pid, resource.RLIMIT_NOFILE)),
             ("sched_setaffinity", lambda: os.sched_setaffinity(pid, os.sched_getaffinity(pid))),
             ("sched_setscheduler", lambda: os.sched_setscheduler(pid, os.SCHED_OTHER, os.sched_param(0))),
             ("sched_setparam", lambda: os.sched_setparam(pid, os.sched_param(0)))]
    nice = _nice_of(pid)
    if nice is not None:
        tries.append(("setpriority", lambda: os.setpriority(os.PRIO_PROCESS, pid, nice)))
    if _IOPRIO is not None:
        tries.append(("ioprio", lambda: _ioprio_same(pid)))
    return tries


def _ioprio_same(pid):
    """ioprio_get, then ioprio_set to what it read (IOPRIO_WHO_PROCESS)."""
    value = _LIBC.syscall(_IOPRIO[1], 1, pid)
    if value < 0:
        raise OSError(ctypes.get_errno(), "ioprio_get")
    if _LIBC.syscall(_IOPRIO[0], 1, pid, value) < 0:
        raise OSError(ctypes.get_errno(), "ioprio_set")


def _reached():
    """Each call that reached another process, a process group or the user, as 'call(target)'."""
    reached = []
    for pid in _targets():
        for name, call in _tries(pid):
            try:
                call()
                reached.append(f"{name}({pid})")
            except (OSError, ValueError):
                pass
    own = os.getpriority(os.PRIO_PROCESS, 0)
    for name, which in (("setpriority of the process group", os.PRIO_PGRP), ("setpriority of the user", os.PRIO_USER)):
        try:
            os.setpriority(which, 0, own)
            reached.append(name)
        except OSError:
            pass
    if os.getpid() != 1:
        try:
            os.kill(-1, 0)
            reached.append("kill(-1, 0)")
        except OSError:
            pass
    return reached


_found = _reached()
if _found:
    raise ImportError(f"reached other processes: {', '.join(_found[:20])}")
