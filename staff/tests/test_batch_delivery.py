"""`staff grade --batch` keeps each grade before its scratch folder is cleaned up, as `staff grade`
and the autograder do ("results.json is written before clean-up")."""

from __future__ import annotations

import json
from pathlib import Path

from staff.course.batch import grade_one
from staff.course.folder import RESULTS, Submission
from staff.grading.grade import Grade
from staff.tests.test_outcomes import graded
from tests.grading import FAILED, PASSED


def _grade() -> Grade:
    return Grade(tests=[graded("p", 1, 3, PASSED), graded("q", 1, 2, FAILED)], output="", seconds=1.0)


def test_a_batch_grade_is_written_before_the_clean_up_and_survives_it_failing(tmp_path):
    # Mistake: grade_one writing results.json only once the grader has returned (after the scratch
    # clean-up): a clean-up that raises (or a process killed during it) loses a finished grade
    # and the student gets "the grader failed" instead of their 3 points.
    submission = Submission("ada", tmp_path / "in" / "ada", "1")
    out = tmp_path / "out" / "ada"
    seen_before_clean_up = []

    def grader(path: Path, on_graded=None):
        made = _grade()
        if on_graded is not None:
            on_graded(made)  # where grade() calls it: the grade made, the scratch folder not yet removed
        seen_before_clean_up.append((out / RESULTS).exists())
        raise RecursionError("the scratch clean-up broke")  # what a deep tree did to shutil.rmtree

    grade_one(submission, out, grader)
    assert seen_before_clean_up == [True], "results.json was not written before the clean-up started"
    document = json.loads((out / RESULTS).read_text(encoding="utf-8"))
    assert document["score"] == 3, \
        f"expected the grade's 3 points kept, got {document['score']}: {document['output']!r}"
    assert json.loads((out / "meta.json").read_text())["submission"] == "ada"


def test_a_grader_without_the_hook_is_still_written_once_it_returns(tmp_path):
    # Mistake: delivering only through on_graded, so that a grader that does not take it (a test's, an
    # older caller's) leaves no results.json and the batch grades the submission again forever.
    submission = Submission("bob", tmp_path / "in" / "bob", "2")
    grade_one(submission, tmp_path / "bob", lambda path: _grade())
    assert json.loads((tmp_path / "bob" / RESULTS).read_text(encoding="utf-8"))["score"] == 3
