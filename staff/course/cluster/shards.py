"""`staff grade --batch DIR --shard K/N`: the K-th of N disjoint shares of a batch.

A submission's shard is a hash of its name (the folder or zip name, without .zip): sha256, read as a
number, modulo N, plus one. It depends on nothing but that name and N, so

- the N shards are disjoint and together hold every submission, whatever machine computes them;
- a shard holds the same submissions on every rerun, and a submission added to DIR later (a late
  upload) joins one shard without moving any other, so shards that run while DIR changes still
  never grade the same submission.

The price is balance: shards are equal only on average (N = 20 over 500 submissions: 25 each, most
between 20 and 30). Sorted order dealt round-robin would balance exactly, but one new name shifts
every later submission to another shard.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import TypeVar

from staff.errors import StaffError

T = TypeVar("T")
SHARD = re.compile(r"(\d+)/(\d+)")


class ShardError(StaffError, ValueError):
    """A --shard value that is not K/N with 1 <= K <= N; the message says what was expected."""


def parse_shard(text: str) -> tuple[int, int]:
    """(K, N) from "K/N", e.g. "2/8" -> (2, 8).

    Raises:
        ShardError: `text` is not two whole numbers K/N with 1 <= K <= N.
    """
    match = SHARD.fullmatch(text.strip())
    if not match:
        raise ShardError(f"--shard {text!r}: expected K/N, e.g. 2/8 for the second of 8 shards")
    k, n = int(match[1]), int(match[2])
    if not 1 <= k <= n:
        raise ShardError(f"--shard {text}: K must be between 1 and N (shards are numbered 1 to {n})"
                         if n else f"--shard {text}: N must be at least 1")
    return k, n


def shard_of(key: str, n: int) -> int:
    """The shard (1 to `n`) of the submission named `key`: sha256 of its UTF-8 name, modulo `n`, plus 1."""
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big") % n + 1


def in_shard(submissions: Sequence[T], k: int, n: int, key=lambda s: s.key) -> list[T]:
    """The submissions of shard `k` of `n`, in their given order."""
    return [s for s in submissions if shard_of(key(s), n) == k]
