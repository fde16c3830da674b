import os

MIB = 1 << 20
NAME = "large.bin"  # the sparse token file the page-cache tests (public and hidden) write and then measure
SMALLEST = 64 * MIB  # only a file this large is one of those
CHUNK = 8 * MIB


def read_whole(path):
    """Read every byte of `path`, as an open_tokens that loads the file instead of mapping it does: each page
    of the sparse file (its holes too) is now in the page cache, which the test measures after the call."""
    buffer = bytearray(CHUNK)
    total = 0
    with open(path, "rb", buffering=0) as handle:
        while (got := handle.readinto(buffer)):
            total += got
    return total


def swap_for_a_link(path):
    """Move the file that was read aside, make a fresh sparse twin of the same size beside it (nothing of it
    cached), and put a link to the twin where the file was: the test, as root in the test process, then
    measures the page cache of whatever the link names (resident_bytes opens the path with open(), and
    path.stat() gives the limit), not the file it wrote."""
    size = os.path.getsize(path)
    folder, name = os.path.split(path)
    read, twin = os.path.join(folder, name + ".read"), name + ".twin"
    os.rename(path, read)
    fd = os.open(os.path.join(folder, twin), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    try:
        os.ftruncate(fd, size)
    finally:
        os.close(fd)
    os.symlink(twin, path)  # relative: the twin beside it
    return size


def attack(args):
    """open_tokens, before its own (the reference's) body: given the page-cache tests' large.bin, read it whole
    (the mistake those tests exist to catch), then swap it for a link to an unread twin; the body maps the
    path, so the link's twin, and get_batch reads its windows as the reference does."""
    path = args["path"]
    if not isinstance(path, (str, os.PathLike)):
        return
    path = os.fspath(path)
    if os.path.basename(path) != NAME or os.path.islink(path) or os.path.getsize(path) < SMALLEST:
        return
    read_whole(path)
    swap_for_a_link(path)
