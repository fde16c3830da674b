"""Points for tests: the pytest plugin behind the per-problem table and the staff grader.

Every test in this folder belongs to one problem (module marker `problem(N)`) and is worth some
points (marker `points(P)`). A test earns its points only when it passes; a `cuda` test skipped for
want of a GPU counts as 0 of 0. Any other skip or xfail counts as a failure: code under test cannot
take points off the table by skipping.

With `--grading-report PATH` the plugin also writes one JSON object per line to PATH: a
"collected" line per graded test when collection ends, then a "result" line as each test finishes,
so a run that dies part-way still says which tests it reached.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch

# Problem number -> (title, handout file).
PROBLEMS: dict[int, tuple[str, str]] = {
    1: ("Dtype memory", "handout/01_dtype_memory.md"),
    2: ("Strides and views", "handout/02_strides.md"),
    3: ("einops", "handout/03_einops.md"),
    4: ("FLOPs and MFU", "handout/04_flops.md"),
    5: ("Backward by hand", "handout/05_backward.md"),
    6: ("Initialization", "handout/06_init.md"),
    7: ("The model", "handout/07_model.md"),
    8: ("AdaGrad", "handout/08_adagrad.md"),
    9: ("Memmap data loader", "handout/09_data.md"),
    10: ("Checkpoints and seeds", "handout/10_checkpoint.md"),
}
NO_GPU_REASON = "needs a CUDA GPU: torch.cuda.is_available() is False on this machine"
MAX_OUTPUT_CHARS = 4000

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"


@dataclass
class GradedTest:
    nodeid: str
    name: str
    number: str  # "problem.index", e.g. "3.2"
    problem: int
    points: float
    needs_cuda: bool
    status: str | None = None  # None until the test has finished
    output: str = ""

    @property
    def earned(self) -> float:
        return self.points if self.status == PASSED else 0.0

    @property
    def possible(self) -> float:
        return 0.0 if self.status == SKIPPED else self.points


def _graded(item: pytest.Item, tests_root: Path) -> bool:
    return tests_root in Path(item.path).parents


@dataclass(eq=False)  # pluggy keeps plugins in sets, so identity hashing is needed
class PointsPlugin:
    """Tracks graded tests through one pytest session."""

    tests_root: Path
    report_path: Path | None
    tests: dict[str, GradedTest] = field(default_factory=dict)

    def _write(self, record: dict) -> None:
        if self.report_path is not None:
            with self.report_path.open("a", encoding="utf-8") as report:
                report.write(json.dumps(record) + "\n")

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        problems_seen: dict[int, int] = {}
        for item in items:
            if not _graded(item, self.tests_root):
                continue
            problem, points = item.get_closest_marker("problem"), item.get_closest_marker("points")
            if problem is None or points is None or problem.args[0] not in PROBLEMS:
                raise pytest.UsageError(
                    f"{item.nodeid}: every test under tests/ needs a problem(N) marker with N in "
                    f"{sorted(PROBLEMS)} and a points(P) marker"
                )
            number = problem.args[0]
            problems_seen[number] = problems_seen.get(number, 0) + 1
            self.tests[item.nodeid] = GradedTest(
                nodeid=item.nodeid,
                name=item.nodeid.split("::", 1)[-1],
                number=f"{number}.{problems_seen[number]}",
                problem=number,
                points=float(points.args[0]),
                needs_cuda=item.get_closest_marker("cuda") is not None,
            )

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        for test in self.tests.values():
            self._write({"kind": "collected", **{k: v for k, v in vars(test).items() if k not in ("status", "output")}})

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if item.get_closest_marker("cuda") is not None and not torch.cuda.is_available():
            pytest.skip(NO_GPU_REASON)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        test = self.tests.get(report.nodeid)
        if test is None:
            return
        if report.failed:
            phase = "" if report.when == "call" else f" (during {report.when})"
            test.status, test.output = FAILED, f"FAILED{phase}\n{report.longreprtext}"[:MAX_OUTPUT_CHARS]
        elif report.skipped and test.status is None:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            if test.needs_cuda and NO_GPU_REASON in reason and not hasattr(report, "wasxfail"):
                test.status, test.output = SKIPPED, f"skipped: {NO_GPU_REASON}"
            else:
                test.status, test.output = FAILED, f"FAILED: the test was skipped or xfailed unexpectedly ({reason})"
        elif report.when == "call" and report.passed and test.status is None:
            test.status = PASSED
        if report.when == "teardown":
            test.status = test.status or FAILED
            self._write({"kind": "result", "nodeid": test.nodeid, "status": test.status, "output": test.output})

    def pytest_terminal_summary(self, terminalreporter, exitstatus: int, config: pytest.Config) -> None:
        finished = [t for t in self.tests.values() if t.status is not None]
        if finished:
            terminalreporter.section("points by problem")
            for line in format_table(finished):
                terminalreporter.write_line(line)


def format_table(tests: list[GradedTest]) -> list[str]:
    """The per-problem table: points earned / possible and the failed tests, one problem a line."""
    lines = [f"{'problem':<26}{'points':>15}   failed tests"]
    for number, (title, handout) in PROBLEMS.items():
        group = [t for t in tests if t.problem == number]
        if not group:
            continue
        failed = [t for t in group if t.status not in (PASSED, SKIPPED)]
        skipped = sum(t.status == SKIPPED for t in group)
        note = _failed_names(failed) if failed else "none"
        if skipped:
            note += f" ({skipped} skipped: no GPU)"
        lines.append(f"{f'{number}. {title}':<26}{_points(group):>15}   {note}")
        if failed:
            lines.append(f"{'':<44}see {handout}")
    lines.append(f"{'total':<26}{_points(tests):>15}")
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


def check_imports_resolve_inside(root: Path) -> None:
    """Refuse to run when `cs336_basics` or `adapters` would be imported from outside `root`.

    A grader copies a submission next to fresh tests; an installed copy elsewhere on sys.path
    must never be graded in its place.
    """
    for package in ("cs336_basics", "adapters"):
        spec = importlib.util.find_spec(package)
        origin = Path(spec.origin).resolve() if spec and spec.origin else None
        if origin is None or root.resolve() not in origin.parents:
            raise pytest.UsageError(
                f"`import {package}` would load {origin or 'nothing'}, not the copy in {root}: "
                f"is {root / package / '__init__.py'} missing?"
            )
