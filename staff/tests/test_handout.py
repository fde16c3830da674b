"""The handout agrees with the tests: points per problem, section references, and no leaked answers."""

from __future__ import annotations

import re

import pytest

from staff.grade import REPO_ROOT, collect_only
from staff.markers import find_blocks
from tests.grading import PROBLEMS

HANDOUT = REPO_ROOT / "handout"
HEADING = re.compile(r"^# Problem (\d+): (.+) \((\d+) points\)$", re.MULTILINE)


@pytest.fixture(scope="module")
def tests():
    return collect_only(REPO_ROOT)


def test_each_problem_heading_states_the_points_its_tests_carry(tests):
    for number, (title, handout) in PROBLEMS.items():
        text = (REPO_ROOT / handout).read_text()
        match = HEADING.search(text)
        assert match, f"{handout}: no heading '# Problem {number}: {title} (P points)'"
        cpu_points = sum(t.points for t in tests if t.problem == number and not t.needs_cuda)
        assert (int(match.group(1)), match.group(2), int(match.group(3))) == (number, title, cpu_points)


def test_summary_total_matches_the_tests(tests):
    total = sum(t.points for t in tests if not t.needs_cuda)
    assert re.search(rf"\*\*{total:g}\*\*|\b{total:g} points\b", (HANDOUT / "README.md").read_text())


def test_every_section_a_test_points_to_exists():
    for test_file in sorted((REPO_ROOT / "tests").glob("test_*.py")):
        source = test_file.read_text()
        handout = re.search(r'SEE = "(handout/[^"]+)"', source).group(1)
        text = (REPO_ROOT / handout).read_text()
        for section in sorted(set(re.findall(r"§(\d+\.\d+)", source))):
            assert re.search(rf"^## {re.escape(section)} ", text, re.MULTILINE), f"{handout} lacks section {section}"


def test_handout_quotes_no_solution_line():
    solution_lines = set()
    for module in (REPO_ROOT / "cs336_basics").glob("*.py"):
        lines = module.read_text().splitlines()
        for block in find_blocks("\n".join(lines), module):
            solution_lines |= {line.strip() for line in lines[block.begin + 1 : block.end] if len(line.strip()) > 25}
    for page in HANDOUT.glob("*.md"):
        text = page.read_text()
        leaked = [line for line in solution_lines if line in text]
        assert not leaked, f"{page.name} quotes solution code: {leaked}"


def test_summary_table_rows_match_the_problem_headings(tests):
    summary = (HANDOUT / "README.md").read_text()
    for number, (title, _) in PROBLEMS.items():
        cpu = sum(t.points for t in tests if t.problem == number and not t.needs_cuda)
        gpu = sum(t.points for t in tests if t.problem == number and t.needs_cuda)
        extra = rf" \(\+ {gpu:g} on GPU\)" if gpu else ""
        row = rf"^\| {number}\. {re.escape(title)} \| {cpu:g}{extra} \|"
        assert re.search(row, summary, re.MULTILINE), f"handout/README.md: no row '| {number}. {title} | {cpu:g}...'"


def test_each_page_lists_exactly_its_tests(tests):
    for number, (_, handout) in PROBLEMS.items():
        listed = set(re.findall(r"^\| `(test_\w+)`", (REPO_ROOT / handout).read_text(), re.MULTILINE))
        collected = {t.name.split("[", 1)[0] for t in tests if t.problem == number}
        assert listed == collected, f"{handout}: Tests table lists {sorted(listed - collected)} that do not exist " \
                                    f"and misses {sorted(collected - listed)}"
