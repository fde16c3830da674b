"""Length-prefixed frames over pipes: the wire between the grader and its worker process.

A frame is an 8-byte prefix (4-byte magic, 4-byte big-endian header length), a UTF-8 JSON header
(an object whose "blobs" entry lists the sizes of the binary blobs), then the blobs back to back.
The reader enforces a deadline and size limits, so a worker that stalls or floods the pipe costs a
bounded time and memory. This file is copied into the worker's folder and must import only the
standard library.
"""

from __future__ import annotations

import json
import os
import select
import struct
import sys
import time
from typing import Protocol

MAGIC = b"CS36"
MAX_HEADER_BYTES = 64 << 20
MAX_BLOB_BYTES = 1 << 30  # all blobs of one frame together
# JSON lists and objects in one header, counted on its text before any is built: a reply's value may
# hold the codec's 300,000 (adapters/_codec.py, its header a string here, its brackets counted too),
# and the rest of a frame holds a few. 8 MiB of lists nested 60 deep built 4.2 million and cost the
# test process 751 MiB.
MAX_HEADER_CONTAINERS = 400_000
MAX_BLOBS = 300_000  # blobs one frame may list: one per tensor, array or bytes of the value at most


class Deadline(Protocol):
    """A deadline that may move (staff.sandbox.call_clock.CallClock): seconds left, 0 or less once passed."""

    def left(self) -> float: ...


class FrameError(Exception):
    """The other side sent something that is not a frame, or too much, or closed the pipe."""


class FrameTimeout(FrameError):
    """No whole frame arrived before the deadline."""


class PipeClosed(FrameError):
    """The other side closed its end of the pipe (it ended) before a whole frame arrived."""


def _left(deadline: float | Deadline) -> float:
    """Seconds until `deadline`: a time.monotonic() value, or a clock that says (`Deadline.left`)."""
    return deadline - time.monotonic() if isinstance(deadline, (int, float)) else deadline.left()


def write_frame(fd: int, header: dict, blobs: list[bytes] = (), deadline: float | Deadline | None = None) -> None:
    """Send one frame on the pipe `fd`. With a `deadline` (a time.monotonic() value, or a `Deadline`) the
    pipe may be non-blocking: the writer waits for room until then.

    Raises:
        FrameTimeout: the deadline passed before the frame was all written.
    """
    text = json.dumps({**header, "blobs": [len(b) for b in blobs]}, allow_nan=True).encode("utf-8")
    view = memoryview(b"".join([MAGIC, struct.pack(">I", len(text)), text, *blobs]))
    while view:
        if deadline is not None:
            left = _left(deadline)
            if left <= 0:
                raise FrameTimeout("timed out")
            if not select.select([], [fd], [], left)[1]:
                continue
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            continue


def _read_exactly(fd: int, size: int, deadline: float | Deadline | None) -> bytearray:
    """`size` bytes from `fd`, read straight into one buffer (no chunks joined: a blob of N bytes
    costs N bytes here, not 2N)."""
    buffer = bytearray(size)
    view, done = memoryview(buffer), 0
    while done < size:
        if deadline is not None:
            left = _left(deadline)
            if left <= 0:
                raise FrameTimeout("timed out")
            if not select.select([fd], [], [], left)[0]:
                continue  # the deadline, asked again, says whether it has passed
        got = os.readv(fd, [view[done:done + (1 << 20)]])
        if not got:
            raise PipeClosed("the pipe was closed mid-frame" if done else "the pipe was closed")
        done += got
    return buffer


def read_frame(fd: int, deadline: float | Deadline | None = None, max_header: int = MAX_HEADER_BYTES,
               max_blobs: int = MAX_BLOB_BYTES) -> tuple[dict, list[bytearray]]:
    """One frame from the pipe `fd`: (header, blobs). `deadline` is as write_frame's; the
    header may hold `max_header` bytes and MAX_HEADER_CONTAINERS lists and objects, the blobs
    `max_blobs` bytes together. Each blob is a bytearray
    of its own, which a decoder may take over without copying it.

    Raises:
        FrameTimeout: the deadline passed first.
        FrameError: the pipe closed, or the bytes are not a well-formed frame within the limits.
    """
    prefix = _read_exactly(fd, 8, deadline)
    if prefix[:4] != MAGIC:
        raise FrameError(f"not a frame (starts with {bytes(prefix[:4])!r})")
    (length,) = struct.unpack(">I", prefix[4:])
    if length > max_header:
        raise FrameError(f"a frame header of {length} bytes is over the limit of {max_header}")
    raw = _read_exactly(fd, length, deadline)
    containers = raw.count(b"[") + raw.count(b"{")  # a bracket inside a string counts too, erring toward refusing
    if containers > MAX_HEADER_CONTAINERS:
        raise FrameError(f"a frame header of {containers:,} lists and objects is over the limit of "
                         f"{MAX_HEADER_CONTAINERS:,}")
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise FrameError(f"a frame header that is not JSON: {error}") from error
    sizes = header.get("blobs") if isinstance(header, dict) else None
    if isinstance(sizes, list) and len(sizes) > MAX_BLOBS:
        raise FrameError(f"a frame of {len(sizes):,} blobs is over the limit of {MAX_BLOBS:,}")
    if not isinstance(sizes, list) or not all(type(s) is int and s >= 0 for s in sizes):
        raise FrameError("a frame header without a list of blob sizes")
    if sum(sizes) > max_blobs:
        raise FrameError(f"a frame of {sum(sizes)} bytes is over the limit of {max_blobs}")
    return header, [_read_exactly(fd, size, deadline) for size in sizes]


def unread_bytes(fd: int) -> int:
    """Bytes written to the pipe `fd` (either end) that nobody has read yet (0 when unknown)."""
    import fcntl
    import termios

    count = bytearray(4)
    try:
        fcntl.ioctl(fd, termios.FIONREAD, count)
    except OSError:
        return 0
    return int.from_bytes(count, sys.byteorder)
