"""`--property-examples N` (a grade's `property_examples`): each property test of the hidden suites that sets
no number of its own tries N examples instead of the suites' 100, in a grade and in a run of the suites alone."""

from __future__ import annotations

import re
import subprocess
import sys

from staff import samples
from staff.grading import grade as grading
from staff.grading.grade import REPO_ROOT, grade
from staff.grading.suite_run import Report
from staff.sandbox.settings import Settings

# A property test of Problem 1 that sets no number of its own, and whose inputs are many.
PROPERTY_TEST = "staff/hidden/test_hidden_01_dtype_memory.py"
PROPERTY_NAME = "decode_random_patterns"


def examples_tried(*options: str) -> int:
    """The passing examples hypothesis reports for PROPERTY_TEST run against the reference with `options`."""
    done = subprocess.run([sys.executable, "-m", "pytest", PROPERTY_TEST, "-k", PROPERTY_NAME, "-q", "-p",
                           "no:cacheprovider", "-p", "no:randomly", "--hypothesis-show-statistics", *options],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    found = re.findall(r"(\d+) passing", done.stdout)
    assert len(found) == 1, done.stdout[-3000:]
    return int(found[0])


def test_the_hidden_suites_try_the_examples_given_and_100_without():
    # Mistakes this catches: the option read but never loaded into hypothesis (100 examples whatever it says), or
    # loaded before a --hypothesis-profile given with it, which would undo it.
    # (Each run imports torch: two runs, the second with the staff's flakiness profile given too.)
    assert examples_tried() == 100
    assert examples_tried("--property-examples=4", "--hypothesis-profile=shuffled", "--hypothesis-seed=7") == 4


def test_a_grade_hands_the_setting_to_the_hidden_suites_only(tmp_path, monkeypatch):
    # Mistakes this catches: the setting recorded in the grade but never given to its run (a red-team batch at
    # full length), or given to a run without the hidden suites, whose pytest would stop on an unknown option.
    runs = []

    def run_suite(workspace, suites, timeout_s, verbose, extra, *args, **keywords):
        runs.append((list(suites), list(extra)))
        return Report(), ""

    monkeypatch.setattr(grading, "run_suite", run_suite)
    reference = samples.reference(tmp_path / "reference")
    for settings in (Settings(problems=(1,), property_examples=7), Settings(problems=(1,)),
                     Settings(problems=(1,), property_examples=7, hidden=False)):
        grade(reference, settings, progress=False)
    (hidden_suites, given), (_, default), (public_suites, public) = runs
    assert "--property-examples=7" in given and any("staff/hidden" in suite for suite in hidden_suites)
    assert not any(option.startswith("--property-examples") for option in default + public)
    assert not any("staff/hidden" in suite for suite in public_suites)
