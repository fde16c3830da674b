"""Memory outside the process, piece by piece and without grading anything: the worker's
filter refuses memfd_create; the worker makes itself the kernel's first choice when memory runs out,
for good; a memory cgroup of its own counts a memfd's pages (in no RSS, outside RLIMIT_AS) and the
kernel kills the worker there; workers graded at once share the room; a batch grades again what
ended "not graded". Each test names the mistake it catches."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from staff import samples
from staff.course.batch import grade_batch
from staff.course.folder import finished
from staff.grading.grade import Grade
from staff.grading.outcomes import Outcome
from staff.sandbox import memory, memory_group, syscall_filter
from staff.tests.filter_probe import ON_A_FILTERED_MACHINE, SECCOMP_MACHINES, verdict_of
from tests.grading import PASSED, GradedTest

SANDBOX = Path(syscall_filter.__file__).resolve().parent
AS_ROOT_WITH_CGROUPS = os.geteuid() == 0 and memory.own_cgroup("memory") is not None


@pytest.mark.parametrize("machine", SECCOMP_MACHINES)
def test_the_filter_refuses_memfd_create_on_both_architectures(machine):
    # Mistake: memfd left open (on the belief that "torch uses memfd"; it does not) or given
    # x86_64's number on aarch64.
    program, arch = syscall_filter.seccomp_program(machine), syscall_filter._AUDIT_ARCH[machine]
    number = {"x86_64": 319, "aarch64": 279}[machine]
    assert verdict_of(program, arch, number) == 0x50000 | 1


@pytest.mark.skipif(not ON_A_FILTERED_MACHINE, reason="the filter is written for Linux on x86_64 and aarch64")
def test_a_filtered_process_cannot_make_a_memfd():
    probe = ("import json, os, sys; sys.path.insert(0, sys.argv[1]); import syscall_filter\n"
             "status = syscall_filter.deny_syscalls()\n"
             "try:\n    os.memfd_create('x'); got = 'made'\nexcept OSError as error:\n    got = error.errno\n"
             "print(json.dumps([status, got]))")
    done = subprocess.run([sys.executable, "-c", probe, str(SANDBOX)], capture_output=True, text=True, check=True)
    status, got = json.loads(done.stdout)
    assert status.startswith("on") and "memfd" in status and got == 1  # EPERM


def _has_capability(number: int) -> bool:
    status = Path("/proc/self/status").read_text()
    return bool(int(status.split("CapEff:")[1].split()[0], 16) >> number & 1)


CAP_SYS_RESOURCE = 24


@pytest.mark.skipif(sys.platform != "linux", reason="oom_score_adj is Linux's")
def test_the_worker_and_what_it_starts_are_killed_first():
    # Mistakes: a value short of the maximum (the kernel then weighs the worker's RSS against the test
    # process's, and a memfd holds none), or the legacy /proc/self/oom_adj, which sets no floor.
    probe = ("import os, subprocess, sys; sys.path.insert(0, sys.argv[1])\n"
             "import confine, user_limits\n"
             "status = user_limits.killed_first()\n"
             "child = subprocess.run(['cat', '/proc/self/oom_score_adj'], capture_output=True, text=True).stdout\n"
             "lowered = 'kept'\n"
             "if os.geteuid() == 0:\n"
             "    os.setresgid(65534, 65534, 65534); os.setresuid(65534, 65534, 65534)\n"
             "    confine.set_dumpable(True)\n"  # its /proc files its own again, as a serving child's are
             "    try:\n        with open('/proc/self/oom_score_adj', 'w') as handle:\n            handle.write('0')\n"
             "        lowered = 'lowered'\n    except OSError as error:\n        lowered = error.strerror\n"
             "print(status, child.strip(), lowered)")
    done = subprocess.run([sys.executable, "-c", probe, str(SANDBOX)], capture_output=True, text=True, check=True)
    status, inherited, lowered = done.stdout.split(maxsplit=2)
    assert (status, inherited) == ("on", "1000")
    if os.geteuid() == 0 and _has_capability(CAP_SYS_RESOURCE):  # set by root so, the kernel keeps it as a floor
        assert lowered.strip() != "lowered"


@pytest.mark.skipif(not AS_ROOT_WITH_CGROUPS, reason="making a memory cgroup needs root and a memory controller")
def test_a_worker_group_counts_a_memfd_and_the_kernel_kills_there():
    # Mistakes: a limit written under v2's name on v1 (or not at all: nothing is killed, the memfd
    # fills the machine), a group the process never joins, a group left behind.
    group, status = memory_group.make(96 << 20)
    assert group is not None, status
    try:
        filler = ("import os, sys; sys.path.insert(0, sys.argv[1]); import user_limits\n"
                  "assert user_limits.join_memory_group(sys.argv[2]) == 'on'\n"
                  "fd = os.memfd_create('ballast'); block = b'x' * (1 << 20)\n"
                  "for _ in range(256):\n    os.write(fd, block)\n"
                  "print('held 256 MiB')")
        done = subprocess.run([sys.executable, "-c", filler, str(SANDBOX), str(group)], capture_output=True, text=True)
        assert done.returncode == -9 and "held" not in done.stdout, (done.returncode, done.stdout, done.stderr[-500:])
        assert memory.oom_kills(group) >= 1
        assert (memory.peak_bytes(group) or 0) >= 64 << 20  # the memfd's pages were charged to the worker's group
        assert memory.limit_bytes(group) == 96 << 20
    finally:
        assert memory_group.remove(group)
    assert not group.exists()


def test_workers_graded_at_once_share_the_room():
    # Mistake: each worker limited to the whole setting (8 GiB) in a 4 GiB container with -j 2: the
    # two together pass the container's limit, and the kernel kills whichever worker holds most RSS,
    # an honest neighbour rather than the memfd that holds none.
    gib = 1 << 30
    assert memory_group.worker_limit(8 * gib, 2, 4 * gib) == 2 * gib - memory_group.GRADER_BYTES
    assert memory_group.worker_limit(8 * gib, 1, 64 * gib) == 8 * gib
    assert memory_group.worker_limit(None, 1, 4 * gib) == 4 * gib - memory_group.GRADER_BYTES
    assert memory_group.worker_limit(None, 1, None) is None
    assert memory_group.worker_limit(8 * gib, 8, 2 * gib) == memory_group.LEAST_WORKER_BYTES


def test_a_grade_that_ended_not_graded_is_graded_again_by_the_next_run(tmp_path):
    # Mistake: a results file counted as finished whatever its outcome: a neighbour whose
    # grade ended "not graded: out of memory" kept 0 in grades.csv however often the batch ran.
    folder, out = tmp_path / "submissions", tmp_path / "grades"
    samples.stubs(folder / "honest")
    samples.stubs(folder / "steady")
    answers = {"honest": [Outcome.OUT_OF_MEMORY, Outcome.GRADED], "steady": [Outcome.GRADED]}
    calls = []

    def grader(path: Path) -> Grade:
        calls.append(path.name)
        outcome = answers[path.name].pop(0)
        test = GradedTest(nodeid="tests/test_01_dtype_memory.py::test_x", name="test_x", number="1.1", problem=1,
                          points=1.0, needs_cuda=False, status=PASSED)
        details = {"what": "the test process was killed", "memory_limit_bytes": None} \
            if outcome is Outcome.OUT_OF_MEMORY else {}
        return Grade(tests=[] if outcome.grader_failure else [test], output=outcome.summary(details), seconds=1.0,
                     outcome=outcome, details=details)

    grade_batch(folder, out, grader, jobs=1, progress=False)
    assert not finished(out / "honest") and finished(out / "steady")
    rows = {row["submission"]: row for row in csv.DictReader((out / "grades.csv").open())}
    assert (rows["honest"]["status"], rows["honest"]["total"]) == ("not graded", "")  # shown, not hidden or 0
    assert "not graded" in rows["honest"]["error"]
    grade_batch(folder, out, grader, jobs=1, progress=False)
    assert calls == ["honest", "steady", "honest"]  # the graded one is not graded again
    rows = {row["submission"]: row for row in csv.DictReader((out / "grades.csv").open())}
    assert rows["honest"]["total"] == "1" and rows["honest"]["error"] == ""


@pytest.mark.skipif(not AS_ROOT_WITH_CGROUPS, reason="making a memory cgroup needs root and a memory controller")
def test_the_groups_of_a_killed_test_process_are_removed_by_the_grader():
    # Mistake: leaving it to the test process, which a run's time limit kills with SIGKILL: every such
    # grade left a group behind in the grader's cgroup.
    parent = memory.own_cgroup("memory")[0]
    mine, other = parent / f"{memory_group.PREFIX}999999999-abc", parent / f"{memory_group.PREFIX}9999999990-abc"
    mine.mkdir()
    other.mkdir()
    try:
        assert memory_group.remove_left_by(999999999) == [] and not mine.exists() and other.exists()
    finally:
        memory_group.remove(mine)
        memory_group.remove(other)
