"""What is running on this machine, for tests that check a grade left no process behind, and a look
taken in a forked child, for tests that confine a process for good, and a run that leaves a daemon behind."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

# A run that leaves a daemon behind (double fork, new session, deaf to SIGHUP and SIGTERM), then
# either sleeps (to be ended at the time limit) or exits at once with code 7.
LEAVE_A_DAEMON = '''
import os, signal, sys, time
if os.fork() == 0:
    os.setsid()
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if os.fork() == 0:
        os.execv("/bin/sleep", ["{name}", "3600"])
    os._exit(0)
time.sleep(1)
if sys.argv[1] == "sleep":
    time.sleep(3600)
sys.exit(7)
'''


def in_a_child(look: Callable[[], dict]) -> dict:
    """What `look()` returned (a dict of plain data) in a forked child, whatever the child did to itself;
    a look that raised returns {"error": repr of it} besides what it had not returned."""
    reading, writing = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            os.close(reading)
            try:
                found = look()
            except Exception as error:  # noqa: BLE001 - the parent shows what went wrong
                found = {"error": repr(error)}
            os.write(writing, json.dumps(found).encode())
        finally:
            os._exit(0)
    os.close(writing)
    with os.fdopen(reading) as pipe:
        seen = json.loads(pipe.read() or "{}")
    os.waitpid(child, 0)
    return seen


def running_commands() -> list[str]:
    """The command line of every process /proc lists (one string each, arguments joined by spaces)."""
    commands = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                commands.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
            except OSError:
                pass  # the process ended while we looked
    return commands

