"""What a grade shows: no path of the grading machine, no terminal escape, and every test's output
within its share of results.json.
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import NamedTuple

from adapters._text import shown_text
from staff.grading.selection import REPO_ROOT
from staff.sandbox.layout import Workspace
from tests.failure_output import truncated
from tests.grading import GradedTest

INTAKE_CHARS = 2000  # of the lines saying which files were graded (names come from the upload)
# Every test's output together, as results.json holds them (escaped): the file stays well under
# 1 MB whatever the submission prints or raises.
OUTPUT_BUDGET_BYTES = 600_000


class MachinePath(NamedTuple):
    """A folder of the grading machine, and what results.json shows instead."""

    path: str
    shown: str
    anywhere: bool = False  # a name drawn at random for this grade: replaced wherever it stands, in any word


def machine_paths(workspace: Workspace) -> list[MachinePath]:
    """The grading machine's folders, most specific first: nothing in results.json says where the
    grader keeps its files or its Python. The grade's scratch folder (and the code folder in it) has a
    random name, so no other path holds it by chance: it is replaced even glued to a word."""
    import site

    python = [sys.prefix, sys.base_prefix, *site.getsitepackages()]
    paths = [MachinePath(f"{workspace.code}{os.sep}", "", True), MachinePath(str(workspace.scratch),
                                                                             "<grading folder>", True),
             *(MachinePath(folder, "<python>") for folder in python), MachinePath(str(REPO_ROOT), "<grader>"),
             MachinePath(os.path.expanduser("~"), "<home>")]
    unique = {path.path: path for path in reversed(paths) if len(path.path) > 1}  # the first of each path wins
    return sorted(unique.values(), key=lambda path: -len(path.path))


_BEFORE_PATH = r"[\w.~/-]"  # a path preceded by one of these is the end of another path
_AFTER_PATH = r"[\w~-]|\.\w"  # and followed by one of these, the start of another name
# ... unless the character before it is the end of an escape that stands for a separator: a NUL or a
# newline a submission read from /proc (a command line's NUL-separated words) and that reached the
# grader as "\x00", "\u0000" or "\n" (shown_text escapes them in the worker)
_ESCAPED_BEFORE = (r"\\x[0-9a-fA-F]{2}", r"\\u[0-9a-fA-F]{4}", r"\\[nrt0]")


def scrub(text: str, paths: list[MachinePath] | list[tuple[str, str]]) -> str:
    """`text` with each of `paths` (from `machine_paths`; a (path, shown) pair is one not `anywhere`)
    replaced where it stands as a path of its own (home `/root` is not replaced inside
    `/autograder/root/x` nor in `/rootfs`), or wherever it stands if `anywhere`, as `shown_text` makes
    it (a terminal escape or a bidi override from the submission reaches no TA's screen). A courtesy to
    honest output, not a secret: a submission can print a path it read in any encoding."""
    for path, shown, *anywhere in paths:
        if anywhere and anywhere[0]:
            text = text.replace(path, shown)
            continue
        after = "" if path.endswith(os.sep) else f"(?!{_AFTER_PATH})"
        before = "|".join([f"(?<!{_BEFORE_PATH})", *(f"(?<={escape})" for escape in _ESCAPED_BEFORE)])
        text = re.sub(f"(?:{before}){re.escape(path)}{after}", lambda _: shown, text)
    return shown_text(text)


def scrubbed(data: object, paths: list[MachinePath]) -> object:
    """`data` (JSON-like) with every string in it, keys included, scrubbed and cut to INTAKE_CHARS."""
    if isinstance(data, str):
        return truncated(scrub(data, paths), INTAKE_CHARS)
    if isinstance(data, dict):
        return {scrubbed(key, paths): scrubbed(value, paths) for key, value in data.items()}
    if isinstance(data, list):
        return [scrubbed(item, paths) for item in data]
    return data


def _json_bytes(text: str) -> int:
    return len(json.dumps(text))  # as results.json holds it: a non-ASCII character takes 6 bytes


def share_output(tests: list[GradedTest], budget: int = OUTPUT_BUDGET_BYTES) -> None:
    """Cut the tests' outputs so that together they take about `budget` bytes of results.json at most:
    shortest first, each keeps what it has up to an equal share of what is left, so short outputs stay
    whole and what they leave goes to the long ones."""
    costs = {id(t): _json_bytes(t.output) for t in tests}
    if sum(costs.values()) <= budget:
        return
    left, waiting = budget, sorted(tests, key=lambda t: costs[id(t)])
    for i, test in enumerate(waiting):
        share, cost = left // (len(waiting) - i), costs[id(test)]
        if cost > share:
            test.output = truncated(test.output, max(len(test.output) * share // cost, 200))
            cost = _json_bytes(test.output)
        left -= cost
