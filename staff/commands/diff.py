"""`staff diff OLD [NEW]`: who moved between two grades, by which tests, and why (staff/course/diff.py)."""

from __future__ import annotations

import argparse
from pathlib import Path


def run(args: argparse.Namespace) -> int:
    from staff.course.diff import FLAKY, diff, summary, write_csv

    changes = diff(args.old, args.new)  # a DiffError (bad input) is staff.cli's to report
    print("\n".join(summary(changes)))
    if args.csv is not None:
        write_csv(changes, args.csv)
        print(f"\nwritten: {args.csv}")
    return 1 if any(m.cause == FLAKY for c in changes for m in c.moved) else 0


def register(commands) -> None:
    parser = commands.add_parser(
        "diff", help="who moved between two grades of a course, by which tests, and why",
        description="Compare two gradebooks (batch output folders) or two results files: per student, the total "
        "before and after and each test whose score moved, with the cause read from the grades' provenance: the "
        "test changed, the suite changed in some files, the submission changed, the settings or the grader "
        "changed, or nothing changed (a flaky result: a defect, reported first; the exit status is then 1). "
        "Students are matched by id, else by folder name. With OUT alone, each submission's previous grade "
        "(kept by the batch when it graded it again) is compared with its current one.")
    parser.add_argument("old", type=Path, metavar="OLD", help="the earlier batch output folder or results.json")
    parser.add_argument("new", type=Path, metavar="NEW", nargs="?", default=None,
                        help="the later one (default: OLD's current grades, compared with their previous ones)")
    parser.add_argument("--csv", type=Path, metavar="FILE", default=None,
                        help="also write one row per test that moved to FILE")
    parser.set_defaults(run=run)
