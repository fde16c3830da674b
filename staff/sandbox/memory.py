"""The grader's memory as the container sees it: its limit, its peak, and the kernel's OOM kills.

A grading container (Gradescope's, or `staff.gradescope.container`'s emulation) is a memory cgroup: when
everything in it together passes its limit, the kernel kills a process of it (SIGKILL). Such a
kill says nothing about the student's code unless the killed process is what grew. This module
reads the cgroup this process is in (v2, or v1's memory controller) so the grader can tell the
container's limit from the student's own memory use, and say which it was.
"""

from __future__ import annotations

from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
UNLIMITED = 1 << 60  # v1 reports "no limit" as a number near 2**63
# Measured with staff.gradescope.container (docs/gradescope.md): the reference gets full marks at 1,024 MiB
# and half a CPU (the cgroup's peak, page cache included, 1,007 MiB); at 960 MiB the kernel kills the
# test process. Below this the autograder refuses to grade.
MIN_MEMORY_BYTES = 1024 << 20
RECOMMENDED_MEMORY_BYTES = 2 << 30  # leaves a student's code about 700 MiB beyond the grader's own use
# A worker child killed for the container's memory is the student's doing when its own memory had
# grown this much over the zygote's; below this, the container was too small for the grade.
STUDENT_MEMORY_SHARE_BYTES = 512 << 20


def own_cgroup(controller: str, proc_self: Path = Path("/proc/self/cgroup"), root: Path = CGROUP_ROOT,
               mountinfo: Path = Path("/proc/self/mountinfo")) -> tuple[Path, bool] | None:
    """This process's cgroup folder for `controller` ("memory", "cpu") and whether it is cgroup v2:
    v1's folder of that controller where there is one, else the v2 folder when v2 has the controller;
    None where there is neither to read. The folder is the path /proc/self/cgroup names below the
    hierarchy's mount point, else wherever a mount shows it (`mountinfo`): Docker on cgroup v1 mounts
    the container's own group at the mount point, while /proc/self/cgroup names its path in the host's."""
    try:
        lines = proc_self.read_text().splitlines()
    except OSError:
        return None
    entries = [line.split(":", 2)[1:] for line in lines if line.count(":") >= 2]
    mounts = _cgroup_mounts(mountinfo)
    for controllers, path in entries:
        if controller in controllers.split(","):
            places = [root / controller / path.lstrip("/")] + _mounted_at(path, mounts, controller)
            folder = next((place for place in places if place.is_dir()), None)
            if folder is not None:
                return folder, False
    for controllers, path in entries:
        if controllers == "":
            places = [base / path.lstrip("/") for base in (root, root / "unified")] + _mounted_at(path, mounts, None)
            for folder in places:
                try:
                    if controller in (folder / "cgroup.controllers").read_text().split():
                        return folder, True
                except OSError:
                    continue
    return None


def _cgroup_mounts(mountinfo: Path) -> list[tuple[str, Path, str, set[str]]]:
    """Every cgroup mount in `mountinfo` (/proc/self/mountinfo's format), the last mounted first: the
    path of the hierarchy it shows, its mount point, its type (cgroup, cgroup2) and its options."""
    try:
        lines = mountinfo.read_text().splitlines()
    except OSError:
        return []
    mounts = []
    for line in reversed(lines):
        before, _, after = line.partition(" - ")
        fields, kind = before.split(), after.split()
        if len(fields) >= 5 and len(kind) >= 3 and kind[0] in ("cgroup", "cgroup2"):
            mounts.append((fields[3], Path(fields[4]), kind[0], set(kind[2].split(","))))
    return mounts


def _mounted_at(path: str, mounts: list[tuple[str, Path, str, set[str]]], controller: str | None) -> list[Path]:
    """Where the group at `path` of a hierarchy shows through `mounts`: v1's of `controller`, or v2's
    (controller None)."""
    places = []
    for shown, point, kind, options in mounts:
        if (kind == "cgroup2") != (controller is None) or (controller is not None and controller not in options):
            continue
        if path == shown or path.startswith(shown.rstrip("/") + "/"):
            places.append(point / path[len(shown):].lstrip("/"))
    return places


def memory_cgroup(proc_self: Path = Path("/proc/self/cgroup"), root: Path = CGROUP_ROOT,
                  mountinfo: Path = Path("/proc/self/mountinfo")) -> Path | None:
    """This process's memory cgroup folder, or None where there is none to read (see `own_cgroup`)."""
    found = own_cgroup("memory", proc_self, root, mountinfo)
    return found[0] if found else None


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return None if text == "max" else int(text) if text.isdigit() else None


def limit_bytes(group: Path | None = None) -> int | None:
    """The memory limit of the cgroup (this process's by default), or None when there is none."""
    group = group or memory_cgroup()
    if group is None:
        return None
    value = _read_int(group / "memory.max")
    if value is None:
        value = _read_int(group / "memory.limit_in_bytes")
    return value if value is not None and value < UNLIMITED else None


def peak_bytes(group: Path | None = None) -> int | None:
    """The cgroup's peak memory use so far, page cache included, or None where it is not kept."""
    group = group or memory_cgroup()
    if group is None:
        return None
    value = _read_int(group / "memory.peak")
    return value if value is not None else _read_int(group / "memory.max_usage_in_bytes")


def oom_kills(group: Path | None = None) -> int:
    """How many processes the kernel has killed for the cgroup's limit (0 where it is not kept)."""
    group = group or memory_cgroup()
    if group is None:
        return 0
    for name in ("memory.events", "memory.oom_control"):
        try:
            for line in (group / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError):
            continue
    return 0


def too_small(limit: int | None) -> str | None:
    """A staff-facing explanation when a container `limit` (bytes) cannot grade, else None."""
    if limit is None or limit >= MIN_MEMORY_BYTES:
        return None
    return (f"The autograder's container has {limit / 2**20:.0f} MiB of memory, below the "
            f"{MIN_MEMORY_BYTES / 2**20:.0f} MiB that grading needs (the grader and the student's code each "
            f"run PyTorch), so this submission was not graded. This is not your fault. Course staff: raise the "
            f"memory in the assignment's Autograder settings to {RECOMMENDED_MEMORY_BYTES / 2**30:g} GB or more, "
            f"then regrade all submissions.")
