"""A call's time limit, charged for the time its code could run: a wait for a CPU that other programs
held is not the student's.

A test's calls into the student's code share a budget of seconds (`WorkerRoute`). Measured by the wall
clock alone, a busy machine spends it: beside a batch neighbour whose code ran 24 spinning processes, an
honest grade's call stood ready to run far longer than it ran, and lost its test to the time limit.
The kernel counts, for every thread, the time it stood ready to run but waited for a CPU (run_delay,
the second field of /proc/PID/schedstat, in ns, beside the time it ran, which any user may read). A
test's calls are charged their wall time less the waits of the grader's thread that makes them (it
writes the request and wakes to read the reply) and of one thread of the serving child (the child that
runs the adapters' bodies): the thread whose wait, less the CPU time everything else of the worker used
meanwhile, is largest. That is the serving thread itself for code that runs there, and a pool's thread
for code whose work runs in torch's intra-op pool, a BLAS library's threads or a pool of its own while
the serving thread sleeps on the result. Taking off the others' CPU charges a submission that keeps its
own threads waiting with threads or processes of its own: each second of a wait they caused is a second
they ran. A thread that ends between two looks takes its waits along (errs toward charging more).

The wall clock still bounds a test's calls: past `wall_limit_s` of them (BUSY_FACTOR times the budget,
and BUSY_SLACK_S more) a call ends as the grading machine's failure (`ChargedTime.busy`), never as a
time-out of the student's code. Where /proc cannot be read, nothing is credited: the wall clock alone.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from staff.sandbox.process_tree import children, descendants

BUSY_FACTOR = 6  # a test's calls may take this many times its budget on the wall clock
BUSY_SLACK_S = 10.0  # and this many seconds more
LOOK_EVERY_S = 0.05  # the least time between two looks at what a call's code has used
MOST_THREADS = 256  # of the serving child's threads, read at a look (the worker's process limit is lower)
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")  # /proc's unit of CPU time a second


def wall_limit_s(budget_s: float) -> float:
    """The wall-clock seconds a test whose calls may be charged `budget_s` may spend in them."""
    return BUSY_FACTOR * budget_s + BUSY_SLACK_S


@dataclass(frozen=True)
class Usage:
    """What the worker's code had used at one moment (seconds since each thread or process started)."""

    serving: int  # the serving child's pid here: its counts start again with each child
    threads: dict[int, tuple[float, float]]  # each thread of the serving child: its tid -> (waited_s, ran_s)
    total_s: float  # the CPU time of the zygote and of every thread and process below it, ended ones too


def _ticks(stat_path: str) -> int:
    """utime + stime + cutime + cstime (the reaped children's too) from a /proc stat file, in clock ticks."""
    with open(stat_path) as handle:
        fields = handle.read().rsplit(")", 1)[1].split()  # after the command's name, which may hold anything
    # Fields 14 to 17 of stat(5); the list starts at field 3 (state).
    return sum(int(value) for value in fields[11:15])


_own = threading.local()  # this thread's schedstat, kept open: 3 us a read, against 40 to open it each time


def own_waited_s() -> float:
    """The calling thread's own time ready to run but waiting for a CPU (s; 0 where it cannot be read): the
    grader's side of a call (writing the request, waking to read the reply) waits on a busy machine too."""
    key = os.getpid(), threading.get_native_id()  # a forked process's thread is another thread
    try:
        if getattr(_own, "key", None) != key:
            _own.key, _own.fd = key, os.open("/proc/thread-self/schedstat", os.O_RDONLY | os.O_CLOEXEC)
        return int(os.pread(_own.fd, 128, 0).split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def thread_times(serving: int) -> dict[int, tuple[float, float]]:
    """Each thread of process `serving` (its pid here; the first MOST_THREADS): its tid -> (the time it
    stood ready to run but waited for a CPU, the time it ran), in s; empty where none can be read."""
    try:
        tids = os.listdir(f"/proc/{serving}/task")[:MOST_THREADS]
    except OSError:
        return {}
    found = {}
    for tid in tids:
        try:
            with open(f"/proc/{serving}/task/{tid}/schedstat") as handle:
                ran, waited = handle.read().split()[:2]
            found[int(tid)] = int(waited) / 1e9, int(ran) / 1e9
        except (OSError, ValueError):
            continue  # ended while read: its waits are lost
    return found


def total_cpu_s(zygote: int) -> float | None:
    """The CPU time of the `zygote` and everything below it, ended processes too (about 0.3 ms to read a worker
    of a few processes); None where the zygote cannot be read. Processes that end while they are read are
    skipped: their time shows in their reaper's at the next look."""
    total = 0
    for pid in descendants(zygote):
        try:
            total += _ticks(f"/proc/{pid}/stat")
        except (OSError, ValueError, IndexError):
            continue
    try:  # the zygote's own (its watch of the worker's processes, which they can make costly) and the
        # processes it reaped: orphans end there (it is their subreaper or their init)
        total += _ticks(f"/proc/{zygote}/stat")
    except (OSError, ValueError, IndexError):
        return None
    return total / CLOCK_TICKS


def serving_pid(zygote: int, inner_pid: int) -> int | None:
    """The pid here of the zygote's child that is `inner_pid` in the zygote's own PID namespace (the
    innermost pid /proc's NSpid names); None where none is."""
    for pid in children(zygote):
        try:
            with open(f"/proc/{pid}/status") as handle:
                line = next((line for line in handle if line.startswith("NSpid:")), "")
        except OSError:
            continue
        if line.split()[-1:] == [str(inner_pid)]:
            return pid
    return None


class ChargedTime:
    """What one test's calls are charged, and their deadlines (`call`).

    `budget_s` is what the test's calls may be charged together; their wall-clock time may reach
    `wall_limit_s(budget_s)`. `usage` says what the worker's code has used (None where it cannot be
    read): it is read as the test's first call begins, and again only when a call reaches its deadline
    (so only in a test whose calls took longer than its budget on the wall clock). The credit is the
    grader's wait within the calls, and the largest wait of one of the serving child's threads since then
    less the CPU time everything else of the worker used since then, between the calls too (which errs
    toward charging more)."""

    def __init__(self, budget_s: float, usage: Callable[[], Usage | None],
                 now: Callable[[], float] = time.monotonic, own_waited: Callable[[], float] = own_waited_s) -> None:
        self.budget_s, self.wall_limit_s, self._usage, self.now = budget_s, wall_limit_s(budget_s), usage, now
        self.own_waited = own_waited  # the grader's thread's wait for a CPU so far (s)
        self.wall_s = 0.0  # the wall-clock seconds of the test's calls that ended
        self.grader_waited_s = 0.0  # the grader's own wait for a CPU within those calls
        self.credit_s = 0.0  # the seconds not charged, as of the last look
        self.thread_credit_s = 0.0  # the serving child's best thread's wait less the others' CPU, last look
        self.banked_s = 0.0  # that credit of serving children that have since ended, as of their last look
        self.base: Usage | None = None
        self.busy = False  # the wall limit passed before the budget was charged

    def charged_s(self) -> float:
        """What the test's ended calls are charged, as of the last look."""
        return max(self.wall_s - self.credit_s, 0.0)

    def call(self) -> CallDeadline:
        """The deadline of the call that begins now."""
        if self.base is None:
            self.base = self._usage()
        return CallDeadline(self)

    def look(self, elapsed_s: float, grader_waited_s: float) -> float:
        """Seconds until the next look, `elapsed_s` into a call in which the grader waited `grader_waited_s`
        for a CPU; 0 once the test's time is up."""
        self._credit(grader_waited_s)
        wall = self.wall_s + elapsed_s
        charged = wall - self.credit_s
        if charged >= self.budget_s:
            return 0.0
        if wall >= self.wall_limit_s:
            self.busy = True
            return 0.0
        return min(max(self.budget_s - charged, LOOK_EVERY_S), self.wall_limit_s - wall)

    def _credit(self, grader_waited_s: float) -> None:
        now = self._usage() if self.base is not None else None
        if now is None:
            return
        if now.serving != self.base.serving:  # a fresh child, forked since the base was read: its threads are new
            self.banked_s += self.thread_credit_s
            self.base = Usage(now.serving, {}, self.base.total_s)
        used_s = max(now.total_s - self.base.total_s, 0.0)
        credits = [(waited - self.base.threads.get(tid, (0.0, 0.0))[0])
                   - (used_s - (ran - self.base.threads.get(tid, (0.0, 0.0))[1]))
                   for tid, (waited, ran) in now.threads.items()]
        self.thread_credit_s = max(credits, default=-used_s)
        grader = self.grader_waited_s + grader_waited_s
        self.credit_s = max(self.banked_s + grader + self.thread_credit_s, 0.0)


class CallDeadline:
    """The deadline of one call of a test (frames.read_frame and write_frame take it: `left`)."""

    def __init__(self, clock: ChargedTime) -> None:
        self.clock = clock
        self.started, self.grader_before = clock.now(), clock.own_waited()
        self.until = self.started + max(min(clock.budget_s - clock.charged_s(), clock.wall_limit_s - clock.wall_s), 0)

    def left(self) -> float:
        """Seconds until the next look, or 0 once the test's time is up (the clock's `busy` says which)."""
        now = self.clock.now()
        if now < self.until:
            return self.until - now
        self.until = now + self.clock.look(now - self.started, self.clock.own_waited() - self.grader_before)
        return self.until - now

    def end(self) -> None:
        """End the call: its wall-clock seconds and the grader's wait, added to the test's."""
        self.clock.wall_s += self.clock.now() - self.started
        self.clock.grader_waited_s += self.clock.own_waited() - self.grader_before
