"""`staff gpu-check --dry-run`: every step of the GPU check without a GPU, so that its own plumbing
(each step's arguments and files, the report's sections and tables, the verdict) is exercised on any
machine, CI included, in about a minute.

What stands in for the device, step by step (staff/gpu/steps.py runs the rest as it does on a GPU):
- the device's facts: "dry run" lines in place of the device, driver and torch;
- each protection alone: the real probes (every protection applied as the worker applies it), with
  the CPU's matmul standing for CUDA's;
- the reference's sandboxed GPU grade: the real `staff grade --gpu` path, one problem, with the CUDA
  preflight's stand-in that starts (staff/sandbox/cuda_preflight.py) in the confined worker;
- the cuda tests: the real `pytest -m cuda tests`, which skips every test without a GPU;
- the red team and validate: the real selections, listed, not graded;
- gpu-report: the real report on the CPU at one small size.
"""

from __future__ import annotations

from pathlib import Path

from staff.gpu.steps import (
    FACTS,
    SECTIONS,
    CudaTestOutcome,
    SandboxedGrade,
    VariantOutcome,
    redteam_variants,
    run_sandboxed_grade,
    validate_selection,
)
from staff.sandbox import cuda_preflight

GRADED_PROBLEMS = (1,)  # the sandboxed grade's: its cuda test is the cheapest to collect
NOT_GRADED = "dry run: selected for grading, not graded"


def facts() -> dict[str, str]:
    """The report's first lines, with "dry run" for what a device would fill in."""
    return {key: "dry run (no GPU)" if key == "device" else "dry run" for key in FACTS}


def sandboxed_grade(repo: Path) -> SandboxedGrade:
    """The reference's GPU part graded behind the sandbox on GRADED_PROBLEMS, the preflight's stand-in
    that starts standing for the driver."""
    return run_sandboxed_grade(repo, GRADED_PROBLEMS, cuda_preflight.STAND_IN_STARTS)


def validate_rows() -> list[VariantOutcome]:
    """What `staff validate --gpu` would grade (the stubs, then its real selection), one row each."""
    return [VariantOutcome("stubs", "stubs", True, NOT_GRADED)] + [
        VariantOutcome(variant.key, variant.kind, True, NOT_GRADED) for variant in validate_selection()]


def redteam_rows() -> list[CudaTestOutcome]:
    """The red team's GPU-confined variants the check would grade, one row each."""
    return [CudaTestOutcome(f"test_each_case_gets_the_score_it_must_get[{name}]", "passed", NOT_GRADED)
            for name in redteam_variants()]


def plumbing_problems(text: str, tests: list[CudaTestOutcome] | str, graded: SandboxedGrade | str,
                      variants: list[VariantOutcome] | str, report: list[str] | str,
                      protections: list | str = "not run (left out)",
                      redteam: list[CudaTestOutcome] | str = "not run (left out)") -> list[str]:
    """What did not work in a dry run, one sentence each (empty when the plumbing works): a step that
    failed or came back empty, a grade that did not go on after its preflight, a section missing from
    the report `text`. A step left out by an option is not a problem."""
    problems = [f"the report lacks its section {heading!r}" for heading in SECTIONS if heading not in text]
    if isinstance(tests, str) or not tests:
        problems.append("the cuda tests step collected no test (expected every cuda test, skipped without a GPU): "
                        f"{tests if isinstance(tests, str) else 'an empty JUnit report'}"[:600])
    if isinstance(graded, str):
        problems.append(f"the sandboxed grade step failed: {graded}"[:600])
    elif graded.outcome != "graded" or not graded.preflight.startswith("passed"):
        problems.append(f"the sandboxed grade ended {graded.outcome!r} with the CUDA preflight {graded.preflight!r}; "
                        "expected 'graded' after the stand-in preflight passed")
    if not isinstance(protections, str) and not all(p.holds for p in protections):
        problems.append("the protection probes failed with the stand-in: " + "; ".join(
            f"{p.name}: {p.said}" for p in protections if not p.holds)[:600])
    for step, result in (("protections", protections), ("red team", redteam), ("validate", variants),
                         ("gpu-report", report)):
        if isinstance(result, str) and not result.startswith("not run"):
            problems.append(f"the {step} step failed: {result}"[:600])
        elif not isinstance(result, str) and not result:
            problems.append(f"the {step} step gave nothing to report")
    return problems
