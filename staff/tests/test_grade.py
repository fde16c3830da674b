"""`staff grade` end to end: the reference, stubs, broken and hostile submissions, zips, the CLI.

Each grade runs the whole public suite in a child process (about 10 s), so cases are combined
where one submission can show several things.
"""

from __future__ import annotations

import json
import os
import shutil
import zipfile
from pathlib import Path

import pytest

from staff.cli import main
from staff.grade import REPO_ROOT, collect_only, grade
from staff.markers import stub_source

PACKAGE = REPO_ROOT / "cs336_basics"


def copy_package(dest: Path) -> Path:
    """A submission folder holding a copy of the reference package; returns the package folder."""
    shutil.copytree(PACKAGE, dest / "cs336_basics", ignore=shutil.ignore_patterns("__pycache__"))
    return dest / "cs336_basics"


def replace_in(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


@pytest.fixture(scope="module")
def reference_tests():
    return collect_only(REPO_ROOT)


def test_cli_grades_the_reference_with_full_marks(tmp_path, capsys, reference_tests):
    out = tmp_path / "out" / "results.json"
    assert main(["grade", "--out", str(out)]) == 0
    results = json.loads(out.read_text())
    assert results["score"] == sum(t["max_score"] for t in results["tests"]) > 0
    assert {t["number"] for t in results["tests"]} == {t.number for t in reference_tests}
    for test in results["tests"]:
        assert set(test) >= {"name", "number", "score", "max_score", "output", "visibility"}
        assert test["status"] == "passed" or (test["max_score"] == 0 and "GPU" in test["output"])
    printed = capsys.readouterr().out
    assert "points" in printed and "total" in printed and str(out) in printed


def test_all_stubs_score_zero_with_every_problem_failing(tmp_path, reference_tests):
    package = copy_package(tmp_path)
    for module in package.glob("*.py"):
        module.write_text(stub_source(module.read_text(), module))
    result = grade(tmp_path)
    assert result.score == 0 and result.max_score > 0
    assert len(result.tests) == len(reference_tests)  # nothing lost to a collection error
    graded = [t for t in result.tests if t.possible > 0]
    assert {t.problem for t in graded} == {t.problem for t in reference_tests}
    for test in graded:
        assert test.status == "failed" and "NotImplementedError" in test.output, (test.nodeid, test.output)


def test_syntax_error_scores_zero_and_says_where(tmp_path, reference_tests):
    replace_in(copy_package(tmp_path) / "strides.py", "def contiguous_strides(", "def contiguous_strides(:")
    out = tmp_path / "results.json"
    assert main(["grade", str(tmp_path), "--out", str(out)]) == 0
    results = json.loads(out.read_text())
    assert results["score"] == 0 and len(results["tests"]) == len(reference_tests)
    assert "SyntaxError" in results["output"] and "strides.py" in results["output"]
    assert all("SyntaxError" in t["output"] for t in results["tests"])


def test_zip_with_a_top_folder_grades_like_the_folder(tmp_path):
    archive = tmp_path / "submission.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in PACKAGE.rglob("*.py"):
            zf.write(path, f"my-work/cs336_basics/{path.relative_to(PACKAGE)}")
        zf.writestr("__MACOSX/cs336_basics/._flops.py", "junk")
    result = grade(archive)
    assert result.score == result.max_score > 0


def test_hostile_submission_cannot_skip_or_crash_its_way_to_points(tmp_path, reference_tests):
    package = copy_package(tmp_path)
    # Skipping from student code must not shrink the maximum; exiting the process must not lose results.
    replace_in(package / "dtype_memory.py", "    # BEGIN SOLUTION\n    if dtype.is_floating_point:",
               "    # BEGIN SOLUTION\n    import pytest\n    pytest.skip('no thanks')\n    if dtype.is_floating_point:")
    replace_in(package / "strides.py", "    # BEGIN SOLUTION\n    strides = []", "    # BEGIN SOLUTION\n    import os\n    os._exit(0)")
    (package / "__init__.py").unlink()  # the grader must still import this copy, not the reference
    result = grade(tmp_path)
    by_name = {t.name: t for t in result.tests}
    skipped = by_name["test_bytes_per_element"]
    assert skipped.status == "failed" and skipped.possible == 1 and "unexpectedly" in skipped.output
    assert len(result.tests) == len(reference_tests)
    assert by_name["test_contiguous_strides"].earned == 0
    unfinished = [t for t in result.tests if "never finished" in t.output]
    assert unfinished and all(t.earned == 0 for t in unfinished)
    assert "stopped early" in result.output
    assert by_name["test_decode_float32_worked_example"].status == "passed"  # work before the crash counts


def test_a_hanging_function_costs_only_its_own_tests(tmp_path):
    package = copy_package(tmp_path)
    replace_in(package / "flops.py", "    # BEGIN SOLUTION\n    numel = 1", "    # BEGIN SOLUTION\n    while True:\n        pass")
    result = grade(tmp_path, test_timeout_s=15)  # well above the slowest honest test
    by_name = {t.name: t for t in result.tests}
    hung = by_name["test_matmul_and_elementwise_flops"]
    assert hung.status == "failed" and "Timeout" in hung.output
    assert [t.name for t in result.tests if t.status == "failed"] == [hung.name]


@pytest.mark.parametrize("entry", ["cs336_basics/../escape.py", "/cs336_basics/abs.py"])
def test_unsafe_zip_is_refused(tmp_path, entry):
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("cs336_basics/__init__.py", "")
        zf.writestr(entry, "print('hi')")
    result = grade(archive)
    assert result.score == 0 and "could not be loaded" in result.output
    assert not (tmp_path / "escape.py").exists()


def test_symlinked_module_is_refused(tmp_path):
    package = copy_package(tmp_path)
    (package / "flops.py").unlink()
    os.symlink(PACKAGE / "flops.py", package / "flops.py")
    result = grade(tmp_path)
    assert result.score == 0 and "symbolic links" in result.output


def test_not_a_zip_and_missing_package_are_explained(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    assert "neither a folder nor a zip" in grade(tmp_path / "notes.txt").output
    (tmp_path / "empty").mkdir()
    assert "no cs336_basics" in grade(tmp_path / "empty").output


def test_cli_rejects_a_missing_path_without_writing(tmp_path, capsys):
    out = tmp_path / "results.json"
    assert main(["grade", str(tmp_path / "nope"), "--out", str(out)]) == 2
    assert "does not exist" in capsys.readouterr().err and not out.exists()


def test_cli_help_names_the_default_output(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["grade", "--help"])
    assert exit_info.value.code == 0 and "results.json" in capsys.readouterr().out
