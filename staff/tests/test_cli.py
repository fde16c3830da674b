"""`staff` is a dispatcher: each command's options and handler live in its module of staff/commands,
and every one of them is reachable, with its help, from `staff`."""

from __future__ import annotations

from dataclasses import fields

import pytest

from staff.cli import main
from staff.commands import COMMANDS
from staff.grading.grade import REPO_ROOT
from staff.sandbox.settings import Settings

# Modules of staff/commands that are no command.
HELPERS = {"__init__", "needs_gpu", "settings_options", "slurm_options"}


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


def test_an_error_for_the_person_at_the_command_line_is_one_line_and_exit_2(capsys, monkeypatch):
    # Mistake caught: a StaffError a command does not catch itself reaching the person as a traceback
    # (or exit 1, which reads as "some tests failed"), or the CLI swallowing real bugs with it.
    import staff.commands
    from staff.errors import StaffError

    def failing(error: Exception):
        def run(args):
            raise error
        return run

    def register(commands) -> None:
        commands.add_parser("bad-input").set_defaults(
            run=failing(StaffError("no such folder: /x; expected a folder of submissions")))
        commands.add_parser("bug").set_defaults(run=failing(KeyError("boom")))

    monkeypatch.setattr(staff.commands, "register_all", register)
    assert main(["bad-input"]) == 2
    assert capsys.readouterr().err == "staff bad-input: no such folder: /x; expected a folder of submissions\n"
    with pytest.raises(KeyError):
        main(["bug"])


def below_the_commands() -> list:
    """staff's library modules: everything but the command line (cli.py, commands/) and the tests."""
    skipped = {"commands", "tests", "hidden", "redteam/cases"}
    return [path for path in sorted((REPO_ROOT / "staff").rglob("*.py"))
            if path.name != "cli.py" and not any(part in path.relative_to(REPO_ROOT).as_posix().split("/")
                                                 or part in path.as_posix() for part in skipped)]


def test_nothing_below_the_commands_reads_arguments_or_returns_an_exit_status():
    # Mistakes this catches: a library function that takes the command's argparse.Namespace (its options then
    # travel down the tree untyped) or a `main_*` that returns an exit status for a command to pass on. A
    # module run as its own process (`python -m ...`, with an `if __name__ == "__main__"`) has its `main`.
    import ast

    found = []
    for path in below_the_commands():
        source = path.read_text(encoding="utf-8")
        name = path.relative_to(REPO_ROOT).as_posix()
        if "Namespace" in "".join(line.split("#")[0] for line in source.splitlines()):
            found.append(f"{name} names argparse.Namespace")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("main_"):
                found.append(f"{name}: {node.name}")
            if isinstance(node, ast.FunctionDef) and node.name == "main" and '__name__ == "__main__"' not in source:
                found.append(f"{name}: main, though it is not run as a program")
    assert found == [], "move these to staff/commands:\n" + "\n".join(found)
