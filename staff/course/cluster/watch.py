"""Following a Slurm array job: which tasks are pending, running, done or failed, from `squeue`
and the exit status each task writes (OUT/slurm/exit/JOB_K, see script.py).

`squeue` lists a task while it waits or runs; once it has left the queue, its exit file says how it
ended. A task that left no exit file was killed (scancel, its time or memory limit, a node failure):
`sacct -j JOB` names which where the cluster keeps accounting.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from staff.errors import StaffError

RUNNING_STATES = {"RUNNING", "COMPLETING", "CONFIGURING", "SIGNALING", "STAGE_OUT", "RESIZING"}
LOG_LINES = 12  # a failed task's log lines shown


class SlurmError(StaffError, RuntimeError):
    """A Slurm command failed; the message holds the command and what it said."""


def slurm(command: list[str], timeout_s: float = 60) -> str:
    """Run a Slurm client command; its stdout.

    Raises:
        SlurmError: the command is missing, fails or hangs.
    """
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except FileNotFoundError as error:
        raise SlurmError(f"{command[0]} is not installed here: run this on a Slurm login node") from error
    except subprocess.TimeoutExpired as error:
        raise SlurmError(f"`{' '.join(command)}` did not answer in {timeout_s:g} s") from error
    if done.returncode:
        raise SlurmError(f"`{' '.join(command)}` failed (exit {done.returncode}): {done.stderr.strip()}")
    return done.stdout


def queued(job: str) -> dict[int, str]:
    """Array task -> Slurm state (PENDING, RUNNING, ...) of every task of `job` still in the queue."""
    try:
        text = slurm(["squeue", "--noheader", "--array", "--jobs", job, "--format", "%K|%T"])
    except SlurmError as error:
        if "Invalid job id" in str(error):
            return {}  # the whole job has ended and slurmctld has forgotten it
        raise
    states = {}
    for line in text.splitlines():
        task, _, state = line.strip().partition("|")
        if task.isdigit():
            states[int(task)] = state
    return states


def log_tail(path: Path, lines: int = LOG_LINES) -> list[str]:
    """The last `lines` lines of a task's log (a note when there is none)."""
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
    except OSError:
        return [f"(no log at {path})"]


@dataclass
class ArrayWatch:
    """The tasks of one submitted array job and what became of each."""

    job: str
    tasks: list[int]
    out: Path  # OUT: the logs are OUT/slurm/JOB_K.log, the exit files OUT/slurm/exit/JOB_K
    done: set[int] = field(default_factory=set)
    failed: dict[int, str] = field(default_factory=dict)  # task -> how it ended
    gone: set[int] = field(default_factory=set)  # left the queue without an exit file at the last look

    def log(self, task: int) -> Path:
        return self.out / "slurm" / f"{self.job}_{task}.log"

    def exit_status(self, task: int) -> int | None:
        try:
            return int((self.out / "slurm" / "exit" / f"{self.job}_{task}").read_text().strip())
        except (OSError, ValueError):
            return None

    def look(self, states: dict[int, str]) -> list[int]:
        """Update from `queued()`'s answer; the tasks that failed since the last look. A task gone from
        the queue without an exit file counts as killed at the next look, so that a shared folder which
        shows the file late does not make a task fail."""
        newly = []
        for task in self.tasks:
            if task in self.done or task in self.failed or task in states:
                continue
            status = self.exit_status(task)
            if status == 0:
                self.done.add(task)
            elif status is not None:
                self.failed[task] = f"exit status {status}"
            elif task in self.gone:
                self.failed[task] = (f"killed: it left no exit status (cancelled, over its time or memory, or its "
                                     f"node failed; `sacct -j {self.job}_{task}` says which)")
            else:
                self.gone.add(task)
                continue
            if task in self.failed:
                newly.append(task)
        return newly

    @property
    def ended(self) -> bool:
        """Whether every task is done or failed."""
        return all(task in self.done or task in self.failed for task in self.tasks)

    def counts(self, states: dict[int, str]) -> dict[str, int]:
        running = sum(state in RUNNING_STATES for task, state in states.items() if task in self.tasks)
        pending = sum(task in self.tasks for task in states) - running
        return {"done": len(self.done), "running": running, "pending": pending, "failed": len(self.failed)}

    def report(self, task: int) -> list[str]:
        """What to print for a failed task: how it ended and its log's last lines."""
        return [f"task {task} failed ({self.failed[task]}); the last lines of {self.log(task)}:",
                *(f"  | {line}" for line in log_tail(self.log(task)))]


def array_list(tasks: Iterable[int]) -> str:
    """sbatch's --array value for these task numbers: [1, 2, 3, 5] -> "1-3,5"."""
    ordered, ranges = sorted(set(tasks)), []
    for task in ordered:
        if ranges and task == ranges[-1][1] + 1:
            ranges[-1][1] = task
        else:
            ranges.append([task, task])
    return ",".join(f"{a}-{b}" if b > a else str(a) for a, b in ranges)
