"""`staff` is a dispatcher: each command's options and handler live in its module of staff/commands,
and every one of them is reachable, with its help, from `staff`."""

from __future__ import annotations

from dataclasses import fields

import pytest

from staff.cli import main
from staff.commands import COMMANDS
from staff.grade import REPO_ROOT
from staff.sandbox.settings import Settings

HELPERS = {"__init__", "needs_gpu"}  # modules of staff/commands that are no command


def test_every_command_module_is_registered():
    # Mistake this catches: a command's module written but not listed in COMMANDS (`staff VERB` unknown).
    modules = {path.stem for path in (REPO_ROOT / "staff" / "commands").glob("*.py")} - HELPERS
    assert modules == set(COMMANDS), f"in staff/commands but not registered: {sorted(modules - set(COMMANDS))}"


@pytest.mark.parametrize("module", COMMANDS)
def test_every_command_answers_help(module, capsys):
    verb = module.replace("_", "-")
    with pytest.raises(SystemExit) as stopped:
        main([verb, "--help"])
    assert stopped.value.code == 0 and f"usage: staff {verb}" in capsys.readouterr().out


def test_staff_grade_offers_every_setting(capsys):
    # Mistake this catches: a setting of Settings that `staff grade` does not offer as an option.
    with pytest.raises(SystemExit):
        main(["grade", "--help"])
    shown = capsys.readouterr().out
    assert [spec.metadata["option"] for spec in fields(Settings) if spec.metadata["option"] not in shown] == []
