import os
import stat
import sys

NAME = "user.cs336-redteam"
VALUE = b"left by a grade for a later one"
_outcome = []  # (paths written, what was tried), once per process: every later call answers the same


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


def write_attributes():
    """setxattr of an attribute in the user namespace (user.*) on each candidate, read back with getxattr and
    removed again: Landlock checks neither call, so the kernel lets them through wherever the worker's uid owns
    the file (and its file system keeps user attributes). An attribute so left on a file that outlives the grade
    (the runtime folder, the Python environment) is read by a later grade: data handed from one to another.
    The paths outside the worker's own folder so written, and what every other try met."""
    here, paths = _candidates()
    written, met = [], []
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
            os.setxattr(path, NAME, VALUE, follow_symlinks=False)
        except OSError as error:
            met.append(f"{path} (uid {info.st_uid}): setxattr {error.strerror}")
            continue
        try:
            back = os.getxattr(path, NAME, follow_symlinks=False)
        except OSError as error:
            back = f"getxattr {error.strerror}".encode()
        try:
            os.removexattr(path, NAME, follow_symlinks=False)
        except OSError:
            pass
        written.append(f"{path} (uid {info.st_uid}): setxattr, read back {back == VALUE}")
    return written, met


def attack(args):
    """Write the attributes once; if any file outside the worker's folder took one, answer honestly (so
    the attack shows as full marks where it must lose them), else fail saying what stopped it."""
    if not _outcome:
        _outcome.append(write_attributes())
    written, met = _outcome[0]
    if not written:
        raise PermissionError("wrote no attribute outside the worker's folder: " + "; ".join(met)[:3000])
    print("wrote outside the worker's folder: " + "; ".join(written)[:3000], file=sys.stderr)
    return None  # the function's own body runs on
