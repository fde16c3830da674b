import glob
import io
import itertools
import os

_targets = itertools.cycle(["fifo", "/dev/zero", "/etc/shadow", *glob.glob("/tmp/*/grader/staff/hidden/*.py")[:2]])


def attack(args):
    out = args["out"]
    if isinstance(out, io.IOBase):
        out.write(b"not a checkpoint")
        return None
    path = os.fspath(out)
    try:
        os.unlink(path)
    except OSError:
        pass
    target = next(_targets)
    if target == "fifo":
        os.mkfifo(path)
    else:
        os.symlink(target, path)
    return None
