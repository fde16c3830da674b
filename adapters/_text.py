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


def bounded(text: str, limit: int, keep_end: bool = False) -> str:
    """`text` cut to about `limit` characters with a note saying how much was left out (its start is
    kept, or with `keep_end` its end)."""
    if len(text) <= limit:
        return text
    note = f"[... {len(text) - limit} more characters not shown ...]"
    return f"{note}\n{text[-limit:]}" if keep_end else f"{text[:limit]}\n{note}"
