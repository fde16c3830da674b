"""`staff gpu-check`: on a GPU machine, the cuda tests, the reference's sandboxed GPU grade, validate --gpu and
gpu-report in one report; `--dry-run` walks the same steps without a GPU."""

from __future__ import annotations

import argparse
from pathlib import Path

from staff.commands.needs_gpu import no_gpu


def run(args: argparse.Namespace) -> int:
    from staff.gpu.check import gpu_check
    from staff.grading.grade import REPO_ROOT

    if not args.dry_run and no_gpu("gpu-check", "; run it first on the GPU machine (an H100 or H200), or try "
                                   "`staff gpu-check --dry-run` here; nothing was written"):
        return 2
    clean = gpu_check(REPO_ROOT, args.out, dry_run=args.dry_run, budget_s=args.budget, jobs=args.jobs,
                      validate=not args.no_validate, redteam=not args.no_redteam, report=not args.no_report)
    return 0 if clean else 1


def register(commands) -> None:
    from staff.gpu.steps import BUDGET_S, REPORT_NAME

    check = commands.add_parser(
        "gpu-check",
        help="on a GPU machine, first: each protection with CUDA, the reference's GPU grade behind the sandbox, the "
        "cuda tests, the red team, validate --gpu and gpu-report, in one Markdown report",
        description="Try each protection of a GPU grade's worker alone with CUDA, run `staff grade --gpu` on the "
        "reference behind the sandbox (its CUDA preflight, outcome and score), the cuda tests on the reference "
        "(each test's figure against its bound, and the margin), the red team's cases confined as a GPU grade, "
        "`staff validate --gpu` (stubs, wheat and GPU chaff behind the sandbox) and `staff gpu-report` on the "
        f"reference, and write OUT/{REPORT_NAME} (device, driver, torch, then one section per step) for the "
        "GPU part (docs/gpu.md), again after each step. Exits 0 when every protection a GPU grade uses let CUDA start, "
        "the sandboxed grade started CUDA and earned every point, every cuda test and red-team test passed, and "
        "every implementation behaved as it must (a step left out by an option is not judged), 1 otherwise; "
        "without a CUDA GPU it stops at once with "
        "exit 2 and writes nothing (but see --dry-run).",
    )
    check.add_argument("--out", type=Path, default=Path("gpu-check"),
                       help=f"folder for {REPORT_NAME} and gpu-report/ (default: %(default)s)")
    check.add_argument("--no-validate", action="store_true", help="skip `staff validate --gpu` (the longest step)")
    check.add_argument("--no-redteam", action="store_true",
                       help="skip the red team's cases confined as a GPU grade (graded on this machine)")
    check.add_argument("--jobs", "-j", type=int, default=6, metavar="N",
                       help="implementations validate grades at once, but for those of the timing problems, graded "
                       "one at a time (default: %(default)s)")
    check.add_argument("--budget", type=float, default=BUDGET_S, metavar="SECONDS",
                       help="a step not begun within this many seconds of the start is reported as not run "
                       "(default: %(default)g)")
    check.add_argument("--no-report", action="store_true", help="skip `staff gpu-report`")
    check.add_argument("--dry-run", action="store_true",
                       help="without a GPU: walk every step with a stand-in for the device (the cuda tests skip, the "
                       "sandboxed grade of one problem uses the CUDA preflight's stand-in that starts, validate lists "
                       "what it would grade, gpu-report measures one small size on the CPU) and write the report's "
                       "skeleton, 'dry run' in place of figures; exits 0 when every step's plumbing worked, 1 "
                       "otherwise (about a minute)")
    check.set_defaults(run=run)
