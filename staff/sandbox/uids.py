"""Which uid the worker's user gets: one this container can own files as, that no account uses.

Outside a user namespace every uid exists (`/proc/self/uid_map` reads `0 0 4294967295`) and the
worker gets a random uid in [SANDBOX_UID_BASE, SANDBOX_UID_BASE + 2**24), far above any account.
Under a rootless or userns-remapped Docker the map holds only a range of ids (often 65,536 wide,
`0 100000 65536`): a uid outside it cannot own a file (chown fails with EINVAL), so the worker's
uid is taken from the mapped ids instead, above 100,000 where the map reaches that far, else from
the upper half of the widest mapped range, never 0 and never an id of /etc/passwd or /etc/group.
Where no such id is left, there is no separate user, and the reason says why.
"""

from __future__ import annotations

import grp
import pwd
import secrets
from dataclasses import dataclass
from pathlib import Path

SANDBOX_UID_BASE = 1_800_000_000  # the worker uids' start where every uid is mapped
SANDBOX_UID_COUNT = 1 << 24  # how many uids a grade's user is drawn from there
HIGH_FLOOR = 100_000  # above the accounts of any ordinary system
LOW_FLOOR = 1_000  # below: system accounts (Debian and Ubuntu's SYS_UID_MAX is 999)
MIN_CHOICES = 1_000  # fewer free ids than this: the draw would collide too often to be worth it
OVERFLOW_IDS = {65534, 65535, 4294967294, 4294967295}  # nobody/nogroup, the 16-bit -1, (uid_t)-1 and -2
UID_MAP, GID_MAP = Path("/proc/self/uid_map"), Path("/proc/self/gid_map")
FULL_MAP = "0 0 4294967295"  # what a kernel without user namespaces behaves like


def mapped_ranges(text: str) -> list[range]:
    """The ids inside this namespace that a `uid_map`/`gid_map` text maps ("inside outside count" lines).

    Raises:
        ValueError: a line is not three numbers.
    """
    ranges = []
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = line.split()
        if len(fields) != 3:
            raise ValueError(f"not an id map line (inside outside count): {line!r}")
        inside, _, count = map(int, fields)
        if count > 0:
            ranges.append(range(inside, inside + count))
    return ranges


def _overlap(ones: list[range], others: list[range]) -> list[range]:
    both = (range(max(a.start, b.start), min(a.stop, b.stop)) for a in ones for b in others)
    return [r for r in both if len(r) > 0]


@dataclass(frozen=True)
class WorkerUids:
    """The ids a grade's worker may be given (`window`, less `taken`), or why there are none (`reason`)."""

    window: range
    taken: frozenset[int]
    reason: str | None = None

    def __contains__(self, uid: int) -> bool:
        return uid in self.window and uid not in self.taken

    def pick(self) -> int | None:
        """A random free id of the window (a new one, most likely, for every grade); None where there is none."""
        if self.reason is not None:
            return None
        for _ in range(64):
            uid = self.window[secrets.randbelow(len(self.window))]
            if uid not in self.taken:
                return uid
        free = [uid for uid in self.window if uid not in self.taken]  # only a small, crowded window gets here
        return secrets.choice(free) if free else None


def choose_window(uid_map: str, gid_map: str, taken: frozenset[int]) -> WorkerUids:
    """The worker's ids for a container whose maps read `uid_map` and `gid_map`, given the ids accounts
    and groups already use (the worker's gid is its uid, so both maps must hold it)."""
    unusable = frozenset(taken | OVERFLOW_IDS | {0})
    ranges = _overlap(mapped_ranges(uid_map), mapped_ranges(gid_map))
    usual = range(SANDBOX_UID_BASE, SANDBOX_UID_BASE + SANDBOX_UID_COUNT)
    if any(r.start <= usual.start and usual.stop <= r.stop for r in ranges):
        return WorkerUids(usual, unusable)
    for floor in (HIGH_FLOOR, LOW_FLOOR):
        above = [range(max(r.start, floor), r.stop) for r in ranges if r.stop > floor]
        if not above:
            continue
        widest = max(above, key=len)
        # The upper half: accounts are numbered upwards from the floor, so a new one lands low.
        window = widest[len(widest) // 2 :] if floor == LOW_FLOOR else widest[-SANDBOX_UID_COUNT:]
        free = len(window) - sum(1 for uid in unusable if uid in window)
        if free >= MIN_CHOICES:
            return WorkerUids(window, unusable)
    shown = ", ".join(f"{r.start}-{r.stop - 1}" for r in ranges) or "none"
    return WorkerUids(range(0), unusable,
                      f"the container maps too few user ids for a user of its own (mapped: {shown}; at least "
                      f"{MIN_CHOICES} free ids at or above {LOW_FLOOR} are needed)")


def account_ids() -> frozenset[int]:
    """Every uid of /etc/passwd and gid of /etc/group (and whatever else NSS lists)."""
    return frozenset({entry.pw_uid for entry in pwd.getpwall()} | {entry.gr_gid for entry in grp.getgrall()})


def _read_map(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:  # no user namespaces in this kernel: every id is itself
        return FULL_MAP


def worker_uids() -> WorkerUids:
    """The ids a worker may get in this container."""
    return choose_window(_read_map(UID_MAP), _read_map(GID_MAP), account_ids())
