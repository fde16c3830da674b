"""Submissions made from this tree's reference: the staff's own tests, the red team and benchmarks use them.

A sample is a folder holding `cs336_basics/`, the reference's or its stubs (every solution body
replaced), with some files changed or added; or a zip of one.
"""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

from staff.sandbox.layout import PACKAGE
from staff.sources.markers import stub_source

REPO_ROOT = Path(__file__).resolve().parent.parent


def reference(dest: Path) -> Path:
    """`dest`/cs336_basics as a copy of the reference; returns the package folder."""
    shutil.copytree(REPO_ROOT / PACKAGE, dest / PACKAGE, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest / PACKAGE


def stubs(dest: Path, keep: set[str] = frozenset()) -> Path:
    """`dest`/cs336_basics as the student release has it: every solution body a stub, except in the
    modules named in `keep` (e.g. {"dtype_memory"}: Problem 1 done, the rest not started)."""
    package = reference(dest)
    for module in package.glob("*.py"):
        if module.stem not in keep:
            module.write_text(stub_source(module.read_text(encoding="utf-8"), module), encoding="utf-8")
    return package


def replace_in(path: Path, old: str, new: str) -> None:
    """Replace the first `old` in the file `path` with `new` (which must be there)."""
    text = path.read_text(encoding="utf-8")
    if old not in text:
        raise ValueError(f"{old!r} is not in {path}")
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def zip_folder(folder: Path, archive: Path, top: str = "", extra: dict[str, str] | None = None) -> Path:
    """Zip the files under `folder` into `archive`, each under `top`/ (none when empty), plus `extra`
    entries (name -> text) as they are."""
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                name = path.relative_to(folder).as_posix()
                zf.write(path, f"{top}/{name}" if top else name)
        for name, text in (extra or {}).items():
            zf.writestr(name, text)
    return archive
