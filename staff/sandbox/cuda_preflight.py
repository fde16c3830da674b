"""The CUDA preflight: before the first test of a GPU grade, a freshly forked worker child, confined
as the student's code will be, starts CUDA and runs a small matmul and a synchronize.

If it cannot (the driver refuses to start under the sandbox, no device is visible, the context cannot
be made), nothing the tests would say speaks of the submission: the grade ends as the grader's own
failure, never as 0 of 12 for the student. The worker runs `run` on the "cuda_preflight" op; the
grader (the sandbox plugin) asks for it and reads the answer.

`mode` says what the preflight touches:
- DEVICE: the real one, on the machine's GPU;
- STAND_IN_FAILS and STAND_IN_STARTS: stand-ins for machines without a GPU, which go through the
  same op, child and reply and differ only in what stands for the driver: the first fails as cuInit
  does when the sandbox stops it, the second runs the same matmul on the CPU. They can be chosen only
  by Python code that calls `staff.grading.grade.grade(..., cuda_preflight_stand_in=...)` (staff tests and
  `staff gpu-check --dry-run`): no option, setting, file or environment variable of a grade names
  them, the choice travels in the grader's own files, and the worker hears it before any student
  code has been imported. A grade that used one says so in its results.

This file is copied into the worker's code folder: it imports nothing of the grader's.
"""

from __future__ import annotations

import time

DEVICE = "device"
STAND_IN_FAILS = "stand-in: the driver fails to start"
STAND_IN_STARTS = "stand-in: the CPU stands for the device"
STAND_INS = (STAND_IN_FAILS, STAND_IN_STARTS)
MODES = (DEVICE, *STAND_INS)
SIZE = 64  # of the square matmul: big enough to launch a real kernel, small enough to cost nothing
# What torch says when cuInit returns 304 under a sandbox (seen on an H100 with a PID namespace).
STAND_IN_DRIVER_ERROR = ("CUDA driver initialization failed (the preflight's stand-in for a driver that does not "
                         "start): Error 304: OS call failed or operation not supported on this OS")


class PreflightFailed(RuntimeError):
    """CUDA did not start, or the matmul gave a wrong answer, in the confined worker."""


_DONE: dict[str, str | PreflightFailed] = {}  # mode -> what the first run in this process gave


def run(mode: str) -> str:
    """Start CUDA (or the stand-in `mode` names), multiply two SIZE x SIZE matrices of ones and
    synchronize; the device's name and how long it took. Once per process: a worker child starts
    CUDA before it serves a call (worker.confine_child), and the preflight's question then gets that
    first answer, given while the driver could still make what it needs to start.

    Raises:
        PreflightFailed: CUDA did not start or answered wrongly; the message is the driver's.
        ValueError: `mode` is not one of MODES.
    """
    if mode not in MODES:
        raise ValueError(f"unknown CUDA preflight mode {mode!r}; expected one of {MODES}")
    if mode not in _DONE:
        try:
            _DONE[mode] = _start(mode)
        except PreflightFailed as failure:
            _DONE[mode] = failure
    if isinstance(_DONE[mode], PreflightFailed):
        raise _DONE[mode]
    return _DONE[mode]


def _start(mode: str) -> str:
    started = time.monotonic()
    import torch

    if mode == STAND_IN_FAILS:
        raise PreflightFailed(STAND_IN_DRIVER_ERROR)
    device = "cpu" if mode == STAND_IN_STARTS else "cuda"
    try:
        if device == "cuda" and not torch.cuda.is_available():
            raise PreflightFailed("torch.cuda.is_available() is False in the confined worker (the driver's NVML "
                                  "reports no usable device there)")
        ones = torch.ones(SIZE, SIZE, device=device)
        product = ones @ ones
        if device == "cuda":
            torch.cuda.synchronize()
        corner = float(product[0, 0].item())
        name = torch.cuda.get_device_name() if device == "cuda" else "the CPU, standing in for a device"
    except PreflightFailed:
        raise
    except Exception as error:  # noqa: BLE001 - whatever the driver raised is what the staff must read
        raise PreflightFailed(f"{type(error).__name__}: {error}") from None
    if corner != SIZE:
        raise PreflightFailed(f"a {SIZE}x{SIZE} matmul of ones on {name} gave {corner:g} where {SIZE} was expected")
    return f"{name}: a {SIZE}x{SIZE} matmul and a synchronize in {time.monotonic() - started:.2f} s"
