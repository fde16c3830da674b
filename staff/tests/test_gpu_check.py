"""`staff gpu-check` without a GPU: it refuses at once and writes nothing; its report, built from a real
pytest run of scripted figure-recording tests, a scripted sandboxed grade and scripted validate rows;
and `--dry-run`, which walks every step with stand-ins for the device and writes the report's skeleton."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from staff.cli import main
from staff.gpu.dry_run import plumbing_problems
from staff.gpu.steps import (
    SECTIONS,
    CudaTestOutcome,
    SandboxedGrade,
    VariantOutcome,
    all_well,
    build_markdown,
    margin,
    read_junit,
)
from staff.grading.grade import REPO_ROOT
from staff.grading.outcomes import Outcome

SCRIPTED_TESTS = '''
import pytest
from tests.gpu_figures import record_figure

def test_timer(record_property):
    record_figure(record_property, "seconds / harness", 1.02, 1 / 1.5, 1.5, "harness 1.374 ms")

def test_memory(record_property):
    record_figure(record_property, "held / estimate", 1.35, 0.8, 1.25, "peak 108.0 MiB")
    assert False, "the step held 1.35x your estimate"

def test_unknown_device():
    pytest.skip("needs a CUDA GPU the tests know: 'NVIDIA H800'")

def test_exact():
    pass
'''

FACTS = {"device": "NVIDIA H100 80GB HBM3", "peak row": "H100", "driver": "570.86", "torch": "2.15.0"}


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU, so gpu-check runs")
def test_without_a_gpu_it_stops_at_once_with_exit_2_and_writes_nothing(tmp_path):
    out = tmp_path / "check"
    done = subprocess.run([sys.executable, "-m", "staff.cli", "gpu-check", "--out", str(out)], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "no CUDA GPU" in done.stderr and "nothing was written" in done.stderr
    assert not out.exists()


def test_help_says_what_it_runs(capsys):
    with pytest.raises(SystemExit) as leaving:
        main(["gpu-check", "--help"])
    assert leaving.value.code == 0
    said = " ".join(capsys.readouterr().out.split())
    assert "validate --gpu" in said and "gpu-report" in said and "gpu-check.md" in said
    assert "grade --gpu" in said and "--dry-run" in said and "stand-in" in said


@pytest.mark.parametrize("value, low, high, room", [
    (1.02, 1 / 1.5, 1.5, 1.5 / 1.02), (0.5, 1 / 1.5, 1.5, 0.75), (0.495, 0.30, 1.0, 0.495 / 0.30),
    (12.0, 4.0, None, 3.0), (3.0, 4.0, None, 0.75), (1.0, None, None, None), (0.0, 0.3, 1.0, None),
])
def test_the_margin_is_the_room_to_the_nearer_bound(value, low, high, room):
    # Catches a margin taken to the farther bound, or one that reads "inside" for a figure outside.
    assert margin(value, low, high) == (None if room is None else pytest.approx(room))


def scripted_run(tmp_path) -> list[CudaTestOutcome]:
    (tmp_path / "test_scripted.py").write_text(SCRIPTED_TESTS)
    junit = tmp_path / "out.xml"
    subprocess.run([sys.executable, "-m", "pytest", "test_scripted.py", "-q", "-p", "no:cacheprovider",
                    f"--junitxml={junit}", "-o", "junit_family=xunit1"], cwd=tmp_path, capture_output=True,
                   env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, timeout=120)
    return read_junit(junit)


def test_the_report_shows_each_figure_against_its_bounds_and_each_chaffs_verdict(tmp_path):
    # Catches a report that drops a test's figure, its margin, a failure's message or an escaped chaff.
    tests = {t.name: t for t in scripted_run(tmp_path)}
    assert {n: t.outcome for n, t in tests.items()} == {"test_timer": "passed", "test_memory": "failed",
                                                         "test_unknown_device": "skipped", "test_exact": "passed"}
    assert tests["test_memory"].figure["value"] == 1.35 and tests["test_exact"].figure is None
    variants = [VariantOutcome("stubs", "stubs", True, "0 / 0 points"),
                VariantOutcome("p04-wheat-x", "wheat", True, "5 / 5 points"),
                VariantOutcome("p04-chaff-no-synchronize", "chaff", True,
                               "caught by test_time_matmul_on_gpu_agrees_with_cuda_events"),
                VariantOutcome("p04-chaff-warm-ups-inside-the-clock", "chaff", False,
                               "problem 4: no test failed; it keeps all 5 points")]
    text = build_markdown(FACTS, list(tests.values()), variants, ["device: NVIDIA H100 80GB HBM3"], "2026-11-23")
    rows = {line.split("|")[1].strip(" `"): line for line in text.splitlines() if line.startswith("| `test_")}
    assert "1.47x" in rows["test_timer"] and "harness 1.374 ms" in rows["test_timer"]
    assert "0.93x (OUTSIDE)" in rows["test_memory"] and "held 1.35x your estimate" in rows["test_memory"]
    assert "skipped" in rows["test_unknown_device"] and "H800" in rows["test_unknown_device"]
    assert "| p04-chaff-warm-ups-inside-the-clock | chaff | WRONG: problem 4: no test failed" in text
    assert "- driver: 570.86" in text and "```text\ndevice: NVIDIA H100 80GB HBM3\n```" in text
    assert not all_well(list(tests.values()), variants)
    assert all_well([tests["test_timer"]], variants[:3])


def test_a_step_without_results_is_a_section_that_says_why():
    text = build_markdown(FACTS, "pytest wrote no results", "not run (--no-validate)", "not run (--no-report)", "now")
    assert "pytest wrote no results" in text and "not run (--no-validate)" in text
    assert not all_well("pytest wrote no results", [])


SANDBOXED = SandboxedGrade("graded", 12.0, 12.0, "passed: NVIDIA H100 80GB HBM3: a 64x64 matmul and a synchronize "
                           "in 1.20 s", [], ["pid namespace: off: a GPU grade"], "")
NO_CUDA = SandboxedGrade(Outcome.CUDA_UNAVAILABLE.value, 0.0, 0.0, "failed: RuntimeError: Error 304: OS call failed",
                         [], [], Outcome.CUDA_UNAVAILABLE.summary({"error": "RuntimeError: Error 304: OS call failed"}))


def test_the_real_check_holds_the_reference_to_its_sandboxed_gpu_grade():
    # Catches a check that reads clean while the reference's GPU grade behind the sandbox did not start
    # CUDA or lost points (the cuda tests pass unconfined either way), and a report that hides the
    # preflight or the grade's reason.
    tests = [CudaTestOutcome("test_exact", "passed")]
    variants = [VariantOutcome("stubs", "stubs", True, "0 / 0 points")]
    assert all_well(tests, variants, SANDBOXED)
    assert not all_well(tests, variants, NO_CUDA)
    assert not all_well(tests, variants, SandboxedGrade("graded", 10.0, 12.0, "passed: H100", ["test_x"], [], ""))
    assert not all_well(tests, variants, "staff grade --gpu failed: RuntimeError: boom")
    text = build_markdown(FACTS, tests, variants, ["device: H100"], "now", NO_CUDA)
    assert SECTIONS[1] in text and "| cuda_unavailable (WRONG) | 0 / 0 | failed: RuntimeError: Error 304" in text
    assert "not your fault" in text and "nvidia-smi" in text
    assert "| graded | 12 / 12 | passed: NVIDIA H100" in build_markdown(FACTS, tests, variants, [], "now", SANDBOXED)


def test_the_dry_runs_verdict_names_each_broken_step():
    # Catches a dry run that exits 0 whatever its steps did: a missing section, a step that failed, a
    # grade that stopped at its preflight.
    tests = [CudaTestOutcome("test_exact", "skipped")]
    variants = [VariantOutcome("stubs", "stubs", True, "dry run")]
    whole = build_markdown(FACTS, tests, variants, ["cpu"], "now", SANDBOXED, dry_run=True)
    assert plumbing_problems(whole, tests, SANDBOXED, variants, ["cpu"]) == []
    assert plumbing_problems(whole, tests, SANDBOXED, "not run (--no-validate)", "not run (--no-report)") == []
    cut = whole.replace(SECTIONS[4], "")
    found = plumbing_problems(cut, "pytest wrote no results", NO_CUDA, "staff validate --gpu failed: X", [])
    assert len(found) == 5, found
    assert "section '## `staff validate --gpu`'" in found[0] and "collected no test" in found[1]
    assert "ended 'cuda_unavailable'" in found[2] and "validate step failed: staff validate --gpu failed: X" in found[3]
    assert "gpu-report step gave nothing" in found[4]


@pytest.mark.slow
def test_the_dry_run_walks_every_step_and_writes_the_reports_skeleton(tmp_path):
    # Catches a dry run that leaves a step out (its section, its table), one whose sandboxed grade meets
    # the real preflight (no GPU here: the grade ends as the grader's failure and the dry run exits 1),
    # one that grades the validate set (its rows would carry points, not "dry run"), and one that
    # needs a GPU (exit 2).
    out = tmp_path / "check"
    done = subprocess.run([sys.executable, "-m", "staff.cli", "gpu-check", "--dry-run", "--out", str(out)],
                          cwd=REPO_ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    text = (out / "gpu-check.md").read_text()
    assert [heading for heading in SECTIONS if heading in text] == list(SECTIONS)
    assert "**Dry run**" in text and "- device: dry run (no GPU)" in text and "- driver: dry run" in text
    cuda_rows = [line for line in text.split(SECTIONS[2])[1].split(SECTIONS[3])[0].splitlines()
                 if line.startswith("| `test_")]
    assert len(cuda_rows) >= 8 and all("| dry run | dry run | dry run |" in row for row in cuda_rows)
    assert "| graded (dry run: no point to earn without a GPU) | 0 / 0 | passed (STAND-IN" in text
    assert "| p04-chaff-no-synchronize | chaff | ok: dry run: selected for grading, not graded |" in text
    assert "| stubs | stubs | ok: dry run" in text and "points" not in text.split(SECTIONS[4])[1].split(SECTIONS[5])[0]
    probes = text.split(SECTIONS[0])[1].split(SECTIONS[1])[0]
    assert "| every protection of a GPU grade, as its worker applies them | yes | started |" in probes
    assert "Every protection a GPU grade uses let CUDA start." in probes
    assert "-as-a-gpu-grade]` | passed | dry run: selected for grading, not graded |" in text
    assert "get_batch 64 x 1024 tokens" in text and (out / "gpu-report" / "gpu-report.csv").exists()


def test_a_step_not_begun_within_the_budget_says_so_and_the_report_is_written_after_each_step():
    # Mistakes caught: a spent budget that still starts the long steps (validate, the red team) on a lent
    # device's last minutes, or a report written only at the end (a run cut short would leave nothing).
    from staff.gpu.check import _Steps

    done, writes = {}, []
    steps = _Steps("staff gpu-check", 60.0, done, lambda: writes.append(dict(done)))
    steps.run("first", "a quick step", lambda: "ran")
    steps.deadline = 0.0  # the budget is spent
    steps.run("second", "a long step", lambda: pytest.fail("a step began after the budget was spent"))
    steps.run("third", "a step left out", lambda: "ran", "not run (--no-third)")
    assert done["first"] == "ran" and done["second"].startswith("not run: the budget was spent")
    assert done["third"] == "not run (--no-third)"
    assert [set(w) for w in writes] == [{"first"}, {"first", "second"}, {"first", "second", "third"}]
