"""The seccomp filter keeps the worker's limit and scheduling calls on the worker itself.

Without a PID namespace (an ordinary user where unprivileged user namespaces are off) every process
of the same uid is in reach by pid: a batch neighbour's test process, `staff grade` itself, the TA's
shell. These tests start such a sibling, install the filter in a probe process of the same uid and
call prlimit64, setpriority, sched_setaffinity, ioprio_set and kill(-1) on the sibling, then on the
probe itself; the sibling's limits, nice value and CPUs must be what they were. The same probe
without the filter changes them, so the probe itself is shown to reach the sibling. Each test names
the mistake it catches.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from staff.sandbox import confine
from staff.tests.filter_probe import ON_A_FILTERED_MACHINE, PRELUDE

pytestmark = pytest.mark.skipif(not ON_A_FILTERED_MACHINE, reason="the filter is written for Linux on x86_64 and "
                                "aarch64")

_PROBE = PRELUDE + r"""
import resource, signal, subprocess, threading
sibling = int(sys.argv[2])
def raw(what, name, *args):
    result = libc.syscall(have[name], *[ctypes.c_long(arg) for arg in args])
    found[what] = "worked" if result >= 0 else errno.errorcode[ctypes.get_errno()]
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
attempt("prlimit64 on the sibling", lambda: resource.prlimit(sibling, resource.RLIMIT_NOFILE, (16, 16)))
attempt("setpriority on the sibling", lambda: os.setpriority(os.PRIO_PROCESS, sibling, 19))
attempt("setpriority on the sibling's group", lambda: os.setpriority(os.PRIO_PGRP, sibling, 19))
attempt("sched_setaffinity on the sibling", lambda: os.sched_setaffinity(sibling, {0}))
raw("ioprio_set on the sibling", "ioprio_set", 1, sibling, (3 << 13) | 7)  # IOPRIO_WHO_PROCESS, the idle class
attempt("kill(-1, 0)", lambda: os.kill(-1, 0))  # signal 0: asks only whether it may signal every process
attempt("prlimit64 on itself", lambda: resource.prlimit(0, resource.RLIMIT_NOFILE, (soft - 1, hard)))
attempt("setrlimit on itself", lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (soft - 2, hard)))
attempt("nice on itself", lambda: os.nice(1))
attempt("sched_setaffinity on itself", lambda: os.sched_setaffinity(0, os.sched_getaffinity(0)))
attempt("a signal to itself", lambda: os.kill(os.getpid(), 0))
attempt("a signal to its own thread", lambda: signal.pthread_kill(threading.get_ident(), 0))
attempt("a subprocess", lambda: subprocess.run([sys.executable, "-c", "pass"], check=True))
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
attempt("terminating its child", child.terminate)
child.wait()
if sys.argv[4] == "torch":
    import multiprocessing
    import torch
    torch.set_num_threads(2)
    found["torch"] = float((torch.ones(300, 300) @ torch.ones(300, 300)).sum())
    with multiprocessing.get_context("fork").Pool(2) as pool:  # its exit terminates the workers: kill by pid
        found["multiprocessing"] = pool.map(abs, [-1, -2])
print(json.dumps(found))
"""

OTHERS = ("prlimit64 on the sibling", "setpriority on the sibling", "setpriority on the sibling's group",
          "sched_setaffinity on the sibling", "ioprio_set on the sibling", "kill(-1, 0)")
ITSELF = ("prlimit64 on itself", "setrlimit on itself", "nice on itself", "sched_setaffinity on itself",
          "a signal to itself", "a signal to its own thread", "a subprocess", "terminating its child")


def _sibling_state(pid: int) -> dict:
    return {"open files": resource.prlimit(pid, resource.RLIMIT_NOFILE), "nice": os.getpriority(os.PRIO_PROCESS, pid),
            "cpus": sorted(os.sched_getaffinity(pid))}


def _probe(filtered: bool, torch: bool = False) -> tuple[dict, dict, dict]:
    """What the probe found, and the sibling's state before and after it."""
    sibling = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    try:
        before = _sibling_state(sibling.pid)
        done = subprocess.run([sys.executable, "-I", "-c", _PROBE, str(Path(confine.__file__).parent),
                               str(sibling.pid), "filter" if filtered else "none", "torch" if torch else "-"],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout), before, _sibling_state(sibling.pid)
    finally:
        sibling.kill()
        sibling.wait()


def test_a_filtered_process_cannot_change_another_process_of_its_uid_but_can_change_itself():
    # Mistakes: the allow-list that let prlimit64, setpriority and sched_setaffinity take any pid
    # (a neighbour's test process left with 16 open files, a TA's shell at nice 19), a check on the
    # low word that lets PRIO_PGRP through, ioprio_set allowed, kill(-1) allowed outside a PID
    # namespace; or a check so tight that glibc's setrlimit (prlimit64 with pid 0), os.nice, a
    # subprocess, a signal to itself or terminating its own child breaks.
    found, before, after = _probe(filtered=True)
    assert found["status"].startswith("on"), found["status"]
    got = {what: found[what] for what in OTHERS + ITSELF}
    expected = {**dict.fromkeys(OTHERS, "EPERM"), **dict.fromkeys(ITSELF, "worked")}
    assert got == expected, f"expected {expected}, got {got}"
    assert after == before, f"the sibling changed under a filtered process: before {before}, after {after}"


def test_without_the_filter_the_probe_changes_the_sibling():
    # The probe itself could be wrong (a call that fails for another reason would pass the test
    # above): unfiltered, the same calls work and the sibling's limits, nice value and CPUs change.
    found, before, after = _probe(filtered=False)
    assert {what: found[what] for what in OTHERS} == dict.fromkeys(OTHERS, "worked")
    assert after["open files"] == (16, 16) and after["nice"] == 19, after
    if len(before["cpus"]) > 1:
        assert after["cpus"] == [0], after


@pytest.mark.slow
def test_torch_and_multiprocessing_run_under_the_filter():
    # Mistake: a check that refuses what torch's threads or multiprocessing's workers do to
    # themselves (an OpenMP thread's affinity, a pool's workers terminated by pid on exit).
    found, _, _ = _probe(filtered=True, torch=True)
    assert found["torch"] == 300.0 * 300 * 300 and found["multiprocessing"] == [1, 2], found
