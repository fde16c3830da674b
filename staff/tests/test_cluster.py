"""A batch graded in shards: by hand (`--shard K/N` runs, then `staff gradebook`) and as a Slurm array
job on a real single-node cluster (staff/tests/slurm_cluster.py), each gradebook equal to the one a
one-machine batch writes, apart from timings; a shard killed part-way grades only what is missing
when it runs again."""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from staff import samples
from staff.course.cluster.shards import shard_of
from staff.course.folder import RESULTS
from staff.tests.slurm_cluster import LocalSlurm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
GRADE_OPTIONS = ["--no-hidden", "--test-timeout", "20"]
# Two per shard of two (shard_of(name, 2)): shard 1 grades "broken" (seconds) and then "stubs-1".
SHARDS = {"broken": 1, "stubs-1": 1, "half-done": 2, "stubs-2": 2}


def staff(*args: str, **keywords) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(samples.REPO_ROOT), **keywords.pop("env", {})}
    return subprocess.run([sys.executable, "-m", "staff.cli", *args], env=env, capture_output=True, text=True,
                          timeout=600, **keywords)


@pytest.fixture(scope="module")
def batch(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("cluster") / "submissions"
    samples.stubs(folder / "stubs-1")
    samples.stubs(folder / "stubs-2")
    samples.stubs(folder / "half-done", keep={"dtype_memory"})
    samples.replace_in(samples.reference(folder / "broken") / "flops.py", "def mfu(", "def mfu(((")
    assert {name: shard_of(name, 2) for name in SHARDS} == SHARDS
    return folder


@pytest.fixture(scope="module")
def one_machine(batch) -> Path:
    """The batch graded on one machine, two at a time: the gradebook the shards must reproduce."""
    out = batch.parent / "one-machine"
    done = staff("grade", "--batch", str(batch), "--out", str(out), "-j", "2", *GRADE_OPTIONS)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def gradebook(out: Path) -> tuple[list[dict], str, list[str]]:
    """grades.csv's rows less their wall time, summary.md, the charts' names."""
    with (out / "grades.csv").open(encoding="utf-8") as handle:
        rows = [{k: v for k, v in row.items() if k != "wall_s"} for row in csv.DictReader(handle)]
    return rows, (out / "summary.md").read_text(), sorted(p.name for p in (out / "charts").glob("*.png"))


def results_times(out: Path) -> dict[str, int]:
    return {p.parent.name: p.stat().st_mtime_ns for p in out.glob(f"*/{RESULTS}")}


def test_shards_run_by_hand_grade_only_their_share_and_the_gradebook_adds_them_up(batch, one_machine, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(one_machine, out)
    for name in ("stubs-1", "half-done"):  # one missing in each shard
        shutil.rmtree(out / name)
    theirs = out / "stubs-1" / ".results.json-x1.tmp"  # shard 1 writing, while shard 2 starts
    theirs.parent.mkdir()
    theirs.write_text("{")
    ours = out / "stubs-2" / ".results.json-x2.tmp"  # what a shard 2 killed mid-write left
    ours.write_text("{")
    kept, book = results_times(out), (out / "grades.csv").stat().st_mtime_ns
    second = staff("grade", "--batch", str(batch), "--out", str(out), "--shard", "2/2", "-j", "2", *GRADE_OPTIONS)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "shard 2/2: 2 of 4 submissions, 1 graded now, 1 already done" in second.stdout
    assert (out / "half-done" / RESULTS).is_file() and not (out / "stubs-1" / RESULTS).exists(), (
        "shard 2 of 2 must grade its missing submission (half-done) and not shard 1's (stubs-1)")
    assert theirs.exists(), "shard 2 removed a file shard 1 was writing"
    assert not ours.exists(), "shard 2 left its own half-written file"
    assert (out / "grades.csv").stat().st_mtime_ns == book, "a shard wrote the gradebook other shards share"
    first = staff("grade", "--batch", str(batch), "--out", str(out), "--shard", "1/2", "-j", "2", *GRADE_OPTIONS)
    assert first.returncode == 0, first.stderr[-3000:]
    assert {k: v for k, v in results_times(out).items() if k in kept} == kept, "a shard graded a finished one again"
    done = staff("gradebook", str(out), "--batch", str(batch))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "4 of 4 submissions graded" in done.stdout
    assert gradebook(out) == gradebook(one_machine)


@pytest.fixture(scope="module")
def slurm():
    """A single-node Slurm on this machine for the module's tests; every daemon stopped at the end."""
    why = LocalSlurm.missing()
    if why:
        pytest.skip(why)
    cluster = LocalSlurm()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def test_an_array_job_on_slurm_grades_the_batch_and_a_killed_shard_resumes(batch, one_machine, slurm, tmp_path):
    out = tmp_path / "out"
    command = [sys.executable, "-m", "staff.cli", "grade", "--batch", str(batch), "--out", str(out), "--slurm",
               "--shards", "2", "-j", "1", "--poll", "0.5", *GRADE_OPTIONS]
    env = {**slurm.env, "PYTHONPATH": str(samples.REPO_ROOT)}
    first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not (out / "broken" / RESULTS).is_file() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert (out / "broken" / RESULTS).is_file(), f"shard 1 graded nothing:\n{first.communicate()[1][-3000:]}"
    tasks = subprocess.run(["squeue", "--noheader", "--array", "--name", "staff-grade", "--format", "%i"],
                           env=slurm.env, capture_output=True, text=True, check=True).stdout.split()
    shard_1 = next(task for task in tasks if task.endswith("_1"))
    subprocess.run(["scancel", shard_1], env=slurm.env, check=True)  # mid-way through stubs-1; shard 2 goes on
    stdout, stderr = first.communicate(timeout=300)
    assert first.returncode == 1, stderr[-3000:]
    assert not (out / "stubs-1" / RESULTS).exists(), "shard 1 finished before it was cancelled: nothing to resume"
    assert re.search(r"task 1 failed \((killed|exit status \d+)", stderr) and "the last lines of" in stderr, (
        stderr[-3000:])
    assert "3 of 4 submissions graded" in stdout
    kept = results_times(out)
    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "1 of 2 shards (1)" in again.stderr, f"only the killed shard should be submitted again:\n{again.stderr}"
    assert {k: v for k, v in results_times(out).items() if k in kept} == kept, "a finished submission was regraded"
    assert "4 of 4 submissions graded" in again.stdout
    assert gradebook(out) == gradebook(one_machine)
    script = (out / "slurm" / "grade-cpu.sbatch").read_text()
    assert "#SBATCH --array=1-2" in script and '--shard "$SLURM_ARRAY_TASK_ID/2"' in script
