"""Names say what they hold, never the history that made them: no module, test or docstring of the
tree names an issue or a round of work by number (the CHANGELOG and the closing notes keep the
history). A public project's issue, cited as a source with its owner/name, is not history. Read: the
code and its data files (.py, .toml), the README and the staff's docs/."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CODE = ("adapters", "cs336_basics", "staff", "tests")
HISTORY = re.compile(r"(?<![a-z])(?:issues? \d+|round ?\d+)(?![a-z0-9])", re.IGNORECASE)
SOURCE = re.compile(r"[\w.-]+/[\w.-]+(?:'s)? (?:issues?|pull requests?) \d+|[\w.-]+/[\w.-]+#\d+")


def history_names(text: str) -> list[str]:
    """The mentions of an issue or round number in `text` that are not a cited project's issue."""
    cited = {match.span() for match in SOURCE.finditer(text)}
    found = []
    for match in HISTORY.finditer(text):
        if not any(start <= match.start() < end for start, end in cited):
            found.append(match.group(0))
    return found


def test_history_names_are_found_and_cited_sources_are_not():
    # Mistake caught: a pattern that misses "issue 27" or "round4", or flags a cited source.
    assert history_names("closed in issue 27's last round; test_sandbox_round4.py") == ["issue 27", "round4"]
    assert history_names("NVIDIA/OpenShell issue 1696 and pytest-dev/pytest-xdist#1386") == []


def test_no_file_of_the_tree_names_its_history():
    # Mistake caught: a variant's description or a docs page saying "(issue 28)" where it should say what it guards.
    paths = [path for folder in CODE for pattern in ("*.py", "*.toml") for path in (ROOT / folder).rglob(pattern)]
    paths += [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
    found = []
    for path in sorted(paths):
        if "redteam/cases" in path.as_posix() or path == Path(__file__).resolve():  # its examples
            continue
        names = history_names(path.name + "\n" + path.read_text(encoding="utf-8"))
        found += [f"{path.relative_to(ROOT)}: {name}" for name in names]
    assert not found, "name what the code holds, not the issue or round that made it:\n" + "\n".join(found)
