"""The sbatch script of `staff grade --batch DIR --slurm`: one array job, task K grading shard K/N.

The script is plain bash with #SBATCH lines, written to OUT/slurm/ so that a TA can read it, keep it
and submit it again by hand (`sbatch OUT/slurm/grade-cpu.sbatch`, or one task: `sbatch --array=K ...`).
Each task runs `staff grade --batch DIR --out OUT --shard K/N` with the grade's options, then writes
its exit status to OUT/slurm/exit/JOB_K: a task that left the queue without one was killed
(cancelled, out of time or memory, or its node failed).
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from staff.errors import StaffError

GIB_PER_GRADE = 4  # memory asked per submission graded at once (a grade's processes peak near 2 GiB here)
GPU_CPUS = 4  # CPUs of a GPU task: the cuda tests compare against CPU runs of the same code
GPU_TASK_GIB = 16  # memory of a GPU task (not measured here, which has no GPU; raise it with -- --mem=...)
# Options staff sets itself; extra sbatch options may not name them.
RESERVED = {"-a": "--array", "--array": "--array", "-o": "--output", "--output": "--output",
            "-e": "--error", "--error": "--error"}
# Options staff sets by default; an extra sbatch option of the same name replaces staff's line.
REPLACEABLE = {"-c": "--cpus-per-task", "--cpus-per-task": "--cpus-per-task", "--mem": "--mem",
               "-p": "--partition", "--partition": "--partition", "--gres": "--gres", "-J": "--job-name",
               "--job-name": "--job-name"}


class ScriptError(StaffError, ValueError):
    """Extra sbatch options that cannot go into the script; the message says which and why."""


INTERPRETER_MISSING = 3  # a task's exit status where its node cannot run the environment's interpreter


@dataclass(frozen=True)
class ArrayJob:
    """What one array job grades and how: the folders (absolute), the shards, the grade's options."""

    folder: Path  # DIR, the batch
    out: Path  # OUT, shared by every task
    shards: int  # N: tasks 1..N, task K grading shard K/N
    repo: Path  # this tree, where the tasks run `python -m staff.cli`
    python: str  # the interpreter of this tree's environment
    gpu: bool = False
    jobs: int = 2  # submissions a CPU task grades at once (a GPU task: 1)
    partition: str | None = None
    grade_options: list[str] = field(default_factory=list)  # passed on to each task's `staff grade`
    extra: list[str] = field(default_factory=list)  # extra sbatch options, as given after `--`

    @property
    def name(self) -> str:
        return "grade-gpu" if self.gpu else "grade-cpu"

    @property
    def path(self) -> Path:
        """Where the script is written: OUT/slurm/grade-cpu.sbatch or grade-gpu.sbatch."""
        return self.out / "slurm" / f"{self.name}.sbatch"


def sbatch_lines(extra: list[str]) -> list[list[str]]:
    """Extra sbatch options grouped one option each: ["--time", "1:00:00", "--qos=long"] ->
    [["--time", "1:00:00"], ["--qos=long"]].

    Raises:
        ScriptError: a value comes before any option, or an option is one staff sets itself.
    """
    groups: list[list[str]] = []
    for token in extra:
        if token.startswith("-"):
            name = token.split("=", 1)[0]
            if name in RESERVED or any(name.startswith(short) and len(name) > 2 for short in ("-a", "-o", "-e")):
                raise ScriptError(f"sbatch option {token!r}: staff sets {RESERVED.get(name, name)} itself (one "
                                  f"task per shard, logs in OUT/slurm/); choose the shards with --shards N")
            groups.append([token])
        elif groups:
            groups[-1].append(token)
        else:
            raise ScriptError(f"{token!r} after `--` is not an sbatch option; options start with - "
                              f"(e.g. -- --time=2:00:00 --qos=long)")
    return groups


def array_script(job: ArrayJob, written: str = "") -> str:
    """The script's text. `written` (e.g. a date) goes into its first comment."""
    q = lambda path: shlex.quote(str(path))  # noqa: E731
    extra = sbatch_lines(job.extra)
    replaced = {REPLACEABLE.get(group[0].split("=", 1)[0]) for group in extra}
    jobs = 1 if job.gpu else max(1, job.jobs)
    cpus = GPU_CPUS if job.gpu else jobs
    ours = [("--job-name", "staff-grade-gpu" if job.gpu else "staff-grade"),
            ("--cpus-per-task", str(cpus)), ("--mem", f"{GPU_TASK_GIB if job.gpu else GIB_PER_GRADE * jobs}G")]
    if job.partition:
        ours.append(("--partition", job.partition))
    if job.gpu:
        ours.append(("--gres", "gpu:1"))  # one GPU per task: no timing shares a device
    logs, status = job.out / "slurm", job.out / "slurm" / "exit"
    part = "the GPU part (results-gpu.json)" if job.gpu else "the CPU part (results.json)"
    staff = f"{q(job.python)} -m staff.cli"
    command = [*shlex.split(staff), "grade", "--batch", str(job.folder), "--out", str(job.out)]
    lines = [
        "#!/bin/bash",
        f"# Grades {part} of the batch {job.folder} on Slurm{f' (written {written})' if written else ''}.",
        f"# Array task K grades shard K/{job.shards} of the batch (`staff grade --shard K/{job.shards}`: the "
        "submissions whose name's",
        f"# sha256 is K-1 modulo {job.shards}) into {job.out}/<name>/, skipping what is already graded there.",
        f"# The batch, {job.out} and {job.repo} (with its environment) must be on a folder every node sees.",
        f"# Submit by hand: sbatch {q(job.path)}    one task again: sbatch --array=K {q(job.path)}",
        f"# Logs: {logs}/JOB_K.log. When every task has ended, the gradebook:",
        f"#   {staff} gradebook {q(job.out)} --batch {q(job.folder)}",
        f"#SBATCH --array=1-{job.shards}",
        f"#SBATCH --output={logs}/%A_%a.log",
        *(f"#SBATCH {name}={value}" for name, value in ours if name not in replaced),
        *(f"#SBATCH {shlex.join(group)}" for group in extra),
        "set -u",
        f"cd {q(job.repo)}",
        f"threads=$(( ${{SLURM_CPUS_PER_TASK:-{cpus}}} / {jobs} ))  # torch threads per submission graded at once",
        "[ \"$threads\" -ge 1 ] || threads=1",
        "status=0",
        # The environment's interpreter is often a link to one outside the shared folders (uv's, the
        # system's): a node without it would fail every call; this says so once, and no grade is made.
        f"if ! {q(job.python)} -c 'import torch, pytest' >/dev/null 2>&1; then",
        f"  echo \"staff: node $(hostname) cannot run\" {q(job.python)} \"with torch and pytest (on the login node "
        f"it is\" {q(os.path.realpath(job.python))}\"); put an interpreter on a folder every node sees, as the "
        f"README's cluster part says\" >&2",
        f"  status={INTERPRETER_MISSING}",
        "else",
        f"  {shlex.join(command)} --shard \"$SLURM_ARRAY_TASK_ID/{job.shards}\" -j {jobs} \\",
        f"    --threads \"$threads\"{''.join(' ' + q(option) for option in job.grade_options)} || status=$?",
        "fi",
        f"mkdir -p {q(status)}",
        f"echo \"$status\" > {q(status)}/\"${{SLURM_ARRAY_JOB_ID}}_${{SLURM_ARRAY_TASK_ID}}\"",
        "exit \"$status\"",
    ]
    return "\n".join(lines) + "\n"
