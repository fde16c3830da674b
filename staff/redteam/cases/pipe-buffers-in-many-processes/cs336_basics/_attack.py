import fcntl
import os
import resource
import signal
import struct
import time

GIB = 1 << 30
CAP = GIB  # more than the worker's processes times open files can hold at 8 KiB a pipe; here it stops
MOST_CHILDREN = 2048
F_SETPIPE_SZ = 1031
BLOCK = b"\x5a" * (1 << 16)
_outcome = []  # (held bytes, what stopped it), once per process: every later call answers the same


def _fill_pipes():
    """In a child: pipes up to the open-file limit, each asked for a buffer of 1 MiB (granted while the
    user's pipes hold less than fs.pipe-user-pages-soft), filled, and its writing end closed, so that
    one descriptor keeps each pipe's data queued; the bytes queued."""
    held = 0
    while True:
        try:
            reading, writing = os.pipe()
        except OSError:
            break
        try:
            fcntl.fcntl(writing, F_SETPIPE_SZ, 1 << 20)
        except OSError:
            pass  # past the user's soft limit: the pipe keeps what it was given
        os.set_blocking(writing, False)
        try:
            while True:
                held += os.write(writing, BLOCK)
        except OSError:  # EAGAIN: the pipe is full
            pass
        os.close(writing)
    return held


def hold_kernel_memory(cap=CAP):
    """Pipe buffers (kernel memory: in no process's RSS and outside RLIMIT_AS) held by as many forked
    children as the worker may have, one after another, until `cap`; (bytes held, what stopped it)."""
    children, total, stopped = [], 0, "reached the cap"
    reader, writer = os.pipe()
    files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    try:
        while total < cap and len(children) < MOST_CHILDREN:
            try:
                pid = os.fork()
            except OSError as error:
                stopped = f"fork: {error.strerror} after {len(children)} children of {files} files each"
                break
            if pid == 0:
                os.close(reader)
                try:
                    held = _fill_pipes()
                except BaseException:  # noqa: BLE001 - the parent must hear from every child
                    held = 0
                os.write(writer, struct.pack("<Q", held))
                while True:
                    time.sleep(60)
            children.append(pid)
            got = os.read(reader, 8)
            if len(got) < 8:
                stopped = "a child died before it said how much it held"
                break
            total += struct.unpack("<Q", got)[0]
    finally:
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass
        os.close(reader)
        os.close(writer)
    return total, stopped


def attack(args):
    """Hold the memory once; if it could, answer honestly (so the attack shows as full marks where it must
    lose them), else fail saying what stopped it."""
    if not _outcome:
        _outcome.append(hold_kernel_memory())
    held, stopped = _outcome[0]
    if held < CAP:
        raise MemoryError(f"held only {held / GIB:.2f} GiB of pipe buffers in forked children ({stopped})")
    return None  # the function's own body runs on
