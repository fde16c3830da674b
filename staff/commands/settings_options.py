"""A grade's settings as `staff grade`'s options: one option per field of `staff.sandbox.settings.Settings`
(its help, its default), and the `Settings` the given options make. `Settings.to_arguments` goes the other
way, for a Slurm task's command line.
"""

from __future__ import annotations

import argparse
from dataclasses import fields

from staff.errors import StaffError
from staff.sandbox.settings import SWITCHES, Settings
from tests.problems import PROBLEMS


def _at_least_zero(kind: type):
    """An argparse type: a number of `kind` that is 0 or more (argparse then names the option)."""
    def convert(text: str):
        value = kind(text)
        if value < 0:
            raise argparse.ArgumentTypeError(f"expected a number of at least 0, got {text}")
        return value

    convert.__name__ = kind.__name__  # what argparse says was expected
    return convert


def _argparse_keywords(spec) -> dict:
    """How argparse reads setting `spec`: a switch stores the opposite of its default, problems take
    numbers, a number must be at least 0; every option's default is None (not given)."""
    extra = {k: v for k, v in spec.metadata.items() if k not in ("option", "help", "kind")}
    if spec.name in SWITCHES:
        return {"action": "store_const", "const": not spec.default, **extra}
    if spec.name == "problems":
        return {"nargs": "+", "type": int, "choices": sorted(PROBLEMS), "metavar": "N", **extra}
    if "choices" in extra:
        return {"type": str, **extra}
    kind = spec.metadata.get("kind", type(spec.default))  # declared where the default (None) does not say
    metavar = "N" if kind is int else "GIB" if spec.name.endswith("_gib") else "SECONDS"
    return {"type": _at_least_zero(kind), "metavar": metavar, **extra}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """One option per setting, with its help (and its default, where the help does not say it)."""
    for spec in fields(Settings):
        help = spec.metadata["help"]
        if spec.name not in SWITCHES and "default:" not in help:
            help = f"{help} (default: {f'{spec.default:g}' if _is_number(spec.default) else spec.default})"
        parser.add_argument(spec.metadata["option"], dest=spec.name, default=None, help=help,
                            **_argparse_keywords(spec))


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class SettingError(StaffError, ValueError):
    """Options that make no valid `Settings` (a memory limit below the floor torch imports under, an unknown
    problem); the message names the option and the least that works."""


def from_arguments(args: argparse.Namespace) -> Settings:
    """The settings the options give, the defaults for the rest.

    Raises:
        SettingError: the options make no valid settings; nothing has been graded.
    """
    try:
        return Settings(**{spec.name: getattr(args, spec.name) for spec in fields(Settings)
                           if getattr(args, spec.name, None) is not None})
    except ValueError as error:
        raise SettingError(str(error)) from error


