import os
import signal

MIB = 1 << 20
SMALLEST = 64 * MIB  # only the page-cache tests' token files (512 MiB, sparse) are this large
CHUNK = 8 * MIB


def read_whole(path):
    """Read every byte of `path` through read(2), as an open_tokens that loads the file (np.fromfile, f.read())
    instead of mapping it does, in chunks so as to hold little memory; the bytes read."""
    buffer = bytearray(CHUNK)
    total = 0
    with open(path, "rb", buffering=0) as handle:
        while got := handle.readinto(buffer):
            total += got
    return total


def read_in_a_reaped_child(path):
    """read_whole(path) in a forked child, with SIGCHLD ignored meanwhile (as code that prefetches a dataset in
    the background does, so as to leave no zombie): the kernel then reaps the child itself when it exits, and
    what it read (its rchar) is added to no one's count, where waitpid would have added it to its parent's.
    The parent waits for the end (waitpid blocks until the child is gone, then fails with ECHILD) and learns
    the bytes read through a pipe; None where the child could not be made."""
    reading, writing = os.pipe()
    previous = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        try:
            pid = os.fork()
        except OSError:
            return None
        if pid == 0:
            try:
                os.close(reading)
                os.write(writing, read_whole(path).to_bytes(8, "little"))
            finally:
                os._exit(0)
        os.close(writing)
        writing = -1
        told = os.read(reading, 8)
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass  # reaped by the kernel, as intended
    finally:
        signal.signal(signal.SIGCHLD, previous)
        for fd in (reading, writing):
            if fd >= 0:
                os.close(fd)
    return int.from_bytes(told, "little") if len(told) == 8 else None


def attack(args):
    """open_tokens, before its own (the reference's) body: read a large token file whole (the mistake that
    test_get_batch_reads_only_the_sampled_windows and the hidden test_get_batch_reads_a_uint16_file_sparsely
    exist to catch) in a child the kernel reaps (where no child can be made or it read less, in this process).
    The body then maps it as the reference does, so every other check holds."""
    path = args["path"]
    if not isinstance(path, (str, os.PathLike)):
        return
    try:
        size = os.path.getsize(path)
    except OSError:
        return
    if size < SMALLEST:
        return
    if read_in_a_reaped_child(path) != size:
        read_whole(path)  # no child, or it read less: the mistake made here, where the count sees it
