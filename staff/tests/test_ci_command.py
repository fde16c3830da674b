"""CI runs the README's test command: the one line a person copies to check a fresh machine is the
one CI runs (a flag added to one and not the other would let them drift apart)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def readme_test_command() -> str:
    """The command of the README's set-up line commented `# tests: ...`."""
    found = re.search(r"^(uv run [^\n#]*?)\s+# tests:", (ROOT / "README.md").read_text(), re.MULTILINE)
    assert found, "README.md has no set-up line commented '# tests:'"
    return found.group(1).strip()


def test_ci_runs_the_readmes_test_command():
    command = readme_test_command()
    lines = [line.split("||")[0].strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert command in lines, f".ci/run does not run the README's test command {command!r}"
