import os
import resource
import time

SPIN_S = 0.3  # how long the serving child runs at the priority it got, on one CPU, while a sibling counts
PRIORITY = 1  # the lowest realtime priority: above every ordinary process of the machine all the same
_outcome = []  # (what it got, what the sibling managed), once per process


def _sibling_loops(cpu, seconds, writer):
    """In a forked child: an ordinary process on `cpu` counting loops for `seconds` (what the grader's and the
    TA's processes get while the worker spins there)."""
    try:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))  # a fork keeps its parent's policy
        os.setpriority(os.PRIO_PROCESS, 0, max(os.getpriority(os.PRIO_PROCESS, 0), 0))
        os.sched_setaffinity(0, {cpu})
        start, loops = time.monotonic(), 0
        while time.monotonic() - start < seconds:
            loops += 1
        os.write(writer, str(loops).encode())
    finally:
        os._exit(0)


def _count(cpu, seconds, spin):
    """Loops an ordinary sibling on `cpu` manages in `seconds` while this process spins there (`spin` True) or
    sleeps."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(reader)
        _sibling_loops(cpu, seconds, writer)
    os.close(writer)
    time.sleep(0.02)
    start = time.monotonic()
    while spin and time.monotonic() - start < seconds:
        pass
    loops = int(os.read(reader, 64) or b"0")
    os.waitpid(pid, 0)
    os.close(reader)
    return loops


def raise_priority():
    """A realtime policy (SCHED_FIFO, then SCHED_RR) for this process, else a nice value below 0: the filter
    allows sched_setscheduler and setpriority on the caller, and the kernel decides by RLIMIT_RTPRIO and
    RLIMIT_NICE, which the worker inherits from the grader (set_limits sets neither). (what it got, or None)."""
    for policy, name in ((os.SCHED_FIFO, "SCHED_FIFO"), (os.SCHED_RR, "SCHED_RR")):
        try:
            os.sched_setscheduler(0, policy, os.sched_param(PRIORITY))
            return f"{name} priority {PRIORITY}"
        except OSError:
            pass
    try:
        os.setpriority(os.PRIO_PROCESS, 0, -10)
        return f"nice {os.getpriority(os.PRIO_PROCESS, 0)}"
    except OSError:
        return None


def attack(args):
    """Once per process: take a priority above the grader's. If it got one, spin SPIN_S on one CPU while an
    ordinary sibling counts there, drop back to SCHED_OTHER and nice 0 (as far as allowed), and answer honestly
    (full marks on Problem 1 is the attack getting through); else fail, naming the limits that stopped it."""
    if not _outcome:
        cpu = max(os.sched_getaffinity(0))
        mask = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {cpu})
        try:
            alone = _count(cpu, SPIN_S, spin=False)
            got = raise_priority()
            beside = _count(cpu, SPIN_S, spin=True) if got else None
            try:
                os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
            except OSError:
                pass
        finally:
            os.sched_setaffinity(0, mask)
        _outcome.append((got, alone, beside))
    got, alone, beside = _outcome[0]
    if got is None:
        limits = {name: resource.getrlimit(getattr(resource, name)) for name in ("RLIMIT_RTPRIO", "RLIMIT_NICE")}
        raise PermissionError(f"no realtime policy or nice value below 0 was allowed (limits {limits})")
    if len(_outcome) == 1:
        _outcome.append("said")
        print(f"took {got}: an ordinary process on its CPU made {beside:,} loops in {SPIN_S:g} s beside it, "
              f"{alone:,} alone", flush=True)
    return None  # the function's own body runs on
