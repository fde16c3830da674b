"""The red team's batch collects the suites once for its refused uploads (staff/tests/listed_once.py):
the same selection is collected once, another selection again, each grade gets a copy of its own, and
the grader's own collection is back afterwards."""

from __future__ import annotations

from staff.grading import selection
from staff.tests.listed_once import listed_once
from tests.grading import GradedTest


def a_test(nodeid: str) -> GradedTest:
    return GradedTest(nodeid=nodeid, name=nodeid, number="P1-1", problem=1, points=1.0, needs_cuda=False)


def test_a_selection_is_collected_once_and_each_grade_gets_its_own_copy(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(selection, "collect_only", lambda *args: calls.append(args) or [a_test(str(len(calls)))])
    fake = selection.collect_only
    with listed_once() as made:
        first = selection.collect_only(tmp_path / "a", True, None, False, "after_due_date")
        again = selection.collect_only(tmp_path / "b", True, None, False, "after_due_date")
        other = selection.collect_only(tmp_path / "c", True, None, False, "visible")
    assert len(calls) == 2 and len(made) == 2, "the same selection was collected twice, or another not at all"
    assert [t.nodeid for t in first] == [t.nodeid for t in again] == ["1"] and [t.nodeid for t in other] == ["2"]
    again[0].status = "failed"  # the grader marks each listed test not run: on its own copy
    assert first[0].status is None
    assert selection.collect_only is fake
