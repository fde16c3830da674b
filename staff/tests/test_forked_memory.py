"""Memory a student's code holds in forked processes counts as its own when a kill for memory is
judged. Where the worker has no memory group (an ordinary user, Docker), the grade judges a kill by
the memory the zygote reports for the ended child (staff/sandbox/worker.py `_end_children`): the
serving child's peak, plus each other worker process's peak over the zygote's own. Without a PID
namespace the zygote is their subreaper, so a process that left the child's process group is still
killed and reaped there. Each test names the mistake it catches."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from staff.sandbox import confine

SANDBOX = Path(confine.__file__).resolve().parent
HELD_MIB = 100  # by each of three processes the serving child starts
CHILD_MIB = 20  # by the serving child itself

_PROBE = r"""
import json, os, resource, signal, sys, time
sys.path.insert(0, sys.argv[1])
import confine, worker
held, mine = int(sys.argv[2]), int(sys.argv[3])

def hold(mib):
    block = bytearray(mib << 20)
    for offset in range(0, len(block), 4096):
        block[offset] = 1
    return block

def hold_and_wait(mib, ready):
    kept = hold(mib)
    os.write(ready, b".")
    time.sleep(60)
    os._exit(0)

def as_the_zygote():
    # A fork of its own, as the zygote is a fork of the launcher: an exec'd process's peak RSS
    # (ru_maxrss) starts from the process that exec'd it, here the test's.
    confine.prctl(confine.PR_SET_CHILD_SUBREAPER, 1)  # as the zygote does without a PID namespace
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # the serving child: a session of its own, as the zygote's children have
        os.setsid()
        for _ in range(2):
            if os.fork() == 0:
                hold_and_wait(held, writer)
        if os.fork() == 0:  # leaves the group, then its own child is orphaned
            os.setsid()
            if os.fork() == 0:
                hold_and_wait(held, writer)
            os._exit(0)
        hold_and_wait(mine, writer)
    os.close(writer)
    arrived = 0
    while arrived < 4:
        arrived += len(os.read(reader, 4))
    time.sleep(0.2)
    code, kib = worker._end_children(child, False, baseline)
    try:
        os.wait()
        left = "a child was not reaped"
    except ChildProcessError:
        left = ""
    print(json.dumps({"code": code, "held_mib": kib / 1024, "left": left, "baseline_mib": baseline / 1024}))


zygote = os.fork()
if zygote == 0:
    as_the_zygote()
    sys.stdout.flush()
    os._exit(0)
os.waitpid(zygote, 0)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="subreapers and /proc/self/task/*/children are Linux's")
def test_memory_held_in_forked_children_counts_and_every_child_is_killed():
    # Mistakes: a kill judged by the serving child's own peak (its three children's 300 MiB unseen, so
    # a container filled by them reads as the grader's failure, "not graded", on every run); a zygote
    # that is not their subreaper, or kills only the child's process group (the process that left the
    # group lives on, holding its memory, until the worker ends).
    done = subprocess.run([sys.executable, "-I", "-c", _PROBE, str(SANDBOX), str(HELD_MIB), str(CHILD_MIB)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout)
    assert found["code"] == 128 + 9, found
    # Each process counts its peak over the zygote's (here the probe's) peak, at least HELD_MIB - baseline:
    # a fork's resident set starts below its parent's peak, so the count errs on the student's side.
    least = 3 * (HELD_MIB - found["baseline_mib"])
    assert least <= found["held_mib"] - found["baseline_mib"] <= 3 * HELD_MIB + CHILD_MIB + 3 * 64, \
        f"expected the three children to count at least {least:.0f} MiB over the baseline, got {found}"
    assert found["left"] == "", found
