"""Gradescope's results.json: one entry per test, written atomically, and checked against the spec.

The document follows Gradescope's "Autograder Specifications": top-level score, execution_time,
output (Markdown here, so the points table keeps its alignment inside a code block), visibility
and stdout_visibility; per test name, number, score, max_score, status, output (plain text), tags
(its problem, public or hidden), visibility and extra_data. A `cuda` test that could not run for want
of a GPU is left out: no student sees a test they cannot fix, and the GPU grader's own results carry it.

extra_data is the staff's, as fields (the gradebook reads these, never the prose nor the tags):
- top level: "outcome" (a `staff.grading.outcomes.Outcome` value) and that outcome's details ("load_error",
  "time_limit_s", "exit_code", or "what" and "memory_limit_bytes"); "max_score", "protections" (what
  confined the student's code) and "memory_bytes" (what grading cost); "provenance" (what graded it:
  suite, grader, submission, settings, machine, time; see `staff.grading.provenance`); "grader_failure" (the
  staff-facing reason) only when the grade says nothing of the submission;
- per test: "nodeid" (pytest's), "problem" (its number), "part" ("public", "hidden" or "gpu"),
  "test_sha256" (its source's hash) and, for a test that never ran, "reason" (the `Outcome` value
  that kept it from running).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from adapters._text import shown_text
from staff.atomic import atomic_file
from staff.grading.grade import Grade
from staff.grading.outcomes import Outcome
from tests.grading import PASSED, SKIPPED, VISIBILITIES, GradedTest

OUTPUT_FORMATS = ("text", "html", "simple_format", "md", "ansi")


def fenced(text: str) -> str:
    """`text` as a Markdown code block that nothing inside it can close (student text included)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


PARTS = ("public", "hidden", "gpu")  # the parts of a grade, as each test's extra_data names them


def part(test: GradedTest) -> str:
    """Which part of the grade `test` counts in: "gpu" (a `cuda` test), "hidden" or "public"."""
    return "gpu" if test.needs_cuda else "hidden" if test.hidden else "public"


def _test_entry(test: GradedTest, reason: Outcome | None, source: str | None) -> dict:
    extra = {"nodeid": test.nodeid, "problem": test.problem, "part": part(test),
             **({"test_sha256": source} if source else {})}
    return {
        "name": test.name,
        "number": test.number,
        "score": test.earned,
        "max_score": test.possible,
        "status": "passed" if test.status == PASSED else "failed",
        "output": test.output,
        "output_format": "text",
        "tags": [f"problem {test.problem}", "hidden" if test.hidden else "public"] + ["gpu"] * test.needs_cuda,
        "visibility": test.visibility,
        "extra_data": extra if reason is None else {**extra, "reason": reason.value},
    }


def results_json(grade: Grade, visibility: str = "visible") -> dict:
    """The results document: total score, summary output and every gradable test's score and output.
    A grade the grader could not make (`grade.outcome.grader_failure`) has no tests and says why."""
    if grade.outcome.grader_failure:
        document = failure_results(grade.output, grade.seconds, grade.outcome)
        document["extra_data"].update(grade.details, protections=grade.protections, memory_bytes=grade.memory,
                                      **({"provenance": grade.provenance} if grade.provenance else {}))
        return document
    tests = [t for t in grade.tests if t.status != SKIPPED]
    return {
        "score": sum(t.earned for t in tests),
        "execution_time": round(grade.seconds, 1),
        "output": fenced(grade.output),
        "output_format": "md",
        "test_output_format": "text",
        "visibility": visibility,
        "stdout_visibility": "hidden",
        "extra_data": {"outcome": grade.outcome.value, **grade.details, "max_score": sum(t.possible for t in tests),
                       "protections": grade.protections, "memory_bytes": grade.memory,
                       **({"graded_files": grade.graded_files} if grade.graded_files else {}),
                       **({"provenance": grade.provenance} if grade.provenance else {}),
                       **({"review": grade.review} if grade.review else {})},
        "tests": [_test_entry(t, grade.never_ran.get(t.nodeid), grade.test_sources.get(t.nodeid)) for t in tests],
    }


def failure_results(message: str, seconds: float = 0.0, outcome: Outcome = Outcome.GRADER_ERROR,
                    provenance: dict | None = None) -> dict:
    """A results document for a grade that could not run at all (`outcome`, a grader failure): 0, and
    the reason, which extra_data holds as "grader_failure" too, with what was grading where known
    (`provenance`, see staff.grading.provenance). The message (a traceback, which can quote the submission's
    names and messages) is shown as `shown_text` makes it."""
    message = shown_text(message)
    return {"score": 0.0, "execution_time": round(seconds, 1), "output": fenced(message), "output_format": "md",
            "visibility": "visible", "stdout_visibility": "hidden", "tests": [],
            "extra_data": {"outcome": outcome.value, "grader_failure": message,
                           **({"provenance": provenance} if provenance else {})}}


def write_json_atomically(document: dict, out: Path) -> None:
    """Write `document` to `out` as JSON: a reader sees the old file or the whole new one (staff/atomic.py)."""
    with atomic_file(out, "w", encoding="utf-8") as stream:
        json.dump(document, stream, indent=2)


def write_results(grade: Grade, out: Path) -> None:
    """Write results.json for `grade` to `out`, atomically."""
    write_json_atomically(results_json(grade), out)


_NUMBER = (int, float)
_TOP = {"score": _NUMBER, "execution_time": _NUMBER, "output": str, "output_format": str,
        "test_output_format": str, "test_name_format": str, "visibility": str, "stdout_visibility": str,
        "extra_data": dict, "tests": list, "leaderboard": list}
_TEST = {"score": _NUMBER, "max_score": _NUMBER, "status": str, "name": str, "name_format": str, "number": str,
         "output": str, "output_format": str, "tags": list, "visibility": str, "extra_data": dict}


def validate_results(document: object) -> list[str]:
    """What in `document` breaks Gradescope's documented results.json format; empty when it is valid."""
    if not isinstance(document, dict):
        return ["the document is not a JSON object"]
    problems = []
    for key, value in document.items():
        if key not in _TOP:
            problems.append(f"unknown top-level field {key!r}")
        elif not isinstance(value, _TOP[key]) or isinstance(value, bool):
            problems.append(f"{key} has type {type(value).__name__}")
    if "score" not in document and not all("score" in t for t in document.get("tests", []) if isinstance(t, dict)):
        problems.append("no score: neither a top-level score nor one on every test")
    for key in ("output_format", "test_output_format", "test_name_format"):
        if key in document and document[key] not in OUTPUT_FORMATS:
            problems.append(f"{key} {document[key]!r} is not one of {OUTPUT_FORMATS}")
    for key in ("visibility", "stdout_visibility"):
        if key in document and document[key] not in VISIBILITIES:
            problems.append(f"{key} {document[key]!r} is not one of {VISIBILITIES}")
    for i, test in enumerate(document.get("tests", []) if isinstance(document.get("tests"), list) else []):
        if not isinstance(test, dict):
            problems.append(f"tests[{i}] is not an object")
            continue
        for key, value in test.items():
            if key not in _TEST:
                problems.append(f"tests[{i}]: unknown field {key!r}")
            elif not isinstance(value, _TEST[key]) or isinstance(value, bool):
                problems.append(f"tests[{i}].{key} has type {type(value).__name__}")
        if test.get("status", "passed") not in ("passed", "failed"):
            problems.append(f"tests[{i}].status {test['status']!r} is not passed or failed")
        if test.get("visibility", "visible") not in VISIBILITIES:
            problems.append(f"tests[{i}].visibility {test['visibility']!r} is not one of {VISIBILITIES}")
        if test.get("output_format", "text") not in OUTPUT_FORMATS:
            problems.append(f"tests[{i}].output_format {test['output_format']!r} is not one of {OUTPUT_FORMATS}")
        if not all(isinstance(tag, str) for tag in test.get("tags", [])):
            problems.append(f"tests[{i}].tags must be strings")
        if isinstance(test.get("score"), _NUMBER) and isinstance(test.get("max_score"), _NUMBER) and \
                not 0 <= test["score"] <= test["max_score"]:
            problems.append(f"tests[{i}]: score {test['score']} outside [0, max_score {test['max_score']}]")
    return problems
