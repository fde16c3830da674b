"""How each test fares across a batch (staff/course/analytics.py), and the course report
(staff/course/report.py) rendered by headless Chromium (Debian's `chromium`) and read back as the
browser built it: the sections, the figures, the suspect tests, the last diff, and student text
shown as text, never run."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from staff.course.analytics import Result, failure_message, tally_tests
from staff.course.report import ProblemScores, write_report


def results(passing: dict[str, bool], problem: int = 9, message: str = "AssertionError: expected 3, got 4") -> list:
    return [Result(f"tests/t.py::{name}", name, problem, ok, "" if ok else message) for name, ok in passing.items()]


def test_a_test_that_fails_the_submissions_right_everywhere_else_is_suspect():
    # Catches a suspect rule that only counts failures (a hard test failed by weak submissions is not
    # suspect) and one that never fires (a wrong expected value failing three correct submissions).
    graded = [results({"a": True, "b": True, "wrong": False}, message=f"AssertionError: got {n}") for n in range(3)]
    graded.append(results({"a": False, "b": True, "wrong": True}))
    stats = {s.name: s for s in tally_tests(graded)}
    assert stats["wrong"].suspect == "fails 3 of the 3 submissions that pass every other test of problem 9"
    assert stats["wrong"].failed == 3 and len(stats["wrong"].messages) == 3
    hard = [results({"easy": True, "hard": False}), results({"easy": False, "hard": False}),
            results({"easy": True, "hard": True})]
    assert {s.name: s.suspect for s in tally_tests(hard)}["hard"] == ""


def test_a_test_that_fails_everyone_with_one_message_is_suspect():
    # Catches a grader-side failure (every submission, one identical message) passed off as the class's
    # mistake because the other tests fail too.
    message = "PermissionError: [Errno 13] Permission denied: '/shared/tokens.bin'"
    graded = [results({"other": False, "opens": False}, message=message) for _ in range(4)]
    stats = {s.name: s for s in tally_tests(graded)}
    assert stats["opens"].suspect == f"fails all 4 submissions with one message: {message}"
    assert stats["opens"].failure_rate == 1.0


def test_the_failure_message_is_the_exceptions_line_not_the_status_or_the_frames():
    # Catches grouping by the first line ("FAILED" for every test: one group of everything).
    output = ('FAILED\n  File "<grading folder>/grader/tests/test_02.py", line 55, in test_x\n    check(x)\n'
              "NotImplementedError: contiguous_strides is not implemented yet\nTraceback (most recent call last):")
    assert failure_message(output) == "NotImplementedError: contiguous_strides is not implemented yet"
    assert failure_message("FAILED\nAssertionError: " + "x" * 500).endswith("...")


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("CI must render the course report: .ci/run installs Debian's chromium")
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    return found


def dom(browser: str, page: Path, tmp_path: Path) -> str:
    """The page's DOM after headless Chromium loaded and rendered it, with no network."""
    try:
        done = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                               f"--user-data-dir={tmp_path / 'profile'}", "--proxy-server=127.0.0.1:9",
                               "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=60, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail("the page never finished loading in 60 s: a script on it (a dialog it opened?) held it")
    assert done.returncode == 0 and "<html" in done.stdout, done.stderr[-2000:]
    return done.stdout


def test_the_course_report_renders_in_headless_chromium_with_every_section_and_no_student_markup(tmp_path):
    # Catches a page that does not load (broken markup, a file it needs beside it), a section left out,
    # figures that are not the batch's, and student text written into the page as markup.
    browser = chromium()
    hostile = "AssertionError: <script>document.title='forged'</script> <img src=x onerror=alert(1)>"
    graded = [results({"test_ok": True, "test_wrong": False}, message=hostile) for _ in range(3)]
    stats = tally_tests(graded)
    problems = [ProblemScores(9, "Memmap data loader", 29.0, [29.0, 14.0, 0.0])]
    changes = [{"student": "s1", "name": "Ada <b>", "before_key": "a", "after_key": "a", "before": 20.0,
                "after": 23.0, "note": "", "moved": [{"nodeid": "tests/t.py::test_wrong", "name": "test_wrong",
                                                      "problem": 9, "before": 0.0, "after": 3.0,
                                                      "cause": "the test changed"}]}]
    (tmp_path / "diff.json").write_text(json.dumps(changes))
    page = write_report(tmp_path, "Course report: week 5", ["3 of 3 submissions graded whole"], [], problems, stats)
    rendered = dom(browser, page, tmp_path)
    text = html.unescape(re.sub(r"<[^>]+>", " ", rendered))
    assert "<title>Course report: week 5</title>" in rendered, "a student's script ran and changed the page"
    for heading in ("Score distribution per problem", "Suspect tests", "The last diff",
                    "Every test: failure rate and failure messages"):
        assert heading in text
    assert "3 graded, mean 14.3 of 29, 1 full marks" in " ".join(text.split())
    assert rendered.count("<rect") == 10 and 'aria-label="points of problem 9"' in rendered
    assert "fails all 3 submissions with one message: AssertionError: <script>" in text
    assert "1 submissions graded again: 1 up, 0 down." in " ".join(text.split())
    assert "test_wrong: 0.0 → 3.0 (the test changed)" in " ".join(text.split())
    assert "<script" not in rendered and "<img" not in rendered and "Ada <b>" in text
    assert "3 × AssertionError: <script>" in " ".join(text.split())
