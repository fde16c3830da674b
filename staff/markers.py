"""Solution markers: find the reference bodies in `cs336_basics` and replace them with stubs.

A solution body sits between a `# BEGIN SOLUTION` line and a `# END SOLUTION` line, indented like
the body, inside one function. Markers never nest and never span two functions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

BEGIN, END = "# BEGIN SOLUTION", "# END SOLUTION"
_DEF = re.compile(r"^(\s*)(?:async\s+)?def\s+(\w+)\s*\(")
_HANDOUT = re.compile(r"^Handout:\s*(\S+?\.md)\b", re.MULTILINE)


class MarkerError(ValueError):
    """A malformed marker, with the file and line it was found at."""


@dataclass(frozen=True)
class SolutionBlock:
    function: str
    begin: int  # 0-based line index of the BEGIN marker
    end: int  # 0-based line index of the END marker
    indent: str


def find_blocks(source: str, path: str | Path = "<source>") -> list[SolutionBlock]:
    """Every solution block in `source`, checked: balanced, not nested, non-empty, one function each."""
    lines = source.splitlines()
    blocks: list[SolutionBlock] = []
    current_def: tuple[str, int] | None = None  # (name, indent width) of the innermost def seen
    open_at: int | None = None
    open_def: tuple[str, int] | None = None
    for i, line in enumerate(lines):
        stripped = line.strip()
        where = f"{path}:{i + 1}"
        match = _DEF.match(line)
        if match:
            if open_at is not None and len(match.group(1)) <= open_def[1]:
                raise MarkerError(f"{where}: solution block opened at line {open_at + 1} runs into another function")
            current_def = (match.group(2), len(match.group(1)))
        if stripped == BEGIN:
            if open_at is not None:
                raise MarkerError(f"{where}: {BEGIN} inside the block opened at line {open_at + 1} (nested markers)")
            if current_def is None:
                raise MarkerError(f"{where}: {BEGIN} outside any function")
            open_at, open_def = i, current_def
        elif stripped == END:
            if open_at is None:
                raise MarkerError(f"{where}: {END} without a matching {BEGIN}")
            indent = lines[open_at][: len(lines[open_at]) - len(lines[open_at].lstrip())]
            if line[: len(line) - len(line.lstrip())] != indent:
                raise MarkerError(f"{where}: {END} is indented differently from its {BEGIN} at line {open_at + 1}")
            if not any(body.strip() for body in lines[open_at + 1 : i]):
                raise MarkerError(f"{where}: the solution block opened at line {open_at + 1} is empty")
            blocks.append(SolutionBlock(open_def[0], open_at, i, indent))
            open_at = open_def = None
    if open_at is not None:
        raise MarkerError(f"{path}:{open_at + 1}: {BEGIN} is never closed")
    return blocks


def stub_source(source: str, path: str | Path = "<source>") -> str:
    """`source` with every solution body replaced by a `raise NotImplementedError` naming the
    function and the handout file given in the module docstring's `Handout:` line."""
    handout = _HANDOUT.search(source)
    where = f" (see {handout.group(1)})" if handout else ""
    lines = source.splitlines(keepends=True)
    for block in reversed(find_blocks(source, path)):
        message = f"{block.function} is not implemented yet{where}"
        stub = f"{block.indent}raise NotImplementedError({message!r})\n"
        lines[block.begin : block.end + 1] = [stub]
    return "".join(lines)
