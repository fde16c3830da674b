"""Reading the container's memory from its cgroup, v1 and v2, on scripted cgroup folders: Gradescope's
hosts may use either, and this machine has only v1 to try the real one on (test_gradescope_container)."""

from __future__ import annotations

from pathlib import Path

from staff.sandbox import memory


def _v1(tmp_path: Path) -> tuple[Path, Path]:
    proc = tmp_path / "cgroup"
    proc.write_text("9:pids:/\n4:memory:/docker/abc\n0::/\n")
    group = tmp_path / "fs" / "memory" / "docker" / "abc"
    group.mkdir(parents=True)
    (group / "memory.limit_in_bytes").write_text(f"{1 << 30}\n")
    (group / "memory.max_usage_in_bytes").write_text("123456\n")
    (group / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
    return proc, group


def _v2(tmp_path: Path) -> tuple[Path, Path]:
    proc = tmp_path / "cgroup"
    proc.write_text("0::/docker/abc\n")
    group = tmp_path / "fs" / "docker" / "abc"
    group.mkdir(parents=True)
    (group / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (group / "memory.max").write_text(f"{768 << 20}\n")
    (group / "memory.peak").write_text("654321\n")
    (group / "memory.events").write_text("low 0\nhigh 0\nmax 7\noom 2\noom_kill 2\n")
    return proc, group


def test_cgroup_v1_is_read(tmp_path):
    proc, group = _v1(tmp_path)
    assert memory.memory_cgroup(proc, tmp_path / "fs") == group
    assert (memory.limit_bytes(group), memory.peak_bytes(group), memory.oom_kills(group)) == (1 << 30, 123456, 3)


def test_dockers_v1_layout_is_read_through_the_mounts(tmp_path):
    # Mistake: the group looked for only at the path /proc/self/cgroup names, below the mount point. Docker
    # on cgroup v1 mounts the container's own group at the mount point itself: no limit and no kill was
    # seen there, so the kernel's kill for the container's memory read as the student's crash.
    proc, host_group = _v1(tmp_path)
    mounted = tmp_path / "fs" / "memory"
    for item in host_group.iterdir():
        item.rename(mounted / item.name)
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(f"30 25 0:26 / {tmp_path / 'fs'} ro,nosuid - tmpfs tmpfs ro,mode=755\n"
                         f"31 30 0:27 / {mounted} rw,nosuid - cgroup cgroup rw,memory\n"
                         f"32 30 0:27 /docker/abc {mounted} ro,nosuid master:9 - cgroup cgroup rw,memory\n"
                         f"33 30 0:28 /docker/abc {tmp_path / 'fs' / 'pids'} ro,nosuid - cgroup cgroup rw,pids\n")
    host_group.rmdir()
    assert memory.memory_cgroup(proc, tmp_path / "fs", mountinfo) == mounted
    assert (memory.limit_bytes(mounted), memory.oom_kills(mounted)) == (1 << 30, 3)
    assert memory.memory_cgroup(proc, tmp_path / "fs", tmp_path / "no-mountinfo") is None


def test_cgroup_v2_is_read(tmp_path):
    # Mistakes: reading v1's files only (no limit, no kills seen: the OOM killer's work then blames
    # the student), or counting "oom" (reclaim failures) as kills.
    proc, group = _v2(tmp_path)
    assert memory.memory_cgroup(proc, tmp_path / "fs") == group
    assert (memory.limit_bytes(group), memory.peak_bytes(group), memory.oom_kills(group)) == (768 << 20, 654321, 2)


def test_no_limit_reads_as_none_and_a_small_one_is_refused(tmp_path):
    proc, group = _v2(tmp_path)
    (group / "memory.max").write_text("max\n")
    assert memory.limit_bytes(group) is None and memory.too_small(None) is None
    (group / "memory.max").write_text("9223372036854771712\n")  # v1's "no limit", seen through v2 tools
    assert memory.limit_bytes(group) is None
    assert "not your fault" in memory.too_small(768 << 20)
    assert memory.too_small(memory.MIN_MEMORY_BYTES) is None


def test_a_memory_kill_is_the_students_only_when_their_code_had_grown():
    # Mistakes: blaming the student for any kill (a container too small for the grade then costs them
    # the test), or the 512 MiB share compared the wrong way; the messages name both limits.
    from staff.sandbox.failures import GraderOutOfMemory, WorkerCrashed, memory_failure

    share, machine = memory.STUDENT_MEMORY_SHARE_BYTES, 1 << 30
    small = memory_failure(share - 1, machine, 768 << 20, own_group=True)
    assert isinstance(small, GraderOutOfMemory) and "1024 MiB" in str(small) and "too small" in str(small)
    grown = memory_failure(share, machine, 768 << 20, own_group=True)
    assert isinstance(grown, WorkerCrashed) and "its limit of 768 MiB" in str(grown) and "1024 MiB" in str(grown)
    alone = memory_failure(share + (1 << 20), None, None, own_group=False)
    assert isinstance(alone, WorkerCrashed) and "grown by 513 MiB" in str(alone) and "its limit" in str(alone)
