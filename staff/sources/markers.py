"""Solution markers: find the reference bodies in `cs336_basics` and replace them with stubs.

A solution body sits between a `# BEGIN SOLUTION` line and a `# END SOLUTION` line, indented like
the body, inside one function or method. Markers never nest and never span two functions.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from staff.errors import StaffError

BEGIN, END = "# BEGIN SOLUTION", "# END SOLUTION"
_SCOPE = re.compile(r"^(\s*)(?:async\s+def|def|class)\s+(\w+)\s*[(:]")
_HANDOUT = re.compile(r"^Handout:\s*(\S+?\.md)\b", re.MULTILINE)
STUB_MARK = "raise NotImplementedError("


class MarkerError(StaffError, ValueError):
    """A malformed marker, with the file and line it was found at."""


@dataclass(frozen=True)
class SolutionBlock:
    function: str  # the innermost function holding the block
    begin: int  # 0-based line index of the BEGIN marker
    end: int  # 0-based line index of the END marker
    indent: str
    qualname: str = ""  # dotted path from the module, e.g. "Cruncher.forward"

    @property
    def owner(self) -> str:
        """The module-level name the block belongs to: the function, or the class of a method."""
        return (self.qualname or self.function).split(".")[0]


@dataclass
class _Scope:
    indent: int
    is_class: bool
    name: str


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def find_blocks(source: str, path: str | Path = "<source>") -> list[SolutionBlock]:
    """Every solution block in `source`, checked: balanced, not nested, non-empty, one function each.

    Raises:
        MarkerError: the first malformed marker, as "path:line: what is wrong".
    """
    lines = source.splitlines()
    blocks: list[SolutionBlock] = []
    scopes: list[_Scope] = []  # the classes and functions enclosing the current line, outermost first
    open_at: int | None = None
    open_scope: _Scope | None = None
    for i, line in enumerate(lines):
        stripped = line.strip()
        where = f"{path}:{i + 1}"
        match = _SCOPE.match(line)
        if match:
            width = len(match.group(1))
            if open_at is not None and width <= open_scope.indent:
                raise MarkerError(f"{where}: solution block opened at line {open_at + 1} runs into another "
                                  f"{'class' if line.lstrip().startswith('class') else 'function'}")
            while scopes and scopes[-1].indent >= width:
                scopes.pop()
            scopes.append(_Scope(width, line.lstrip().startswith("class"), match.group(2)))
        if stripped == BEGIN:
            if open_at is not None:
                raise MarkerError(f"{where}: {BEGIN} inside the block opened at line {open_at + 1} (nested markers)")
            width = len(_indent_of(line))
            while scopes and scopes[-1].indent >= width:
                scopes.pop()  # a marker indented no deeper than a def is outside that def
            if not scopes or scopes[-1].is_class:
                raise MarkerError(f"{where}: {BEGIN} outside any function")
            open_at, open_scope = i, scopes[-1]
            qualname = ".".join(scope.name for scope in scopes)
        elif stripped == END:
            if open_at is None:
                raise MarkerError(f"{where}: {END} without a matching {BEGIN}")
            indent = _indent_of(lines[open_at])
            if _indent_of(line) != indent:
                raise MarkerError(f"{where}: {END} is indented differently from its {BEGIN} at line {open_at + 1}")
            if not any(body.strip() for body in lines[open_at + 1 : i]):
                raise MarkerError(f"{where}: the solution block opened at line {open_at + 1} is empty")
            blocks.append(SolutionBlock(open_scope.name, open_at, i, indent, qualname))
            open_at = open_scope = None
    if open_at is not None:
        raise MarkerError(f"{path}:{open_at + 1}: {BEGIN} is never closed")
    return blocks


def handout_page(source: str) -> str | None:
    """The handout page named by the module docstring's `Handout:` line, e.g. "handout/02_strides.md"."""
    match = _HANDOUT.search(source)
    return match.group(1) if match else None


def stub_message(block: SolutionBlock, reference: str | None) -> str:
    """What the stub raises: the function's name and where in the handout to read."""
    where = f" (see {reference})" if reference else ""
    return f"{block.qualname or block.function} is not implemented yet{where}"


def stub_source(
    source: str, path: str | Path = "<source>", section: Callable[[SolutionBlock], str] | None = None
) -> str:
    """`source` with every solution body replaced by one `raise NotImplementedError(...)` line.

    The message names the function and the handout page from the module docstring's `Handout:`
    line, followed by `section(block)` (e.g. "§2.6") when `section` is given. Every other byte of
    `source` is kept.
    """
    page = handout_page(source)
    lines = source.splitlines(keepends=True)
    for block in reversed(find_blocks(source, path)):
        reference = " ".join(part for part in (page, section(block) if section else None) if part) or None
        newline = lines[block.end][len(lines[block.end].rstrip("\r\n")):] or "\n"
        stub = f"{block.indent}{STUB_MARK}{stub_message(block, reference)!r}){newline}"
        lines[block.begin : block.end + 1] = [stub]
    return "".join(lines)
