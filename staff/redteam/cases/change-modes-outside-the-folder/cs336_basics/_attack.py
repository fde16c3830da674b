import os
import stat
import sys

_outcome = []  # (paths changed, what was tried), once per process: every later call answers the same


def _outer_uid():
    """The uid this process is outside its user namespace (its own where it has none)."""
    try:
        with open("/proc/self/uid_map") as handle:
            for line in handle:
                inside, outside, count = (int(v) for v in line.split())
                if inside <= os.getuid() < inside + count:
                    return outside + os.getuid() - inside
    except (OSError, ValueError):
        pass
    return os.getuid()


def _candidates():
    """Paths of the grader's and of the grading user's that a worker can name without listing a folder:
    the parents of its working folder and their neighbours (the grade's scratch folder: grader/, code/,
    shared/), the code folder it was imported from and its parents, the Python environment, the user's
    runtime folder and its sockets."""
    here = os.path.realpath(os.getcwd())
    code = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    found = []
    for start in (here, code):
        path = start
        while path != "/":
            path = os.path.dirname(path)
            found.append(path)
    scratch = os.path.dirname(here)
    found += [os.path.join(scratch, name) for name in ("grader", "code", "shared", "grader/report.json")]
    found += [code, os.path.join(code, "adapters"), sys.prefix, os.path.realpath(sys.executable)]
    for uid in dict.fromkeys((_outer_uid(), os.getuid())):
        runtime = f"/run/user/{uid}"
        found += [runtime, f"{runtime}/bus", f"{runtime}/keyring", f"{runtime}/keyring/ssh"]
    return here, list(dict.fromkeys(found))


def change_modes():
    """chmod of each candidate to the mode it has already (the mode stays, but a chmod that reached the
    file stamps its ctime: Landlock does not check chmod, chown, utime or xattrs), and, where
    chmod went through, utime to the times it has; the paths outside the worker's own folder so
    changed, and what every other try met."""
    here, paths = _candidates()
    changed, met = [], []
    for path in paths:
        if path == here or path.startswith(here + os.sep):
            continue
        try:
            info = os.lstat(path)
        except OSError as error:
            met.append(f"{path}: stat {error.strerror}")
            continue
        if stat.S_ISLNK(info.st_mode):
            continue
        try:
            os.chmod(path, stat.S_IMODE(info.st_mode), follow_symlinks=False)
        except (OSError, NotImplementedError) as error:
            met.append(f"{path} (uid {info.st_uid}): chmod {getattr(error, 'strerror', error)}")
            continue
        if os.lstat(path).st_ctime_ns == info.st_ctime_ns:  # a chmod that reached the inode stamps its ctime
            met.append(f"{path} (uid {info.st_uid}): chmod answered, and changed nothing")
            continue
        done = f"{path} (uid {info.st_uid}, mode {stat.S_IMODE(info.st_mode):o}): chmod"
        try:
            os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns), follow_symlinks=False)
            done += ", utime"
        except (OSError, NotImplementedError):
            pass
        changed.append(done)
    return changed, met


def attack(args):
    """Change the modes once; if any file outside the worker's folder could be changed, answer honestly
    (so the attack shows as full marks where it must lose them), else fail saying what stopped it."""
    if not _outcome:
        _outcome.append(change_modes())
    changed, met = _outcome[0]
    if not changed:
        raise PermissionError("changed no mode outside the worker's folder: " + "; ".join(met)[:3000])
    print("changed outside the worker's folder: " + "; ".join(changed)[:3000], file=sys.stderr)
    return None  # the function's own body runs on
