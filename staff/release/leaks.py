"""The leak check: nothing secret from the staff tree may appear anywhere in the release.

Secret are the lines of solution bodies, every line under `staff/`, and the names of tests
defined under `staff/` (hidden tests among them). Lines are compared with all whitespace removed.
A release line leaks a secret line when it equals it; a solution line long enough to be telling
also leaks when it appears inside a longer line (quoted in the handout, say). Lines that the public
code ships anyway (everything outside the solution markers) are not secret, nor are imports and
very short lines: `return True` or `import zipfile` give nothing away.
"""

from __future__ import annotations

import re
from pathlib import Path

from staff.sources.markers import find_blocks

MIN_CHARS = 10  # shorter lines (`else:`, `return x`) say nothing, and would match by chance
QUOTED_CHARS = 24  # a solution line this long is caught even inside a longer line
PUBLIC_CODE = ("adapters", "tests")  # shipped as they are, like the package outside the markers
PUBLIC_SCRIPTS = ("make_submission.sh",)  # shipped as they are too: a shebang is no secret
# The scaffold of `staff new-problem`: templates of files that ship (a handout table's header, a test
# file's imports), no line of which is secret.
PUBLIC_TEMPLATES = ("staff/authoring/new_problem.py",)
_TEST_NAME = re.compile(r"^\s*(?:async\s+)?def\s+(test_\w+)", re.MULTILINE)
_IMPORT = re.compile(r"^(?:import\w|from[\w.]+import)")


def squeeze(text: str) -> str:
    """`text` without any whitespace."""
    return "".join(text.split())


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None  # an image or other binary file: it holds no source lines


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def _solution_lines(source: Path) -> tuple[dict[str, str], list[str]]:
    """(squeezed solution line -> where it is, the package's lines outside the markers)."""
    secret, outside = {}, []
    for module in sorted((source / "cs336_basics").rglob("*.py")):
        lines = module.read_text(encoding="utf-8").splitlines()
        inside = set()
        for block in find_blocks("\n".join(lines), module.relative_to(source)):
            for i in range(block.begin + 1, block.end):
                secret.setdefault(squeeze(lines[i]), f"{module.relative_to(source)}:{i + 1} (solution)")
            inside |= set(range(block.begin, block.end + 1))
        outside += [line for i, line in enumerate(lines) if i not in inside]
    return secret, outside


def _staff_lines(source: Path) -> tuple[dict[str, str], set[str]]:
    """(squeezed line -> where it is) for every text file under staff/, and the test names defined there."""
    secret: dict[str, str] = {}
    tests: set[str] = set()
    for path in _files(source / "staff"):
        if str(path.relative_to(source)) in PUBLIC_TEMPLATES:
            continue
        text = _text(path)
        if text is not None:
            for i, line in enumerate(text.splitlines()):
                secret.setdefault(squeeze(line), f"{path.relative_to(source)}:{i + 1}")
            tests |= set(_TEST_NAME.findall(text))
    return secret, tests


def find_leaks(source: Path, release: Path) -> list[str]:
    """Every place in `release` that repeats a secret of `source`, as "file:line: what"."""
    solution, public = _solution_lines(source)
    staff, staff_tests = _staff_lines(source)
    public += [line for name in PUBLIC_SCRIPTS for line in (source / name).read_text(encoding="utf-8").splitlines()]
    public += [line for folder in PUBLIC_CODE for path in _files(source / folder) if path.suffix == ".py"
               for line in path.read_text(encoding="utf-8").splitlines()]
    public_text = "\n".join(squeeze(line) for line in public)
    whole = {line: where for line, where in {**staff, **solution}.items()
             if len(line) >= MIN_CHARS and not _IMPORT.match(line) and line not in public_text}
    quoted = {line: where for line, where in solution.items() if len(line) >= QUOTED_CHARS and line in whole}
    hidden = sorted(staff_tests - set(_TEST_NAME.findall("\n".join(public))))
    names = re.compile(r"\b(" + "|".join(map(re.escape, hidden)) + r")\b") if hidden else None
    leaks = []
    for path in _files(release):
        text = _text(path) if ".git" not in path.relative_to(release).parts else None
        if text is None:
            continue
        where = path.relative_to(release).as_posix()
        for number, raw in enumerate(text.splitlines(), start=1):
            line = squeeze(raw)
            hits = [whole[line]] if line in whole else [origin for secret, origin in quoted.items() if secret in line]
            leaks += [f"{where}:{number}: repeats {origin}" for origin in hits]
            if names is not None:
                leaks += [f"{where}:{number}: names the staff-only test {name}" for name in names.findall(raw)]
    return leaks
