"""An unusable upload scores 0 from the bundle's list of graded tests, without a pytest collection, and
no message shows where the grading machine keeps the upload; a list made for other suites is not used."""

from __future__ import annotations

import json
import shutil
import zipfile

import pytest

from staff.gradescope.bundle import graded_test_list
from staff.grading import collected, grade, selection
from staff.grading.grade import REPO_ROOT
from staff.grading.scrub import scrub
from staff.grading.selection import listing_key
from tests.grading import HIDDEN_VISIBILITY


@pytest.fixture(scope="module")
def listed(tmp_path_factory):
    """The list `staff bundle` writes for this tree (one collection)."""
    path = tmp_path_factory.mktemp("bundle") / "collected.json"
    path.write_text(graded_test_list(REPO_ROOT, HIDDEN_VISIBILITY))
    return path


@pytest.fixture
def no_collection(monkeypatch, listed):
    """Grading uses the bundle's list; a pytest collection fails the test."""
    def collect(*args, **kwargs):
        raise AssertionError("a pytest collection ran for an unusable upload")

    monkeypatch.setattr(selection, "LISTED_TESTS", listed)
    monkeypatch.setattr(selection, "collect_only", collect)


def _no_machine_path(text: str, *paths) -> None:
    for path in ("/tmp/", "staff-grade-", "<home>", "<grading folder>", *map(str, paths)):
        assert path not in text, f"{path} in {text[:300]!r}"


def test_an_empty_upload_scores_zero_from_the_list(tmp_path, no_collection, listed):
    (tmp_path / "submission").mkdir()
    result = grade.grade(tmp_path / "submission")
    tests = json.loads(listed.read_text())["tests"]
    assert result.score == 0 and len(result.tests) == len(tests) > 100 and result.max_score > 0
    assert "holds no cs336_basics/ folder" in result.output and "; it is empty." in result.output
    assert all(t.output.startswith("Your submission could not be loaded") for t in result.tests)
    _no_machine_path(result.output + "".join(t.output for t in result.tests), tmp_path)


def test_a_zip_without_the_package_scores_zero_from_the_list(tmp_path, no_collection):
    (tmp_path / "submission").mkdir()
    with zipfile.ZipFile(tmp_path / "submission" / "work.zip", "w") as zf:
        zf.writestr("work/notes.txt", "hello")
    result = grade.grade(tmp_path / "submission")
    assert result.score == 0 and result.tests and "found: work.zip/work/" in result.output
    _no_machine_path(result.output, tmp_path)


def test_a_folder_without_the_package_says_what_it_holds_not_where(tmp_path, no_collection):
    (tmp_path / "submission" / "work").mkdir(parents=True)
    (tmp_path / "submission" / "a.zip").write_bytes(b"PK")
    (tmp_path / "submission" / "b.zip").write_bytes(b"PK")
    result = grade.grade(tmp_path / "submission")
    assert "no cs336_basics/ folder" in result.output and "; found: a.zip, b.zip, work/." in result.output
    assert "Could not read the zip a.zip" in result.output
    _no_machine_path(result.output, tmp_path)


def test_a_list_for_other_suites_or_settings_is_not_used(tmp_path, listed):
    key = listing_key(REPO_ROOT, True, None, False, HIDDEN_VISIBILITY)
    assert collected.load(listed, key)
    assert collected.load(listed, listing_key(REPO_ROOT, True, None, False, "visible")) is None
    assert collected.load(listed, listing_key(REPO_ROOT, True, {1}, False, HIDDEN_VISIBILITY)) is None
    assert collected.load(listed, listing_key(REPO_ROOT, False, None, False, HIDDEN_VISIBILITY)) is None
    edited = tmp_path / "tree"
    for part in ("adapters", "tests", "staff/hidden"):
        shutil.copytree(REPO_ROOT / part, edited / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO_ROOT / "pyproject.toml", edited)
    assert listing_key(edited, True, None, False, HIDDEN_VISIBILITY) == key
    test_file = next((edited / "staff" / "hidden").glob("test_hidden_*.py"))
    test_file.write_text(test_file.read_text() + "\n# a new check\n")
    assert collected.load(listed, listing_key(edited, True, None, False, HIDDEN_VISIBILITY)) is None
    (tmp_path / "broken.json").write_text("{")
    assert collected.load(tmp_path / "broken.json", key) is None


def test_a_grade_from_the_repo_without_a_list_still_collects(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(selection, "LISTED_TESTS", tmp_path / "absent.json")
    monkeypatch.setattr(selection, "collect_only", lambda *args: calls.append(args) or [])
    assert selection.graded_tests(tmp_path, True, None, False, HIDDEN_VISIBILITY) == [] and len(calls) == 1


def test_the_listed_tests_take_the_bundles_hidden_visibility(tmp_path):
    path = tmp_path / "collected.json"
    path.write_text(graded_test_list(REPO_ROOT, "visible"))
    tests = collected.load(path, listing_key(REPO_ROOT, True, None, False, "visible"))
    assert {t.visibility for t in tests if t.hidden} == {"visible"}


def test_scrub_replaces_a_home_path_only_where_it_stands_alone():
    paths = [("/root", "<home>")]
    kept = "/autograder/root/submission /rootfs /root.bak"
    assert scrub(kept, paths) == kept
    assert scrub("at /root/x, in /root. (/root)", paths) == "at <home>/x, in <home>. (<home>)"
