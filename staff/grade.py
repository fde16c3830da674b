"""Grade one submission: this tree's public and hidden suites against the submission's package.

The suites run in a child process (`python -m pytest`) whose points plugin writes one JSON line per
collected test and per finished test. By default student code never runs in that process: every
adapter call goes to a worker process confined by `staff.sandbox` (its own user when the grader is
root, namespaces, Landlock, resource limits). Tests the run never finished (a crash, the time
limit) score 0 with a note, so every run ends in a complete result.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from adapters._text import shown_text
from staff import collected
from staff.outcomes import Details, Outcome
from staff.problem_files import hidden_test_files, public_test_files
from staff.sandbox import confine, memory, memory_group
from staff.sandbox.layout import Workspace, build, module_names
from staff.sandbox.removal import remove_tree, scratch_folder
from staff.sandbox.settings import Settings, default
from staff.submission import PACKAGE, Intake, SubmissionError, lay_package
from tests.grading import (
    FAILED,
    HIDDEN_VISIBILITY,
    NO_GPU_REASON,
    RECORD_FIELDS,
    SKIPPED,
    GradedTest,
    cuda_available,
    format_table,
    peak_rss_bytes,
    truncated,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
# What the suites need from this tree; the submission contributes only its package.
SUITE_PARTS = ("adapters", "tests", "pyproject.toml")
HIDDEN_SUITE = REPO_ROOT / "staff" / "hidden"
LISTED_TESTS = REPO_ROOT / collected.COLLECTED_FILE  # written by `staff bundle`; absent in the repo
REPORT, LOG = ".grading-report.jsonl", ".pytest.log"
SUMMARY_CHARS = 8000  # of the text above the points table in results.json
INTAKE_CHARS = 2000  # of the lines saying which files were graded (names come from the upload)
# Every test's output together, as results.json holds them (escaped): the file stays well under
# 1 MB whatever the submission prints or raises.
OUTPUT_BUDGET_BYTES = 600_000
_running: set[subprocess.Popen] = set()  # test runs in progress, so an interrupted grader can end them
_running_lock = threading.Lock()


KEEPER = Path(__file__).resolve().parent / "sandbox" / "keeper.py"
KEEPER_GRACE_S = 30.0  # for the keeper to end the run and every process below it


def _end(keeper: subprocess.Popen) -> None:
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
        _end(child)


@dataclass
class Grade:
    tests: list[GradedTest]
    output: str  # the summary shown to the student above the per-test results
    seconds: float
    protections: dict[str, str] = field(default_factory=dict)  # what confined the student's code
    memory: dict[str, int] = field(default_factory=dict)  # bytes: what grading cost the grader's processes
    outcome: Outcome = Outcome.GRADED  # how the grade ended
    details: Details = field(default_factory=dict)  # the outcome's facts (see staff.outcomes), paths scrubbed
    never_ran: dict[str, Outcome] = field(default_factory=dict)  # nodeid -> why that test never ran
    graded_files: dict[str, object] = field(default_factory=dict)  # what the intake took (Intake.as_data), scrubbed

    @property
    def score(self) -> float:
        return sum(t.earned for t in self.tests)

    @property
    def max_score(self) -> float:
        return sum(t.possible for t in self.tests)


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


def _child_env(pythonpath: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON"))}
    env.update(PYTHONPATH=str(pythonpath), PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0")
    return env


def import_error(workspace: Path, timeout_s: float = default("import_timeout_s")) -> str | None:
    """In-process grading only: import every module of the package in `workspace` in a child process
    (not confined) within `timeout_s` seconds; the error text, or None."""
    script = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    modules = module_names(workspace / PACKAGE, PACKAGE)
    try:
        done = subprocess.run([sys.executable, "-c", script, *modules], cwd=workspace, env=_child_env(workspace),
                              capture_output=True, text=True, errors="replace", timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return f"importing {PACKAGE} took longer than {timeout_s:g} s (is there work at module level?)"
    if done.returncode == 0:
        return None
    trace = done.stderr.strip().splitlines()
    return "\n".join(trace[-12:]).replace(str(workspace) + os.sep, "")


def _suites(hidden: bool, problems: set[int] | None = None) -> list[str]:
    """The suites to run, as pytest arguments: both folders, or the test files of some problems."""
    if problems is None:
        return ["tests", "staff/hidden"] if hidden else ["tests"]
    files = [path for n in sorted(problems) for path in public_test_files(REPO_ROOT, n)]
    files += [path for n in sorted(problems) for path in hidden_test_files(REPO_ROOT, n)] if hidden else []
    return [str(path.relative_to(REPO_ROOT)) for path in files]


def run_suite(workspace: Path, suites: list[str], timeout_s: float, verbose: bool, extra: list[str],
              progress: bool = True) -> tuple[Report, str]:
    """Run `suites` in a child process from `workspace`; the report, every collected test with its
    result, and the end of the run's log."""
    report_path, log_path = workspace / REPORT, workspace / LOG
    # Plain asserts: the checks' messages say everything, and rewriting every test module costs seconds.
    # No tracebacks from pytest: the points plugin writes each failure's text itself, far more cheaply.
    # Under a keeper (staff/sandbox/keeper.py): however the run ends, no process it started is left.
    command = [sys.executable, "-I", str(KEEPER), sys.executable, "-m", "pytest", *suites, "--grading-report",
               str(report_path), "-q", "--tb=no", "-p", "no:cacheprovider", "--color=no", "--assert=plain", *extra]
    killed_before = memory.oom_kills()
    with log_path.open("w") as log:
        env = {**_child_env(workspace), "STAFF_GRADER_PID": str(os.getpid())}
        child = subprocess.Popen(command, cwd=workspace, env=env, stdin=subprocess.DEVNULL,
                                 stdout=None if verbose else log, stderr=subprocess.STDOUT, start_new_session=True)
        with _running_lock:
            _running.add(child)
        deadline = time.monotonic() + timeout_s
        # On a terminal the bar redraws in place; in a log (CI, Gradescope) it writes a line now and then.
        interval = 0.5 if sys.stderr.isatty() else 15
        with tqdm(desc="grading", unit="test", disable=verbose or not progress, file=sys.stderr,
                  mininterval=interval) as bar:
            while child.poll() is None and time.monotonic() < deadline:
                time.sleep(0.2)
                progress = read_report(report_path)
                bar.total = len(progress.tests) or None
                bar.update(progress.finished - bar.n)
        timed_out = child.poll() is None
        if timed_out:
            _end(child)
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
    if "grader_out_of_memory" in report.notes:  # the sandbox plugin's note: a worker process, at import or a call
        report.outcome = Outcome.OUT_OF_MEMORY
        report.details = {"what": str(report.notes["grader_out_of_memory"]), "memory_limit_bytes": limit}
        return report, log_text
    if not report.tests:
        raise RuntimeError(f"the test suite collected nothing (exit {child.returncode}); its output:\n{log_text}")
    unfinished = [test for test in report.tests.values() if test.status is None]
    if unfinished:
        report.outcome, report.details = (Outcome.TIME_LIMIT, {"time_limit_s": timeout_s}) if timed_out else \
            (Outcome.PROCESS_ENDED, {"exit_code": child.returncode})
        for test in unfinished:
            _not_run(test, report.outcome, report.details, report.never_ran)
    return report, log_text


def machine_paths(workspace: Workspace) -> list[tuple[str, str]]:
    """(path, what to show instead) for the grading machine's folders, most specific first: nothing
    in results.json says where the grader keeps its files or its Python."""
    import site

    python = [sys.prefix, sys.base_prefix, *site.getsitepackages()]
    pairs = [(f"{workspace.code}{os.sep}", ""), (str(workspace.scratch), "<grading folder>"),
             *((folder, "<python>") for folder in python), (str(REPO_ROOT), "<grader>"),
             (os.path.expanduser("~"), "<home>")]
    return sorted({p: s for p, s in pairs if len(p) > 1}.items(), key=lambda pair: -len(pair[0]))


_BEFORE_PATH = r"[\w.~/-]"  # a path preceded by one of these is the end of another path
_AFTER_PATH = r"[\w~-]|\.\w"  # and followed by one of these, the start of another name


def scrub(text: str, paths: list[tuple[str, str]]) -> str:
    """`text` with each of `paths` (from `machine_paths`) replaced where it stands as a path of its own
    (home `/root` is not replaced inside `/autograder/root/x` nor in `/rootfs`), as `shown_text`
    makes it (a terminal escape or a bidi override from the submission reaches no TA's screen)."""
    for path, shown in paths:
        after = "" if path.endswith(os.sep) else f"(?!{_AFTER_PATH})"
        text = re.sub(f"(?<!{_BEFORE_PATH}){re.escape(path)}{after}", lambda _: shown, text)
    return shown_text(text)


def _scrubbed(data: object, paths: list[tuple[str, str]]) -> object:
    """`data` (JSON-like) with every string in it, keys included, scrubbed and cut to INTAKE_CHARS."""
    if isinstance(data, str):
        return truncated(scrub(data, paths), INTAKE_CHARS)
    if isinstance(data, dict):
        return {_scrubbed(key, paths): _scrubbed(value, paths) for key, value in data.items()}
    if isinstance(data, list):
        return [_scrubbed(item, paths) for item in data]
    return data


def _json_bytes(text: str) -> int:
    return len(json.dumps(text))  # as results.json holds it: a non-ASCII character takes 6 bytes


def share_output(tests: list[GradedTest], budget: int = OUTPUT_BUDGET_BYTES) -> None:
    """Cut the tests' outputs so that together they take about `budget` bytes of results.json at most:
    shortest first, each keeps what it has up to an equal share of what is left, so short outputs stay
    whole and what they leave goes to the long ones."""
    costs = {id(t): _json_bytes(t.output) for t in tests}
    if sum(costs.values()) <= budget:
        return
    left, waiting = budget, sorted(tests, key=lambda t: costs[id(t)])
    for i, test in enumerate(waiting):
        share, cost = left // (len(waiting) - i), costs[id(test)]
        if cost > share:
            test.output = truncated(test.output, max(len(test.output) * share // cost, 200))
            cost = _json_bytes(test.output)
        left -= cost


def _not_run(test: GradedTest, outcome: Outcome, details: Details, never_ran: dict[str, Outcome]) -> None:
    """Score a test that `outcome` kept from running, and record why in `never_ran`: failed, unless it
    is a GPU test on a machine without one, which would have been skipped (0 of 0) had it run."""
    never_ran[test.nodeid] = outcome
    if test.needs_cuda and not cuda_available():
        test.status, test.output = SKIPPED, f"skipped: {NO_GPU_REASON}"
    else:
        test.status, test.output = FAILED, outcome.never_ran(details)


def marker_expression(gpu: bool) -> str:
    """pytest's `-m` for a grade: the GPU part is the `cuda` tests alone, and a CPU grade never runs
    them, even on a machine that has a GPU (they would run under the CPU grade's memory limit, and
    the gradebook would count them in both parts)."""
    return "cuda" if gpu else "not cuda"


def _selection(hidden: bool, problems: set[int] | None, gpu: bool | None) -> list[str]:
    """The pytest arguments that select a grade's tests."""
    return [*_suites(hidden, problems), *([] if gpu is None else ["-m", marker_expression(gpu)])]


def collect_only(workspace: Path, hidden: bool = False, problems: set[int] | None = None,
                 gpu: bool | None = None, hidden_visibility: str = HIDDEN_VISIBILITY,
                 complete: bool = False) -> list[GradedTest]:
    """The graded tests of the suites in `workspace`, without running any (collection never imports
    student code): every test (`gpu` None), or those a GPU (True) or CPU (False) grade runs. With
    `complete`, a collection that failed part-way (a test file that does not import, a problem marker
    not in PROBLEMS) raises RuntimeError instead of returning what was collected: `staff check --fix`
    must never derive a total from half the tests."""
    with scratch_folder("staff-collect-") as scratch:
        report = scratch / "report.jsonl"
        done = subprocess.run([sys.executable, "-m", "pytest", *_selection(hidden, problems, gpu), "--collect-only",
                               "-q", "--grading-report", str(report), "-p", "no:cacheprovider",
                               f"--hidden-visibility={hidden_visibility}"],
                              cwd=workspace, env=_child_env(workspace), capture_output=True, text=True,
                              errors="replace", stdin=subprocess.DEVNULL, check=False)
        tests = read_report(report).tests
    if not tests or (complete and done.returncode != 0):
        said = "\n".join((done.stdout + done.stderr).strip().splitlines()[-8:])
        what = "collected nothing" if not tests else "failed to collect some tests"
        raise RuntimeError(f"the test suite {what} (pytest exit {done.returncode}):\n{said}")
    return list(tests.values())


def listing_key(repo: Path, hidden: bool, problems: set[int] | None, gpu: bool | None,
                hidden_visibility: str) -> dict[str, object]:
    """What the list of a grade's tests depends on (see `staff.collected`), for the suites in `repo`."""
    parts = [*SUITE_PARTS, *([str(HIDDEN_SUITE.relative_to(REPO_ROOT))] if hidden else [])]
    return collected.key(repo, parts, _selection(hidden, problems, gpu), hidden_visibility)


def graded_tests(workspace: Path, hidden: bool, problems: set[int] | None, gpu: bool | None,
                 hidden_visibility: str) -> list[GradedTest]:
    """The tests a grade would run, as the bundle listed them when the list is for these suites and
    this selection, else collected from the suites in `workspace` (a copy of this tree's)."""
    listed = collected.load(LISTED_TESTS, listing_key(REPO_ROOT, hidden, problems, gpu, hidden_visibility))
    print(f"the graded tests: {'listed by the bundle' if listed is not None else 'collected'}", file=sys.stderr)
    return listed if listed is not None else collect_only(workspace, hidden, problems, gpu, hidden_visibility)


def _end_worker_user(uid: int | None) -> None:
    """After the run, however it ended: every process of the worker's user of its own killed, and
    what it left in the shared folders removed (the keeper has ended every process below the run;
    this catches whatever is not, by uid). Nothing to do without such a user."""
    if uid is None or os.geteuid() != 0:
        return
    from staff.sandbox.client import kill_user
    from staff.sandbox.leftovers import remove_leftovers

    kill_user(uid)
    left = remove_leftovers(uid)
    if left:
        print(f"the grader could not remove what the worker's user {uid} left: {left[:5]}", file=sys.stderr)


def _lay(submission: Path, scratch: Path) -> tuple[Path, Intake | None, str | None]:
    """The submission's package laid out in `scratch/submitted`, what was taken in, and why it is
    unusable (None, and the reason, when it is)."""
    package = scratch / "submitted"
    try:
        return package, lay_package(submission, package), None
    except SubmissionError as error:
        remove_tree(package)
        package.mkdir()
        (package / "__init__.py").touch()
        return package, None, str(error)


def grade(submission: Path, settings: Settings | None = None, *, jobs: int = 1, verbose: bool = False,
          progress: bool = True, on_graded: Callable[[Grade], None] | None = None) -> Grade:
    """Grade a submission folder or zip. Never raises for a broken submission: it scores 0 instead.

    Args:
        submission: a folder holding cs336_basics/, that folder, or a zip of either.
        settings: the grade's settings (None: the defaults), see staff/sandbox/settings.py: the time
            limits, the sandbox's limits and protections, the hidden suite and its visibility, the
            problems, the GPU part (the public tests marked `cuda`, on this machine's GPU; a CPU grade
            deselects them, GPU or not, so the two parts add up), in-process grading (debugging and
            timing only: a hostile submission can forge its grade that way).
        jobs: grades run at once beside this one (a batch's), which share the CPUs and the memory.
        verbose: stream pytest's output instead of showing a progress bar.
        progress: show a progress bar of the tests.
        on_graded: called with the grade once it is made, before the scratch folder is removed (to
            write results.json first: whatever the submission left there cannot delay or lose it).
    """
    settings = settings if settings is not None else Settings()
    gpu, problems, in_process, visibility = settings.gpu, settings.problems, settings.in_process, \
        settings.hidden_visibility
    hidden = settings.hidden and HIDDEN_SUITE.is_dir() and not gpu
    started = time.monotonic()
    if not in_process:  # a worker of this user (as an ordinary user) cannot read this process's environment or memory
        confine.set_dumpable(False)
    # The scratch folder goes however the grade ends, and its removal (of whatever the submission
    # left there: a tree thousands of folders deep, closed folders) never costs the grade.
    with scratch_folder("staff-grade-") as scratch:
        package, intake, problem = _lay(submission, scratch)
        # An unusable submission is not run at all: its tests are only listed (by the bundle, where it
        # listed them), in the simple layout.
        confined = None if in_process or problem is not None else settings
        workspace: Workspace = build(scratch, REPO_ROOT, package, SUITE_PARTS, hidden, confined, jobs)
        remove_tree(package)
        extra = [f"--hidden-visibility={visibility}", "-m", marker_expression(gpu)]
        if in_process:
            if problem is None:
                problem = import_error(workspace.grader, settings.import_timeout_s)
            extra.append(f"--timeout={settings.test_timeout_s:g}")
        else:  # the sandbox plugin times each test's calls; pytest-timeout is the backstop, worker start included
            extra += ["-p", "staff.sandbox.plugin", "--sandbox", str(workspace.settings),
                      f"--timeout={settings.test_timeout_s + settings.startup_timeout_s:g}"]
        protections, usage = {}, {}
        if problem is None:
            report, log = run_suite(workspace.grader, _suites(hidden, problems), settings.run_timeout_s, verbose,
                                    extra, progress)
            _end_worker_user(workspace.uid)
            tests, outcome, details, never_ran = list(report.tests.values()), report.outcome, report.details, \
                report.never_ran
            protections = dict(report.notes.get("protections") or {})
            if workspace.no_user is not None:  # the worker only knows it was given no uid; this says why
                protections["separate user"] = f"off: {workspace.no_user}"
            if isinstance(report.notes.get("peak_rss_bytes"), int):
                usage["test process peak RSS"] = report.notes["peak_rss_bytes"]
            if isinstance(report.notes.get("worker_peak_bytes"), int):
                usage["worker memory cgroup peak"] = report.notes["worker_peak_bytes"]
            if outcome.grader_failure:
                # Nothing of this run speaks about the submission: no test is failed for it.
                tests, never_ran = [], {}
            elif "import_error" in report.notes:
                outcome, details = Outcome.NOT_LOADED, {"load_error": str(report.notes["import_error"])}
            elif never_ran:
                # The log names hidden tests and holds what the submission printed: the staff see it, not the student.
                print(f"the test run stopped early; the end of its log:\n{log[-2000:]}", file=sys.stderr)
        else:
            tests = graded_tests(workspace.grader, hidden, problems, gpu, visibility)
            outcome, details, never_ran = Outcome.NOT_LOADED, {"load_error": problem}, {}
            for test in tests:
                _not_run(test, outcome, details, never_ran)
        if in_process:
            protections = {"worker process": "off: graded in-process (--in-process)"}
        # The same submission graded twice reads the same wherever it was graded, and no text from
        # the worker costs more than its share of results.json.
        paths = machine_paths(workspace)
        for test in tests:
            test.output = truncated(scrub(test.output, paths))
        share_output(tests)
        details = {key: scrub(value, paths) if isinstance(value, str) else value for key, value in details.items()}
        summary = truncated(outcome.summary(details), SUMMARY_CHARS)
        graded_files = {} if intake is None else _scrubbed(intake.as_data(), paths)
        if intake is not None and not outcome.grader_failure:  # which files: a student who uploaded stale ones sees it
            summary = f"{summary}\n\n{truncated(scrub(intake.describe(), paths), INTAKE_CHARS)}".strip()
        details = {key: truncated(value, SUMMARY_CHARS) if isinstance(value, str) else value
                   for key, value in details.items()}
        usage["grader process peak RSS"] = peak_rss_bytes()
        peak = memory.peak_bytes()
        if peak is not None:
            usage["memory cgroup peak (all it holds, page cache included)"] = peak
        table = "" if outcome.grader_failure else "\n".join(format_table(tests, visibility == "visible"))
        result = Grade(tests=tests, output=f"{summary}\n\n{table}".strip(), seconds=time.monotonic() - started,
                       protections=protections, memory=usage, outcome=outcome, details=details, never_ran=never_ran,
                       graded_files=graded_files)
        if on_graded is not None:  # the grade is kept (results.json written) before the clean-up starts
            on_graded(result)
    return result
