"""What `staff grade` prints for the staff about one submission: the points of each problem by part
(public, hidden, gpu) and in all, where the student's summary shows only what the student may see."""

from __future__ import annotations

from staff.grading.results import PARTS, part
from tests.grading import GradedTest
from tests.problems import PROBLEMS, TITLE_WIDTH

_WIDTH = 12  # of each points column


def _points(tests: list[GradedTest]) -> str:
    return f"{sum(t.earned for t in tests):g} / {sum(t.possible for t in tests):g}" if tests else "-"


def points_table(tests: list[GradedTest]) -> list[str]:
    """Lines of a table: one per problem with tests, its points earned / possible in each part the
    grade has (a column per part, "-" where the problem has no test of it) and in all; then a total line."""
    parts = [name for name in PARTS if any(part(t) == name for t in tests)]
    lines = [f"{'problem':<{TITLE_WIDTH}}" + "".join(f"{name:>{_WIDTH}}" for name in [*parts, "total"])]
    for number, problem in PROBLEMS.items():
        group = [t for t in tests if t.problem == number]
        if group:
            cells = [_points([t for t in group if part(t) == name]) for name in parts] + [_points(group)]
            title = f"{number}. {problem.title}"
            lines.append(f"{title:<{TITLE_WIDTH}}" + "".join(f"{cell:>{_WIDTH}}" for cell in cells))
    cells = [_points([t for t in tests if part(t) == name]) for name in parts] + [_points(tests)]
    lines.append(f"{'total':<{TITLE_WIDTH}}" + "".join(f"{cell:>{_WIDTH}}" for cell in cells))
    return lines
