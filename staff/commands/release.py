"""`staff release`: build the student release into OUT and check it before anything is written."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def run(args: argparse.Namespace) -> int:
    from staff.grading.grade import REPO_ROOT
    from staff.release.build import build_release
    from staff.release.proc import ReleaseError

    try:
        summary = build_release(args.out, REPO_ROOT, make_zip=args.zip, make_git=args.git, force=args.force)
    except ReleaseError as error:
        print(f"staff release: FAILED, nothing was written to {args.out}\n{error}", file=sys.stderr)
        return 1
    print(f"staff release: every check passed; {summary}")
    return 0


def register(commands) -> None:
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
    release.set_defaults(run=run)
