"""Every failure a student reads names the handout section of its problem: a check's message names its
own; an error raised in the student's code (or by PyTorch from it), or one a test expected and did not
get, ends with the problem's page."""

from __future__ import annotations

from staff import samples
from staff.grade import grade
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
