"""The waits people feel, timed as they feel them (a fresh process per run): a student's test file
and whole public suite, one grade in-process and behind the sandbox, a batch at one and at every
core, and `staff release`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from staff import samples
from staff.bench.measure import Row, Timing, ratio_row, repeat_command
from staff.sources.problem_files import public_test_files
from tests.problems import PROBLEMS

REPO_ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
STAFF = [PYTHON, "-m", "staff.cli"]
PYTEST = [PYTHON, "-m", "pytest", "-q", "-p", "no:randomly"]
# A student's environment has no hypothesis (a staff-only dependency), so no hypothesis plugin either.
STUDENT_PYTEST = PYTEST + ["-p", "no:hypothesispytest"]


def _env() -> dict[str, str]:
    """The caller's environment without anything that would make pytest or torch start warmer or
    colder than a student's shell does."""
    env = dict(os.environ)
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _timed(command: list[str], repeats: int = 1, timeout_s: float = 1200) -> Timing:
    """`command` run from the repository root in a student's environment, `repeats` times."""
    return repeat_command(command, repeats, cwd=str(REPO_ROOT), env=_env(), timeout_s=timeout_s)


def bench_student_loop(repeats: int, progress: Callable[[str], None]) -> list[Row]:
    """Each problem's public test file (one run each: eleven files are the repeats of "one file"), and
    the whole public suite, from a cold process, against the floor of `python -c "import torch"`.
    Targets: a file within 2 s of the floor; the suite under 15 s."""
    floor_command = [PYTHON, "-c", "import torch"]
    floor = _timed(floor_command, repeats)
    rows = []
    for number in PROBLEMS:
        test_file = public_test_files(REPO_ROOT, number)[0]
        progress(f"student loop: {test_file.name}")
        # The floor again, right before the file: a machine whose speed drifts during the run moves both.
        paired_floor = _timed(floor_command)
        timing = _timed(STUDENT_PYTEST + [str(test_file.relative_to(REPO_ROOT))])
        over = timing.median - paired_floor.median
        rows.append(Row("student: one test file", f"{test_file.name} (1 run, next to 1 run of the floor)", timing,
                        paired_floor, 'python -c "import torch"', f"+{over:.2f} s over the floor", "≤ +2 s",
                        over <= 2.0))
    progress("student loop: the whole public suite")
    suite = _timed(STUDENT_PYTEST + ["tests"], repeats)
    rows.append(Row("student: whole public suite", "tests/", suite, floor, 'python -c "import torch"',
                    f"{suite.median:.1f} s", "< 15 s", suite.median < 15.0))
    return rows


def bench_staff_cli(repeats: int, progress: Callable[[str], None]) -> list[Row]:
    """`staff --help` and an argument error, each in a fresh process, against `python -c "pass"`:
    what a TA waits for before anything runs. Target: under 1 s (no torch is imported for either)."""
    progress("staff command line: --help and an argument error")
    floor = _timed([PYTHON, "-c", "pass"], repeats)
    rows = []
    for case, argv, exit_code in (("staff --help", ["--help"], 0),
                                  ("staff grade --jobs x (an argument error)", ["grade", "--jobs", "x"], 2)):
        timing = repeat_command(STAFF + argv, repeats, cwd=str(REPO_ROOT), env=_env(), exit_code=exit_code)
        rows.append(Row("staff command line", case, timing, floor, 'python -c "pass"', f"{timing.median:.2f} s",
                        "< 1 s", timing.median < 1.0))
    return rows


def _full_marks(results: Path) -> None:
    """A grade is timed only if it did the whole work: the reference must get every point."""
    document = json.loads(results.read_text(encoding="utf-8"))
    max_score = sum(test["max_score"] for test in document["tests"])
    if not document["tests"] or document["score"] != max_score:
        raise RuntimeError(f"{results}: the reference scored {document['score']} of {max_score}; a grade that "
                           "did not do the whole work has no meaningful time")


def _import_torch_peak_bytes() -> int:
    """The peak RSS of a fresh `python -c "import torch"`, bytes: the floor of any process that grades."""
    script = "import resource, torch; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    done = subprocess.run([PYTHON, "-c", script], capture_output=True, text=True, check=True, env=_env())
    return int(done.stdout.split()[-1]) * 1024


def _memory_row(results: Path, timing: Timing) -> Row:
    """The test process's peak RSS in the sandboxed grade just timed (results.json records it), as a
    multiple of one `import torch` process."""
    peak = json.loads(results.read_text(encoding="utf-8"))["extra_data"]["memory_bytes"]["test process peak RSS"]
    floor = _import_torch_peak_bytes()
    return Row("grading: memory", "the test process's peak RSS, behind the sandbox", timing, None,
               'python -c "import torch"', f"{peak / 2**20:.0f} MiB, {peak / floor:.2f}× the floor of "
               f"{floor / 2**20:.0f} MiB", "—", None)


def bench_grading(batch_size: int, progress: Callable[[str], None]) -> list[Row]:
    """One grade of the reference, public + hidden, in-process and behind the sandbox, once each
    (half a minute each); then a batch of `batch_size` copies of it at -j 1 and at -j cores, whose
    submissions are the repeats: their own seconds give the sandboxed grade's median and spread."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="staff-bench-grade-") as scratch:
        folder = Path(scratch)
        reference = samples.reference(folder / "reference")
        results = folder / "results.json"
        grade = STAFF + ["grade", str(reference), "--out", str(results)]
        progress("grading: one submission in-process")
        in_process = _timed(grade + ["--in-process"])
        _full_marks(results)
        progress("grading: one submission behind the sandbox")
        sandboxed = _timed(grade)
        _full_marks(results)
        rows.append(ratio_row("grading: `staff grade` of the reference", "behind the sandbox (1 run)", sandboxed,
                              in_process, "--in-process (unsafe)", at_most=None))
        rows.append(_memory_row(results, sandboxed))
        batch = folder / "batch"
        batch.mkdir()
        for i in range(batch_size):
            samples.reference(batch / f"student-{i:02d}")
        cores = os.cpu_count() or 1
        timings = {}
        each = None
        for jobs in sorted({1, cores}):
            progress(f"grading: a batch of {batch_size} at -j {jobs}")
            out = folder / f"grades-j{jobs}"
            timings[jobs] = _timed(STAFF + ["grade", "--batch", str(batch), "--out", str(out), "-j", str(jobs)])
            for submission in out.glob("student-*/results.json"):
                _full_marks(submission)
            if jobs == 1:
                metas = out.glob("student-*/meta.json")
                each = Timing(tuple(json.loads(meta.read_text())["seconds"] for meta in metas))
        rows.append(Row("grading: one submission, public + hidden", "behind the sandbox, each of a batch at -j 1",
                        each, None, "", f"{each.median:.1f} s", "< 60 s", each.median < 60))
        one, many = timings[1], timings[cores]
        speedup = one.median / many.median
        per_minute = batch_size / many.median * 60
        rows.append(Row(f"grading: a batch of {batch_size}", f"-j {cores} against -j 1", many, one, "-j 1",
                        f"{speedup:.2f}× faster, {per_minute:.1f} submissions a minute",
                        "≥ 1.6× on 2 cores" if cores >= 2 else "—", speedup >= 1.6 if cores >= 2 else None))
    return rows


def bench_release(progress: Callable[[str], None]) -> list[Row]:
    """`staff release OUT --zip --git`, end to end, once (about a minute: the release grades itself)."""
    progress("staff release")
    with tempfile.TemporaryDirectory(prefix="staff-bench-release-") as scratch:
        timing = _timed(STAFF + ["release", str(Path(scratch) / "release"), "--zip", "--git"])
    return [Row("staff release", "--zip --git", timing, None, "", f"{timing.median:.0f} s", "< 90 s",
                timing.median < 90)]


def bench_staff_suite(progress: Callable[[str], None]) -> list[Row]:
    """The staff tests (staff/tests), once: what CI spends beyond the graded suites."""
    progress("the staff test suite (about 15 minutes)")
    timing = _timed(PYTEST + ["staff/tests"], timeout_s=3600)
    return [Row("staff test suite", "staff/tests", timing, None, "", f"{timing.median / 60:.1f} min", "", None)]
