"""The tests that share a session fixture share a process when the suite runs in two
(staff/tests/process_groups.py): a test taking a group's fixture outside the group's files is refused
at collection, the scheduler puts a group's files in one work unit, and the red team's group and the
samples' are handed out first, to two processes."""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

from staff.tests.process_groups import FILE_GROUPS, FileGroupScheduling, first_groups_ahead, group_of, misplaced

ROOT = Path(__file__).resolve().parents[2]


def test_every_grouped_file_exists():
    assert [name for name in FILE_GROUPS if not (ROOT / name).is_file()] == []


def test_a_test_taking_the_batch_outside_the_groups_files_is_named():
    # The mistake: a new test file takes `graded` and is not added to FILE_GROUPS, so a second
    # process grades the red team's batch again, beside the first, over the same planted paths.
    said = misplaced("staff/tests/test_new.py::test_x", {"graded", "tmp_path"})
    assert said and "test_new.py" in said and "FILE_GROUPS" in said
    assert misplaced("staff/tests/test_redteam.py::test_x", {"graded"}) is None
    assert misplaced("staff/tests/test_new.py::test_x", {"tmp_path"}) is None
    assert "two process groups" in misplaced("staff/tests/test_redteam.py::test_x", {"graded", "autograder_root"})
    # The samples' grades in a group of their own: a test of them is never in the red team's process.
    assert misplaced("staff/tests/test_grade.py::test_x", {"graded_samples"}) is None
    assert "FILE_GROUPS" in misplaced("staff/tests/test_redteam.py::test_x", {"graded_samples"})


def test_a_groups_files_are_one_work_unit_and_other_tests_go_alone():
    scheduler = FileGroupScheduling.__new__(FileGroupScheduling)  # _split_scope reads no state
    red = {scheduler._split_scope(n) for n in ("staff/tests/test_redteam.py::test_a[x]",
                                               "staff/tests/test_redteam.py::test_b")}
    bundle = {scheduler._split_scope(n) for n in ("staff/tests/test_bundle.py::test_c",
                                                  "staff/tests/test_gradescope_container.py::test_d[1]")}
    assert len(red) == 1 and len(bundle) == 1 and red != bundle
    alone = [scheduler._split_scope(f"tests/test_01_dtype_memory.py::test_{n}") for n in "ef"]
    assert alone[0] != alone[1]
    assert group_of("tests/test_01_dtype_memory.py::test_e") is None


def test_the_red_teams_group_and_the_samples_are_handed_out_first_in_that_order():
    # The mistake: xdist hands out work units by size, so the samples' small group came after the
    # bundle's and could land behind the red team's 20-minute batch in the same process.
    scopes = ("group:gradescope", "tests/a.py::t", "group:samples", "group:redteam")
    queue = OrderedDict((scope, {}) for scope in scopes)
    first_groups_ahead(queue)
    assert list(queue) == ["group:redteam", "group:samples", "group:gradescope", "tests/a.py::t"]
    queue.popitem(last=False)
    first_groups_ahead(queue)  # called before every hand-out: once given out, a group is no longer moved
    assert list(queue) == ["group:samples", "group:gradescope", "tests/a.py::t"]
