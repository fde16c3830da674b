"""Running the release's own tools (uv, pytest, git) with visible progress and clean environments."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from staff.errors import StaffError

# Variables that would point uv or Python at the staff tree's environment instead of the release's.
_FOREIGN = ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT", "UV_PROJECT", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP",
            "CONDA_PREFIX", "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "UV_NO_SYNC", "UV_FROZEN", "UV_LOCKED")


class ReleaseError(StaffError, RuntimeError):
    """The release cannot be built or failed a check; the message says what and where."""


def clean_env() -> dict[str, str]:
    """This process's environment without what ties it to the staff tree's virtual environment."""
    env = {k: v for k, v in os.environ.items() if k not in _FOREIGN and not k.startswith("PYTEST_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def uv() -> str:
    """The uv executable, or a ReleaseError saying how to get one."""
    found = shutil.which("uv")
    if found is None:
        raise ReleaseError("uv is not on PATH; install it (https://docs.astral.sh/uv/) and run again")
    return found


@contextmanager
def step(what: str) -> Iterator[None]:
    """Announce a step on stderr, then report how long it took."""
    print(f"==> {what}", file=sys.stderr, flush=True)
    started = time.monotonic()
    yield
    print(f"    done in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)


def run(command: list[str], cwd: Path, *, what: str, ok: tuple[int, ...] = (0,), timeout_s: float = 900,
        show: Callable[[str], bool] = lambda line: True) -> str:
    """Run `command` in `cwd` with a clean environment, echoing (indented) the lines of its output
    that `show` picks, as they come.

    Returns:
        Everything it printed (stdout and stderr together).

    Raises:
        ReleaseError: it could not start, ran past `timeout_s`, or exited with a code not in `ok`;
            the message holds the end of its output.
    """
    lines: list[str] = []
    try:
        child = subprocess.Popen(command, cwd=cwd, env=clean_env(), stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    except OSError as error:
        raise ReleaseError(f"{what}: could not run {command[0]}: {error}") from error

    def pump() -> None:
        for line in child.stdout:
            lines.append(line)
            if show(line):
                print(f"    | {line.rstrip()}", file=sys.stderr, flush=True)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        code = child.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
        raise ReleaseError(f"{what}: `{' '.join(command)}` ran longer than {timeout_s:g} s") from None
    finally:
        reader.join(timeout=10)
    if code not in ok:
        raise ReleaseError(f"{what}: `{' '.join(command)}` in {cwd} exited with {code}; its last output:\n"
                           + "".join(lines[-40:]))
    return "".join(lines)
