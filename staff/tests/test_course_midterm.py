"""The mid-term fix of docs/course.md, tried end to end from a copy of this tree
committed to a git repository of its own: a batch graded, one submission replaced, a public test
changed; `staff check` asks for the CHANGELOG entry, `staff bundle` refuses the uncommitted tree, a
plain rerun regrades exactly the stale grades and says why, and `staff diff` names who moved, by
which test and why. Problem 2 only, behind the sandbox, as a TA grades: seven grades in all."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from staff import samples
from staff.sources.markers import stub_source
from staff.tests.test_provenance import GIT_ENV, edit, git

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]
REPO_ROOT = samples.REPO_ROOT
WORKED_EXAMPLE = "check_equal(A.run_storage_index([1, 2], [4, 1], 0), 6,"


def checkout(dest: Path) -> Path:
    """This tree's files as a fresh clone has them (tracked and new, not ignored), committed in `dest`."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO_ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO_ROOT / name
        if source.is_file() and not source.is_symlink():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    git(dest, "init", "-q", "--initial-branch=main")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "release")
    return dest


def staff(repo: Path, *args: str) -> subprocess.CompletedProcess:
    """`staff ARGS` of the checkout at `repo` (its own code, this environment's packages)."""
    return subprocess.run([sys.executable, "-m", "staff.cli", *args], cwd=repo, capture_output=True, text=True,
                          timeout=900, env={**GIT_ENV, "PYTHONPATH": str(repo)}, stdin=subprocess.DEVNULL)


def grades(out: Path) -> dict[str, dict]:
    with (out / "grades.csv").open(encoding="utf-8") as handle:
        return {row["submission"]: row for row in csv.DictReader(handle)}


def test_the_mid_term_fix_regrades_exactly_the_stale_grades_and_the_diff_names_who_moved(tmp_path):
    # Catches, end to end through the commands: a rerun that keeps stale grades (the suite fixed, a
    # submission replaced) or regrades current ones, a bundle built from an uncommitted test edit, a
    # check that lets a changed graded test go without a CHANGELOG entry, and a diff without causes.
    repo = checkout(tmp_path / "repo")
    batch, out = tmp_path / "batch", tmp_path / "out"
    samples.reference(batch / "ada")
    for name in ("bob", "cyd"):
        strides = samples.reference(batch / name) / "strides.py"
        strides.write_text(stub_source(strides.read_text(encoding="utf-8"), strides), encoding="utf-8")
    grade = ["grade", "--batch", str(batch), "--out", str(out), "--problems", "2", "-j", "2"]

    first = staff(repo, *grade)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "3 graded now: no grade yet" in first.stdout
    assert [grades(out)[k]["p2_public"] for k in ("ada", "bob", "cyd")] == ["23", "0", "0"]
    assert grades(out)["ada"]["p1_public"] == "" and grades(out)["ada"]["status"] == "partial"

    shutil.copy(REPO_ROOT / "cs336_basics" / "strides.py", batch / "bob" / "cs336_basics" / "strides.py")
    again = staff(repo, *grade)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "1 graded now: the submission changed" in again.stdout
    assert grades(out)["bob"]["p2_public"] == "23" and grades(out)["cyd"]["p2_public"] == "0"

    edit(repo / "tests" / "test_02_strides.py", WORKED_EXAMPLE, WORKED_EXAMPLE.replace(", 6,", ", 7,"))
    checked = staff(repo, "check")
    assert checked.returncode == 1 and "tests/test_02_strides.py changed since release" in checked.stdout
    bundle = staff(repo, "bundle", str(tmp_path / "autograder.zip"))
    assert bundle.returncode == 1 and "uncommitted changes" in bundle.stderr
    assert not (tmp_path / "autograder.zip").exists()
    entry = "- `tests/test_02_strides.py`: the worked example.\n"
    changelog = (repo / "CHANGELOG.md").read_text(encoding="utf-8")
    if "\n## Unreleased\n" in changelog:
        edit(repo / "CHANGELOG.md", "\n## Unreleased\n", f"\n## Unreleased\n\n{entry}")
    else:
        edit(repo / "CHANGELOG.md", "\n## ", f"\n## Unreleased\n\n{entry}\n## ")
    git(repo, "commit", "-q", "-am", "Problem 2: the worked example's expected value")

    fixed = staff(repo, *grade)
    assert fixed.returncode == 0, fixed.stderr[-3000:]
    assert "3 graded now: the suite changed in tests/test_02_strides.py" in fixed.stdout
    assert [grades(out)[k]["p2_public"] for k in ("ada", "bob", "cyd")] == ["22", "22", "0"]
    moved = staff(repo, "diff", str(out), "--csv", str(tmp_path / "moved.csv"))
    assert moved.returncode == 0, moved.stdout + moved.stderr[-2000:]
    assert "3 students: 0 up, 2 down, 1 unchanged" in moved.stdout
    assert "2 down test_storage_index_worked_example (problem 2): the test changed" in " ".join(moved.stdout.split())
    with (tmp_path / "moved.csv").open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert sorted((r["student_id"], r["test"], r["cause"]) for r in rows) == [
        ("ada", "test_storage_index_worked_example", "the test changed"),
        ("bob", "test_storage_index_worked_example", "the test changed")]
    assert (out / "diff.md").is_file() and "the test changed" in (out / "report.html").read_text(encoding="utf-8")
    assert staff(repo, *grade).stdout.startswith("0 graded now: every grade of the 3 is current")
