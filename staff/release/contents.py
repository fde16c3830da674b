"""What the student release holds, and writing it out from the staff tree.

Every file of the release comes from one file of this tree: copied as is, stubbed (solution
bodies replaced), or rewritten (pyproject.toml without staff entries; the student README). The
lock file is copied, then re-locked inside the release.
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from pathlib import Path

from staff.release.proc import ReleaseError
from staff.release.pyproject import PyprojectError, student_pyproject
from staff.sandbox.layout import PACKAGE
from staff.sources.markers import MarkerError, find_blocks, stub_source
from staff.sources.sections import SectionError, SectionIndex

SHIPPED_FOLDERS = (PACKAGE, "adapters", "tests", "handout")
STUDENT_README = "STUDENT_README.md"  # becomes the release's README.md
SHIPPED_FILES = {"README.md": STUDENT_README, "pyproject.toml": "pyproject.toml", "uv.lock": "uv.lock",
                 "make_submission.sh": "make_submission.sh", ".gitignore": ".gitignore",
                 "CHANGELOG.md": "CHANGELOG.md", ".python-version": ".python-version"}
# Every file the release ships outside the package, with its sha256 (the lines of `sha256sum`), so that
# make_submission.sh can name what a student changed outside cs336_basics/ where there is no git history.
MANIFEST = ".release-sums"
TOP_LEVEL = frozenset(SHIPPED_FOLDERS) | frozenset(SHIPPED_FILES) | {MANIFEST}
EXECUTABLE = frozenset({"make_submission.sh"})

COPY, STUB, PYPROJECT, LOCK, SUMS = "copy", "stub", "pyproject", "lock", "sums"


@dataclass(frozen=True)
class Entry:
    """One file of the release: where it goes, how it is made, and from which source file."""

    dest: str  # POSIX path inside the release
    kind: str  # COPY, STUB, PYPROJECT or LOCK
    source: str  # POSIX path inside the staff tree


def _skipped(relative: Path) -> bool:
    """Caches and hidden files (editor droppings, .DS_Store, .ipynb_checkpoints) never ship."""
    return any(part == "__pycache__" or part.startswith(".") for part in relative.parts) or relative.suffix == ".pyc"


def plan(source: Path) -> list[Entry]:
    """Every file the release will hold, sorted by destination.

    Raises:
        ReleaseError: a file the release needs is missing from `source`.
    """
    entries = []
    for folder in SHIPPED_FOLDERS:
        if not (source / folder).is_dir():
            raise ReleaseError(f"{source / folder} is missing; the release ships it")
        for path in sorted((source / folder).rglob("*")):
            relative = path.relative_to(source)
            if path.is_file() and not _skipped(relative.relative_to(folder)):
                kind = STUB if folder == PACKAGE and path.suffix == ".py" else COPY
                entries.append(Entry(relative.as_posix(), kind, relative.as_posix()))
    for dest, origin in SHIPPED_FILES.items():
        if not (source / origin).is_file():
            raise ReleaseError(f"{source / origin} is missing; the release's {dest} is made from it")
        kind = {"pyproject.toml": PYPROJECT, "uv.lock": LOCK}.get(dest, COPY)
        entries.append(Entry(dest, kind, origin))
    entries.append(Entry(MANIFEST, SUMS, ""))  # made from the release itself, once it is locked
    return sorted(entries, key=lambda e: e.dest)


def manifest_text(release: Path, entries: list[Entry]) -> str:
    """The manifest of `release`: `sha256  path` for every file it ships outside the package, by path."""
    lines = [f"{hashlib.sha256((release / e.dest).read_bytes()).hexdigest()}  {e.dest}\n" for e in entries
             if e.kind != SUMS and not e.dest.startswith(f"{PACKAGE}/") and (release / e.dest).is_file()]
    return "".join(sorted(lines, key=lambda line: line.split("  ", 1)[1]))


def write_manifest(release: Path, entries: list[Entry]) -> None:
    """Write the release's manifest (MANIFEST): the last file written, once the lock file is final."""
    target = release / MANIFEST
    target.write_text(manifest_text(release, entries), encoding="utf-8", newline="")
    target.chmod(0o644)


def stubbed_modules(source: Path, entries: list[Entry]) -> dict[str, str]:
    """The stubbed text of every package module, by destination.

    Raises:
        ReleaseError: listing every malformed marker and every block without a handout section.
    """
    try:
        index = SectionIndex(source)
    except SyntaxError as error:
        raise ReleaseError(f"{error.filename}:{error.lineno}: cannot parse it to find handout sections: "
                           f"{error.msg}") from error
    texts, problems = {}, []
    for entry in entries:
        if entry.kind != STUB:
            continue
        text = (source / entry.source).read_text(encoding="utf-8")
        try:
            blocks = find_blocks(text, entry.source)
        except MarkerError as error:
            problems.append(str(error))
            continue
        sections = {}
        for block in blocks:
            try:
                sections[block.begin] = index.section(Path(entry.source), text, block)
            except SectionError as error:
                problems.append(str(error))
        if len(sections) == len(blocks):
            texts[entry.dest] = stub_source(text, entry.source, section=lambda block: sections[block.begin])
    if problems:
        raise ReleaseError("cannot stub the solutions:\n  " + "\n  ".join(problems))
    return texts


def write_tree(source: Path, dest: Path, entries: list[Entry]) -> None:
    """Write the release's files into the empty folder `dest` (the lock file still to be re-locked)."""
    stubs = stubbed_modules(source, entries)
    try:
        pyproject = student_pyproject((source / "pyproject.toml").read_text(encoding="utf-8"))
    except PyprojectError as error:
        raise ReleaseError(f"pyproject.toml: {error}") from error
    for entry in entries:
        if entry.kind == SUMS:
            continue  # write_manifest, after the lock
        target = dest / entry.dest
        target.parent.mkdir(parents=True, exist_ok=True)
        if entry.kind == STUB:
            target.write_text(stubs[entry.dest], encoding="utf-8", newline="")
        elif entry.kind == PYPROJECT:
            target.write_text(pyproject, encoding="utf-8", newline="")
        else:
            shutil.copyfile(source / entry.source, target)
        target.chmod(0o755 if entry.dest in EXECUTABLE else 0o644)
