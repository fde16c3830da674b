"""A GPU grade's CUDA preflight, without a GPU: the worker's stand-ins for a driver that fails to start
(as cuInit does under a sandbox that stops it) and for one that starts, through the real op, child
and reply of a sandboxed grade."""

from __future__ import annotations

import argparse

import pytest
import torch

from adapters import _codec
from staff.commands.grade import register as add_grade_command
from staff.course.folder import RESULTS_GPU, error_text, finished
from staff.grading.grade import REPO_ROOT, grade
from staff.grading.outcomes import Outcome
from staff.grading.results import results_json, validate_results, write_json_atomically
from staff.sandbox import cuda_preflight, plugin_settings
from staff.sandbox.failures import CallTimedOut, GraderOutOfMemory, WorkerCrashed
from staff.sandbox.layout import build
from staff.sandbox.output_log import BoundedLog
from staff.sandbox.settings import Settings
from staff.sandbox.worker_route import WorkerRoute

GPU_PART_OF_PROBLEM_8 = Settings(gpu=True, problems=(8,))


class ScriptedWorker:
    """A worker whose preflight call answers `answer`: a reply to send back, or a failure to raise."""

    def __init__(self, answer) -> None:
        self.answer, self.asked, self.log = answer, [], BoundedLog()

    def fresh_child(self) -> str:
        return ""

    def request(self, header: dict, blobs: list, deadline: float):
        self.asked.append(header)
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer, []


def test_the_stand_ins_and_the_device_check_answer_as_the_driver_would():
    # Catches a stand-in that does not fail, one that fails without the driver's words, and a device
    # check that passes where torch sees no GPU.
    assert "64x64 matmul" in cuda_preflight.run(cuda_preflight.STAND_IN_STARTS)
    with pytest.raises(cuda_preflight.PreflightFailed, match="Error 304: OS call failed"):
        cuda_preflight.run(cuda_preflight.STAND_IN_FAILS)
    with pytest.raises(ValueError, match="unknown CUDA preflight mode"):
        cuda_preflight.run("cuda, please")
    if not torch.cuda.is_available():
        with pytest.raises(cuda_preflight.PreflightFailed, match="is_available"):
            cuda_preflight.run(cuda_preflight.DEVICE)


@pytest.mark.parametrize("answer, passed, said", [
    ({"ok": True, "value": _codec.encode("NVIDIA H100: a 64x64 matmul")[0]}, True, "NVIDIA H100: a 64x64 matmul"),
    ({"ok": False, "error": ["PreflightFailed", "RuntimeError", "Error 304: OS call failed", "trace"]}, False,
     "PreflightFailed: Error 304: OS call failed"),
    (CallTimedOut("timed out"), False, "did not start CUDA within 300 s"),
    (WorkerCrashed("crashed with a segmentation fault (SIGSEGV)"), False, "the worker crashed with a segmentation"),
    (GraderOutOfMemory("was killed because the grading container's memory ran out"), False, "not finished"),
    ({"ok": False, "error": "not a list"}, False, "malformed"),
])
def test_the_grader_reads_every_end_of_the_preflight_call(answer, passed, said):
    # Catches a preflight read as passed when its child timed out, crashed, ran short of the
    # container's memory or answered garbage, a failure whose message loses the driver's words or
    # torch's warnings, and those warnings left in the log for the first test to print.
    worker = ScriptedWorker(answer)
    worker.log.add(b"UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount()\n")
    got = WorkerRoute(worker, 120.0).cuda_preflight(cuda_preflight.STAND_IN_FAILS, 300.0)
    assert got[0] is passed and said in got[1], got
    assert worker.asked == [{"op": "cuda_preflight", "mode": cuda_preflight.STAND_IN_FAILS}]
    assert ("cudaGetDeviceCount" in got[1]) is not passed  # torch's warning, for the staff, where it failed
    assert worker.log.take() == ""  # and never echoed as the first test's output


def test_only_a_gpu_grade_has_a_preflight_and_no_option_of_staff_grade_picks_a_stand_in(tmp_path):
    # Catches a CPU grade that starts CUDA, a GPU grade without the preflight, a real grade that runs a
    # stand-in, a misspelt stand-in that quietly becomes the device check, and an option (or setting)
    # through which a TA's command line could reach a stand-in.
    package = tmp_path / "package"
    package.mkdir()
    (package / "__init__.py").touch()

    def mode(settings, stand_in=None) -> str:
        scratch = tmp_path / f"scratch{len(list(tmp_path.iterdir()))}"
        scratch.mkdir()
        workspace = build(scratch, REPO_ROOT, package, ("adapters",), False, settings, 1, stand_in)
        return plugin_settings.read(workspace.settings).cuda_preflight

    assert mode(Settings()) == ""
    assert mode(Settings(gpu=True)) == cuda_preflight.DEVICE
    assert mode(Settings(gpu=True), cuda_preflight.STAND_IN_FAILS) == cuda_preflight.STAND_IN_FAILS
    with pytest.raises(ValueError, match="unknown CUDA preflight stand-in"):
        mode(Settings(gpu=True), "device-ish")
    parser = argparse.ArgumentParser()
    add_grade_command(parser.add_subparsers())
    options = {option for action in parser._subparsers._group_actions[0].choices["grade"]._actions
               for option in action.option_strings}
    assert not [option for option in options if "preflight" in option or "stand" in option]
    assert not [name for name in Settings.__dataclass_fields__ if "preflight" in name or "stand" in name]


@pytest.mark.slow
def test_a_gpu_grade_whose_worker_cannot_start_cuda_is_the_graders_failure(tmp_path):
    # Catches the preflight's failure scored as the student's 0 (tests failed, outcome graded), a grade
    # that never runs the preflight, a results.json that blames the student or hides the driver's
    # message from the staff, and a batch that counts the grade as finished instead of grading it again.
    made = grade(REPO_ROOT, GPU_PART_OF_PROBLEM_8, progress=False,
                 cuda_preflight_stand_in=cuda_preflight.STAND_IN_FAILS)
    assert made.outcome is Outcome.CUDA_UNAVAILABLE and made.outcome.grader_failure
    assert made.tests == [] and made.never_ran == {} and made.score == 0
    assert "Error 304: OS call failed" in made.details["error"]
    assert made.details["cuda_preflight"].startswith(f"failed ({cuda_preflight.STAND_IN_FAILS.upper()}")
    document = results_json(made)
    assert validate_results(document) == [] and document["tests"] == []
    extra = document["extra_data"]
    assert extra["outcome"] == "cuda_unavailable" and "Error 304" in extra["error"]
    student_reads = document["output"]
    assert "not your fault" in student_reads and "no test was counted" in student_reads
    assert "nvidia-smi" in student_reads and "staff gpu-check" in student_reads and "--no-seccomp" in student_reads
    out = tmp_path / "grades" / "ada"
    out.mkdir(parents=True)
    write_json_atomically(document, out / RESULTS_GPU)
    assert not finished(out, RESULTS_GPU)
    assert error_text(extra).startswith("not graded: CUDA did not start") and "Error 304" in error_text(extra)


@pytest.mark.slow
def test_a_gpu_grade_whose_preflight_passes_goes_on_and_says_so():
    # Catches a GPU grade that skips the preflight (no note of it), one that stops after a passing
    # preflight, and results that do not say a stand-in, not a device, answered.
    made = grade(REPO_ROOT, GPU_PART_OF_PROBLEM_8, progress=False,
                 cuda_preflight_stand_in=cuda_preflight.STAND_IN_STARTS)
    assert made.outcome is Outcome.GRADED, made.output
    assert made.tests and all(t.needs_cuda and t.problem == 8 for t in made.tests)
    assert not [t.name for t in made.tests if t.status == "failed"]
    if not torch.cuda.is_available():
        assert all(t.status == "skipped" for t in made.tests)
    assert made.details["cuda_preflight"].startswith(f"passed ({cuda_preflight.STAND_IN_STARTS.upper()}, not a device)")
    assert "64x64 matmul" in results_json(made)["extra_data"]["cuda_preflight"]
