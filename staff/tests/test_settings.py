"""A grade's settings, declared once (staff/sandbox/settings.py): the command line, grade(), the
sandbox's worker and plugin, the Slurm tasks, the bundle and the Gradescope autograder all take
them from there, each setting under one name."""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import fields
from pathlib import Path

import pytest

from staff.cli import main
from staff.commands.grade import register as add_grade_command
from staff.commands.settings_options import SettingError, from_arguments
from staff.course.cluster.slurm import SlurmBatch, task_options
from staff.gradescope import autograder
from staff.grading.grade import REPO_ROOT
from staff.sandbox import plugin_settings
from staff.sandbox.layout import build
from staff.sandbox.protections import Protections
from staff.sandbox.settings import MEMORY_GIB, Settings, available_cpus, to_arguments
from tests.problems import PROBLEMS

# Every setting away from its default: what a TA may give on the command line.
CHOSEN = Settings(run_timeout_s=30, test_timeout_s=7, import_timeout_s=3, startup_timeout_s=11, memory_gib=6,
                  disk_gib=1, threads=3, hidden_visibility="visible", problems={2, 1}, hidden=False, gpu=True,
                  in_process=True, separate_user=False, namespaces=False, landlock=False, seccomp=False, tmpfs=False,
                  gpu_confinement=True, allow_open_grader=True, property_examples=5)


def parsed(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_grade_command(parser.add_subparsers())
    return parser.parse_args(["grade", *argv])


def test_every_setting_has_an_option_and_reaches_a_slurm_task_whole():
    # Mistakes this catches: a setting with no option, or one the options do not read back; a Slurm task's
    # `staff grade` given fewer settings than the one that submitted it (a switch forwarded under an old name).
    assert all(getattr(CHOSEN, spec.name) != spec.default for spec in fields(Settings)), "CHOSEN misses a setting"
    assert from_arguments(parsed()) == Settings()
    given = parsed(*to_arguments(CHOSEN))
    assert from_arguments(given) == CHOSEN
    assert from_arguments(parsed(*task_options(SlurmBatch(Path("dir"), Path("out"), from_arguments(given))))) == CHOSEN
    assert from_arguments(parsed("--timeout", "30", "--threads", "3", "--hidden-visibility", "visible")) == \
        Settings(run_timeout_s=30, threads=3, hidden_visibility="visible")


def test_every_setting_of_the_sandbox_reaches_the_plugin_as_given(tmp_path):
    # Mistakes this catches: the layout writing a setting of its own (the worker's start-up limit fixed at
    # 300 s, the import limit at its default) instead of the one given; a protection switched off on the
    # command line but not in the worker's configuration.
    package = tmp_path / "package"
    package.mkdir()
    (package / "__init__.py").touch()
    (tmp_path / "scratch").mkdir()
    settings = from_arguments(parsed(*to_arguments(CHOSEN)))
    workspace = build(tmp_path / "scratch", REPO_ROOT, package, ("adapters",), False, settings, jobs=2)
    told = plugin_settings.read(workspace.settings)
    assert (told.test_timeout_s, told.import_timeout_s, told.startup_timeout_s, told.jobs) == (7, 3, 11, 2)
    worker = told.worker
    assert (worker.limits.memory_bytes, worker.limits.disk_bytes, worker.threads) == (6 << 30, 1 << 30, 3)
    assert worker.protections == Protections(namespaces=False, landlock=False, seccomp=False, tmpfs=False)
    assert worker.cuda
    assert told.modules == ["cs336_basics"]


def test_the_memory_limit_defaults_by_the_part_graded():
    assert Settings().memory_bytes() == MEMORY_GIB * 2**30 and Settings(gpu=True).memory_bytes() is None
    assert Settings(gpu=True, memory_gib=4).memory_bytes() == 4 << 30 and Settings(memory_gib=0).memory_bytes() is None


def _slow_to_import(folder: Path) -> Path:
    (folder / "cs336_basics").mkdir(parents=True)
    (folder / "cs336_basics" / "__init__.py").write_text("import time\ntime.sleep(20)\n")
    return folder


@pytest.mark.parametrize("mode", [pytest.param(["--in-process"], id="in-process"),
                                  pytest.param([], id="sandboxed", marks=pytest.mark.slow)])  # 40 s on 2 busy cores
def test_the_import_limit_given_on_the_command_line_holds_in_either_mode(tmp_path, mode):
    # Mistake this catches: `--in-process` importing the package under its own fixed limit (120 s), not
    # --import-timeout's (or the sandbox plugin given the default instead of the option).
    out = tmp_path / "results.json"
    argv = ["grade", str(_slow_to_import(tmp_path / "upload")), "--out", str(out), "--no-hidden", "--problems",
            str(min(PROBLEMS)), "--import-timeout", "2", "--threads", "1", *mode]
    assert main(argv) == 0
    output = json.loads(out.read_text())["output"]
    assert "longer than 2 s" in output and "could not be loaded" in output, output[:500]


def test_the_plugin_refuses_a_settings_file_it_does_not_understand(tmp_path):
    # Mistakes this catches: an unknown key (a setting written under another name) or a missing one read
    # as a default without a word; a value of the wrong type carried into the worker.
    package = tmp_path / "package"
    package.mkdir()
    (tmp_path / "scratch").mkdir()
    path = build(tmp_path / "scratch", REPO_ROOT, package, ("adapters",), False, Settings()).settings
    written = json.loads(path.read_text())
    assert plugin_settings.read(path) == plugin_settings.read(path)  # it reads its own file
    for change, named in [({"test_budget_s": 5}, r"unknown key\(s\) \['test_budget_s'\]"),
                          ({"startup_timeout_s": None}, r"startup_timeout_s: expected float"),
                          ({"worker": {**written["worker"], "limits": {**written["worker"]["limits"], "disk_bytes":
                                                                       "2G"}}}, r"worker\.limits\.disk_bytes")]:
        path.write_text(json.dumps({**written, **change}))
        with pytest.raises(plugin_settings.PluginSettingsError, match=named):
            plugin_settings.read(path)
    path.write_text(json.dumps({k: v for k, v in written.items() if k != "import_timeout_s"}))
    with pytest.raises(plugin_settings.PluginSettingsError, match=r"missing key\(s\) \['import_timeout_s'\]"):
        plugin_settings.read(path)
    path.write_text("{")
    with pytest.raises(plugin_settings.PluginSettingsError, match="cannot read"):
        plugin_settings.read(path)


@pytest.mark.parametrize("argv", [("--threads", "-1"), ("--timeout", "-5"), ("--memory-gib", "x"),
                                  ("--property-examples", "2.5")])
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
    path.write_text('{"problems": [99]}')
    with pytest.raises(ValueError, match="no problem 99"):
        Settings.load(path)


def test_the_autograder_grades_with_the_bundles_settings(tmp_path, monkeypatch):
    # Mistake this catches: the autograder ignoring the file `staff bundle` wrote (its deadline and visibility).
    seen = []
    monkeypatch.setattr("staff.grading.grade.grade",
                        lambda submission, settings, **kwargs: seen.append(settings) or 1 / 0)
    settings = tmp_path / "settings.json"
    chosen = Settings(run_timeout_s=123, hidden_visibility="visible", test_timeout_s=9)
    settings.write_text(chosen.to_json())
    (tmp_path / "submission").mkdir()
    assert autograder.main(["--root", str(tmp_path), "--settings", str(settings)]) == 1  # 1/0: the grader "failed"
    assert seen == [chosen]
    seen.clear()
    assert autograder.main(["--root", str(tmp_path), "--settings", str(tmp_path / "none.json")]) == 1
    assert seen == [Settings(run_timeout_s=autograder.DEADLINE_S)]


def test_the_bundle_writes_its_settings_as_a_file(autograder_root: Path):
    written = Settings.load(autograder_root / "source" / "staff" / "settings.json")
    assert written == Settings(run_timeout_s=autograder.DEADLINE_S)
    assert not re.search(r"@[A-Z_]+@", (autograder_root / "source" / "run_autograder").read_text())  # no placeholders


def test_each_protection_is_declared_once_and_switched_off_by_its_own_option():
    # Mistakes this catches: a protection added to the worker's Protections but given no switch (or a switch
    # of another default) in Settings, so `staff grade` cannot turn it off, or turns off another one.
    for spec in fields(Protections):
        setting = next(s for s in fields(Settings) if s.name == spec.name)
        assert setting.default is spec.default is True and setting.metadata["option"] == f"--no-{spec.name}"
    assert Settings(landlock=False, tmpfs=False).protections == Protections(landlock=False, tmpfs=False)


@pytest.mark.parametrize("value", [0, True, 2.0, "3"])
def test_property_examples_must_be_a_whole_number_of_at_least_one(value):
    # Mistake this catches: 0 examples (hypothesis refuses it in every property test, and each would fail as
    # the student's) or a float passed on to the hidden suites' option, which reads whole numbers only.
    with pytest.raises(ValueError, match=r"property_examples \(--property-examples\)"):
        Settings(property_examples=value)
    with pytest.raises(SettingError, match="--property-examples"):
        from_arguments(parsed("--property-examples", "0"))
