"""Grade one submission: fresh copy of this tree's tests and adapters + the submission's package.

The suite runs in a child process (`python -m pytest`) whose grading plugin writes one JSON line
per collected test and per finished test. Tests the run never finished (a crash, `os._exit`, the
time limit) score 0 with a note, so every run ends in a complete results file.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from staff.submission import PACKAGE, SubmissionError, lay_package
from tests.grading import FAILED, GradedTest, format_table

REPO_ROOT = Path(__file__).resolve().parent.parent
# What the suite needs from this tree; the submission contributes only its package.
SUITE_PARTS = ("adapters", "tests", "pyproject.toml")
IMPORT_TIMEOUT_S = 120


@dataclass
class Grade:
    tests: list[GradedTest]
    output: str  # the summary shown to the student above the per-test results
    seconds: float

    @property
    def score(self) -> float:
        return sum(t.earned for t in self.tests)

    @property
    def max_score(self) -> float:
        return sum(t.possible for t in self.tests)


def build_workspace(submission: Path, workspace: Path) -> None:
    """Lay this tree's suite and the submission's package side by side in `workspace`."""
    for part in SUITE_PARTS:
        source = REPO_ROOT / part
        if source.is_dir():
            shutil.copytree(source, workspace / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copyfile(source, workspace / part)
    lay_package(submission, workspace / PACKAGE)


def _child_env(workspace: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON"))}
    env.update(PYTHONPATH=str(workspace), PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0")
    return env


def import_error(workspace: Path) -> str | None:
    """Import every module of the submitted package in a child process; the error text, or None."""
    modules = sorted(
        ".".join((PACKAGE, *p.relative_to(workspace / PACKAGE).with_suffix("").parts)).removesuffix(".__init__")
        for p in (workspace / PACKAGE).rglob("*.py")
    )
    script = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    try:
        done = subprocess.run([sys.executable, "-c", script, *modules], cwd=workspace, env=_child_env(workspace),
                              capture_output=True, text=True, timeout=IMPORT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"importing {PACKAGE} took longer than {IMPORT_TIMEOUT_S} s (is there work at module level?)"
    if done.returncode == 0:
        return None
    trace = done.stderr.strip().splitlines()
    # Keep the part of the traceback that is about the student's files.
    return "\n".join(trace[-12:]).replace(str(workspace) + os.sep, "")


def read_report(path: Path) -> tuple[dict[str, GradedTest], int]:
    """Tests collected so far, with results filled in; and how many have finished."""
    tests: dict[str, GradedTest] = {}
    finished = 0
    if not path.exists():
        return tests, 0
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut off by a crash
        if record.get("kind") == "collected":
            fields = {k: record[k] for k in ("nodeid", "name", "number", "problem", "points", "needs_cuda")}
            tests[record["nodeid"]] = GradedTest(**fields)
        elif record.get("kind") == "result" and record.get("nodeid") in tests:
            test = tests[record["nodeid"]]
            test.status, test.output = record["status"], record["output"]
            finished += 1
    return tests, finished


def run_suite(
    workspace: Path, timeout_s: float, verbose: bool, test_timeout_s: float | None = None
) -> tuple[list[GradedTest], str]:
    """Run the suite in a child process; every collected test with its result, and the run's log."""
    report = workspace / ".grading-report.jsonl"
    log_path = workspace / ".pytest.log"
    command = [sys.executable, "-m", "pytest", "tests", "--grading-report", str(report), "-q", "--tb=short",
               "-p", "no:cacheprovider", "--color=no"]
    if test_timeout_s is not None:
        command.append(f"--timeout={test_timeout_s:g}")
    with log_path.open("w") as log:
        child = subprocess.Popen(command, cwd=workspace, env=_child_env(workspace), stdin=subprocess.DEVNULL,
                                 stdout=None if verbose else log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        # On a terminal the bar redraws in place; in a log (CI, Gradescope) it writes a line now and then.
        interval = 0.5 if sys.stderr.isatty() else 15
        with tqdm(desc="grading", unit="test", disable=verbose, file=sys.stderr, mininterval=interval) as bar:
            while child.poll() is None and time.monotonic() < deadline:
                time.sleep(0.2)
                tests, finished = read_report(report)
                bar.total = len(tests) or None
                bar.update(finished - bar.n)
        timed_out = child.poll() is None
        if timed_out:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    tests, _ = read_report(report)
    if not tests:
        log_text = log_path.read_text(errors="replace")
        raise RuntimeError(f"the test suite collected nothing (exit {child.returncode}); its output:\n{log_text[-4000:]}")
    for test in tests.values():
        if test.status is None:
            why = f"the time limit of {timeout_s:g} s" if timed_out else f"the test process ended (exit code {child.returncode})"
            test.status, test.output = FAILED, f"FAILED: this test never finished: {why} stopped the run."
    return list(tests.values()), log_path.read_text(errors="replace") if not verbose else ""


def collect_only(workspace: Path) -> list[GradedTest]:
    """The graded tests of the suite in `workspace`, without running any (collection never imports
    student code)."""
    with tempfile.TemporaryDirectory(prefix="staff-collect-") as scratch:
        report = Path(scratch) / "report.jsonl"
        subprocess.run([sys.executable, "-m", "pytest", "tests", "--collect-only", "-q", "--grading-report",
                        str(report), "-p", "no:cacheprovider"], cwd=workspace, env=_child_env(workspace),
                       capture_output=True, stdin=subprocess.DEVNULL, check=False)
        tests, _ = read_report(report)
    if not tests:
        raise RuntimeError("the test suite collected nothing; run `uv run pytest tests --collect-only` to see why")
    return list(tests.values())


def grade(
    submission: Path, timeout_s: float = 1800, verbose: bool = False, test_timeout_s: float | None = None
) -> Grade:
    """Grade a submission folder or zip. Never raises for a broken submission: it scores 0 instead.

    Args:
        submission: a folder holding cs336_basics/, that folder, or a zip of either.
        timeout_s: seconds the whole test run may take.
        verbose: stream pytest's output instead of showing a progress bar.
        test_timeout_s: seconds one test may take; None keeps the suite's own setting (pyproject.toml).
    """
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="staff-grade-") as scratch:
        workspace = Path(scratch)
        summary = ""
        try:
            build_workspace(submission, workspace)
            problem = import_error(workspace)
        except SubmissionError as error:
            problem = str(error)
            shutil.rmtree(workspace / PACKAGE, ignore_errors=True)
            (workspace / PACKAGE).mkdir()
            (workspace / PACKAGE / "__init__.py").touch()
        if problem is None:
            tests, log = run_suite(workspace, timeout_s, verbose, test_timeout_s)
            if any(t.output.startswith("FAILED: this test never finished") for t in tests):
                summary = "The test run stopped early; its last output:\n" + log[-2000:]
        else:
            tests = collect_only(workspace)
            message = f"Your submission could not be loaded, so no test ran:\n{problem}"
            for test in tests:
                test.status, test.output = FAILED, message
            summary = message
    table = "\n".join(format_table(tests))
    return Grade(tests=tests, output=f"{summary}\n\n{table}".strip(), seconds=time.monotonic() - started)
