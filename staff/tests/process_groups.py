"""Which staff tests share a process when the suite runs in several (`pytest -n 2 --dist loadgroup`).

A session fixture is made once per process, so the tests that take one must run in one process: the
red team's two batches (`graded`, `graded_as_user`), the plain samples' batch (`graded_samples`), the
unpacked bundle (`autograder_root`) and the suites' collection (`suite_tests`). So must the tests of a
file whose module fixture is costly (the bundle's setup.sh, the bundle's list of tests): spread over two
processes, each would make it. Each of those groups is a whole test file or several here:
pytest-xdist's own `xdist_group` marks are not used, since with pytest 9.2 its loadgroup mode no
longer sees them (pytest-dev/pytest-xdist#1386: it renames node ids, which pytest no longer reads),
and the tests would silently spread over both processes, each grading the red team's batch again.
`staff/tests/conftest.py` checks at collection that every test taking one of these fixtures is in a
file of the fixture's group. The red team's group and the samples' start first, one in each process:
the small tests of the samples' grades then wait minutes, not the red team's batch.
"""

from __future__ import annotations

from collections import OrderedDict

from xdist.scheduler import LoadGroupScheduling

FIXTURE_GROUPS = {"graded": "redteam", "graded_as_user": "redteam", "graded_samples": "samples",
                  "autograder_root": "gradescope", "suites_collected": "suites", "suite_tests": "suites"}
FILE_GROUPS = {
    "staff/tests/test_redteam.py": "redteam",
    "staff/tests/test_grade.py": "samples",
    "staff/tests/test_bundle.py": "gradescope",
    "staff/tests/test_gradescope_container.py": "gradescope",
    "staff/tests/test_settings.py": "gradescope",
    "staff/tests/test_handout.py": "suites",
    "staff/tests/test_pages.py": "suites",
    "staff/tests/test_new_problem.py": "suites",
    "staff/tests/test_validate.py": "suites",
    "staff/tests/test_setup_sh.py": "setup-sh",
    "staff/tests/test_collected.py": "bundle-list",
}
# The groups handed out before any other work, in this order: with two processes, each of the two
# longest set-ups has one of its own from the start (xdist would otherwise hand them out by size,
# and the samples' small group would queue behind the red team's in the same process).
FIRST = ("redteam", "samples")


def group_of(nodeid: str) -> str | None:
    """The process group of the test `nodeid` (relative to the repository), or None."""
    return FILE_GROUPS.get(nodeid.split("::", 1)[0])


def misplaced(nodeid: str, fixtures: set[str]) -> str | None:
    """Why the test `nodeid`, taking `fixtures`, would run in the wrong process; None when it would not."""
    wanted = {FIXTURE_GROUPS[name] for name in fixtures & FIXTURE_GROUPS.keys()}
    if not wanted:
        return None
    if len(wanted) > 1:
        return f"{nodeid} takes the fixtures of two process groups ({sorted(wanted)}): it cannot run in both"
    group = wanted.pop()
    if group_of(nodeid) != group:
        return (f"{nodeid} takes a fixture of the process group {group!r} but its file is not in that group: "
                f"add it to FILE_GROUPS in staff/tests/process_groups.py")
    return None


def first_groups_ahead(queue: OrderedDict[str, dict[str, bool]]) -> None:
    """Move FIRST's groups, where still waiting, to the head of the scheduler's work queue, in FIRST's order."""
    for group in reversed(FIRST):
        if f"group:{group}" in queue:
            queue.move_to_end(f"group:{group}", last=False)


class FileGroupScheduling(LoadGroupScheduling):
    """xdist's loadgroup scheduling, whose groups are FILE_GROUPS' (every other test goes alone), FIRST's
    groups handed out first."""

    def _assign_work_unit(self, node) -> None:
        first_groups_ahead(self.workqueue)
        super()._assign_work_unit(node)

    def _split_scope(self, nodeid: str) -> str:
        group = group_of(nodeid)
        return f"group:{group}" if group else super()._split_scope(nodeid)
