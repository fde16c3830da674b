"""`staff bundle`: the Gradescope autograder run end to end in a temporary /autograder root: setup.sh
builds the environment, run_autograder grades a folder upload and a zip upload of the reference
(full marks), the stubs (0), a broken submission (0 with the reason) and a red-team submission
that forges results (0), and every results.json it writes is valid by Gradescope's spec."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from staff import samples
from staff.gradescope import autograder
from staff.gradescope.autograder import DEADLINE_S
from staff.gradescope.bundle import build_bundle, check, planned_files
from staff.grading import provenance
from staff.grading.collected import COLLECTED_FILE
from staff.grading.grade import REPO_ROOT
from staff.grading.results import validate_results
from staff.grading.selection import listing_key
from staff.redteam.corpus import build, judge, load_cases
from staff.release.proc import ReleaseError
from staff.tests import upload_shapes
from tests.grading import HIDDEN_VISIBILITY

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]


def place_upload(root: Path, upload) -> dict[str, str]:
    """Empty root/submission and root/results, let `upload(submission folder)` fill the first as
    Gradescope does, and return the environment run_autograder runs in."""
    submission = root / "submission"
    shutil.rmtree(submission, ignore_errors=True)
    shutil.rmtree(root / "results", ignore_errors=True)
    submission.mkdir()
    upload(submission)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env.update(AUTOGRADER_ROOT=str(root), CS336_ENV=str(root.parent / "env"))
    return env


def run_autograder(root: Path, upload, log: list[str] | None = None) -> dict:
    """Put an upload into root/submission the way Gradescope does, run run_autograder, read the results
    (and append what it wrote to stderr to `log`)."""
    env = place_upload(root, upload)
    done = subprocess.run([str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    if log is not None:
        log.append(done.stderr)
    results = json.loads((root / "results" / "results.json").read_text())
    assert validate_results(results) == [], results
    return results


def test_the_bundle_holds_the_grader_and_no_solution():
    files = planned_files(REPO_ROOT)
    expected = {"setup.sh", "run_autograder", "uv.lock", "staff/gradescope/autograder.py", "tests/conftest.py"}
    assert expected <= set(files)
    assert any(name.startswith("staff/hidden/test_") for name in files)
    assert not any(name.startswith(("cs336_basics/", "staff/tests/", "staff/redteam/", "handout/")) for name in files)
    assert check(REPO_ROOT, files) == []
    files["notes/copy.py"] = REPO_ROOT / "cs336_basics" / "strides.py"
    assert any("holds the solution body" in p for p in check(REPO_ROOT, files))


def test_every_staff_module_the_bundled_grader_imports_is_in_the_bundle():
    # Catches a new module of staff/ (staff/grading/outcomes.py, say) that the grader imports but the bundle's
    # list leaves out: on Gradescope every grade would end in "the autograder itself failed".
    import ast

    files = planned_files(REPO_ROOT)
    imported = set()
    for name in [n for n in files if n.startswith("staff/") and n.endswith(".py")]:
        for node in ast.walk(ast.parse(files[name].read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("staff."):
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names if alias.name.startswith("staff.")}
    paths = {module: module.replace(".", "/") for module in imported}  # a module's file, or a package's folder
    missing = [module for module, path in sorted(paths.items())
               if f"{path}.py" not in files and not any(name.startswith(f"{path}/") for name in files)]
    assert imported and missing == []


def test_the_bundle_refuses_a_name_without_zip_and_an_existing_file(tmp_path):
    with pytest.raises(ReleaseError, match=r"\.zip"):
        build_bundle(tmp_path / "autograder.tar", REPO_ROOT)
    (tmp_path / "a.zip").write_text("old")
    with pytest.raises(ReleaseError, match="exists"):
        build_bundle(tmp_path / "a.zip", REPO_ROOT)
    assert (tmp_path / "a.zip").read_text() == "old"


def test_files_dragged_in_one_by_one_get_full_marks(autograder_root, tmp_path):
    # Mistake this catches: an intake that looks only for a cs336_basics/ folder (the package's files
    # dragged into Gradescope's dialog arrive flat, with no folder), which scored this 0.
    code = samples.reference(tmp_path / "code")
    results = run_autograder(autograder_root, lambda s: upload_shapes.files_dragged_in(s, code))
    assert results["score"] == results["extra_data"]["max_score"] > 0
    assert results["extra_data"]["protections"]
    assert results["extra_data"]["graded_files"]["from"] == "the top level"
    assert "Graded 12 files from the top level of your upload: __init__.py (" in results["output"]
    # What graded it, in every Gradescope result: this tree's suite, and the commit the bundle recorded
    # (no git checkout in the container). Catches a bundle that records nothing or the wrong suite.
    made = results["extra_data"]["provenance"]
    assert made["suite"]["sha256"] == provenance.suite(True)["sha256"]
    assert (made["grader"]["from"], made["grader"]["commit"]) == ("bundle", provenance.grader()["commit"])
    assert made["submission"]["of"] == "package" and made["settings"]["run_timeout_s"] == DEADLINE_S
    assert f"Graded with the tests of release {provenance.suite_label(made['suite'])}." in results["output"]


def test_a_windows_zip_is_graded_from_the_code_inside_it(autograder_root, tmp_path):
    # Problem 1 done, the rest stubs: every point of Problem 1 and none elsewhere shows the zip's own
    # code was graded (the folder uploads elsewhere grade the whole reference; this is cheaper). Mistake
    # this catches: a zip made on Windows (entries "cs336_basics\\flops.py") refused as "unsafe".
    code = samples.stubs(tmp_path / "work", keep={"dtype_memory"})
    results = run_autograder(autograder_root, lambda s: upload_shapes.windows_zip(s, code))
    problem_1 = [t for t in results["tests"] if "problem 1" in t["tags"]]
    assert problem_1 and all(t["score"] == t["max_score"] for t in problem_1)
    assert results["score"] == sum(t["max_score"] for t in problem_1)
    assert results["extra_data"]["graded_files"]["from"] == "submission.zip/cs336_basics/"


def test_the_stubs_and_a_broken_submission_get_zero_with_the_reason(autograder_root):
    assert run_autograder(autograder_root, lambda s: samples.stubs(s))["score"] == 0

    def broken(submission: Path) -> None:
        samples.replace_in(samples.reference(submission) / "model.py", "class Linear(", "class Linear(((")

    results = run_autograder(autograder_root, broken)
    assert results["score"] == 0 and "SyntaxError" in results["output"] and "model.py" in results["output"]
    assert not any(path in json.dumps(results) for path in ("/tmp/", "staff-grade-", str(autograder_root)))


def test_an_empty_upload_and_a_zip_without_the_package_score_zero_from_the_bundles_list(autograder_root, tmp_path):
    source = autograder_root / "source"
    listed = json.loads((source / COLLECTED_FILE).read_text())
    assert listed["key"] == listing_key(source, True, None, False, HIDDEN_VISIBILITY)  # what grade will look for

    def no_package(submission: Path) -> None:
        with zipfile.ZipFile(submission / "work.zip", "w") as zf:
            zf.writestr("work/notes.txt", "hello")

    for upload, reason in ((lambda s: None, "; it is empty."), (no_package, "found: work.zip/work/")):
        log = []
        results = run_autograder(autograder_root, upload, log)
        assert "the graded tests: listed by the bundle" in log[0]  # no pytest collection ran
        assert results["score"] == 0 and len(results["tests"]) == len(listed["tests"]) and reason in results["output"]
        shown = json.dumps(results)
        for path in ("/tmp/", str(autograder_root), "staff-grade-", "<home>", "<grading folder>"):
            assert path not in shown, f"{path} in results.json"


def test_a_submission_forging_results_gets_zero(autograder_root, tmp_path):
    case = next(c for c in load_cases() if c.name == "forge-grading-report")
    upload = build(case, tmp_path)
    results = run_autograder(autograder_root, lambda s: shutil.copytree(upload / "cs336_basics", s / "cs336_basics"))
    assert judge(case, results) == []


def test_a_crash_of_the_grader_itself_still_writes_results(tmp_path, monkeypatch):
    def failing(*args, **kwargs):
        raise RuntimeError("the grader broke")

    monkeypatch.setattr("staff.grading.grade.grade", failing)
    (tmp_path / "submission").mkdir()
    assert autograder.main(["--root", str(tmp_path)]) == 1
    results = json.loads((tmp_path / "results" / "results.json").read_text())
    assert validate_results(results) == [] and results["score"] == 0 and "autograder itself failed" in results["output"]


def test_settings_that_would_grade_in_process_are_refused(tmp_path, monkeypatch):
    # The mistake: a hand-edited settings.json with in_process true, which the autograder would follow,
    # letting a submission's code run in the test process and forge its grade.
    graded = []
    monkeypatch.setattr("staff.grading.grade.grade", lambda *args, **kwargs: graded.append(args))
    (tmp_path / "submission").mkdir()
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"in_process": True}))
    assert autograder.main(["--root", str(tmp_path), "--settings", str(settings)]) == 1
    results = json.loads((tmp_path / "results" / "results.json").read_text())
    assert graded == [] and results["score"] == 0 and "autograder itself failed" in results["output"]


def test_run_autograder_writes_results_even_when_python_cannot_start(autograder_root, tmp_path):
    root = tmp_path / "autograder"
    shutil.copytree(autograder_root / "source", root / "source")
    (root / "submission").mkdir()
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "CS336_ENV": str(tmp_path / "no-such-env")}
    subprocess.run([str(root / "source" / "run_autograder")], env=env, capture_output=True, timeout=60, check=True)
    results = json.loads((root / "results" / "results.json").read_text())
    assert validate_results(results) == [] and results["score"] == 0 and "could not start" in results["output"]
