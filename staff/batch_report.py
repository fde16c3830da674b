"""The gradebook of a batch (`staff grade --batch`, `staff gradebook`): grades.csv, summary.md and
charts, written from the results files the batch left in OUT; a submission's CPU grade and GPU
part (results-gpu.json) make one row, and grades.csv has public, hidden and gpu columns.

It reads results files by their extra_data fields (each test's problem and part, the grade's
outcome), never by their prose or tags; a results file that lacks them counts as not graded
(`staff.batch.graded`). What a student wrote (names, submission folders, errors) reaches a cell or
a line only through `shown_text`, and a cell never starts as a formula.
"""

from __future__ import annotations

import csv
import json
import statistics
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from adapters._text import shown_text
from staff.atomic import atomic_file, write_text_atomic
from staff.batch import RESULTS, RESULTS_GPU, Submission, graded, meta_name, recorded
from staff.gradescope import PARTS
from tests.grading import PROBLEMS, TITLE_WIDTH


@dataclass
class Row:
    submission: Submission
    points: dict[tuple[int, str], float]  # (problem, "public" / "hidden" / "gpu") -> points earned
    possible: dict[tuple[int, str], float]
    failed: list[tuple[int, str]]  # (problem, test name) of each failed test
    seconds: float
    error: str

    @property
    def total(self) -> float:
        return sum(self.points.values())

    @property
    def max_total(self) -> float:
        return sum(self.possible.values())


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def load_row(out: Path, submission: Submission) -> Row:
    """One submission's line of the gradebook, from what grade_one (and a GPU grade) wrote: each
    finished results file's tests, by the problem and part their extra_data names."""
    points: dict[tuple[int, str], float] = {}
    possible: dict[tuple[int, str], float] = {}
    failed = []
    for name in (RESULTS, RESULTS_GPU):
        for test in (graded(out / name) or {}).get("tests", []):
            problem, part = test["extra_data"]["problem"], test["extra_data"]["part"]
            points[problem, part] = points.get((problem, part), 0.0) + float(test.get("score", 0))
            possible[problem, part] = possible.get((problem, part), 0.0) + float(test.get("max_score", 0))
            if test.get("status") == "failed":
                failed.append((problem, str(test.get("name", "?")).split("[", 1)[0]))
    meta = _read(out / meta_name(RESULTS)) or _read(out / meta_name(RESULTS_GPU))
    return Row(submission, points, possible, failed, float(meta.get("seconds", 0.0)), str(meta.get("error", "")))


FORMULA_STARTS = ("=", "+", "-", "@", "\t")  # OWASP's CSV injection (its "\r" shown_text replaces)


def spreadsheet_safe(text: str) -> str:
    """`text` as a cell no spreadsheet runs as a formula (a leading quote, as OWASP advises) and that
    UTF-8 can hold and that shows no control character (see `shown_text`)."""
    text = shown_text(text)
    return f"'{text}" if text.startswith(FORMULA_STARTS) else text


def write_csv(rows: list[Row], path: Path) -> None:
    """grades.csv: who, per-problem points by part, totals, wall time and error; one row per submission."""
    parts = [p for p in PARTS if any(key[1] == p for row in rows for key in row.possible)]
    header = ["student_id", "name", "email", "submission"]
    header += [f"p{n}_{part}" for n in PROBLEMS for part in parts]
    header += [*parts, "total", "max_total", "wall_s", "error"]
    with atomic_file(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for row in rows:
            s = row.submission
            writer.writerow([spreadsheet_safe(text) for text in (s.student_id, s.name, s.email, s.key)]
                            + [f"{row.points.get((n, part), 0.0):g}" for n in PROBLEMS for part in parts]
                            + [f"{sum(v for k, v in row.points.items() if k[1] == part):g}" for part in parts]
                            + [f"{row.total:g}", f"{row.max_total:g}", f"{row.seconds:.1f}",
                               spreadsheet_safe(row.error)])


def summarize(rows: list[Row]) -> tuple[list[str], list[tuple[str, int]]]:
    """(lines of the per-problem table, the most-failed tests with how many submissions failed each)."""
    header = f"{'problem':<{TITLE_WIDTH}}{'mean':>8}{'median':>8}{'max':>6}{'full marks':>12}"
    lines = [header, "-" * len(header)]
    for number, problem in PROBLEMS.items():
        earned = [sum(v for k, v in r.points.items() if k[0] == number) for r in rows]
        top = max((sum(v for k, v in r.possible.items() if k[0] == number) for r in rows), default=0.0)
        full = sum(e >= top > 0 for e in earned) / len(rows) if rows else 0.0
        mean = statistics.fmean(earned) if earned else 0.0
        median = statistics.median(earned) if earned else 0.0
        title = f"{number}. {problem.title}"
        lines.append(f"{title:<{TITLE_WIDTH}}{mean:>8.1f}{median:>8.1f}{top:>6g}{full:>11.0%}")
    totals = [r.total for r in rows]
    if totals:
        lines.append(f"{'total':<{TITLE_WIDTH}}{statistics.fmean(totals):>8.1f}{statistics.median(totals):>8.1f}"
                     f"{max(r.max_total for r in rows):>6g}")
    counts = Counter(f"{problem}. {name}" for r in rows for problem, name in set(r.failed))
    # Ties by name: the order of a set of strings changes from process to process (PYTHONHASHSEED).
    return lines, sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:10]


def draw_charts(rows: list[Row], most_failed: list[tuple[str, int]], folder: Path) -> list[Path]:
    """PNG charts: the score histogram, each problem's share of points earned, the most-failed tests."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    figure, axes = plt.subplots(figsize=(7, 4))
    axes.hist([r.total for r in rows], bins=20, color="#4477aa")
    axes.set(xlabel="total points", ylabel="submissions", title=f"Scores of {len(rows)} submissions")
    paths.append(folder / "score_histogram.png")
    figure.savefig(paths[-1], dpi=100, bbox_inches="tight")
    plt.close(figure)
    figure, axes = plt.subplots(figsize=(7, 4))
    shares = []
    for number in PROBLEMS:
        earned = sum(v for r in rows for k, v in r.points.items() if k[0] == number)
        possible = sum(v for r in rows for k, v in r.possible.items() if k[0] == number)
        shares.append(earned / possible if possible else 0.0)
    axes.bar([str(n) for n in PROBLEMS], shares, color="#228833")
    axes.set(xlabel="problem", ylabel="share of points earned", ylim=(0, 1), title="Points earned per problem")
    paths.append(folder / "problem_pass_rates.png")
    figure.savefig(paths[-1], dpi=100, bbox_inches="tight")
    plt.close(figure)
    figure, axes = plt.subplots(figsize=(8, 0.4 * max(len(most_failed), 1) + 1))
    names = [name for name, _ in most_failed][::-1]
    axes.barh(names, [count for _, count in most_failed][::-1], color="#cc6677")
    axes.set(xlabel="submissions failing it", title="Most-failed tests")
    paths.append(folder / "most_failed_tests.png")
    figure.savefig(paths[-1], dpi=100, bbox_inches="tight")
    plt.close(figure)
    return paths


def write_gradebook(submissions: list[Submission], out: Path) -> tuple[list[str], list[Path]]:
    """grades.csv, summary.md and charts from every submission under `out` with a finished CPU grade,
    GPU part or both (a row holds whichever parts it has); the summary's lines and the files written."""
    rows = [load_row(out / s.key, s) for s in submissions
            if recorded(out / s.key) or recorded(out / s.key, RESULTS_GPU)]
    write_csv(rows, out / "grades.csv")
    table, most_failed = summarize(rows)
    lines = [f"{len(rows)} of {len(submissions)} submissions graded", "", *table, "",
             "most-failed tests (submissions failing them):"]
    lines += [f"  {count:>4}  {name}" for name, count in most_failed] or ["  none"]
    errors = [r for r in rows if r.error]
    if errors:
        lines += ["", f"{len(errors)} submission(s) with an error:"] + [f"  {r.submission.key}: {r.error}"
                                                                         for r in errors[:20]]
    lines = [shown_text(line) for line in lines]  # submission names and errors are the students' text
    write_text_atomic(out / "summary.md", "# Batch summary\n\n```text\n" + "\n".join(lines) + "\n```\n")
    charts = draw_charts(rows, most_failed, out / "charts") if rows else []
    return lines, [out / "grades.csv", out / "summary.md", *charts]
