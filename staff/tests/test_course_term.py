"""A course over a term, with a stand-in grader (no test run): a batch regrades exactly the stale
grades and says why, a partial grade is never shown as 0 and a whole run grades it whole, every
submission is a gradebook row, the previous grade is kept and `staff diff` names who moved, by which
test and why, and a flaky result is reported as a defect.

The stand-in grades each problem as one test, passed when the problem's module says DONE, and
records the provenance a real grade records (staff/grading/provenance.py) with a suite the test controls."""

from __future__ import annotations

import csv
import json
import shutil
import zipfile
from pathlib import Path

import pytest

from staff.cli import main
from staff.course.batch import grade_batch
from staff.course.diff import FLAKY, diff
from staff.course.folder import RESULTS, Submission, previous_name
from staff.course.gradebook import write_gradebook
from staff.course.stale import Current, scored, settings_change
from staff.grading import provenance
from staff.grading.grade import Grade
from staff.grading.results import results_json, write_json_atomically
from staff.sandbox.settings import Settings
from tests.grading import FAILED, PASSED, GradedTest
from tests.problems import PROBLEMS


def suite_of(files: dict[str, str]) -> dict:
    return {"version": "1.0.0", "sha256": provenance.tree_sha256(files), "hidden": True, "files": files}


SUITE = suite_of({"tests/test_02_strides.py": "a", "tests/test_09_data.py": "b"})


class StandIn:
    """A grader of the stand-in's suite and settings; `sources` are the tests' source hashes it records."""

    def __init__(self, settings: Settings, suite: dict = SUITE, sources: dict[int, str] | None = None):
        self.settings, self.suite, self.sources, self.graded = settings, suite, sources or {}, []

    def current(self) -> Current:
        return Current(self.suite, provenance.settings_record(self.settings))

    def __call__(self, path: Path) -> Grade:
        self.graded.append(path.name.removesuffix(".zip"))
        code = provenance.submission_sha256(path)
        if path.suffix == ".zip":
            with zipfile.ZipFile(path) as zf:
                texts = {Path(n).stem: zf.read(n).decode() for n in zf.namelist()}
        else:
            texts = {p.stem: p.read_text() for p in (path / "cs336_basics").glob("*.py")}
        tests = [GradedTest(nodeid=f"tests/test_{n:02d}.py::test_{n}", name=f"test_{n}", number=f"{n}.1", problem=n,
                            points=2.0, needs_cuda=False,
                            status=PASSED if "DONE" in texts.get(PROBLEMS[n].module, "") else FAILED,
                            output="FAILED\nAssertionError: not done (see handout)")
                 for n in (self.settings.problems or PROBLEMS)]
        made = {"suite": self.suite, "grader": {"version": "1.0.0", "commit": "c0ffee", "clean": True},
                "submission": code, "settings": provenance.settings_record(self.settings), "machine": {}, "time": "t"}
        sources = {t.nodeid: self.sources.get(t.problem, "s") for t in tests}
        return Grade(tests=tests, output="", seconds=0.1, provenance=made, test_sources=sources)


def write_submission(folder: Path, done: set[int]) -> None:
    package = folder / "cs336_basics"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("")
    for n, problem in PROBLEMS.items():
        (package / f"{problem.module}.py").write_text("DONE\n" if n in done else "TODO\n")


@pytest.fixture
def batch(tmp_path: Path) -> Path:
    folder = tmp_path / "batch"
    write_submission(folder / "ada", set(PROBLEMS))
    write_submission(folder / "bob", {1, 2})
    write_submission(folder / "cyd", set(PROBLEMS) - {9})
    return folder


def run(folder: Path, out: Path, grader: StandIn, **keywords) -> list[str]:
    grader.graded.clear()
    lines, _ = grade_batch(folder, out, grader, jobs=1, progress=False, current=grader.current(), **keywords)
    return lines


def rows(out: Path) -> dict[str, dict]:
    with (out / "grades.csv").open(encoding="utf-8") as handle:
        return {row["submission"]: row for row in csv.DictReader(handle)}


def test_a_partial_grade_is_shown_as_not_graded_and_a_whole_run_grades_it_whole(batch, tmp_path):
    # Catches a batch that keeps any complete grade (a whole run after `--problems 2 9` regraded
    # nothing and the totals stayed out of 64) and a gradebook that writes 0 for a problem never graded.
    out = tmp_path / "out"
    lines = run(batch, out, StandIn(Settings(problems=(2, 9))))
    graded = rows(out)
    assert {r["status"] for r in graded.values()} == {"partial"}
    assert graded["bob"]["p1_public"] == "" and graded["bob"]["p2_public"] == "2" and graded["bob"]["max_total"] == "4"
    assert "0 of 3 submissions graded whole, 3 partly (some problems only)" in lines
    whole = StandIn(Settings())
    lines = run(batch, out, whole)
    assert sorted(whole.graded) == ["ada", "bob", "cyd"]
    assert "3 graded now: the settings changed: problems 2, 9 -> all" in lines
    graded = rows(out)
    assert {r["status"] for r in graded.values()} == {"graded"}
    assert graded["bob"]["p1_public"] == "2" and graded["bob"]["p9_public"] == "0"
    assert graded["ada"]["max_total"] == str(2 * len(PROBLEMS))


def test_a_rerun_regrades_exactly_the_stale_grades_and_says_why(batch, tmp_path):
    # Catches a rerun that keeps a grade whose code or suite changed, one that regrades everything
    # (or a zip of the same code: the upload's bytes hashed instead of the graded files), and a reason
    # that does not name the changed file.
    out, grader = tmp_path / "out", StandIn(Settings())
    run(batch, out, grader)
    assert run(batch, out, grader)[0] == "0 graded now: every grade of the 3 is current" and grader.graded == []
    write_submission(batch / "bob", {1, 2, 3})
    assert "1 graded now: the submission changed" in run(batch, out, grader) and grader.graded == ["bob"]
    cyd = batch / "cyd"
    with zipfile.ZipFile(batch / "cyd.zip", "w") as zf:
        for path in sorted(cyd.rglob("*.py")):
            zf.write(path, path.relative_to(cyd).as_posix())
    shutil.rmtree(cyd)
    run(batch, out, grader)
    assert grader.graded == [], "the same files uploaded as a zip are the same submission"
    threaded = StandIn(Settings(threads=3))  # a Slurm node's share of its cores: no score changes
    run(batch, out, threaded)
    assert threaded.graded == [], "torch's threads decide no score"
    fixed = StandIn(Settings(), suite_of({**SUITE["files"], "tests/test_09_data.py": "c"}))
    lines = run(batch, out, fixed)
    assert sorted(fixed.graded) == ["ada", "bob", "cyd"]
    assert "3 graded now: the suite changed in tests/test_09_data.py" in lines


def test_the_previous_grade_is_kept_and_the_diff_names_who_moved_by_which_test_and_why(batch, tmp_path):
    # Catches a regrade that overwrites the old grade (nothing left to compare), a diff that reports
    # every row, and causes confused: a fixed test blamed on the code, new code blamed on the test.
    out = tmp_path / "out"
    run(batch, out, StandIn(Settings()))
    write_submission(batch / "bob", {1, 2, 3})
    lines = run(batch, out, StandIn(Settings()))
    assert (out / "bob" / previous_name(RESULTS)).is_file() and not (out / "ada" / previous_name(RESULTS)).exists()
    assert any("bob: 4 -> 6" in line for line in lines)
    changes = {c.student: c for c in diff(out)}
    assert [(m.name, m.before, m.after, m.cause) for m in changes["bob"].moved] == \
        [("test_3", 0.0, 2.0, "the submission changed")]
    fixed = StandIn(Settings(), suite_of({**SUITE["files"], "tests/test_09_data.py": "c"}), sources={9: "fixed"})
    write_submission(batch / "cyd", set(PROBLEMS))  # cyd fixed Problem 9 too: both causes
    run(batch, out, fixed)
    changes = {c.student: c for c in diff(out)}
    assert [c for c in changes if changes[c].moved] == ["cyd"]
    assert [m.cause for m in changes["cyd"].moved] == ["the submission changed; the test changed"]
    assert json.loads((out / "diff.json").read_text())[2]["moved"][0]["name"] == "test_9"


def test_a_result_that_moved_with_nothing_changed_is_reported_as_a_defect(batch, tmp_path, capsys):
    # Catches a flaky test passed off as an ordinary change (or not shown): same suite, settings,
    # grader and code, different score.
    grader = StandIn(Settings())
    first = results_json(grader(batch / "cyd"))
    second = json.loads(json.dumps(first))
    second["tests"][0]["score"] = 0.0
    second["tests"][0]["status"] = "failed"
    write_json_atomically(first, tmp_path / "old.json")
    write_json_atomically(second, tmp_path / "new.json")
    assert main(["diff", str(tmp_path / "old.json"), str(tmp_path / "new.json"), "--csv", str(tmp_path / "d.csv")]) == 1
    said = capsys.readouterr().out
    assert said.startswith("DEFECT: 1 test result(s) changed with nothing changed")
    assert FLAKY in said and "1 students: 0 up, 1 down, 0 unchanged" in said
    with (tmp_path / "d.csv").open() as handle:
        assert [row["cause"] for row in csv.DictReader(handle)] == [FLAKY]


def test_every_submission_is_a_gradebook_row_and_the_ungraded_are_flagged(batch, tmp_path, capsys):
    # Catches a gradebook that drops submissions not graded yet (after one shard of two, `staff gradebook
    # OUT` wrote 1 row for 3): with or without --batch, every submission is a row.
    out = tmp_path / "out"
    run(batch, out, StandIn(Settings()), shard=(1, 2))
    for given in ([], ["--batch", str(batch)]):
        assert main(["gradebook", str(out), *given]) == 0
        graded = rows(out)
        assert sorted(graded) == ["ada", "bob", "cyd"]
        waiting = [key for key, row in graded.items() if row["status"] == "not graded"]
        assert waiting and all(graded[key]["total"] == "" for key in waiting)
        assert f"{len(waiting)} submission(s) not graded:" in capsys.readouterr().out


def test_a_gradebook_of_two_suites_warns_and_names_them(batch, tmp_path):
    # Catches a batch that mixes grades of an old and a fixed suite without a word.
    out = tmp_path / "out"
    run(batch, out, StandIn(Settings()))
    fixed = StandIn(Settings(), suite_of({"tests/test_02_strides.py": "z"}))
    grade_batch(batch, out, fixed, jobs=1, progress=False, current=fixed.current(), shard=(1, 2))
    lines, _ = write_gradebook([Submission(p.name, p, p.name) for p in sorted(batch.iterdir())], out)
    assert any(line.startswith("warning: these grades come from 2 suites") for line in lines)
    assert len({row["suite"] for row in rows(out).values()}) == 2


def test_a_setting_a_grade_predates_counts_as_its_default_and_a_quick_grade_as_changed():
    # Mistakes this catches: every grade made before a setting was added regraded as "settings changed" (a whole
    # term's grades made again by an upgrade), and a grade of fewer property examples kept beside a full run.
    now = provenance.settings_record(Settings())
    before = {name: value for name, value in now.items() if name != "property_examples"}
    assert scored(before) == scored(now)
    quick = provenance.settings_record(Settings(property_examples=10))
    assert settings_change(scored(quick), scored(now)) == "property_examples 10 -> default"
