"""The environment's bytecode is compiled once, then only a stamp is read (staff/bytecode.py)."""

from __future__ import annotations

import sys
from pathlib import Path

from staff import atomic, bytecode


def fake_environment(prefix: Path) -> Path:
    """An environment folder at `prefix` whose site-packages holds one module; that folder."""
    folder = prefix / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    folder.mkdir(parents=True)
    (folder / "module.py").write_text("VALUE = 1\n")
    return folder


def test_the_environment_is_compiled_once_until_it_changes(tmp_path, monkeypatch):
    # Mistakes this catches: compiling on every call (what uv's compile-bytecode did on every `uv run`),
    # a stamp never written, and a stamp that ignores a changed environment.
    folder = fake_environment(tmp_path)
    said: list[str] = []
    assert bytecode.ensure_compiled(tmp_path, said.append) is True
    assert list((folder / "__pycache__").glob("module.*.pyc")) and len(said) == 1
    assert bytecode.ensure_compiled(tmp_path, said.append) is False and len(said) == 1
    monkeypatch.setattr(bytecode, "environment_key", lambda: "another set of packages")
    assert bytecode.ensure_compiled(tmp_path, said.append) is True


def test_a_read_only_environment_is_still_usable(tmp_path, monkeypatch):
    # Mistake this catches: an OSError from writing the stamp ending the staff command.
    fake_environment(tmp_path)
    monkeypatch.setattr(atomic.tempfile, "mkstemp", lambda **_: (_ for _ in ()).throw(PermissionError(13, "denied")))
    said: list[str] = []
    assert bytecode.ensure_compiled(tmp_path, said.append) is True
    assert "could not write" in said[-1]
