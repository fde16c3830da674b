"""`staff new-problem`: what it writes passes `staff check` at once and fails the suites until its TODOs
are filled; refused arguments and failed writes leave the tree as it was."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from staff.authoring.new_problem import TODO, NewProblem, ScaffoldError, scaffold, validate
from staff.grading.grade import REPO_ROOT
from tests.problems import PROBLEMS

# The scaffold's trial problem: the next free number, whatever problems exist (a term adds its own).
NEXT = max(PROBLEMS) + 1
NN = f"{NEXT:02d}"


def copied_tree(root: Path) -> Path:
    """The repository's tracked and new files, copied to `root` (no .venv, no .git)."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO_ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO_ROOT / name
        if source.is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(source.read_bytes())
    return root


def staff(root: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([sys.executable, "-m", "staff.cli", *argv], cwd=root, env=env, capture_output=True,
                          text=True, timeout=300)


def fingerprint(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


@pytest.mark.slow
def test_a_scaffold_passes_staff_check_and_fails_its_own_tests(tmp_path):
    # Mistakes this catches: a scaffold that `staff check` refuses (a total not moved, a summary row missing),
    # and one whose tests pass before anything is written (a test that cannot fail).
    root = copied_tree(tmp_path)
    made = staff(root, "new-problem", str(NEXT), "tokens", "Tokens per step")
    assert made.returncode == 0, made.stderr
    checked = staff(root, "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"problem {NEXT} (Tokens per step): ok" in checked.stdout
    suites = [f"tests/test_{NN}_tokens.py", f"staff/hidden/test_hidden_{NN}_tokens.py"]
    ran = subprocess.run([sys.executable, "-m", "pytest", *suites,
                          "-q", "-p", "no:cacheprovider"], cwd=root, env={**os.environ, "PYTHONPATH": str(root)},
                         capture_output=True, text=True, timeout=300)
    assert "2 failed" in ran.stdout, ran.stdout[-2000:]
    todo = [p for p in ("cs336_basics/tokens.py", "adapters/tokens.py", f"tests/test_{NN}_tokens.py",
                        f"staff/hidden/test_hidden_{NN}_tokens.py", f"handout/{NN}_tokens.md",
                        f"staff/validate/variants/p{NN}_tokens.toml") if TODO in (root / p).read_text()]
    assert len(todo) == 6, todo
    before = fingerprint(root)  # a second scaffold of the same problem is refused and writes nothing
    again = staff(root, "new-problem", str(NEXT), "tokens", "Tokens per step")
    assert again.returncode == 2 and "nothing was written" in again.stderr and fingerprint(root) == before


@pytest.mark.parametrize("number, module, title, said", [
    (3, "tokens", "Tokens", "problem 3 is taken"),
    (NEXT, "Tokens", "Tokens", "not a lower-case Python name"),
    (NEXT, "class", "Tokens", "not a lower-case Python name"),
    (NEXT, "einops_ops", "Tokens", "already belongs to another problem"),
    (NEXT, "tokens", "a | b", "must be non-empty text"),
    (NEXT, "tokens", " ", "must be non-empty text"),
])
def test_arguments_the_scaffold_cannot_take_are_refused(number, module, title, said):
    with pytest.raises(ScaffoldError, match=said):
        validate(NewProblem(number, module, title), REPO_ROOT)


def test_a_failed_write_puts_back_what_was_there(tmp_path, monkeypatch, suite_tests):
    # Mistake this catches: a scaffold that stops half-way, leaving a registry entry without its files.
    root = copied_tree(tmp_path)
    tests = suite_tests
    before = fingerprint(root)
    writes, real_write = iter(range(100)), Path.write_text

    def failing_write(self, *args, **kwargs):
        if next(writes) == 7:  # the eighth of nine: the new files and the registry are written by then
            raise OSError(28, "No space left on device")
        return real_write(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", failing_write)
    with pytest.raises(OSError):
        scaffold(NewProblem(NEXT, "tokens", "Tokens per step"), root, tests)
    monkeypatch.undo()
    assert fingerprint(root) == before
