"""`staff gradebook OUT`: grades.csv, summary.md and charts/ written again from everything in OUT.

This is the last step of a batch graded in shards (on Slurm or by hand): the shards write only their
submissions' results, never the gradebook, since several write into OUT at once. Run it once every
shard has ended; it grades nothing. With --batch DIR the gradebook counts DIR's submissions (and says
how many are not graded yet); without it, the submissions the batch listed in OUT (submissions.json),
or where there is no such list, those OUT holds a meta file for.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def submissions_in(out: Path) -> list:
    """The submissions of the batch graded into OUT: those its roster lists (OUT/submissions.json,
    which every batch run and shard writes: graded or not), else those OUT holds a meta file for
    (meta.json or meta-gpu.json, which name the submitters), sorted by name; each one's path is then
    its folder in OUT (nothing is graded from it)."""
    from staff.course.folder import RESULTS, RESULTS_GPU, Submission, meta_name, read_roster

    listed = read_roster(out)
    if listed is not None:
        return listed
    found = {}
    for results in (RESULTS_GPU, RESULTS):  # the CPU part's meta file wins where both are there
        for meta in out.glob(f"*/{meta_name(results)}"):
            try:
                data = json.loads(meta.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            key = meta.parent.name
            found[key] = Submission(key, meta.parent, str(data.get("student_id", key)), str(data.get("name", "")),
                                    str(data.get("email", "")))
    return [found[key] for key in sorted(found)]


def main_gradebook(args: argparse.Namespace) -> int:
    from staff.course.folder import BatchError, find_submissions
    from staff.course.gradebook import write_gradebook

    out = args.out.resolve()
    if not out.is_dir():
        print(f"staff gradebook: {out} is not a folder; expected the OUT of `staff grade --batch DIR --out OUT`",
              file=sys.stderr)
        return 2
    try:
        submissions = find_submissions(args.batch) if args.batch else submissions_in(out)
    except BatchError as error:
        print(f"staff gradebook: {error}", file=sys.stderr)
        return 2
    lines, files = write_gradebook(submissions, out)
    print("\n".join(lines))
    print("\nwritten: " + ", ".join(str(f.relative_to(out)) for f in files) + f" in {out}")
    return 0


def add_gradebook(commands) -> None:
    gradebook = commands.add_parser(
        "gradebook", help="write grades.csv, summary.md and charts/ again from every result in a batch's OUT",
        description="Rebuild a batch's gradebook (grades.csv, summary.md, charts/) from every results.json and "
        "results-gpu.json in OUT, grading nothing: the last step after `staff grade --batch DIR --shard K/N` has "
        "run for every K, and the way to add a GPU part copied into OUT.")
    gradebook.add_argument("out", type=Path, metavar="OUT", help="the batch's output folder")
    gradebook.add_argument("--batch", type=Path, metavar="DIR", default=None,
                           help="the batch's folder: its submissions are the gradebook's rows, graded or not "
                           "(default: the submissions the batch listed in OUT/submissions.json)")
    gradebook.set_defaults(run=main_gradebook)
