"""How a call into the worker fails for reasons outside the student's exception, and how a worker
process's end (a signal, an exit code, a kernel memory kill) is put into words.
"""

from __future__ import annotations

import signal

from staff.sandbox.memory import STUDENT_MEMORY_SHARE_BYTES

SIGNAL_WORDS = {
    signal.SIGKILL: "killed (SIGKILL): out of memory, or stopped by the grader",
    signal.SIGSEGV: "crashed with a segmentation fault (SIGSEGV)",
    signal.SIGABRT: "aborted (SIGABRT)",
    signal.SIGXCPU: "ran out of its CPU-time limit (SIGXCPU)",
    signal.SIGXFSZ: "wrote a file larger than its file-size limit (SIGXFSZ)",
    signal.SIGBUS: "crashed with a bus error (SIGBUS)",
}


class SandboxFailure(BaseException):
    """A call into the worker failed for a reason outside the student's exception: a time-out, a
    crash, garbage on the wire. A BaseException, so test code that catches `Exception` (expecting
    the student's code to raise) cannot mistake it for an answer."""


class CallTimedOut(SandboxFailure):
    pass


class GraderFailure(SandboxFailure):
    """The grader's side failed, not the student's code: the grade must not count it against them,
    and ends as the grader's failure (the worker records why)."""


class GraderOutOfMemory(GraderFailure):
    """The container ran out of memory while the student's code used little of it: the grader's
    limit, not the student's doing."""


class WorkerNotStarted(GraderFailure):
    """The worker's zygote did not start the first time (it imports torch and the adapters, never
    student code): a memory limit too small for torch, a broken environment, a machine too slow."""


class MachineBusy(GraderFailure):
    """A call's code waited so long for CPUs that other programs held that its time limit could not be
    judged (staff/sandbox/call_clock.py): the machine's doing, not the student's."""


class WorkerCrashed(SandboxFailure):
    pass


def status_words(code: int) -> str:
    """How a process ended, from a shell-style exit code (128 + signal for a signal)."""
    if code > 128 and code - 128 in SIGNAL_WORDS:
        return SIGNAL_WORDS[code - 128]
    if code < 0:
        return SIGNAL_WORDS.get(-code, f"was killed by signal {-code}")
    return f"exited with code {code}"


def memory_failure(grown: int, machine_limit: int | None, own_limit: int | None,
                   own_group: bool) -> WorkerCrashed | GraderOutOfMemory:
    """What a worker process killed by the kernel for memory means, from how much the student's code
    had grown (`grown`, bytes): the student's doing (WorkerCrashed) past STUDENT_MEMORY_SHARE_BYTES,
    else the container's (GraderOutOfMemory: too small for the grade). `machine_limit` is the
    container's limit in bytes, `own_limit` the worker's own memory group's (`own_group`: whether it
    has one); None or 0 where there is none."""
    machine = f"{machine_limit / 2**20:.0f} MiB" if machine_limit else "its limit"
    if grown >= STUDENT_MEMORY_SHARE_BYTES and own_group:
        return WorkerCrashed(f"ran out of memory: your code held {grown / 2**20:.0f} MiB (its processes' memory "
                             f"and any files it kept in memory) when its limit"
                             f"{f' of {own_limit / 2**20:.0f} MiB' if own_limit else ''} or the grading machine's "
                             f"memory ({machine}) ran out, and the kernel killed it")
    if grown >= STUDENT_MEMORY_SHARE_BYTES:
        return WorkerCrashed(f"ran out of memory: your code's process had grown by {grown / 2**20:.0f} MiB when "
                             f"the grading machine's memory ({machine}) ran out, and the kernel killed it")
    return GraderOutOfMemory(f"was killed because the grading container's memory ({machine}) ran out while "
                             f"your code used only {grown / 2**20:.0f} MiB: the container is too small, not "
                             f"your code at fault")
