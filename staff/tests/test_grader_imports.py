"""The grader's own process never imports PyTorch or numpy: grading already holds two torch processes
(the test process and the worker), and a third in the grader took about 300 MB of anonymous memory,
the difference between grading and not grading at 1 GB on Gradescope. `staff --help` and argument
errors need neither either (importing torch takes seconds)."""

from __future__ import annotations

import subprocess
import sys

from staff.grading.grade import REPO_ROOT

HEAVY = ("torch", "numpy")


def imported_after(code: str) -> list[str]:
    """The heavy modules a fresh interpreter holds after running `code` from the repository."""
    probe = f"{code}\nimport sys\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    return done.stdout.split()


def test_the_graders_modules_import_no_torch():
    # Mistake this catches: `import torch` at the top of staff/grading/grade.py, tests/grading.py (the points plugin,
    # which the grader reads for its records) or adapters/__init__.py (its start-up speed-up).
    modules = ["staff.gradescope.autograder", "staff.grading.grade", "staff.grading.suite_run",
               "staff.grading.selection",
               "staff.grading.scrub", "staff.course.batch", "staff.grading.results", "staff.intake.submission",
               "staff.sandbox.memory", "staff.sandbox.layout", "tests.grading", "adapters._text"]
    assert imported_after("\n".join(f"import {m}" for m in modules)) == []


def test_staff_help_and_argument_errors_import_no_torch():
    code = ("import contextlib, io\nfrom staff.cli import main\n"
            "for argv in (['--help'], ['grade', '--help'], ['grade', '--jobs', 'x']):\n"
            "    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
            "        try:\n            main(argv)\n        except SystemExit:\n            pass")
    assert imported_after(code) == []
