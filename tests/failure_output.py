"""What a failed graded test says, built from its exception (the grader runs pytest with --tb=no).

For a public test, the lines of the test files it failed in; then the message (input, expected,
got, section) and the traceback of the student's own code. A hidden test never shows its source;
a test whose visibility is "hidden" also keeps its expected values to itself. Every output is cut
to `MAX_OUTPUT_CHARS` characters, with a note that says so.
"""

from __future__ import annotations

import itertools
import math
import re
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

from adapters._text import head

if TYPE_CHECKING:
    from tests.grading import GradedTest

MAX_OUTPUT_CHARS = 4000


def truncated(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    """`text` cut to `limit` characters at most, ending with a note when anything was cut; a path the
    cut falls inside is left out whole (the grader removes its machine's paths, whole ones)."""
    if len(text) <= limit:
        return text
    note = f"\n[... output cut here: {len(text) - limit} more characters ...]"
    return head(text, max(limit - len(note), 0)) + note


MAX_SHOWN_CHARS = 2 * MAX_OUTPUT_CHARS  # one value in a message: what failure_text keeps of a whole output
_PROBE_VALUES = 10_000  # values a small value holds at most: its repr is then exact
_PROBE_DEPTH = 50
_PROBE_CHARS = 100_000
_LONG_INT_BITS = 10_000  # repr of an int of more bits is slow, and past about 14,000 raises


def _elements(value: object) -> int | None:
    """How many elements `value` holds if it is an array (a torch tensor or a numpy array: anything
    with an int tuple `shape` and a `dtype`), else None. Their reprs summarize only dimensions longer
    than six, so an array of many short dimensions prints every element, however few bytes hold it."""
    shape = getattr(value, "shape", None)
    if getattr(value, "dtype", None) is None or not isinstance(shape, tuple):
        return None
    return math.prod(size for size in shape if isinstance(size, int))


def _small(value: object) -> bool:
    """Whether `value` holds at most _PROBE_VALUES values (an array's elements each count),
    _PROBE_DEPTH levels and _PROBE_CHARS characters of strings (bytes), ints of at most _LONG_INT_BITS
    bits: then repr(value) is cheap. Counted without recursion, stopping at the first bound crossed."""
    pending, count, chars = [(value, 0)], 0, 0
    while pending:
        item, depth = pending.pop()
        count += _elements(item) or 1
        if count > _PROBE_VALUES or depth > _PROBE_DEPTH:
            return False
        if isinstance(item, (str, bytes, bytearray)):
            chars += len(item)
            if chars > _PROBE_CHARS:
                return False
        elif isinstance(item, int) and item.bit_length() > _LONG_INT_BITS:
            return False
        elif isinstance(item, dict):
            pending += [(part, depth + 1) for part in itertools.islice(
                itertools.chain.from_iterable(item.items()), _PROBE_VALUES + 1)]
        elif isinstance(item, (list, tuple, set, frozenset)):
            pending += [(part, depth + 1) for part in itertools.islice(item, _PROBE_VALUES + 1)]
    return True


def _large_repr(value: object, budget: int, depth: int = 0) -> str:
    """An outline of `value` of about `budget` characters at most: containers show their first items
    and "...", strings their start, ints past _LONG_INT_BITS their size, arrays past _PROBE_VALUES
    elements their type, shape and dtype; 20 levels at most."""
    if budget <= 0 or depth > 20:
        return "..."
    if isinstance(value, (str, bytes, bytearray)):
        text = repr(value[:budget])
        return text if len(value) <= budget else f"{text}... ({len(value):,} in all)"
    if isinstance(value, int) and value.bit_length() > _LONG_INT_BITS:
        return f"<an int of {value.bit_length():,} bits>"
    if (elements := _elements(value)) is not None and elements > _PROBE_VALUES:
        return f"<{type(value).__name__} of shape {tuple(value.shape)} and dtype {value.dtype}: {elements:,} elements>"
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        items = value.items() if isinstance(value, dict) else value
        opening, closing = {dict: ("{", "}"), list: ("[", "]"), tuple: ("(", ")")}.get(
            next(t for t in (dict, list, tuple, set, frozenset) if isinstance(value, t)), ("{", "}"))
        if type(value) not in (dict, list, tuple):
            opening, closing = f"{type(value).__name__}({opening}", f"{closing})"
        parts, used = [], len(opening) + len(closing)
        for item in items:
            if used >= budget:
                parts.append(f"... ({len(value):,} in all)")
                break
            left = budget - used
            part = (f"{_large_repr(item[0], left, depth + 1)}: {_large_repr(item[1], left, depth + 1)}"
                    if isinstance(value, dict) else _large_repr(item, left, depth + 1))
            parts.append(part)
            used += len(part) + 2
        return opening + ", ".join(parts) + closing
    return repr(value)[:budget]


def shown(value: object, limit: int = MAX_SHOWN_CHARS) -> str:
    """repr(value) for a failure message, bounded in size and time whatever `value` holds (a value
    loaded from a student's file, or a result of their code): exact for a value of at most
    _PROBE_VALUES values, else an outline; cut to `limit` characters either way."""
    return truncated(repr(value) if _small(value) else _large_repr(value, limit), limit)


_EXPECTED_LINE = re.compile(r"^([ \t]*expected:).*$", re.MULTILINE)  # linear: no class that spans lines


SEE_LINE = "\n  see:      "  # how a check's message (tests/checks.py's `explain`) names its section


def failure_text(error: BaseException, test: GradedTest, roots: list[Path], handout: str = "") -> str:
    """What a failed test says: for a public test, the lines of the test files it failed in; then the
    exception's type and message (for a check, the input, expected, got and section) and any note on
    it (the traceback of the student's own code, from the worker). A failure that names no section
    (an error raised in the student's code or by PyTorch from it, an exception expected and not
    raised) ends with the problem's `handout` page. A hidden test never shows its source, and one
    whose visibility is "hidden" keeps its expected values to itself too."""
    text = ""
    if not test.hidden:
        frames = [f for f in traceback.extract_tb(error.__traceback__)
                  if any(root in Path(f.filename).parents for root in roots)]
        text = "".join(traceback.format_list(frames))
    text += "".join(traceback.format_exception_only(type(error), error)).rstrip()
    text = head(text, 2 * MAX_OUTPUT_CHARS)  # the output keeps less; the rest costs nothing below
    if test.visibility == "hidden":
        text = _EXPECTED_LINE.sub(r"\1 (not shown for this test)", text)
    if handout and SEE_LINE not in text:
        text += f"{SEE_LINE}{handout} (Problem {test.problem}, the problem this test checks)"
    return text
