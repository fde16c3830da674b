"""A grade whose worker would reach the grading user's files or processes is refused before any student
code runs (`staff.sandbox.exposure`), a GPU grade exactly where a CPU grade is (its worker's children
set Landlock too); as root a GPU grade's worker also has the checkout and the home folders hidden by a
mount namespace (`confine.hide`); `--gpu-confinement` confines a CPU grade's worker exactly so (the
red team's GPU variants grade with it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from staff.cli import main
from staff.grading.grade import REPO_ROOT, grade
from staff.redteam.ordinary import become
from staff.sandbox import confine, exposure, plugin_settings
from staff.sandbox.layout import build, hidden_from_the_worker, world_writable_folders
from staff.sandbox.leftovers import kill_user, remove_leftovers
from staff.sandbox.settings import Settings
from staff.sandbox.uids import worker_uids
from staff.tests.conftest import skip_unless_others_read_the_checkout

ROOT, TA = 0, 1000


def test_a_gpu_grade_is_refused_exactly_where_a_cpu_grade_is_saying_what_is_open_and_what_to_do():
    # Mistakes caught: a GPU grade refused for what it no longer lacks (each worker child sets Landlock,
    # a PID namespace with its own /proc), or let through where its worker would run as the TA's own uid
    # with no Landlock (a kernel without it, --no-landlock), which a CPU grade is refused for.
    for settings in (Settings(gpu=True), Settings(gpu_confinement=True), Settings()):
        assert exposure.refusal(settings, euid=TA, landlock_abi=7, no_pid=None) is None, settings
        why = exposure.refusal(settings, euid=TA, landlock_abi=0, no_pid=None)
        assert why is not None, f"{settings} as an ordinary user without Landlock was not refused"
        for said in ("your files", "no Landlock", "this kernel has no Landlock", "no mount namespace", "as root",
                     "--allow-open-grader"):
            assert said in why, f"the refusal does not say {said!r}: {why}"


def test_the_worker_as_the_graders_own_uid_without_landlock_is_refused():
    # Mistake caught: a refusal that asks only whether the grader is root, missing a root grade whose worker
    # keeps root's uid (--no-separate-user), or a CPU grade with Landlock off or missing from the kernel.
    assert exposure.refusal(Settings(gpu=True, separate_user=False), euid=ROOT, landlock_abi=0) is not None
    assert "--no-landlock" in exposure.refusal(Settings(landlock=False), euid=TA, landlock_abi=7)
    assert "no Landlock" in exposure.refusal(Settings(), euid=TA, landlock_abi=0)
    assert "no Landlock" in exposure.refusal(Settings(landlock=False, separate_user=False), euid=ROOT,
                                             landlock_abi=7)


def test_an_ordinary_users_grade_without_a_pid_namespace_is_refused_saying_why():
    # Mistake caught: a grade let through on Landlock alone where the worker, as the TA's own uid outside
    # a PID namespace, sees the TA's processes, reads their environment and signals them (a laptop whose
    # distribution restricts user namespaces, or --no-namespaces); or one refused where a uid of its own
    # or the namespace keeps them apart.
    restricted = "no user namespace: EPERM (Operation not permitted)"
    why = exposure.refusal(Settings(), euid=TA, landlock_abi=7, no_pid=restricted)
    assert why is not None and "your other processes" in why and restricted in why and "--allow-open-grader" in why
    assert "--no-namespaces" in exposure.refusal(Settings(namespaces=False), euid=TA, landlock_abi=7)
    assert exposure.refusal(Settings(allow_open_grader=True), euid=TA, landlock_abi=7, no_pid=restricted) is None
    assert exposure.refusal(Settings(), euid=ROOT, landlock_abi=7, no_free_uid=None, no_pid=restricted) is None
    assert exposure.refusal(Settings(), euid=TA, landlock_abi=7, no_pid=None) is None


def test_root_with_no_uid_free_for_the_worker_is_judged_as_the_graders_own_uid():
    # Mistake caught: a root grade let through because it asked for a separate user, where the container
    # has no uid to give (a worker then runs as root, its files open to it but for Landlock).
    no_uid = "the container maps no uid but root"
    assert exposure.refusal(Settings(gpu=True), euid=ROOT, landlock_abi=7, no_free_uid=no_uid, no_pid=None) is None
    why = exposure.refusal(Settings(), euid=ROOT, landlock_abi=0, no_free_uid=no_uid, no_pid=None)
    assert why is not None and f"no uid is free for it: {no_uid}" in why, why
    assert exposure.refusal(Settings(), euid=ROOT, landlock_abi=0, no_free_uid=None) is None


def test_a_confined_grade_and_a_knowing_one_run():
    # Mistake caught: refusing what holds (a GPU grade as root, whose worker has a uid of its own and the
    # checkout hidden; an ordinary user's CPU grade under Landlock), or ignoring --allow-open-grader.
    assert exposure.refusal(Settings(gpu=True), euid=ROOT, landlock_abi=0, no_free_uid=None) is None
    assert exposure.refusal(Settings(), euid=TA, landlock_abi=7, no_pid=None) is None
    assert exposure.refusal(Settings(gpu=True, allow_open_grader=True), euid=TA, landlock_abi=7) is None
    assert exposure.refusal(Settings(in_process=True), euid=TA, landlock_abi=0) is None  # no worker at all


def test_grade_and_staff_grade_refuse_before_anything_runs(tmp_path, capsys):
    # Mistake caught: the refusal written but not called, by grade() (the batch's and the library's way in)
    # or by `staff grade`, or called after the worker started (the scratch folder would have been made).
    open_one = Settings(landlock=False, separate_user=False) if os.geteuid() == 0 else Settings(landlock=False)
    before = set(Path("/tmp").glob("staff-grade-*"))
    with pytest.raises(exposure.OpenGrader, match="allow-open-grader"):
        grade(REPO_ROOT, open_one, progress=False)
    assert set(Path("/tmp").glob("staff-grade-*")) <= before, "a scratch folder was made before the refusal"
    argv = ["grade", "--no-landlock", *(["--no-separate-user"] if os.geteuid() == 0 else []),
            "--out", str(tmp_path / "results.json")]
    assert main(argv) == 2
    said = capsys.readouterr().err
    assert "refusing to run student code" in said and "--allow-open-grader" in said, said
    assert not (tmp_path / "results.json").exists()


def test_gpu_confinement_confines_a_cpu_grades_worker_as_a_gpu_grades(tmp_path):
    # Mistake caught: the setting not reaching the worker's config (the red team's GPU variants would grade
    # under the CPU confinement and prove nothing), the checkout or the scratch folder left off the hidden
    # list, or a CUDA preflight asked of a machine without a GPU.
    package = tmp_path / "package"
    package.mkdir()
    (package / "__init__.py").touch()
    (tmp_path / "scratch").mkdir()
    workspace = build(tmp_path / "scratch", REPO_ROOT, package, ("adapters",), False,
                      Settings(gpu_confinement=True))
    told = plugin_settings.read(workspace.settings)
    assert told.worker.cuda and told.cuda_preflight == "", told
    assert {os.path.realpath(REPO_ROOT), os.path.realpath(tmp_path / "scratch")} <= set(told.worker.hide)
    others = {entry.path for entry in os.scandir("/") if entry.is_dir(follow_symlinks=False)} - \
        {"/usr", "/etc", "/proc", "/sys", "/dev", "/run", "/tmp", "/var"}
    assert others <= set(told.worker.hide), f"left in sight: {others - set(told.worker.hide)} (another checkout " \
                                             f"there holds the reference)"
    (tmp_path / "scratch2").mkdir()
    plain = build(tmp_path / "scratch2", REPO_ROOT, package, ("adapters",), False, Settings())
    # As root every grade's worker has them hidden too (without Landlock, its own uid read the world-readable
    # checkout: red-team case read-the-checkout-beside-the-environment); else Landlock alone hides them.
    hidden = plugin_settings.read(plain.settings).worker.hide
    assert (os.path.realpath(REPO_ROOT) in hidden) == (os.geteuid() == 0), hidden


@pytest.mark.skipif(sys.platform != "linux" or os.geteuid() != 0, reason="mount namespaces need root")
def test_hidden_folders_show_only_what_is_kept_read_only_and_only_to_the_worker(tmp_path):
    # Mistakes caught: a cover that leaves the folder's other files in sight, kept paths (the Python
    # environment in the checkout) not bound back, a writable cover (a planted conftest.py in the
    # checkout's view), or mounts that leak out of the worker's namespace into the grader's.
    checkout = tmp_path / "checkout"
    (checkout / ".venv" / "lib").mkdir(parents=True)
    (checkout / ".venv" / "lib" / "torch.py").write_text("kept")
    (checkout / "tests").mkdir()
    (checkout / "tests" / "conftest.py").write_text("trusted")
    (checkout / "solution.py").write_text("secret")
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            os.close(read)
            status = confine.hide([str(checkout)], [str(checkout / ".venv")])
            seen = sorted(p.name for p in checkout.iterdir())
            kept = (checkout / ".venv" / "lib" / "torch.py").read_text()
            try:
                (checkout / "conftest.py").write_text("planted")
                written = True
            except OSError:
                written = False
            os.write(write, json.dumps([status, seen, kept, written]).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        status, seen, kept, written = json.loads(pipe.read() or '["the child died", [], "", null]')
    os.waitpid(child, 0)
    leaked = os.path.ismount(checkout)
    for path in (checkout / ".venv", checkout) if leaked else ():
        confine.libc.umount2(str(path).encode(), 2)  # MNT_DETACH: the grader's view as it was
    assert not leaked, "the cover leaked into the grader's view: mounted outside the worker's namespace"
    assert status.startswith("on"), status
    assert seen == [".venv"], f"the worker saw {seen} of the checkout; expected the kept .venv alone"
    assert kept == "kept", "the kept Python environment was not bound back"
    assert written is False, "the worker could write into the hidden checkout"
    assert not (checkout / "conftest.py").exists()


def test_folders_every_user_may_write_are_hidden_unless_the_worker_has_its_own(tmp_path):
    # Mistakes caught: /run/lock (or /tmp under --no-tmpfs) left in a GPU grade's worker's sight, where a
    # file it leaves is read back by a later grade; or the private /tmp covered read-only as well.
    shared = tmp_path / "lock"
    shared.mkdir()
    shared.chmod(0o1777)
    assert world_writable_folders((str(tmp_path),)) == [str(shared)]
    writable = set(world_writable_folders())
    with_private_tmp = set(hidden_from_the_worker(REPO_ROOT, tmp_path, private_tmp=True))
    without = set(hidden_from_the_worker(REPO_ROOT, tmp_path, private_tmp=False))
    assert writable - set(confine.SHARED_FOLDERS) <= with_private_tmp
    assert not with_private_tmp & set(confine.SHARED_FOLDERS), "the worker's private /tmp would be covered"
    assert writable <= without, f"a folder all may write is left open under --no-tmpfs: {writable - without}"


@pytest.mark.skipif(sys.platform != "linux" or os.geteuid() != 0, reason="needs root to become a throwaway uid")
def test_staff_grade_run_by_an_ordinary_user_without_landlock_is_refused(tmp_path):
    # Mistake caught: a refusal decided from anything but the real process's privileges (a test's euid
    # argument left in, a check that only root's grade reaches): a TA's own grade without Landlock would run.
    skip_unless_others_read_the_checkout()
    uid = worker_uids().pick()
    assert uid is not None, "no uid free for the stand-in TA"
    try:
        done = subprocess.run([sys.executable, "-m", "staff.cli", "grade", "--no-landlock", str(REPO_ROOT),
                               "--out", str(tmp_path / "results.json")], cwd=REPO_ROOT, capture_output=True,
                              text=True, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                                              "PYTHONDONTWRITEBYTECODE": "1"},
                              preexec_fn=become(uid, [sys.base_prefix, sys.prefix, str(REPO_ROOT)]),
                              stdin=subprocess.DEVNULL)
    finally:  # a grade that was not refused ran as that uid: nothing of it stays
        kill_user(uid)
        remove_leftovers(uid)
    assert done.returncode == 2, f"expected the grade refused (exit 2), got {done.returncode}:\n{done.stderr[-3000:]}"
    assert "refusing to run student code" in done.stderr and "the grader is not root" in done.stderr, done.stderr
    assert not (tmp_path / "results.json").exists()
