"""A grade's settings, declared once (staff/sandbox/settings.py): the command line, the sandbox, the
bundle and the Gradescope autograder all take them from there."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from staff import autograder
from staff.cli import _add_grade, _sandbox_options
from staff.sandbox.layout import SandboxOptions
from staff.sandbox.settings import Settings, available_cpus, default, from_arguments


def parsed(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    _add_grade(parser.add_subparsers())
    return parser.parse_args(["grade", *argv])


def test_the_command_line_takes_its_defaults_and_options_from_the_settings():
    # Mistake this catches: an option whose default is declared again in the CLI and drifts from the sandbox's.
    assert from_arguments(parsed()) == Settings()
    assert from_arguments(parsed("--timeout", "30", "--threads", "3", "--hidden-visibility", "visible")) == \
        Settings(run_timeout_s=30, threads=3, hidden_visibility="visible")
    options = _sandbox_options(parsed("--test-timeout", "7", "--disk-gib", "1"))
    assert (options.test_budget_s, options.limits.disk_bytes) == (7, 1 << 30)
    assert options.limits.memory_bytes == default("memory_gib") * 2**30 == SandboxOptions().limits.memory_bytes


@pytest.mark.parametrize("argv", [("--threads", "-1"), ("--timeout", "-5"), ("--memory-gib", "x")])
def test_a_bad_setting_is_an_argument_error_not_a_traceback(argv, capsys):
    with pytest.raises(SystemExit) as stopped:
        parsed(*argv)
    assert stopped.value.code == 2 and f"argument {argv[0]}" in capsys.readouterr().err


def test_torch_threads_follow_the_cpus_a_grade_may_use():
    # Mistake this catches: os.cpu_count() threads in a container of half a CPU (the host's cores, oversubscribed).
    assert Settings().torch_threads(jobs=1, cpus=0.5) == 1
    assert Settings().torch_threads(jobs=2, cpus=4) == 2
    assert Settings(threads=3).torch_threads(jobs=2, cpus=0.5) == 3


@pytest.mark.parametrize("files, expected", [
    ({"cgroup": "0::/box\n", "fs/box/cgroup.controllers": "cpu memory\n", "fs/box/cpu.max": "50000 100000\n"}, 0.5),
    ({"cgroup": "0::/box\n", "fs/box/cgroup.controllers": "cpu memory\n", "fs/box/cpu.max": "max 100000\n"}, 8),
    ({"cgroup": "3:cpu,cpuacct:/box\n", "fs/cpu/box/cpu.cfs_quota_us": "150000\n",
      "fs/cpu/box/cpu.cfs_period_us": "100000\n"}, 1.5),
    ({"cgroup": "3:cpu,cpuacct:/box\n", "fs/cpu/box/cpu.cfs_quota_us": "-1\n",
      "fs/cpu/box/cpu.cfs_period_us": "100000\n"}, 8),
    ({"cgroup": "0::/\n"}, 8),
])
def test_the_cpu_quota_is_read_from_cgroup_v1_and_v2(tmp_path, files, expected):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert available_cpus(tmp_path / "cgroup", tmp_path / "fs", cores=8) == expected


def test_settings_files_round_trip_and_bad_ones_are_refused(tmp_path):
    path = tmp_path / "settings.json"
    chosen = Settings(run_timeout_s=540, hidden_visibility="visible")
    path.write_text(chosen.to_json())
    assert Settings.load(path) == chosen
    path.write_text('{"run_timeout": 5}')
    with pytest.raises(ValueError, match="run_timeout"):
        Settings.load(path)
    path.write_text('{"run_timeout_s": -5}')
    with pytest.raises(ValueError, match="at least 0"):
        Settings.load(path)


def test_the_autograder_grades_with_the_bundles_settings(tmp_path, monkeypatch):
    # Mistake this catches: the autograder ignoring the file `staff bundle` wrote (its deadline and visibility).
    seen = {}
    monkeypatch.setattr("staff.grade.grade", lambda submission, **kwargs: seen.update(kwargs) or 1 / 0)
    settings = tmp_path / "settings.json"
    settings.write_text(Settings(run_timeout_s=123, hidden_visibility="visible", test_timeout_s=9).to_json())
    (tmp_path / "submission").mkdir()
    assert autograder.main(["--root", str(tmp_path), "--settings", str(settings)]) == 1  # 1/0: the grader "failed"
    assert (seen["timeout_s"], seen["hidden_visibility"], seen["sandbox"].test_budget_s) == (123, "visible", 9)
    seen.clear()
    assert autograder.main(["--root", str(tmp_path), "--settings", str(tmp_path / "none.json")]) == 1
    assert seen["timeout_s"] == autograder.DEADLINE_S


def test_grade_leaves_its_callers_options_as_they_were(tmp_path):
    # Mistake this catches: grade() writing the per-test budget into options a batch shares between grades.
    from staff.grade import grade

    options = SandboxOptions(test_budget_s=50)
    (tmp_path / "empty").mkdir()
    grade(tmp_path / "empty", sandbox=options, test_timeout_s=5, progress=False)
    assert options.test_budget_s == 50


def test_the_bundle_writes_its_settings_as_a_file(autograder_root: Path):
    written = Settings.load(autograder_root / "source" / "staff" / "settings.json")
    assert written == Settings(run_timeout_s=autograder.DEADLINE_S)
    assert not re.search(r"@[A-Z_]+@", (autograder_root / "source" / "run_autograder").read_text())  # no placeholders
