"""Confining the worker: the user it runs as, the powers it keeps, and the resources it may use
(resource limits, a memory group of its own, first to go when memory runs out).

Each function returns a status as `confine`'s do (see confine.py, which lists every confining
module). Copied into the worker's code folder; imports only the standard library and confine.
"""

from __future__ import annotations

import ctypes
import os
import resource

if __package__:  # staff.sandbox.user_limits, in the grader
    from staff.sandbox.confine import ON, errno_text, libc, off, prctl
else:  # user_limits, a top-level module in the worker's code folder
    from confine import ON, errno_text, libc, off, prctl

PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4  # <linux/prctl.h>
LAST_CAP = 63


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
    if libc is None:
        return off("Linux only")
    for cap in range(LAST_CAP + 1):
        prctl(PR_CAPBSET_DROP, cap)  # EINVAL past the kernel's last capability: ignored
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    if libc.capset(ctypes.byref(header), data) != 0:
        return off(errno_text())
    return ON


def counted_apart() -> bool:
    """Whether RLIMIT_NPROC counts this process's tasks apart from the rest of its uid's: in a user
    namespace of its own, from Linux 5.14 on. Elsewhere (the machine's first user namespace, or an
    older kernel) it counts every task of the real uid, the grader's and the TA's shell's included."""
    try:
        with open("/proc/self/uid_map") as handle:
            first = handle.readline().split()
    except OSError:
        return False
    if first == ["0", "0", "4294967295"]:
        return False
    release = os.uname().release.split(".")
    try:
        return (int(release[0]), int(release[1].split("-")[0])) >= (5, 14)
    except (IndexError, ValueError):
        return False


def tasks_of(uid: int) -> int:
    """The processes and threads /proc shows whose real uid is `uid`, but this process's own."""
    count = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/status") as handle:
                fields = dict(line.split(":", 1) for line in handle if ":" in line)
            if int(fields["Uid"].split()[0]) == uid:
                count += int(fields["Threads"])
        except (OSError, KeyError, ValueError):
            continue  # gone meanwhile
    return count


# Signals queued and POSIX timers held, together: each is kernel memory charged to the uid's count,
# which the TA's own processes share (a worker in a user namespace of its own charges its owner's
# count too), so a worker that took it all (96,367 timers) left the TA's processes unable to make a
# timer or queue a signal. Nothing a worker runs queues one (the kernel's own signals do not count).
SIGNALS_QUEUED = 64


def queued_signals() -> int:
    """The signals queued and timers held now by this process's uid, as the kernel counts them for
    RLIMIT_SIGPENDING (the first number of SigQ in /proc/self/status); 0 where it cannot tell."""
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("SigQ:"):
                    return int(line.split()[1].split("/")[0])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def set_limits(memory_bytes: int | None, cpu_seconds: int, file_bytes: int, processes: int, open_files: int) -> str:
    """Resource limits for this process and its children (no realtime priority, no lower nice value);
    None leaves memory unlimited. `processes`
    is the worker's own: where the kernel counts every task of the uid (see `counted_apart`), those
    the uid runs now are added, so that a TA's shell does not use up the worker's share; so are the
    signals queued now to SIGNALS_QUEUED, which the kernel counts by uid as well."""
    wanted = [(resource.RLIMIT_CPU, cpu_seconds), (resource.RLIMIT_FSIZE, file_bytes),
              (resource.RLIMIT_NOFILE, open_files), (resource.RLIMIT_CORE, 0)]
    # No realtime policy and no nice value below the grader's: a grader started where audio groups get
    # rtprio 95 (a desktop's limits.conf) would hand it on, and a SCHED_FIFO worker thread left a task
    # on its CPU 7% of its progress.
    wanted += [(getattr(resource, name), 0) for name in ("RLIMIT_RTPRIO", "RLIMIT_NICE") if hasattr(resource, name)]
    if hasattr(resource, "RLIMIT_SIGPENDING"):
        wanted.append((resource.RLIMIT_SIGPENDING, SIGNALS_QUEUED + queued_signals()))
    if memory_bytes is not None:
        wanted.append((resource.RLIMIT_AS, memory_bytes))
    if hasattr(resource, "RLIMIT_NPROC"):
        wanted.append((resource.RLIMIT_NPROC, processes + (0 if counted_apart() else tasks_of(os.getuid()))))
    failed = []
    for kind, value in wanted:
        try:
            _, hard = resource.getrlimit(kind)
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(kind, (value, value))
        except (ValueError, OSError) as error:
            failed.append(f"{kind}: {error}")
    return ON if not failed else off("; ".join(failed))
