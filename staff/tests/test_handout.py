"""`staff check`: the tree agrees with its problem declarations (PROBLEMS) and its tests' points, and
each check names the file to fix when it does not (each tried on a damaged copy of the tree)."""

from __future__ import annotations

import dataclasses
import shutil
import tomllib
from pathlib import Path

import pytest

from staff.authoring.check import CHECKS, USES, check_uses, fix_stated, report, run_checks
from staff.authoring.stated import Totals
from staff.cli import main
from staff.grading.grade import REPO_ROOT
from tests.problems import PROBLEMS

# Whatever the checks read, and whatever the pages link to (`staff check` follows every relative link).
PARTS = ("cs336_basics", "adapters", "tests", "handout", "staff", "docs", ".ci", "README.md", "STUDENT_README.md",
         "CHANGELOG.md", "make_submission.sh", "pyproject.toml")


@pytest.fixture
def tests(suite_tests):
    return suite_tests


@pytest.fixture
def tree(tmp_path) -> Path:
    """A copy of what the checks read, to damage."""
    for part in PARTS:
        source, target = REPO_ROOT / part, tmp_path / part
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copyfile(source, target)
    return tmp_path


@pytest.mark.parametrize("name", list(CHECKS))
def test_the_tree_passes_every_check(tests, name):
    assert [str(f) for f in CHECKS[name](REPO_ROOT, Totals(tuple(tests)))] == []


def findings(tree: Path, tests) -> list[str]:
    return [str(f) for found in run_checks(tree, tests).values() for f in found]


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{path} no longer holds {old!r}: update this test"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_an_undamaged_copy_passes(tree, tests):
    assert findings(tree, tests) == []


def test_a_handout_total_that_disagrees_is_named(tree, tests):
    # Mistake this catches: a total changed by hand (or left stale after a test was added) in the prose.
    public = Totals(tuple(tests)).of(None, hidden=False)
    edit(tree / "handout" / "README.md", f"shows the public part: {public:g} points",
         f"shows the public part: {public + 1:g} points")
    assert findings(tree, tests) == [f"handout/README.md: the public part in the prose must read '{public:g}' (derived "
                                     f"from the tests and PROBLEMS); it says '{public + 1:g}'"]


def test_a_test_file_without_its_problem_is_named(tree, tests):
    # Mistake this catches: a new test file without `pytestmark = pytest.mark.problem(N)` (pytest stops
    # collecting with a UsageError that names a test, not the file or the fix).
    edit(tree / "tests" / "test_03_einops.py", "pytestmark = pytest.mark.problem(3)", "")
    assert "tests/test_03_einops.py: needs `pytestmark = pytest.mark.problem(3)` at module level (it has none)" \
        in findings(tree, tests)


def test_a_missing_variants_file_is_named(tree, tests):
    # Mistake this catches: a problem added without its wheat and chaff (found before only when validate ran).
    (tree / "staff" / "validate" / "variants" / "p05_backward.toml").unlink()
    assert findings(tree, tests) == ["staff/validate/variants/p05_backward.toml: missing: Problem 5's variants file "
                                     "for `staff validate` (wheat and chaff)"]


def test_a_heading_of_one_point_is_singular(tree, tests):
    # Mistake this catches: a heading pattern that demands "points" even for 1 (a one-point problem could never pass).
    first = next(t for t in tests if t.problem == 6 and not t.hidden and not t.needs_cuda)
    one_point = [t for t in tests if t.problem != 6 or t.hidden] + [dataclasses.replace(first, points=1.0)]
    page = tree / "handout" / "06_init.md"
    heading = next(line for line in page.read_text(encoding="utf-8").splitlines() if line.startswith("# Problem 6"))
    edit(page, heading, f"# Problem 6: Initialization (1 point + {Totals(tuple(tests)).of(6, hidden=True):g} hidden)")
    assert not [f for f in findings(tree, one_point) if f.startswith("handout/06_init.md: the heading")]


def test_a_cited_section_that_does_not_exist_is_named(tree, tests):
    edit(tree / "tests" / "test_02_strides.py", 'see=f"{SEE} §2.1")', 'see=f"{SEE} §2.99")')
    named = "tests/test_02_strides.py: cites handout/02_strides.md §2.99"
    assert any(f.startswith(named) for f in findings(tree, tests))


def test_a_section_a_stub_or_an_adapter_cites_must_exist(tree, tests):
    # Mistake this catches: a docstring (which ships as the stub's) or an adapter's message sending the
    # student to a section that was renumbered away; only the test files were checked before.
    edit(tree / "cs336_basics" / "dtype_memory.py", '"""Bytes one element of `dtype` occupies in memory.',
         '"""Bytes one element of `dtype` occupies in memory (§1.9).')
    edit(tree / "adapters" / "train.py", "handout/11_train.md §11.5", "handout/11_train.md §11.8")
    said = findings(tree, tests)
    assert "cs336_basics/dtype_memory.py: cites handout/01_dtype_memory.md §1.9, which does not exist" in said
    assert "adapters/train.py: cites handout/11_train.md §11.8, which does not exist" in said


def test_the_gpu_points_sentence_agrees_with_the_heading(tree, tests):
    # Mistake this catches: "not part of the 21 in this problem's heading" under a heading of 22 (Problem 4's
    # page said so after a test was added): a restated total the heading check did not read.
    edit(tree / "handout" / "04_flops.md", "part of the 22 in this", "part of the 21 in this")
    assert [f for f in findings(tree, tests) if "04_flops" in f] == [
        "handout/04_flops.md: the GPU points' sentence must read '22' (derived from the tests and PROBLEMS); it says "
        "'21'"]


def test_one_tests_new_points_name_every_stale_place(tree, tests):
    # Mistake this catches: a restated fact the check does not read (a Tests-table row, the table's Total,
    # the page's points sentence, the GPU rows' "not in the N"), left stale when a test's points change.
    changed = next(t for t in tests if t.name == "test_adagrad_follows_the_update_rule")
    more = [dataclasses.replace(t, points=t.points + 1) if t is changed else t for t in tests]
    said = [f.split(": ", 1)[1].split(" must read")[0] for f in findings(tree, more)]
    assert sorted(said) == sorted([
        "Problem 8's row", "the heading", "the public tests' points sentence", "the GPU points' sentence",
        "the Tests table's Total", "the Tests table's points for `test_adagrad_follows_the_update_rule`",
        "the Tests table's points for `test_adagrad_on_gpu_agrees_with_the_cpu_run`",
        "the Tests table's points for `test_training_step_memory_matches_the_gpus_peak`",
        "the Total row's public points", "the public part in the prose", "the grade's total in the prose",
        "the total points to set on Gradescope", "the public points to set on Gradescope"])


def test_fix_rewrites_every_stale_fact_and_nothing_else(tree, tests):
    # Mistakes this catches: a fixer that rewrites the whole line or the wrong number (the prose around a
    # fact must stay as written), or one that leaves a fact it was told about.
    edit(tree / "handout" / "04_flops.md", "part of the 22 in this", "part of the 21 in this")
    edit(tree / "handout" / "08_adagrad.md", "| `test_adagrad_default_lr_is_0_01` | §8.1 | 1 |",
         "| `test_adagrad_default_lr_is_0_01` | §8.1 | 7 |")
    edit(tree / "handout" / "README.md", "| 3. einops | 19 | 8 |", "| 3. einops | 18 | 9 |")
    totals = Totals(tuple(tests))
    public, hidden = totals.of(None, hidden=False), totals.of(None, hidden=True)
    edit(tree / "docs" / "gradescope.md", f"| total points | {public + hidden:g} ({public:g} public",
         f"| total points | {public + hidden - 4:g} ({public - 1:g} public")
    edit(tree / "docs" / "grading.md", f"one per problem, {hidden:g} points in all",
         "one per problem, 105 points in all")
    changed, unplaced = fix_stated(tree, tests)
    assert sorted(changed) == ["docs/gradescope.md", "docs/grading.md", "handout/04_flops.md", "handout/08_adagrad.md",
                               "handout/README.md"]
    assert unplaced == [] and findings(tree, tests) == []
    for path in changed:
        assert (tree / path).read_text() == (REPO_ROOT / path).read_text(), path


def test_a_fact_stated_nowhere_is_named_and_left_to_a_person(tree, tests):
    # Mistake this catches: a page without its hidden-tests paragraph (the scaffold's page lacked it) passing.
    page = tree / "handout" / "05_backward.md"
    edit(page, "hidden tests add **6 points** to this problem", "hidden tests add more to this problem")
    assert "handout/05_backward.md: the hidden tests' paragraph must read '6 points' (derived from the tests and " \
        "PROBLEMS); it says nothing where expected" in findings(tree, tests)
    changed, unplaced = fix_stated(tree, tests)
    assert changed == [] and [f.what for f in unplaced] == ["the hidden tests' paragraph"]


def test_a_file_that_does_not_parse_is_a_finding_not_a_crash(tree, tests):
    (tree / "pyproject.toml").write_text("[project\n")
    assert any("version check could not run" in f for f in findings(tree, tests))


def test_the_report_has_one_line_per_problem_and_names_the_file(tree, tests):
    (tree / "staff" / "validate" / "variants" / "p05_backward.toml").unlink()
    lines = report(run_checks(tree, tests))
    assert lines[4] == "problem 5 (Backward by hand): 1 to fix" and lines[5].startswith("  staff/validate/variants/")
    assert sum(line.startswith("problem ") for line in lines) == len(PROBLEMS)


def test_staff_check_passes_on_this_tree(capsys, monkeypatch, suite_tests):
    # The suites collected once for the session (`complete`, as `staff check` collects them), not again here.
    monkeypatch.setattr("staff.grading.selection.collect_only", lambda *args, **kwargs: suite_tests)
    assert main(["check"]) == 0
    assert "all passed" in capsys.readouterr().out


def test_fix_adds_the_row_of_a_test_the_table_does_not_list(tree, tests):
    # Mistake this catches: a new test whose row a TA must still type (name, section, points); the row is
    # derived from the test: its name, the one section its source cites, its points.
    page = tree / "handout" / "08_adagrad.md"
    edit(page, "| `test_adagrad_state_is_named_g2` | §8.2 | 1 |\n", "")
    edit(page, "| `test_adagrad_on_gpu_agrees_with_the_cpu_run` (`cuda`, staff GPU only) | §8.4 | 1, not in the 13 |\n",
         "")
    assert any("misses ['test_adagrad_on_gpu_agrees_with_the_cpu_run', 'test_adagrad_state_is_named_g2']" in f
               for f in findings(tree, tests))
    changed, unplaced = fix_stated(tree, tests)
    assert changed == ["handout/08_adagrad.md"] and unplaced == [] and findings(tree, tests) == []
    original = (REPO_ROOT / "handout" / "08_adagrad.md").read_text()
    assert sorted(page.read_text().splitlines()) == sorted(original.splitlines())


def test_a_tests_table_row_citing_another_section_than_its_test_is_named(tree, tests):
    # Mistake this catches: a row moved to another section while the test still sends students to the old one.
    edit(tree / "handout" / "08_adagrad.md", "| `test_adagrad_default_lr_is_0_01` | §8.1 |",
         "| `test_adagrad_default_lr_is_0_01` | §8.2 |")
    assert "tests/test_08_adagrad.py: test_adagrad_default_lr_is_0_01 cites ['§8.1']; its row in " \
        "handout/08_adagrad.md says §8.2" in findings(tree, tests)


def uses_findings(tree: Path, tests) -> list[str]:
    return [str(f) for f in check_uses(tree, Totals(tuple(tests)))]


PLANTED_USE = """
[[use]]
user = 11
used = 8
section = "handout/11_train.md §11.2"
how = "train steps AdaGrad after every backward."
tests = []
"""


def test_a_use_that_names_no_test_is_named(tree, tests):
    # Mistake this catches: a later problem starts using an earlier one's code in a new way (an entry added
    # to the inventory) and no test of the earlier problem calls it that way yet.
    with (tree / USES).open("a", encoding="utf-8") as inventory:
        inventory.write(PLANTED_USE)
    count = len(tomllib.loads((tree / USES).read_text(encoding="utf-8"))["use"])
    assert uses_findings(tree, tests) == [f"{USES}: use {count} (Problem 8 in Problem 11): names no test of Problem 8 "
                                          "that uses its code this way"]


def test_a_use_naming_a_test_that_does_not_exist_is_named(tree, tests):
    # Mistake this catches: a test renamed (or deleted) while the inventory still points at its old name.
    edit(tree / USES, "test_hidden_09_data.py::test_get_batch_as_step_batch_calls_it",
         "test_hidden_09_data.py::test_get_batch_as_step_batch_called_it")
    assert len(found := uses_findings(tree, tests)) == 1
    assert "staff/hidden/test_hidden_09_data.py defines no test test_get_batch_as_step_batch_called_it" in found[0]


def test_a_use_naming_another_problems_test_or_a_missing_section_is_named(tree, tests):
    # Mistake this catches: the test that covers the use belongs to the problem that uses the code (the
    # points would again be lost in the wrong problem), or the section cited was renumbered away.
    edit(tree / USES, '"staff/hidden/test_hidden_09_data.py::test_get_batch_as_step_batch_calls_it"',
         '"staff/hidden/test_hidden_11_train.py::test_step_batch_of_the_only_window"')
    edit(tree / USES, 'section = "handout/11_train.md §11.1"', 'section = "handout/11_train.md §11.9"')
    found = uses_findings(tree, tests)
    assert len(found) == 2
    assert "its section 'handout/11_train.md §11.9' must be" in found[0]
    assert "'staff/hidden/test_hidden_11_train.py::test_step_batch_of_the_only_window' is not a test of Problem 9" \
        in found[1]


def test_a_missing_inventory_is_named(tree, tests):
    (tree / USES).unlink()
    assert uses_findings(tree, tests) == [f"{USES}: missing: the inventory of where a problem uses an earlier "
                                          "problem's code"]
