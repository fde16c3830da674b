"""A batch's CPU workers forked from its worker template (staff/sandbox/warm.py, warm_template.py): the
launcher confines itself as a fresh one does, its keeper ends everything below it when the grader is
done, and a worker the template cannot fork as asked starts afresh."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from staff import samples
from staff.grading import warm_start
from staff.grading.grade import REPO_ROOT
from staff.grading.suite_run import child_env, warm_test_processes
from staff.sandbox.layout import build
from staff.sandbox.settings import Settings

# Each test starts a batch's two templates and confined workers (about 40 s in all): not the quick tier's.
pytestmark = pytest.mark.slow

# A test process's use of the worker: started, a child forked to serve, asked what it holds, closed; then
# which of its processes are still alive. It prints what it saw as JSON.
USE = """
import dataclasses, json, sys
from pathlib import Path
from staff.sandbox import plugin_settings
from staff.sandbox.plugin import Sandbox
from staff.sandbox.process_tree import children, descendants
from staff.sandbox.warm import WarmRun

read = plugin_settings.read(Path(sys.argv[1]))
read = dataclasses.replace(read, worker=dataclasses.replace(read.worker, threads=int(sys.argv[2])))
sandbox = Sandbox(read)  # as the sandbox plugin makes it (as root, a tmpfs on each folder: the disk quota)
worker = sandbox.worker
try:
    worker.ensure_ready()
    worker.fresh_child()
    launcher = worker.process.pid if not isinstance(worker.process, WarmRun) else children(worker.process.pid)[0]
    with open(f"/proc/{children(launcher)[0]}/mountinfo") as handle:  # the zygote's
        mounted = sorted((fields[4], line.split(" - ")[1].split()[0]) for line in handle
                         if (fields := line.split())[4] in (read.worker.folder, read.worker.shared))
    if sys.argv[3:] == ["die"]:  # the grader killed with its zygote stopped: only the keeper's watch is left
        import os, signal
        os.kill(children(launcher)[0], signal.SIGSTOP)
        print(json.dumps({"below": [worker.process.pid, *descendants(worker.process.pid)]}), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    seen = {"forked": isinstance(worker.process, WarmRun), "protections": worker.protections,
            "held": worker.held_past_limits(), "below": [worker.process.pid, *descendants(worker.process.pid)],
            "mounted": mounted}
finally:
    worker.close()

def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False

seen["left"] = [pid for pid in seen["below"] if alive(pid)]
print(json.dumps(seen))
"""


def _settings(tmp_path: Path) -> Path:
    package = samples.reference(tmp_path / "submission")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    return build(scratch, REPO_ROOT, package, ("adapters",), False, Settings(threads=1)).settings


def _env() -> dict[str, str]:
    return {**child_env(REPO_ROOT), "STAFF_GRADER_PID": str(os.getpid())}


def _used(run, log: Path, code: int = 0) -> dict:
    assert run is not None, "the test template did not fork the run"
    ended = run.wait(300)
    said = log.read_text()
    assert ended == code, said[-3000:]
    return json.loads(said.strip().splitlines()[-1])


def _fresh(settings: Path, threads: int) -> dict:
    done = subprocess.run([sys.executable, "-c", USE, str(settings), str(threads)], env=_env(), cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_forked_worker_is_confined_as_a_fresh_one_and_ends_whole(tmp_path):
    # Mistakes caught: the launcher started afresh in a batch (each grade pays torch's import again: the
    # template unused), forked but confined otherwise than a fresh one (a protection that reads differently
    # in its hello: the forked state skipped a step), and the launcher, the zygote or a child left running
    # once the grader closed the worker (its keeper not told: it is not the grader's child).
    settings = _settings(tmp_path)
    fresh = _fresh(settings, 1)
    assert not fresh["forked"] and fresh["held"] is None and fresh["left"] == []
    with warm_test_processes(), (tmp_path / "log").open("w") as log:
        forked = _used(warm_start.start(["-c", USE, str(settings), "1"], REPO_ROOT, _env(), log.fileno()),
                       tmp_path / "log")
    assert forked["forked"], "the launcher was not forked from the worker template"
    assert forked["protections"] == fresh["protections"], f"fresh: {fresh['protections']}\nforked: {forked}"
    # As root, the test process's own mounts (the disk quota's tmpfs on the worker's folders) are the worker's:
    # a forked launcher outside them wrote past the quota and never saw the files the tests wrote for it.
    assert forked["mounted"] == fresh["mounted"], f"the zygote's mounts on its folders: {fresh} and {forked}"
    assert os.geteuid() != 0 or [kind for _, kind in fresh["mounted"]].count("tmpfs") >= 2, fresh
    assert forked["held"] is None
    assert len(forked["below"]) >= 4, f"expected a keeper, the launcher, the zygote and a child: {forked['below']}"
    assert forked["left"] == [], f"still running after the worker was closed: {forked['left']}"


def test_a_worker_whose_threads_differ_from_the_templates_starts_afresh(tmp_path):
    # Mistake caught: forking a worker whose thread variables differ from those the template's torch and
    # numpy read as they loaded (its first worker's): its libraries would run with other thread counts.
    settings = _settings(tmp_path)
    with warm_test_processes():
        seen = []
        for threads in (1, 2, 1):
            with (tmp_path / "log").open("w") as log:
                run = warm_start.start(["-c", USE, str(settings), str(threads)], REPO_ROOT, _env(), log.fileno())
                seen.append(_used(run, tmp_path / "log")["forked"])
    assert seen == [True, False, True], f"forked from the template, for 1, 2 and 1 thread: {seen}"


def test_a_forked_worker_ends_with_its_grader_even_with_its_zygote_stopped(tmp_path):
    # Mistake caught: a keeper that waits for its launcher only (it is the template's child, so the grader's
    # death reaches it only through the watch): a grader killed while student code had stopped the zygote
    # (the red team's zygote-stopped-while-page-tables-grow) left the worker running until the batch ended.
    settings = _settings(tmp_path)
    with warm_test_processes(), (tmp_path / "log").open("w") as log:
        run = warm_start.start(["-c", USE, str(settings), "1", "die"], REPO_ROOT, _env(), log.fileno())
        below = _used(run, tmp_path / "log", code=-signal.SIGKILL)["below"]
        deadline = time.monotonic() + 60
        while [pid for pid in below if _alive(pid)] and time.monotonic() < deadline:
            time.sleep(0.2)
        left = [pid for pid in below if _alive(pid)]  # before the block ends the templates, and all below them
    assert len(below) >= 4, below
    assert not left, "the worker outlived its grader"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
