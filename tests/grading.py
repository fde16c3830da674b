"""Points for tests: the pytest plugin behind the per-problem table and the staff grader.

Every graded test belongs to one problem (module marker `problem(N)`) and is worth some points
(marker `points(P)`). Graded tests are the public ones in this folder and, when the staff grade,
the hidden ones. A test earns its points only when it passes; a `cuda` test skipped for want of a
GPU (or of one the tests have figures for) counts as 0 of 0. Any other skip or xfail counts as a
failure: code under test cannot take points off the table by skipping.

With `--grading-report PATH` the plugin also writes one JSON object per line to PATH: a
"collected" line per graded test when collection ends, then a "result" line as each test finishes,
so a run that dies part-way still says which tests it reached.

A failed test's output is built from the exception, cheaply (the grader runs with --tb=no), by
tests/failure_output.py: a hidden test never shows its source; a test whose visibility is "hidden"
also keeps its expected values to itself.
"""

from __future__ import annotations

import enum
import importlib.util
import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.failure_output import failure_text, truncated
from tests.problems import PROBLEMS, TITLE_WIDTH

# A `cuda` test skipped with a reason starting so (no GPU, or one the tests have no figures for)
# counts as 0 of 0, neither earned nor lost; any other skip is a failure.
GPU_SKIP_PREFIX = "needs a CUDA GPU"
NO_GPU_REASON = f"{GPU_SKIP_PREFIX}: torch.cuda.is_available() is False on this machine"
# Gradescope's visibilities: "hidden" (staff only), "after_due_date", "after_published", "visible".
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
PUBLIC_VISIBILITY, HIDDEN_VISIBILITY = "visible", "after_due_date"

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"


class Note(enum.StrEnum):
    """The kinds of note a grading report holds beside its tests, named once for the two sides that
    write them (this plugin, the staff's sandbox plugin in the test process) and the grader that reads
    them (staff/grading/suite_run.py, staff/grading/grade.py)."""

    PROTECTIONS = "protections"  # each protection of the worker: "on", or "off: why"
    IMPORT_ERROR = "import_error"  # why the submission's package could not be imported
    CUDA_PREFLIGHT = "cuda_preflight"  # a GPU grade's CUDA start in the confined worker: mode, passed, said
    GRADER_OUT_OF_MEMORY = "grader_out_of_memory"  # the container, not the code, ran out: what was killed
    GRADER_ERROR = "grader_error"  # the worker did not start, before any student code
    WORKER_PEAK_BYTES = "worker_peak_bytes"  # all the worker's memory group held at once
    PEAK_RSS_BYTES = "peak_rss_bytes"  # the test process's own peak resident memory


def cuda_available() -> bool:
    """Whether torch sees a CUDA GPU. torch is imported only here, when a `cuda` test asks: the staff's
    grader reads this module too, and its own process never needs PyTorch (about 300 MB of memory)."""
    import torch

    return torch.cuda.is_available()


@dataclass
class GradedTest:
    nodeid: str
    name: str
    number: str  # "P<problem>-<index>", e.g. "P3-2": not "3.2", which reads as a handout section
    problem: int
    points: float
    needs_cuda: bool
    hidden: bool = False
    visibility: str = PUBLIC_VISIBILITY
    status: str | None = None  # None until the test has finished
    output: str = ""

    @property
    def earned(self) -> float:
        return self.points if self.status == PASSED else 0.0

    @property
    def possible(self) -> float:
        return 0.0 if self.status == SKIPPED else self.points


RECORD_FIELDS = ("nodeid", "name", "number", "problem", "points", "needs_cuda", "hidden", "visibility")
GRADED_PROPERTY = "graded_test"  # the user property that carries a test's record to the main process


@dataclass(eq=False)  # pluggy keeps plugins in sets, so identity hashing is needed
class PointsPlugin:
    """Tracks graded tests through one pytest session."""

    public_root: Path
    hidden_root: Path | None
    report_path: Path | None
    hidden_visibility: str = HIDDEN_VISIBILITY
    tests: dict[str, GradedTest] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)  # nodeid -> what a hidden test may say

    def _write(self, record: dict) -> None:
        if self.report_path is not None:
            with self.report_path.open("a", encoding="utf-8") as report:
                report.write(json.dumps(record) + "\n")

    def note(self, kind: str, value) -> None:
        """Add a line of another kind to the grading report (the grader's notes about the run)."""
        self._write({"kind": kind, "value": value})

    def _hidden(self, item: pytest.Item) -> bool | None:
        """False for a public test, True for a hidden one, None for a test that is not graded."""
        path = Path(item.path)
        if self.public_root in path.parents:
            return False
        if self.hidden_root is not None and self.hidden_root in path.parents:
            return True
        return None

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        problems_seen: dict[int, int] = {}
        for item in items:
            hidden = self._hidden(item)
            if hidden is None:
                continue
            problem, points = item.get_closest_marker("problem"), item.get_closest_marker("points")
            if problem is None or points is None or problem.args[0] not in PROBLEMS:
                raise pytest.UsageError(
                    f"{item.nodeid}: every graded test needs a problem(N) marker with N in "
                    f"{sorted(PROBLEMS)} and a points(P) marker"
                )
            marked = item.get_closest_marker("visibility")
            visibility = marked.args[0] if marked else self.hidden_visibility if hidden else PUBLIC_VISIBILITY
            if visibility not in VISIBILITIES:
                raise pytest.UsageError(f"{item.nodeid}: visibility {visibility!r} is not one of {VISIBILITIES}")
            number = problem.args[0]
            problems_seen[number] = problems_seen.get(number, 0) + 1
            self.tests[item.nodeid] = GradedTest(
                nodeid=item.nodeid,
                name=item.nodeid.split("::", 1)[-1],
                number=f"P{number}-{problems_seen[number]}",
                problem=number,
                points=float(points.args[0]),
                needs_cuda=item.get_closest_marker("cuda") is not None,
                hidden=hidden,
                visibility=visibility,
            )

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for test in self.tests.values():
            self._write({"kind": "collected", **{k: getattr(test, k) for k in RECORD_FIELDS}})

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if item.get_closest_marker("cuda") is not None and not cuda_available():
            pytest.skip(NO_GPU_REASON)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        report = yield
        test = self.tests.get(item.nodeid)
        if test is not None:  # for a run split over processes (pytest-xdist), whose main process collects nothing
            report.user_properties.append((GRADED_PROPERTY, {k: getattr(test, k) for k in RECORD_FIELDS}))
        if test is not None and call.excinfo is not None and report.failed:
            roots = [self.public_root] if self.hidden_root is None else [self.public_root, self.hidden_root]
            self.failures[item.nodeid] = failure_text(call.excinfo.value, test, roots, PROBLEMS[test.problem].handout)
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        test = self.tests.get(report.nodeid)
        if test is None:  # run in another process: the test's record came with its report
            record = dict(report.user_properties).get(GRADED_PROPERTY)
            if record is None:
                return
            test = self.tests[report.nodeid] = GradedTest(**record)
        if report.failed:
            phase = "" if report.when == "call" else f" (during {report.when})"
            text = self.failures.pop(report.nodeid, None)
            if text is None:  # a failure pytest made up itself (a time-out, say)
                crash = getattr(report.longrepr, "reprcrash", None)
                text = crash.message if crash is not None else str(report.longrepr or "failed")
            test.status, test.output = FAILED, truncated(f"FAILED{phase}\n{text}")
        elif report.skipped and test.status is None:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            if test.needs_cuda and GPU_SKIP_PREFIX in reason and not hasattr(report, "wasxfail"):
                test.status, test.output = SKIPPED, f"skipped: {reason.removeprefix('Skipped: ')}"
            else:
                test.status, test.output = FAILED, f"FAILED: the test was skipped or xfailed unexpectedly ({reason})"
        elif report.when == "call" and report.passed and test.status is None:
            test.status = PASSED
        if report.when == "teardown":
            test.status = test.status or FAILED
            self._write({"kind": "result", "nodeid": test.nodeid, "status": test.status, "output": test.output})

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.report_path is not None:
            self.note(Note.PEAK_RSS_BYTES, peak_rss_bytes())  # what grading cost this process (staff figures)
        # Printed last, after pytest's own summary, so a student never scrolls up to find it.
        finished = [t for t in self.tests.values() if t.status is not None]
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if finished and reporter is not None and not hasattr(config, "workerinput"):  # not in an xdist worker
            reporter.write_sep("=", "points by problem")
            for line in format_table(finished, hidden_shown=True):
                reporter.write_line(line)


def peak_rss_bytes() -> int:
    """This process's peak resident memory in bytes (ru_maxrss: KiB on Linux, bytes on macOS)."""
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def format_table(tests: list[GradedTest], hidden_shown: bool = False) -> list[str]:
    """The per-problem table: points earned / possible and the failed tests, one problem a line.

    The hidden tests' points and names appear only with `hidden_shown`; otherwise a line says how
    many points the hidden tests are worth (each problem's share is on its handout page).
    """
    shown = [t for t in tests if hidden_shown or not t.hidden]
    lines = [f"{'problem':<{TITLE_WIDTH}}{'points':>15}   failed tests"]
    for number, problem in PROBLEMS.items():
        group = [t for t in shown if t.problem == number]
        if not group:
            continue
        failed = [t for t in group if t.status not in (PASSED, SKIPPED)]
        skipped = sum(t.status == SKIPPED for t in group)
        note = _failed_names(failed) if failed else "none"
        if skipped:
            note += f" ({skipped} skipped: no GPU)"
        lines.append(f"{f'{number}. {problem.title}':<{TITLE_WIDTH}}{_points(group):>15}   {note}")
        if failed:
            lines.append(f"{'':<44}see {problem.handout}")
    lines.append(f"{'total':<{TITLE_WIDTH}}{_points(shown):>15}")
    graded_hidden = [t for t in tests if t.hidden]
    if graded_hidden and not hidden_shown:  # on Gradescope before the staff show the hidden tests
        lines.append(f"(public tests only. The hidden tests, {sum(t.possible for t in graded_hidden):g} points, were "
                     f"graded too: they, and your total score over both, appear on this page when the staff show "
                     f"them)")
    elif not graded_hidden:
        hidden = sum(p.hidden_points for p in PROBLEMS.values())
        lines.append(f"(public tests only; the staff's hidden tests add {hidden} points when they grade)")
    return lines


def _failed_names(failed: list[GradedTest], shown: int = 4) -> str:
    """Failed test names, parametrized cases folded into one name with a count, the list capped."""
    counts: dict[str, int] = {}
    for test in failed:
        base = test.name.split("[", 1)[0]
        counts[base] = counts.get(base, 0) + 1
    names = [f"{name} (x{count})" if count > 1 else name for name, count in counts.items()]
    more = f", and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _points(tests: list[GradedTest]) -> str:
    return f"{sum(t.earned for t in tests):g} / {sum(t.possible for t in tests):g}"


def check_imports_resolve_inside(root: Path, packages: tuple[str, ...] = ("cs336_basics", "adapters")) -> None:
    """Refuse to run when one of `packages` would be imported from outside `root`.

    A grader copies a submission next to fresh tests; an installed copy elsewhere on sys.path
    must never be graded in its place.
    """
    for package in packages:
        spec = importlib.util.find_spec(package)
        origin = Path(spec.origin).resolve() if spec and spec.origin else None
        if origin is None or root.resolve() not in origin.parents:
            raise pytest.UsageError(
                f"`import {package}` would load {origin or 'nothing'}, not the copy in {root}: "
                f"is {root / package / '__init__.py'} missing?"
            )
