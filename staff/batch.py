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
gets the gradebook (grades.csv, summary.md, tests.csv, report.html and charts: staff/batch_report.py),
which adds the GPU part to the CPU grade.

A results file without the extra_data fields the gradebook reads (each test's problem and part,
the grade's outcome), written by an older grader, counts as not graded: the next run grades that
submission again.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from staff.course.stale import NOT_GRADED, Current, reason_lines, why_regrade
from staff.errors import StaffError
from staff.gradescope import PARTS, failure_results, validate_results, write_json_atomically
from staff.outcomes import Outcome
from staff.stopping import stop_requested
from tests.grading import PROBLEMS

METADATA = "submission_metadata.yml"
RESULTS, RESULTS_GPU = "results.json", "results-gpu.json"


class BatchError(StaffError):
    """The batch folder cannot be read; the message says why."""


@dataclass(frozen=True)
class Submission:
    key: str  # the folder or zip name (without .zip): unique in the batch, names its output folder
    path: Path
    student_id: str
    name: str = ""
    email: str = ""


def _submitters(entry: object) -> tuple[str, str, str]:
    """(ids, names, emails) of a Gradescope metadata entry, ';'-joined for group submissions."""
    people = entry.get(":submitters", []) if isinstance(entry, dict) else []
    people = [p for p in people if isinstance(p, dict)] if isinstance(people, list) else []
    join = lambda key: ";".join(str(p.get(key, "")) for p in people)  # noqa: E731
    return join(":sid"), join(":name"), join(":email")


def find_submissions(folder: Path) -> list[Submission]:
    """The submissions in `folder`, sorted by name.

    Raises:
        BatchError: `folder` is not a folder, or its Gradescope metadata cannot be read.
    """
    if not folder.is_dir():
        raise BatchError(f"{folder} is not a folder; expected one folder or zip per submission")
    metadata_path = folder / METADATA
    if metadata_path.is_file():
        import yaml

        try:
            metadata = yaml.safe_load(metadata_path.read_text(encoding="utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError) as error:
            raise BatchError(f"{metadata_path} is not readable YAML: {error}") from error
        if not isinstance(metadata, dict):
            raise BatchError(f"{metadata_path} should map submission folders to their submitters")
        found = []
        for key, entry in metadata.items():
            if not isinstance(key, str) or "/" in key or key.startswith("."):
                continue
            ids, names, emails = _submitters(entry)
            found.append(Submission(key, folder / key, ids or key, names, emails))
        return sorted(found, key=lambda s: s.key)
    found = []
    for path in sorted(folder.iterdir()):
        if path.name.startswith(".") or not (path.is_dir() or path.suffix == ".zip"):
            continue
        key = path.name.removesuffix(".zip")
        found.append(Submission(key, path, key))
    if len({s.key for s in found}) != len(found):
        raise BatchError(f"{folder} holds both a folder and a zip of the same name")
    return found


def meta_name(results: str) -> str:
    """The file beside a results file that says who submitted and how grading went: meta.json for
    the CPU grade, meta-gpu.json for the GPU part."""
    return "meta.json" if results == RESULTS else "meta-gpu.json"


ROSTER = "submissions.json"  # in OUT: every submission of the batch, so a gradebook has a row for each


def write_roster(submissions: list[Submission], out: Path) -> None:
    """OUT/submissions.json: every submission of the batch (key, who, where), written by every run
    and shard alike, so `staff gradebook OUT` has a row for each, graded or not."""
    write_json_atomically({"submissions": [{"key": s.key, "path": str(s.path), "student_id": s.student_id,
                                            "name": s.name, "email": s.email} for s in submissions]}, out / ROSTER)


def read_roster(out: Path) -> list[Submission] | None:
    """The submissions OUT/submissions.json lists, or None where there is no readable one."""
    try:
        listed = json.loads((out / ROSTER).read_text(encoding="utf-8"))["submissions"]
        return [Submission(str(e["key"]), Path(e["path"]), str(e["student_id"]), str(e.get("name", "")),
                           str(e.get("email", ""))) for e in listed]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def previous_name(name: str) -> str:
    """Where a results or meta file's grade goes when a batch grades the submission again:
    results.json -> results.previous.json."""
    return name.removesuffix(".json") + ".previous.json"


def _keep_previous(out: Path, results: str) -> None:
    """Move a complete earlier grade (results and meta) aside before a new one is written, so the
    two can be compared (`staff diff OUT`); an unreadable or half-written one is not kept."""
    if graded(out / results) is None:
        return
    meta = out / meta_name(results)
    if meta.is_file():
        os.replace(meta, out / previous_name(meta.name))
    os.replace(out / results, out / previous_name(results))


OUTCOMES = {outcome.value for outcome in Outcome}


def _has_fields(document: dict) -> bool:
    """Whether a valid results document holds what the gradebook reads: the grade's outcome and each
    test's problem and part (an older grader wrote none of them)."""
    tests = [test.get("extra_data", {}) for test in document.get("tests", [])]
    return document.get("extra_data", {}).get("outcome") in OUTCOMES and all(
        extra.get("problem") in PROBLEMS and extra.get("part") in PARTS for extra in tests)


def graded(path: Path) -> dict | None:
    """The results document at `path` when it is complete (as written atomically by an earlier run)
    and holds the fields the gradebook reads, else None (one from an older grader has none of them)."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return document if not validate_results(document) and _has_fields(document) else None


def recorded(out: Path, results: str = RESULTS) -> bool:
    """Whether `out` holds a complete `results` file (see `graded`) for the gradebook to show, graded or not."""
    return graded(out / results) is not None


def finished(out: Path, results: str = RESULTS) -> bool:
    """Whether `out` holds a `results` file that graded the submission (see `graded`); if not, the batch
    grades it again. A grade that ended "not graded" (out of memory, the grader's own failure: nothing of
    it speaks of the submission) is not finished: the next run grades it again."""
    document = graded(out / results)
    return document is not None and not Outcome(document["extra_data"]["outcome"]).grader_failure


def error_text(extra_data: dict) -> str:
    """What went wrong with a grade, in a line for the gradebook, from its results' top-level
    extra_data; empty for a grade that ran every test."""
    outcome = Outcome(extra_data["outcome"])
    if outcome is Outcome.OUT_OF_MEMORY:
        return "not graded: the grading machine ran out of memory (raise --memory or the machine's)"
    if outcome is Outcome.NOT_LOADED:
        reason = [line.strip() for line in str(extra_data["load_error"]).splitlines() if line.strip()]
        return f"could not be loaded: {reason[-1] if reason else 'no reason given'}"
    if outcome is Outcome.GRADER_ERROR:
        return str(extra_data["grader_failure"]).split("\n", 1)[0]
    if outcome is Outcome.CUDA_UNAVAILABLE:
        said = (str(extra_data["error"]).splitlines() or [""])[0]
        return f"not graded: CUDA did not start in the grader's sandbox: {said}"
    if outcome is Outcome.GRADED:
        return ""
    return outcome.summary(extra_data)  # the run stopped early: a line that says why


def grade_one(submission: Submission, out: Path, grader: Callable[..., object], results: str = RESULTS) -> None:
    """Grade one submission into `out` (`results`, results.json or results-gpu.json, and its meta
    file). A failure of the grader itself becomes a results file scoring 0 with the reason, so the
    batch goes on; a grade that ends as the process is told to stop writes nothing (staff/stopping.py).
    A grader that takes `on_graded` (`staff grade`'s, the red team's) is asked to hand the grade over
    before its scratch folder is removed, so the files are written before the clean-up starts, as
    `staff grade` and the autograder write theirs; nothing the clean-up does can lose them."""
    from staff.gradescope import results_json

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
                shard: tuple[int, int] | None = None, current: Current | None = None) -> tuple[list[str], list[Path]]:
    """Grade every submission of `folder` whose grade in `out` is missing or stale (see `to_grade`;
    `current`: what the grader's grades record of their suite and settings, None to regrade only
    what is missing), `jobs` at a time, each into OUT/<name>/`results`, then write the gradebook from
    every part found there and the diff of what moved; the summary lines and files written. With
    `shard` (K, N), grade only shard K of N (staff/cluster/shards.py) and write no gradebook: other
    shards may be writing into `out` at the same time, and `staff gradebook OUT` writes it once they
    are done.

    Raises:
        BatchError: `folder` cannot be read, or `out` is inside it.
    """
    from staff.batch_report import write_gradebook
    from staff.cluster.shards import in_shard
    from staff.course.diff import write_batch_diff

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
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool, \
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
