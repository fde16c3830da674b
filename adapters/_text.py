"""Text from the other side of the boundary made safe to keep: valid Unicode, bounded length.

It imports nothing heavy (no torch, no numpy), so the grader's own process, which never runs PyTorch,
can use it too.
"""

from __future__ import annotations


def clean_text(text: str) -> str:
    """`text` as valid Unicode: lone surrogates (which JSON can carry and UTF-8 cannot) become U+FFFD."""
    if text.isascii():
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")  # pairs kept, lone ones replaced


def bounded(text: str, limit: int, keep_end: bool = False) -> str:
    """`text` cut to about `limit` characters with a note saying how much was left out (its start is
    kept, or with `keep_end` its end)."""
    if len(text) <= limit:
        return text
    note = f"[... {len(text) - limit} more characters not shown ...]"
    return f"{note}\n{text[-limit:]}" if keep_end else f"{text[:limit]}\n{note}"
