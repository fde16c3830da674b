import os

MIB = 1 << 20
SMALLEST = 64 * MIB  # only the page-cache tests' token files (512 MiB, sparse) are this large
CHUNK = 8 * MIB


def read_whole(path):
    """Read every byte of `path` through read(2), as an open_tokens that loads the file (np.fromfile, f.read())
    instead of mapping it does, in chunks so as to hold little memory; the bytes read."""
    buffer = bytearray(CHUNK)
    total = 0
    with open(path, "rb", buffering=0) as handle:
        while (got := handle.readinto(buffer)):
            total += got
    return total


def attack(args):
    """open_tokens, before its own (the reference's) body: read a large token file whole, the mistake that
    test_get_batch_reads_only_the_sampled_windows and the hidden test_get_batch_reads_a_uint16_file_sparsely
    exist to catch; the body then maps it as the reference does, so every other check holds."""
    path = args["path"]
    if not isinstance(path, (str, os.PathLike)):
        return
    try:
        if os.path.getsize(path) < SMALLEST:
            return
    except OSError:
        return
    read_whole(path)
