"""`staff grade`'s options for shards and Slurm (docs/cluster.md), which of them go together, and the
`SlurmBatch` they make."""

from __future__ import annotations

import argparse
from pathlib import Path

from staff.course.cluster.slurm import SUBMISSIONS_PER_SHARD


def add_options(grade: argparse.ArgumentParser) -> None:
    """`staff grade`'s options for shards and Slurm."""
    group = grade.add_argument_group("shards and Slurm (docs/cluster.md)")
    group.add_argument("--shard", metavar="K/N", default=None,
                       help="with --batch, grade only shard K of N (the submissions whose name's sha256 is K-1 "
                       "modulo N); shards never share a submission, and write no gradebook: `staff gradebook OUT`")
    group.add_argument("--slurm", action="store_true",
                       help="with --batch, grade the shards as one Slurm array job (one task per shard), follow "
                       "it, then write the gradebook; options after `--` go to sbatch")
    group.add_argument("--shards", type=int, default=None, metavar="N",
                       help=f"with --slurm, the number of shards and tasks (default: one per "
                       f"{SUBMISSIONS_PER_SHARD} submissions)")
    group.add_argument("--partition", default=None, metavar="P", help="with --slurm, the partition to run in")
    group.add_argument("--dry-run", action="store_true", help="with --slurm, print the script; submit nothing")
    group.add_argument("--poll", type=float, default=10.0, metavar="SECONDS",
                       help="with --slurm, seconds between looks at the queue (default: %(default)g)")


def refused(args: argparse.Namespace) -> str:
    """Why these options cannot go together ("" when they can)."""
    if args.shard and args.slurm:
        return "--slurm runs every shard itself; give --shard K/N or --slurm, not both"
    slurm_only = [name for name, given in (("--shards", args.shards is not None), ("--partition", args.partition),
                                           ("--dry-run", args.dry_run), ("options after --", args.sbatch))
                  if given]
    if slurm_only and not args.slurm:
        return f"{', '.join(slurm_only)} go with --slurm only"
    if (args.shard or args.slurm) and args.batch is None:
        return "--shard and --slurm grade a batch: give --batch DIR"
    if args.shards is not None and args.shards < 1:
        return f"--shards {args.shards}: expected at least 1"
    return ""


def slurm_batch(args: argparse.Namespace, folder: Path, out: Path):
    """The `SlurmBatch` of this `staff grade --batch DIR --slurm`."""
    from staff.commands.settings_options import from_arguments
    from staff.course.cluster.slurm import SlurmBatch

    return SlurmBatch(folder, out, from_arguments(args), jobs=args.jobs or 2, shards=args.shards,
                      partition=args.partition, force=args.force, verbose=args.verbose, sbatch=tuple(args.sbatch),
                      poll_s=args.poll)
