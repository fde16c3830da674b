"""`staff`: the course staff's command line (never shipped to students).

A dispatcher only: each command's options, defaults and handler live in its own module of
`staff.commands` (`register(commands)` adds the parser, `run(args)` returns the exit status). The
errors a person must fix (`staff.errors.StaffError`) are reported here, once, with exit status 2.
"""

from __future__ import annotations

import argparse
import signal
import sys


def main(argv: list[str] | None = None) -> int:
    from staff.commands import register_all

    parser = argparse.ArgumentParser(prog="staff", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    register_all(commands)
    argv = list(sys.argv[1:] if argv is None else argv)
    argv, sbatch = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    args = parser.parse_args(argv)
    args.sbatch = sbatch  # `staff grade --batch DIR --slurm -- OPTIONS`: options for sbatch
    if sbatch and args.command != "grade":
        parser.error("options after -- go to sbatch, with `staff grade --batch DIR --slurm` only")
    if threading_main():
        signal.signal(signal.SIGTERM, _interrupt)  # a stopped grader ends its test runs and workers too
        signal.signal(signal.SIGINT, _interrupt)
    from staff.errors import StaffError

    try:
        return args.run(args)
    except StaffError as error:  # what the person at the command line must fix; anything else is a bug
        print(f"staff {args.command}: {error}", file=sys.stderr)
        return 2


def threading_main() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _interrupt(signum, frame) -> None:
    from staff.stopping import REQUESTED

    REQUESTED.set()  # a batch's grading threads write no result that the same signal may have cut short
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
