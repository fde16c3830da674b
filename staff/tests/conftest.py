"""The graded batches shared by the staff tests that need graded submissions, each graded once, two at
a time, behind the sandbox, as `staff grade --batch` grades them: the plain samples (reference, stubs,
a syntax error, a zip) in one, every red-team case beside the reference in another (set up in another
process: a test of a sample's grade waits minutes, not the red team's batch)."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from staff import samples
from staff.bytecode import ensure_compiled
from staff.cli import main
from staff.course.batch import grade_batch
from staff.gradescope.bundle import unpack
from staff.gradescope.pins import python_pin
from staff.grading.grade import REPO_ROOT
from staff.grading.selection import collect_only
from staff.redteam.corpus import Case, build, load_cases, planted_problems, variant_name
from staff.redteam.ordinary import StandInSession, grade_as, grader_for
from staff.redteam.planted import planted_sources
from staff.redteam.plantnames import PlantedNames, new_names
from staff.sandbox.leftovers import kill_user, remove_leftovers
from staff.sandbox.removal import remove_tree
from staff.sandbox.uids import worker_uids
from staff.tests import process_groups
from staff.tests.listed_once import listed_once
from tests.grading import GradedTest

# The quick tier is `uv run pytest -m "not slow"`. A staff test is slow when it grades submissions
# end to end: it takes one of these fixtures (the shared graded batch, the unpacked bundle) or its
# module or function says `pytest.mark.slow` itself (the red team, the container, a release run).
SLOW_FIXTURES = frozenset({"graded", "graded_samples", "graded_as_user", "autograder_root"})


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: grades submissions end to end; deselect with -m \"not slow\"")
    # The environment's bytecode, compiled once (workers cannot write their own .pyc files): here, before
    # pytest-xdist starts its processes and outside any test's time limit, not in a test's set-up.
    ensure_compiled()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if SLOW_FIXTURES & fixtures:
            item.add_marker(pytest.mark.slow)
        wrong = process_groups.misplaced(item.nodeid, fixtures)
        if wrong:
            raise pytest.UsageError(wrong)


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """In several processes (`-n 2 --dist loadgroup`), the tests sharing a session fixture share a process."""
    if config.getvalue("dist") == "loadgroup":
        return process_groups.FileGroupScheduling(config, log)
    return None


# pytest-timeout for the tests that wait for a batch: a guard against a hang (the red team's batch
# takes about 12 minutes on two quiet cores, over 30 on a loaded machine)
BATCH_TIMEOUT_S = 3600


def _plain_samples(folder: Path) -> None:
    samples.reference(folder / "reference")
    samples.stubs(folder / "stubs")
    package = samples.reference(folder / "syntax-error")
    samples.replace_in(package / "strides.py", "def contiguous_strides(", "def contiguous_strides(:")
    zipped = folder / "unzipped"
    samples.reference(zipped / "assignment1")
    # A repository one folder down in the zip, macOS's forks, and an old loose copy of a module that is not graded.
    samples.zip_folder(zipped, folder / "zip-with-a-top-folder.zip", top="my-work",
                       extra={"__MACOSX/my-work/assignment1/cs336_basics/._flops.py": "junk",
                              "my-work/notes.txt": "hello", "my-work/flops.py": "def oops(:\n"})
    shutil.rmtree(zipped)


@dataclass
class Graded:
    out: Path
    cases: dict[str, Case]
    trusted: dict[str, str] = dataclasses.field(default_factory=dict)  # the checkout's trusted files' hashes before


    def results(self, key: str) -> dict:
        return json.loads((self.out / key / "results.json").read_text())

    def meta(self, key: str) -> dict:
        return json.loads((self.out / key / "meta.json").read_text())


def trusted_files() -> dict[str, str]:
    """The checkout's files that decide a score or run as the grader (every conftest file, the suites,
    the hidden tests), each with its content's hash: what a worker that could write there would change."""
    paths = {p for pattern in ("conftest.py", "tests/*.py", "staff/tests/conftest.py", "staff/hidden/*.py",
                               "adapters/*.py") for p in REPO_ROOT.glob(pattern)}
    return {str(p.relative_to(REPO_ROOT)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(paths)}


@pytest.fixture(scope="session")
def graded_samples(tmp_path_factory) -> Graded:
    """The plain samples graded into OUT/<name>/results.json by the red team's grader, in a batch of their
    own (a few minutes on two cores)."""
    folder, out = tmp_path_factory.mktemp("samples"), tmp_path_factory.mktemp("sample-grades")
    _plain_samples(folder)
    grade_batch(folder, out, grader_for({}), jobs=2, progress=False)
    return Graded(out, {})


@pytest.fixture(scope="session")
def graded(tmp_path_factory) -> Graded:
    """Every red-team case, and the reference beside them, graded into OUT/<name>/results.json (about 20
    minutes on two cores). The reference shows that an honest grade keeps its marks among them, and its
    peak is the floor of the cases' memory budgets. STAFF_REDTEAM_CASES=name,name grades only those cases'
    folders (and the reference, unless STAFF_REDTEAM_SAMPLES=none: `staff gpu-check` grades the cases
    alone, in minutes of a lent GPU)."""
    folder, work = tmp_path_factory.mktemp("submissions"), tmp_path_factory.mktemp("building")
    if os.environ.get("STAFF_REDTEAM_SAMPLES") != "none":
        samples.reference(folder / "reference")
    cases = {}
    chosen = {name for name in os.environ.get("STAFF_REDTEAM_CASES", "").split(",") if name}
    names = new_names()  # this run's planted names: another run on the machine has its own
    for case in load_cases():
        if chosen and case.folder.name not in chosen:
            continue  # a run of a few cases while working on them; the plain samples are always graded
        if case.requires == "separate user" and os.geteuid() != 0:
            continue  # root's processes have no process limit: here a fork bomb needs a worker user of its own
        (work / case.name).mkdir()
        upload = build(case, work / case.name, names)
        _assert_looks_where_planted(case, upload, names)
        shutil.move(upload, folder / upload.name)
        cases[upload.name.removesuffix(".zip")] = case
    grader = grader_for(cases)

    out = tmp_path_factory.mktemp("grades")
    for marker in {c.marker for c in cases.values() if c.marker}:
        Path(marker).unlink(missing_ok=True)
    trusted = trusted_files()
    # The planted sources: what an earlier grade might have left, for the cases that look for it.
    with planted_sources(names), listed_once():
        grade_batch(folder, out, grader, jobs=2, progress=False)
    return Graded(out, cases, trusted)


def _assert_looks_where_planted(case: Case, upload: Path, names: PlantedNames) -> None:
    """A built case names no planted object but this run's: a stale name would make it look elsewhere
    and keep its marks without the protection being tested."""
    problems = planted_problems(upload, names)
    assert not problems, f"case {case.name} would look for planted objects elsewhere than this run's: {problems}"


# Graded as an ordinary user (a TA's laptop): each with every protection on; the run-limit case
# without the namespaces too (as under Docker), whose survivors only the keeper can end, and the calls on
# other processes, which only there see the TA's own processes, and the pipes of many processes, whose
# process limit only there counts every task of the uid.
ORDINARY_CASES = {"connect-to-a-socket-file": [()], "whole-token-file-read-unseen-on-a-tmpfs": [()],
                  "token-file-read-by-a-child-the-kernel-reaps": [()], "token-file-evicted-after-a-whole-read": [()],
                  "token-file-truncated-after-a-whole-read": [()], "token-file-read-with-direct-io": [()],
                  "keys-carry-sources": [()], "forge-grading-report": [()],
                  "daemons-that-outlive-the-grade": [()], "survive-the-deadline": [(), ("namespaces",)],
                  "reach-the-tas-session": [()], "grow-socket-buffers": [()],
                  "change-other-processes": [(), ("namespaces",)], "grow-pipe-buffers": [()],
                  "signal-and-open-other-processes": [(), ("namespaces",)],
                  "socket-buffers-in-many-processes": [()], "pipe-buffers-in-many-processes": [(), ("namespaces",)],
                  "fork-bomb": [()], "page-tables-in-many-processes": [()],
                  "huge-pages-held-by-pipes": [()], "change-modes-outside-the-folder": [(), ("namespaces",)],
                  "landlock-domains-in-many-processes": [()], "xattrs-on-the-graders-files": [(), ("namespaces",)],
                  "one-blob-many-times-in-a-reply": [()], "file-folios-held-by-pipes": [()],
                  "epoll-watches-in-many-processes": [()], "file-flags-outside-the-folder": [(), ("namespaces",)],
                  "page-tables-of-scattered-pages": [("namespaces",)],
                  "page-tables-of-leaderless-processes": [("namespaces",)], "files-hidden-from-the-disk-count": [()],
                  "seccomp-filters-in-many-processes": [()], "sigio-to-the-test-process": [("namespaces",)],
                  "links-listed-by-the-disk-count": [()], "files-unlinked-while-open": [()],
                  "timers-use-up-the-users-signals": [()],
                  "folders-deeper-than-a-path": [()], "directories-that-keep-their-size": [()],
                  "files-mapped-after-deletion": [()], "files-held-by-a-thread-of-its-own": [()],
                  "pipe-pages-of-the-graders-uid": [()], "files-held-by-an-unreadable-program": [("namespaces",)],
                  "pipes-held-by-unreadable-programs": [("namespaces",)], "futex-hash-of-many-slots": [()],
                  "mappings-in-many-processes": [()], "zygote-stopped-while-page-tables-grow": [("namespaces",)],
                  "proc-buffers-of-long-map-names": [()], "maps-of-long-names-blind-the-watch": [()],
                  "files-held-by-leaderless-processes": [()], "folders-removed-while-open": [()],
                  "pipes-held-between-the-looks": [()],
                  "autogroups-maps-and-cgroups-of-other-processes": [(), ("namespaces",)],
                  "timer-rewrites-the-scripted-matmuls": [()],
                  "shared-anonymous-memory-outside-every-rss": [(), ("namespaces",)],
                  "shared-memory-unmapped-but-a-page": [(), ("namespaces",)],
                  "reach-the-worker-template": [(), ("namespaces",)], "checkpoint-of-a-quarter-gigabyte": [()],
                  "memory-of-children-summed-past-the-limit": [(), ("namespaces",)],
                  "memory-in-fresh-interpreters-below-the-zygotes-share": [(), ("namespaces",)],
                  "loop-credited-while-the-zygote-walks-shared-pages": [()], "memory-held-while-the-zygote-walks": [()]}
AS_USER = "-as-an-ordinary-user"


@dataclass
class GradedAsUser(Graded):
    connections: list[str] = dataclasses.field(default_factory=list)  # stand-in session sockets reached
    said: str = ""  # what the grading run printed


def skip_unless_others_read_the_checkout() -> None:
    """Skip a test that grades as another uid where that uid cannot read this checkout itself (a clone
    into `mktemp -d`, mode 0700): no grader run by another user could read the tests there either."""
    from staff.sandbox import confine

    for path in (str(REPO_ROOT), sys.prefix):
        if confine.world_readable(path) == os.path.abspath(path):
            pytest.skip(f"{path} is closed to other users (mode {os.stat(path).st_mode & 0o777:o}): a grade run as "
                        "another uid cannot read it; clone into a folder others may read to run this test")


@pytest.fixture(scope="session")
def graded_as_user(tmp_path_factory) -> GradedAsUser:
    """The reference and ORDINARY_CASES graded by `staff.redteam.ordinary` as a throwaway uid with a
    stand-in session (bus, agent, runtime folder, home) that is listened on (a few minutes).
    STAFF_REDTEAM_CASES filters the cases as for `graded`."""
    if sys.platform != "linux" or os.geteuid() != 0:
        pytest.skip("needs root to make a throwaway user to grade as")
    skip_unless_others_read_the_checkout()
    chosen = {name for name in os.environ.get("STAFF_REDTEAM_CASES", "").split(",") if name}
    known = {case.folder.name: case for case in load_cases()}  # any variant: the protections are set below
    base = Path(tempfile.mkdtemp(prefix="staff-ordinary-"))
    base.chmod(0o755)
    folder, work, out = base / "submissions", tmp_path_factory.mktemp("building-as-user"), base / "grades"
    folder.mkdir()
    samples.reference(folder / "reference")
    cases, uploads = {}, {}
    names = new_names()
    for name, variants in ORDINARY_CASES.items():
        if chosen and name not in chosen:
            continue
        for off in variants:
            key = variant_name(name, off)
            case = dataclasses.replace(known[name], name=key + AS_USER, off=off)
            upload = build(case, work, names)
            _assert_looks_where_planted(case, upload, names)
            shutil.move(upload, folder / upload.name)
            cases[upload.name], uploads[upload.name] = case, (name, off)
    uid = worker_uids().pick()
    assert uid is not None, "no uid free for the stand-in user"
    out.mkdir()
    os.chown(out, uid, uid)  # the ordinary user's own folder for the grades
    session = StandInSession(base, uid)
    for marker in {c.marker for c in cases.values() if c.marker}:
        Path(marker).unlink(missing_ok=True)
    try:
        with planted_sources(names), session.listening():
            said = grade_as(session, folder, out, uploads, timeout_s=BATCH_TIMEOUT_S - 60)
        _remove_user(uid)  # before the tests look for what workers left
        yield GradedAsUser(out, cases, connections=list(session.connections), said=said)
    finally:
        remove_tree(base)
        _remove_user(uid)


def _remove_user(uid: int) -> None:
    """Nothing of the throwaway user left: no process, nothing of its in /tmp, /var/tmp or /dev/shm
    (torch's /tmp/torchinductor_USER, which its test process makes)."""
    kill_user(uid)
    remove_leftovers(uid)


@pytest.fixture(scope="session")
def suites_collected() -> tuple[GradedTest, ...]:
    """Every test of this tree's public and hidden suites, collected once (a pytest run of about 9
    CPU-seconds, which many staff tests would otherwise each repeat) and completely, as `staff check` does."""
    return tuple(collect_only(REPO_ROOT, hidden=True, complete=True))


@pytest.fixture
def suite_tests(suites_collected) -> list[GradedTest]:
    """`suites_collected`, a copy of its own for each test: a test that changes a test's record changes no other's."""
    return copy.deepcopy(list(suites_collected))


@pytest.fixture(scope="session")
def autograder_root(tmp_path_factory) -> Path:
    """An /autograder root with the bundle unpacked into source/ and setup.sh run (about a minute), shared by
    the bundle's tests and the container's."""
    base = tmp_path_factory.mktemp("gradescope")
    bundle = base / "autograder.zip"
    assert main(["bundle", str(bundle), "--allow-uncommitted"]) == 0
    root = base / "autograder"
    unpack(bundle, root / "source")
    # No internet here: an installed interpreter of exactly the pinned version stands in for `uv python install`.
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "CS336_ENV": str(base / "env"),
           "UV_PYTHON_PREFERENCE": "only-system"}
    for name in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT", "PYTHONPATH", "UV_PYTHON"):
        env.pop(name, None)
    done = subprocess.run(["bash", str(root / "source" / "setup.sh")], env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    built = subprocess.run([str(base / "env" / "venv" / "bin" / "python"), "-c", "import platform; "
                            "print(platform.python_version())"], capture_output=True, text=True, check=True)
    assert built.stdout.strip() == python_pin(REPO_ROOT)  # the environment runs the pinned Python, no other
    return root
