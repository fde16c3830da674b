"""Which graded tests changed since the last release, so the CHANGELOG can be held to say so.

The last release is the commit that set pyproject.toml's version to what it says now. A test file
counts as changed when its code differs (compared as Python syntax trees without docstrings, so a
comment or a docstring reworded changes nothing a student is graded on), when it is new, or when it
is gone. Students read the CHANGELOG: a public file is named by its path, the hidden suites only as
"the hidden Problem N tests", never by their file names.
"""

from __future__ import annotations

import ast
import hashlib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from staff.grading.provenance import git_output

GRADED_TESTS = ("tests/test_*.py", "staff/hidden/test_*.py")


@dataclass(frozen=True)
class ChangedTest:
    path: str  # relative to the repository
    problem: int | None
    hidden: bool

    def named_as(self) -> str:
        """How the CHANGELOG's Unreleased entry must name it."""
        return f"hidden Problem {self.problem}" if self.hidden else self.path

    def named_in(self, entry: str) -> bool:
        return re.search(rf"{re.escape(self.named_as())}(?![\w.])", entry, flags=re.IGNORECASE) is not None


def code_digest(source: str) -> str:
    """A hash of `source`'s code: its syntax tree with every docstring removed (comments never reach it).
    A file that does not parse is hashed as text."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return hashlib.sha256(source.encode()).hexdigest()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and \
                isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()


def last_release(repo: Path) -> tuple[str, str] | None:
    """(version, commit) of the last release: pyproject.toml's version and the commit that set it;
    None outside a git checkout or where no commit set it."""
    version = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    commit = git_output(repo, "log", "-1", "--format=%H", f"-Sversion = \"{version}\"", "--", "pyproject.toml")
    return (version, commit.strip()) if commit and commit.strip() else None


def _problem(path: str) -> int | None:
    found = re.search(r"test_(?:hidden_)?(\d+)_", Path(path).name)
    return int(found.group(1)) if found else None


def changed_tests(repo: Path, commit: str) -> list[ChangedTest]:
    """The graded test files whose code differs between `commit` and the working tree (new and removed
    files included), sorted by path."""
    then = set((git_output(repo, "ls-tree", "-r", "--name-only", commit, "--", "tests", "staff/hidden") or "").split())
    now = {p.relative_to(repo).as_posix() for pattern in GRADED_TESTS for p in repo.glob(pattern)}
    then = {p for p in then if any(Path(p).match(pattern) for pattern in GRADED_TESTS)}
    changed = []
    for path in sorted(then | now):
        old = git_output(repo, "show", f"{commit}:{path}") if path in then else None
        new = (repo / path).read_text(encoding="utf-8") if path in now else None
        if old is None or new is None or code_digest(old) != code_digest(new):
            changed.append(ChangedTest(path, _problem(path), path.startswith("staff/hidden/")))
    return changed


def unreleased_entry(changelog: str) -> str:
    """The text of the CHANGELOG's "## Unreleased" section ("" where there is none)."""
    found = re.search(r"^## Unreleased\s*$(.*?)(?=^## |\Z)", changelog, flags=re.MULTILINE | re.DOTALL)
    return found.group(1) if found else ""


def unmentioned(repo: Path) -> tuple[str, list[ChangedTest]]:
    """(the release compared with, the changed tests its Unreleased entry does not name); nothing to
    compare outside a git checkout."""
    release = last_release(repo)
    if release is None:
        return "", []
    entry = unreleased_entry((repo / "CHANGELOG.md").read_text(encoding="utf-8"))
    missing = [t for t in changed_tests(repo, release[1]) if not t.named_in(entry)]
    return f"{release[0]} (commit {release[1][:10]})", missing
