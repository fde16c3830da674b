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
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
