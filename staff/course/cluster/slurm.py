"""`staff grade --batch DIR --slurm`: the batch's shards as one Slurm array job, followed to the end,
then the gradebook from everything in OUT.

Only the shards that still miss a submission are submitted (`--array=2,5`), so running the same
command again after a failure grades only what is missing. The script is written to OUT/slurm/ first
(script.py); `--dry-run` prints it and submits nothing. Stopping the watch (Ctrl-C) leaves the job
running; `staff gradebook OUT` writes the gradebook later.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

SUBMISSIONS_PER_SHARD = 10  # --shards' default: one task per ten submissions
FLAGS = ("force", "verbose")  # `staff grade` switches, besides the settings, passed on to every task


def add_options(grade: argparse.ArgumentParser) -> None:
    """`staff grade`'s options for shards and Slurm."""
    group = grade.add_argument_group("shards and Slurm (docs/cluster.md)")
    group.add_argument("--shard", metavar="K/N", default=None,
                       help="with --batch, grade only shard K of N (the submissions whose name's sha256 is K-1 "
                       "modulo N); shards never share a submission, and write no gradebook: `staff gradebook OUT`")
    group.add_argument("--slurm", action="store_true",
                       help="with --batch, grade the shards as one Slurm array job (one task per shard), follow "
                       "it, then write the gradebook; options after `--` go to sbatch")
    group.add_argument("--shards", type=int, default=None, metavar="N",
                       help=f"with --slurm, the number of shards and tasks (default: one per "
                       f"{SUBMISSIONS_PER_SHARD} submissions)")
    group.add_argument("--partition", default=None, metavar="P", help="with --slurm, the partition to run in")
    group.add_argument("--dry-run", action="store_true", help="with --slurm, print the script; submit nothing")
    group.add_argument("--poll", type=float, default=10.0, metavar="SECONDS",
                       help="with --slurm, seconds between looks at the queue (default: %(default)g)")


def grade_options(args: argparse.Namespace) -> list[str]:
    """The options of this `staff grade` that every task's `staff grade --shard` must get too."""
    from staff.sandbox.settings import from_arguments, to_arguments

    return [f"--{name}" for name in FLAGS if getattr(args, name, False)] + to_arguments(from_arguments(args))


def refused(args: argparse.Namespace) -> str:
    """Why these options cannot go together ("" when they can)."""
    if args.shard and args.slurm:
        return "--slurm runs every shard itself; give --shard K/N or --slurm, not both"
    slurm_only = [name for name, given in (("--shards", args.shards is not None), ("--partition", args.partition),
                                           ("--dry-run", args.dry_run), ("options after --", args.sbatch))
                  if given]
    if slurm_only and not args.slurm:
        return f"{', '.join(slurm_only)} go with --slurm only"
    if (args.shard or args.slurm) and args.batch is None:
        return "--shard and --slurm grade a batch: give --batch DIR"
    if args.shards is not None and args.shards < 1:
        return f"--shards {args.shards}: expected at least 1"
    return ""


def main_slurm(args: argparse.Namespace, folder: Path, out: Path) -> int:
    """Submit the shards that miss a submission, follow them, write the gradebook; 0 when every
    submission is graded, 1 when a task failed, 2 on bad input or a Slurm command that failed."""
    from staff.course.batch import to_grade
    from staff.course.cluster.script import ArrayJob, ScriptError, array_script
    from staff.course.cluster.shards import shard_of
    from staff.course.cluster.watch import SlurmError, array_list, slurm
    from staff.course.folder import RESULTS, RESULTS_GPU, BatchError, find_submissions
    from staff.grading.grade import REPO_ROOT

    results = RESULTS_GPU if args.gpu else RESULTS
    try:
        submissions = find_submissions(folder)
        if folder == out or folder in out.parents:
            raise BatchError(f"{out} is inside the batch folder {folder}; choose another output folder")
        shards = args.shards or max(1, math.ceil(len(submissions) / SUBMISSIONS_PER_SHARD))
        job = ArrayJob(folder, out, shards, REPO_ROOT, sys.executable, bool(args.gpu), args.jobs or 2, args.partition,
                       grade_options(args), args.sbatch)
        script = array_script(job, time.strftime("%Y-%m-%d %H:%M %Z"))
    except (BatchError, ScriptError) as error:
        print(f"staff grade: {error}", file=sys.stderr)
        return 2
    if args.dry_run:
        print(script, end="")
        print(f"# --dry-run: nothing submitted; `staff grade` would write this to {job.path} and run "
              f"`sbatch --array=LIST {job.path}` for the shards that miss a submission", file=sys.stderr)
        return 0
    from staff.course.stale import Current
    from staff.sandbox.settings import from_arguments

    current = Current.of(from_arguments(args))
    stale = to_grade(submissions, out, results, current, args.force)
    tasks = sorted({shard_of(s.key, shards) for s in submissions if s.key in stale})
    if tasks:
        job.path.parent.mkdir(parents=True, exist_ok=True)
        job.path.write_text(script, encoding="utf-8")
        job.path.chmod(0o755)
        try:
            job_id = slurm(["sbatch", "--parsable", f"--array={array_list(tasks)}", str(job.path)]).strip()
            job_id = job_id.split(";", 1)[0]
        except SlurmError as error:
            print(f"staff grade: {error}\nthe script is {job.path}", file=sys.stderr)
            return 2
        print(f"submitted Slurm job {job_id}: {len(tasks)} of {shards} shards ({array_list(tasks)}) of "
              f"{len(submissions)} submissions; script {job.path}", file=sys.stderr)
        try:
            failed = follow(job_id, tasks, out, [out / s.key / results for s in submissions], args.poll)
        except SlurmError as error:
            print(f"staff grade: {error}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print(f"\nstaff grade: stopped watching; job {job_id} goes on (`squeue -j {job_id}`). When it has "
                  f"ended: staff gradebook {out} --batch {folder}", file=sys.stderr)
            return 130
    else:
        failed = []
        print(f"every submission of {folder} is already graded in {out}; nothing submitted", file=sys.stderr)
    from staff.course.gradebook import write_gradebook

    lines, files = write_gradebook(submissions, out)
    print("\n".join(lines))
    print("\nwritten: " + ", ".join(str(f.relative_to(out)) for f in files) + f" in {out}")
    missing = len(to_grade(submissions, out, results, current))  # a stale grade a failed task left counts too
    if failed or missing:
        print(f"staff grade: {len(failed)} task(s) failed, {missing} submission(s) not graded or stale; run the same "
              f"command again to grade only those", file=sys.stderr)
        return 1
    return 0


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
