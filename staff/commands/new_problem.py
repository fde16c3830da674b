"""`staff new-problem`: scaffold a problem's files, every place to fill marked TODO(new-problem)."""

from __future__ import annotations

import argparse
import sys


def run(args: argparse.Namespace) -> int:
    from staff.authoring.new_problem import TODO, NewProblem, ScaffoldError, scaffold
    from staff.grading.grade import REPO_ROOT
    from staff.grading.selection import collect_only

    problem = NewProblem(args.number, args.module, args.title)
    try:
        written = scaffold(problem, REPO_ROOT, collect_only(REPO_ROOT, hidden=True, complete=True))
    except (ScaffoldError, RuntimeError) as error:
        print(f"staff new-problem: {error}; nothing was written", file=sys.stderr)
        return 2
    print("\n".join(f"wrote {path}" for path in written))
    print(f"\nProblem {problem.number} is declared and passes `staff check`; the suites fail on it until every "
          f"{TODO} is filled:\n  grep -rn '{TODO}' cs336_basics adapters tests staff handout\nthen run "
          f"`uv run staff check` and the suites (docs/authoring.md, \"Adding a problem\").")
    return 0


def register(commands) -> None:
    new = commands.add_parser(
        "new-problem",
        help="scaffold a problem: module, adapter, public and hidden tests, handout page, variants, registry entry",
        description="Write a new problem's files with every place to fill marked TODO(new-problem): the solution "
        "module (a function named after the module, its body between the solution markers, raising until written), "
        "its adapter, a one-point public and a one-point hidden test, the handout page with its Tests table, an "
        "empty variants file, and its entry in PROBLEMS (tests/problems.py); the handout's summary gets its row and "
        "every stated total moves by the new points. `staff check` accepts the result at once; the suites fail on "
        "it until the TODOs are filled. Nothing is written when the arguments are refused.",
    )
    new.add_argument("number", type=int, metavar="NUMBER", help="the problem's number (the next free one)")
    new.add_argument("module", metavar="MODULE", help="the cs336_basics module's name, e.g. tokens")
    new.add_argument("title", metavar="TITLE",
                     help='the title shown in the handout and the tables, e.g. "Tokens per step"')
    new.set_defaults(run=run)
