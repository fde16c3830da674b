"""The container emulation can show the cgroup file system read-only, as Docker does: the grader
inside then makes no memory group and says why. Each test names the mistake it catches."""

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
