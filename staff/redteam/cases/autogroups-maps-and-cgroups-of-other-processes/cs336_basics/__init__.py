"""PyTorch and resource accounting: the package students complete, one module per problem."""
import os

# /proc/PID files that change another process (or its whole session) when written, which the case
# signal-and-open-other-processes does not try: opened for writing, never written.
_WRITABLE = ("autogroup", "uid_map", "gid_map", "projid_map", "setgroups", "timens_offsets", "sched", "loginuid",
             "make-it-fail", "fail-nth", "mem")
# /proc/PID files that show another process's memory, files and state, read (one byte) or listed.
# (Each needs the ptrace check; files any process may read, such as stat or mountinfo, are left out.)
_READABLE = ("maps", "smaps", "pagemap", "io", "timers", "personality", "numa_maps")
_LISTED = ("fdinfo", "map_files", "cwd", "root")
# The cgroup files that change every process of a group when written: the uid's own delegated groups
# (systemd's user@UID.service and its session scopes are the user's) reach the TA's whole session.
_CGROUP_FILES = ("cgroup.freeze", "cgroup.kill", "cgroup.procs", "cgroup.threads", "cgroup.subtree_control",
                 "memory.max", "memory.high", "cpu.max", "cpu.weight", "pids.max", "cpuset.cpus", "io.max",
                 "freezer.state", "tasks", "notify_on_release")


def _ours():
    """This process, its parent (the zygote or its init, inside the same sandbox) and their children."""
    own, parent = os.getpid(), os.getppid()
    ours = {own, parent, 0}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as handle:
                    ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid in (own, parent):
                ours.add(int(name))
    return ours


def _runs_worker(pid):
    """Whether `pid` runs the worker (its launcher and zygote: python ... code/worker.py)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return any(part.endswith(b"/worker.py") for part in handle.read().split(b"\0"))
    except OSError:
        return False


def _own_launcher():
    """The worker's own processes above this one that run worker.py (its launcher), walking up the parents;
    a batch neighbour's worker stays a target."""
    found, pid = set(), os.getppid()
    for _ in range(8):
        try:
            with open(f"/proc/{pid}/stat") as handle:
                pid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
        if pid <= 1 or not _runs_worker(pid):
            break
        found.add(pid)
    return found


def _targets():
    """Every other pid /proc shows (at most 128), and pid 1 even where /proc hides it, but the worker's own
    launcher (reaching it reaches nothing outside the grade)."""
    shown = sorted(int(name) for name in os.listdir("/proc") if name.isdigit())
    return sorted(({1, *shown[:128]}) - _ours() - _own_launcher())


def _proc_files(pid):
    reached = []
    for name in _WRITABLE:
        try:
            fd = os.open(f"/proc/{pid}/{name}", os.O_WRONLY)
        except OSError:
            continue
        os.close(fd)
        reached.append(f"/proc/{pid}/{name} for writing")
    for name in _READABLE:
        try:
            with open(f"/proc/{pid}/{name}", "rb") as handle:
                if not handle.read(1):
                    continue  # a kernel thread has no memory to show
        except OSError:
            continue
        reached.append(f"/proc/{pid}/{name}")
    for name in _LISTED:
        try:
            entries = os.listdir(f"/proc/{pid}/{name}")
        except OSError:
            continue
        if name == "fdinfo":
            for entry in entries[:8]:
                try:
                    with open(f"/proc/{pid}/fdinfo/{entry}", "rb") as handle:
                        handle.read(1)
                except OSError:
                    continue
                reached.append(f"/proc/{pid}/fdinfo/{entry}")
                break
        elif entries or name in ("cwd", "root"):
            reached.append(f"/proc/{pid}/{name} listed")
    return reached


def _cgroups():
    """Every cgroup control file under /sys/fs/cgroup (5 levels, 4,000 folders at most) that this process may
    open for writing (never written), outside the group it is in itself."""
    own = set()
    try:
        with open("/proc/self/cgroup") as handle:
            own = {line.strip().split(":", 2)[2] for line in handle if line.count(":") >= 2}
    except OSError:
        pass
    reached, pending, seen = [], [("/sys/fs/cgroup", 0)], 0
    while pending and seen < 4000:
        folder, depth = pending.pop()
        seen += 1
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        relative = folder[len("/sys/fs/cgroup"):] or "/"
        mine = any(relative.endswith(group) for group in own if group != "/")
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if depth < 5:
                        pending.append((entry.path, depth + 1))
                    continue
            except OSError:
                continue
            if mine or entry.name not in _CGROUP_FILES:
                continue
            try:
                fd = os.open(entry.path, os.O_WRONLY)
            except OSError:
                continue
            os.close(fd)
            reached.append(f"{entry.path} for writing")
    return reached


def _named(pid):
    """What `pid` runs, for the message: its command line's first two words (any process may read it)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            words = handle.read(4096).split(b"\0")[:8]
        with open(f"/proc/{pid}/stat") as handle:
            ppid = handle.read().rsplit(")", 1)[1].split()[1]
    except (OSError, IndexError):
        return "?"
    return (" ".join(os.path.basename(word).decode("utf-8", "replace")[:40] for word in words)
            + f"; parent {ppid}, this process {os.getpid()}, its parent {os.getppid()}")


def _reached():
    reached = []
    for pid in _targets():
        found = _proc_files(pid)
        if found:
            reached.append(f"pid {pid} ({_named(pid)}): {len(found)} files")
        reached += found
    return reached + _cgroups()


_found = _reached()
if _found:
    raise ImportError(f"reached other processes: {', '.join(_found[:20])}")
