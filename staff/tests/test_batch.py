"""`staff grade --batch`: a folder of submissions (folders, zips, Gradescope's export layout) graded in
parallel into results, grades.csv, summary.md and charts; stopped midway, it keeps what it finished
and a second run grades only the rest."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from staff import samples
from staff.course.folder import RESULTS, find_submissions
from staff.tests.processes import running_commands

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def test_gradescope_export_layout_names_each_submitter(tmp_path):
    samples.stubs(tmp_path / "submission_101")
    samples.stubs(tmp_path / "submission_102")
    (tmp_path / "submission_metadata.yml").write_text(
        "submission_101:\n  :submitters:\n  - :name: Ada Lovelace\n    :sid: '0001'\n    :email: ada@example.edu\n"
        "  :created_at: 2026-11-01 10:00:00\n"
        "submission_102:\n  :submitters:\n  - :name: Alan Turing\n    :sid: '0002'\n    :email: alan@example.edu\n"
        "  - :name: Grace Hopper\n    :sid: '0003'\n    :email: grace@example.edu\n")
    found = find_submissions(tmp_path)
    assert [(s.key, s.student_id, s.name) for s in found] == [
        ("submission_101", "0001", "Ada Lovelace"), ("submission_102", "0002;0003", "Alan Turing;Grace Hopper")]


def test_a_folder_of_folders_and_zips_is_one_submission_each(tmp_path):
    samples.stubs(tmp_path / "alice")
    samples.zip_folder(samples.stubs(tmp_path / "bob-work").parent, tmp_path / "bob.zip")
    (tmp_path / "bob-work").rename(tmp_path / ".bob-work")  # hidden: not a submission
    (tmp_path / "notes.txt").write_text("not a submission")
    assert [(s.key, s.path.name) for s in find_submissions(tmp_path)] == [("alice", "alice"), ("bob", "bob.zip")]


def test_unreadable_metadata_is_refused_with_a_reason(tmp_path):
    (tmp_path / "submission_metadata.yml").write_text("submission_1: [unclosed")
    from staff.course.folder import BatchError

    with pytest.raises(BatchError, match="not readable YAML"):
        find_submissions(tmp_path)


def batch_command(folder: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "staff.cli", "grade", "--batch", str(folder), "--out", str(out), "-j", "2",
            "--no-hidden", "--test-timeout", "20"]


def test_a_stopped_batch_keeps_what_it_finished_and_a_rerun_grades_the_rest(tmp_path, request):
    folder, out = tmp_path / "submissions", tmp_path / "grades"
    for name in ("s1", "s2", "s3", "s4"):
        samples.stubs(folder / name)
    samples.stubs(folder / "half-done", keep={"dtype_memory"})
    samples.replace_in(samples.reference(folder / "broken") / "flops.py", "def mfu(", "def mfu(((")
    samples.zip_folder(samples.stubs(tmp_path / "zipped").parent, folder / "zipped.zip")
    # This batch's grades make their scratch folders in a folder of its own, so that what is checked below is
    # this batch's test runs alone: another grade on the machine (a TA's second batch, CI beside other work)
    # is not this test's business. Open to the workers' users, as /tmp is.
    scratch = Path(tempfile.mkdtemp(prefix="cs336-stopped-batch-"))
    scratch.chmod(0o1777)
    request.addfinalizer(lambda: shutil.rmtree(scratch, ignore_errors=True))
    env = {**os.environ, "PYTHONPATH": str(samples.REPO_ROOT), "TMPDIR": str(scratch)}
    first = subprocess.Popen(batch_command(folder, out), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and len(list(out.glob(f"*/{RESULTS}"))) < 2:
        time.sleep(0.5)
    os.killpg(first.pid, signal.SIGKILL)  # the hardest stop: no clean-up of any kind
    first.wait()
    finished = {p.parent.name: p.stat().st_mtime_ns for p in out.glob(f"*/{RESULTS}")}
    assert 2 <= len(finished) < 7
    for path in finished:
        assert json.loads((out / path / RESULTS).read_text())["tests"]  # whole files only
    # A test run ends with its grader: at once if it had started, else when it starts and finds it gone.
    deadline = time.monotonic() + 60
    ours = f"{scratch}{os.sep}staff-grade-"
    while [c for c in running_commands() if ours in c] and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not [c for c in running_commands() if ours in c], "the stopped batch's test runs outlived it"
    second = subprocess.run(batch_command(folder, out), env=env, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr[-2000:]
    for name, mtime in finished.items():
        assert (out / name / RESULTS).stat().st_mtime_ns == mtime, f"{name} was graded again"
    assert not list(out.rglob("*.tmp")), "half-written files were left"
    with (out / "grades.csv").open() as handle:
        rows = {row["submission"]: row for row in csv.DictReader(handle)}
    assert set(rows) == {"s1", "s2", "s3", "s4", "half-done", "broken", "zipped"}
    assert rows["half-done"]["p1_public"] == "31" and rows["half-done"]["total"] == "31"
    assert rows["s1"]["total"] == "0" and rows["zipped"]["total"] == "0"
    assert rows["broken"]["total"] == "0" and "SyntaxError" in rows["broken"]["error"]
    assert all(float(row["wall_s"]) > 0 for row in rows.values())
    summary = (out / "summary.md").read_text()
    assert "7 of 7 submissions graded" in summary and "1. Dtype memory" in summary
    for chart in ("score_histogram.png", "problem_pass_rates.png", "most_failed_tests.png"):
        assert (out / "charts" / chart).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "7 of 7 submissions graded" in second.stdout

