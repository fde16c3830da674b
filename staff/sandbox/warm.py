"""The grader's side of a template process (`warm_template.py`): a run forked from it instead of a
fresh interpreter, as much of `subprocess.Popen` as the callers use.

A batch starts two (see `staff.grading.warm_start`): the test template, whose runs are the grades'
test processes, and the worker template, whose runs are CPU grades' worker launchers
(`staff.sandbox.client`). A test process reaches the worker template through the descriptor its
environment names (`WORKER_TEMPLATE_FD`), inherited from the batch. Whatever cannot be forked (a
template that did not start, died or refused) returns None, and the caller starts the run afresh.
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
from pathlib import Path

from staff.sandbox import keeper

KEEPER = Path(keeper.__file__).resolve()
TEMPLATE = Path(__file__).resolve().with_name("warm_template.py")
START_TIMEOUT_S = 120.0  # for the template's imports, on a busy machine
WORKER_TEMPLATE_FD = "STAFF_WORKER_TEMPLATE_FD"  # a test process's variable: the worker template's socket


class WarmRun:
    """A test run the template forked, as much of `subprocess.Popen` as `run_suite` uses: `pid` (the
    run's keeper, leader of its own session), `poll`, `wait`, `send_signal`, `returncode`."""

    def __init__(self, run: socket.socket, pid: int, pidfd: int, peak_kib: int = 0) -> None:
        self.run, self.pid, self.pidfd = run, pid, pidfd
        self.peak_kib = peak_kib  # the template's peak resident memory when it forked the run (KiB)
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self.run], [], [], 0)[0]:
            self._ended()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not select.select([self.run], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(f"run {self.pid}", timeout or 0)
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
    """One template process and the socket to it; `start` is safe from several threads.

    `interpreter` starts it (the Python and its flags), `options` are the template's own (see
    `warm_template.py`), `env` its environment and that of its runs but for `varies`. `pass_fds` are
    descriptors the template keeps open, so that its runs inherit them."""

    def __init__(self, env: dict[str, str], interpreter: list[str] | None = None, options: list[str] = (),
                 varies: tuple[str, ...] = (), pass_fds: tuple[int, ...] = ()) -> None:
        self.lock = threading.Lock()
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.said = tempfile.TemporaryFile()  # what it printed: a pipe nobody read could block it
        command = [*(interpreter or [sys.executable, "-P"]), str(TEMPLATE), str(KEEPER), str(theirs.fileno()),
                   *options, *(["--varies", ",".join(varies)] if varies else [])]
        try:
            self.process: subprocess.Popen | None = subprocess.Popen(
                command, env=env, stdin=subprocess.DEVNULL, stdout=self.said, stderr=self.said,
                pass_fds=(theirs.fileno(), *pass_fds))
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

    @classmethod
    def inherited(cls, fd: int) -> WarmTemplate:
        """The template whose socket this process inherited at `fd` (a test process's, from its batch):
        this process never ends it."""
        template = cls.__new__(cls)
        template.lock = threading.Lock()
        template.control, template.process, template.said = socket.socket(fileno=fd), None, None
        template.why_not = None
        return template

    def start(self, argv: list[str], cwd: Path, env: dict[str, str], log: int, watch: int | None = None,
              pass_fds: tuple[int, ...] = (), executable: str = sys.executable) -> WarmRun | None:
        """Run `python ARGV` in `cwd` with `env`, its output to the descriptor `log`, forked from the
        template; None where it cannot (the caller starts the run afresh). With `watch` (a pipe's
        reading end), the run ends when the caller closes the writing end; `pass_fds` are the only other
        descriptors the run holds, at the same numbers. `executable` is the Python the run must be."""
        if self.why_not is not None:
            return None
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        request = json.dumps({"argv": argv, "cwd": str(cwd), "env": env, "executable": executable,
                              "watch": watch is not None, "pass_fds": list(pass_fds)}).encode()
        fds: list[int] = []
        try:
            with self.lock:
                socket.send_fds(self.control, [request],
                                [theirs.fileno(), log, *([] if watch is None else [watch]), *pass_fds])
            theirs.close()
            if not select.select([ours], [], [], START_TIMEOUT_S)[0]:
                raise OSError("the template did not fork the run")
            message, fds, _, _ = socket.recv_fds(ours, 1 << 12, 1)
            answer = json.loads(message)
            if "refused" in answer and not fds:
                ours.close()
                return None  # this run only: its environment is not the template's
            if len(fds) != 1:
                raise OSError("the template's answer held no pidfd")
            return WarmRun(ours, int(answer["pid"]), fds[0], int(answer.get("peak_kib", 0)))
        except (OSError, ValueError, KeyError, TypeError) as error:
            # It may fork the run still: ended with the template (each keeper's parent-death signal), so no
            # run the grader does not track writes into the workspace beside the fresh one that replaces it.
            if self.process is not None:
                self.process.kill()
            for fd in fds:
                os.close(fd)
            theirs.close()
            ours.close()
            self.why_not = f"it stopped answering ({error})"
            print(f"the warm template stopped answering ({error}): it is ended, and later runs start afresh",
                  file=sys.stderr)
            return None

    def close(self) -> None:
        """End the template: it exits once every holder of its socket closed it, and a run still going
        ends with it (each keeper's parent-death signal): a batch closes it once its grades are done."""
        self.control.close()
        if self.process is None:
            return
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.said.close()


def worker_template() -> WarmTemplate | None:
    """The worker template this process inherited from its batch (`WORKER_TEMPLATE_FD`), or None."""
    global _inherited
    fd = os.environ.get(WORKER_TEMPLATE_FD, "")
    if _inherited is None and fd.isdigit():
        try:
            os.fstat(int(fd))
        except OSError:
            return None
        _inherited = WarmTemplate.inherited(int(fd))
    return _inherited


_inherited: WarmTemplate | None = None
