"""The folders of one sandboxed grade, and the settings the sandbox plugin reads (`plugin_settings`).

    SCRATCH/            mode 0711: others may pass through, not look
      grader/           0700, the grader's own: suites, adapters, the plugin, report and log
      code/             0750/0640, the grader's, in the worker's group (0700/0600 without a user of
                        its own): WORKER_FILES (worker.py, frames.py, the confining modules), the
                        grader's adapters/ and the submission's cs336_basics/, read-only for its
                        worker and closed to any other
      worker/           0700, owned by the worker's user: its working folder
      shared/           0711, root's: one folder per test that both sides use (a test's tmp_path),
                        each made by the grader when the test starts and then given to the worker's user

Everything root makes for the worker is made in folders the worker cannot change: `worker/` and
`shared/` before the worker starts, each test's folder inside `shared/` (see `make_shared_folder`),
so no link the worker plants can turn root's mkdir or chown onto another path.

As root, the worker runs as a user of its own (a uid no account uses, new for every grade, inside
the ids the container maps: see `staff.sandbox.uids`), so it can read `code/` and the Python
environment, and nothing of the grader's.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from staff.sandbox import confine, cuda_files, cuda_preflight, plugin_settings
from staff.sandbox.settings import Settings
from staff.sandbox.uids import worker_uids
from staff.sandbox.worker_config import Limits, WorkerConfig, processes_for, site_packages

PACKAGE = "cs336_basics"  # the students' package: every problem's module lives in it (the staff's one name for it)
WORKER_FILES = ("worker.py", "frames.py", "confine.py", "user_limits.py", "landlock_rules.py", "syscall_filter.py",
                "syscalls.py", "syscall_numbers.py", "cuda_preflight.py", "process_tree.py")
SYSTEM_READ_ONLY = ["/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin", "/etc/ld.so.cache",
                    "/etc/localtime", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/proc", "/sys",
                    "/dev/urandom", "/dev/random", "/dev/zero"]
DEVICES = ["/dev/null", "/dev/full"]


def library_folders() -> list[str]:
    """The folders of the grader's LD_LIBRARY_PATH that exist (where a GPU machine may keep its driver's
    libraries, which the worker is then given to read)."""
    return [folder for folder in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if os.path.isdir(folder)]


# Where the grading user's own files are, hidden from a GPU grade's worker by a mount namespace as well as by
# Landlock: the home folders and the session's runtime folders. The checkout and the grade's scratch folder are added.
PRIVATE_FOLDERS = ["/home", "/root", "/run/user"]
# The folders of / such a worker keeps in sight: the system's programs, libraries and
# settings, the kernel's views, devices and runtime state. Every other one (/work, /opt, /srv, /mnt,
# where other copies of the checkout and other users' files lie) is covered, what the worker needs
# from it bound back.
SYSTEM_TOP = ("usr", "lib", "lib32", "lib64", "libx32", "bin", "sbin", "etc", "proc", "sys", "dev", "run", "tmp",
              "var")


def hidden_from_the_worker(repo: Path, scratch: Path, private_tmp: bool) -> list[str]:
    """The folders a worker must not see, as root (every grade's, a GPU grade's included), beside what
    Landlock keeps from it (a second cover, in case Landlock is missing or was turned off): the checkout (the reference
    solution, the hidden tests, the trusted tests and conftest files), the grade's scratch folder (the
    grader's copy of them), the home and runtime folders of whoever grades, every folder of / but the
    system's (SYSTEM_TOP: other copies of the checkout, other users' files), and the folders every user
    may write (/run/lock: a file left there is read back by a later grade), but those the worker gets a
    private tmpfs of (`private_tmp`: /tmp, /var/tmp, /dev/shm). The worker's launcher covers each
    (confine.hide) and binds back what the worker must read: the Python environment, its code folder,
    its own folder and the tests' folders, wherever they lie."""
    homes = [os.environ.get("HOME", ""), os.path.expanduser("~")]
    shared = [p for p in world_writable_folders() if not (private_tmp and p in confine.SHARED_FOLDERS)]
    others = [entry.path for entry in os.scandir("/") if entry.is_dir(follow_symlinks=False)
              and entry.name not in SYSTEM_TOP]
    return list(dict.fromkeys(os.path.realpath(p) for p in [str(repo), str(scratch), *PRIVATE_FOLDERS, *homes,
                                                             *shared, *others] if p and os.path.isdir(p)))


def world_writable_folders(parents: tuple[str, ...] = ("/", "/var", "/run", "/dev", "/var/lib")) -> list[str]:
    """The folders directly in `parents` that every user may write (links not followed)."""
    from staff.sandbox.leftovers import entries_in

    return entries_in(parents, lambda entry: entry.is_dir(follow_symlinks=False)
                      and bool(entry.stat(follow_symlinks=False).st_mode & stat.S_IWOTH))


@dataclass
class Workspace:
    scratch: Path
    grader: Path
    code: Path
    worker: Path
    shared: Path
    settings: Path | None  # the sandbox plugin's settings (None when grading in-process)
    no_user: str | None = None  # why the worker has no user of its own though one was asked for
    uid: int | None = None  # the worker's user of its own, where it has one


def make_shared_folder(shared: Path, name: str, owner: tuple[int, int] | None) -> Path:
    """A new folder `shared`/NAME (NAME made of `name`'s safe characters), given to `owner` (uid, gid).

    `shared` is root's and the worker cannot change it; the folder is made and handed over only
    through file descriptors opened without following links, and what was made is checked (a
    folder, this process's own) before it is handed over. A link the worker planted anywhere cannot
    turn this mkdir or chown onto another path.

    Raises:
        RuntimeError: `shared` or the new folder is not a folder of this process's own.
        FileExistsError: the name is taken.
    """
    entry = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:64]
    base = os.open(shared, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        _expect_own_folder(os.fstat(base), shared)
        os.mkdir(entry, 0o700, dir_fd=base)
        folder = os.open(entry, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=base)
    finally:
        os.close(base)
    try:
        _expect_own_folder(os.fstat(folder), shared / entry)
        if owner is not None:
            os.fchown(folder, *owner)
    finally:
        os.close(folder)
    return shared / entry


def _expect_own_folder(info: os.stat_result, path: Path) -> None:
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise RuntimeError(f"the grader's folder {path} is not a folder of its own (uid {info.st_uid}): "
                           "refusing to use it")


def module_names(package: Path, name: str) -> list[str]:
    """The importable modules of the package folder `package` (named `name`): regular .py files
    whose names, and whose folders' names, are Python identifiers. Others (notes.v2.py) cannot be
    imported and are left alone."""
    modules = []
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).with_suffix("").parts
        if path.is_file() and not path.is_symlink() and all(part.isidentifier() for part in parts):
            dotted = ".".join((name, *parts))
            modules.append(dotted.removesuffix(".__init__") if dotted != f"{name}.__init__" else name)
    return sorted(set(modules), key=lambda m: (m != name, m))


def _copy_tree(source: Path, dest: Path) -> None:
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def _for_the_worker_alone(root: Path, gid: int | None) -> None:
    """Everything under `root` readable by the grade's worker and by no other user: the grader's own,
    in the worker's group (folders 0750, files 0640), so the worker reads but cannot change it (it is
    not the owner, and the launcher, still root, runs worker.py from it). Without a user of its own
    (`gid` None) the worker runs as the grader's user: folders 0700, files 0600. Another grade's worker
    that reads the path in /proc/*/cmdline finds it closed."""
    folder_mode, file_mode = (0o700, 0o600) if gid is None else (0o750, 0o640)
    for folder, _, files in os.walk(root):
        for path in (folder, *(os.path.join(folder, name) for name in files)):
            if gid is not None:
                os.chown(path, -1, gid, follow_symlinks=False)
            os.chmod(path, folder_mode if path == folder else file_mode)


def worker_read_only(packages: list[str], cuda: bool) -> list[str]:
    """What Landlock lets a worker read besides its code and folders: the interpreter, its packages, the
    system's files and libraries, and for a GPU grade the driver's files (staff/sandbox/cuda_files.py)."""
    return [sys.base_prefix, sys.prefix, *packages, *SYSTEM_READ_ONLY, *library_folders(),
            *(cuda_files.existing(cuda_files.READ) if cuda else [])]


def worker_devices() -> list[str]:
    """The devices a worker may open: the harmless ones, and the GPU's where there is one."""
    return DEVICES + cuda_files.existing(cuda_files.DEVICE)


def build(scratch: Path, repo: Path, package: Path, suite_parts: tuple[str, ...], hidden: bool,
          settings: Settings | None, jobs: int = 1, cuda_preflight_stand_in: str | None = None) -> Workspace:
    """Lay out `scratch` for grading the package folder `package` with this tree's suites, and write
    the sandbox plugin's settings from `settings` (`jobs`: grades run at once beside this one, which
    share the CPUs and the machine's memory). A GPU grade's worker runs the CUDA preflight before any
    test: on the device, or on `cuda_preflight_stand_in` (one of `cuda_preflight.STAND_INS`, for tests).

    With `settings` None the layout is the in-process one: `grader/` also holds the package.
    """
    os.chmod(scratch, 0o711)
    grader, code, worker, shared = scratch / "grader", scratch / "code", scratch / "worker", scratch / "shared"
    grader.mkdir(mode=0o700)
    for part in suite_parts:
        source = repo / part
        (_copy_tree if source.is_dir() else shutil.copyfile)(source, grader / part)
    staff = grader / "staff"
    staff.mkdir()
    (staff / "__init__.py").write_text('"""The grader\'s copy of the staff parts a grade needs."""\n')
    if hidden:
        _copy_tree(repo / "staff" / "hidden", staff / "hidden")
    if cuda_preflight_stand_in not in (None, *cuda_preflight.STAND_INS):
        raise ValueError(f"unknown CUDA preflight stand-in {cuda_preflight_stand_in!r}; expected one of "
                         f"{cuda_preflight.STAND_INS} or None")
    if settings is None:
        _copy_tree(package, grader / "cs336_basics")
        return Workspace(scratch, grader, code, worker, shared, None)
    _copy_tree(repo / "staff" / "sandbox", staff / "sandbox")
    code.mkdir()
    for name in WORKER_FILES:
        shutil.copyfile(repo / "staff" / "sandbox" / name, code / name)
    _copy_tree(repo / "adapters", code / "adapters")
    _copy_tree(package, code / "cs336_basics")
    worker.mkdir(mode=0o700)
    shared.mkdir(mode=0o711)
    uid, no_user = None, None
    if settings.separate_user and os.geteuid() == 0:
        uid, no_user = _worker_user(worker)
    _for_the_worker_alone(code, uid)
    packages = site_packages()
    preflight = (cuda_preflight_stand_in or cuda_preflight.DEVICE) if settings.gpu else ""
    threads = settings.torch_threads(jobs)
    config = WorkerConfig(
        code=str(code), folder=str(worker), shared=str(shared), python=sys.executable, site_packages=packages,
        read_only=worker_read_only(packages, settings.cuda_confined), devices=worker_devices(),
        reveal=[sys.base_prefix, *packages],  # and the code folder, which only its worker may read (worker.py)
        uid=uid, gid=uid, threads=threads, compiler=settings.trains(), protections=settings.protections,
        cuda=settings.cuda_confined, cuda_start=preflight,
        # as root, every grade's: with Landlock off or missing (a cluster node's older kernel), the worker's own uid
        # still read the world-readable checkout (a stub scored full marks with the reference's modules)
        hide=hidden_from_the_worker(repo, scratch, settings.tmpfs) if settings.cuda_confined or os.geteuid() == 0
        else [],
        limits=Limits(memory_bytes=settings.memory_bytes(), disk_bytes=settings.disk_bytes(),
                      processes=processes_for(threads)))
    path = grader / "sandbox.json"
    plugin_settings.write(plugin_settings.PluginSettings(
        worker=config, launch_config=str(grader / "launch.json"), startup_timeout_s=settings.startup_timeout_s,
        test_timeout_s=settings.test_timeout_s, import_timeout_s=settings.import_timeout_s,
        modules=module_names(package, "cs336_basics"), jobs=max(jobs, 1),
        cuda_preflight=preflight), path)
    return Workspace(scratch, grader, code, worker, shared, path, no_user, uid)


def _worker_user(folder: Path) -> tuple[int | None, str | None]:
    """A uid for the worker, with `folder` given to it; or None and why the worker gets no user of its own."""
    uids = worker_uids()
    uid = uids.pick()
    if uid is None:
        return None, uids.reason
    try:
        os.chown(folder, uid, uid)
    except OSError as error:  # a map that says more than the kernel allows
        return None, f"the container cannot give files to uid {uid} ({error.strerror})"
    return uid, None
