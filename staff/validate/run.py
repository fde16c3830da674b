"""`staff validate`: grade the stubs, every wheat and every chaff, and judge the suites by the results.

The suites are valid when every wheat (a correct implementation) keeps every point, and thorough
when every chaff (a wrong one) loses points on its own problem, in at least one of the tests it
names. One mistake, one penalty: a chaff may lose points on another problem only where the handout
says that problem runs its code (`STATED_COSTS`); a loss anywhere else fails the validation. A
variant changes one module only, so it is graded on its own problem and on the problems whose
modules import its module (Problem 7 on Problem 6's); every other problem runs the reference
unchanged and is not graded again. The stubs are graded on every problem and must score 0.

With `gpu`, only the GPU part is graded (the `cuda` tests, on this machine's GPU): the stubs, every
wheat whose problems have `cuda` tests, and every chaff that names `gpu_catches`. Without it, those
chaff that only a GPU catches are left out, and the summary says how many.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace

from tqdm import tqdm

from staff import samples
from staff.grading.grade import REPO_ROOT, grade
from staff.grading.selection import collect_only
from staff.grading.suite_run import warm_test_processes
from staff.sandbox.removal import scratch_folder
from staff.sandbox.settings import Settings
from staff.validate.variants import CHAFF, WHEAT, Variant, VariantError, build, dependents, load_variants
from tests.grading import PASSED, SKIPPED
from tests.problems import PROBLEMS

# Where the handout says a problem runs another's code, so that a mistake there may cost points
# here too: Problem 11 "calls your code from Problems 6 to 10" (handout/11_train.md). Problem 7
# builds on Problem 6's trunc_normal_init, but its tests hold Linear to the student's own function
# (handout/07_model.md, Tests), so a Problem 6 mistake must cost no Problem 7 point.
STATED_COSTS: dict[int, frozenset[int]] = {number: frozenset({11}) for number in (6, 7, 8, 9, 10)}
# Where such a stated cost may fall: Problem 11's other tests run the loop with stand-ins for the
# earlier parts (adapters/_parts.py), and only these few run the student's whole stack.
INTEGRATION_TESTS: dict[int, frozenset[str]] = {11: frozenset({
    "test_the_loss_falls", "test_training_holds_the_bytes_per_parameter_problem_1_predicts",
    "test_training_on_gpu_agrees_with_the_cpu_run"})}


def points_lost_outside(outcome: Outcome, own: int | None = None) -> dict[int, float]:
    """Points a variant lost on problems other than its own (`own`, by default the outcome's), by problem."""
    own = outcome.problem if own is None else own
    return {n: outcome.possible[n] - outcome.earned.get(n, 0.0) for n in sorted(outcome.possible)
            if n != own and outcome.earned.get(n, 0.0) < outcome.possible[n]}


def points_lost_inside(outcome: Outcome) -> float:
    """Points a variant lost on its own problem."""
    own = outcome.problem
    return outcome.possible.get(own, 0.0) - outcome.earned.get(own, 0.0) if own in outcome.possible else 0.0


@dataclass
class Outcome:
    """One implementation's grade, by problem."""

    key: str
    kind: str  # "stubs", WHEAT or CHAFF
    problem: int | None
    earned: dict[int, float] = field(default_factory=dict)
    possible: dict[int, float] = field(default_factory=dict)
    failed: dict[int, set[str]] = field(default_factory=dict)  # problem -> names of failed tests (cases folded)
    verdict: list[str] = field(default_factory=list)  # what is wrong; empty when it behaved as it must
    seconds: float = 0.0
    not_graded: str = ""  # why the grade says nothing of it (the grader's failure: CUDA, memory); "" when graded


def _grade(key: str, kind: str, problem: int | None, problems: set[int], build_into, options,
           gpu: bool = False) -> Outcome:
    started = time.monotonic()
    outcome = Outcome(key, kind, problem)
    with scratch_folder("staff-validate-") as scratch:
        submission = scratch / "submission"
        build_into(submission)
        result = grade(submission, replace(options, problems=problems, gpu=gpu), progress=False)
    if result.outcome.grader_failure:
        outcome.not_graded = str(result.details.get("error") or result.details.get("what") or result.outcome.value)
    for test in result.tests:
        if test.status == SKIPPED:
            continue
        outcome.earned[test.problem] = outcome.earned.get(test.problem, 0.0) + test.earned
        outcome.possible[test.problem] = outcome.possible.get(test.problem, 0.0) + test.possible
        if test.status != PASSED:
            outcome.failed.setdefault(test.problem, set()).add(test.name.split("[", 1)[0])
    outcome.seconds = time.monotonic() - started
    return outcome


def judge(outcome: Outcome, variant: Variant | None, gpu: bool = False) -> list[str]:
    """What is wrong with an outcome: a point lost by a wheat, a chaff that loses none on its own
    problem or is not caught by a test it names (its `gpu_catches` when graded on a GPU), stubs
    that score; and any grade that is the grader's failure, which says nothing of the implementation."""
    if outcome.not_graded:
        return [f"not graded: the grader failed ({outcome.not_graded.splitlines()[0][:300]}); no test of it counted, "
                "so it is neither passed nor caught"]
    if variant is None:
        return [f"the stubs score {sum(outcome.earned.values()):g}, expected 0"] if any(outcome.earned.values()) else []
    if variant.kind == WHEAT:
        lost = [n for n in outcome.possible if outcome.earned[n] < outcome.possible[n]]
        return [f"problem {n}: {outcome.earned[n]:g} / {outcome.possible[n]:g}; failed {sorted(outcome.failed[n])}"
                for n in lost]
    own = variant.problem
    failed = outcome.failed.get(own, set())
    wrong = []
    if not failed:
        wrong.append(f"problem {own}: no test failed; it keeps all {outcome.possible.get(own, 0):g} points")
    named = variant.gpu_catches if gpu else variant.catches
    if failed and not failed & set(named):
        wrong.append(f"none of the tests it names failed ({', '.join(named)}); these did: {sorted(failed)}")
    for n, lost in points_lost_outside(outcome, own).items():
        failed_there = outcome.failed.get(n, set())
        if n not in STATED_COSTS.get(own, frozenset()):
            wrong.append(f"lost {lost:g} points on problem {n}, which the handout does not say runs problem {own}'s "
                         f"code (one mistake, one penalty); failed {sorted(failed_there)}")
        elif n in INTEGRATION_TESTS and failed_there - INTEGRATION_TESTS[n]:
            wrong.append(f"failed {sorted(failed_there - INTEGRATION_TESTS[n])} on problem {n}, which run stand-ins "
                         f"for problem {own}'s code (only {sorted(INTEGRATION_TESTS[n])} run the student's own)")
    return wrong


@functools.cache
def gpu_problems() -> frozenset[int]:
    """The problems that have `cuda` tests (collected once: a pytest run of a few seconds)."""
    return frozenset(test.problem for test in collect_only(REPO_ROOT) if test.needs_cuda)


def gradable(variants: list[Variant], gpu: bool) -> list[Variant]:
    """The variants a CPU (or, with `gpu`, a GPU) validation grades: without a GPU, not the chaff
    only a GPU catches; on one, the wheat of problems with `cuda` tests and the chaff naming
    `gpu_catches`."""
    if not gpu:
        return [v for v in variants if v.kind == WHEAT or v.catches]
    with_cuda, depends = gpu_problems(), dependents()
    return [v for v in variants if ({v.problem} | depends[v.problem]) & with_cuda
            and (v.kind == WHEAT or v.gpu_catches)]


def grade_settings(gpu: bool) -> Settings:
    """How validate grades each implementation: as `staff grade` (or `staff grade --gpu`, with no
    address-space limit: the CUDA driver maps far more address space than it uses, and cannot start
    under the CPU grade's limit) does, with one torch thread."""
    return Settings(threads=1, gpu=gpu, allow_open_grader=True)  # the staff's own variants: nothing hostile runs


def validate(variants: list[Variant], jobs: int, options: Settings | None = None,
             stubs: bool = True, progress: bool = True, gpu: bool = False) -> list[Outcome]:
    """Grade the stubs (on every problem) and each variant (on its problem and its dependents); with
    `gpu`, their GPU part only (pass `gradable(variants, gpu=True)`)."""
    options = options or grade_settings(gpu)
    depends = dependents()
    with_cuda = gpu_problems() if gpu else set(PROBLEMS)
    work = []
    if stubs:
        work.append(("stubs", "stubs", None, with_cuda, samples.stubs, None))
    for variant in variants:
        work.append((variant.key, variant.kind, variant.problem,
                     ({variant.problem} | depends[variant.problem]) & with_cuda,
                     functools.partial(build, variant), variant))
    outcomes = []
    # A CPU validation grades many implementations: their test processes are forked from one warm template.
    with warm_test_processes() if not gpu and len(work) > 1 else contextlib.nullcontext(), \
            ThreadPoolExecutor(max_workers=max(1, jobs)) as pool, \
            tqdm(total=len(work), unit="implementation", desc="validate", disable=not progress, file=sys.stderr) as bar:
        futures = {pool.submit(_grade, key, kind, problem, problems, build_into, options, gpu): variant
                   for key, kind, problem, problems, build_into, variant in work}
        for future in as_completed(futures):
            outcome = future.result()
            outcome.verdict = judge(outcome, futures[future], gpu)
            outcomes.append(outcome)
            bar.update(1)
    order = {key: i for i, (key, *_rest) in enumerate(work)}
    return sorted(outcomes, key=lambda o: order[o.key])


def matrix(outcomes: list[Outcome]) -> list[str]:
    """Implementation x problem: points earned / possible where graded, "." where the reference ran."""
    width = max(len(o.key) for o in outcomes) + 2
    lines = [f"{'implementation':<{width}}" + "".join(f"{f'P{n}':>9}" for n in PROBLEMS)
             + f"{'lost in':>9}{'out':>6}   verdict"]
    for o in outcomes:
        cells = "".join(f"{f'{o.earned[n]:g}/{o.possible[n]:g}' if n in o.possible else '.':>9}" for n in PROBLEMS)
        lost = (f"{points_lost_inside(o):>9g}{sum(points_lost_outside(o).values()):>6g}" if o.kind == CHAFF
                else f"{'':>15}")
        lines.append(f"{o.key:<{width}}{cells}{lost}   {'ok' if not o.verdict else 'WRONG: ' + '; '.join(o.verdict)}")
    return lines


def largest_losses(outcomes: list[Outcome]) -> list[str]:
    """Per problem, the share of its chaff that lost points on the problem itself (caught by the
    problem's own tests), the most points one chaff lost on the problem itself and on all the others
    together, which chaff, and a mark where either is more than half the problem: a markdown table."""
    lines = ["| problem | points | caught by its own tests | largest loss inside | largest loss outside |",
             "|---|---:|---|---|---|"]
    for number, problem in PROBLEMS.items():
        mine = [o for o in outcomes if o.kind == CHAFF and o.problem == number and number in o.possible]
        if not mine:
            continue
        possible = mine[0].possible[number]

        def cell(o: Outcome, lost: float) -> str:
            flag = " **over half**" if lost > possible / 2 else ""
            return f"{lost:g} (`{o.key.split('-chaff-', 1)[1]}`){flag}" if lost else "0"

        inside = max(mine, key=points_lost_inside)
        outside = max(mine, key=lambda o: sum(points_lost_outside(o).values()))
        caught = sum(points_lost_inside(o) > 0 for o in mine)
        lines.append(f"| {number}. {problem.title} | {possible:g} | {caught} of {len(mine)} "
                     f"({100 * caught / len(mine):.0f}%) | {cell(inside, points_lost_inside(inside))} | "
                     f"{cell(outside, sum(points_lost_outside(outside).values()))} |")
    return lines


def summary(outcomes: list[Outcome]) -> list[str]:
    wheat = [o for o in outcomes if o.kind == WHEAT]
    chaff = [o for o in outcomes if o.kind == CHAFF]
    lines = [f"wheat: {sum(not o.verdict for o in wheat)} of {len(wheat)} keep every point",
             f"chaff: {sum(not o.verdict for o in chaff)} of {len(chaff)} caught on their own problem by a test "
             f"they name"]
    outside = [(o, points_lost_outside(o)) for o in chaff if points_lost_outside(o)]
    lines.append(f"chaff losing points outside their own problem: {len(outside)} of {len(chaff)}")
    for o, lost_by in outside:
        lines.append(f"  {o.key}: " + ", ".join(
            f"-{lost:g} on P{n} ({'stated' if n in STATED_COSTS.get(o.problem, ()) else 'NOT stated'})"
            for n, lost in lost_by.items()))
    if chaff:
        lines += ["", "largest single-mistake loss per problem (CPU tests, public + hidden):"]
        lines += largest_losses(outcomes)
    stubs = next((o for o in outcomes if o.kind == "stubs"), None)
    if stubs is not None:
        lines.append(f"stubs: {sum(stubs.earned.values()):g} of {sum(stubs.possible.values()):g} points")
    return lines


def sample(variants: list[Variant]) -> list[Variant]:
    """A fixed sample: per problem, its first wheat and its first chaff (CI grades the wheat of it)."""
    picked = []
    for number in PROBLEMS:
        mine = [v for v in variants if v.problem == number]
        picked += [v for v in mine if v.kind == WHEAT][:1] + [v for v in mine if v.kind == CHAFF and v.catches][:1]
    return picked


def named(variants: list[Variant], names: set[str]) -> list[Variant]:
    """The variants called one of `names` (a name or a key), or a VariantError naming those none is called."""
    unknown = names - {v.name for v in variants} - {v.key for v in variants}
    if unknown:
        raise VariantError(f"no variant is called {', '.join(sorted(unknown))}")
    return [v for v in variants if v.name in names or v.key in names]


def all_validated(sampled: bool, problems: set[int] | None, jobs: int, gpu: bool = False,
                  names: set[str] = frozenset()) -> bool:
    """Grade the chosen implementations (a sample, those `names` calls, or all of `problems`' and, for
    all problems, the stubs), print their matrix and summary; whether each was graded as it must be."""
    variants = load_variants(problems)
    chosen = gradable(sample(variants) if sampled else named(variants, names) if names else variants, gpu)
    started = time.monotonic()
    outcomes = validate(chosen, jobs, stubs=problems is None and not names, gpu=gpu)
    for line in matrix(outcomes) + [""] + summary(outcomes):
        print(line)
    gpu_only = [v.key for v in variants if v.kind == CHAFF and not v.catches]
    if gpu_only and not gpu:
        print(f"not graded here, since only a GPU catches them: {', '.join(gpu_only)} (`staff validate --gpu` on "
              f"a GPU machine)")
    print(f"\n{len(outcomes)} implementations graded in {time.monotonic() - started:.0f} s with {jobs} at a time")
    return not any(o.verdict for o in outcomes)
