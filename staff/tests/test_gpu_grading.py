"""`staff grade --gpu`: the GPU part graded on its own, into results-gpu.json, and added to the CPU
grade by the gradebook. What can be checked without a GPU: the selection, the refusal, the merge."""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys

import pytest
import torch

from staff.cli import main
from staff.commands.grade import register as add_grade_command
from staff.commands.settings_options import from_arguments
from staff.course.folder import RESULTS, RESULTS_GPU, Submission
from staff.course.gradebook import write_gradebook
from staff.grading.grade import REPO_ROOT, Grade, grade
from staff.grading.results import results_json, write_json_atomically
from staff.sandbox.settings import MEMORY_GIB, Settings
from tests.grading import FAILED, PASSED, GradedTest


def graded(name: str, problem: int, points: float, passed: bool, *, hidden: bool = False, cuda: bool = False):
    return GradedTest(nodeid=f"tests/x.py::{name}", name=name, number=f"{problem}.1", problem=problem, points=points,
                      needs_cuda=cuda, hidden=hidden, status=PASSED if passed else FAILED)


def write(folder, name, tests):
    write_json_atomically(results_json(Grade(tests=tests, output="", seconds=1.0)), folder / name)


def test_the_gradebook_adds_the_gpu_part_to_the_cpu_grade(tmp_path):
    # Catches a gradebook that reads results.json only (the GPU points vanish), or that drops a
    # submission whose GPU part was graded before its CPU grade.
    both, gpu_only = Submission("ada", tmp_path / "in" / "ada", "1"), Submission("bob", tmp_path / "in" / "bob", "2")
    write(tmp_path / "ada", RESULTS, [graded("t1", 4, 2, True), graded("h1", 4, 3, True, hidden=True)])
    write(tmp_path / "ada", RESULTS_GPU, [graded("g1", 4, 2, True, cuda=True), graded("g2", 8, 1, False, cuda=True)])
    write(tmp_path / "bob", RESULTS_GPU, [graded("g1", 4, 2, True, cuda=True)])
    write_gradebook([both, gpu_only], tmp_path)
    rows = {row["submission"]: row for row in csv.DictReader((tmp_path / "grades.csv").open())}
    assert (rows["ada"]["p4_public"], rows["ada"]["p4_hidden"], rows["ada"]["p4_gpu"]) == ("2", "3", "2")
    assert (rows["ada"]["gpu"], rows["ada"]["total"], rows["ada"]["max_total"]) == ("2", "7", "8")
    # Bob's CPU grade is not made yet: its columns are empty (not graded), never 0.
    assert (rows["bob"]["public"], rows["bob"]["gpu"], rows["bob"]["total"]) == ("", "2", "2")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU, so --gpu grades")
def test_grade_gpu_without_a_gpu_stops_at_once_and_writes_nothing(tmp_path):
    out = tmp_path / "results-gpu.json"
    done = subprocess.run([sys.executable, "-m", "staff.cli", "grade", "--gpu", "--out", str(out)], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "no CUDA GPU" in done.stderr
    assert not out.exists()


def memory_limit(*argv: str) -> int | None:
    """The worker's address-space limit, in bytes, that `staff grade ARGV` would set."""
    parser = argparse.ArgumentParser()
    add_grade_command(parser.add_subparsers())
    return from_arguments(parser.parse_args(["grade", *argv])).memory_bytes()


def test_grade_gpu_refuses_parallel_jobs_and_lifts_the_address_space_limit(tmp_path, capsys):
    # Two GPU grades at once would time each other's matmuls; and the CUDA driver maps far more
    # address space than the CPU grade's 8 GiB limit allows. The refusal comes before the GPU check,
    # so it is seen (and asserted) on a machine without a GPU too.
    for command in (["grade", "--gpu", "--batch", str(tmp_path), "--out", str(tmp_path / "o")], ["validate", "--gpu"]):
        assert main([*command, "-j", "2"]) == 2
        assert "one at a time" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
    assert memory_limit("--gpu") is None and memory_limit("--gpu", "--memory-gib", "4") == 4 << 30
    assert memory_limit() == MEMORY_GIB * 2**30


def test_validate_gpu_grades_without_the_address_space_limit(monkeypatch):
    # Catches `staff validate --gpu` confining each implementation as a CPU grade does: under the 8 GiB
    # limit the worker cannot start CUDA, and every wheat would lose Problems 1, 4, 8, 9 and 11.
    from staff.validate import run

    seen = []
    monkeypatch.setattr(run, "gpu_problems", lambda: frozenset({1}))  # a collection the limit does not depend on
    monkeypatch.setattr(run, "_grade", lambda key, kind, problem, problems, build_into, options, gpu:
                        seen.append((options.memory_bytes(), gpu)) or run.Outcome(key, kind, problem))
    run.validate([], jobs=1, progress=False, gpu=True)
    run.validate([], jobs=1, progress=False, gpu=False)
    assert seen == [(None, True), (MEMORY_GIB * 2**30, False)]


@pytest.mark.slow
def test_the_gpu_part_runs_only_the_cuda_tests(tmp_path):
    # Catches a GPU grade that runs the CPU tests again (their points would count twice) or the hidden suite.
    result = grade(REPO_ROOT, Settings(in_process=True, gpu=True), progress=False)
    assert result.tests and all(t.needs_cuda and not t.hidden for t in result.tests)
    problems = {t.problem for t in result.tests}
    assert {1, 4, 8, 9, 11} <= problems
    if not torch.cuda.is_available():
        assert all(t.status == "skipped" for t in result.tests) and result.max_score == 0


@pytest.mark.slow
def test_a_broken_submission_scores_0_on_the_gpu_part_alone(tmp_path):
    # Catches a GPU grade that, for a submission it cannot load, lists every CPU test as failed: the
    # gradebook would add their points to the GPU part's maximum.
    (tmp_path / "cs336_basics").mkdir()
    (tmp_path / "cs336_basics" / "__init__.py").write_text("this is not python\n")
    result = grade(tmp_path, Settings(in_process=True, gpu=True), progress=False)
    assert result.output.startswith("Your submission could not be loaded")
    assert result.tests and all(t.needs_cuda for t in result.tests)


@pytest.mark.slow
def test_a_cpu_grade_on_a_machine_that_reports_a_gpu_leaves_the_cuda_tests_out(tmp_path, monkeypatch):
    # Catches a CPU grade without `-m "not cuda"`: on a GPU machine it would run the cuda tests under
    # the CPU grade's 8 GiB limit (or, for a submission it cannot load, fail them), and the gradebook
    # would count the GPU part's points in both parts. The machine reports a GPU here by script.
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    (tmp_path / "cs336_basics").mkdir()
    (tmp_path / "cs336_basics" / "__init__.py").write_text("this is not python\n")
    broken = grade(tmp_path, Settings(in_process=True, hidden=False), progress=False)
    assert broken.tests and not [t.name for t in broken.tests if t.needs_cuda]
    ran = grade(REPO_ROOT, Settings(in_process=True, hidden=False, problems={1}), progress=False)
    assert ran.tests and not [t.name for t in ran.tests if t.needs_cuda]
    assert all(t.status == "passed" for t in ran.tests)


def report_command(out, *submission) -> list[str]:
    return [sys.executable, "-m", "staff.cli", "gpu-report", *map(str, submission), "--device", "cpu", "--sizes", "32",
            "64", "--dtypes", "float32", "--warmup", "1", "--repeats", "2", "--out", str(out)]


@pytest.mark.slow
def test_gpu_report_shape_on_the_cpu_for_the_reference_and_for_stubs(tmp_path):
    # The same code measures on a GPU; here the table, the CSV, the PNG, and a broken timer as a line.
    from staff import samples
    done = subprocess.run(report_command(tmp_path / "ref"), cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert "unknown device" in done.stdout and "get_batch 64 x 1024 tokens" in done.stdout
    rows = list(csv.DictReader((tmp_path / "ref" / "gpu-report.csv").open()))
    assert [(r["dtype"], r["size"]) for r in rows] == [("float32", "32"), ("float32", "64")]
    assert all(float(r["harness_ms"]) > 0 and float(r["student_ms"]) > 0 for r in rows)
    assert (tmp_path / "ref" / "gpu-report.png").read_bytes()[:4] == b"\x89PNG"
    stubs = samples.stubs(tmp_path / "stubs")
    done = subprocess.run(report_command(tmp_path / "stub-report", stubs), cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "time_matmul raised NotImplementedError" in done.stdout and "get_batch raised NotImplementedError" in \
        done.stdout


@pytest.mark.slow
def test_gpu_report_refuses_a_missing_submission_and_no_gpu(tmp_path):
    done = subprocess.run(report_command(tmp_path / "out", tmp_path / "nowhere"), cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and "does not exist" in done.stderr and not (tmp_path / "out").exists()
    if not torch.cuda.is_available():
        done = subprocess.run([sys.executable, "-m", "staff.cli", "gpu-report", "--out", str(tmp_path / "out")],
                              cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and "no CUDA GPU" in done.stderr and not (tmp_path / "out").exists()


def test_the_worker_gets_the_gpu_variables_and_nothing_else_of_the_graders_environment():
    # Catches a worker without the driver's library path (CUDA unavailable there on machines that
    # need LD_LIBRARY_PATH), and one that inherits the grader's secrets.
    from staff.sandbox.worker_config import WorkerConfig, worker_environment

    config = WorkerConfig(code="/c", folder="/w", shared="/s", python="python", site_packages=[], read_only=[],
                          devices=[], reveal=[], uid=None, gid=None)
    env = worker_environment(config, {"LD_LIBRARY_PATH": "/usr/local/nvidia/lib64", "CUDA_VISIBLE_DEVICES": "0",
                                      "GRADER_TOKEN": "secret", "PYTHONPATH": "/grader"})
    assert env["LD_LIBRARY_PATH"] == "/usr/local/nvidia/lib64" and env["CUDA_VISIBLE_DEVICES"] == "0"
    assert "GRADER_TOKEN" not in env and "PYTHONPATH" not in env and env["HOME"] == "/w"
    assert env["PYTORCH_NVML_BASED_CUDA_CHECK"] == "1"  # the zygote forks: no CUDA driver set up before it
