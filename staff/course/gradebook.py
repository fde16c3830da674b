"""The gradebook of a batch (`staff grade --batch`, `staff gradebook`): grades.csv, summary.md,
tests.csv (how each test fares), report.html (staff/course/report.py) and charts, written from the
results files the batch left in OUT. Every submission is a row, the ungraded flagged; a submission's
CPU grade and GPU part (results-gpu.json) make one row, and grades.csv has public, hidden and gpu
columns. A problem a grade did not grade (`--problems`) is an empty cell, never 0, and the row's
status says "partial".

It reads results files by their extra_data fields (each test's problem and part, the grade's
outcome), never by their prose or tags; a results file that lacks them counts as not graded
(`staff.course.folder.graded`). What a student wrote (names, submission folders, errors) reaches a cell or
a line only through `shown_text`, and a cell never starts as a formula.
"""

from __future__ import annotations

import csv
import json
import statistics
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from adapters._text import shown_text
from staff.atomic import atomic_file, write_text_atomic
from staff.course.analytics import Result, Tally, failure_message, tally_tests, top_messages
from staff.course.folder import RESULTS, RESULTS_GPU, Submission, graded, meta_name
from staff.course.report import ProblemScores, write_report
from staff.grading.outcomes import Outcome
from staff.grading.provenance import suite_label
from staff.grading.results import PARTS
from tests.problems import PROBLEMS, TITLE_WIDTH

GRADED, PARTIAL, NOT_GRADED = "graded", "partial", "not graded"


@dataclass
class Row:
    submission: Submission
    points: dict[tuple[int, str], float]  # (problem, "public" / "hidden" / "gpu") -> points earned
    possible: dict[tuple[int, str], float]  # only the parts of the problems graded
    failed: list[tuple[int, str]]  # (problem, test name) of each failed test
    seconds: float
    error: str
    status: str = NOT_GRADED  # GRADED, PARTIAL (some problems only: the rest are not graded, never 0) or NOT_GRADED
    suites: tuple[str, ...] = ()  # the suite of each part, as staff.grading.provenance.suite_label shows it
    results: list[Result] = field(default_factory=list)  # every test's result, for the per-test analytics
    review: tuple[str, ...] = ()  # "file:line what" of each mark for a person's review (staff.intake.review_marks)

    @property
    def total(self) -> float:
        return sum(self.points.values())

    @property
    def max_total(self) -> float:
        return sum(self.possible.values())

    def graded_problem(self, number: int) -> bool:
        return any(key[0] == number for key in self.possible)


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def load_row(out: Path, submission: Submission) -> Row:
    """One submission's line of the gradebook, from what grade_one (and a GPU grade) wrote: each
    complete results file's tests, by the problem and part their extra_data names. A grade of some
    problems only (its provenance's settings name them) is PARTIAL; one with no results, or whose
    grade said nothing of the submission (the grader's own failure), is NOT_GRADED."""
    points: dict[tuple[int, str], float] = {}
    possible: dict[tuple[int, str], float] = {}
    failed, results, suites, review = [], [], [], []
    status = NOT_GRADED
    for name in (RESULTS, RESULTS_GPU):
        document = graded(out / name)
        if document is None or Outcome(document["extra_data"]["outcome"]).grader_failure:
            continue
        record = document["extra_data"].get("provenance") or {}
        if isinstance(record.get("suite"), dict):
            suites.append(suite_label(record["suite"]))
        for mark in document["extra_data"].get("review") or []:
            if isinstance(mark, dict):
                review.append(f"{mark.get('file', '?')}:{mark.get('line', 0)} {mark.get('what', '')}")
        partial = name == RESULTS and (record.get("settings") or {}).get("problems") is not None
        status = PARTIAL if partial or status == PARTIAL else GRADED
        for test in document.get("tests", []):
            problem, part = test["extra_data"]["problem"], test["extra_data"]["part"]
            points[problem, part] = points.get((problem, part), 0.0) + float(test.get("score", 0))
            possible[problem, part] = possible.get((problem, part), 0.0) + float(test.get("max_score", 0))
            name_only = str(test.get("name", "?")).split("[", 1)[0]
            passed = test.get("status") != "failed"
            if not passed:
                failed.append((problem, name_only))
            results.append(Result(str(test["extra_data"].get("nodeid", name_only)), str(test.get("name", "?")),
                                  problem, passed, "" if passed else failure_message(test.get("output", ""))))
    meta = _read(out / meta_name(RESULTS)) or _read(out / meta_name(RESULTS_GPU))
    return Row(submission, points, possible, failed, float(meta.get("seconds", 0.0)), str(meta.get("error", "")),
               status, tuple(dict.fromkeys(suites)), results, tuple(dict.fromkeys(review)))


FORMULA_STARTS = ("=", "+", "-", "@", "\t")  # OWASP's CSV injection (its "\r" shown_text replaces)


def spreadsheet_safe(text: str) -> str:
    """`text` as a cell no spreadsheet runs as a formula (a leading quote, as OWASP advises) and that
    UTF-8 can hold and that shows no control character (see `shown_text`)."""
    text = shown_text(text)
    return f"'{text}" if text.startswith(FORMULA_STARTS) else text


def _points_cell(row: Row, keys: list[tuple[int, str]]) -> str:
    """Points earned over `keys`, or "" where none of them was graded (not graded is never 0)."""
    graded_keys = [key for key in keys if key in row.possible]
    return f"{sum(row.points.get(key, 0.0) for key in graded_keys):g}" if graded_keys else ""


def columns(parts: list[str]) -> list[tuple[str, Callable[[Row], str]]]:
    """grades.csv's columns, in order: each one's header and how a row fills it (one list for both)."""
    who = [("student_id", lambda r: spreadsheet_safe(r.submission.student_id)),
           ("name", lambda r: spreadsheet_safe(r.submission.name)),
           ("email", lambda r: spreadsheet_safe(r.submission.email)),
           ("submission", lambda r: spreadsheet_safe(r.submission.key)),
           ("status", lambda r: r.status)]
    per_problem = [(f"p{n}_{part}", lambda r, key=(n, part): _points_cell(r, [key]))
                   for n in PROBLEMS for part in parts]
    per_part = [(part, lambda r, part=part: _points_cell(r, [(n, part) for n in PROBLEMS])) for part in parts]
    totals = [("total", lambda r: f"{r.total:g}" if r.possible else ""),
              ("max_total", lambda r: f"{r.max_total:g}" if r.possible else ""),
              ("suite", lambda r: "; ".join(r.suites)),
              ("wall_s", lambda r: f"{r.seconds:.1f}"),
              ("error", lambda r: spreadsheet_safe(r.error)),
              ("review", lambda r: spreadsheet_safe("; ".join(r.review)))]
    return who + per_problem + per_part + totals


def write_csv(rows: list[Row], path: Path) -> None:
    """grades.csv: who, status, per-problem points by part (empty where not graded), totals, the suite,
    wall time and error; one row per submission, graded or not."""
    parts = [p for p in PARTS if any(key[1] == p for row in rows for key in row.possible)] or ["public", "hidden"]
    chosen = columns(parts)
    with atomic_file(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow([name for name, _ in chosen])
        for row in rows:
            writer.writerow([cell(row) for _, cell in chosen])


def _top_message(tally: Tally) -> tuple[str, int]:
    """The test's most frequent failure message and how many failures said it; ("", 0) where none failed."""
    top = top_messages(tally, 1)
    return top[0] if top else ("", 0)


# tests.csv's columns, in order: each one's header and how a test's tally fills it (one list for both).
TEST_COLUMNS: list[tuple[str, Callable[[Tally], object]]] = [
    ("problem", lambda s: s.problem),
    ("test", lambda s: spreadsheet_safe(s.name)),
    ("nodeid", lambda s: spreadsheet_safe(s.nodeid)),
    ("ran", lambda s: s.ran),
    ("failed", lambda s: s.failed),
    ("failure_rate", lambda s: f"{s.failure_rate:.3f}"),
    ("suspect", lambda s: spreadsheet_safe(s.suspect)),
    ("top_message", lambda s: spreadsheet_safe(_top_message(s)[0])),
    ("top_message_count", lambda s: _top_message(s)[1]),
    ("distinct_messages", lambda s: len(s.messages)),
]


def write_test_csv(stats: list[Tally], path: Path) -> None:
    """tests.csv: one row per test, TEST_COLUMNS in order."""
    with atomic_file(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow([name for name, _ in TEST_COLUMNS])
        for tally in stats:
            writer.writerow([cell(tally) for _, cell in TEST_COLUMNS])


def problem_scores(rows: list[Row]) -> list[ProblemScores]:
    """Each problem's points in every grade that graded it, and the most a grade of it could earn."""
    found = []
    for number, problem in PROBLEMS.items():
        graded_rows = [r for r in rows if r.graded_problem(number)]
        earned = [sum(v for k, v in r.points.items() if k[0] == number) for r in graded_rows]
        top = max((sum(v for k, v in r.possible.items() if k[0] == number) for r in graded_rows), default=0.0)
        found.append(ProblemScores(number, problem.title, top, earned))
    return found


def summarize(rows: list[Row]) -> tuple[list[str], list[tuple[str, int]]]:
    """(lines of the per-problem table over the grades of each problem, the most-failed tests with how
    many submissions failed each)."""
    header = f"{'problem':<{TITLE_WIDTH}}{'graded':>8}{'mean':>8}{'median':>8}{'max':>6}{'full marks':>12}"
    lines = [header, "-" * len(header)]
    for scores in problem_scores(rows):
        number, earned, top = scores.number, scores.earned, scores.possible
        problem = PROBLEMS[number]
        full = sum(e >= top > 0 for e in earned) / len(earned) if earned else 0.0
        mean = statistics.fmean(earned) if earned else 0.0
        median = statistics.median(earned) if earned else 0.0
        title = f"{number}. {problem.title}"
        if not earned:
            lines.append(f"{title:<{TITLE_WIDTH}}{0:>8}   not graded")
            continue
        lines.append(f"{title:<{TITLE_WIDTH}}{len(earned):>8}{mean:>8.1f}{median:>8.1f}{top:>6g}{full:>11.0%}")
    whole = [r for r in rows if r.status == GRADED]
    if whole:
        totals = [r.total for r in whole]
        lines.append(f"{'total (whole grades)':<{TITLE_WIDTH}}{len(whole):>8}{statistics.fmean(totals):>8.1f}"
                     f"{statistics.median(totals):>8.1f}{max(r.max_total for r in whole):>6g}")
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


def suite_warning(rows: list[Row]) -> str:
    """A warning when the grades come from more than one suite (by hash), else ""."""
    by_hash = Counter(label.split("(", 1)[-1] for r in rows for label in r.suites)
    if len(by_hash) <= 1:
        return ""
    labels = {label.split("(", 1)[-1]: label for r in rows for label in r.suites}
    mixed = ", ".join(f"{labels[h]} for {count}" for h, count in by_hash.most_common())
    return (f"warning: these grades come from {len(by_hash)} suites ({mixed}); run the batch again to grade "
            "the stale ones with this tree's suite")


def write_gradebook(submissions: list[Submission], out: Path) -> tuple[list[str], list[Path]]:
    """grades.csv (a row per submission, the ungraded flagged), summary.md, tests.csv (per-test
    analytics), report.html and charts from what `out` holds; the summary's lines and the files written."""
    rows = [load_row(out / s.key, s) for s in submissions]
    graded_rows = [r for r in rows if r.status != NOT_GRADED]
    write_csv(rows, out / "grades.csv")
    stats = tally_tests([r.results for r in graded_rows])
    write_test_csv(stats, out / "tests.csv")
    table, most_failed = summarize(graded_rows)
    partial = [r for r in rows if r.status == PARTIAL]
    waiting = [r for r in rows if r.status == NOT_GRADED]
    counts = f"{len(graded_rows) - len(partial)} of {len(submissions)} submissions graded whole"
    counts += f", {len(partial)} partly (some problems only)" if partial else ""
    counts += f", {len(waiting)} not graded" if waiting else ""
    warning = suite_warning(rows)
    lines = [counts, *([warning] if warning else []), "", *table, "", "most-failed tests (submissions failing them):"]
    lines += [f"  {count:>4}  {name}" for name, count in most_failed] or ["  none"]
    suspects = [s for s in stats if s.suspect]
    if suspects:
        lines += ["", f"{len(suspects)} suspect test(s) (see tests.csv and report.html):"]
        lines += [f"  {s.name} (problem {s.problem}): {s.suspect}" for s in suspects[:20]]
    if waiting:
        lines += ["", f"{len(waiting)} submission(s) not graded:"] + [
            f"  {r.submission.key}: {r.error or 'no grade yet (run the batch again)'}" for r in waiting[:20]]
    errors = [r for r in graded_rows if r.error]
    if errors:
        lines += ["", f"{len(errors)} submission(s) with an error:"] + [f"  {r.submission.key}: {r.error}"
                                                                         for r in errors[:20]]
    marked = [r for r in graded_rows if r.review]
    if marked:
        lines += ["", f"{len(marked)} submission(s) marked for review (code reaching past the grader's checks; "
                      "points stand until read):"] + [f"  {r.submission.key}: {'; '.join(r.review)[:300]}"
                                                       for r in marked[:20]]
    lines = [shown_text(line) for line in lines]  # submission names and errors are the students' text
    write_text_atomic(out / "summary.md", "# Batch summary\n\n```text\n" + "\n".join(lines) + "\n```\n")
    suites = sorted({label for r in rows for label in r.suites})
    facts = [counts, f"suite(s): {', '.join(suites) or 'none recorded'}",
             f"{sum(1 for s in stats if s.suspect)} suspect test(s), {len(stats)} tests in all"]
    report = write_report(out, f"Course report: {out.name}", facts, [warning] if warning else [],
                          problem_scores(graded_rows), stats)
    charts = draw_charts(graded_rows, most_failed, out / "charts") if graded_rows else []
    return lines, [out / "grades.csv", out / "summary.md", out / "tests.csv", report, *charts]
