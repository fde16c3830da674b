"""The worker's Landlock rules for what it writes: it may read and change files in its folders, and
load a library from them, but never run one as a program. A program the worker may run but not read
(made with mode 0o100 in its own folder) leaves the process not dumpable, and then its /proc/PID/fd
and maps are closed to the zygote that counts the deleted files and pipes it holds: a copy of
/bin/sleep so made held 600 MiB of deleted files, and another 1,488 pipes, unseen."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys

import pytest

from staff.sandbox import landlock_rules
from staff.tests.processes import in_a_child


def _loaded_library(name: str) -> str | None:
    """The path of a shared library this process has loaded whose file name starts with `name`."""
    with open("/proc/self/maps") as handle:
        for line in handle:
            path = line.split()[-1]
            if os.path.basename(path).startswith(name) and os.path.isfile(path):
                return path
    return None


def _tried_under_landlock(folder: str) -> dict:
    """In a forked child under the worker's kind of rules (the system read-only, `folder` writable):
    running /bin/true, running a copy of it in `folder`, loading a copy of libm from `folder`."""
    def look() -> dict:
        library = _loaded_library("libm.so") or _loaded_library("libc.so")  # /proc is closed below
        found = {"status": landlock_rules.landlock(["/usr", "/bin", "/lib", "/lib64", "/etc", sys.prefix],
                                                   [folder], [])["files"]}
        copy = os.path.join(folder, "true")
        shutil.copyfile(shutil.which("true") or "/bin/true", copy)
        os.chmod(copy, 0o700)
        for key, program in (("system", shutil.which("true") or "/bin/true"), ("own", copy)):
            try:
                found[key] = subprocess.run([program], check=False).returncode
            except OSError as error:
                found[key] = error.strerror
        if library is not None:
            shutil.copyfile(library, os.path.join(folder, "lib.so"))
            try:
                ctypes.CDLL(os.path.join(folder, "lib.so"))
                found["dlopen"] = "loaded"
            except OSError as error:
                found["dlopen"] = str(error)
        return found

    return in_a_child(look)


@pytest.mark.skipif(landlock_rules.landlock_abi() < 1, reason="needs Landlock")
def test_the_worker_runs_nothing_it_wrote_and_still_loads_libraries_from_its_folder(tmp_path):
    # Mistakes caught: the writable folders given every right, execute included (the unreadable copy of
    # /bin/sleep ran and hid what it held); or execute taken from the system's programs too, or a rule
    # that also stops a library in the folder from loading (torch's compiled kernels are loaded so).
    tmp_path.chmod(0o755)
    found = _tried_under_landlock(str(tmp_path))
    assert found.get("status", "").startswith("on"), found
    assert found["system"] == 0, found
    assert found["own"] == "Permission denied", found
    assert found.get("dlopen") == "loaded", found
