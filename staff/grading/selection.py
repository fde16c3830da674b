"""Which tests a grade runs (the suites, some problems' files, the GPU or the CPU part), and
listing them without running any: as the bundle listed them, or collected.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from staff.grading import collected
from staff.grading.suite_run import PLUGINS, child_env, read_report
from staff.sandbox.removal import scratch_folder
from staff.sources.problem_files import hidden_test_files, public_test_files
from tests.grading import HIDDEN_VISIBILITY, GradedTest

REPO_ROOT = Path(__file__).resolve().parents[2]
# What the suites need from this tree; the submission contributes only its package.
SUITE_PARTS = ("adapters", "tests", "pyproject.toml")
HIDDEN_SUITE = REPO_ROOT / "staff" / "hidden"
LISTED_TESTS = REPO_ROOT / collected.COLLECTED_FILE  # written by `staff bundle`; absent in the repo


def suites(hidden: bool, problems: tuple[int, ...] | set[int] | None = None) -> list[str]:
    """The suites to run, as pytest arguments: both folders, or the test files of some problems."""
    if problems is None:
        return ["tests", "staff/hidden"] if hidden else ["tests"]
    files = [path for n in sorted(problems) for path in public_test_files(REPO_ROOT, n)]
    files += [path for n in sorted(problems) for path in hidden_test_files(REPO_ROOT, n)] if hidden else []
    return [str(path.relative_to(REPO_ROOT)) for path in files]


def marker_expression(gpu: bool) -> str:
    """pytest's `-m` for a grade: the GPU part is the `cuda` tests alone, and a CPU grade never runs
    them, even on a machine that has a GPU (they would run under the CPU grade's memory limit, and
    the gradebook would count them in both parts)."""
    return "cuda" if gpu else "not cuda"


def _selection(hidden: bool, problems: set[int] | None, gpu: bool | None) -> list[str]:
    """The pytest arguments that select a grade's tests."""
    return [*suites(hidden, problems), *([] if gpu is None else ["-m", marker_expression(gpu)])]


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
        done = subprocess.run([sys.executable, "-m", "pytest", *PLUGINS, *_selection(hidden, problems, gpu),
                               "--collect-only", "-q", "--grading-report", str(report), "-p", "no:cacheprovider",
                               f"--hidden-visibility={hidden_visibility}"],
                              cwd=workspace, env=child_env(workspace), capture_output=True, text=True,
                              errors="replace", stdin=subprocess.DEVNULL, check=False)
        tests = read_report(report).tests
    if not tests or (complete and done.returncode != 0):
        said = "\n".join((done.stdout + done.stderr).strip().splitlines()[-8:])
        what = "collected nothing" if not tests else "failed to collect some tests"
        raise RuntimeError(f"the test suite {what} (pytest exit {done.returncode}):\n{said}")
    return list(tests.values())


def listing_key(repo: Path, hidden: bool, problems: set[int] | None, gpu: bool | None,
                hidden_visibility: str) -> dict[str, object]:
    """What the list of a grade's tests depends on (see `staff.grading.collected`), for the suites in `repo`."""
    parts = [*SUITE_PARTS, *([str(HIDDEN_SUITE.relative_to(REPO_ROOT))] if hidden else [])]
    return collected.key(repo, parts, _selection(hidden, problems, gpu), hidden_visibility)


def graded_tests(workspace: Path, hidden: bool, problems: set[int] | None, gpu: bool | None,
                 hidden_visibility: str) -> list[GradedTest]:
    """The tests a grade would run, as the bundle listed them when the list is for these suites and
    this selection, else collected from the suites in `workspace` (a copy of this tree's)."""
    listed = collected.load(LISTED_TESTS, listing_key(REPO_ROOT, hidden, problems, gpu, hidden_visibility))
    print(f"the graded tests: {'listed by the bundle' if listed is not None else 'collected'}", file=sys.stderr)
    return listed if listed is not None else collect_only(workspace, hidden, problems, gpu, hidden_visibility)
