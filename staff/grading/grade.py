"""Grade one submission: this tree's public and hidden suites against the submission's package.

`grade` lays the submission out (`staff.sandbox.layout`), runs the suites in a child process
(`staff.grading.suite_run`) on the tests `staff.grading.selection` picks, and makes the grade: every test scored,
what the outcome was, scrubbed of the machine's paths (`staff.grading.scrub`). By default student code
never runs in the test process: every adapter call goes to a worker process confined by
`staff.sandbox` (its own user when the grader is root, namespaces, Landlock, resource limits).
Tests the run never finished (a crash, the time limit) score 0 with a note, so every run ends in a
complete result.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from staff.grading import provenance, selection
from staff.grading.outcomes import Details, Outcome
from staff.grading.scrub import INTAKE_CHARS, machine_paths, scrub, scrubbed, share_output
from staff.grading.selection import HIDDEN_SUITE, REPO_ROOT, SUITE_PARTS, marker_expression, suites
from staff.grading.suite_run import import_error, not_run, run_suite
from staff.intake import review_marks
from staff.intake.submission import Intake, SubmissionError, lay_package
from staff.sandbox import confine, cuda_preflight, exposure, memory
from staff.sandbox.call_clock import wall_limit_s
from staff.sandbox.layout import Workspace, build
from staff.sandbox.removal import remove_tree, scratch_folder
from staff.sandbox.scratch_place import scratch_parent
from staff.sandbox.settings import Settings
from tests.failure_output import truncated
from tests.grading import GradedTest, Note, format_table, peak_rss_bytes

__all__ = ["REPO_ROOT", "SUITE_PARTS", "Grade", "grade"]
SUMMARY_CHARS = 8000  # of the text above the points table in results.json


@dataclass
class Grade:
    tests: list[GradedTest]
    output: str  # the summary shown to the student above the per-test results
    seconds: float
    protections: dict[str, str] = field(default_factory=dict)  # what confined the student's code
    memory: dict[str, int] = field(default_factory=dict)  # bytes: what grading cost the grader's processes
    outcome: Outcome = Outcome.GRADED  # how the grade ended
    details: Details = field(default_factory=dict)  # the outcome's facts (see staff.grading.outcomes), paths scrubbed
    never_ran: dict[str, Outcome] = field(default_factory=dict)  # nodeid -> why that test never ran
    graded_files: dict[str, object] = field(default_factory=dict)  # what the intake took (Intake.as_data), scrubbed
    provenance: dict[str, object] = field(default_factory=dict)  # what graded it (staff.grading.provenance)
    test_sources: dict[str, str] = field(default_factory=dict)  # nodeid -> sha256 of the test's source
    review: list[dict[str, object]] = field(default_factory=list)  # what marks it for a person (review_marks.Mark)

    @property
    def score(self) -> float:
        return sum(t.earned for t in self.tests)

    @property
    def max_score(self) -> float:
        return sum(t.possible for t in self.tests)


def _end_worker_user(uid: int | None) -> None:
    """After the run, however it ended: every process of the worker's user of its own killed, and
    what it left in the shared folders removed (the keeper has ended every process below the run;
    this catches whatever is not, by uid). Nothing to do without such a user."""
    if uid is None or os.geteuid() != 0:
        return
    from staff.sandbox.leftovers import kill_user, remove_leftovers

    kill_user(uid)
    left = remove_leftovers(uid)
    if left:
        print(f"the grader could not remove what the worker's user {uid} left: {left[:5]}", file=sys.stderr)


def preflight_text(note: dict) -> str:
    """The sandbox plugin's note of a GPU grade's CUDA preflight, in a line: passed or failed, on what
    (a stand-in says so), and what the worker said."""
    mode = str(note.get("mode", ""))
    where = "" if mode == cuda_preflight.DEVICE else f" ({mode.upper()}, not a device)"
    return f"{'passed' if note.get('passed') is True else 'failed'}{where}: {note.get('said', '')}"


def _lay(submission: Path, scratch: Path) -> tuple[Path, Intake | None, str | None]:
    """The submission's package laid out in `scratch/submitted`, what was taken in, and why it is
    unusable (None, and the reason, when it is)."""
    package = scratch / "submitted"
    try:
        return package, lay_package(submission, package), None
    except SubmissionError as error:
        remove_tree(package)
        package.mkdir()
        (package / "__init__.py").touch()
        return package, None, str(error)


def grade(submission: Path, settings: Settings | None = None, *, jobs: int = 1, verbose: bool = False,
          progress: bool = True, on_graded: Callable[[Grade], None] | None = None,
          cuda_preflight_stand_in: str | None = None) -> Grade:
    """Grade a submission folder or zip. Never raises for a broken submission: it scores 0 instead.

    Args:
        submission: a folder holding cs336_basics/, that folder, or a zip of either.
        settings: the grade's settings (None: the defaults), see staff/sandbox/settings.py: the time
            limits, the sandbox's limits and protections, the hidden suite and its visibility, the
            problems, the GPU part (the public tests marked `cuda`, on this machine's GPU; a CPU grade
            deselects them, GPU or not, so the two parts add up), in-process grading (debugging and
            timing only: a hostile submission can forge its grade that way).
        jobs: grades run at once beside this one (a batch's), which share the CPUs and the memory.
        verbose: stream pytest's output instead of showing a progress bar.
        progress: show a progress bar of the tests.
        on_graded: called with the grade once it is made, before the scratch folder is removed (to
            write results.json first: whatever the submission left there cannot delay or lose it).
        cuda_preflight_stand_in: for staff tests and `staff gpu-check --dry-run`'s grade of the reference
            only (no grading command, `staff grade`, validate or the autograder, passes it): what stands for
            the driver in a sandboxed GPU grade's CUDA preflight, one of
            `staff.sandbox.cuda_preflight.STAND_INS`; None (always, in a real grade) starts CUDA on the device.
    """
    settings = settings if settings is not None else Settings()
    exposure.check(settings)  # before anything of the submission runs
    gpu, problems, in_process, visibility = settings.gpu, settings.problems, settings.in_process, \
        settings.hidden_visibility
    hidden = settings.hidden and HIDDEN_SUITE.is_dir() and not gpu
    started = time.monotonic()
    if not in_process:  # a worker of this user (as an ordinary user) cannot read this process's environment or memory
        confine.set_dumpable(False)
    # The scratch folder goes however the grade ends, and its removal (of whatever the submission
    # left there: a tree thousands of folders deep, closed folders) never costs the grade.
    with scratch_folder("staff-grade-", scratch_parent(sandboxed=not in_process and not gpu)) as scratch:
        package, intake, problem = _lay(submission, scratch)
        # Read before any of it runs: what the code could change, this process reads from the upload.
        review = [] if problem is not None else [mark.as_data() for mark in review_marks.find(package)]
        graded_code = provenance.submission_of(submission, package if problem is None else None)
        # An unusable submission is not run at all: its tests are only listed (by the bundle, where it
        # listed them), in the simple layout.
        confined = None if in_process or problem is not None else settings
        workspace: Workspace = build(scratch, REPO_ROOT, package, SUITE_PARTS, hidden, confined, jobs,
                                     cuda_preflight_stand_in)
        remove_tree(package)
        extra = [f"--hidden-visibility={visibility}", "-m", marker_expression(gpu)]
        if hidden and settings.property_examples is not None:  # an option of the hidden suites' conftest
            extra.append(f"--property-examples={settings.property_examples}")
        if in_process:
            if problem is None:
                problem = import_error(workspace.grader, settings.import_timeout_s)
            extra.append(f"--timeout={settings.test_timeout_s:g}")
        else:  # the sandbox plugin times each test's calls; pytest-timeout is the backstop, worker start included
            backstop_s = wall_limit_s(settings.test_timeout_s) + settings.startup_timeout_s
            extra += ["-p", "staff.sandbox.plugin", "--sandbox", str(workspace.settings), f"--timeout={backstop_s:g}"]
        protections, usage = {}, {}
        if problem is None:
            report, log = run_suite(workspace.grader, suites(hidden, problems), settings.run_timeout_s, verbose,
                                    extra, progress, sandboxed=not in_process,
                                    warm=not gpu and not in_process)  # student code never runs beside a template
            _end_worker_user(workspace.uid)
            tests, outcome, details, never_ran = list(report.tests.values()), report.outcome, report.details, \
                report.never_ran
            protections = dict(report.notes.get(Note.PROTECTIONS) or {})
            if workspace.no_user is not None:  # the worker only knows it was given no uid; this says why
                protections["separate user"] = f"off: {workspace.no_user}"
            if isinstance(report.notes.get(Note.PEAK_RSS_BYTES), int):
                usage["test process peak RSS"] = report.notes[Note.PEAK_RSS_BYTES]
            if isinstance(report.notes.get(Note.WORKER_PEAK_BYTES), int):
                usage["worker memory cgroup peak"] = report.notes[Note.WORKER_PEAK_BYTES]
            if outcome.grader_failure:
                # Nothing of this run speaks about the submission: no test is failed for it.
                tests, never_ran = [], {}
            elif Note.IMPORT_ERROR in report.notes:
                outcome, details = Outcome.NOT_LOADED, {"load_error": str(report.notes[Note.IMPORT_ERROR])}
            elif never_ran:
                # The log names hidden tests and holds what the submission printed: the staff see it, not the student.
                print(f"the test run stopped early; the end of its log:\n{log[-2000:]}", file=sys.stderr)
            preflight = report.notes.get(Note.CUDA_PREFLIGHT)
            if isinstance(preflight, dict):  # a GPU grade's: the results say whether CUDA started, and where
                details = {**details, "cuda_preflight": preflight_text(preflight)}
        else:
            tests = selection.graded_tests(workspace.grader, hidden, problems, gpu, visibility)
            outcome, details, never_ran = Outcome.NOT_LOADED, {"load_error": problem}, {}
            for test in tests:
                not_run(test, outcome, details, never_ran)
        if in_process:
            protections = {"worker process": "off: graded in-process (--in-process)"}
        # The same submission graded twice reads the same wherever it was graded, and no text from
        # the worker costs more than its share of results.json.
        paths = machine_paths(workspace)
        for test in tests:
            test.output = truncated(scrub(test.output, paths))
        share_output(tests)
        details = {key: scrub(value, paths) if isinstance(value, str) else value for key, value in details.items()}
        summary = truncated(outcome.summary(details), SUMMARY_CHARS)
        graded_files = {} if intake is None else scrubbed(intake.as_data(), paths)
        if intake is not None and not outcome.grader_failure:  # which files: a student who uploaded stale ones sees it
            summary = f"{summary}\n\n{truncated(scrub(intake.describe(), paths), INTAKE_CHARS)}".strip()
        details = {key: truncated(value, SUMMARY_CHARS) if isinstance(value, str) else value
                   for key, value in details.items()}
        usage["grader process peak RSS"] = peak_rss_bytes()
        peak = memory.peak_bytes()
        if peak is not None:
            usage["memory cgroup peak (all it holds, page cache included)"] = peak
        made = provenance.provenance(settings, hidden, graded_code)
        if review and not outcome.grader_failure:
            summary = f"{summary}\n\n{truncated(review_marks.summary_line(review), SUMMARY_CHARS)}".strip()
        if not outcome.grader_failure:  # which suite: a student (and a TA) can tell a grade made before a fix
            summary = f"{summary}\n\n{provenance.suite_line(made)}".strip()
        table = "" if outcome.grader_failure else "\n".join(format_table(tests, visibility == "visible"))
        result = Grade(tests=tests, output=f"{summary}\n\n{table}".strip(), seconds=time.monotonic() - started,
                       protections=protections, memory=usage, outcome=outcome, details=details, never_ran=never_ran,
                       graded_files=graded_files, provenance=made,
                       test_sources=provenance.source_hashes(REPO_ROOT, [t.nodeid for t in tests]),
                       review=[] if outcome.grader_failure else review)
        if on_graded is not None:  # the grade is kept (results.json written) before the clean-up starts
            on_graded(result)
    return result
