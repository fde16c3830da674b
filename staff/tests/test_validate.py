"""`staff validate`: the variant files are well formed, the judge rules are right, and CI's sample of
wheat and chaff is classified right by the suites, graded behind the sandbox as students are."""

from __future__ import annotations

import os

import pytest

from staff.validate.run import Outcome, judge, matrix, sample, summary, validate
from staff.validate.variants import CHAFF, WHEAT, Variant, dependents, load_variants, variant_source
from tests.problems import PROBLEMS

MIN_WHEAT, MIN_CHAFF = 3, 6


@pytest.fixture(scope="module")
def variants() -> list[Variant]:
    return load_variants()


def test_every_problem_has_enough_wheat_and_chaff(variants):
    short = {}
    for number in PROBLEMS:
        wheat = sum(v.problem == number and v.kind == WHEAT for v in variants)
        chaff = sum(v.problem == number and v.kind == CHAFF for v in variants)
        if wheat < MIN_WHEAT or chaff < MIN_CHAFF:
            short[number] = (wheat, chaff)
    assert not short, f"problems with fewer than {MIN_WHEAT} wheat or {MIN_CHAFF} chaff (wheat, chaff): {short}"


def test_every_variant_replaces_real_bodies_and_compiles(variants):
    for variant in variants:
        source = variant_source(variant)  # parses, or raises naming the variant
        for name in variant.bodies:
            function = name.rsplit(".", 1)[-1]
            assert f"def {function}(" in source, f"{variant.key}: no function {name} in the module"


def test_every_chaff_names_tests_that_exist_in_its_problem(variants, suite_tests):
    collected = suite_tests
    names = {number: {t.name.split("[", 1)[0] for t in collected if t.problem == number} for number in PROBLEMS}
    cuda = {t.name.split("[", 1)[0] for t in collected if t.needs_cuda}
    for variant in variants:
        if variant.kind == CHAFF:
            assert variant.catches or variant.gpu_catches, f"{variant.key} names no test that catches it"
            unknown = set(variant.catches + variant.gpu_catches) - names[variant.problem]
            assert not unknown, f"{variant.key} names tests that problem {variant.problem} lacks: {sorted(unknown)}"
            assert set(variant.gpu_catches) <= cuda, f"{variant.key}: gpu_catches names tests not marked cuda"


def test_dependents_follow_imports_transitively():
    depends = dependents()
    # model.py imports init; train.py imports model, optimizer, data and checkpoint; the adapters import
    # no other problem's module (Problem 10's resume test trains torch's own model and Adagrad)
    assert depends[6] == {7, 11}
    assert depends[7] == {11} and depends[8] == {11} and depends[10] == {11}
    assert depends[11] == set() and depends[1] == set()


def outcome(kind: str, earned: dict[int, float], possible: dict[int, float], failed: dict[int, set[str]]) -> Outcome:
    return Outcome("x", kind, 3, earned=earned, possible=possible, failed=failed)


def test_the_judge_flags_a_wheat_that_loses_a_point_and_a_chaff_caught_by_the_wrong_test():
    wheat = Variant(WHEAT, 3, "w", "")
    chaff = Variant(CHAFF, 3, "c", "", catches=("test_named",))
    assert judge(outcome(WHEAT, {3: 18.0}, {3: 18.0}, {}), wheat) == []
    assert judge(outcome(WHEAT, {3: 17.0}, {3: 18.0}, {3: {"test_a"}}), wheat)
    assert judge(outcome(CHAFF, {3: 17.0}, {3: 18.0}, {3: {"test_named"}}), chaff) == []
    assert judge(outcome(CHAFF, {3: 17.0}, {3: 18.0}, {3: {"test_other"}}), chaff)
    assert judge(outcome(CHAFF, {3: 18.0, 7: 10.0}, {3: 18.0, 7: 14.0}, {7: {"test_named"}}), chaff)
    assert judge(outcome("stubs", {1: 0.0}, {1: 31.0}, {}), None) == []
    assert judge(outcome("stubs", {1: 2.0}, {1: 31.0}, {}), None)


def test_a_grade_that_is_the_graders_failure_is_flagged_for_every_kind(monkeypatch):
    # Catches a wheat (and the stubs) read as behaving when their grade counted no test because CUDA
    # did not start in the sandbox or the container ran out of memory: 0 of 0 points lost.
    from staff.grading.grade import Grade
    from staff.grading.outcomes import Outcome as GradeOutcome
    from staff.sandbox.settings import Settings
    from staff.validate import run

    failed = Grade(tests=[], output="", seconds=1.0, outcome=GradeOutcome.CUDA_UNAVAILABLE,
                   details={"error": "RuntimeError: Error 304: OS call failed"})
    monkeypatch.setattr(run, "grade", lambda submission, settings, progress: failed)
    not_graded = run._grade("x", WHEAT, 3, {3}, lambda folder: folder.mkdir(), Settings(), gpu=True)
    for variant in (Variant(WHEAT, 3, "w", ""), Variant(CHAFF, 3, "c", "", catches=("test_named",)), None):
        verdict = judge(not_graded, variant)
        assert len(verdict) == 1 and "not graded: the grader failed (RuntimeError: Error 304" in verdict[0]


def test_the_judge_flags_points_a_chaff_loses_outside_its_problem_without_a_stated_dependency():
    # One mistake, one penalty: a Problem 6 chaff may cost Problem 11 points (it trains Problem 6's
    # init, as its handout says), not Problem 7's.
    from staff.validate.run import summary

    chaff = Variant(CHAFF, 6, "c", "", catches=("test_named",))
    on_11 = Outcome("p06-chaff-c", CHAFF, 6, earned={6: 8.0, 7: 14.0, 11: 10.0}, possible={6: 10.0, 7: 14.0, 11: 13.0},
                    failed={6: {"test_named"}, 11: {"test_the_loss_falls"}})
    on_7 = Outcome("p06-chaff-c", CHAFF, 6, earned={6: 8.0, 7: 12.0, 11: 13.0}, possible={6: 10.0, 7: 14.0, 11: 13.0},
                   failed={6: {"test_named"}, 7: {"test_linear"}})
    assert judge(on_11, chaff) == []
    assert any("problem 7" in line for line in judge(on_7, chaff))
    assert any("-3 on P11 (stated)" in line for line in summary([on_11]))


def test_a_stated_cost_falls_only_on_the_integration_tests():
    # Problem 11 runs stand-ins for the earlier parts in every test but its integration share: a
    # Problem 9 chaff that fails a stand-in test has cost Problem 11 points its own loop did not lose.
    chaff = Variant(CHAFF, 9, "c", "", catches=("test_named",))
    failed = {9: {"test_named"}, 11: {"test_the_loss_falls", "test_resuming_from_each_checkpoint_is_bit_identical"}}
    cascade = Outcome("p09-chaff-c", CHAFF, 9, earned={9: 27.0, 11: 15.0}, possible={9: 28.0, 11: 20.0},
                      failed=failed)
    assert any("test_resuming_from_each_checkpoint_is_bit_identical" in line for line in judge(cascade, chaff))
    share = Outcome("p09-chaff-c", CHAFF, 9, earned={9: 27.0, 11: 18.0}, possible={9: 28.0, 11: 20.0},
                    failed={9: {"test_named"}, 11: {"test_the_loss_falls"}})
    assert judge(share, chaff) == []


def test_the_largest_losses_table_names_the_chaff_and_marks_over_half():
    from staff.validate.run import largest_losses, matrix

    small = Outcome("p09-chaff-small", CHAFF, 9, earned={9: 27.0, 11: 18.0}, possible={9: 28.0, 11: 20.0})
    large = Outcome("p09-chaff-large", CHAFF, 9, earned={9: 10.0, 11: 20.0}, possible={9: 28.0, 11: 20.0})
    missed = Outcome("p09-chaff-missed", CHAFF, 9, earned={9: 28.0, 11: 19.0}, possible={9: 28.0, 11: 20.0})
    table = "\n".join(largest_losses([small, large, missed]))
    # Mistake caught: a share counting a chaff that lost points only outside its problem as caught.
    assert "| 9. Memmap data loader | 28 | 2 of 3 (67%) | 18 (`large`) **over half** | 2 (`small`) |" in table, table
    assert "20/20       18     0   ok" in "\n".join(matrix([large]))


def test_on_a_gpu_a_chaff_is_judged_by_its_gpu_catches():
    chaff = Variant(CHAFF, 4, "c", "", catches=("test_cpu",), gpu_catches=("test_gpu",))
    caught_on_gpu = outcome(CHAFF, {4: 4.0}, {4: 6.0}, {4: {"test_gpu"}})
    assert judge(caught_on_gpu, chaff, gpu=True) == [] and judge(caught_on_gpu, chaff)


def test_only_the_gpu_chaff_and_the_wheat_of_problems_with_cuda_tests_are_graded_on_a_gpu(variants, monkeypatch,
                                                                                          suite_tests):
    # Catches a CPU validate that grades a chaff only a GPU can catch (it would be reported as missed),
    # and a GPU validate that grades problems without cuda tests (nothing to run).
    from staff.validate import run
    from staff.validate.run import gpu_problems, gradable

    # gpu_problems collects the public suite: its part of the session's collection, not a collection of its own.
    monkeypatch.setattr(run, "collect_only", lambda *args, **kwargs: [t for t in suite_tests if not t.hidden])
    on_cpu, on_gpu = gradable(variants, gpu=False), gradable(variants, gpu=True)
    gpu_only = {v.key for v in variants if v.kind == CHAFF and not v.catches}
    assert gpu_only and not gpu_only & {v.key for v in on_cpu}
    assert "p04-chaff-no-synchronize" in gpu_only and {"p04-chaff-no-synchronize",
                                                       "p04-chaff-warm-ups-inside-the-clock"} <= {v.key for v in on_gpu}
    assert gpu_problems() == {1, 4, 8, 9, 11}
    assert all(v.kind == WHEAT or v.gpu_catches for v in on_gpu)
    assert {v.problem for v in on_gpu if v.kind == WHEAT} >= {1, 4, 8, 9, 11} and \
        not {v.problem for v in on_gpu} & {2, 3, 5}


@pytest.mark.timeout(1800)
@pytest.mark.slow
def test_the_ci_sample_is_classified_right(variants):
    """Per problem its first wheat (about 45 s on two cores): CI's time is near its 20-minute limit, so
    it grades validity here; chaff and the stubs' 0 are covered by the full `staff validate`, the red
    team and the grading and release tests."""
    wheat = [v for v in sample(variants) if v.kind == WHEAT]
    outcomes = validate(wheat, jobs=os.cpu_count() or 1, stubs=False, progress=False)
    report = "\n".join(matrix(outcomes) + [""] + summary(outcomes))
    print(report)
    assert not any(o.verdict for o in outcomes), report
