"""What a failed graded test says, built from its exception (the grader runs pytest with --tb=no).

For a public test, the lines of the test files it failed in; then the message (input, expected,
got, section) and the traceback of the student's own code. A hidden test never shows its source;
a test whose visibility is "hidden" also keeps its expected values to itself. Every output is cut
to `MAX_OUTPUT_CHARS` characters, with a note that says so.
"""

from __future__ import annotations

import re
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.grading import GradedTest

MAX_OUTPUT_CHARS = 4000


def truncated(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    """`text` cut to `limit` characters, ending with a note when anything was cut."""
    if len(text) <= limit:
        return text
    note = f"\n[... output cut here: {len(text) - limit} more characters ...]"
    return text[:max(limit - len(note), 0)] + note


_EXPECTED_LINE = re.compile(r"^([ \t]*expected:).*$", re.MULTILINE)  # linear: no class that spans lines


def failure_text(error: BaseException, test: GradedTest, roots: list[Path]) -> str:
    """What a failed test says: for a public test, the lines of the test files it failed in; then the
    exception's type and message (for a check, the input, expected, got and section) and any note on
    it (the traceback of the student's own code, from the worker). A hidden test never shows its
    source, and one whose visibility is "hidden" keeps its expected values to itself too."""
    text = ""
    if not test.hidden:
        frames = [f for f in traceback.extract_tb(error.__traceback__)
                  if any(root in Path(f.filename).parents for root in roots)]
        text = "".join(traceback.format_list(frames))
    text += "".join(traceback.format_exception_only(type(error), error)).rstrip()
    text = text[:2 * MAX_OUTPUT_CHARS]  # the output keeps less; the rest costs nothing below
    if test.visibility == "hidden":
        text = _EXPECTED_LINE.sub(r"\1 (not shown for this test)", text)
    return text
