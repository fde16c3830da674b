"""`staff check`: every consistency check that needs no grading, in a few seconds.

Each check reads the tree at `repo` and the graded tests its suites collect, and returns findings,
each naming the file to fix. Problems are declared once, in `PROBLEMS` (tests/problems.py); their
files are found by `staff.sources.problem_files`; everything else (the handout's headings, tables and totals,
the tests' problem markers, the variants files, the version, the totals the staff pages in docs/ state)
is checked against those and against the points the tests carry; the links of every page people read
are checked against the tree.
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from staff.authoring.stated import SUMMARY, Stated, Totals, all_facts, cited_sections, fix_texts, with_missing_rows
from staff.sources import problem_files as files
from staff.sources.markers import find_blocks, handout_page
from tests.grading import GradedTest
from tests.problems import PROBLEMS


@dataclass(frozen=True)
class Finding:
    path: str  # the file to fix, relative to the repository
    message: str
    problem: int | None = None  # the problem it concerns, where it concerns one

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def _read(repo: Path, relative: str) -> str | None:
    try:
        return (repo / relative).read_text(encoding="utf-8")
    except OSError:
        return None


def check_declarations(repo: Path, points: Totals) -> list[Finding]:
    """Each declared problem has its module (naming its page), adapters, page, one public and one
    hidden test file, and a variants file (the hidden points declared are a stated fact: check_stated)."""
    found = []
    for number, problem in PROBLEMS.items():
        module = files.module_file(repo, number)
        if not module.is_file():
            found.append(Finding(str(module.relative_to(repo)), f"missing: Problem {number}'s module", number))
        elif handout_page(module.read_text(encoding="utf-8")) != problem.handout:
            found.append(Finding(str(module.relative_to(repo)), f"its docstring's `Handout:` line must name "
                                 f"{problem.handout} (PROBLEMS[{number}] in tests/problems.py)", number))
        for path, what in ((files.adapter_file(repo, number), "adapters"), (repo / problem.handout, "handout page"),
                           (files.variants_file(repo, number), "variants file for `staff validate` (wheat and chaff)")):
            if not path.is_file():
                found.append(Finding(str(path.relative_to(repo)), f"missing: Problem {number}'s {what}", number))
        for listed, where in ((files.public_test_files(repo, number), f"tests/test_{number:02d}_*.py"),
                              (files.hidden_test_files(repo, number), f"staff/hidden/test_hidden_{number:02d}_*.py")):
            if len(listed) != 1:
                found.append(Finding(where, f"Problem {number} needs exactly one such test file, found {len(listed)}",
                                     number))
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


def check_test_files(repo: Path, points: Totals) -> list[Finding]:
    """Every test module of both suites is named for a declared problem and marks itself with it."""
    found = []
    for path in files.all_test_files(repo):
        where = str(path.relative_to(repo))
        number = files.problem_of_test_file(path)
        if number not in PROBLEMS:
            found.append(Finding(where, "not named for a declared problem (test_NN_*.py or test_hidden_NN_*.py, NN "
                                 "in PROBLEMS of tests/problems.py)"))
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


def check_test_tables(repo: Path, points: Totals) -> list[Finding]:
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
        test_files = files.public_test_files(repo, number)
        where = str(test_files[0].relative_to(repo)) if len(test_files) == 1 else f"tests/test_{number:02d}_*.py"
        for name, cited in cited_sections(repo, number).items():
            if name in table and table[name] not in cited:
                found.append(Finding(where, f"{name} cites {sorted(cited)}; its row in {problem.handout} says "
                                     f"{table[name]}", number))
    return found


def check_sections(repo: Path, points: Totals) -> list[Finding]:
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


def check_stated(repo: Path, points: Totals) -> list[Finding]:
    """Every fact the tree restates (staff/authoring/stated.py: headings, points sentences, Tests-table points and
    Totals, the hidden tests' paragraphs, the summary's rows and totals, PROBLEMS' hidden points, the
    staff pages' totals: docs/grading.md, docs/gpu.md, docs/gradescope.md) reads what the tests and PROBLEMS
    give. `staff check --fix` rewrites them."""
    if not points.tests:
        return []  # the suites did not collect: `staff check` says so, and no total can be derived
    found = []
    for fact in all_facts(repo, points.tests):
        text = _read(repo, fact.path)
        if text is None:
            continue  # check_declarations names a missing page; the summary and the staff pages are always there
        if not fact.holds(text):
            found.append(Finding(fact.path, fact.problem_with(text), fact.problem))
    return found


def fix_stated(repo: Path, tests: list[GradedTest]) -> tuple[list[str], list[Stated]]:
    """Rewrite every stale restated fact in place, adding the Tests-table row of a public test that has
    none (its section is the one its source cites). Returns the files rewritten and the facts that could
    not be placed (stated nowhere, or more than once), which a person fixes by hand."""
    from staff.atomic import write_text_atomic

    facts = all_facts(repo, tests)
    texts = {path: text for path in sorted({f.path for f in facts}) if (text := _read(repo, path)) is not None}
    rows_added = dict(texts)
    for number, problem in PROBLEMS.items():
        if problem.handout in rows_added:
            rows_added[problem.handout], _ = with_missing_rows(repo, Totals(tuple(tests)), number,
                                                               rows_added[problem.handout])
    fixed, unplaced = fix_texts(rows_added, facts)
    changed = [path for path in texts if fixed[path] != texts[path]]
    for path in changed:
        write_text_atomic(repo / path, fixed[path])
    return changed, unplaced


def check_solution_not_quoted(repo: Path, points: Totals) -> list[Finding]:
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


def check_version(repo: Path, points: Totals) -> list[Finding]:
    """pyproject.toml's version heads the CHANGELOG (below an "Unreleased" entry, if any: what the
    next release will list) and the handout."""
    version = tomllib.loads(_read(repo, "pyproject.toml") or "")["project"]["version"]
    found = []
    handout = _read(repo, SUMMARY) or ""
    if f"Version {version}." not in handout.split("\n## ", 1)[0]:
        found.append(Finding(SUMMARY, f"its top must say 'Version {version}.' (pyproject.toml's version)"))
    entries = re.findall(r"^## (\S+)", _read(repo, "CHANGELOG.md") or "", flags=re.MULTILINE)
    released = entries[1:2] if entries[:1] == ["Unreleased"] else entries[:1]
    if released != [version]:
        found.append(Finding("CHANGELOG.md", f"its newest release (below any Unreleased entry) is {released}; "
                             f"pyproject.toml says {version}"))
    return found


def check_changelog_entry(repo: Path, points: Totals) -> list[Finding]:
    """Every graded test changed since the last release is named under the CHANGELOG's Unreleased
    entry (staff/release/changes.py): a grade made with it differs, and students and the staff read why there."""
    from staff.release.changes import unmentioned

    release, missing = unmentioned(repo)
    return [Finding("CHANGELOG.md", f"{test.path} changed since release {release}: say what changed for students "
                    f"under '## Unreleased', naming '{test.named_as()}'", test.problem) for test in missing]


def check_figures(repo: Path, points: Totals) -> list[Finding]:
    """The handout's figures are what staff/authoring/figures.py draws now."""
    from staff.authoring.figures import FIGURES_DIR, stale_figures

    return [Finding(str(FIGURES_DIR / name), "missing or out of date; run `uv run staff figures`")
            for name in stale_figures(repo)]


def check_stub_sections(repo: Path, points: Totals) -> list[Finding]:
    """Every solution block has a handout section for its stub to send the student to."""
    from staff.sources.sections import SectionError, SectionIndex

    index, found = SectionIndex(repo), []
    for module in sorted((repo / "cs336_basics").glob("*.py")):
        source = module.read_text(encoding="utf-8")
        for block in find_blocks(source, module.relative_to(repo)):
            try:
                index.section(module.relative_to(repo), source, block)
            except SectionError as error:
                found.append(Finding(str(module.relative_to(repo)), str(error).split(": ", 1)[-1]))
    return found


def check_equivalent_mutants(repo: Path, points: Totals) -> list[Finding]:
    """Every mutant staff/validate/equivalent.toml excuses is still a mutant of the reference (keys name
    what a mutant changes; one whose line was edited no longer matches and must be judged again)."""
    from staff.validate.mutants import EQUIVALENT, stale_equivalents

    if repo.resolve() != EQUIVALENT.parents[2]:
        return []  # the mutants are those of this tree's reference; a copy elsewhere is checked where it lives
    return [Finding("staff/validate/equivalent.toml", f"lists `{key}`, which matches no mutant of the reference now "
                    "(its line was edited): run `staff validate --mutants` and judge the survivors again")
            for key in stale_equivalents()]


def check_links(repo: Path, points: Totals) -> list[Finding]:
    """Every link and path in the README, docs/, the handout, the student README and the CHANGELOG
    stays inside the repository and names what is there (staff/authoring/links.py says what is read and how)."""
    from staff.authoring.links import check_pages

    return [Finding(page, message) for page, message in check_pages(repo)]


USES = "staff/hidden/uses.toml"  # beside the hidden tests: its entries name them, which nothing students see may


def _test_names(path: Path) -> set[str]:
    """The names of the test functions a test file defines at module level, read with `ast` (no pytest run)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return {node.name for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_")}


def check_uses(repo: Path, points: Totals) -> list[Finding]:
    """Every use of an earlier problem's code by a later problem or its page (USES) names the
    handout section that makes it and at least one test, and each test it names exists (`path::name`, a
    test function of that file, parsed with `ast`) and belongs to the used problem: a mistake in the way
    a later problem uses the code must cost points in the problem that wrote it."""
    text = _read(repo, USES)
    if text is None:
        return [Finding(USES, "missing: the inventory of where a problem uses an earlier problem's code")]
    uses = tomllib.loads(text).get("use", [])
    if not uses:
        return [Finding(USES, "lists no [[use]]")]
    found, names = [], {}
    for index, use in enumerate(uses, 1):
        user, used = use.get("user"), use.get("used")
        label = f"use {index} (Problem {used} in Problem {user})"
        if user not in PROBLEMS or used not in PROBLEMS:
            found.append(Finding(USES, f"{label}: user and used must be declared problems (PROBLEMS)"))
            continue
        if not str(use.get("how", "")).strip():
            found.append(Finding(USES, f"{label}: says nothing under 'how'", used))
        section = re.fullmatch(r"(\S+\.md) §(\d+)\.(\d+)", str(use.get("section", "")))
        page = _read(repo, section.group(1)) if section else None
        if section is None or page is None or not re.search(
                rf"^## {section.group(2)}\.{section.group(3)} ", page, re.MULTILINE):
            found.append(Finding(USES, f"{label}: its section {use.get('section')!r} must be 'handout/<page>.md §N.k', "
                                 "a heading of that page", used))
        tests = use.get("tests", [])
        if not tests:
            found.append(Finding(USES, f"{label}: names no test of Problem {used} that uses its code this way", used))
        for node_id in tests:
            path, _, name = str(node_id).partition("::")
            name = name.split("[", 1)[0]
            file = repo / path
            if not name or not file.is_file() or files.problem_of_test_file(file) != used \
                    or file.parent.resolve() not in {(repo / files.PUBLIC_TESTS).resolve(),
                                                     (repo / files.HIDDEN_TESTS).resolve()}:
                found.append(Finding(USES, f"{label}: {node_id!r} is not a test of Problem {used} "
                                     f"(tests/test_{used:02d}_*.py::name or staff/hidden/test_hidden_{used:02d}_*.py"
                                     "::name)", used))
                continue
            if path not in names:
                names[path] = _test_names(file)
            if name not in names[path]:
                found.append(Finding(USES, f"{label}: {path} defines no test {name}", used))
    return found


CHECKS: dict[str, Callable[[Path, Totals], list[Finding]]] = {
    "declarations": check_declarations,
    "test files": check_test_files,
    "tests tables": check_test_tables,
    "sections cited": check_sections,
    "stated facts": check_stated,
    "no solution quoted": check_solution_not_quoted,
    "stub sections": check_stub_sections,
    "version": check_version,
    "changelog names changed tests": check_changelog_entry,
    "figures": check_figures,
    "equivalent mutants": check_equivalent_mutants,
    "links": check_links,
    "uses name their tests": check_uses,
}


def run_checks(repo: Path, tests: list[GradedTest]) -> dict[str, list[Finding]]:
    """Every check's findings, by check name. A check that cannot read what it checks (a file that
    does not parse, a missing key) is itself a finding, so one broken file never hides the rest."""
    points, results = Totals(tuple(tests)), {}
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
