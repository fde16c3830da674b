"""What the grader starts its worker with: the limits, the launcher's configuration (written as JSON
for worker.py) and the environment the worker process gets.
"""

from __future__ import annotations

import os
import site
from collections.abc import Mapping
from dataclasses import dataclass, field

from staff.sandbox import settings
from staff.sandbox.protections import Protections


@dataclass
class Limits:
    """What one worker may use. Memory is address space in bytes (None: unlimited, needed for CUDA,
    whose driver maps far more address space than it uses); CPU time in seconds over the worker's
    life; file size in bytes; processes counts the worker's processes and threads (beside its torch
    threads: see `processes_for`); disk is what its folders (its own, the tests', and its private
    /tmp) may hold in all, in bytes and entries.

    The process limit bounds the kernel memory that no address-space limit counts and that, where the
    worker has no memory group (an ordinary user, Docker), nothing else does: socket buffers (no
    socket is made), seccomp filters (no further one). Page tables are not bounded so (pages mapped
    1 GiB apart cost 8 KiB each, up to the kernel's 65,530 mappings: 512 MiB a process), nor are
    files deleted while open or mapped, nor pipes (each holds 64 KiB, and the uid's count of pipe
    pages is the TA's too): the zygote watches all three (`process_tree`).
    The reference's whole grade ran with a limit of 14 processes and threads and
    64 open files."""

    memory_bytes: int | None = int(settings.MEMORY_GIB * 2**30)
    cpu_seconds: int = 1800
    file_bytes: int = 1 << 30
    processes: int = 32
    open_files: int = 256
    disk_bytes: int = int(settings.default("disk_gib") * 2**30)
    disk_files: int = 20_000


def processes_for(threads: int) -> int:
    """The worker's process limit when its torch uses `threads` threads for each of its two pools
    (intra-op and inter-op; each thread counts as a process)."""
    return Limits.processes + 2 * threads


@dataclass
class WorkerConfig:
    """Everything the launcher needs, written as JSON next to the grader's files."""

    code: str  # read-only folder: layout.WORKER_FILES, adapters/, cs336_basics/
    folder: str  # the worker's writable folder and working directory
    shared: str  # root's folder of the tests' folders (each made by the grader, then the worker's)
    python: str
    site_packages: list[str]
    read_only: list[str]
    devices: list[str]
    reveal: list[str]
    uid: int | None
    gid: int | None
    threads: int = 1
    compiler: bool = True  # the zygote imports torch._dynamo, which a torch optimizer's first step imports (1-2 s)
    protections: Protections = field(default_factory=Protections)
    limits: Limits = field(default_factory=Limits)
    cuda: bool = False  # confined as a GPU grade's: each child sets Landlock, narrows its filter (worker.confine_child)
    cuda_start: str = ""  # a cuda_preflight mode each child starts CUDA with before student code; "" for none
    hide: list[str] = field(default_factory=list)  # as root, covered in the worker's mount namespace (confine.hide)
    memory_group: str | None = None  # the worker's own memory cgroup folder (staff.sandbox.memory_group)
    # The zygote reads its processes' maps (deleted files mapped, the mappings' count) after each call,
    # unless a tmpfs holds the disk quota and the memory group counts the kernel's memory: process_tree
    count_mappings: bool = True


# What the grader's environment may pass to the worker: where the GPU driver's libraries are, and
# which GPUs it may see. Nothing else of the grader's environment reaches student code.
GPU_ENVIRONMENT = ("CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES")


# How the worker's interpreter is started (the launcher; a batch's worker template the same way).
WORKER_FLAGS = ("-I", "-S", "-B", "-u")
FOLDER_VARIABLES = ("HOME", "TMPDIR", "TORCHINDUCTOR_CACHE_DIR")  # the worker's own folder
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")  # read by torch's and numpy's libraries as they load


def worker_environment(config: WorkerConfig, grader_environment: Mapping[str, str]) -> dict[str, str]:
    """The worker's whole environment: a fixed minimum, the GPU variables the grader has, and a
    fork-safe CUDA check (NVML), since the zygote forks a child per stretch of calls and a CUDA
    driver set up before a fork does not work after it."""
    return environment_in(config.folder, config.threads, grader_environment)


def environment_in(folder: str, threads: int | None, grader_environment: Mapping[str, str]) -> dict[str, str]:
    """`worker_environment` for a worker in `folder` with `threads` (None: no thread variables)."""
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTORCH_NVML_BASED_CUDA_CHECK": "1",
           **dict.fromkeys(FOLDER_VARIABLES, folder)}
    if threads is not None:
        env.update(dict.fromkeys(THREAD_VARIABLES, str(threads)))
    env.update({key: grader_environment[key] for key in GPU_ENVIRONMENT if key in grader_environment})
    return env


def site_packages() -> list[str]:
    """The folders this interpreter imports third-party packages from (torch, numpy, einops ...)."""
    return [p for p in dict.fromkeys(site.getsitepackages()) if os.path.isdir(p)]
