"""An emulation of Gradescope's container, for running the autograder as Gradescope would.

Gradescope runs `run_autograder` in a Docker container: Docker's default seccomp profile (new
namespaces and mounts refused with EPERM, `clone3` with ENOSYS), a memory limit (768 MB by default)
and a CPU quota (half a CPU by default). This module imposes the same on a command where the
machine allows it (root, a memory and a cpu cgroup controller, v1 or v2):

    with Container(memory_bytes=1 << 30, cpus=0.5) as box:
        done = box.run(["./run_autograder"], env=...)
    box.peak_bytes, box.oom_kills

What it cannot impose it says (`Container.missing`), so a test can skip that part instead of
passing it silently. It does not emulate Docker's file system (overlay), its capabilities (the
command keeps root's), its network (the machine's), its uid map, or the base image's Python.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import uuid
from pathlib import Path

from staff.sandbox import confine, memory, syscall_filter

# Namespace flags that Docker's profile refuses in clone (CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC,
# NEWUSER, NEWPID, NEWNET).
_NAMESPACE_FLAGS = 0x7E020000
_DOCKER_DENIED = {
    "x86_64": {"unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155, "open_tree": 428,
               "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
               "mount_setattr": 442},
    "aarch64": {"unshare": 97, "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41, "open_tree": 428,
                "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
                "mount_setattr": 442},
}
_CLONE, _CLONE3 = {"x86_64": 56, "aarch64": 220}, 435
_JSET_K = 0x45


def docker_seccomp_program(machine: str) -> list[tuple[int, int, int, int]]:
    """Classic BPF (code, jt, jf, k) refusing what Docker's default profile refuses a container
    without CAP_SYS_ADMIN, as far as grading meets it: namespaces and mounts (EPERM), clone with a
    namespace flag (EPERM) and clone3 (ENOSYS, so the C library falls back to clone)."""
    eperm, enosys = syscall_filter._RET_ERRNO | 1, syscall_filter._RET_ERRNO | 38
    program = [(syscall_filter._LD_W_ABS, 0, 0, 4), (syscall_filter._JEQ_K, 1, 0, syscall_filter._AUDIT_ARCH[machine]),
               (syscall_filter._RET_K, 0, 0, syscall_filter._RET_ALLOW), (syscall_filter._LD_W_ABS, 0, 0, 0)]
    for number in sorted(_DOCKER_DENIED[machine].values()):
        program += [(syscall_filter._JEQ_K, 0, 1, number), (syscall_filter._RET_K, 0, 0, eperm)]
    program += [(syscall_filter._JEQ_K, 0, 1, _CLONE3), (syscall_filter._RET_K, 0, 0, enosys),
                (syscall_filter._JEQ_K, 0, 3, _CLONE[machine]),
                (syscall_filter._LD_W_ABS, 0, 0, 16),  # clone's flags (low 32 bits)
                (_JSET_K, 0, 1, _NAMESPACE_FLAGS),
                (syscall_filter._RET_K, 0, 0, eperm),
                (syscall_filter._RET_K, 0, 0, syscall_filter._RET_ALLOW)]
    return program


def install_docker_seccomp() -> None:
    """Install `docker_seccomp_program` on this process (call it in the child before exec).

    Raises:
        OSError: the kernel refused the filter.
    """
    machine = os.uname().machine
    program = docker_seccomp_program(machine)
    filters = (syscall_filter._SockFilter * len(program))(*[syscall_filter._SockFilter(*i) for i in program])
    fprog = syscall_filter._SockFprog(len(program), filters)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(syscall_filter.PR_SET_SECCOMP, syscall_filter.SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "seccomp filter refused")


CGROUP_MOUNTS = "/sys/fs/cgroup"
_MS_RDONLY, _MS_REMOUNT = 1, 32


def _cgroups_read_only(own_groups: list[Path]) -> None:
    """In a mount namespace of this process's own, every mount at or below /sys/fs/cgroup made
    read-only (v1's tmpfs and each controller's hierarchy, or v2's one); raises OSError where it cannot.
    Each of `own_groups` (v1 groups) is first mounted over its controller's hierarchy, as Docker mounts
    a container's own group there while /proc/self/cgroup still names its path in the host's."""
    if confine.unshare(confine.CLONE_NEWNS) != confine.ON or \
            not confine._mount(None, "/", None, confine.MS_REC | confine.MS_PRIVATE):
        raise OSError(ctypes.get_errno(), "no private mount namespace for a read-only cgroup file system")
    for group in own_groups:
        hierarchy = next(parent for parent in group.parents if parent.parent == Path(CGROUP_MOUNTS))
        if not confine._mount(str(group), str(hierarchy), None, confine.MS_BIND):
            raise OSError(ctypes.get_errno(), f"cannot mount {group} over {hierarchy}")
    points = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    for point in sorted({p for p in points if p == CGROUP_MOUNTS or p.startswith(CGROUP_MOUNTS + "/")}, key=len):
        if not confine._mount(None, point, None, confine.MS_BIND | _MS_REMOUNT | _MS_RDONLY):
            raise OSError(ctypes.get_errno(), f"cannot make {point} read-only")


class Container:
    """A memory limit, a CPU quota and Docker's seccomp profile for commands run through `run`."""

    def __init__(self, memory_bytes: int | None, cpus: float | None, seccomp: bool = True,
                 read_only_cgroups: bool = False, groups_at_mount_root: bool = False) -> None:
        """`read_only_cgroups`: the command sees the cgroup file system read-only, as under Docker, where
        the grader can make no memory group of its own (off by default: the container tests measure
        what the group holds; `staff/tests/test_container_cgroups.py` what happens without it).
        `groups_at_mount_root` (with `read_only_cgroups`, cgroup v1): the container's own groups are what
        the command sees at each controller's mount point, as under Docker on cgroup v1, where the path
        /proc/self/cgroup names lies below no mount of the container's."""
        self.memory_bytes, self.cpus, self.seccomp = memory_bytes, cpus, seccomp
        self.read_only_cgroups, self.groups_at_mount_root = read_only_cgroups, groups_at_mount_root
        self.groups: list[Path] = []
        self.missing: list[str] = []
        self.memory_group: Path | None = None
        self.v2 = False

    def __enter__(self) -> Container:
        name = f"cs336-container-{uuid.uuid4().hex[:12]}"
        if self.memory_bytes is not None:
            self.memory_group = self._make(name, "memory", {"memory.limit_in_bytes": self.memory_bytes},
                                           {"memory.max": self.memory_bytes, "memory.swap.max": 0})
        if self.cpus is not None:
            period = 100_000
            quota = int(self.cpus * period)
            self._make(name, "cpu", {"cpu.cfs_period_us": period, "cpu.cfs_quota_us": quota},
                       {"cpu.max": f"{quota} {period}"})
        if self.seccomp and (sys.platform != "linux" or os.uname().machine not in _DOCKER_DENIED):
            self.missing.append(f"seccomp: no filter for {os.uname().machine}")
        return self

    def _make(self, name: str, controller: str, v1: dict, v2: dict) -> Path | None:
        found = memory.own_cgroup(controller)
        if found is not None:
            parent, self.v2 = found
            settings = v2 if self.v2 else v1
        if found is None or os.geteuid() != 0:
            self.missing.append(f"{controller}: no {controller} cgroup this process may make (root and a "
                                f"{controller} controller are needed)")
            return None
        group = parent / name
        try:
            group.mkdir()
            for key, value in settings.items():
                (group / key).write_text(str(value))
        except OSError as error:
            self.missing.append(f"{controller}: {error}")
            if group.is_dir():
                group.rmdir()
            return None
        self.groups.append(group)
        return group

    def _join(self) -> None:
        for group in self.groups:
            (group / "cgroup.procs").write_text(str(os.getpid()))
        if self.read_only_cgroups:
            _cgroups_read_only([] if self.v2 or not self.groups_at_mount_root else self.groups)
        if self.seccomp and not any(m.startswith("seccomp") for m in self.missing):
            install_docker_seccomp()

    def run(self, command: list[str], **kwargs) -> subprocess.CompletedProcess:
        """Run `command` inside the container (subprocess.run's keyword arguments)."""
        return subprocess.run(command, preexec_fn=self._join, **kwargs)  # noqa: PLW1509 - single-threaded caller

    @property
    def peak_bytes(self) -> int | None:
        """The memory group's peak usage, bytes (page cache included, as the limit counts it)."""
        if self.memory_group is None:
            return None
        name = "memory.peak" if self.v2 else "memory.max_usage_in_bytes"
        path = self.memory_group / name
        return int(path.read_text()) if path.exists() else None

    @property
    def oom_kills(self) -> int:
        """How many processes the kernel killed for the group's memory limit."""
        return memory.oom_kills(self.memory_group) if self.memory_group is not None else 0

    def __exit__(self, *exc) -> None:
        for group in reversed(self.groups):
            try:
                group.rmdir()
            except OSError:
                pass

