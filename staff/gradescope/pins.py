"""The versions `staff bundle` pins into setup.sh: the Python and the uv the locked environment was tested with.

The Python is the one running this (the staff environment that `uv sync --locked` built from
`.python-version`), to the patch level; it must agree with `.python-version` and `requires-python`,
so a bundle never installs a Python that nothing here has run. The uv is the one on PATH (or `$UV`,
which `uv run` sets), the one that reads this uv.lock.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from staff.release.proc import ReleaseError

_UV_VERSION = re.compile(r"^uv (\d+\.\d+\.\d+)\b")


def python_pin(source: Path, running: str | None = None) -> str:
    """The exact Python (X.Y.Z) the bundle installs: `running` (default: this interpreter's version).

    Raises:
        ReleaseError: it disagrees with `source`'s .python-version or requires-python.
    """
    running = running or platform.python_version()
    try:
        pinned = (source / ".python-version").read_text().strip()
        required = tomllib.loads((source / "pyproject.toml").read_text())["project"]["requires-python"]
    except (OSError, KeyError, tomllib.TOMLDecodeError) as error:
        raise ReleaseError(f"cannot read the Python pin of {source}: {error}") from error
    if not re.fullmatch(r"\d+\.\d+(\.\d+)?", pinned):
        raise ReleaseError(f"{source / '.python-version'} holds {pinned!r}; expected a version such as 3.11")
    if running != pinned and not running.startswith(f"{pinned}."):
        raise ReleaseError(f"staff bundle runs under Python {running}, but .python-version pins {pinned}: "
                           "run it with `uv run staff bundle ...`, so that the bundle pins the Python the lock was "
                           "tested with")
    if Version(running) not in SpecifierSet(required):
        raise ReleaseError(f"Python {running} is outside the project's requires-python ({required})")
    return running


def uv_pin(uv: str | None = None) -> str:
    """The version (X.Y.Z) of `uv` (default: `$UV` or the uv on PATH).

    Raises:
        ReleaseError: there is no uv, or it does not say its version.
    """
    uv = uv or os.environ.get("UV") or shutil.which("uv")
    if not uv:
        raise ReleaseError("staff bundle pins the uv that reads uv.lock, and found none: install uv or use `uv run`")
    try:
        said = subprocess.run([uv, "--version"], capture_output=True, text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError) as error:
        raise ReleaseError(f"`{uv} --version` failed: {error}") from error
    found = _UV_VERSION.match(said)
    if not found:
        raise ReleaseError(f"`{uv} --version` said {said.strip()!r}, not a version")
    return found.group(1)
