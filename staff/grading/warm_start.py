"""A batch's test runs, and its CPU grades' workers, forked from warm templates instead of started afresh.

Each grade's test process imports torch, numpy, pytest and hypothesis before its first test, and its
worker (the confined zygote) torch and numpy again: 2-3 s of CPU each, together half of a small
grade's. Inside `warm_test_processes()` (a batch), `run_suite` asks one template process, which
imported them once, to fork each test run, kept as `keeper.py` keeps a fresh one; and each test
process's worker client asks a second template, started as the worker is (`python -I -S -B -u`,
the worker's environment), to fork the worker's launcher, which then confines itself as a fresh one
does (`staff.sandbox.client`). Neither template runs a test or student code: a test run imports its
own workspace's tests after the fork, a launcher its own copy of the adapters and the submission.
A run whose environment is not its template's (which the libraries read at import) starts afresh,
as does every run where a template could not start (it said why, once, on stderr).
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from staff.sandbox.removal import remove_tree
from staff.sandbox.warm import KEEPER, WORKER_TEMPLATE_FD, WarmRun, WarmTemplate
from staff.sandbox.worker_config import FOLDER_VARIABLES, THREAD_VARIABLES, WORKER_FLAGS, environment_in, site_packages

__all__ = ["KEEPER", "VARIES", "start", "warm_test_processes"]
VARIES = ("PYTHONPATH", "STAFF_GRADER_PID")  # the only variables a run's environment may change from the template's
WORKER_IMPORTS = "numpy,torch"  # what every worker's zygote imports first (`worker.import_torch`)


class Templates:
    """A batch's two templates: the test runs' and, where it started, the workers'."""

    def __init__(self, tests: WarmTemplate, workers: WarmTemplate | None) -> None:
        self.tests, self.workers = tests, workers

    @property
    def why_not(self) -> str | None:
        return self.tests.why_not

    @property
    def process(self):
        return self.tests.process

    def start(self, argv: list[str], cwd: Path, env: dict[str, str], log: int) -> WarmRun | None:
        if self.workers is not None:  # which the test template holds too, whether or not it still answers
            env = {**env, WORKER_TEMPLATE_FD: str(self.workers.control.fileno())}
        return self.tests.start(argv, cwd, env, log)


def _worker_template(folder: str) -> WarmTemplate | None:
    """The workers' template, its folder `folder` until a run's, or None where it did not start."""
    env = environment_in(folder, None, os.environ)
    options = ["--imports", WORKER_IMPORTS, *(x for path in site_packages() for x in ("--path", path)),
               "--first-request-sets", ",".join(THREAD_VARIABLES)]
    workers = WarmTemplate(env, interpreter=[sys.executable, *WORKER_FLAGS], options=options,
                           varies=FOLDER_VARIABLES)
    if workers.why_not is not None:
        print(f"the warm worker template did not start ({workers.why_not}): each worker starts afresh",
              file=sys.stderr)
        return None
    return workers


_template: Templates | None = None


@contextlib.contextmanager
def warm_test_processes(env: dict[str, str]) -> Iterator[Templates]:
    """Within this block, `start` forks test runs whose environment is `env` (but `VARIES`) from a
    template started now, in this thread (its parent-death signal follows the thread that started it),
    and their workers' launchers from a second one."""
    global _template
    folder = tempfile.mkdtemp(prefix="staff-worker-template-")
    workers = _worker_template(folder)
    fd = () if workers is None else (workers.control.fileno(),)
    tests = WarmTemplate({**env, **({WORKER_TEMPLATE_FD: str(fd[0])} if fd else {})}, varies=VARIES, pass_fds=fd)
    if tests.why_not is not None:
        print(f"the warm test template did not start ({tests.why_not}): each test run starts afresh",
              file=sys.stderr)
    previous, _template = _template, Templates(tests, workers)
    try:
        yield _template
    finally:
        _template = previous
        tests.close()
        if workers is not None:
            workers.close()
        remove_tree(Path(folder))


def start(argv: list[str], cwd: Path, env: dict[str, str], log: int) -> WarmRun | None:
    """A run forked from the current template (see `WarmTemplate.start`); None outside
    `warm_test_processes` or where it cannot."""
    template = _template
    return None if template is None else template.start(argv, cwd, env, log)
