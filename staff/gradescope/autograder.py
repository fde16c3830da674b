"""Gradescope's side of grading: grade /autograder/submission and always write results.json.

`run_autograder` (from `staff bundle`) runs `python -m staff.gradescope.autograder`; the submission folder is
taken in as `staff grade` takes a folder (the package in it, or the one zip in it). The root folder, normally
/autograder, comes from --root (or AUTOGRADER_ROOT), so a test can run the whole autograder in a
temporary folder. Whatever happens (an unusable upload, a submission that crashes everything, the
grader itself failing, the time limit), a valid results.json is written: first a placeholder that
says grading did not finish, replaced atomically by the real one.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from pathlib import Path

from adapters._text import shown_text
from staff.grading.outcomes import Outcome
from staff.grading.results import failure_results, write_json_atomically

DEADLINE_S = 540  # Gradescope's default limit is 600 s; set-up, writing and a margin take the rest
# Written by `staff bundle` beside this module: the settings the course chose for its Gradescope grades.
SETTINGS_FILE = Path(__file__).resolve().parents[1] / "settings.json"  # staff/settings.json, written by `staff bundle`


def _known_provenance() -> dict:
    """The suite and grader this autograder grades with (staff.grading.provenance), for the results it writes
    before or without a grade; what cannot be read is left out rather than stop the autograder."""
    try:
        from staff.grading import provenance
        return {"suite": provenance.suite(True), "grader": provenance.grader()}
    except Exception:  # noqa: BLE001 - the placeholder must be written whatever this finds
        return {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m staff.gradescope.autograder", description=__doc__)
    parser.add_argument("--root", type=Path, default=Path(os.environ.get("AUTOGRADER_ROOT", "/autograder")),
                        help="the autograder's root folder (default: $AUTOGRADER_ROOT or /autograder)")
    parser.add_argument("--settings", type=Path, default=SETTINGS_FILE,
                        help="the grade's settings, as `staff bundle` wrote them (default: %(default)s; where it "
                        "is missing, the defaults of staff/sandbox/settings.py with the test run cut to "
                        f"{DEADLINE_S:g} s)")
    args = parser.parse_args(argv)
    results = args.root / "results" / "results.json"
    started = time.monotonic()
    known = _known_provenance()
    write_json_atomically(failure_results("Grading started but did not finish; please submit again or tell the "
                                          "course staff.", provenance=known), results)
    from staff.sandbox import memory

    shortage = memory.too_small(memory.limit_bytes())
    if shortage is not None:  # no test would mean anything: say so to the staff, blame no one
        print(shortage, file=sys.stderr)
        write_json_atomically(failure_results(shortage, time.monotonic() - started, Outcome.OUT_OF_MEMORY, known),
                              results)
        return 0
    try:
        from staff.grading.grade import grade
        from staff.grading.results import results_json
        from staff.sandbox.settings import Settings

        settings = Settings.load(args.settings) if args.settings.exists() else Settings(run_timeout_s=DEADLINE_S)
        if settings.in_process:  # only a hand-edited file says so: `staff bundle` never writes it
            raise ValueError(f"{args.settings}: in_process is true, and the autograder never runs a submission's "
                             "code inside the test process, where it could write its own grade")
        result = grade(args.root / "submission", settings, progress=False,
                       on_graded=lambda made: write_json_atomically(results_json(made), results))  # before clean-up
        print(result.output)
        print(f"protections: {result.protections}")
    except Exception:  # noqa: BLE001 - whatever broke, the student gets a result and the staff the traceback
        failure = traceback.format_exc()
        print(shown_text(failure), file=sys.stderr)  # the console the staff read: no terminal escapes
        write_json_atomically(failure_results("The autograder itself failed, so your submission was not graded "
                                              "(this is not your fault; tell the course staff).",
                                              time.monotonic() - started, provenance=known), results)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
