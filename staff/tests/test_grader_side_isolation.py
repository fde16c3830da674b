"""The grader's side of the sandbox: a failure's traceback shown scrubbed, each grade's code folder its
worker's alone, no process of a worker left after its grade however the run ended, and scratch
folders removed by the one clean-up that cannot be stopped. Each test names the mistake it catches."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from staff.course.batch import grade_one
from staff.course.folder import Submission
from staff.tests.documents import strings
from staff.tests.processes import LEAVE_A_DAEMON

# C0 but tab and newline, DEL, C1 (U+009B CSI, U+009D OSC) and bidi controls: none may be shown.
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
NASTY = "\x1b[2J\x9b31m\x9d0;title\x07\u202egpj.exe\u2066"


def test_a_grader_failures_traceback_in_results_json_is_scrubbed(tmp_path):
    # Mistake: failure_results taking its message (the traceback, which quotes the exception's text)
    # as it is: results.json's output and extra_data.grader_failure carried U+009B and U+202E raw.
    submission = Submission(key="ada", path=tmp_path, student_id="1", name="Ada", email="a@b.c")

    def grader(path: Path):
        raise RuntimeError(f"the grader broke on {NASTY}")

    grade_one(submission, tmp_path / "out", grader)
    document = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert "the grader broke on" in document["output"] and "Traceback" in document["output"]
    shown = [text for text in strings(document) if CONTROLS.search(text)]
    assert not shown, f"control characters in a failure's results.json: {shown[:2]!r}"


DEEP_TREE_AT_IMPORT = '''
import os as _os
_here = _os.open(".", _os.O_RDONLY | _os.O_DIRECTORY)
for _ in range(1_200):  # deeper than shutil.rmtree's recursion goes
    _os.mkdir("d", dir_fd=_here)
    _below = _os.open("d", _os.O_RDONLY | _os.O_DIRECTORY, dir_fd=_here)
    _os.close(_here)
    _here = _below
_os.close(_here)
'''


def test_gpu_reports_scratch_goes_whatever_the_submission_left_in_it(tmp_path, monkeypatch):
    # Mistake: tempfile.TemporaryDirectory (shutil.rmtree) for the report's scratch folder, the
    # submission's working directory: a tree 1,200 folders deep made at import raised RecursionError
    # out of the report and left the folder on disk.
    from staff import samples
    from staff.gpu.report import run_report
    from staff.sandbox.removal import remove_tree

    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(temporary))
    package = samples.reference(tmp_path / "submission")
    (package / "flops.py").write_text((package / "flops.py").read_text() + DEEP_TREE_AT_IMPORT)
    try:
        report, files = run_report(tmp_path / "submission", "cpu", [64], ["float32"], 1, 1, tmp_path / "out",
                                   samples.REPO_ROOT)
        assert report["rows"] and all(path.exists() for path in files)
        assert list(temporary.iterdir()) == [], "the report's scratch folder outlived it"
    finally:
        remove_tree(temporary)  # what a wrong clean-up left would break pytest's own (shutil.rmtree)


# -- no process of a run outlives it --------------------------------------------------------------

def _keep(name: str, how: str):
    import subprocess
    import sys

    from staff.grading.suite_run import KEEPER

    return subprocess.Popen([sys.executable, "-I", str(KEEPER), sys.executable, "-c",
                             LEAVE_A_DAEMON.format(name=name), how], start_new_session=True)


def test_the_keeper_ends_every_process_of_a_run_however_it_ended():
    # Mistake: a keeper that is no subreaper (or none at all: the grader then killed only the test
    # process's group and nothing else): the setsid daemon is reparented to init and outlives the run.
    import signal
    import time

    from staff.grading.suite_run import end_run
    from staff.tests.processes import running_commands

    ended = _keep("redteam-keeper-exits", "exit")
    assert ended.wait(60) == 7  # the run's own exit code comes back through the keeper
    killed = _keep("redteam-keeper-killed", "sleep")
    time.sleep(3)
    assert any(c.startswith("redteam-keeper-killed") for c in running_commands())  # the daemon was running
    end_run(killed)  # the grader at the run's time limit
    assert killed.returncode == -signal.SIGKILL
    left = [c for c in running_commands() if c.startswith(("redteam-keeper-exits", "redteam-keeper-killed"))]
    assert not left, f"processes outlived their run: {left}"


# -- each grade's code folder is its worker's alone -------------------------------------------------


def _reads_as(uid: int, path: Path) -> bool:
    """Whether a process of `uid` (and gid `uid`, no other group) can read the file `path`."""
    import os

    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            path.read_bytes()
            os._exit(0)
        except BaseException:  # noqa: BLE001
            os._exit(1)
    return os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]) == 0


def test_a_grades_code_folder_is_readable_by_its_own_worker_alone(tmp_path):
    # Mistake: the code folder opened to every user (folders 0755, files 0644): another
    # grade's worker, whose Landlock is off, reads the submission's modules by the path that
    # /proc/*/cmdline shows (copy-a-neighbours-code in the red team).
    import os
    import stat

    import pytest

    from staff import samples
    from staff.grading.grade import SUITE_PARTS
    from staff.sandbox.layout import build
    from staff.sandbox.removal import scratch_folder
    from staff.sandbox.settings import Settings

    if os.geteuid() != 0:
        pytest.skip("a worker user of its own exists only where the grader is root")
    package = samples.reference(tmp_path / "submission")
    with scratch_folder("staff-test-") as scratch:  # in /tmp, as a grade's: every user may pass through
        workspace = build(scratch, samples.REPO_ROOT, package, SUITE_PARTS, False, Settings())
        assert workspace.uid is not None
        for folder, _, files in os.walk(workspace.code):
            for path in (folder, *(os.path.join(folder, name) for name in files)):
                info = os.lstat(path)
                assert info.st_mode & 0o007 == 0 and info.st_mode & 0o022 == 0, f"{path}: {stat.filemode(info.st_mode)}"
                assert (info.st_uid, info.st_gid) == (0, workspace.uid), path
        module = workspace.code / "cs336_basics" / "strides.py"
        assert _reads_as(workspace.uid, module), "the grade's own worker cannot read its code"
        assert not _reads_as(workspace.uid + 1, module), "another grade's worker reads this grade's code"


@pytest.mark.slow
def test_the_grade_is_delivered_before_its_scratch_folder_is_removed(tmp_path, monkeypatch):
    # Mistake: results.json written only once grade() has returned, after the clean-up: a clean-up
    # that takes long (or a grader killed during it) delays or loses a grade that was already made.
    from staff.grading.grade import grade
    from staff.sandbox.settings import Settings

    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(temporary))
    (tmp_path / "empty").mkdir()  # no package: the grade is made without running anything
    seen = []
    made = grade(tmp_path / "empty", Settings(hidden=False), progress=False,
                 on_graded=lambda result: seen.append((result, [p.name for p in temporary.iterdir()])))
    assert len(seen) == 1 and seen[0][0] is made
    assert any(name.startswith("staff-grade-") for name in seen[0][1]), "delivered after the clean-up"
    assert not any(p.name.startswith("staff-grade-") for p in temporary.iterdir())


def test_what_the_clean_up_could_not_remove_is_named_without_control_characters(monkeypatch, capsys):
    # Mistake: the warning printing the names the submission chose as they are: a folder named
    # "\x1b]0;...\x07" or "\u202e..." drove the TA's terminal.
    from staff.sandbox.removal import scratch_folder

    monkeypatch.setattr("staff.sandbox.removal.remove_tree", lambda path: [f"{path}/{NASTY}: Permission denied"])
    with scratch_folder("staff-test-") as kept:
        pass
    said = capsys.readouterr().err
    kept.rmdir()
    assert "not removed whole" in said and "Permission denied" in said
    assert not CONTROLS.search(said.replace("\n", "")), f"control characters on the console: {said!r}"


def test_a_checkpoint_folder_made_a_link_is_not_listed_by_the_tests(tmp_path):
    # Mistake caught: tests/test_11_train.py's saved_files following a checkpoint_dir that the student's
    # code made a link (to /root, as a grader running as root would list it) and showing the names in a
    # failure message.
    from tests.test_11_train import saved_files

    secret = tmp_path / "home"
    secret.mkdir()
    (secret / ".bashrc").write_text("")
    (tmp_path / "checkpoints").symlink_to(secret)
    shown = saved_files(tmp_path / "checkpoints")
    assert ".bashrc" not in str(shown) and "is a link" in str(shown), shown
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "step_000004.pt").write_bytes(b"")
    assert saved_files(tmp_path / "real") == ["step_000004.pt"]


def test_a_checkpoint_folder_swapped_for_a_link_while_it_is_listed_is_not_listed():
    # Mistake caught: a look whether the folder is a link, then a listing by its path: code still running
    # in the worker (a thread the call left) swaps the folder for a link between the two, and the names
    # wherever it points reach the failure message. Tried: that form showed the names within this loop.
    import tempfile
    import threading

    from tests.test_11_train import saved_files

    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        secret, folder, aside = root / "home", root / "checkpoints", root / "aside"
        secret.mkdir()
        (secret / ".bashrc").write_text("")
        folder.mkdir()
        stop = threading.Event()

        def swap() -> None:
            while not stop.is_set():
                os.rename(folder, aside)
                os.symlink(secret, folder)
                os.unlink(folder)
                os.rename(aside, folder)

        swapper = threading.Thread(target=swap)
        swapper.start()
        try:
            shown = [str(saved_files(folder)) for _ in range(20000)]
        finally:
            stop.set()
            swapper.join()
    assert not any(".bashrc" in text for text in shown), "a name of the folder the link points to was listed"
    assert any(text == "[]" for text in shown), "the folder itself was never listed (nothing was tried)"
