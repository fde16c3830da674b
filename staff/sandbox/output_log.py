"""What a worker process printed: read from its output pipe into a log of bounded size."""

from __future__ import annotations

import os
import threading


class BoundedLog:
    """Text a worker printed, kept up to `limit` bytes between two `take`s; the rest is counted."""

    def __init__(self, limit: int = 16 << 10) -> None:
        self.limit, self.kept, self.dropped = limit, bytearray(), 0
        self.lock = threading.Lock()

    def add(self, data: bytes) -> None:
        with self.lock:
            room = self.limit - len(self.kept)
            self.kept += data[:max(room, 0)]
            self.dropped += max(len(data) - max(room, 0), 0)

    def take(self) -> str:
        with self.lock:
            text = self.kept.decode("utf-8", errors="replace")
            if self.dropped:
                text += f"\n[... {self.dropped} more bytes of output not kept ...]"
            self.kept, self.dropped = bytearray(), 0
        return text


def pump(fd: int, log: BoundedLog) -> None:
    """Read `fd` into `log` until it closes (run in a thread of its own)."""
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:
            return
        if not chunk:
            return
        log.add(chunk)
