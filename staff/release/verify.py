"""Static checks of a built release against the tree it came from: the right files, the stubs in
place of the solutions and nothing else changed, sizes within bounds, and no leak."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

from staff.release.contents import COPY, STUB, SUMS, TOP_LEVEL, Entry, manifest_text
from staff.release.leaks import find_leaks
from staff.sources.markers import SolutionBlock, find_blocks, handout_page
from staff.sources.sections import page_sections

MAX_FILE_BYTES = 1 << 20  # the largest file now is uv.lock, at about 130 kB
_STUB = re.compile(r"""^\s*raise NotImplementedError\((['"])([\w.]+) is not implemented yet """
                   r"""\(see (handout/\S+\.md) §(\d+\.\d+)\)\1\)\s*$""")


def _stub_problems(dest: str, source_text: str, release_text: str, release: Path) -> list[str]:
    """The release module must be the source with each block replaced by one stub line naming the
    block's function, its page and a section of that page."""
    page = handout_page(source_text)
    page_path = release / page if page else None
    sections = page_sections(page_path.read_text(encoding="utf-8")) if page_path and page_path.is_file() else {}
    source_lines = source_text.splitlines(keepends=True)
    got = release_text.splitlines(keepends=True)
    expected: list[str | SolutionBlock] = []
    start = 0
    for block in find_blocks(source_text, dest):
        expected += source_lines[start : block.begin]
        expected.append(block)
        start = block.end + 1
    expected += source_lines[start:]
    if len(got) != len(expected):
        return [f"{dest}: {len(got)} lines, expected {len(expected)} (the source's lines, one per solution block)"]
    problems = []
    for number, (want, line) in enumerate(zip(expected, got), start=1):
        if isinstance(want, str):
            if want != line:
                problems.append(f"{dest}:{number}: differs from the source outside the solution markers")
            continue
        match = _STUB.match(line)
        if match is None or match.group(2) != want.qualname or match.group(3) != page or match.group(4) not in sections:
            problems.append(f"{dest}:{number}: expected the stub of {want.qualname} raising NotImplementedError "
                            f"'{want.qualname} is not implemented yet (see {page} §N.k)' with a section N.k of "
                            f"that page, found {line.strip()!r}")
    try:
        ast.parse(release_text, dest)
    except SyntaxError as error:
        problems.append(f"{dest}:{error.lineno}: the stubbed module does not parse: {error.msg}")
    return problems


def check_tree(source: Path, release: Path, entries: list[Entry]) -> list[str]:
    """Every problem found in `release`, as readable lines; empty when it is sound."""
    problems = []
    top = {p.name for p in release.iterdir()}
    if top != TOP_LEVEL:
        problems.append(f"top level holds {sorted(top)}; expected exactly {sorted(TOP_LEVEL)}")
    present = {p.relative_to(release).as_posix() for p in release.rglob("*") if p.is_file()}
    planned = {e.dest for e in entries}
    problems += [f"{path}: not part of the release plan" for path in sorted(present - planned)]
    problems += [f"{path}: missing" for path in sorted(planned - present)]
    for entry in entries:
        target = release / entry.dest
        if not target.is_file():
            continue
        size = target.stat().st_size
        if size > MAX_FILE_BYTES:
            problems.append(f"{entry.dest}: {size} bytes, larger than the {MAX_FILE_BYTES}-byte limit for one file")
        if entry.kind == SUMS:
            if target.read_text(encoding="utf-8") != manifest_text(release, entries):
                problems.append(f"{entry.dest}: not the sums of the release's files")
            continue
        original = (source / entry.source).read_bytes()
        if entry.kind == COPY and target.read_bytes() != original:
            problems.append(f"{entry.dest}: differs from {entry.source}")
        elif entry.kind == STUB:
            # Line by line, so a one-line solution (shorter than its stub) is as welcome as a long one.
            problems += _stub_problems(entry.dest, original.decode("utf-8"), target.read_text(encoding="utf-8"),
                                       release)
    problems += _packaging_problems(release)
    problems += [f"leak: {leak}" for leak in find_leaks(source, release)]
    return problems


def _packaging_problems(release: Path) -> list[str]:
    """pyproject.toml and uv.lock must carry no staff command, group or package."""
    problems = []
    for name in ("pyproject.toml", "uv.lock"):
        path = release / name
        if not path.is_file():
            continue
        try:
            tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as error:
            problems.append(f"{name}: not valid TOML: {error}")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if re.search(r"\bstaff\b", line):
                problems.append(f"{name}:{number}: mentions staff: {line.strip()}")
    return problems
