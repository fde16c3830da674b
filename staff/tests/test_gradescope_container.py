"""The Gradescope autograder as Gradescope runs it, emulated (`staff.gradescope.container`): Docker's default
seccomp profile (no new namespaces or mounts), a memory cgroup and a CPU quota around
`run_autograder`. At the memory setting docs/gradescope.md gives and half a CPU the reference, uploaded as a zip of a
student's repository folder, gets full marks;
below the grader's measured need no test is counted and the staff are told; and with the
namespaces refused, four red-team cases are still contained: killing the grader, daemons that
outlive the grade, the network, and a memory bomb, which must cost its own tests and say so. The
out-of-memory policy: where the container is too small for the grade, at import or in a call, no test
is counted and the staff are told; a memfd hog graded beside the reference two at a time costs the
reference nothing. Parts
the machine cannot impose (no root, no cgroup controller, another architecture) are skipped with
the reason, never passed silently.

Not emulated: Docker's overlay file system, its capability set (the command keeps root's), its
network and uid map, and the base image's own Python."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from staff import samples
from staff.gradescope.container import Container
from staff.grading.results import validate_results
from staff.redteam.corpus import build, judge, load_cases
from staff.sandbox import memory
from staff.sandbox.confine import world_readable
from staff.tests import upload_shapes
from staff.tests.processes import running_commands
from staff.tests.test_bundle import place_upload

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]
SETTING = memory.RECOMMENDED_MEMORY_BYTES  # what docs/gradescope.md tells a TA to set
BELOW = 768 << 20  # Gradescope's default, under the grader's measured need
KILLED_AT = 896 << 20  # below the need: measured, the kernel kills the test process mid-grade
CONTAINED_PREFIX = "contained-"  # what the contained cases' daemons' names start with here


@pytest.fixture(scope="module", autouse=True)
def reachable_environment(autograder_root):
    """The bundle's environment lies under pytest's folders, which are closed to other users; on
    Gradescope it is /opt/cs336, open to all. Open the way to it, as there, so the worker can run as
    a user of its own without a mount namespace (which Docker's profile refuses)."""
    folder, top = autograder_root.parent, Path(tempfile.gettempdir())
    while folder != top and top in folder.parents:
        folder.chmod(folder.stat().st_mode | 0o011)
        folder = folder.parent


def contained(root: Path, upload, memory_bytes: int, cpus: float) -> tuple[dict, Container, float]:
    """Run run_autograder on `upload` inside the emulated container; (results, the container, seconds)."""
    env = place_upload(root, upload)
    with Container(memory_bytes, cpus) as box:
        if box.missing:
            pytest.skip(f"this machine cannot emulate the container: {'; '.join(box.missing)}")
        started = time.monotonic()
        done = box.run([str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True,
                       timeout=1200)
        seconds = time.monotonic() - started
        assert done.returncode == 0, done.stderr[-3000:]
        results = json.loads((root / "results" / "results.json").read_text())
        assert validate_results(results) == [], results
        print(f"{memory_bytes >> 20} MiB, {cpus} CPU: {seconds:.0f} s, peak {(box.peak_bytes or 0) >> 20} MiB, "
              f"{box.oom_kills} OOM kills, score {results['score']}")
        return results, box, seconds


def test_the_reference_gets_full_marks_at_the_setting_and_half_a_cpu(autograder_root, tmp_path):
    # Uploaded as students most often do: a zip of their whole repository folder (its .venv, .git,
    # adapters/ and tests/ included), which Gradescope unpacks into myrepo-main/. Mistake this catches:
    # an intake that looks for cs336_basics/ only at the top, which scored this 0.
    code = samples.reference(tmp_path / "code")
    results, box, seconds = contained(autograder_root, lambda s: upload_shapes.repository_folder_unpacked(s, code),
                                      SETTING, 0.5)
    assert results["score"] == results["extra_data"]["max_score"] > 0, results["output"][:2000]
    assert results["extra_data"]["graded_files"]["from"] == "myrepo-main/cs336_basics/"
    assert box.oom_kills == 0
    # Mistake this catches: PyTorch imported into the grader's own process (a third copy, about 300 MB of
    # anonymous memory and 633 MB of RSS), which made 1 GB too small. The grader's process needs none.
    grader_rss = results["extra_data"]["memory_bytes"]["grader process peak RSS"]
    assert grader_rss < 200 << 20, f"the grader's own process peaked at {grader_rss >> 20} MiB"
    protections = results["extra_data"]["protections"]
    assert protections["network namespace"].startswith("off")  # Docker's profile refused it, as on Gradescope
    assert protections["system calls"].startswith("on")
    # On Gradescope the interpreter is uv's, in /opt/cs336/python, open to all: the worker gets a user of
    # its own. Offline, the test's set-up borrows this machine's interpreter, which may lie in a folder
    # closed to others (/root): then, with no mount namespace to open it, the worker can have none.
    interpreter = subprocess.run([str(autograder_root.parent / "env" / "venv" / "bin" / "python"), "-c",
                                  "import sys; print(sys.base_prefix)"], capture_output=True, text=True, check=True)
    reachable = world_readable(os.path.realpath(interpreter.stdout.strip())) is None
    assert protections["separate user"] == "on" if reachable else "not reachable" in protections["separate user"]


def test_below_the_need_no_test_is_counted_and_the_staff_are_told(autograder_root):
    # Mistake this catches: grading anyway, where the OOM killer then fails tests as crashes of the
    # student's code (the reference scored 116/280 at 1 GB before the grader's own process shed PyTorch).
    results, _, _ = contained(autograder_root, lambda s: samples.reference(s), BELOW, 0.5)
    assert results["score"] == 0 and results["tests"] == []
    assert "not your fault" in results["output"] and "Autograder settings" in results["output"]


def test_a_grade_the_container_kills_midway_blames_no_one(tmp_path):
    # The start-up check is the autograder's; `staff grade` has none, so this reaches the runtime
    # detection: the kernel kills the test process for the cgroup's limit while grading.
    samples.reference(tmp_path / "reference")
    with Container(KILLED_AT, None) as box:
        if box.missing:
            pytest.skip(f"this machine cannot emulate the container: {'; '.join(box.missing)}")
        done = box.run([sys.executable, "-m", "staff.cli", "grade", str(tmp_path / "reference"), "--out",
                        str(tmp_path / "results.json"), "--threads", "1"], capture_output=True, text=True, timeout=900)
        kills = box.oom_kills
    results = json.loads((tmp_path / "results.json").read_text())
    if kills == 0:
        pytest.skip(f"nothing was killed at {KILLED_AT >> 20} MiB on this machine (peak {box.peak_bytes}); "
                    "nothing to check")
    assert done.returncode == 0, done.stderr[-2000:]
    assert results["tests"] == [] and "not your fault" in results["output"], results["output"][:1000]


@pytest.mark.parametrize("name", ["kill-the-grader", "daemons-that-outlive-the-grade", "network-and-proc-snooping",
                                  "memory-bomb"])
def test_red_team_cases_are_contained_without_namespaces(autograder_root, tmp_path, name):
    case = next(c for c in load_cases() if c.name == name)
    upload = build(case, tmp_path)
    if case.survivors:  # its own name, so that the red team's batch, which may run beside it, is not taken for it
        attack = upload / "cs336_basics" / "_attack.py"
        source = attack.read_text()
        assert f'"{case.survivors}"' in source, f"{attack} no longer names its daemons {case.survivors!r}"
        attack.write_text(source.replace(f'"{case.survivors}"', f'"{CONTAINED_PREFIX}{case.survivors}"'))
        case = dataclasses.replace(case, survivors=CONTAINED_PREFIX + case.survivors)
    results, _, _ = contained(autograder_root,
                              lambda s: shutil.copytree(upload / "cs336_basics", s / "cs336_basics"), SETTING, 1.0)
    assert judge(case, results) == [], results["output"][:2000]
    assert results["extra_data"]["protections"]["pid namespace"].startswith("off")
    if case.survivors:
        assert not [c for c in running_commands() if c.startswith(case.survivors)]
    if name == "memory-bomb":  # the student's own bomb is theirs: its tests fail and say why
        failed = [t["output"] for t in results["tests"] if t["status"] == "failed" and
                  t["extra_data"]["problem"] in case.lose]
        assert failed and any("ran out of memory" in text for text in failed), failed[:2]
        assert "grader_failure" not in results["extra_data"]
    if name == "network-and-proc-snooping":
        text = json.dumps(results)
        worked = text.split("what worked: ", 1)[1].split("\\n", 1)[0] if "what worked: " in text else ""
        assert not {"connect", "listen", "resolve"} & {w.strip() for w in worked.split(",")}, worked


def test_the_gradescope_page_and_the_bundle_state_the_memory_the_grader_enforces():
    from staff.commands.bundle import gradescope_settings
    from staff.grading.grade import REPO_ROOT

    page = (REPO_ROOT / "docs" / "gradescope.md").read_text()
    recommended, least = f"{memory.RECOMMENDED_MEMORY_BYTES / 2**30:g} GB", f"{memory.MIN_MEMORY_BYTES >> 20:,} MiB"
    assert f"**{recommended}**" in page and f"Below {least}" in page
    said = gradescope_settings()
    assert recommended in said and f"{memory.MIN_MEMORY_BYTES >> 20} MiB" in said


# -- the out-of-memory policy: the container's shortage ends the grade wherever it strikes --

# Run in the container: grade Problem 1's public tests of argv[1] into argv[2] (results.json), as `staff grade` would.
_GRADE_PROBLEM_1 = """
import json, sys
from pathlib import Path
from staff.grading.results import results_json
from staff.grading.grade import grade
from staff.sandbox.settings import Settings
document = results_json(grade(Path(sys.argv[1]), Settings(hidden=False, problems={1}), progress=False))
Path(sys.argv[2]).write_text(json.dumps(document))
"""
# A submission's code that, where it runs, fills its own memory cgroup to just past its limit with less than the
# 512 MiB that would make it the student's doing: what a container too small for the grade looks like.
_SQUEEZE = """
def _squeeze():
    import os
    entry = [line.split(":", 2) for line in open("/proc/self/cgroup").read().splitlines()]
    path = next((p for _, c, p in entry if "memory" in c.split(",")), None)
    folder = f"/sys/fs/cgroup/memory{path}" if path is not None else f"/sys/fs/cgroup{entry[0][2]}"
    names = ("memory.limit_in_bytes", "memory.usage_in_bytes") if path is not None else ("memory.max", "memory.current")
    limit, used = (int(open(os.path.join(folder, name)).read()) for name in names)
    return b"\\x01" * min(limit - used + (48 << 20), 400 << 20)
"""
# A worker's share of it is the least a group is given (512 MiB): what the worker holds at hello is then more
# than 0, so filling the group is always less than 512 MiB of the student's.
SQUEEZED_AT = 1152 << 20


def squeezed_reference(tmp_path: Path, where: str, squeeze: str = _SQUEEZE) -> Path:
    """The reference with `squeeze` (source defining `_squeeze()`) run at import or in Problem 1's first call."""
    package = samples.reference(tmp_path / "submission")
    if where == "import":
        (package / "__init__.py").write_text(f"{squeeze}\nBALLAST = _squeeze()\n")
    else:
        samples.replace_in(package / "dtype_memory.py", "def bytes_per_element(dtype: torch.dtype) -> int:\n",
                           f"{squeeze}\nBALLAST = []\n\n\ndef bytes_per_element(dtype: torch.dtype) -> int:\n"
                           f"    BALLAST.append(_squeeze())\n")
    return package


def graded_in_container(tmp_path: Path, package: Path, memory_bytes: int, **options) -> tuple[dict, int]:
    """Problem 1 of `package` graded inside a container of `memory_bytes` (Container's `options`):
    its results.json and the number of the container's out-of-memory kills."""
    with Container(memory_bytes, None, **options) as box:
        if box.missing:
            pytest.skip(f"this machine cannot emulate the container: {'; '.join(box.missing)}")
        done = box.run([sys.executable, "-c", _GRADE_PROBLEM_1, str(package), str(tmp_path / "results.json")],
                       capture_output=True, text=True, timeout=900, cwd=samples.REPO_ROOT)
        kills = box.oom_kills
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((tmp_path / "results.json").read_text()), kills


@pytest.mark.parametrize("where", ["import", "call"])
def test_the_containers_shortage_ends_the_grade_at_import_and_in_a_call(tmp_path, where):
    # Mistakes (both at release 1.3.1): at import the note was not caught, pytest stopped with an internal
    # error and the reference scored 0, "process ended (exit 3)"; in a call the note was written but no
    # longer read, so the grade counted the test as failed ("container too small"), 292/293.
    results, _ = graded_in_container(tmp_path, squeezed_reference(tmp_path, where), SQUEEZED_AT)
    assert results["extra_data"]["outcome"] == "out_of_memory", (results["extra_data"], results["output"][:1500])
    assert results["tests"] == [] and results["score"] == 0
    assert "not your fault" in results["output"] and "no test was counted" in results["output"]


def test_a_memfd_hog_beside_an_honest_neighbour_costs_the_neighbour_nothing(tmp_path):
    # Graded without the seccomp filter (which refuses memfd_create), two at a time in one container, so
    # that only the workers' memory groups and their shares stand between the hog and its neighbour.
    # Mistake: each worker limited to the whole setting, or none: the memfd, in no RSS, fills the container,
    # and the kernel kills the neighbour's worker (most RSS) or test process: "not graded: out of memory".
    case = next(c for c in load_cases() if c.name == "memfd-memory-in-a-call")
    folder = tmp_path / "batch"
    folder.mkdir()
    shutil.move(build(case, tmp_path / "built"), folder / "hog")
    samples.reference(folder / "neighbour")
    out = tmp_path / "grades"
    with Container(4 << 30, None) as box:
        if box.missing:
            pytest.skip(f"this machine cannot emulate the container: {'; '.join(box.missing)}")
        done = box.run([sys.executable, "-m", "staff.cli", "grade", "--batch", str(folder), "--out", str(out), "-j",
                        "2", "--no-hidden", "--no-seccomp", "--memory-gib", "4", "--test-timeout", "30"],
                       capture_output=True, text=True, timeout=1200, cwd=samples.REPO_ROOT)
        print(f"peak {(box.peak_bytes or 0) >> 20} MiB, {box.oom_kills} OOM kills in the container's own group")
    assert done.returncode == 0, done.stderr[-3000:]
    neighbour, hog = (json.loads((out / name / "results.json").read_text()) for name in ("neighbour", "hog"))
    assert neighbour["extra_data"]["outcome"] == "graded", neighbour["output"][:1500]
    assert neighbour["score"] == neighbour["extra_data"]["max_score"] > 0
    assert judge(case, hog) == [], hog["output"][:1500]
    failed = [t["output"] for t in hog["tests"] if t["status"] == "failed" and t["extra_data"]["problem"] == 1]
    assert any("ran out of memory" in text for text in failed), failed[:2]
