"""A memory limit under which the worker cannot import torch is refused before any grade, and a worker
that does not start is the grader's failure, never the submission's "could not be loaded". Each test
names the mistake it catches."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from staff.cli import main
from staff.gradescope import autograder
from staff.grading.grade import REPO_ROOT
from staff.sandbox import settings
from staff.sandbox.settings import IMPORT_MEASURED_GIB, MEMORY_FLOOR_GIB, Settings


def _no_grading(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("a grade started with a memory limit torch cannot start under")

    monkeypatch.setattr("staff.grading.grade.grade", refuse)
    monkeypatch.setattr("staff.course.batch.grade_batch", refuse)
    monkeypatch.setattr("staff.bytecode.ensure_compiled", lambda: None)


@pytest.mark.parametrize("batch", [False, True], ids=["one", "batch"])
def test_staff_grade_refuses_a_memory_limit_below_the_floor_before_grading(tmp_path, monkeypatch, capsys, batch):
    # Mistake: no check, so `--memory-gib 2` grades on and every submission is told it "could not be
    # loaded" (the worker cannot import torch under 2 GiB of address space).
    _no_grading(monkeypatch)
    where = ["--batch", str(tmp_path)] if batch else [str(tmp_path)]
    assert main(["grade", *where, "--memory-gib", "2"]) == 2
    said = capsys.readouterr().err
    assert "staff grade: memory_gib (--memory-gib) 2 is below the 4 GiB" in said, said
    assert "import torch" in said and "give at least 4, or 0 for no limit" in said, said


def test_the_floor_holds_for_every_way_a_limit_is_given():
    # Mistakes: a check of --memory-gib alone (a Settings made in code or read from a file passes), one
    # that refuses 0 (no limit) or the floor itself, or one that refuses a GPU grade with no limit.
    for gib in (0.5, 3, MEMORY_FLOOR_GIB - 0.01):
        with pytest.raises(ValueError, match=rf"memory_gib \(--memory-gib\) {gib:g} is below"):
            Settings(memory_gib=gib)
    for gib in (0, MEMORY_FLOOR_GIB, 8):
        Settings(memory_gib=gib)
    Settings(gpu=True)


def test_the_autograder_ends_as_its_own_failure_on_a_settings_file_below_the_floor(tmp_path, monkeypatch, capsys):
    # Mistake: the autograder grading with the bundle's memory_gib 2, where every student would read that
    # their submission "could not be loaded"; it must end as the grader's failure, which blames no one,
    # and tell the staff which setting to change.
    graded = []
    monkeypatch.setattr("staff.grading.grade.grade", lambda *args, **kwargs: graded.append(args) or 1 / 0)
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"memory_gib": 2}))
    (tmp_path / "submission").mkdir()
    assert autograder.main(["--root", str(tmp_path), "--settings", str(path)]) == 1
    assert graded == [], "the autograder started a grade under a memory limit torch cannot start under"
    assert "memory_gib (--memory-gib) 2 is below the 4 GiB" in capsys.readouterr().err
    results = json.loads((tmp_path / "results" / "results.json").read_text())
    assert results["extra_data"]["outcome"] == "grader_error", results
    assert "not your fault" in results["output"] and "could not be loaded" not in results["output"]


_IMPORT_UNDER = """
import resource, sys
limit = int(float(sys.argv[1]) * 2**30)
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
sys.path[:0] = [sys.argv[2], sys.argv[3]]
import worker
worker.import_torch(2)
"""


def _imports_under(gib: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-I", "-c", _IMPORT_UNDER, str(gib), str(REPO_ROOT / "staff" / "sandbox"),
                           str(REPO_ROOT)], capture_output=True, text=True)


@pytest.mark.slow
def test_the_worker_imports_torch_at_the_measured_limit_and_not_just_below():
    # Mistakes: a floor that is a guess (torch cannot start at it) or that no longer measures anything (a
    # newer torch needs more, or much less: measure again and change both constants).
    assert MEMORY_FLOOR_GIB > IMPORT_MEASURED_GIB
    at = _imports_under(IMPORT_MEASURED_GIB)
    assert at.returncode == 0, f"the worker's imports failed under {IMPORT_MEASURED_GIB:g} GiB: {at.stderr[-2000:]}"
    below = _imports_under(IMPORT_MEASURED_GIB - 1 / 8)
    assert below.returncode != 0, f"the worker's imports worked under {IMPORT_MEASURED_GIB - 1 / 8:g} GiB: measure " \
        "the least limit again and set settings.IMPORT_MEASURED_GIB (and MEMORY_FLOOR_GIB) to it"


@pytest.mark.slow
def test_a_worker_that_cannot_import_torch_is_the_graders_failure_not_the_submissions(monkeypatch):
    # Mistake: the first worker's failure to start taken for the package's import error, so the
    # reference itself was "could not be loaded" under 2 GiB (the floor is lowered here to let it start).
    from staff.grading.grade import grade

    monkeypatch.setattr(settings, "MEMORY_FLOOR_GIB", 0.0)
    made = grade(REPO_ROOT, Settings(memory_gib=2, problems=(1,), hidden=False), progress=False)
    assert made.outcome.value == "grader_error", (made.outcome, made.details)
    error = str(made.details["error"])
    assert "did not start, before any of the submission's code ran" in error and "not the student's fault" in error
    assert "2 GiB (--memory-gib)" in error and "at least 4" in error, error
    assert made.tests == [] and "could not be loaded" not in made.output
