"""Exceptions across the adapter boundary: an exception raised on the other side travels as data
(`RemoteError`: its class name, nearest builtin class, message and traceback text) and becomes an
exception of a builtin class on this side, never one that could stop this process.

What is decoded is bounded: every string is valid Unicode (a lone surrogate is replaced), and the
message and traceback are cut to `MAX_MESSAGE_CHARS` and `MAX_TRACEBACK_CHARS` with a note.
"""

from __future__ import annotations

import builtins
import traceback
from dataclasses import dataclass

from adapters._text import bounded, clean_text

MAX_MESSAGE_CHARS = 4000  # of an exception's message from the other side
MAX_TRACEBACK_CHARS = 8000  # of its traceback text (the end is kept: the innermost frames)


class StudentError(Exception):
    """An exception of a class that is not builtin, raised by code on the other side of the boundary."""


@dataclass
class RemoteError:
    """An exception raised on the other side of the boundary, as data."""

    type_name: str  # the exception's own class, e.g. "CheckpointError"
    builtin: str  # its nearest builtin exception class, e.g. "ValueError"
    message: str
    traceback: str = ""


def bounded_error(error: RemoteError) -> RemoteError:
    """`error` with valid, bounded text (see the module's docstring)."""
    return RemoteError(bounded(clean_text(error.type_name), 200), bounded(clean_text(error.builtin), 200),
                       bounded(clean_text(error.message), MAX_MESSAGE_CHARS),
                       bounded(clean_text(error.traceback), MAX_TRACEBACK_CHARS, keep_end=True))


def as_exception(error: RemoteError) -> Exception:
    """An exception to raise or return on this side: the builtin class `error` derives from, with its
    message (prefixed by its own class name when that differs), and its traceback text as a note.
    Classes that are not Exceptions (SystemExit, KeyboardInterrupt) become a StudentError, so code on
    the other side can never stop this side's process by raising one. Its text is bounded first."""
    error = bounded_error(error)
    kind = getattr(builtins, error.builtin, None)
    message = error.message if error.type_name == error.builtin else f"{error.type_name}: {error.message}"
    if not (isinstance(kind, type) and issubclass(kind, Exception)):
        kind, message = StudentError, f"{error.type_name}: {error.message}"
    try:
        exception = kind(message)
    except TypeError:  # a builtin needing more arguments (UnicodeDecodeError, ...)
        exception = StudentError(f"{error.type_name}: {error.message}")
    if error.traceback:
        exception.add_note(error.traceback.rstrip())
    return exception


def describe_error(error: BaseException, with_traceback: bool = True) -> RemoteError:
    """`error` as data: its class, the nearest builtin class it derives from, message and traceback."""
    builtin = next(
        (k.__name__ for k in type(error).__mro__ if getattr(builtins, k.__name__, None) is k and k is not object),
        "BaseException",
    )
    try:
        message = str(error)
    except Exception:  # noqa: BLE001 - a __str__ that raises still leaves the type name
        message = "<the exception's message could not be read>"
    text = "".join(traceback.format_exception(error)) if with_traceback else ""
    return RemoteError(type(error).__qualname__, builtin, message, text)
