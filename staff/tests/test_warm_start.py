"""A batch's test runs forked from a warm template (staff/grading/warm_start.py): each starts as a fresh
`python` under its keeper would, is kept as one, and a template that fails costs no grade."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from staff.grading import warm_start
from staff.grading.suite_run import KEEPER, child_env, end_run, warm_test_processes
from staff.tests.processes import LEAVE_A_DAEMON, running_commands

# What a run sees of itself as it starts, the things a fresh interpreter in the workspace sets.
LOOK = '''
import json, os, signal, sys
print(json.dumps({
    "path": sys.path[:2], "cwd": os.getcwd(), "argv": sys.argv, "hash": hash("a grade's test run"),
    "bytecode": sys.dont_write_bytecode, "pythonpath": os.environ.get("PYTHONPATH"),
    "grader_is_parent": os.environ.get("STAFF_GRADER_PID") == str(os.getppid()),
    "stdin": os.readlink("/proc/self/fd/0"), "session_of_parent": os.getsid(0) == os.getppid(),
    "sigterm": signal.getsignal(signal.SIGTERM) == signal.SIG_DFL, "main": __name__,
    "sigint": signal.getsignal(signal.SIGINT) == signal.default_int_handler,
    "workspace_imported": sorted(m for m in ("tests", "adapters", "staff", "cs336_basics") if m in sys.modules),
}))
'''


@pytest.fixture(scope="module")
def template():
    with warm_test_processes() as started:
        assert started.why_not is None, f"the warm template did not start: {started.why_not}"
        yield started


def _run_env(workspace) -> dict[str, str]:
    return {**child_env(workspace), "STAFF_GRADER_PID": str(os.getpid())}


def _output(child, log) -> str:
    assert child.wait(60) == 0
    return log.read_text()


def test_a_warm_run_starts_as_a_fresh_interpreter_in_the_workspace_would(template, tmp_path):
    # Mistakes: the workspace missing from sys.path (the run imports the checkout's tests, or none), the
    # template's folder or hash seed kept, the grader's pid left as the run's parent (the sandbox plugin
    # then refuses to run), the keeper's SIGTERM handler left in the run.
    fresh_log, warm_log = tmp_path / "fresh.log", tmp_path / "warm.log"
    with fresh_log.open("w") as log:
        fresh = subprocess.Popen([sys.executable, "-I", str(KEEPER), sys.executable, "-c", LOOK, "x"],
                                 cwd=tmp_path, env=_run_env(tmp_path), stdin=subprocess.DEVNULL, stdout=log,
                                 stderr=subprocess.STDOUT, start_new_session=True)
        fresh_seen = json.loads(_output(fresh, fresh_log))
    with warm_log.open("w") as log:
        warm = warm_start.start(["-c", LOOK, "x"], tmp_path, _run_env(tmp_path), log.fileno())
        assert warm is not None, "the template did not fork the run"
        warm_seen = json.loads(_output(warm, warm_log))
    assert warm_seen == fresh_seen, f"a fresh run saw {fresh_seen}; a warm one {warm_seen}"
    assert fresh_seen["path"][0] == "" and fresh_seen["cwd"] == str(tmp_path) and fresh_seen["grader_is_parent"]


def test_a_warm_run_is_kept_as_a_fresh_one(template, tmp_path):
    # Mistake: the run forked straight from the template with no keeper between: the daemon it left
    # (a new session, deaf to SIGTERM) outlives the run, and the grader's SIGTERM ends only the run.
    with (tmp_path / "log").open("w") as log:
        ended = warm_start.start(["-c", LEAVE_A_DAEMON.format(name="warm-keeper-exits"), "exit"], tmp_path,
                                 _run_env(tmp_path), log.fileno())
        killed = warm_start.start(["-c", LEAVE_A_DAEMON.format(name="warm-keeper-killed"), "sleep"], tmp_path,
                                  _run_env(tmp_path), log.fileno())
    assert ended is not None and killed is not None
    assert ended.wait(60) == 7  # the run's own exit code comes back through the keeper and the template
    time.sleep(3)
    assert any(c.startswith("warm-keeper-killed") for c in running_commands())  # the daemon was running
    end_run(killed)  # the grader at the run's time limit
    assert killed.returncode == -signal.SIGKILL
    left = [c for c in running_commands() if c.startswith(("warm-keeper-exits", "warm-keeper-killed"))]
    assert not left, f"processes outlived their run: {left}"


def test_a_run_whose_environment_differs_from_the_templates_starts_afresh(template, tmp_path):
    # Mistake: forking whatever the environment: a library reads it at import (the thread count, say), so
    # the run would not be what a fresh interpreter with that environment would be.
    env = {**_run_env(tmp_path), "OMP_NUM_THREADS": "1" if os.environ.get("OMP_NUM_THREADS") != "1" else "2"}
    with (tmp_path / "log").open("w") as log:
        assert warm_start.start(["-c", "pass"], tmp_path, env, log.fileno()) is None


def test_a_template_that_dies_costs_a_grade_nothing_and_later_runs_start_afresh(tmp_path):
    # Mistakes: a grader that waits for ever on a template killed (for memory, say) under a run, or that
    # reads the run's end as the submission's; later runs asked of a dead template.
    with warm_test_processes() as template, (tmp_path / "log").open("w") as log:
        run = warm_start.start(["-c", "import os; os.execv('/bin/sleep', ['warm-run-orphaned', '600'])"],
                               tmp_path, _run_env(tmp_path), log.fileno())
        assert run is not None
        time.sleep(2)
        os.kill(template.process.pid, signal.SIGKILL)
        assert run.wait(90) == -signal.SIGKILL  # killed from outside: the grader's failure, graded again
        deadline = time.monotonic() + 30
        while any("warm-run-orphaned" in c for c in running_commands()) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any("warm-run-orphaned" in c for c in running_commands()), "the run outlived its template"
        assert warm_start.start(["-c", "pass"], tmp_path, _run_env(tmp_path), log.fileno()) is None
