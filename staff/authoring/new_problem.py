"""`staff new-problem NUMBER MODULE "Title"`: scaffold a problem that `staff check` accepts at once.

It writes the solution module (signature, docstring, markers around a body that raises), its adapter,
a public and a hidden test file of one one-point test each, the handout page with its Tests table,
an empty variants file, and the problem's entry in `PROBLEMS` (tests/problems.py); it adds the page's
row to the handout's summary and moves every stated total (the summary's, its prose, and the staff
pages' hidden and Gradescope totals) by the new points. Every place to fill is marked `TODO(new-problem)`.
Until they are filled the suites fail on the new problem: the reference body raises, each test compares with
"TODO", and `staff validate`'s test says the variants are empty.

Everything is checked before anything is written, and a failure while writing puts back what was
there, so a refused or failed scaffold leaves the tree as it was.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from pathlib import Path

from staff.authoring.stated import GPU, GRADESCOPE, GRADING, REGISTRY, SUMMARY, Totals, fix_texts, summary_facts
from staff.errors import StaffError
from staff.sources import problem_files as files
from tests.grading import GradedTest
from tests.problems import PROBLEMS

TODO = "TODO(new-problem)"
_ENTRY = re.compile(r"^    (\d+): Problem\(.*\),\n", re.MULTILINE)


class ScaffoldError(StaffError, ValueError):
    """The arguments or the tree do not allow the scaffold; nothing was written."""


@dataclass(frozen=True)
class NewProblem:
    number: int
    module: str
    title: str

    @property
    def page(self) -> str:
        return files.handout_page(self.number, self.module)

    def path(self, name) -> str:
        """The relative path `staff.sources.problem_files`' function `name` gives this problem's file."""
        return str(name(Path(), self.number, self.module))


def validate(problem: NewProblem, repo: Path) -> None:
    """Raises ScaffoldError, saying what was wrong and what is expected, for arguments the scaffold cannot take
    (`scaffold` then refuses any of its files that already exists)."""
    if problem.number < 1 or problem.number in PROBLEMS:
        raise ScaffoldError(f"problem {problem.number} is taken or not positive; the problems declared are "
                            f"{sorted(PROBLEMS)} (the next is {max(PROBLEMS, default=0) + 1})")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", problem.module) or keyword.iskeyword(problem.module):
        raise ScaffoldError(f"module {problem.module!r} is not a lower-case Python name (letters, digits, _)")
    if problem.module in {p.module for p in PROBLEMS.values()}:
        raise ScaffoldError(f"module {problem.module!r} already belongs to another problem")
    if not problem.title.strip() or any(c in problem.title for c in "|\n`"):
        raise ScaffoldError(f"title {problem.title!r} must be non-empty text without '|', '`' or a line break")


def new_files(p: NewProblem) -> dict[str, str]:
    """Relative path -> text of each file the scaffold creates."""
    section = f"§{p.number}.1"
    return {
        p.path(files.module_file): f'''"""Problem {p.number}: {p.title}.

{TODO}: one paragraph on what the student builds and why.

Handout: {p.page}
"""

from __future__ import annotations


def {p.module}(x: int) -> int:
    """{TODO}: what this computes, its arguments and result (shapes with jaxtyping, units).

    Args:
        x: {TODO}.

    Returns:
        {TODO}.
    """
    # BEGIN SOLUTION
    raise NotImplementedError("{TODO}: the reference solution of Problem {p.number}")
    # END SOLUTION
''',
        p.path(files.adapter_file): f'''"""Problem {p.number} adapters: {p.title} ({p.page}).

{TODO}: what crosses the boundary, as plain data.
"""

from __future__ import annotations

from adapters._route import routed


@routed
def run_{p.module}(x: int) -> int:
    """{p.module}(x) of the submission. {TODO}: plain data in and out, cs336_basics imported here."""
    from cs336_basics import {p.module}

    return {p.module}.{p.module}(x)
''',
        p.path(files.new_public_test_file): f'''"""Problem {p.number}: {p.title}.

{TODO}: what these tests check.
"""

from __future__ import annotations

import pytest

from adapters import {p.module} as A
from tests.checks import check_equal

pytestmark = pytest.mark.problem({p.number})
SEE = "{p.page}"


@pytest.mark.points(1)
def test_{p.module}_todo():
    # {TODO}: name the test after what it checks and the mistake it catches; the expected value comes
    # from PyTorch or a closed form written here, never from the reference. Keep the Tests table of
    # {p.page} in step (`staff check`).
    check_equal(A.run_{p.module}(1), "{TODO}", what="{p.module}(1)", inputs="x=1", see=f"{{SEE}} {section}")
''',
        p.path(files.new_hidden_test_file): f'''"""Hidden tests, Problem {p.number}: {p.title}.

{TODO}: the edges the public tests leave out.

PYTEST_DONT_REWRITE: a failure shows the check's message, never this file's source.
"""

from __future__ import annotations

import pytest

from adapters import {p.module} as A
from tests.checks import check_equal

pytestmark = pytest.mark.problem({p.number})
SEE = "{p.page}"


@pytest.mark.points(1)
def test_hidden_{p.module}_todo():
    # {TODO}: as in the public test; the hidden points are declared in PROBLEMS ({REGISTRY}).
    check_equal(A.run_{p.module}(2), "{TODO}", what="{p.module}(2)", inputs="x=2", see=f"{{SEE}} {section}")
''',
        p.page: f"""# Problem {p.number}: {p.title} (1 point + 1 hidden)

{TODO}: what the student learns here, and how it ties to the lecture.

## {p.number}.1 `{p.module}`

{TODO}: the contract of `{p.module}`: its arguments, its result and their units, and the errors it raises.

## Tests

`{p.path(files.new_public_test_file)}`: 1 point.

| Test | Section | Points |
|---|---|---:|
| `test_{p.module}_todo` | {section} | 1 |
| **Total** | | **1** |

### Hidden tests

When the staff grade, hidden tests add **1 point** to this problem. {TODO}: what they hold the functions to
beyond the public tests (more inputs, the edges), without naming a hidden test.
""",
        p.path(files.variants_file): _variants_text(p),
    }


def _variants_text(p: NewProblem) -> str:
    return (f"# Problem {p.number}: {p.title}. {TODO}: at least 3 wheat (correct implementations written the way "
            f"students write them) and\n# 6 chaff (one misconception each, naming the tests that must catch it) "
            f"for `staff validate`; the format is that of the other\n# files here. Until then "
            f"staff/tests/test_validate.py fails, saying this problem has none.\n")


def edited_files(p: NewProblem, repo: Path, tests: list[GradedTest]) -> dict[str, str]:
    """Relative path -> new text of each existing file the scaffold changes: the registry, the summary
    (its row and totals) and the staff pages' totals (docs/grading.md, docs/gpu.md, docs/gradescope.md)."""
    registry = (repo / REGISTRY).read_text(encoding="utf-8")
    entries = list(_ENTRY.finditer(registry))
    if not entries:
        raise ScaffoldError(f"{REGISTRY}: no `    N: Problem(...),` entry of PROBLEMS to add one after")
    entry = f'    {p.number}: Problem("{p.title}", "{p.page}", 1, "{p.module}"),\n'
    registry = registry[:entries[-1].end()] + entry + registry[entries[-1].end():]
    summary = (repo / SUMMARY).read_text(encoding="utf-8")
    total = re.search(r"^\| \*\*Total\*\* \|", summary, re.MULTILINE)
    if total is None:
        raise ScaffoldError(f"{SUMMARY}: no '| **Total** |' row to add the new row above")
    link = Path(p.page).name  # the summary sits beside the pages
    row = f"| {p.number}. {p.title} | 1 | 1 | [{link}]({link}) |\n"
    summary = summary[:total.start()] + row + summary[total.start():]
    texts = {REGISTRY: registry, SUMMARY: summary,
             **{page: (repo / page).read_text(encoding="utf-8") for page in (GRADING, GPU, GRADESCOPE)}}
    scaffolded = [GradedTest(nodeid=f"{hidden}::new", name="new", number=f"{p.number}.1", problem=p.number, points=1,
                             needs_cuda=False, hidden=hidden) for hidden in (False, True)]
    texts, unplaced = fix_texts(texts, summary_facts(Totals(tuple(tests) + tuple(scaffolded))))
    if unplaced:
        raise ScaffoldError(f"{unplaced[0].path}: cannot find {unplaced[0].what} to update (`staff check` says what "
                            f"it expects)")
    return texts


def scaffold(p: NewProblem, repo: Path, tests: list[GradedTest]) -> list[str]:
    """Write the problem's files and edits; the relative paths written. Raises ScaffoldError with
    nothing written for arguments or a tree it cannot take; restores every file if a write fails."""
    validate(p, repo)
    created = new_files(p)
    for path in created:
        if (repo / path).exists():
            raise ScaffoldError(f"{path} already exists")
    edited = edited_files(p, repo, tests)
    originals = {path: (repo / path).read_text(encoding="utf-8") for path in edited}
    written: list[str] = []
    try:
        for path, text in {**created, **edited}.items():
            (repo / path).parent.mkdir(parents=True, exist_ok=True)
            (repo / path).write_text(text, encoding="utf-8")
            written.append(path)
    except OSError:
        for path in written:
            if path in originals:
                (repo / path).write_text(originals[path], encoding="utf-8")
            else:
                (repo / path).unlink(missing_ok=True)
        raise
    return written
