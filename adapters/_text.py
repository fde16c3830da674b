"""Text from the other side of the boundary made safe to keep (valid Unicode, bounded length) and to
show (no control characters).

It imports nothing heavy (no torch, no numpy), so the grader's own process, which never runs PyTorch,
can use it too.
"""

from __future__ import annotations

import re


def clean_text(text: str) -> str:
    """`text` as valid Unicode: lone surrogates (which JSON can carry and UTF-8 cannot) become U+FFFD."""
    if text.isascii():
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")  # pairs kept, lone ones replaced


# What a terminal, a spreadsheet or a Markdown viewer obeys instead of showing: C0 controls but tab
# and newline, DEL, C1 controls (U+009B is a CSI and U+009D an OSC where a terminal reads 8-bit
# controls), and the marks, embeddings, overrides and isolates that reorder the text around them.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def shown_text(text: str) -> str:
    """`text` as `clean_text` makes it, with each character of `_CONTROLS` replaced by U+FFFD: safe to
    print to a TA's terminal or write into results.json, grades.csv or summary.md. (Values the tests
    compare keep their characters; only text shown to people goes through this.)"""
    return _CONTROLS.sub("\ufffd", clean_text(text))


_PATH_CHAR = re.compile(r"[\w.~/-]")  # what a path is made of, as the grader's scrub of machine paths reads one


def _path_cut_in_two(text: str, cut: int, direction: int) -> int:
    """Where the piece of `text` kept by a cut at `cut` should end (`direction` 1: the piece before it
    is kept) or start (-1: the piece after it): short of the run of path characters the cut falls
    inside, if that run holds a "/". A path cut in two would show part of a machine's folder that the
    grader, which removes whole paths, no longer recognizes."""
    if not 0 < cut < len(text) or not (_PATH_CHAR.match(text, cut - 1) and _PATH_CHAR.match(text, cut)):
        return cut
    end = cut
    while 0 < end < len(text) and _PATH_CHAR.match(text, end - 1 if direction == 1 else end):
        end -= direction
    piece = text[end:cut] if direction == 1 else text[cut:end]
    return end if "/" in piece else cut


def head(text: str, limit: int) -> str:
    """The first `limit` characters of `text`, less a path the cut would leave in part."""
    return text[:_path_cut_in_two(text, limit, 1)]


def tail(text: str, limit: int) -> str:
    """The last `limit` characters of `text`, less a path the cut would leave in part."""
    return text[_path_cut_in_two(text, max(len(text) - limit, 0), -1):]


def bounded(text: str, limit: int, keep_end: bool = False) -> str:
    """`text` cut to about `limit` characters with a note saying how much was left out (its start is
    kept, or with `keep_end` its end); a path the cut falls inside is left out whole."""
    if len(text) <= limit:
        return text
    note = f"[... {len(text) - limit} more characters not shown ...]"
    return f"{note}\n{tail(text, limit)}" if keep_end else f"{head(text, limit)}\n{note}"
