"""Run a grade's test process: `python -m pytest` under a keeper, read what its points plugin wrote.

The suites run in a child process whose points plugin writes one JSON line per collected test and
per finished test (`read_report`). Tests the run never finished (a crash, the time limit) score 0
with a note (`not_run`), so every run ends in a complete report. A run is ended, however the grader
ends, with every process below it (`stop_running`).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from adapters._text import shown_text
from staff.grading import warm_start
from staff.grading.outcomes import Details, Outcome
from staff.grading.warm_start import KEEPER
from staff.intake.submission import PACKAGE
from staff.sandbox import memory, memory_group
from staff.sandbox.layout import module_names
from staff.sandbox.settings import default
from tests.grading import FAILED, NO_GPU_REASON, RECORD_FIELDS, SKIPPED, GradedTest, Note, cuda_available

REPORT, LOG = ".grading-report.jsonl", ".pytest.log"
_running: set[subprocess.Popen] = set()  # test runs in progress, so an interrupted grader can end them
_running_lock = threading.Lock()


KEEPER_GRACE_S = 30.0  # for the keeper to end the run and every process below it


def end_run(keeper: subprocess.Popen) -> None:
    """End a test run: its keeper kills the run and every process below it, then ends; a keeper
    that has not ended within KEEPER_GRACE_S is killed with its process group."""
    try:
        keeper.send_signal(signal.SIGTERM)
        keeper.wait(KEEPER_GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(keeper.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def stop_running() -> None:
    """End every test run this process started that is still going (and, with it, its worker)."""
    with _running_lock:
        children = list(_running)
    for child in children:  # every keeper starts its clean-up at once; then each is waited for
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signal.SIGTERM)
    for child in children:
        end_run(child)


@dataclass
class Report:
    """What the points plugin wrote: the graded tests with their results, and the grader's notes."""

    tests: dict[str, GradedTest] = field(default_factory=dict)
    finished: int = 0
    notes: dict[str, object] = field(default_factory=dict)
    outcome: Outcome = Outcome.GRADED  # set by run_suite when the run did not end on its own with every test
    details: Details = field(default_factory=dict)  # that outcome's facts
    never_ran: dict[str, Outcome] = field(default_factory=dict)  # nodeid -> why that test never ran


def read_report(path: Path) -> Report:
    """The report so far. Lines that are cut off or malformed are skipped: a run that died part-way
    still yields what it wrote before."""
    report = Report()
    if not path.exists():
        return report
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
            kind = record["kind"]
            if kind == "collected":
                fields = {k: record[k] for k in RECORD_FIELDS}
                report.tests[str(fields["nodeid"])] = GradedTest(**fields)
            elif kind == "result" and record["nodeid"] in report.tests:
                test = report.tests[record["nodeid"]]
                test.status, test.output = str(record["status"]), str(record["output"])
                report.finished += 1
            else:
                report.notes[str(kind)] = record["value"]
        except (ValueError, KeyError, TypeError):
            continue
    return report


# The pytest plugins a grade's test process loads: no other installed one is loaded (pytest loads every
# installed plugin by default; xdist's and jaxtyping's imports alone cost a second of CPU in each grade).
# pytest-timeout for --timeout; hypothesis's for the hidden suites' property tests and --hypothesis-seed.
PLUGINS = ("-p", "pytest_timeout", "-p", "_hypothesis_pytestplugin")


def child_env(pythonpath: Path) -> dict[str, str]:
    """The test process's environment: this one's, less pytest's and Python's variables, importing from
    `pythonpath`, with no pytest plugin loaded unless named (`PLUGINS`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON"))}
    env.update(PYTHONPATH=str(pythonpath), PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0",
               PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    return env


def warm_test_processes() -> contextlib.AbstractContextManager:
    """Within this block (a batch's), CPU grades' test runs are forked from one template process that
    imported torch, numpy, pytest and hypothesis once (`staff.grading.warm_start`)."""
    env = {k: v for k, v in child_env(Path()).items() if k not in warm_start.VARIES}
    return warm_start.warm_test_processes(env)


def import_error(workspace: Path, timeout_s: float = default("import_timeout_s")) -> str | None:
    """In-process grading only: import every module of the package in `workspace` in a child process
    (not confined) within `timeout_s` seconds; the error text, or None."""
    script = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    modules = module_names(workspace / PACKAGE, PACKAGE)
    try:
        done = subprocess.run([sys.executable, "-c", script, *modules], cwd=workspace, env=child_env(workspace),
                              capture_output=True, text=True, errors="replace", timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return f"importing {PACKAGE} took longer than {timeout_s:g} s (is there work at module level?)"
    if done.returncode == 0:
        return None
    trace = done.stderr.strip().splitlines()
    return "\n".join(trace[-12:]).replace(str(workspace) + os.sep, "")


# Signals that end a process only when sent to it: the test process runs trusted code, and a sandboxed
# worker cannot signal it, so such an end came from outside the submission (a crash is SIGSEGV or SIGABRT).
FROM_OUTSIDE = (signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)


def run_suite(workspace: Path, suites: list[str], timeout_s: float, verbose: bool, extra: list[str],
              progress: bool = True, sandboxed: bool = True, warm: bool = False) -> tuple[Report, str]:
    """Run `suites` in a child process from `workspace`; the report, every collected test with its
    result, and the end of the run's log. With `sandboxed` (student code runs in the sandbox's
    worker, never in the test process), a test process ended by a signal from outside is the
    grader's failure, graded again later, not the submission's. With `warm`, inside
    `warm_start.warm_test_processes` (a batch), the run is forked from its template."""
    report_path, log_path = workspace / REPORT, workspace / LOG
    # Plain asserts: the checks' messages say everything, and rewriting every test module costs seconds.
    # No tracebacks from pytest: the points plugin writes each failure's text itself, far more cheaply.
    # Under a keeper (staff/sandbox/keeper.py): however the run ends, no process it started is left.
    argv = ["-m", "pytest", *PLUGINS, *suites, "--grading-report", str(report_path), "-q", "--tb=no", "-p",
            "no:cacheprovider", "--color=no", "--assert=plain", *extra]
    killed_before = memory.oom_kills()
    with log_path.open("w") as log:
        env = {**child_env(workspace), "STAFF_GRADER_PID": str(os.getpid())}
        child = warm_start.start(argv, workspace, env, log.fileno()) if warm and not verbose else None
        if child is None:
            child = subprocess.Popen([sys.executable, "-I", str(KEEPER), sys.executable, *argv], cwd=workspace,
                                     env=env, stdin=subprocess.DEVNULL, stdout=None if verbose else log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        with _running_lock:
            _running.add(child)
        deadline = time.monotonic() + timeout_s
        # On a terminal the bar redraws in place; in a log (CI, Gradescope) it writes a line now and then.
        interval = 0.5 if sys.stderr.isatty() else 15
        shown = progress and not verbose
        with tqdm(desc="grading", unit="test", disable=not shown, file=sys.stderr, mininterval=interval) as bar:
            while child.poll() is None and time.monotonic() < deadline:
                time.sleep(0.2)
                if shown:  # the report so far, read whole each time: a batch, which shows no bar, skips it
                    so_far = read_report(report_path)
                    bar.total = len(so_far.tests) or None
                    bar.update(so_far.finished - bar.n)
        timed_out = child.poll() is None
        if timed_out:
            end_run(child)
        child.wait()
        with _running_lock:
            _running.discard(child)
    left = memory_group.remove_left_by(child.pid)  # its workers' memory groups, where it was killed
    if left:
        print(f"the grader could not remove the workers' memory cgroups {left}", file=sys.stderr)
    report = read_report(report_path)
    log_text = shown_text(log_path.read_text(errors="replace")[-4000:])  # what the submission printed
    limit = memory.limit_bytes()
    if child.returncode == -signal.SIGKILL and not timed_out and memory.oom_kills() > killed_before:
        size = f" ({limit / 2**20:.0f} MiB)" if limit else ""
        report.outcome = Outcome.OUT_OF_MEMORY
        report.details = {"what": f"the test process was killed when the container's memory{size} ran out",
                          "memory_limit_bytes": limit}
        return report, log_text
    if sandboxed and not timed_out and child.returncode in [-s for s in FROM_OUTSIDE]:
        report.outcome, report.details = Outcome.KILLED, {"signal": signal.Signals(-child.returncode).name}
        return report, log_text
    if Note.GRADER_OUT_OF_MEMORY in report.notes:  # the sandbox plugin's note: a worker process, at import or a call
        report.outcome = Outcome.OUT_OF_MEMORY
        report.details = {"what": str(report.notes[Note.GRADER_OUT_OF_MEMORY]), "memory_limit_bytes": limit}
        return report, log_text
    if Note.GRADER_ERROR in report.notes:  # the sandbox plugin's: the worker did not start, before any student code
        report.outcome, report.details = Outcome.GRADER_ERROR, {"error": str(report.notes[Note.GRADER_ERROR])}
        return report, log_text
    preflight = report.notes.get(Note.CUDA_PREFLIGHT)
    if isinstance(preflight, dict) and preflight.get("passed") is not True:  # the sandbox plugin's: a GPU grade
        report.outcome, report.details = Outcome.CUDA_UNAVAILABLE, {"error": str(preflight.get("said", ""))}
        return report, log_text
    if not report.tests:
        raise RuntimeError(f"the test suite collected nothing (exit {child.returncode}); its output:\n{log_text}")
    unfinished = [test for test in report.tests.values() if test.status is None]
    if unfinished:
        report.outcome, report.details = (Outcome.TIME_LIMIT, {"time_limit_s": timeout_s}) if timed_out else \
            (Outcome.PROCESS_ENDED, {"exit_code": child.returncode})
        for test in unfinished:
            not_run(test, report.outcome, report.details, report.never_ran)
    return report, log_text


def not_run(test: GradedTest, outcome: Outcome, details: Details, never_ran: dict[str, Outcome]) -> None:
    """Score a test that `outcome` kept from running, and record why in `never_ran`: failed, unless it
    is a GPU test on a machine without one, which would have been skipped (0 of 0) had it run."""
    never_ran[test.nodeid] = outcome
    if test.needs_cuda and not cuda_available():
        test.status, test.output = SKIPPED, f"skipped: {NO_GPU_REASON}"
    else:
        test.status, test.output = FAILED, outcome.never_ran(details)
