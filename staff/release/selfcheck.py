"""The release, used the way a student and a grader will: installed fresh, tested, graded.

With every solution stubbed, each gradable test must fail on the stub's NotImplementedError, `cuda`
tests must skip on a machine without a GPU, the points table must read 0 of the full total, and
`staff grade` must give 0.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from staff.grading.grade import grade
from staff.grading.selection import collect_only
from staff.grading.suite_run import read_report
from staff.release.proc import ReleaseError, run, uv
from tests.grading import FAILED, NO_GPU_REASON, SKIPPED, GradedTest

REPORT = ".release-check.jsonl"
_PROGRESS = re.compile(r"^[.FEsxX]+\s*(\[\s*\d+%\])?\s*$")
_SUMMARY = re.compile(r"\b\d+ (?:failed|passed|skipped|errors?|deselected)\b.* in [\d.]+s\b")  # pytest's last count


def install(release: Path) -> None:
    """`uv sync --locked` in the release: the lock must fit its pyproject.toml as shipped."""
    run([uv(), "sync", "--locked"], release, what="installing the release (uv sync --locked)")


def _test_problems(test: GradedTest) -> list[str]:
    if test.needs_cuda and test.status == SKIPPED and NO_GPU_REASON in test.output:
        return []
    if test.status != FAILED or "NotImplementedError" not in test.output:
        return [f"{test.nodeid}: expected to fail with the stub's NotImplementedError, got {test.status}: "
                f"{test.output.strip()[:300]}"]
    return []


def _progress_and_table() -> Callable[[str], bool]:
    """Picks pytest's progress lines and everything from the points table on; the dozens of
    one-line failures in between all say NotImplementedError."""
    in_table = False

    def show(line: str) -> bool:
        nonlocal in_table
        in_table = in_table or "points by problem" in line
        return in_table or bool(_PROGRESS.match(line))

    return show


def run_public_tests(release: Path, source: Path) -> list[str]:
    """Run `uv run pytest` in the installed release; the problems found, empty when all is as expected."""
    expected = {t.nodeid for t in collect_only(source)}
    report = release / REPORT
    output = run([uv(), "run", "--locked", "pytest", "-q", "--tb=line", "--color=no", "--grading-report", str(report)],
                 release, what="public tests of the release", ok=(0, 1), show=_progress_and_table())
    tests = read_report(report).tests
    report.unlink(missing_ok=True)
    return judge_public_run(output, list(tests.values()), expected)


def judge_public_run(output: str, tests: list[GradedTest], expected: set[str]) -> list[str]:
    """What is wrong with a run of the release's public tests: its printed `output`, the graded
    `tests` with their results, and the node ids this tree's own suite collects."""
    if not tests:
        return ["the release's pytest reported no graded test (did collection fail?)"]
    problems = []
    summary = next((line for line in reversed(output.strip().splitlines()) if _SUMMARY.search(line)), "")
    if re.search(r"\b\d+ errors?\b", summary):
        problems.append(f"pytest reported errors (collection or fixtures): {summary.strip()}")
    collected = {t.nodeid for t in tests}
    problems += [f"{nodeid}: collected in this tree but not in the release" for nodeid in sorted(expected - collected)]
    problems += [f"{nodeid}: collected in the release but not in this tree" for nodeid in sorted(collected - expected)]
    for test in tests:
        problems += _test_problems(test)
    full = sum(t.possible for t in tests)
    if full <= 0 or not re.search(rf"^total\s+0 / {full:g}\s*$", output, re.MULTILINE):
        problems.append(f"the points table does not end with 'total 0 / {full:g}'")
    last = output.strip().splitlines()[-1] if output.strip() else ""
    if not last.startswith(("total", "(public tests only")):
        problems.append(f"the points table is not the last thing printed; the last line is {last!r}")
    return problems


def grade_stubs(release: Path) -> list[str]:
    """`staff grade` on the release's own package must give 0 of a positive total."""
    result = grade(release)
    problems = [] if result.score == 0 and result.max_score > 0 else [
        f"staff grade gave {result.score:g} / {result.max_score:g}; expected 0 of a positive total"
    ]
    return problems + [p for t in result.tests for p in _test_problems(t)]


def require(problems: list[str], what: str) -> None:
    """Raise a ReleaseError listing `problems`, if there are any."""
    if problems:
        shown = problems[:40] + ([f"... and {len(problems) - 40} more"] if len(problems) > 40 else [])
        raise ReleaseError(f"{what}: {len(problems)} problem(s)\n  " + "\n  ".join(shown))
