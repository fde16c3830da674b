"""`staff gradebook OUT`: grades.csv, summary.md and charts/ written again from everything in OUT, grading
nothing (the last step of a batch graded in shards: staff/course/cluster/gradebook.py)."""

from __future__ import annotations

import argparse
from pathlib import Path


def run(args: argparse.Namespace) -> int:
    from staff.course.cluster.gradebook import rebuild_gradebook

    out = args.out.resolve()
    lines, files = rebuild_gradebook(out, args.batch)
    print("\n".join(lines))
    print("\nwritten: " + ", ".join(str(f.relative_to(out)) for f in files) + f" in {out}")
    return 0


def register(commands) -> None:
    gradebook = commands.add_parser(
        "gradebook", help="write grades.csv, summary.md and charts/ again from every result in a batch's OUT",
        description="Rebuild a batch's gradebook (grades.csv, summary.md, charts/) from every results.json and "
        "results-gpu.json in OUT, grading nothing: the last step after `staff grade --batch DIR --shard K/N` has "
        "run for every K, and the way to add a GPU part copied into OUT.")
    gradebook.add_argument("out", type=Path, metavar="OUT", help="the batch's output folder")
    gradebook.add_argument("--batch", type=Path, metavar="DIR", default=None,
                           help="the batch's folder: its submissions are the gradebook's rows, graded or not "
                           "(default: the submissions the batch listed in OUT/submissions.json)")
    gradebook.set_defaults(run=run)
