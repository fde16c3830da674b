"""The Python environment's bytecode, compiled once per environment rather than checked on every `uv run`.

Workers import torch as a user of their own that cannot write `.pyc` files, so without compiled
bytecode every worker would compile torch's modules again in memory (seconds each). uv's
`compile-bytecode` setting compiled the whole environment, but on every `uv run` (7,268 files,
1-3 s each time). Instead, the staff commands that start workers (`staff grade`, `staff validate`,
`staff bench`) and the staff tests call `ensure_compiled` first: it compiles the environment's
site-packages once and leaves a stamp naming what was installed, so later calls cost one small
file read, until the environment changes. The Gradescope image is compiled by `setup.sh`
(`UV_COMPILE_BYTECODE`), and students' processes write their own `.pyc` files as they import.

    python -m staff.bytecode    # compile now (a no-op when the stamp is current)
"""

from __future__ import annotations

import compileall
import hashlib
import importlib.metadata
import site
import sys
from pathlib import Path

from staff.atomic import write_text_atomic

STAMP = ".staff-bytecode"  # in the environment's folder (sys.prefix)


def environment_key() -> str:
    """A digest of the interpreter's version and every installed distribution's name and version."""
    names = sorted(f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions())
    return hashlib.sha256("\n".join([sys.version, *names]).encode()).hexdigest()


def site_folders(prefix: Path) -> list[Path]:
    """The site-packages folders of the environment at `prefix`."""
    return [Path(folder) for folder in site.getsitepackages([str(prefix)]) if Path(folder).is_dir()]


def ensure_compiled(prefix: Path | None = None, say=lambda text: print(text, file=sys.stderr)) -> bool:
    """Compile the environment's site-packages unless its stamp says they already are; whether it
    compiled. Files that cannot compile (written for another Python) or be written (a read-only
    environment) are left as they are: importing them still works, only slower."""
    prefix = Path(prefix or sys.prefix)
    stamp, key = prefix / STAMP, environment_key()
    try:
        if stamp.read_text(encoding="utf-8").strip() == key:
            return False
    except OSError:
        pass
    folders = site_folders(prefix)
    say(f"compiling the Python environment's bytecode once ({len(folders)} folder(s); about 20 s on 2 cores)")
    for folder in folders:
        compileall.compile_dir(folder, quiet=2, workers=0)  # 0: one process per core
    try:
        write_text_atomic(stamp, key + "\n")
    except OSError as error:
        say(f"could not write {stamp} ({error.strerror}); the next command will check the bytecode again")
    return True


if __name__ == "__main__":
    compiled = ensure_compiled()
    print("compiled" if compiled else f"already compiled ({Path(sys.prefix) / STAMP} is current)")
