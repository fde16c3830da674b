"""`staff gpu-check`: what a TA runs first on a GPU machine, ending in one Markdown report.

Its steps (steps.py), each a part of the report whatever the others did, in the order that puts what
decides a grade first (a step not started within the budget, 8 minutes by default, says so):
1. each protection of a GPU grade's worker tried alone with CUDA (staff/gpu/protections.py), and the
   forms a GPU grade does not use, whose failure shows why it uses the form it does;
2. `staff grade --gpu` on the reference, behind the sandbox: its CUDA preflight (a confined worker
   child starting CUDA before any test), its outcome and score, and which protections were off;
3. the `cuda` tests on the reference (`pytest -m cuda tests`, here, unconfined), each with the
   figure it judged against its bound (tests/gpu_figures.py, read back from pytest's JUnit XML) and
   the margin: how many times the figure could grow or shrink before it crossed the nearer bound;
4. `staff gpu-report` on the reference: the harness's and time_matmul's figures per dtype and size;
5. `staff validate --gpu`: the stubs, the wheat and the GPU chaff graded behind the sandbox, with
   each implementation's verdict (the timing problems' one at a time, the others in parallel);
6. the red team's cases confined as a GPU grade's worker is, graded on this machine.

The report (OUT/gpu-check.md) starts with the device, its driver, torch and CUDA, and is written
again after each step, so a run cut short leaves what it did. `dry_run=True` walks the same steps
without a GPU, with a stand-in for each step's device work (staff/gpu/dry_run.py).
"""

from __future__ import annotations

import datetime
import sys
import time
from pathlib import Path

from staff.atomic import write_text_atomic
from staff.gpu import dry_run as stand_in
from staff.gpu.steps import (
    BUDGET_S,
    REPORT_NAME,
    SECTIONS,
    CudaTestOutcome,
    SandboxedGrade,
    all_well,
    build_markdown,
    device_facts,
    run_cuda_tests,
    run_gpu_report,
    run_protections,
    run_redteam,
    run_sandboxed_grade,
    run_validate,
)
from staff.sandbox.removal import scratch_folder


class _Steps:
    """Runs the check's steps within the budget, each result into `done[key]`, writing the report
    after each."""

    def __init__(self, name: str, budget_s: float, done: dict, write) -> None:
        self.name, self.deadline, self.done, self.write = name, time.monotonic() + budget_s, done, write
        self.number = 0

    def run(self, key: str, what: str, step, skipped: str | None = None) -> None:
        """done[key] = `step()`'s result; `skipped` where an option left it out; a sentence where the
        budget was spent before it began, or where it raised."""
        self.number += 1
        left = self.deadline - time.monotonic()
        if skipped is not None:
            self.done[key] = skipped
        elif left <= 0:
            self.done[key] = f"not run: the budget was spent before this step began (--budget, {BUDGET_S:g} s " \
                             "by default)"
        else:
            print(f"{self.name}: {self.number}/{len(SECTIONS)} {what} ({left:.0f} s of the budget left)",
                  file=sys.stderr, flush=True)
            try:
                self.done[key] = step()
            except Exception as error:  # noqa: BLE001 - a step that fails is a section of the report
                self.done[key] = f"{what} failed: {type(error).__name__}: {error}"
        self.write()


def _pytest_rows(ran: tuple[list[CudaTestOutcome], str] | str) -> list[CudaTestOutcome] | str:
    """A pytest step's rows, or why it has none."""
    if isinstance(ran, str):
        return ran
    rows, tail = ran
    return rows or f"pytest wrote no results; the end of its output:\n\n```text\n{tail}\n```"


def gpu_check(repo: Path, out: Path, *, dry_run: bool = False, budget_s: float = BUDGET_S, jobs: int = 6,
              validate: bool = True, redteam: bool = True, report: bool = True) -> bool:
    """Run the check on `repo`'s reference and write OUT/gpu-check.md (and OUT/gpu-report/). True when
    every step is clean (a dry run: when every step's plumbing worked); what is not, the report says
    (and, for a dry run, stderr). `validate`, `redteam` and `report` False leave those steps out."""
    dry = dry_run
    out.mkdir(parents=True, exist_ok=True)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    facts = stand_in.facts() if dry else device_facts()
    name = f"staff gpu-check{' --dry-run' if dry else ''}"
    path = out / REPORT_NAME
    done: dict[str, object] = dict.fromkeys(("protections", "graded", "tests", "redteam", "variants", "report"),
                                            "not run yet")

    def write() -> None:
        write_text_atomic(path, build_markdown(facts, done["tests"], done["variants"], done["report"], when,
                                               done["graded"], dry, done["protections"], done["redteam"]))

    steps = _Steps(name, budget_s, done, write)
    with scratch_folder("staff-gpu-check-") as scratch:
        steps.run("protections", "each protection alone with CUDA", lambda: run_protections(repo, scratch, dry))
        steps.run("graded", "staff grade --gpu on the reference, behind the sandbox",
                  lambda: stand_in.sandboxed_grade(repo) if dry else run_sandboxed_grade(repo))
        steps.run("tests", "the cuda tests on the reference", lambda: _pytest_rows(run_cuda_tests(repo, scratch)))
        steps.run("report", "staff gpu-report", lambda: run_gpu_report(out, repo, "cpu" if dry else "cuda"),
                  "not run (--no-report)" if not report else None)
        # Every implementation is graded as the reference was: where the reference lost points behind the
        # sandbox, they would too, and a lent device's minutes are better spent on a second run.
        failed = None if dry or (isinstance(done["graded"], SandboxedGrade) and done["graded"].ok) else \
            "not run: the reference's sandboxed GPU grade did not earn every point (above), so every " \
            "implementation's grade would say the same"
        steps.run("variants", "staff validate --gpu",
                  lambda: stand_in.validate_rows() if dry else run_validate(jobs),
                  "not run (--no-validate)" if not validate else failed)
        steps.run("redteam", "the red team, confined as a GPU grade",
                  lambda: stand_in.redteam_rows() if dry else _pytest_rows(run_redteam(repo, scratch)),
                  "not run (--no-redteam)" if not redteam else failed)
    print(path.read_text(encoding="utf-8"))
    print(f"written: {path}", file=sys.stderr)
    if dry:
        problems = stand_in.plumbing_problems(path.read_text(encoding="utf-8"), done["tests"], done["graded"],
                                              done["variants"], done["report"], done["protections"], done["redteam"])
        for problem in problems:
            print(f"{name}: {problem}", file=sys.stderr)
        return not problems
    ran = lambda key: None if str(done[key]).startswith("not run (") else done[key]  # noqa: E731
    return all_well(done["tests"], ran("variants"), done["graded"], done["protections"], ran("redteam"))
