"""Gradescope's side of grading: grade /autograder/submission and always write results.json.

`run_autograder` (from `staff bundle`) runs `python -m staff.autograder`; the submission folder is
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

from staff.gradescope import failure_results, write_json_atomically
from staff.outcomes import Outcome

DEADLINE_S = 540  # Gradescope's default limit is 600 s; set-up, writing and a margin take the rest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m staff.autograder", description=__doc__)
    parser.add_argument("--root", type=Path, default=Path(os.environ.get("AUTOGRADER_ROOT", "/autograder")),
                        help="the autograder's root folder (default: $AUTOGRADER_ROOT or /autograder)")
    parser.add_argument("--deadline", type=float, default=DEADLINE_S,
                        help="seconds the test run may take (default: %(default)g)")
    parser.add_argument("--hidden-visibility", default=None,
                        help="when students see the hidden tests (default: the grader's, after_due_date)")
    args = parser.parse_args(argv)
    results = args.root / "results" / "results.json"
    started = time.monotonic()
    write_json_atomically(failure_results("Grading started but did not finish; please submit again or tell the "
                                          "course staff."), results)
    from staff.sandbox import memory

    shortage = memory.too_small(memory.limit_bytes())
    if shortage is not None:  # no test would mean anything: say so to the staff, blame no one
        print(shortage, file=sys.stderr)
        write_json_atomically(failure_results(shortage, time.monotonic() - started, Outcome.OUT_OF_MEMORY), results)
        return 0
    try:
        from staff.grade import grade
        from staff.gradescope import results_json

        options = {} if args.hidden_visibility is None else {"hidden_visibility": args.hidden_visibility}
        result = grade(args.root / "submission", timeout_s=args.deadline, progress=False, **options)
        write_json_atomically(results_json(result), results)
        print(result.output)
        print(f"protections: {result.protections}")
    except Exception:  # noqa: BLE001 - whatever broke, the student gets a result and the staff the traceback
        failure = traceback.format_exc()
        print(failure, file=sys.stderr)
        write_json_atomically(failure_results("The autograder itself failed, so your submission was not graded "
                                              "(this is not your fault; tell the course staff).",
                                              time.monotonic() - started), results)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
