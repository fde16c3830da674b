"""`staff gpu-report`: the GPU's matmul throughput by the tests' harness beside a submission's, and get_batch's."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from staff.commands.needs_gpu import no_gpu


def run(args: argparse.Namespace) -> int:
    """0 when measured, 1 when measuring failed, 2 on bad arguments or no GPU."""
    from staff.gpu.report import ReportError, format_report, run_report
    from staff.grading.grade import REPO_ROOT

    if args.device.startswith("cuda") and no_gpu("gpu-report", "; run it on the GPU machine, or pass --device "
                                                  "cpu to see the report's shape here"):
        return 2
    import torch

    try:
        torch.device(args.device)
    except RuntimeError:
        print(f"staff gpu-report: --device {args.device!r} is not a device; expected cuda, cuda:N or cpu",
              file=sys.stderr)
        return 2
    if any(size < 1 for size in args.sizes) or args.repeats < 1 or args.warmup < 1:
        print("staff gpu-report: sizes, --warmup and --repeats must be at least 1", file=sys.stderr)
        return 2
    submission = args.submission.resolve() if args.submission else None
    if submission is not None and not submission.exists():
        print(f"staff gpu-report: {submission} does not exist; expected a folder holding cs336_basics/ or a zip of it",
              file=sys.stderr)
        return 2
    print(f"measuring {submission or 'the reference'} on {args.device}", file=sys.stderr)
    try:
        report, files = run_report(submission, args.device, args.sizes, args.dtypes, args.warmup, args.repeats,
                                   args.out, REPO_ROOT)
    except ReportError as error:
        print(f"staff gpu-report: {error}", file=sys.stderr)
        return 1
    print("\n".join(format_report(report)))
    print("\nwritten: " + ", ".join(str(f) for f in files))
    return 0


def register(commands) -> None:
    from staff.gpu.report import DTYPES, SIZES

    report = commands.add_parser(
        "gpu-report",
        help="the device's matmul throughput by the tests' harness beside a submission's time_matmul, and get_batch's",
        description="On the GPU present: its name and peak row; for each dtype and matrix size the harness's "
        "(CUDA events, warm-up, rotated inputs, median) and the submission's time_matmul time, TFLOP/s and MFU, with "
        "the harness's verdict on the latter; get_batch's throughput for 64 x 1024 tokens from a 256 MiB memmap. "
        "Prints the table and writes OUT/gpu-report.csv and OUT/gpu-report.png. The submission's code runs "
        "unconfined: this is a report, not a grade.",
    )
    report.add_argument("submission", nargs="?", type=Path, default=None,
                        help="a folder holding cs336_basics/, that folder, or a zip (default: the reference)")
    report.add_argument("--device", default="cuda", help="where to measure (default: %(default)s; 'cpu' shows the "
                        "report's shape on a machine without a GPU)")
    report.add_argument("--sizes", type=int, nargs="+", default=list(SIZES),
                        help="matrix sizes n of the n x n @ n x n products (default: %(default)s)")
    report.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=["bfloat16", "float16", "float32"],
                        help="dtypes (default: %(default)s)")
    report.add_argument("--warmup", type=int, default=5, help="untimed runs first (default: %(default)s)")
    report.add_argument("--repeats", type=int, default=20, help="timed runs; the median is reported "
                        "(default: %(default)s)")
    report.add_argument("--out", type=Path, default=Path("gpu-report"),
                        help="folder for gpu-report.csv and gpu-report.png (default: %(default)s)")
    report.set_defaults(run=run)
