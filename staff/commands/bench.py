"""`staff bench`: time what users wait on, each figure against its baseline."""

from __future__ import annotations

import argparse
from pathlib import Path


def run(args: argparse.Namespace) -> int:
    from staff.bench.run import DEFAULT_GROUPS, bench
    from staff.bytecode import ensure_compiled

    ensure_compiled()
    bench(args.only or list(DEFAULT_GROUPS), args.repeats, args.batch_size, args.out, args.readme)
    return 0


def register(commands) -> None:
    from staff.bench.run import BENCH_PAGE, DEFAULT_GROUPS, GROUPS

    bench = commands.add_parser(
        "bench",
        help="measure what users wait on, each figure against the baseline a user would otherwise pick",
        description="Time, on this machine: get_batch, an AdaGrad step, the hand-written backward and checkpoints "
        "against their PyTorch baselines; a student's test file and whole suite from a cold start; one grade and a "
        "batch at 1 and at every core; staff release. Prints a Markdown table with each target and whether it is "
        "met, and writes it to --out (and into docs/speed.md between its bench markers with --readme). Exits 0 "
        "whether or not targets are met; 2 on bad arguments.",
    )
    bench.add_argument("--only", choices=GROUPS, action="append", metavar="GROUP",
                       help=f"run only this group (repeatable; one of {', '.join(GROUPS)}; default: "
                       f"{', '.join(DEFAULT_GROUPS)})")
    bench.add_argument("--repeats", type=int, default=3, help="timed repeats per figure (default: %(default)s)")
    bench.add_argument("--batch-size", type=int, default=4,
                       help="copies of the reference in the batch-throughput figure, graded at -j 1 and at -j cores "
                       "(default: %(default)s; 20 takes about 12 more minutes on 2 cores)")
    bench.add_argument("--out", type=Path, default=Path("bench.md"), help="the Markdown file (default: %(default)s)")
    bench.add_argument("--readme", type=Path, nargs="?", const=BENCH_PAGE, default=None,
                       help="also put the table into this page between its bench markers (default: %(const)s)")
    bench.set_defaults(run=run)
