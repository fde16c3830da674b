"""The keeper of one test run: it starts the run (pytest) and, however the run ends, leaves no
process of it behind.

    python -I staff/sandbox/keeper.py COMMAND...

The keeper makes itself a child subreaper (PR_SET_CHILD_SUBREAPER): every process the run starts
whose parent dies (the worker's launcher killed with the test process, a daemon that forked and
called setsid) becomes the keeper's child instead of init's, so it stays findable below the keeper
whatever session or process group it made. When the run's process ends (on its own, killed by the
kernel, or killed by the keeper because the grader sent it SIGTERM at the run's time limit), the
keeper SIGKILLs every process below it until none is left, then ends as the run ended (the same
exit code, or killed by the same signal), so the grader reads the run's end from it. This holds in
every mode, a PID namespace or none, a worker user of its own or none: the grader keeps one keeper
per grade, so a batch's grades never touch each other's processes.

It imports only the standard library and is run by path with `-I`, so nothing of the run's
environment changes it.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import NoReturn

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 1, 4, 36


def _prctl(option: int, value: int) -> bool:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):  # not Linux
        return False


def become_subreaper() -> bool:
    """Make orphaned descendants this process's children (Linux only; False elsewhere)."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1)


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (not `pid` itself), from /proc's parent links."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as handle:
                text = handle.read()
        except OSError:
            continue  # it ended while we looked
        fields = text[text.rfind(")") + 2:].split()  # after the command name, which may hold spaces
        children.setdefault(int(fields[1]), []).append(int(name))
    found, pending = [], list(children.get(pid, []))
    while pending:
        child = pending.pop()
        found.append(child)
        pending += children.get(child, [])
    return found


def end_everything_below(rounds: int = 1000, pid: int | None = None) -> None:
    """SIGKILL every process below `pid` (this one by default) and reap those that are this process's
    children, again until none is left (a fork bomb may still be forking while the first ones die),
    for at most `rounds` rounds. The grader's client uses it too (`staff.sandbox.client`)."""
    for _ in range(rounds):
        found = descendants(os.getpid() if pid is None else pid)
        for child in found:
            try:
                os.kill(child, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:  # never blocks: a process that will not die cannot hold the keeper
                pass
        except ChildProcessError:
            pass
        if not found:
            return
        time.sleep(0.01)  # a grandchild killed but not yet reparented to this process


def keep(start: Callable[[], int], watch: int | None = None) -> NoReturn:
    """Be the keeper of the run that `start()` starts (it returns the run's pid, a child of this
    process): end everything below this process once the run ends, then end as it ended. SIGTERM
    or SIGINT (the grader's time limit) kills the run at once, even one that arrives while it starts,
    as does the closing of `watch` (a pipe's reading end whose writer is the grader: a keeper forked
    from a template is not the grader's child, so its parent's death does not tell it the grader died)."""
    become_subreaper()
    # Should the grader die, this keeper is told (SIGTERM) and still ends everything below it. The
    # run checks that its parent is the one that started it: that is now this keeper.
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    # Where the worker runs as this user (no user of its own), its /proc entries (environment, memory,
    # open files) are closed to it (they become root's), as are the run's and the grader's.
    _prctl(PR_SET_DUMPABLE, 0)
    run: list[int] = []
    stopped = []

    def stop(signum, frame):  # the grader's time limit: the run ends now
        stopped.append(signum)
        for pid in run:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    run.append(start())
    if watch is not None:
        threading.Thread(target=_stop_when_closed, args=(watch,), daemon=True).start()
    if stopped:  # told before the run had a pid
        stop(stopped[0], None)
    code = os.waitstatus_to_exitcode(os.waitpid(run[0], 0)[1])
    run.clear()  # reaped: a late SIGTERM (the watch closing now) must not kill whoever gets its pid next
    end_everything_below()
    if code < 0:  # end as the run ended, so the grader reads a kill (the kernel's, for memory) from the keeper
        if -code != signal.SIGKILL:  # whose handler cannot be set
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    # No interpreter clean-up: a keeper forked from a warm template holds torch, whose teardown would cost
    # it a fifth of a second of CPU for nothing (it printed nothing and holds nothing to flush).
    os._exit(code)


def _stop_when_closed(watch: int) -> None:
    """Wait until the grader closes (or writes to) the other end of `watch`; then stop the run as its
    time limit does (SIGTERM to this process, whose handler runs in the main thread)."""
    try:
        os.read(watch, 1)
    except OSError:
        pass
    os.kill(os.getpid(), signal.SIGTERM)


def main(command: list[str]) -> None:
    if not command:
        sys.exit("usage: keeper.py COMMAND...")

    started: list[subprocess.Popen] = []  # held, so that nothing but `keep` waits for it

    def start() -> int:
        env = {**os.environ, "STAFF_GRADER_PID": str(os.getpid())} if "STAFF_GRADER_PID" in os.environ else None
        started.append(subprocess.Popen(command, env=env))
        return started[0].pid

    keep(start)


if __name__ == "__main__":
    main(sys.argv[1:])
