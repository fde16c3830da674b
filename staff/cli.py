"""`staff`: the course staff's command line (never shipped to students)."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

DEFAULT_RESULTS, DEFAULT_GPU_RESULTS = Path("results.json"), Path("results-gpu.json")


def _no_gpu(command: str, hint: str = "") -> bool:
    """Whether this machine lacks the CUDA GPU `staff COMMAND` needs; if so, says so on stderr."""
    import torch

    if torch.cuda.is_available():
        return False
    print(f"staff {command}: this machine has no CUDA GPU (torch.cuda.is_available() is False){hint}",
          file=sys.stderr)
    return True


def _gpu_refused(command: str, args: argparse.Namespace, hint: str = "") -> bool:
    """Whether `staff COMMAND --gpu` cannot run here, having said why: more than one job at once (GPU
    timings must not share the device), or no GPU."""
    if (args.jobs or 1) > 1:
        print(f"staff {command}: runs one at a time, so that no timing shares the GPU; drop -j", file=sys.stderr)
        return True
    return _no_gpu(command, hint)


def _print_protections(protections: dict[str, str]) -> None:
    if not protections:
        return
    off = {k: v for k, v in protections.items() if not v.startswith("on")}
    on = [k for k in protections if k not in off]
    print(f"sandbox: on: {', '.join(on) or 'nothing'}", file=sys.stderr)
    for name, why in off.items():
        print(f"sandbox: {name}: {why}", file=sys.stderr)


def _grader(args: argparse.Namespace, progress: bool, jobs: int = 1):
    """A function that grades one submission with the settings the options give."""
    from staff.grade import grade
    from staff.sandbox.settings import from_arguments

    settings = from_arguments(args)

    def run(submission: Path, on_graded=None):
        return grade(submission, settings, jobs=jobs, verbose=args.verbose, progress=progress, on_graded=on_graded)

    return run


def _grade(args: argparse.Namespace) -> int:
    from staff.bytecode import ensure_compiled
    from staff.cluster.slurm import refused
    from staff.console import points_table
    from staff.grade import REPO_ROOT, stop_running
    from staff.gradescope import write_results

    if refused(args):
        print(f"staff grade: {refused(args)}", file=sys.stderr)
        return 2
    ensure_compiled()
    if args.slurm:
        return _grade_batch(args)  # on a login node, which need not have the GPU its tasks ask for
    if args.gpu:
        if _gpu_refused("grade --gpu", args, "; run it on the GPU machine, and `staff grade` without --gpu anywhere"):
            return 2
        import torch

        print(f"grading the GPU part on {torch.cuda.get_device_name()}", file=sys.stderr)
    if args.batch is not None:
        return _grade_batch(args)
    submission = (args.submission or REPO_ROOT).resolve()
    if not submission.exists():
        print(f"staff grade: {submission} does not exist; expected a folder holding cs336_basics/ or a zip of it",
              file=sys.stderr)
        return 2
    out = args.out or (DEFAULT_GPU_RESULTS if args.gpu else DEFAULT_RESULTS)
    print(f"grading {submission}", file=sys.stderr)
    try:
        result = _grader(args, progress=True)(submission, on_graded=lambda made: write_results(made, out))
    except KeyboardInterrupt:
        stop_running()
        print("staff grade: interrupted; nothing was written", file=sys.stderr)
        return 130
    _print_protections(result.protections)
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


def _grade_batch(args: argparse.Namespace) -> int:
    from staff.batch import RESULTS, RESULTS_GPU, BatchError, grade_batch
    from staff.grade import stop_running

    folder = args.batch.resolve()
    out = (args.out or folder.with_name(folder.name + "-grades")).resolve()
    if args.submission is not None:
        print("staff grade: give either a SUBMISSION or --batch DIR, not both", file=sys.stderr)
        return 2
    if args.slurm:
        from staff.cluster.slurm import main_slurm

        return main_slurm(args, folder, out)
    from staff.cluster.shards import ShardError, parse_shard

    jobs = 1 if args.gpu else args.jobs or os.cpu_count() or 1
    try:
        shard = parse_shard(args.shard) if args.shard else None
        print(f"grading the submissions in {folder}{f' (shard {args.shard})' if shard else ''} into {out}, "
              f"{jobs} at a time", file=sys.stderr)
        lines, files = grade_batch(folder, out, _grader(args, progress=False, jobs=jobs), jobs, args.force,
                                   results=RESULTS_GPU if args.gpu else RESULTS, shard=shard)
    except (BatchError, ShardError) as error:
        print(f"staff grade: {error}", file=sys.stderr)
        return 2
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


def _add_grade(commands) -> None:
    from staff.cluster.slurm import add_options
    from staff.sandbox.settings import add_arguments

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
    add_arguments(grade)  # the grade's settings (limits, protections, --gpu ...): staff/sandbox/settings.py
    add_options(grade)  # --shard, --slurm and theirs: staff/cluster/slurm.py
    grade.add_argument("-v", "--verbose", action="store_true",
                       help="show pytest's own output instead of a progress bar")
    grade.set_defaults(run=_grade)


def _release(args: argparse.Namespace) -> int:
    from staff.grade import REPO_ROOT
    from staff.release.build import build_release
    from staff.release.proc import ReleaseError

    try:
        summary = build_release(args.out, REPO_ROOT, make_zip=args.zip, make_git=args.git, force=args.force)
    except ReleaseError as error:
        print(f"staff release: FAILED, nothing was written to {args.out}\n{error}", file=sys.stderr)
        return 1
    print(f"staff release: every check passed; {summary}")
    return 0


def _figures(args: argparse.Namespace) -> int:
    from staff.figures import FIGURES_DIR, stale_figures, write_figures
    from staff.grade import REPO_ROOT

    if args.check:
        stale = stale_figures(REPO_ROOT)
        for name in stale:
            print(f"{FIGURES_DIR / name} is missing or out of date; run `uv run staff figures`", file=sys.stderr)
        if not stale:
            print(f"the figures in {FIGURES_DIR} match what staff/figures.py draws")
        return 1 if stale else 0
    for path in write_figures(REPO_ROOT):
        print(f"wrote {path.relative_to(REPO_ROOT)}")
    return 0


def _add_release(commands) -> None:
    release = commands.add_parser(
        "release",
        help="build the student release (stubbed solutions, student README, fresh lock) and check it",
        description="Build what students clone from this tree: cs336_basics/ with every solution body replaced by "
        "a stub raising NotImplementedError (naming the function and its handout section), adapters/, tests/, "
        "handout/, a student README.md, make_submission.sh, .gitignore, and pyproject.toml and uv.lock without the "
        "staff command and group. Before anything is written to OUT the release is checked: exact file list, "
        "stubs with everything else byte-for-byte, no leaked solution line, staff file or staff-only test name, "
        "then installed fresh with `uv sync --locked`, its public tests run (all must fail on the stubs, cuda tests "
        "skip without a GPU, points 0 of the full total), and `staff grade` must give 0.",
    )
    release.add_argument("out", type=Path, metavar="OUT", help="folder to create (must be new or empty)")
    release.add_argument("--zip", action="store_true", help="also write OUT.zip, the release under one top folder")
    release.add_argument("--git", action="store_true",
                         help="make OUT a fresh git repository (branch main) with one commit of the release")
    release.add_argument("--force", action="store_true", help="replace a non-empty OUT and an existing OUT.zip")
    release.set_defaults(run=_release)


def gradescope_settings() -> str:
    """What a TA sets in the assignment's Autograder settings (README, "On Gradescope: what to set")."""
    from staff.sandbox.memory import MIN_MEMORY_BYTES, RECOMMENDED_MEMORY_BYTES

    return (f"Gradescope: set the memory to {RECOMMENDED_MEMORY_BYTES / 2**30:g} GB (below "
            f"{MIN_MEMORY_BYTES / 2**20:.0f} MiB the autograder refuses to grade and says so to the staff); "
            f"half a CPU and the default 10 minutes are enough (the reference's grade took 53 s there).")


def _bundle(args: argparse.Namespace) -> int:
    from staff.bundle import build_bundle
    from staff.grade import REPO_ROOT
    from staff.release.proc import ReleaseError

    try:
        summary = build_bundle(args.out.resolve(), REPO_ROOT, args.force, args.hidden_visibility, args.deadline)
        print(f"staff bundle: {summary}")
        print(gradescope_settings())
    except ReleaseError as error:
        print(f"staff bundle: FAILED, nothing was written to {args.out}\n{error}", file=sys.stderr)
        return 1
    return 0


def _add_bundle(commands) -> None:
    from staff.autograder import DEADLINE_S
    from tests.grading import HIDDEN_VISIBILITY, VISIBILITIES

    bundle = commands.add_parser(
        "bundle",
        help="build the Gradescope autograder zip (setup.sh, run_autograder, public and hidden suites)",
        description="Build the zip to upload as a Gradescope autograder. setup.sh installs (with apt where the "
        "image lacks pip) the uv and the exact Python this tree was tested with, both written into it, and the "
        "locked environment (in /opt/cs336, readable by the sandbox user); run_autograder grades "
        "/autograder/submission (a folder, or the one zip in it) with the public and hidden suites behind the "
        "sandbox and always writes "
        "/autograder/results/results.json. The zip holds no reference solution; that is checked before writing.",
    )
    bundle.add_argument("out", type=Path, metavar="OUT.zip", help="the zip to write")
    bundle.add_argument("--force", action="store_true", help="replace an existing OUT.zip")
    bundle.add_argument("--hidden-visibility", choices=VISIBILITIES, default=HIDDEN_VISIBILITY,
                        help="when students see the hidden tests' results (default: %(default)s)")
    bundle.add_argument("--deadline", type=float, default=DEADLINE_S,
                        help="seconds the test run may take; Gradescope's own limit must leave a minute more "
                        "(default: %(default)g, for Gradescope's default of 600)")
    bundle.set_defaults(run=_bundle)


def _validate(args: argparse.Namespace) -> int:
    from staff.bytecode import ensure_compiled
    from staff.validate.run import main_validate
    from tests.grading import PROBLEMS

    problems = set(args.problem) if args.problem else None
    if args.gpu and (args.mutants or args.flaky):
        print("staff validate: --gpu grades the variants' GPU part; it does not combine with --mutants or --flaky",
              file=sys.stderr)
        return 2
    if args.gpu and _gpu_refused("validate --gpu", args):
        return 2
    jobs = 1 if args.gpu else args.jobs or os.cpu_count() or 1
    ensure_compiled()
    if args.mutants:
        from staff.validate.mutants import main_mutants

        return main_mutants(sorted(problems or PROBLEMS), jobs)
    if args.flaky:
        from staff.validate.flaky import main_flaky

        return main_flaky(args.flaky, jobs)
    try:
        return main_validate(args.sample, problems, jobs, gpu=args.gpu, names=set(args.variant or ()))
    except ValueError as error:
        print(f"staff validate: {error}", file=sys.stderr)
        return 2


def _add_validate(commands) -> None:
    from tests.grading import PROBLEMS

    validate = commands.add_parser(
        "validate",
        help="prove the suites grade right: stubs 0, every wheat full marks, every chaff caught",
        description="Grade the stubs, every correct variant (wheat) and every wrong one (chaff) in "
        "staff/validate/variants through staff grade, behind the sandbox, and print a matrix of points by "
        "implementation and problem. Exits 1 when a wheat loses a point, a chaff loses none on its own problem "
        "(or is not caught by a test it names), or the stubs score.",
    )
    validate.add_argument("--sample", action="store_true",
                          help="only a fixed sample: per problem one wheat and one chaff (CI grades its wheat)")
    validate.add_argument("--problem", type=int, action="append", choices=sorted(PROBLEMS), metavar="N",
                          help="only the variants of problem N (repeatable); the stubs are then not graded")
    validate.add_argument("--variant", action="append", metavar="NAME",
                          help="only the variants of this name (repeatable; with or without the pNN-kind- prefix "
                          "the matrix shows); the stubs are then not graded")
    validate.add_argument("-j", "--jobs", type=int, default=None,
                          help="implementations graded at once (default: cores; 1 with --gpu, which refuses more)")
    validate.add_argument("--gpu", action="store_true",
                          help="grade the GPU part only, on this machine's GPU: the stubs, the wheat of problems with "
                          "cuda tests, and the chaff only a GPU catches (gpu_catches: a timer without synchronize)")
    validate.add_argument("--mutants", action="store_true",
                          help="instead: mutation testing of the solution bodies (about 20 minutes on 2 cores)")
    validate.add_argument("--flaky", type=int, metavar="RUNS", default=0,
                          help="instead: run both suites on the reference RUNS times, shuffled, with other seeds")
    validate.set_defaults(run=_validate)


def _check(args: argparse.Namespace) -> int:
    import time

    from staff.check import CHECKS, fix_stated, report, run_checks
    from staff.grade import REPO_ROOT, collect_only

    started = time.monotonic()
    try:
        tests = collect_only(REPO_ROOT, hidden=True, complete=True)
    except RuntimeError as error:
        print(f"staff check: collecting the public and hidden suites failed, so their points cannot be checked; "
              f"the other checks follow.\n{error}\n", file=sys.stderr)
        if args.fix:
            print("staff check --fix: nothing was rewritten (the points come from the collected tests)",
                  file=sys.stderr)
        tests = []
    if args.fix and tests:
        changed, unplaced = fix_stated(REPO_ROOT, tests)
        for path in changed:
            print(f"rewrote {path}")
        for fact in unplaced:
            print(f"could not place {fact.what} in {fact.path}: write it by hand as '{fact.expected}'",
                  file=sys.stderr)
        print(f"staff check --fix: {len(changed)} file(s) rewritten; checking the result\n")
        if changed:  # PROBLEMS itself may have been rewritten: check in a fresh process, which reads it anew
            return subprocess.run([sys.executable, "-m", "staff.cli", "check"], cwd=REPO_ROOT).returncode
    results = run_checks(REPO_ROOT, tests)
    print("\n".join(report(results)))
    failed = sum(map(len, results.values())) + (not tests)
    print(f"\nstaff check: {len(CHECKS)} checks in {time.monotonic() - started:.1f} s: "
          + ("all passed" if not failed else f"{failed} to fix"))
    return 1 if failed else 0


def _add_check(commands) -> None:
    check = commands.add_parser(
        "check",
        help="every consistency check that needs no grading, in a few seconds (run it before the suites)",
        description="Check the tree against the problems declared in tests/grading.py (PROBLEMS) and the points its "
        "tests carry: each problem's module, adapters, handout page, test files (named for the problem and marked "
        "with it) and variants file; the handout's headings, Tests tables, cited sections, summary rows, totals and "
        "prose totals (and the README's Gradescope total); every solution block's stub section; no solution line "
        "quoted in the handout; the version in pyproject.toml, the handout and the CHANGELOG; the figures. Prints one "
        "line per problem and every finding with the file to fix; exits 1 if there is any.",
    )
    check.add_argument("--fix", action="store_true",
                       help="first rewrite every restated fact that disagrees (headings, points sentences, Tests-table "
                       "points and totals, hidden-test paragraphs, the summary's rows and totals, PROBLEMS' hidden "
                       "points, the README's Gradescope totals) from the tests' points, then check")
    check.set_defaults(run=_check)


def _new_problem(args: argparse.Namespace) -> int:
    from staff.grade import REPO_ROOT, collect_only
    from staff.new_problem import TODO, NewProblem, ScaffoldError, scaffold

    problem = NewProblem(args.number, args.module, args.title)
    try:
        written = scaffold(problem, REPO_ROOT, collect_only(REPO_ROOT, hidden=True, complete=True))
    except (ScaffoldError, RuntimeError) as error:
        print(f"staff new-problem: {error}; nothing was written", file=sys.stderr)
        return 2
    print("\n".join(f"wrote {path}" for path in written))
    print(f"\nProblem {problem.number} is declared and passes `staff check`; the suites fail on it until every "
          f"{TODO} is filled:\n  grep -rn '{TODO}' cs336_basics adapters tests staff handout\nthen run "
          f"`uv run staff check` and the suites (README, \"Adding a problem\").")
    return 0


def _add_new_problem(commands) -> None:
    new = commands.add_parser(
        "new-problem",
        help="scaffold a problem: module, adapter, public and hidden tests, handout page, variants, registry entry",
        description="Write a new problem's files with every place to fill marked TODO(new-problem): the solution "
        "module (a function named after the module, its body between the solution markers, raising until written), "
        "its adapter, a one-point public and a one-point hidden test, the handout page with its Tests table, an "
        "empty variants file, and its entry in PROBLEMS (tests/grading.py); the handout's summary gets its row and "
        "every stated total moves by the new points. `staff check` accepts the result at once; the suites fail on "
        "it until the TODOs are filled. Nothing is written when the arguments are refused.",
    )
    new.add_argument("number", type=int, metavar="NUMBER", help="the problem's number (the next free one)")
    new.add_argument("module", metavar="MODULE", help="the cs336_basics module's name, e.g. tokens")
    new.add_argument("title", metavar="TITLE",
                     help='the title shown in the handout and the tables, e.g. "Tokens per step"')
    new.set_defaults(run=_new_problem)


def _add_figures(commands) -> None:
    figures = commands.add_parser(
        "figures",
        help="draw the handout's figures (handout/figures/*.svg) from staff/figures.py",
        description="Draw the handout's SVG figures from the closed forms in staff/figures.py and write them to "
        "handout/figures/. With --check, write nothing and exit 1 if a checked-in figure differs.",
    )
    figures.add_argument("--check", action="store_true", help="only compare; exit 1 when a figure is out of date")
    figures.set_defaults(run=_figures)


def _bench(args: argparse.Namespace) -> int:
    from staff.bench.run import DEFAULT_GROUPS, main_bench
    from staff.bytecode import ensure_compiled

    ensure_compiled()
    try:
        return main_bench(args.only or list(DEFAULT_GROUPS), args.repeats, args.batch_size, args.out,
                          args.readme)
    except ValueError as error:
        print(f"staff bench: {error}", file=sys.stderr)
        return 2


def _add_bench(commands) -> None:
    from staff.bench.run import DEFAULT_GROUPS, GROUPS

    bench = commands.add_parser(
        "bench",
        help="measure what users wait on, each figure against the baseline a user would otherwise pick",
        description="Time, on this machine: get_batch, an AdaGrad step, the hand-written backward and checkpoints "
        "against their PyTorch baselines; a student's test file and whole suite from a cold start; one grade and a "
        "batch at 1 and at every core; staff release. Prints a Markdown table with each target and whether it is "
        "met, and writes it to --out (and into the README between its bench markers with --readme). Exits 0 "
        "whether or not targets are met; 2 on bad arguments.",
    )
    bench.add_argument("--only", choices=GROUPS, action="append", metavar="GROUP",
                       help=f"run only this group (repeatable; one of {', '.join(GROUPS)}; default: "
                       f"{', '.join(DEFAULT_GROUPS)})")
    bench.add_argument("--repeats", type=int, default=3, help="timed repeats per figure (default: %(default)s)")
    bench.add_argument("--batch-size", type=int, default=4,
                       help="copies of the reference in the batch-throughput figure, graded at -j 1 and at -j cores "
                       "(default: %(default)s; 20 takes about 12 more minutes on 2 cores)")
    bench.add_argument("--out", type=Path, default=Path("bench.md"), help="the Markdown file (default: %(default)s)")
    bench.add_argument("--readme", type=Path, nargs="?", const=Path("README.md"), default=None,
                       help="also put the table into this README between its bench markers (default: README.md)")
    bench.set_defaults(run=_bench)


def _gpu_report(args: argparse.Namespace) -> int:
    from staff.gpu_report import main_report
    from staff.grade import REPO_ROOT

    if args.device.startswith("cuda") and _no_gpu("gpu-report", "; run it on the GPU machine, or pass --device "
                                                  "cpu to see the report's shape here"):
        return 2
    return main_report(args, REPO_ROOT)


def _add_gpu_report(commands) -> None:
    from staff.gpu_report import DTYPES, SIZES

    report = commands.add_parser(
        "gpu-report",
        help="the device's matmul throughput by the tests' harness beside a submission's time_matmul, and get_batch's",
        description="On the GPU present: its name and peak row; for each dtype and matrix size the harness's "
        "(CUDA events, warm-up, rotated inputs, median) and the submission's time_matmul time, TFLOP/s and MFU, with "
        "the harness's verdict on the latter; get_batch's throughput for 64 x 1024 tokens from a 256 MiB memmap. "
        "Prints the table and writes OUT/gpu-report.csv and OUT/gpu-report.png. The submission's code runs "
        "unconfined: this is a report, not a grade.",
    )
    report.add_argument("submission", nargs="?", type=Path, default=None,
                        help="a folder holding cs336_basics/, that folder, or a zip (default: the reference)")
    report.add_argument("--device", default="cuda", help="where to measure (default: %(default)s; 'cpu' shows the "
                        "report's shape on a machine without a GPU)")
    report.add_argument("--sizes", type=int, nargs="+", default=list(SIZES),
                        help="matrix sizes n of the n x n @ n x n products (default: %(default)s)")
    report.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=["bfloat16", "float16", "float32"],
                        help="dtypes (default: %(default)s)")
    report.add_argument("--warmup", type=int, default=5, help="untimed runs first (default: %(default)s)")
    report.add_argument("--repeats", type=int, default=20, help="timed runs; the median is reported "
                        "(default: %(default)s)")
    report.add_argument("--out", type=Path, default=Path("gpu-report"),
                        help="folder for gpu-report.csv and gpu-report.png (default: %(default)s)")
    report.set_defaults(run=_gpu_report)


def _gpu_check(args: argparse.Namespace) -> int:
    from staff.gpu_check import main_check
    from staff.grade import REPO_ROOT

    if _no_gpu("gpu-check", "; run it first on the GPU machine (an H100 or H200); nothing was written"):
        return 2
    return main_check(args, REPO_ROOT)


def _add_gpu_check(commands) -> None:
    from staff.gpu_check import REPORT_NAME

    check = commands.add_parser(
        "gpu-check",
        help="on a GPU machine, first: the cuda tests on the reference, validate --gpu and gpu-report, in one "
        "Markdown report",
        description="Run the cuda tests on the reference (each test's figure against its bound, and the margin), "
        "`staff validate --gpu` (stubs, wheat and GPU chaff behind the sandbox) and `staff gpu-report` on the "
        f"reference, and write OUT/{REPORT_NAME} (device, driver, torch, then one section per step) for the "
        "README's GPU part. Exits 0 when every cuda test passed and every implementation behaved as it must, 1 "
        "otherwise; without a CUDA GPU it stops at once with exit 2 and writes nothing.",
    )
    check.add_argument("--out", type=Path, default=Path("gpu-check"),
                       help=f"folder for {REPORT_NAME} and gpu-report/ (default: %(default)s)")
    check.add_argument("--no-validate", action="store_true", help="skip `staff validate --gpu` (the longest step)")
    check.add_argument("--no-report", action="store_true", help="skip `staff gpu-report`")
    check.set_defaults(run=_gpu_check)


def main(argv: list[str] | None = None) -> int:
    from staff.cluster.gradebook import add_gradebook

    parser = argparse.ArgumentParser(prog="staff", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_check(commands)
    _add_new_problem(commands)
    _add_grade(commands)
    _add_release(commands)
    _add_bundle(commands)
    _add_validate(commands)
    _add_figures(commands)
    _add_bench(commands)
    _add_gpu_report(commands)
    _add_gpu_check(commands)
    add_gradebook(commands)
    argv = list(sys.argv[1:] if argv is None else argv)
    argv, sbatch = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    args = parser.parse_args(argv)
    args.sbatch = sbatch  # `staff grade --batch DIR --slurm -- OPTIONS`: options for sbatch
    if sbatch and args.command != "grade":
        parser.error("options after -- go to sbatch, with `staff grade --batch DIR --slurm` only")
    if threading_main():
        signal.signal(signal.SIGTERM, _interrupt)  # a stopped grader ends its test runs and workers too
        signal.signal(signal.SIGINT, _interrupt)
    return args.run(args)


def threading_main() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _interrupt(signum, frame) -> None:
    from staff.stopping import REQUESTED

    REQUESTED.set()  # a batch's grading threads write no result that the same signal may have cut short
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
