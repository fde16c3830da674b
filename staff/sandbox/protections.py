"""The protections that confine a grade's worker, declared once: each is on unless a staff switch turns it
off (`staff grade --no-namespaces` and its kin, the fields of `Settings` named after these).

The grader writes one `Protections` into the worker's configuration (`WorkerConfig.protections`), and the
worker reads exactly these names from it (`config["protections"]`), with no default of its own: a name
the grader did not write is an error there, not a protection silently on or off.
"""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class Protections:
    namespaces: bool = True  # new PID, network and IPC namespaces (and, as root, a mount namespace)
    landlock: bool = True  # file access limited to the grade's folders and what Python needs
    seccomp: bool = True  # the reviewed allow-list of system calls
    tmpfs: bool = True  # as root: a private /tmp and the disk quota as tmpfs mounts

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(spec.name for spec in fields(cls))
