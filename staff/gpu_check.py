"""`staff gpu-check`: what a TA runs first on a GPU machine, ending in one Markdown report.

Three steps, each a part of the report whatever the others did:
1. the `cuda` tests on the reference (`pytest -m cuda tests`, here, unconfined), each with the
   figure it judged against its bound (tests/gpu_figures.py, read back from pytest's JUnit XML) and
   the margin: how many times the figure could grow or shrink before it crossed the nearer bound;
2. `staff validate --gpu`: the stubs, the wheat and the GPU chaff graded behind the sandbox, with
   each implementation's verdict;
3. `staff gpu-report` on the reference: the harness's and time_matmul's figures per dtype and size.

The report (OUT/gpu-check.md) starts with the device, its driver, torch and CUDA, and is written to
be pasted into the README's "The GPU part".
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from staff.atomic import write_text_atomic
from staff.sandbox.removal import scratch_folder

REPORT_NAME = "gpu-check.md"


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
    return {"device": name, "peak row": row[0] if row else "none: not in tests/gpu_timing.py's table",
            "driver": driver, "torch": torch.__version__, "CUDA (torch built with)": str(torch.version.cuda),
            "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": os.environ.get("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "unset"),
            "TORCH_CUBLAS_WORKSPACE_CACHE": os.environ.get("TORCH_CUBLAS_WORKSPACE_CACHE", "unset")}


def run_cuda_tests(repo: Path, scratch: Path) -> tuple[list[CudaTestOutcome], str]:
    """`pytest -m cuda tests` on this tree's reference; the outcomes, and the end of pytest's output."""
    junit = scratch / "cuda-tests.xml"
    env = {**os.environ, "PYTHONPATH": str(repo), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-m", "cuda", "tests", "-p", "no:cacheprovider", "-q",
                           "-rA", f"--junitxml={junit}", "-o", "junit_family=xunit1"], cwd=repo, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace")
    tail = (done.stdout + done.stderr)[-3000:]
    return (read_junit(junit) if junit.exists() else []), tail


def run_validate() -> list[VariantOutcome]:
    """`staff validate --gpu`'s grading, one implementation at a time, as plain rows."""
    from staff.validate.run import gradable, validate
    from staff.validate.variants import load_variants

    rows = []
    for outcome in validate(gradable(load_variants(None), gpu=True), 1, gpu=True):
        if outcome.verdict:
            detail = "; ".join(outcome.verdict)
        elif outcome.kind == "chaff":
            detail = "caught by " + ", ".join(sorted(outcome.failed.get(outcome.problem, set())))
        else:
            detail = f"{sum(outcome.earned.values()):g} / {sum(outcome.possible.values()):g} points"
        rows.append(VariantOutcome(outcome.key, outcome.kind, not outcome.verdict, detail))
    return rows


def run_gpu_report(out: Path, repo: Path) -> list[str]:
    """`staff gpu-report` on the reference, into OUT/gpu-report/; its lines of text."""
    from staff.gpu_report import DTYPES, SIZES, format_report, run_report

    report, _files = run_report(None, "cuda", list(SIZES), list(DTYPES), 5, 20, out / "gpu-report", repo)
    return format_report(report)


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def build_markdown(facts: dict[str, str], tests: list[CudaTestOutcome] | str, variants: list[VariantOutcome] | str,
                   report: list[str] | str, when: str) -> str:
    """The report. Each of `tests`, `variants` and `report` is the step's result, or a string saying
    why the step has none."""
    lines = [f"# `staff gpu-check` on {facts.get('device', '?')}", "", f"Run {when}.", ""]
    lines += [f"- {key}: {value}" for key, value in facts.items()] + ["", "## The `cuda` tests on the reference", ""]
    if isinstance(tests, str):
        lines.append(tests)
    else:
        lines += ["| test | outcome | figure | bounds | margin | note |", "|---|---|---|---|---|---|"]
        for test in tests:
            fig = test.figure or {}
            value = fig.get("value")
            bounds = f"[{_number(fig.get('low'))}, {_number(fig.get('high'))}]" if fig else "-"
            room = margin(value, fig.get("low"), fig.get("high")) if fig else None
            room_text = "-" if room is None else f"{room:.2f}x" + ("" if room >= 1 else " (OUTSIDE)")
            note = " ".join(filter(None, [fig.get("note", ""), test.message[:300]]))
            lines.append(f"| `{_cell(test.name)}` | {test.outcome} | "
                         f"{_cell(fig.get('what', ''))} {_number(value) if fig else ''} | {bounds} | {room_text} | "
                         f"{_cell(note)} |")
        counts = {o: sum(t.outcome == o for t in tests) for o in ("passed", "failed", "error", "skipped")}
        lines += ["", ", ".join(f"{n} {o}" for o, n in counts.items() if n) or "no test ran"]
    lines += ["", "## `staff validate --gpu`", ""]
    if isinstance(variants, str):
        lines.append(variants)
    else:
        lines += ["| implementation | kind | verdict |", "|---|---|---|"]
        lines += [f"| {_cell(v.key)} | {v.kind} | {'ok' if v.ok else 'WRONG'}: {_cell(v.detail)} |" for v in variants]
    lines += ["", "## `staff gpu-report` on the reference", ""]
    lines += [report] if isinstance(report, str) else ["```text", *report, "```"]
    return "\n".join(lines) + "\n"


def all_well(tests: list[CudaTestOutcome] | str, variants: list[VariantOutcome] | str) -> bool:
    """Every cuda test passed and every implementation behaved as it must."""
    return (not isinstance(tests, str) and bool(tests) and all(t.outcome == "passed" for t in tests)
            and not isinstance(variants, str) and all(v.ok for v in variants))


def main_check(args: argparse.Namespace, repo: Path) -> int:
    """`staff gpu-check` once a GPU is known to be there: 0 when every step is clean, 1 otherwise."""
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    facts = device_facts()
    print(f"staff gpu-check on {facts['device']}: 1/3 the cuda tests on the reference", file=sys.stderr)
    with scratch_folder("staff-gpu-check-") as scratch:
        tests, tail = run_cuda_tests(repo, scratch)
    if not tests:
        tests = f"pytest wrote no results; the end of its output:\n\n```text\n{tail}\n```"
    variants: list[VariantOutcome] | str = "not run (--no-validate)"
    if not args.no_validate:
        print("staff gpu-check: 2/3 staff validate --gpu", file=sys.stderr)
        try:
            variants = run_validate()
        except Exception as error:  # noqa: BLE001 - a step that fails is a section of the report
            variants = f"staff validate --gpu failed: {type(error).__name__}: {error}"
    report: list[str] | str = "not run (--no-report)"
    if not args.no_report:
        print("staff gpu-check: 3/3 staff gpu-report", file=sys.stderr)
        try:
            report = run_gpu_report(out, repo)
        except Exception as error:  # noqa: BLE001 - as for validate
            report = f"staff gpu-report failed: {type(error).__name__}: {error}"
    path = out / REPORT_NAME
    write_text_atomic(path, build_markdown(facts, tests, variants, report, when))
    print(path.read_text(encoding="utf-8"))
    print(f"written: {path}", file=sys.stderr)
    return 0 if all_well(tests, variants) else 1
