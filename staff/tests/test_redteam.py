"""The red team (staff/redteam): every hostile submission, graded in the shared batch behind the
sandbox, gets the score it must get; the grader always finishes with a valid results.json; nothing
it printed swamps the results, nothing of the hidden tests reaches them, no process it started
survives, and no payload ran outside the worker. The reference, graded in the same batch, still
gets full marks."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import pytest

from staff.grading.results import validate_results
from staff.redteam.corpus import GPU_CONFINED, judge, load_cases, variant_name
from staff.release.leaks import squeeze
from staff.sandbox.leftovers import leftovers, processes
from staff.sandbox.uids import worker_uids
from staff.tests.conftest import AS_USER, BATCH_TIMEOUT_S, ORDINARY_CASES, trusted_files
from staff.tests.documents import strings
from staff.tests.processes import running_commands

pytestmark = [pytest.mark.slow, pytest.mark.timeout(BATCH_TIMEOUT_S)]
HIDDEN = Path(__file__).resolve().parent.parent / "hidden"
MAX_RESULTS_BYTES = 1 << 20
SETTLE_S = 60  # how long a leftover may take to go when a grade beside this test has just ended
# What must reach no screen or file from a submission: C0 but tab and newline, DEL, C1, bidi controls.
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def hidden_lines() -> set[str]:
    """Lines of the hidden tests long enough to be telling and not in the public tests, whitespace removed."""
    public = {squeeze(line) for path in (HIDDEN.parent.parent / "tests").glob("*.py")
              for line in path.read_text().splitlines()}
    lines = set()
    for path in HIDDEN.glob("test_*.py"):
        lines |= {squeeze(line) for line in path.read_text().splitlines() if len(squeeze(line)) >= 30}
    return lines - public



def test_the_corpus_is_broad():
    cases = load_cases()
    assert len(cases) >= 25
    assert {c.name for c in cases} >= {"forge-grading-report", "import-the-reference", "kill-the-grader",
                                       "fork-bomb", "memory-bomb", "segfault-in-one-function", "zip-slip"}


@pytest.mark.parametrize("name", [c.name for c in load_cases()])
def test_each_case_gets_the_score_it_must_get(graded, name):
    if name not in graded.cases:
        pytest.skip("not in this batch: it needs the worker to run as a user of its own (the grader is not root "
                    "here), or STAFF_REDTEAM_CASES leaves it out")
    check_case(graded, name)


ORDINARY = [variant_name(name, off) for name, variants in ORDINARY_CASES.items() for off in variants]


@pytest.mark.parametrize("name", ORDINARY)
def test_each_case_graded_as_an_ordinary_user_gets_the_score_it_must_get(graded_as_user, name):
    """As a TA grades on a laptop: the grader is not root, so the worker runs as the grader's own
    uid (no user of its own, no tmpfs), beside a session bus, an agent and a runtime folder."""
    key = name + AS_USER
    if key not in graded_as_user.cases:
        pytest.skip("STAFF_REDTEAM_CASES leaves it out")
    check_case(graded_as_user, key)
    protections = graded_as_user.results(key)["extra_data"]["protections"]
    assert protections["separate user"].startswith("off"), f"not graded as an ordinary user: {protections}"
    on = {"system calls", "file access", "signals out"} | \
        ({"network namespace", "pid namespace"} if "namespaces" not in graded_as_user.cases[key].off else set())
    assert all(str(protections.get(name)).startswith("on") for name in on), f"a protection was off: {protections}"


def test_the_reference_graded_as_an_ordinary_user_keeps_full_marks(graded_as_user):
    results = graded_as_user.results("reference")
    assert results["score"] == results["extra_data"]["max_score"] > 0, graded_as_user.said[-2000:]


def test_no_worker_reaches_the_ordinary_users_session(graded_as_user):
    # The stand-in bus (a path and an abstract socket) and agent, listened on for the whole batch.
    assert graded_as_user.connections == [], f"the grading user's session was reached: {graded_as_user.connections}"


def check_case(graded, name: str) -> None:
    """Everything a graded case must show (see the module's docstring)."""
    case = graded.cases[name]
    results = graded.results(name)
    assert validate_results(results) == []
    assert judge(case, results) == [], f"{case.description}\n{graded.meta(name)}"
    assert (graded.out / name / "results.json").stat().st_size < MAX_RESULTS_BYTES
    text = squeeze((graded.out / name / "results.json").read_text())
    if case.no_leak:
        leaked = [line for line in hidden_lines() if line in text]
        assert not leaked, f"hidden test lines in the results: {leaked[:3]}"
    if case.marker:
        assert not os.path.exists(case.marker), f"{case.marker} exists: a payload ran outside the worker"
    if case.survivors:
        left = [c for c in running_commands() if c.startswith(case.survivors)]
        assert not left, f"processes outlived the grade: {left[:3]}"
    controls = [text[:80] for text in strings(results) if CONTROLS.search(text)]
    assert not controls, f"control characters in the results: {controls[:3]}"
    shown = (graded.out / name / "results.json").read_text(encoding="utf-8")
    for path in (sys.prefix, str(Path(__file__).resolve().parents[2]), "/staff-grade-"):
        assert path not in shown, f"the grading machine's path {path} is in the results"
    if case.memory_budget_mib is not None:
        peak, floor = (graded.results(key)["extra_data"]["memory_bytes"]["test process peak RSS"]
                       for key in (name, "reference"))
        assert peak <= floor + (case.memory_budget_mib << 20), \
            f"the test process peaked at {peak / 2**20:.0f} MiB, {(peak - floor) / 2**20:.0f} MiB over the reference's"


def test_no_worker_changed_the_checkouts_trusted_files(graded):
    # A worker confined as a GPU grade's (no Landlock) that could write the checkout would plant a hook in
    # a conftest file, and every later grade would score what it says.
    changed = [name for name, digest in trusted_files().items() if graded.trusted.get(name) != digest]
    assert not changed, f"changed while the batch was graded: {changed}; expected no worker to reach the checkout"


def test_the_gpu_confined_variants_are_confined_as_a_gpu_grade(graded):
    # Mistake caught: a `gpu-confinement` variant graded under the CPU confinement (the setting not reaching
    # the worker), which would show nothing of what a GPU grade's worker can reach: its Landlock is set by
    # each child, its PID namespace has a /proc of its own, and each child narrows its filter.
    confined = [name for name, case in graded.cases.items() if GPU_CONFINED in case.off]
    if not confined:
        pytest.skip("STAFF_REDTEAM_CASES leaves out every case graded confined as a GPU grade")
    for name in confined:
        protections = graded.results(name)["extra_data"]["protections"]
        assert "set by each child" in protections.get("file access", ""), f"{name}: {protections}"
        assert "each child stacks the CPU grade's filter" in protections.get("system calls", ""), protections
        for kept in ("pid namespace", "own /proc", "grader's files hidden"):
            assert protections.get(kept, "").startswith("on"), f"{name}: {kept} is not on: {protections}"


def test_the_gradebook_shows_no_control_character(graded):
    for name in ("grades.csv", "summary.md"):
        text = (graded.out / name).read_text(encoding="utf-8").replace("\r\n", "\n")
        assert not CONTROLS.search(text), f"a control character in {name}: {CONTROLS.search(text)!r}"


def test_nothing_of_a_worker_user_remains_after_the_batch(graded):
    if os.geteuid() != 0:
        pytest.skip("the worker runs as a user of its own only where the grader is root")
    uids = worker_uids()  # every uid a worker may have been given in this container
    # A grade may be running beside this test (the suite's other process): its worker's files are not
    # left behind while the worker lives, and are removed within moments of its end. A leftover of the
    # batch belongs to a uid with no process left, and stays.
    deadline = time.monotonic() + SETTLE_S
    while True:
        running = {uid for _, uid in processes()}
        left = leftovers(lambda uid: uid in uids and uid not in running)
        if not left or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert not left, f"left behind by workers: {left[:5]}"


def test_the_reference_graded_beside_them_keeps_full_marks(graded):
    results = graded.results("reference")
    assert results["score"] == results["extra_data"]["max_score"] > 0
    assert all(t["status"] == "passed" for t in results["tests"])
