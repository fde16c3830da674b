"""Whether a worker can take back its `oom_score_adj` of 1000 (the kernel's first choice when memory
runs out). The kernel's rule (fs/proc/base.c, __set_oom_adj): any process may raise its own value, but
one written by a process holding CAP_SYS_RESOURCE becomes a floor that only CAP_SYS_RESOURCE may go
below. This machine's root, like Docker's, lacks that capability, so the 1000 the launcher writes is no
floor: a serving child (another uid, dumpable, so its /proc files are its own) writes 0 back, unless
Landlock keeps it from writing /proc, as the worker's rules do. Each test names the mistake it catches."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from staff.sandbox import confine, landlock_rules
from staff.tests.test_memory_outside_rss import CAP_SYS_RESOURCE, _has_capability

SANDBOX = Path(confine.__file__).resolve().parent
_PROBE = r"""
import os, sys
sys.path.insert(0, sys.argv[1])
import confine, landlock_rules, user_limits
print(user_limits.killed_first())
os.setresgid(65534, 65534, 65534)
os.setresuid(65534, 65534, 65534)
confine.set_dumpable(True)  # as the worker's serving child is: its /proc entries its own
if sys.argv[2] == "landlock":  # the worker's kind of rules: read the environment and libraries, write a folder
    reading = [sys.prefix, sys.base_prefix, "/usr", "/lib", "/lib64", "/etc"]
    print(landlock_rules.landlock(reading, [sys.argv[3]], [])["files"])
else:
    print("no landlock")
try:
    with open("/proc/self/oom_score_adj", "w") as handle:
        handle.write("0")
    print("lowered")
except OSError as error:
    print(error.strerror)
"""


def _lower(landlock: bool) -> list[str]:
    with tempfile.TemporaryDirectory() as folder:
        os.chmod(folder, 0o777)
        done = subprocess.run([sys.executable, "-I", "-c", _PROBE, str(SANDBOX), "landlock" if landlock else "none",
                               folder], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split("\n")[:3]


@pytest.mark.skipif(sys.platform != "linux" or os.geteuid() != 0, reason="dropping to another uid needs root")
def test_without_cap_sys_resource_a_worker_lowers_its_oom_score_adj_unless_landlock_stops_it():
    # What docs/sandbox.md says of oom_score_adj, measured: the floor holds exactly where root holds
    # CAP_SYS_RESOURCE. Without Landlock here, "lowered" (the kernel's rule, not a mistake of ours).
    status, _, lowered = _lower(landlock=False)
    assert status == confine.ON
    assert lowered == ("Permission denied" if _has_capability(CAP_SYS_RESOURCE) else "lowered"), lowered


@pytest.mark.skipif(sys.platform != "linux" or os.geteuid() != 0, reason="dropping to another uid needs root")
@pytest.mark.skipif(landlock_rules.landlock_abi() == 0, reason="Landlock is not available here")
def test_landlock_keeps_the_worker_from_writing_its_oom_score_adj_back():
    # Mistake: Landlock rules that give the worker /proc (or /) to write, or that do not handle writing
    # files at all: without CAP_SYS_RESOURCE nothing else keeps the worker at 1000.
    status, restricted, lowered = _lower(landlock=True)
    assert status == confine.ON and restricted.startswith(confine.ON), restricted
    assert lowered == "Permission denied", f"expected the write refused, got {lowered!r}"
