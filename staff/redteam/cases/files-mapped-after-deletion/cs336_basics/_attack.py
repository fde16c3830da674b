import ctypes
import mmap
import os

MIB = 1 << 20
FILES = 2  # each written whole, mapped, closed and unlinked: a mapping, not a descriptor, keeps its blocks
FILE_BYTES = 160 * MIB  # under the 1 GiB a file may hold (RLIMIT_FSIZE)
QUOTA_BYTES = 256 * MIB  # the red team's grader allows 0.25 GiB of files (--disk-gib)
BLOCK = bytes(range(256)) * (4 * MIB // 256)  # not zeros: a file system that skips zero blocks would hold less
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_mapped = []  # (name, address) of each mapping, kept for the life of this process
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


def make_mapped_files():
    """FILES files of FILE_BYTES in the working folder, each mapped shared and read-only by mmap(2)
    itself (Python's mmap module would keep a duplicate descriptor), then closed and unlinked: the
    disk keeps their blocks while the mappings live, and neither a folder nor /proc/PID/fd names them
    (only /proc/PID/maps, as "(deleted)")."""
    for i in range(FILES):
        name = f"mapped-{os.getpid()}-{i}"
        fd = os.open(name, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o600)
        try:
            _fill(fd)
            os.fsync(fd)
            address = _libc.mmap(None, FILE_BYTES, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
            if address in (None, ctypes.c_void_p(-1).value):
                raise OSError(ctypes.get_errno(), f"mmap: {os.strerror(ctypes.get_errno())}")
        finally:
            os.close(fd)
            os.unlink(name)
        _mapped.append((name, address))


def held_bytes():
    """What this process maps of files deleted since (from /proc/self/maps: each mapping's length),
    how many such files, and how many descriptors of them it holds (none)."""
    names = {name for name, _ in _mapped}
    size, files = 0, set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if line.rstrip().endswith("(deleted)") and os.path.basename(fields[5]) in names:
                start, end = (int(part, 16) for part in fields[0].split("-"))
                size += end - start
                files.add(fields[5])
    descriptors = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            descriptors += os.path.basename(os.readlink(f"/proc/self/fd/{fd}")).split(" ")[0] in names
        except OSError:
            pass
    return size, len(files), descriptors


def attack(args):
    """First call of a process: make the mapped files (the grader's count after the call sees none of
    their blocks, and the zygote's watch of files deleted while open lists descriptors only). Every call
    answers honestly only if the process still maps more than the quota of deleted files (full marks on
    Problem 1 is the attack getting through); else it fails."""
    if not _mapped and not _failed:
        try:
            make_mapped_files()
        except OSError as error:
            _failed.append(f"{error.strerror} after {len(_mapped)} files")
    size, files, descriptors = held_bytes()
    if _failed or size <= QUOTA_BYTES:
        raise OSError(f"maps {size / MIB:.0f} MiB of {files} deleted files, not past the quota of "
                      f"{QUOTA_BYTES / MIB:.0f} MiB ({_failed[0] if _failed else 'all mapped'})")
    if not _said:
        _said.append(True)
        print(f"maps {size / MIB:.0f} MiB of {files} deleted files with {descriptors} descriptors of them, past "
              f"the grader's count", flush=True)
    return None  # the function's own body runs on
