"""Every setting of a grade, declared once: its default, its command-line option and what it means.

`staff grade`'s options are made from these fields, the sandbox's `Limits` and `SandboxOptions` take
their defaults from them, and `staff bundle` writes the bundle's choices as a file
(`staff/settings.json` in the bundle) that the Gradescope autograder reads. A local grade and the
autograder use the same defaults unless a setting says otherwise (the bundle's run time, for one,
which must end before Gradescope's own limit). This module lives with the sandbox because the sandbox
travels into every grade's workspace and into the bundle.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from tests.grading import HIDDEN_VISIBILITY, VISIBILITIES


def _setting(default, option: str, help: str, **argparse_keywords):
    return field(default=default, metadata={"option": option, "help": help, **argparse_keywords})


@dataclass(frozen=True)
class Settings:
    run_timeout_s: float = _setting(
        1800.0, "--timeout", "seconds the whole test run of one submission may take; tests it does not reach score 0")
    test_timeout_s: float = _setting(120.0, "--test-timeout", "seconds one test may spend in the submission's code")
    import_timeout_s: float = _setting(120.0, "--import-timeout",
                                       "seconds importing the submission's package may take")
    memory_gib: float = _setting(
        8.0, "--memory-gib", "address space the student's process may use, GiB, and, where the grader can make "
        "the worker a memory cgroup, all its processes may hold, in-memory files included (0: unlimited; a GPU "
        "grade is unlimited unless this is given: the CUDA driver maps far more address space than it uses)")
    disk_gib: float = _setting(2.0, "--disk-gib", "what the student's files may take in all, GiB")
    threads: int = _setting(
        0, "--threads", "torch threads of the student's process (0: the CPUs this grade may use, that is the "
        "container's CPU quota or else the cores, shared among the submissions graded at once)")
    hidden_visibility: str = _setting(HIDDEN_VISIBILITY, "--hidden-visibility",
                                      "when students see the hidden tests on Gradescope", choices=VISIBILITIES)

    def __post_init__(self) -> None:
        for spec in fields(self):
            value = getattr(self, spec.name)
            if spec.name == "hidden_visibility":
                if value not in VISIBILITIES:
                    raise ValueError(f"hidden_visibility must be one of {VISIBILITIES}, got {value!r}")
            elif isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"{spec.name} must be a number of at least 0, got {value!r}")

    def torch_threads(self, jobs: int = 1, cpus: float | None = None) -> int:
        """The student's torch threads: the setting, or the CPUs available shared among `jobs`."""
        if self.threads:
            return int(self.threads)
        return max(1, int((cpus if cpus is not None else available_cpus()) // max(jobs, 1)))

    def memory_bytes(self, gpu: bool = False, given: bool = True) -> int | None:
        """The address-space limit in bytes (None: unlimited); a GPU grade's default is unlimited."""
        if (gpu and not given) or self.memory_gib <= 0:
            return None
        return int(self.memory_gib * 2**30)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"

    @classmethod
    def load(cls, path: Path) -> Settings:
        """The settings a file names, the defaults for the rest.

        Raises:
            ValueError: the file is not a JSON object of known settings with valid values.
        """
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as error:
            raise ValueError(f"{path}: cannot read the settings ({error})") from error
        known = {spec.name for spec in fields(cls)}
        if not isinstance(data, dict) or set(data) - known:
            raise ValueError(f"{path}: expected a JSON object of {sorted(known)}, got {sorted(data)[:10]}"
                             if isinstance(data, dict) else f"{path}: expected a JSON object of settings")
        return cls(**data)


def default(name: str):
    """The declared default of setting `name`."""
    return next(spec.default for spec in fields(Settings) if spec.name == name)


def _at_least_zero(kind: type):
    """An argparse type: a number of `kind` that is 0 or more (argparse then names the option)."""
    def convert(text: str):
        value = kind(text)
        if value < 0:
            raise argparse.ArgumentTypeError(f"expected a number of at least 0, got {text}")
        return value

    convert.__name__ = kind.__name__  # what argparse says was expected
    return convert


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """One option per setting, with its default and help."""
    for spec in fields(Settings):
        extra = {k: v for k, v in spec.metadata.items() if k not in ("option", "help")}
        number = isinstance(spec.default, (int, float))
        shown = f"{spec.default:g}" if number else spec.default
        metavar = {} if "choices" in extra else {"metavar": "N" if isinstance(spec.default, int) else
                                                 "GIB" if spec.name.endswith("_gib") else "SECONDS"}
        parser.add_argument(spec.metadata["option"], dest=spec.name, default=None,
                            type=_at_least_zero(type(spec.default)) if number else str,
                            help=f"{spec.metadata['help']} (default: {shown})", **metavar, **extra)


def from_arguments(args: argparse.Namespace) -> Settings:
    """The settings the options give, the defaults for the rest."""
    return Settings(**{spec.name: getattr(args, spec.name) for spec in fields(Settings)
                       if getattr(args, spec.name, None) is not None})


def available_cpus(proc_self: Path = Path("/proc/self/cgroup"), cgroup_root: Path = Path("/sys/fs/cgroup"),
                   cores: float | None = None) -> float:
    """The CPUs this process may use: its cgroup's CPU quota (v2 `cpu.max`, v1 `cpu.cfs_quota_us` over
    `cpu.cfs_period_us`) where one is set, else the cores it may run on. Gradescope's default
    container has half a CPU; os.cpu_count() there is the host's."""
    from staff.sandbox.memory import own_cgroup

    if cores is None:
        cores = float(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    found = own_cgroup("cpu", proc_self, cgroup_root)
    if found is None:
        return cores
    folder, v2 = found
    try:
        if v2:
            quota, period = (folder / "cpu.max").read_text().split()[:2]
            return cores if quota == "max" else min(cores, int(quota) / int(period))
        quota = int((folder / "cpu.cfs_quota_us").read_text())
        period = int((folder / "cpu.cfs_period_us").read_text())
        return cores if quota <= 0 else min(cores, quota / period)
    except (OSError, ValueError):
        return cores
