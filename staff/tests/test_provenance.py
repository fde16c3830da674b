"""What graded a grade (staff/grading/provenance.py), the bundle's refusal of an uncommitted tree, and `staff
check` asking for a CHANGELOG entry when a graded test changed since the last release.

Each test works on a small git repository made from this tree's suites in a temporary folder."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from staff.gradescope.bundle import recorded_provenance
from staff.grading import provenance
from staff.release.changes import code_digest, unmentioned
from staff.release.proc import ReleaseError

REPO_ROOT = provenance.REPO_ROOT
GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "commit.gpgsign=false", *args], cwd=repo, env=GIT_ENV, check=True,
                          capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository holding this tree's suites, pyproject.toml and CHANGELOG.md, just released at its version."""
    root = tmp_path / "repo"
    for folder in ("tests", "adapters", "staff/hidden"):
        shutil.copytree(REPO_ROOT / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO_ROOT / "pyproject.toml", root / "pyproject.toml")
    changelog = (REPO_ROOT / "CHANGELOG.md").read_text(encoding="utf-8")  # as released: no Unreleased entry yet
    (root / "CHANGELOG.md").write_text(re.sub(r"^## Unreleased\n.*?(?=^## )", "", changelog,
                                              flags=re.MULTILINE | re.DOTALL), encoding="utf-8")
    git(root, "init", "-q", "--initial-branch=main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "release")
    return root


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_the_suite_hash_follows_the_tests_and_names_the_changed_file_not_the_version(repo):
    # Catches a hash of the version only (a fixed test keeps the old hash: nothing is regraded), one over
    # the whole pyproject.toml (a version bump regrades a whole course), and a hidden suite left out.
    before = provenance.suite(True, repo)
    edit(repo / "pyproject.toml", 'version = "', 'version = "9')
    assert provenance.suite(True, repo)["sha256"] == before["sha256"]
    edit(repo / "tests" / "test_09_data.py", "def test_", "def test_renamed_")
    after = provenance.suite(True, repo)
    assert after["sha256"] != before["sha256"] and provenance.changed_files(before, after) == ["tests/test_09_data.py"]
    hidden = sorted(repo.glob("staff/hidden/test_hidden_02_*.py"))[0]
    edit(hidden, "def test_", "def test_renamed_")
    assert provenance.changed_files(after, provenance.suite(True, repo)) == [hidden.relative_to(repo).as_posix()]
    assert provenance.suite(False, repo)["sha256"] == provenance.suite(False, repo)["sha256"] != after["sha256"]
    edit(repo / "pyproject.toml", "timeout = 120", "timeout = 60")
    assert "pyproject.toml[tool.pytest]" in provenance.changed_files(after, provenance.suite(True, repo))


def test_a_tests_source_hash_changes_with_its_own_code_only(repo):
    # Catches one hash for a whole file (every test of it would read as changed) and a hash that ignores
    # the decorators (a test's points are a marker).
    path = repo / "tests" / "test_02_strides.py"
    text = path.read_text(encoding="utf-8")
    names = [line.split("(")[0][4:] for line in text.splitlines() if line.startswith("def test_")][:2]
    ids = [f"tests/test_02_strides.py::{name}" for name in names]
    before = provenance.source_hashes(repo, ids)
    edit(path, f"def {names[1]}(", f"def {names[1]}(*_ignored, ")
    after = provenance.source_hashes(repo, ids)
    assert after[ids[0]] == before[ids[0]] and after[ids[1]] != before[ids[1]]
    assert provenance.source_hashes(repo, [ids[0] + "[a-1]"]) == {ids[0] + "[a-1]": before[ids[0]]}


def test_the_submission_hash_is_of_the_graded_files_whatever_the_upload_shape(tmp_path):
    # Catches a hash of the upload's bytes (a zip of the same files would read as new code) and a hash
    # that misses an edit to one module.
    from staff import samples
    folder = tmp_path / "folder"
    package = samples.reference(folder)
    zipped = samples.zip_folder(folder, tmp_path / "up.zip", top="my-repo-main")
    assert provenance.submission_sha256(folder) == provenance.submission_sha256(zipped)
    assert provenance.submission_sha256(folder)["of"] == "package"
    samples.replace_in(package / "flops.py", "def ", "def _unused(): pass\n\n\ndef ")
    assert provenance.submission_sha256(folder) != provenance.submission_sha256(zipped)
    (tmp_path / "empty").mkdir()
    assert provenance.submission_sha256(tmp_path / "empty")["of"] == "upload"


def test_the_bundle_refuses_an_uncommitted_tree_unless_told_and_then_says_so(repo):
    # Catches a bundle built from an uncommitted test edit without a word (the grades would name a
    # commit whose tests are not the ones that graded), and an allowed one that does not record it.
    assert recorded_provenance(repo, allow_uncommitted=False)["grader"]["clean"] is True
    edit(repo / "tests" / "test_09_data.py", "def test_", "def test_renamed_")
    with pytest.raises(ReleaseError, match=r"uncommitted changes(.|\n)*tests/test_09_data.py"):
        recorded_provenance(repo, allow_uncommitted=False)
    recorded = recorded_provenance(repo, allow_uncommitted=True)
    assert recorded["grader"]["clean"] is False and recorded["grader"]["uncommitted"] == ["tests/test_09_data.py"]
    (repo / "staff" / "provenance.json").write_text(json.dumps(recorded))
    line = provenance.suite_line({"suite": recorded["suite"], "grader": provenance.grader(repo)})
    assert line.endswith("The autograder was built from uncommitted changes to its source.")
    shutil.rmtree(repo / ".git")
    with pytest.raises(ReleaseError, match="not a git checkout"):
        recorded_provenance(repo, allow_uncommitted=False)


def test_check_asks_for_a_changelog_entry_naming_each_changed_graded_test(repo):
    # Catches a check that reads files and not code (a reworded comment would ask for an entry), one that
    # accepts any Unreleased entry, and one that wants a hidden file's name (the CHANGELOG ships).
    assert unmentioned(repo)[1] == []
    public = repo / "tests" / "test_09_data.py"
    edit(public, "\n# ", "\n# reworded: ")
    assert unmentioned(repo)[1] == []
    edit(public, "def test_", "def test_renamed_")
    hidden = sorted(repo.glob("staff/hidden/test_hidden_10_*.py"))[0]
    edit(hidden, "def test_", "def test_renamed_")
    release, missing = unmentioned(repo)
    assert release.startswith(provenance.version(repo)) and [t.named_as() for t in missing] == \
        ["hidden Problem 10", "tests/test_09_data.py"]
    edit(repo / "CHANGELOG.md", "\n## ", "\n## Unreleased\n\n- `tests/test_09_data.py` and the hidden Problem 1 "
         "tests: a renamed test.\n\n## ")
    assert [t.named_as() for t in unmentioned(repo)[1]] == ["hidden Problem 10"]
    edit(repo / "CHANGELOG.md", "hidden Problem 1 ", "hidden Problem 10 ")
    assert unmentioned(repo)[1] == []


def test_code_digest_ignores_comments_and_docstrings_only():
    # Catches a digest of the text (a comment is a change) or of names only (a changed constant is not).
    base = 'def test_a():\n    """Doc."""\n    assert f(1) == 2\n'
    assert code_digest(base) == code_digest(base.replace('"""Doc."""', '"""Other."""') + "# note\n")
    assert code_digest(base) != code_digest(base.replace("== 2", "== 3"))
