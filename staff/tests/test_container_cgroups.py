"""The container emulation can show the cgroup file system read-only, as Docker does: the grader
inside then makes no memory group and says why; and, as Docker on cgroup v1 does, the container's own
group at the controller's mount point: the grader still reads its limit and kills, so the container's
shortage counts no test. Each test names the mistake it catches."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from staff.gradescope.container import Container
from staff.sandbox import memory

REPO = Path(__file__).resolve().parents[2]
PROBE = ("from staff.sandbox import memory_group; group, status = memory_group.make(1 << 30); print(status)\n"
         "if group is not None: memory_group.remove(group)")
CAN_MAKE_GROUPS = os.geteuid() == 0 and memory.own_cgroup("memory") is not None


def _status(read_only: bool) -> str:
    with Container(memory_bytes=None, cpus=None, seccomp=True, read_only_cgroups=read_only) as box:
        done = box.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


@pytest.mark.skipif(not CAN_MAKE_GROUPS, reason="making a memory cgroup needs root and a memory controller")
def test_inside_a_container_with_read_only_cgroups_no_worker_group_is_made():
    # Mistakes: remounting only /sys/fs/cgroup's tmpfs (v1's controllers are mounts of their own, still
    # writable below it), or remounting the host's mounts (the next test would see them read-only).
    assert _status(read_only=True) == "off: cannot make a cgroup in " \
        f"{(memory.own_cgroup('memory')[0].name or '/')} (Read-only file system)"
    assert _status(read_only=False) == "on"  # the host's cgroup file system is untouched


# A submission's code that fills the container, seen as Docker shows it on cgroup v1 (its own group at the
# memory controller's mount point), to just past its limit with less than the 512 MiB that would make it the
# student's doing: what a container too small for an honest grade looks like where the worker has no group.
_SQUEEZE = """
def _squeeze():
    folder = "/sys/fs/cgroup/memory/"
    limit = int(open(folder + "memory.limit_in_bytes").read())
    stat = dict(line.split() for line in open(folder + "memory.stat").read().splitlines())
    held = int(stat["total_rss"]) + int(stat["total_shmem"])  # what the kernel cannot reclaim: no swap here
    return b"\\x01" * min(limit - held + (48 << 20), 496 << 20)  # under the 512 MiB that is the student's doing
"""


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.skipif(not CAN_MAKE_GROUPS or memory.own_cgroup("memory")[1],
                    reason="Docker's cgroup v1 layout needs root and a v1 memory controller")
@pytest.mark.parametrize("where", ["import", "call"])
def test_under_dockers_v1_layout_the_containers_shortage_counts_nothing(tmp_path, where):
    # Mistake: the container's group looked for at the path /proc/self/cgroup names, below the mount point,
    # where Docker on cgroup v1 mounts the group itself at the mount point: no limit and no kill was seen, so
    # the kernel's kill for the container's memory read as the student's crash (an honest reference: "could
    # not be loaded", 0 points, at import; a test counted as failed in a call).
    from staff.tests.test_gradescope_container import SQUEEZED_AT, graded_in_container, squeezed_reference

    package = squeezed_reference(tmp_path, where, _SQUEEZE)
    results, kills = graded_in_container(tmp_path, package, SQUEEZED_AT, read_only_cgroups=True,
                                         groups_at_mount_root=True)
    assert kills >= 1, f"nothing was killed at {SQUEEZED_AT >> 20} MiB: {results['output'][:500]}"
    # Which process the kernel kills depends on each one's memory at that moment: where the kill spared every
    # process that decides a score (the import check's child, say), the honest reference keeps every point.
    if results["extra_data"]["outcome"] == "graded":
        assert results["score"] == results["max_score"] > 0, results["output"][:1500]
        return
    assert results["extra_data"]["outcome"] == "out_of_memory", (results["extra_data"], results["output"][:1500])
    assert results["tests"] == [] and results["score"] == 0
    assert "not your fault" in results["output"] and "no test was counted" in results["output"]
