"""`staff check` on the pages people read (README.md, docs/, the handout): every link resolves inside
the repository, nothing points outside it, and every total the staff pages state agrees with the
tests. Each mistake is planted in a copy of the pages and must be named, with the page and the line."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from staff.authoring.check import CHECKS
from staff.authoring.links import slug
from staff.authoring.stated import Totals
from staff.grading.grade import REPO_ROOT

# What the links and the stated totals are read from and point to.
PARTS = ("README.md", "STUDENT_README.md", "CHANGELOG.md", "docs", "handout", "tests")


@pytest.fixture
def totals(suite_tests) -> Totals:
    return Totals(tuple(suite_tests))


@pytest.fixture
def pages(tmp_path) -> Path:
    """A copy of the pages, and of the tests their totals are derived from, to damage."""
    for part in PARTS:
        source, target = REPO_ROOT / part, tmp_path / part
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copyfile(source, target)
    return tmp_path


def links(tree: Path) -> list[str]:
    return [str(f) for f in CHECKS["links"](tree, Totals(()))]


def add(path: Path, line: str) -> int:
    """Append `line` to the page; the line number it lands on."""
    text = path.read_text(encoding="utf-8")
    path.write_text(text + "\n" + line + "\n", encoding="utf-8")
    return len(text.splitlines()) + 2


def test_the_real_pages_have_nothing_to_fix():
    # Mistake this catches: a link broken (a page moved or renamed), or a path outside the repository,
    # committed without `staff check` having run.
    assert links(REPO_ROOT) == []


def test_an_undamaged_copy_passes(pages):
    assert links(pages) == []


def test_a_link_to_a_page_that_is_not_there_is_named(pages):
    # Mistake this catches: a docs page renamed (or a link mistyped) while the README still links to it.
    (pages / "docs" / "cluster.md").rename(pages / "docs" / "slurm.md")
    said = links(pages)
    assert said and all("docs/cluster.md, which is not in the repository" in s for s in said), said
    assert any(s.startswith("README.md: line ") and "'docs/cluster.md'" in s for s in said), said


def test_a_link_that_climbs_out_of_the_repository_is_named(pages):
    # Mistake this catches: the README linking to the course's notes beside the checkout
    # (`../shared/...`), which no other clone has.
    line = add(pages / "docs" / "gradescope.md", "See [the facts](../../shared/PLATFORM_FACTS.md).")
    assert links(pages) == [f"docs/gradescope.md: line {line}: the link '../../shared/PLATFORM_FACTS.md' points "
                            "outside the repository"]


def test_a_link_to_a_machines_files_is_named(pages):
    # Mistake this catches: an absolute path (or a file: URL) pasted from the author's machine.
    line = add(pages / "README.md", "The notes: [here](/work/shared/PLATFORM_FACTS.md), [there](file:///tmp/x.md).")
    assert links(pages) == [
        f"README.md: line {line}: the link '/work/shared/PLATFORM_FACTS.md' points at a machine's files, outside "
        "the repository; link relative to this page",
        f"README.md: line {line}: the link 'file:///tmp/x.md' points at a machine's files, outside the repository; "
        "link relative to this page"]


def test_a_path_that_climbs_out_of_the_repository_is_named_even_in_code(pages):
    # Mistake this catches: the README's old "see `../shared/PLATFORM_FACTS.md`": not a link, so no
    # link check would see it, and yet it sends the reader to a file outside the repository.
    line = add(pages / "README.md", "as course guides describe it; see `../shared/PLATFORM_FACTS.md`")
    assert links(pages) == [f"README.md: line {line}: the path '../shared/PLATFORM_FACTS.md' points outside the "
                            "repository"]


def test_a_link_to_a_heading_that_is_not_there_is_named(pages):
    # Mistake this catches: a section renamed while a link still names its old anchor.
    line = add(pages / "README.md", "See [the tests](docs/validate.md#the-staff-suite-and-ci).")
    assert links(pages) == [f"README.md: line {line}: the link 'docs/validate.md#the-staff-suite-and-ci': "
                            "docs/validate.md has no heading whose anchor is #the-staff-suite-and-ci"]


def test_anchors_are_spelled_as_github_spells_them():
    # Mistake this catches: an anchor rule that differs from GitHub's, failing links that work there.
    assert slug("Speed: `staff bench`") == "speed-staff-bench"
    assert slug("On a fresh machine with [uv](https://docs.astral.sh/uv/)") == "on-a-fresh-machine-with-uv"
    assert slug("The sandbox, and the threat model") == "the-sandbox-and-the-threat-model"


def test_a_student_page_that_links_to_a_staff_page_is_named(pages):
    # Mistake this catches: the handout sending students to a page the release does not ship.
    line = add(pages / "handout" / "README.md", "How it is graded: [grading](../docs/grading.md).")
    assert links(pages) == [f"handout/README.md: line {line}: the link '../docs/grading.md' names docs/grading.md, "
                            "which the student release does not ship"]


@pytest.mark.parametrize("page, pattern, what, source", [
    ("docs/grading.md", r"one per problem, (\d+) points in all", "the hidden suites' points", "the tests and PROBLEMS"),
    ("docs/gradescope.md", r"\| total points \| (\d+) ", "the total points to set on Gradescope",
     "the tests and PROBLEMS"),
    ("docs/gpu.md", r"The `cuda` tests carry (\d+) public points", "the GPU part's points", "the tests and PROBLEMS"),
    ("docs/sandbox.md", r"so the \d+ folders make (\d+) cases", "the red team's cases", "staff/redteam/cases"),
])
def test_a_stale_total_on_a_staff_page_is_named(pages, totals, page, pattern, what, source):
    # Mistake this catches: a total the README stated, now on a docs page, left stale after a test's
    # points changed (the hidden suites' "105 points in all" stood for 107), or the red team's size after
    # cases were added (its page said 53 hostile submissions where there were 69 folders).
    text = (pages / page).read_text(encoding="utf-8")
    stated = re.search(pattern, text)
    assert stated, f"{page} no longer states {what}: update this test"
    stale = str(int(stated.group(1)) - 2)
    (pages / page).write_text(text[:stated.start(1)] + stale + text[stated.end(1):], encoding="utf-8")
    assert [str(f) for f in CHECKS["stated facts"](pages, totals)] == [
        f"{page}: {what} must read '{stated.group(1)}' (derived from {source}); it says '{stale}'"]
