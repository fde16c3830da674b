"""`staff release`: the static checks catch each kind of mistake, bad markers stop the build, and
the whole build (fresh install, public tests, staff grade, zip, git) passes its own checks, after
which the release works for a student: the reference solution turns it green and
make_submission.sh makes an archive that `staff grade` accepts."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from staff.cli import main
from staff.grading.grade import REPO_ROOT, grade
from staff.release.contents import MANIFEST, TOP_LEVEL, plan, write_manifest, write_tree
from staff.release.proc import ReleaseError, run, uv
from staff.release.pyproject import PyprojectError, student_pyproject
from staff.release.selfcheck import judge_public_run
from staff.release.verify import MAX_FILE_BYTES, check_tree
from staff.sources.markers import BEGIN, END, find_blocks
from tests.grading import NO_GPU_REASON, GradedTest

STAFF_TEST = "test_cli_rejects_a_missing_path_without_writing"  # a test defined under staff/, never shipped


def solution_line(module: str = "strides.py", min_chars: int = 30) -> str:
    """A long line from inside a solution block of the reference."""
    lines = (REPO_ROOT / "cs336_basics" / module).read_text().splitlines()
    block = find_blocks("\n".join(lines))[0]
    return next(line for line in lines[block.begin + 1 : block.end] if len(line.strip()) >= min_chars)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """The release's files as the build writes and re-locks them (not installed)."""
    tree = tmp_path_factory.mktemp("written") / "release"
    entries = plan(REPO_ROOT)
    write_tree(REPO_ROOT, tree, entries)
    run([uv(), "lock"], tree, what="uv lock")
    write_manifest(tree, entries)
    return entries, tree


@pytest.fixture
def release(written, tmp_path):
    """A private copy of the written release, free to be damaged."""
    entries, tree = written
    shutil.copytree(tree, tmp_path / "release")
    return entries, tmp_path / "release"


def test_written_release_passes_the_static_checks(written):
    entries, tree = written
    assert check_tree(REPO_ROOT, tree, entries) == []
    assert {p.name for p in tree.iterdir()} == TOP_LEVEL
    assert not any("staff" in e.dest.split("/") for e in entries)
    stub = (tree / "cs336_basics" / "strides.py").read_text()
    assert "raise NotImplementedError('materialize is not implemented yet (see handout/02_strides.md §2.6)')" in stub
    assert BEGIN not in stub
    assert (tree / "README.md").read_text() == (REPO_ROOT / "STUDENT_README.md").read_text()


def append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


def test_outside_git_make_submission_names_what_changed_outside_the_package(release):
    # Mistake this catches: the warning about edits outside cs336_basics/ given only inside git, so a student
    # who unpacked the release's zip, edited tests/ or adapters/ and saw them pass is never told that the
    # graders use their own copies; and a manifest that goes stale when the lock file is made again.
    entries, tree = release
    assert check_tree(REPO_ROOT, tree, entries) == []
    clean = run_script(tree, "--skip-tests", timeout=60)
    assert clean.returncode == 0 and "outside cs336_basics" not in clean.stderr, clean.stderr
    append(tree / "tests" / "checks.py", "\n# my own note\n")
    (tree / "adapters" / "mine.py").write_text("x = 1\n")
    (tree / "handout" / "01_dtype_memory.md").unlink()
    said = run_script(tree, "--skip-tests", timeout=60)
    assert said.returncode == 0 and (tree / "cs336-basics-submission.zip").is_file(), said.stderr
    assert "outside cs336_basics/ and will not be graded" in said.stderr
    assert "changed  tests/checks.py" in said.stderr and "added    adapters/mine.py" in said.stderr
    assert "deleted  handout/01_dtype_memory.md" in said.stderr
    (tree / MANIFEST).write_text("0" * 64 + "  uv.lock\n")
    assert any("not the sums" in problem for problem in check_tree(REPO_ROOT, tree, entries))


def replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (old, path)
    path.write_text(text.replace(old, new, 1))


def edit_stub(old: str, new: str) -> Callable[[Path], None]:
    """A change to the stub line of `materialize` in a release."""
    return lambda r: replace(r / "cs336_basics" / "strides.py", old, new)


BAD_STUB = r"cs336_basics/strides\.py:\d+: expected the stub of materialize"
MUTATIONS: dict[str, tuple[Callable[[Path], None], str]] = {
    "a solution line pasted into the handout": (
        lambda r: append(r / "handout" / "README.md", "\n" + solution_line() + "\n"),
        r"leak: handout/README\.md:\d+: repeats cs336_basics/strides\.py:\d+ \(solution\)"),
    "a solution line quoted inside a sentence, reindented": (
        lambda r: append(r / "handout" / "02_strides.md", f"\nHint: try `{solution_line().strip()}` here.\n"),
        r"leak: handout/02_strides\.md:\d+: repeats cs336_basics/strides\.py"),
    "the reference module shipped instead of the stubs": (
        lambda r: shutil.copyfile(REPO_ROOT / "cs336_basics" / "strides.py", r / "cs336_basics" / "strides.py"),
        r"cs336_basics/strides\.py: \d+ lines, expected \d+"),
    "one body left unstubbed": (
        lambda r: replace(r / "cs336_basics" / "flops.py", "    raise NotImplementedError('matmul_flops is not "
                          "implemented yet (see handout/04_flops.md §4.1)')", "    return 2 * m * k * n"),
        r"cs336_basics/flops\.py:\d+: expected the stub of matmul_flops"),
    "a stub that names no section": (edit_stub(" §2.6)')", ")')"), BAD_STUB),
    "a stub naming another page": (edit_stub("handout/02_strides.md §2.6", "handout/03_einops.md §2.6"), BAD_STUB),
    "a stub pointing to a section its page lacks": (edit_stub(" §2.6)')", " §2.9)')"), BAD_STUB),
    "a docstring changed outside the markers": (
        lambda r: replace(r / "cs336_basics" / "strides.py", "Strides and offsets count elements", "Strides count"),
        r"cs336_basics/strides\.py:\d+: differs from the source outside the solution markers"),
    "a staff module copied into adapters": (
        lambda r: shutil.copyfile(REPO_ROOT / "staff" / "grading" / "grade.py", r / "adapters" / "grade.py"),
        r"adapters/grade\.py: not part of the release plan"),
    "staff code pasted into a shipped file": (
        lambda r: append(r / "tests" / "checks.py",
                         "\n" + (REPO_ROOT / "staff" / "intake" / "submission.py").read_text()),
        r"leak: tests/checks\.py:\d+: repeats staff/intake/submission\.py:\d+"),
    "the staff folder at the top level": (
        lambda r: shutil.copytree(REPO_ROOT / "staff", r / "staff", ignore=shutil.ignore_patterns("__pycache__")),
        r"top level holds .*'staff'"),
    "a hidden test's expected values pasted into a public test": (
        lambda r: append(r / "tests" / "test_01_dtype_memory.py", "\n" + next(
            line for line in (REPO_ROOT / "staff" / "hidden" / "test_hidden_04_flops.py").read_text().splitlines()
            if line.startswith("SCRIPTS = ")) + "\n"),
        r"leak: tests/test_01_dtype_memory\.py:\d+: repeats staff/hidden/test_hidden_04_flops\.py:\d+"),
    "a hidden test named in the handout": (
        lambda r: append(r / "handout" / "04_flops.md", "\nSee test_time_matmul_with_other_warmup_and_trial_counts.\n"),
        r"handout/04_flops\.md:\d+: names the staff-only test test_time_matmul_with_other_warmup_and_trial_counts"),
    "a staff-only test named in the release": (
        lambda r: append(r / "tests" / "conftest.py", f"\n# see {STAFF_TEST}\n"),
        rf"tests/conftest\.py:\d+: names the staff-only test {STAFF_TEST}"),
    "a file far larger than expected": (
        lambda r: (r / "handout" / "figures" / "float_formats.svg").write_bytes(b" " * (MAX_FILE_BYTES + 1)),
        r"handout/figures/float_formats\.svg: \d+ bytes, larger than"),
    "a staff entry left in pyproject.toml": (
        lambda r: append(r / "pyproject.toml", '\n[dependency-groups]\nstaff = ["tqdm"]\n'),
        r"pyproject\.toml:\d+: mentions staff"),
    "a shipped file missing": (
        lambda r: (r / "tests" / "conftest.py").unlink(),
        r"tests/conftest\.py: missing"),
}


@pytest.mark.parametrize("mutation", MUTATIONS)
def test_static_checks_catch(mutation, release):
    entries, tree = release
    damage, expected = MUTATIONS[mutation]
    damage(tree)
    problems = check_tree(REPO_ROOT, tree, entries)
    assert any(re.search(expected, p) for p in problems), problems


def test_student_pyproject_drops_every_staff_entry_and_nothing_else():
    original = (REPO_ROOT / "pyproject.toml").read_text()
    student = tomllib.loads(student_pyproject(original))
    staff = tomllib.loads(original)
    assert student["project"]["dependencies"] == staff["project"]["dependencies"]
    assert "scripts" not in student["project"] and "dependency-groups" not in student
    assert "default-groups" not in student.get("tool", {}).get("uv", {})
    assert student["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["cs336_basics", "adapters"]
    assert student["tool"]["pytest"]["ini_options"]["testpaths"] == ["tests"]
    assert student["tool"]["pytest"]["ini_options"]["markers"] == staff["tool"]["pytest"]["ini_options"]["markers"]
    with pytest.raises(PyprojectError, match=r"\[project.scripts\]|no \[project.scripts\] table"):
        student_pyproject(original.replace('[project.scripts]\nstaff = "staff.cli:main"\n', ""))


def graded(name: str, status: str, output: str, needs_cuda: bool = False) -> GradedTest:
    return GradedTest(nodeid=f"tests/test_x.py::{name}", name=name, number="1.1", problem=1, points=2.0,
                      needs_cuda=needs_cuda, status=status, output=output)


STUB_FAILURE = "FAILED\nNotImplementedError: f is not implemented yet (see handout/01_x.md §1.1)"
GOOD_RUN = [graded("test_a", "failed", STUB_FAILURE), graded("test_gpu", "skipped", f"skipped: {NO_GPU_REASON}", True)]
GOOD_OUTPUT = ("F s\n1 failed, 1 skipped in 0.5s\npoints by problem\ntotal                              0 / 2\n"
               "(public tests only; the staff's hidden tests add 102 points when they grade)\n")


@pytest.mark.parametrize("run_tests, output, expected", [
    ([graded("test_a", "passed", ""), GOOD_RUN[1]], GOOD_OUTPUT, r"test_a: expected to fail with the stub's"),
    ([graded("test_a", "failed", "FAILED\nAssertionError: 1 != 2"), GOOD_RUN[1]], GOOD_OUTPUT, r"test_a: expected"),
    ([GOOD_RUN[0], graded("test_gpu", "failed", "FAILED\nRuntimeError: no CUDA", True)], GOOD_OUTPUT, r"test_gpu"),
    (GOOD_RUN[:1], GOOD_OUTPUT, r"test_gpu: collected in this tree but not in the release"),
    (GOOD_RUN, GOOD_OUTPUT.replace("0 / 2", "0 / 4"), r"points table does not end with 'total 0 / 2'"),
    (GOOD_RUN, GOOD_OUTPUT.replace("0 / 2", "2 / 2"), r"points table"),
    (GOOD_RUN, GOOD_OUTPUT.replace("1 skipped in", "1 skipped, 1 error in"), r"pytest reported errors"),
    (GOOD_RUN, GOOD_OUTPUT + "1 failed, 1 skipped in 0.5s\n", r"points table is not the last thing printed"),
    ([], "", r"no graded test"),
])
def test_the_public_run_of_the_release_is_judged_strictly(run_tests, output, expected):
    nodeids = {t.nodeid for t in GOOD_RUN}
    assert judge_public_run(GOOD_OUTPUT, GOOD_RUN, nodeids) == []
    problems = judge_public_run(output, run_tests, nodeids)
    assert any(re.search(expected, p) for p in problems), problems


def copy_source(dest: Path) -> Path:
    """A copy of this tree to break on purpose."""
    shutil.copytree(REPO_ROOT, dest, ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__", "*.zip"))
    return dest


@pytest.mark.parametrize("damage, expected", [
    (lambda s: replace(s / "cs336_basics" / "strides.py", f"    {END}\n", ""),
     r"cs336_basics/strides\.py:\d+: .*(never closed|runs into another function|nested)"),
    (lambda s: append(s / "cs336_basics" / "flops.py", "".join(
        f"\n\ndef {name}():\n    {BEGIN}\n    return 1\n    {END}\n" for name in ("bonus", "extra"))),
     r"cs336_basics/flops\.py:\d+: bonus has no handout section[^\n]*\n.*flops\.py:\d+: extra has no handout section"),
    (lambda s: append(s / "cs336_basics" / "flops.py", f"\n\ndef empty():\n    {BEGIN}\n\n    {END}\n"),
     r"cs336_basics/flops\.py:\d+: the solution block opened at line \d+ is empty"),
])
def test_bad_markers_and_missing_sections_stop_the_build(tmp_path, damage, expected):
    source = copy_source(tmp_path / "source")
    damage(source)
    with pytest.raises(ReleaseError, match=expected):
        write_tree(source, tmp_path / "release", plan(source))
    assert not (tmp_path / "release").exists()


def test_cli_refuses_unsafe_destinations_before_building(tmp_path, capsys):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "keep.txt").write_text("mine")
    assert main(["release", str(tmp_path / "busy")]) == 1
    assert "not empty" in capsys.readouterr().err and (tmp_path / "busy" / "keep.txt").read_text() == "mine"
    assert main(["release", str(REPO_ROOT), "--force"]) == 1
    assert "staff tree" in capsys.readouterr().err
    assert main(["release", str(REPO_ROOT / "handout" / "out")]) == 1
    assert "inside" in capsys.readouterr().err and not (REPO_ROOT / "handout" / "out").exists()


def test_cli_help_describes_the_release(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["release", "--help"])
    out = capsys.readouterr().out
    assert exit_info.value.code == 0 and "OUT" in out and "--zip" in out and "--git" in out and "--force" in out


def run_script(release: Path, *args: str, timeout: int) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH") and not k.startswith("PYTEST")}
    return subprocess.run(["bash", "make_submission.sh", *args], cwd=release, env={**env, "TEST_TIMEOUT": str(timeout)},
                          capture_output=True, text=True, timeout=timeout + 120)


@pytest.mark.timeout(1200)  # builds, installs, tests and grades a whole release: minutes on a loaded machine
@pytest.mark.slow
def test_release_end_to_end(tmp_path, capsys):
    """The full build with every self-check, then a student's round trip through the release."""
    out = tmp_path / "rel"
    assert main(["release", str(out), "--zip", "--git"]) == 0, capsys.readouterr().err
    assert "every check passed" in capsys.readouterr().out
    assert {p.name for p in out.iterdir()} == TOP_LEVEL | {".git"}
    log = subprocess.run(["git", "log", "--oneline"], cwd=out, capture_output=True, text=True, check=True).stdout
    status = subprocess.run(["git", "status", "--porcelain"], cwd=out, capture_output=True, text=True, check=True)
    assert len(log.splitlines()) == 1 and status.stdout == ""
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file() and ".git" not in p.parts)
    with zipfile.ZipFile(tmp_path / "rel.zip") as zf:
        assert sorted(name.removeprefix("rel/") for name in zf.namelist()) == files

    # A student who writes the reference solution: every public test passes, the archive grades full.
    shutil.rmtree(out / "cs336_basics")
    shutil.copytree(REPO_ROOT / "cs336_basics", out / "cs336_basics", ignore=shutil.ignore_patterns("__pycache__"))
    (out / "cs336_basics" / "notes.txt").write_text("scratch")
    append(out / "tests" / "checks.py", "\n# my own note\n")
    done = run_script(out, timeout=400)
    assert done.returncode == 0, done.stdout + done.stderr
    table = re.search(r"^total\s+(\d+) / (\d+)\s*$", done.stdout, re.MULTILINE)
    assert table and table.group(1) == table.group(2) != "0", done.stdout[-3000:]
    assert "every public test passed" in done.stdout
    assert "left out cs336_basics/notes.txt" in done.stderr and "M tests/checks.py" in done.stderr
    archive = out / "cs336-basics-submission.zip"
    with zipfile.ZipFile(archive) as zf:
        assert "cs336_basics/notes.txt" not in zf.namelist() and "cs336_basics/strides.py" in zf.namelist()
    result = grade(archive)
    assert result.score == result.max_score > 0

    # A test run that outlives its time limit is stopped, and the zip is still written.
    quick = run_script(out, "-o", "quick", timeout=1)
    assert quick.returncode == 0 and "did not finish within 1 s" in quick.stderr, quick.stderr
    assert zipfile.ZipFile(out / "quick.zip").namelist()
