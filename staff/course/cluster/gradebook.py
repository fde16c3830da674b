"""`staff gradebook OUT`: grades.csv, summary.md and charts/ written again from everything in OUT.

This is the last step of a batch graded in shards (on Slurm or by hand): the shards write only their
submissions' results, never the gradebook, since several write into OUT at once. Run it once every
shard has ended; it grades nothing. With --batch DIR the gradebook counts DIR's submissions (and says
how many are not graded yet); without it, the submissions the batch listed in OUT (submissions.json),
or where there is no such list, those OUT holds a meta file for.
"""

from __future__ import annotations

import json
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


def rebuild_gradebook(out: Path, batch: Path | None = None) -> tuple[list[str], list[Path]]:
    """Write OUT's gradebook again from every result in it: its summary lines and the files written.
    Its rows are `batch`'s submissions where given, else those of `submissions_in(out)`.

    Raises:
        BatchError: OUT is not a folder, or `batch` cannot be read.
    """
    from staff.course.folder import BatchError, find_submissions
    from staff.course.gradebook import write_gradebook

    if not out.is_dir():
        raise BatchError(f"{out} is not a folder; expected the OUT of `staff grade --batch DIR --out OUT`")
    return write_gradebook(find_submissions(batch) if batch else submissions_in(out), out)
