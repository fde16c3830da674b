"""`staff bench`: run the chosen groups, print the table, write it as Markdown and, on request,
into the staff page of measurements (docs/speed.md) between its bench markers."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

from staff.atomic import write_text_atomic
from staff.bench.measure import Row, machine_description, markdown
from staff.errors import StaffError

GROUPS = ("cli", "kernels", "student", "grading", "release", "staff-suite")
DEFAULT_GROUPS = ("cli", "kernels", "student", "grading", "release")  # the staff suite alone takes about 15 minutes
README_START, README_END = "<!-- bench:start -->", "<!-- bench:end -->"
BENCH_PAGE = Path("docs/speed.md")  # the page whose table `staff bench --readme` rewrites, from the repository root


class BenchError(StaffError, ValueError):
    """Counts below 1, or a page without one pair of bench markers; the message says which."""


def _progress(started: float):
    def say(what: str) -> None:
        print(f"[{time.monotonic() - started:6.0f} s] {what}", file=sys.stderr, flush=True)
    return say


def run_groups(groups: list[str], repeats: int, batch_size: int) -> list[Row]:
    say = _progress(time.monotonic())
    rows: list[Row] = []
    for group in groups:
        if group == "cli":
            from staff.bench.waits import bench_staff_cli

            rows += bench_staff_cli(repeats, say)
        elif group == "kernels":
            from staff.bench.kernels import bench_kernels

            say("kernels: get_batch, AdaGrad, backward, checkpoints")
            rows += bench_kernels(repeats)
        elif group == "student":
            from staff.bench.waits import bench_student_loop

            rows += bench_student_loop(repeats, say)
        elif group == "grading":
            from staff.bench.waits import bench_grading

            rows += bench_grading(batch_size, say)
        elif group == "release":
            from staff.bench.waits import bench_release

            rows += bench_release(say)
        elif group == "staff-suite":
            from staff.bench.waits import bench_staff_suite

            rows += bench_staff_suite(say)
    say("done")
    return rows


def replace_readme_table(readme: Path, table: str) -> None:
    """Put `table` between the page's bench markers, which must each appear once."""
    text = readme.read_text(encoding="utf-8")
    if text.count(README_START) != 1 or text.count(README_END) != 1:
        raise BenchError(f"{readme} needs one {README_START} line and one {README_END} line to hold the table")
    pattern = re.compile(re.escape(README_START) + r".*?" + re.escape(README_END), re.DOTALL)
    write_text_atomic(readme, pattern.sub(lambda _: f"{README_START}\n{table}{README_END}", text))


def bench(groups: list[str], repeats: int, batch_size: int, out: Path, readme: Path | None) -> None:
    """Time `groups`, print the table and write it to `out` (and into `readme`'s bench markers).

    Raises:
        BenchError: a count below 1, or a README without one pair of markers.
    """
    if repeats < 1 or batch_size < 1:
        raise BenchError(f"--repeats and --batch-size must be at least 1, got {repeats} and {batch_size}")
    started = time.monotonic()
    rows = run_groups(groups, repeats, batch_size)
    minutes = (time.monotonic() - started) / 60
    table = markdown(rows, machine_description()) + f"\nThe whole run took {minutes:.1f} minutes.\n"
    print(table)
    write_text_atomic(out, table)
    print(f"written to {out}", file=sys.stderr)
    if readme is not None:
        replace_readme_table(readme, table)
        print(f"and into {readme}", file=sys.stderr)
    missed = [f"{row.group} ({row.case})" for row in rows if row.met is False]
    if missed:
        print("targets not met: " + "; ".join(missed), file=sys.stderr)
