"""TF32 off around the student's time_matmul and the harness's matmuls, on the CPU: a scripted
environment sets TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 (as some NVIDIA containers do), and scripted
settings stand in for a PyTorch on which the override cannot be undone."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from adapters._tf32 import OVERRIDE, float32_matmuls
from staff.grading.grade import REPO_ROOT

# In a fresh process with the override set: the setting before, during the student's call and the
# harness's timed matmuls, and after.
PROBE = """
import json, torch
from adapters import flops as A
from cs336_basics import flops
from tests import gpu_timing as H

matmul = torch.backends.cuda.matmul
seen = {"before": matmul.allow_tf32, "student": [], "harness": []}
real = flops.time_matmul

def spy(*args, **kwargs):
    seen["student"].append(matmul.allow_tf32)
    return real(*args, **kwargs)

flops.time_matmul = spy
A.run_time_matmul(8, 8, 8, "float32", "cpu", 1, 1)

class Clock(H.PerfCounterClock):
    def start(self):
        seen["harness"].append(matmul.allow_tf32)
        return super().start()

H.matmul_seconds(8, 8, 8, torch.float32, "cpu", warmup=1, repeats=2, clock=Clock())
seen["after"] = matmul.allow_tf32
print(json.dumps(seen))
"""


def test_the_student_and_the_harness_run_float32_math_under_the_override_and_it_is_put_back():
    # Catches an adapter that leaves TF32 as the environment set it (the student's float32 call then
    # runs TF32 while the harness does not, or the other way round) and one that does not put it back.
    env = {**os.environ, OVERRIDE: "1", "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["before"] is True, f"the scripted environment did not turn TF32 on: {seen}"
    assert seen["student"] == [False], f"TF32 during the student's time_matmul: {seen}"
    assert seen["harness"] == [False, False], f"TF32 during the harness's timed matmuls: {seen}"
    assert seen["after"] is True, f"the setting was not put back after the calls: {seen}"


class StuckTF32:
    """A PyTorch on which the override wins: allow_tf32 reads True whatever is set; logs each set."""

    def __init__(self) -> None:
        self.set_to: list[bool] = []

    @property
    def allow_tf32(self) -> bool:
        return True

    @allow_tf32.setter
    def allow_tf32(self, value: bool) -> None:
        self.set_to.append(value)


def test_a_tf32_that_cannot_be_turned_off_is_an_error_naming_the_variable():
    # Catches a switch that sets the flag and trusts it: the float32 figures would be TF32 figures.
    stuck = StuckTF32()
    with pytest.raises(RuntimeError, match=OVERRIDE), float32_matmuls(stuck):
        pytest.fail("the block ran with TF32 on")
    assert stuck.set_to == [False, True], "turned off, then put back as it was"


def test_the_setting_is_put_back_after_an_exception():
    matmul = torch.backends.cuda.matmul
    saved = matmul.allow_tf32
    matmul.allow_tf32 = True
    try:
        with pytest.raises(ValueError), float32_matmuls():
            assert matmul.allow_tf32 is False
            raise ValueError("the student's code raised")
        assert matmul.allow_tf32 is True
    finally:
        matmul.allow_tf32 = saved
