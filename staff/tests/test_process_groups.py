"""The tests that share a session fixture share a process when the suite runs in two
(staff/tests/process_groups.py): a test taking a group's fixture outside the group's files is refused
at collection, and the scheduler puts a group's files in one work unit."""

from __future__ import annotations

from pathlib import Path

from staff.tests.process_groups import FILE_GROUPS, FileGroupScheduling, group_of, misplaced

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
    assert "two process groups" in misplaced("staff/tests/test_grade.py::test_x", {"graded", "autograder_root"})


def test_a_groups_files_are_one_work_unit_and_other_tests_go_alone():
    scheduler = FileGroupScheduling.__new__(FileGroupScheduling)  # _split_scope reads no state
    red = {scheduler._split_scope(n) for n in ("staff/tests/test_redteam.py::test_a[x]",
                                               "staff/tests/test_grade.py::test_b")}
    bundle = {scheduler._split_scope(n) for n in ("staff/tests/test_bundle.py::test_c",
                                                  "staff/tests/test_gradescope_container.py::test_d[1]")}
    assert len(red) == 1 and len(bundle) == 1 and red != bundle
    alone = [scheduler._split_scope(f"tests/test_01_dtype_memory.py::test_{n}") for n in "ef"]
    assert alone[0] != alone[1]
    assert group_of("tests/test_01_dtype_memory.py::test_e") is None

