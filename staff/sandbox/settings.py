"""Every setting of a grade, declared once: its name, its default, its command-line option and what it means.

`staff grade`'s options are made from these fields (staff/commands/settings_options.py; `to_arguments`
here writes the options that give a `Settings` again, for a Slurm task), `grade()` takes
one `Settings`, the sandbox's worker and plugin get their limits from it, and `staff bundle` writes
the bundle's choices as a file (`staff/settings.json` in the bundle) that the Gradescope autograder
reads. A local grade and the autograder use the same defaults unless a setting says otherwise (the
bundle's run time, for one, which must end before Gradescope's own limit). This module lives with
the sandbox because the sandbox travels into every grade's workspace and into the bundle.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from staff.sandbox.protections import Protections
from tests.grading import HIDDEN_VISIBILITY, VISIBILITIES
from tests.problems import PROBLEMS

MEMORY_GIB = 8.0  # a CPU grade's address-space limit when --memory-gib is not given (a GPU grade has none)
# The least address space under which the worker's zygote imported torch, torch._dynamo and the
# adapters (`worker.import_torch`): 3.375 GiB worked and 3.25 GiB did not (a SystemError out of torch's
# import, a segfault, "failed to map segment"), in steps of 1/8 GiB, torch 2.2.2 on Linux 6.18 x86_64.
IMPORT_MEASURED_GIB = 3.375
# A smaller limit is refused before any grade: every worker would fail to start, and not for the
# submission's sake. The margin is for other machines' libraries and thread stacks.
MEMORY_FLOOR_GIB = 4.0
_NUMBERS = ("run_timeout_s", "test_timeout_s", "import_timeout_s", "startup_timeout_s", "disk_gib", "threads")
SWITCHES = ("hidden", "gpu", "in_process", "separate_user", "namespaces", "landlock", "seccomp", "tmpfs",
             "gpu_confinement", "allow_open_grader")


def _setting(default, option: str, help: str, **argparse_keywords):
    return field(default=default, metadata={"option": option, "help": help, **argparse_keywords})


@dataclass(frozen=True)
class Settings:
    """A grade's settings. Seconds end in _s, sizes in GiB end in _gib; a switch whose default is True
    is turned off by its --no-... option."""

    run_timeout_s: float = _setting(
        1800.0, "--timeout", "seconds the whole test run of one submission may take; tests it does not reach score 0")
    test_timeout_s: float = _setting(
        120.0, "--test-timeout", "seconds one test may spend in the submission's code (a wait for CPUs that other "
        "programs hold is not counted; past 6 times this and 10 s more, the grade ends as the machine's failure)")
    import_timeout_s: float = _setting(120.0, "--import-timeout",
                                       "seconds importing the submission's package may take (in-process too)")
    startup_timeout_s: float = _setting(
        300.0, "--startup-timeout", "seconds the sandbox's worker may take to start (it imports torch, and in a GPU "
        "grade starts CUDA) before the grade fails as the grader's own failure")
    memory_gib: float | None = _setting(
        None, "--memory-gib", "address space the student's process may use, GiB, and, where the grader can make "
        "the worker a memory cgroup, all its processes may hold, in-memory files included (0: unlimited; at least "
        f"{MEMORY_FLOOR_GIB:g}, below which the worker cannot import torch; default: "
        f"{MEMORY_GIB:g} for a CPU grade, unlimited for a GPU grade: the CUDA driver maps far more address space "
        "than it uses)", kind=float)
    disk_gib: float = _setting(2.0, "--disk-gib", "what the student's files may take in all, GiB")
    threads: int = _setting(
        0, "--threads", "torch threads of the student's process (0: the CPUs this grade may use, that is the "
        "container's CPU quota or else the cores, shared among the submissions graded at once)")
    hidden_visibility: str = _setting(HIDDEN_VISIBILITY, "--hidden-visibility",
                                      "when students see the hidden tests on Gradescope", choices=VISIBILITIES)
    problems: tuple[int, ...] | None = _setting(
        None, "--problems", "grade only these problems' tests, e.g. --problems 1 3 (default: every problem's)")
    hidden: bool = _setting(True, "--no-hidden", "run the public tests only")
    property_examples: int | None = _setting(
        None, "--property-examples", "examples each property test of the hidden suites tries, where the test does "
        "not set its own number (default: 100): fewer is faster and finds fewer mistakes, for a quick look at a batch "
        "or the red team's containment runs, not for a course's grades (the grade records it, and a later grade with "
        "the default regrades it)", kind=int)
    gpu: bool = _setting(False, "--gpu", "grade only the GPU part (the public tests marked cuda) on this machine's "
                         "GPU, into results-gpu.json (with --batch: OUT/<name>/results-gpu.json, which every "
                         "gradebook written from OUT adds to the CPU grade); a CPU grade leaves those tests out, GPU "
                         "or not, so the two parts add up. Without a GPU it stops at once")
    in_process: bool = _setting(False, "--in-process", "run student code inside the test process (debugging and "
                                "timing only: NOT safe against a hostile submission; the import and test time limits "
                                "still hold, the sandbox's protections and memory and disk limits do not)")
    separate_user: bool = _setting(True, "--no-separate-user", "as root, do not run student code as a user of its own")
    namespaces: bool = _setting(True, "--no-namespaces", "no new PID, network and IPC namespaces")
    landlock: bool = _setting(True, "--no-landlock", "no Landlock file-access restriction")
    seccomp: bool = _setting(True, "--no-seccomp", "no seccomp filter (it refuses sockets but unix pairs, or in a "
                             "GPU grade internet sockets, and System V IPC, message queues, kernel keys, memfd, "
                             "a CPU grade's shared memory with no file, io_uring, BPF and access to other processes)")
    tmpfs: bool = _setting(True, "--no-tmpfs", "as root, no tmpfs mounts: the worker's /tmp is the machine's, and its "
                           "disk quota is counted after each call instead of enforced by the kernel")
    gpu_confinement: bool = _setting(
        False, "--gpu-confinement", "for testing the GPU grade's confinement (the red team, without a GPU): "
        "confine a CPU grade's worker exactly as a GPU grade's (Landlock set by each child, which may write its "
        "own /proc entry; a zygote whose filter allows unix sockets and memfd until each child narrows it to the "
        "CPU grade's; as root the grader's files also hidden by a mount namespace) and grade the CPU tests; CUDA "
        "is not started. Not for grading students")
    allow_open_grader: bool = _setting(
        False, "--allow-open-grader", "grade even where the student's code would run as your own user with your "
        "files open to it (no user of its own, and no Landlock: not run as root, or --no-separate-user, and "
        "--no-landlock or a kernel without Landlock). Without it such a grade is refused before any student code "
        "runs, saying what would be open")

    def __post_init__(self) -> None:
        for name in _NUMBERS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"{name} must be a number of at least 0, got {value!r}")
        if self.memory_gib is not None and (isinstance(self.memory_gib, bool) or
                                            not isinstance(self.memory_gib, (int, float)) or self.memory_gib < 0):
            raise ValueError(f"memory_gib must be a number of at least 0 or None, got {self.memory_gib!r}")
        limit = self.memory_bytes()
        if limit is not None and limit < MEMORY_FLOOR_GIB * 2**30:
            raise ValueError(f"memory_gib (--memory-gib) {self.memory_gib:g} is below the {MEMORY_FLOOR_GIB:g} GiB "
                             f"of address space the grader's worker needs to import torch (it needed "
                             f"{IMPORT_MEASURED_GIB:g} GiB where measured), so no submission could be graded; "
                             f"give at least {MEMORY_FLOOR_GIB:g}, or 0 for no limit")
        if self.property_examples is not None and (isinstance(self.property_examples, bool) or
                                                   not isinstance(self.property_examples, int) or
                                                   self.property_examples < 1):
            raise ValueError(f"property_examples (--property-examples) must be a whole number of at least 1, or unset "
                             f"(each test's own number), got {self.property_examples!r}")
        if isinstance(self.threads, float) and not self.threads.is_integer():
            raise ValueError(f"threads must be a whole number, got {self.threads!r}")
        if self.hidden_visibility not in VISIBILITIES:
            raise ValueError(f"hidden_visibility must be one of {VISIBILITIES}, got {self.hidden_visibility!r}")
        for name in SWITCHES:
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")
        if self.problems is not None:
            if isinstance(self.problems, (str, bytes)) or not hasattr(self.problems, "__iter__"):
                raise ValueError(f"problems must be a list of problem numbers or None, got {self.problems!r}")
            unknown = [n for n in self.problems if isinstance(n, bool) or n not in PROBLEMS]
            if unknown:
                raise ValueError(f"problems: no problem {unknown[0]!r}; the problems are {sorted(PROBLEMS)}")
            object.__setattr__(self, "problems", tuple(sorted(set(self.problems))))  # a set, a list: one form

    @property
    def protections(self) -> Protections:
        """The worker's protections these settings leave on (each a switch of its own name here)."""
        return Protections(**{name: getattr(self, name) for name in Protections.names()})

    @property
    def cuda_confined(self) -> bool:
        """Whether the worker is confined as a GPU grade's must be, in the forms CUDA's driver starts under
        (worker.confine_child; `staff gpu-check` tries each): a GPU grade, or a CPU grade that tests them."""
        return self.gpu or self.gpu_confinement

    def trains(self) -> bool:
        """Whether a problem graded has the student's code build or step a torch optimizer (`Problem.trains`)."""
        return any(PROBLEMS[n].trains for n in (PROBLEMS if self.problems is None else self.problems))

    def torch_threads(self, jobs: int = 1, cpus: float | None = None) -> int:
        """The student's torch threads: the setting, or the CPUs available shared among `jobs`."""
        if self.threads:
            return int(self.threads)
        return max(1, int((cpus if cpus is not None else available_cpus()) // max(jobs, 1)))

    def memory_bytes(self) -> int | None:
        """The address-space limit in bytes (None: unlimited); without memory_gib, MEMORY_GIB for a CPU
        grade and unlimited for a GPU grade."""
        gib = self.memory_gib if self.memory_gib is not None else None if self.gpu else MEMORY_GIB
        return None if gib is None or gib <= 0 else int(gib * 2**30)

    def disk_bytes(self) -> int:
        return int(self.disk_gib * 2**30)

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
        try:
            return cls(**data)
        except ValueError as error:
            raise ValueError(f"{path}: {error}") from error


def default(name: str):
    """The declared default of setting `name`."""
    return next(spec.default for spec in fields(Settings) if spec.name == name)


def to_arguments(settings: Settings) -> list[str]:
    """The options that give `settings` (only those that differ from the defaults): what a Slurm
    task's `staff grade` is given to grade as this one does; its options read them back whole."""
    given = [spec for spec in fields(Settings) if getattr(settings, spec.name) != spec.default]
    options = [spec.metadata["option"] for spec in given if spec.name in SWITCHES]  # the switches first
    for spec in given:
        value = getattr(settings, spec.name)
        if spec.name == "problems":
            options += [spec.metadata["option"], *map(str, value)]
        elif spec.name not in SWITCHES:
            options += [spec.metadata["option"], f"{value:g}" if isinstance(value, float) else str(value)]
    return options


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
