"""`staff grade --batch DIR --slurm`: the batch's shards as one Slurm array job, followed to the end,
then the gradebook from everything in OUT.

Only the shards that still miss a submission are submitted (`--array=2,5`), so running the same
command again after a failure grades only what is missing. The script is written to OUT/slurm/ first
(script.py); `--dry-run` prints it and submits nothing. Stopping the watch (Ctrl-C) leaves the job
running; `staff gradebook OUT` writes the gradebook later.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from staff.sandbox.settings import Settings

SUBMISSIONS_PER_SHARD = 10  # --shards' default: one task per ten submissions


@dataclass(frozen=True)
class SlurmBatch:
    """A batch to grade as one Slurm array job: DIR's submissions into OUT, with `settings` in every task."""

    folder: Path  # DIR, the batch
    out: Path  # OUT, outside DIR
    settings: Settings
    jobs: int = 2  # submissions a task grades at once
    shards: int | None = None  # tasks; None: one per SUBMISSIONS_PER_SHARD submissions
    partition: str | None = None
    force: bool = False  # grade again what is already graded
    verbose: bool = False  # each task's pytest output in its log
    sbatch: tuple[str, ...] = field(default_factory=tuple)  # options for sbatch (`-- OPTIONS`)
    poll_s: float = 10.0  # seconds between looks at the queue


@dataclass(frozen=True)
class SlurmOutcome:
    """What a Slurm batch came to: the gradebook's lines and files, the tasks that failed and the
    submissions still not graded (or stale). `script` alone is set by a dry run, which submits nothing."""

    lines: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    failed_tasks: list[int] = field(default_factory=list)
    missing: int = 0
    script: str = ""
    script_path: Path | None = None  # where a submitted run writes the script

    @property
    def complete(self) -> bool:
        return not self.failed_tasks and not self.missing


def task_options(batch: SlurmBatch) -> list[str]:
    """The `staff grade` options every task's `staff grade --shard` gets, to grade as this batch does."""
    from staff.sandbox.settings import to_arguments

    flags = [f"--{name}" for name, given in (("force", batch.force), ("verbose", batch.verbose)) if given]
    return flags + to_arguments(batch.settings)


def grade_on_slurm(batch: SlurmBatch, dry_run: bool = False) -> SlurmOutcome:
    """Submit the shards that miss a submission, follow them to the end and write the gradebook; with
    `dry_run`, only the script (SlurmOutcome.script). Stopping the watch (KeyboardInterrupt) leaves the
    job running, says how to look at it, and is raised again.

    Raises:
        BatchError, ScriptError, SlurmError: bad input, or a Slurm command that failed.
    """
    from staff.course.batch import to_grade
    from staff.course.cluster.script import ArrayJob, array_script
    from staff.course.cluster.shards import shard_of
    from staff.course.cluster.watch import SlurmError, array_list, slurm
    from staff.course.folder import RESULTS, RESULTS_GPU, BatchError, find_submissions
    from staff.course.stale import Current
    from staff.grading.grade import REPO_ROOT

    folder, out = batch.folder, batch.out
    results = RESULTS_GPU if batch.settings.gpu else RESULTS
    submissions = find_submissions(folder)
    if folder == out or folder in out.parents:
        raise BatchError(f"{out} is inside the batch folder {folder}; choose another output folder")
    shards = batch.shards or max(1, math.ceil(len(submissions) / SUBMISSIONS_PER_SHARD))
    job = ArrayJob(folder, out, shards, REPO_ROOT, sys.executable, batch.settings.gpu, batch.jobs, batch.partition,
                   task_options(batch), list(batch.sbatch))
    script = array_script(job, time.strftime("%Y-%m-%d %H:%M %Z"))
    if dry_run:
        return SlurmOutcome(script=script, script_path=job.path)
    current = Current.of(batch.settings)
    stale = to_grade(submissions, out, results, current, batch.force)
    tasks = sorted({shard_of(s.key, shards) for s in submissions if s.key in stale})
    failed: list[int] = []
    if tasks:
        job.path.parent.mkdir(parents=True, exist_ok=True)
        job.path.write_text(script, encoding="utf-8")
        job.path.chmod(0o755)
        try:
            job_id = slurm(["sbatch", "--parsable", f"--array={array_list(tasks)}", str(job.path)]).strip()
        except SlurmError as error:
            raise SlurmError(f"{error}\nthe script is {job.path}") from error
        job_id = job_id.split(";", 1)[0]
        print(f"submitted Slurm job {job_id}: {len(tasks)} of {shards} shards ({array_list(tasks)}) of "
              f"{len(submissions)} submissions; script {job.path}", file=sys.stderr)
        try:
            failed = follow(job_id, tasks, out, [out / s.key / results for s in submissions], batch.poll_s)
        except KeyboardInterrupt:
            print(f"\nstaff grade: stopped watching; job {job_id} goes on (`squeue -j {job_id}`). When it has "
                  f"ended: staff gradebook {out} --batch {folder}", file=sys.stderr)
            raise
    else:
        print(f"every submission of {folder} is already graded in {out}; nothing submitted", file=sys.stderr)
    from staff.course.gradebook import write_gradebook

    lines, files = write_gradebook(submissions, out)
    missing = len(to_grade(submissions, out, results, current))  # a stale grade a failed task left counts too
    return SlurmOutcome(lines, files, failed, missing)


def follow(job_id: str, tasks: list[int], out: Path, result_files: list[Path], poll_s: float) -> list[int]:
    """Print the job's progress until every task has left the queue: submissions graded, tasks done,
    running, pending and failed (each failure with its log's last lines); the failed tasks."""
    from staff.course.cluster.watch import ArrayWatch, queued

    watch, shown = ArrayWatch(job_id, tasks, out), ""
    while True:
        states = queued(job_id)
        for task in watch.look(states):
            print("\n".join(watch.report(task)), file=sys.stderr)
        counts = watch.counts(states)
        graded = sum(path.is_file() for path in result_files)
        line = (f"job {job_id}: {graded} of {len(result_files)} submissions graded; tasks: "
                + ", ".join(f"{count} {name}" for name, count in counts.items()))
        if line != shown:
            print(f"{time.strftime('%H:%M:%S')} {line}", file=sys.stderr, flush=True)
            shown = line
        if watch.ended:
            return sorted(watch.failed)
        time.sleep(poll_s)
