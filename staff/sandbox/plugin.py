"""pytest plugin (`-p staff.sandbox.plugin --sandbox PATH`): run the suite with student code in a worker.

`staff grade` loads it into the process that runs the tests. It installs the worker route before
any test module is imported, refuses `import cs336_basics` in this process, imports the submission
once in the worker (a failure fails every test with the reason), gives each test a `tmp_path` the
worker can use, and stops the worker at the end.
"""

from __future__ import annotations

import dataclasses
import importlib.abc
import itertools
import os
import sys
from pathlib import Path

import pytest

from adapters._route import set_route
from staff.sandbox import confine, memory, memory_group, plugin_settings
from staff.sandbox.client import Worker
from staff.sandbox.keeper import become_subreaper
from staff.sandbox.layout import PACKAGE, make_shared_folder
from staff.sandbox.quota import DiskQuota
from staff.sandbox.worker_route import WorkerRoute
from tests.grading import Note


class RefuseImport(importlib.abc.MetaPathFinder):
    """Makes `import cs336_basics` fail here: in grading, only the worker imports the submission."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == PACKAGE or fullname.startswith(PACKAGE + "."):
            raise ImportError(f"{fullname} may not be imported by the grading process; adapters run it in the worker")
        return None


class Sandbox:
    """The worker, its route, and what the session learned about the submission."""

    def __init__(self, settings: plugin_settings.PluginSettings) -> None:
        config = settings.worker
        limit = memory_group.worker_limit(config.limits.memory_bytes, settings.jobs,
                                          memory.limit_bytes() or memory_group.machine_bytes())
        group, self.memory_group = memory_group.make(limit)
        if group is not None:
            config = dataclasses.replace(config, memory_group=str(group))
            self.memory_group = f"{confine.ON} ({'no limit' if limit is None else f'{limit / 2**30:g} GiB'}, " \
                                "in-memory files counted)"
        self.config = config
        self.disk = self._limit_disk()
        if group is not None and self.disk.startswith(confine.ON):  # the kernel bounds what the maps would show
            self.config = dataclasses.replace(self.config, count_mappings=False)
        self.worker = Worker(self.config, Path(settings.launch_config), settings.startup_timeout_s)
        quota = None if self.disk.startswith(confine.ON) else DiskQuota(
            [Path(self.config.folder), Path(self.config.shared)], self.config.limits.disk_bytes,
            self.config.limits.disk_files)
        self.route = WorkerRoute(self.worker, settings.test_timeout_s, quota)
        self.modules: list[str] = settings.modules
        self.import_timeout_s: float = settings.import_timeout_s
        self.shared = Path(self.config.shared)
        self.counter = itertools.count()
        self.import_problem: str | None = None
        self.shortage_noted = False
        self.cuda_preflight = settings.cuda_preflight  # a GPU grade's preflight mode; "" for none
        self.cuda_failure: str | None = None  # what the driver said when the preflight could not start CUDA

    def _limit_disk(self) -> str:
        """As root, a tmpfs of bounded size on the worker's folder and on the tests' folders, seen by
        this process and its children (the worker) only, and gone with them; how that went."""
        if os.geteuid() != 0 or not self.config.protections.tmpfs:
            why = "no tmpfs asked for" if os.geteuid() == 0 else "the grader does not run as root"
            return confine.off(f"{why}: the grader counts what the folders hold after each call")
        limits = self.config.limits
        status = confine.disk_quota([(self.config.folder, 0o700, self.config.uid), (self.config.shared, 0o711, None)],
                                    limits.disk_bytes, limits.disk_files)
        return status if status.startswith(confine.ON) else \
            f"{status}; the grader counts what the folders hold after each call"

    def shared_folder(self, name: str) -> Path:
        """A new folder both the tests and the worker can use, owned by the worker's user."""
        owner = None
        if os.geteuid() == 0:
            self.worker.ensure_ready()  # the uid the worker really runs as (root when dropping failed)
            owner = (self.worker.uid, self.worker.gid)
        return make_shared_folder(self.shared, f"{next(self.counter):04d}-{name}", owner)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--sandbox", metavar="PATH", default=None,
                     help="grade with student code in a worker process, as set out in PATH (written by "
                     "staff.sandbox.plugin_settings.write)")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--sandbox")
    if path is None:
        return
    grader = os.environ.get("STAFF_GRADER_PID")
    if confine.die_with_parent() == confine.ON and grader and os.getppid() != int(grader):
        raise pytest.UsageError("the grader that started this run has already ended")
    become_subreaper()  # a daemon the worker starts stays below this process, where stop() ends it
    confine.set_dumpable(False)  # a worker of this user (no user of its own) cannot read this process's /proc entries
    try:
        settings = plugin_settings.read(Path(path))
    except plugin_settings.PluginSettingsError as error:
        raise pytest.UsageError(f"the sandbox plugin's settings are not usable: {error}") from None
    sandbox = Sandbox(settings)
    sys.meta_path.insert(0, RefuseImport())
    set_route(sandbox.route)
    sandbox.worker.spawn()  # it imports torch while this process collects the tests
    config.stash[_KEY] = sandbox


_KEY = pytest.StashKey[Sandbox]()


def pytest_collection_finish(session: pytest.Session) -> None:
    sandbox = session.config.stash.get(_KEY, None)
    if sandbox is None or not session.items:
        return
    # Where CUDA does not start, no student code is imported: nothing of this run speaks of the submission.
    if not sandbox.cuda_preflight or _cuda_started(session, sandbox):
        sandbox.import_problem = sandbox.route.import_check(sandbox.modules, sandbox.import_timeout_s)
    points = session.config.pluginmanager.get_plugin("points")
    status = {**sandbox.worker.protections, "disk quota": sandbox.disk}
    if status.get("memory cgroup", confine.ON) == confine.ON or not sandbox.memory_group.startswith(confine.ON):
        status["memory cgroup"] = sandbox.memory_group  # the grader's account: the limit, or why there is none
    if points is not None:
        points.note(Note.PROTECTIONS, status)
        if sandbox.import_problem is not None:
            points.note(Note.IMPORT_ERROR, sandbox.import_problem)
    _end_on_shortage(session, sandbox)


def _cuda_started(session: pytest.Session, sandbox: Sandbox) -> bool:
    """A GPU grade's preflight, before any student code is imported: whether a fresh worker child,
    confined as the tests' will be, started CUDA (staff/sandbox/cuda_preflight.py). Noted in the report
    either way; when it did not, the run stops and the grade ends as the grader's failure."""
    passed, said = sandbox.route.cuda_preflight(sandbox.cuda_preflight, sandbox.worker.startup_timeout_s)
    points = session.config.pluginmanager.get_plugin("points")
    if points is not None:
        points.note(Note.CUDA_PREFLIGHT, {"mode": sandbox.cuda_preflight, "passed": passed, "said": said})
    if not passed:
        sandbox.cuda_failure = said
        session.shouldstop = "CUDA did not start in the grader's sandbox"
    return passed


def _end_on_shortage(session: pytest.Session, sandbox: Sandbox) -> None:
    """Once the kernel killed a worker process for the container's memory while the student's code
    used little (`Worker.grader_out_of_memory`), the first worker did not start (`Worker.not_started`:
    a memory limit too small for torch, say), or a call could not be timed for the machine's other work
    (`Worker.machine_busy`), nothing more of this run speaks of the submission:
    note it in the report at once (the grade ends on it, and the test process may be killed next) and
    run no further test."""
    shortage, failed = sandbox.worker.grader_out_of_memory, sandbox.worker.not_started or sandbox.worker.machine_busy
    if (shortage is None and failed is None) or sandbox.shortage_noted:
        return
    sandbox.shortage_noted = True
    points = session.config.pluginmanager.get_plugin("points")
    if points is not None:
        if shortage is not None:
            points.note(Note.GRADER_OUT_OF_MEMORY, shortage)
        else:
            points.note(Note.GRADER_ERROR, failed)
    session.shouldstop = "the grading container ran out of memory" if shortage is not None else \
        "the grader's worker did not start" if sandbox.worker.not_started is not None else "the machine was too busy"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    sandbox = item.config.stash.get(_KEY, None)
    if sandbox is not None and sandbox.worker.grader_out_of_memory is not None:
        raise RuntimeError(f"not run: {sandbox.worker.grader_out_of_memory}")  # the grade counts no test
    for failed in (sandbox.worker.not_started, sandbox.worker.machine_busy) if sandbox is not None else ():
        if failed is not None:
            raise RuntimeError(f"not run: {failed}")  # the grade counts no test
    if sandbox is not None and sandbox.cuda_failure is not None:
        raise RuntimeError(f"not run: CUDA did not start in the grader's sandbox: {sandbox.cuda_failure[:300]}")
    if sandbox is not None and sandbox.import_problem is not None:
        last = [line for line in sandbox.import_problem.splitlines() if line.strip()][-1:] or ["no reason given"]
        raise ImportError(f"your package could not be imported, so no test ran: {last[0].strip()[:300]} "
                          f"(the whole error is at the top of the results)")


@pytest.fixture
def tmp_path(request: pytest.FixtureRequest) -> Path:
    """pytest's tmp_path, but inside the worker's folder so student code can use it (grading only)."""
    sandbox = request.config.stash.get(_KEY, None)
    if sandbox is None:
        return request.getfixturevalue("tmp_path_factory").mktemp(request.node.name[:30])
    return sandbox.shared_folder(request.node.name)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    sandbox = item.config.stash.get(_KEY, None)
    if sandbox is not None:
        _end_on_shortage(item.session, sandbox)


def pytest_unconfigure(config: pytest.Config) -> None:
    sandbox = config.stash.get(_KEY, None)
    if sandbox is not None:
        group = sandbox.worker.group
        peak = memory.peak_bytes(group) if group is not None else None
        sandbox.worker.close(kill=False)
        points = config.pluginmanager.get_plugin("points")
        if points is not None and peak is not None:
            points.note(Note.WORKER_PEAK_BYTES, peak)  # all the worker held at once, in-memory files included
