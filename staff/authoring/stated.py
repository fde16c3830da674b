"""Facts the tree restates: every number, heading and table row derived from `PROBLEMS` and the points
the tests carry, with where each is written and the text it must hold.

`staff check` reports each one that disagrees; `staff check --fix` rewrites them (as `staff bench
--readme` rewrites its block), and `staff new-problem` uses the same rewriting for the totals it
moves. A fact is found by a pattern whose group 1 is the stated text: the rewrite replaces that
group and nothing else, so the prose around it stays as written.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from staff.sources import problem_files as files
from tests.grading import GradedTest
from tests.problems import PROBLEMS

SUMMARY = "handout/README.md"
REGISTRY = "tests/problems.py"
GRADESCOPE = "docs/gradescope.md"  # the staff page that says what to set on Gradescope
GRADING = "docs/grading.md"  # the staff page on grading, which states the hidden suites' total
GPU = "docs/gpu.md"  # the staff page on the GPU part, which states its points
SANDBOX = "docs/sandbox.md"  # the staff page on the sandbox, which states the red team's size


@dataclass(frozen=True)
class Stated:
    """One restated fact: in `path`, every match of `pattern` (multiline; group 1 the stated text)
    must read `expected`. A required fact must be stated exactly once; an optional one (a sentence a
    page may leave out) at most wherever it appears."""

    path: str
    what: str
    pattern: str
    expected: str
    problem: int | None = None
    required: bool = True
    source: str = "the tests and PROBLEMS"  # what `expected` is derived from

    def stated(self, text: str) -> list[str]:
        return [m.group(1) for m in re.finditer(self.pattern, text, re.MULTILINE)]

    def holds(self, text: str) -> bool:
        stated = self.stated(text)
        if self.required and len(stated) != 1:
            return False
        return all(s == self.expected for s in stated)

    def problem_with(self, text: str) -> str:
        """What is wrong, for a finding: what it must say, and what it says."""
        stated = self.stated(text)
        if self.required and len(stated) > 1:
            return f"{self.what} is stated {len(stated)} times; it must be stated once, as '{self.expected}'"
        says = ", ".join(f"'{s}'" for s in stated) or "nothing where expected"
        return f"{self.what} must read '{self.expected}' (derived from {self.source}); it says {says}"

    def fixed(self, text: str) -> str | None:
        """`text` with every stated place rewritten, or None where the fact cannot be placed (a required
        fact with no match, or with more than one: a person decides which)."""
        matches = list(re.finditer(self.pattern, text, re.MULTILINE))
        if self.required and len(matches) != 1:
            return None
        for match in reversed(matches):
            text = text[:match.start(1)] + self.expected + text[match.end(1):]
        return text


def _plural(n: float, word: str) -> str:
    return f"{n:g} {word}{'s' * (n != 1)}"


@dataclass(frozen=True)
class Totals:
    """The points the collected tests carry, per problem and part."""

    tests: tuple[GradedTest, ...]

    def of(self, number: int | None, *, hidden: bool, cuda: bool = False) -> float:
        return sum(t.points for t in self.tests
                   if (number is None or t.problem == number) and t.hidden == hidden and t.needs_cuda == cuda)

    def rows(self, number: int) -> dict[str, tuple[bool, list[float]]]:
        """Each public test function of a problem: (needs a GPU, the points of each of its cases)."""
        rows: dict[str, tuple[bool, list[float]]] = defaultdict(lambda: (False, []))
        for t in self.tests:
            if t.problem == number and not t.hidden:
                base = t.name.split("[", 1)[0]
                rows[base] = (t.needs_cuda, [*rows[base][1], t.points])
        return dict(rows)


def points_cell(cases: list[float]) -> str:
    """A Tests-table row's points: '3' for one test, '2 cases × 2 = 4' for a parametrized one."""
    if len(cases) == 1:
        return f"{cases[0]:g}"
    if len(set(cases)) == 1:
        return f"{len(cases)} cases × {cases[0]:g} = {sum(cases):g}"
    return f"{len(cases)} cases, {sum(cases):g}"


def page_facts(repo: Path, totals: Totals, number: int) -> list[Stated]:
    """What Problem `number`'s page restates: its heading, the public file's points sentence, the GPU
    sentence, each Tests-table row's points, the table's Total and the hidden tests' paragraph."""
    problem = PROBLEMS[number]
    page = problem.handout
    public, gpu, hidden = (totals.of(number, hidden=False), totals.of(number, hidden=False, cuda=True),
                           totals.of(number, hidden=True))
    public_files = files.public_test_files(repo, number)
    test_file = (str(public_files[0].relative_to(repo)) if len(public_files) == 1
                 else f"tests/test_{number:02d}_*.py")
    on_gpu = f", plus {_plural(gpu, 'GPU-only point')} checked by the staff" if gpu else ""
    sentence = _plural(public, "point") + on_gpu
    facts = [
        Stated(page, "the heading", r"\A(# Problem .*)$", f"# Problem {number}: {problem.title} "
               f"({_plural(public, 'point')} + {hidden:g} hidden)", number),
        Stated(page, "the public tests' points sentence",
               r"^`tests/test_\d+_\w+\.py`: ([^.]*?points?(?:, plus [^.]*)?)\.", sentence, number),
        Stated(page, f"the sentence naming `{test_file}`", r"^`(tests/test_\d+_\w+\.py)`: ", test_file,
               number),
        Stated(page, "the GPU points' sentence", r"part of the (\d+) in this\s+problem's heading", f"{public:g}",
               number, required=False),
        Stated(page, "the Tests table's Total", r"^\| \*\*Total\*\* \| \| \*\*(\d+)\*\* \|", f"{public:g}", number),
        Stated(page, "the hidden tests' paragraph", r"hidden tests add \*\*(\d+ points?)\*\*", _plural(hidden, "point"),
               number),
    ]
    for name, (cuda, cases) in totals.rows(number).items():
        cell = points_cell(cases) + (f", not in the {public:g}" if cuda else "")
        facts.append(Stated(page, f"the Tests table's points for `{name}`",
                            rf"^\| `{re.escape(name)}`[^|]*\|[^|]*\| (\d[^|]*?) \|$", cell, number))
    return facts


def summary_facts(totals: Totals) -> list[Stated]:
    """What the handout's summary and the staff pages restate: a row per problem, the Total row, the
    totals in the prose, the hidden suites' total and the totals to set on Gradescope."""
    public, gpu, hidden = (totals.of(None, hidden=False), totals.of(None, hidden=False, cuda=True),
                           totals.of(None, hidden=True))
    facts = []
    for number, problem in PROBLEMS.items():
        cpu, on_gpu = totals.of(number, hidden=False), totals.of(number, hidden=False, cuda=True)
        extra = f" (+ {on_gpu:g} on GPU)" if on_gpu else ""
        row = f"{number}. {problem.title} | {cpu:g}{extra} | {totals.of(number, hidden=True):g} "
        facts.append(Stated(SUMMARY, f"Problem {number}'s row", rf"^\| ({number}\. [^|]*\| [^|]*\| [^|]*)\|", row,
                            number))
        facts.append(Stated(REGISTRY, f"PROBLEMS[{number}]'s hidden points",
                            rf'^    {number}: Problem\("[^"]*", "[^"]*", (\d+),', f"{totals.of(number, hidden=True):g}",
                            number))
    for path, what, pattern, expected in [
        (SUMMARY, "the Total row's public points", r"^\| \*\*Total\*\* \| \*\*(\d+)\*\*", public),
        (SUMMARY, "the Total row's GPU points", r"^\| \*\*Total\*\* \| \*\*\d+\*\* \(\+ (\d+) on GPU\)", gpu),
        (SUMMARY, "the Total row's hidden points", r"^\| \*\*Total\*\* \|[^|]*\| \*\*(\d+)\*\* \|", hidden),
        (SUMMARY, "the public part in the prose", r"shows the public part: (\d+) points", public),
        (SUMMARY, "the hidden points in the prose", r"how many points the hidden tests add \((\d+)\)", hidden),
        (SUMMARY, "the grade's total in the prose", r"Your grade is out of (\d+)", public + hidden),
        (SUMMARY, "the GPU points in the prose", r"The (\d+) GPU-only points", gpu),
        (GPU, "the GPU part's points", r"The `cuda` tests carry (\d+) public points", gpu),
        (GRADING, "the hidden suites' points", r"one per problem, (\d+) points in all", hidden),
        (GRADESCOPE, "the total points to set on Gradescope", r"^\| total points \| (\d+) ", public + hidden),
        (GRADESCOPE, "the public points to set on Gradescope", r"^\| total points \| \d+ \((\d+) public", public),
        (GRADESCOPE, "the hidden points to set on Gradescope",
         r"^\| total points \| \d+ \(\d+ public \+ (\d+) hidden", hidden),
        (GRADESCOPE, "the GPU points to set on Gradescope",
         r"^\| total points \| \d+ \(\d+ public \+ \d+ hidden; the (\d+) GPU points", gpu),
    ]:
        facts.append(Stated(path, what, pattern, f"{expected:g}"))
    return facts


def corpus_facts() -> list[Stated]:
    """What the sandbox page restates about the red team: its folders, the cases they make (one per
    set of protections turned off), and how many of those grade fewer than every problem."""
    from staff.redteam.corpus import load_cases

    cases = load_cases()
    narrow = sum(len(case.graded) < len(PROBLEMS) for case in cases)
    folders, counted = str(len({case.folder for case in cases})), str(len(cases))
    facts = [("the red team's folders", r"so the (\d+) folders make \d+ cases", folders),
             ("the red team's cases", r"so the \d+ folders make (\d+) cases", counted),
             ("the red team's cases that grade fewer problems", r"In all, (\d+)\s+of the \d+ cases grade fewer",
              str(narrow)),
             ("the red team's cases, again", r"In all, \d+\s+of the (\d+) cases grade fewer", counted)]
    return [Stated(SANDBOX, what, pattern, expected, source="staff/redteam/cases") for what, pattern, expected in facts]


def all_facts(repo: Path, tests: list[GradedTest] | tuple[GradedTest, ...]) -> list[Stated]:
    totals = Totals(tuple(tests))
    facts = summary_facts(totals) + corpus_facts()
    for number, problem in PROBLEMS.items():
        if (repo / problem.handout).is_file():
            facts += page_facts(repo, totals, number)
    return facts


def fix_texts(texts: dict[str, str], facts: list[Stated]) -> tuple[dict[str, str], list[Stated]]:
    """Each text with the facts about it rewritten, and the facts that could not be placed."""
    texts, unplaced = dict(texts), []
    for fact in facts:
        if fact.path not in texts or fact.holds(texts[fact.path]):
            continue
        fixed = fact.fixed(texts[fact.path])
        if fixed is None:
            unplaced.append(fact)
        else:
            texts[fact.path] = fixed
    return texts, unplaced


def cited_sections(repo: Path, number: int) -> dict[str, set[str]]:
    """Each public test function of Problem `number` -> the sections (`§N.k`) its source cites."""
    cited = {}
    for source_file in files.public_test_files(repo, number):
        source = source_file.read_text(encoding="utf-8")
        for node in ast.parse(source).body:
            if isinstance(node, ast.FunctionDef):
                cited[node.name] = set(re.findall(r"§\d+\.\d+", ast.get_source_segment(source, node) or ""))
    return cited


def with_missing_rows(repo: Path, totals: Totals, number: int, text: str) -> tuple[str, list[str]]:
    """The page `text` with a Tests-table row added for each public test it does not list and whose
    source cites one section (a CPU test's above the Total row, a GPU test's at the table's end), and
    the tests left for a person (no Total row, or no single section cited)."""
    listed = set(re.findall(r"^\| `(test_\w+)`", text, re.MULTILINE))
    public = totals.of(number, hidden=False)
    cited = cited_sections(repo, number)
    left = []
    for name, (cuda, cases) in totals.rows(number).items():
        if name in listed:
            continue
        total = re.search(r"^\| \*\*Total\*\* \|.*\n", text, re.MULTILINE)
        sections = cited.get(name, set())
        if total is None or len(sections) != 1:
            left.append(name)
            continue
        section = next(iter(sections))
        if cuda:
            row = f"| `{name}` (`cuda`, staff GPU only) | {section} | {points_cell(cases)}, not in the {public:g} |\n"
            end = total.end()
            while (after := re.match(r"\| `test_.*\n", text[end:])) is not None:
                end += after.end()
        else:
            row = f"| `{name}` | {section} | {points_cell(cases)} |\n"
            end = total.start()
        text = text[:end] + row + text[end:]
    return text, left
