"""The handout agrees with the tests: points per problem (public, hidden, GPU), section references,
and no leaked answers."""

from __future__ import annotations

import ast
import re
import tomllib

import pytest

from staff.grade import REPO_ROOT, collect_only
from staff.markers import find_blocks
from tests.grading import PROBLEMS

HANDOUT = REPO_ROOT / "handout"
HEADING = re.compile(r"^# Problem (\d+): (.+) \((\d+) points \+ (\d+) hidden\)$", re.MULTILINE)
SUITES = {"public": REPO_ROOT / "tests", "hidden": REPO_ROOT / "staff" / "hidden"}


@pytest.fixture(scope="module")
def tests():
    return collect_only(REPO_ROOT, hidden=True)


def points(tests, number: int, *, hidden: bool, cuda: bool = False) -> float:
    return sum(t.points for t in tests if t.problem == number and t.hidden == hidden and t.needs_cuda == cuda)


def test_each_problem_heading_states_the_points_its_tests_carry(tests):
    for number, problem in PROBLEMS.items():
        text = (REPO_ROOT / problem.handout).read_text()
        match = HEADING.search(text)
        assert match, f"{problem.handout}: no heading '# Problem {number}: {problem.title} (P points + H hidden)'"
        stated = (int(match.group(1)), match.group(2), int(match.group(3)), int(match.group(4)))
        assert stated == (number, problem.title, points(tests, number, hidden=False),
                          points(tests, number, hidden=True)), problem.handout


def test_the_hidden_points_in_the_points_plugin_match_the_hidden_suite(tests):
    for number, problem in PROBLEMS.items():
        assert points(tests, number, hidden=True) == problem.hidden_points, \
            f"problem {number}: tests/grading.py says {problem.hidden_points} hidden points, the hidden suite has " \
            f"{points(tests, number, hidden=True)}"
        assert points(tests, number, hidden=True, cuda=True) == 0, "a GPU test belongs to the public suite"


def test_summary_total_matches_the_tests(tests):
    total = sum(t.points for t in tests if not t.needs_cuda and not t.hidden)
    hidden = sum(t.points for t in tests if t.hidden)
    summary = (HANDOUT / "README.md").read_text()
    assert re.search(rf"\| \*\*Total\*\* \| \*\*{total:g}\*\*.*\| \*\*{hidden:g}\*\* \|", summary)


def test_every_section_a_test_points_to_exists():
    for suite in SUITES.values():
        for test_file in sorted(suite.glob("test_*.py")):
            source = test_file.read_text()
            handout = re.search(r'SEE = "(handout/[^"]+)"', source).group(1)
            text = (REPO_ROOT / handout).read_text()
            for section in sorted(set(re.findall(r"§(\d+\.\d+)", source))):
                assert re.search(rf"^## {re.escape(section)} ", text, re.MULTILINE), \
                    f"{test_file.name} cites {handout} §{section}, which does not exist"


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
    for number, problem in PROBLEMS.items():
        cpu, gpu = points(tests, number, hidden=False), points(tests, number, hidden=False, cuda=True)
        extra = rf" \(\+ {gpu:g} on GPU\)" if gpu else ""
        row = rf"^\| {number}\. {re.escape(problem.title)} \| {cpu:g}{extra} \| {problem.hidden_points:g} \|"
        assert re.search(row, summary, re.MULTILINE), \
            f"handout/README.md: no row '| {number}. {problem.title} | {cpu:g}... | {problem.hidden_points} |'"


def test_each_page_lists_exactly_its_public_tests_and_no_hidden_one(tests):
    for number, problem in PROBLEMS.items():
        text = (REPO_ROOT / problem.handout).read_text()
        listed = set(re.findall(r"^\| `(test_\w+)`", text, re.MULTILINE))
        public = {t.name.split("[", 1)[0] for t in tests if t.problem == number and not t.hidden}
        hidden = {t.name.split("[", 1)[0] for t in tests if t.problem == number and t.hidden}
        assert listed == public, f"{problem.handout}: Tests table lists {sorted(listed - public)} that do not exist " \
                                 f"and misses {sorted(public - listed)}"
        named = sorted(name for name in hidden if name in text)
        assert not named, f"{problem.handout} names hidden tests: {named}"


def test_each_public_test_points_to_the_section_its_table_row_names():
    """A test's messages cite the section the handout's Tests table gives for it, in the test's own
    body (a helper that hard-codes a section would send every caller's failures to that one)."""
    wrong = []
    for number, problem in PROBLEMS.items():
        table = dict(re.findall(r"^\| `(test_\w+)`[^|]*\| (§\d+\.\d+) \|", (REPO_ROOT / problem.handout).read_text(),
                                re.MULTILINE))
        source_file = next((REPO_ROOT / "tests").glob(f"test_{number:02d}_*.py"))
        source = source_file.read_text()
        for node in ast.parse(source).body:
            if isinstance(node, ast.FunctionDef) and node.name in table:
                cited = set(re.findall(r"§\d+\.\d+", ast.get_source_segment(source, node)))
                if table[node.name] not in cited:
                    wrong.append(f"{source_file.name}::{node.name} cites {sorted(cited)}; its row: {table[node.name]}")
    assert not wrong, "\n".join(wrong)


def test_the_version_is_the_same_in_pyproject_handout_and_changelog():
    """A release says one version: pyproject.toml's, shown at the top of the handout and as the
    newest CHANGELOG entry (catches a bump made in one place only)."""
    version = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    handout = (REPO_ROOT / "handout" / "README.md").read_text(encoding="utf-8")
    assert f"Version {version}." in handout.split("\n## ", 1)[0], f"handout/README.md does not say Version {version}."
    entries = re.findall(r"^## (\S+)", (REPO_ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), flags=re.MULTILINE)
    assert entries and entries[0] == version, f"CHANGELOG.md's newest entry is {entries[:1]}, pyproject says {version}"
