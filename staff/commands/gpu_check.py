"""`staff gpu-check`: on a GPU machine, the cuda tests, validate --gpu and gpu-report in one report."""

from __future__ import annotations

import argparse
from pathlib import Path

from staff.commands.needs_gpu import no_gpu


def run(args: argparse.Namespace) -> int:
    from staff.gpu_check import main_check
    from staff.grade import REPO_ROOT

    if no_gpu("gpu-check", "; run it first on the GPU machine (an H100 or H200); nothing was written"):
        return 2
    return main_check(args, REPO_ROOT)


def register(commands) -> None:
    from staff.gpu_check import REPORT_NAME

    check = commands.add_parser(
        "gpu-check",
        help="on a GPU machine, first: the cuda tests on the reference, validate --gpu and gpu-report, in one "
        "Markdown report",
        description="Run the cuda tests on the reference (each test's figure against its bound, and the margin), "
        "`staff validate --gpu` (stubs, wheat and GPU chaff behind the sandbox) and `staff gpu-report` on the "
        f"reference, and write OUT/{REPORT_NAME} (device, driver, torch, then one section per step) for the "
        "README's GPU part. Exits 0 when every cuda test passed and every implementation behaved as it must, 1 "
        "otherwise; without a CUDA GPU it stops at once with exit 2 and writes nothing.",
    )
    check.add_argument("--out", type=Path, default=Path("gpu-check"),
                       help=f"folder for {REPORT_NAME} and gpu-report/ (default: %(default)s)")
    check.add_argument("--no-validate", action="store_true", help="skip `staff validate --gpu` (the longest step)")
    check.add_argument("--no-report", action="store_true", help="skip `staff gpu-report`")
    check.set_defaults(run=run)
