"""`staff bundle`: build the Gradescope autograder zip, and say what to set on Gradescope."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def gradescope_settings() -> str:
    """What a TA sets in the assignment's Autograder settings (docs/gradescope.md, "On Gradescope: what to set")."""
    from staff.sandbox.memory import MIN_MEMORY_BYTES, RECOMMENDED_MEMORY_BYTES

    return (f"Gradescope: set the memory to {RECOMMENDED_MEMORY_BYTES / 2**30:g} GB (below "
            f"{MIN_MEMORY_BYTES / 2**20:.0f} MiB the autograder refuses to grade and says so to the staff); "
            f"half a CPU and the default 10 minutes are enough (the reference's grade took 53 s there).")


def run(args: argparse.Namespace) -> int:
    from staff.gradescope.bundle import build_bundle
    from staff.grading.grade import REPO_ROOT
    from staff.release.proc import ReleaseError

    try:
        summary = build_bundle(args.out.resolve(), REPO_ROOT, args.force, args.hidden_visibility, args.deadline,
                               args.allow_uncommitted)
        print(f"staff bundle: {summary}")
        print(gradescope_settings())
    except ReleaseError as error:
        print(f"staff bundle: FAILED, nothing was written to {args.out}\n{error}", file=sys.stderr)
        return 1
    return 0


def register(commands) -> None:
    from staff.gradescope.autograder import DEADLINE_S
    from tests.grading import HIDDEN_VISIBILITY, VISIBILITIES

    bundle = commands.add_parser(
        "bundle",
        help="build the Gradescope autograder zip (setup.sh, run_autograder, public and hidden suites)",
        description="Build the zip to upload as a Gradescope autograder. setup.sh installs (with apt where the "
        "image lacks pip) the uv and the exact Python this tree was tested with, both written into it, and the "
        "locked environment (in /opt/cs336, readable by the sandbox user); run_autograder grades "
        "/autograder/submission (a folder, or the one zip in it) with the public and hidden suites behind the "
        "sandbox and always writes "
        "/autograder/results/results.json. The zip holds no reference solution; that is checked before writing. "
        "It records its commit and suite (staff/provenance.json), which every grade it makes carries, and it is "
        "refused while its files have uncommitted changes.",
    )
    bundle.add_argument("out", type=Path, metavar="OUT.zip", help="the zip to write")
    bundle.add_argument("--force", action="store_true", help="replace an existing OUT.zip")
    bundle.add_argument("--hidden-visibility", choices=VISIBILITIES, default=HIDDEN_VISIBILITY,
                        help="when students see the hidden tests' results (default: %(default)s)")
    bundle.add_argument("--deadline", type=float, default=DEADLINE_S,
                        help="seconds the test run may take; Gradescope's own limit must leave a minute more "
                        "(default: %(default)g, for Gradescope's default of 600)")
    bundle.add_argument("--allow-uncommitted", action="store_true",
                        help="build from files with uncommitted changes (refused by default: no grade could then say "
                        "which commit graded it); every grade made with the bundle says it was built so")
    bundle.set_defaults(run=run)
