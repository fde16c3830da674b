"""`staff check`: every consistency check that needs no grading, in a few seconds.

Each check reads the tree at `repo` and the graded tests its suites collect, and returns findings,
each naming the file to fix. Problems are declared once, in `PROBLEMS` (tests/grading.py); their
files are found by `staff.problem_files`; everything else (the handout's headings, tables and totals,
the tests' problem markers, the variants files, the version) is checked against those and against
the points the tests carry.
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from staff import problem_files as files
from staff.markers import find_blocks, handout_page
from tests.grading import PROBLEMS, GradedTest

# "# Problem 3: einops (19 points + 8 hidden)"; one point is "1 point".
HEADING = re.compile(r"^# Problem (\d+): (.+) \((\d+) points? \+ (\d+) hidden\)$", re.MULTILINE)
SUMMARY = "handout/README.md"


@dataclass(frozen=True)
class Finding:
    path: str  # the file to fix, relative to the repository
    message: str
    problem: int | None = None  # the problem it concerns, where it concerns one

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(frozen=True)
class Points:
    """What the collected tests carry: public (CPU), GPU and hidden points, per problem and in all."""

    tests: tuple[GradedTest, ...]

    def of(self, number: int | None, *, hidden: bool, cuda: bool = False) -> float:
        return sum(t.points for t in self.tests
                   if (number is None or t.problem == number) and t.hidden == hidden and t.needs_cuda == cuda)


def _read(repo: Path, relative: str) -> str | None:
    try:
        return (repo / relative).read_text(encoding="utf-8")
    except OSError:
        return None


def check_declarations(repo: Path, points: Points) -> list[Finding]:
    """Each declared problem has its module (naming its page), adapters, page, one public and one
    hidden test file, and a variants file; and the hidden points declared match the hidden suite."""
    found = []
    for number, problem in PROBLEMS.items():
        module = files.module_file(repo, number)
        if not module.is_file():
            found.append(Finding(str(module.relative_to(repo)), f"missing: Problem {number}'s module", number))
        elif handout_page(module.read_text(encoding="utf-8")) != problem.handout:
            found.append(Finding(str(module.relative_to(repo)), f"its docstring's `Handout:` line must name "
                                 f"{problem.handout} (PROBLEMS[{number}] in tests/grading.py)", number))
        for path, what in ((files.adapter_file(repo, number), "adapters"), (repo / problem.handout, "handout page"),
                           (files.variants_file(repo, number), "variants file for `staff validate` (wheat and chaff)")):
            if not path.is_file():
                found.append(Finding(str(path.relative_to(repo)), f"missing: Problem {number}'s {what}", number))
        for listed, where in ((files.public_test_files(repo, number), f"tests/test_{number:02d}_*.py"),
                              (files.hidden_test_files(repo, number), f"staff/hidden/test_hidden_{number:02d}_*.py")):
            if len(listed) != 1:
                found.append(Finding(where, f"Problem {number} needs exactly one such test file, found {len(listed)}",
                                     number))
        hidden = points.of(number, hidden=True)
        if hidden != problem.hidden_points:
            found.append(Finding("tests/grading.py", f"PROBLEMS[{number}] declares {problem.hidden_points} hidden "
                                 f"points; the hidden suite's tests carry {hidden:g}", number))
        if points.of(number, hidden=True, cuda=True):
            found.append(Finding(f"staff/hidden/test_hidden_{number:02d}_*.py", "a cuda test belongs to the public "
                                 "suite (the GPU part is graded from it alone)", number))
    return found


def _declared_problem(tree: ast.Module) -> int | None:
    """N of a module-level `pytestmark = pytest.mark.problem(N)` (alone or in a list), else None."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            marks = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
            for mark in marks:
                if (isinstance(mark, ast.Call) and isinstance(mark.func, ast.Attribute) and mark.func.attr == "problem"
                        and mark.args and isinstance(mark.args[0], ast.Constant)):
                    return mark.args[0].value
    return None


def check_test_files(repo: Path, points: Points) -> list[Finding]:
    """Every test module of both suites is named for a declared problem and marks itself with it."""
    found = []
    for path in files.all_test_files(repo):
        where = str(path.relative_to(repo))
        number = files.problem_of_test_file(path)
        if number not in PROBLEMS:
            found.append(Finding(where, "not named for a declared problem (test_NN_*.py or test_hidden_NN_*.py, NN "
                                 "in PROBLEMS of tests/grading.py)"))
            continue
        try:
            declared = _declared_problem(ast.parse(path.read_text(encoding="utf-8"), where))
        except SyntaxError as error:
            found.append(Finding(where, f"does not parse: {error.msg} (line {error.lineno})", number))
            continue
        if declared != number:
            found.append(Finding(where, f"needs `pytestmark = pytest.mark.problem({number})` at module level (it "
                                 f"{'has none' if declared is None else f'says {declared}'})", number))
    return found


def check_headings(repo: Path, points: Points) -> list[Finding]:
    """Each page's heading states its problem's title, public points and hidden points."""
    found = []
    for number, problem in PROBLEMS.items():
        text = _read(repo, problem.handout)
        if text is None:
            continue  # check_declarations names it
        public, hidden = points.of(number, hidden=False), points.of(number, hidden=True)
        expected = f"# Problem {number}: {problem.title} ({public:g} point{'s' * (public != 1)} + {hidden:g} hidden)"
        match = HEADING.search(text)
        stated = match and (int(match.group(1)), match.group(2), int(match.group(3)), int(match.group(4)))
        if stated != (number, problem.title, public, hidden):
            found.append(Finding(problem.handout, f"its heading must read '{expected}' (the tests carry these "
                                 f"points){'' if match else '; there is no such heading'}", number))
        # The GPU points' sentence restates the heading's public points ("not part of the 22 in this ...").
        for restated in re.findall(r"part of the (\d+) in this\s+problem's heading", text):
            if int(restated) != public:
                found.append(Finding(problem.handout, f"says 'part of the {restated} in this problem's heading'; the "
                                     f"heading's public points are {public:g}", number))
    return found


def check_test_tables(repo: Path, points: Points) -> list[Finding]:
    """Each page's Tests table lists exactly its public tests, each with the section the test cites,
    and the page names no hidden test."""
    found = []
    for number, problem in PROBLEMS.items():
        text = _read(repo, problem.handout)
        if text is None:
            continue
        listed = set(re.findall(r"^\| `(test_\w+)`", text, re.MULTILINE))
        public = {t.name.split("[", 1)[0] for t in points.tests if t.problem == number and not t.hidden}
        hidden = {t.name.split("[", 1)[0] for t in points.tests if t.problem == number and t.hidden}
        if listed != public:
            found.append(Finding(problem.handout, f"its Tests table lists {sorted(listed - public)} that do not exist "
                                 f"and misses {sorted(public - listed)}", number))
        named = sorted(name for name in hidden if name in text)
        if named:
            found.append(Finding(problem.handout, f"names hidden tests: {named}", number))
        table = dict(re.findall(r"^\| `(test_\w+)`[^|]*\| (§\d+\.\d+) \|", text, re.MULTILINE))
        for source_file in files.public_test_files(repo, number):
            source = source_file.read_text(encoding="utf-8")
            for node in ast.parse(source).body:
                if isinstance(node, ast.FunctionDef) and node.name in table:
                    cited = set(re.findall(r"§\d+\.\d+", ast.get_source_segment(source, node) or ""))
                    if table[node.name] not in cited:
                        found.append(Finding(str(source_file.relative_to(repo)), f"{node.name} cites {sorted(cited)}; "
                                             f"its row in {problem.handout} says {table[node.name]}", number))
    return found


def check_sections(repo: Path, points: Points) -> list[Finding]:
    """Every section (`§N.k`) cited anywhere a student or a failure message sends someone (the tests, the
    package and its stubs, the adapters, the handout itself) exists: a `## N.k` heading on Problem N's page."""
    headings = {number: set(re.findall(r"^## (\d+\.\d+) ", _read(repo, problem.handout) or "", re.MULTILINE))
                for number, problem in PROBLEMS.items()}
    citing = [*files.all_test_files(repo), *sorted((repo / "cs336_basics").glob("*.py")),
              *sorted((repo / "adapters").glob("*.py")), *sorted((repo / "handout").glob("*.md"))]
    found = []
    for path in citing:
        number_of_file = files.problem_of_test_file(path) if path.name.startswith("test_") else None
        for section in sorted(set(re.findall(r"§(\d+\.\d+)", path.read_text(encoding="utf-8")))):
            number = int(section.split(".")[0])
            if section not in headings.get(number, set()):
                page = PROBLEMS[number].handout if number in PROBLEMS else f"a Problem {number} page"
                found.append(Finding(str(path.relative_to(repo)), f"cites {page} §{section}, which does not exist",
                                     number_of_file if number_of_file in PROBLEMS else None))
    return found


def stated_totals(points: Points) -> list[tuple[str, str, str, float]]:
    """Every total the summary and the README state: (file, what, a pattern whose group 1 is the number
    stated, the number the tests give)."""
    public, gpu, hidden = points.of(None, hidden=False), points.of(None, hidden=False, cuda=True), \
        points.of(None, hidden=True)
    return [
        (SUMMARY, "the Total row's public points", r"^\| \*\*Total\*\* \| \*\*(\d+)\*\*", public),
        (SUMMARY, "the Total row's GPU points", r"^\| \*\*Total\*\* \| \*\*\d+\*\* \(\+ (\d+) on GPU\)", gpu),
        (SUMMARY, "the Total row's hidden points", r"^\| \*\*Total\*\* \|[^|]*\| \*\*(\d+)\*\* \|", hidden),
        (SUMMARY, "the public part in the prose", r"shows the public part: (\d+) points", public),
        (SUMMARY, "the hidden points in the prose", r"how many points the hidden tests add \((\d+)\)", hidden),
        (SUMMARY, "the grade's total in the prose", r"Your grade is out of (\d+)", public + hidden),
        (SUMMARY, "the GPU points in the prose", r"The (\d+) GPU-only points", gpu),
        ("README.md", "the total points to set on Gradescope", r"^\| total points \| (\d+) ", public + hidden),
        ("README.md", "the public points to set on Gradescope", r"^\| total points \| \d+ \((\d+) public", public),
        ("README.md", "the hidden points to set on Gradescope",
         r"^\| total points \| \d+ \(\d+ public \+ (\d+) hidden", hidden),
    ]


def check_totals(repo: Path, points: Points) -> list[Finding]:
    """The summary's rows and Total row, and every total its prose and the staff README state."""
    summary = _read(repo, SUMMARY)
    if summary is None:
        return [Finding(SUMMARY, "missing")]
    found = []
    for number, problem in PROBLEMS.items():
        cpu, gpu = points.of(number, hidden=False), points.of(number, hidden=False, cuda=True)
        extra = rf" \(\+ {gpu:g} on GPU\)" if gpu else ""
        row = rf"^\| {number}\. {re.escape(problem.title)} \| {cpu:g}{extra} \| {problem.hidden_points:g} \|"
        if not re.search(row, summary, re.MULTILINE):
            found.append(Finding(SUMMARY, f"no row '| {number}. {problem.title} | {cpu:g}"
                                 f"{f' (+ {gpu:g} on GPU)' if gpu else ''} | {problem.hidden_points:g} | ...'", number))
    for path, what, pattern, expected in stated_totals(points):
        text = summary if path == SUMMARY else _read(repo, path) or ""
        numbers = [float(n) for n in re.findall(pattern, text, re.MULTILINE)]
        if numbers != [expected]:
            found.append(Finding(path, f"{what} must be {expected:g} (the tests carry it); it says "
                                 f"{', '.join(f'{n:g}' for n in numbers) or 'nothing where expected'}"))
    return found


def check_solution_not_quoted(repo: Path, points: Points) -> list[Finding]:
    """No handout page quotes a line of a solution body (longer than 25 characters)."""
    solution_lines = set()
    for module in sorted((repo / "cs336_basics").glob("*.py")):
        lines = module.read_text(encoding="utf-8").splitlines()
        for block in find_blocks("\n".join(lines), module):
            solution_lines |= {line.strip() for line in lines[block.begin + 1:block.end] if len(line.strip()) > 25}
    found = []
    for page in sorted((repo / "handout").glob("*.md")):
        leaked = sorted(line for line in solution_lines if line in page.read_text(encoding="utf-8"))
        if leaked:
            found.append(Finding(str(page.relative_to(repo)), f"quotes solution code: {leaked}"))
    return found


def check_version(repo: Path, points: Points) -> list[Finding]:
    """pyproject.toml's version heads the CHANGELOG and the handout."""
    version = tomllib.loads(_read(repo, "pyproject.toml") or "")["project"]["version"]
    found = []
    handout = _read(repo, SUMMARY) or ""
    if f"Version {version}." not in handout.split("\n## ", 1)[0]:
        found.append(Finding(SUMMARY, f"its top must say 'Version {version}.' (pyproject.toml's version)"))
    entries = re.findall(r"^## (\S+)", _read(repo, "CHANGELOG.md") or "", flags=re.MULTILINE)
    if entries[:1] != [version]:
        found.append(Finding("CHANGELOG.md", f"its newest entry is {entries[:1]}; pyproject.toml says {version}"))
    return found


def check_figures(repo: Path, points: Points) -> list[Finding]:
    """The handout's figures are what staff/figures.py draws now."""
    from staff.figures import FIGURES_DIR, stale_figures

    return [Finding(str(FIGURES_DIR / name), "missing or out of date; run `uv run staff figures`")
            for name in stale_figures(repo)]


def check_stub_sections(repo: Path, points: Points) -> list[Finding]:
    """Every solution block has a handout section for its stub to send the student to."""
    from staff.sections import SectionError, SectionIndex

    index, found = SectionIndex(repo), []
    for module in sorted((repo / "cs336_basics").glob("*.py")):
        source = module.read_text(encoding="utf-8")
        for block in find_blocks(source, module.relative_to(repo)):
            try:
                index.section(module.relative_to(repo), source, block)
            except SectionError as error:
                found.append(Finding(str(module.relative_to(repo)), str(error).split(": ", 1)[-1]))
    return found


CHECKS: dict[str, Callable[[Path, Points], list[Finding]]] = {
    "declarations": check_declarations,
    "test files": check_test_files,
    "headings": check_headings,
    "tests tables": check_test_tables,
    "sections cited": check_sections,
    "totals": check_totals,
    "no solution quoted": check_solution_not_quoted,
    "stub sections": check_stub_sections,
    "version": check_version,
    "figures": check_figures,
}


def run_checks(repo: Path, tests: list[GradedTest]) -> dict[str, list[Finding]]:
    """Every check's findings, by check name. A check that cannot read what it checks (a file that
    does not parse, a missing key) is itself a finding, so one broken file never hides the rest."""
    points, results = Points(tuple(tests)), {}
    for name, check in CHECKS.items():
        try:
            results[name] = check(repo, points)
        except (OSError, ValueError, KeyError, SyntaxError) as error:  # TOMLDecodeError is a ValueError
            results[name] = [Finding("?", f"the {name} check could not run: {type(error).__name__}: {error}")]
    return results


def report(results: dict[str, list[Finding]]) -> list[str]:
    """One line per problem (ok, or how many findings, each on a line below), then the findings that
    concern no single problem."""
    findings = [f for found in results.values() for f in found]
    lines = []
    for number, problem in PROBLEMS.items():
        own = [f for f in findings if f.problem == number]
        lines.append(f"problem {number} ({problem.title}): " + ("ok" if not own else f"{len(own)} to fix"))
        lines += [f"  {f}" for f in own]
    general = [f for f in findings if f.problem is None or f.problem not in PROBLEMS]
    lines.append("the rest (summary, version, figures, files outside the problems): "
                 + ("ok" if not general else f"{len(general)} to fix"))
    lines += [f"  {f}" for f in general]
    return lines
