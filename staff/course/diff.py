"""`staff diff`: who moved between two grades of a course, by which tests, and why.

Each side is a batch's output folder (OUT/<name>/results.json and results-gpu.json, with meta.json
naming the student) or one results file. Students are matched by their id (a resubmission on
Gradescope has a new folder name), else by the folder's name. For each test whose score moved, the
cause comes from the two grades' provenance (staff.grading.provenance):
- "the submission changed": the graded files' hash differs;
- "the test changed": the test's own source hash differs; "the suite changed in FILES": its source
  is the same but a file it depends on is not (a helper, an adapter, pytest's settings);
- "the settings changed: ...": limits, problems, the GPU part;
- "the grader changed": only the grader's commit differs;
- none of these: the same test, suite, settings, grader and code scored differently, a flaky result.
  That is a defect of the suite or the grader, and `staff diff` says so loudly and exits 1.
`staff diff OUT` alone compares each regraded submission's previous grade (results.previous.json,
kept by the batch) with its current one; the batch itself writes that comparison as diff.md and
diff.json (read by the course report).
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from adapters._text import shown_text
from staff.atomic import atomic_file, write_text_atomic
from staff.course.stale import scored, settings_change, suite_change
from staff.errors import StaffError

FLAKY = "nothing changed: a flaky result (a defect of the suite or the grader)"
NEW_TEST, REMOVED_TEST = "a new test", "the test was removed"
EPSILON = 1e-9  # scores are sums of test points; a smaller difference is rounding, not a move


class DiffError(StaffError):
    """A side of the diff cannot be read; the message says what was expected."""


@dataclass
class Graded:
    """One student's grade on one side: who, and the results documents of its CPU and GPU parts."""

    student: str  # the id the two sides are matched by
    name: str
    key: str  # the submission folder's name
    documents: list[dict]

    def tests(self) -> dict[str, dict]:
        return {t["extra_data"]["nodeid"]: t for d in self.documents for t in d.get("tests", [])
                if isinstance(t.get("extra_data"), dict) and "nodeid" in t["extra_data"]}

    @property
    def total(self) -> float:
        return sum(float(t.get("score", 0)) for t in self.tests().values())

    @property
    def graded(self) -> bool:
        """Whether any part graded the submission (a grader failure has no tests and says nothing of it)."""
        return any(d.get("tests") for d in self.documents)

    def provenance(self) -> dict:
        for document in self.documents:
            found = document.get("extra_data", {}).get("provenance")
            if isinstance(found, dict):
                return found
        return {}

    def graded_problems(self) -> set[int] | None:
        """The problems this grade was limited to (`--problems`), None where it graded every one."""
        problems = (self.provenance().get("settings") or {}).get("problems")
        return set(problems) if isinstance(problems, list) else None


@dataclass
class Moved:
    nodeid: str
    name: str
    problem: int | None
    before: float | None  # None: the test was not in that grade
    after: float | None
    cause: str


@dataclass
class Change:
    student: str
    name: str
    before_key: str
    after_key: str
    before: float | None  # the total; None: no grade on that side
    after: float | None
    moved: list[Moved] = field(default_factory=list)
    note: str = ""

    @property
    def delta(self) -> float:
        return (self.after or 0.0) - (self.before or 0.0)


def _read_side(path: Path, previous: bool = False) -> dict[str, Graded]:
    """The grades at `path` by student: a batch's output folder or one results file. With
    `previous`, each submission's previous grade in a batch folder (results.previous.json)."""
    from staff.course.folder import RESULTS, RESULTS_GPU, graded, meta_name, previous_name

    if path.is_file():
        document = graded(path)
        if document is None:
            raise DiffError(f"{path} is not a complete results file written by `staff grade`")
        return {"results": Graded("results", "", path.name, [document])}
    if not path.is_dir():
        raise DiffError(f"{path} does not exist; expected a batch's output folder or a results.json")
    found = {}
    for folder in sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith(".")):
        names = [previous_name(r) if previous else r for r in (RESULTS, RESULTS_GPU)]
        documents = [d for d in (graded(folder / name) for name in names) if d is not None]
        if not documents:
            continue
        meta_file = folder / (previous_name(meta_name(RESULTS)) if previous else meta_name(RESULTS))
        try:
            meta = json.loads(meta_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            meta = {}
        student = str(meta.get("student_id") or folder.name)
        found[student] = Graded(student, str(meta.get("name", "")), folder.name, documents)
    if not found:
        wanted = "results.previous.json (kept when a batch grades a submission again)" if previous else "results.json"
        raise DiffError(f"{path} holds no {'previous ' if previous else ''}grade: expected folders with {wanted}")
    return found


def cause(old: Graded, new: Graded, before: dict | None, after: dict | None) -> str:
    """Why a test's score moved between `old` and `new` (see the module's docstring)."""
    if before is None:
        return NEW_TEST
    if after is None:
        return REMOVED_TEST
    old_record, new_record = old.provenance(), new.provenance()
    if not old_record or not new_record:
        return "unknown: a grade without provenance (made by an older grader)"
    reasons = []
    if old_record.get("submission", {}).get("sha256") != new_record.get("submission", {}).get("sha256"):
        reasons.append("the submission changed")
    old_source, new_source = before["extra_data"].get("test_sha256"), after["extra_data"].get("test_sha256")
    old_suite, new_suite = old_record.get("suite", {}), new_record.get("suite", {})
    if old_source != new_source:
        reasons.append("the test changed")
    elif old_suite.get("sha256") != new_suite.get("sha256"):
        reasons.append(f"the suite changed in {suite_change(old_suite, new_suite)}")
    old_settings, new_settings = scored(old_record.get("settings") or {}), scored(new_record.get("settings") or {})
    if old_settings != new_settings:
        reasons.append(f"the settings changed: {settings_change(old_settings, new_settings)}")
    old_commit, new_commit = old_record.get("grader", {}).get("commit"), new_record.get("grader", {}).get("commit")
    if not reasons and old_commit != new_commit:
        reasons.append(f"the grader changed (commit {str(old_commit)[:10]} -> {str(new_commit)[:10]})")
    return "; ".join(reasons) or FLAKY


def compare(old: dict[str, Graded], new: dict[str, Graded]) -> list[Change]:
    """Every student on either side, with the tests whose score moved; sorted by student."""
    changes = []
    for student in sorted(set(old) | set(new)):
        before, after = old.get(student), new.get(student)
        either = after or before
        change = Change(student, either.name, before.key if before else "", after.key if after else "",
                        before.total if before and before.graded else None,
                        after.total if after and after.graded else None)
        if before is None or after is None:
            change.note = "graded only in NEW" if before is None else "not in NEW"
        elif not before.graded or not after.graded:
            change.note = "not graded in OLD (the grader's failure)" if not before.graded else \
                "not graded in NEW (the grader's failure)"
        else:
            old_tests, new_tests = before.tests(), after.tests()
            only = {"OLD": set(), "NEW": set()}  # problems one side did not grade at all (--problems)
            for nodeid in sorted(set(old_tests) | set(new_tests)):
                was, now = old_tests.get(nodeid), new_tests.get(nodeid)
                problem = (now or was)["extra_data"].get("problem")
                limited = (before if was is None else after).graded_problems()
                if (was is None or now is None) and limited is not None and problem not in limited:
                    only["NEW" if was is None else "OLD"].add(problem)
                    continue
                score_was = None if was is None else float(was.get("score", 0))
                score_now = None if now is None else float(now.get("score", 0))
                if score_was is not None and score_now is not None and abs(score_was - score_now) <= EPSILON:
                    continue
                test = now or was
                change.moved.append(Moved(nodeid, str(test.get("name", nodeid)), test["extra_data"].get("problem"),
                                          score_was, score_now, cause(before, after, was, now)))
            change.note = "; ".join(f"problems {', '.join(map(str, sorted(p)))} graded only in {side}"
                                    for side, p in only.items() if p)
        changes.append(change)
    return changes


def _points(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def summary(changes: list[Change]) -> list[str]:
    """The lines a TA reads first: the defects (flaky results), how many moved up and down, and by
    which tests and causes; then one line per student who moved and each test that moved."""
    moved = [c for c in changes if c.moved or c.note]
    up = sum(c.delta > EPSILON for c in changes if c.before is not None and c.after is not None)
    down = sum(c.delta < -EPSILON for c in changes if c.before is not None and c.after is not None)
    flaky = [(c, m) for c in changes for m in c.moved if m.cause == FLAKY]
    lines = []
    if flaky:
        lines += [f"DEFECT: {len(flaky)} test result(s) changed with nothing changed (same test, suite, settings, "
                  "grader and code): a flaky test or grader; find and fix it before publishing grades"]
        lines += [f"  {c.student}: {m.name} {_points(m.before)} -> {_points(m.after)}" for c, m in flaky[:20]]
        lines.append("")
    lines.append(f"{len(changes)} students: {up} up, {down} down, "
                 f"{sum(1 for c in changes if not c.moved and not c.note)} unchanged"
                 + (f" ({sum(1 for c in changes if c.note)} with a note below)" if any(c.note for c in changes)
                    else ""))
    by_test = Counter((m.name, m.problem, "up" if (m.after or 0) > (m.before or 0) else "down", m.cause)
                      for c in changes for m in c.moved)
    if by_test:
        lines += ["", "by test:"]
        for (name, problem, direction, why), count in sorted(by_test.items(), key=lambda i: (-i[1], i[0][0])):
            lines.append(f"  {count:>4} {direction:<4} {name} (problem {problem}): {why}")
    if moved:
        lines += ["", "by student:"]
    for change in moved:
        label = f"{change.student}{f' ({change.name})' if change.name else ''}"
        lines.append(f"  {label}: {_points(change.before)} -> {_points(change.after)}"
                     + (f"  [{change.note}]" if change.note else ""))
        for m in change.moved:
            lines.append(f"      {m.name}: {_points(m.before)} -> {_points(m.after)} ({m.cause})")
    return [shown_text(line) for line in lines]  # names and test names can be the students' text


COLUMNS = ("student_id", "name", "submission_before", "submission_after", "total_before", "total_after", "delta",
           "test", "problem", "test_before", "test_after", "cause")


def write_csv(changes: list[Change], path: Path) -> None:
    """One row per test that moved (and one per student graded on one side only), COLUMNS in order."""
    from staff.course.gradebook import spreadsheet_safe

    with atomic_file(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for c in changes:
            person = [spreadsheet_safe(c.student), spreadsheet_safe(c.name), spreadsheet_safe(c.before_key),
                      spreadsheet_safe(c.after_key), _points(c.before), _points(c.after), f"{c.delta:g}"]
            rows = [[spreadsheet_safe(m.name), m.problem, _points(m.before), _points(m.after), m.cause]
                    for m in c.moved] or ([["", "", "", "", c.note]] if c.note else [])
            for row in rows:
                writer.writerow(person + row)


def diff(old: Path, new: Path | None = None) -> list[Change]:
    """The changes from `old` to `new`; with no `new`, from each submission's previous grade in the
    batch folder `old` to its current one.

    Raises:
        DiffError: a side cannot be read.
    """
    if new is None:
        return compare(_read_side(old, previous=True), _read_side(old))
    return compare(_read_side(old), _read_side(new))


def write_batch_diff(out: Path, regraded: list, results: str) -> tuple[list[str], list[Path]]:
    """After a batch graded `regraded` (submissions with a previous grade) again: diff.md and diff.json
    in `out`, what moved from their previous grades; the summary's lines and the files. Nothing is
    written when no submission was graded again."""
    from staff.course.folder import graded, previous_name

    if not regraded:
        return [], []
    old, new = {}, {}
    for submission in regraded:
        for side, name in ((old, previous_name(results)), (new, results)):
            document = graded(out / submission.key / name)
            if document is not None:
                side[submission.student_id] = Graded(submission.student_id, submission.name, submission.key,
                                                     [document])
    changes = compare(old, new)
    lines = summary(changes)
    write_text_atomic(out / "diff.md", "# What moved when the batch graded again\n\n```text\n"
                      + "\n".join(lines) + "\n```\n")
    write_text_atomic(out / "diff.json", json.dumps([asdict(c) for c in changes], indent=1) + "\n")
    return ["what moved (diff.md):", *[f"  {line}" for line in lines[:12]]], [out / "diff.md", out / "diff.json"]
