"""The graded tests of a grade, listed once by `staff bundle` so that an unusable upload scores 0 at once.

An upload with no usable package runs no test; it still needs the list of tests it failed (each one's
problem, points and visibility), which only a pytest collection yields, and a collection imports
torch and every test module: over a minute at Gradescope's half CPU. `staff bundle` therefore
collects the grade the bundle runs and writes the list into the bundle (COLLECTED_FILE), keyed by
everything the list depends on: the pytest arguments that select the tests, the hidden tests'
visibility and a digest of the suites' files. A grade uses the list only when every key matches;
otherwise (a grade from the repo, other problems, an edited suite) pytest collects the tests itself.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path

from tests.grading import RECORD_FIELDS, GradedTest

COLLECTED_FILE = "staff/collected.json"  # inside the bundle's source folder (the grader's REPO_ROOT)
FORMAT = 1


def suites_digest(repo: Path, parts: list[str]) -> str:
    """sha256 over the names and bytes of every file under `parts` of `repo` (compiled files left out)."""
    digest = hashlib.sha256()
    for part in sorted(parts):
        root = repo / part
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for path in files:
            relative = path.relative_to(repo)
            if "__pycache__" in relative.parts or path.suffix == ".pyc":
                continue
            digest.update(relative.as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def key(repo: Path, parts: list[str], arguments: list[str], hidden_visibility: str) -> dict[str, object]:
    """What a list of graded tests depends on: the test selection, the visibility and the suites' files."""
    return {"format": FORMAT, "arguments": arguments, "hidden_visibility": hidden_visibility,
            "suites_sha256": suites_digest(repo, parts)}


def dumps(tests: list[GradedTest], listed_key: dict[str, object]) -> str:
    """The JSON text of `tests` (their collected fields, no results) under `listed_key`."""
    records = [{k: asdict(test)[k] for k in RECORD_FIELDS} for test in tests]
    return json.dumps({"key": listed_key, "tests": records}, indent=1, sort_keys=True) + "\n"


def load(path: Path, wanted_key: dict[str, object]) -> list[GradedTest] | None:
    """The tests listed at `path` if they were listed under `wanted_key`; None if there is no such
    list or it was made for other suites (a file that cannot be read counts as no list)."""
    try:
        listed = json.loads(path.read_text(encoding="utf-8"))
        if listed["key"] != wanted_key:
            return None
        tests = [GradedTest(**{k: record[k] for k in RECORD_FIELDS}) for record in listed["tests"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return tests or None
