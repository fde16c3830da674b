"""`staff`'s commands, one module each: `register(commands)` adds the command's parser, with its
options and defaults, and sets its handler, `run(args) -> int` (the exit status). `staff.cli` only
dispatches. Each module imports what its handler needs inside it, so `staff --help` stays quick.
"""

from __future__ import annotations

import importlib

# In the order `staff --help` lists them.
COMMANDS = ("check", "new_problem", "grade", "release", "bundle", "validate", "figures", "bench", "gpu_report",
            "gpu_check", "gradebook", "diff")


def register_all(commands) -> None:
    """Add every command's parser to `commands` (argparse's subparsers)."""
    for name in COMMANDS:
        importlib.import_module(f"staff.commands.{name}").register(commands)
