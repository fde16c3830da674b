"""Shards of a batch and the Slurm array job's script and watch, without grading anything: which
submissions a shard holds, the script `--dry-run` prints, and how a task's end is read."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter

import pytest

from staff.cli import main
from staff.course.cluster.script import ScriptError, sbatch_lines
from staff.course.cluster.shards import ShardError, in_shard, parse_shard, shard_of
from staff.course.cluster.watch import ArrayWatch, array_list

NAMES = [f"submission_{n}" for n in range(1000, 1400)]


def test_shards_are_disjoint_and_together_hold_every_submission():
    shares = [in_shard(NAMES, k, 4, key=str) for k in range(1, 5)]
    assert sorted(sum(shares, [])) == sorted(NAMES), "each submission must be in exactly one shard"
    sizes = Counter(shard_of(name, 4) for name in NAMES)
    assert set(sizes) == {1, 2, 3, 4} and min(sizes.values()) >= 60, f"400 names over 4 shards: {sizes}"


def test_a_late_submission_moves_no_other_between_shards():
    late = sorted(NAMES + ["late-upload", "submission_0999", "a-first-name"])
    for k in range(1, 9):
        before, after = in_shard(NAMES, k, 8, key=str), in_shard(late, k, 8, key=str)
        assert [name for name in after if name in NAMES] == before, (
            f"adding submissions to DIR moved others in or out of shard {k} of 8: a shard that ran before would "
            f"miss them, and one running beside it could grade the same submission")


def test_every_process_puts_a_submission_in_the_same_shard():
    # Python's own hash() of a str differs from process to process: each task would grade another share.
    code = ("from staff.course.cluster.shards import shard_of; "
            "print([shard_of(f'submission_{n}', 5) for n in range(50)])")
    found = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert found == {f"{[shard_of(f'submission_{n}', 5) for n in range(50)]}\n"}


@pytest.mark.parametrize("text, expected", [("1/1", (1, 1)), ("3/8", (3, 8)), (" 2/2 ", (2, 2))])
def test_shard_values(text, expected):
    assert parse_shard(text) == expected


@pytest.mark.parametrize("text, says", [("0/4", "between 1 and N"), ("5/4", "between 1 and N"),
                                        ("1/0", "at least 1"), ("2", "expected K/N"), ("a/b", "expected K/N")])
def test_bad_shard_values_are_refused_with_the_form_expected(text, says):
    with pytest.raises(ShardError, match=says):
        parse_shard(text)


def test_array_ranges():
    assert array_list([5, 1, 2, 3]) == "1-3,5"
    assert array_list([2]) == "2" and array_list([1, 3, 4, 6, 7, 8]) == "1,3-4,6-8"


def test_extra_sbatch_options_are_grouped_and_staffs_own_refused():
    assert sbatch_lines(["--time", "2:00:00", "--qos=long", "-c", "8"]) == [["--time", "2:00:00"], ["--qos=long"],
                                                                              ["-c", "8"]]
    for own in (["--array=1-3"], ["-a", "1"], ["--output", "x.log"], ["-ox.log"]):
        with pytest.raises(ScriptError, match="staff sets"):
            sbatch_lines(own)
    with pytest.raises(ScriptError, match="not an sbatch option"):
        sbatch_lines(["2:00:00"])


def test_dry_run_prints_a_script_bash_accepts_and_submits_nothing(tmp_path, capsys):
    for name in ("alice", "bob", "carol"):
        (tmp_path / "dir" / name / "cs336_basics").mkdir(parents=True)
    out = tmp_path / "out"
    code = main(["grade", "--batch", str(tmp_path / "dir"), "--out", str(out), "--slurm", "--dry-run", "--gpu",
                 "--shards", "2", "--partition", "gpu-long", "--no-hidden", "--test-timeout", "20", "--",
                 "--time", "2:00:00", "--mem=32G"])
    script = capsys.readouterr().out
    assert code == 0 and not out.exists(), "--dry-run wrote or submitted something"
    lines = script.splitlines()
    for line in ("#SBATCH --array=1-2", f"#SBATCH --output={out}/slurm/%A_%a.log", "#SBATCH --partition=gpu-long",
                 "#SBATCH --gres=gpu:1", "#SBATCH --time 2:00:00", "#SBATCH --mem=32G"):
        assert line in lines, f"the script lacks {line!r}:\n{script}"
    assert not [line for line in lines if line.startswith("#SBATCH --mem=16G")], "--mem=32G must replace staff's"
    assert '--shard "$SLURM_ARRAY_TASK_ID/2" -j 1' in script and "--no-hidden --gpu --test-timeout 20" in script
    assert lines[0] == "#!/bin/bash" and lines.index("set -u") > max(i for i, x in enumerate(lines) if "#SBATCH" in x)
    checked = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


def test_a_task_on_a_node_without_the_interpreter_says_so_and_grades_nothing(tmp_path):
    # The tasks run the environment's interpreter, often a link to one outside the shared folders (uv's,
    # the system's). Mistake caught: a task that runs on where its node lacks it, failing every call as
    # "could not be loaded" or dying with a bare "No such file", its exit file saying nothing.
    from pathlib import Path

    from staff.course.cluster.script import INTERPRETER_MISSING, ArrayJob, array_script

    job = ArrayJob(tmp_path / "batch", tmp_path / "out", 2, Path.cwd(), str(tmp_path / "gone" / "python"))
    done = subprocess.run(["bash", "-c", array_script(job)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_JOB_ID": "7"})
    assert done.returncode == INTERPRETER_MISSING, done.stderr
    assert "cannot run" in done.stderr and str(tmp_path / "gone" / "python") in done.stderr
    assert (tmp_path / "out" / "slurm" / "exit" / "7_1").read_text().strip() == str(INTERPRETER_MISSING)
    assert not (tmp_path / "out" / "grades.csv").exists()


def test_options_that_need_slurm_or_a_batch_are_refused(tmp_path, capsys):
    (tmp_path / "dir").mkdir()
    assert main(["grade", "--batch", str(tmp_path / "dir"), "--shards", "2"]) == 2
    assert "go with --slurm only" in capsys.readouterr().err
    assert main(["grade", "--slurm"]) == 2 and "give --batch DIR" in capsys.readouterr().err
    assert main(["grade", "--batch", str(tmp_path / "dir"), "--slurm", "--shard", "1/2"]) == 2
    assert "not both" in capsys.readouterr().err


def test_a_task_is_done_failed_or_killed_by_its_exit_file(tmp_path):
    watch = ArrayWatch("41", [1, 2, 3, 4], tmp_path)
    (tmp_path / "slurm" / "exit").mkdir(parents=True)
    (tmp_path / "slurm" / "exit" / "41_1").write_text("0\n")
    (tmp_path / "slurm" / "exit" / "41_2").write_text("1\n")
    (tmp_path / "slurm" / "41_2.log").write_text("".join(f"line {n}\n" for n in range(30)) + "BatchError: boom\n")
    assert watch.look({3: "PENDING", 4: "RUNNING"}) == [2] and watch.done == {1}
    assert watch.counts({3: "PENDING", 4: "RUNNING"}) == {"done": 1, "running": 1, "pending": 1, "failed": 1}
    report = watch.report(2)
    assert "exit status 1" in report[0] and report[1:] == [f"  | line {n}" for n in range(19, 30)] + [
        "  | BatchError: boom"], "a failure shows the log's last 12 lines"
    assert watch.look({}) == [] and not watch.ended, "a task gone at one look may still be writing its exit file"
    (tmp_path / "slurm" / "exit" / "41_3").write_text("0\n")
    assert watch.look({}) == [4] and watch.ended and watch.done == {1, 3}
    assert "killed" in watch.failed[4] and "sacct -j 41_4" in watch.failed[4]
