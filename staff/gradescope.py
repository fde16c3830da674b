"""Gradescope's results.json: one entry per test, written atomically."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from staff.grade import Grade
from tests.grading import PASSED


def results_json(grade: Grade, visibility: str = "visible") -> dict:
    """The results document: total score, summary output and every test's score and output."""
    return {
        "score": grade.score,
        "execution_time": round(grade.seconds, 1),
        "output": grade.output,
        "visibility": visibility,
        "stdout_visibility": "hidden",
        "tests": [
            {
                "name": test.name,
                "number": test.number,
                "score": test.earned,
                "max_score": test.possible,
                "status": "passed" if test.status == PASSED else "failed",
                "output": test.output,
                "visibility": visibility,
            }
            for test in grade.tests
        ],
    }


def write_results(grade: Grade, out: Path) -> None:
    """Write results.json to `out` via a temporary file and a rename: never half-written."""
    out.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".results-", suffix=".json", dir=out.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump(results_json(grade), stream, indent=2)
        os.replace(temporary, out)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
