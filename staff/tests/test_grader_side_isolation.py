"""Issue 27, the grader's side: a failure's traceback shown scrubbed, each grade's code folder its
worker's alone, no process of a worker left after its grade however the run ended, and scratch
folders removed by the one clean-up that cannot be stopped. Each test names the mistake it catches."""

from __future__ import annotations

import json
import re
from pathlib import Path

from staff.batch import Submission, grade_one

# C0 but tab and newline, DEL, C1 (U+009B CSI, U+009D OSC) and bidi controls: none may be shown.
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
NASTY = "\x1b[2J\x9b31m\x9d0;title\x07\u202egpj.exe\u2066"


def strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for key, item in value.items() for s in (key, *strings(item))]
    return [s for item in value for s in strings(item)] if isinstance(value, list) else []


def test_a_grader_failures_traceback_in_results_json_is_scrubbed(tmp_path):
    # Mistake: failure_results taking its message (the traceback, which quotes the exception's text)
    # as it is: results.json's output and extra_data.grader_failure carried U+009B and U+202E raw.
    submission = Submission(key="ada", path=tmp_path, student_id="1", name="Ada", email="a@b.c")

    def grader(path: Path):
        raise RuntimeError(f"the grader broke on {NASTY}")

    grade_one(submission, tmp_path / "out", grader)
    document = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert "the grader broke on" in document["output"] and "Traceback" in document["output"]
    shown = [text for text in strings(document) if CONTROLS.search(text)]
    assert not shown, f"control characters in a failure's results.json: {shown[:2]!r}"


DEEP_TREE_AT_IMPORT = '''
import os as _os
_here = _os.open(".", _os.O_RDONLY | _os.O_DIRECTORY)
for _ in range(1_200):  # deeper than shutil.rmtree's recursion goes
    _os.mkdir("d", dir_fd=_here)
    _below = _os.open("d", _os.O_RDONLY | _os.O_DIRECTORY, dir_fd=_here)
    _os.close(_here)
    _here = _below
_os.close(_here)
'''


def test_gpu_reports_scratch_goes_whatever_the_submission_left_in_it(tmp_path, monkeypatch):
    # Mistake: tempfile.TemporaryDirectory (shutil.rmtree) for the report's scratch folder, the
    # submission's working directory: a tree 1,200 folders deep made at import raised RecursionError
    # out of the report and left the folder on disk.
    from staff import samples
    from staff.gpu_report import run_report

    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(temporary))
    package = samples.reference(tmp_path / "submission")
    (package / "flops.py").write_text((package / "flops.py").read_text() + DEEP_TREE_AT_IMPORT)
    report, files = run_report(tmp_path / "submission", "cpu", [64], ["float32"], 1, 1, tmp_path / "out",
                               samples.REPO_ROOT)
    assert report["rows"] and all(path.exists() for path in files)
    assert list(temporary.iterdir()) == [], "the report's scratch folder outlived it"
