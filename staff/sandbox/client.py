"""The grader's side of the worker: start it, send it calls with a deadline, kill it when needed.

A `Worker` is one worker process for one submission; after a crash or a time-out it is killed
(its whole PID namespace, or its process group and every process of its user) and the next call
starts a fresh one. Everything it sends back is read with `frames.read_frame` and decoded with
`adapters._codec.decode`: data only. What the worker prints goes through a pipe into a bounded log
(output_log.py). What it is started with is in worker_config.py; how a call fails, in failures.py.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

from adapters._route import process_bytes_read
from staff.sandbox import call_clock, memory, memory_group, settings
from staff.sandbox.call_clock import CallDeadline, Usage
from staff.sandbox.failures import (
    CallTimedOut,
    GraderOutOfMemory,
    MachineBusy,
    WorkerCrashed,
    WorkerNotStarted,
    memory_failure,
    status_words,
)
from staff.sandbox.frames import FrameError, FrameTimeout, PipeClosed, read_frame, unread_bytes, write_frame
from staff.sandbox.keeper import end_everything_below
from staff.sandbox.leftovers import kill_user, remove_leftovers
from staff.sandbox.output_log import BoundedLog, pump
from staff.sandbox.process_tree import CHECK, children, descendants
from staff.sandbox.warm import WarmRun, worker_template
from staff.sandbox.worker_config import WORKER_FLAGS, WorkerConfig, worker_environment

# What one reply may hold. The reference's largest, over a whole grade: a 1.4 MB header, 4.2 MB of
# blobs. These bound what a reply costs the grading process (one copy of the blobs, the header's
# JSON as Python objects) whatever the worker sends.
MAX_REPLY_HEADER_BYTES = 8 << 20
MAX_REPLY_BLOB_BYTES = 64 << 20
KEEPER_END_S = 30.0  # for a forked launcher's keeper to end everything below it once told


class Worker:
    """The worker of one submission: a confined zygote (started on first use, and again if it dies)
    and the child it forked to serve calls (forked again after each crash or time-out)."""

    def __init__(self, config: WorkerConfig, config_path: Path,
                 startup_timeout_s: float = settings.default("startup_timeout_s")) -> None:
        self.config, self.config_path, self.startup_timeout_s = config, config_path, startup_timeout_s
        self.process: subprocess.Popen | WarmRun | None = None  # the launcher (or, forked, its keeper)
        self.watch = -1  # a forked launcher's keeper ends it when this pipe closes
        self.control: socket.socket | None = None
        self.ready = False
        self.requests = self.responses = -1  # the serving child's pipes; -1 when there is none
        self.log = BoundedLog()
        self.protections: dict[str, str] = {}
        self.uid, self.gid = os.getuid(), os.getgid()  # who the worker runs as, once it said hello
        self.zygote_kib = 0  # the zygote's peak resident memory at hello (its children start from it)
        self.child_peak_kib = 0  # the last ended child's peak resident memory
        self.stopped_why: str | None = None  # why the zygote ended the last child, where it ended it itself
        self.next_id = 0
        self.buffer = b""
        self.cgroup = memory.memory_cgroup()  # the container's memory cgroup, read on each call
        self.group = Path(config.memory_group) if config.memory_group else None  # the worker's own, if any
        self.group_baseline = 0  # what the group held when the zygote said hello (torch and the adapters)
        self.grader_out_of_memory: str | None = None  # set once the container, not the code, ran out
        self.not_started: str | None = None  # set when the first zygote did not start: the grader's failure
        self.machine_busy: str | None = None  # set when a call could not be timed for the machine's other work
        self.serving: int | None = None  # the serving child's pid in the zygote's PID namespace
        self.serving_here: tuple[int, int] | None = None  # the zygote's and the serving child's pids here
        self.started_once = False

    # -- lifetime ---------------------------------------------------------------------------------

    def spawn(self) -> None:
        """Start the launcher; the zygote imports torch while the caller goes on (see `ensure_ready`).
        In a batch, a CPU grade's launcher is forked from the batch's worker template, which imported
        torch and numpy once (`staff.sandbox.warm`); elsewhere, or where it cannot, a fresh interpreter."""
        self.ready = False
        self.control, theirs = socket.socketpair()
        output_read, output_write = os.pipe()
        env = worker_environment(self.config, os.environ)
        argv = [str(Path(self.config.code) / "worker.py"), str(self.config_path)]
        try:
            self.process = self._forked(argv, env, theirs, output_write) or self._started(argv, env, theirs,
                                                                                          output_write)
        finally:
            theirs.close()
            os.close(output_write)
        threading.Thread(target=pump, args=(output_read, self.log), daemon=True).start()

    def _write_config(self, control_fd: int, grader_pid: int | None, mount_namespace_fd: int | None = None) -> None:
        config = {**asdict(self.config), "control_fd": control_fd, "grader_pid": grader_pid,
                  "mount_namespace_fd": mount_namespace_fd}
        self.config_path.write_text(json.dumps(config))

    def _started(self, argv: list[str], env: dict[str, str], theirs: socket.socket, output: int) -> subprocess.Popen:
        """The launcher as a fresh interpreter, a child of this process."""
        self._write_config(theirs.fileno(), os.getpid())
        return subprocess.Popen([self.config.python, *WORKER_FLAGS, *argv], cwd=self.config.folder, env=env,
                                stdin=subprocess.DEVNULL, stdout=output, stderr=output, pass_fds=(theirs.fileno(),),
                                start_new_session=True)

    def _forked(self, argv: list[str], env: dict[str, str], theirs: socket.socket, output: int) -> WarmRun | None:
        """The launcher forked from the batch's worker template, under a keeper of its own that ends it
        and everything below it when `self.watch` closes; None where there is no template or it cannot."""
        template = worker_template() if not self.config.cuda else None  # a GPU grade's: as it was tried on GPUs
        if template is None:
            return None
        # Not this process's child, so not in its mount namespace (where, as root, its disk quota's tmpfs cover
        # the worker's folders): the launcher joins it first, through this descriptor.
        mounts = os.open("/proc/self/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
        self._write_config(theirs.fileno(), None, mounts)  # its parent is its keeper, which checked its own
        watch, self.watch = os.pipe()
        try:
            run = template.start(argv, Path(self.config.folder), env, output, watch=watch,
                                 pass_fds=(theirs.fileno(), mounts), executable=self.config.python)
        finally:
            os.close(watch)
            os.close(mounts)
        if run is None:
            os.close(self.watch)
            self.watch = -1
        return run

    def _message(self, deadline: float) -> dict:
        """The next line-delimited JSON message from the zygote (FrameTimeout, FrameError on EOF)."""
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.control], [], [], left)[0]:
                raise FrameTimeout("timed out")
            chunk = self.control.recv(1 << 16)
            if not chunk:
                raise FrameError("the zygote closed its socket")
            self.buffer += chunk
            if len(self.buffer) > 1 << 20:
                raise FrameError("the zygote's message is too long")
        line, self.buffer = self.buffer.split(b"\n", 1)
        try:
            message = json.loads(line)
        except ValueError as error:
            raise FrameError(f"the zygote sent something that is not JSON: {error}") from None
        if not isinstance(message, dict):
            raise FrameError("the zygote sent something that is not a message")
        return message

    def ensure_ready(self) -> None:
        """A zygote that has said hello: the one started last, or a new one if that one is gone.

        Raises:
            WorkerCrashed: it could not start again after student code ran (the message holds what it printed).
            WorkerNotStarted: the first zygote did not start (recorded in `not_started`; see `_not_started`).
            GraderOutOfMemory: the kernel killed it for the container's memory (see `_out_of_memory`).
        """
        with self._watching_memory():
            self._ensure_ready()

    def _ensure_ready(self) -> None:
        if self.not_started is not None:
            raise WorkerNotStarted(self.not_started)  # it would fail the same way again
        if self.process is None or self.process.poll() is not None or self.control is None:
            self.stop()
            self.spawn()
        if self.ready:
            return
        try:
            hello = self._message(time.monotonic() + self.startup_timeout_s)
        except FrameError as error:
            why = f"it {status_words(self.process.wait(5))}" if not isinstance(error, FrameTimeout) and \
                self.process.poll() is not None else f"it did not start within {self.startup_timeout_s:g} s"
            self.stop()
            raise self._not_started(f"{why}\n{self.log.take()}") from None
        if not hello.get("ok"):
            self.stop()
            raise self._not_started(f"\n{hello.get('error', '')}")
        self.started_once = True
        self.protections = {str(k): str(v) for k, v in dict(hello.get("protections", {})).items()}
        self.uid, self.gid = int(hello.get("uid", os.getuid())), int(hello.get("gid", os.getgid()))
        # A zygote forked from the template has its imports' pages without having touched them: the
        # template's peak is what a fresh one reached by importing them.
        self.zygote_kib = max(int(hello.get("peak_kib", 0) or 0), getattr(self.process, "peak_kib", 0))
        if self.group is not None:
            self.group_baseline = memory_group.usage_bytes(self.group) or 0
        self.ready = True

    def _not_started(self, said: str) -> WorkerCrashed | WorkerNotStarted:
        """A zygote that did not say hello (`said`: how it ended, what it printed). It imports no student
        code, so the first one's failure is the grader's (recorded in `not_started`, which the grade
        ends on): a memory limit too small for torch above all, which a grade of every submission
        would meet. After student code ran (which may have killed the last zygote) a failed restart
        stays a crash of the student's process."""
        if self.started_once:
            return WorkerCrashed(f"the grader's worker process could not start: {said}")
        limit = self.config.limits.memory_bytes
        hint = (f"; it ran under an address-space limit of {limit / 2**30:g} GiB (--memory-gib): torch needs "
                f"at least {settings.MEMORY_FLOOR_GIB:g}, so give that or more, or 0 for no limit") if limit else ""
        last = [line.strip() for line in said.splitlines() if line.strip()][-1:] or ["it said nothing"]
        self.not_started = f"its worker process did not start, before any of the submission's code ran, so no " \
                           f"test was counted (this is not the student's fault){hint} (the last it said: " \
                           f"{last[0][:300]})"
        return WorkerNotStarted(f"{self.not_started}\n{said}")

    def fresh_child(self) -> str:
        """Have the zygote end the serving child (and all it started) and fork a new one; how the old
        one had ended ("" when there was none). Raises as `ensure_ready`."""
        with self._watching_memory():
            return self._fresh_child()

    def _fresh_child(self) -> str:
        self.ensure_ready()
        self._close_child()
        request_read, self.requests = os.pipe()
        self.responses, response_write = os.pipe()
        os.set_blocking(self.requests, False)
        try:
            socket.send_fds(self.control, [b'{"op": "spawn"}'], [request_read, response_write])
            reply = self._message(time.monotonic() + 60)
        except (OSError, FrameError) as error:
            self.stop()
            raise WorkerCrashed(f"the grader's worker process stopped answering ({error})") from None
        finally:
            os.close(request_read)
            os.close(response_write)
        previous, why = reply.get("previous"), reply.get("previous_why")
        self.serving = reply.get("pid") if isinstance(reply.get("pid"), int) else None
        self.serving_here = None
        peak = reply.get("previous_peak_kib")
        self.child_peak_kib = peak if isinstance(peak, int) else 0
        self.stopped_why = why[:1000] if isinstance(why, str) else None
        if self.stopped_why is not None:  # the zygote ended it (what it held): why, not the SIGKILL it sent
            return self.stopped_why
        return status_words(previous) if isinstance(previous, int) else ""

    def held_past_limits(self) -> str | None:
        """Why the serving child's processes must end for what they hold now (page tables, deleted
        files, pipes: see the worker's `process_tree`), asked of the zygote after a call, which ends
        them then; or why it ended them since the last call. None when all is well or no child serves.

        Raises:
            WorkerCrashed: the zygote stopped answering."""
        if self.control is None or self.requests < 0:
            return None
        try:
            self.control.sendall(CHECK)
            reply = self._message(time.monotonic() + 30)
        except (OSError, FrameError) as error:
            self.stop()
            raise WorkerCrashed(f"the grader's worker process stopped answering ({error})") from None
        why = reply.get("why")
        return why[:1000] if isinstance(why, str) else None

    def bytes_read(self) -> int | None:
        """What the worker's processes have read through read(2) and its kin (rchar, bytes), summed
        from the launcher down: a process that ended and was reaped counts in its reaper's (the
        filter keeps any process from ignoring SIGCHLD, whose children the kernel would release
        uncounted). None where the launcher's count is closed to this process or no worker runs;
        the tests then see reads in the page cache alone (see `staff.sandbox.scratch_place`)."""
        if not self.running:
            return None
        roots = self._launchers()
        counts = [process_bytes_read(pid) for pid in roots]
        if not counts or None in counts:
            return None
        return sum(counts) + sum(process_bytes_read(pid) or 0 for root in roots for pid in descendants(root))

    def usage(self) -> Usage | None:
        """What the serving child and the rest of the worker have used (staff/sandbox/call_clock.py), for
        a `ChargedTime`; None where their processes cannot be found or read."""
        pids = self._serving_here()
        threads = call_clock.thread_times(pids[1]) if pids is not None else {}
        total = call_clock.total_cpu_s(pids[0]) if threads else None
        return Usage(pids[1], threads, total) if total is not None else None

    def _launchers(self) -> list[int]:
        """The launcher's pid: the process started, or below a forked launcher's keeper (which is closed to a
        grader of the same user: not dumpable) its one child."""
        return children(self.process.pid) if isinstance(self.process, WarmRun) else [self.process.pid]

    def _serving_here(self) -> tuple[int, int] | None:
        """The zygote's and the serving child's pids here, found once for each serving child."""
        if self.serving_here is None and self.serving is not None and self.running:
            zygotes = [pid for launcher in self._launchers() for pid in children(launcher)]
            if len(zygotes) == 1 and (serving := call_clock.serving_pid(zygotes[0], self.serving)) is not None:
                self.serving_here = zygotes[0], serving
        return self.serving_here

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _close_child(self) -> None:
        for fd in (self.requests, self.responses):
            if fd >= 0:
                os.close(fd)
        self.requests = self.responses = -1

    def stop(self, kill: bool = True) -> None:
        """End the worker: close its socket and pipes (the zygote then ends everything under it and
        exits), then kill what is left of it."""
        self._close_child()
        if self.control is not None:
            self.control.close()
            self.control, self.buffer = None, b""
        self.ready = False
        if self.process is None:
            return
        if not kill:
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                kill = True
        if isinstance(self.process, WarmRun):
            self._end_forked()
        elif kill or self.process.poll() is None:
            for target in (lambda: os.killpg(self.process.pid, signal.SIGKILL),
                           lambda: os.kill(self.process.pid, signal.SIGKILL)):
                try:
                    target()
                except (ProcessLookupError, PermissionError):
                    pass
            self.process.wait()
        # Whether or not the launcher ended on its own: a daemon outside the PID namespace (where none
        # could be made) may still run. This process is a subreaper (see the plugin), so every orphan
        # of the worker is its descendant; a worker of its own user is ended by uid as well.
        end_everything_below(rounds=3, pid=os.getpid())  # SIGKILLed through /proc, and reaped (keeper.py)
        if self.config.uid is not None and os.geteuid() == 0:
            kill_user(self.config.uid)
            left = remove_leftovers(self.config.uid)
            if left:
                print(f"the grader could not remove what the worker's user {self.config.uid} left: {left[:5]}",
                      file=sys.stderr)

    def _end_forked(self) -> None:
        """End a launcher forked from the template: closing the watch has its keeper kill it and every
        process below, then end; its SIGKILL only where the keeper does not (everything below it then
        ends by parent-death signals, or within a PID namespace with its init)."""
        if self.watch >= 0:
            os.close(self.watch)
            self.watch = -1
        try:
            self.process.wait(timeout=KEEPER_END_S)
        except subprocess.TimeoutExpired:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def close(self, kill: bool = True) -> None:
        """Stop the worker for good (`stop`) and remove its memory group, which a later `spawn` would need."""
        self.stop(kill)
        if not memory_group.remove(self.group):
            print(f"the grader could not remove the worker's memory cgroup {self.group}", file=sys.stderr)

    def _oom_kills(self) -> int:
        """The kernel's memory kills so far in the container's cgroup and the worker's own (cgroup v1
        counts a kill only in the victim's group; v2 in its ancestors too: only increases matter)."""
        container = memory.oom_kills(self.cgroup) if self.cgroup is not None else 0
        return container + (memory.oom_kills(self.group) if self.group is not None else 0)

    def _grown_bytes(self) -> int:
        """How much the student's code had grown: the worker group's peak over what it held at hello
        (every form of memory), or without a group the last child's peak RSS over the zygote's."""
        if self.group is not None:
            return max((memory.peak_bytes(self.group) or 0) - self.group_baseline, 0)
        return max(self.child_peak_kib - self.zygote_kib, 0) << 10

    @contextmanager
    def _watching_memory(self) -> Iterator[None]:
        """Turn a crash that came with a kernel memory kill into what it means (see `_out_of_memory`)."""
        killed_before = self._oom_kills()
        try:
            yield
        except WorkerCrashed:
            if self._oom_kills() > killed_before:  # the zygote or the child, for the container or the group
                raise self._out_of_memory() from None
            raise

    def _out_of_memory(self) -> WorkerCrashed | GraderOutOfMemory:
        """What a worker process killed by the kernel for memory means (`failures.memory_failure`, from
        `_grown_bytes`); the container's shortage is recorded in `grader_out_of_memory` for the grade
        to end on."""
        own = memory.limit_bytes(self.group) if self.group is not None else None
        failure = memory_failure(self._grown_bytes(), memory.limit_bytes(self.cgroup), own, self.group is not None)
        if isinstance(failure, GraderOutOfMemory):
            self.grader_out_of_memory = self.grader_out_of_memory or f"the process running the student's code {failure}"
        return failure

    # -- calls ------------------------------------------------------------------------------------

    def request(self, header: dict, blobs: list[bytes], deadline: float | CallDeadline) -> tuple[dict, list[bytes]]:
        """Send one request to the serving child and wait for its reply until `deadline`
        (a time.monotonic() value, or a test's `CallDeadline`).

        Raises:
            CallTimedOut: the deadline passed (the child is ended and replaced).
            MachineBusy: a charged time's wall limit passed first (recorded in `machine_busy`: the grade
                ends on it).
            WorkerCrashed: the child died or sent something that is not a reply (it is replaced); the
                message says how it ended.
            GraderOutOfMemory: the kernel killed a process of the grade for the container's memory
                while the student's code used little of it.
        """
        with self._watching_memory():
            return self._request(header, blobs, deadline)

    def _request(self, header: dict, blobs: list[bytes], deadline: float | CallDeadline) -> tuple[dict, list[bytes]]:
        if self.requests < 0:
            self.fresh_child()
        self.next_id += 1
        header = {**header, "id": self.next_id}
        for attempt in (1, 2):
            try:
                write_frame(self.requests, header, blobs, deadline)
                reply, reply_blobs = read_frame(self.responses, deadline, MAX_REPLY_HEADER_BYTES,
                                                MAX_REPLY_BLOB_BYTES)
                break
            except FrameTimeout:
                busy = self._busy(deadline) if isinstance(deadline, CallDeadline) and deadline.clock.busy else None
                self.fresh_child()
                raise busy or CallTimedOut("timed out") from None
            except (PipeClosed, OSError) as error:
                # A child that ended before it had read this whole call (it reads a call before running
                # it) ended after answering its last one: a thread of the student's, a delayed exit.
                # That is not this call's doing, and the earlier call had its answer: a fresh child
                # takes this one, once. Unless the zygote ended it between calls for what its processes
                # held: this call fails saying why (else a child that holds too much again at once
                # would be ended between calls, every time, and never lose a call).
                unread = isinstance(error, BrokenPipeError) or unread_bytes(self.requests) > 0
                previous = self.fresh_child()
                if unread and attempt == 1 and self.stopped_why is None:
                    continue
                raise WorkerCrashed(previous or f"closed its pipe ({error})") from None
            except FrameError as error:  # the child was alive and is killed now: its end says nothing
                self.fresh_child()
                raise WorkerCrashed(f"sent a reply the grader refuses: {error}") from None
        if reply.get("id") != self.next_id:
            self.fresh_child()
            raise WorkerCrashed(f"answered request {reply.get('id')!r} instead of {self.next_id}")
        return reply, reply_blobs

    def _busy(self, deadline: CallDeadline) -> MachineBusy:
        """A test whose calls reached their wall limit while charged less than their budget: recorded in
        `machine_busy`, for the grade to end on as the grader's failure."""
        clock = deadline.clock
        wall = clock.wall_s + clock.now() - deadline.started
        self.machine_busy = self.machine_busy or (
            f"the grading machine was too busy to time the student's code: a test's calls ran {wall:.0f} s, of which "
            f"they waited {clock.credit_s:.0f} s for CPUs that other programs held, and were ended there; no test was "
            f"counted (this is not the student's fault). Grade it again with fewer jobs at once or on a quieter "
            f"machine (`staff grade --batch` grades it again on its next run)")
        return MachineBusy(f"was ended: {self.machine_busy}")
