"""A grade's outcome as data: `staff.grading.outcomes.Outcome` in the Grade, its value and details in results.json's
extra_data with each test's problem, part and (never run) reason, the gradebook reading those fields and
nothing else, and `staff grade` showing the staff public and hidden points per problem."""

from __future__ import annotations

import csv
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from staff import samples
from staff.cli import main
from staff.course.batch import grade_batch, grade_one
from staff.course.folder import RESULTS, Submission
from staff.course.gradebook import write_gradebook
from staff.grading import suite_run
from staff.grading.grade import Grade, grade
from staff.grading.outcomes import Outcome
from staff.grading.results import results_json, validate_results, write_json_atomically
from staff.sandbox.settings import Settings
from tests.grading import FAILED, PASSED, GradedTest


def graded(name: str, problem: int, points: float, status: str, *, hidden: bool = False,
           cuda: bool = False) -> GradedTest:
    return GradedTest(nodeid=f"tests/x.py::{name}", name=name, number=f"{problem}.1", problem=problem, points=points,
                      needs_cuda=cuda, hidden=hidden, status=status)


def test_the_student_text_of_each_outcome_is_word_for_word_what_it_was():
    # Catches a template reworded on its way into the enum: students and the existing tests read these
    # sentences, which the grader built inline before outcomes were values.
    assert Outcome.NOT_LOADED.summary({"load_error": "SyntaxError: x"}) == \
        "Your submission could not be loaded, so no test ran:\nSyntaxError: x"
    assert Outcome.NOT_LOADED.never_ran({"load_error": "E"}) == \
        "Your submission could not be loaded, so no test ran:\nE"
    assert Outcome.TIME_LIMIT.summary({"time_limit_s": 540.0}) == \
        "The test run stopped early: the time limit of 540 s stopped the run. Tests that did not finish score 0."
    assert Outcome.TIME_LIMIT.never_ran({"time_limit_s": 540.0}) == \
        "FAILED: this test never finished: the time limit of 540 s stopped the run."
    assert Outcome.PROCESS_ENDED.never_ran({"exit_code": -9}) == \
        "FAILED: this test never finished: the test process ended (exit code -9) stopped the run."
    assert Outcome.GRADED.summary({}) == ""
    assert [o.value for o in Outcome if o.grader_failure] == ["out_of_memory", "grader_error", "cuda_unavailable",
                                                             "killed"]


def test_results_json_holds_the_outcome_and_each_tests_problem_part_and_reason():
    # Catches a `reason` written on every test (a test that ran would read as never run) or on none,
    # a cuda test filed under "public", and an outcome or its details left out of extra_data.
    tests = [graded("p", 4, 2, PASSED), graded("h", 4, 3, FAILED, hidden=True), graded("g", 8, 1, FAILED, cuda=True)]
    grade_ = Grade(tests=tests, output="The test run stopped early: ...", seconds=1.0, outcome=Outcome.TIME_LIMIT,
                   details={"time_limit_s": 540.0}, never_ran={"tests/x.py::g": Outcome.TIME_LIMIT})
    document = results_json(grade_)
    assert validate_results(document) == []
    assert {k: document["extra_data"][k] for k in ("outcome", "time_limit_s")} == \
        {"outcome": "time_limit", "time_limit_s": 540.0}
    assert [t["extra_data"] for t in document["tests"]] == [
        {"nodeid": "tests/x.py::p", "problem": 4, "part": "public"},
        {"nodeid": "tests/x.py::h", "problem": 4, "part": "hidden"},
        {"nodeid": "tests/x.py::g", "problem": 8, "part": "gpu", "reason": "time_limit"}]
    assert "grader_failure" not in document["extra_data"]


def test_a_test_process_that_ends_midway_is_an_outcome_with_its_exit_code(tmp_path):
    # Catches the grader telling "stopped early" apart by the tests' output prefix, or losing the exit
    # code: the submission ends the test process itself (exit code 3) halfway through Problem 1.
    package = samples.reference(tmp_path / "s")
    signature = "def bytes_per_parameter(optimizer: str, precision: str) -> int:\n"
    samples.replace_in(package / "dtype_memory.py", signature, f"{signature}    import os\n    os._exit(3)\n")
    result = grade(tmp_path / "s", Settings(in_process=True, hidden=False, problems={1}), progress=False)
    assert (result.outcome, result.details) == (Outcome.PROCESS_ENDED, {"exit_code": 3})
    assert result.output.startswith("The test run stopped early: the test process ended (exit code 3) stopped the run.")
    unfinished = [t for t in result.tests if t.nodeid in result.never_ran]
    assert unfinished and all(result.never_ran[t.nodeid] is Outcome.PROCESS_ENDED for t in unfinished)
    assert all(t.output == "FAILED: this test never finished: the test process ended (exit code 3) stopped the run."
               for t in unfinished)
    assert [t for t in result.tests if t.status == PASSED]  # what finished before the end still counts


def not_loaded(path: Path) -> Grade:
    """A grader's answer for a submission it could not load, whose summary starts unlike the old prose."""
    tests = [graded("p", 2, 5, FAILED)]
    return Grade(tests=tests, output="(reworded)", seconds=1.0, outcome=Outcome.NOT_LOADED,
                 details={"load_error": "  File \"strides.py\", line 3\nSyntaxError: invalid syntax\n"},
                 never_ran={"tests/x.py::p": Outcome.NOT_LOADED})


def test_the_gradebook_error_comes_from_the_outcome_not_the_summary_text(tmp_path):
    # Catches batch.py reading "could not be loaded" or "stopped early" back out of the summary: the
    # summary here says neither, and the error must still name the load error's last line.
    submission = Submission("ada", tmp_path / "in" / "ada", "1")
    grade_one(submission, tmp_path / "ada", not_loaded)
    assert json.loads((tmp_path / "ada" / "meta.json").read_text())["error"] == \
        "could not be loaded: SyntaxError: invalid syntax"
    stopped = lambda path: Grade(tests=[graded("p", 2, 5, FAILED)], output="", seconds=1.0,  # noqa: E731
                                 outcome=Outcome.TIME_LIMIT, details={"time_limit_s": 60.0})
    grade_one(submission, tmp_path / "bob", stopped)
    assert json.loads((tmp_path / "bob" / "meta.json").read_text())["error"] == \
        "The test run stopped early: the time limit of 60 s stopped the run. Tests that did not finish score 0."


def test_the_gradebook_files_points_by_extra_data_not_by_tags(tmp_path):
    # Catches a gradebook that reads the problem and part out of the tags (text for the students'
    # filters): here the tags say problem 3 and public, the fields problem 4 and hidden.
    document = results_json(Grade(tests=[graded("h", 4, 3, PASSED, hidden=True)], output="", seconds=1.0))
    document["tests"][0]["tags"] = ["problem 3", "public"]
    write_json_atomically(document, tmp_path / "ada" / RESULTS)
    write_gradebook([Submission("ada", tmp_path / "in" / "ada", "1")], tmp_path)
    row = next(csv.DictReader((tmp_path / "grades.csv").open()))
    # Problem 3 has no test in this grade: not graded, an empty cell, never 0.
    assert (row["p4_hidden"], row["p3_hidden"], row["total"]) == ("3", "", "3") and "p3_public" not in row


def test_results_from_an_older_grader_are_graded_again_not_misread(tmp_path):
    # Catches a resumed batch that keeps a results.json without the fields (written before they
    # existed) as finished: the gradebook would then fail on it or misfile its points.
    folder, out = tmp_path / "submissions", tmp_path / "grades"
    samples.stubs(folder / "ada")
    old = results_json(Grade(tests=[graded("p", 2, 5, PASSED)], output="", seconds=1.0))
    old["extra_data"].pop("outcome")
    for test in old["tests"]:
        test["extra_data"] = {"nodeid": test["extra_data"]["nodeid"]}
    write_json_atomically(old, out / "ada" / RESULTS)
    write_gradebook([Submission("ada", folder / "ada", "ada")], out)
    assert "0 of 1 submissions graded" in (out / "summary.md").read_text()  # not read as a grade
    seen = []
    lines, _ = grade_batch(folder, out, lambda path: seen.append(path) or not_loaded(path), jobs=1, progress=False)
    assert seen == [folder / "ada"] and "1 of 1 submissions graded whole" in lines
    assert json.loads((out / "ada" / RESULTS).read_text())["extra_data"]["outcome"] == "not_loaded"


def test_staff_grade_prints_public_and_hidden_points_per_problem(tmp_path, monkeypatch, capsys):
    # Catches the console printing the student's summary, whose last line says the hidden tests "add"
    # points when they grade, right above a score that already counts them.
    tests = [graded("p", 4, 2, PASSED), graded("h", 4, 3, FAILED, hidden=True), graded("q", 7, 1, PASSED)]
    student = "problem  points\n(public tests only; the staff's hidden tests add 91 points when they grade)"
    def grader(path, on_graded):  # as grade() does: the grade is delivered (written) before the clean-up
        made = Grade(tests, student, 1.0)
        on_graded(made)
        return made

    monkeypatch.setattr("staff.commands.grade.grader", lambda args, progress: grader)
    (tmp_path / "s").mkdir()
    assert main(["grade", str(tmp_path / "s"), "--out", str(tmp_path / "results.json")]) == 0
    printed = capsys.readouterr().out
    assert "hidden tests add" not in printed
    header, four, seven, total = printed.splitlines()[:4]
    assert header.split() == ["problem", "public", "hidden", "total"]
    assert four.split()[-9:] == ["2", "/", "2", "0", "/", "3", "2", "/", "5"]
    assert seven.split()[-7:] == ["1", "/", "1", "-", "1", "/", "1"]
    assert total.split() == ["total", "3", "/", "3", "0", "/", "3", "3", "/", "6"]
    assert json.loads((tmp_path / "results.json").read_text())["output"].count("hidden tests add 91") == 1


@pytest.mark.skipif(sys.platform != "linux", reason="the sandbox's worker")
def test_a_test_process_killed_from_outside_is_the_graders_failure_and_graded_again(tmp_path):
    # Without a PID namespace a batch neighbour's worker (or a TA, or the machine) could end another
    # grade's test process; that grade read "the test process ended (exit code -9)", every unfinished
    # test failed, and a rerun kept it. Mistakes caught: such an end counted against the submission, or
    # any end of the test process (a crash inside it, which a submission might provoke to escape its
    # grade) excused.
    package = samples.reference(tmp_path / "s")
    signature = "def bytes_per_parameter(optimizer: str, precision: str) -> int:\n"
    samples.replace_in(package / "dtype_memory.py", signature, f"{signature}    import time\n    time.sleep(60)\n")
    seen = []

    def kill_while_running() -> None:  # once the run has had time to reach the call that sleeps
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not seen:
            with suite_run._running_lock:
                running = list(suite_run._running)
            if running:
                time.sleep(10)
                seen.append(running[0].pid)
                os.killpg(running[0].pid, signal.SIGKILL)
            time.sleep(0.2)

    killer = threading.Thread(target=kill_while_running)
    killer.start()
    try:
        result = grade(tmp_path / "s", Settings(hidden=False, problems={1}, test_timeout_s=90.0), progress=False)
    finally:
        killer.join()
    assert seen, "the test process was never seen running"
    assert (result.outcome, result.details) == (Outcome.KILLED, {"signal": "SIGKILL"})
    assert Outcome.KILLED.grader_failure and "not your fault" in result.output and "ended from outside" in result.output
    document = results_json(result)
    assert validate_results(document) == [] and document["extra_data"]["outcome"] == "killed"
