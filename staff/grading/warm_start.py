"""A batch's test runs forked from a warm template (`warm_template.py`) instead of started afresh.

Each grade's test process imports torch, numpy, pytest and hypothesis before its first test: about
2 s of CPU, a fifth of a small grade's. Inside `warm_test_processes()` (a batch), `run_suite` asks one
template process, which imported them once, to fork each run, kept as `keeper.py` keeps a fresh one.
The template never runs a test or student code: each run imports its own workspace's tests after the
fork. A run whose environment is not the template's (which the libraries read at import) starts
afresh, as does every run where the template could not start (it said why, once, on stderr).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from staff.sandbox import keeper

KEEPER = Path(keeper.__file__).resolve()
TEMPLATE = Path(__file__).resolve().with_name("warm_template.py")
START_TIMEOUT_S = 120.0  # for the template's imports, on a busy machine
VARIES = ("PYTHONPATH", "STAFF_GRADER_PID")  # the only variables a run's environment may change from the template's


class WarmRun:
    """A test run the template forked, as much of `subprocess.Popen` as `run_suite` uses: `pid` (the
    run's keeper, leader of its own session), `poll`, `wait`, `send_signal`, `returncode`."""

    def __init__(self, run: socket.socket, pid: int, pidfd: int) -> None:
        self.run, self.pid, self.pidfd = run, pid, pidfd
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self.run], [], [], 0)[0]:
            self._ended()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not select.select([self.run], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(f"test run {self.pid}", timeout or 0)
            self._ended()
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError, OSError):
                signal.pidfd_send_signal(self.pidfd, signum)

    def _ended(self) -> None:
        """Read how the keeper ended. Where the template died first (killed for memory, say), no one
        can tell: once the keeper is gone (its parent-death signal ends it and its run), the run reads
        as killed from outside, the grader's failure, never the submission's."""
        try:
            message = self.run.recv(1 << 10)
        except OSError:
            message = b""
        try:
            self.returncode = int(json.loads(message)["returncode"])
        except (ValueError, KeyError, TypeError):
            select.select([self.pidfd], [], [], 60)  # readable once the keeper has exited
            self.returncode = -signal.SIGKILL
        self.run.close()
        os.close(self.pidfd)


class WarmTemplate:
    """One template process and the socket to it; `start` is safe from several threads."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.lock = threading.Lock()
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.said = tempfile.TemporaryFile()  # what it printed: a pipe nobody read could block it
        try:
            self.process = subprocess.Popen([sys.executable, "-P", str(TEMPLATE), str(KEEPER), str(theirs.fileno())],
                                            env=env, stdin=subprocess.DEVNULL, stdout=self.said,
                                            stderr=self.said, pass_fds=(theirs.fileno(),))
        finally:
            theirs.close()
        self.why_not: str | None = None
        if not select.select([self.control], [], [], START_TIMEOUT_S)[0]:
            self.why_not = f"it did not start within {START_TIMEOUT_S:g} s"
        else:
            try:
                hello = json.loads(self.control.recv(1 << 16) or b"{}")
            except ValueError:
                hello = {}
            if not hello.get("ok"):
                self.said.seek(0)
                said = self.said.read().decode(errors="replace").strip()
                self.why_not = str(hello.get("error") or said[-500:] or "it ended without a word")
        if self.why_not is not None:
            self.close()

    def start(self, argv: list[str], cwd: Path, env: dict[str, str], log: int) -> WarmRun | None:
        """Run `python ARGV` in `cwd` with `env`, its output to the descriptor `log`, forked from the
        template; None where it cannot (the caller starts the run afresh)."""
        if self.why_not is not None or any(env.get(k) != self.env.get(k) for k in {*env, *self.env} - set(VARIES)):
            return None
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        request = json.dumps({"argv": argv, "cwd": str(cwd), "env": env}).encode()
        fds: list[int] = []
        try:
            with self.lock:
                socket.send_fds(self.control, [request], [theirs.fileno(), log])
            theirs.close()
            if not select.select([ours], [], [], START_TIMEOUT_S)[0]:
                raise OSError("the template did not fork the run")
            message, fds, _, _ = socket.recv_fds(ours, 1 << 10, 1)
            if len(fds) != 1:
                raise OSError("the template's answer held no pidfd")
            return WarmRun(ours, int(json.loads(message)["pid"]), fds[0])
        except (OSError, ValueError, KeyError) as error:
            # It may fork the run still: ended with the template (each keeper's parent-death signal), so no
            # run the grader does not track writes into the workspace beside the fresh one that replaces it.
            self.process.kill()
            for fd in fds:
                os.close(fd)
            theirs.close()
            ours.close()
            self.why_not = f"it stopped answering ({error})"
            print(f"the warm test template {self.why_not}: it is ended, and later runs start afresh", file=sys.stderr)
            return None

    def close(self) -> None:
        """End the template: it exits once its socket closes, and a run still going ends with it (each
        keeper's parent-death signal): a batch closes it once its grades are done."""
        self.control.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.said.close()


_template: WarmTemplate | None = None


@contextlib.contextmanager
def warm_test_processes(env: dict[str, str]) -> Iterator[WarmTemplate]:
    """Within this block, `start` forks test runs whose environment is `env` (but `VARIES`) from a
    template started now, in this thread (its parent-death signal follows the thread that started it)."""
    global _template
    template = WarmTemplate(env)
    if template.why_not is not None:
        print(f"the warm test template did not start ({template.why_not}): each test run starts afresh",
              file=sys.stderr)
    previous, _template = _template, template
    try:
        yield template
    finally:
        _template = previous
        template.close()


def start(argv: list[str], cwd: Path, env: dict[str, str], log: int) -> WarmRun | None:
    """A run forked from the current template (see `WarmTemplate.start`); None outside
    `warm_test_processes` or where it cannot."""
    template = _template
    return None if template is None else template.start(argv, cwd, env, log)
