"""`staff figures`: draw the handout's figures from staff/authoring/figures.py, or check them (--check)."""

from __future__ import annotations

import argparse
import sys


def run(args: argparse.Namespace) -> int:
    from staff.authoring.figures import FIGURES_DIR, stale_figures, write_figures
    from staff.grading.grade import REPO_ROOT

    if args.check:
        stale = stale_figures(REPO_ROOT)
        for name in stale:
            print(f"{FIGURES_DIR / name} is missing or out of date; run `uv run staff figures`", file=sys.stderr)
        if not stale:
            print(f"the figures in {FIGURES_DIR} match what staff/authoring/figures.py draws")
        return 1 if stale else 0
    for path in write_figures(REPO_ROOT):
        print(f"wrote {path.relative_to(REPO_ROOT)}")
    return 0


def register(commands) -> None:
    figures = commands.add_parser(
        "figures",
        help="draw the handout's figures (handout/figures/*.svg) from staff/authoring/figures.py",
        description="Draw the handout's SVG figures from the closed forms in staff/authoring/figures.py and write "
        "them to handout/figures/. With --check, write nothing and exit 1 if a checked-in figure differs.",
    )
    figures.add_argument("--check", action="store_true", help="only compare; exit 1 when a figure is out of date")
    figures.set_defaults(run=run)
