"""`staff validate`: grade the stubs, wheat and chaff (or --mutants, --flaky): do the suites grade right?"""

from __future__ import annotations

import argparse
import os
import sys

from staff.commands.needs_gpu import gpu_refused


def run(args: argparse.Namespace) -> int:
    from staff.bytecode import ensure_compiled
    from staff.validate.run import all_validated
    from tests.problems import PROBLEMS

    problems = set(args.problem) if args.problem else None
    if args.gpu and (args.mutants or args.flaky):
        print("staff validate: --gpu grades the variants' GPU part; it does not combine with --mutants or --flaky",
              file=sys.stderr)
        return 2
    if args.gpu and gpu_refused("validate --gpu", args):
        return 2
    jobs = 1 if args.gpu else args.jobs or os.cpu_count() or 1
    ensure_compiled()
    if args.mutants:
        from staff.validate.mutants import all_mutants_killed

        return 0 if all_mutants_killed(sorted(problems or PROBLEMS), jobs) else 1
    if args.flaky:
        from staff.validate.flaky import none_flaky

        return 0 if none_flaky(args.flaky, jobs) else 1
    clean = all_validated(args.sample, problems, jobs, gpu=args.gpu, names=set(args.variant or ()))
    return 0 if clean else 1


def register(commands) -> None:
    from tests.problems import PROBLEMS

    validate = commands.add_parser(
        "validate",
        help="prove the suites grade right: stubs 0, every wheat full marks, every chaff caught",
        description="Grade the stubs, every correct variant (wheat) and every wrong one (chaff) in "
        "staff/validate/variants through staff grade, behind the sandbox, and print a matrix of points by "
        "implementation and problem. Exits 1 when a wheat loses a point, a chaff loses none on its own problem "
        "(or is not caught by a test it names), or the stubs score.",
    )
    validate.add_argument("--sample", action="store_true",
                          help="only a fixed sample: per problem one wheat and one chaff (CI grades its wheat)")
    validate.add_argument("--problem", type=int, action="append", choices=sorted(PROBLEMS), metavar="N",
                          help="only the variants of problem N (repeatable); the stubs are then not graded")
    validate.add_argument("--variant", action="append", metavar="NAME",
                          help="only the variants of this name (repeatable; with or without the pNN-kind- prefix "
                          "the matrix shows); the stubs are then not graded")
    validate.add_argument("-j", "--jobs", type=int, default=None,
                          help="implementations graded at once (default: cores; 1 with --gpu, which refuses more)")
    validate.add_argument("--gpu", action="store_true",
                          help="grade the GPU part only, on this machine's GPU: the stubs, the wheat of problems with "
                          "cuda tests, and the chaff only a GPU catches (gpu_catches: a timer without synchronize)")
    validate.add_argument("--mutants", action="store_true",
                          help="instead: mutation testing of the solution bodies (about 20 minutes on 2 cores)")
    validate.add_argument("--flaky", type=int, metavar="RUNS", default=0,
                          help="instead: run both suites on the reference RUNS times, shuffled, with other seeds")
    validate.set_defaults(run=run)
