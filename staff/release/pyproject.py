"""The student's pyproject.toml: the staff's, with every trace of `staff` removed.

The text is edited line by line so that comments and layout survive, then parsed back with tomllib
and compared with the same edits applied to the parsed original, so a slip in the text editing
cannot go unnoticed.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
from typing import Any

STAFF = "staff"
# (table, key, list item): delete the key (item None) or remove one item from its list value.
EDITS: list[tuple[str, str, str | None]] = [
    ("project.scripts", STAFF, None),
    ("dependency-groups", STAFF, None),
    ("tool.uv", "default-groups", None),
    ("tool.hatch.build.targets.wheel", "packages", STAFF),
    ("tool.pytest.ini_options", "testpaths", "staff/hidden"),
    ("tool.pytest.ini_options", "testpaths", "staff/tests"),
]
_HEADER = re.compile(r"^\s*\[([^\[\]]+)\]\s*(?:#.*)?$")


class PyprojectError(ValueError):
    """The staff pyproject.toml is not shaped as expected, or the edit went wrong."""


def _tables(lines: list[str]) -> list[tuple[str, int, int]]:
    """(name, header line, end line exclusive) of each [table]; a table ends where the next begins."""
    headers = [(m.group(1).strip(), i) for i, line in enumerate(lines) if (m := _HEADER.match(line))]
    ends = [start for _, start in headers[1:]] + [len(lines)]
    return [(name, start, end) for (name, start), end in zip(headers, ends)]


def _key_span(lines: list[str], start: int, end: int, key: str) -> tuple[int, int] | None:
    """Lines [first, last) holding `key = value` inside one table; a multi-line value is followed
    until the lines parse as TOML."""
    pattern = re.compile(rf"^\s*(?:{re.escape(key)}|\"{re.escape(key)}\")\s*=")
    for first in range(start, end):
        if pattern.match(lines[first]):
            for last in range(first + 1, end + 1):
                try:
                    tomllib.loads("".join(lines[first:last]))
                except tomllib.TOMLDecodeError:
                    continue
                return first, last
            raise PyprojectError(f"line {first + 1}: the value of {key} never parses as TOML")
    return None


def _drop_empty_table(lines: list[str], name: str) -> list[str]:
    """Remove `[name]`, with the blank lines that follow it, when no key is left in it."""
    for table, start, end in _tables(lines):
        body = [line for line in lines[start + 1 : end] if line.strip() and not line.lstrip().startswith("#")]
        if table == name and not body:
            kept = lines[:start] + lines[end:]
            while len(kept) > 1 and not kept[-1].strip():
                kept.pop()  # a table removed from the end leaves no trailing blank line
            return kept
    return lines


def _edit_text(lines: list[str], table: str, key: str, item: str | None) -> list[str]:
    for name, start, end in _tables(lines):
        if name != table:
            continue
        span = _key_span(lines, start + 1, end, key)
        if span is None:
            raise PyprojectError(f"[{table}] has no {key}")
        first, last = span
        if item is None:
            return _drop_empty_table(lines[:first] + lines[last:], table)
        value = tomllib.loads("".join(lines[first:last]))[key]
        if item not in value:
            raise PyprojectError(f"[{table}] {key} does not list {item!r}")
        kept = [v for v in value if v != item]
        rendered = f"{key} = [{', '.join(json.dumps(v) for v in kept)}]\n"
        return lines[:first] + [rendered] + lines[last:]
    raise PyprojectError(f"no [{table}] table")


def _edit_data(data: dict[str, Any], table: str, key: str, item: str | None) -> None:
    *parents, last = table.split(".")
    holder = data
    for part in parents:
        holder = holder[part]
    if item is None:
        del holder[last][key]
        if not holder[last]:
            del holder[last]
    else:
        holder[last][key] = [v for v in holder[last][key] if v != item]


def student_pyproject(text: str) -> str:
    """The release's pyproject.toml text: no staff command, group, package or test path.

    Raises:
        PyprojectError: an expected entry is missing, or the edited text does not parse to the
            expected document.
    """
    lines = text.splitlines(keepends=True)
    expected = copy.deepcopy(tomllib.loads(text))
    for table, key, item in EDITS:
        lines = _edit_text(lines, table, key, item)
        _edit_data(expected, table, key, item)
    result = "".join(lines)
    if tomllib.loads(result) != expected:
        raise PyprojectError("editing pyproject.toml as text changed more than the staff entries")
    if re.search(rf"\b{STAFF}\b", result):
        raise PyprojectError(f"the student pyproject.toml still mentions {STAFF!r}")
    return result
