"""`staff grade`: grade one submission, or a folder of them (`--batch`, `--shard`, `--slurm`), into results.json.

The grade's settings (limits, protections, `--gpu`, `--in-process`, `--problems` ...) are the fields
of `staff.sandbox.settings.Settings`, which makes their options; this module adds what is the
command's own (where to write, the batch, -j) and hands one `Settings` to `staff.grading.grade.grade`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from staff.commands.needs_gpu import gpu_refused

DEFAULT_RESULTS, DEFAULT_GPU_RESULTS = Path("results.json"), Path("results-gpu.json")


def register(commands) -> None:
    from staff.commands.settings_options import add_arguments
    from staff.commands.slurm_options import add_options

    grade = commands.add_parser(
        "grade",
        help="grade a submission (or a folder of them) and write Gradescope's results.json",
        description="Run this tree's public and hidden suites against a submission's cs336_basics package (its "
        "own tests, adapters and config are never used), print the points per problem, and write results.json "
        "in Gradescope's format. Student code runs in a confined worker process; the tests, the points and the "
        "results never share a process with it. A submission that cannot be loaded scores 0 with the reason. "
        "With --batch, grade a folder of submissions in parallel into a gradebook (grades.csv, summary.md, "
        "charts); a batch that is stopped keeps what it finished, and running it again grades the rest.",
    )
    grade.add_argument("submission", nargs="?", type=Path, default=None,
                       help="a folder holding cs336_basics/, the cs336_basics folder itself, or a zip of either "
                       "(default: this repository's reference solution)")
    grade.add_argument("--out", type=Path, default=None,
                       help=f"where to write: results.json for one submission (default {DEFAULT_RESULTS}, "
                       f"{DEFAULT_GPU_RESULTS} with --gpu); a folder for --batch (default: DIR-grades next to DIR)")
    grade.add_argument("--batch", type=Path, metavar="DIR", default=None,
                       help="grade every submission in DIR: one folder or zip each, or Gradescope's export "
                       "(submission_metadata.yml and submission_*/ folders)")
    grade.add_argument("-j", "--jobs", type=int, default=None,
                       help="submissions graded at once (default: cores; 1 with --gpu, which refuses more)")
    grade.add_argument("--force", action="store_true", help="with --batch, grade again what is already graded")
    add_arguments(grade)  # the grade's settings (limits, protections, --gpu ...): staff.sandbox.settings
    add_options(grade)  # --shard, --slurm and theirs
    grade.add_argument("-v", "--verbose", action="store_true",
                       help="show pytest's own output instead of a progress bar")
    grade.set_defaults(run=run)


def print_protections(protections: dict[str, str]) -> None:
    if not protections:
        return
    off = {k: v for k, v in protections.items() if not v.startswith("on")}
    on = [k for k in protections if k not in off]
    print(f"sandbox: on: {', '.join(on) or 'nothing'}", file=sys.stderr)
    for name, why in off.items():
        print(f"sandbox: {name}: {why}", file=sys.stderr)


def grader(args: argparse.Namespace, progress: bool, jobs: int = 1):
    """A function that grades one submission with the settings the options give."""
    from staff.commands.settings_options import from_arguments
    from staff.grading.grade import grade

    settings = from_arguments(args)

    def graded(submission: Path, on_graded=None):
        return grade(submission, settings, jobs=jobs, verbose=args.verbose, progress=progress, on_graded=on_graded)

    return graded


def run(args: argparse.Namespace) -> int:
    from staff.bytecode import ensure_compiled
    from staff.commands.settings_options import from_arguments
    from staff.commands.slurm_options import refused
    from staff.grading.console import points_table
    from staff.grading.grade import REPO_ROOT
    from staff.grading.results import write_results
    from staff.grading.suite_run import stop_running
    from staff.sandbox import exposure

    if refused(args):
        print(f"staff grade: {refused(args)}", file=sys.stderr)
        return 2
    # Settings that cannot work (a memory limit torch cannot start under) or that would leave the grading
    # user's files open to student code stop here, before any grade (a StaffError: staff.cli says why).
    exposure.check(from_arguments(args))
    ensure_compiled()
    if args.slurm:
        return run_batch(args)  # on a login node, which need not have the GPU its tasks ask for
    if args.gpu:
        if gpu_refused("grade --gpu", args, "; run it on the GPU machine, and `staff grade` without --gpu anywhere"):
            return 2
        import torch

        print(f"grading the GPU part on {torch.cuda.get_device_name()}", file=sys.stderr)
    if args.batch is not None:
        return run_batch(args)
    submission = (args.submission or REPO_ROOT).resolve()
    if not submission.exists():
        print(f"staff grade: {submission} does not exist; expected a folder holding cs336_basics/ or a zip of it",
              file=sys.stderr)
        return 2
    out = args.out or (DEFAULT_GPU_RESULTS if args.gpu else DEFAULT_RESULTS)
    print(f"grading {submission}", file=sys.stderr)
    try:
        result = grader(args, progress=True)(submission, on_graded=lambda made: write_results(made, out))
    except KeyboardInterrupt:
        stop_running()
        print("staff grade: interrupted; nothing was written", file=sys.stderr)
        return 130
    print_protections(result.protections)
    if "cuda_preflight" in result.details:  # a GPU grade: whether CUDA started in the confined worker
        print(f"CUDA preflight: {result.details['cuda_preflight']}", file=sys.stderr)
    if result.graded_files:
        taken = result.graded_files
        print(f"graded {len(taken['files'])} files from {taken['from']} of the upload", file=sys.stderr)
        for note in taken["not_graded"]:
            print(f"not graded: {note}", file=sys.stderr)
    # The staff's view: the student's summary would say the hidden tests add points, not which.
    summary = result.outcome.summary(result.details)
    if summary:
        print(f"{summary}\n")
    if result.tests:
        print("\n".join(points_table(result.tests)))
    print(f"\nscore {result.score:g} / {result.max_score:g}; results written to {out}")
    return 0


def run_batch(args: argparse.Namespace) -> int:
    from staff.commands.settings_options import from_arguments
    from staff.course.batch import grade_batch
    from staff.course.cluster.shards import parse_shard
    from staff.course.folder import RESULTS, RESULTS_GPU
    from staff.course.stale import Current
    from staff.grading.suite_run import stop_running

    folder = args.batch.resolve()
    out = (args.out or folder.with_name(folder.name + "-grades")).resolve()
    if args.submission is not None:
        print("staff grade: give either a SUBMISSION or --batch DIR, not both", file=sys.stderr)
        return 2
    if args.slurm:
        return run_slurm(args, folder, out)
    jobs = 1 if args.gpu else args.jobs or os.cpu_count() or 1
    shard = parse_shard(args.shard) if args.shard else None
    print(f"grading the submissions in {folder}{f' (shard {args.shard})' if shard else ''} into {out}, "
          f"{jobs} at a time", file=sys.stderr)
    try:
        lines, files = grade_batch(folder, out, grader(args, progress=False, jobs=jobs), jobs, args.force,
                                   results=RESULTS_GPU if args.gpu else RESULTS, shard=shard,
                                   current=Current.of(from_arguments(args)), warm=not args.gpu)
    except KeyboardInterrupt:
        stop_running()
        print(f"staff grade: interrupted; finished submissions are kept in {out}; run the same command to "
              f"grade the rest", file=sys.stderr)
        return 130
    print("\n".join(lines))
    if shard:
        print(f"when every shard has ended, the gradebook: staff gradebook {out} --batch {folder}")
        return 0
    print("\nwritten: " + ", ".join(str(f.relative_to(out)) for f in files) + f" in {out}")
    return 0


def run_slurm(args: argparse.Namespace, folder: Path, out: Path) -> int:
    """0 when every submission is graded, 1 when a task failed or a submission is still not graded, 130
    when the watch was stopped (the job goes on); bad input or a failed Slurm command: staff.cli's 2."""
    from staff.commands.slurm_options import slurm_batch
    from staff.course.cluster.slurm import grade_on_slurm

    batch = slurm_batch(args, folder, out)
    try:
        outcome = grade_on_slurm(batch, dry_run=args.dry_run)
    except KeyboardInterrupt:
        return 130
    if args.dry_run:
        print(outcome.script, end="")
        print(f"# --dry-run: nothing submitted; `staff grade` would write this to {outcome.script_path} and run "
              f"`sbatch --array=LIST {outcome.script_path}` for the shards that miss a submission", file=sys.stderr)
        return 0
    print("\n".join(outcome.lines))
    print("\nwritten: " + ", ".join(str(f.relative_to(out)) for f in outcome.files) + f" in {out}")
    if not outcome.complete:
        print(f"staff grade: {len(outcome.failed_tasks)} task(s) failed, {outcome.missing} submission(s) not graded "
              f"or stale; run the same command again to grade only those", file=sys.stderr)
        return 1
    return 0
