"""Every failure a student reads names the handout section of its problem: a check's message names its
own; an error raised in the student's code (or by PyTorch from it), or one a test expected and did not
get, ends with the problem's page."""

from __future__ import annotations

from staff import samples
from staff.grading.grade import grade
from staff.sandbox.settings import Settings
from tests.failure_output import SEE_LINE


def test_an_error_from_the_students_code_names_its_problems_page_and_a_check_keeps_its_own(tmp_path):
    # Mistakes caught: a RuntimeError raised in the student's function shown with no section (the student
    # cannot tell where to read), or a second "see" line added to a check's message that already has one.
    package = samples.reference(tmp_path / "s")
    signature = "def contiguous_strides(shape: Shape) -> Strides:\n"
    samples.replace_in(package / "strides.py", signature,
                       f"{signature}    raise RuntimeError('shape mismatch inside my helper')\n")
    result = grade(tmp_path / "s", Settings(in_process=True, hidden=False, problems={2}), progress=False)
    failed = {t.name: t.output for t in result.tests if t.status == "failed"}
    raised = [output for output in failed.values() if "shape mismatch inside my helper" in output]
    assert raised, f"no failure showed the student's error: {sorted(failed)}"
    for output in raised:
        assert output.rstrip().endswith("see:      handout/02_strides.md (Problem 2, the problem this test checks)"), \
            output[-400:]
    assert all(output.count(SEE_LINE) <= 1 for output in failed.values()), "a failure names two sections"


def test_the_table_above_a_gradescope_grade_says_the_hidden_tests_were_graded_and_when_they_show():
    # On Gradescope the top of the output showed the public table (104/192) and "the staff's hidden tests
    # add 107 points when they grade", while the hidden tests had been graded and, once shown, the score
    # read 159/299. Mistakes caught: a note that says the hidden tests are still to come, or that shows
    # their points before the staff show them; and the plain public run losing its own note.
    from tests.grading import PASSED, GradedTest, format_table

    def test(name: str, points: float, hidden: bool) -> GradedTest:
        return GradedTest(nodeid=f"x::{name}", name=name, number="1.1", problem=1, points=points, needs_cuda=False,
                          hidden=hidden, status=PASSED)

    tests = [test("public", 3, False), test("hidden_a", 2, True), test("hidden_b", 1, True)]
    before = "\n".join(format_table(tests, hidden_shown=False))
    assert "3 / 3" in before and "were graded too" in before and "3 points" in before and "6 / 6" not in before
    assert "when they grade" not in before
    assert "6 / 6" in "\n".join(format_table(tests, hidden_shown=True))
    assert "when they grade" in "\n".join(format_table(tests[:1]))
