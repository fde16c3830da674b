"""pytest plugin (`-p staff.sandbox.plugin --sandbox PATH`): run the suite with student code in a worker.

`staff grade` loads it into the process that runs the tests. It installs the worker route before
any test module is imported, refuses `import cs336_basics` in this process, imports the submission
once in the worker (a failure fails every test with the reason), gives each test a `tmp_path` the
worker can use, and stops the worker at the end.
"""

from __future__ import annotations

import importlib.abc
import itertools
import json
import os
import sys
import tempfile
from pathlib import Path

import pytest

from adapters._route import set_route
from staff.sandbox import confine
from staff.sandbox.client import Limits, Worker, WorkerConfig
from staff.sandbox.route import WorkerRoute

PACKAGE = "cs336_basics"


class RefuseImport(importlib.abc.MetaPathFinder):
    """Makes `import cs336_basics` fail here: in grading, only the worker imports the submission."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == PACKAGE or fullname.startswith(PACKAGE + "."):
            raise ImportError(f"{fullname} may not be imported by the grading process; adapters run it in the worker")
        return None


class Sandbox:
    """The worker, its route, and what the session learned about the submission."""

    def __init__(self, settings: dict) -> None:
        worker_config = dict(settings["worker"])
        worker_config["limits"] = Limits(**worker_config["limits"])
        self.config = WorkerConfig(**worker_config)
        self.worker = Worker(self.config, Path(settings["launch_config"]), settings["startup_timeout_s"])
        self.route = WorkerRoute(self.worker, settings["test_budget_s"])
        self.modules: list[str] = settings["modules"]
        self.import_timeout_s: float = settings["import_timeout_s"]
        self.shared = Path(self.config.folder) / "tests"
        self.counter = itertools.count()
        self.import_problem: str | None = None

    def shared_folder(self, name: str) -> Path:
        """A new folder both the tests and the worker can use, owned by the worker's user."""
        self.shared.mkdir(exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix=f"{next(self.counter):04d}-{name[:60]}-", dir=self.shared))
        if os.geteuid() == 0:
            for path in (self.shared, folder):
                os.chown(path, self.worker.uid, self.worker.gid)
        return folder


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--sandbox", metavar="PATH", default=None,
                     help="grade with student code in a worker process, as set out in the JSON file PATH")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--sandbox")
    if path is None:
        return
    grader = os.environ.get("STAFF_GRADER_PID")
    if confine.die_with_parent() == confine.ON and grader and os.getppid() != int(grader):
        raise pytest.UsageError("the grader that started this run has already ended")
    sandbox = Sandbox(json.loads(Path(path).read_text()))
    sys.meta_path.insert(0, RefuseImport())
    set_route(sandbox.route)
    sandbox.worker.spawn()  # it imports torch while this process collects the tests
    config.stash[_KEY] = sandbox


_KEY = pytest.StashKey[Sandbox]()


def pytest_collection_finish(session: pytest.Session) -> None:
    sandbox = session.config.stash.get(_KEY, None)
    if sandbox is None or not session.items:
        return
    sandbox.import_problem = sandbox.route.import_check(sandbox.modules, sandbox.import_timeout_s)
    points = session.config.pluginmanager.get_plugin("points")
    status = dict(sandbox.worker.protections)
    if points is not None:
        points.note("protections", status)
        if sandbox.import_problem is not None:
            points.note("import_error", sandbox.import_problem)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    sandbox = item.config.stash.get(_KEY, None)
    if sandbox is not None and sandbox.import_problem is not None:
        raise ImportError(f"your package could not be imported, so no test ran:\n{sandbox.import_problem}")


@pytest.fixture
def tmp_path(request: pytest.FixtureRequest) -> Path:
    """pytest's tmp_path, but inside the worker's folder so student code can use it (grading only)."""
    sandbox = request.config.stash.get(_KEY, None)
    if sandbox is None:
        return request.getfixturevalue("tmp_path_factory").mktemp(request.node.name[:30])
    return sandbox.shared_folder(request.node.name)


def pytest_unconfigure(config: pytest.Config) -> None:
    sandbox = config.stash.get(_KEY, None)
    if sandbox is not None:
        sandbox.worker.stop(kill=False)
