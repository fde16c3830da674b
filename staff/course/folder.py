"""A batch's folders: the submissions in DIR (one folder or zip each, or Gradescope's export with its
`submission_metadata.yml`), and the files a batch keeps for each in OUT/<name>/ (results.json,
results-gpu.json, their meta files and the grades they replaced) and OUT/submissions.json (the roster).

The batch (batch.py) writes these; the gradebook, `staff diff` and the cluster's tasks read them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from staff.errors import StaffError
from staff.grading.outcomes import Outcome
from staff.grading.results import PARTS, validate_results, write_json_atomically
from tests.problems import PROBLEMS

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
