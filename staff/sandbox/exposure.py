"""Whether a grade would run student code with the grading user's files or processes open to it,
decided from the settings and this process's privileges before any student code runs.

The worker is kept from what belongs to whoever grades by a user of its own (as root), and, where it
runs as the grader's own uid, by Landlock (files, signals) and a PID namespace (processes: current
Ubuntu releases restrict the user namespaces an ordinary user needs for one, so a TA's laptop often has
none); a GPU grade's worker has them too (each child sets its Landlock before student code,
worker.confine_child). A grade without them is refused unless the TA allows it knowingly (`--allow-open-grader`).
"""

from __future__ import annotations

import functools
import os

from staff.errors import StaffError
from staff.sandbox.settings import Settings


@functools.cache
def no_pid_namespace() -> str | None:
    """Why a worker started by this process would get no PID namespace (None where it would): a child
    process makes the namespaces as the worker's launcher does, and says how it went. (A new process,
    not a fork: a batch asks from one of its grading threads.)"""
    import subprocess
    import sys

    from staff.sandbox import confine

    probe = "import sys; sys.path.insert(0, sys.argv[1]); import confine; print(confine.new_namespaces()['pid'])"
    try:
        done = subprocess.run([sys.executable, "-I", "-c", probe, os.path.dirname(confine.__file__)],
                              capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as error:
        return f"the probe could not run: {error}"
    status = done.stdout.strip()
    if status == confine.ON:
        return None
    return status.removeprefix("off: ") or f"the probe said nothing ({done.stderr[-200:]})"


def open_to_the_worker(settings: Settings, euid: int | None = None, landlock_abi: int | None = None,
                       no_free_uid: str | None = "", no_pid: str | None = "") -> list[str]:
    """What of the grading user's the worker would reach, each with why; empty when nothing.
    `euid`, `landlock_abi`, `no_free_uid` (why this container has no uid for a worker; None where
    it has one) and `no_pid` (why the worker would get no PID namespace; None where it would) default
    to this process's, the kernel's and the container's."""
    if settings.in_process:
        return []  # no worker: --in-process says itself that it is not safe
    euid = os.geteuid() if euid is None else euid
    if euid == 0 and settings.separate_user:
        if no_free_uid == "":
            from staff.sandbox.uids import worker_uids

            no_free_uid = worker_uids().reason
        if no_free_uid is None:
            return []  # a uid of its own; as root the worker also has the checkout and the homes hidden (confine.hide)
    if landlock_abi is None:
        from staff.sandbox.landlock_rules import landlock_abi as probe

        landlock_abi = probe()
    who = "the grader is not root" if euid != 0 else "--no-separate-user" if not settings.separate_user else \
        f"no uid is free for it: {no_free_uid}"
    why_landlock = "--no-landlock" if not settings.landlock else None if landlock_abi else "this kernel has no Landlock"
    opened = []
    if no_pid == "":
        no_pid = "--no-namespaces" if not settings.namespaces else no_pid_namespace()
    if no_pid is not None:
        signals = "" if landlock_abi >= 6 and settings.landlock else \
            f", and signals them by pid (no Landlock signal scope: ABI {landlock_abi} < 6 or --no-landlock)"
        opened.append(f"your other processes (the grader's, a batch neighbour's, your shell's): the worker runs as "
                      f"your own uid ({who}) with no PID namespace ({no_pid}), so it sees them in /proc, their "
                      f"command lines included{signals}")
    if why_landlock is not None:
        opened.append(f"your files (the checkout with the reference solution, the hidden and trusted tests and "
                      f"their conftest files, your home folder and shell start-up files): the worker runs as your "
                      f"own uid ({who}), with no Landlock ({why_landlock}) and no mount namespace to hide them "
                      f"({who})")
    return opened


def refusal(settings: Settings, euid: int | None = None, landlock_abi: int | None = None,
            no_free_uid: str | None = "", no_pid: str | None = "") -> str | None:
    """Why this grade must not run, and what to do; None where it may (nothing is open, or the TA
    allowed it with --allow-open-grader). The arguments as `open_to_the_worker`'s."""
    opened = open_to_the_worker(settings, euid, landlock_abi, no_free_uid, no_pid)
    if not opened or settings.allow_open_grader:
        return None
    return ("refusing to run student code with the grading user's own things open to it: "
            + "; ".join(opened) + ". Grade as root (sudo), where the worker gets a user of its own and a mount "
            "namespace that also hides the checkout and the home folders; or pass --allow-open-grader "
            "if you accept that a hostile submission may read or change those files and signal those processes "
            "(grade on a machine or account that holds nothing else)")


class OpenGrader(StaffError, ValueError):
    """A grade refused because its worker would reach the grading user's files or processes."""


def check(settings: Settings) -> None:
    """Raises OpenGrader (with `refusal`'s message) where the grade must not run."""
    why = refusal(settings)
    if why is not None:
        raise OpenGrader(why)
