"""The student's pyproject.toml: the staff's, with every trace of `staff` removed.

tomlkit edits the document so that comments and layout survive; the result is parsed back with
tomllib and compared with the same edits applied to the parsed original, so a slip in either edit
cannot go unnoticed.
"""

from __future__ import annotations

import copy
import re
import tomllib
from typing import Any

import tomlkit
import tomlkit.exceptions

from staff.errors import StaffError

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


class PyprojectError(StaffError, ValueError):
    """The staff pyproject.toml is not shaped as expected, or the edit went wrong."""


def _edit_document(document: tomlkit.TOMLDocument, table: str, key: str, item: str | None) -> None:
    """The same edit as `_edit_data`, on tomlkit's document, which keeps comments and layout; a table
    left without keys goes, with its comments."""
    holder: Any = document
    *parents, last = table.split(".")
    try:
        for part in parents:
            holder = holder[part]
        values = holder[last]
        if key not in values:
            raise PyprojectError(f"[{table}] has no {key}")
    except (KeyError, TypeError):
        raise PyprojectError(f"no [{table}] table") from None
    if item is None:
        del values[key]
        if not values:
            del holder[last]
    elif item not in values[key]:
        raise PyprojectError(f"[{table}] {key} does not list {item!r}")
    else:
        values[key].remove(item)


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
    try:
        document = tomlkit.parse(text)
    except tomlkit.exceptions.TOMLKitError as error:
        raise PyprojectError(f"does not parse: {error}") from error
    expected = copy.deepcopy(tomllib.loads(text))
    for table, key, item in EDITS:
        _edit_document(document, table, key, item)
        _edit_data(expected, table, key, item)
    result = tomlkit.dumps(document)
    if tomllib.loads(result) != expected:
        raise PyprojectError("editing pyproject.toml changed more than the staff entries")
    if re.search(rf"\b{STAFF}\b", result):
        raise PyprojectError(f"the student pyproject.toml still mentions {STAFF!r}")
    return result
