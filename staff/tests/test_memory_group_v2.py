"""The worker's memory group on cgroup v2, which this repository's machine (cgroup v1, its memory
controller bound there) cannot give: what `memory_group` writes and how the grader reads a kill, against
a scratch folder laid out as cgroup2 lays out a group (the control files a kernel makes in a new
folder), and, as root, against a real cgroup2 hierarchy mounted here, which has no memory controller.
What this does not cover is in docs/sandbox.md ("Memory, where no group can be made"). Each test names the
mistake it catches."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from staff.sandbox import confine, memory, memory_group, user_limits

EVENTS = "low 0\nhigh 0\nmax 7\noom 3\noom_kill 2\noom_group_kill 1\n"


def _v2_group(folder: Path, controllers: str = "cpu io memory pids", swap: bool = True) -> Path:
    """`folder` holding what the kernel puts in a new cgroup2 folder whose parent delegates `controllers`."""
    folder.mkdir(parents=True)
    files = {"cgroup.controllers": controllers, "cgroup.subtree_control": "", "cgroup.procs": "", "cgroup.kill": "",
             "cgroup.events": "populated 0\nfrozen 0\n", "memory.max": "max", "memory.high": "max",
             "memory.current": "0", "memory.peak": "0", "memory.oom.group": "0",
             "memory.events": EVENTS.replace("7", "0").replace("3", "0").replace("2", "0").replace("1", "0")}
    if swap:
        files["memory.swap.max"] = "max"
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def test_a_v2_group_gets_its_limit_no_swap_and_one_kill_for_the_whole_group(tmp_path):
    # Mistakes: v1's file names on v2 (memory.limit_in_bytes is not there: no limit at all), swap left
    # at "max" (the worker's memory goes to swap past the limit), memory.oom.group left 0 (the kernel
    # kills one process of the worker and leaves the rest holding the memory).
    group = _v2_group(tmp_path / "cs336-worker-1")
    assert memory_group.configure(group, True, 3 << 30) is None
    written = {name: (group / name).read_text() for name in ("memory.max", "memory.swap.max", "memory.oom.group")}
    assert written == {"memory.max": str(3 << 30), "memory.swap.max": "0", "memory.oom.group": "1"}
    assert not (group / "memory.limit_in_bytes").exists()
    counted_only = _v2_group(tmp_path / "cs336-worker-2")
    assert memory_group.configure(counted_only, True, None) is None
    assert (counted_only / "memory.max").read_text() == "max"


def test_a_kernel_without_swap_accounting_still_gets_a_group(tmp_path):
    # Mistake: writing memory.swap.max whether or not the kernel offers it: a cgroup file system refuses
    # to create a file, so on a kernel without swap accounting no group would be made at all (here, in
    # a scratch folder, the write would create the file instead, which the test sees).
    group = _v2_group(tmp_path / "cs336-worker-1", swap=False)
    assert memory_group.configure(group, True, 1 << 30) is None
    assert not (group / "memory.swap.max").exists()
    assert (group / "memory.max").read_text() == str(1 << 30)


def test_without_the_memory_controller_delegated_no_group_is_made_and_none_is_left(tmp_path):
    # Mistakes: writing memory.max into a group whose parent did not delegate the controller (on v2 the
    # file is not there: the grader would claim a limit it does not have), or leaving the folder behind.
    group = _v2_group(tmp_path / "cs336-worker-1", controllers="cpu pids")
    assert memory_group.configure(group, True, 1 << 30) == \
        "the memory controller is not delegated below the grader's cgroup"
    assert (group / "memory.max").read_text() == "max"
    if os.geteuid() == 0:  # make() itself, on a parent whose new folders hold nothing (no cgroup.controllers)
        parent = tmp_path / "parent"
        parent.mkdir()
        made, status = memory_group.make(1 << 30, found=(parent, True))
        assert made is None and status.startswith("off: ") and list(parent.iterdir()) == []


def test_the_grader_reads_a_v2_groups_kills_peak_use_and_limit(tmp_path):
    # Mistakes: counting "oom" (times the limit was hit, 3 here) or "max" as kills instead of "oom_kill"
    # (2), reading v1's memory.max_usage_in_bytes only (no peak on v2), "max" read as a number.
    group = _v2_group(tmp_path / "cs336-worker-1")
    (group / "memory.events").write_text(EVENTS)
    (group / "memory.peak").write_text(f"{700 << 20}\n")
    (group / "memory.current").write_text(f"{300 << 20}\n")
    assert memory.oom_kills(group) == 2
    assert memory.peak_bytes(group) == 700 << 20
    assert memory_group.usage_bytes(group) == 300 << 20
    assert memory.limit_bytes(group) is None
    (group / "memory.max").write_text(f"{2 << 30}\n")
    assert memory.limit_bytes(group) == 2 << 30


def test_the_worker_joins_a_v2_group_through_cgroup_procs(tmp_path):
    # Mistake: writing the pid to v1's "tasks" or v2's "cgroup.threads" (one thread moves, not the process).
    group = _v2_group(tmp_path / "cs336-worker-1")
    assert user_limits.join_memory_group(str(group)) == confine.ON
    assert (group / "cgroup.procs").read_text() == str(os.getpid())
    assert user_limits.join_memory_group(None).startswith("off: ")


def test_this_process_finds_its_v2_group_only_where_it_has_the_memory_controller(tmp_path):
    proc = tmp_path / "cgroup"
    proc.write_text("0::/grading.slice/job\n")
    _v2_group(tmp_path / "root" / "grading.slice" / "job")
    assert memory.own_cgroup("memory", proc, tmp_path / "root") == (tmp_path / "root" / "grading.slice" / "job", True)
    (tmp_path / "root" / "grading.slice" / "job" / "cgroup.controllers").write_text("cpu pids")
    assert memory.own_cgroup("memory", proc, tmp_path / "root") is None


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a cgroup2 hierarchy needs root")
def test_on_a_real_cgroup2_hierarchy_without_memory_the_grader_says_so_and_leaves_nothing():
    # A real cgroup2 hierarchy, mounted here: on a host whose memory controller is bound to v1 it offers
    # none. Mistakes: a group made and claimed "on" without the controller, or its folder left behind.
    with tempfile.TemporaryDirectory(prefix="cs336-cgroup2-") as mount_point:
        mounted = subprocess.run(["mount", "-t", "cgroup2", "none", mount_point], capture_output=True, text=True)
        if mounted.returncode != 0:
            pytest.skip(f"cannot mount cgroup2 here: {mounted.stderr.strip()}")
        try:
            root = Path(mount_point)
            if "memory" in (root / "cgroup.controllers").read_text().split():
                pytest.skip("this host's cgroup2 has the memory controller (a v2 host): covered by the grades")
            made, status = memory_group.make(1 << 30, found=(root, True))
            assert (made, status) == (None, "off: the memory controller is not delegated below the grader's cgroup")
            assert not list(root.glob(f"{memory_group.PREFIX}*"))
        finally:
            subprocess.run(["umount", mount_point], check=False)
