"""The steps of `staff gpu-check` (check.py runs them within its budget) and the report they make.

Each step returns rows (its outcomes) or a sentence that says why it has none: each protection tried
alone with CUDA, the reference's sandboxed GPU grade, the cuda tests with each figure against its bound
and the margin, `staff gpu-report`, `staff validate --gpu` and the red team confined as a GPU grade.
`build_markdown` makes the report of whatever steps have run; `all_well` is its verdict.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

REPORT_NAME = "gpu-check.md"
SECTIONS = ("## Each protection alone with CUDA", "## `staff grade --gpu` on the reference, behind the sandbox",
            "## The `cuda` tests on the reference", "## `staff gpu-report` on the reference",
            "## `staff validate --gpu`", "## The red team, confined as a GPU grade")
BUDGET_S = 480.0  # the bound on the whole check: a device is lent for minutes
TIMING_PROBLEMS = frozenset({4})  # whose cuda tests time the GPU: their implementations are graded one at a time

FACTS = ("device", "peak row", "driver", "torch", "CUDA (torch built with)", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
         "TORCH_CUBLAS_WORKSPACE_CACHE")  # the report's first lines, in order
DRY_RUN_NOTE = ("no GPU was used. Each step ran its own code (its arguments, files and this report) with a stand-in "
                "for the device: the cuda tests skip, the sandboxed grade's CUDA preflight is the stand-in that "
                "starts and grades one problem, validate lists what it would grade without grading it, and "
                "gpu-report measures one small size on the CPU. No figure here says anything of a GPU.")
DRY_RUN_REPORT_NOTE = ("the CPU at 32x32x32 float32 (1 warm-up, 2 repeats) stands in for the device; its figures say "
                       "nothing of a GPU.")


@dataclass
class CudaTestOutcome:
    """One `cuda` test's result on the reference; `figure` as tests/gpu_figures.py recorded it."""

    name: str
    outcome: str  # passed, failed, skipped or error
    message: str = ""
    figure: dict | None = None


@dataclass
class VariantOutcome:
    """One implementation graded by `staff validate --gpu`: ok, or what was wrong."""

    key: str
    kind: str  # stubs, wheat or chaff
    ok: bool
    detail: str


@dataclass
class SandboxedGrade:
    """The reference's GPU part graded behind the sandbox, as `staff grade --gpu` grades it."""

    outcome: str  # a staff.grading.outcomes.Outcome value
    score: float
    max_score: float
    preflight: str  # the CUDA preflight's line (staff.grading.grade.preflight_text), or why there is none
    failed: list[str]  # the tests that failed
    protections_off: list[str]  # "name: why" for each protection that was off
    summary: str  # the grade's text above its table (for a grader's failure: why, and what to try)

    @property
    def ok(self) -> bool:
        """Graded, CUDA started, every point earned, and some point to earn."""
        return self.outcome == "graded" and self.preflight.startswith("passed") and self.max_score > 0 \
            and self.score == self.max_score


def margin(value: float, low: float | None, high: float | None) -> float | None:
    """How many times `value` may be multiplied (or divided) before it crosses the nearer bound:
    above 1 inside the bounds, below 1 outside; None with no bounds or a non-positive value."""
    if not value > 0 or not math.isfinite(value) or (not low and not high):
        return None
    return min(([value / low] if low else []) + ([high / value] if high else []))


def read_junit(path: Path) -> list[CudaTestOutcome]:
    """The tests in pytest's JUnit XML at `path`, with each one's outcome, message and figure."""
    outcomes = []
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            found = case.find(tag)
            if found is not None:
                outcome = "failed" if tag == "failure" else tag
                message = (found.get("message") or found.text or "").strip()
                break
        figure = None
        for prop in case.iter("property"):
            if prop.get("name") == "gpu_figure":
                figure = json.loads(prop.get("value") or "null")
        outcomes.append(CudaTestOutcome(case.get("name", "?"), outcome, message, figure))
    return outcomes


def device_facts() -> dict[str, str]:
    """The device's name and peak row, the driver, torch and the CUDA torch was built with."""
    import torch

    from tests.gpu_timing import peak_row

    name = torch.cuda.get_device_name()
    row = peak_row(name)
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=60).stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        driver = "unknown (nvidia-smi did not answer)"
    return dict(zip(FACTS, (name, row[0] if row else "none: not in tests/gpu_timing.py's table", driver,
                            torch.__version__, str(torch.version.cuda),
                            *(os.environ.get(variable, "unset") for variable in FACTS[-2:])), strict=True))


def run_sandboxed_grade(repo: Path, problems: tuple[int, ...] | None = None,
                        cuda_preflight_stand_in: str | None = None) -> SandboxedGrade:
    """`staff grade --gpu` on this tree's reference, every protection the GPU part keeps on (the
    dry run grades `problems` alone, with a preflight stand-in)."""
    from staff.grading.grade import grade
    from staff.sandbox.settings import Settings

    # The reference, the staff's own code: nothing hostile runs, so no ordinary user is refused here.
    made = grade(repo, Settings(gpu=True, problems=problems, allow_open_grader=True), progress=False,
                 cuda_preflight_stand_in=cuda_preflight_stand_in)
    off = [f"{name}: {why}" for name, why in made.protections.items() if not why.startswith("on")]
    return SandboxedGrade(made.outcome.value, made.score, made.max_score,
                          str(made.details.get("cuda_preflight", "none: the grade ran no CUDA preflight")),
                          sorted(t.name for t in made.tests if t.status == "failed"), off,
                          made.outcome.summary(made.details))


def run_cuda_tests(repo: Path, scratch: Path) -> tuple[list[CudaTestOutcome], str]:
    """`pytest -m cuda tests` on this tree's reference; the outcomes, and the end of pytest's output."""
    junit = scratch / "cuda-tests.xml"
    env = {**os.environ, "PYTHONPATH": str(repo), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-m", "cuda", "tests", "-p", "no:cacheprovider", "-q",
                           "-rA", f"--junitxml={junit}", "-o", "junit_family=xunit1"], cwd=repo, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace")
    tail = (done.stdout + done.stderr)[-3000:]
    return (read_junit(junit) if junit.exists() else []), tail


def validate_selection() -> list:
    """What `staff validate --gpu` grades besides the stubs: the wheat of the problems with `cuda`
    tests and the chaff only a GPU catches."""
    from staff.validate.run import gradable
    from staff.validate.variants import load_variants

    return gradable(load_variants(None), gpu=True)


def run_validate(jobs: int) -> list[VariantOutcome]:
    """`staff validate --gpu`'s grading, as plain rows: the stubs and the implementations of the
    timing problems one at a time (their tests time the GPU), then the others `jobs` at a time."""
    from staff.validate.run import dependents, validate

    depends, selection = dependents(), validate_selection()
    timed = [v for v in selection if ({v.problem} | depends[v.problem]) & TIMING_PROBLEMS]
    rows = []
    for chosen, at_once, stubs in ((timed, 1, True), ([v for v in selection if v not in timed], jobs, False)):
        for outcome in validate(chosen, at_once, stubs=stubs, progress=False, gpu=True):
            if outcome.verdict:
                detail = "; ".join(outcome.verdict)
            elif outcome.kind == "chaff":
                detail = "caught by " + ", ".join(sorted(outcome.failed.get(outcome.problem, set())))
            else:
                detail = f"{sum(outcome.earned.values()):g} / {sum(outcome.possible.values()):g} points"
            rows.append(VariantOutcome(outcome.key, outcome.kind, not outcome.verdict, detail))
    return rows


def redteam_variants() -> list[str]:
    """The red team's cases graded confined as a GPU grade's worker (`--gpu-confinement`)."""
    from staff.redteam.corpus import GPU_CONFINED, load_cases

    return [case.name for case in load_cases() if GPU_CONFINED in case.off]


def run_redteam(repo: Path, scratch: Path) -> tuple[list[CudaTestOutcome], str]:
    """The red team's tests of those cases (staff/tests/test_redteam.py), graded on this machine; each
    test's outcome, and the end of pytest's output."""
    from staff.redteam.corpus import load_cases

    names, cases = redteam_variants(), {case.name: case.folder.name for case in load_cases()}
    junit = scratch / "redteam.xml"
    env = {**os.environ, "PYTHONPATH": str(repo), "PYTHONDONTWRITEBYTECODE": "1",
           "STAFF_REDTEAM_CASES": ",".join(sorted({cases[name] for name in names})),
           "STAFF_REDTEAM_SAMPLES": "none"}
    done = subprocess.run([sys.executable, "-m", "pytest", "staff/tests/test_redteam.py", "-m", "slow", "-k",
                           " or ".join(names), "-p", "no:cacheprovider", "-q", "-rA", f"--junitxml={junit}",
                           "-o", "junit_family=xunit1"], cwd=repo, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, errors="replace")
    return (read_junit(junit) if junit.exists() else []), (done.stdout + done.stderr)[-3000:]


def run_protections(repo: Path, scratch: Path, stand_in: bool = False) -> list | str:
    """staff/gpu/protections.py in a process of its own (one that has not started CUDA, so that it can
    fork children that start it); its results, or why there are none."""
    from staff.gpu.protections import PROBE_TIMEOUT_S, PROBES, load

    out = scratch / "protections.json"
    try:
        done = subprocess.run([sys.executable, "-m", "staff.gpu.protections", str(out),
                               *(["--stand-in"] if stand_in else [])], cwd=repo, stdin=subprocess.DEVNULL,
                              env={**os.environ, "PYTHONPATH": str(repo)}, capture_output=True, text=True,
                              errors="replace", timeout=PROBE_TIMEOUT_S * (len(PROBES) + 1))
    except subprocess.TimeoutExpired:
        return "the probes did not end in time"
    return load(out) if out.exists() else f"the probes wrote no results:\n\n```text\n{done.stderr[-2000:]}\n```"


def run_gpu_report(out: Path, repo: Path, device: str = "cuda") -> list[str]:
    """`staff gpu-report` on the reference, into OUT/gpu-report/; its lines of text. On the CPU (the
    dry run) the same code measures one small float32 size."""
    from staff.gpu.report import DTYPES, SIZES, format_report, run_report

    sizes, dtypes, warmup, repeats = (list(SIZES), list(DTYPES), 5, 20) if device == "cuda" else \
        ([32], ["float32"], 1, 2)
    report, _files = run_report(None, device, sizes, dtypes, warmup, repeats, out / "gpu-report", repo)
    return format_report(report)


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def _grade_lines(graded: SandboxedGrade | str, dry_run: bool) -> list[str]:
    if isinstance(graded, str):
        return [graded]
    verdict = " (dry run: no point to earn without a GPU)" if dry_run else "" if graded.ok else " (WRONG)"
    lines = ["| outcome | score | CUDA preflight | protections off |", "|---|---|---|---|",
             f"| {graded.outcome}{verdict} | {graded.score:g} / {graded.max_score:g} | "
             f"{_cell(graded.preflight)} | {_cell('; '.join(graded.protections_off) or 'none')} |"]
    if graded.failed:
        lines += ["", "Failed: " + ", ".join(f"`{name}`" for name in graded.failed)]
    if graded.outcome != "graded":
        lines += ["", "```text", graded.summary, "```"]
    return lines


def _tests_table(tests: list[CudaTestOutcome], dry_run: bool) -> list[str]:
    lines = ["| test | outcome | figure | bounds | margin | note |", "|---|---|---|---|---|---|"]
    for test in tests:
        fig = test.figure or {}
        value = fig.get("value")
        bounds = f"[{_number(fig.get('low'))}, {_number(fig.get('high'))}]" if fig else "-"
        room = margin(value, fig.get("low"), fig.get("high")) if fig else None
        room_text = "-" if room is None else f"{room:.2f}x" + ("" if room >= 1 else " (OUTSIDE)")
        figure = f"{_cell(fig.get('what', ''))} {_number(value) if fig else ''}"
        if dry_run and not fig:
            figure = bounds = room_text = "dry run"
        note = " ".join(filter(None, [fig.get("note", ""), test.message[:300]]))
        lines.append(f"| `{_cell(test.name)}` | {test.outcome} | {figure} | {bounds} | {room_text} | {_cell(note)} |")
    counts = {o: sum(t.outcome == o for t in tests) for o in ("passed", "failed", "error", "skipped")}
    return lines + ["", ", ".join(f"{n} {o}" for o, n in counts.items() if n) or "no test ran"]


def _redteam_table(rows: list[CudaTestOutcome]) -> list[str]:
    lines = ["| test | outcome | message |", "|---|---|---|"]
    lines += [f"| `{_cell(r.name)}` | {r.outcome} | {_cell(r.message[:300])} |" for r in rows]
    return lines + ["", f"{sum(r.outcome == 'passed' for r in rows)} of {len(rows)} passed"]


def build_markdown(facts: dict[str, str], tests: list[CudaTestOutcome] | str, variants: list[VariantOutcome] | str,
                   report: list[str] | str, when: str, graded: SandboxedGrade | str = "not run",
                   dry_run: bool = False, protections: list | str = "not run",
                   redteam: list[CudaTestOutcome] | str = "not run") -> str:
    """The report. Each of `protections`, `graded`, `tests`, `redteam`, `variants` and `report` is the
    step's result, or a string saying why the step has none. A dry run's report says so at its top and
    where a figure would be."""
    from staff.gpu.protections import markdown as protections_markdown

    lines = [f"# `staff gpu-check` on {facts.get('device', '?')}", "", f"Run {when}.", ""]
    if dry_run:
        lines += [f"**Dry run**: {DRY_RUN_NOTE}", ""]
    lines += [f"- {key}: {value}" for key, value in facts.items()]
    bodies = [
        [protections] if isinstance(protections, str) else protections_markdown(protections),
        _grade_lines(graded, dry_run),
        [tests] if isinstance(tests, str) else _tests_table(tests, dry_run),
        ([f"Dry run: {DRY_RUN_REPORT_NOTE}", ""] if dry_run and not isinstance(report, str) else [])
        + ([report] if isinstance(report, str) else ["```text", *report, "```"]),
        [variants] if isinstance(variants, str) else
        ["| implementation | kind | verdict |", "|---|---|---|",
         *(f"| {_cell(v.key)} | {v.kind} | {'ok' if v.ok else 'WRONG'}: {_cell(v.detail)} |" for v in variants)],
        [redteam] if isinstance(redteam, str) else _redteam_table(redteam),
    ]
    for heading, body in zip(SECTIONS, bodies, strict=True):
        lines += ["", heading, "", *body]
    return "\n".join(lines) + "\n"


def all_well(tests: list[CudaTestOutcome] | str, variants: list[VariantOutcome] | str,
             graded: SandboxedGrade | str | None = None, protections: list | str | None = None,
             redteam: list[CudaTestOutcome] | str | None = None) -> bool:
    """Every cuda test passed, and, where they ran (None: left out by an option), every implementation
    behaved as it must, the reference's sandboxed GPU grade started CUDA and earned every point, every
    protection a GPU grade uses let CUDA start, and every red-team test passed."""
    return (not isinstance(tests, str) and bool(tests) and all(t.outcome == "passed" for t in tests)
            and (variants is None or (not isinstance(variants, str) and all(v.ok for v in variants)))
            and (graded is None or (not isinstance(graded, str) and graded.ok))
            and (protections is None or (not isinstance(protections, str) and all(p.holds for p in protections)))
            and (redteam is None or (not isinstance(redteam, str) and bool(redteam)
                                     and all(r.outcome == "passed" for r in redteam))))
