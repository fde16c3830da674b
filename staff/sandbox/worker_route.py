"""Adapter calls sent to the worker: `WorkerRoute`, the route `staff grade` installs (through
`adapters._route.set_route`, the hook every adapter calls through) in the process that runs the tests.

Each test has a time budget for the calls it makes (their durations add up, worker start-up not
counted, nor the time their code waited for CPUs that other programs held: staff/sandbox/call_clock.py).
When a call runs past what is left, the worker is killed, the call fails with "timed out
after N s", and every later call of the same test fails at once; the next test gets a fresh worker.
An adapter whose calls time out or kill the worker in two tests is not run again: its later calls
fail at once, so a submission that hangs everywhere still finishes within a bounded time.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from adapters import _codec, _remote_error
from staff.sandbox.call_clock import ChargedTime, Usage
from staff.sandbox.client import Worker
from staff.sandbox.failures import CallTimedOut, GraderFailure, SandboxFailure, WorkerCrashed
from staff.sandbox.quota import DiskQuota

MAX_STRIKES = 2  # time-outs or crashes of one adapter before its later calls are not run
MAX_ECHO_CHARS = 32 << 10  # of what the student's code printed, shown per test


class CallSkipped(SandboxFailure):
    """An adapter was not run because it timed out or crashed in earlier tests."""


class DiskQuotaExceeded(SandboxFailure):
    """What the student's code left in its folders is over the grader's disk limit."""


class ReplyUnreadable(Exception):
    """The worker's reply could not be decoded into plain data (a failure of the submission's call)."""


class WorkerRoute:
    """Runs adapter bodies in `worker`, within `test_timeout_s` seconds of calls per test (as charged: the
    waits for CPUs other programs held are not, see staff/sandbox/call_clock.py)."""

    runs_here = False

    def __init__(self, worker: Worker, test_timeout_s: float, quota: DiskQuota | None = None) -> None:
        self.worker, self.test_timeout_s, self.quota = worker, test_timeout_s, quota
        self.test, self.seed = "", 0
        self.clock = ChargedTime(test_timeout_s, self._usage)  # what this test's calls were charged
        self.doomed: str | None = None
        self.echoed = 0  # characters of the worker's output shown in this test
        self.strikes: dict[str, dict[str, str]] = {}  # adapter -> test -> "timed out" or "crashed"

    def begin_test(self, nodeid: str, seed: int) -> None:
        self.test, self.seed, self.doomed = nodeid, seed, None
        self.clock = ChargedTime(self.test_timeout_s, self._usage)
        self.echoed = 0

    def _usage(self) -> Usage | None:
        return self.worker.usage()

    def bytes_read(self) -> int | None:
        """What the worker's processes have read through read(2) and its kin (see `Worker.bytes_read`),
        counted once the zygote has said hello (one still importing torch reads ~25 MiB more); None
        where it cannot start: the call that follows meets that failure and reports it."""
        try:
            self.worker.ensure_ready()
        except SandboxFailure:
            return None
        return self.worker.bytes_read()

    def call(self, function: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        name = function.__name__
        if self.doomed is not None:
            raise CallTimedOut(f"{name} was not run: {self.doomed}")
        strikes = self.strikes.get(name, {})
        if len(strikes) >= MAX_STRIKES:
            how = " or ".join(sorted(set(strikes.values())))
            raise CallSkipped(f"{name} was not run: it {how} in {len(strikes)} earlier tests ({', '.join(strikes)}), "
                              f"so later calls to it are not made")
        header, blobs = _codec.encode((args, kwargs))
        if self.worker.requests < 0:  # a fresh child, ready before the test's time starts
            try:
                self.worker.request({"op": "ping"}, [], time.monotonic() + self.worker.startup_timeout_s)
            except (CallTimedOut, WorkerCrashed) as failure:  # before any student call: no strike
                raise WorkerCrashed(f"{name} was not run: the process for your code did not start ({failure})") \
                    from None
            except GraderFailure as failure:  # recorded by the worker: the grade ends on it
                raise type(failure)(f"{name} was not run: the process for your code {failure}") from None
        request = {"op": "call", "function": f"{function.__module__}:{name}", "args": header, "seed": self.seed,
                   "test": self.test}
        deadline = self.clock.call()
        try:
            reply, reply_blobs = self.worker.request(request, blobs, deadline)
        except CallTimedOut:
            self.doomed = f"an earlier call in this test timed out after {self.test_timeout_s:g} s"
            self._strike(name, "timed out")
            raise CallTimedOut(f"{name} timed out after {self.test_timeout_s:g} s (the time limit of one test's "
                               f"calls into your code); is there an endless loop or a very slow step?") from None
        except WorkerCrashed as crash:
            self._strike(name, "crashed")
            raise WorkerCrashed(f"{name}: the process running your code {crash}") from None
        except GraderFailure as failure:  # recorded by the worker: the grade ends on it
            raise type(failure)(f"{name}: the process running your code {failure}") from None
        finally:
            deadline.end()
            self._echo_output()
        over = self.quota.exceeded() if self.quota is not None else None
        if over is not None:
            self.worker.fresh_child()
            raise DiskQuotaExceeded(f"{name}: {over}")
        held = self.worker.held_past_limits()  # the call that left it so fails, not whichever comes next
        if held is not None:
            self.worker.fresh_child()
            self._strike(name, "crashed")
            raise WorkerCrashed(f"{name}: the process running your code {held}")
        if reply.get("ok") is True:
            try:
                return _codec.decode(reply.get("value", "null"), reply_blobs)
            except _codec.CodecError as error:
                raise ReplyUnreadable(f"{name} returned something the grader cannot read: {error}") from None
        error = reply.get("error")
        if not (isinstance(error, list) and len(error) == 4 and all(isinstance(e, str) for e in error)):
            raise ReplyUnreadable(f"{name}: the worker's reply is malformed")
        raise _remote_error.as_exception(_remote_error.RemoteError(*error))

    def _strike(self, name: str, what: str) -> None:
        self.strikes.setdefault(name, {}).setdefault(self.test.split("::")[-1], what)

    def cuda_preflight(self, mode: str, timeout_s: float) -> tuple[bool, str]:
        """Have a fresh child, confined as the student's code will be, start CUDA and run a small matmul
        (`cuda_preflight.run`, with `mode`); whether it did, and the device and time, or the driver's
        message with what the worker printed meanwhile (torch's warnings). A shortage of the
        container's memory is a failure too, and the worker recorded it: the grade ends on it (out of
        memory), which comes first."""
        passed, said = self._cuda_preflight(mode, timeout_s)
        printed = self.worker.log.take().strip()  # the driver's words: the staff's, never a test's output
        if passed or not printed:
            return passed, said
        return False, _codec.bounded(f"{said}\nwhat the worker printed:\n{_codec.clean_text(printed)}",
                                     _remote_error.MAX_TRACEBACK_CHARS)

    def _cuda_preflight(self, mode: str, timeout_s: float) -> tuple[bool, str]:
        try:
            self.worker.fresh_child()
            reply, blobs = self.worker.request({"op": "cuda_preflight", "mode": mode}, [],
                                               time.monotonic() + timeout_s)
        except CallTimedOut:
            return False, f"the worker did not start CUDA within {timeout_s:g} s"
        except WorkerCrashed as crash:
            return False, f"the worker {crash}"
        except GraderFailure as failure:
            return False, f"not finished: the process starting CUDA {failure}"
        if reply.get("ok") is True:
            try:
                return True, str(_codec.decode(reply.get("value", "null"), blobs))
            except _codec.CodecError as error:
                return False, f"the worker's answer is unreadable: {error}"
        error = reply.get("error")
        if not (isinstance(error, list) and len(error) == 4 and all(isinstance(e, str) for e in error)):
            return False, "the worker's answer is malformed"
        return False, _codec.bounded(_codec.clean_text(f"{error[0]}: {error[2]}"), _remote_error.MAX_TRACEBACK_CHARS)

    def import_check(self, modules: list[str], timeout_s: float) -> str | None:
        """Import `modules` in the worker; the error text, or None when they all import."""
        try:
            self.worker.fresh_child()
            reply, _ = self.worker.request({"op": "import", "modules": modules}, [],
                                           ChargedTime(timeout_s, self._usage).call())
        except CallTimedOut:
            return f"importing your package took longer than {timeout_s:g} s (is there slow work at module level?)"
        except WorkerCrashed as crash:
            return _codec.bounded(f"the process importing your package {crash}\n{self.worker.log.take()}".strip(),
                                  _remote_error.MAX_TRACEBACK_CHARS)
        except GraderFailure:
            return None  # not the package's fault: the worker recorded it, and the grade ends on it
        if reply.get("ok") is True:
            return None
        error = reply.get("error")
        if not (isinstance(error, list) and len(error) == 4 and isinstance(error[3], str)):
            return "importing your package failed"
        return _codec.bounded(_codec.clean_text(error[3]), _remote_error.MAX_TRACEBACK_CHARS, keep_end=True)

    def _echo_output(self) -> None:
        text = self.worker.log.take()
        if not text:
            return
        room = MAX_ECHO_CHARS - self.echoed
        if room <= 0:
            return
        self.echoed += len(text)
        if len(text) > room:
            text = f"{text[:room]}\n[... the rest of what your code printed in this test is not shown ...]"
        sys.stdout.write(f"--- printed by your code ---\n{text}\n---\n")


__all__ = ["CallSkipped", "DiskQuotaExceeded", "ReplyUnreadable", "SandboxFailure", "WorkerRoute"]
