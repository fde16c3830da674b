"""The names one red-team run plants its objects at, unique to the run, and how the cases get them.

`staff.redteam.planted` plants the reference's sources and listens on unix sockets while a batch is
graded; the cases that look for them (`read-planted-sources`, `keys-carry-sources`,
`connect-to-a-socket-file`) must look exactly there. Fixed machine-wide names made two runs on one
machine collide (the second's bind failed, the first's clean-up removed the second's socket), so
each run draws a token and every name carries it. A case's sources write the names with the
placeholders `{planted_token}` (in a name) and `{planted_key}` (the System V key, as text for
`int(..., 0)`); `substitute` fills them in the built copy only, never in the tree, and `stale`
finds any planted name in a built copy that is not this run's, so that a case cannot quietly look
elsewhere and "pass".
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from pathlib import Path

PLACEHOLDERS = ("{planted_token}", "{planted_key}")
_PLACEHOLDER = re.compile(r"\{planted_\w+\}")
_NAME = re.compile(r"cs336-planted[\w.-]*")  # any planted name a built case mentions
_FORMER_KEY = re.compile(r"0x0*c5336\b", re.IGNORECASE)  # the fixed System V key of old: stale if seen


@dataclass(frozen=True)
class PlantedNames:
    """Where one run plants: `token` is 6 lowercase hex digits (24 bits, drawn per run)."""

    token: str

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[0-9a-f]{6}", self.token):
            raise ValueError(f"a planted token is 6 lowercase hex digits, got {self.token!r}")

    @property
    def key(self) -> int:
        """The System V key (never IPC_PRIVATE, always a positive 32-bit key_t)."""
        return 0x0C000000 | int(self.token, 16)

    @property
    def files(self) -> tuple[Path, Path]:
        return (Path(f"/tmp/cs336-planted-sources-{self.token}.json"),
                Path(f"/dev/shm/cs336-planted-sources-{self.token}.json"))

    @property
    def key_name(self) -> bytes:
        """The description of the kernel key (a "user" key) that holds the sources."""
        return f"cs336-planted-sources-{self.token}".encode()

    @property
    def sockets(self) -> tuple[str, str]:
        """A socket file and an abstract unix socket (leading NUL)."""
        return (f"/tmp/cs336-planted-{self.token}.sock", f"\0cs336-planted-{self.token}")

    def base_names(self) -> set[str]:
        """Every planted name as `_NAME` finds it in a case's text."""
        return {p.name for p in self.files} | {self.key_name.decode(), Path(self.sockets[0]).name,
                                               self.sockets[1][1:]}

    def substitute(self, text: str) -> str:
        return text.replace("{planted_token}", self.token).replace("{planted_key}", f"{self.key:#x}")


def new_names() -> PlantedNames:
    """Names no other run on the machine is using (with 2^24 tokens, a clash is one in millions; a
    name that is taken anyway makes planting fail, named)."""
    return PlantedNames(secrets.token_hex(3))


def uses_placeholders(text: str) -> bool:
    return bool(_PLACEHOLDER.search(text))


def stale(text: str, names: PlantedNames) -> list[str]:
    """What in a built case's text refers to planted objects but not to this run's: a placeholder
    left unfilled, a planted name with another token (or none), the fixed System V key of old."""
    found = [f"placeholder {m} left unfilled" for m in _PLACEHOLDER.findall(text)]
    found += [f"planted name {m!r} is not this run's ({names.token})" for m in _NAME.findall(text)
              if m not in names.base_names()]
    found += [f"the former fixed System V key {m}" for m in _FORMER_KEY.findall(text)]
    return found
