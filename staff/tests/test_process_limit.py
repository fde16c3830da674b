"""The worker's process limit (RLIMIT_NPROC, which counts threads too) is the worker's own share in
every mode. Where the kernel counts every task of the uid (the machine's first user namespace: an
ordinary user without user namespaces, a grader whose worker runs as the TA's uid), the tasks the uid
already runs are added to it; in a user namespace of the worker's own (Linux 5.14 on) the kernel
counts the namespace's tasks apart and nothing is added. The limit is small because processes times
open files bounds the pipe buffers no memory limit counts where there is no memory group
(worker_config.Limits). Each test names the mistake it catches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from staff.sandbox import confine, user_limits
from staff.sandbox.worker_config import Limits, processes_for

SANDBOX = Path(confine.__file__).resolve().parent
NOBODY = 65534
SHARE = 4  # the worker's own tasks in these probes: itself and three children
OTHERS = 6  # tasks the uid already runs (a stand-in for a TA's shell and the grader)

_PROBE = r"""
import ctypes, json, os, resource, sys, time
sys.path.insert(0, sys.argv[1])
import user_limits  # before the uid changes: 65534 may not read this environment
os.setresgid(65534, 65534, 65534)
os.setresuid(65534, 65534, 65534)
if sys.argv[2] == "own namespace":
    if ctypes.CDLL(None, use_errno=True).unshare(0x10000000) != 0:  # CLONE_NEWUSER
        print(json.dumps({"unshare": os.strerror(ctypes.get_errno())}))
        sys.exit(0)
found = {"counted apart": user_limits.counted_apart(),
         "status": user_limits.set_limits(None, 60, 1 << 20, int(sys.argv[3]), 64)}
children = []
for _ in range(3 * int(sys.argv[3])):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    children.append(pid)
found["forked"] = len(children)
for pid in children:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
print(json.dumps(found))
"""


def _forked(where: str) -> dict:
    """What a probe of uid 65534 with a process limit of SHARE forked, beside OTHERS tasks of that uid."""
    def as_nobody():
        os.setresgid(NOBODY, NOBODY, NOBODY)
        os.setresuid(NOBODY, NOBODY, NOBODY)

    others = [subprocess.Popen(["sleep", "60"], preexec_fn=as_nobody) for _ in range(OTHERS)]
    try:
        done = subprocess.run([sys.executable, "-I", "-c", _PROBE, str(SANDBOX), where, str(SHARE)],
                              capture_output=True, text=True, timeout=60)
    finally:
        for process in others:
            process.kill()
            process.wait()
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


needs_root = pytest.mark.skipif(sys.platform != "linux" or os.geteuid() != 0,
                                reason="the probe runs as another uid, which needs root")


@needs_root
def test_where_every_task_of_the_uid_counts_the_worker_still_gets_its_share():
    # Mistake: the limit set as the worker's share alone where the kernel counts the uid's other tasks:
    # beside a TA's shell (here six sleeping tasks of the uid) the worker cannot fork at all, and honest
    # code that starts a thread fails as if it were the student's.
    found = _forked("first namespace")
    assert found["counted apart"] is False
    assert found["status"].startswith("on"), found
    assert found["forked"] == SHARE - 1, f"expected {SHARE - 1} children beside {OTHERS} other tasks, got {found}"


@needs_root
def test_in_a_user_namespace_of_its_own_the_share_is_the_whole_limit():
    # Mistake: the uid's other tasks added there too, where the kernel counts the namespace's tasks
    # apart: on a TA's desktop (thousands of threads) the limit would then bound nothing.
    release = tuple(int(part) for part in os.uname().release.split("-")[0].split(".")[:2])
    if release < (5, 14):
        pytest.skip("before Linux 5.14 every task of the uid counts in any user namespace")
    found = _forked("own namespace")
    if "unshare" in found:
        pytest.skip(f"no user namespace can be made here: {found['unshare']}")
    assert found["counted apart"] is True
    assert found["forked"] == SHARE - 1, f"expected {SHARE - 1} children, got {found}"


def test_processes_times_open_files_keeps_pipe_buffers_under_a_gib():
    # Mistake: the limits raised back (512 processes of 1,024 files: 4 GiB of pipe buffers at 8 KiB a
    # pipe past the user's first 64 MiB, in no process's RSS and outside every limit but a memory group).
    for threads in (1, 2, 16):
        pipes = processes_for(threads) * Limits.open_files
        assert (64 << 20) + pipes * 8192 < 1 << 30, (threads, pipes)
    assert processes_for(2) >= 2 * 14, "less than twice the 14 tasks the reference's grade ran in"


_TIMERS = r"""
import ctypes, json, os, resource, sys
sys.path.insert(0, sys.argv[1])
import user_limits
libc = ctypes.CDLL(None, use_errno=True)


def timers(most):
    made = 0
    for _ in range(most):
        handle = ctypes.c_void_p()
        if libc.timer_create(1, None, ctypes.byref(handle)) != 0:  # CLOCK_MONOTONIC, SIGALRM on expiry
            return made, os.strerror(ctypes.get_errno())
        made += 1
    return made, ""


held_before = user_limits.queued_signals()
for kind in (resource.RLIMIT_RTPRIO, resource.RLIMIT_NICE):  # as high as this machine lets (0 where the hard is)
    resource.setrlimit(kind, (resource.getrlimit(kind)[1],) * 2)
status = user_limits.set_limits(None, 60, 1 << 20, 64, 64)
print(json.dumps({"status": status, "before": held_before, "made": timers(10 * user_limits.SIGNALS_QUEUED),
                  "rtprio": resource.getrlimit(resource.RLIMIT_RTPRIO),
                  "nice": resource.getrlimit(resource.RLIMIT_NICE)}))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_SIGPENDING and POSIX timers as Linux counts them")
def test_the_worker_holds_few_timers_and_queued_signals():
    # Mistake caught: RLIMIT_SIGPENDING left as it is (96,367 here). Each POSIX timer is charged to the
    # uid's count of queued signals, which the TA's processes share: a worker made 96,367 timers, and
    # every other process of the uid then failed to make a timer or queue a signal until it ended.
    done = subprocess.run([sys.executable, "-I", "-c", _TIMERS, str(SANDBOX)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout)
    made, error = found["made"]
    assert found["status"].startswith("on"), found
    assert made <= user_limits.SIGNALS_QUEUED and "Resource temporarily unavailable" in error, found
    # Mistake caught: RLIMIT_RTPRIO and RLIMIT_NICE inherited from the grader (rtprio 95 on a desktop
    # whose audio group has it): a SCHED_FIFO thread of the worker's starves the TA's tasks on its CPU.
    assert found["rtprio"] == [0, 0] and found["nice"] == [0, 0], found
