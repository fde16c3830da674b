"""`staff grade --batch DIR`: grade a folder of submissions in parallel, resumably, into a gradebook.

DIR holds one folder or zip per student, or is Gradescope's "Export Submissions" download: folders
`submission_<id>/` and a `submission_metadata.yml` naming each folder's submitters. Every
submission's results.json goes to OUT/<name>/results.json, written atomically, so a batch that is
killed loses nothing finished and leaves nothing half-written. Running the same command again
grades what is missing and what is stale: a grade whose suite, settings or submission differ from
what a grade made now would use (staff/course/stale.py says why, and the batch prints how many for
each reason); --force grades everything again. A grade made again keeps the one it replaces beside
it (results.previous.json), and the batch writes what moved between them (diff.md, diff.json:
staff/course/diff.py). The GPU part (`staff grade --gpu`) goes to OUT/<name>/results-gpu.json. OUT then
gets the gradebook (grades.csv, summary.md, tests.csv, report.html and charts: staff/course/gradebook.py),
which adds the GPU part to the CPU grade.

A results file without the extra_data fields the gradebook reads (each test's problem and part,
the grade's outcome), written by an older grader, counts as not graded: the next run grades that
submission again.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from tqdm import tqdm

from staff.course.folder import (
    RESULTS,
    BatchError,
    Submission,
    error_text,
    find_submissions,
    graded,
    meta_name,
    previous_name,
    write_roster,
)
from staff.course.stale import NOT_GRADED, Current, reason_lines, why_regrade
from staff.grading.outcomes import Outcome
from staff.grading.results import failure_results, write_json_atomically
from staff.grading.suite_run import warm_test_processes
from staff.stopping import stop_requested


def _keep_previous(out: Path, results: str) -> None:
    """Move a complete earlier grade (results and meta) aside before a new one is written, so the
    two can be compared (`staff diff OUT`); an unreadable or half-written one is not kept."""
    if graded(out / results) is None:
        return
    meta = out / meta_name(results)
    if meta.is_file():
        os.replace(meta, out / previous_name(meta.name))
    os.replace(out / results, out / previous_name(results))


def grade_one(submission: Submission, out: Path, grader: Callable[..., object], results: str = RESULTS) -> None:
    """Grade one submission into `out` (`results`, results.json or results-gpu.json, and its meta
    file). A failure of the grader itself becomes a results file scoring 0 with the reason, so the
    batch goes on; a grade that ends as the process is told to stop writes nothing (staff/stopping.py).
    A grader that takes `on_graded` (`staff grade`'s, the red team's) is asked to hand the grade over
    before its scratch folder is removed, so the files are written before the clean-up starts, as
    `staff grade` and the autograder write theirs; nothing the clean-up does can lose them."""
    from staff.grading.results import results_json

    started = time.monotonic()
    delivered: list[bool] = []

    def deliver(document: dict) -> None:
        if stop_requested() or delivered:
            return  # this process is being stopped, perhaps by the signal that ended this grade: not graded
        error = error_text(document["extra_data"])
        _keep_previous(out, results)
        write_json_atomically({"student_id": submission.student_id, "name": submission.name,
                               "email": submission.email, "submission": submission.key,
                               "seconds": round(time.monotonic() - started, 2), "error": error},
                              out / meta_name(results))
        write_json_atomically(document, out / results)  # last: its presence marks the submission done
        delivered.append(True)

    try:
        if "on_graded" in inspect.signature(grader).parameters:
            made = grader(submission.path, on_graded=lambda grade: deliver(results_json(grade)))
        else:
            made = grader(submission.path)
        document = results_json(made)
    except Exception as failure:  # noqa: BLE001 - one broken grade must not stop the batch
        if delivered:
            return  # the grade was kept before whatever failed after it
        message = Outcome.GRADER_ERROR.summary({"error": f"{type(failure).__name__}: {failure}"})
        document = failure_results(f"{message}\n\n{traceback.format_exc()[-3000:]}", time.monotonic() - started)
    deliver(document)


def to_grade(submissions: list[Submission], out: Path, results: str = RESULTS, current: Current | None = None,
             force: bool = False) -> dict[str, str]:
    """{key: why} for each of `submissions` whose grade in `out` must be made now: missing, the
    grader's failure, or (given `current`) stale (staff/course/stale.py); every one with `force`."""
    reasons = {}
    for submission in submissions:
        why = "graded again on request (--force)" if force else \
            why_regrade(graded(out / submission.key / results), current, submission.path)
        if why is not None:
            reasons[submission.key] = why
    return reasons


def grade_batch(folder: Path, out: Path, grader: Callable[[Path], object], jobs: int, force: bool = False,
                progress: bool = True, results: str = RESULTS,
                shard: tuple[int, int] | None = None, current: Current | None = None,
                warm: bool = True) -> tuple[list[str], list[Path]]:
    """Grade every submission of `folder` whose grade in `out` is missing or stale (see `to_grade`;
    `current`: what the grader's grades record of their suite and settings, None to regrade only
    what is missing), `jobs` at a time, each into OUT/<name>/`results`, then write the gradebook from
    every part found there and the diff of what moved; the summary lines and files written. With
    `shard` (K, N), grade only shard K of N (staff/course/cluster/shards.py) and write no gradebook: other
    shards may be writing into `out` at the same time, and `staff gradebook OUT` writes it once they
    are done. With `warm` (a CPU batch), the grades' test processes are forked from one that imported
    torch and pytest once (`staff.grading.suite_run.warm_test_processes`).

    Raises:
        BatchError: `folder` cannot be read, or `out` is inside it.
    """
    from staff.course.cluster.shards import in_shard
    from staff.course.diff import write_batch_diff
    from staff.course.gradebook import write_gradebook

    submissions = find_submissions(folder)
    out = out.resolve()
    if folder.resolve() == out or folder.resolve() in out.parents:
        raise BatchError(f"{out} is inside the batch folder {folder}; choose another output folder")
    out.mkdir(parents=True, exist_ok=True)
    mine = in_shard(submissions, *shard) if shard else submissions
    write_roster(submissions, out)
    for submission in mine:  # what an earlier run, stopped mid-write, left half-written (never another shard's)
        for stale in (out / submission.key).glob(".*.tmp"):
            stale.unlink(missing_ok=True)
    reasons = to_grade(mine, out, results, current, force)
    todo = [s for s in mine if s.key in reasons]
    for line in reason_lines({k: v for k, v in reasons.items() if v != NOT_GRADED}, "to grade again"):
        print(line, file=sys.stderr)
    lock = threading.Lock()
    with warm_test_processes() if warm and todo else contextlib.nullcontext(), \
            ThreadPoolExecutor(max_workers=max(1, jobs)) as pool, \
            tqdm(total=len(mine), initial=len(mine) - len(todo), unit="submission", desc="batch",
                 disable=not progress, mininterval=0.5 if os.isatty(2) else 15) as bar:
        futures = [pool.submit(grade_one, s, out / s.key, grader, results) for s in todo]
        for future in as_completed(futures):
            future.result()
            with lock:
                bar.update(1)
    done = reason_lines(reasons, "graded now") or [f"0 graded now: every grade of the {len(mine)} is current"]
    if shard:
        return [f"shard {shard[0]}/{shard[1]}: {len(mine)} of {len(submissions)} submissions, {len(todo)} graded "
                f"now, {len(mine) - len(todo)} already done", *done], [out / s.key / results for s in mine]
    moved, diff_files = write_batch_diff(out, [s for s in todo if (out / s.key / previous_name(results)).is_file()],
                                         results)
    lines, files = write_gradebook(submissions, out)
    return [*done, *moved, "", *lines], [*files, *diff_files]
