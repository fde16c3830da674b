import os
import time

ENTRIES = 24_000  # the grader's disk quota allows 20,000 entries (and 2 GiB) in the worker's folders
FOLDER = "unlisted"  # in the worker's own folder (its working directory)
MODE = 0o300  # write and search, no read: files are made and opened by name, but the folder cannot be listed
SECONDS = 7.0  # the red team's grader gives one test's calls 10 s
_made = []  # (entries made, what stopped it), once per process


def make_unlisted(entries=ENTRIES, seconds=SECONDS):
    """A folder made with mode 0300 (mkdir's own mode argument: chmod is answered as done and changes
    nothing, but the mode a folder is made with is set), and `entries` empty files in it. A grader that
    is not root (no CAP_DAC_READ_SEARCH) cannot list it, even as its owner, and its count of what the
    folders hold skips a folder it cannot list. (entries made, what stopped it)."""
    deadline = time.monotonic() + seconds
    old = os.umask(0o077)
    try:
        os.mkdir(FOLDER, MODE)
    except FileExistsError:
        pass
    finally:
        os.umask(old)
    made = 0
    for i in range(entries):
        if time.monotonic() > deadline:
            return made, "ran out of time"
        try:
            os.close(os.open(os.path.join(FOLDER, f"{i}"), os.O_CREAT | os.O_WRONLY, 0o600))
        except OSError as error:
            return made, f"open: {error.strerror} after {made} entries"
        made += 1
    return made, "made them all"


def still_there(entries=ENTRIES):
    """How many of the entries are still in the folder, found by name (the folder cannot be listed)."""
    return sum(1 for i in range(entries) if os.path.exists(os.path.join(FOLDER, f"{i}")))


def attack(args):
    """First call: make the entries, and answer honestly if all were made (if the grader's count finds
    them the call fails anyway, and the files are removed). Every later call: answer honestly only if
    every entry is still there, past the quota, after the grader counted the folders once or more (full
    marks on Problem 1 is the attack getting through); else fail saying what was left."""
    if not _made:
        _made.append(make_unlisted())
        made, stopped = _made[0]
        if made < ENTRIES:
            raise OSError(f"made only {made} of {ENTRIES} entries in a folder of mode {MODE:o} ({stopped})")
        return None
    left = still_there()
    if left < ENTRIES:
        raise OSError(f"{left} of the {ENTRIES} entries made in a folder of mode {MODE:o} are left: the grader "
                      f"counted them and removed them")
    if len(_made) == 1:  # said once per process
        _made.append("said")
        print(f"all {ENTRIES} entries of the folder of mode {MODE:o} are still there", flush=True)
    return None  # the function's own body runs on
