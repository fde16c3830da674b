"""`staff grade`: results of the samples' batch (reference, stubs, a syntax error, a zip), what a result
file holds and hides, the CLI on one submission, and intake refusing what it cannot grade."""

from __future__ import annotations

import json
import zipfile

import pytest

from staff import samples
from staff.cli import main
from staff.grading.grade import REPO_ROOT, grade
from staff.grading.results import validate_results
from staff.grading.selection import collect_only
from staff.sandbox.settings import Settings
from staff.tests.conftest import BATCH_TIMEOUT_S
from tests.problems import PROBLEMS

HIDDEN = REPO_ROOT / "staff" / "hidden"


@pytest.fixture(scope="module")
def reference_tests():
    return collect_only(REPO_ROOT, hidden=True)


@pytest.mark.timeout(BATCH_TIMEOUT_S)
def test_reference_scores_every_point_of_every_cpu_test(graded_samples, reference_tests):
    results = graded_samples.results("reference")
    assert validate_results(results) == []
    cpu = [t for t in reference_tests if not t.needs_cuda]
    assert {t["extra_data"]["nodeid"] for t in results["tests"]} == {t.nodeid for t in cpu}  # no GPU test shown
    assert results["score"] == sum(t.points for t in cpu) == results["extra_data"]["max_score"]
    assert all(t["status"] == "passed" for t in results["tests"])
    assert results["output_format"] == "md" and results["output"].startswith("```")
    hidden = [t for t in results["tests"] if "hidden" in t["tags"]]
    assert hidden and all(t["visibility"] == "after_due_date" for t in hidden)
    assert all(t["visibility"] == "visible" for t in results["tests"] if "public" in t["tags"])
    assert all(f"problem {t['number'][1:].split('-')[0]}" in t["tags"] for t in results["tests"])


@pytest.mark.timeout(BATCH_TIMEOUT_S)
def test_stubs_score_zero_with_every_test_failing_on_its_stub(graded_samples, reference_tests):
    results = graded_samples.results("stubs")
    assert results["score"] == 0 and results["extra_data"]["max_score"] > 0
    assert len(results["tests"]) == sum(not t.needs_cuda for t in reference_tests)
    for test in results["tests"]:
        assert test["status"] == "failed" and "NotImplementedError" in test["output"], test
    assert {int(t["number"][1:].split("-")[0]) for t in results["tests"]} == set(PROBLEMS)


@pytest.mark.timeout(BATCH_TIMEOUT_S)
def test_a_hidden_failure_shows_the_check_and_the_student_code_never_the_test(graded_samples):
    hidden_source = {line.strip() for path in HIDDEN.glob("test_*.py") for line in path.read_text().splitlines()
                     if len(line.strip()) > 20}
    results = graded_samples.results("stubs")
    for test in results["tests"]:
        if "hidden" in test["tags"]:
            assert not [line for line in hidden_source if line in test["output"]], test["output"]
            assert "staff/hidden" not in test["output"] and "test_hidden_" not in test["output"]
    public = next(t for t in results["tests"] if t["name"] == "test_contiguous_strides")
    assert "tests/test_02_strides.py" in public["output"]  # a public failure shows where in the test it was


@pytest.mark.timeout(BATCH_TIMEOUT_S)
def test_a_syntax_error_scores_zero_and_says_where(graded_samples):
    results = graded_samples.results("syntax-error")
    assert results["score"] == 0
    assert "SyntaxError" in results["output"] and "strides.py" in results["output"]
    assert all("SyntaxError" in t["output"] for t in results["tests"])


@pytest.mark.timeout(BATCH_TIMEOUT_S)
def test_the_same_code_grades_the_same_as_a_zip_with_a_top_folder(graded_samples):
    folder, zipped = graded_samples.results("reference"), graded_samples.results("zip-with-a-top-folder")
    strip = lambda r: [(t["name"], t["score"], t["status"], t["output"]) for t in r["tests"]]  # noqa: E731
    assert strip(zipped) == strip(folder) and zipped["score"] == folder["score"]
    taken = zipped["extra_data"]["graded_files"]
    assert taken["from"] == "zip-with-a-top-folder.zip/my-work/assignment1/cs336_basics/"
    assert taken["files"] == folder["extra_data"]["graded_files"]["files"]
    assert taken["not_graded"] == ["flops.py at zip-with-a-top-folder.zip/my-work/, a loose copy outside the "
                                   "cs336_basics/ folder that was graded"]
    assert "Not graded: flops.py at zip-with-a-top-folder.zip/my-work/" in zipped["output"]


@pytest.mark.slow
def test_cli_grades_one_submission_and_prints_the_protections(tmp_path, capsys):
    samples.stubs(tmp_path / "submission")
    out = tmp_path / "out" / "results.json"
    assert main(["grade", str(tmp_path / "submission"), "--out", str(out), "--no-hidden"]) == 0
    results = json.loads(out.read_text())
    assert validate_results(results) == [] and results["score"] == 0
    captured = capsys.readouterr()
    assert "total" in captured.out and str(out) in captured.out
    assert "sandbox: on:" in captured.err


@pytest.mark.slow
def test_not_a_zip_and_a_missing_package_are_explained(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    assert "neither a folder nor a zip" in grade(tmp_path / "notes.txt", Settings(hidden=False)).output
    (tmp_path / "empty").mkdir()
    assert "no cs336_basics" in grade(tmp_path / "empty", Settings(hidden=False)).output


@pytest.mark.slow
def test_a_broken_zip_is_explained(tmp_path):
    archive = tmp_path / "broken.zip"
    samples.zip_folder(samples.stubs(tmp_path / "s").parent, archive)
    archive.write_bytes(archive.read_bytes()[:200] + b"\0" * 100 + archive.read_bytes()[300:])
    result = grade(archive, Settings(hidden=False))
    assert result.score == 0 and "could not read" in result.output


def test_zip_entry_counts_are_read_without_parsing_the_zip(tmp_path):
    from staff.intake.submission import zip_entry_count

    archive = tmp_path / "a.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for i in range(70_000):  # past 65,535: the count lives in the zip64 record
            zf.writestr(f"{i}", "")
    assert zip_entry_count(archive) == 70_000
    (tmp_path / "b.txt").write_text("not a zip")
    assert zip_entry_count(tmp_path / "b.txt") is None


def test_cli_rejects_a_missing_path_without_writing(tmp_path, capsys):
    out = tmp_path / "results.json"
    assert main(["grade", str(tmp_path / "nope"), "--out", str(out)]) == 2
    assert "does not exist" in capsys.readouterr().err and not out.exists()


def test_cli_help_names_the_default_output_and_the_batch_mode(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["grade", "--help"])
    printed = capsys.readouterr().out
    assert exit_info.value.code == 0 and "results.json" in printed and "--batch" in printed


def test_results_output_cannot_be_broken_out_of_its_code_block():
    from staff.grading.results import fenced

    text = "```\n<img src=x onerror=alert(1)>\n````"
    block = fenced(text)
    fence = block.splitlines()[0].removesuffix("text")
    assert len(fence) > 4 and block.endswith(fence) and text in block



def test_a_malformed_grading_report_is_read_around(tmp_path):
    from staff.grading.suite_run import read_report

    report = tmp_path / "report.jsonl"
    good = {"kind": "collected", "nodeid": "tests/t.py::a", "name": "a", "number": "1.1", "problem": 1, "points": 1.0,
            "needs_cuda": False, "hidden": False, "visibility": "visible"}
    lines = [json.dumps(good), "not json", "[1, 2]", json.dumps({"kind": "collected", "nodeid": "x"}),
             json.dumps({"kind": "result", "nodeid": "tests/t.py::a", "status": "passed", "output": ""}),
             json.dumps({"kind": "result", "nodeid": "nowhere", "status": "passed", "output": ""}),
             '{"kind": "result", "nodeid": "tests/t.py::a", "sta']
    report.write_bytes("\n".join(lines).encode() + b"\n\xff\xfe invalid utf-8\n")
    read = read_report(report)
    assert list(read.tests) == ["tests/t.py::a"] and read.tests["tests/t.py::a"].status == "passed"
    assert read.finished == 1
