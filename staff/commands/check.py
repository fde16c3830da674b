"""`staff check`: every consistency check that needs no grading; --fix rewrites the derived facts first."""

from __future__ import annotations

import argparse
import subprocess
import sys


def run(args: argparse.Namespace) -> int:
    import time

    from staff.authoring.check import CHECKS, fix_stated, report, run_checks
    from staff.grading.grade import REPO_ROOT
    from staff.grading.selection import collect_only

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


def register(commands) -> None:
    check = commands.add_parser(
        "check",
        help="every consistency check that needs no grading, in a few seconds (run it before the suites)",
        description="Check the tree against the problems declared in tests/problems.py (PROBLEMS) and the points its "
        "tests carry: each problem's module, adapters, handout page, test files (named for the problem and marked "
        "with it) and variants file; the handout's headings, Tests tables, cited sections, summary rows, totals and "
        "prose totals (and the totals the staff pages in docs/ state); every solution block's stub section; no "
        "solution line quoted in the handout; the version in pyproject.toml, the handout and the CHANGELOG; the "
        "figures; every link and path in README.md, docs/, the handout, the student README and the CHANGELOG (inside "
        "the repository, to a file that is there, to a heading that is there). Prints one line per problem and every "
        "finding with the file to fix; exits 1 if there is any.",
    )
    check.add_argument("--fix", action="store_true",
                       help="first rewrite every restated fact that disagrees (headings, points sentences, Tests-table "
                       "points and totals, hidden-test paragraphs, the summary's rows and totals, PROBLEMS' hidden "
                       "points, the totals in docs/) from the tests' points, then check")
    check.set_defaults(run=run)
