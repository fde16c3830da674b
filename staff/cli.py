"""`staff`: the course staff's command line (never shipped to students)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

DEFAULT_RESULTS = Path("results.json")


def _grade(args: argparse.Namespace) -> int:
    from staff.grade import REPO_ROOT, grade
    from staff.gradescope import write_results

    submission = (args.submission or REPO_ROOT).resolve()
    if not submission.exists():
        print(f"staff grade: {submission} does not exist; expected a folder holding cs336_basics/ or a zip of it",
              file=sys.stderr)
        return 2
    print(f"grading {submission}", file=sys.stderr)
    result = grade(submission, timeout_s=args.timeout, verbose=args.verbose, test_timeout_s=args.test_timeout)
    write_results(result, args.out)
    print(result.output)
    print(f"\nscore {result.score:g} / {result.max_score:g}; results written to {args.out}")
    return 0


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


def _add_figures(commands) -> None:
    figures = commands.add_parser(
        "figures",
        help="draw the handout's figures (handout/figures/*.svg) from staff/figures.py",
        description="Draw the handout's SVG figures from the closed forms in staff/figures.py and write them to "
        "handout/figures/. With --check, write nothing and exit 1 if a checked-in figure differs.",
    )
    figures.add_argument("--check", action="store_true", help="only compare; exit 1 when a figure is out of date")
    figures.set_defaults(run=_figures)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="staff", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    grade = commands.add_parser(
        "grade",
        help="grade a submission and write Gradescope's results.json",
        description="Run this tree's test suite against a submission's cs336_basics package (its own tests, "
        "adapters and config are never used), print the points per problem, and write results.json in "
        "Gradescope's format. A submission that cannot be loaded scores 0 with the reason as output.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    grade.add_argument("submission", nargs="?", type=Path, default=None,
                       help="a folder holding cs336_basics/, the cs336_basics folder itself, or a zip of either "
                       "(default: this repository's reference solution)")
    grade.add_argument("--out", type=Path, default=DEFAULT_RESULTS, help="where to write results.json")
    grade.add_argument("--timeout", type=float, default=1800, help="seconds the whole test run may take")
    grade.add_argument("--test-timeout", type=float, default=None,
                       help="seconds one test may take (default: the suite's own limit in pyproject.toml)")
    grade.add_argument("-v", "--verbose", action="store_true", help="show pytest's own output instead of a progress bar")
    grade.set_defaults(run=_grade)
    _add_release(commands)
    _add_figures(commands)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
