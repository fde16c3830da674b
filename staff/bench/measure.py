"""Timing with repeats, and the rows `staff bench` prints: a figure, the baseline a user would
otherwise pick, their ratio and the target it is held to."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Timing:
    """Wall-clock seconds of each repeat (after any warm-up)."""

    seconds: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    def describe(self) -> str:
        """'1.23 s (1.20-1.31)': the median, then the fastest and slowest repeat."""
        low, high = min(self.seconds), max(self.seconds)
        return f"{_seconds(self.median)} ({_seconds(low, unit=False)}-{_seconds(high)})"


def _seconds(value: float, unit: bool = True) -> str:
    if value >= 1:
        text, suffix = f"{value:.2f}", " s"
    elif value >= 1e-3:
        text, suffix = f"{value * 1e3:.3g}", " ms"
    else:
        text, suffix = f"{value * 1e6:.3g}", " µs"
    return text + (suffix if unit else "")


def repeat_pair(ours: Callable[[], object], baseline: Callable[[], object], repeats: int,
                warmup: int = 1) -> tuple[Timing, Timing]:
    """Time two functions in alternation, so that a machine getting busier or a cache warming up
    during the run weighs on both alike."""
    for _ in range(warmup):
        ours()
        baseline()
    first, second = [], []
    for _ in range(repeats):
        for fn, seconds in ((ours, first), (baseline, second)):
            started = time.perf_counter()
            fn()
            seconds.append(time.perf_counter() - started)
    return Timing(tuple(first)), Timing(tuple(second))


def repeat_command(command: Sequence[str], repeats: int, cwd: str | None = None, env: dict | None = None,
                   timeout_s: float = 1200, exit_code: int = 0) -> Timing:
    """Wall-clock seconds of a command run `repeats` times from a cold process; a run that does not exit
    with `exit_code` is an error, since the time of a command that did not do its work means nothing."""
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        done = subprocess.run(list(command), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout_s)
        seconds.append(time.perf_counter() - started)
        if done.returncode != exit_code:
            tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
            raise RuntimeError(f"{' '.join(command)} exited with {done.returncode}: " + " | ".join(tail))
    return Timing(tuple(seconds))


@dataclass(frozen=True)
class Row:
    """One figure of the bench.

    Attributes:
        group: what users wait on ("get_batch", "grading", ...).
        case: the size or the variant measured.
        subject: what this repository does, timed.
        baseline: what a user would otherwise pick, timed (None where the target is absolute).
        baseline_name: the baseline, in words.
        figure: the figure the target is about, in words ("0.08× the time", "+0.9 s over the floor").
        target: the target, in words.
        met: whether the figure meets it (None: no target, reported only).
        note: anything else measured (bytes touched, MB/s).
    """

    group: str
    case: str
    subject: Timing
    baseline: Timing | None
    baseline_name: str
    figure: str
    target: str
    met: bool | None
    note: str = ""


def ratio_row(group: str, case: str, subject: Timing, baseline: Timing, baseline_name: str, at_most: float | None,
              note: str = "") -> Row:
    """A row whose figure is subject time / baseline time, held to at most `at_most` (None: no target)."""
    ratio = subject.median / baseline.median
    target = "" if at_most is None else f"≤ {at_most:g}×"
    met = None if at_most is None else ratio <= at_most
    return Row(group, case, subject, baseline, baseline_name, f"{ratio:.3g}× the time", target, met, note)


def markdown(rows: list[Row], machine: str) -> str:
    """The rows as a Markdown table, headed by the machine they were measured on."""
    lines = [f"Measured by `uv run staff bench` on {machine}. Times: median of the repeats (fastest-slowest).",
             "",
             "| what | case | this repository | baseline | baseline time | figure | target | met |",
             "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        baseline = row.baseline.describe() if row.baseline else "—"
        met = {True: "yes", False: "**no**", None: "—"}[row.met]
        note = f" ({row.note})" if row.note else ""
        lines.append(f"| {row.group} | {row.case} | {row.subject.describe()} | {row.baseline_name or '—'} | "
                     f"{baseline} | {row.figure}{note} | {row.target or '—'} | {met} |")
    return "\n".join(lines) + "\n"


def machine_description() -> str:
    """'Linux x86_64, 2 cores (Intel Xeon ...), Python 3.11, torch 2.x': what the figures depend on."""
    import os
    import platform

    import torch

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            cpu = next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return (f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores ({cpu}), "
            f"Python {sys.version.split()[0]}, torch {torch.__version__}")
